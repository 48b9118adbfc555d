use super::*;
use pixgw_plugin_sdk::host::fake::FakeHost;
use pixgw_plugin_sdk::http::HttpError;

const REF: &str = "abcdefghijklmnopqrstuvwxyz123456";
const ID: &str = "0A1B2C3D4E5F60718293A4B5C6D7E8F9";
const CODE: &str = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB";
/// 2024-05-02T02:30:00Z, 23:30 on the 1st of May in São Paulo: an hour later it is the 2nd.
const NOW: i64 = 1_714_617_000;

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("api-token", "TOKEN123")
        .with_endpoint("api", "https://api.iugu.com")
}

fn request(email: Option<&str>) -> ChargeRequest {
    ChargeRequest {
        reference: REF.into(),
        amount: 1990,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: email.map(Into::into),
            name: Some("Fulano de Tal".into()),
            document: Some("12345678909".into()),
        },
        expires_in: 3600,
    }
}

fn invoice(status: &str, extra: Value) -> String {
    let mut v = json!({
        "id": ID,
        "status": status,
        "email": "a@b.c",
        "due_date": "2024-05-02",
        "total_cents": 1990,
        "custom_variables": [{"name": "reference", "value": REF}],
        "pix": {"qrcode": "https://faturas.iugu.com/qr.png", "qrcode_text": CODE, "status": "qr_code_created"},
    });
    if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
        v.extend(extra);
    }
    v.to_string()
}

fn body(host: &FakeHost, index: usize) -> Value {
    serde_json::from_slice(&host.sent()[index].body).unwrap()
}

#[test]
fn create_posts_a_pix_only_invoice_and_reads_its_code() {
    let host = FakeHost::new();
    host.reply(200, &invoice("pending", json!({})));
    let charge = create_at(&host, &ctx(), &request(Some("payer@example.com")), NOW).unwrap();

    let sent = host.sent();
    assert_eq!(
        (sent[0].method, sent[0].url.as_str()),
        (Method::Post, "https://api.iugu.com/v1/invoices")
    );
    // base64("TOKEN123:"): the token as user, a blank password.
    assert_eq!(
        sent[0].header_value("authorization"),
        Some("Basic VE9LRU4xMjM6")
    );
    assert_eq!(
        body(&host, 0),
        json!({
            "email": "payer@example.com",
            "due_date": "2024-05-02",
            "items": [{"description": "Pedido 42", "quantity": 1, "price_cents": 1990}],
            "payable_with": "pix",
            "payer": {"cpf_cnpj": "12345678909", "name": "Fulano de Tal"},
            "custom_variables": [{"name": "reference", "value": REF}],
        })
    );
    assert_eq!(
        (
            charge.reference.as_str(),
            charge.psp_id.as_str(),
            charge.status,
            charge.amount
        ),
        (REF, ID, ChargeStatus::Pending, 1990)
    );
    assert_eq!(charge.copy_paste.as_deref(), Some(CODE));
    assert!(charge.qr_png_base64.is_none() && charge.payment.is_none());
    assert_eq!(charge.expires_at.as_deref(), Some("2024-05-03T02:59:59Z"));
}

#[test]
fn without_a_payer_email_the_default_address_is_used() {
    let host = FakeHost::new();
    host.reply(200, &invoice("pending", json!({})));
    let ctx = ctx().with_field("default-email", "financeiro@loja.example");
    create_at(&host, &ctx, &request(None), NOW).unwrap();
    assert_eq!(body(&host, 0)["email"], "financeiro@loja.example");
}

#[test]
fn without_any_email_nothing_is_sent() {
    let host = FakeHost::new();
    let e = create_at(&host, &ctx(), &request(None), NOW).unwrap_err();
    assert_eq!((e.kind(), e.reason()), ("rejected", Reason::PayerData));
    assert!(
        e.psp_error().unwrap().message.contains("default-email"),
        "{e:?}"
    );
    assert!(host.sent().is_empty());
}

