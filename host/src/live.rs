//! Live charge status for screens (the cashier's): a server-sent events stream per charge.
//!
//! Changes made by this gateway are published at once; changes made by another gateway on the
//! same database are picked up by a short poll, so a screen never waits for a page reload.

use tokio::sync::broadcast;

/// One charge's new status.
#[derive(Debug, Clone)]
pub struct StatusChange {
    pub charge_id: String,
    pub status: &'static str,
}

pub struct LiveUpdates(broadcast::Sender<StatusChange>);

impl Default for LiveUpdates {
    fn default() -> Self {
        LiveUpdates(broadcast::channel(1024).0)
    }
}

impl LiveUpdates {
    pub fn publish(&self, charge_id: &str, status: &'static str) {
        // No subscriber is fine: nobody is watching.
        let _ = self.0.send(StatusChange {
            charge_id: charge_id.to_owned(),
            status,
        });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<StatusChange> {
        self.0.subscribe()
    }
}

/// How often a follower reads the charge again when no change was announced in this process:
/// another gateway on the same database may have moved it.
const POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Follows one charge of `merchant_id` in `environment`: the stream yields its record at once
/// and again after every status change, and ends after a final status. `None` when no such
/// charge exists (another merchant's or environment's is never followed).
pub async fn follow(
    app: std::sync::Arc<crate::app::App>,
    merchant_id: String,
    environment: crate::domain::Environment,
    charge_id: String,
) -> Result<
    Option<impl futures::Stream<Item = crate::store::charges::ChargeRecord> + use<>>,
    crate::store::StoreError,
> {
    use crate::store::charges::{ChargeRecord, ChargeState};
    // Subscribe before reading, so a change between the two is not missed.
    let updates = app.live.subscribe();
    let Some(charge) = app
        .store
        .charge(&merchant_id, environment, &charge_id)
        .await?
    else {
        return Ok(None);
    };
    struct Follow {
        app: std::sync::Arc<crate::app::App>,
        merchant_id: String,
        environment: crate::domain::Environment,
        id: String,
        updates: broadcast::Receiver<StatusChange>,
        /// The latest record read, not yet yielded.
        pending: Option<ChargeRecord>,
        last: Option<ChargeState>,
    }
    let start = Follow {
        app,
        merchant_id,
        environment,
        id: charge_id,
        updates,
        pending: Some(charge),
        last: None,
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
            let reread = tokio::select! {
                update = f.updates.recv() => match update {
                    Ok(change) => change.charge_id == f.id,
                    // Lagged or closed: read the charge again.
                    Err(_) => true,
                },
                _ = tokio::time::sleep(POLL) => true,
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
