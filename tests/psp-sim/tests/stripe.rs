//! Stripe's wire protocol as the simulator answers it: API-key auth, form-only bodies, the
//! PaymentIntent validation, idempotency, search, cancel, account settings, and signed
//! webhook events (paid through the control API or by the sandbox e-mail).

mod common;

use std::sync::Arc;
use std::time::Duration;

use hmac::Mac as _;
use parking_lot::Mutex;
use psp_sim::{Sim, SimOptions, brcode};
use serde_json::{Value, json};

struct Stripe {
    sim: Sim,
    api: String,
    key: String,
    webhook_secret: String,
    http: reqwest::Client,
}

async fn start() -> Stripe {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let info = sim.provider("stripe").expect("stripe is simulated");
    Stripe {
        api: info.endpoints["api"].clone(),
        key: info.credentials["secret-key"].clone(),
        webhook_secret: info.credentials["webhook-secret"].clone(),
        http: common::client(&sim.ca_pem(), None),
        sim,
    }
}

type Form = Vec<(String, String)>;

fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The adapter's create parameters for `reference`, with `email` as the payer's.
fn params(reference: &str, email: &str) -> Vec<(String, String)> {
    [
        ("amount", "1990"),
        ("currency", "brl"),
        ("payment_method_types[]", "pix"),
        ("payment_method_data[type]", "pix"),
        ("confirm", "true"),
        ("payment_method_options[pix][expires_after_seconds]", "3600"),
        ("metadata[reference]", reference),
        ("payment_method_data[billing_details][email]", email),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn with(
    mut params: Vec<(String, String)>,
    key: &str,
    value: Option<&str>,
) -> Vec<(String, String)> {
    params.retain(|(k, _)| k != key);
    if let Some(v) = value {
        params.push((key.to_string(), v.to_string()));
    }
    params
}

impl Stripe {
    async fn post(
        &self,
        path: &str,
        key: &str,
        idempotency: Option<&str>,
        form: &[(String, String)],
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.api))
            .bearer_auth(key)
            .form(form);
        if let Some(k) = idempotency {
            request = request.header("Idempotency-Key", k);
        }
        let res = request.send().await.unwrap();
        let (status, headers) = (res.status().as_u16(), res.headers().clone());
        (status, headers, res.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, form: &[(String, String)]) -> (u16, Value) {
        let (status, _, body) = self
            .post("/v1/payment_intents", &self.key, None, form)
            .await;
        (status, body)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
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

    async fn account(&self, patch: Value) {
        let res = self
            .http
            .post(format!("{}/_sim/account", self.api))
            .json(&patch)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }

    /// Points the account's webhook endpoint (a dashboard setting at Stripe) at `url`.
    async fn set_webhook_url(&self, url: &str) {
        let (status, body) = self
            .control(
                "/_sim/config",
                json!({ "provider": "stripe", "webhook_url": url }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// A notification as received: headers and the raw body.
#[derive(Clone, Debug)]
struct Delivery {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Delivery {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A local webhook receiver recording headers and raw bodies; answers 200.
async fn receiver() -> (String, Arc<Mutex<Vec<Delivery>>>) {
    let seen: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let record = record.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
            let headers = parts
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
                .collect();
            record.lock().push(Delivery { headers, body });
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/wh/stripe", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// Checks `Stripe-Signature` the way Stripe's libraries do.
fn signature_valid(secret: &str, delivery: &Delivery) -> bool {
    let header = delivery.header("stripe-signature").unwrap_or_default();
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = Some(value.to_string()),
            Some(("v1", value)) => v1.push(value.to_string()),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(&delivery.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    let fresh = t
        .parse::<i64>()
        .is_ok_and(|t| (time::OffsetDateTime::now_utc().unix_timestamp() - t).abs() < 300);
    fresh && v1.contains(&expected)
}

async fn next_delivery(seen: &Mutex<Vec<Delivery>>, n: usize) -> Delivery {
    common::eventually("a webhook delivery", || async {
        seen.lock().get(n).cloned()
    })
    .await
}

// ---- Authentication ----

#[tokio::test]
async fn the_accounts_restricted_key_works_like_its_secret_key() {
    let s = start().await;
    let info = s.sim.provider("stripe").unwrap();
    let restricted = &info.other_credentials["restricted"]["secret-key"];
    assert!(restricted.starts_with("rk_test_"), "{restricted}");
    let form = params(&reference(), "ana@example.com");
    let (status, _, body) = s.post("/v1/payment_intents", restricted, None, &form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "requires_action");
    let wrong = format!("rk_test_{}", "x".repeat(20));
    let (status, _, body) = s.post("/v1/payment_intents", &wrong, None, &form).await;
    assert_eq!(status, 401);
    assert_eq!(
        body["error"]["message"],
        "Invalid API Key provided: rk_test_****xxxx"
    );
}

#[tokio::test]
async fn a_wrong_missing_or_live_key_is_refused_with_stripes_message() {
    let s = start().await;
    let form = params(&reference(), "ana@example.com");
    let (status, _, body) = s
        .post("/v1/payment_intents", "sk_test_wrongkeyabcd", None, &form)
        .await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({ "error": { "type": "invalid_request_error",
                           "message": "Invalid API Key provided: sk_test_****abcd" } })
    );

    let live = format!("sk_live_{}", &s.key["sk_test_".len()..]);
    let (status, _, body) = s.post("/v1/payment_intents", &live, None, &form).await;
    assert_eq!(status, 401);
    let last4 = &s.key[s.key.len() - 4..];
    assert_eq!(
        body["error"]["message"],
        format!("Invalid API Key provided: sk_live_****{last4}")
    );

    let res = s
        .http
        .get(format!("{}/v1/payment_intents", s.api))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("You did not provide an API key"),
        "{body}"
    );
    assert!(s.key.starts_with("sk_test_") && s.webhook_secret.starts_with("whsec_"));
}

// ---- Validation ----

#[tokio::test]
async fn only_form_bodies_are_read() {
    let s = start().await;
    let res = s
        .http
        .post(format!("{}/v1/payment_intents", s.api))
        .bearer_auth(&s.key)
        .json(&json!({ "amount": 1990, "currency": "brl" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/x-www-form-urlencoded"),
        "{body}"
    );
}

#[tokio::test]
async fn the_create_parameters_are_checked_like_stripe() {
    let s = start().await;
    let base = params(&reference(), "ana@example.com");
    // (form, param, message)
    let cases: Vec<(Form, &str, &str)> = vec![
        (
            with(base.clone(), "currency", Some("usd")),
            "currency",
            "The currency provided (usd) is invalid. Payments with pix support the following currencies: brl.",
        ),
        (
            with(base.clone(), "currency", None),
            "currency",
            "Missing required param: currency.",
        ),
        (
            with(base.clone(), "payment_method_types[]", Some("card")),
            "payment_method_types",
            "payment_method_types must include \"pix\" to confirm this PaymentIntent with a pix payment method.",
        ),
        (
            with(base.clone(), "amount", Some("49")),
            "amount",
            "Amount must be at least R$0.50 brl",
        ),
        (
            with(base.clone(), "amount", Some("19.90")),
            "amount",
            "Invalid integer: 19.90",
        ),
        (
            with(base.clone(), "receipt_mail", Some("x")),
            "receipt_mail",
            "Received unknown parameter: receipt_mail",
        ),
        (
            with(
                base.clone(),
                "payment_method_options[pix][expires_after_seconds]",
                Some("5"),
            ),
            "payment_method_options[pix][expires_after_seconds]",
            "Invalid payment_method_options[pix][expires_after_seconds]: the Pix code must expire between 10 seconds and 14 days (1209600 seconds) from now.",
        ),
        (
            with(
                base.clone(),
                "payment_method_data[billing_details][email]",
                Some("not-an-email"),
            ),
            "payment_method_data[billing_details][email]",
            "Invalid email address: not-an-email",
        ),
    ];
    for (form, param, message) in cases {
        let (status, body) = s.create(&form).await;
        assert_eq!(status, 400, "{param}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert_eq!(body["error"]["param"], param, "{body}");
        assert_eq!(body["error"]["message"], message, "{body}");
    }
    let held = s
        .http
        .get(format!(
            "{}/_sim/charges?provider=stripe",
            s.sim.control_url()
        ))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(held, json!([]));
}

// ---- Create, query, search ----

#[tokio::test]
async fn a_confirmed_pix_intent_carries_a_br_code() {
    let s = start().await;
    let reference = reference();
    // stripe-node spells list items with indices.
    let form = with(
        with(
            params(&reference, "ana@example.com"),
            "payment_method_types[]",
            None,
        ),
        "payment_method_types[0]",
        Some("pix"),
    );
    let (status, intent) = s.create(&form).await;
    assert_eq!(status, 200, "{intent}");
    assert!(intent["id"].as_str().unwrap().starts_with("pi_"));
    assert_eq!(intent["status"], "requires_action");
    assert_eq!(intent["amount"], 1990);
    assert_eq!(intent["currency"], "brl");
    assert_eq!(intent["metadata"]["reference"], reference.as_str());
    let qr = &intent["next_action"]["pix_display_qr_code"];
    assert_eq!(intent["next_action"]["type"], "pix_display_qr_code");
    let code = qr["data"].as_str().unwrap();
    assert!(brcode::crc_is_valid(code), "{code}");
    let fields = brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "19.90".into())), "{code}");
    assert_eq!(
        qr["expires_at"].as_i64().unwrap() - intent["created"].as_i64().unwrap(),
        3600
    );
    assert!(
        qr["image_url_png"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );

    let id = intent["id"].as_str().unwrap();
    let (status, got) = s.get(&format!("/v1/payment_intents/{id}")).await;
    assert_eq!((status, &got), (200, &intent));

    let query = format!("metadata['reference']:'{reference}'");
    let url = format!("/v1/payment_intents/search?query={}", urlencode(&query));
    let (status, found) = s.get(&url).await;
    assert_eq!(status, 200);
    assert_eq!(found["object"], "search_result");
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
    assert_eq!(found["data"][0]["id"], id);
    let (_, none) = s
        .get(&format!(
            "/v1/payment_intents/search?query={}",
            urlencode("metadata['reference']:'nothing'")
        ))
        .await;
    assert_eq!(none["data"], json!([]));

    let (status, missing) = s.get("/v1/payment_intents/pi_doesnotexist").await;
    assert_eq!(status, 404);
    assert_eq!(missing["error"]["code"], "resource_missing");
    assert_eq!(
        missing["error"]["message"],
        "No such payment_intent: 'pi_doesnotexist'"
    );
}

fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("q", s)]).unwrap()[2..].to_string()
}

#[tokio::test]
async fn idempotency_replays_the_same_params_and_refuses_others() {
    let s = start().await;
    let reference = reference();
    let form = params(&reference, "ana@example.com");
    let (status, first_headers, first) = s
        .post("/v1/payment_intents", &s.key, Some(&reference), &form)
        .await;
    assert_eq!(status, 200);
    assert!(first_headers.get("idempotent-replayed").is_none());
    // The same parameters in another order are the same request.
    let mut reordered = form.clone();
    reordered.reverse();
    let (status, headers, again) = s
        .post("/v1/payment_intents", &s.key, Some(&reference), &reordered)
        .await;
    assert_eq!(status, 200);
    assert_eq!(headers["idempotent-replayed"], "true");
    assert_eq!(again, first);

    let other = with(form, "amount", Some("2000"));
    let (status, _, body) = s
        .post("/v1/payment_intents", &s.key, Some(&reference), &other)
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "idempotency_error");
    assert_eq!(
        body["error"]["message"],
        format!(
            "Keys for idempotent requests can only be used with the same parameters they were \
             first used with. Try using a key other than '{reference}' if you meant to execute \
             a different request."
        )
    );
    let (_, list) = s.get("/v1/payment_intents?limit=10").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_reply_dropped_after_create_leaves_one_intent_to_find() {
    let s = start().await;
    let (status, _) = s
        .control(
            "/_sim/faults",
            json!({ "provider": "stripe", "drop_reply_after_create": 1 }),
        )
        .await;
    assert_eq!(status, 200);
    let reference = reference();
    let form = params(&reference, "ana@example.com");
    let lost = s
        .http
        .post(format!("{}/v1/payment_intents", s.api))
        .bearer_auth(&s.key)
        .header("Idempotency-Key", &reference)
        .form(&form)
        .send()
        .await;
    assert!(lost.is_err(), "{lost:?}");
    let (_, found) = s
        .get(&format!(
            "/v1/payment_intents/search?query={}",
            urlencode(&format!("metadata['reference']:'{reference}'"))
        ))
        .await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "{found}");
    // A retry with the same key replays the intent rather than creating another.
    let (status, headers, replay) = s
        .post("/v1/payment_intents", &s.key, Some(&reference), &form)
        .await;
    assert_eq!(
        (status, &headers["idempotent-replayed"]),
        (200, &"true".parse().unwrap())
    );
    assert_eq!(replay["id"], found["data"][0]["id"]);
}

// ---- Account settings ----

#[tokio::test]
async fn pix_not_enabled_and_a_foreign_account() {
    let s = start().await;
    s.account(json!({ "pix_enabled": false })).await;
    let (status, body) = s.create(&params(&reference(), "ana@example.com")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "payment_method_invalid_parameter");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The payment method type \"pix\" is invalid. Please ensure the provided type is activated in your dashboard"),
        "{body}"
    );

    s.account(json!({ "pix_enabled": true, "country": "US" }))
        .await;
    let (status, intent) = s.create(&params(&reference(), "ana@example.com")).await;
    assert_eq!(status, 200);
    assert_eq!(intent["next_action"], Value::Null);
    assert_eq!(intent["status"], "requires_payment_method");
}

// ---- Payment, events, cancel, expiry ----

#[tokio::test]
async fn paying_succeeds_the_intent_and_sends_a_signed_event() {
    let s = start().await;
    let (url, seen) = receiver().await;
    s.set_webhook_url(&url).await;
    let reference = reference();
    let (_, intent) = s.create(&params(&reference, "ana@example.com")).await;
    let id = intent["id"].as_str().unwrap();

    let (status, paid) = s
        .control(
            "/_sim/pay",
            json!({ "provider": "stripe", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["webhook"]["outcome"], "delivered");
    assert_eq!(paid["charge"]["status"], "succeeded");
    assert_eq!(paid["charge"]["psp_id"], id);

    let delivery = next_delivery(&seen, 0).await;
    assert!(
        signature_valid(&s.webhook_secret, &delivery),
        "{delivery:?}"
    );
    assert!(!signature_valid("whsec_other", &delivery));
    let event = delivery.json();
    assert_eq!(event["type"], "payment_intent.succeeded");
    assert_eq!(event["object"], "event");
    assert_eq!(event["data"]["object"]["id"], id);
    assert_eq!(
        event["data"]["object"]["metadata"]["reference"],
        reference.as_str()
    );

    let (_, got) = s
        .get(&format!("/v1/payment_intents/{id}?expand[]=latest_charge"))
        .await;
    assert_eq!(got["status"], "succeeded");
    assert_eq!(got["amount_received"], 1990);
    assert_eq!(got["next_action"], Value::Null);
    let e2e = got["latest_charge"]["payment_method_details"]["pix"]["bank_transaction_id"]
        .as_str()
        .unwrap();
    assert_eq!(e2e.len(), 32);

    let (status, _) = s
        .control("/_sim/pay", json!({ "provider": "stripe", "psp_id": id }))
        .await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn the_sandbox_email_pays_by_itself() {
    let s = start().await;
    let (url, seen) = receiver().await;
    s.set_webhook_url(&url).await;
    let (_, intent) = s.create(&params(&reference(), "paid@example.com")).await;
    assert_eq!(intent["status"], "requires_action");
    let id = intent["id"].as_str().unwrap().to_string();
    let delivery = tokio::time::timeout(Duration::from_secs(3), next_delivery(&seen, 0))
        .await
        .expect("the event within seconds");
    assert!(signature_valid(&s.webhook_secret, &delivery));
    assert_eq!(delivery.json()["type"], "payment_intent.succeeded");
    let (_, got) = s.get(&format!("/v1/payment_intents/{id}")).await;
    assert_eq!(got["status"], "succeeded");
}

#[tokio::test]
async fn cancel_and_expiry() {
    let s = start().await;
    let (url, seen) = receiver().await;
    s.set_webhook_url(&url).await;
    let (_, intent) = s.create(&params(&reference(), "ana@example.com")).await;
    let id = intent["id"].as_str().unwrap();
    let cancel = format!("/v1/payment_intents/{id}/cancel");
    let (status, _, canceled) = s.post(&cancel, &s.key, None, &[]).await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"], "canceled");
    assert!(canceled["canceled_at"].is_i64());
    let (status, _, again) = s.post(&cancel, &s.key, None, &[]).await;
    assert_eq!(status, 400);
    assert_eq!(again["error"]["code"], "payment_intent_unexpected_state");
    assert_eq!(
        next_delivery(&seen, 0).await.json()["type"],
        "payment_intent.canceled"
    );

    let reference = reference();
    s.create(&params(&reference, "ana@example.com")).await;
    let (status, expired) = s
        .control(
            "/_sim/expire",
            json!({ "provider": "stripe", "reference": reference }),
        )
        .await;
    assert_eq!(status, 200);
    let intent = &expired["charge"]["psp"];
    assert_eq!(intent["status"], "requires_payment_method");
    assert_eq!(
        intent["last_payment_error"]["code"],
        "payment_intent_payment_attempt_expired"
    );
    let failed = next_delivery(&seen, 1).await;
    assert_eq!(failed.json()["type"], "payment_intent.payment_failed");
    assert!(signature_valid(&s.webhook_secret, &failed));
    let (status, _) = s
        .control(
            "/_sim/pay",
            json!({ "provider": "stripe", "reference": reference }),
        )
        .await;
    assert_eq!(status, 409);
}
