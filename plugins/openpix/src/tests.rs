use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;
use pixgw_plugin_sdk::http::HttpError;
use serde_json::Value;

const API: &str = "https://api.woovi-sandbox.com";
const REFERENCE: &str = "abcdefghijklmnopqrstuvwxyz123456";
const CODE: &str = "00020101021226580014br.gov.bcb.pix2536pix.example.com/qr/v2/abc5204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304ABCD";
const PEM: &str = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----";

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("app-id", "Q2xpZW50X0lkXzE=")
        .with_field("webhook-public-key", PEM)
        .with_endpoint("api", API)
}

fn request(payer: Payer) -> ChargeRequest {
    ChargeRequest {
        reference: REFERENCE.into(),
        amount: 1234,
        description: Some("Pedido 42".into()),
        payer,
        expires_in: 3600,
    }
}

fn nobody() -> Payer {
    Payer {
        email: None,
        name: None,
        document: None,
    }
}

fn charge(status: &str, paid: bool) -> Value {
    let mut charge = json!({
        "status": status,
        "value": 1234,
        "correlationID": REFERENCE,
        "brCode": CODE,
        "qrCodeImage": "https://api.woovi-sandbox.com/openpix/charge/brcode/image/x.png",
        "expiresDate": "2030-01-01T12:00:00.000Z",
        "globalID": "Q2hhcmdlOjE=",
    });
    if paid {
        charge["paidAt"] = json!("2029-12-31T12:00:00.000Z");
        charge["paymentMethods"] =
            json!({ "pix": { "endToEndId": "E54811417202912311200abcdefghijk" } });
    }
    charge
}

#[test]
fn create_sends_the_correlation_id_and_the_bare_app_id() {
    let host = FakeHost::new();
    host.reply(
        200,
        &json!({ "charge": charge("ACTIVE", false), "brCode": CODE, "correlationID": REFERENCE })
            .to_string(),
    );
    let payer = Payer {
        email: Some("ana@example.com".into()),
        name: Some("Ana".into()),
        document: Some("12345678909".into()),
    };
    let created = OpenPix::create(&host, &ctx(), &request(payer)).unwrap();

    let sent = &host.sent()[0];
    assert_eq!(
        sent.url,
        format!("{API}/api/v1/charge?return_existing=true")
    );
    assert_eq!(sent.header_value("authorization"), Some("Q2xpZW50X0lkXzE="));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({
            "correlationID": REFERENCE,
            "value": 1234,
            "expiresIn": 3600,
            "comment": "Pedido 42",
            "customer": { "name": "Ana", "taxID": "12345678909", "email": "ana@example.com" },
        })
    );
    assert_eq!(
        (created.psp_id.as_str(), created.status, created.amount),
        (REFERENCE, ChargeStatus::Pending, 1234)
    );
    assert_eq!(created.copy_paste.as_deref(), Some(CODE));
    assert_eq!(created.expires_at.as_deref(), Some("2030-01-01T12:00:00Z"));
    assert_eq!(created.qr_png_base64, None);
}

#[test]
fn a_customer_needs_a_name_and_a_contact() {
    let host = FakeHost::new();
    let answer = json!({ "charge": charge("ACTIVE", false) }).to_string();
    host.reply(200, &answer).reply(200, &answer);
    let name_only = Payer {
        name: Some("Ana".into()),
        ..nobody()
    };
    OpenPix::create(&host, &ctx(), &request(name_only)).unwrap();
    OpenPix::create(&host, &ctx(), &request(nobody())).unwrap();
    for sent in host.sent() {
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(body.get("customer"), None, "{body}");
    }
}

