//! The reconciler: asks PSPs about charges that can still change, so a notification that never
//! came (the cooperative bank may take 15 minutes) still ends in `paid`, and a charge nobody
//! paid ends in `expired` once its expiry plus a grace period has passed and the PSP confirms it
//! was not paid. A charge that can still be paid is never failed or expired.
//!
//! Checks follow [`ReconcilerConfig::schedule`] after the charge is created, then repeat at its
//! last interval. Due charges are leased, so several gateways on one PostgreSQL never check the
//! same charge at once, and a gateway that dies mid-check leaves the charge to the others.

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::charges::{ChargeError, state_of};
use crate::runtime::{CallError, PspError};
use crate::store::charges::{ChargeRecord, ChargeState, PspUpdate};
use crate::store::now_ms;

#[derive(Debug, Clone)]
pub struct ReconcilerConfig {
    /// Delays of the first checks after creation; the last one repeats.
    pub schedule: Vec<Duration>,
    /// Time after a charge's expiry before it is declared expired (PSP clocks and late
    /// settlements).
    pub grace: Duration,
    /// How often due checks are looked for.
    pub poll_interval: Duration,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        let s = Duration::from_secs;
        ReconcilerConfig {
            schedule: vec![s(10), s(30), s(60), s(120), s(300), s(600), s(900)],
            grace: s(300),
            poll_interval: s(1),
        }
    }
}

impl ReconcilerConfig {
    pub fn first_check_ms(&self) -> i64 {
        self.delay(0)
    }

    /// Milliseconds until the check after `checks` checks.
    fn delay(&self, checks: i64) -> i64 {
        let index = (checks.max(0) as usize).min(self.schedule.len().saturating_sub(1));
        self.schedule
            .get(index)
            .map_or(60_000, |d| d.as_millis() as i64)
    }
}

const LEASE_MS: i64 = 120_000;
const BATCH: i64 = 16;

/// Runs until the task is dropped.
pub async fn run(app: Arc<App>) {
    loop {
        match app.store.claim_due_checks(LEASE_MS, BATCH).await {
            Ok(due) if !due.is_empty() => {
                let checks = due.into_iter().map(|charge| check(&app, charge));
                futures::future::join_all(checks).await;
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reading charges to reconcile failed"),
        }
        tokio::time::sleep(app.config.reconciler.poll_interval).await;
    }
}

async fn check(app: &App, charge: ChargeRecord) {
    let outcome = check_one(app, &charge).await;
    let checks = app.store.check_count(&charge.id).await.unwrap_or(0);
    let next = match outcome {
        // A final state cleared the schedule with the move itself.
        Ok(true) => return,
        Ok(false) => Some(now_ms() + app.config.reconciler.delay(checks + 1)),
        Err(e) => {
            tracing::warn!(charge = %charge.id, provider = %charge.provider, error = %e, "reconciling a charge failed; will retry");
            Some(now_ms() + app.config.reconciler.delay(checks + 1))
        }
    };
    if let Err(e) = app.store.schedule_check(&charge.id, next).await {
        tracing::warn!(charge = %charge.id, error = %e, "scheduling the next check failed");
    }
}

/// Asks the PSP; `Ok(true)` when the charge reached a final state.
async fn check_one(app: &App, charge: &ChargeRecord) -> Result<bool, ChargeError> {
    let (adapter, prepared) = app.adapter_of(charge).await?;
    let request_id = format!("reconcile_{}", uuid::Uuid::new_v4().simple());
    let psp = match adapter
        .query_charge(
            &prepared,
            &request_id,
            &charge.reference,
            charge.psp_id.as_deref(),
        )
        .await
    {
        Ok(psp) => psp,
        // Nothing to learn now; try again later.
        Err(CallError::Psp {
            error: PspError::NotFound(_),
            ..
        }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if let Some(moved) = app.apply_psp_view(charge, &psp).await? {
        tracing::info!(charge = %charge.id, status = moved.status.as_str(), "reconciled with the PSP");
        return Ok(moved.status.is_final());
    }
    // The PSP's clock decides when its charge lapsed; ours only when it says nothing.
    let expires_at = psp
        .expires_at
        .as_deref()
        .and_then(crate::store::parse_rfc3339)
        .or(charge.expires_at);
    let past_grace =
        expires_at.is_some_and(|at| now_ms() > at + app.config.reconciler.grace.as_millis() as i64);
    let unpaid = matches!(
        state_of(psp.status),
        ChargeState::Pending | ChargeState::Expired
    );
    if past_grace && unpaid && psp.payment.is_none() {
        let moved = app
            .move_charge(
                &charge.id,
                &[ChargeState::Pending],
                ChargeState::Expired,
                PspUpdate::default(),
                false,
            )
            .await?;
        if moved.is_some() {
            tracing::info!(charge = %charge.id, "expired: past its expiry and the PSP reports no payment");
        }
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_repeats_its_last_interval() {
        let config = ReconcilerConfig::default();
        assert_eq!(config.first_check_ms(), 10_000);
        assert_eq!(config.delay(1), 30_000);
        assert_eq!(config.delay(6), 900_000);
        assert_eq!(config.delay(60), 900_000);
    }
}
