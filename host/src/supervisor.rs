//! Background tasks that outlive a panic.
//!
//! The delivery worker, the reconciler and the sweepers are loops meant to run as long as the
//! process. [`supervise`] runs one in a task of its own; when it panics (or returns, which a
//! loop should never do) the failure is logged, counted in
//! `pixgw_background_task_restarts_total{task, reason}`, and the loop starts again after a
//! backoff that doubles from [`Backoff::first`] up to [`Backoff::max`] and falls back to the
//! first after the task has run [`Backoff::healthy_after`] without failing. A gateway whose
//! deliveries stopped in silence would be worse than one that crashes.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;

/// Delays between restarts of a failing task.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    /// A run this long counts as healthy: the next failure waits [`Backoff::first`] again.
    pub healthy_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(60),
            healthy_after: Duration::from_secs(300),
        }
    }
}

/// Runs `make()` in a task and starts it again whenever it panics or returns. The returned
/// handle owns the supervisor: aborting it stops the current run too.
pub fn supervise<F, Fut>(name: &'static str, backoff: Backoff, make: F) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut delay = backoff.first;
        loop {
            let started = tokio::time::Instant::now();
            let mut run = AbortOnDrop(tokio::spawn(make()));
            let reason = match (&mut run.0).await {
                Ok(()) => {
                    tracing::error!(task = name, "background task returned; restarting it");
                    "returned"
                }
                Err(e) if e.is_panic() => {
                    let panic = e.into_panic();
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "(not a string)".to_owned());
                    tracing::error!(task = name, panic = %message, "background task panicked; restarting it");
                    "panic"
                }
                // Canceled: only by a runtime shutting down.
                Err(_) => return,
            };
            crate::metrics::task_restart(name, reason);
            if started.elapsed() >= backoff.healthy_after {
                delay = backoff.first;
            }
            tracing::warn!(
                task = name,
                delay_ms = delay.as_millis() as u64,
                "restarting"
            );
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(backoff.max);
        }
    })
}

/// The run in progress ends with its supervisor.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::time::Instant;

    const QUICK: Backoff = Backoff {
        first: Duration::from_millis(10),
        max: Duration::from_millis(40),
        healthy_after: Duration::from_secs(600),
    };

    /// A task that panics on its first four runs and then keeps running: started again each
    /// time, after at least 10, 20, 40 and 40 ms (doubling up to the maximum).
    #[tokio::test]
    async fn a_panicking_task_is_restarted_with_growing_delays() {
        let started_at = Arc::new(parking_lot::Mutex::new(Vec::<Instant>::new()));
        let handle = {
            let started_at = started_at.clone();
            supervise("test", QUICK, move || {
                let started_at = started_at.clone();
                async move {
                    let run = {
                        let mut runs = started_at.lock();
                        runs.push(Instant::now());
                        runs.len()
                    };
                    if run <= 4 {
                        panic!("boom {run}");
                    }
                    std::future::pending::<()>().await;
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while started_at.lock().len() < 5 {
            assert!(
                Instant::now() < deadline,
                "not restarted: {:?}",
                started_at.lock()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let runs = started_at.lock().clone();
        let gaps: Vec<Duration> = runs.windows(2).map(|w| w[1] - w[0]).collect();
        for (gap, least) in gaps.iter().zip([10, 20, 40, 40]) {
            assert!(*gap >= Duration::from_millis(least), "{gaps:?}");
        }
        assert!(!handle.is_finished(), "the fifth run keeps running");
        handle.abort();
    }

    /// Aborting the supervisor stops the run it watches.
    #[tokio::test]
    async fn aborting_the_supervisor_stops_the_task() {
        let alive = Arc::new(AtomicU32::new(0));
        let handle = {
            let alive = alive.clone();
            supervise("test", QUICK, move || {
                let alive = alive.clone();
                async move {
                    loop {
                        alive.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while alive.load(Ordering::SeqCst) < 3 {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        handle.abort();
        let _ = handle.await;
        // Give a surviving run time to tick: it must not.
        let seen = alive.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(alive.load(Ordering::SeqCst), seen);
    }
}
