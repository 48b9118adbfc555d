//! The webhook outbox on both backends: a charge's move writes its event with a delivery to
//! each endpoint that should get one (and its PSP attempt with it), nothing is claimed for a
//! disabled or deleted endpoint, recording an attempt never revives a canceled delivery,
//! leases are fenced by their claim (a worker that lost its lease writes nothing), a lease
//! that runs out frees the row and its place alone, a slow endpoint holds only a few rows at
//! once, attempts that wait on PostgreSQL are recorded together each as it would be alone, a
//! claim hands each row over with its event and endpoint, and the adapters' durable cache
//! stays within its bound per credential.

use crate::both_backends;
use crate::common;

use std::time::Duration;

use common::gateway::{Backend, TestDb};
use common::{poll, records};
use pixgw::domain::Environment;
use pixgw::plans::PlanId;
use pixgw::store::charges::{ChargeRecord, ChargeState, PspUpdate};
use pixgw::store::events::{
    ATTEMPT_STATEMENTS_AT_ONCE, AttemptOutcome, ClaimLimits, DueDelivery, Emit, EventRecord,
};
use pixgw::store::routing::AttemptRecord;
use pixgw::store::{Durability, Store, now_ms};

async fn store_on(backend: Backend) -> (TestDb, Store) {
    let db = TestDb::new(backend).await;
    let store = Store::connect(&db.url).await.unwrap();
    store.migrate().await.unwrap();
    (db, store)
}

/// An endpoint row of `merchant_id` in test for `charge.paid`, `enabled` or `disabled`,
/// deleted or not.
async fn endpoint(store: &Store, merchant_id: &str, status: &str, deleted: bool) -> String {
    let paid = Hook {
        status,
        deleted,
        ..Hook::new(merchant_id, &["charge.paid"])
    };
    paid.write(store).await
}

/// An endpoint row as a test wants it. Written in SQL: these tests are about the outbox, not
/// about how endpoints are made.
struct Hook<'a> {
    merchant_id: &'a str,
    environment: &'a str,
    events: &'a [&'a str],
    status: &'a str,
    deleted: bool,
}

impl<'a> Hook<'a> {
    /// Enabled, in test.
    fn new(merchant_id: &'a str, events: &'a [&'a str]) -> Self {
        Hook {
            merchant_id,
            environment: "test",
            events,
            status: "enabled",
            deleted: false,
        }
    }

    async fn write(&self, store: &Store) -> String {
        let id = format!("we_{}", uuid::Uuid::now_v7().simple());
        let now = now_ms();
        sqlx::query(
            "INSERT INTO webhook_endpoints (id, merchant_id, environment, url, description, events, \
             secret_sealed, previous_secret_sealed, previous_expires_at, status, disabled_reason, \
             failing_since, created_at, updated_at, deleted_at) \
             VALUES ($1, $2, $3, 'https://loja.example/hooks', NULL, $4, 'x', \
             NULL, NULL, $5, NULL, NULL, $6, $6, $7)",
        )
        .bind(&id)
        .bind(self.merchant_id)
        .bind(self.environment)
        .bind(serde_json::to_string(self.events).unwrap())
        .bind(self.status)
        .bind(now)
        .bind(self.deleted.then_some(now))
        .execute(store.pool())
        .await
        .unwrap();
        id
    }
}

/// An event of `merchant_id` and one due delivery of it to each of `endpoints`; returns the
/// delivery ids in the same order.
async fn event_to(store: &Store, merchant_id: &str, endpoints: &[&str]) -> Vec<String> {
    event_with("{}", store, merchant_id, endpoints).await
}

/// [`event_to`] with `payload` as the event's.
async fn event_with(
    payload: &str,
    store: &Store,
    merchant_id: &str,
    endpoints: &[&str],
) -> Vec<String> {
    let event = format!("evt_{}", uuid::Uuid::now_v7().simple());
    let now = now_ms();
    sqlx::query(
        "INSERT INTO events (id, merchant_id, environment, type, charge_id, payload, created_at) \
         VALUES ($1, $2, 'test', 'charge.paid', NULL, $3, $4)",
    )
    .bind(&event)
    .bind(merchant_id)
    .bind(payload)
    .bind(now)
    .execute(store.pool())
    .await
    .unwrap();
    let mut ids = Vec::new();
    for endpoint in endpoints {
        let id = format!("whd_{}", uuid::Uuid::now_v7().simple());
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, event_id, endpoint_id, status, attempts, \
             next_attempt_at, created_at) VALUES ($1, $2, $3, 'pending', 0, $4, $4)",
        )
        .bind(&id)
        .bind(&event)
        .bind(endpoint)
        .bind(now)
        .execute(store.pool())
        .await
        .unwrap();
        ids.push(id);
    }
    ids
}

