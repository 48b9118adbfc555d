//! What a write waits for on PostgreSQL: a durable unit commits with the server's
//! `synchronous_commit` (on: the WAL flushed before the answer), a deferred one with it off for
//! its own transaction only (one simple query opens both), and the connection goes back to
//! the pool as it came. SQLite's levels are tested beside its writer (`store::group_commit`).

use pixgw::store::{Durability, Store};

use crate::common::gateway::{Backend, TestDb};

/// `synchronous_commit` as a unit of `durability` sees it inside its transaction.
async fn seen(store: &Store, durability: Durability) -> String {
    store
        .write_with(durability, |conn| {
            Box::pin(async move {
                Ok(
                    sqlx::query_scalar::<_, String>("SELECT current_setting('synchronous_commit')")
                        .fetch_one(&mut *conn)
                        .await?,
                )
            })
        })
        .await
        .unwrap()
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
