//! Charges' `creating` rows on PostgreSQL, inserted together: the rows that wait while every
//! statement a gateway runs at once is busy go in one `INSERT`, each answered as it would be
//! alone (inserted, or its reference taken), and the plan's count of one not inserted goes
//! back.

use crate::common;

use common::gateway::{Backend, TestDb};
use common::records::{behind_held_rows, charge, credential, live_charges_this_month, store_on};
use pixgw::domain::Environment;
use pixgw::plans::PlanId;
use pixgw::store::charges::{CREATING_STATEMENTS_AT_ONCE, ChargeRecord};
use pixgw::store::credentials::CredentialRecord;
use pixgw::store::{Store, now_ms};

/// Reserves the references of `charges` in a transaction of another connection (rows of its
/// own), so that inserting them waits for it to end.
async fn reserve_references(db: &TestDb, charges: &[ChargeRecord]) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    for c in charges {
        sqlx::query(
            "INSERT INTO charges (id, merchant_id, environment, credential_id, provider, \
             reference, status, amount, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'efi', $5, 'creating', 1, $6, $6)",
        )
        .bind(format!("{}x", c.id))
        .bind(&c.merchant_id)
        .bind(c.environment.as_str())
        .bind(&c.credential_id)
        .bind(c.reference.as_str())
        .bind(c.created_at)
        .execute(&mut holder)
        .await
        .unwrap();
    }
    holder
}

/// As many inserts as a gateway runs at once, each waiting on a reference another
/// transaction reserved (the first charges of `charges`), while the rest come and wait for
/// them; then that transaction ends (`end`: `COMMIT` or `ROLLBACK`). Returns each charge's
/// admission, in order.
async fn inserts_behind_reserved_references(
    db: &TestDb,
    store: &Store,
    charges: Vec<ChargeRecord>,
    end: &str,
) -> Vec<pixgw::plans::Admission<bool>> {
    let at_once = CREATING_STATEMENTS_AT_ONCE;
    let holder = reserve_references(db, &charges[..at_once]).await;
    let insert = |c: ChargeRecord| {
        let store = store.clone();
        tokio::spawn(async move { store.insert_creating_charge(&c).await.unwrap() })
    };
    let stats = || store.creating_insert_stats();
    behind_held_rows(store, holder, end, at_once, stats, charges, insert).await
}

async fn live_credential(store: &Store) -> CredentialRecord {
    let merchant = store.create_merchant("Loja", PlanId::Basic).await.unwrap();
    credential(store, &merchant.id, Environment::Live).await
}

async fn charges_of(store: &Store, merchant_id: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM charges WHERE merchant_id = $1")
        .bind(merchant_id)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// Forty charges that come while every insert the gateway runs at once waits are inserted
/// together: two statements (32 rows a statement at most), every row written and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_rows_that_wait_are_inserted_together_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let live = live_credential(&store).await;
    let n = CREATING_STATEMENTS_AT_ONCE + 40;
    let charges: Vec<_> = (0..n).map(|i| charge(&live, now_ms() + i as i64)).collect();
    let admitted = inserts_behind_reserved_references(&db, &store, charges, "ROLLBACK").await;
    assert_eq!(admitted, vec![Ok(true); n]);
    let stats = store.creating_insert_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting, stats.running),
        (CREATING_STATEMENTS_AT_ONCE as u64 + 2, n as u64, 0, 0)
    );
    assert_eq!(charges_of(&store, &live.merchant_id).await, n as i64);
    assert_eq!(
        live_charges_this_month(&store, &live.merchant_id).await,
        n as u64
    );
}

/// In a statement of many, a charge whose reference is taken (a retry of a request that
/// reserved it) is not inserted and its count goes back; the others are inserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_whose_reference_is_taken_is_not_inserted_with_the_others_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let live = live_credential(&store).await;
    let at_once = CREATING_STATEMENTS_AT_ONCE;
    let taken = charge(&live, now_ms());
    assert_eq!(
        store.insert_creating_charge(&taken).await.unwrap(),
        Ok(true)
    );
    let mut charges: Vec<_> = (0..at_once + 3)
        .map(|i| charge(&live, now_ms() + i as i64))
        .collect();
    // Among the three that wait, a retry of the charge made above.
    charges[at_once + 1] = ChargeRecord {
        id: pixgw::domain::ChargeId::generate().to_string(),
        ..taken.clone()
    };
    // The reserving transaction commits: the first ones find their references taken.
    let admitted = inserts_behind_reserved_references(&db, &store, charges, "COMMIT").await;
    let mut expected = vec![Ok(false); at_once];
    expected.extend([Ok(true), Ok(false), Ok(true)]);
    assert_eq!(admitted, expected);
    assert_eq!(
        store.creating_insert_stats().writes,
        at_once as u64 + 3 + 1,
        "the taken one's first insert, the held ones, and the three together"
    );
    // The one made first, the reserved rows, and the two inserted together.
    assert_eq!(
        charges_of(&store, &live.merchant_id).await,
        1 + at_once as i64 + 2
    );
    // Counted: the one made first and the two inserted together (the reserved rows were
    // written around the count).
    assert_eq!(live_charges_this_month(&store, &live.merchant_id).await, 3);
}

/// The same reference twice among the waiting charges is not inserted together: each alone,
/// one inserted, the other finding it taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_reference_twice_in_a_statement_is_inserted_once_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let live = live_credential(&store).await;
    let at_once = CREATING_STATEMENTS_AT_ONCE;
    let mut charges: Vec<_> = (0..at_once + 1)
        .map(|i| charge(&live, now_ms() + i as i64))
        .collect();
    let twice = ChargeRecord {
        id: pixgw::domain::ChargeId::generate().to_string(),
        ..charges[at_once].clone()
    };
    charges.push(twice);
    let admitted = inserts_behind_reserved_references(&db, &store, charges, "ROLLBACK").await;
    assert_eq!(admitted[..at_once], vec![Ok(true); at_once]);
    // The two run alone at once: either may be the one inserted.
    assert_ne!(admitted[at_once], admitted[at_once + 1], "{admitted:?}");
    let stats = store.creating_insert_stats();
    assert_eq!(
        (stats.statements, stats.writes),
        (at_once as u64 + 1, at_once as u64),
        "{stats:?}"
    );
    assert_eq!(
        charges_of(&store, &live.merchant_id).await,
        at_once as i64 + 1
    );
    assert_eq!(
        live_charges_this_month(&store, &live.merchant_id).await,
        at_once as u64 + 1
    );
}