/// A merchant on the enterprise plan (no limit in the way).
async fn new_merchant(store: &Store, name: &str) -> pixgw::store::merchants::Merchant {
    store
        .create_merchant(name, PlanId::Enterprise)
        .await
        .unwrap()
}

async fn status_of(store: &Store, delivery_id: &str) -> (String, i64) {
    let row: (String, i64) =
        sqlx::query_as("SELECT status, attempts FROM webhook_deliveries WHERE id = $1")
            .bind(delivery_id)
            .fetch_one(store.pool())
            .await
            .unwrap();
    row
}

/// The due deliveries a worker claims now, with a lease of a minute.
async fn claim_now(store: &Store) -> Vec<DueDelivery> {
    store.claim_due_deliveries(limits(60_000)).await.unwrap()
}

/// The first claim that takes anything, made again until a lease runs out (a few seconds at
/// most).
async fn claim_once_a_lease_ran_out(store: &Store) -> Vec<DueDelivery> {
    poll(Duration::from_secs(10), "a lease to run out", async || {
        let claimed = claim_now(store).await;
        (!claimed.is_empty()).then_some(claimed)
    })
    .await
}

/// How many of `claimed` go to `endpoint`.
fn count_to(claimed: &[DueDelivery], endpoint: &str) -> usize {
    claimed
        .iter()
        .filter(|d| d.delivery.endpoint_id == endpoint)
        .count()
}

fn limits(lease_ms: i64) -> ClaimLimits {
    ClaimLimits {
        lease_ms,
        rows: 32,
        per_endpoint: 4,
        per_failing_endpoint: 2,
    }
}

fn failed_attempt() -> AttemptOutcome {
    AttemptOutcome {
        status_code: Some(503),
        latency_ms: 5,
        error: None,
        response_excerpt: Some("busy".into()),
        next_status: "pending",
        next_attempt_at: now_ms(),
    }
}

