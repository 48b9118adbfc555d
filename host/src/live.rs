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
