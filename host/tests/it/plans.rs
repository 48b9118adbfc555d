//! Plans and limits on both backends: each limit at its boundary through the real binary (the
//! exact refusal, `GET /v1/usage`, the operator's `merchant set-plan`), twenty requests racing
//! for the last place (one gateway, and two gateways on one PostgreSQL database), the month
//! turning at midnight in São Paulo, the test charges' fair-use cap, and log retention swept
//! with a controlled clock.

use crate::both_backends;
use crate::common;

use common::gateway::{
    Backend, Gateway, GatewayOptions, TestDb, cli, cli_output, create_merchant_on,
};
use common::records::{
    behind_held_rows, charge, credential, endpoint, events_of, live_charges_this_month, store_on,
    until_locks_wait,
};
use common::start_sim;
use pixgw::domain::Environment;
use pixgw::plans::{LimitReached, PlanId, Resource};
use pixgw::store::charges::{ChargeRecord, ChargeState, PspUpdate};
use pixgw::store::credentials::CredentialRecord;
use pixgw::store::{Store, now_ms, parse_rfc3339};
use serde_json::{Value, json};

fn options() -> GatewayOptions {
    GatewayOptions {
        env: vec![
            ("PIXGW_RATE_LIMIT".into(), "0".into()),
            ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
            ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
        ],
        ..Default::default()
    }
}

