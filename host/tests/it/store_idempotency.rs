//! An idempotency key's answer stored by the write that makes it: a created charge's move out
//! of `creating` stores the key's 201 answer in its own transaction ([`HeldKey`]), and only
//! when the move happened and the lock is still the request's; and a move of a charge the
//! caller knows, which PostgreSQL makes in one statement. Both backends.

use std::sync::Arc;

use pixgw::domain::Environment;
use pixgw::store::charges::{AnswerWith, ChargeRecord, ChargeState, PspUpdate};
use pixgw::store::credentials::CredentialRecord;
use pixgw::store::idempotency::{Claim, HeldKey, KeyClaim, KeyScope, new_lock};
use pixgw::store::merchants::Merchant;
use pixgw::store::routing::AttemptRecord;
use pixgw::store::{Durability, Store, StoreError, now_ms};

use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};
use crate::common::records::{charge, credential, endpoint, events_of, store_on};

const HOUR_MS: i64 = 3_600_000;

fn scope<'a>(merchant_id: &'a str, key: &'a str) -> KeyScope<'a> {
    KeyScope {
        merchant_id,
        environment: Environment::Test,
        key,
    }
}

/// A request's claim on `key` of `merchant_id`, placing `reference` under `lock` for `lock_ms`.
fn key_claim<'a>(
    merchant_id: &'a str,
    key: &'a str,
    reference: &'a str,
    lock: &'a str,
    lock_ms: i64,
) -> KeyClaim<'a> {
    KeyClaim {
        scope: scope(merchant_id, key),
        request_hash: "hash",
        reference,
        lock,
        lock_ms,
        ttl_ms: HOUR_MS,
    }
}

/// Claims `key` for a request of `merchant_id`, locked for `lock_ms`.
async fn claim(store: &Store, merchant_id: &str, key: &str, lock_ms: i64) -> Claim {
    let lock = new_lock();
    store
        .claim_idempotency_key(key_claim(merchant_id, key, "ref", &lock, lock_ms))
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
            None,
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

/// A store with a merchant, its test credential and an endpoint subscribed to
/// `charge.created`.
async fn merchant_with_endpoint(backend: Backend) -> (TestDb, Store, Merchant, CredentialRecord) {
    let (db, store) = store_on(backend).await;
    let merchant = store
        .create_merchant("Loja", pixgw::plans::PlanId::Free)
        .await
        .unwrap();
    let credential = credential(&store, &merchant.id, Environment::Test).await;
    endpoint(&store, &credential, &["charge.created"]).await;
    (db, store, merchant, credential)
}

async fn a_created_charges_move_stores_its_answer(backend: Backend) {
    let (_db, store, merchant, credential) = merchant_with_endpoint(backend).await;
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

/// Moves `charge` to `pending` as the charge path does, with the caller's `known` copy of it:
/// the PSP's answer, the attempt that brought it, a `charge.created` event and `key`'s answer.
async fn finish(
    store: &Store,
    charge: &ChargeRecord,
    key: &Arc<HeldKey>,
    known: ChargeRecord,
) -> Option<ChargeRecord> {
    let update = PspUpdate {
        psp_id: Some(format!("psp-{}", charge.id)),
        copy_paste: Some("00020101021226830014br.gov.bcb.pix".into()),
        qr_png_base64: Some("iVBORw0KGgo=".into()),
        expires_at: Some(charge.created_at + HOUR_MS),
        next_check_at: Some(Some(charge.created_at + 60_000)),
        ..PspUpdate::default()
    };
    let attempt = AttemptRecord {
        reference: charge.reference.clone(),
        credential_id: charge.credential_id.clone(),
        provider: charge.provider.clone(),
        outcome: "created",
        message: None,
    };
    store
        .transition_charge_with(
            charge.id.clone(),
            vec![ChargeState::Creating],
            ChargeState::Pending,
            update,
            Some(attempt),
            Some(Arc::new(|c: &ChargeRecord| {
                pixgw::webhooks::event_for(c, "charge.created")
            })),
            Some(answer(key)),
            Durability::Deferred,
            Some(known),
        )
        .await
        .unwrap()
}

async fn a_known_charges_move_writes_what_is_stored(backend: Backend) {
    let (_db, store, merchant, credential) = merchant_with_endpoint(backend).await;
    let held_key = |key: &str| {
        let (store, merchant_id, key) = (store.clone(), merchant.id.clone(), key.to_owned());
        async move {
            let lock = lock_of(claim(&store, &merchant_id, &key, HOUR_MS).await);
            HeldKey::new(scope(&merchant_id, &key), &lock, now_ms() + HOUR_MS)
        }
    };
    // What was moved is what is stored, and the event and the answer say the same.
    let check = async |moved: &ChargeRecord, key: &str| {
        let stored = store
            .charge(&moved.merchant_id, moved.environment, &moved.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&stored, moved);
        let events = events_of(&store, moved).await;
        assert_eq!(events.len(), 1);
        assert_eq!(
            events[0].payload["data"],
            pixgw::webhooks::event_for(&stored, "charge.created").payload["data"]
        );
        assert_eq!(
            events_and_deliveries(&store, moved).await,
            [("charge.created".to_owned(), 1)]
        );
        assert_eq!(
            claim(&store, &merchant.id, key, HOUR_MS).await,
            Claim::Replay {
                status: 201,
                body: format!("{} pending", moved.id)
            }
        );
    };

    // The charge as written: moved as the PSP answered, the attempt recorded once.
    let written = charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&written).await.unwrap(),
        Ok(true)
    );
    let key = held_key("known").await;
    let moved = finish(&store, &written, &key, written.clone())
        .await
        .unwrap();
    assert_eq!(moved.status, ChargeState::Pending);
    assert_eq!(moved.psp_id, Some(format!("psp-{}", written.id)));
    assert_eq!(moved.qr_png_base64.as_deref(), Some("iVBORw0KGgo="));
    assert_eq!(moved.description, written.description);
    check(&moved, "known").await;
    let attempts = store
        .charge_attempts(written.reference.as_str())
        .await
        .unwrap();
    assert_eq!(attempts.len(), 1);

    // A copy that is no longer the stored row (here: another description): the move is made
    // from the row as stored, and the attempt is still recorded once.
    let other = charge(&credential, now_ms());
    assert_eq!(
        store.insert_creating_charge(&other).await.unwrap(),
        Ok(true)
    );
    let mut stale = other.clone();
    stale.description = Some("not what is stored".into());
    let key = held_key("stale").await;
    let moved = finish(&store, &other, &key, stale).await.unwrap();
    assert_eq!(moved.description, other.description);
    check(&moved, "stale").await;
    let attempts = store
        .charge_attempts(other.reference.as_str())
        .await
        .unwrap();
    assert_eq!(attempts.len(), 1);

    // Moved already: nothing moves, no second event; the attempt is recorded, as every try is.
    let key = held_key("again").await;
    assert!(
        finish(&store, &written, &key, written.clone())
            .await
            .is_none()
    );
    assert_eq!(events_of(&store, &written).await.len(), 1);
    assert_eq!(
        claim(&store, &merchant.id, "again", HOUR_MS).await,
        Claim::InProgress
    );
    let attempts = store
        .charge_attempts(written.reference.as_str())
        .await
        .unwrap();
    assert_eq!(attempts.len(), 2);
}
both_backends!(a_known_charges_move_writes_what_is_stored);

