//! PagBank's Orders API as the simulator answers it: Bearer token, the order with its Pix QR
//! code, the required `customer.tax_id`, integer centavos, queries by id only (no listing by
//! reference, no idempotency key, as in PagBank's public API), payment with the
//! authenticity-token notification, expiry and faults.

mod common;

use std::sync::Arc;

use axum::body::Bytes;
use parking_lot::Mutex;
use psp_sim::{Sim, SimOptions, brcode};
use serde_json::{Value, json};
use sha2::Digest;

const CPF: &str = "12345678909";
const UNAUTHORIZED: &str = "Invalid credential. Review AUTHORIZATION header";

struct PagBank {
    sim: Sim,
    api: String,
    token: String,
    http: reqwest::Client,
}

async fn start() -> PagBank {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim.provider("pagbank").unwrap();
    PagBank {
        api: info.endpoints["api"].clone(),
        token: info.credentials["token"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn order_body(reference: &str) -> Value {
    json!({
        "reference_id": reference,
        "customer": { "name": "Ana Souza", "email": "ana@example.com", "tax_id": CPF },
        "items": [{ "name": "Pedido 42", "quantity": 1, "unit_amount": 1234 }],
        "qr_codes": [{ "amount": { "value": 1234 }, "expiration_date": "2099-01-01T00:00:00-03:00" }],
    })
}

impl PagBank {
    async fn post(&self, token: &str, body: &Value) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}/orders", self.api))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap();
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        )
    }

    async fn create(&self, body: &Value) -> Value {
        let (status, order) = self.post(&self.token, body).await;
        assert_eq!(status, 201, "{order}");
        order
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        )
    }

    async fn control(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}{path}", self.sim.control_url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    async fn control_get(&self, path: &str) -> Value {
        let url = format!("{}{path}", self.sim.control_url());
        let res = self.http.get(url).send().await.unwrap();
        res.json().await.unwrap()
    }
}

/// The one `error_messages` entry of an error answer.
fn only_error(body: &Value) -> &Value {
    let list = body["error_messages"].as_array().expect("error_messages");
    assert_eq!(list.len(), 1, "{body}");
    &list[0]
}

#[tokio::test]
async fn create_answers_an_order_with_a_valid_br_code() {
    let pb = start().await;
    let reference = reference();
    let order = pb.create(&order_body(&reference)).await;

    assert!(
        order["id"].as_str().unwrap().starts_with("ORDE_"),
        "{order}"
    );
    assert_eq!(order["reference_id"], reference.as_str());
    assert_eq!(order["customer"]["tax_id"], CPF);
    assert!(order.get("charges").is_none(), "no charge before payment");
    let qr = &order["qr_codes"][0];
    assert!(qr["id"].as_str().unwrap().starts_with("QRCO_"));
    assert_eq!(qr["amount"], json!({ "value": 1234 }));
    assert_eq!(qr["expiration_date"], "2099-01-01T00:00:00-03:00");
    let rels: Vec<&str> = qr["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap())
        .collect();
    assert_eq!(rels, ["QRCODE.PNG", "QRCODE.BASE64"]);

    let code = qr["text"].as_str().unwrap();
    assert!(brcode::crc_is_valid(code), "{code}");
    let fields = brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("01".into(), "12".into())), "{code}");
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");
    assert!(fields.contains(&("53".into(), "986".into())), "{code}");
}

