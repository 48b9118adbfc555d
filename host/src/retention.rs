//! Log retention: the logs a merchant sees — PSP notifications, events with their webhook
//! deliveries and attempts, attempts at PSPs — are kept for their plan's retention days
//! ([`crate::plans::Plan::log_retention_days`], 1 to 60) and then deleted by [`run`], a
//! background task every gateway runs (the deletes are idempotent, so several may sweep at
//! once). What is still needed is kept however old: see [`crate::store::retention`].
//!
//! Charges, the statement and the audit log are records, not logs: they are never swept here.

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::plans::{PLANS, PlanId};
use crate::store::retention::Swept;
use crate::store::{Store, StoreError, now_ms};

const DAY_MS: i64 = 24 * 3600 * 1000;
/// How often the task sweeps: retention is counted in days, so hourly is prompt enough.
const EVERY: Duration = Duration::from_secs(3600);

/// The plans grouped by their retention days.
fn by_retention() -> Vec<(u32, Vec<PlanId>)> {
    let mut groups: Vec<(u32, Vec<PlanId>)> = Vec::new();
    for plan in &PLANS {
        match groups
            .iter_mut()
            .find(|(days, _)| *days == plan.log_retention_days)
        {
            Some((_, ids)) => ids.push(plan.id),
            None => groups.push((plan.log_retention_days, vec![plan.id])),
        }
    }
    groups
}

/// Deletes every merchant's logs older than its plan keeps them, as of `now` (Unix ms): a log
/// written at `t` goes once `now - t` exceeds the retention days.
pub async fn sweep(store: &Store, now: i64) -> Result<Swept, StoreError> {
    let mut total = Swept::default();
    for (days, plans) in by_retention() {
        let swept = store
            .sweep_logs(&plans, now - i64::from(days) * DAY_MS)
            .await?;
        total.add(swept);
    }
    Ok(total)
}

/// The background task: sweeps at start, then hourly, until the process ends.
pub async fn run(app: Arc<App>) {
    let mut every = tokio::time::interval(EVERY);
    loop {
        every.tick().await;
        match sweep(&app.store, now_ms()).await {
            Ok(swept) if swept.total() > 0 => tracing::info!(?swept, "old logs swept"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "sweeping old logs failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plan_is_in_one_retention_group() {
        let groups = by_retention();
        let days: Vec<u32> = groups.iter().map(|(d, _)| *d).collect();
        assert_eq!(days, [1, 3, 7, 15, 30, 60]);
        let count: usize = groups.iter().map(|(_, p)| p.len()).sum();
        assert_eq!(count, PLANS.len());
        assert_eq!(groups[4].1, [PlanId::Scale, PlanId::Enterprise], "30 days");
    }
}