/// A request on SQLite with the key `order-1` under `lock`: its claim handed to the writer, then
/// a new charge's `creating` row placed behind it before the claim is awaited. The charge, how
/// its row went, and the claim.
async fn place_behind_claim(
    store: &Store,
    merchant_id: &str,
    credential: &CredentialRecord,
    lock: &str,
) -> (
    ChargeRecord,
    Result<pixgw::plans::Admission<bool>, StoreError>,
    Claim,
) {
    let placed = charge(credential, now_ms());
    let claim = key_claim(
        merchant_id,
        "order-1",
        placed.reference.as_str(),
        lock,
        HOUR_MS,
    );
    let claimed = store
        .claim_idempotency_key_now(claim)
        .expect("SQLite hands a claim to its writer at once");
    let held = HeldKey::new(claim.scope, lock, now_ms() + HOUR_MS);
    let row = match store
        .insert_creating_charge_then_sync(&placed, Some(&held))
        .await
    {
        Ok((inserted, on_disk)) => on_disk
            .await
            .map(|()| inserted)
            .map_err(StoreError::Unsynced),
        Err(e) => Err(e),
    };
    (placed, row, claimed.await.unwrap())
}

/// On SQLite a request's claim goes to the writer and its `creating` row follows without
/// waiting for it: the row is written only when the claim made the request the key's holder
/// with the row's reference, and nothing is written otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creating_row_behind_its_claim_is_written_only_if_the_claim_holds() {
    let (_db, store, merchant, credential) = merchant_with_endpoint(Backend::Sqlite).await;

    // A new key: the row is written, and the claim made this request its holder.
    let lock = new_lock();
    let (first, row, claim) = place_behind_claim(&store, &merchant.id, &credential, &lock).await;
    assert_eq!(row.unwrap(), Ok(true));
    assert_eq!(
        claim,
        Claim::Fresh {
            reference: first.reference.to_string(),
            lock: lock.clone()
        }
    );

    // A second request with the key while the first runs: its claim finds it in progress,
    // and its row is not written.
    let (second, row, claim) =
        place_behind_claim(&store, &merchant.id, &credential, &new_lock()).await;
    assert!(matches!(row, Err(StoreError::KeyNotHeld)), "{row:?}");
    assert_eq!(claim, Claim::InProgress);

    // The holder placing another reference than the one its key holds (a resumed key keeps
    // its first): not written either.
    let third = charge(&credential, now_ms());
    let held = HeldKey::new(scope(&merchant.id, "order-1"), &lock, now_ms() + HOUR_MS);
    let refused = store
        .insert_creating_charge_then_sync(&third, Some(&held))
        .await;
    assert!(
        matches!(refused, Err(StoreError::KeyNotHeld)),
        "{refused:?}"
    );

    for (placed, written) in [(&first, true), (&second, false), (&third, false)] {
        assert_eq!(
            store
                .charge_by_reference(placed.reference.as_str())
                .await
                .unwrap()
                .is_some(),
            written,
            "{}",
            placed.reference
        );
    }
}

/// PostgreSQL has no writer to hand a claim to ahead: the request awaits its claim first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_claims_are_awaited_before_the_charge() {
    let (_db, store) = store_on(Backend::Postgres).await;
    let lock = new_lock();
    let claim = key_claim("any", "order-1", "ref", &lock, HOUR_MS);
    assert!(store.claim_idempotency_key_now(claim).is_none());
}
