//! Moves of charges their callers know, on PostgreSQL, written together: the moves that wait
//! while every statement a gateway runs at once is busy go in one statement, each with its PSP
//! attempt, its event and the event's deliveries, and its idempotency key's answer, and each
//! answered as it would be alone. A charge changed since its caller read it is not moved by
//! that statement and is moved alone from the stored row, its attempt written once; a
//! statement that fails leaves each move to be written alone, so one bad move fails alone.

use std::sync::Arc;

use crate::common;

use common::gateway::{Backend, TestDb};
use common::records::{
    behind_held_rows, charge, credential, endpoint, events_of, store_on, until_locks_wait,
};
use pixgw::domain::Environment;
use pixgw::plans::PlanId;
use pixgw::store::charges::{
    AnswerWith, ChargeRecord, ChargeState, MOVE_STATEMENTS_AT_ONCE, PspUpdate,
};
use pixgw::store::credentials::CredentialRecord;
use pixgw::store::events::{Emit, EventRecord};
use pixgw::store::idempotency::{Claim, HeldKey, KeyClaim, KeyScope, new_lock};
use pixgw::store::routing::AttemptRecord;
use pixgw::store::{Durability, Store, StoreError, now_ms};

const HOUR_MS: i64 = 3_600_000;

/// A test credential with an endpoint for `charge.created`, and `n` of its charges written as
/// `creating`.
async fn creating_charges(store: &Store, n: usize) -> (CredentialRecord, Vec<ChargeRecord>) {
    let merchant = store.create_merchant("Loja", PlanId::Basic).await.unwrap();
    let credential = credential(store, &merchant.id, Environment::Test).await;
    endpoint(store, &credential, &["charge.created"]).await;
    let mut charges = Vec::new();
    for i in 0..n {
        let c = charge(&credential, now_ms() + i as i64);
        assert_eq!(store.insert_creating_charge(&c).await.unwrap(), Ok(true));
        charges.push(c);
    }
    (credential, charges)
}

/// A move of `known` out of `creating` as the charge path makes it: to `pending` with the PSP's
/// id, its attempt, a `charge.created` event (with the id `event_id`, or a fresh one), and its
/// key's answer; `alone`, without the charge as known (the transaction path, as after a
/// statement that failed).
struct Move {
    known: ChargeRecord,
    key: Arc<HeldKey>,
    event_id: Option<String>,
    alone: bool,
}

impl Move {
    /// A move of `known`, its key claimed now.
    async fn of(store: &Store, known: &ChargeRecord) -> Move {
        let key = format!("key-{}", known.id);
        let scope = KeyScope {
            merchant_id: &known.merchant_id,
            environment: known.environment,
            key: &key,
        };
        let claim = store
            .claim_idempotency_key(KeyClaim {
                scope,
                request_hash: "hash",
                reference: known.reference.as_str(),
                lock: &new_lock(),
                lock_ms: 30_000,
                ttl_ms: HOUR_MS,
            })
            .await
            .unwrap();
        let Claim::Fresh { lock, .. } = claim else {
            panic!("a new key is claimed fresh: {claim:?}");
        };
        Move {
            known: known.clone(),
            key: HeldKey::new(scope, &lock, now_ms() + HOUR_MS),
            event_id: None,
            alone: false,
        }
    }

    /// A move of each of `charges`, in order.
    async fn of_each(store: &Store, charges: &[ChargeRecord]) -> Vec<Move> {
        let mut moves = Vec::new();
        for c in charges {
            moves.push(Move::of(store, c).await);
        }
        moves
    }

    fn run(
        self,
        store: &Store,
    ) -> tokio::task::JoinHandle<Result<Option<ChargeRecord>, StoreError>> {
        let store = store.clone();
        tokio::spawn(async move {
            let c = &self.known;
            let attempt = AttemptRecord {
                reference: c.reference.clone(),
                credential_id: c.credential_id.clone(),
                provider: "efi".into(),
                outcome: "created",
                message: None,
            };
            let event_id = self.event_id.clone();
            let known = (!self.alone).then(|| c.clone());
            let emit: Emit = Arc::new(move |c: &ChargeRecord| EventRecord {
                id: event_id
                    .clone()
                    .unwrap_or_else(|| format!("evt_{}", uuid::Uuid::now_v7().simple())),
                merchant_id: c.merchant_id.clone(),
                environment: c.environment,
                kind: "charge.created".into(),
                charge_id: Some(c.id.clone()),
                payload: serde_json::json!({"id": c.id, "status": c.status.as_str()}),
                created_at: c.updated_at,
            });
            let answer = AnswerWith {
                key: self.key.clone(),
                render: Arc::new(|c: &ChargeRecord| Some(answer_body(c))),
            };
            let update = PspUpdate {
                psp_id: Some(format!("psp-{}", c.id)),
                copy_paste: Some(format!("000201-{}", c.id)),
                next_check_at: Some(Some(now_ms() + 60_000)),
                ..PspUpdate::default()
            };
            store
                .transition_charge_with(
                    c.id.clone(),
                    vec![ChargeState::Creating],
                    ChargeState::Pending,
                    update,
                    Some(attempt),
                    Some(emit),
                    Some(answer),
                    Durability::Deferred,
                    known,
                )
                .await
        })
    }
}

