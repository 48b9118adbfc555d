//! Lookups that must stay index lookups as the tables grow, on both backends. Each query is
//! explained on a migrated database with its table's other indexes dropped (in a transaction
//! rolled back after) and sequential scans made the planner's last resort (PostgreSQL's
//! `enable_seqscan = off`): the plan must use the index. A missing index, or a partial one whose
//! condition the query does not imply, shows as a scan.

use sqlx::{Connection, Row};

use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};

/// The plan of `query` on `db`, one line per step, with `index` the only index of `charges`
/// besides its constraints'.
async fn plan(db: &TestDb, backend: Backend, index: &str, query: &str) -> String {
    pixgw::store::install_drivers();
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    let others = match backend {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'charges' \
             AND sql IS NOT NULL"
        }
        Backend::Postgres => {
            "SELECT indexname::text FROM pg_indexes WHERE tablename = 'charges' \
             AND indexname NOT IN (SELECT conname::text FROM pg_constraint)"
        }
    };
    let others: Vec<String> = sqlx::query(others)
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
            "charges_psp",
            "SELECT id FROM charges WHERE credential_id = 'cred_1' AND psp_id = 'psp-1'",
        ),
        // The reconciler reading back the charges its claim leased.
        (
            "charges_check_lease",
            "SELECT id FROM charges WHERE check_lease_owner = 'owner:mark' \
             AND status IN ('pending', 'processing')",
        ),
        // A payment link's paid charges, counted on every charge the link creates.
        (
            "charges_payment_link",
            "SELECT COUNT(*) FROM charges p WHERE p.payment_link_id = 'plink_1' \
             AND p.status = 'paid'",
        ),
        // A cashier's own sales.
        (
            "charges_operator",
            "SELECT id FROM charges WHERE merchant_id = 'mch_1' AND environment = 'test' \
             AND operator_id = 'usr_1' ORDER BY id DESC LIMIT 20",
        ),
    ];
    for (index, query) in cases {
        let plan = plan(&db, backend, index, query).await;
        assert!(
            plan.contains(index),
            "{backend:?}: expected {index} in the plan of\n{query}\ngot:\n{plan}"
        );
    }
}
both_backends!(lookups_use_their_indexes);