/// Connects the simulator's production account at efi for a live key.
async fn connect_live(gw: &Gateway, sim: &psp_sim::Sim, live_key: &str) {
    let fields = sim.provider("efi").unwrap().live_credentials.unwrap();
    let (status, body) = gw
        .post(
            "/v1/credentials",
            live_key,
            json!({"provider": "efi", "fields": fields}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

fn charge_body() -> Value {
    json!({"amount": 1990, "provider": "efi"})
}

/// The `error` object without its request id, which differs on every answer.
fn error_of(body: &Value) -> Value {
    let mut error = body["error"].clone();
    let id = error
        .as_object_mut()
        .and_then(|e| e.remove("request_id"))
        .unwrap_or_else(|| panic!("an error with a request id: {body}"));
    assert!(id.as_str().is_some_and(|s| !s.is_empty()), "{body}");
    error
}

fn plan_error(message: &str, hint: &str, fields: Value) -> Value {
    let mut error = json!({
        "type": "permission_error",
        "code": "plan_limit_reached",
        "message": message,
        "hint": hint,
    });
    for (k, v) in fields.as_object().unwrap() {
        error[k] = v.clone();
    }
    error
}

/// The `Error: …` line a failed CLI command printed (a backtrace may follow it).
fn error_line(output: &std::process::Output) -> String {
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find(|l| l.starts_with("Error: "))
        .unwrap_or_else(|| panic!("no error line in {stderr}"))
        .to_owned()
}

/// Creates a payment link; the status and body.
async fn link(gw: &Gateway, key: &str, name: &str) -> (u16, Value) {
    gw.post(
        "/v1/payment_links",
        key,
        json!({"name": name, "amount": 5000, "provider": "efi"}),
    )
    .await
}

both_backends!(every_limit_at_its_boundary);
async fn every_limit_at_its_boundary(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &["efi"], options()).await;
    // Free: the CLI made one test and one live key, which Free allows (one per environment).
    let m = create_merchant_on(&db, "Loja", "free");
    let month = pixgw::plans::month_of(now_ms());

    let (status, usage) = gw.get("/v1/usage", &m.test_key).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage,
        json!({
            "plan": {"id": "free", "name": "Free", "monthly_price_brl": 0, "phone_cashier": false,
                     "sso": false, "log_retention_days": 1},
            "month": month,
            "environment": "test",
            "usage": {
                "live_charges": {"used": 0, "limit": 10},
                "test_charges": {"used": 0, "limit": 1000},
                "payment_links": {"used": 0, "limit": 3},
                "team_members": {"used": 0, "limit": 1},
                "psps": {"used": 0, "limit": 1},
                "api_keys": {"used": 1, "limit": 1},
                "webhook_endpoints": {"used": 0, "limit": 1},
            }
        })
    );

    // API keys: the second test key is refused, and the operator is told how to allow it.
    let refused = cli_output(
        &db,
        &[],
        &["key", "create", "--merchant", &m.id, "--env", "test"],
    );
    assert!(!refused.status.success());
    assert_eq!(
        error_line(&refused),
        format!(
            "Error: The Free plan allows 1 active API keys in test and 1 are active. To allow \
             more: pixgw merchant set-plan {} pro",
            m.id
        )
    );

    // Connected PSPs: one per environment.
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let fields = sim.provider("efi").unwrap().credentials;
    let (status, body) = gw
        .post(
            "/v1/credentials",
            &m.test_key,
            json!({"provider": "efi", "fields": fields, "label": "second"}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        error_of(&body),
        plan_error(
            "The Free plan allows 1 connected PSP credentials in test and 1 are connected.",
            "Remove a PSP credential, or move to the Pro plan (R$ 97/month: 2) on the dashboard's Plan page.",
            json!({"plan": "free", "resource": "psps", "limit": 1, "usage": 1, "upgrade_to": "pro"}),
        )
    );
    connect_live(&gw, &sim, &m.live_key).await;

    // Webhook endpoints: one.
    let (receiver, _rx) = common::webhook_receiver("/hooks").await;
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &m.test_key,
            json!({"url": receiver}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &m.test_key,
            json!({"url": receiver}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        error_of(&body),
        plan_error(
            "The Free plan allows 1 webhook endpoints in test and 1 exist.",
            "Delete a webhook endpoint, or move to the Basic plan (R$ 47/month: 2) on the dashboard's Plan page.",
            json!({"plan": "free", "resource": "webhook_endpoints", "limit": 1, "usage": 1, "upgrade_to": "basic"}),
        )
    );

    // Payment links: three active; a deactivated one frees its place, and activating it again
    // is a creation like any other.
    let mut links = Vec::new();
    for name in ["Um", "Dois", "Três"] {
        let (status, body) = link(&gw, &m.test_key, name).await;
        assert_eq!(status, 201, "{body}");
        links.push(body["id"].as_str().unwrap().to_owned());
    }
    let links_full = plan_error(
        "The Free plan allows 3 active payment links in test and 3 are active.",
        "Deactivate a payment link, or move to the Pro plan (R$ 97/month: 50) on the dashboard's Plan page.",
        json!({"plan": "free", "resource": "payment_links", "limit": 3, "usage": 3, "upgrade_to": "pro"}),
    );
    let (status, body) = link(&gw, &m.test_key, "Quatro").await;
    assert_eq!((status, error_of(&body)), (403, links_full.clone()));
    let (status, _) = gw
        .post(
            &format!("/v1/payment_links/{}/deactivate", links[0]),
            &m.test_key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = link(&gw, &m.test_key, "Quatro").await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/payment_links/{}", links[0]),
                Some(&m.test_key),
            )
            .json(&json!({"active": true})),
        )
        .await;
    assert_eq!((status, error_of(&body)), (403, links_full));
    // An inactive link is not counted: it can be created.
    let (status, body) = gw
        .post(
            "/v1/payment_links",
            &m.test_key,
            json!({"name": "Rascunho", "amount": 100, "provider": "efi", "active": false}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    // Live charges: the 9th and the 10th are made, the 11th is refused before any PSP is asked.
    for n in 1..=10 {
        let (status, body) = gw.post("/v1/charges", &m.live_key, charge_body()).await;
        assert_eq!(status, 201, "live charge {n}: {body}");
    }
    let at_psp = common::sim_control(&sim, "/_sim/charges?provider=efi", None).await;
    let request = gw
        .request(reqwest::Method::POST, "/v1/charges", Some(&m.live_key))
        .header("idempotency-key", "pedido-11")
        .json(&charge_body());
    let (status, body) = gw.send(request).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        error_of(&body),
        plan_error(
            "The Free plan allows 10 live charges per month (São Paulo time) and this month has 10.",
            "The count starts again on the 1st of next month (São Paulo time), or move to the Basic plan (R$ 47/month: 500) on the dashboard's Plan page.",
            json!({"plan": "free", "resource": "live_charges", "limit": 10, "usage": 10, "upgrade_to": "basic"}),
        )
    );
    assert_eq!(
        common::sim_control(&sim, "/_sim/charges?provider=efi", None).await,
        at_psp,
        "the PSP was not asked"
    );
    // Test charges have their own count.
    let (status, body) = gw.post("/v1/charges", &m.test_key, charge_body()).await;
    assert_eq!(status, 201, "{body}");

    // The team: one person.
    let member = |email: &str| {
        cli_output(
            &db,
            &[("PIXGW_MEMBER_PASSWORD", "correct horse battery staple")],
            &[
                "member",
                "add",
                "--merchant",
                &m.id,
                "--email",
                email,
                "--name",
                "Ana",
                "--role",
                "owner",
            ],
        )
    };
    assert!(member("ana@loja.com.br").status.success());
    // A role change of a member is no new person.
    assert!(member("ana@loja.com.br").status.success());
    let refused = member("bia@loja.com.br");
    assert_eq!(
        error_line(&refused),
        format!(
            "Error: The Free plan allows 1 people on the team and it has 1 (members and open \
             invitations). To allow more: pixgw merchant set-plan {} pro",
            m.id
        )
    );

    let (_, usage) = gw.get("/v1/usage", &m.live_key).await;
    assert_eq!(usage["environment"], "live");
    assert_eq!(
        usage["usage"],
        json!({
            "live_charges": {"used": 10, "limit": 10},
            "test_charges": {"used": 1, "limit": 1000},
            "payment_links": {"used": 0, "limit": 3},
            "team_members": {"used": 1, "limit": 1},
            "psps": {"used": 1, "limit": 1},
            "api_keys": {"used": 1, "limit": 1},
            "webhook_endpoints": {"used": 0, "limit": 1},
        })
    );

    // The operator moves the merchant up: the refused request, retried with its key, goes
    // through (a refusal is not the key's final answer).
    assert_eq!(
        cli(&db, &[], &["merchant", "set-plan", &m.id, "Basic"]),
        format!("{}: Free → Basic", m.id)
    );
    let request = gw
        .request(reqwest::Method::POST, "/v1/charges", Some(&m.live_key))
        .header("idempotency-key", "pedido-11")
        .json(&charge_body());
    let (status, body) = gw.send(request).await;
    assert_eq!(status, 201, "{body}");
    let list = cli(&db, &[], &["merchant", "list"]);
    assert!(list.contains(&m.id) && list.contains("basic"), "{list}");
    let store = Store::connect(&db.url).await.unwrap();
    let changes: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT actor_kind, action, summary FROM audit_log WHERE merchant_id = $1 \
         AND action = 'plan.change'",
    )
    .bind(&m.id)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(
        changes,
        [(
            "system".into(),
            "plan.change".into(),
            "plan changed from Free to Basic".into()
        )]
    );

    // Downgrade: what exists keeps working, nothing new beyond the smaller plan.
    cli(&db, &[], &["merchant", "set-plan", &m.id, "enterprise"]);
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &m.test_key,
            json!({"url": receiver}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    cli(&db, &[], &["merchant", "set-plan", &m.id, "free"]);
    let (_, endpoints) = gw.get("/v1/webhook_endpoints", &m.test_key).await;
    assert_eq!(
        endpoints["data"].as_array().unwrap().len(),
        2,
        "{endpoints}"
    );
    let (status, body) = gw
        .post(
            "/v1/webhook_endpoints",
            &m.test_key,
            json!({"url": receiver}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["usage"], 2);
    let (status, body) = gw.post("/v1/charges", &m.live_key, charge_body()).await;
    assert_eq!(
        (status, &body["error"]["usage"]),
        (403, &json!(11)),
        "{body}"
    );
    // An unknown plan is refused, naming the plans.
    let wrong = cli_output(&db, &[], &["merchant", "set-plan", &m.id, "gold"]);
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains(
            "\"gold\" is not a plan: free, basic, pro, business, scale, enterprise, ultra, ultra_2"
        ),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}

/// Nine live charges, then twenty requests at once through `gateways` (round robin): exactly
/// one is made; the others get the plan's refusal.
async fn race_for_the_last_charge(gateways: &[&Gateway], live_key: &str) {
    for n in 1..=9 {
        let (status, body) = gateways[n % gateways.len()]
            .post("/v1/charges", live_key, charge_body())
            .await;
        assert_eq!(status, 201, "charge {n}: {body}");
    }
    let answers = futures::future::join_all((0..20).map(|i| {
        let gw = gateways[i % gateways.len()];
        async move { gw.post("/v1/charges", live_key, charge_body()).await }
    }))
    .await;
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 403)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(created, 1, "{answers:?}");
    assert_eq!(refused.len(), 19, "{answers:?}");
    for body in refused {
        assert_eq!(body["error"]["code"], "plan_limit_reached");
        assert_eq!(body["error"]["usage"], 10);
    }
    let (_, list) = gateways[0].get("/v1/charges?limit=100", live_key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 10);
    let (_, usage) = gateways[0].get("/v1/usage", live_key).await;
    assert_eq!(
        usage["usage"]["live_charges"],
        json!({"used": 10, "limit": 10})
    );
}

/// Two active links, then twenty at once: exactly one more.
async fn race_for_the_last_link(gateways: &[&Gateway], key: &str) {
    for name in ["Um", "Dois"] {
        let (status, body) = link(gateways[0], key, name).await;
        assert_eq!(status, 201, "{body}");
    }
    let answers = futures::future::join_all((0..20).map(|i| {
        let gw = gateways[i % gateways.len()];
        async move { link(gw, key, &format!("Link {i}")).await }
    }))
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{answers:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 403).count(),
        19,
        "{answers:?}"
    );
    let (_, list) = gateways[0].get("/v1/payment_links?limit=100", key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 3);
}

both_backends!(twenty_at_nine_of_ten_create_exactly_one);
async fn twenty_at_nine_of_ten_create_exactly_one(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &["efi"], options()).await;
    let m = create_merchant_on(&db, "Loja", "free");
    connect_live(&gw, &sim, &m.live_key).await;
    race_for_the_last_charge(&[&gw], &m.live_key).await;
    race_for_the_last_link(&[&gw], &m.live_key).await;
}

/// Two gateways on one PostgreSQL database, the requests split between them: the limit holds
/// across processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_one_postgres_create_exactly_one() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Postgres).await;
    let a = Gateway::start(&db, &sim, &["efi"], options()).await;
    let b = Gateway::start(&db, &sim, &["efi"], options()).await;
    assert_ne!(a.url, b.url);
    let m = create_merchant_on(&db, "Loja", "free");
    connect_live(&a, &sim, &m.live_key).await;
    race_for_the_last_charge(&[&a, &b], &m.live_key).await;
    race_for_the_last_link(&[&a, &b], &m.live_key).await;
}

