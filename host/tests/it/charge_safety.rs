//! Charges under faults, through the real binary on both backends: a retry after an unknown
//! outcome resumes the same charge at the same PSP (routed or not) and never answers with an
//! unfinished one; an idempotency key stays locked for as long as its request runs; a slow PSP
//! fills only its own call slots (503 `gateway_busy` beyond them) while other PSPs keep
//! charging; and the reconciler checks each charge on its own, so a PSP that hangs delays no
//! one else's, and a killed gateway's leases are taken up within seconds of a restart.

use crate::both_backends;
use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{poll, sim_control, start_sim};
use serde_json::{Value, json};

fn options(extra: &[(&str, &str)]) -> GatewayOptions {
    GatewayOptions::with_env(
        &[
            ("PIXGW_RATE_LIMIT", "0"),
            ("PIXGW_RECONCILE_SCHEDULE", "1h"),
            ("PIXGW_BREAKER_THRESHOLD", "1000000"),
        ],
        extra,
    )
}

/// Each PSP's charges at the simulator, by reference.
async fn at_sim(sim: &psp_sim::Sim, psps: &[&str]) -> HashMap<String, Vec<String>> {
    let mut by_reference: HashMap<String, Vec<String>> = HashMap::new();
    for psp in psps {
        let charges = sim_control(sim, &format!("/_sim/charges?provider={psp}"), None).await;
        for c in charges.as_array().unwrap() {
            by_reference
                .entry(c["reference"].as_str().unwrap().to_owned())
                .or_default()
                .push(psp.to_string());
        }
    }
    by_reference
}

/// Requests the simulator holds now for `psp` (the `hold` fault).
async fn held(sim: &psp_sim::Sim, psp: &str) -> usize {
    let requests = sim_control(sim, &format!("/_sim/requests?provider={psp}"), None).await;
    requests
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "held" && r["status"].is_null())
        .count()
}

async fn wait_held(sim: &psp_sim::Sim, psp: &str, count: usize) {
    poll(
        Duration::from_secs(20),
        &format!("{count} held request(s) at {psp}"),
        async || (held(sim, psp).await >= count).then_some(()),
    )
    .await;
}

async fn fault(sim: &psp_sim::Sim, body: Value) {
    sim_control(sim, "/_sim/faults", Some(body)).await;
}

fn keyed(
    gw: &Gateway,
    api_key: &str,
    idempotency_key: &str,
    body: Value,
) -> reqwest::RequestBuilder {
    gw.request(reqwest::Method::POST, "/v1/charges", Some(api_key))
        .header("Idempotency-Key", idempotency_key)
        .json(&body)
}

/// The unknown outcome of a routed charge is resumed by the retry at the same PSP with the same
/// reference — not placed at the next PSP in turn, and never answered with a `creating` row.
async fn a_routed_retry_resumes_at_the_same_psp(backend: Backend) {
    const PSPS: [&str; 3] = ["efi", "inter", "sicredi"];
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &PSPS, options(&[])).await;
    for psp in PSPS {
        gw.connect(&sim, &m.test_key, psp, &[]).await;
    }
    let body = json!({"amount": 700, "provider": "random"});

    // Turn 0 is efi's: created, the reply lost, and every query failing.
    fault(
        &sim,
        json!({"provider": "efi", "drop_reply_after_create": 1,
        "fail_next": {"count": 1000, "status": 503, "path_contains": "/cob/", "method": "GET"}}),
    )
    .await;
    let (status, e) = gw
        .send(keyed(&gw, &m.test_key, "order-1", body.clone()))
        .await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_outcome_unknown", "{e}");
    assert_eq!(e["error"]["attempted_providers"], json!(["efi"]));
    let placed = at_sim(&sim, &PSPS).await;
    assert_eq!(placed.len(), 1, "{placed:?}");
    let (reference, holders) = placed.into_iter().next().unwrap();
    assert_eq!(holders, ["efi"]);

    // Still unknown on a retry: the same answer, and no other PSP is asked to create.
    let (status, e) = gw
        .send(keyed(&gw, &m.test_key, "order-1", body.clone()))
        .await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_outcome_unknown", "{e}");
    assert_eq!(at_sim(&sim, &PSPS).await.len(), 1);

    // The PSP answers again: the retry finds efi's charge and finishes it.
    fault(&sim, json!({"provider": "efi", "fail_next": {"count": 0}})).await;
    let (status, charge) = gw
        .send(keyed(&gw, &m.test_key, "order-1", body.clone()))
        .await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["status"], "pending", "{charge}");
    assert_eq!(charge["provider"], "efi");
    assert_eq!(charge["reference"], reference.as_str());
    assert_eq!(charge["routing"]["selected_provider"], "efi");
    assert!(charge["pix"]["copy_paste"].is_string(), "{charge}");
    let (status, read) = gw
        .get(
            &format!("/v1/charges/{}", charge["id"].as_str().unwrap()),
            &m.test_key,
        )
        .await;
    assert_eq!((status, &read["id"]), (200, &charge["id"]));
    assert_eq!(at_sim(&sim, &PSPS).await.len(), 1, "one charge at the PSPs");
    // And the key now replays that answer.
    let replay = keyed(&gw, &m.test_key, "order-1", body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<Value>().await.unwrap(), charge);

    // A charge that never reached its PSP (reply lost, and the PSP has no such charge) is
    // placed afresh on retry: a new turn, still one charge.
    fault(&sim, json!({"provider": "inter", "fail_next": {"count": 1, "status": 503, "path_contains": "/cob/", "method": "PUT"}})).await;
    fault(&sim, json!({"provider": "sicredi", "fail_next": {"count": 1, "status": 503, "path_contains": "/cob/", "method": "PUT"}})).await;
    fault(&sim, json!({"provider": "efi", "fail_next": {"count": 1, "status": 503, "path_contains": "/cob/", "method": "PUT"}})).await;
    let (status, e) = gw
        .send(keyed(&gw, &m.test_key, "order-2", body.clone()))
        .await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_unavailable", "{e}");
    let (status, charge) = gw
        .send(keyed(&gw, &m.test_key, "order-2", body.clone()))
        .await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["status"], "pending");
    let placed = at_sim(&sim, &PSPS).await;
    assert_eq!(placed[charge["reference"].as_str().unwrap()].len(), 1);
    assert_eq!(placed.len(), 2, "{placed:?}");
}
both_backends!(a_routed_retry_resumes_at_the_same_psp);

