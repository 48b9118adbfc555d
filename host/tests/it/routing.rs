//! `provider: "random"` end to end: round robin over three real central-bank adapters at the
//! simulator, per-PSP limits, failover that never leaves two live charges, and one queue shared
//! by two gateways on one PostgreSQL.

use crate::both_backends;
use crate::common;

use std::collections::HashMap;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{sim_control, start_sim};
use serde_json::{Value, json};

const PSPS: [&str; 3] = ["efi", "inter", "sicredi"];

fn options() -> GatewayOptions {
    GatewayOptions {
        env: vec![
            ("PIXGW_RATE_LIMIT".into(), "0".into()),
            ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
            // The soak injects many failures: keep every PSP in the rotation.
            ("PIXGW_BREAKER_THRESHOLD".into(), "1000000".into()),
        ],
        ..Default::default()
    }
}

/// A gateway with the merchant's three PSPs connected in order.
async fn three_psps(db: &TestDb, sim: &psp_sim::Sim) -> (Gateway, String, Vec<String>) {
    let m = create_merchant(db, "Loja A");
    let gw = Gateway::start(db, sim, &PSPS, options()).await;
    let mut ids = Vec::new();
    for psp in PSPS {
        let credential = gw.connect(sim, &m.test_key, psp, &[]).await;
        ids.push(credential["id"].as_str().unwrap().to_owned());
    }
    (gw, m.test_key, ids)
}

async fn routed(gw: &Gateway, key: &str) -> (u16, Value) {
    gw.post(
        "/v1/charges",
        key,
        json!({"amount": 500, "provider": "random"}),
    )
    .await
}

/// References of the charges each PSP's simulator holds, and whether each is live.
async fn at_sim(sim: &psp_sim::Sim) -> HashMap<String, Vec<(String, bool)>> {
    let mut by_reference: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    for psp in PSPS {
        let charges = sim_control(sim, &format!("/_sim/charges?provider={psp}"), None).await;
        for c in charges.as_array().unwrap() {
            let live = c["status"] != "removed"
                && !c["status"].as_str().unwrap_or("").starts_with("REMOVID");
            by_reference
                .entry(c["reference"].as_str().unwrap().to_owned())
                .or_default()
                .push((psp.to_owned(), live));
        }
    }
    by_reference
}

async fn round_robin_and_limits(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (gw, key, ids) = three_psps(&db, &sim).await;
    let mut order = Vec::new();
    for _ in 0..300 {
        let (status, charge) = routed(&gw, &key).await;
        assert_eq!(status, 201, "{charge}");
        assert_eq!(charge["routing"]["mode"], "round_robin");
        assert_eq!(charge["routing"]["selected_provider"], charge["provider"]);
        assert_eq!(
            charge["routing"]["attempted_providers"],
            json!([charge["provider"]])
        );
        order.push(charge["provider"].as_str().unwrap().to_owned());
    }
    for (i, provider) in order.iter().enumerate() {
        assert_eq!(provider, PSPS[i % 3], "charge {i} of {order:?}");
    }
    for psp in PSPS {
        assert_eq!(order.iter().filter(|p| *p == psp).count(), 100);
        let held = sim_control(&sim, &format!("/_sim/charges?provider={psp}"), None).await;
        assert_eq!(
            held.as_array().unwrap().len(),
            100,
            "{psp} holds its 100 charges"
        );
    }

    // The first PSP takes three in a row before the turn passes on.
    let (status, _) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/credentials/{}", ids[0]),
                Some(&key),
            )
            .json(&json!({"route_limit": 3})),
        )
        .await;
    assert_eq!(status, 200);
    let mut order = Vec::new();
    for _ in 0..10 {
        let (_, charge) = routed(&gw, &key).await;
        order.push(charge["provider"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        order,
        [
            "efi", "efi", "efi", "inter", "sicredi", "efi", "efi", "efi", "inter", "sicredi"
        ]
    );
}
both_backends!(round_robin_and_limits);

async fn failover_never_duplicates(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (gw, key, _) = three_psps(&db, &sim).await;
    // Turn 0 is efi's.
    // efi unavailable: inter takes the charge, and the answer says both were tried.
    sim_control(&sim, "/_sim/faults", Some(json!({"provider": "efi", "fail_next": {"count": 1, "status": 503, "path_contains": "/cob/"}}))).await;
    let (status, charge) = routed(&gw, &key).await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["provider"], "inter");
    assert_eq!(
        charge["routing"]["attempted_providers"],
        json!(["efi", "inter"])
    );

    // Turn 1 is inter's. Created, then the reply lost: the same charge is found and used.
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "inter", "drop_reply_after_create": 1})),
    )
    .await;
    let (status, charge) = routed(&gw, &key).await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["provider"], "inter");
    assert_eq!(charge["routing"]["attempted_providers"], json!(["inter"]));
    let reference = charge["reference"].as_str().unwrap();
    assert_eq!(
        at_sim(&sim).await[reference].len(),
        1,
        "exactly one charge at the PSPs"
    );

    // Turn 2 is sicredi's. The reply lost and every query failing too: 502, no other PSP asked.
    let efi_before = sim_control(&sim, "/_sim/requests?provider=efi", None)
        .await
        .as_array()
        .unwrap()
        .len();
    let inter_before = sim_control(&sim, "/_sim/requests?provider=inter", None)
        .await
        .as_array()
        .unwrap()
        .len();
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "sicredi", "drop_reply_after_create": 1,
        "fail_next": {"count": 100, "status": 503, "path_contains": "/cob/", "method": "GET"}})),
    )
    .await;
    let (status, e) = routed(&gw, &key).await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_outcome_unknown", "{e}");
    assert_eq!(e["error"]["attempted_providers"], json!(["sicredi"]));
    let efi_after = sim_control(&sim, "/_sim/requests?provider=efi", None)
        .await
        .as_array()
        .unwrap()
        .len();
    let inter_after = sim_control(&sim, "/_sim/requests?provider=inter", None)
        .await
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        (efi_after, inter_after),
        (efi_before, inter_before),
        "no other PSP was contacted"
    );
}
both_backends!(failover_never_duplicates);

