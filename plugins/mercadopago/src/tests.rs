use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;

const REFERENCE: &str = "abcdefghijklmnopqrstuvwxyz12";
const SECRET: &str = "mp-webhook-secret";

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("access-token", "APP_USR-1-2-3")
        .with_endpoint("api", "https://api.mp.test")
        .with_webhook_url("https://gw.example/api/wh/cred-1")
}

/// A host that already knows `ctx()`'s token to be a test user's, as after the first create:
/// the tests of the payment calls see only those calls.
fn checked_host() -> FakeHost {
    let host = FakeHost::new();
    let digest = host.sha256(b"APP_USR-1-2-3");
    host.cache_set(
        &format!("account-environment:{}", hex(&digest[..8])),
        "test",
        3600,
    );
    host
}

fn request(email: Option<&str>) -> ChargeRequest {
    ChargeRequest {
        reference: REFERENCE.into(),
        amount: 1050,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: email.map(str::to_owned),
            name: Some("Ana Maria Souza".into()),
            document: Some("12345678909".into()),
        },
        expires_in: 3600,
    }
}

fn payment(status: &str, detail: &str) -> Value {
    json!({
        "id": 1_325_000_123u64, "status": status, "status_detail": detail,
        "transaction_amount": 10.5, "external_reference": REFERENCE,
        "date_approved": if status == "approved" { json!("2030-01-01T10:00:00.000-04:00") } else { Value::Null },
        "date_of_expiration": "2099-01-01T10:00:00.000-04:00",
        "point_of_interaction": {"type": "OPENPLATFORM", "transaction_data": {
            "qr_code": "00020101021226", "qr_code_base64": "iVBORw0KGgo=", "ticket_url": "https://x",
            "e2e_id": if status == "approved" { json!("E10573521203001011000abcdefghijk") } else { Value::Null }}},
    })
}

#[test]
fn create_posts_a_pix_payment_keyed_by_the_reference() {
    let host = checked_host();
    host.reply(
        201,
        &payment("pending", "pending_waiting_transfer").to_string(),
    );
    let before = time::now_unix();
    let charge = MercadoPago::create(&host, &ctx(), &request(Some("ana@example.com"))).unwrap();

    let sent = &host.sent()[0];
    assert_eq!(sent.url, "https://api.mp.test/v1/payments");
    assert_eq!(sent.header_value("x-idempotency-key"), Some(REFERENCE));
    assert_eq!(
        sent.header_value("authorization"),
        Some("Bearer APP_USR-1-2-3")
    );
    let mut body: Value = serde_json::from_slice(&sent.body).unwrap();
    let expiration = body["date_of_expiration"].take();
    assert_eq!(
        body,
        json!({
            "transaction_amount": 10.5,
            "description": "Pedido 42",
            "payment_method_id": "pix",
            "payer": {"email": "ana@example.com", "first_name": "Ana", "last_name": "Maria Souza",
                      "identification": {"type": "CPF", "number": "12345678909"}},
            "external_reference": REFERENCE,
            "notification_url": "https://gw.example/api/wh/cred-1?source_news=webhooks",
            "date_of_expiration": null,
        })
    );
    let expiration = expiration.as_str().unwrap();
    assert!(expiration.ends_with(".000-03:00"), "{expiration}");
    let at = time::parse_rfc3339(expiration).unwrap();
    assert!(
        (before + 3600..=time::now_unix() + 3600).contains(&at),
        "{expiration}"
    );

    assert_eq!(
        (charge.psp_id.as_str(), charge.status, charge.amount),
        ("1325000123", ChargeStatus::Pending, 1050)
    );
    assert_eq!(charge.copy_paste.as_deref(), Some("00020101021226"));
    assert_eq!(charge.qr_png_base64.as_deref(), Some("iVBORw0KGgo="));
    assert_eq!(charge.expires_at.as_deref(), Some("2099-01-01T14:00:00Z"));
}

#[test]
fn a_retried_create_sends_the_same_body_under_the_same_key() {
    let host = checked_host();
    host.fail(pixgw_plugin_sdk::http::HttpError::NoAnswer("reset".into()))
        .reply(
            201,
            &payment("pending", "pending_waiting_transfer").to_string(),
        );
    let request = request(Some("ana@example.com"));
    let now = 1_714_575_600;
    let lost = create_at(&host, &ctx(), &request, now).unwrap_err();
    assert_eq!(lost.kind(), "ambiguous");
    // Seconds later: the same body, so Mercado Pago can answer the first payment.
    create_at(&host, &ctx(), &request, now + 5).unwrap();
    let sent = host.sent();
    assert_eq!(sent[0].body, sent[1].body);
    assert_eq!(
        sent[0].header_value("x-idempotency-key"),
        sent[1].header_value("x-idempotency-key")
    );
    let remembered = host.cached(&format!("expiration:{REFERENCE}")).unwrap();
    let body: Value = serde_json::from_slice(&sent[1].body).unwrap();
    assert_eq!(body["date_of_expiration"], remembered.0.as_str());
}

