//! Webhook delivery under faults and hostile endpoints, through the real binary on both
//! backends: an endpoint that never answers (a tar pit) does not hold up other endpoints, an
//! endless answer is cut short, a proxy in the environment is ignored, a gateway killed with
//! SIGKILL mid-delivery is replaced by one that delivers within seconds (short leases), a slow
//! attempt keeps its lease (no duplicate), internal addresses are refused without revealing
//! them, and the operator's cap on endpoints per merchant answers a clear 403.

use crate::both_backends;
use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{poll, sim_control, start_sim};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// How a receiver's path answers.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Answer(u16),
    /// Never answers: the request stays open until the gateway gives up.
    Hold,
    /// Answers `status` after `delay`.
    Slow(Duration, u16),
    /// 200 with a body that never ends.
    Endless,
}

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Hit {
    path: String,
    webhook_id: String,
    kind: String,
}

/// Merchant endpoints on one local listener, each path with its own [`Mode`].
#[derive(Clone, Default)]
struct Receiver {
    hits: Arc<Mutex<Vec<Hit>>>,
    modes: Arc<Mutex<HashMap<String, Mode>>>,
    base: String,
}

impl Receiver {
    async fn start_on(listener: tokio::net::TcpListener) -> Receiver {
        let receiver = Receiver {
            base: format!("http://{}", listener.local_addr().unwrap()),
            ..Default::default()
        };
        let r = receiver.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let r = r.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
                let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let path = parts.uri.path().to_owned();
                r.hits.lock().push(Hit {
                    path: path.clone(),
                    webhook_id: parts
                        .headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned(),
                    kind: event["type"].as_str().unwrap_or_default().to_owned(),
                });
                let mode = r
                    .modes
                    .lock()
                    .get(&path)
                    .copied()
                    .unwrap_or(Mode::Answer(200));
                answer(mode).await
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        receiver
    }

    async fn start() -> Receiver {
        Self::start_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn set(&self, path: &str, mode: Mode) {
        self.modes.lock().insert(path.to_owned(), mode);
    }

    fn hits_at(&self, path: &str) -> Vec<Hit> {
        self.hits
            .lock()
            .iter()
            .filter(|h| h.path == path)
            .cloned()
            .collect()
    }

    /// Waits until `path` got a request for event `event_id`.
    async fn wait_for(&self, path: &str, event_id: &str, timeout: Duration) {
        poll(timeout, &format!("{event_id} at {path}"), async || {
            self.hits_at(path)
                .iter()
                .any(|h| h.webhook_id == event_id)
                .then_some(())
        })
        .await
    }
}

async fn answer(mode: Mode) -> axum::response::Response {
    use axum::response::IntoResponse;
    let status = |code: u16| axum::http::StatusCode::from_u16(code).unwrap();
    match mode {
        Mode::Answer(code) => status(code).into_response(),
        Mode::Hold => std::future::pending().await,
        Mode::Slow(delay, code) => {
            tokio::time::sleep(delay).await;
            status(code).into_response()
        }
        Mode::Endless => {
            let chunk = axum::body::Bytes::from(vec![b'x'; 16 * 1024]);
            let endless = futures::stream::repeat_with(move || {
                Ok::<_, std::convert::Infallible>(chunk.clone())
            });
            axum::body::Body::from_stream(endless).into_response()
        }
    }
}

fn options(extra: &[(&str, &str)]) -> GatewayOptions {
    GatewayOptions::with_env(
        &[
            ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS", "true"),
            ("PIXGW_WORKER_POLL", "100ms"),
            ("PIXGW_RECONCILE_SCHEDULE", "1h"),
            ("PIXGW_RATE_LIMIT", "0"),
        ],
        extra,
    )
}

/// A merchant with the simulator's efi account connected on a running gateway.
struct Shop {
    gw: Gateway,
    key: String,
}

async fn shop(db: &TestDb, sim: &psp_sim::Sim, options: GatewayOptions) -> Shop {
    let merchant = create_merchant(db, "Loja A");
    let gw = Gateway::start(db, sim, &["efi"], options).await;
    gw.connect(sim, &merchant.test_key, "efi", &[]).await;
    Shop {
        gw,
        key: merchant.test_key,
    }
}

impl Shop {
    async fn endpoint(&self, url: &str) -> String {
        let (status, endpoint) = self
            .gw
            .post("/v1/webhook_endpoints", &self.key, json!({"url": url}))
            .await;
        assert_eq!(status, 201, "{endpoint}");
        endpoint["id"].as_str().unwrap().to_owned()
    }

    /// Creates a charge, has the simulator pay it, and returns its `charge.paid` event id.
    async fn paid_event(&self, sim: &psp_sim::Sim) -> String {
        let (status, charge) = self
            .gw
            .post(
                "/v1/charges",
                &self.key,
                json!({"amount": 1990, "provider": "efi"}),
            )
            .await;
        assert_eq!(status, 201, "{charge}");
        sim_control(
            sim,
            "/_sim/pay",
            Some(json!({"provider": "efi", "reference": charge["reference"]})),
        )
        .await;
        let id = charge["id"].as_str().unwrap().to_owned();
        poll(
            Duration::from_secs(30),
            "the charge.paid event",
            async || {
                let (_, events) = self
                    .gw
                    .get(
                        &format!("/v1/events?charge={id}&type=charge.paid"),
                        &self.key,
                    )
                    .await;
                events["data"][0]["id"].as_str().map(str::to_owned)
            },
        )
        .await
    }