/// At least 2,000 routed charges while latency, errors and lost replies come and go at random:
/// no request ever leaves more than one live charge at the PSPs.
async fn fault_soak(backend: Backend) {
    use rand::Rng;
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (gw, key, _) = three_psps(&db, &sim).await;
    let mut rng = rand::rng();
    let mut created = Vec::new();
    let mut unknown = 0;
    for round in 0..25 {
        // A new mix of faults every 80 charges.
        for psp in PSPS {
            let fault = match rng.random_range(0..5) {
                0 => json!({"provider": psp, "latency_ms": rng.random_range(0..20)}),
                1 => {
                    json!({"provider": psp, "fail_next": {"count": rng.random_range(1..6), "status": 503, "path_contains": "/cob/", "method": "PUT"}})
                }
                2 => json!({"provider": psp, "drop_reply_after_create": rng.random_range(1..4)}),
                3 => {
                    json!({"provider": psp, "fail_next": {"count": rng.random_range(1..4), "status": 500, "path_contains": "/cob/"}})
                }
                _ => {
                    json!({"provider": psp, "latency_ms": 0, "fail_next": {"count": 0}, "drop_reply_after_create": 0})
                }
            };
            sim_control(&sim, "/_sim/faults", Some(fault)).await;
        }
        let batch = (0..80).map(|_| routed(&gw, &key));
        for (status, body) in futures::future::join_all(batch).await {
            match status {
                201 => created.push((
                    body["reference"].as_str().unwrap().to_owned(),
                    body["provider"].as_str().unwrap().to_owned(),
                )),
                502 => unknown += 1,
                other => panic!("round {round}: unexpected {other}: {body}"),
            }
        }
    }
    assert_eq!(created.len() + unknown, 2000);
    assert!(
        created.len() > 1000,
        "most charges go through: {} of 2000",
        created.len()
    );
    let held = at_sim(&sim).await;
    let doubled: Vec<_> = held
        .iter()
        .filter(|(_, charges)| charges.iter().filter(|(_, live)| *live).count() > 1)
        .collect();
    assert!(
        doubled.is_empty(),
        "requests with two live charges: {doubled:?}"
    );
    for (reference, provider) in &created {
        let at = &held[reference];
        assert_eq!(at.len(), 1, "{reference}: {at:?}");
        assert_eq!(
            &at[0].0, provider,
            "the answer names the PSP that holds the charge"
        );
    }
}
both_backends!(fault_soak);

