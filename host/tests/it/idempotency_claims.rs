//! Idempotency keys on PostgreSQL, claimed together: the claims that wait while every
//! statement a gateway runs at once is busy go in one `INSERT`, and each is answered as it
//! would be alone: a new key is the request's, and a key something already holds (a running
//! request, a stored answer, another request) is read and answered by what holds it.

use crate::common;

use common::gateway::{Backend, TestDb};
use common::records::{behind_held_rows, store_on};
use pixgw::domain::Environment;
use pixgw::plans::PlanId;
use pixgw::store::idempotency::{CLAIM_STATEMENTS_AT_ONCE, Claim, KeyClaim, KeyScope, new_lock};
use pixgw::store::{Store, now_ms};

const HOUR_MS: i64 = 3_600_000;

/// A claim of `key` by a request whose fingerprint is `hash`.
#[derive(Clone)]
struct Request {
    key: String,
    hash: &'static str,
}

fn request(key: &str) -> Request {
    Request {
        key: key.to_owned(),
        hash: "hash",
    }
}

/// Holds `keys` of `merchant_id` in a transaction of another connection (rows of its own,
/// claimed by a request with fingerprint `hash` that is still running), so that claiming them
/// waits for it to end.
async fn hold_keys(db: &TestDb, merchant_id: &str, keys: &[Request]) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    for k in keys {
        sqlx::query(
            "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash, \
             reference, locked_until, created_at, expires_at, lock_owner) \
             VALUES ($1, 'live', $2, 'hash', $3, $4, $5, $6, 'holder')",
        )
        .bind(merchant_id)
        .bind(&k.key)
        .bind(format!("held-{}", k.key))
        .bind(now_ms() + HOUR_MS)
        .bind(now_ms())
        .bind(now_ms() + HOUR_MS)
        .execute(&mut holder)
        .await
        .unwrap();
    }
    holder
}

/// As many claims as a gateway runs at once, each waiting on a key another transaction holds
/// (the first of `requests`), while the rest come and wait for them; then that transaction
/// ends (`end`: `COMMIT` or `ROLLBACK`). Returns each claim, in order.
async fn claims_behind_held_keys(
    db: &TestDb,
    store: &Store,
    merchant_id: &str,
    requests: Vec<Request>,
    end: &str,
) -> Vec<Claim> {
    let at_once = CLAIM_STATEMENTS_AT_ONCE;
    let holder = hold_keys(db, merchant_id, &requests[..at_once]).await;
    let claim = |r: Request| {
        let (store, merchant_id) = (store.clone(), merchant_id.to_owned());
        tokio::spawn(async move { claim(&store, &merchant_id, &r).await })
    };
    let stats = || store.idempotency_claim_stats();
    behind_held_rows(store, holder, end, at_once, stats, requests, claim).await
}

async fn claim(store: &Store, merchant_id: &str, r: &Request) -> Claim {
    let scope = KeyScope {
        merchant_id,
        environment: Environment::Live,
        key: &r.key,
    };
    let reference = format!("ref-{}", r.key);
    store
        .claim_idempotency_key(KeyClaim {
            scope,
            request_hash: r.hash,
            reference: &reference,
            lock: &new_lock(),
            lock_ms: 30_000,
            ttl_ms: HOUR_MS,
        })
        .await
        .unwrap()
}

async fn merchant(store: &Store) -> String {
    store
        .create_merchant("Loja", PlanId::Basic)
        .await
        .unwrap()
        .id
}

/// The lock each of `keys` of `merchant_id` is held by, in order (`None`: no row).
async fn locks_of(store: &Store, merchant_id: &str, keys: &[Request]) -> Vec<Option<String>> {
    let mut locks = Vec::new();
    for k in keys {
        locks.push(
            sqlx::query_scalar(
                "SELECT lock_owner FROM idempotency_keys \
                 WHERE merchant_id = $1 AND environment = 'live' AND key = $2",
            )
            .bind(merchant_id)
            .bind(&k.key)
            .fetch_optional(store.pool())
            .await
            .unwrap(),
        );
    }
    locks
}

fn fresh(reference: &str, claim: &Claim) -> Option<String> {
    match claim {
        Claim::Fresh { reference: r, lock } if r == reference => Some(lock.clone()),
        _ => None,
    }
}