// ---- The store, with times chosen by the test ----

fn ms(text: &str) -> i64 {
    parse_rfc3339(text).unwrap()
}

/// The Free plan's refusal of an eleventh live charge in a month.
fn free_live_month_full() -> LimitReached {
    LimitReached {
        plan: PlanId::Free,
        resource: Resource::LiveCharges,
        environment: Some(Environment::Live),
        limit: 10,
        usage: 10,
    }
}

both_backends!(charges_count_by_the_month_in_sao_paulo);
async fn charges_count_by_the_month_in_sao_paulo(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = store.create_merchant("Loja", PlanId::Free).await.unwrap();
    let live = credential(&store, &merchant.id, Environment::Live).await;
    let november = ms("2026-11-30T23:00:00-03:00");
    let mut made = Vec::new();
    for i in 0..10 {
        let c = charge(&live, november + i);
        assert_eq!(store.insert_creating_charge(&c).await.unwrap(), Ok(true));
        made.push(c);
    }
    let full = free_live_month_full();
    // 02:59 UTC on 1 December is 23:59 on 30 November in São Paulo: November is full.
    let last_minute = charge(&live, ms("2026-12-01T02:59:59.999Z"));
    assert_eq!(
        store.insert_creating_charge(&last_minute).await.unwrap(),
        Err(full.clone())
    );
    assert!(
        store
            .charge_by_reference(last_minute.reference.as_str())
            .await
            .unwrap()
            .is_none(),
        "nothing written"
    );
    // 03:00 UTC is midnight: December has room.
    let december = charge(&live, ms("2026-12-01T03:00:00Z"));
    assert_eq!(
        store.insert_creating_charge(&december).await.unwrap(),
        Ok(true)
    );
    let used = |month: &'static str| {
        let (store, id) = (store.clone(), merchant.id.clone());
        async move {
            store
                .plan_usage(&id, Environment::Live, month, now_ms())
                .await
                .unwrap()
                .1
                .get(Resource::LiveCharges)
        }
    };
    assert_eq!(used("2026-11").await, 10);
    assert_eq!(used("2026-12").await, 1);

    // A charge the PSP refused is forgotten and no longer counts; one that exists always does.
    store.delete_creating_charge(&made[0].id).await.unwrap();
    assert_eq!(used("2026-11").await, 9);
    assert_eq!(
        store.insert_creating_charge(&last_minute).await.unwrap(),
        Ok(true)
    );
    assert_eq!(
        store
            .insert_creating_charge(&charge(&live, november + 50))
            .await
            .unwrap(),
        Err(full)
    );
    // The same reference again (a resumed request) is not a new charge: no refusal, no count.
    assert_eq!(
        store.insert_creating_charge(&last_minute).await.unwrap(),
        Ok(false)
    );
    // A bigger plan takes more in the same month.
    store.set_plan(&merchant.id, PlanId::Basic).await.unwrap();
    assert_eq!(
        store
            .insert_creating_charge(&charge(&live, november + 60))
            .await
            .unwrap(),
        Ok(true)
    );
    assert_eq!(used("2026-11").await, 11);
    // The same reference with room in the month: still no count (PostgreSQL counts before the
    // insert, and gives the count back when the reference is taken).
    assert_eq!(
        store.insert_creating_charge(&last_minute).await.unwrap(),
        Ok(false)
    );
    assert_eq!(used("2026-11").await, 11);
}

