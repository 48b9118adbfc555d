//! API keys and active credentials kept in memory on PostgreSQL: a change made through any
//! gateway on the database is seen by every gateway (its own at once, the others when the
//! notification arrives), and a gateway that lost its listening connection keeps nothing until
//! it listens again. The time a kept row is used without a notification is set to an hour
//! here, so only a notification (or the loss of the listener) can make a change visible.

use std::time::Duration;

use pixgw::domain::Environment;
use pixgw::store::Store;

use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};
use crate::common::records::{credential, store_on};

const AN_HOUR: Duration = Duration::from_secs(3600);

/// How long a change may take to reach another gateway before the test fails (it takes
/// milliseconds; the margin is for a loaded machine).
const HEARD_WITHIN: Duration = Duration::from_secs(10);

/// A merchant's test key `prefix`, stored; its id.
async fn key(store: &Store, prefix: &str) -> String {
    let merchant = store
        .create_merchant("Loja", pixgw::plans::PlanId::Free)
        .await
        .unwrap();
    store
        .insert_api_key(
            &merchant.id,
            Environment::Test,
            prefix,
            "hash",
            Some("first"),
        )
        .await
        .unwrap()
        .unwrap()
        .id
}

/// Changes `table`'s row `id`'s label behind the stores' backs (no notification); the label.
async fn relabel(store: &Store, table: &str, id: &str) -> String {
    let label = uuid::Uuid::new_v4().simple().to_string();
    let done = sqlx::query(&format!("UPDATE {table} SET label = $1 WHERE id = $2"))
        .bind(&label)
        .bind(id)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
    label
}

/// The label `store` gives for key `prefix`.
async fn key_label(store: &Store, prefix: &str) -> Option<String> {
    let keys = store.api_keys_by_prefix(prefix).await.unwrap();
    assert_eq!(keys.len(), 1);
    keys[0].label.clone()
}

