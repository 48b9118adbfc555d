//! An idempotency key's answer stored by the write that makes it: a created charge's move out
//! of `creating` stores the key's 201 answer in its own transaction ([`HeldKey`]), and only
//! when the move happened and the lock is still the request's. Both backends.

use std::sync::Arc;

use pixgw::domain::Environment;
use pixgw::store::charges::{AnswerWith, ChargeRecord, ChargeState, PspUpdate};
use pixgw::store::idempotency::{Claim, HeldKey, KeyScope};
use pixgw::store::{Durability, Store, now_ms};

use crate::both_backends;
use crate::common::gateway::Backend;
use crate::common::records::{charge, credential, endpoint, events_of, store_on};

const HOUR_MS: i64 = 3_600_000;

fn scope<'a>(merchant_id: &'a str, key: &'a str) -> KeyScope<'a> {
    KeyScope {
        merchant_id,
        environment: Environment::Test,
        key,
    }
}

/// Claims `key` for a request of `merchant_id`, locked for `lock_ms`.
async fn claim(store: &Store, merchant_id: &str, key: &str, lock_ms: i64) -> Claim {
    store
        .claim_idempotency_key(scope(merchant_id, key), "hash", "ref", lock_ms, HOUR_MS)
        .await
        .unwrap()
}

fn lock_of(claim: Claim) -> String {
    match claim {
        Claim::Fresh { lock, .. } | Claim::Resume { lock, .. } => lock,
        other => panic!("not claimed: {other:?}"),
    }
}

/// The answer a move stores for `key`: the moved charge's id and status.
fn answer(key: &Arc<HeldKey>) -> AnswerWith {
    AnswerWith {
        key: key.clone(),
        render: Arc::new(|c: &ChargeRecord| Some(format!("{} {}", c.id, c.status.as_str()))),
    }
}

/// Whether a move reports itself with a `charge.created` event: on PostgreSQL the answer then
/// rides in the event's statement, and is a statement of its own otherwise.
#[derive(Clone, Copy)]
enum Event {
    Created,
    None,
}

/// Moves `charge` from `creating` to `pending`, storing `key`'s answer with the move.
async fn move_to_pending(
    store: &Store,
    charge: &ChargeRecord,
    key: &Arc<HeldKey>,
    event: Event,
) -> Option<ChargeRecord> {
    let emit = match event {
        Event::Created => {
            Some(
                Arc::new(|c: &ChargeRecord| pixgw::webhooks::event_for(c, "charge.created"))
                    as pixgw::store::events::Emit,
            )
        }
        Event::None => None,
    };
    store
        .transition_charge_with(
            charge.id.clone(),
            vec![ChargeState::Creating],
            ChargeState::Pending,
            PspUpdate::default(),
            None,
            emit,
            Some(answer(key)),
            Durability::Deferred,
        )
        .await
        .unwrap()
}

/// The event types written for `charge`, and how many deliveries each has.
async fn events_and_deliveries(store: &Store, charge: &ChargeRecord) -> Vec<(String, i64)> {
    let mut found = Vec::new();
    for event in events_of(store, charge).await {
        let (deliveries,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = $1")
                .bind(&event.id)
                .fetch_one(store.pool())
                .await
                .unwrap();
        found.push((event.kind, deliveries));
    }
    found
}

async fn a_created_charges_move_stores_its_answer(backend: Backend) {
    let (_db, store) = store_on(backend).await;
    let merchant = store
        .create_merchant("Loja", pixgw::plans::PlanId::Free)
        .await
        .unwrap();
    let credential = credential(&store, &merchant.id, Environment::Test).await;
    endpoint(&store, &credential, &["charge.created"]).await;
    let created = charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&created).await.unwrap(),
        Ok(true)
    );

    // The move stores the answer, rendered from the moved charge, and the request gets it once;
    // its event and the event's delivery are written with it.
    let lock = lock_of(claim(&store, &merchant.id, "order-1", HOUR_MS).await);
    let held = HeldKey::new(scope(&merchant.id, "order-1"), &lock, now_ms() + HOUR_MS);
    let moved = move_to_pending(&store, &created, &held, Event::Created)
        .await
        .unwrap();
    assert_eq!(moved.status, ChargeState::Pending);
    let body = format!("{} pending", created.id);
    assert_eq!(held.take_answer().as_deref(), Some(body.as_str()));
    assert_eq!(held.take_answer(), None);
    assert_eq!(
        claim(&store, &merchant.id, "order-1", HOUR_MS).await,
        Claim::Replay { status: 201, body }
    );
    assert_eq!(
        events_and_deliveries(&store, &created).await,
        [("charge.created".to_owned(), 1)]
    );

    // A move without an event stores its answer all the same.
    let quiet = charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&quiet).await.unwrap(),
        Ok(true)
    );
    let lock = lock_of(claim(&store, &merchant.id, "order-0", HOUR_MS).await);
    let held = HeldKey::new(scope(&merchant.id, "order-0"), &lock, now_ms() + HOUR_MS);
    move_to_pending(&store, &quiet, &held, Event::None)
        .await
        .unwrap();
    let body = format!("{} pending", quiet.id);
    assert_eq!(held.take_answer().as_deref(), Some(body.as_str()));
    assert_eq!(
        claim(&store, &merchant.id, "order-0", HOUR_MS).await,
        Claim::Replay { status: 201, body }
    );
    assert_eq!(events_and_deliveries(&store, &quiet).await, []);

    // No move (the charge left `creating` already): nothing stored, the answer is the
    // request's own to store, and the key is still its.
    let lock = lock_of(claim(&store, &merchant.id, "order-2", HOUR_MS).await);
    let held = HeldKey::new(scope(&merchant.id, "order-2"), &lock, now_ms() + HOUR_MS);
    assert!(
        move_to_pending(&store, &created, &held, Event::Created)
            .await
            .is_none()
    );
    assert_eq!(held.take_answer(), None);
    assert_eq!(
        claim(&store, &merchant.id, "order-2", HOUR_MS).await,
        Claim::InProgress
    );

    // A lock that lapsed and was taken over by a retry: the move happens, and the answer is
    // the retry's to store.
    let other = charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&other).await.unwrap(),
        Ok(true)
    );
    // A lock of 0 ms has lapsed by the next claim, whatever the clock: no wait needed.
    let lapsed = lock_of(claim(&store, &merchant.id, "order-3", 0).await);
    let retry = claim(&store, &merchant.id, "order-3", HOUR_MS).await;
    assert!(matches!(retry, Claim::Resume { .. }), "{retry:?}");
    let held = HeldKey::new(scope(&merchant.id, "order-3"), &lapsed, now_ms() + HOUR_MS);
    let moved = move_to_pending(&store, &other, &held, Event::Created)
        .await
        .unwrap();
    assert_eq!(moved.status, ChargeState::Pending);
    assert_eq!(
        claim(&store, &merchant.id, "order-3", HOUR_MS).await,
        Claim::InProgress
    );
    // The answer was not the move's to store; its event was written all the same.
    assert_eq!(
        events_and_deliveries(&store, &other).await,
        [("charge.created".to_owned(), 1)]
    );
}
both_backends!(a_created_charges_move_stores_its_answer);
