//! Asaas's v3 API as the simulator answers it: the `access_token` header and a required
//! `User-Agent`, customers by CPF/CNPJ before payments, `PIX` payments and their QR code,
//! search by externalReference, deletion, the `PAYMENT_RECEIVED` notification with
//! `asaas-access-token`, expiry and faults.

mod common;

use base64::Engine;
use psp_sim::{Sim, SimOptions, brcode};
use serde_json::{Value, json};

struct Asaas {
    sim: Sim,
    api: String,
    key: String,
    http: reqwest::Client,
}

async fn start() -> Asaas {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim.provider("asaas").unwrap();
    Asaas {
        api: info.endpoints["api"].clone(),
        key: info.credentials["api-key"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn tomorrow() -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::days(1))
        .date()
        .to_string()
}

/// Tomorrow, a year later: how long Asaas keeps an unpaid payment's Pix QR code payable.
fn tomorrow_next_year() -> String {
    let d = (time::OffsetDateTime::now_utc() + time::Duration::days(1)).date();
    time::Date::from_calendar_date(d.year() + 1, d.month(), d.day())
        .or_else(|_| time::Date::from_calendar_date(d.year() + 1, d.month(), d.day() - 1))
        .unwrap()
        .to_string()
}

const CPF: &str = "12345678909";

impl Asaas {
    fn authed(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("access_token", &self.key)
            .header("user-agent", "pixgw-tests")
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let res = request.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.authed(self.http.post(format!("{}{path}", self.api)).json(&body)))
            .await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.authed(self.http.get(format!("{}{path}", self.api))))
            .await
    }

    async fn customer(&self) -> String {
        let (status, c) = self
            .post(
                "/v3/customers",
                json!({"name": "Fulano de Tal", "cpfCnpj": CPF}),
            )
            .await;
        assert_eq!(status, 200, "{c}");
        c["id"].as_str().unwrap().to_owned()
    }

    fn payment_body(&self, customer: &str, reference: &str) -> Value {
        json!({
            "customer": customer,
            "billingType": "PIX",
            "value": 19.9,
            "dueDate": tomorrow(),
            "description": "Pedido 42",
            "externalReference": reference,
        })
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

fn error_code(body: &Value) -> &str {
    body["errors"][0]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_key_in_the_older_format_without_an_environment_prefix_works() {
    let asaas = start().await;
    let info = asaas.sim.provider("asaas").unwrap();
    let legacy = &info.other_credentials["legacy"]["api-key"];
    assert!(legacy.starts_with("$aact_") && !legacy.starts_with("$aact_hmlg_"));
    let (status, body) = asaas
        .send(
            asaas
                .http
                .get(format!("{}/v3/customers", asaas.api))
                .header("user-agent", "x")
                .header("access_token", legacy),
        )
        .await;
    assert_eq!((status, &body["object"]), (200, &json!("list")));
}

#[tokio::test]
async fn the_key_and_a_user_agent_are_required() {
    let asaas = start().await;
    assert!(asaas.key.starts_with("$aact_hmlg_"));
    let url = format!("{}/v3/customers", asaas.api);
    let (status, body) = asaas
        .send(asaas.http.get(&url).header("user-agent", "x"))
        .await;
    assert_eq!((status, error_code(&body)), (401, "access_token_not_found"));
    let (status, body) = asaas
        .send(
            asaas
                .http
                .get(&url)
                .header("user-agent", "x")
                .header("access_token", "$aact_hmlg_wrong"),
        )
        .await;
    assert_eq!((status, error_code(&body)), (401, "invalid_access_token"));
    assert_eq!(
        body["errors"][0]["description"],
        "A chave de API fornecida é inválida"
    );
    let (status, body) = asaas
        .send(asaas.http.get(&url).header("access_token", &asaas.key))
        .await;
    assert_eq!((status, error_code(&body)), (400, "invalid_user_agent"));
    let (status, body) = asaas.get("/v3/customers").await;
    assert_eq!((status, &body["object"]), (200, &json!("list")));
}

#[tokio::test]
async fn customers_by_cpf_and_duplicates_are_the_clients_business() {
    let asaas = start().await;
    let (status, body) = asaas
        .post(
            "/v3/customers",
            json!({"name": "X", "cpfCnpj": "12345678900"}),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "invalid_cpfCnpj"));
    let (status, body) = asaas.post("/v3/customers", json!({"cpfCnpj": CPF})).await;
    assert_eq!((status, error_code(&body)), (400, "invalid_name"));

    let id = asaas.customer().await;
    assert!(id.starts_with("cus_"), "{id}");
    let (_, found) = asaas.get(&format!("/v3/customers?cpfCnpj={CPF}")).await;
    assert_eq!(found["totalCount"], 1);
    assert_eq!(found["data"][0]["id"], id.as_str());
    assert_eq!(found["data"][0]["personType"], "FISICA");
    let (_, none) = asaas.get("/v3/customers?cpfCnpj=11144477735").await;
    assert_eq!(none["totalCount"], 0);

    // A second one with the same CPF is accepted, and the control API counts both.
    asaas.customer().await;
    let customers = asaas.ctl_get("/_sim/customers?provider=asaas").await;
    assert_eq!(customers.as_array().unwrap().len(), 2);
}

/// A change to a valid body that makes it invalid.
type Change = Box<dyn Fn(&mut Value)>;

#[tokio::test]
async fn payments_need_a_customer_pix_a_value_and_a_due_date() {
    let asaas = start().await;
    let customer = asaas.customer().await;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|b| b["customer"] = json!("cus_000000000000")),
            "invalid_customer",
        ),
        (
            Box::new(|b| drop(b.as_object_mut().unwrap().remove("customer"))),
            "invalid_customer",
        ),
        (
            Box::new(|b| b["billingType"] = json!("BOLETO")),
            "invalid_billingType",
        ),
        (Box::new(|b| b["value"] = json!(0)), "invalid_value"),
        (Box::new(|b| b["value"] = json!(10.001)), "invalid_value"),
        (Box::new(|b| b["value"] = json!("19.90")), "invalid_value"),
        (
            Box::new(|b| b["dueDate"] = json!("2020-01-01")),
            "invalid_dueDate",
        ),
        (
            Box::new(|b| b["dueDate"] = json!("amanhã")),
            "invalid_dueDate",
        ),
        (Box::new(|b| b["valor"] = json!(1)), "invalid_object"),
    ];
    for (change, code) in cases {
        let mut body = asaas.payment_body(&customer, &reference());
        change(&mut body);
        let (status, answer) = asaas.post("/v3/payments", body).await;
        assert_eq!((status, error_code(&answer)), (400, code), "{answer}");
    }
    assert!(
        asaas
            .ctl_get("/_sim/charges?provider=asaas")
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_pix_payment_its_qr_code_search_and_deletion() {
    let asaas = start().await;
    let customer = asaas.customer().await;
    let r = reference();
    let (status, payment) = asaas
        .post("/v3/payments", asaas.payment_body(&customer, &r))
        .await;
    assert_eq!(status, 200, "{payment}");
    let id = payment["id"].as_str().unwrap();
    assert!(id.starts_with("pay_"));
    assert_eq!(
        (
            &payment["status"],
            &payment["value"],
            &payment["billingType"]
        ),
        (&json!("PENDING"), &json!(19.9), &json!("PIX"))
    );
    assert_eq!(payment["externalReference"], r.as_str());

    let (status, qr) = asaas.get(&format!("/v3/payments/{id}/pixQrCode")).await;
    assert_eq!(status, 200);
    let payload = qr["payload"].as_str().unwrap();
    assert!(brcode::crc_is_valid(payload), "{payload}");
    assert!(
        brcode::parse_fields(payload)
            .unwrap()
            .contains(&("54".into(), "19.90".into()))
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(qr["encodedImage"].as_str().unwrap())
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(
        qr["expirationDate"],
        format!("{} 23:59:59", tomorrow_next_year()).as_str()
    );

    let (_, found) = asaas
        .get(&format!("/v3/payments?externalReference={r}"))
        .await;
    assert_eq!(
        (&found["totalCount"], &found["data"][0]["id"]),
        (&json!(1), &payment["id"])
    );

    let delete = || asaas.authed(asaas.http.delete(format!("{}/v3/payments/{id}", asaas.api)));
    let (status, deleted) = asaas.send(delete()).await;
    assert_eq!((status, deleted), (200, json!({"deleted": true, "id": id})));
    let (status, _) = asaas.send(delete()).await;
    assert_eq!(status, 404);
    let (_, after) = asaas.get(&format!("/v3/payments/{id}")).await;
    assert_eq!(after["deleted"], true);
    let (_, found) = asaas
        .get(&format!("/v3/payments?externalReference={r}"))
        .await;
    assert_eq!(found["totalCount"], 0);
}

#[tokio::test]
async fn paying_notifies_with_the_configured_token() {
    let asaas = start().await;
    let receiver = common::Receiver::start(200).await;
    let url = format!("http://{}/api/wh/xyz", receiver.addr);
    let (status, _) = asaas
        .ctl(
            "/_sim/config",
            json!({"provider": "asaas", "webhook_url": url,
                   "webhook_headers": {"asaas-access-token": "whtok_9"}}),
        )
        .await;
    assert_eq!(status, 200);
    let customer = asaas.customer().await;
    let r = reference();
    let (_, payment) = asaas
        .post("/v3/payments", asaas.payment_body(&customer, &r))
        .await;
    let (status, paid) = asaas
        .ctl("/_sim/pay", json!({"provider": "asaas", "reference": r}))
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered");
    assert_eq!(
        (
            &paid["charge"]["status"],
            &paid["charge"]["psp_id"],
            &paid["charge"]["amount"]
        ),
        (&json!("RECEIVED"), &payment["id"], &json!(1990))
    );

    let received = receiver.received();
    assert_eq!(received.len(), 1);
    let body = &received[0].body;
    assert_eq!(body["event"], "PAYMENT_RECEIVED");
    assert!(body["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(body["payment"]["id"], payment["id"]);
    assert_eq!(body["payment"]["status"], "RECEIVED");
    assert_eq!(body["payment"]["externalReference"], r.as_str());
    let webhooks = asaas.ctl_get("/_sim/webhooks?provider=asaas").await;
    assert_eq!(webhooks[0]["headers"]["asaas-access-token"], "whtok_9");

    let (_, fetched) = asaas
        .get(&format!("/v3/payments/{}", payment["id"].as_str().unwrap()))
        .await;
    assert_eq!(fetched["status"], "RECEIVED");
    assert!(fetched["paymentDate"].is_string());
    let (status, _) = asaas
        .ctl("/_sim/pay", json!({"provider": "asaas", "reference": r}))
        .await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn expiry_overdue_and_faults() {
    let asaas = start().await;
    let customer = asaas.customer().await;
    let r = reference();
    asaas
        .post("/v3/payments", asaas.payment_body(&customer, &r))
        .await;
    let (_, expired) = asaas
        .ctl("/_sim/expire", json!({"provider": "asaas", "reference": r}))
        .await;
    assert_eq!(
        (&expired["charge"]["status"], &expired["charge"]["expired"]),
        (&json!("OVERDUE"), &json!(true))
    );
    // Overdue is still payable by Pix, as at Asaas; a deleted payment is not.
    let (status, paid) = asaas
        .ctl("/_sim/pay", json!({"provider": "asaas", "reference": r}))
        .await;
    assert_eq!(
        (status, &paid["charge"]["status"]),
        (200, &json!("RECEIVED"))
    );
    let r = reference();
    let (_, payment) = asaas
        .post("/v3/payments", asaas.payment_body(&customer, &r))
        .await;
    asaas
        .ctl("/_sim/expire", json!({"provider": "asaas", "reference": r}))
        .await;
    let id = payment["id"].as_str().unwrap();
    let (status, _) = asaas
        .send(asaas.authed(asaas.http.delete(format!("{}/v3/payments/{id}", asaas.api))))
        .await;
    assert_eq!(status, 200);
    let (status, _) = asaas
        .ctl("/_sim/pay", json!({"provider": "asaas", "reference": r}))
        .await;
    assert_eq!(status, 409);

    asaas
        .ctl(
            "/_sim/faults",
            json!({"provider": "asaas", "fail_next": {"count": 1, "status": 503, "path_contains": "/v3/payments"}}),
        )
        .await;
    let (status, body) = asaas
        .post("/v3/payments", asaas.payment_body(&customer, &reference()))
        .await;
    assert_eq!((status, error_code(&body)), (503, "internal_error"));

    asaas
        .ctl(
            "/_sim/faults",
            json!({"provider": "asaas", "drop_reply_after_create": 1}),
        )
        .await;
    let r2 = reference();
    let lost = asaas
        .authed(
            asaas
                .http
                .post(format!("{}/v3/payments", asaas.api))
                .json(&asaas.payment_body(&customer, &r2)),
        )
        .send()
        .await;
    assert!(lost.is_err());
    let (_, found) = asaas
        .get(&format!("/v3/payments?externalReference={r2}"))
        .await;
    assert_eq!(found["totalCount"], 1);
}