#[test]
fn the_payer_email_is_required() {
    let host = checked_host();
    let e = MercadoPago::create(&host, &ctx(), &request(None)).unwrap_err();
    assert_eq!(e.kind(), "rejected");
    assert!(host.sent().is_empty());
    assert_eq!(
        MercadoPago::manifest().required_payer_fields,
        vec![PayerField::Email]
    );
}

#[test]
fn expiration_is_written_in_brasilia_time() {
    assert_eq!(
        date_of_expiration(1_700_000_000),
        "2023-11-14T19:13:20.000-03:00"
    );
}

#[test]
fn mercado_pago_errors_keep_the_message() {
    let host = checked_host();
    host.reply(
        401,
        r#"{"message":"invalid access token","error":"unauthorized","status":401,"cause":[]}"#,
    )
    .reply(
        400,
        r#"{"message":"payer.email must be a valid email","error":"bad_request","status":400,"cause":[{"code":4050,"description":"payer.email must be a valid email"}]}"#,
    );
    let e = MercadoPago::create(&host, &ctx(), &request(Some("a@b.co"))).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    let detail = e.psp_error().unwrap();
    assert_eq!(
        (detail.message.as_str(), detail.code.as_deref()),
        ("invalid access token", Some("unauthorized"))
    );
    let e = MercadoPago::create(&host, &ctx(), &request(Some("a@b.co"))).unwrap_err();
    assert_eq!(e.kind(), "rejected");
    let detail = e.psp_error().unwrap();
    assert_eq!(
        (detail.message.as_str(), detail.code.as_deref()),
        ("payer.email must be a valid email", Some("4050"))
    );
    assert_eq!(e.reason(), Reason::PayerData, "cause 4050");
}

#[test]
fn cause_codes_say_the_reason() {
    let reason = |code: u32, message: &str| {
        let body = format!(
            r#"{{"message":"{message}","error":"bad_request","status":400,"cause":[{{"code":{code},"description":"{message}"}}]}}"#
        );
        describe(400, body.as_bytes()).reason
    };
    assert_eq!(reason(4037, "Invalid transaction_amount"), Reason::Amount);
    assert_eq!(
        reason(2067, "Invalid user identification number"),
        Reason::PayerData
    );
    assert_eq!(
        reason(13253, "Collector user without key enabled for QR render"),
        Reason::PixNotEnabled
    );
    assert_eq!(
        reason(4020, "notification_url attribute must be url valid"),
        Reason::Unspecified
    );
}

#[test]
fn statuses() {
    let status = |s: &str, detail: &str, expires: &str| {
        let mut v = payment(s, detail);
        v["date_of_expiration"] = json!(expires);
        serde_json::from_value::<MpPayment>(v)
            .unwrap()
            .status(1_900_000_000)
    };
    let future = "2099-01-01T00:00:00.000-04:00";
    let past = "2020-01-01T00:00:00.000-04:00";
    use ChargeStatus::*;
    assert_eq!(
        status("pending", "pending_waiting_transfer", future),
        Pending
    );
    assert_eq!(status("authorized", "", future), Pending);
    assert_eq!(status("pending", "pending_waiting_transfer", past), Expired);
    assert_eq!(status("in_process", "", future), Processing);
    assert_eq!(status("approved", "accredited", past), Paid);
    assert_eq!(status("rejected", "", future), Failed);
    assert_eq!(status("cancelled", "by_collector", future), Canceled);
    assert_eq!(status("cancelled", "expired", past), Expired);
}

