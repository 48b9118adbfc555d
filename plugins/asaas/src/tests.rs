use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;
use pixgw_plugin_sdk::http::HttpError;

const REF: &str = "abcdefghijklmnopqrstuvwxyz123456";
const KEY_VALUE: &str = "$aact_hmlg_000key";
const CPF: &str = "12345678909";
const CODE: &str = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB";
/// 2024-05-01T15:00:00Z, noon in São Paulo.
const NOW: i64 = 1_714_575_600;
const BASE: &str = "https://api-sandbox.asaas.com";

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("api-key", KEY_VALUE)
        .with_endpoint("api", BASE)
}

fn request(reference: &str) -> ChargeRequest {
    ChargeRequest {
        reference: reference.into(),
        amount: 1990,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: None,
            name: Some("Fulano de Tal".into()),
            document: Some(CPF.into()),
        },
        expires_in: 3600,
    }
}

fn payment(status: &str, extra: Value) -> String {
    let mut v = json!({
        "object": "payment",
        "id": "pay_080225913252",
        "customer": "cus_000005219613",
        "value": 19.9,
        "billingType": "PIX",
        "status": status,
        "dueDate": "2024-05-01",
        "paymentDate": null,
        "externalReference": REF,
        "deleted": false,
    });
    if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
        v.extend(extra);
    }
    v.to_string()
}

fn list(items: &[String]) -> String {
    format!(
        r#"{{"object":"list","hasMore":false,"totalCount":{},"limit":10,"offset":0,"data":[{}]}}"#,
        items.len(),
        items.join(",")
    )
}

fn qr() -> String {
    json!({"encodedImage": "iVBORw0KGgo=", "payload": CODE, "expirationDate": "2025-05-01 23:59:59"})
        .to_string()
}

fn paths(host: &FakeHost) -> Vec<String> {
    host.sent()
        .iter()
        .map(|r| {
            let method = format!("{:?}", r.method);
            let method = method.trim_start_matches("Method::").to_owned();
            format!("{method} {}", r.url.trim_start_matches(BASE))
        })
        .collect()
}