/// A retry that finds its charge already paid at the PSP records the payment even when the
/// PSP's answer carries no usable copy-and-paste code: money moved, so the charge is `paid`
/// with one `charge.paid`, never `failed`.
async fn a_resumed_charge_paid_with_a_corrupt_code_is_paid(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], options(&[])).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let body = json!({"amount": 700, "provider": "efi"});
    fault(
        &sim,
        json!({"provider": "efi", "drop_reply_after_create": 1,
        "fail_next": {"count": 1000, "status": 503, "path_contains": "/cob/", "method": "GET"}}),
    )
    .await;
    let (status, e) = gw
        .send(keyed(&gw, &m.test_key, "order-1", body.clone()))
        .await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_outcome_unknown", "{e}");
    let reference = at_sim(&sim, &["efi"]).await.into_keys().next().unwrap();

    // Paid meanwhile; from now on the PSP's answers carry a corrupt code.
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": reference})),
    )
    .await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": "efi", "flags": {"invalid_pix_copia_e_cola": true}})),
    )
    .await;
    fault(&sim, json!({"provider": "efi", "fail_next": {"count": 0}})).await;
    let (status, charge) = gw
        .send(keyed(&gw, &m.test_key, "order-1", body.clone()))
        .await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["status"], "paid", "{charge}");
    assert_eq!(charge["reference"], reference.as_str());
    let id = charge["id"].as_str().unwrap();
    let events = poll(
        Duration::from_secs(10),
        "the charge.paid event",
        async || {
            let (_, events) = gw
                .get(
                    &format!("/v1/events?charge={id}&type=charge.paid"),
                    &m.test_key,
                )
                .await;
            (events["data"].as_array().is_some_and(|e| !e.is_empty())).then_some(events)
        },
    )
    .await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");
    assert_eq!(events["data"][0]["data"]["object"]["id"], id, "{events}");
}
both_backends!(a_resumed_charge_paid_with_a_corrupt_code_is_paid);

/// A request that runs longer than the idempotency lock keeps its key: the heartbeat renews
/// the lock, so a retry meanwhile is told to wait instead of running a second request.
async fn the_idempotency_lock_is_held_while_the_request_runs(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(
        &db,
        &sim,
        &["efi"],
        options(&[("PIXGW_IDEMPOTENCY_LOCK", "1s")]),
    )
    .await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let body = json!({"amount": 990, "provider": "efi"});
    fault(
        &sim,
        json!({"provider": "efi", "hold": {"path_contains": "/cob/", "method": "PUT"}}),
    )
    .await;
    let first = tokio::spawn(keyed(&gw, &m.test_key, "order-9", body.clone()).send());
    wait_held(&sim, "efi", 1).await;
    // Several lock periods pass while the PSP holds the create.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let (status, busy) = gw
        .send(keyed(&gw, &m.test_key, "order-9", body.clone()))
        .await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "idempotency_key_in_use");
    fault(&sim, json!({"provider": "efi", "release_held": true})).await;
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    let (status, replay) = gw.send(keyed(&gw, &m.test_key, "order-9", body)).await;
    assert_eq!((status, &replay), (201, &first));
    assert_eq!(at_sim(&sim, &["efi"]).await.len(), 1);
}
both_backends!(the_idempotency_lock_is_held_while_the_request_runs);