#[test]
fn an_invoice_without_pix_is_canceled_and_refused() {
    let host = FakeHost::new();
    let mut no_pix: Value = serde_json::from_str(&invoice("pending", json!({}))).unwrap();
    no_pix.as_object_mut().unwrap().remove("pix");
    host.reply(200, &no_pix.to_string())
        .reply(200, &invoice("canceled", json!({})));
    let e = create_at(&host, &ctx(), &request(Some("payer@example.com")), NOW).unwrap_err();
    assert_eq!((e.kind(), e.reason()), ("rejected", Reason::PixNotOffered));
    let message = &e.psp_error().unwrap().message;
    assert!(
        message.contains("Pix was not among the payable methods")
            && message.contains("not enabled")
            && message.ends_with("the invoice was canceled"),
        "{message}"
    );
    assert_eq!(
        (host.sent()[1].method, host.sent()[1].url.as_str()),
        (
            Method::Put,
            "https://api.iugu.com/v1/invoices/0A1B2C3D4E5F60718293A4B5C6D7E8F9/cancel"
        )
    );
}

#[test]
fn iugus_errors_keep_its_words() {
    let host = FakeHost::new();
    host.reply(401, r#"{"errors":"Unauthorized"}"#);
    let e = create_at(&host, &ctx(), &request(Some("a@b.c")), NOW).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    assert_eq!(e.psp_error().unwrap().message, "Unauthorized");
    assert_eq!(e.psp_error().unwrap().http_status, Some(401));

    host.reply(
        422,
        r#"{"errors":{"payable_with":["Pix não está habilitado para esta conta"]}}"#,
    );
    let e = create_at(&host, &ctx(), &request(Some("a@b.c")), NOW).unwrap_err();
    assert_eq!(e.kind(), "rejected");
    assert_eq!(
        e.psp_error().unwrap().message,
        "payable_with: Pix não está habilitado para esta conta"
    );
    assert_eq!(e.reason(), Reason::PixNotEnabled, "the field iugu names");

    host.reply(
        422,
        r#"{"errors":{"items.price_cents":["deve ser maior que 0"]}}"#,
    );
    let e = create_at(&host, &ctx(), &request(Some("a@b.c")), NOW).unwrap_err();
    assert_eq!((e.kind(), e.reason()), ("rejected", Reason::Amount));
}

#[test]
fn a_lost_answer_is_ambiguous_and_the_retry_finds_the_invoice() {
    let host = FakeHost::new();
    host.fail(HttpError::NoAnswer("reset".into()))
        .reply(200, r#"{"totalItems":0,"items":[]}"#);
    let e = create_at(&host, &ctx(), &request(Some("a@b.c")), NOW).unwrap_err();
    assert_eq!(e.kind(), "ambiguous");

    // The retry searches first, finds the invoice, and creates nothing.
    let other = json!({"id": "FFFF", "status": "pending", "total_cents": 5,
        "custom_variables": [{"name": "reference", "value": format!("{REF}x")}]});
    let list = format!(
        r#"{{"totalItems":2,"items":[{other},{}]}}"#,
        invoice("pending", json!({}))
    );
    host.reply(200, &list);
    let charge = create_at(&host, &ctx(), &request(Some("a@b.c")), NOW).unwrap();
    assert_eq!(charge.psp_id, ID);
    let sent = host.sent();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        sent[2].url,
        format!("https://api.iugu.com/v1/invoices?query={REF}&limit=100")
    );
    assert_eq!(sent[2].method, Method::Get);
}

#[test]
fn query_by_id_or_by_reference_and_a_paid_invoice() {
    let host = FakeHost::new();
    let paid = invoice(
        "paid",
        json!({"paid_at": "2024-05-01T10:15:00-03:00", "paid_cents": 1990, "total_paid_cents": 1990}),
    );
    host.reply(200, &paid);
    let charge = Iugu::query(&host, &ctx(), REF, Some(ID)).unwrap();
    assert_eq!(
        host.sent()[0].url,
        format!("https://api.iugu.com/v1/invoices/{ID}")
    );
    assert_eq!(charge.status, ChargeStatus::Paid);
    let payment = charge.payment.unwrap();
    assert_eq!(
        (
            payment.end_to_end_id,
            payment.amount,
            payment.paid_at.as_str()
        ),
        (None, 1990, "2024-05-01T13:15:00Z")
    );

    host.reply(200, r#"{"totalItems":0,"items":[]}"#);
    assert_eq!(
        Iugu::query(&host, &ctx(), REF, None).unwrap_err().kind(),
        "not-found"
    );
}

#[test]
fn statuses() {
    for (iugu, ours) in [
        ("pending", ChargeStatus::Pending),
        ("draft", ChargeStatus::Pending),
        ("paid", ChargeStatus::Paid),
        ("canceled", ChargeStatus::Canceled),
        ("refunded", ChargeStatus::Canceled),
        ("expired", ChargeStatus::Expired),
        ("partially_paid", ChargeStatus::Processing),
        ("in_analysis", ChargeStatus::Processing),
        ("something_new", ChargeStatus::Pending),
    ] {
        assert_eq!(status(iugu), ours, "{iugu}");
    }
}

fn webhook(body: &str) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: String::new(),
        query: String::new(),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn a_trigger_is_confirmed_by_asking_for_the_invoice() {
    let host = FakeHost::new();
    host.reply(
        200,
        &invoice(
            "paid",
            json!({"paid_at": "2024-05-01T10:15:00-03:00", "paid_cents": 1990}),
        ),
    );
    let form = format!(
        "event=invoice.status_changed&data%5Bid%5D={ID}&data%5Bstatus%5D=paid&data%5Baccount_id%5D=ACC"
    );
    let events = Iugu::parse_webhook(&host, &ctx(), &webhook(&form)).unwrap();
    assert_eq!(
        host.sent()[0].url,
        format!("https://api.iugu.com/v1/invoices/{ID}")
    );
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            events[0].reference.as_deref(),
            events[0].psp_id.as_deref(),
            events[0].status
        ),
        (Some(REF), Some(ID), ChargeStatus::Paid)
    );
    assert_eq!(events[0].payment.as_ref().map(|p| p.amount), Some(1990));

    // Brackets unescaped too; the invoice says pending whatever the form claims.
    host.reply(200, &invoice("pending", json!({})));
    let form = format!("event=invoice.status_changed&data[id]={ID}&data[status]=paid");
    let events = Iugu::parse_webhook(&host, &ctx(), &webhook(&form)).unwrap();
    assert_eq!(events[0].status, ChargeStatus::Pending);

    // Other triggers say nothing about a charge.
    let events =
        Iugu::parse_webhook(&host, &ctx(), &webhook("event=invoice.created&data[id]=X")).unwrap();
    assert!(events.is_empty());
    assert_eq!(host.sent().len(), 2);
    let e =
        Iugu::parse_webhook(&host, &ctx(), &webhook("event=invoice.status_changed")).unwrap_err();
    assert_eq!(e.kind(), "invalid-webhook");
}