#[test]
fn create_finds_or_creates_the_customer_then_a_pix_payment() {
    let host = FakeHost::new();
    host.reply(200, &list(&[]))
        .reply(200, r#"{"object":"customer","id":"cus_000005219613","name":"Fulano de Tal","cpfCnpj":"12345678909"}"#)
        .reply(200, &payment("PENDING", json!({})))
        .reply(200, &qr());
    let charge = create_at(&host, &ctx(), &request(REF), NOW).unwrap();
    assert_eq!(
        paths(&host),
        [
            "Get /v3/customers?cpfCnpj=12345678909",
            "Post /v3/customers",
            "Post /v3/payments",
            "Get /v3/payments/pay_080225913252/pixQrCode",
        ]
    );
    let sent = host.sent();
    for r in &sent {
        assert_eq!(r.header_value("access_token"), Some(KEY_VALUE));
        assert_eq!(r.header_value("user-agent"), Some("pixgw"));
    }
    let body = |i: usize| serde_json::from_slice::<Value>(&sent[i].body).unwrap();
    assert_eq!(body(1), json!({"name": "Fulano de Tal", "cpfCnpj": CPF}));
    assert_eq!(
        body(2),
        json!({
            "customer": "cus_000005219613",
            "billingType": "PIX",
            "value": 19.9,
            "dueDate": "2024-05-01",
            "description": "Pedido 42",
            "externalReference": REF,
        })
    );
    assert_eq!(
        (
            charge.reference.as_str(),
            charge.psp_id.as_str(),
            charge.status,
            charge.amount
        ),
        (REF, "pay_080225913252", ChargeStatus::Pending, 1990)
    );
    assert_eq!(charge.copy_paste.as_deref(), Some(CODE));
    assert_eq!(charge.qr_png_base64.as_deref(), Some("iVBORw0KGgo="));
    // The charge's own expiry (one hour), remembered for the queries that enforce it.
    assert_eq!(charge.expires_at.as_deref(), Some("2024-05-01T16:00:00Z"));
    assert_eq!(
        host.cached(&format!("expires:{REF}")).map(|(at, _)| at),
        Some((NOW + 3600).to_string())
    );
    // The customer is cached under a hash of the document, never the CPF itself.
    let key = customer_key(&host, CPF);
    assert!(!key.contains(CPF));
    assert_eq!(
        host.cached(&key).map(|(id, _)| id).as_deref(),
        Some("cus_000005219613")
    );
}

#[test]
fn a_second_charge_for_the_same_document_reuses_the_cached_customer() {
    let host = FakeHost::new();
    host.reply(
        200,
        &list(&[r#"{"object":"customer","id":"cus_1","deleted":false}"#.into()]),
    )
    .reply(200, &payment("PENDING", json!({})))
    .reply(200, &qr());
    create_at(&host, &ctx(), &request(REF), NOW).unwrap();
    // The first looked the customer up and found it: no customer was created.
    assert_eq!(
        paths(&host)[..2],
        ["Get /v3/customers?cpfCnpj=12345678909", "Post /v3/payments"]
    );

    host.reply(
        200,
        &payment("PENDING", json!({"externalReference": "other"})),
    )
    .reply(200, &qr());
    create_at(
        &host,
        &ctx(),
        &request("otherreferenceabcdefghijklmnop"),
        NOW,
    )
    .unwrap();
    let second = &paths(&host)[3..];
    assert_eq!(
        second,
        [
            "Post /v3/payments",
            "Get /v3/payments/pay_080225913252/pixQrCode"
        ]
    );
    let body: Value = serde_json::from_slice(&host.sent()[3].body).unwrap();
    assert_eq!(body["customer"], "cus_1");
}

#[test]
fn a_cached_customer_asaas_no_longer_knows_is_looked_up_again() {
    let host = FakeHost::new();
    host.cache_set(&customer_key(&host, CPF), "cus_gone", 3600);
    host.reply(
        400,
        r#"{"errors":[{"code":"invalid_customer","description":"Cliente inválido ou não informado."}]}"#,
    )
    .reply(200, &list(&[r#"{"id":"cus_2"}"#.into()]))
    .reply(200, &payment("PENDING", json!({})))
    .reply(200, &qr());
    create_at(&host, &ctx(), &request(REF), NOW).unwrap();
    let body: Value = serde_json::from_slice(&host.sent()[2].body).unwrap();
    assert_eq!(body["customer"], "cus_2");
    assert_eq!(host.cached(&customer_key(&host, CPF)).unwrap().0, "cus_2");
}

#[test]
fn without_a_document_nothing_is_sent() {
    let host = FakeHost::new();
    let mut r = request(REF);
    r.payer.document = None;
    let e = create_at(&host, &ctx(), &r, NOW).unwrap_err();
    assert_eq!((e.kind(), e.reason()), ("rejected", Reason::PayerData));
    assert!(host.sent().is_empty());
    assert_eq!(
        Asaas::manifest().into_wit().required_payer_fields,
        vec![PayerField::Document]
    );
}

#[test]
fn a_bad_key_is_bad_credentials_with_asaas_words() {
    let host = FakeHost::new();
    host.reply(
        401,
        r#"{"errors":[{"code":"invalid_access_token","description":"A chave de API fornecida é inválida"}]}"#,
    );
    let e = create_at(&host, &ctx(), &request(REF), NOW).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    let psp = e.psp_error().unwrap();
    assert_eq!(
        (psp.message.as_str(), psp.code.as_deref(), psp.http_status),
        (
            "A chave de API fornecida é inválida",
            Some("invalid_access_token"),
            Some(401)
        )
    );
}

#[test]
fn a_lost_answer_is_ambiguous_and_the_retry_finds_the_payment() {
    let host = FakeHost::new();
    host.cache_set(&customer_key(&host, CPF), "cus_1", 3600);
    host.fail(HttpError::NoAnswer("reset".into()))
        .reply(200, &list(&[]));
    let e = create_at(&host, &ctx(), &request(REF), NOW).unwrap_err();
    assert_eq!(e.kind(), "ambiguous");

    host.reply(200, &list(&[payment("PENDING", json!({}))]))
        .reply(200, &qr());
    let charge = create_at(&host, &ctx(), &request(REF), NOW).unwrap();
    assert_eq!(charge.copy_paste.as_deref(), Some(CODE));
    assert_eq!(
        paths(&host),
        [
            "Post /v3/payments",
            &format!("Get /v3/payments?externalReference={REF}"),
            &format!("Get /v3/payments?externalReference={REF}"),
            "Get /v3/payments/pay_080225913252/pixQrCode",
        ]
    );
}

#[test]
fn query_paid_and_pending() {
    let host = FakeHost::new();
    host.reply(
        200,
        &payment(
            "RECEIVED",
            json!({"paymentDate": "2024-05-01", "clientPaymentDate": "2024-05-01"}),
        ),
    );
    let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW).unwrap();
    assert_eq!(charge.status, ChargeStatus::Paid);
    let paid = charge.payment.unwrap();
    assert_eq!(
        (paid.amount, paid.paid_at.as_str()),
        (1990, "2024-05-01T03:00:00Z")
    );
    assert_eq!(host.sent().len(), 1);

    host.reply(200, &list(&[payment("PENDING", json!({}))]))
        .reply(200, &qr());
    let charge = query_at(&host, &ctx(), REF, None, NOW).unwrap();
    assert_eq!(
        (charge.status, charge.copy_paste.as_deref()),
        (ChargeStatus::Pending, Some(CODE))
    );

    host.reply(200, &list(&[]));
    assert_eq!(
        query_at(&host, &ctx(), REF, None, NOW).unwrap_err().kind(),
        "not-found"
    );
}

#[test]
fn an_older_key_without_an_environment_prefix_is_sent_and_a_production_key_is_not() {
    let host = FakeHost::new();
    host.reply(200, &list(&[]));
    let legacy = "$aact_YTU5YTE0M2M2N2I4MTliNzk0YTI5N2U5MzdjNWZmNDQ6OjAwMDAwMDAwMDAwMDAwMDAwMDA";
    let ctx = |key: &str| Context {
        fields: vec![("api-key".into(), key.into())],
        ..ctx()
    };
    Asaas::check_credentials(&host, &ctx(legacy)).unwrap();
    assert_eq!(host.sent()[0].header_value("access_token"), Some(legacy));
    assert!(
        Asaas::manifest().into_wit().credential_fields[0]
            .value_prefix
            .is_none(),
        "the host must not refuse a key for lacking a prefix"
    );

    let e = Asaas::check_credentials(&host, &ctx("$aact_prod_000key")).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    assert!(e.psp_error().unwrap().message.contains("$aact_prod_"));
    assert_eq!(
        host.sent().len(),
        1,
        "a production key is not sent to the sandbox"
    );
}

/// A pending charge created at [`NOW`] for one hour, as the cache remembers it.
fn created_for_an_hour(host: &FakeHost) {
    host.cache_set(&format!("expires:{REF}"), &(NOW + 3600).to_string(), 86_400);
}

#[test]
fn an_overdue_payment_is_still_payable_until_the_charge_expires() {
    let host = FakeHost::new();
    created_for_an_hour(&host);
    host.reply(200, &payment("OVERDUE", json!({})))
        .reply(200, &qr());
    let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 60).unwrap();
    assert_eq!(
        (charge.status, charge.copy_paste.as_deref()),
        (ChargeStatus::Pending, Some(CODE))
    );
    assert_eq!(charge.expires_at.as_deref(), Some("2024-05-01T16:00:00Z"));
    assert!(!paths(&host).iter().any(|p| p.starts_with("Delete")));
}

#[test]
fn past_the_charges_expiry_the_payment_is_deleted_at_asaas_then_expired() {
    for status in ["PENDING", "OVERDUE"] {
        let host = FakeHost::new();
        created_for_an_hour(&host);
        host.reply(200, &payment(status, json!({})))
            .reply(200, r#"{"deleted":true,"id":"pay_080225913252"}"#)
            .reply(200, &payment(status, json!({"deleted": true})));
        let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 3601).unwrap();
        assert_eq!(charge.status, ChargeStatus::Expired, "{status}");
        assert_eq!(charge.reference, REF);
        assert_eq!(
            paths(&host),
            [
                "Get /v3/payments/pay_080225913252",
                "Delete /v3/payments/pay_080225913252",
                "Get /v3/payments/pay_080225913252",
            ]
        );
    }
}

#[test]
fn without_the_exact_expiry_the_due_date_decides() {
    let host = FakeHost::new();
    // Noon on the due date: still the charge's day.
    host.reply(200, &payment("PENDING", json!({})))
        .reply(200, &qr());
    let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW).unwrap();
    assert_eq!(charge.status, ChargeStatus::Pending);
    assert_eq!(charge.expires_at.as_deref(), Some("2024-05-02T02:59:59Z"));
    // The next day it is overdue: deleted, then expired.
    host.reply(200, &payment("OVERDUE", json!({})))
        .reply(200, r#"{"deleted":true,"id":"pay_080225913252"}"#)
        .reply(200, &payment("OVERDUE", json!({"deleted": true})));
    let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 86_400).unwrap();
    assert_eq!(charge.status, ChargeStatus::Expired);
}

#[test]
fn a_payment_received_before_the_delete_is_paid_and_one_asaas_keeps_is_an_error() {
    let host = FakeHost::new();
    created_for_an_hour(&host);
    host.reply(200, &payment("OVERDUE", json!({})))
        .reply(
            400,
            r#"{"errors":[{"code":"invalid_action","description":"Só é possível remover cobranças aguardando pagamento ou vencidas."}]}"#,
        )
        .reply(
            200,
            &payment("RECEIVED", json!({"paymentDate": "2024-05-02"})),
        );
    let charge = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 7200).unwrap();
    assert_eq!(charge.status, ChargeStatus::Paid);

    // Asaas unreachable for the delete: no verdict, the charge is not called expired.
    host.reply(200, &payment("OVERDUE", json!({}))).reply(
        503,
        r#"{"errors":[{"code":"internal_error","description":"down"}]}"#,
    );
    let e = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 7200).unwrap_err();
    assert_eq!(e.kind(), "unavailable");

    // Refused, and still payable: an error too.
    host.reply(200, &payment("OVERDUE", json!({})))
        .reply(
            400,
            r#"{"errors":[{"code":"invalid_action","description":"Não permitido."}]}"#,
        )
        .reply(200, &payment("OVERDUE", json!({})));
    let e = query_at(&host, &ctx(), REF, Some("pay_080225913252"), NOW + 7200).unwrap_err();
    assert_eq!(e.kind(), "unavailable");
    assert!(
        e.psp_error().unwrap().message.contains("Não permitido."),
        "{e:?}"
    );
}

#[test]
fn statuses() {
    for (asaas, ours) in [
        ("PENDING", ChargeStatus::Pending),
        ("RECEIVED", ChargeStatus::Paid),
        ("CONFIRMED", ChargeStatus::Paid),
        // Overdue is still payable by Pix: not expired (see `lapse`).
        ("OVERDUE", ChargeStatus::Pending),
        ("REFUNDED", ChargeStatus::Canceled),
        ("DELETED", ChargeStatus::Canceled),
        ("AWAITING_RISK_ANALYSIS", ChargeStatus::Processing),
        ("SOMETHING_NEW", ChargeStatus::Pending),
    ] {
        assert_eq!(status(asaas), ours, "{asaas}");
    }
}

fn webhook(body: &str) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: String::new(),
        headers: vec![("asaas-access-token".into(), "whtok".into())],
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn notifications_carry_the_payment() {
    let host = FakeHost::new();
    let body = format!(
        r#"{{"id":"evt_05b708f961d739ea7eba7e4db318f621","event":"PAYMENT_RECEIVED","dateCreated":"2024-05-01 12:00:00","payment":{}}}"#,
        payment("RECEIVED", json!({"paymentDate": "2024-05-01"}))
    );
    let events = Asaas::parse_webhook(&host, &ctx(), &webhook(&body)).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            events[0].reference.as_deref(),
            events[0].psp_id.as_deref(),
            events[0].status
        ),
        (Some(REF), Some("pay_080225913252"), ChargeStatus::Paid)
    );
    assert_eq!(events[0].payment.as_ref().map(|p| p.amount), Some(1990));
    assert!(host.sent().is_empty());

    let deleted = format!(
        r#"{{"id":"evt_1","event":"PAYMENT_DELETED","payment":{}}}"#,
        payment("PENDING", json!({}))
    );
    let events = Asaas::parse_webhook(&host, &ctx(), &webhook(&deleted)).unwrap();
    assert_eq!(events[0].status, ChargeStatus::Canceled);

    let other = r#"{"id":"evt_2","event":"TRANSFER_DONE","transfer":{}}"#;
    assert!(
        Asaas::parse_webhook(&host, &ctx(), &webhook(other))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        Asaas::parse_webhook(&host, &ctx(), &webhook("nope"))
            .unwrap_err()
            .kind(),
        "invalid-webhook"
    );
}

#[test]
fn cancel_deletes_the_payment() {
    let host = FakeHost::new();
    host.reply(200, r#"{"deleted":true,"id":"pay_080225913252"}"#)
        .reply(200, &payment("PENDING", json!({"deleted": true})));
    let charge = Asaas::cancel(&host, &ctx(), REF, Some("pay_080225913252")).unwrap();
    assert_eq!(charge.status, ChargeStatus::Canceled);
    assert_eq!(
        paths(&host),
        [
            "Delete /v3/payments/pay_080225913252",
            "Get /v3/payments/pay_080225913252"
        ]
    );
}