/// The answer a test move stores for its key: with a column the tests change behind the
/// caller's back, so that an answer rendered from a stale row shows.
fn answer_body(c: &ChargeRecord) -> String {
    let c = serde_json::json!({
        "id": c.id,
        "status": c.status.as_str(),
        "psp_id": c.psp_id,
        "description": c.description,
    });
    c.to_string()
}

/// Locks the rows of `charges` in a transaction of another connection (`FOR UPDATE`, or
/// changing their description when `change`), so that moving them waits for it to end.
async fn hold_rows(db: &TestDb, charges: &[ChargeRecord], change: bool) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    for c in charges {
        let sql = if change {
            "UPDATE charges SET description = 'changed meanwhile' WHERE id = $1"
        } else {
            "SELECT id FROM charges WHERE id = $1 FOR UPDATE"
        };
        sqlx::query(sql)
            .bind(&c.id)
            .execute(&mut holder)
            .await
            .unwrap();
    }
    holder
}

/// As many moves as a gateway runs at once, each waiting on a charge row another transaction
/// holds (the first of `moves`; it changes them when `change`), while the rest come and wait
/// for them; then that transaction ends with `end`. Returns what each move returned, in order.
async fn moves_behind_held_rows(
    db: &TestDb,
    store: &Store,
    moves: Vec<Move>,
    change: bool,
    end: &str,
) -> Vec<Result<Option<ChargeRecord>, StoreError>> {
    let at_once = MOVE_STATEMENTS_AT_ONCE;
    let held: Vec<ChargeRecord> = moves[..at_once].iter().map(|m| m.known.clone()).collect();
    let holder = hold_rows(db, &held, change).await;
    let stats = || store.known_move_stats();
    behind_held_rows(store, holder, end, at_once, stats, moves, |m| m.run(store)).await
}

/// What a charge's move left, as the test reads it back: its stored row, the attempts of its
/// reference, its events with the number of deliveries of each, and its key's stored answer.
struct Left {
    stored: ChargeRecord,
    attempts: usize,
    events: Vec<(String, usize)>,
    answer: (Option<i64>, Option<String>),
}

async fn left_by(store: &Store, c: &ChargeRecord) -> Left {
    let stored = store
        .charge_by_reference(c.reference.as_str())
        .await
        .unwrap()
        .expect("the charge is stored");
    let attempts = store
        .charge_attempts(c.reference.as_str())
        .await
        .unwrap()
        .len();
    let mut events = Vec::new();
    for e in events_of(store, c).await {
        let deliveries = store.deliveries_of(&e.id).await.unwrap().len();
        events.push((e.kind, deliveries));
    }
    let answer = sqlx::query_as(
        "SELECT response_status, response_body FROM idempotency_keys WHERE key = $1",
    )
    .bind(format!("key-{}", c.id))
    .fetch_one(store.pool())
    .await
    .unwrap();
    Left {
        stored,
        attempts,
        events,
        answer,
    }
}

/// Asserts that `c` was moved once, as `moved` says: `pending` with its PSP's values, one
/// attempt, one event with its delivery, and its key's answer rendered from the stored row,
/// stored and handed to the request.
async fn assert_moved_once(store: &Store, c: &ChargeRecord, moved: &ChargeRecord, key: &HeldKey) {
    let left = left_by(store, c).await;
    assert_eq!(&left.stored, moved);
    assert_eq!(moved.status, ChargeState::Pending);
    assert_eq!(moved.psp_id, Some(format!("psp-{}", c.id)));
    assert_eq!(left.attempts, 1, "attempts of {}", c.id);
    assert_eq!(left.events, [("charge.created".to_owned(), 1)]);
    let body = answer_body(moved);
    assert_eq!(left.answer, (Some(201), Some(body.clone())));
    assert_eq!(key.take_answer(), Some(body));
}