async fn removed_endpoints_get_nothing(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let enabled = endpoint(&store, &merchant.id, "enabled", false).await;
    let disabled = endpoint(&store, &merchant.id, "disabled", false).await;
    let deleted = endpoint(&store, &merchant.id, "disabled", true).await;
    let ids = event_to(&store, &merchant.id, &[&enabled, &disabled, &deleted]).await;

    // Only the enabled endpoint's delivery is claimed.
    let claimed = claim_now(&store).await;
    let claimed_ids: Vec<&str> = claimed.iter().map(|d| d.delivery.id.as_str()).collect();
    assert_eq!(claimed_ids, [ids[0].as_str()]);

    // The endpoint is deleted while the attempt is in flight: the lease is not renewed (the
    // worker stops), and recording the attempt logs it but leaves the delivery canceled.
    let due = &claimed[0];
    assert!(
        store
            .renew_delivery_lease(&due.delivery.id, &due.lease, 60_000)
            .await
            .unwrap()
    );
    store.delete_webhook_endpoint(&enabled).await.unwrap();
    assert!(
        !store
            .renew_delivery_lease(&due.delivery.id, &due.lease, 60_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_attempt(&due.delivery, &due.lease, &failed_attempt())
            .await
            .unwrap()
    );
    assert_eq!(status_of(&store, &ids[0]).await, ("canceled".into(), 1));
    assert_eq!(store.attempts_of(&ids[0]).await.unwrap().len(), 1);
    // Nothing is due any more, now or later.
    assert!(claim_now(&store).await.is_empty());
    // The other two were never attempted.
    assert_eq!(status_of(&store, &ids[1]).await, ("pending".into(), 0));
    assert_eq!(status_of(&store, &ids[2]).await, ("pending".into(), 0));
}
both_backends!(removed_endpoints_get_nothing);

async fn a_merchant_disabling_an_endpoint_cancels_and_holds_its_deliveries(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let hook = endpoint(&store, &merchant.id, "enabled", false).await;
    let ids = event_to(&store, &merchant.id, &[&hook]).await;
    let claimed = claim_now(&store).await;
    assert_eq!(claimed.len(), 1);
    // Disabled (as the merchant's PATCH does: the row, then its pending deliveries).
    sqlx::query("UPDATE webhook_endpoints SET status = 'disabled' WHERE id = $1")
        .bind(&hook)
        .execute(store.pool())
        .await
        .unwrap();
    let due = &claimed[0];
    assert!(
        !store
            .renew_delivery_lease(&due.delivery.id, &due.lease, 60_000)
            .await
            .unwrap(),
        "no attempt starts or goes on for a disabled endpoint"
    );
    store.cancel_pending_deliveries(&hook).await.unwrap();
    let ok = AttemptOutcome {
        status_code: Some(200),
        next_status: "delivered",
        ..failed_attempt()
    };
    assert!(
        store
            .record_attempt(&due.delivery, &due.lease, &ok)
            .await
            .unwrap()
    );
    assert_eq!(status_of(&store, &ids[0]).await, ("canceled".into(), 1));
}
both_backends!(a_merchant_disabling_an_endpoint_cancels_and_holds_its_deliveries);

/// A claim hands each row over with what its attempt sends: the event's payload, and the
/// endpoint to send it to, read with the claim (one statement on PostgreSQL, the claim's
/// transaction on SQLite).
async fn a_claim_hands_over_each_row_with_its_event_and_endpoint(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let (shop, bakery) = (
        new_merchant(&store, "Loja").await,
        new_merchant(&store, "Padaria").await,
    );
    let mut hooks = Vec::new();
    for (merchant, url) in [
        (&shop.id, "https://loja.example/a"),
        (&shop.id, "https://loja.example/b"),
        (&bakery.id, "https://padaria.example/pix"),
    ] {
        let hook = endpoint(&store, merchant, "enabled", false).await;
        sqlx::query("UPDATE webhook_endpoints SET url = $1 WHERE id = $2")
            .bind(url)
            .bind(&hook)
            .execute(store.pool())
            .await
            .unwrap();
        hooks.push((hook, url));
    }
    // Three events, each to some of the endpoints; `n` tells their payloads apart.
    let mut expected = Vec::new();
    for (n, merchant, to) in [
        (1, &shop.id, &[0, 1][..]),
        (2, &bakery.id, &[2][..]),
        (3, &shop.id, &[0][..]),
    ] {
        let payload = format!(r#"{{"type":"charge.paid","n":{n}}}"#);
        let endpoints: Vec<&str> = to.iter().map(|&i| hooks[i].0.as_str()).collect();
        let deliveries = event_with(&payload, &store, merchant, &endpoints).await;
        for (delivery, &i) in deliveries.into_iter().zip(to) {
            let (hook, url) = &hooks[i];
            expected.push((
                delivery,
                hook.clone(),
                hook.clone(),
                url.to_string(),
                payload.clone(),
                0,
            ));
        }
    }

    let mut claimed: Vec<(String, String, String, String, String, i64)> = claim_now(&store)
        .await
        .into_iter()
        .map(|d| {
            (
                d.delivery.id,
                d.delivery.endpoint_id,
                d.endpoint.id,
                d.endpoint.url,
                d.payload,
                d.delivery.attempts,
            )
        })
        .collect();
    claimed.sort();
    expected.sort();
    assert_eq!(claimed, expected);
    assert!(claim_now(&store).await.is_empty(), "every row is leased");
}
both_backends!(a_claim_hands_over_each_row_with_its_event_and_endpoint);

async fn leases_are_fenced_and_run_out(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let hook = endpoint(&store, &merchant.id, "enabled", false).await;
    let ids = event_to(&store, &merchant.id, &[&hook]).await;

    let first = store.claim_due_deliveries(limits(300)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(
        store
            .claim_due_deliveries(limits(300))
            .await
            .unwrap()
            .is_empty(),
        "a leased row is not claimed twice"
    );
    // The holder dies: once its lease ran out, another worker takes the row.
    let second = claim_once_a_lease_ran_out(&store).await;
    assert_eq!(second[0].delivery.id, ids[0]);
    assert_ne!(second[0].lease, first[0].lease);
    // The first holder, back from the dead, can neither renew nor record.
    let stale = &first[0];
    assert!(
        !store
            .renew_delivery_lease(&stale.delivery.id, &stale.lease, 60_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_attempt(&stale.delivery, &stale.lease, &failed_attempt())
            .await
            .unwrap()
    );
    assert_eq!(store.attempts_of(&ids[0]).await.unwrap().len(), 0);
    // The new holder records; its lease is then released.
    let now = &second[0];
    let done = AttemptOutcome {
        status_code: Some(200),
        next_status: "delivered",
        ..failed_attempt()
    };
    assert!(
        store
            .record_attempt(&now.delivery, &now.lease, &done)
            .await
            .unwrap()
    );
    assert_eq!(status_of(&store, &ids[0]).await, ("delivered".into(), 1));
}
both_backends!(leases_are_fenced_and_run_out);

async fn a_slow_endpoint_holds_only_a_few_rows(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let other = new_merchant(&store, "Outra").await;
    let slow = endpoint(&store, &merchant.id, "enabled", false).await;
    let quick = endpoint(&store, &other.id, "enabled", false).await;
    for _ in 0..10 {
        event_to(&store, &merchant.id, &[&slow]).await;
    }
    event_to(&store, &other.id, &[&quick]).await;

    let claimed = claim_now(&store).await;
    assert_eq!(
        (count_to(&claimed, &slow), count_to(&claimed, &quick)),
        (4, 1)
    );
    // While those four are in flight, no more of the slow endpoint's rows are taken.
    assert!(claim_now(&store).await.is_empty());
    // One finishes: one more may go.
    let done = &claimed
        .iter()
        .find(|d| d.delivery.endpoint_id == slow)
        .unwrap();
    let ok = AttemptOutcome {
        status_code: Some(200),
        next_status: "delivered",
        ..failed_attempt()
    };
    assert!(
        store
            .record_attempt(&done.delivery, &done.lease, &ok)
            .await
            .unwrap()
    );
    let next = claim_now(&store).await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].delivery.endpoint_id, slow);
}
both_backends!(a_slow_endpoint_holds_only_a_few_rows);

async fn a_failing_endpoint_holds_fewer_places_until_it_heals(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let failing = endpoint(&store, &merchant.id, "enabled", false).await;
    let healthy = endpoint(&store, &merchant.id, "enabled", false).await;
    for _ in 0..10 {
        event_to(&store, &merchant.id, &[&failing, &healthy]).await;
    }
    store
        .set_webhook_endpoint_health(&failing, false)
        .await
        .unwrap();

    let places =
        |claimed: &[DueDelivery]| (count_to(claimed, &failing), count_to(claimed, &healthy));
    assert_eq!(places(&claim_now(&store).await), (2, 4));
    assert!(claim_now(&store).await.is_empty());
    // Healthy again (an attempt of it succeeded): its places are the healthy endpoint's, and
    // the two in flight count against them.
    store
        .set_webhook_endpoint_health(&failing, true)
        .await
        .unwrap();
    assert_eq!(places(&claim_now(&store).await), (2, 0));
}
both_backends!(a_failing_endpoint_holds_fewer_places_until_it_heals);

async fn a_lease_that_ran_out_gives_back_its_place_alone(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let hook = endpoint(&store, &merchant.id, "enabled", false).await;
    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.extend(event_to(&store, &merchant.id, &[&hook]).await);
    }
    // The first row on a short lease (its holder will die), the next three on long ones. A
    // second, so that it cannot run out between the two claims on a busy machine.
    let short = ClaimLimits {
        rows: 1,
        ..limits(1_000)
    };
    let first = store.claim_due_deliveries(short).await.unwrap();
    let rest = claim_now(&store).await;
    let taken = |claimed: &[DueDelivery]| {
        claimed
            .iter()
            .map(|d| d.delivery.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(taken(&first), ids[..1]);
    assert_eq!(taken(&rest), ids[1..4]);
    // Once the first lease ran out, its row is taken again, and only it: the three others
    // still hold their places (the endpoint has four).
    let again = claim_once_a_lease_ran_out(&store).await;
    assert_eq!(taken(&again), ids[..1]);
    assert!(claim_now(&store).await.is_empty());
}
both_backends!(a_lease_that_ran_out_gives_back_its_place_alone);

async fn the_durable_adapter_cache_is_bounded_per_credential(backend: Backend) {
    use pixgw::runtime::cache::{DurableCache, MAX_ENTRIES_PER_SCOPE};
    let (db, store) = store_on(backend).await;
    let _ = &db;
    // 32 bytes of 7, as base64: a test key.
    let key = pixgw::vault::MasterKey::from_base64("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
        .unwrap();
    let vault = pixgw::vault::Vault::new(key, vec![]);
    let cache = pixgw::store::adapter_cache::StoreCache {
        store: store.clone(),
        vault: std::sync::Arc::new(vault),
    };
    let far = now_ms() + 3_600_000;
    cache
        .set("asaas/cred-a", "token", "T", far + 1_000_000)
        .await;
    for i in 0..(MAX_ENTRIES_PER_SCOPE + 40) {
        cache
            .set(
                "asaas/cred-a",
                &format!("customer:{i}"),
                "cus",
                far + i as i64,
            )
            .await;
    }
    cache.set("asaas/cred-b", "token", "B", far).await;
    let count = |scope: &'static str| {
        let store = store.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM adapter_cache WHERE scope = $1")
                .bind(scope)
                .fetch_one(store.pool())
                .await
                .unwrap()
        }
    };
    assert_eq!(count("asaas/cred-a").await, MAX_ENTRIES_PER_SCOPE as i64);
    assert_eq!(count("asaas/cred-b").await, 1);
    // The entries expiring soonest went; the token and the newest stayed.
    assert!(cache.get("asaas/cred-a", "token").await.is_some());
    assert!(cache.get("asaas/cred-a", "customer:0").await.is_none());
    let last = format!("customer:{}", MAX_ENTRIES_PER_SCOPE + 39);
    assert!(cache.get("asaas/cred-a", &last).await.is_some());
}
both_backends!(the_durable_adapter_cache_is_bounded_per_credential);

/// The worker claims again after every attempt; with nothing due, that claim is a read and
/// never waits for the SQLite writer (at low load it made the next request's writes queue
/// behind it). With a row due, the claim is the writer's again and sees every write queued
/// before it.
#[tokio::test]
async fn a_claim_with_nothing_due_does_not_wait_for_the_writer() {
    let (_db, store) = store_on(Backend::Sqlite).await;
    let merchant = new_merchant(&store, "Loja").await.id;
    let endpoint = endpoint(&store, &merchant, "enabled", false).await;
    // A write held inside the writer until the test lets it go.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Arc::new(std::sync::Mutex::new(held));
    store
        .write_behind(pixgw::store::Durability::Deferred, "held", move |_conn| {
            Box::pin(async move {
                let _ = held.lock().unwrap().recv();
                Ok(())
            })
        })
        .await
        .unwrap();
    let claim = tokio::time::timeout(
        Duration::from_secs(30),
        store.claim_due_deliveries(limits(60_000)),
    )
    .await
    .expect("a claim with nothing due waited for the writer")
    .unwrap();
    assert!(claim.is_empty());

    release.send(()).unwrap();
    let ids = event_to(&store, &merchant, &[&endpoint]).await;
    let claimed = claim_now(&store).await;
    let claimed: Vec<&str> = claimed.iter().map(|d| d.delivery.id.as_str()).collect();
    assert_eq!(claimed, [ids[0].as_str()]);
}

/// A charge's move writes its PSP attempt (moved or not), its event, and one delivery to each
/// enabled endpoint of the merchant and environment that subscribes to the event's type; a
/// redelivery adds one for an endpoint subscribed since.
async fn a_move_writes_its_event_to_the_subscribed_endpoints(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = new_merchant(&store, "Loja").await;
    let other = new_merchant(&store, "Outra").await;
    let both = ["charge.created", "charge.paid"];
    let all = Hook::new(&merchant.id, &both).write(&store).await;
    let paid_only = Hook::new(&merchant.id, &["charge.paid"])
        .write(&store)
        .await;
    for elsewhere in [
        Hook {
            status: "disabled",
            ..Hook::new(&merchant.id, &both)
        },
        Hook {
            status: "disabled",
            deleted: true,
            ..Hook::new(&merchant.id, &both)
        },
        Hook {
            environment: "live",
            ..Hook::new(&merchant.id, &both)
        },
        Hook::new(&other.id, &both),
    ] {
        elsewhere.write(&store).await;
    }
    let credential = records::credential(&store, &merchant.id, Environment::Test).await;
    let charge = records::charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&charge).await.unwrap(),
        Ok(true)
    );

    let attempt = AttemptRecord {
        reference: charge.reference.clone(),
        credential_id: credential.id.to_string(),
        provider: "efi".into(),
        outcome: "created",
        message: None,
    };
    let emit = |kind: &'static str| -> Emit {
        std::sync::Arc::new(move |c: &ChargeRecord| EventRecord {
            id: format!("evt_{}", uuid::Uuid::now_v7().simple()),
            merchant_id: c.merchant_id.clone(),
            environment: c.environment,
            kind: kind.into(),
            charge_id: Some(c.id.clone()),
            payload: serde_json::json!({"status": c.status.as_str()}),
            created_at: c.updated_at,
        })
    };
    let mv = |from: ChargeState, to: ChargeState, kind| {
        let update = PspUpdate {
            psp_id: Some("psp-1".into()),
            ..PspUpdate::default()
        };
        store.transition_charge_with(
            charge.id.clone(),
            vec![from],
            to,
            update,
            Some(attempt.clone()),
            Some(emit(kind)),
            None,
            Durability::Deferred,
            None,
        )
    };
    let moved = mv(
        ChargeState::Creating,
        ChargeState::Pending,
        "charge.created",
    )
    .await
    .unwrap()
    .expect("the creating charge moves");
    assert_eq!(
        (moved.status, moved.psp_id.as_deref()),
        (ChargeState::Pending, Some("psp-1"))
    );
    // Not in `creating` any more: nothing moves and no event is written, but the attempt is.
    assert!(
        mv(
            ChargeState::Creating,
            ChargeState::Pending,
            "charge.created"
        )
        .await
        .unwrap()
        .is_none()
    );
    mv(ChargeState::Pending, ChargeState::Paid, "charge.paid")
        .await
        .unwrap()
        .expect("the pending charge is paid");
    let attempts = store
        .charge_attempts(charge.reference.as_str())
        .await
        .unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );

    // The two events, each with its deliveries' endpoints.
    let events = records::events_of(&store, &charge).await;
    let mut kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["charge.created", "charge.paid"]);
    let event = |kind: &str| events.iter().find(|e| e.kind == kind).unwrap().clone();
    let (created, paid) = (event("charge.created"), event("charge.paid"));
    let endpoints_of = |event_id: String| {
        let store = store.clone();
        async move {
            let deliveries = store.deliveries_of(&event_id).await.unwrap();
            for d in &deliveries {
                let hex = d.id.strip_prefix("whd_").expect("a delivery id");
                assert!(
                    hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{}",
                    d.id
                );
                assert_eq!((d.status.as_str(), d.attempts), ("pending", 0));
            }
            let mut endpoints: Vec<String> =
                deliveries.into_iter().map(|d| d.endpoint_id).collect();
            endpoints.sort();
            endpoints
        }
    };
    let sorted = |mut ids: Vec<&String>| {
        ids.sort();
        ids.into_iter().cloned().collect::<Vec<_>>()
    };
    assert_eq!(endpoints_of(created.id.clone()).await, vec![all.clone()]);
    assert_eq!(endpoints_of(paid.id).await, sorted(vec![&all, &paid_only]));

    // The paid-only endpoint subscribes to `charge.created` too: a redelivery of that event
    // queues the old delivery again and adds one for it.
    sqlx::query("UPDATE webhook_endpoints SET events = $1 WHERE id = $2")
        .bind(serde_json::to_string(&both).unwrap())
        .bind(&paid_only)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(store.redeliver_event(&created).await.unwrap(), 2);
    assert_eq!(
        endpoints_of(created.id).await,
        sorted(vec![&all, &paid_only])
    );
}
both_backends!(a_move_writes_its_event_to_the_subscribed_endpoints);

