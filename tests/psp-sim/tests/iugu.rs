//! iugu's invoices API as the simulator answers it: Basic auth with a blank password, the
//! required e-mail, Pix-only invoices with a BR Code, search, cancel, the account's Pix
//! switches, the form-encoded trigger with the merchant's header, expiry and faults.

mod common;

use std::sync::Arc;

use axum::body::Bytes;
use parking_lot::Mutex;
use psp_sim::{Sim, SimOptions, brcode};
use serde_json::{Value, json};

struct Iugu {
    sim: Sim,
    api: String,
    token: String,
    http: reqwest::Client,
}

async fn start() -> Iugu {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim.provider("iugu").unwrap();
    Iugu {
        api: info.endpoints["api"].clone(),
        token: info.credentials["api-token"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn invoice_body(reference: &str) -> Value {
    json!({
        "email": "payer@example.com",
        "due_date": tomorrow(),
        "items": [{"description": "Pedido 42", "quantity": 1, "price_cents": 1990}],
        "payable_with": "pix",
        "payer": {"cpf_cnpj": "12345678909", "name": "Fulano de Tal"},
        "custom_variables": [{"name": "reference", "value": reference}],
    })
}

fn tomorrow() -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    t.date().to_string()
}

impl Iugu {
    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let res = request.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, body: &Value) -> (u16, Value) {
        self.send(
            self.http
                .post(format!("{}/v1/invoices", self.api))
                .basic_auth(&self.token, Some(""))
                .json(body),
        )
        .await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(
            self.http
                .get(format!("{}{path}", self.api))
                .basic_auth(&self.token, Some("")),
        )
        .await
    }

    async fn ctl(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}{path}", self.sim.control_url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap())
    }

    async fn ctl_get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.sim.control_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn basic_auth_wants_the_token_and_a_blank_password() {
    let iugu = start().await;
    let url = format!("{}/v1/invoices", iugu.api);
    let body = invoice_body(&reference());
    let unauthorized = json!({"errors": "Unauthorized"});
    for request in [
        iugu.http.post(&url).json(&body),
        iugu.http
            .post(&url)
            .basic_auth("WRONG", Some(""))
            .json(&body),
        iugu.http
            .post(&url)
            .basic_auth(&iugu.token, Some("x"))
            .json(&body),
        iugu.http.post(&url).bearer_auth(&iugu.token).json(&body),
    ] {
        assert_eq!(iugu.send(request).await, (401, unauthorized.clone()));
    }
    // reqwest's `basic_auth(token, None)` writes `token:` too: a blank password.
    let (status, _) = iugu
        .send(
            iugu.http
                .post(&url)
                .basic_auth(&iugu.token, None::<&str>)
                .json(&body),
        )
        .await;
    assert_eq!(status, 200);
    assert!(iugu.token.len() == 32 && iugu.token.chars().all(|c| c.is_ascii_hexdigit()));
}

#[tokio::test]
async fn an_invoice_payable_by_pix_carries_a_br_code() {
    let iugu = start().await;
    let r = reference();
    let (status, invoice) = iugu.create(&invoice_body(&r)).await;
    assert_eq!(status, 200, "{invoice}");
    let id = invoice["id"].as_str().unwrap();
    assert!(
        id.len() == 32
            && id
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(invoice["status"], "pending");
    assert_eq!(invoice["total_cents"], 1990);
    assert_eq!(invoice["email"], "payer@example.com");
    assert_eq!(
        invoice["custom_variables"],
        json!([{"name": "reference", "value": r}])
    );
    let code = invoice["pix"]["qrcode_text"].as_str().unwrap();
    assert!(brcode::crc_is_valid(code), "{code}");
    let fields = brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "19.90".into())), "{code}");
    assert!(fields.contains(&("01".into(), "12".into())), "{code}");
    assert!(
        invoice["pix"]["qrcode"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );

    let (status, fetched) = iugu.get(&format!("/v1/invoices/{id}")).await;
    assert_eq!((status, &fetched["id"]), (200, &invoice["id"]));

    let (status, found) = iugu.get(&format!("/v1/invoices?query={r}")).await;
    assert_eq!(status, 200);
    assert_eq!(found["totalItems"], 1);
    assert_eq!(found["items"][0]["id"], invoice["id"]);

    let (status, body) = iugu.get("/v1/invoices/0000").await;
    assert_eq!((status, body), (404, json!({"errors": "Not Found"})));
}