/// Forty claims that come while every claim the gateway runs at once waits are written
/// together: two statements (32 rows a statement at most), each key the request's own, held
/// by the lock its claim answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_that_wait_are_written_together_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = merchant(&store).await;
    let n = CLAIM_STATEMENTS_AT_ONCE + 40;
    let requests: Vec<_> = (0..n).map(|i| request(&format!("key-{i}"))).collect();
    let claims =
        claims_behind_held_keys(&db, &store, &merchant, requests.clone(), "ROLLBACK").await;
    let locks: Vec<_> = requests
        .iter()
        .zip(&claims)
        .map(|(r, c)| fresh(&format!("ref-{}", r.key), c))
        .collect();
    assert!(locks.iter().all(Option::is_some), "{claims:?}");
    assert_eq!(locks_of(&store, &merchant, &requests).await, locks);
    let stats = store.idempotency_claim_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting, stats.running),
        (CLAIM_STATEMENTS_AT_ONCE as u64 + 2, n as u64, 0, 0)
    );
}

/// In a statement of many, a key something already holds is answered by what holds it: the
/// held ones (their request still running) are in progress, an answered one is replayed, one
/// used with another request is refused; the new ones are claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_already_held_are_answered_by_what_holds_them_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = merchant(&store).await;
    let at_once = CLAIM_STATEMENTS_AT_ONCE;
    let answered = request("answered");
    let Claim::Fresh { lock, .. } = claim(&store, &merchant, &answered).await else {
        panic!("a new key is claimed");
    };
    let scope = KeyScope {
        merchant_id: &merchant,
        environment: Environment::Live,
        key: "answered",
    };
    store
        .complete_idempotency_key(scope, &lock, 201, "{\"id\":\"ch_1\"}", now_ms() + HOUR_MS)
        .await
        .unwrap();
    let mut requests: Vec<_> = (0..at_once)
        .map(|i| request(&format!("held-{i}")))
        .collect();
    requests.extend([
        request("new-1"),
        answered,
        Request {
            key: "answered".into(),
            hash: "another request",
        },
        request("new-2"),
    ]);
    // The holding transaction commits: the first keys stay held by its running requests.
    let claims = claims_behind_held_keys(&db, &store, &merchant, requests.clone(), "COMMIT").await;
    assert_eq!(claims[..at_once], vec![Claim::InProgress; at_once]);
    assert!(fresh("ref-new-1", &claims[at_once]).is_some(), "{claims:?}");
    assert_eq!(
        claims[at_once + 1],
        Claim::Replay {
            status: 201,
            body: "{\"id\":\"ch_1\"}".into()
        }
    );
    assert_eq!(claims[at_once + 2], Claim::Mismatch);
    assert!(
        fresh("ref-new-2", &claims[at_once + 3]).is_some(),
        "{claims:?}"
    );
    let stats = store.idempotency_claim_stats();
    assert_eq!(
        (stats.statements, stats.writes),
        (1 + at_once as u64 + 1, 1 + at_once as u64 + 4),
        "the answered key's claim, the held ones, and the four together"
    );
    let mut locks = vec![Some("holder".to_owned()); at_once];
    locks.extend([
        fresh("ref-new-1", &claims[at_once]),
        Some(lock.clone()),
        Some(lock),
    ]);
    locks.push(fresh("ref-new-2", &claims[at_once + 3]));
    assert_eq!(locks_of(&store, &merchant, &requests).await, locks);
}

/// One key claimed twice in one statement is claimed once: the first of its rows is inserted,
/// the second finds it held by a running request, as if it had come just after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_twice_in_a_statement_is_claimed_once_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let merchant = merchant(&store).await;
    let at_once = CLAIM_STATEMENTS_AT_ONCE;
    let mut requests: Vec<_> = (0..at_once).map(|i| request(&format!("key-{i}"))).collect();
    requests.extend([request("twice"), request("twice")]);
    let claims =
        claims_behind_held_keys(&db, &store, &merchant, requests.clone(), "ROLLBACK").await;
    // The two join the queue in either order: one is inserted, the other finds it running.
    let twice = &claims[at_once..];
    let locks: Vec<_> = twice.iter().filter_map(|c| fresh("ref-twice", c)).collect();
    assert_eq!(locks.len(), 1, "{claims:?}");
    assert!(twice.contains(&Claim::InProgress), "{claims:?}");
    let lock = Some(locks[0].clone());
    let stats = store.idempotency_claim_stats();
    assert_eq!(
        (stats.statements, stats.writes),
        (at_once as u64 + 1, at_once as u64 + 2),
        "{stats:?}"
    );
    assert_eq!(
        locks_of(&store, &merchant, &requests[at_once..]).await,
        vec![lock.clone(), lock]
    );
}
