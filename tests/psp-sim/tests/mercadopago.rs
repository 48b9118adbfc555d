//! Mercado Pago's wire protocol as the simulator answers it: bearer token, the mandatory
//! idempotency header, payment validation, search, cancel, expiry, and signed notifications
//! to the payment's `notification_url`.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use hmac::Mac as _;
use parking_lot::Mutex;
use psp_sim::{Sim, SimOptions, brcode};
use serde_json::{Value, json};

struct MercadoPago {
    sim: Sim,
    api: String,
    token: String,
    webhook_secret: String,
    http: reqwest::Client,
}

async fn start() -> MercadoPago {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim
        .provider("mercadopago")
        .expect("mercadopago is simulated");
    MercadoPago {
        api: info.endpoints["api"].clone(),
        token: info.credentials["access-token"].clone(),
        webhook_secret: info.credentials["webhook-secret"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The adapter's create body, ten minutes from now.
fn body(reference: &str, notification_url: Option<&str>) -> Value {
    let expires = time::OffsetDateTime::now_utc() + time::Duration::minutes(10);
    let expires = expires
        .to_offset(time::UtcOffset::from_hms(-3, 0, 0).unwrap())
        .format(time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]-03:00"
        ))
        .unwrap();
    let mut body = json!({
        "transaction_amount": 10.5,
        "description": "Pedido 42",
        "payment_method_id": "pix",
        "payer": { "email": "ana@example.com", "first_name": "Ana",
                   "identification": { "type": "CPF", "number": "12345678909" } },
        "external_reference": reference,
        "date_of_expiration": expires,
    });
    if let Some(url) = notification_url {
        body["notification_url"] = json!(url);
    }
    body
}

impl MercadoPago {
    async fn create_with(
        &self,
        token: Option<&str>,
        key: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}/v1/payments", self.api))
            .json(body);
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        if let Some(k) = key {
            request = request.header("X-Idempotency-Key", k);
        }
        let res = request.send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    async fn create(&self, body: &Value) -> (u16, Value) {
        let key = body["external_reference"].as_str().unwrap().to_string();
        self.create_with(Some(&self.token), Some(&key), body).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
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
}

/// A notification as received.
#[derive(Clone, Debug)]
struct Delivery {
    target: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Delivery {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    }
}

async fn receiver() -> (String, Arc<Mutex<Vec<Delivery>>>) {
    let seen: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let record = record.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            record.lock().push(Delivery {
                target: parts.uri.to_string(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
                    .collect(),
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/wh/mp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

async fn delivery(seen: &Mutex<Vec<Delivery>>, n: usize) -> Delivery {
    common::eventually("a notification", || async { seen.lock().get(n).cloned() }).await
}

/// `x-signature` checked as Mercado Pago documents it.
fn signature_valid(secret: &str, d: &Delivery, data_id: &str) -> bool {
    let signature = d.header("x-signature");
    let part = |name: &str| {
        signature
            .split(',')
            .find_map(|p| p.trim().strip_prefix(&format!("{name}=")))
            .unwrap_or_default()
            .to_string()
    };
    let manifest = format!(
        "id:{data_id};request-id:{};ts:{};",
        d.header("x-request-id"),
        part("ts")
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(manifest.as_bytes());
    hex::encode(mac.finalize().into_bytes()) == part("v1")
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused() {
    let mp = start().await;
    let body = body(&reference(), None);
    let (status, answer) = mp
        .create_with(Some("APP_USR-0000-wrong"), Some("k1"), &body)
        .await;
    assert_eq!(status, 401);
    assert_eq!(
        answer,
        json!({ "message": "invalid access token", "error": "unauthorized", "status": 401, "cause": [] })
    );
    let (status, answer) = mp.create_with(None, Some("k1"), &body).await;
    assert_eq!(status, 401);
    assert_eq!(
        answer["message"],
        "Must provide your access_token to proceed"
    );
    assert!(mp.token.starts_with("APP_USR-"));
}

#[tokio::test]
async fn the_idempotency_header_is_mandatory() {
    let mp = start().await;
    let (status, answer) = mp
        .create_with(Some(&mp.token), None, &body(&reference(), None))
        .await;
    assert_eq!(status, 400);
    assert_eq!(answer["message"], "Header X-Idempotency-Key can't be null");
    assert_eq!(answer["error"], "bad_request");
}

#[tokio::test]
async fn payments_are_validated() {
    let mp = start().await;
    let base = body(&reference(), None);
    let cases = [
        (
            "/payer/email",
            json!(null),
            4050,
            "payer.email must be a valid email",
        ),
        (
            "/payment_method_id",
            json!("visa"),
            4004,
            "Invalid payment_method_id: this account accepts pix only",
        ),
        (
            "/payer/identification/number",
            json!("12345678900"),
            2067,
            "Invalid user identification number",
        ),
        (
            "/transaction_amount",
            json!(10.555),
            4037,
            "Invalid transaction_amount: a positive number with at most two decimals",
        ),
        (
            "/notification_url",
            json!("not a url"),
            4020,
            "notification_url attribute must be url valid",
        ),
    ];
    for (pointer, value, code, message) in cases {
        let mut b = base.clone();
        *b.pointer_mut(pointer).unwrap_or(&mut Value::Null) = value.clone();
        if pointer == "/notification_url" {
            b["notification_url"] = value;
        }
        let (status, answer) = mp
            .create_with(Some(&mp.token), Some(&reference()), &b)
            .await;
        assert_eq!(status, 400, "{pointer}: {answer}");
        assert_eq!(answer["message"], message, "{answer}");
        assert_eq!(answer["cause"][0]["code"], code, "{answer}");
    }
    let mut unknown = base.clone();
    unknown["installments"] = json!(1);
    let (status, answer) = mp
        .create_with(Some(&mp.token), Some(&reference()), &unknown)
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["message"],
        "The name of the following parameters is wrong : [installments]"
    );
    let (_, held) = mp.get("/v1/payments/search").await;
    assert_eq!(held["results"], json!([]));
}

#[tokio::test]
async fn a_pix_payment_carries_a_br_code_and_its_png() {
    let mp = start().await;
    let reference = reference();
    let (status, payment) = mp.create(&body(&reference, None)).await;
    assert_eq!(status, 201, "{payment}");
    assert!(payment["id"].is_u64());
    assert_eq!(payment["status"], "pending");
    assert_eq!(payment["status_detail"], "pending_waiting_transfer");
    assert_eq!(payment["transaction_amount"], 10.5);
    assert_eq!(payment["external_reference"], reference.as_str());
    let data = &payment["point_of_interaction"]["transaction_data"];
    let code = data["qr_code"].as_str().unwrap();
    assert!(brcode::crc_is_valid(code), "{code}");
    assert!(
        brcode::parse_fields(code)
            .unwrap()
            .contains(&("54".into(), "10.50".into()))
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(data["qr_code_base64"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    assert!(
        payment["date_of_expiration"]
            .as_str()
            .unwrap()
            .ends_with("-04:00")
    );

    let id = payment["id"].as_u64().unwrap();
    let (status, got) = mp.get(&format!("/v1/payments/{id}")).await;
    assert_eq!((status, &got), (200, &payment));
    let (_, found) = mp
        .get(&format!(
            "/v1/payments/search?external_reference={reference}"
        ))
        .await;
    assert_eq!(found["paging"]["total"], 1);
    assert_eq!(found["results"][0]["id"], id);
    let (status, missing) = mp.get("/v1/payments/1").await;
    assert_eq!(status, 404);
    assert_eq!(missing["message"], "Payment not found");
}

#[tokio::test]
async fn the_same_idempotency_key_answers_the_same_payment_for_the_same_body_only() {
    let mp = start().await;
    let reference = reference();
    let body = body(&reference, None);
    let (_, first) = mp.create(&body).await;
    let (status, again) = mp.create(&body).await;
    assert_eq!(status, 201);
    assert_eq!(again["id"], first["id"]);
    // The same key with another body (a recomputed expiry) is refused, nothing created.
    let mut changed = body.clone();
    changed["date_of_expiration"] = json!("2099-01-01T00:00:00.000-03:00");
    let (status, refused) = mp.create(&changed).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("different request body"),
        "{refused}"
    );
    let (_, found) = mp
        .get(&format!(
            "/v1/payments/search?external_reference={reference}"
        ))
        .await;
    assert_eq!(found["paging"]["total"], 1);
}

#[tokio::test]
async fn a_reply_dropped_after_create_leaves_one_payment_to_find() {
    let mp = start().await;
    mp.control(
        "/_sim/faults",
        json!({ "provider": "mercadopago", "drop_reply_after_create": 1 }),
    )
    .await;
    let reference = reference();
    let lost = mp
        .http
        .post(format!("{}/v1/payments", mp.api))
        .bearer_auth(&mp.token)
        .header("X-Idempotency-Key", &reference)
        .json(&body(&reference, None))
        .send()
        .await;
    assert!(lost.is_err());
    let (_, found) = mp
        .get(&format!(
            "/v1/payments/search?external_reference={reference}"
        ))
        .await;
    assert_eq!(found["paging"]["total"], 1);
}

#[tokio::test]
async fn a_payments_own_notification_url_is_notified_unsigned() {
    let mp = start().await;
    let (url, seen) = receiver().await;
    let reference = reference();
    let (_, payment) = mp.create(&body(&reference, Some(&url))).await;
    let id = payment["id"].as_u64().unwrap().to_string();
    let (status, paid) = mp
        .control(
            "/_sim/pay",
            json!({ "provider": "mercadopago", "reference": reference }),
        )
        .await;
    assert_eq!(
        (status, &paid["webhook"]["outcome"]),
        (200, &json!("delivered"))
    );
    let d = delivery(&seen, 0).await;
    assert_eq!(d.target, format!("/api/wh/mp?data.id={id}&type=payment"));
    assert_eq!(d.body["data"]["id"], id.as_str());
    assert_eq!(d.header("x-signature"), "", "{d:?}");
    assert!(!d.header("x-request-id").is_empty());
}

#[tokio::test]
async fn paying_approves_and_notifies_the_applications_webhook_with_a_signature() {
    let mp = start().await;
    let (url, seen) = receiver().await;
    // The webhook of "Your integrations", for payments created without a notification_url.
    mp.control(
        "/_sim/config",
        json!({ "provider": "mercadopago", "webhook_url": url }),
    )
    .await;
    let reference = reference();
    let (_, payment) = mp.create(&body(&reference, None)).await;
    let id = payment["id"].as_u64().unwrap().to_string();
    let (status, paid) = mp
        .control(
            "/_sim/pay",
            json!({ "provider": "mercadopago", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered");
    let d = delivery(&seen, 0).await;
    assert_eq!(d.target, format!("/api/wh/mp?data.id={id}&type=payment"));
    assert_eq!(d.body["type"], "payment");
    assert_eq!(d.body["action"], "payment.updated");
    assert_eq!(d.body["data"]["id"], id.as_str());
    assert!(signature_valid(&mp.webhook_secret, &d, &id), "{d:?}");
    assert!(!signature_valid("other", &d, &id));

    let (_, got) = mp.get(&format!("/v1/payments/{id}")).await;
    assert_eq!(got["status"], "approved");
    assert_eq!(got["status_detail"], "accredited");
    assert!(got["date_approved"].is_string());
    let e2e = got["point_of_interaction"]["transaction_data"]["e2e_id"]
        .as_str()
        .unwrap();
    assert_eq!(e2e.len(), 32);
}

#[tokio::test]
async fn cancel_and_expiry() {
    let mp = start().await;
    let (url, seen) = receiver().await;
    let (_, payment) = mp.create(&body(&reference(), Some(&url))).await;
    let id = payment["id"].as_u64().unwrap();
    let cancel = |mp: &MercadoPago| {
        mp.http
            .put(format!("{}/v1/payments/{id}", mp.api))
            .bearer_auth(&mp.token)
            .json(&json!({ "status": "cancelled" }))
            .send()
    };
    let res = cancel(&mp).await.unwrap();
    assert_eq!(res.status(), 200);
    let canceled: Value = res.json().await.unwrap();
    assert_eq!(
        (&canceled["status"], &canceled["status_detail"]),
        (&json!("cancelled"), &json!("by_collector"))
    );
    assert_eq!(cancel(&mp).await.unwrap().status(), 400);
    assert_eq!(delivery(&seen, 0).await.body["data"]["id"], id.to_string());

    let reference = reference();
    mp.create(&body(&reference, None)).await;
    let (status, expired) = mp
        .control(
            "/_sim/expire",
            json!({ "provider": "mercadopago", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(expired["charge"]["psp"]["status"], "cancelled");
    assert_eq!(expired["charge"]["psp"]["status_detail"], "expired");
    assert_eq!(expired["charge"]["expired"], true);
    let (status, _) = mp
        .control(
            "/_sim/pay",
            json!({ "provider": "mercadopago", "reference": reference }),
        )
        .await;
    assert_eq!(status, 409);
}