/// efi hangs: its two call slots fill, a third efi charge waits its turn for the queue timeout
/// and gets 503 `gateway_busy` with `Retry-After`, and inter's charges keep being created.
async fn a_slow_psp_fills_only_its_own_slots(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(
        &db,
        &sim,
        &["efi", "inter"],
        options(&[
            ("PIXGW_MAX_ADAPTER_CALLS", "4"),
            ("PIXGW_MAX_ADAPTER_CALLS_PER_PSP", "2"),
            ("PIXGW_ADAPTER_QUEUE_TIMEOUT", "1s"),
        ]),
    )
    .await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    gw.connect(&sim, &m.test_key, "inter", &[]).await;
    let at = |provider: &str| json!({"amount": 1500, "provider": provider});
    fault(
        &sim,
        json!({"provider": "efi", "hold": {"path_contains": "/cob/", "method": "PUT"}}),
    )
    .await;
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let request = gw
                .request(reqwest::Method::POST, "/v1/charges", Some(&m.test_key))
                .json(&at("efi"));
            tokio::spawn(request.send())
        })
        .collect();
    wait_held(&sim, "efi", 2).await;

    let refused = gw
        .request(reqwest::Method::POST, "/v1/charges", Some(&m.test_key))
        .json(&at("efi"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "gateway_busy", "{refused}");
    assert_eq!(refused["error"]["provider"], "efi");
    assert_eq!(
        held(&sim, "efi").await,
        2,
        "the refused charge never reached efi"
    );

    for _ in 0..6 {
        let (status, charge) = gw.post("/v1/charges", &m.test_key, at("inter")).await;
        assert_eq!(status, 201, "{charge}");
        assert_eq!(charge["provider"], "inter");
    }

    fault(&sim, json!({"provider": "efi", "release_held": true})).await;
    for request in slow {
        assert_eq!(request.await.unwrap().unwrap().status(), 201);
    }
    let (status, charge) = gw.post("/v1/charges", &m.test_key, at("efi")).await;
    assert_eq!(status, 201, "{charge}");
}
both_backends!(a_slow_psp_fills_only_its_own_slots);

async fn status_of(gw: &Gateway, key: &str, charge: &Value) -> String {
    let (_, read) = gw
        .get(
            &format!("/v1/charges/{}", charge["id"].as_str().unwrap()),
            key,
        )
        .await;
    read["status"].as_str().unwrap().to_owned()
}

async fn wait_status(gw: &Gateway, key: &str, charge: &Value, status: &str, within: Duration) {
    poll(within, &format!("the charge to be {status}"), async || {
        (status_of(gw, key, charge).await == status).then_some(())
    })
    .await;
}

/// The reconciler checks charges one by one: a PSP that hangs on a query holds up its own
/// charge only; and after `kill -9` mid-check, the restarted gateway takes the charge up again
/// within a short lease instead of a fixed two minutes.
async fn the_reconciler_is_not_held_up(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let fast = [
        ("PIXGW_RECONCILE_SCHEDULE", "300ms"),
        ("PIXGW_WORKER_POLL", "100ms"),
        ("PIXGW_RECONCILE_LEASE", "1s"),
    ];
    let gw = Gateway::start(&db, &sim, &["efi", "inter"], options(&fast)).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    gw.connect(&sim, &m.test_key, "inter", &[]).await;
    for psp in ["efi", "inter"] {
        fault(&sim, json!({"provider": psp, "skip_webhooks": true})).await;
    }
    // efi hangs on queries: its charge's check stays in flight.
    fault(
        &sim,
        json!({"provider": "efi", "hold": {"path_contains": "/cob/", "method": "GET"}}),
    )
    .await;
    let (status, stuck) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{stuck}");
    wait_held(&sim, "efi", 1).await;

    let (status, other) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 200, "provider": "inter"}),
        )
        .await;
    assert_eq!(status, 201, "{other}");
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "inter", "reference": other["reference"]})),
    )
    .await;
    wait_status(&gw, &m.test_key, &other, "paid", Duration::from_secs(10)).await;
    assert_eq!(status_of(&gw, &m.test_key, &stuck).await, "pending");

    // Paid at efi while its check hangs; the gateway dies mid-check.
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": stuck["reference"]})),
    )
    .await;
    gw.kill().await;
    fault(&sim, json!({"provider": "efi", "release_held": true})).await;
    let gw = Gateway::start(&db, &sim, &["efi", "inter"], options(&fast)).await;
    wait_status(&gw, &m.test_key, &stuck, "paid", Duration::from_secs(10)).await;
}
both_backends!(the_reconciler_is_not_held_up);

