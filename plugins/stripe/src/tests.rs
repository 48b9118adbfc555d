use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;
use pixgw_plugin_sdk::http::HttpError;
use serde_json::json;

const REFERENCE: &str = "abcdefghijklmnopqrstuvwxyz12";
const SECRET: &str = "whsec_test";

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("secret-key", "sk_test_123")
        .with_endpoint("api", "https://api.stripe.test")
}

fn request(expires_in: u32) -> ChargeRequest {
    ChargeRequest {
        reference: REFERENCE.into(),
        amount: 1990,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: Some("ana@example.com".into()),
            name: None,
            document: None,
        },
        expires_in,
    }
}

fn intent(status: &str) -> Value {
    json!({
        "id": "pi_1", "object": "payment_intent", "amount": 1990, "amount_received": 0,
        "created": 1_700_000_000, "currency": "brl", "status": status,
        "metadata": {"reference": REFERENCE}, "last_payment_error": null, "latest_charge": null,
        "next_action": {"type": "pix_display_qr_code", "pix_display_qr_code": {
            "data": "00020101021226", "expires_at": 1_700_003_600,
            "image_url_png": "https://qr.stripe.com/x.png"}},
    })
}

fn body_text(r: &Request) -> String {
    String::from_utf8(r.body.clone()).unwrap()
}

#[test]
fn create_sends_a_confirmed_pix_intent_in_brl_keyed_by_the_reference() {
    let host = FakeHost::new();
    host.reply(200, &intent("requires_action").to_string());
    let charge = Stripe::create(&host, &ctx(), &request(3600)).unwrap();

    let sent = &host.sent()[0];
    assert_eq!(sent.url, "https://api.stripe.test/v1/payment_intents");
    assert_eq!(sent.header_value("idempotency-key"), Some(REFERENCE));
    assert_eq!(
        sent.header_value("authorization"),
        Some("Bearer sk_test_123")
    );
    assert_eq!(
        body_text(sent),
        "amount=1990&currency=brl&payment_method_types%5B%5D=pix&payment_method_data%5Btype%5D=pix\
         &confirm=true&payment_method_options%5Bpix%5D%5Bexpires_after_seconds%5D=3600\
         &metadata%5Breference%5D=abcdefghijklmnopqrstuvwxyz12\
         &payment_method_data%5Bbilling_details%5D%5Bemail%5D=ana%40example.com\
         &description=Pedido+42"
    );
    assert_eq!(
        (charge.psp_id.as_str(), charge.status, charge.amount),
        ("pi_1", ChargeStatus::Pending, 1990)
    );
    assert_eq!(charge.copy_paste.as_deref(), Some("00020101021226"));
    assert_eq!(charge.qr_png_base64, None);
    assert_eq!(charge.expires_at.as_deref(), Some("2023-11-14T23:13:20Z"));
}

#[test]
fn expiry_is_clamped_to_stripes_limits() {
    for (asked, sent) in [(5, "10"), (2_000_000, "1209600")] {
        let host = FakeHost::new();
        host.reply(200, &intent("requires_action").to_string());
        Stripe::create(&host, &ctx(), &request(asked)).unwrap();
        let body = body_text(&host.sent()[0]);
        assert!(
            body.contains(&format!("expires_after_seconds%5D={sent}&")),
            "{body}"
        );
    }
}

#[test]
fn an_intent_without_pix_data_is_rejected_and_canceled() {
    let host = FakeHost::new();
    let mut without = intent("requires_payment_method");
    without["next_action"] = Value::Null;
    host.reply(200, &without.to_string())
        .reply(200, &intent("canceled").to_string());
    let error = Stripe::create(&host, &ctx(), &request(3600)).unwrap_err();
    assert_eq!(
        (error.kind(), error.reason()),
        ("rejected", Reason::AccountCannotTakePix)
    );
    let message = &error.psp_error().unwrap().message;
    assert!(
        message.contains("without Pix data") && message.contains("country"),
        "{message}"
    );
    assert_eq!(
        host.sent()[1].url,
        "https://api.stripe.test/v1/payment_intents/pi_1/cancel"
    );
}

#[test]
fn stripe_errors_keep_the_message_and_code() {
    let host = FakeHost::new();
    host.reply(
        401,
        r#"{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****1234"}}"#,
    )
    .reply(
        400,
        r#"{"error":{"type":"invalid_request_error","code":"payment_method_invalid_parameter","param":"payment_method_types","message":"The payment method type \"pix\" is invalid."}}"#,
    )
    .fail(HttpError::NoAnswer("reset".into()));
    let e = Stripe::create(&host, &ctx(), &request(3600)).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    let detail = e.psp_error().unwrap();
    assert_eq!(detail.message, "Invalid API Key provided: sk_test_****1234");
    assert_eq!(detail.code.as_deref(), Some("invalid_request_error"));
    assert_eq!(detail.http_status, Some(401));
    assert_eq!(e.reason(), Reason::Credentials);

    let e = Stripe::create(&host, &ctx(), &request(3600)).unwrap_err();
    assert_eq!(e.kind(), "rejected");
    assert_eq!(
        e.reason(),
        Reason::PixNotEnabled,
        "the type Stripe names is not activated"
    );
    let detail = e.psp_error().unwrap();
    assert_eq!(
        detail.message,
        "The payment method type \"pix\" is invalid."
    );
    assert_eq!(
        detail.code.as_deref(),
        Some("payment_method_invalid_parameter")
    );

    let e = Stripe::create(&host, &ctx(), &request(3600)).unwrap_err();
    assert_eq!(e.kind(), "ambiguous");
}