#[test]
fn manifest() {
    let m = Iugu::manifest().into_wit();
    assert_eq!(m.wit_version, "2.0.0");
    assert_eq!(m.endpoints[0].test_url, m.endpoints[0].live_url);
    assert!(
        m.credential_fields
            .iter()
            .any(|f| f.name == "default-email" && !f.required)
    );
}

/// The test environment never reaches iugu's own host: nothing is sent, on save or on create,
/// and the refusal says how to try iugu instead. Live, and a test environment pointed at a
/// simulator, go ahead.
#[test]
fn the_test_environment_does_not_reach_iugus_own_host() {
    let host = FakeHost::new();
    let refused = [
        Iugu::check_credentials(&host, &ctx()).unwrap_err(),
        Iugu::create(&host, &ctx(), &request(Some("payer@example.com"))).unwrap_err(),
    ];
    for e in refused {
        let Error::BadCredentials(psp) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(psp.code.as_deref(), Some("test_environment_unverifiable"));
        assert_eq!(e.reason(), Reason::Credentials);
        assert!(
            psp.message
                .contains("connect your live token in the live environment"),
            "{}",
            psp.message
        );
    }
    assert!(host.sent().is_empty(), "nothing sent to iugu");

    let live = Context::new(Environment::Live)
        .with_field("api-token", "TOKEN123")
        .with_endpoint("api", "https://api.iugu.com/");
    host.reply(200, r#"{"items":[],"totalItems":0}"#);
    Iugu::check_credentials(&host, &live).unwrap();
    let simulator = Context::new(Environment::Test)
        .with_field("api-token", "TOKEN123")
        .with_endpoint("api", "https://127.0.0.1:9443/iugu");
    host.reply(200, r#"{"items":[],"totalItems":0}"#);
    Iugu::check_credentials(&host, &simulator).unwrap();
    let sent = host.sent();
    assert_eq!(
        (sent[0].url.as_str(), sent[1].url.as_str()),
        (
            "https://api.iugu.com/v1/invoices?limit=1",
            "https://127.0.0.1:9443/iugu/v1/invoices?limit=1"
        )
    );
}
