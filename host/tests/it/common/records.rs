//! Rows written straight to a store, for tests of the store itself (times and states chosen by
//! the test rather than by a request).

use std::collections::BTreeMap;

use pixgw::domain::{ChargeId, CredentialId, Environment, Reference};
use pixgw::store::charges::{ChargeRecord, ChargeState};
use pixgw::store::credentials::CredentialRecord;
use pixgw::store::events::EventRecord;
use pixgw::store::{BatchStats, Store, now_ms};
use serde_json::json;

use super::gateway::{Backend, TestDb};

/// A migrated store on a new database of `backend`.
pub async fn store_on(backend: Backend) -> (TestDb, Store) {
    let db = TestDb::new(backend).await;
    let store = Store::connect(&db.url).await.unwrap();
    store.migrate().await.unwrap();
    (db, store)
}

/// Waits until `n` statements on `store`'s PostgreSQL database wait for a lock (held by a test's
/// own transaction, say).
pub async fn until_locks_wait(store: &Store, n: i64) {
    for _ in 0..500 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap();
        if waiting == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never {n} statements waiting for a lock");
}

/// Waits until the batched write whose stats `stats` reads has `running` statements and
/// `waiting` writes.
async fn until_batched(stats: &impl Fn() -> BatchStats, running: usize, waiting: usize) {
    for _ in 0..500 {
        let now = stats();
        if (now.running, now.waiting) == (running, waiting) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!(
        "never {running} running and {waiting} waiting: {:?}",
        stats()
    );
}

/// On PostgreSQL, writes that share statements (their stats read by `stats`): the first
/// `at_once` of `writes` each start a statement waiting on a row `holder`'s transaction holds,
/// then the rest come and wait behind them, then `end` (`COMMIT` or `ROLLBACK`) ends that
/// transaction. Returns what each `write` returned, in order.
pub async fn behind_held_rows<W, T: Send + 'static>(
    store: &Store,
    mut holder: sqlx::AnyConnection,
    end: &str,
    at_once: usize,
    stats: impl Fn() -> BatchStats,
    writes: Vec<W>,
    write: impl Fn(W) -> tokio::task::JoinHandle<T>,
) -> Vec<T> {
    let n = writes.len();
    let mut writes = writes.into_iter();
    let mut started = Vec::new();
    // One at a time, each until its statement waits on its row: writes that come together
    // while statements may still start would share one.
    for (i, first) in writes.by_ref().take(at_once).enumerate() {
        started.push(write(first));
        until_locks_wait(store, i as i64 + 1).await;
    }
    until_batched(&stats, at_once, at_once).await;
    started.extend(writes.map(&write));
    until_batched(&stats, at_once, n).await;
    sqlx::query(end).execute(&mut holder).await.unwrap();
    futures::future::join_all(started)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Live charges of `merchant_id` counted against its plan this month.
pub async fn live_charges_this_month(store: &Store, merchant_id: &str) -> u64 {
    let month = pixgw::plans::month_of(now_ms());
    let (_, used) = store
        .plan_usage(merchant_id, Environment::Live, &month, now_ms())
        .await
        .unwrap();
    used.get(pixgw::plans::Resource::LiveCharges)
}

/// An active efi credential of `merchant_id` in `environment`, stored.
pub async fn credential(
    store: &Store,
    merchant_id: &str,
    environment: Environment,
) -> CredentialRecord {
    let now = now_ms();
    let record = CredentialRecord {
        id: CredentialId::generate(),
        merchant_id: merchant_id.to_owned(),
        environment,
        provider: "efi".into(),
        label: "efi".into(),
        public_fields: BTreeMap::new(),
        sealed_fields: BTreeMap::new(),
        webhook_id: uuid::Uuid::new_v4().to_string(),
        webhook_token_sealed: String::new(),
        active: true,
        position: 0,
        route_limit: 1,
        created_at: now,
        updated_at: now,
        version: 1,
    };
    store.insert_credential(&record).await.unwrap().unwrap();
    record
}

/// A `creating` charge of R$ 19,90 under `credential`, made at `created_at` (not stored).
pub fn charge(credential: &CredentialRecord, created_at: i64) -> ChargeRecord {
    ChargeRecord {
        id: ChargeId::generate().to_string(),
        merchant_id: credential.merchant_id.clone(),
        environment: credential.environment,
        credential_id: credential.id.to_string(),
        provider: "efi".into(),
        reference: Reference::generate(),
        psp_id: None,
        status: ChargeState::Creating,
        amount: 1990,
        description: None,
        payer_email: None,
        payer_name: None,
        payer_document: None,
        copy_paste: None,
        qr_png_base64: None,
        expires_at: None,
        metadata: json!({}),
        paid_at: None,
        end_to_end_id: None,
        amount_paid: None,
        routing: None,
        operator_id: None,
        payment_link_id: None,
        payment_link_name: None,
        paid_late: false,
        created_at,
        updated_at: created_at,
    }
}

/// The events of `charge`, newest first (up to ten).
pub async fn events_of(store: &Store, charge: &ChargeRecord) -> Vec<EventRecord> {
    store
        .events(
            &charge.merchant_id,
            charge.environment,
            None,
            Some(&charge.id),
            None,
            10,
        )
        .await
        .unwrap()
}

/// An enabled endpoint of the credential's merchant and environment, subscribed to `events`.
pub async fn endpoint(store: &Store, credential: &CredentialRecord, events: &[&str]) -> String {
    let now = now_ms();
    let id = format!("we_{}", uuid::Uuid::now_v7().simple());
    store
        .insert_webhook_endpoint(
            &pixgw::store::webhook_endpoints::EndpointRecord {
                id: id.clone(),
                merchant_id: credential.merchant_id.clone(),
                environment: credential.environment,
                url: "https://loja.example/hooks".into(),
                description: None,
                events: events.iter().map(|e| e.to_string()).collect(),
                secret_sealed: String::new(),
                previous_secret_sealed: None,
                previous_expires_at: None,
                status: "enabled".into(),
                disabled_reason: None,
                failing_since: None,
                created_at: now,
                updated_at: now,
                version: 1,
            },
            50,
        )
        .await
        .unwrap()
        .unwrap();
    id
}