#[test]
fn stripe_codes_and_params_say_the_reason() {
    let reason = |body: &str| describe(400, body.as_bytes()).reason;
    assert_eq!(
        reason(
            r#"{"error":{"type":"invalid_request_error","code":"amount_too_small","param":"amount","message":"Amount must be at least R$0.50 brl"}}"#
        ),
        Reason::Amount
    );
    assert_eq!(
        reason(
            r#"{"error":{"type":"invalid_request_error","code":"email_invalid","param":"payment_method_data[billing_details][email]","message":"Invalid email address: x"}}"#
        ),
        Reason::PayerData
    );
    assert_eq!(
        reason(
            r#"{"error":{"type":"invalid_request_error","code":"resource_missing","param":"intent","message":"No such payment_intent: 'pi_1'"}}"#
        ),
        Reason::NotFound
    );
    assert_eq!(
        reason(
            r#"{"error":{"type":"invalid_request_error","code":"parameter_unknown","param":"foo","message":"Received unknown parameter: foo"}}"#
        ),
        Reason::Unspecified
    );
}

#[test]
fn query_by_id_expands_the_charge_for_the_payment() {
    let host = FakeHost::new();
    let mut paid = intent("succeeded");
    paid["next_action"] = Value::Null;
    paid["amount_received"] = json!(1990);
    paid["latest_charge"] = json!({"id": "ch_1", "created": 1_700_000_100,
        "payment_method_details": {"type": "pix", "pix": {"bank_transaction_id": "E1234"}}});
    host.reply(200, &paid.to_string());
    let charge = Stripe::query(&host, &ctx(), REFERENCE, Some("pi_1")).unwrap();
    assert_eq!(
        host.sent()[0].url,
        "https://api.stripe.test/v1/payment_intents/pi_1?expand%5B%5D=latest_charge"
    );
    assert_eq!(charge.status, ChargeStatus::Paid);
    let payment = charge.payment.unwrap();
    assert_eq!(
        (
            payment.end_to_end_id.as_deref(),
            payment.amount,
            payment.paid_at.as_str()
        ),
        (Some("E1234"), 1990, "2023-11-14T22:15:00Z")
    );
}

