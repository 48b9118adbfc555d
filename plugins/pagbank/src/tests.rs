use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;
use pixgw_plugin_sdk::http::HttpError;
use serde_json::Value;

const API: &str = "https://sandbox.api.pagseguro.com";
const REFERENCE: &str = "abcdefghijklmnopqrstuvwxyz123456";
const CODE: &str = "00020101021226580014br.gov.bcb.pix2536pix.example.com/qr/v2/abc5204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304ABCD";

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("token", "tok")
        .with_endpoint("api", API)
        .with_webhook_url("https://gw.example/api/wh/1?token=t")
}

fn request(document: Option<&str>) -> ChargeRequest {
    ChargeRequest {
        reference: REFERENCE.into(),
        amount: 1234,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: Some("ana@example.com".into()),
            name: Some("Ana".into()),
            document: document.map(Into::into),
        },
        expires_in: 3600,
    }
}

/// An order as PagBank answers it; `charges` is added when given.
fn order(expiration: &str, charges: Value) -> String {
    let mut order = json!({
        "id": "ORDE_1",
        "reference_id": REFERENCE,
        "qr_codes": [{
            "id": "QRCO_1",
            "expiration_date": expiration,
            "amount": { "value": 1234 },
            "text": CODE,
            "links": [{ "rel": "QRCODE.BASE64", "href": "https://api.pagseguro.com/qrcode/QRCO_1/base64" }],
        }],
    });
    if charges != Value::Null {
        order["charges"] = charges;
    }
    order.to_string()
}

fn paid_charges() -> Value {
    json!([{
        "id": "CHAR_1",
        "status": "PAID",
        "paid_at": "2030-01-01T10:00:00.000-03:00",
        "amount": { "value": 1234 },
        "payment_method": { "type": "PIX", "pix": { "end_to_end_id": "E08561701203001011300abcdefghijk" } },
    }])
}

#[test]
fn create_posts_an_order_with_a_qr_code() {
    let host = FakeHost::new();
    host.reply(201, &order("2099-01-01T00:00:00-03:00", Value::Null));
    let before = time::now_unix();
    let charge = PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap();

    let sent = &host.sent()[0];
    assert_eq!(sent.url, format!("{API}/orders"));
    assert_eq!(sent.header_value("authorization"), Some("Bearer tok"));
    // Not in PagBank's public API: nothing pretends to be idempotent.
    assert_eq!(sent.header_value("x-idempotency-key"), None);
    assert_eq!(
        host.cached(&format!("order:{REFERENCE}")).map(|(id, _)| id),
        Some("ORDE_1".into())
    );
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["reference_id"], REFERENCE);
    assert_eq!(
        body["customer"],
        json!({ "tax_id": "12345678909", "name": "Ana", "email": "ana@example.com" })
    );
    assert_eq!(
        body["items"],
        json!([{ "name": "Pedido 42", "quantity": 1, "unit_amount": 1234 }])
    );
    assert_eq!(body["qr_codes"][0]["amount"], json!({ "value": 1234 }));
    assert_eq!(
        body["notification_urls"],
        json!(["https://gw.example/api/wh/1?token=t"])
    );
    let expiration = body["qr_codes"][0]["expiration_date"].as_str().unwrap();
    assert!(expiration.ends_with("-03:00"), "{expiration}");
    let at = time::parse_rfc3339(expiration).unwrap();
    assert!(
        (before + 3600..=time::now_unix() + 3600).contains(&at),
        "{expiration}"
    );

    assert_eq!(
        (charge.psp_id.as_str(), charge.status, charge.amount),
        ("ORDE_1", ChargeStatus::Pending, 1234)
    );
    assert_eq!(charge.copy_paste.as_deref(), Some(CODE));
    assert_eq!(charge.qr_png_base64, None);
    assert_eq!(charge.expires_at.as_deref(), Some("2099-01-01T03:00:00Z"));
    assert_eq!(
        PagBank::manifest().required_payer_fields,
        vec![PayerField::Document]
    );
    assert_eq!(PagBank::manifest().capabilities, Capabilities::empty());
}

#[test]
fn a_missing_cpf_is_refused_before_calling() {
    let host = FakeHost::new();
    let error = PagBank::create(&host, &ctx(), &request(None)).unwrap_err();
    assert_eq!(
        (error.kind(), error.reason()),
        ("rejected", Reason::PayerData)
    );
    assert!(error.psp_error().unwrap().message.contains("CPF or CNPJ"));
    assert!(host.sent().is_empty());
}

#[test]
fn errors_keep_pagbanks_words() {
    let host = FakeHost::new();
    host.reply(
        401,
        r#"{"error_messages":[{"code":"UNAUTHORIZED","description":"Invalid credential. Review AUTHORIZATION header"}]}"#,
    )
    .reply(
        400,
        r#"{"error_messages":[{"code":"40001","description":"required_parameter","parameter_name":"customer.tax_id"},{"code":"40002","description":"invalid_parameter","parameter_name":"qr_codes[0].amount.value"}]}"#,
    )
    .fail(HttpError::NoAnswer("reset".into()));
    let create = || PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap_err();

    let denied = create();
    assert_eq!(denied.kind(), "bad-credentials");
    let detail = denied.psp_error().unwrap();
    assert_eq!(
        detail.message,
        "Invalid credential. Review AUTHORIZATION header"
    );
    assert_eq!(
        (detail.code.as_deref(), detail.http_status),
        (Some("UNAUTHORIZED"), Some(401))
    );
    assert_eq!(denied.reason(), Reason::Credentials);

    let invalid = create();
    assert_eq!(invalid.kind(), "rejected");
    assert_eq!(
        invalid.reason(),
        Reason::PayerData,
        "the first parameter PagBank names"
    );
    let detail = invalid.psp_error().unwrap();
    assert_eq!(
        detail.message,
        "required_parameter (customer.tax_id); invalid_parameter (qr_codes[0].amount.value)"
    );
    assert_eq!(detail.code.as_deref(), Some("40001"));

    assert_eq!(create().kind(), "ambiguous");
}