both_backends!(test_charges_have_a_fair_use_cap_of_their_own);
async fn test_charges_have_a_fair_use_cap_of_their_own(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = store.create_merchant("Loja", PlanId::Free).await.unwrap();
    let test = credential(&store, &merchant.id, Environment::Test).await;
    let live = credential(&store, &merchant.id, Environment::Live).await;
    let at = ms("2026-05-10T12:00:00-03:00");
    for i in 0..1000 {
        assert_eq!(
            store
                .insert_creating_charge(&charge(&test, at + i))
                .await
                .unwrap(),
            Ok(true),
            "test charge {}",
            i + 1
        );
    }
    assert_eq!(
        store
            .insert_creating_charge(&charge(&test, at + 1000))
            .await
            .unwrap(),
        Err(LimitReached {
            plan: PlanId::Free,
            resource: Resource::TestCharges,
            environment: Some(Environment::Test),
            limit: 1000,
            usage: 1000,
        })
    );
    // Live charges are counted apart.
    assert_eq!(
        store
            .insert_creating_charge(&charge(&live, at))
            .await
            .unwrap(),
        Ok(true)
    );
}

/// Counts rows of `table` (test-side bookkeeping only).
async fn rows(store: &Store, table: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// A charge made and moved to `paid`, with its PSP attempt recorded and its `charge.paid` event
/// written with a delivery to each of the merchant's endpoints.
async fn paid_charge(store: &Store, credential: &CredentialRecord) -> ChargeRecord {
    let c = charge(credential, now_ms());
    store.insert_creating_charge(&c).await.unwrap().unwrap();
    store
        .record_charge_attempt(&pixgw::store::routing::AttemptRecord {
            reference: c.reference.clone(),
            credential_id: credential.id.to_string(),
            provider: "efi".into(),
            outcome: "created",
            message: None,
        })
        .await
        .unwrap();
    let emit = |charge: &ChargeRecord| pixgw::webhooks::event_for(charge, "charge.paid");
    store
        .transition_charge(
            &c.id,
            &[ChargeState::Creating],
            ChargeState::Paid,
            &PspUpdate::default(),
            Some(&emit),
        )
        .await
        .unwrap()
        .unwrap()
}

/// A notification, stored and then processed (or left waiting).
async fn notification(store: &Store, credential: &CredentialRecord, processed: bool) -> String {
    let id = format!("ntf_{}", uuid::Uuid::now_v7().simple());
    store
        .insert_notification(
            &pixgw::store::inbound::NotificationRecord {
                id: id.clone(),
                credential_id: credential.id.to_string(),
                received_at: now_ms(),
                method: "POST".into(),
                path: "/pix".into(),
                query: String::new(),
                headers: vec![],
                body: b"{}".to_vec(),
                attempts: 1,
            },
            60_000,
        )
        .await
        .unwrap();
    if processed {
        store
            .finish_notification(&id, "processed", "charge paid", None)
            .await
            .unwrap();
    }
    id
}

/// Delivers every due delivery of `event_id` (as the worker would, answered 200).
async fn deliver(store: &Store, event_id: &str) {
    // A lease of 0 ms: the rows of other events claimed here are free again at once.
    let limits = pixgw::store::events::ClaimLimits {
        lease_ms: 0,
        rows: 1000,
        per_endpoint: 1000,
        per_failing_endpoint: 1000,
    };
    let claimed = store.claim_due_deliveries(limits).await.unwrap();
    for due in claimed.iter().filter(|d| d.delivery.event_id == event_id) {
        store
            .record_attempt(
                &due.delivery,
                &due.lease,
                &pixgw::store::events::AttemptOutcome {
                    status_code: Some(200),
                    latency_ms: 12,
                    error: None,
                    response_excerpt: Some("ok".into()),
                    next_status: "delivered",
                    next_attempt_at: now_ms(),
                },
            )
            .await
            .unwrap();
    }
}

async fn event_of(store: &Store, charge: &ChargeRecord) -> String {
    let events = events_of(store, charge).await;
    assert_eq!(events.len(), 1);
    events[0].id.clone()
}

both_backends!(logs_are_kept_for_the_plans_days_and_what_is_needed_stays);
async fn logs_are_kept_for_the_plans_days_and_what_is_needed_stays(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let day = 24 * 3600 * 1000;
    let free = store.create_merchant("Grátis", PlanId::Free).await.unwrap();
    let big = store
        .create_merchant("Grande", PlanId::Enterprise)
        .await
        .unwrap();
    let free_cred = credential(&store, &free.id, Environment::Test).await;
    let big_cred = credential(&store, &big.id, Environment::Test).await;
    endpoint(&store, &free_cred, &["charge.paid"]).await;
    endpoint(&store, &big_cred, &["charge.paid"]).await;

    // Free: a delivered event, a processed notification, a PSP attempt; and what is still
    // needed: an unprocessed notification, an event whose delivery is pending, the attempt of
    // a charge still being created.
    let delivered = paid_charge(&store, &free_cred).await;
    deliver(&store, &event_of(&store, &delivered).await).await;
    let pending = paid_charge(&store, &free_cred).await;
    let pending_event = event_of(&store, &pending).await;
    notification(&store, &free_cred, true).await;
    let waiting = notification(&store, &free_cred, false).await;
    let creating = charge(&free_cred, now_ms());
    store
        .insert_creating_charge(&creating)
        .await
        .unwrap()
        .unwrap();
    store
        .record_charge_attempt(&pixgw::store::routing::AttemptRecord {
            reference: creating.reference.clone(),
            credential_id: free_cred.id.to_string(),
            provider: "efi".into(),
            outcome: "ambiguous",
            message: None,
        })
        .await
        .unwrap();
    // Enterprise: the same delivered event, notification and attempt, kept 30 days.
    let big_charge = paid_charge(&store, &big_cred).await;
    deliver(&store, &event_of(&store, &big_charge).await).await;
    notification(&store, &big_cred, true).await;

    let counts = async || {
        [
            rows(&store, "inbound_notifications").await,
            rows(&store, "events").await,
            rows(&store, "webhook_deliveries").await,
            rows(&store, "delivery_attempts").await,
            rows(&store, "charge_attempts").await,
        ]
    };
    assert_eq!(counts().await, [3, 3, 3, 2, 4]);
    let now = now_ms();

    // Within a day nothing goes.
    let swept = pixgw::retention::sweep(&store, now + day - 60_000)
        .await
        .unwrap();
    assert_eq!(swept.total(), 0, "{swept:?}");
    assert_eq!(counts().await, [3, 3, 3, 2, 4]);

    // After a day, Free's finished logs go; what is still needed and Enterprise's stay.
    let swept = pixgw::retention::sweep(&store, now + day + 60_000)
        .await
        .unwrap();
    assert_eq!(
        swept,
        pixgw::store::retention::Swept {
            notifications: 1,
            events: 1,
            deliveries: 1,
            delivery_attempts: 1,
            psp_attempts: 2,
        }
    );
    assert_eq!(counts().await, [2, 2, 2, 1, 2]);
    let remaining: Vec<String> =
        sqlx::query_scalar("SELECT id FROM inbound_notifications ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert!(remaining.contains(&waiting), "{remaining:?}");
    assert!(
        store
            .event(&free.id, Environment::Test, &pending_event)
            .await
            .unwrap()
            .is_some(),
        "an event with a pending delivery stays"
    );
    assert_eq!(
        store
            .charge_attempts(creating.reference.as_str())
            .await
            .unwrap()
            .len(),
        1,
        "the attempt of a charge still being created stays"
    );
    assert!(
        store
            .charge(&free.id, Environment::Test, &delivered.id)
            .await
            .unwrap()
            .is_some(),
        "charges are records, never swept"
    );

    // Enterprise keeps 30 days.
    let swept = pixgw::retention::sweep(&store, now + 29 * day)
        .await
        .unwrap();
    assert_eq!(swept.total(), 0, "{swept:?}");
    let swept = pixgw::retention::sweep(&store, now + 30 * day + 60_000)
        .await
        .unwrap();
    assert_eq!(
        swept,
        pixgw::store::retention::Swept {
            notifications: 1,
            events: 1,
            deliveries: 1,
            delivery_attempts: 1,
            psp_attempts: 1,
        }
    );
    // The pending delivery, once delivered, goes at the next sweep.
    deliver(&store, &pending_event).await;
    let swept = pixgw::retention::sweep(&store, now + 30 * day + 60_000)
        .await
        .unwrap();
    assert_eq!(
        (swept.events, swept.deliveries, swept.delivery_attempts),
        (1, 1, 1)
    );
    assert_eq!(counts().await, [1, 0, 0, 0, 1]);
}

/// Holds `merchant_id`'s counter rows in a transaction until the connection runs `COMMIT`.
async fn hold_the_month(db: &TestDb, merchant_id: &str) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT charges FROM plan_usage WHERE merchant_id = $1 FOR UPDATE")
        .bind(merchant_id)
        .fetch_one(&mut holder)
        .await
        .unwrap();
    holder
}

async fn let_the_month_go(mut holder: sqlx::AnyConnection) {
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
}

/// Waits until `n` charges are in the plan counter, counting or waiting to be.
async fn until_waiting(store: &Store, n: usize) {
    for _ in 0..500 {
        if store.plan_count_stats().waiting == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never {n} waiting: {:?}", store.plan_count_stats());
}

/// On PostgreSQL: the month's counter row held by another transaction while `n` charges of
/// `live` come, the first alone in a count that waits on the row and the others queued behind
/// it; then the row is let go. Returns each charge's admission, in order.
///
/// The first waits on the row before the others come: were all `n` to reach the counter
/// before its task ran, they would start together, and an `UPDATE` whose `WHERE` (room for
/// all) is already false on the row's version returns at once without waiting on its lock.
async fn charges_while_the_month_is_held(
    db: &TestDb,
    store: &Store,
    live: &CredentialRecord,
    n: usize,
) -> Vec<pixgw::plans::Admission<bool>> {
    let holder = hold_the_month(db, &live.merchant_id).await;
    let at = now_ms();
    let charges = (0..n).map(|i| charge(live, at + i as i64)).collect();
    behind_held_rows(
        store,
        holder,
        "COMMIT",
        1,
        || store.plan_count_stats(),
        charges,
        |c| {
            let store = store.clone();
            tokio::spawn(async move { store.insert_creating_charge(&c).await.unwrap() })
        },
    )
    .await
}

/// Twenty charges that come while a count runs are counted in two statements, not twenty: the
/// first's, which waited on the row, and one for the nineteen that came meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charges_that_wait_are_counted_together_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = store.create_merchant("Loja", PlanId::Basic).await.unwrap();
    let live = credential(&store, &merchant.id, Environment::Live).await;
    // The month's first charge makes its row.
    let first = charge(&live, now_ms());
    assert_eq!(
        store.insert_creating_charge(&first).await.unwrap(),
        Ok(true)
    );
    assert_eq!(store.plan_count_stats().statements, 1);

    let admitted = charges_while_the_month_is_held(&db, &store, &live, 20).await;
    assert_eq!(admitted, vec![Ok(true); 20]);
    // The first, the one that waited on the row, and the nineteen behind it.
    let stats = store.plan_count_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting),
        (3, 21, 0),
        "{stats:?}"
    );
    assert_eq!(live_charges_this_month(&store, &merchant.id).await, 21);
}