#[test]
fn query_by_reference_searches_and_reads_the_payment() {
    let host = checked_host();
    host.reply(
        200,
        &json!({"paging": {"total": 1}, "results": [payment("approved", "accredited")]})
            .to_string(),
    )
    .reply(200, r#"{"paging":{"total":0},"results":[]}"#);
    let charge = MercadoPago::query(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(
        host.sent()[0].url,
        format!(
            "https://api.mp.test/v1/payments/search?external_reference={REFERENCE}&sort=date_created&criteria=desc"
        )
    );
    assert_eq!(charge.status, ChargeStatus::Paid);
    let paid = charge.payment.unwrap();
    assert_eq!(
        (
            paid.end_to_end_id.as_deref(),
            paid.amount,
            paid.paid_at.as_str()
        ),
        (
            Some("E10573521203001011000abcdefghijk"),
            1050,
            "2030-01-01T14:00:00Z"
        )
    );
    let e = MercadoPago::query(&host, &ctx(), REFERENCE, None).unwrap_err();
    assert_eq!(e.kind(), "not-found");
}

#[test]
fn cancel_puts_the_cancelled_status() {
    let host = checked_host();
    host.reply(200, &payment("cancelled", "by_collector").to_string());
    let charge = MercadoPago::cancel(&host, &ctx(), REFERENCE, Some("1325000123")).unwrap();
    assert_eq!(charge.status, ChargeStatus::Canceled);
    let sent = &host.sent()[0];
    assert_eq!(
        (sent.method, sent.url.as_str()),
        (Method::Put, "https://api.mp.test/v1/payments/1325000123")
    );
    assert_eq!(sent.body, br#"{"status":"cancelled"}"#);
}

fn notification(host: &FakeHost, secret: &str, request_id: Option<&str>) -> WebhookRequest {
    let ts = "1742505638683";
    let mut manifest = "id:1325000123;".to_string();
    if let Some(r) = request_id {
        manifest.push_str(&format!("request-id:{r};"));
    }
    manifest.push_str(&format!("ts:{ts};"));
    let v1: String = host
        .hmac_sha256(secret.as_bytes(), manifest.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut headers = vec![("x-signature".to_string(), format!("ts={ts},v1={v1}"))];
    if let Some(r) = request_id {
        headers.push(("x-request-id".to_string(), r.to_string()));
    }
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: "data.id=1325000123&type=payment".into(),
        headers,
        body: br#"{"action":"payment.updated","data":{"id":"1325000123"},"type":"payment"}"#
            .to_vec(),
    }
}

#[test]
fn a_notification_is_verified_then_the_payment_is_queried() {
    let host = checked_host();
    host.reply(200, &payment("approved", "accredited").to_string());
    let with_secret = ctx().with_field("webhook-secret", SECRET);
    let events = MercadoPago::parse_webhook(
        &host,
        &with_secret,
        &notification(&host, SECRET, Some("req-uuid")),
    )
    .unwrap();
    assert_eq!(
        host.sent()[0].url,
        "https://api.mp.test/v1/payments/1325000123"
    );
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(
        (e.reference.as_deref(), e.psp_id.as_deref(), e.status),
        (Some(REFERENCE), Some("1325000123"), ChargeStatus::Paid)
    );
    assert_eq!(e.payment.as_ref().map(|p| p.amount), Some(1050));

    // Without x-request-id the manifest leaves it out.
    host.reply(
        200,
        &payment("pending", "pending_waiting_transfer").to_string(),
    );
    let events =
        MercadoPago::parse_webhook(&host, &with_secret, &notification(&host, SECRET, None))
            .unwrap();
    assert_eq!(events[0].status, ChargeStatus::Pending);
}

#[test]
fn a_bad_signature_is_refused_before_any_query() {
    let host = checked_host();
    let with_secret = ctx().with_field("webhook-secret", SECRET);
    let forged = notification(&host, "another-secret", Some("req-uuid"));
    let e = MercadoPago::parse_webhook(&host, &with_secret, &forged).unwrap_err();
    assert_eq!(e.kind(), "invalid-webhook");
    let mut half = notification(&host, SECRET, Some("req-uuid"));
    half.headers.retain(|(n, _)| n == "x-signature");
    half.headers[0].1 = "ts=1742505638683".into();
    let e = MercadoPago::parse_webhook(&host, &with_secret, &half).unwrap_err();
    assert_eq!(e.kind(), "invalid-webhook");
    assert!(host.sent().is_empty());
}

#[test]
fn an_unsigned_notification_is_confirmed_by_query_even_with_a_secret() {
    // A payment's own notification_url gets notifications without x-signature: with or
    // without a secret, the payment is read from Mercado Pago and that is the event.
    let host = checked_host();
    let mut unsigned = notification(&host, SECRET, Some("req-uuid"));
    unsigned.headers.retain(|(n, _)| n != "x-signature");
    for ctx in [ctx().with_field("webhook-secret", SECRET), ctx()] {
        host.reply(200, &payment("approved", "accredited").to_string());
        let events = MercadoPago::parse_webhook(&host, &ctx, &unsigned).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].status, ChargeStatus::Paid);
    }
    assert_eq!(host.sent().len(), 2);

    // The older IPN format names the payment as `topic=payment&id=…`.
    host.reply(200, &payment("approved", "accredited").to_string());
    let ipn = WebhookRequest {
        query: "source_news=ipn&topic=payment&id=1325000123".into(),
        body: Vec::new(),
        headers: Vec::new(),
        ..unsigned.clone()
    };
    let events = MercadoPago::parse_webhook(&host, &ctx(), &ipn).unwrap();
    assert_eq!(events[0].psp_id.as_deref(), Some("1325000123"));
    assert_eq!(
        host.sent()[2].url,
        "https://api.mp.test/v1/payments/1325000123"
    );
    let other = WebhookRequest {
        query: "id=9&topic=merchant_order".into(),
        body: b"{}".to_vec(),
        ..unsigned
    };
    assert!(
        MercadoPago::parse_webhook(&host, &ctx(), &other)
            .unwrap()
            .is_empty()
    );
}

fn user(tags: &[&str]) -> String {
    json!({"id": 123_456_789u64, "site_id": "MLB", "tags": tags}).to_string()
}

fn live_ctx(token: &str) -> Context {
    Context::new(Environment::Live)
        .with_field("access-token", token)
        .with_endpoint("api", "https://api.mp.test")
        .with_webhook_url("https://gw.example/api/wh/cred-1")
}

/// Test and live share one host and one token format: only `GET /users/me` tells a test user
/// from a real account, and the wrong one is refused before anything is created.
#[test]
fn a_token_must_belong_to_an_account_of_its_environment() {
    // Test environment, real account: refused, nothing created.
    let host = FakeHost::new();
    host.reply(200, &user(&["normal"]));
    let e = MercadoPago::create(&host, &ctx(), &request(Some("ana@example.com"))).unwrap_err();
    let Error::BadCredentials(psp) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(psp.code.as_deref(), Some("account_environment_mismatch"));
    assert_eq!(psp.reason, Reason::Credentials);
    assert!(
        psp.message
            .starts_with("this access token belongs to the real Mercado Pago account 123456789"),
        "{}",
        psp.message
    );
    assert_eq!(host.sent().len(), 1);
    assert_eq!(host.sent()[0].url, "https://api.mp.test/users/me");
    // Saving it is refused the same way.
    host.reply(200, &user(&["normal"]));
    let e = MercadoPago::check_credentials(&host, &ctx()).unwrap_err();
    assert!(matches!(e, Error::BadCredentials(_)), "{e:?}");
    assert_eq!(host.sent().len(), 2, "nothing but /users/me was asked");

    // Test environment, test user: accepted, remembered, so the next create asks no more.
    let host = FakeHost::new();
    host.reply(200, &user(&["normal", "test_user"]));
    host.reply(
        201,
        &payment("pending", "pending_waiting_transfer").to_string(),
    );
    MercadoPago::create(&host, &ctx(), &request(Some("ana@example.com"))).unwrap();
    host.reply(
        201,
        &payment("pending", "pending_waiting_transfer").to_string(),
    );
    MercadoPago::create(&host, &ctx(), &request(Some("ana@example.com"))).unwrap();
    let urls: Vec<String> = host.sent().iter().map(|r| r.url.clone()).collect();
    assert_eq!(
        urls,
        [
            "https://api.mp.test/users/me",
            "https://api.mp.test/v1/payments",
            "https://api.mp.test/v1/payments"
        ]
    );

    // Saving a credential always asks, cache or not.
    host.reply(200, &user(&["normal", "test_user"]));
    host.reply(200, r#"{"results": []}"#);
    MercadoPago::check_credentials(&host, &ctx()).unwrap();
    assert_eq!(host.sent()[3].url, "https://api.mp.test/users/me");

    // Live environment, test user: refused.
    let host = FakeHost::new();
    host.reply(200, &user(&["normal", "test_user"]));
    let e = MercadoPago::check_credentials(&host, &live_ctx("APP_USR-9-9-9")).unwrap_err();
    let Error::BadCredentials(psp) = &e else {
        panic!("{e:?}")
    };
    assert!(
        psp.message
            .starts_with("this access token belongs to the test user 123456789"),
        "{}",
        psp.message
    );

    // Live environment, real account: accepted.
    host.reply(200, &user(&["normal"]));
    host.reply(200, r#"{"results": []}"#);
    MercadoPago::check_credentials(&host, &live_ctx("APP_USR-9-9-9")).unwrap();

    // Legacy TEST- sandbox tokens: test only, decided without asking.
    let host = FakeHost::new();
    let e = MercadoPago::check_credentials(&host, &live_ctx("TEST-1-2-3")).unwrap_err();
    assert!(matches!(e, Error::BadCredentials(_)), "{e:?}");
    assert!(host.sent().is_empty());
    let sandbox = Context::new(Environment::Test)
        .with_field("access-token", "TEST-1-2-3")
        .with_endpoint("api", "https://api.mp.test")
        .with_webhook_url("https://gw.example/api/wh/cred-1");
    host.reply(
        201,
        &payment("pending", "pending_waiting_transfer").to_string(),
    );
    MercadoPago::create(&host, &sandbox, &request(Some("ana@example.com"))).unwrap();
    assert_eq!(host.sent().len(), 1);
}