#[tokio::test]
async fn a_wrong_or_missing_token_gets_access_denied() {
    let pb = start().await;
    let denied =
        json!({ "error_messages": [{ "code": "UNAUTHORIZED", "description": UNAUTHORIZED }] });
    let (status, body) = pb.post("wrong-token", &order_body(&reference())).await;
    assert_eq!((status, body), (401, denied.clone()));

    let res = pb
        .http
        .post(format!("{}/orders", pb.api))
        .header("authorization", &pb.token)
        .json(&order_body(&reference()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401, "the token without `Bearer ` is refused");
    assert_eq!(res.json::<Value>().await.unwrap(), denied);
    assert_eq!(
        pb.control_get("/_sim/charges?provider=pagbank").await,
        json!([])
    );
}

#[tokio::test]
async fn the_customers_tax_id_is_required_and_checked() {
    let pb = start().await;
    let mut body = order_body(&reference());
    body["customer"].as_object_mut().unwrap().remove("tax_id");
    let (status, answer) = pb.post(&pb.token, &body).await;
    assert_eq!(status, 400);
    assert_eq!(
        *only_error(&answer),
        json!({ "code": "40001", "description": "required_parameter", "parameter_name": "customer.tax_id" })
    );

    body["customer"]["tax_id"] = json!("12345678900");
    let (status, answer) = pb.post(&pb.token, &body).await;
    assert_eq!(status, 400);
    assert_eq!(only_error(&answer)["code"], "40002");
    assert_eq!(only_error(&answer)["parameter_name"], "customer.tax_id");

    // A CNPJ works as well.
    body["customer"]["tax_id"] = json!("11222333000181");
    pb.create(&body).await;
}

#[tokio::test]
async fn amounts_are_integer_centavos_and_reference_id_is_required() {
    let pb = start().await;
    for bad in [json!(12.34), json!("1234"), json!(0), json!(-5)] {
        let mut body = order_body(&reference());
        body["qr_codes"][0]["amount"]["value"] = bad.clone();
        let (status, answer) = pb.post(&pb.token, &body).await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(
            only_error(&answer)["parameter_name"],
            "qr_codes[0].amount.value",
            "{bad}"
        );
    }
    let mut body = order_body(&reference());
    body.as_object_mut().unwrap().remove("reference_id");
    let (status, answer) = pb.post(&pb.token, &body).await;
    assert_eq!(status, 400);
    assert_eq!(only_error(&answer)["parameter_name"], "reference_id");

    let mut body = order_body(&reference());
    body["qr_codes"][0]["expiration_date"] = json!("2099-01-01 00:00");
    let (status, answer) = pb.post(&pb.token, &body).await;
    assert_eq!(status, 400);
    assert_eq!(
        only_error(&answer)["parameter_name"],
        "qr_codes[0].expiration_date"
    );
    assert_eq!(
        pb.control_get("/_sim/charges?provider=pagbank").await,
        json!([])
    );
}

#[tokio::test]
async fn orders_are_found_by_id_only() {
    let pb = start().await;
    let reference = reference();
    let order = pb.create(&order_body(&reference)).await;
    let id = order["id"].as_str().unwrap();

    let (status, found) = pb.get(&format!("/orders/{id}")).await;
    assert_eq!((status, &found), (200, &order));
    // PagBank's public API lists no orders by reference_id: an unknown route.
    let (status, listed) = pb.get(&format!("/orders?reference_id={reference}")).await;
    assert_eq!(status, 404, "{listed}");
    assert_eq!(only_error(&listed)["code"], "NOT_FOUND");

    let (status, missing) = pb
        .get("/orders/ORDE_00000000-0000-0000-0000-000000000000")
        .await;
    assert_eq!(status, 404);
    assert_eq!(only_error(&missing)["code"], "NOT_FOUND");
}

#[tokio::test]
async fn a_repeated_create_makes_another_order_whatever_its_headers() {
    let pb = start().await;
    let send = || {
        pb.http
            .post(format!("{}/orders", pb.api))
            .bearer_auth(&pb.token)
            .header("x-idempotency-key", "key-1")
            .json(&order_body("ref-1"))
            .send()
    };
    let first: Value = send().await.unwrap().json().await.unwrap();
    let second = send().await.unwrap();
    assert_eq!(second.status(), 201);
    assert_ne!(second.json::<Value>().await.unwrap()["id"], first["id"]);
    let held = pb.control_get("/_sim/charges?provider=pagbank").await;
    assert_eq!(held.as_array().unwrap().len(), 2, "{held}");
}

/// What the webhook receiver got: headers and raw body of each request.
type Seen = Arc<Mutex<Vec<(http::HeaderMap, Bytes)>>>;

/// A webhook receiver that keeps the headers and the raw body.
async fn receiver() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |headers: http::HeaderMap, body: Bytes| {
        let record = record.clone();
        async move {
            record.lock().push((headers, body));
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/wh?token=t", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn payment_adds_a_paid_charge_and_notifies_with_the_authenticity_token() {
    let pb = start().await;
    let (url, seen) = receiver().await;
    let reference = reference();
    let mut body = order_body(&reference);
    body["notification_urls"] = json!([url]);
    let order = pb.create(&body).await;

    let (status, paid) = pb
        .control(
            "/_sim/pay",
            json!({ "provider": "pagbank", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered", "{paid}");
    assert_eq!(paid["charge"]["status"], "PAID");
    assert_eq!(paid["charge"]["psp_id"], order["id"]);

    let (status, now) = pb
        .get(&format!("/orders/{}", order["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    let charge = &now["charges"][0];
    assert_eq!(charge["status"], "PAID");
    assert_eq!(charge["amount"]["value"], 1234);
    assert!(charge["paid_at"].as_str().unwrap().ends_with("-03:00"));
    let e2e = charge["payment_method"]["pix"]["end_to_end_id"]
        .as_str()
        .unwrap();
    assert!(e2e.starts_with("E08561701") && e2e.len() == 32, "{e2e}");

    assert_eq!(seen.lock().len(), 1);
    let (headers, raw) = &seen.lock()[0].clone();
    let delivered: Value = serde_json::from_slice(raw).unwrap();
    assert_eq!(delivered, now);
    let expected: String = sha2::Sha256::digest([pb.token.as_bytes(), b"-", raw].concat())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(headers["x-authenticity-token"], expected.as_str());

    let (status, _) = pb
        .control(
            "/_sim/pay",
            json!({ "provider": "pagbank", "psp_id": order["id"] }),
        )
        .await;
    assert_eq!(status, 409, "paid once only");
}

#[tokio::test]
async fn expiry_moves_the_expiration_date_into_the_past() {
    let pb = start().await;
    let reference = reference();
    let order = pb.create(&order_body(&reference)).await;
    let (status, expired) = pb
        .control(
            "/_sim/expire",
            json!({ "provider": "pagbank", "psp_id": order["id"] }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (&expired["charge"]["status"], &expired["charge"]["expired"]),
        (&json!("EXPIRED"), &json!(true))
    );
    let (_, now) = pb
        .get(&format!("/orders/{}", order["id"].as_str().unwrap()))
        .await;
    let date = now["qr_codes"][0]["expiration_date"].as_str().unwrap();
    let at = time::OffsetDateTime::parse(date, &time::format_description::well_known::Rfc3339);
    assert!(at.unwrap() < time::OffsetDateTime::now_utc(), "{date}");
    let (status, _) = pb
        .control(
            "/_sim/pay",
            json!({ "provider": "pagbank", "reference": reference }),
        )
        .await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn faults_answer_in_pagbanks_shape() {
    let pb = start().await;
    let (status, _) = pb
        .control(
            "/_sim/faults",
            json!({ "provider": "pagbank", "fail_next": { "count": 1, "status": 503 } }),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = pb.post(&pb.token, &order_body(&reference())).await;
    assert_eq!(status, 503);
    assert_eq!(only_error(&body)["code"], "SERVICE_UNAVAILABLE");

    pb.control(
        "/_sim/faults",
        json!({ "provider": "pagbank", "drop_reply_after_create": 1 }),
    )
    .await;
    let reference = reference();
    let lost = pb
        .http
        .post(format!("{}/orders", pb.api))
        .bearer_auth(&pb.token)
        .json(&order_body(&reference))
        .send()
        .await;
    assert!(lost.is_err(), "the reply is dropped");
    let held = pb.control_get("/_sim/charges?provider=pagbank").await;
    assert_eq!(
        held.as_array()
            .unwrap()
            .iter()
            .filter(|c| c["reference"] == reference.as_str())
            .count(),
        1,
        "but the order exists"
    );
}