/// Charges that do not all fit in the month are counted alone: with one place left of ten,
/// exactly one of twenty is admitted, and the others hear the plan's refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charges_that_do_not_all_fit_are_counted_alone_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = store.create_merchant("Loja", PlanId::Free).await.unwrap();
    let live = credential(&store, &merchant.id, Environment::Live).await;
    for i in 0..9 {
        let c = charge(&live, now_ms() + i);
        assert_eq!(store.insert_creating_charge(&c).await.unwrap(), Ok(true));
    }
    let admitted = charges_while_the_month_is_held(&db, &store, &live, 20).await;
    let full = free_live_month_full();
    assert_eq!(
        admitted.iter().filter(|a| **a == Ok(true)).count(),
        1,
        "{admitted:?}"
    );
    assert_eq!(
        admitted.iter().filter(|a| **a == Err(full.clone())).count(),
        19,
        "{admitted:?}"
    );
    assert_eq!(live_charges_this_month(&store, &merchant.id).await, 10);
    // Nine alone, the one that waited on the row, and the nineteen tried together (counted by
    // none: each was then counted alone, outside the batch).
    let stats = store.plan_count_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting),
        (11, 10, 0),
        "{stats:?}"
    );
}

/// A request dropped while its charge waits to be counted (its client went away) makes no
/// charge, and is not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_dropped_while_it_waits_is_not_counted_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = store.create_merchant("Loja", PlanId::Basic).await.unwrap();
    let live = credential(&store, &merchant.id, Environment::Live).await;
    assert_eq!(
        store
            .insert_creating_charge(&charge(&live, now_ms()))
            .await
            .unwrap(),
        Ok(true)
    );
    let holder = hold_the_month(&db, &merchant.id).await;
    let insert = |at: i64| {
        let (store, c) = (store.clone(), charge(&live, at));
        tokio::spawn(async move { store.insert_creating_charge(&c).await.unwrap() })
    };
    // One count running (waiting on the row), then four behind it; two of those are dropped.
    let running = insert(now_ms() + 1);
    until_waiting(&store, 1).await;
    // Its statement is on the row before the others come, so they are behind it, not in it.
    until_locks_wait(&store, 1).await;
    let mut behind: Vec<_> = (2..6).map(|i| insert(now_ms() + i)).collect();
    until_waiting(&store, 5).await;
    for dropped in [behind.remove(2), behind.remove(0)] {
        dropped.abort();
        // Its request is gone once the task says it was cancelled.
        assert!(dropped.await.unwrap_err().is_cancelled());
    }
    let_the_month_go(holder).await;
    assert_eq!(running.await.unwrap(), Ok(true));
    for kept in behind {
        assert_eq!(kept.await.unwrap(), Ok(true));
    }
    until_waiting(&store, 0).await;
    assert_eq!(live_charges_this_month(&store, &merchant.id).await, 4);
}