/// Holds the rows of `ids` in another transaction until the connection runs `COMMIT`.
async fn hold_the_deliveries(db: &TestDb, ids: &[&str]) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    for id in ids {
        sqlx::query("SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_one(&mut holder)
            .await
            .unwrap();
    }
    holder
}

/// On PostgreSQL: as many statements recording attempts as a gateway runs at once, each
/// waiting on a row another transaction holds (the first deliveries of `due`), while the
/// attempts of the rest of `due` come and wait for them; then the rows are let go. Returns
/// whether each row moved, in `due`'s order.
async fn records_behind_held_rows(
    db: &TestDb,
    store: &Store,
    due: Vec<DueDelivery>,
    outcome: &AttemptOutcome,
) -> Vec<bool> {
    let at_once = ATTEMPT_STATEMENTS_AT_ONCE;
    let held: Vec<&str> = due[..at_once]
        .iter()
        .map(|d| d.delivery.id.as_str())
        .collect();
    let holder = hold_the_deliveries(db, &held).await;
    let record = |due: DueDelivery| {
        let (store, outcome) = (store.clone(), outcome.clone());
        tokio::spawn(async move {
            store
                .record_attempt(&due.delivery, &due.lease, &outcome)
                .await
                .unwrap()
        })
    };
    let stats = || store.attempt_record_stats();
    records::behind_held_rows(store, holder, "COMMIT", at_once, stats, due, record).await
}

