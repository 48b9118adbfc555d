//! What a write waits for on PostgreSQL: a durable unit commits with the server's
//! `synchronous_commit` (on: the WAL flushed before the answer), a deferred one with it off for
//! its own transaction only (one simple query opens both), and the connection goes back to
//! the pool as it came. A unit run without a transaction (`write_autocommit`) gets the same
//! settings from its session; charges' batched moves run on connections of their own. SQLite's
//! levels are tested beside its writer (`store::group_commit`).

use pixgw::store::{Durability, Store};

use crate::common::gateway::{Backend, TestDb};

/// `synchronous_commit` as a unit of `durability` sees it inside its transaction.
async fn seen(store: &Store, durability: Durability) -> String {
    store.write_with(durability, setting).await.unwrap()
}

/// `synchronous_commit` as a unit of `durability` run without a transaction sees it.
async fn seen_alone(store: &Store, durability: Durability) -> String {
    store.write_autocommit(durability, setting).await.unwrap()
}

fn setting(
    conn: &mut sqlx::AnyConnection,
) -> futures::future::BoxFuture<'_, Result<String, pixgw::store::StoreError>> {
    Box::pin(async move {
        Ok(
            sqlx::query_scalar::<_, String>("SELECT current_setting('synchronous_commit')")
                .fetch_one(&mut *conn)
                .await?,
        )
    })
}

#[tokio::test]
async fn a_write_without_a_transaction_has_its_durability_from_its_session() {
    let db = TestDb::new(Backend::Postgres).await;
    let store = Store::connect(&db.url).await.unwrap();
    for _ in 0..24 {
        assert_eq!(seen_alone(&store, Durability::Deferred).await, "off");
        assert_eq!(seen_alone(&store, Durability::Durable).await, "on");
        assert_eq!(seen(&store, Durability::Durable).await, "on");
    }
    // Each statement commits by itself: one that fails keeps those before it.
    sqlx::query("CREATE TABLE alone (v BIGINT PRIMARY KEY)")
        .execute(store.pool())
        .await
        .unwrap();
    for durability in [Durability::Deferred, Durability::Durable] {
        let failed = store
            .write_autocommit(durability, |conn| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO alone (v) VALUES (1) ON CONFLICT DO NOTHING")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("INSERT INTO alone (v) VALUES (1)")
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            })
            .await;
        assert!(
            failed.is_err(),
            "{durability:?}: the second insert conflicts"
        );
    }
    let v: Vec<i64> = sqlx::query_scalar("SELECT v FROM alone")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(v, [1]);
}

#[tokio::test]
async fn a_deferred_write_skips_the_flush_for_its_own_transaction_only() {
    let db = TestDb::new(Backend::Postgres).await;
    let store = Store::connect(&db.url).await.unwrap();
    // Alternated more times than the pool has connections: a deferred transaction's setting
    // never leaks into the next transaction of its connection.
    for _ in 0..24 {
        assert_eq!(seen(&store, Durability::Deferred).await, "off");
        assert_eq!(seen(&store, Durability::Durable).await, "on");
    }
    // And a deferred write is a committed write, seen by every later reader.
    store
        .write_with(Durability::Deferred, |conn| {
            Box::pin(async move {
                sqlx::query("CREATE TABLE deferred_seen (v BIGINT)")
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("INSERT INTO deferred_seen (v) VALUES (7)")
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            })
        })
        .await
        .unwrap();
    let v: i64 = sqlx::query_scalar("SELECT v FROM deferred_seen")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(v, 7);
}

/// Charges' batched moves commit durably (the server's `synchronous_commit`, on) on
/// connections that plan each statement once (`force_generic_plan`: planned anew on every run,
/// a move's statement spent a quarter of its time in the planner); every other write keeps
/// PostgreSQL's default choice.
#[tokio::test]
async fn moves_commit_durably_and_plan_once() {
    let db = TestDb::new(Backend::Postgres).await;
    let store = Store::connect(&db.url).await.unwrap();
    let settings = "SELECT current_setting('synchronous_commit') || ' ' || \
                    current_setting('plan_cache_mode')";
    // Held at once, so that each is a connection of its own.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut conn = store.moves_pool().acquire().await.unwrap();
        let seen: String = sqlx::query_scalar(settings)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(seen, "on force_generic_plan");
        held.push(conn);
    }
    let seen: String = sqlx::query_scalar(settings)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(seen, "on auto");
}