#[test]
fn query_reads_the_paid_charge() {
    let host = FakeHost::new();
    host.reply(200, &order("2030-01-01T09:00:00-03:00", paid_charges()));
    let charge = PagBank::query(&host, &ctx(), REFERENCE, Some("ORDE_1")).unwrap();
    assert_eq!(host.sent()[0].url, format!("{API}/orders/ORDE_1"));
    assert_eq!(charge.status, ChargeStatus::Paid);
    let payment = charge.payment.unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.paid_at, "2030-01-01T10:00:00.000-03:00");
    assert_eq!(
        payment.end_to_end_id.as_deref(),
        Some("E08561701203001011300abcdefghijk")
    );
}

#[test]
fn only_an_order_whose_id_the_adapter_saw_is_found_by_reference() {
    let host = FakeHost::new();
    // Nothing known for the reference: not-found, without asking PagBank (it cannot tell).
    let missing = PagBank::query(&host, &ctx(), REFERENCE, None).unwrap_err();
    assert_eq!(missing.kind(), "not-found");
    assert!(
        missing.psp_error().unwrap().message.contains("by id only"),
        "{missing:?}"
    );
    assert!(host.sent().is_empty());

    // Once a create was answered, the reference leads to the order.
    host.reply(201, &order("2099-01-01T00:00:00-03:00", Value::Null))
        .reply(200, &order("2020-01-01T00:00:00-03:00", Value::Null));
    PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap();
    let charge = PagBank::query(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(host.sent()[1].url, format!("{API}/orders/ORDE_1"));
    assert_eq!(
        (charge.psp_id.as_str(), charge.status),
        ("ORDE_1", ChargeStatus::Expired)
    );
}

#[test]
fn a_retried_create_carries_on_with_the_order_it_saw_and_a_lost_one_makes_another() {
    let host = FakeHost::new();
    host.reply(201, &order("2099-01-01T00:00:00-03:00", Value::Null))
        .reply(200, &order("2099-01-01T00:00:00-03:00", Value::Null));
    let first = PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap();
    let again = PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap();
    assert_eq!(first.psp_id, again.psp_id);
    assert_eq!(host.sent()[1].method, Method::Get);

    // A lost answer leaves nothing to find: the retry creates (the first order, whose code
    // nobody saw, lapses at its expiration date).
    let host = FakeHost::new();
    host.fail(pixgw_plugin_sdk::http::HttpError::NoAnswer("reset".into()))
        .reply(201, &order("2099-01-01T00:00:00-03:00", Value::Null));
    let lost = PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap_err();
    assert_eq!(lost.kind(), "ambiguous");
    PagBank::create(&host, &ctx(), &request(Some("12345678909"))).unwrap();
    assert!(host.sent().iter().all(|r| r.method == Method::Post));
}

fn notification(body: &str, token: Option<String>) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: "token=t".into(),
        headers: token
            .map(|t| vec![("x-authenticity-token".into(), t)])
            .unwrap_or_default(),
        body: body.as_bytes().to_vec(),
    }
}

fn authenticity(host: &FakeHost, text: &str) -> String {
    hex(&host.sha256(text.as_bytes()))
}

#[test]
fn notifications_are_checked_and_read() {
    let host = FakeHost::new();
    let body = order("2030-01-01T09:00:00-03:00", paid_charges());
    let good = authenticity(&host, &format!("tok-{body}"));

    let events =
        PagBank::parse_webhook(&host, &ctx(), &notification(&body, Some(good.clone()))).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].reference.as_deref(), events[0].psp_id.as_deref()),
        (Some(REFERENCE), Some("ORDE_1"))
    );
    assert_eq!(events[0].status, ChargeStatus::Paid);
    assert_eq!(events[0].payment.as_ref().unwrap().amount, 1234);

    // Upper-case hex and the separator-less variant are accepted too.
    let upper = notification(&body, Some(good.to_uppercase()));
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &upper).unwrap().len(),
        1
    );
    let bare = notification(&body, Some(authenticity(&host, &format!("tok{body}"))));
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &bare).unwrap().len(),
        1
    );

    // Without the header the URL token authenticated it; the host confirms by query.
    let unsigned = notification(&body, None);
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &unsigned)
            .unwrap()
            .len(),
        1
    );

    let forged = notification(&body, Some(authenticity(&host, &format!("other-{body}"))));
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &forged)
            .unwrap_err()
            .kind(),
        "invalid-webhook"
    );
    let tampered = notification(&body.replace("1234", "9999"), Some(good));
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &tampered)
            .unwrap_err()
            .kind(),
        "invalid-webhook"
    );

    let unpaid = order("2099-01-01T00:00:00-03:00", Value::Null);
    assert!(
        PagBank::parse_webhook(&host, &ctx(), &notification(&unpaid, None))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        PagBank::parse_webhook(&host, &ctx(), &notification("not json", None))
            .unwrap_err()
            .kind(),
        "invalid-webhook"
    );
}

#[test]
fn brasilia_dates() {
    assert_eq!(brasilia(1_599_682_500), "2020-09-09T17:15:00-03:00");
}