    /// The delivery of `event_id` to `endpoint_id`, as `GET /v1/events/{id}` shows it.
    async fn delivery(&self, event_id: &str, endpoint_id: &str) -> Value {
        let (status, event) = self
            .gw
            .get(&format!("/v1/events/{event_id}"), &self.key)
            .await;
        assert_eq!(status, 200, "{event}");
        event["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["endpoint"] == endpoint_id)
            .cloned()
            .unwrap_or(Value::Null)
    }

    async fn wait_delivered(&self, event_id: &str, endpoint_id: &str, timeout: Duration) -> Value {
        poll(
            timeout,
            &format!("{event_id} delivered to {endpoint_id}"),
            async || {
                let d = self.delivery(event_id, endpoint_id).await;
                (d["status"] == "delivered").then_some(d)
            },
        )
        .await
    }
}

async fn a_tar_pit_endpoint_delays_nobody(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let receiver = Receiver::start().await;
    receiver.set("/tarpit", Mode::Hold);
    receiver.set("/endless", Mode::Endless);
    // Attempts may take a minute: a worker that waits for a whole batch would hold the second
    // event that long. A proxy for plain HTTP in the environment must not be used for
    // merchants' URLs (it is dead: any request through it fails); PSPs are reached over HTTPS.
    let shop = shop(
        &db,
        &sim,
        options(&[
            ("PIXGW_WEBHOOK_TIMEOUT", "60s"),
            ("HTTP_PROXY", "http://127.0.0.1:9"),
            ("http_proxy", "http://127.0.0.1:9"),
        ]),
    )
    .await;
    let tarpit = shop.endpoint(&receiver.url("/tarpit")).await;
    let endless = shop.endpoint(&receiver.url("/endless")).await;
    let good = shop.endpoint(&receiver.url("/good")).await;

    let first = shop.paid_event(&sim).await;
    receiver
        .wait_for("/tarpit", &first, Duration::from_secs(20))
        .await;
    // The endless answer is cut after a few KiB: delivered, with a short excerpt.
    let cut = shop
        .wait_delivered(&first, &endless, Duration::from_secs(20))
        .await;
    let attempts = cut["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{cut}");
    assert_eq!(attempts[0]["status_code"], 200, "{cut}");
    let excerpt = attempts[0]["response_excerpt"].as_str().unwrap();
    assert_eq!(excerpt, "x".repeat(512), "{cut}");

    // While the tar pit still holds its first request, the next event reaches the others.
    let started = Instant::now();
    let second = shop.paid_event(&sim).await;
    shop.wait_delivered(&second, &good, Duration::from_secs(20))
        .await;
    shop.wait_delivered(&second, &endless, Duration::from_secs(20))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the second event waited for the tar pit"
    );
    let held = shop.delivery(&first, &tarpit).await;
    assert_eq!(held["status"], "pending", "{held}");
    assert_eq!(held["attempts"], json!([]), "still in flight: {held}");
    assert_eq!(receiver.hits_at("/good").len(), 2);
}
both_backends!(a_tar_pit_endpoint_delays_nobody);

async fn a_killed_gateways_delivery_resumes_within_seconds(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = Receiver::start_on(listener).await;
    let settings = [
        ("PIXGW_WEBHOOK_LEASE", "1s"),
        ("PIXGW_WEBHOOK_TIMEOUT", "60s"),
    ];
    let shop = shop(&db, &sim, options(&settings)).await;
    let endpoint = shop.endpoint(&receiver.url("/hooks")).await;

    // An attempt three times longer than the lease keeps its row: renewed, never sent twice.
    receiver.set("/hooks", Mode::Slow(Duration::from_secs(3), 200));
    let slow = shop.paid_event(&sim).await;
    let delivered = shop
        .wait_delivered(&slow, &endpoint, Duration::from_secs(30))
        .await;
    assert_eq!(
        delivered["attempts"].as_array().unwrap().len(),
        1,
        "{delivered}"
    );
    let sent: Vec<Hit> = receiver.hits_at("/hooks");
    assert_eq!(sent.len(), 1, "one request, no duplicate: {sent:?}");
    assert_eq!(sent[0].kind, "charge.paid");

    // Killed mid-attempt: the restarted gateway delivers once the short lease ran out.
    receiver.set("/hooks", Mode::Hold);
    let event = shop.paid_event(&sim).await;
    receiver
        .wait_for("/hooks", &event, Duration::from_secs(20))
        .await;
    let Shop { gw, key } = shop;
    gw.kill().await;
    receiver.set("/hooks", Mode::Answer(200));
    let gw = Gateway::start(&db, &sim, &["efi"], options(&settings)).await;
    let restarted = Instant::now();
    let shop = Shop { gw, key };
    let delivered = shop
        .wait_delivered(&event, &endpoint, Duration::from_secs(10))
        .await;
    let resumed = restarted.elapsed();
    assert!(resumed < Duration::from_secs(10), "{resumed:?}");
    let attempts = delivered["attempts"].as_array().unwrap();
    assert_eq!(
        attempts.len(),
        1,
        "the killed attempt left no record: {delivered}"
    );
    assert_eq!(attempts[0]["status_code"], 200);
    let hits: Vec<Hit> = receiver
        .hits_at("/hooks")
        .into_iter()
        .filter(|h| h.webhook_id == event)
        .collect();
    assert_eq!(
        hits.len(),
        2,
        "the killed attempt and the one after: {hits:?}"
    );
}
both_backends!(a_killed_gateways_delivery_resumes_within_seconds);

async fn internal_addresses_are_refused_without_revealing_them(backend: Backend) {
    let db = TestDb::new(backend).await;
    let merchant = create_merchant(&db, "Loja A");
    // No PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS: the production policy.
    let gw = Gateway::start_with(&db, None, &[], GatewayOptions::default()).await;
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &merchant.test_key,
            json!({"url": "http://localhost:8080/hooks"}),
        )
        .await;
    // A well-formed URL refused by the destination policy: 422, not 400.
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["param"], "url");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "localhost resolves to a loopback, private or reserved address; the gateway only \
             calls addresses reachable on the internet"
        ),
        "{message}"
    );
    assert!(
        !message.contains("127.0.0.1") && !message.contains("::1"),
        "{message}"
    );
    for url in [
        "http://[::ffff:127.0.0.1]/hooks",
        "http://[::127.0.0.1]/hooks",
        "http://[64:ff9b::a9fe:a9fe]/hooks",
        "http://240.0.0.1/hooks",
        "http://192.0.0.8/hooks",
        "http://169.254.169.254/latest/meta-data",
    ] {
        let (status, body) = gw
            .post(
                "/v1/webhook_endpoints",
                &merchant.test_key,
                json!({ "url": url }),
            )
            .await;
        assert_eq!(status, 422, "{url}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("resolves to a loopback, private or reserved address"),
            "{url}: {body}"
        );
    }
}
both_backends!(internal_addresses_are_refused_without_revealing_them);