/// `n` due deliveries of one endpoint, claimed by one worker.
async fn claimed(store: &Store, n: usize) -> Vec<DueDelivery> {
    let merchant = new_merchant(store, "Loja").await;
    let hook = endpoint(store, &merchant.id, "enabled", false).await;
    for _ in 0..n {
        event_to(store, &merchant.id, &[&hook]).await;
    }
    let limits = ClaimLimits {
        lease_ms: 60_000,
        rows: 64,
        per_endpoint: 64,
        per_failing_endpoint: 64,
    };
    let claimed = store.claim_due_deliveries(limits).await.unwrap();
    assert_eq!(claimed.len(), n);
    claimed
}

fn delivered() -> AttemptOutcome {
    AttemptOutcome {
        status_code: Some(200),
        latency_ms: 7,
        error: None,
        response_excerpt: Some("ok".into()),
        next_status: "delivered",
        next_attempt_at: now_ms(),
    }
}

/// Forty attempts recorded while every statement the gateway runs at once waits are recorded
/// together: two statements (32 a statement at most), each row moved and its attempt logged as
/// alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_that_wait_are_recorded_together_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let n = ATTEMPT_STATEMENTS_AT_ONCE + 40;
    let due = claimed(&store, n).await;
    let ids: Vec<String> = due.iter().map(|d| d.delivery.id.clone()).collect();
    let moved = records_behind_held_rows(&db, &store, due, &delivered()).await;
    assert_eq!(moved, vec![true; n]);
    let stats = store.attempt_record_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting, stats.running),
        (ATTEMPT_STATEMENTS_AT_ONCE as u64 + 2, n as u64, 0, 0)
    );
    for id in &ids {
        assert_eq!(status_of(&store, id).await, ("delivered".into(), 1));
        let attempts = store.attempts_of(id).await.unwrap();
        let logged: Vec<_> = attempts
            .iter()
            .map(|a| {
                let excerpt = a.response_excerpt.as_deref();
                (
                    a.attempt,
                    a.status_code,
                    a.latency_ms,
                    a.error.as_deref(),
                    excerpt,
                )
            })
            .collect();
        assert_eq!(logged, [(1, Some(200), 7, None, Some("ok"))]);
    }
}

