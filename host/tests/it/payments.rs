//! Payment confirmation end to end, through the real binary on both backends: the PSP
//! simulator's notification (or the reconciler) moves a charge to `paid`, and the merchant's
//! endpoint receives one signed `charge.paid` — also across a crash, a receiver that is down,
//! duplicated notifications and forged ones.

use crate::both_backends;
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{poll, sim_control, start_sim};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// What a merchant's endpoint received.
#[derive(Clone, Debug)]
struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A merchant's endpoint: answers the queued statuses in turn (then 200) and records requests.
#[derive(Clone, Default)]
struct Receiver {
    received: Arc<Mutex<Vec<Received>>>,
    answers: Arc<Mutex<std::collections::VecDeque<u16>>>,
}

impl Receiver {
    async fn start_on(listener: tokio::net::TcpListener) -> (Receiver, String) {
        let receiver = Receiver::default();
        let url = format!("http://{}/hooks/pixgw", listener.local_addr().unwrap());
        let r = receiver.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let r = r.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
                let headers = parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
                    .collect();
                r.received.lock().push(Received { headers, body });
                let status = r.answers.lock().pop_front().unwrap_or(200);
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    async fn start() -> (Receiver, String) {
        Self::start_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await
    }

    fn of_type(&self, kind: &str) -> Vec<Received> {
        self.received
            .lock()
            .iter()
            .filter(|r| r.json()["type"] == kind)
            .cloned()
            .collect()
    }

    async fn wait_for(&self, kind: &str, count: usize) -> Vec<Received> {
        self.wait_for_within(kind, count, Duration::from_secs(20))
            .await
    }

    async fn wait_for_within(&self, kind: &str, count: usize, timeout: Duration) -> Vec<Received> {
        poll(timeout, &format!("{count} {kind} event(s)"), async || {
            let got = self.of_type(kind);
            (got.len() >= count).then_some(got)
        })
        .await
    }
}

/// Checks a Standard Webhooks signature with the endpoint's secret.
fn assert_signed(r: &Received, secret: &str) {
    let key = pixgw::webhooks::signature::secret_key(secret).unwrap();
    let timestamp: i64 = r.header("webhook-timestamp").parse().unwrap();
    let expected =
        pixgw::webhooks::signature::sign(&key, r.header("webhook-id"), timestamp, &r.body);
    assert!(
        r.header("webhook-signature")
            .split(' ')
            .any(|s| s == expected),
        "signature {} does not match {expected}",
        r.header("webhook-signature")
    );
    assert_eq!(r.header("webhook-id"), r.json()["id"]);
}

fn options(extra: &[(&str, &str)]) -> GatewayOptions {
    GatewayOptions::with_env(
        &[
            ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS", "true"),
            ("PIXGW_WORKER_POLL", "100ms"),
            // Notifications alone must move charges in these tests, unless one says otherwise.
            ("PIXGW_RECONCILE_SCHEDULE", "1h"),
        ],
        extra,
    )
}

struct Shop {
    gw: Gateway,
    key: String,
    secret: String,
    endpoint: String,
}

async fn shop(db: &TestDb, sim: &psp_sim::Sim, receiver_url: &str, extra: &[(&str, &str)]) -> Shop {
    let merchant = create_merchant(db, "Loja A");
    let gw = Gateway::start(db, sim, &["efi"], options(extra)).await;
    let credential = gw.connect(sim, &merchant.test_key, "efi", &[]).await;
    assert_eq!(
        credential["webhook"]["registration"]["status"], "registered",
        "{credential}"
    );
    let (status, endpoint) = gw
        .post(
            "/v1/webhook_endpoints",
            &merchant.test_key,
            json!({"url": receiver_url}),
        )
        .await;
    assert_eq!(status, 201, "{endpoint}");
    assert_eq!(
        endpoint["events"],
        json!([
            "charge.paid",
            "charge.underpaid",
            "charge.expired",
            "charge.canceled",
            "charge.failed"
        ])
    );
    Shop {
        gw,
        key: merchant.test_key,
        secret: endpoint["secret"].as_str().unwrap().to_owned(),
        endpoint: endpoint["id"].as_str().unwrap().to_owned(),
    }
}

async fn charge(shop: &Shop) -> Value {
    let (status, charge) = shop
        .gw
        .post(
            "/v1/charges",
            &shop.key,
            json!({"amount": 1990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    charge
}

/// Waits until `count` notifications of the shop's credential are processed: the gateway answers
/// a notification once it is stored and confirms it with the PSP in the background.
async fn notifications_processed(db: &TestDb, shop: &Shop, count: i64) {
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    let (_, credentials) = shop.gw.get("/v1/credentials", &shop.key).await;
    let id = credentials["data"][0]["id"].as_str().unwrap().to_owned();
    poll(
        Duration::from_secs(20),
        &format!("{count} notification(s) processed"),
        async || {
            let counts = store.notification_counts(&id).await.unwrap();
            (counts == [("processed".to_string(), count)]).then_some(())
        },
    )
    .await;
}

async fn pay(sim: &psp_sim::Sim, charge: &Value) {
    sim_control(
        sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": charge["reference"]})),
    )
    .await;
}

async fn paid_end_to_end(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let shop = shop(&db, &sim, &url, &[]).await;
    let charge = charge(&shop).await;
    let id = charge["id"].as_str().unwrap();

    // A screen follows the charge live.
    let stream = shop
        .gw
        .request(
            reqwest::Method::GET,
            &format!("/v1/charges/{id}/stream"),
            Some(&shop.key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");

    pay(&sim, &charge).await;
    let paid = receiver.wait_for("charge.paid", 1).await;
    assert_signed(&paid[0], &shop.secret);
    let event = paid[0].json();
    assert!(event["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(event["object"], "event");
    assert_eq!(event["livemode"], false);
    assert_eq!(event["data"]["object"]["id"], charge["id"]);
    assert_eq!(event["data"]["object"]["status"], "paid");
    assert_eq!(event["data"]["object"]["amount_paid"], 1990);
    assert_eq!(event["data"]["object"]["amount_mismatch"], false);
    // The event is stored without the QR image and sent (and read) with it, drawn back in.
    assert_eq!(event["data"]["object"]["pix"], charge["pix"]);
    let (_, read) = shop
        .gw
        .get(
            &format!("/v1/events/{}", event["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(read["data"]["object"]["pix"], charge["pix"]);
    let (_, listed) = shop.gw.get("/v1/events?type=charge.paid", &shop.key).await;
    assert_eq!(listed["data"][0]["data"]["object"]["pix"], charge["pix"]);
    let stored: String = sqlx::query_scalar("SELECT payload FROM events WHERE id = $1")
        .bind(event["id"].as_str().unwrap())
        .fetch_one(pixgw::store::Store::connect(&db.url).await.unwrap().pool())
        .await
        .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        stored["data"]["object"]["pix"]["qr_code_base64"],
        Value::Null
    );
    assert_eq!(
        stored["data"]["object"]["pix"]["copy_paste"],
        charge["pix"]["copy_paste"]
    );
    assert_eq!(
        event["data"]["object"]["end_to_end_id"]
            .as_str()
            .unwrap()
            .len(),
        32
    );

    let (_, fetched) = shop.gw.get(&format!("/v1/charges/{id}"), &shop.key).await;
    assert_eq!(fetched["status"], "paid");
    assert!(fetched["paid_at"].as_str().is_some(), "{fetched}");

    // The stream said pending, then paid, and ended.
    let text = tokio::time::timeout(Duration::from_secs(20), stream.text())
        .await
        .unwrap()
        .unwrap();
    let statuses: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            if d.contains("\"paid\"") {
                "paid"
            } else if d.contains("\"pending\"") {
                "pending"
            } else {
                d
            }
        })
        .collect();
    assert_eq!(statuses, ["pending", "paid"], "{text}");

    // The event is listed, with its delivery and attempt.
    let (_, events) = shop
        .gw
        .get(&format!("/v1/events?charge={id}"), &shop.key)
        .await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        2,
        "charge.created and charge.paid: {events}"
    );
    assert_eq!(events["data"][0]["type"], "charge.paid");
    assert_eq!(events["data"][1]["type"], "charge.created");
    let evt = events["data"][0]["id"].as_str().unwrap();
    // The answer is recorded just after the receiver saw the request.
    let detail = poll(
        Duration::from_secs(20),
        "the delivery recorded",
        async || {
            let (_, detail) = shop.gw.get(&format!("/v1/events/{evt}"), &shop.key).await;
            (detail["deliveries"][0]["status"] == "delivered").then_some(detail)
        },
    )
    .await;
    assert_eq!(detail["deliveries"][0]["attempts"][0]["status_code"], 200);
    // The created event went nowhere: the endpoint did not ask for it.
    let created = events["data"][1]["id"].as_str().unwrap();
    let (_, detail) = shop
        .gw
        .get(&format!("/v1/events/{created}"), &shop.key)
        .await;
    assert_eq!(detail["deliveries"], json!([]));

    // Manual redelivery sends the same event again, same webhook-id.
    let (status, queued) = shop
        .gw
        .post(&format!("/v1/events/{evt}/redeliver"), &shop.key, json!({}))
        .await;
    assert_eq!(
        (status, queued["queued"].as_u64()),
        (200, Some(1)),
        "{queued}"
    );
    let again = receiver.wait_for("charge.paid", 2).await;
    assert_eq!(again[1].header("webhook-id"), evt);
    assert_signed(&again[1], &shop.secret);
}
both_backends!(paid_end_to_end);

async fn duplicated_and_replayed_notifications(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let shop = shop(&db, &sim, &url, &[]).await;
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "duplicate_webhooks": true})),
    )
    .await;
    let charge = charge(&shop).await;
    pay(&sim, &charge).await;
    receiver.wait_for("charge.paid", 1).await;

    // Both copies reached the gateway and were processed; one moved the charge.
    let deliveries = sim_control(&sim, "/_sim/deliveries?provider=efi", None).await;
    let deliveries = deliveries.as_array().unwrap();
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    // Replaying the notification later, and a late one for the same charge, change nothing.
    let notification = &deliveries[0];
    let target = notification["url"].as_str().unwrap();
    let body = notification["body"].to_string();
    for _ in 0..2 {
        let response = reqwest::Client::new()
            .post(target)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["received"], true, "{answer}");
    }
    // Both deliveries and both replays, each confirmed with the PSP.
    notifications_processed(&db, &shop, 4).await;
    let id = charge["id"].as_str().unwrap();
    let (_, events) = shop
        .gw
        .get(
            &format!("/v1/events?charge={id}&type=charge.paid"),
            &shop.key,
        )
        .await;
    assert_eq!(
        events["data"].as_array().unwrap().len(),
        1,
        "exactly one charge.paid: {events}"
    );
    // Give a stray second delivery every chance to show up: redeliveries would be queued by now.
    let (_, detail) = shop
        .gw
        .get(
            &format!("/v1/events/{}", events["data"][0]["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(detail["deliveries"].as_array().unwrap().len(), 1);
    assert_eq!(receiver.of_type("charge.paid").len(), 1);
}
both_backends!(duplicated_and_replayed_notifications);

async fn forged_notifications_move_nothing(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let shop = shop(&db, &sim, &url, &[]).await;
    let charge = charge(&shop).await;
    let (_, credentials) = shop.gw.get("/v1/credentials", &shop.key).await;
    let webhook = &credentials["data"][0]["webhook"];
    let hook_url = format!(
        "{}/pix",
        webhook["url"].as_str().unwrap().split('?').next().unwrap()
    );
    let token = webhook["token"].as_str().unwrap();
    let forged = json!({"pix": [{
        "endToEndId": "E1234567820261122120000000000001",
        "txid": charge["reference"],
        "valor": "19.90",
        "horario": "2026-11-22T12:00:00Z"
    }]});
    let http = reqwest::Client::new();
    // Without the token, or with a wrong one: 401 and nothing happens.
    for query in ["", "?token=wrong"] {
        let response = http
            .post(format!("{hook_url}{query}"))
            .json(&forged)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
    }
    // With the right token, but the PSP says the charge is unpaid: it stays pending.
    let response = http
        .post(format!("{hook_url}?token={token}"))
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["received"], true, "{answer}");
    notifications_processed(&db, &shop, 1).await;
    let (_, fetched) = shop
        .gw
        .get(
            &format!("/v1/charges/{}", charge["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(fetched["status"], "pending");
    assert!(receiver.of_type("charge.paid").is_empty());
    // The handshake GET answers 200.
    assert_eq!(http.get(&hook_url).send().await.unwrap().status(), 200);
}
both_backends!(forged_notifications_move_nothing);

async fn a_crash_before_delivery_loses_nothing(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    // The receiver's port is reserved but nobody answers yet.
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = reserved.local_addr().unwrap();
    drop(reserved);
    let url = format!("http://{addr}/hooks/pixgw");
    // Retries every 300 ms for two minutes: they must not run out before the restart below,
    // however slow the machine, and the restarted gateway must find the delivery due soon.
    let delays = vec!["300ms"; 400].join(",");
    let retry = [("PIXGW_WEBHOOK_RETRY_DELAYS", delays.as_str())];
    let shop = shop(&db, &sim, &url, &retry).await;
    let charge = charge(&shop).await;
    pay(&sim, &charge).await;
    let id = charge["id"].as_str().unwrap().to_owned();
    poll(
        Duration::from_secs(20),
        "the charge to be paid",
        async || {
            let (_, c) = shop.gw.get(&format!("/v1/charges/{id}"), &shop.key).await;
            (c["status"] == "paid").then_some(())
        },
    )
    .await;
    let (_, events) = shop
        .gw
        .get(
            &format!("/v1/events?charge={id}&type=charge.paid"),
            &shop.key,
        )
        .await;
    let event_id = events["data"][0]["id"].as_str().unwrap().to_owned();
    // A first attempt failed (nobody listens) and is on record before the crash.
    poll(Duration::from_secs(20), "a failed attempt", async || {
        let (_, detail) = shop
            .gw
            .get(&format!("/v1/events/{event_id}"), &shop.key)
            .await;
        let attempts = detail["deliveries"][0]["attempts"].as_array()?.len();
        (attempts > 0).then_some(())
    })
    .await;
    let Shop {
        gw, key, secret, ..
    } = shop;
    gw.kill().await;

    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let (receiver, _) = Receiver::start_on(listener).await;
    let gw = Gateway::start(&db, &sim, &["efi"], options(&retry)).await;
    // Killed while an attempt was in flight, the old gateway leaves its lease behind; the
    // delivery is due again once the (short) lease runs out.
    let paid = receiver
        .wait_for_within("charge.paid", 1, Duration::from_secs(90))
        .await;
    assert_eq!(
        paid[0].header("webhook-id"),
        event_id,
        "the same webhook-id after the restart"
    );
    assert_signed(&paid[0], &secret);
    // The answer is recorded just after the receiver saw the request.
    let detail = poll(
        Duration::from_secs(20),
        "the delivery recorded",
        async || {
            let (_, detail) = gw.get(&format!("/v1/events/{event_id}"), &key).await;
            (detail["deliveries"][0]["status"] == "delivered").then_some(detail)
        },
    )
    .await;
    let attempts = detail["deliveries"][0]["attempts"].as_array().unwrap();
    assert!(attempts.len() >= 2, "{detail}");
    assert!(
        attempts[0]["error"].as_str().unwrap().contains("onnect"),
        "{detail}"
    );
    assert_eq!(attempts.last().unwrap()["status_code"], 200);
}
both_backends!(a_crash_before_delivery_loses_nothing);

async fn retries_then_410_disables(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    receiver.answers.lock().extend([503, 503]);
    let retry = [(
        "PIXGW_WEBHOOK_RETRY_DELAYS",
        "200ms,400ms,400ms,400ms,400ms,400ms,400ms,400ms,400ms",
    )];
    let shop = shop(&db, &sim, &url, &retry).await;
    let first = charge(&shop).await;
    pay(&sim, &first).await;
    receiver.wait_for("charge.paid", 3).await;
    let id = first["id"].as_str().unwrap();
    let (_, events) = shop
        .gw
        .get(
            &format!("/v1/events?charge={id}&type=charge.paid"),
            &shop.key,
        )
        .await;
    let event_id = events["data"][0]["id"].as_str().unwrap();
    // The receiver has the third delivery before the gateway records its answer (recorded
    // behind the delivery): read the event once it is no longer pending.
    let detail = poll(
        Duration::from_secs(10),
        "the third attempt to be recorded",
        async || {
            let (_, detail) = shop
                .gw
                .get(&format!("/v1/events/{event_id}"), &shop.key)
                .await;
            (detail["deliveries"][0]["status"] != "pending").then_some(detail)
        },
    )
    .await;
    let codes: Vec<i64> = detail["deliveries"][0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [503, 503, 200], "{detail}");
    assert_eq!(detail["deliveries"][0]["status"], "delivered");
    let ids: Vec<String> = receiver
        .of_type("charge.paid")
        .iter()
        .map(|r| r.header("webhook-id").to_owned())
        .collect();
    assert!(
        ids.iter().all(|i| i == event_id),
        "every attempt carries the same webhook-id"
    );

    // 410 Gone: the endpoint is disabled and nothing more is sent to it.
    receiver.answers.lock().push_back(410);
    let second = charge(&shop).await;
    pay(&sim, &second).await;
    receiver.wait_for("charge.paid", 4).await;
    let endpoint = poll(
        Duration::from_secs(20),
        "the endpoint to be disabled",
        async || {
            let (_, e) = shop
                .gw
                .get(
                    &format!("/v1/webhook_endpoints/{}", shop.endpoint),
                    &shop.key,
                )
                .await;
            (e["status"] == "disabled").then_some(e)
        },
    )
    .await;
    assert_eq!(
        endpoint["disabled_reason"],
        "the endpoint answered 410 Gone"
    );
    let third = charge(&shop).await;
    pay(&sim, &third).await;
    poll(
        Duration::from_secs(20),
        "the third charge to be paid",
        async || {
            let (_, c) = shop
                .gw
                .get(
                    &format!("/v1/charges/{}", third["id"].as_str().unwrap()),
                    &shop.key,
                )
                .await;
            (c["status"] == "paid").then_some(())
        },
    )
    .await;
    let (_, events) = shop
        .gw
        .get(
            &format!("/v1/events?charge={}", third["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    let paid_event = events["data"][0]["id"].as_str().unwrap();
    let (_, detail) = shop
        .gw
        .get(&format!("/v1/events/{paid_event}"), &shop.key)
        .await;
    assert_eq!(
        detail["deliveries"],
        json!([]),
        "no delivery to a disabled endpoint"
    );
    assert_eq!(receiver.of_type("charge.paid").len(), 4);
}
both_backends!(retries_then_410_disables);

async fn the_reconciler_settles_lost_notifications(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let fast = [
        ("PIXGW_RECONCILE_SCHEDULE", "300ms"),
        ("PIXGW_RECONCILE_GRACE", "0s"),
    ];
    let shop = shop(&db, &sim, &url, &fast).await;
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "skip_webhooks": true})),
    )
    .await;
    let paid = charge(&shop).await;
    pay(&sim, &paid).await;
    let events = receiver.wait_for("charge.paid", 1).await;
    assert_eq!(events[0].json()["data"]["object"]["id"], paid["id"]);
    assert!(
        sim_control(&sim, "/_sim/deliveries?provider=efi", None)
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A charge nobody paid, lapsed at the PSP: expired, once the PSP confirms it was not paid.
    let lapsed = charge(&shop).await;
    sim_control(
        &sim,
        "/_sim/expire",
        Some(json!({"provider": "efi", "reference": lapsed["reference"]})),
    )
    .await;
    let expired = receiver.wait_for("charge.expired", 1).await;
    assert_eq!(expired[0].json()["data"]["object"]["id"], lapsed["id"]);
    // Canceled at the PSP before it was declared expired: no payment can follow the event.
    let at_psp = sim_control(&sim, "/_sim/charges?provider=efi", None).await;
    let lapsed_at_psp = at_psp
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["reference"] == lapsed["reference"])
        .unwrap()
        .clone();
    assert_eq!(
        lapsed_at_psp["status"], "REMOVIDA_PELO_USUARIO_RECEBEDOR",
        "{lapsed_at_psp}"
    );
    // One that can still be paid stays pending however often it is checked.
    let open = charge(&shop).await;
    let (_, fetched) = shop
        .gw
        .get(
            &format!("/v1/charges/{}", open["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(fetched["status"], "pending");
}
both_backends!(the_reconciler_settles_lost_notifications);

async fn endpoint_management(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (_receiver, url) = Receiver::start().await;
    let shop = shop(&db, &sim, &url, &[]).await;
    let path = format!("/v1/webhook_endpoints/{}", shop.endpoint);
    let (status, rotated) = shop
        .gw
        .post(
            &format!("{path}/rotate_secret"),
            &shop.key,
            json!({"overlap_seconds": 3600}),
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != shop.secret);
    assert!(rotated["previous_secret_expires_at"].is_string());
    let (_, read) = shop.gw.get(&path, &shop.key).await;
    assert!(
        read.get("secret").is_none(),
        "the secret is shown only once: {read}"
    );
    let (status, bad) = shop
        .gw
        .post(
            "/v1/webhook_endpoints",
            &shop.key,
            json!({"url": url, "events": ["charge.refunded"]}),
        )
        .await;
    assert_eq!(
        (status, bad["error"]["param"].as_str()),
        (400, Some("events")),
        "{bad}"
    );
    let (status, bad) = shop
        .gw
        .post(
            "/v1/webhook_endpoints",
            &shop.key,
            json!({"url": "ftp://x"}),
        )
        .await;
    assert_eq!(
        (status, bad["error"]["param"].as_str()),
        (400, Some("url")),
        "{bad}"
    );
    let (status, patched) = shop
        .gw
        .send(
            shop.gw
                .request(reqwest::Method::PATCH, &path, Some(&shop.key))
                .json(&json!({"events": ["charge.created", "charge.paid"]})),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["events"], json!(["charge.created", "charge.paid"]));
    let (status, _) = shop
        .gw
        .send(
            shop.gw
                .request(reqwest::Method::DELETE, &path, Some(&shop.key)),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = shop.gw.get(&path, &shop.key).await;
    assert_eq!(status, 404);
}
both_backends!(endpoint_management);

/// Money is never dropped: a payment for a charge the gateway had closed (the PSP still took it)
/// makes it `paid` with `paid_late` and sends `charge.paid`; a payment of less than the amount
/// is `charge.underpaid`, never a plain `charge.paid`.
async fn late_and_short_payments_are_recorded(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let shop = shop(&db, &sim, &url, &[]).await;

    // The gateway marked it expired; the PSP accepts the payment anyway.
    let late = charge(&shop).await;
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE charges SET status = 'expired', next_check_at = NULL WHERE id = $1")
        .bind(late["id"].as_str().unwrap())
        .execute(store.pool())
        .await
        .unwrap();
    pay(&sim, &late).await;
    let paid = receiver.wait_for("charge.paid", 1).await;
    assert_signed(&paid[0], &shop.secret);
    let object = paid[0].json()["data"]["object"].clone();
    assert_eq!(object["id"], late["id"]);
    assert_eq!(object["status"], "paid");
    assert_eq!(object["paid_late"], true);
    assert_eq!(object["underpaid"], false);
    assert_eq!(object["amount_paid"], 1990);
    let (_, read) = shop
        .gw
        .get(
            &format!("/v1/charges/{}", late["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(
        (&read["status"], &read["paid_late"]),
        (&json!("paid"), &json!(true))
    );

    // R$ 10,00 paid of R$ 19,90.
    let short = charge(&shop).await;
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": short["reference"], "amount": 1000})),
    )
    .await;
    let under = receiver.wait_for("charge.underpaid", 1).await;
    assert_signed(&under[0], &shop.secret);
    let object = under[0].json()["data"]["object"].clone();
    assert_eq!(object["id"], short["id"]);
    assert_eq!(object["status"], "paid");
    assert_eq!(object["underpaid"], true);
    assert_eq!(object["amount_mismatch"], true);
    assert_eq!(object["amount_paid"], 1000);
    assert_eq!(object["paid_late"], false);
    notifications_processed(&db, &shop, 2).await;
    let paid_events: Vec<Value> = receiver
        .of_type("charge.paid")
        .iter()
        .map(|r| r.json()["data"]["object"]["id"].clone())
        .collect();
    assert_eq!(
        paid_events,
        [late["id"].clone()],
        "no charge.paid for the short payment"
    );
}
both_backends!(late_and_short_payments_are_recorded);
