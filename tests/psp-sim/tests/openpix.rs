//! OpenPix's charges API as the simulator answers it: the bare AppID, idempotent creation by
//! correlationID, integer centavos, queries by correlationID and globalID, deletion, payment
//! with the RSA-signed notification to the dashboard-configured URL, expiry and faults.

mod common;

use std::sync::Arc;

use axum::body::Bytes;
use base64::Engine;
use parking_lot::Mutex;
use psp_sim::{Sim, SimOptions, brcode};
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;
use serde_json::{Value, json};

struct OpenPix {
    sim: Sim,
    api: String,
    app_id: String,
    public_key: String,
    http: reqwest::Client,
}

async fn start() -> OpenPix {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim.provider("openpix").unwrap();
    OpenPix {
        api: info.endpoints["api"].clone(),
        app_id: info.credentials["app-id"].clone(),
        public_key: info.credentials["webhook-public-key"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn charge_body(reference: &str) -> Value {
    json!({
        "correlationID": reference,
        "value": 1234,
        "comment": "Pedido 42",
        "customer": { "name": "Ana Souza", "taxID": "12345678909", "email": "ana@example.com" },
        "expiresIn": 3600,
    })
}

impl OpenPix {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        authorization: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.api))
            .header("authorization", authorization);
        if let Some(body) = body {
            request = request.json(body);
        }
        let res = request.send().await.unwrap();
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        )
    }

    async fn create(&self, body: &Value) -> Value {
        let (status, answer) = self
            .call(
                reqwest::Method::POST,
                "/api/v1/charge",
                &self.app_id,
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    async fn get(&self, id: &str) -> (u16, Value) {
        let path = format!("/api/v1/charge/{id}");
        self.call(reqwest::Method::GET, &path, &self.app_id, None)
            .await
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

    async fn held(&self) -> Vec<Value> {
        let url = format!("{}/_sim/charges?provider=openpix", self.sim.control_url());
        let res = self.http.get(url).send().await.unwrap();
        res.json::<Vec<Value>>().await.unwrap()
    }
}

#[tokio::test]
async fn create_answers_an_active_charge_with_a_valid_br_code() {
    let op = start().await;
    let reference = reference();
    let answer = op.create(&charge_body(&reference)).await;
    let charge = &answer["charge"];
    assert_eq!(charge["status"], "ACTIVE");
    assert_eq!(charge["correlationID"], reference.as_str());
    assert_eq!(answer["correlationID"], reference.as_str());
    assert_eq!(charge["value"], 1234);
    assert_eq!(charge["comment"], "Pedido 42");
    assert_eq!(charge["expiresIn"], 3600);
    assert_eq!(answer["brCode"], charge["brCode"]);
    for url in ["qrCodeImage", "paymentLinkUrl"] {
        assert!(
            charge[url].as_str().unwrap().starts_with("https://"),
            "{url}"
        );
    }
    let code = charge["brCode"].as_str().unwrap();
    assert!(brcode::crc_is_valid(code), "{code}");
    let fields = brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");
    let expires = charge["expiresDate"].as_str().unwrap();
    assert!(
        time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)
            .is_ok()
    );
}

#[tokio::test]
async fn a_repeated_correlation_id_answers_the_existing_charge() {
    let op = start().await;
    let reference = reference();
    let first = op.create(&charge_body(&reference)).await;
    let mut again = charge_body(&reference);
    again["value"] = json!(999);
    let path = "/api/v1/charge?return_existing=true";
    let (status, second) = op
        .call(reqwest::Method::POST, path, &op.app_id, Some(&again))
        .await;
    assert_eq!(status, 200);
    assert_eq!(second["charge"], first["charge"]);
    assert_eq!(op.held().await.len(), 1);
}

#[tokio::test]
async fn the_authorization_is_the_app_id_alone() {
    let op = start().await;
    let body = charge_body(&reference());
    let bearer = format!("Bearer {}", op.app_id);
    for authorization in [bearer.as_str(), "wrong", ""] {
        let (status, answer) = op
            .call(
                reqwest::Method::POST,
                "/api/v1/charge",
                authorization,
                Some(&body),
            )
            .await;
        assert_eq!(
            (status, answer),
            (401, json!({ "error": "appID inválido" })),
            "{authorization:?}"
        );
    }
    assert!(op.held().await.is_empty());
}

#[tokio::test]
async fn correlation_id_and_integer_value_are_required() {
    let op = start().await;
    let mut cases = Vec::new();
    for value in [json!(12.34), json!("1234"), json!(0), Value::Null] {
        let mut body = charge_body(&reference());
        body["value"] = value;
        cases.push(body);
    }
    let mut no_id = charge_body("x");
    no_id.as_object_mut().unwrap().remove("correlationID");
    cases.push(no_id);
    let mut bad_customer = charge_body(&reference());
    bad_customer["customer"] = json!({ "name": "Ana" });
    cases.push(bad_customer);
    let mut bad_tax_id = charge_body(&reference());
    bad_tax_id["customer"]["taxID"] = json!("12345678900");
    cases.push(bad_tax_id);
    for body in cases {
        let (status, answer) = op
            .call(
                reqwest::Method::POST,
                "/api/v1/charge",
                &op.app_id,
                Some(&body),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{answer}"
        );
    }
    assert!(op.held().await.is_empty());
}

#[tokio::test]
async fn charges_are_found_by_correlation_id_and_global_id() {
    let op = start().await;
    let reference = reference();
    let created = op.create(&charge_body(&reference)).await;
    let (status, by_reference) = op.get(&reference).await;
    assert_eq!(status, 200);
    assert_eq!(by_reference["charge"], created["charge"]);
    let global = created["charge"]["globalID"].as_str().unwrap();
    let (status, by_global) = op.get(global).await;
    assert_eq!((status, &by_global["charge"]), (200, &created["charge"]));
    let (status, missing) = op.get("nothing-here").await;
    assert_eq!(
        (status, missing),
        (404, json!({ "error": "Cobrança não encontrada" }))
    );
}

#[tokio::test]
async fn an_active_charge_can_be_deleted() {
    let op = start().await;
    let reference = reference();
    op.create(&charge_body(&reference)).await;
    let path = format!("/api/v1/charge/{reference}");
    let (status, answer) = op
        .call(reqwest::Method::DELETE, &path, &op.app_id, None)
        .await;
    assert_eq!(
        (status, answer),
        (200, json!({ "status": "OK", "id": reference }))
    );
    assert_eq!(op.get(&reference).await.0, 404);

    let paid = self::reference();
    op.create(&charge_body(&paid)).await;
    op.control(
        "/_sim/pay",
        json!({ "provider": "openpix", "reference": paid }),
    )
    .await;
    let path = format!("/api/v1/charge/{paid}");
    let (status, _) = op
        .call(reqwest::Method::DELETE, &path, &op.app_id, None)
        .await;
    assert_eq!(status, 400, "only ACTIVE charges are deleted");
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
    let url = format!("http://{}/api/wh/1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn payment_completes_and_sends_a_signed_notification() {
    let op = start().await;
    let reference = reference();
    op.create(&charge_body(&reference)).await;

    // No URL configured yet: the PSP has nowhere to send.
    let other = self::reference();
    op.create(&charge_body(&other)).await;
    let (_, unsent) = op
        .control(
            "/_sim/pay",
            json!({ "provider": "openpix", "reference": other }),
        )
        .await;
    assert_eq!(unsent["webhook"]["outcome"], "not_registered");

    let (url, seen) = receiver().await;
    let (status, config) = op
        .control(
            "/_sim/config",
            json!({
                "provider": "openpix",
                "webhook_url": url,
                "webhook_headers": { "authorization": "set-in-the-dashboard" },
            }),
        )
        .await;
    assert_eq!((status, &config["webhook_url"]), (200, &json!(url)));
    let (status, paid) = op
        .control(
            "/_sim/pay",
            json!({ "provider": "openpix", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered", "{paid}");

    let (_, now) = op.get(&reference).await;
    let charge = &now["charge"];
    assert_eq!(charge["status"], "COMPLETED");
    assert!(charge["paidAt"].as_str().is_some());
    let e2e = charge["paymentMethods"]["pix"]["endToEndId"]
        .as_str()
        .unwrap();
    assert_eq!(e2e.len(), 32);

    let (headers, raw) = &seen.lock()[0].clone();
    assert_eq!(headers["authorization"], "set-in-the-dashboard");
    let body: Value = serde_json::from_slice(raw).unwrap();
    assert_eq!(body["event"], "OPENPIX:CHARGE_COMPLETED");
    assert_eq!(body["charge"], *charge);
    assert_eq!(body["pix"]["endToEndId"], e2e);
    assert_eq!(body["pix"]["value"], 1234);

    let signature = base64::engine::general_purpose::STANDARD
        .decode(headers["x-webhook-signature"].as_bytes())
        .unwrap();
    let key = rsa::RsaPublicKey::from_public_key_pem(&op.public_key).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key);
    let signature = rsa::pkcs1v15::Signature::try_from(signature.as_slice()).unwrap();
    assert!(verifier.verify(raw, &signature).is_ok());
    assert!(verifier.verify(b"{}", &signature).is_err());
}

#[tokio::test]
async fn expiry_and_faults() {
    let op = start().await;
    let reference = reference();
    op.create(&charge_body(&reference)).await;
    let (status, expired) = op
        .control(
            "/_sim/expire",
            json!({ "provider": "openpix", "psp_id": reference }),
        )
        .await;
    assert_eq!(
        (status, &expired["charge"]["status"]),
        (200, &json!("EXPIRED"))
    );
    assert_eq!(op.get(&reference).await.1["charge"]["status"], "EXPIRED");
    let (status, _) = op
        .control(
            "/_sim/pay",
            json!({ "provider": "openpix", "reference": reference }),
        )
        .await;
    assert_eq!(status, 409);

    op.control(
        "/_sim/faults",
        json!({ "provider": "openpix", "fail_next": { "count": 1, "status": 500 } }),
    )
    .await;
    let (status, answer) = op.get(&reference).await;
    assert_eq!(status, 500);
    assert!(answer["error"].is_string(), "{answer}");
}
