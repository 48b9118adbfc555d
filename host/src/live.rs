//! Live charge status for screens (the cashier's, the checkout's) and the API's stream: a
//! server-sent events stream per charge.
//!
//! **Pushed, not polled per viewer.** A change this gateway commits is published at once
//! ([`LiveUpdates::publish`], called where the transition commits). A change committed by
//! another gateway on the same database is found by one watcher task per process, which reads
//! the statuses of every followed charge in one query every [`WATCH_EVERY`] — and only while
//! someone follows a charge — then publishes what moved. A thousand open screens cost one
//! query every two seconds, not a thousand.
//!
//! **Bounded.** A merchant has at most [`LiveUpdates::limit`] streams open at once on one
//! gateway; one more is refused ([`LiveError::TooMany`], 429 with `Retry-After`) so a runaway
//! client cannot hold every connection. A stream gives its place back when it is dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::domain::Environment;
use crate::store::StoreError;
use crate::store::charges::{ChargeRecord, ChargeState};

/// One charge's new status.
#[derive(Debug, Clone)]
pub struct StatusChange {
    pub charge_id: String,
    pub status: &'static str,
}

/// How often the watcher reads the followed charges' statuses for other gateways' changes.
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// Streams a merchant may have open at once on one gateway, unless configured.
pub const DEFAULT_STREAMS_PER_MERCHANT: usize = 100;

/// Why a stream was not opened.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(
        "this merchant has {limit} live charge streams open, the most allowed at once; close \
         one (or read the charge with GET /v1/charges/{{id}}) and try again"
    )]
    TooMany { limit: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A 429 with `Retry-After` for the dashboard's screens, which fall back to polling.
impl axum::response::IntoResponse for LiveError {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{StatusCode, header};
        match self {
            LiveError::TooMany { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "5")],
                self.to_string(),
            )
                .into_response(),
            LiveError::Store(e) => {
                tracing::error!(error = %e, "opening a live charge stream failed");
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
    }
}

/// A followed charge: its last known status and how many streams follow it.
struct Watched {
    status: &'static str,
    followers: usize,
}

#[derive(Default)]
struct Followers {
    /// Open streams per merchant.
    per_merchant: HashMap<String, usize>,
    /// Followed charges by id.
    charges: HashMap<String, Watched>,
}

pub struct LiveUpdates {
    sender: broadcast::Sender<StatusChange>,
    followers: Arc<Mutex<Followers>>,
    limit: usize,
    watching: AtomicBool,
}

impl Default for LiveUpdates {
    fn default() -> Self {
        LiveUpdates::new(DEFAULT_STREAMS_PER_MERCHANT)
    }
}

impl LiveUpdates {
    pub fn new(streams_per_merchant: usize) -> LiveUpdates {
        LiveUpdates {
            sender: broadcast::channel(1024).0,
            followers: Arc::default(),
            limit: streams_per_merchant.max(1),
            watching: AtomicBool::new(false),
        }
    }

    /// Streams a merchant may have open at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn publish(&self, charge_id: &str, status: &'static str) {
        if let Some(watched) = self.followers.lock().charges.get_mut(charge_id) {
            watched.status = status;
        }
        // No subscriber is fine: nobody is watching.
        let _ = self.sender.send(StatusChange {
            charge_id: charge_id.to_owned(),
            status,
        });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<StatusChange> {
        self.sender.subscribe()
    }

    /// Streams open for `merchant_id` now.
    pub fn open_streams(&self, merchant_id: &str) -> usize {
        let followers = self.followers.lock();
        followers
            .per_merchant
            .get(merchant_id)
            .copied()
            .unwrap_or(0)
    }

    /// Takes a place for one more stream of `merchant_id` following a charge now in `status`.
    fn admit(
        &self,
        merchant_id: &str,
        charge_id: &str,
        status: &'static str,
    ) -> Result<Place, LiveError> {
        let mut followers = self.followers.lock();
        let open = followers
            .per_merchant
            .entry(merchant_id.to_owned())
            .or_default();
        if *open >= self.limit {
            return Err(LiveError::TooMany { limit: self.limit });
        }
        *open += 1;
        followers
            .charges
            .entry(charge_id.to_owned())
            .or_insert(Watched {
                status,
                followers: 0,
            })
            .followers += 1;
        Ok(Place {
            followers: self.followers.clone(),
            merchant_id: merchant_id.to_owned(),
            charge_id: charge_id.to_owned(),
        })
    }

    /// Reads the followed charges' statuses and publishes those another gateway moved.
    async fn look(&self, store: &crate::store::Store) -> Result<(), StoreError> {
        let ids: Vec<String> = self.followers.lock().charges.keys().cloned().collect();
        for chunk in ids.chunks(500) {
            for (id, status) in store.charge_statuses(chunk).await? {
                let Some(state) = ChargeState::parse(&status) else {
                    continue;
                };
                let moved = self
                    .followers
                    .lock()
                    .charges
                    .get(&id)
                    .is_some_and(|w| w.status != state.as_str());
                if moved {
                    self.publish(&id, state.as_str());
                }
            }
        }
        Ok(())
    }