async fn endpoints_are_capped_and_text_is_one_line(backend: Backend) {
    let db = TestDb::new(backend).await;
    // Enterprise sets no endpoint limit: the operator's cap applies.
    let merchant = create_merchant(&db, "Loja A");
    let gw = Gateway::start_with(
        &db,
        None,
        &[],
        options(&[("PIXGW_MAX_WEBHOOK_ENDPOINTS", "2")]),
    )
    .await;
    let create = |n: u32| {
        gw.post(
            "/v1/webhook_endpoints",
            &merchant.test_key,
            json!({ "url": format!("http://127.0.0.1:9/hooks/{n}") }),
        )
    };
    assert_eq!(create(1).await.0, 201);
    let (status, second) = create(2).await;
    assert_eq!(status, 201);
    let (status, refused) = create(3).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "endpoint_limit_reached");
    assert_eq!(
        refused["error"]["message"],
        "this gateway allows at most 2 webhook endpoints per merchant in test and 2 exist; \
         delete one you no longer use (an endpoint can receive every event type)."
    );
    assert_eq!(refused["error"]["limit"], 2);
    // Live has room of its own; a deleted endpoint frees its place.
    let (status, _) = gw
        .post(
            "/v1/webhook_endpoints",
            &merchant.live_key,
            json!({"url": "https://8.8.8.8/hooks"}),
        )
        .await;
    assert_eq!(status, 201);
    let id = second["id"].as_str().unwrap();
    let (status, _) = gw
        .send(gw.request(
            reqwest::Method::DELETE,
            &format!("/v1/webhook_endpoints/{id}"),
            Some(&merchant.test_key),
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(create(4).await.0, 201);
    // Control characters in a description are refused at the edge.
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &merchant.live_key,
            json!({"url": "https://8.8.8.8/x", "description": "Loja\u{1b}[2J"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "description");
    assert_eq!(
        body["error"]["message"],
        "description must be one line without control characters; character 5 is U+001B \
         (line breaks, tabs and other invisible control characters are refused)."
    );
    // So are they in a charge's description, payer name and metadata.
    for (charge, param) in [
        (
            json!({"amount": 100, "provider": "efi", "description": "Pedido\n42"}),
            "description",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"name": "Ana\u{202e}"}}),
            "payer.name",
        ),
        (
            json!({"amount": 100, "provider": "efi", "metadata": {"order": "42\r\nX-Forged: 1"}}),
            "metadata.order",
        ),
    ] {
        let (status, body) = gw.post("/v1/charges", &merchant.test_key, charge).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["param"], param, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("must be one line without control characters"),
            "{body}"
        );
    }
}
both_backends!(endpoints_are_capped_and_text_is_one_line);