#[test]
fn errors_keep_openpixs_words() {
    let host = FakeHost::new();
    host.reply(401, r#"{"error":"appID inválido"}"#)
        .reply(400, r#"{"error":"value deve ser um número inteiro"}"#)
        .fail(HttpError::NoAnswer("reset".into()));
    let create = || OpenPix::create(&host, &ctx(), &request(nobody())).unwrap_err();
    let denied = create();
    assert_eq!(denied.kind(), "bad-credentials");
    assert_eq!(denied.psp_error().unwrap().message, "appID inválido");
    assert_eq!(denied.psp_error().unwrap().http_status, Some(401));
    let refused = create();
    assert_eq!(refused.kind(), "rejected");
    assert_eq!(
        refused.psp_error().unwrap().message,
        "value deve ser um número inteiro"
    );
    assert_eq!(create().kind(), "ambiguous");
}

#[test]
fn query_maps_the_statuses() {
    let host = FakeHost::new();
    for (status, paid) in [("COMPLETED", true), ("EXPIRED", false), ("ACTIVE", false)] {
        host.reply(200, &json!({ "charge": charge(status, paid) }).to_string());
    }
    host.reply(
        200,
        &json!({ "charge": charge("WEIRD", false) }).to_string(),
    )
    .reply(404, r#"{"error":"Cobrança não encontrada"}"#);
    let query = || OpenPix::query(&host, &ctx(), REFERENCE, Some("Q2hhcmdlOjE="));

    let paid = query().unwrap();
    assert_eq!(
        host.sent()[0].url,
        format!("{API}/api/v1/charge/{REFERENCE}")
    );
    assert_eq!(paid.status, ChargeStatus::Paid);
    let payment = paid.payment.unwrap();
    assert_eq!(
        (payment.end_to_end_id.as_deref(), payment.amount),
        (Some("E54811417202912311200abcdefghijk"), 1234)
    );
    assert_eq!(payment.paid_at, "2029-12-31T12:00:00.000Z");
    assert_eq!(query().unwrap().status, ChargeStatus::Expired);
    assert_eq!(query().unwrap().status, ChargeStatus::Pending);
    assert_eq!(query().unwrap_err().kind(), "unavailable");
    let missing = query().unwrap_err();
    assert_eq!(missing.kind(), "not-found");
    assert_eq!(
        missing.psp_error().unwrap().message,
        "Cobrança não encontrada"
    );
}

#[test]
fn cancel_deletes_an_active_charge_only() {
    let host = FakeHost::new();
    host.reply(
        200,
        &json!({ "charge": charge("ACTIVE", false) }).to_string(),
    )
    .reply(200, &json!({ "status": "OK", "id": REFERENCE }).to_string())
    .reply(
        200,
        &json!({ "charge": charge("COMPLETED", true) }).to_string(),
    );
    let canceled = OpenPix::cancel(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
    let sent = host.sent();
    assert_eq!(sent[1].method, Method::Delete);
    assert_eq!(sent[1].url, format!("{API}/api/v1/charge/{REFERENCE}"));

    let paid = OpenPix::cancel(&host, &ctx(), REFERENCE, None).unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    assert_eq!(host.sent().len(), 3, "no DELETE for a paid charge");
    assert_eq!(
        OpenPix::manifest().capabilities,
        Capabilities::CANCEL_CHARGE
    );
}

fn notification(body: &Value, signature: Option<&str>) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: String::new(),
        headers: signature
            .map(|s| vec![("x-webhook-signature".into(), s.into())])
            .unwrap_or_default(),
        body: body.to_string().into_bytes(),
    }
}

#[test]
fn notifications_must_be_signed() {
    let host = FakeHost::new();
    let completed = json!({
        "event": "OPENPIX:CHARGE_COMPLETED",
        "charge": charge("COMPLETED", true),
        "pix": { "endToEndId": "E1", "value": 1234, "time": "2029-12-31T12:00:01.000Z" },
    });
    let signature = Some("c2lnbmF0dXJl");

    // FakeHost answers signature checks with `signatures_valid` (false by default).
    let forged = OpenPix::parse_webhook(&host, &ctx(), &notification(&completed, signature));
    assert_eq!(forged.unwrap_err().kind(), "invalid-webhook");
    host.signatures_valid(true);
    let unsigned = OpenPix::parse_webhook(&host, &ctx(), &notification(&completed, None));
    assert_eq!(unsigned.unwrap_err().kind(), "invalid-webhook");

    let events =
        OpenPix::parse_webhook(&host, &ctx(), &notification(&completed, signature)).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reference.as_deref(), Some(REFERENCE));
    assert_eq!(events[0].status, ChargeStatus::Paid);
    let payment = events[0].payment.as_ref().unwrap();
    assert_eq!(
        (payment.end_to_end_id.as_deref(), payment.amount),
        (Some("E1"), 1234)
    );
    assert_eq!(payment.paid_at, "2029-12-31T12:00:00.000Z");

    let expired = json!({ "event": "OPENPIX:CHARGE_EXPIRED", "charge": charge("EXPIRED", false) });
    let events = OpenPix::parse_webhook(&host, &ctx(), &notification(&expired, signature)).unwrap();
    assert_eq!(
        (events[0].status, events[0].payment.is_none()),
        (ChargeStatus::Expired, true)
    );

    let ping = json!({ "evento": "teste_webhook" });
    assert!(
        OpenPix::parse_webhook(&host, &ctx(), &notification(&ping, signature))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_public_key_may_be_base64_of_the_pem() {
    let encoded = base64::engine::general_purpose::STANDARD.encode(PEM);
    let ctx = Context::new(Environment::Test).with_field("webhook-public-key", &encoded);
    assert_eq!(public_key(&ctx).unwrap(), PEM);
    let junk = Context::new(Environment::Test).with_field("webhook-public-key", "junk");
    assert_eq!(public_key(&junk).unwrap_err().kind(), "invalid-webhook");
}