    /// Starts this process's watcher once; it reads only while charges are followed.
    fn watch(&self, app: &Arc<crate::app::App>) {
        if self.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let app = Arc::downgrade(app);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(WATCH_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(app) = app.upgrade() else {
                    return;
                };
                let live = &app.charges.live;
                if live.followers.lock().charges.is_empty() {
                    continue;
                }
                if let Err(e) = live.look(&app.store).await {
                    tracing::warn!(error = %e, "reading followed charges failed");
                }
            }
        });
    }
}

/// A stream's place: given back when the stream is dropped.
struct Place {
    followers: Arc<Mutex<Followers>>,
    merchant_id: String,
    charge_id: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut followers = self.followers.lock();
        if let Some(open) = followers.per_merchant.get_mut(&self.merchant_id) {
            *open -= 1;
            if *open == 0 {
                followers.per_merchant.remove(&self.merchant_id);
            }
        }
        if let Some(watched) = followers.charges.get_mut(&self.charge_id) {
            watched.followers -= 1;
            if watched.followers == 0 {
                followers.charges.remove(&self.charge_id);
            }
        }
    }
}

/// Follows one charge of `merchant_id` in `environment`: the stream yields its record at once
/// and again after every status change, and ends after a final status. `None` when no such
/// charge exists (another merchant's or environment's is never followed).
pub async fn follow(
    app: Arc<crate::app::App>,
    merchant_id: String,
    environment: Environment,
    charge_id: String,
) -> Result<Option<impl futures::Stream<Item = ChargeRecord> + use<>>, LiveError> {
    // Subscribe before reading, so a change between the two is not missed.
    let updates = app.charges.live.subscribe();
    let Some(charge) = app
        .store
        .charge(&merchant_id, environment, &charge_id)
        .await?
    else {
        return Ok(None);
    };
    let place = app
        .charges
        .live
        .admit(&charge.merchant_id, &charge.id, charge.status.as_str())?;
    app.charges.live.watch(&app);
    struct Follow {
        app: Arc<crate::app::App>,
        merchant_id: String,
        environment: Environment,
        id: String,
        updates: broadcast::Receiver<StatusChange>,
        /// The latest record read, not yet yielded.
        pending: Option<ChargeRecord>,
        last: Option<ChargeState>,
        _place: Place,
    }
    let start = Follow {
        app,
        merchant_id,
        environment,
        id: charge_id,
        updates,
        pending: Some(charge),
        last: None,
        _place: place,
    };
    Ok(Some(futures::stream::unfold(start, |mut f| async move {
        loop {
            if let Some(charge) = f.pending.take()
                && f.last != Some(charge.status)
            {
                f.last = Some(charge.status);
                return Some((charge, f));
            }
            if f.last.is_some_and(ChargeState::is_final) {
                return None;
            }
            let reread = match f.updates.recv().await {
                Ok(change) => change.charge_id == f.id,
                // Lagged: read the charge again.
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if reread
                && let Ok(Some(charge)) = f
                    .app
                    .store
                    .charge(&f.merchant_id, f.environment, &f.id)
                    .await
            {
                f.pending = Some(charge);
            }
        }
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merchant_has_a_bounded_number_of_streams_and_gets_places_back() {
        let live = LiveUpdates::new(2);
        let a = live.admit("m1", "chg_1", "pending").unwrap();
        let b = live.admit("m1", "chg_2", "pending").unwrap();
        assert!(matches!(
            live.admit("m1", "chg_3", "pending"),
            Err(LiveError::TooMany { limit: 2 })
        ));
        // Another merchant has places of its own.
        let other = live.admit("m2", "chg_9", "pending").unwrap();
        assert_eq!(live.open_streams("m1"), 2);
        drop(a);
        assert_eq!(live.open_streams("m1"), 1);
        let c = live.admit("m1", "chg_2", "pending").unwrap();
        assert_eq!(live.followers.lock().charges["chg_2"].followers, 2);
        drop((b, c, other));
        assert_eq!(live.open_streams("m1"), 0);
        assert!(live.followers.lock().charges.is_empty());
        assert!(live.followers.lock().per_merchant.is_empty());
    }

    #[test]
    fn a_published_change_updates_the_watched_status() {
        let live = LiveUpdates::new(2);
        let mut updates = live.subscribe();
        let _place = live.admit("m1", "chg_1", "pending").unwrap();
        live.publish("chg_1", "paid");
        assert_eq!(live.followers.lock().charges["chg_1"].status, "paid");
        let change = updates.try_recv().unwrap();
        assert_eq!(
            (change.charge_id.as_str(), change.status),
            ("chg_1", "paid")
        );
    }
}
