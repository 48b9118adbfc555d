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
    /// A charge left `creating` this long (its create's outcome unknown, and no retry resumed
    /// it) is settled: canceled at the PSP if it exists there, forgotten if not.
    pub orphan_age: Duration,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        let s = Duration::from_secs;
        ReconcilerConfig {
            schedule: vec![s(10), s(30), s(60), s(120), s(300), s(600), s(900)],
            grace: s(300),
            poll_interval: s(1),
            orphan_age: s(600),
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
        let orphan_age = app.config.reconciler.orphan_age.as_millis() as i64;
        match app
            .store
            .claim_stale_creating(orphan_age, LEASE_MS, BATCH)
            .await
        {
            Ok(stale) => {
                for charge in stale {
                    if let Err(e) = settle_orphan(&app, &charge).await {
                        tracing::warn!(charge = %charge.id, error = %e, "settling an unfinished create failed; will retry");
                    }
                    let _ = app.store.schedule_check(&charge.id, None).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading unfinished creates failed"),
        }
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

/// A create whose outcome stayed unknown: if the PSP holds the charge, nobody was given its
/// code, so it is canceled there (an orphan must not be paid); if not, the row goes.
async fn settle_orphan(app: &App, charge: &ChargeRecord) -> Result<(), ChargeError> {
    let (adapter, prepared) = app.adapter_of(charge).await?;
    let request_id = format!("orphan_{}", uuid::Uuid::new_v4().simple());
    match adapter
        .query_charge(
            &prepared,
            &request_id,
            &charge.reference,
            charge.psp_id.as_deref(),
        )
        .await
    {
        Err(CallError::Psp {
            error: PspError::NotFound(_),
            ..
        }) => {
            tracing::info!(charge = %charge.id, "unfinished create: the PSP has no such charge");
            app.store.delete_creating_charge(&charge.id).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
        Ok(psp) => {
            let final_state = state_of(psp.status);
            let psp = if final_state.is_final() {
                psp
            } else if adapter
                .manifest()
                .capabilities
                .contains(crate::runtime::Capabilities::CANCEL_CHARGE)
            {
                adapter
                    .cancel_charge(&prepared, &request_id, &charge.reference, Some(&psp.psp_id))
                    .await?
            } else {
                tracing::warn!(charge = %charge.id, provider = %charge.provider,
                    "orphan charge at a PSP that cannot cancel: it will lapse at its expiry");
                psp
            };
            let to = match state_of(psp.status) {
                ChargeState::Paid => ChargeState::Paid,
                _ => ChargeState::Canceled,
            };
            // Kept for the record; no event: the merchant never received this charge.
            let update = PspUpdate {
                psp_id: Some(psp.psp_id.clone()),
                next_check_at: Some(None),
                ..Default::default()
            };
            app.store
                .transition_charge(&charge.id, &[ChargeState::Creating], to, &update, None)
                .await?;
            tracing::warn!(charge = %charge.id, provider = %charge.provider, status = to.as_str(),
                "unfinished create settled: an orphan charge turned up at the PSP");
            Ok(())
        }
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
