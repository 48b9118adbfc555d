//! Lookups that must stay index lookups as the tables grow, on both backends. Each query is
//! explained on a migrated database with its table's other indexes dropped (in a transaction
//! rolled back after) and sequential scans made the planner's last resort (PostgreSQL's
//! `enable_seqscan = off`): the plan must use the index. A missing index, or a partial one whose
//! condition the query does not imply, shows as a scan.

use sqlx::{Connection, Row};

use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};

/// The plan of `query` on `db`, one line per step, with `index` the only index of `table`
/// besides its constraints'.
async fn plan(db: &TestDb, backend: Backend, table: &str, index: &str, query: &str) -> String {
    pixgw::store::install_drivers();
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    let others = match backend {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = $1 \
             AND sql IS NOT NULL"
        }
        Backend::Postgres => {
            "SELECT indexname::text FROM pg_indexes WHERE tablename = $1 \
             AND indexname NOT IN (SELECT conname::text FROM pg_constraint)"
        }
    };
    let others: Vec<String> = sqlx::query(others)
        .bind(table)
        .fetch_all(&mut *tx)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .filter(|name: &String| name != index)
        .collect();
    for other in others {
        sqlx::query(&format!("DROP INDEX {other}"))
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    let lines: Vec<String> = match backend {
        Backend::Sqlite => sqlx::query(&format!("EXPLAIN QUERY PLAN {query}"))
            .fetch_all(&mut *tx)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get("detail"))
            .collect(),
        Backend::Postgres => {
            sqlx::query("SET LOCAL enable_seqscan = off")
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::query(&format!("EXPLAIN {query}"))
                .fetch_all(&mut *tx)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        }
    };
    tx.rollback().await.unwrap();
    lines.join("\n")
}

async fn lookups_use_their_indexes(backend: Backend) {
    let db = TestDb::new(backend).await;
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    store.migrate().await.unwrap();
    let cases = [
        // A PSP notification naming its charge by the PSP's id (`webhooks::inbound`).
        (
            "charges",
            "charges_psp",
            "SELECT id FROM charges WHERE credential_id = 'cred_1' AND psp_id = 'psp-1'",
        ),
        // The reconciler reading back the charges its claim leased.
        (
            "charges",
            "charges_check_lease",
            "SELECT id FROM charges WHERE check_lease_owner = 'owner:mark' \
             AND status IN ('pending', 'processing')",
        ),
        // A payment link's paid charges, counted on every charge the link creates.
        (
            "charges",
            "charges_payment_link",
            "SELECT COUNT(*) FROM charges p WHERE p.payment_link_id = 'plink_1' \
             AND p.status = 'paid'",
        ),
        // A cashier's own sales.
        (
            "charges",
            "charges_operator",
            "SELECT id FROM charges WHERE merchant_id = 'mch_1' AND environment = 'test' \
             AND operator_id = 'usr_1' ORDER BY id DESC LIMIT 20",
        ),
        // The delivery worker's claim: an endpoint's first due deliveries.
        (
            "webhook_deliveries",
            "webhook_deliveries_endpoint_due",
            "SELECT y.id FROM webhook_deliveries y WHERE y.endpoint_id = 'we_1' \
             AND y.status = 'pending' AND y.next_attempt_at <= 5 AND y.lease_until < 5 \
             ORDER BY y.next_attempt_at, y.id LIMIT 16",
        ),
        // ...and its deliveries in flight, counted against its places.
        (
            "webhook_deliveries",
            "webhook_deliveries_in_flight",
            "SELECT COUNT(*) FROM webhook_deliveries z WHERE z.endpoint_id = 'we_1' \
             AND z.status = 'pending' AND z.lease_until >= 5",
        ),
    ];
    for (table, index, query) in cases {
        let plan = plan(&db, backend, table, index, query).await;
        assert!(
            plan.contains(index),
            "{backend:?}: expected {index} in the plan of\n{query}\ngot:\n{plan}"
        );
    }
}
both_backends!(lookups_use_their_indexes);