/// Waits until `store` answers for key `prefix` from memory: a label changed behind its back
/// is not seen. Listening starts with the first lookup and takes a moment.
async fn until_key_kept(store: &Store, prefix: &str, id: &str) {
    let start = std::time::Instant::now();
    loop {
        key_label(store, prefix).await;
        let changed = relabel(store, "api_keys", id).await;
        if key_label(store, prefix).await.as_deref() != Some(changed.as_str()) {
            return;
        }
        assert!(start.elapsed() < HEARD_WITHIN, "the key was never kept");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `seen` holds of what `store` answers for key `prefix`.
async fn until_key(
    store: &Store,
    prefix: &str,
    seen: impl Fn(&pixgw::store::api_keys::ApiKeyRecord) -> bool,
) {
    let start = std::time::Instant::now();
    loop {
        let keys = store.api_keys_by_prefix(prefix).await.unwrap();
        if seen(&keys[0]) {
            return;
        }
        assert!(start.elapsed() < HEARD_WITHIN, "the change was never seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two gateways on one new PostgreSQL database, rows kept for an hour without notifications.
async fn two_gateways() -> (TestDb, Store, Store) {
    let (db, first) = store_on(Backend::Postgres).await;
    let second = Store::connect(&db.url).await.unwrap();
    first.keep_rows_for(AN_HOUR);
    second.keep_rows_for(AN_HOUR);
    (db, first, second)
}

async fn a_revoked_key_is_refused_at_once_by_the_gateway_that_revoked_it(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    store.keep_rows_for(AN_HOUR);
    let id = key(&store, "pgw_test_aaaa").await;
    let merchant = store.api_key(&id).await.unwrap().unwrap().merchant_id;
    if backend == Backend::Postgres {
        until_key_kept(&store, "pgw_test_aaaa", &id).await;
    } else {
        // SQLite keeps nothing: a change behind the store's back is seen at once.
        let changed = relabel(&store, "api_keys", &id).await;
        assert_eq!(key_label(&store, "pgw_test_aaaa").await, Some(changed));
    }
    store
        .revoke_api_key(&merchant, Environment::Test, &id)
        .await
        .unwrap()
        .unwrap();
    let keys = store.api_keys_by_prefix("pgw_test_aaaa").await.unwrap();
    assert!(keys[0].revoked_at.is_some(), "{keys:?}");
}
both_backends!(a_revoked_key_is_refused_at_once_by_the_gateway_that_revoked_it);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_gateways_changes_are_heard() {
    let (_db, first, second) = two_gateways().await;
    let id = key(&first, "pgw_test_bbbb").await;
    let merchant = first.api_key(&id).await.unwrap().unwrap().merchant_id;
    until_key_kept(&first, "pgw_test_bbbb", &id).await;
    second
        .revoke_api_key(&merchant, Environment::Test, &id)
        .await
        .unwrap()
        .unwrap();
    until_key(&first, "pgw_test_bbbb", |k| k.revoked_at.is_some()).await;

    // The active credential: kept, then deleted by the other gateway.
    let stored = credential(&first, &merchant, Environment::Test).await;
    let active = || async {
        first
            .active_credential(&merchant, Environment::Test, "efi")
            .await
            .unwrap()
    };
    let start = std::time::Instant::now();
    loop {
        active().await.unwrap();
        let changed = relabel(&first, "credentials", stored.id.as_str()).await;
        if active().await.unwrap().label != changed {
            break;
        }
        assert!(
            start.elapsed() < HEARD_WITHIN,
            "the credential was never kept"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        second
            .delete_credential(&merchant, Environment::Test, stored.id.as_str())
            .await
            .unwrap()
    );
    let start = std::time::Instant::now();
    while active().await.is_some() {
        assert!(
            start.elapsed() < HEARD_WITHIN,
            "the deletion was never seen"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_stopped_listening_keeps_nothing() {
    let (_db, first) = store_on(Backend::Postgres).await;
    first.keep_rows_for(AN_HOUR);
    let id = key(&first, "pgw_test_cccc").await;
    until_key_kept(&first, "pgw_test_cccc", &id).await;
    // The listening connection dies; a change made meanwhile is announced to no one.
    let ended = sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .fetch_all(first.pool())
    .await
    .unwrap();
    assert_eq!(ended.len(), 1, "one listening connection");
    sqlx::query("UPDATE api_keys SET revoked_at = 1 WHERE id = $1")
        .bind(&id)
        .execute(first.pool())
        .await
        .unwrap();
    until_key(&first, "pgw_test_cccc", |k| k.revoked_at == Some(1)).await;
    // Listening again, the gateway keeps rows again.
    until_key_kept(&first, "pgw_test_cccc", &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchants_credentials_are_kept_apart() {
    let (_db, store) = store_on(Backend::Postgres).await;
    store.keep_rows_for(AN_HOUR);
    let merchant = store
        .create_merchant("Loja", pixgw::plans::PlanId::Free)
        .await
        .unwrap()
        .id;
    let test = credential(&store, &merchant, Environment::Test).await;
    let live = credential(&store, &merchant, Environment::Live).await;
    let active = |environment| {
        let (store, merchant) = (&store, &merchant);
        async move {
            store
                .active_credential(merchant, environment, "efi")
                .await
                .unwrap()
                .unwrap()
        }
    };
    // Kept: a label changed behind the store's back is not seen.
    let start = std::time::Instant::now();
    loop {
        active(Environment::Test).await;
        let changed = relabel(&store, "credentials", test.id.as_str()).await;
        if active(Environment::Test).await.label != changed {
            break;
        }
        assert!(
            start.elapsed() < HEARD_WITHIN,
            "the credential was never kept"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The live one is read and kept beside it; each lookup gets its own environment's.
    for _ in 0..3 {
        assert_eq!(active(Environment::Live).await.id, live.id);
        assert_eq!(active(Environment::Test).await.id, test.id);
    }
    assert!(
        store
            .active_credential(&merchant, Environment::Test, "openpix")
            .await
            .unwrap()
            .is_none()
    );
}