/// A change to a valid body that makes it invalid.
type Change = Box<dyn Fn(&mut Value)>;

#[tokio::test]
async fn validation_is_strict_and_names_the_field() {
    let iugu = start().await;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|b| drop(b.as_object_mut().unwrap().remove("email"))),
            "email",
        ),
        (Box::new(|b| b["email"] = json!("not-an-email")), "email"),
        (
            Box::new(|b| b["payable_with"] = json!("bank_slip")),
            "payable_with",
        ),
        (
            Box::new(|b| drop(b.as_object_mut().unwrap().remove("payable_with"))),
            "payable_with",
        ),
        (
            Box::new(|b| b["due_date"] = json!("2020-01-01")),
            "due_date",
        ),
        (
            Box::new(|b| b["due_date"] = json!("01/02/2030")),
            "due_date",
        ),
        (Box::new(|b| b["items"] = json!([])), "items"),
        (
            Box::new(|b| b["items"][0]["price_cents"] = json!("19.90")),
            "items.price_cents",
        ),
        (
            Box::new(|b| b["payer"]["cpf_cnpj"] = json!("12345678900")),
            "payer.cpf_cnpj",
        ),
        (Box::new(|b| b["amount"] = json!(1990)), "amount"),
    ];
    for (change, field) in cases {
        let mut body = invoice_body(&reference());
        change(&mut body);
        let (status, answer) = iugu.create(&body).await;
        assert_eq!(status, 422, "{field}: {answer}");
        assert!(answer["errors"][field].is_array(), "{field}: {answer}");
    }
    // payable_with as a list holding pix is fine.
    let mut body = invoice_body(&reference());
    body["payable_with"] = json!(["pix", "credit_card"]);
    assert_eq!(iugu.create(&body).await.0, 200);
    assert_eq!(
        iugu.ctl_get("/_sim/charges?provider=iugu")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_accounts_pix_switches() {
    let iugu = start().await;
    let (status, _) = iugu
        .ctl(
            "/_sim/config",
            json!({"provider": "iugu", "flags": {"pix_disabled": true}}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, answer) = iugu.create(&invoice_body(&reference())).await;
    assert_eq!(
        (status, answer),
        (
            422,
            json!({"errors": {"payable_with": ["Pix não está habilitado para esta conta"]}})
        )
    );

    iugu.ctl(
        "/_sim/config",
        json!({"provider": "iugu", "flags": {"pix_disabled": false, "pix_missing": true}}),
    )
    .await;
    let (status, invoice) = iugu.create(&invoice_body(&reference())).await;
    assert_eq!(status, 200);
    assert!(invoice.get("pix").is_none(), "{invoice}");
}

#[tokio::test]
async fn cancel_only_a_pending_invoice() {
    let iugu = start().await;
    let (_, invoice) = iugu.create(&invoice_body(&reference())).await;
    let url = format!(
        "{}/v1/invoices/{}/cancel",
        iugu.api,
        invoice["id"].as_str().unwrap()
    );
    let cancel = || iugu.http.put(&url).basic_auth(&iugu.token, Some(""));
    let (status, canceled) = iugu.send(cancel()).await;
    assert_eq!((status, &canceled["status"]), (200, &json!("canceled")));
    let (status, again) = iugu.send(cancel()).await;
    assert_eq!(status, 400, "{again}");
    assert!(again["errors"].is_string());
}

/// A receiver keeping raw bodies (the trigger is a form, not JSON) and headers.
async fn raw_receiver() -> (String, Arc<Mutex<Vec<(axum::http::HeaderMap, Bytes)>>>) {
    let seen: Arc<Mutex<Vec<(axum::http::HeaderMap, Bytes)>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: Bytes| {
        let record = record.clone();
        async move {
            record.lock().push((headers, body));
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/wh/abc", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn paying_sends_the_form_encoded_trigger_to_the_url_without_custom_headers() {
    let iugu = start().await;
    let (url, seen) = raw_receiver().await;
    // A header asked for anyway is not sent: iugu's triggers have no custom headers.
    let (status, _) = iugu
        .ctl(
            "/_sim/config",
            json!({"provider": "iugu", "webhook_url": format!("{url}?token=whtok_123"),
                   "webhook_headers": {"x-pixgw-token": "whtok_123"}}),
        )
        .await;
    assert_eq!(status, 200);
    let r = reference();
    let (_, invoice) = iugu.create(&invoice_body(&r)).await;
    let id = invoice["id"].as_str().unwrap();

    let (status, paid) = iugu
        .ctl("/_sim/pay", json!({"provider": "iugu", "reference": r}))
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered", "{paid}");
    assert_eq!(paid["charge"]["status"], "paid");
    assert_eq!(paid["charge"]["reference"], r.as_str());
    assert_eq!(paid["charge"]["psp_id"], id);

    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 1);
    let (headers, body) = &seen[0];
    assert_eq!(headers["content-type"], "application/x-www-form-urlencoded");
    assert!(headers.get("x-pixgw-token").is_none(), "{headers:?}");
    let webhooks = iugu.ctl_get("/_sim/webhooks?provider=iugu").await;
    assert!(
        webhooks[0]["url"]
            .as_str()
            .unwrap()
            .ends_with("?token=whtok_123"),
        "{webhooks}"
    );
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap();
    let account = iugu.ctl_get("/_sim/charges?provider=iugu").await[0]["psp"]["account_id"].clone();
    assert_eq!(
        form,
        vec![
            ("event".to_string(), "invoice.status_changed".to_string()),
            ("data[id]".into(), id.into()),
            ("data[status]".into(), "paid".into()),
            ("data[account_id]".into(), account.as_str().unwrap().into()),
        ]
    );

    let (_, fetched) = iugu.get(&format!("/v1/invoices/{id}")).await;
    assert_eq!(fetched["status"], "paid");
    assert_eq!(fetched["paid_cents"], 1990);
    assert_eq!(fetched["total_paid_cents"], 1990);
    assert!(fetched["paid_at"].as_str().unwrap().ends_with("-03:00"));

    // Paid once only.
    let (status, _) = iugu
        .ctl("/_sim/pay", json!({"provider": "iugu", "psp_id": id}))
        .await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn expiry_and_charges_listing() {
    let iugu = start().await;
    let r = reference();
    let (_, invoice) = iugu.create(&invoice_body(&r)).await;
    let (status, expired) = iugu
        .ctl("/_sim/expire", json!({"provider": "iugu", "reference": r}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(expired["charge"]["status"], "expired");
    let charges = iugu.ctl_get("/_sim/charges?provider=iugu").await;
    let c = &charges[0];
    assert_eq!(
        (
            &c["reference"],
            &c["psp_id"],
            &c["amount"],
            &c["status"],
            &c["expired"]
        ),
        (
            &json!(r),
            &invoice["id"],
            &json!(1990),
            &json!("expired"),
            &json!(true)
        )
    );
    let (status, _) = iugu
        .ctl("/_sim/pay", json!({"provider": "iugu", "reference": r}))
        .await;
    assert_eq!(status, 409);
    // No trigger URL configured: nothing to deliver.
    let r2 = reference();
    iugu.create(&invoice_body(&r2)).await;
    let (_, paid) = iugu
        .ctl("/_sim/pay", json!({"provider": "iugu", "reference": r2}))
        .await;
    assert_eq!(paid["webhook"]["outcome"], "not_registered");
}

#[tokio::test]
async fn faults_answer_in_iugus_shape() {
    let iugu = start().await;
    iugu.ctl(
        "/_sim/faults",
        json!({"provider": "iugu", "fail_next": {"count": 1, "status": 503}}),
    )
    .await;
    let (status, body) = iugu.create(&invoice_body(&reference())).await;
    assert_eq!(
        (status, body),
        (503, json!({"errors": "Service Unavailable"}))
    );

    iugu.ctl(
        "/_sim/faults",
        json!({"provider": "iugu", "drop_reply_after_create": 1}),
    )
    .await;
    let r = reference();
    let lost = iugu
        .http
        .post(format!("{}/v1/invoices", iugu.api))
        .basic_auth(&iugu.token, Some(""))
        .json(&invoice_body(&r))
        .send()
        .await;
    assert!(lost.is_err(), "the reply is dropped");
    // The invoice exists and the search finds it.
    let (_, found) = iugu.get(&format!("/v1/invoices?query={r}")).await;
    assert_eq!(found["totalItems"], 1);
}
