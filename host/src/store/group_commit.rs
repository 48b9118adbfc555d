//! Group commit for SQLite: the charge path's writes from many requests share one transaction,
//! so one `fsync` (with `synchronous = FULL`) makes all of them durable.
//!
//! SQLite has one writer at a time and each commit syncs the WAL (about 4 ms on an ordinary
//! disk), so committing each request's writes apart caps the gateway at a few hundred commits
//! a second. [`Store::write`] hands a unit of work to one writer task; the writer takes every
//! unit waiting, runs each inside a savepoint of one `BEGIN IMMEDIATE` transaction (a unit that
//! fails is rolled back alone), commits once, and only then answers each unit: a request is
//! never told its write happened before the write is on disk.
//!
//! On PostgreSQL a unit is simply its own transaction on the pool: the server already groups
//! concurrent commits into one WAL flush.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::{Acquire, AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, Store, StoreError};

/// The most units one transaction takes: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// What a unit hands the writer after running: whether it succeeded (its savepoint is kept),
/// and how to answer its caller once the group's commit is known.
type Ran = (bool, Box<dyn FnOnce(Result<(), String>) + Send>);
type Unit = Box<dyn for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Ran> + Send>;

/// The queue to the writer task.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    units: mpsc::UnboundedSender<Unit>,
}

impl Writer {
    /// Starts the writer on a connection of its own, taken from `pool` (so it keeps the pool's
    /// pragmas).
    pub(super) fn start(pool: sqlx::AnyPool) -> Writer {
        let (units, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, queue));
        Writer { units }
    }
}

async fn run(pool: sqlx::AnyPool, mut queue: mpsc::UnboundedReceiver<Unit>) {
    let mut conn: Option<AnyConnection> = None;
    while let Some(first) = queue.recv().await {
        let mut units = vec![first];
        while units.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(unit) => units.push(unit),
                Err(_) => break,
            }
        }
        if conn.is_none() {
            match pool.acquire().await {
                Ok(c) => conn = Some(c.detach()),
                Err(e) => {
                    fail(units, &format!("no database connection: {e}"));
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("set above");
        if let Err(e) = group(c, units).await {
            // The connection may be broken: the next group starts on a fresh one.
            tracing::error!(error = %e, "a group commit failed");
            conn = None;
        }
    }
}

/// Runs `units` in one transaction and answers each after its commit.
async fn group(conn: &mut AnyConnection, units: Vec<Unit>) -> Result<(), sqlx::Error> {
    // IMMEDIATE: the write lock is taken now, so a unit that reads before it writes cannot
    // meet a snapshot another connection's commit made stale.
    let mut tx = match conn.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(e) => {
            fail(units, &e.to_string());
            return Err(e);
        }
    };
    let mut answers: Vec<Box<dyn FnOnce(Result<(), String>) + Send>> =
        Vec::with_capacity(units.len());
    for unit in units {
        let mut savepoint = match (&mut tx).begin().await {
            Ok(s) => s,
            Err(e) => {
                // The transaction is unusable: this unit and the rest fail, and so does the
                // group (nothing is committed).
                for answer in answers {
                    answer(Err(e.to_string()));
                }
                return Err(e);
            }
        };
        // A unit that panics is a failed unit, not a dead writer: every later write of the
        // gateway goes through this task. Its caller reads the dropped reply as a failure.
        let ran = AssertUnwindSafe(unit(&mut *savepoint)).catch_unwind().await;
        let (ok, answer) = match ran {
            Ok(ran) => ran,
            Err(_) => {
                tracing::error!("a group commit unit panicked; its writes are rolled back");
                let dropped: Box<dyn FnOnce(Result<(), String>) + Send> = Box::new(|_| {});
                (false, dropped)
            }
        };
        let kept = if ok {
            savepoint.commit().await
        } else {
            savepoint.rollback().await
        };
        if let Err(e) = kept {
            answer(Err(e.to_string()));
            for answer in answers {
                answer(Err(e.to_string()));
            }
            return Err(e);
        }
        answers.push(answer);
    }
    let committed = tx.commit().await;
    let outcome = committed.as_ref().map(|_| ()).map_err(|e| e.to_string());
    for answer in answers {
        answer(outcome.clone());
    }
    committed
}

/// Pins a closure to the writer's unit signature (a future borrowing the connection).
fn unit_of<F>(f: F) -> F
where
    F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Ran>,
{
    f
}

/// A write whose transaction did not commit: an internal error, logged by the API.
fn commit_failed(reason: String) -> StoreError {
    StoreError::Sql(sqlx::Error::Protocol(format!("group commit: {reason}")))
}

fn fail(units: Vec<Unit>, reason: &str) {
    // Units that never ran answer through a connection-less error: dropping them drops their
    // reply channels, which their callers read as this failure.
    drop(units);
    tracing::error!(reason, "group commit: units dropped");
}

impl Store {
    /// Runs `unit` in a transaction and returns its result once that transaction is committed
    /// (on SQLite, with other requests' units in one group commit). An `Err` from `unit`
    /// rolls back its writes only.
    pub async fn write<T, F>(&self, unit: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let Some(writer) = &self.writer else {
            let mut tx = self.pool().begin().await?;
            let value = unit(&mut *tx).await?;
            tx.commit().await?;
            return Ok(value);
        };
        debug_assert_eq!(self.backend, Backend::Sqlite);
        let (reply, answer) = oneshot::channel::<Result<T, StoreError>>();
        let boxed: Unit = Box::new(unit_of(move |conn| {
            Box::pin(async move {
                let result = unit(conn).await;
                let ok = result.is_ok();
                let answer: Box<dyn FnOnce(Result<(), String>) + Send> =
                    Box::new(move |commit: Result<(), String>| {
                        let _ = reply.send(match (result, commit) {
                            (Ok(value), Ok(())) => Ok(value),
                            (Ok(_), Err(e)) => Err(commit_failed(e)),
                            (Err(e), _) => Err(e),
                        });
                    });
                (ok, answer)
            })
        }));
        writer
            .units
            .send(boxed)
            .map_err(|_| commit_failed("the writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| commit_failed("the group's transaction could not start".into()))?
    }
}
