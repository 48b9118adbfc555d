//! The reconciler: asks PSPs about charges that can still change, so a notification that never
//! came (the cooperative bank may take 15 minutes) still ends in `paid`, and a charge nobody
//! paid ends in `expired` once its expiry plus a grace period has passed and the PSP confirms it
//! was not paid. A charge that can still be paid is never failed or expired.
//!
//! Checks follow [`ReconcilerConfig::schedule`] after the charge is created, then repeat at its
//! last interval. Due charges are leased, so several gateways on one PostgreSQL never check the
//! same charge at once; a lease is short ([`ReconcilerConfig::lease`]) and renewed while its
//! check runs, so a gateway that dies mid-check (even `kill -9`) leaves the charge to the
//! others, or to itself restarted, within one lease.
//!
//! Each charge is checked on its own task, at most [`ReconcilerConfig::concurrency`] at once and
//! each within [`ReconcilerConfig::item_timeout`]: a slow PSP holds up its own charges only,
//! never a batch with other merchants' charges in it.
//!
//! Before an unpaid charge is declared expired, it is canceled at the PSP where the PSP can
//! cancel, so no payment can arrive after the merchant was told it expired; if the PSP answers
//! that it was paid, it is paid.

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
    /// How long a charge stays leased to a reconciler without renewal; renewed every third of
    /// it while the check runs.
    pub lease: Duration,
    /// Checks running at once.
    pub concurrency: usize,
    /// The longest one check (query, cancel) may take before it is abandoned and retried later.
    pub item_timeout: Duration,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        let s = Duration::from_secs;
        ReconcilerConfig {
            schedule: vec![s(10), s(30), s(60), s(120), s(300), s(600), s(900)],
            grace: s(300),
            poll_interval: s(1),
            orphan_age: s(600),
            lease: s(15),
            concurrency: 16,
            item_timeout: s(120),
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

/// Runs until the task is dropped.
pub async fn run(app: Arc<App>) {
    let config = &app.config.reconciler;
    let owner = format!("reconciler_{}", uuid::Uuid::new_v4().simple());
    let lease_ms = config.lease.as_millis().max(3) as i64;
    let concurrency = config.concurrency.max(1);
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.try_join_next().is_some() {}
        // Take only as much work as there are free places: the rest stays unleased for other
        // gateways (or for this one as soon as a place frees up).
        let free = concurrency.saturating_sub(running.len()) as i64;
        let mut found = 0;
        if free > 0 {
            let orphan_age = config.orphan_age.as_millis() as i64;
            match app
                .store
                .claim_stale_creating(&owner, orphan_age, lease_ms, free)
                .await
            {
                Ok(claimed) => {
                    found += claimed.charges.len();
                    for charge in claimed.charges {
                        let (app, mark) = (app.clone(), claimed.mark.clone());
                        running.spawn(async move {
                            leased(&app, &charge, &mark, Work::Orphan).await;
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading unfinished creates failed"),
            }
        }
        let free = concurrency.saturating_sub(running.len()) as i64;
        if free > 0 {
            match app.store.claim_due_checks(&owner, lease_ms, free).await {
                Ok(claimed) => {
                    found += claimed.charges.len();
                    for charge in claimed.charges {
                        let (app, mark) = (app.clone(), claimed.mark.clone());
                        running.spawn(async move {
                            leased(&app, &charge, &mark, Work::Check).await;
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading charges to reconcile failed"),
            }
        }
        // More may be due at once when this round filled every free place.
        if found > 0 && running.len() < concurrency {
            continue;
        }
        // Wait for the next poll, or for a place to free up when all are taken.
        tokio::select! {
            _ = tokio::time::sleep(config.poll_interval) => {}
            Some(_) = running.join_next(), if running.len() >= concurrency => {}
        }
    }
}

#[derive(Clone, Copy)]
enum Work {
    Orphan,
    Check,
}

/// Runs one piece of work on a leased charge: renews the lease while it runs, gives up at the
/// item timeout, and schedules the next check (which releases the lease).
async fn leased(app: &App, charge: &ChargeRecord, mark: &str, work: Work) {
    let config = &app.config.reconciler;
    let lease_ms = config.lease.as_millis().max(3) as i64;
    let renew = async {
        let every = Duration::from_millis(lease_ms as u64 / 3);
        loop {
            tokio::time::sleep(every).await;
            match app
                .store
                .renew_check_lease(&charge.id, mark, lease_ms)
                .await
            {
                Ok(true) => {}
                // Lost (it lapsed and another reconciler has it): stop here.
                Ok(false) => return,
                Err(e) => {
                    tracing::warn!(charge = %charge.id, error = %e, "renewing a reconciler lease failed")
                }
            }
        }
    };
    let job = async {
        match work {
            Work::Orphan => match settle_orphan(app, charge).await {
                Ok(()) => {
                    let _ = app.store.schedule_check(&charge.id, None).await;
                }
                // The lease is left to lapse: the retry comes one lease later, not at once.
                Err(e) => {
                    tracing::warn!(charge = %charge.id, error = %e, "settling an unfinished create failed; will retry");
                }
            },
            Work::Check => check(app, charge.clone()).await,
        }
    };
    let timed_out = tokio::select! {
        done = tokio::time::timeout(config.item_timeout, job) => done.is_err(),
        // The lease is another reconciler's now: leave the charge to it.
        () = renew => false,
    };
    if timed_out {
        tracing::warn!(charge = %charge.id, provider = %charge.provider, timeout = ?config.item_timeout,
            "reconciling a charge did not finish; will retry");
        // An orphan's lease lapses on its own; a check is scheduled as after a failure.
        if let Work::Check = work {
            let checks = app.store.check_count(&charge.id).await.unwrap_or(0);
            let next = Some(now_ms() + config.delay(checks + 1));
            if let Err(e) = app.store.schedule_check(&charge.id, next).await {
                tracing::warn!(charge = %charge.id, error = %e, "scheduling the next check failed");
            }
        }
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
/// code, so it is canceled there (an orphan must not be paid); if not, the row goes. The PSP is
/// asked first, and money wins: an orphan the PSP reports paid — at the query, or when it
/// refuses the cancel because the payment came first — becomes `paid` with its `charge.paid`
/// (once: the move is from `creating` only, so a resumed retry and this cannot both make it).
async fn settle_orphan(app: &App, charge: &ChargeRecord) -> Result<(), ChargeError> {
    let (adapter, prepared) = app.charges.adapter_of(charge).await?;
    let request_id = format!("orphan_{}", uuid::Uuid::new_v4().simple());
    let query = |psp_id: Option<String>| {
        let (adapter, prepared, request_id) = (&adapter, &prepared, &request_id);
        async move {
            adapter
                .query_charge(
                    prepared,
                    request_id,
                    charge.reference.as_str(),
                    psp_id.as_deref(),
                )
                .await
        }
    };
    let psp = match query(charge.psp_id.clone()).await {
        Err(CallError::Psp {
            error: PspError::NotFound(_),
            ..
        }) => {
            tracing::info!(charge = %charge.id, "unfinished create: the PSP has no such charge");
            app.store.delete_creating_charge(&charge.id).await?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
        Ok(psp) => psp,
    };
    let cancels = adapter
        .manifest()
        .capabilities
        .contains(crate::runtime::Capabilities::CANCEL_CHARGE);
    let psp = if paid(&psp) || state_of(psp.status).is_final() {
        psp
    } else if cancels {
        let psp_id = Some(psp.psp_id.clone()).filter(|id| !id.is_empty());
        match adapter
            .cancel_charge(
                &prepared,
                &request_id,
                charge.reference.as_str(),
                psp_id.as_deref(),
            )
            .await
        {
            Ok(after) => after,
            // The PSP would not cancel: most likely it was paid in between. Its view decides.
            Err(CallError::Psp {
                error: PspError::Rejected(_) | PspError::NotFound(_),
                ..
            }) => query(psp_id).await?,
            Err(e) => return Err(e.into()),
        }
    } else {
        tracing::warn!(charge = %charge.id, provider = %charge.provider,
            "orphan charge at a PSP that cannot cancel: it will lapse at its expiry");
        psp
    };
    if paid(&psp) {
        // `move_charge` clears the next check of a final state itself.
        let update = crate::charges::update_of(&psp);
        let moved = app
            .charges
            .move_charge(
                &charge.id,
                &[ChargeState::Creating],
                ChargeState::Paid,
                update,
                false,
            )
            .await?;
        if moved.is_some() {
            tracing::warn!(charge = %charge.id, provider = %charge.provider,
                "unfinished create settled: the orphan charge was already paid at the PSP");
        }
        return Ok(());
    }
    let to = match state_of(psp.status) {
        ChargeState::Pending | ChargeState::Processing if cancels => {
            // Neither canceled nor paid: ask again later rather than call it canceled.
            return Err(ChargeError::BadPspAnswer {
                provider: charge.provider.clone(),
                detail: format!(
                    "the orphan charge is still {} there after a cancel",
                    state_of(psp.status).as_str()
                ),
            });
        }
        ChargeState::Expired => ChargeState::Expired,
        _ => ChargeState::Canceled,
    };
    // Kept for the record; no event: the merchant never received this charge.
    let update = PspUpdate {
        psp_id: Some(psp.psp_id.clone()).filter(|id| !id.is_empty()),
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

/// Whether the PSP's view says money arrived (some PSPs report a payment on a charge they also
/// call expired or canceled).
fn paid(psp: &crate::runtime::Charge) -> bool {
    state_of(psp.status) == ChargeState::Paid || psp.payment.is_some()
}

/// Asks the PSP; `Ok(true)` when the charge reached a final state.
async fn check_one(app: &App, charge: &ChargeRecord) -> Result<bool, ChargeError> {
    let (adapter, prepared) = app.charges.adapter_of(charge).await?;
    let request_id = format!("reconcile_{}", uuid::Uuid::new_v4().simple());
    let psp = match adapter
        .query_charge(
            &prepared,
            &request_id,
            charge.reference.as_str(),
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
    if let Some(moved) = app.charges.apply_psp_view(charge, &psp).await? {
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
        // Closed at the PSP first, where it can be, so no payment can follow the merchant's
        // `charge.expired`; the PSP's answer to the cancel is the last word.
        let psp = match close_at_psp(&adapter, &prepared, &request_id, charge, psp).await? {
            Closed::Paid(psp) => {
                let moved = app.charges.apply_psp_view(charge, &psp).await?;
                return Ok(moved.is_some_and(|m| m.status.is_final()));
            }
            Closed::Unpaid(psp) => psp,
        };
        let moved = app
            .charges
            .move_charge(
                &charge.id,
                &[ChargeState::Pending],
                ChargeState::Expired,
                PspUpdate {
                    psp_id: Some(psp.psp_id).filter(|id| !id.is_empty()),
                    ..Default::default()
                },
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

/// What closing a lapsed charge at its PSP found.
enum Closed {
    /// The PSP reports it paid after all.
    Paid(crate::runtime::Charge),
    /// It can no longer be paid (canceled or lapsed at the PSP), or the PSP cannot cancel.
    Unpaid(crate::runtime::Charge),
}

/// Cancels a lapsed, unpaid charge at a PSP that can cancel. A refused cancel is followed by a
/// query: a charge paid meanwhile is `Paid`, not expired.
async fn close_at_psp(
    adapter: &crate::runtime::Adapter,
    prepared: &crate::runtime::PreparedCredential,
    request_id: &str,
    charge: &ChargeRecord,
    psp: crate::runtime::Charge,
) -> Result<Closed, ChargeError> {
    let cancels = adapter
        .manifest()
        .capabilities
        .contains(crate::runtime::Capabilities::CANCEL_CHARGE);
    if !cancels || state_of(psp.status) == ChargeState::Expired {
        return Ok(Closed::Unpaid(psp));
    }
    let psp_id = Some(psp.psp_id.as_str()).filter(|id| !id.is_empty());
    let started = std::time::Instant::now();
    let result = adapter
        .cancel_charge(prepared, request_id, charge.reference.as_str(), psp_id)
        .await;
    crate::metrics::psp_call(
        &charge.provider,
        "cancel-charge",
        started.elapsed(),
        result.is_ok(),
    );
    match result {
        Ok(after) => Ok(match state_of(after.status) {
            ChargeState::Paid => Closed::Paid(after),
            ChargeState::Canceled | ChargeState::Expired => Closed::Unpaid(after),
            // "Canceled" yet still open there: not expired yet; the next check tries again.
            other => {
                return Err(ChargeError::BadPspAnswer {
                    provider: charge.provider.clone(),
                    detail: format!(
                        "the charge is still {} there after a cancel",
                        other.as_str()
                    ),
                });
            }
        }),
        // The PSP would not cancel: it lapsed there, or was just paid. Ask once more; a charge
        // past its expiry that the PSP neither cancels nor reports paid can no longer be paid.
        Err(CallError::Psp {
            error: PspError::Rejected(_) | PspError::NotFound(_),
            ..
        }) => {
            let after = adapter
                .query_charge(prepared, request_id, charge.reference.as_str(), psp_id)
                .await?;
            Ok(match state_of(after.status) {
                _ if paid(&after) => Closed::Paid(after),
                _ => Closed::Unpaid(after),
            })
        }
        Err(e) => Err(e.into()),
    }
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