/// In a statement of many, an attempt whose row moved on meanwhile (queued again, taken over)
/// writes nothing and hears so; the others are recorded, a failure as a retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_that_lost_its_row_is_not_recorded_with_the_others_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let at_once = ATTEMPT_STATEMENTS_AT_ONCE;
    let mut due = claimed(&store, at_once + 3).await;
    let stale = due[at_once + 1].delivery.id.clone();
    // As if attempted twice already: the row, at 0, is no longer the one this attempt read.
    due[at_once + 1].delivery.attempts = 2;
    let retry = AttemptOutcome {
        error: Some("connection refused".into()),
        status_code: None,
        ..failed_attempt()
    };
    let moved = records_behind_held_rows(&db, &store, due.clone(), &retry).await;
    let mut expected = vec![true; at_once + 3];
    expected[at_once + 1] = false;
    assert_eq!(moved, expected);
    assert_eq!(store.attempt_record_stats().writes, at_once as u64 + 3);
    assert_eq!(status_of(&store, &stale).await, ("pending".into(), 0));
    assert!(store.attempts_of(&stale).await.unwrap().is_empty());
    let other = &due[at_once].delivery.id;
    assert_eq!(status_of(&store, other).await, ("pending".into(), 1));
    let logged = store.attempts_of(other).await.unwrap();
    assert_eq!(
        (
            logged.len(),
            logged[0].status_code,
            logged[0].error.as_deref()
        ),
        (1, None, Some("connection refused"))
    );
}

/// The same delivery twice among the waiting attempts (which one lease per row rules out) is
/// not recorded together: each alone, one moves the row, the other finds it moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_delivery_twice_in_a_statement_is_recorded_once_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let at_once = ATTEMPT_STATEMENTS_AT_ONCE;
    let mut due = claimed(&store, at_once + 1).await;
    let twice = due[at_once].clone();
    let id = twice.delivery.id.clone();
    due.push(twice);
    let moved = records_behind_held_rows(&db, &store, due, &delivered()).await;
    // The two run alone at once: either may be the one that moves the row.
    assert_eq!(moved[..at_once], vec![true; at_once]);
    assert!(moved[at_once] != moved[at_once + 1], "{moved:?}");
    let stats = store.attempt_record_stats();
    assert_eq!(
        (stats.statements, stats.writes),
        (at_once as u64 + 1, at_once as u64),
        "{stats:?}"
    );
    assert_eq!(status_of(&store, &id).await, ("delivered".into(), 1));
    assert_eq!(store.attempts_of(&id).await.unwrap().len(), 1);
}