/// Forty moves that come while every statement the gateway runs at once waits are written
/// together: two statements (32 moves a statement at most), each move whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_that_wait_are_written_together_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let n = MOVE_STATEMENTS_AT_ONCE + 40;
    let (_, charges) = creating_charges(&store, n).await;
    let moves = Move::of_each(&store, &charges).await;
    let keys: Vec<_> = moves.iter().map(|m| m.key.clone()).collect();
    let moved = moves_behind_held_rows(&db, &store, moves, false, "ROLLBACK").await;
    for ((c, moved), key) in charges.iter().zip(moved).zip(&keys) {
        let moved = moved.unwrap().expect("moved");
        assert_moved_once(&store, c, &moved, key).await;
    }
    let stats = store.known_move_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting, stats.running),
        (MOVE_STATEMENTS_AT_ONCE as u64 + 2, n as u64, 0, 0)
    );
}

/// A charge changed since its caller read it is not moved by the statement (its event and
/// answer were rendered from the row as read): it is moved alone from the stored row, and its
/// attempt, written by the statement, is not written again. The others move together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_changed_meanwhile_is_moved_alone_from_the_stored_row_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let at_once = MOVE_STATEMENTS_AT_ONCE;
    let (_, charges) = creating_charges(&store, at_once + 3).await;
    // Among the three that wait, one whose caller read it before a change.
    let stale = at_once + 1;
    sqlx::query("UPDATE charges SET description = 'changed meanwhile' WHERE id = $1")
        .bind(&charges[stale].id)
        .execute(store.pool())
        .await
        .unwrap();
    let moves = Move::of_each(&store, &charges).await;
    let keys: Vec<_> = moves.iter().map(|m| m.key.clone()).collect();
    // The held rows are changed too, and the change commits while their moves wait.
    let moved = moves_behind_held_rows(&db, &store, moves, true, "COMMIT").await;
    for (i, ((c, moved), key)) in charges.iter().zip(moved).zip(&keys).enumerate() {
        let moved = moved.unwrap().expect("moved");
        let changed = i < at_once || i == stale;
        let description = changed.then(|| "changed meanwhile".to_owned());
        assert_eq!(moved.description, description, "charge {i}");
        assert_moved_once(&store, c, &moved, key).await;
    }
    let stats = store.known_move_stats();
    // Every statement ran and wrote (or left unmoved) all its moves; the changed ones then
    // moved alone, outside the batch.
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting),
        (at_once as u64 + 1, at_once as u64 + 3, 0)
    );
}

/// The same charge twice among the waiting moves: the statement moves it once, and the other
/// move is written alone after it, finding it moved (its attempt recorded, as alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_charge_twice_in_a_statement_is_moved_once_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let at_once = MOVE_STATEMENTS_AT_ONCE;
    let (_, charges) = creating_charges(&store, at_once + 1).await;
    let mut moves = Move::of_each(&store, &charges).await;
    let twice = &charges[at_once];
    let again = Move {
        known: twice.clone(),
        key: moves[at_once].key.clone(),
        event_id: None,
        alone: false,
    };
    moves.push(again);
    let moved = moves_behind_held_rows(&db, &store, moves, false, "ROLLBACK").await;
    for m in &moved[..at_once] {
        assert_eq!(
            m.as_ref().unwrap().as_ref().unwrap().status,
            ChargeState::Pending
        );
    }
    let outcomes: Vec<bool> = moved[at_once..]
        .iter()
        .map(|m| m.as_ref().unwrap().is_some())
        .collect();
    // Either may have come first.
    assert!(
        outcomes == [true, false] || outcomes == [false, true],
        "{outcomes:?}"
    );
    let left = left_by(&store, twice).await;
    assert_eq!(left.stored.status, ChargeState::Pending);
    let attempts = store
        .charge_attempts(twice.reference.as_str())
        .await
        .unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(left.events, [("charge.created".to_owned(), 1)]);
    let stats = store.known_move_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting),
        (at_once as u64 + 1, at_once as u64 + 2, 0),
        "{stats:?}"
    );
}