#[test]
fn query_by_reference_searches_the_metadata() {
    let host = FakeHost::new();
    host.reply(
        200,
        &json!({"object": "search_result", "data": [intent("requires_action")]}).to_string(),
    )
    .reply(200, r#"{"object":"search_result","data":[]}"#);
    let charge = Stripe::query(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(charge.psp_id, "pi_1");
    assert_eq!(
        host.sent()[0].url,
        "https://api.stripe.test/v1/payment_intents/search?query=metadata%5B%27reference%27%5D%3A%27abcdefghijklmnopqrstuvwxyz12%27&expand%5B%5D=data.latest_charge"
    );
    let e = Stripe::query(&host, &ctx(), REFERENCE, None).unwrap_err();
    assert_eq!(e.kind(), "not-found");
}

#[test]
fn statuses() {
    let status = |s: &str, error: Option<&str>| {
        let mut v = intent(s);
        if let Some(code) = error {
            v["last_payment_error"] = json!({"code": code, "message": "x"});
        }
        serde_json::from_value::<Intent>(v).unwrap().status()
    };
    use ChargeStatus::*;
    assert_eq!(status("requires_action", None), Pending);
    assert_eq!(status("requires_confirmation", None), Pending);
    assert_eq!(status("processing", None), Processing);
    assert_eq!(status("succeeded", None), Paid);
    assert_eq!(status("canceled", None), Canceled);
    assert_eq!(status("requires_payment_method", None), Pending);
    assert_eq!(
        status(
            "requires_payment_method",
            Some("payment_intent_payment_attempt_expired")
        ),
        Expired
    );
    assert_eq!(
        status(
            "requires_payment_method",
            Some("payment_method_provider_decline")
        ),
        Failed
    );
}

#[test]
fn cancel_finds_the_intent_by_reference_first() {
    let host = FakeHost::new();
    host.reply(
        200,
        &json!({"data": [intent("requires_action")]}).to_string(),
    )
    .reply(200, &intent("canceled").to_string());
    let charge = Stripe::cancel(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(charge.status, ChargeStatus::Canceled);
    let sent = host.sent();
    assert_eq!(sent[1].method, Method::Post);
    assert_eq!(
        sent[1].url,
        "https://api.stripe.test/v1/payment_intents/pi_1/cancel"
    );
}

fn signed(host: &FakeHost, t: i64, body: &[u8]) -> String {
    let mut payload = format!("{t}.").into_bytes();
    payload.extend_from_slice(body);
    hex(&host.hmac_sha256(SECRET.as_bytes(), &payload))
}

#[test]
fn signatures_are_verified_with_a_tolerance() {
    let host = FakeHost::new();
    let body = br#"{"type":"payment_intent.succeeded"}"#;
    let now = 1_700_000_000;
    let good = signed(&host, now, body);
    let ok = |header: &str, at: i64| verify_signature(&host, SECRET, header, body, at);

    ok(&format!("t={now},v1={good}"), now).unwrap();
    ok(&format!("t={now},v1={}", "0".repeat(64)), now).unwrap_err();
    // Several v1 values (during a secret rotation): one must match.
    ok(
        &format!("t={now},v1={},v1={good},v0=abc", "0".repeat(64)),
        now + 299,
    )
    .unwrap();
    let stale = ok(&format!("t={now},v1={good}"), now + 301).unwrap_err();
    assert_eq!(stale.kind(), "invalid-webhook");
    ok(&format!("v1={good}"), now).unwrap_err();
    // The signature covers the body.
    verify_signature(&host, SECRET, &format!("t={now},v1={good}"), b"{}", now).unwrap_err();
}

fn webhook(body: &Value, signature: Option<String>) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: String::new(),
        headers: signature
            .map(|s| ("stripe-signature".to_string(), s))
            .into_iter()
            .collect(),
        body: serde_json::to_vec(body).unwrap(),
    }
}

#[test]
fn events_carry_the_reference_and_the_intents_state() {
    let host = FakeHost::new();
    let mut object = intent("succeeded");
    object["amount_received"] = json!(1990);
    object["latest_charge"] = json!("ch_1");
    let event = json!({"id": "evt_1", "type": "payment_intent.succeeded", "created": 1_700_000_200,
        "data": {"object": object}});
    let now = time::now_unix();
    let body = serde_json::to_vec(&event).unwrap();
    let header = format!("t={now},v1={}", signed(&host, now, &body));
    let with_secret = ctx().with_field("webhook-secret", SECRET);

    let events =
        Stripe::parse_webhook(&host, &with_secret, &webhook(&event, Some(header))).unwrap();
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(
        (e.reference.as_deref(), e.psp_id.as_deref(), e.status),
        (Some(REFERENCE), Some("pi_1"), ChargeStatus::Paid)
    );
    let payment = e.payment.as_ref().unwrap();
    assert_eq!(
        (
            payment.end_to_end_id.as_deref(),
            payment.amount,
            payment.paid_at.as_str()
        ),
        (None, 1990, "2023-11-14T22:16:40Z")
    );
    let unsigned = Stripe::parse_webhook(&host, &with_secret, &webhook(&event, None));
    assert_eq!(unsigned.unwrap_err().kind(), "invalid-webhook");
    // Without a configured secret nothing is verified: the host confirms by querying.
    assert_eq!(
        Stripe::parse_webhook(&host, &ctx(), &webhook(&event, None))
            .unwrap()
            .len(),
        1
    );
    let other = json!({"type": "charge.succeeded", "data": {"object": {"id": "ch_1"}}});
    assert!(
        Stripe::parse_webhook(&host, &ctx(), &webhook(&other, None))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn restricted_keys_are_accepted_and_keys_of_the_other_environment_refused() {
    let manifest = Stripe::manifest().into_wit();
    let key = &manifest.credential_fields[0];
    assert_eq!(key.name, "secret-key");
    // The host would refuse rk_ keys with a single sk_ prefix: the adapter checks instead.
    assert!(key.value_prefix.is_none());
    assert!(!manifest.credential_fields[1].required);

    for key in ["rk_test_51abc", "sk_test_51abc"] {
        let host = FakeHost::new();
        host.reply(200, r#"{"object":"list","data":[],"has_more":false}"#);
        let ctx = Context {
            fields: vec![("secret-key".into(), key.into())],
            ..ctx()
        };
        Stripe::check_credentials(&host, &ctx).unwrap();
        assert_eq!(
            host.sent()[0].header_value("authorization"),
            Some(format!("Bearer {key}").as_str())
        );
    }
    let host = FakeHost::new();
    let live_key = Context {
        fields: vec![("secret-key".into(), "rk_live_51abc".into())],
        ..ctx()
    };
    let e = Stripe::check_credentials(&host, &live_key).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    assert!(
        host.sent().is_empty(),
        "nothing is sent with a live key in test"
    );
}
