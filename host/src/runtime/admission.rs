//! Admission of adapter calls: at most [`AdmissionConfig::per_psp`] calls at once to one PSP
//! and [`super::Limits::max_concurrent_calls`] in all (the instance pool's size). A call beyond
//! either waits its turn — first come, first served (tokio's semaphores are fair) — for at most
//! [`AdmissionConfig::queue_timeout`], then is refused as [`Saturated`], which the API answers
//! with 503 `gateway_busy` and `Retry-After`.
//!
//! The per-PSP slot is taken before the global one, so calls queued behind a slow PSP hold no
//! global slot: one PSP that stops answering fills its own slots only, and charges at every
//! other PSP go on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Operator settings of admission.
#[derive(Debug, Clone)]
pub struct AdmissionConfig {
    /// Calls to one PSP (all merchants together) running at once.
    pub per_psp: u32,
    /// How long a call waits for a slot before it is refused.
    pub queue_timeout: Duration,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            per_psp: 64,
            queue_timeout: Duration::from_secs(5),
        }
    }
}

/// Which limit was full for a whole [`AdmissionConfig::queue_timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saturated {
    /// This PSP's slots: it is slow or busy; other PSPs are not affected.
    Psp { limit: u32, waited: Duration },
    /// The gateway's slots across all PSPs.
    Gateway { limit: u32, waited: Duration },
}

impl std::fmt::Display for Saturated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Saturated::Psp { limit, waited } => write!(
                f,
                "all {limit} call slots for this PSP stayed busy for {:.1} s",
                waited.as_secs_f64()
            ),
            Saturated::Gateway { limit, waited } => write!(
                f,
                "all {limit} adapter call slots of the gateway stayed busy for {:.1} s",
                waited.as_secs_f64()
            ),
        }
    }
}

/// The slots of one admitted call, given back when it is dropped.
pub struct Admitted {
    _psp: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
}

pub struct Admission {
    config: AdmissionConfig,
    global_limit: u32,
    global: Arc<Semaphore>,
    per_psp: Mutex<HashMap<Arc<str>, Arc<Semaphore>>>,
}

impl Admission {
    pub fn new(global_limit: u32, config: AdmissionConfig) -> Admission {
        let global_limit = global_limit.max(1);
        Admission {
            global: Arc::new(Semaphore::new(global_limit as usize)),
            global_limit,
            per_psp: Mutex::default(),
            config,
        }
    }

    fn psp_limit(&self) -> u32 {
        self.config.per_psp.clamp(1, self.global_limit)
    }

    /// Waits for a slot at `provider` and one of the gateway's, within the queue timeout.
    pub async fn admit(&self, provider: &Arc<str>) -> Result<Admitted, Saturated> {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.config.queue_timeout;
        let psp = self
            .per_psp
            .lock()
            .entry(provider.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.psp_limit() as usize)))
            .clone();
        // The semaphores are never closed, so acquiring fails only by the timeout.
        let psp = match tokio::time::timeout_at(deadline, psp.acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                return Err(Saturated::Psp {
                    limit: self.psp_limit(),
                    waited: started.elapsed(),
                });
            }
        };
        let global =
            match tokio::time::timeout_at(deadline, self.global.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => {
                    return Err(Saturated::Gateway {
                        limit: self.global_limit,
                        waited: started.elapsed(),
                    });
                }
            };
        Ok(Admitted {
            _psp: psp,
            _global: global,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(global: u32, per_psp: u32) -> Admission {
        Admission::new(
            global,
            AdmissionConfig {
                per_psp,
                queue_timeout: Duration::from_millis(200),
            },
        )
    }

    #[tokio::test]
    async fn a_full_psp_refuses_after_the_timeout_and_leaves_others_alone() {
        let admission = admission(4, 2);
        let (slow, other): (Arc<str>, Arc<str>) = ("efi".into(), "inter".into());
        let held = [
            admission.admit(&slow).await.unwrap(),
            admission.admit(&slow).await.unwrap(),
        ];
        let refused = admission.admit(&slow).await.err().unwrap();
        assert!(
            matches!(refused, Saturated::Psp { limit: 2, waited } if waited >= Duration::from_millis(200)),
            "{refused:?}"
        );
        // The other PSP still has the gateway's two remaining slots.
        let a = admission.admit(&other).await.unwrap();
        let b = admission.admit(&other).await.unwrap();
        assert!(matches!(
            admission.admit(&other).await.err().unwrap(),
            Saturated::Psp { limit: 2, .. }
        ));
        drop((a, b));
        drop(held);
        admission.admit(&slow).await.unwrap();
    }

    #[tokio::test]
    async fn the_gateway_limit_binds_across_psps_and_waiters_are_served_in_order() {
        let admission = Arc::new(admission(2, 2));
        let first = admission.admit(&"a".into()).await.unwrap();
        let _second = admission.admit(&"b".into()).await.unwrap();
        assert!(matches!(
            admission.admit(&"c".into()).await.err().unwrap(),
            Saturated::Gateway { limit: 2, .. }
        ));
        // A waiter gets the slot freed while it waits.
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit(&"c".into()).await.is_ok() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(first);
        assert!(waiter.await.unwrap());
    }
}