/// A statement that fails (here one move's event id is taken) writes nothing, and each of its
/// moves is then written alone: the bad one fails, its attempt rolled back with it, and the
/// others move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_that_cannot_be_written_fails_alone_on_postgres() {
    let (db, store) = store_on(Backend::Postgres).await;
    let at_once = MOVE_STATEMENTS_AT_ONCE;
    let (_, charges) = creating_charges(&store, at_once + 4).await;
    let mut moves = Move::of_each(&store, &charges).await;
    // The first charge's move takes an event id; a waiting move is given the same one.
    let taken = "evt_taken".to_owned();
    moves[0].event_id = Some(taken.clone());
    let bad = at_once + 2;
    moves[bad].event_id = Some(taken);
    let keys: Vec<_> = moves.iter().map(|m| m.key.clone()).collect();
    let moved = moves_behind_held_rows(&db, &store, moves, false, "ROLLBACK").await;
    for (i, ((c, moved), key)) in charges.iter().zip(moved).zip(&keys).enumerate() {
        if i == bad {
            let error = moved.unwrap_err().to_string();
            assert!(error.contains("events"), "{error}");
            let left = left_by(&store, c).await;
            assert_eq!(left.stored.status, ChargeState::Creating);
            assert_eq!((left.attempts, left.events.len()), (0, 0));
            assert_eq!(left.answer, (None, None));
            continue;
        }
        let moved = moved.unwrap().expect("moved");
        assert_moved_once(&store, c, &moved, key).await;
    }
    let stats = store.known_move_stats();
    assert_eq!(
        (stats.statements, stats.writes, stats.waiting),
        (at_once as u64 + 1, at_once as u64, 0),
        "the held ones, and the failed statement (its moves not counted)"
    );
}

/// How a test records an attempt for a charge: moving it in one statement with others, moving
/// it in a transaction of its own, or recording the attempt alone (a reconciler's check).
#[derive(Debug, Clone, Copy)]
enum AttemptBy {
    KnownMove,
    LoneMove,
    Check,
}

/// A write that numbers its charge's attempt while another transaction holds that number,
/// uncommitted, waits for it and, once it commits, is numbered after it, whichever way the
/// attempt is written. (Both count the attempts committed when their statements start, so on
/// PostgreSQL they count the same.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_numbered_while_another_commits_comes_after_it_on_postgres() {
    use sqlx::Connection;
    let (db, store) = store_on(Backend::Postgres).await;
    for by in [AttemptBy::KnownMove, AttemptBy::LoneMove, AttemptBy::Check] {
        let (credential, charges) = creating_charges(&store, 1).await;
        let c = &charges[0];
        let mut holder = sqlx::AnyConnection::connect(&db.url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
        sqlx::query(
            "INSERT INTO charge_attempts (reference, attempt, credential_id, provider, at, outcome) \
             VALUES ($1, 1, $2, 'efi', $3, 'unknown')",
        )
        .bind(c.reference.as_str())
        .bind(credential.id.to_string())
        .bind(now_ms())
        .execute(&mut holder)
        .await
        .unwrap();
        let write = match by {
            AttemptBy::KnownMove | AttemptBy::LoneMove => {
                let mut m = Move::of(&store, c).await;
                m.alone = matches!(by, AttemptBy::LoneMove);
                let moved = m.run(&store);
                tokio::spawn(async move { moved.await.unwrap().map(|m| m.map(|_| "created")) })
            }
            AttemptBy::Check => {
                let (store, reference) = (store.clone(), c.reference.clone());
                let credential_id = credential.id.to_string();
                tokio::spawn(async move {
                    let attempt = AttemptRecord {
                        reference,
                        credential_id,
                        provider: "efi".into(),
                        outcome: "found",
                        message: None,
                    };
                    store
                        .record_charge_attempt(&attempt)
                        .await
                        .map(|()| Some("found"))
                })
            }
        };
        until_locks_wait(&store, 1).await;
        sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
        let outcome = write.await.unwrap();
        let Ok(Some(outcome)) = outcome else {
            panic!("{by:?}: {outcome:?}");
        };
        let attempts = store.charge_attempts(c.reference.as_str()).await.unwrap();
        let numbered: Vec<_> = attempts
            .iter()
            .map(|a| (a.attempt, a.outcome.as_str()))
            .collect();
        assert_eq!(numbered, [(1, "unknown"), (2, outcome)], "{by:?}");
        let stored = store
            .charge_by_reference(c.reference.as_str())
            .await
            .unwrap();
        let left_in = match by {
            AttemptBy::KnownMove | AttemptBy::LoneMove => ChargeState::Pending,
            AttemptBy::Check => ChargeState::Creating,
        };
        assert_eq!(stored.unwrap().status, left_in, "{by:?}");
    }
}