/// Two gateways on one PostgreSQL share one round robin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_one_queue() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Postgres).await;
    let (first, key, _) = three_psps(&db, &sim).await;
    let second = Gateway::start(&db, &sim, &PSPS, options()).await;
    let requests = (0..600).map(|i| {
        let gw = if i % 2 == 0 { &first } else { &second };
        routed(gw, &key)
    });
    let results = futures::future::join_all(requests).await;
    let mut per_psp: HashMap<String, usize> = HashMap::new();
    for (status, body) in results {
        assert_eq!(status, 201, "{body}");
        *per_psp
            .entry(body["provider"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_psp, PSPS.iter().map(|p| (p.to_string(), 200)).collect());
    for psp in PSPS {
        let held = sim_control(&sim, &format!("/_sim/charges?provider={psp}"), None).await;
        assert_eq!(held.as_array().unwrap().len(), 200);
    }
}

/// A create whose outcome stayed unknown, and that nobody retried, is settled later: the charge
/// that turned up at the PSP is canceled there, since nobody was given its code.
async fn an_orphan_is_canceled_at_the_psp(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let mut opts = options();
    // Longer than the request takes to give up on the unknown outcome.
    opts.env.push(("PIXGW_ORPHAN_AGE".into(), "5s".into()));
    opts.env.push(("PIXGW_WORKER_POLL".into(), "100ms".into()));
    let gw = Gateway::start(&db, &sim, &["efi"], opts).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "drop_reply_after_create": 1,
        "fail_next": {"count": 3, "status": 503, "path_contains": "/cob/", "method": "GET"}})),
    )
    .await;
    let (status, e) = routed(&gw, &m.test_key).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (502, Some("psp_outcome_unknown")),
        "{e}"
    );
    let held = sim_control(&sim, "/_sim/charges?provider=efi", None).await;
    assert_eq!(
        held.as_array().unwrap().len(),
        1,
        "the PSP made the charge: {held}"
    );
    common::poll(
        std::time::Duration::from_secs(20),
        "the orphan to be settled",
        async || {
            let (_, list) = gw.get("/v1/charges", &m.test_key).await;
            (list["data"][0]["status"] == "canceled").then_some(())
        },
    )
    .await;
    let held = sim_control(&sim, "/_sim/charges?provider=efi", None).await;
    assert_eq!(
        held[0]["status"], "REMOVIDA_PELO_USUARIO_RECEBEDOR",
        "canceled at the PSP: {held}"
    );
}
both_backends!(an_orphan_is_canceled_at_the_psp);

/// PSPs that need a payer field the request lacks are skipped before any attempt: they receive
/// no request at all; with none left, a 422 says why.
async fn psps_needing_missing_payer_fields_are_skipped(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["mercadopago", "pagbank", "efi"], options()).await;
    for psp in ["mercadopago", "pagbank", "efi"] {
        gw.connect(&sim, &m.test_key, psp, &[]).await;
    }
    let count = async |psp: &str| {
        sim_control(&sim, &format!("/_sim/requests?provider={psp}"), None)
            .await
            .as_array()
            .unwrap()
            .len()
    };
    let (mp, pb) = (count("mercadopago").await, count("pagbank").await);
    for _ in 0..6 {
        let (status, charge) = routed(&gw, &m.test_key).await;
        assert_eq!(status, 201, "{charge}");
        assert_eq!(
            charge["provider"], "efi",
            "no e-mail, no CPF: only efi takes it"
        );
    }
    assert_eq!(
        (count("mercadopago").await, count("pagbank").await),
        (mp, pb),
        "they received no request"
    );
    // With an e-mail, Mercado Pago is back in the turn; PagBank still needs the CPF.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..4 {
        let body =
            json!({"amount": 500, "provider": "random", "payer": {"email": "fulana@example.com"}});
        let (status, charge) = gw.post("/v1/charges", &m.test_key, body).await;
        assert_eq!(status, 201, "{charge}");
        seen.insert(charge["provider"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, ["efi", "mercadopago"].map(String::from).into());

    // A merchant whose only PSP needs the CPF.
    let other = create_merchant(&db, "Loja B");
    gw.connect(&sim, &other.test_key, "pagbank", &[]).await;
    let (status, e) = routed(&gw, &other.test_key).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (422, Some("no_eligible_provider")),
        "{e}"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pagbank (needs payer.document)"),
        "{e}"
    );
}
both_backends!(psps_needing_missing_payer_fields_are_skipped);