/// Leaves one orphan at efi: its create's answer is lost and the queries that follow fail, so
/// the request ends `psp_outcome_unknown` and nobody retries it. The simulator sends no
/// notifications, so only the reconciler can learn what happened. Returns the orphan's
/// reference at the PSP.
async fn orphan_at_efi(sim: &psp_sim::Sim, gw: &Gateway, key: &str) -> String {
    fault(
        sim,
        json!({"provider": "efi", "drop_reply_after_create": 1, "skip_webhooks": true,
        "fail_next": {"count": 3, "status": 503, "path_contains": "/cob/", "method": "GET"}}),
    )
    .await;
    let (status, e) = gw
        .post(
            "/v1/charges",
            key,
            json!({"amount": 700, "provider": "efi"}),
        )
        .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (502, Some("psp_outcome_unknown")),
        "{e}"
    );
    let held = sim_control(sim, "/_sim/charges?provider=efi", None).await;
    assert_eq!(
        held.as_array().unwrap().len(),
        1,
        "the PSP made the charge: {held}"
    );
    // The failures the request did not use up are not the reconciler's.
    fault(sim, json!({"provider": "efi", "fail_next": {"count": 0}})).await;
    held[0]["reference"].as_str().unwrap().to_owned()
}

/// Waits for the orphan to be settled paid, then checks the merchant heard of it exactly once
/// and that the PSP still holds it paid (nothing was canceled over the payment).
async fn settled_paid_once(sim: &psp_sim::Sim, gw: &Gateway, key: &str) {
    let charge = poll(
        Duration::from_secs(20),
        "the orphan to be settled",
        async || {
            let (_, list) = gw.get("/v1/charges", key).await;
            let first = list["data"][0].clone();
            (!first.is_null()).then_some(first)
        },
    )
    .await;
    assert_eq!(charge["status"], "paid", "{charge}");
    assert_eq!(charge["paid_late"], false, "{charge}");
    let id = charge["id"].as_str().unwrap();
    // One more reconciler round may run meanwhile; it must change nothing.
    let (_, events) = gw
        .get(&format!("/v1/events?charge={id}&type=charge.paid"), key)
        .await;
    assert_eq!(
        events["data"].as_array().map(Vec::len),
        Some(1),
        "exactly one charge.paid: {events}"
    );
    let held = sim_control(sim, "/_sim/charges?provider=efi", None).await;
    assert_eq!(held[0]["status"], "CONCLUIDA", "paid at the PSP: {held}");
}

fn orphan_options() -> GatewayOptions {
    options(&[
        // Longer than the request takes to give up on the unknown outcome.
        ("PIXGW_ORPHAN_AGE", "5s"),
        ("PIXGW_WORKER_POLL", "100ms"),
    ])
}

/// An orphan paid at the PSP before the reconciler gets to it is paid, not canceled: the query
/// comes first, and the merchant receives one `charge.paid`.
async fn an_orphan_already_paid_is_paid(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], orphan_options()).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let reference = orphan_at_efi(&sim, &gw, &m.test_key).await;
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": reference})),
    )
    .await;
    settled_paid_once(&sim, &gw, &m.test_key).await;
}
both_backends!(an_orphan_already_paid_is_paid);

/// An orphan paid between the reconciler's query (still open) and its cancel: the PSP refuses
/// to cancel a paid charge, and that refusal is read as what it is — the charge is paid.
async fn an_orphan_paid_before_its_cancel_is_paid(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], orphan_options()).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let reference = orphan_at_efi(&sim, &gw, &m.test_key).await;
    // The reconciler's cancel (efi: `PATCH /v2/cob/{txid}`) waits at the PSP while the payer pays.
    fault(
        &sim,
        json!({"provider": "efi", "hold": {"path_contains": "/cob/", "method": "PATCH"}}),
    )
    .await;
    wait_held(&sim, "efi", 1).await;
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": reference})),
    )
    .await;
    fault(&sim, json!({"provider": "efi", "release_held": true})).await;
    settled_paid_once(&sim, &gw, &m.test_key).await;
    let requests = sim_control(&sim, "/_sim/requests?provider=efi", None).await;
    let cancels: Vec<_> = requests
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "PATCH")
        .map(|r| r["status"].clone())
        .collect();
    assert!(
        !cancels.is_empty() && cancels.iter().all(|s| s.as_u64().is_some_and(|s| s >= 400)),
        "the PSP refused every cancel: {cancels:?}"
    );
}
both_backends!(an_orphan_paid_before_its_cancel_is_paid);
