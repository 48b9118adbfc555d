//! Writes of many requests that a PostgreSQL gateway runs as one statement.
//!
//! On PostgreSQL every statement costs the server a round trip, a parse, an executor start and
//! a commit, and on two cores those costs, not the rows, are what it spends most of its time on.
//! A [`Batcher`] runs at most [`Batch::AT_ONCE`] statements at a time per key, each in a task of
//! its own; the writes that come while they all run wait, and the next statement to start
//! writes all of them. Under load a statement carries as many writes as came meanwhile; with
//! fewer than that many statements running, a write is a statement as before, after one hop to
//! a task.
//!
//! What a statement writes is a [`Batch`]: the plan's monthly count (`plan_counter`), a webhook
//! attempt's record (`events`), a charge's `creating` row and its move out of it (`charges`),
//! an idempotency key's claim (`idempotency`). A batch that cannot write its writes together (a
//! limit that not all of them fit under, a statement that failed) answers `None`, and each
//! caller writes alone as it did before batching, so the error, or the refusal, is its own.
//!
//! **One statement at a time per key** for every batch of the charge path (round 38; each
//! `*_STATEMENTS_AT_ONCE` is 1). At four at once, most statements carried a single write under
//! `cargo xtask load` on PostgreSQL (`pg_stat_statements`, 10 s at about 1,000 charges a
//! second: 4,095 moves, 4,191 `creating` inserts, 4,621 attempt records and 5,745 key claims
//! ran alone), so the server paid a statement's fixed costs (executor start and finish,
//! commit, WAL flush: about half its time, per `perf`) once per charge for each. At one, a
//! statement carries 3 to 7 writes, and the load ran 1,365–1,461 charges a second against
//! 999–1,099 (same build, alternated), the server at 0.91–0.94 cores against 1.07–1.08,
//! webhooks keeping up. The price: a write that comes while its key's statement runs waits for
//! it (about a millisecond; a charge row is only ever locked by one short statement or
//! transaction, never across a PSP call, so none waits behind a long one).
//!
//! Statements never run in a request's task: a request that is dropped (its client went away)
//! cannot leave its key waiting for a statement nobody runs, and a write whose request was
//! dropped before its statement started is left out.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// One kind of write that many requests' instances of share a statement.
pub(super) trait Batch: Send + Sync + 'static {
    /// Writes of one key share a statement (the row they all update, say); other keys' run
    /// beside them.
    type Key: Clone + Eq + Hash + Send + Sync + 'static;
    type Write: Send + 'static;
    type Outcome: Send + 'static;
    /// The `write` label of the batch's metrics.
    const NAME: &'static str;
    /// Statements of one key that may run at once: 1 for writes to one row, which would only
    /// wait for each other on the row's lock.
    const AT_ONCE: usize;
    /// Writes one statement carries at most; the rest wait for the next.
    const MAX_WRITES: usize;

    /// Writes `writes`, all of `key`, in one statement: an outcome for each, in their order,
    /// or `None` when nothing was written and each must be written alone.
    fn write_all(
        &self,
        key: &Self::Key,
        writes: Vec<Self::Write>,
    ) -> impl Future<Output = Option<Vec<Self::Outcome>>> + Send;
}

/// How a batcher's statements went so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchStats {
    /// Batches taken: statements run (failed ones included), and batches given back unrun to
    /// be written alone.
    pub statements: u64,
    /// Writes those statements wrote (or, for a plan's count, refused).
    pub writes: u64,
    /// Writes not done yet: in a statement running, or waiting for the next.
    pub waiting: usize,
    /// Statements running, or tasks about to run one.
    pub running: usize,
}

/// Runs `B`'s writes together; see the module documentation. Clones share it.
pub(super) struct Batcher<B: Batch> {
    shared: Arc<Shared<B>>,
}

impl<B: Batch> Clone for Batcher<B> {
    fn clone(&self) -> Self {
        Batcher {
            shared: self.shared.clone(),
        }
    }
}

impl<B: Batch> std::fmt::Debug for Batcher<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("batch", &B::NAME)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A write waiting for its statement, and where its outcome goes (`None`: write it alone).
struct Waiter<B: Batch> {
    write: B::Write,
    answer: oneshot::Sender<Option<B::Outcome>>,
}

/// A key's writes while tasks write for it.
struct Queue<B: Batch> {
    /// Who waits for the next statement.
    waiters: Vec<Waiter<B>>,
    /// Tasks writing for the key, at most [`Batch::AT_ONCE`].
    tasks: usize,
}

struct Shared<B: Batch> {
    batch: B,
    /// A key is here while tasks write for it.
    running: Mutex<HashMap<B::Key, Queue<B>>>,
    waiting: AtomicUsize,
    statements: AtomicU64,
    written: AtomicU64,
}

impl<B: Batch> Batcher<B> {
    pub(super) fn new(batch: B) -> Self {
        Batcher {
            shared: Arc::new(Shared {
                batch,
                running: Mutex::default(),
                waiting: AtomicUsize::new(0),
                statements: AtomicU64::new(0),
                written: AtomicU64::new(0),
            }),
        }
    }

    /// What it writes with.
    pub(super) fn batch(&self) -> &B {
        &self.shared.batch
    }

    /// Writes `write` of `key` with the writes that wait beside it. `None`: not written; the
    /// caller writes it alone.
    pub(super) async fn write(&self, key: B::Key, write: B::Write) -> Option<B::Outcome> {
        let (answer, answered) = oneshot::channel();
        let waiter = Waiter { write, answer };
        let start = {
            let mut running = self.shared.running.lock();
            let start = match running.get_mut(&key) {
                Some(queue) => {
                    queue.waiters.push(waiter);
                    let start = queue.tasks < B::AT_ONCE;
                    queue.tasks += usize::from(start);
                    start
                }
                None => {
                    let queue = Queue {
                        waiters: vec![waiter],
                        tasks: 1,
                    };
                    running.insert(key.clone(), queue);
                    true
                }
            };
            // Under the lock, where the task takes the list: never subtracted before added.
            self.shared.waiting.fetch_add(1, Ordering::Relaxed);
            start
        };
        if start {
            tokio::spawn(write_while_waited_for(self.shared.clone(), key));
        }
        // A task that died dropped the answer: written alone, as after a failed statement.
        answered.await.ok().flatten()
    }

    pub(super) fn stats(&self) -> BatchStats {
        BatchStats {
            statements: self.shared.statements.load(Ordering::Relaxed),
            writes: self.shared.written.load(Ordering::Relaxed),
            waiting: self.shared.waiting.load(Ordering::Relaxed),
            running: self.shared.running.lock().values().map(|q| q.tasks).sum(),
        }
    }
}

/// Runs statements for `key` until nobody waits: each writes every write that came while the
/// key's statements ran.
async fn write_while_waited_for<B: Batch>(shared: Arc<Shared<B>>, key: B::Key) {
    // Should this task end early (a panic), it stops counting as one of the key's, and when it
    // was the last its waiters, their answers dropped, write alone.
    let mut guard = Running {
        shared: &shared,
        key: Some(&key),
        writing: 0,
    };
    loop {
        let mut waiters = {
            let mut running = shared.running.lock();
            let queue = running.get_mut(&key).expect("held by this task");
            let waiters: Vec<_> = if queue.waiters.len() <= B::MAX_WRITES {
                std::mem::take(&mut queue.waiters)
            } else {
                queue.waiters.drain(..B::MAX_WRITES).collect()
            };
            if waiters.is_empty() {
                leave(&mut running, &key);
                guard.key = None;
                return;
            }
            waiters
        };
        guard.writing = waiters.len();
        // A request dropped while it waited (its client went away) wants nothing written.
        waiters.retain(|w| !w.answer.is_closed());
        if !waiters.is_empty() {
            let (writes, answers): (Vec<_>, Vec<_>) =
                waiters.into_iter().map(|w| (w.write, w.answer)).unzip();
            let n = writes.len();
            let outcomes = shared.batch.write_all(&key, writes).await;
            shared.statements.fetch_add(1, Ordering::Relaxed);
            crate::metrics::batched_statement(B::NAME);
            match outcomes {
                Some(outcomes) if outcomes.len() == n => {
                    crate::metrics::batched_writes(B::NAME, n);
                    shared.written.fetch_add(n as u64, Ordering::Relaxed);
                    for (answer, outcome) in answers.into_iter().zip(outcomes) {
                        let _ = answer.send(Some(outcome));
                    }
                }
                Some(outcomes) => {
                    tracing::error!(
                        batch = B::NAME,
                        writes = n,
                        outcomes = outcomes.len(),
                        "a batch answered for the wrong number of writes; each is written alone"
                    );
                    answers.into_iter().for_each(|a| drop(a.send(None)));
                }
                None => answers.into_iter().for_each(|a| drop(a.send(None))),
            }
        }
        shared.waiting.fetch_sub(guard.writing, Ordering::Relaxed);
        guard.writing = 0;
    }
}

/// A task stops writing for `key`; the last one frees it. Returns the writes still queued then
/// (only a task that ends early leaves any).
fn leave<B: Batch>(running: &mut HashMap<B::Key, Queue<B>>, key: &B::Key) -> usize {
    let queue = running.get_mut(key).expect("held by this task");
    queue.tasks -= 1;
    if queue.tasks > 0 {
        return 0;
    }
    running.remove(key).map_or(0, |q| q.waiters.len())
}

/// The key a task writes for, left if the task ends without leaving it.
struct Running<'a, B: Batch> {
    shared: &'a Shared<B>,
    key: Option<&'a B::Key>,
    /// Writes in the statement running.
    writing: usize,
}

impl<B: Batch> Drop for Running<'_, B> {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let queued = leave(&mut self.shared.running.lock(), key);
        self.shared
            .waiting
            .fetch_sub(queued + self.writing, Ordering::Relaxed);
    }
}

/// The outcomes of a batch whose statement returns the key of each row it wrote: each write
/// answered by whether its key came back. `None`, running nothing, when two writes share a key:
/// the statement would write that row once and answer both (written alone, the second finds
/// the row taken); and `None` when the statement failed (logged with `what`).
pub(super) async fn written_by_key<T, E: std::fmt::Display>(
    what: &'static str,
    writes: &[T],
    key: impl Fn(&T) -> &str,
    statement: impl Future<Output = Result<std::collections::HashSet<String>, E>>,
) -> Option<Vec<bool>> {
    let keys: std::collections::HashSet<&str> = writes.iter().map(&key).collect();
    if keys.len() != writes.len() {
        return None;
    }
    let written = statement
        .await
        .inspect_err(
            |e| tracing::debug!(error = %e, writes = writes.len(), "{what} not written together"),
        )
        .ok()?;
    Some(writes.iter().map(|w| written.contains(key(w))).collect())
}

/// The first column of each row `query` returns, as text: for [`written_by_key`], the keys of
/// the rows a batch's statement wrote.
pub(super) async fn returned_keys(
    pool: &sqlx::AnyPool,
    query: super::events::AnyQuery<'_>,
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    use sqlx::Row;
    let returned = query.fetch_all(pool).await?;
    returned.iter().map(|row| row.try_get(0)).collect()
}

/// Where a statement's part takes its values: parameters numbered from `$first` (a write of
/// its own), or the columns `v.{prefix}0`, `v.{prefix}1`, … of a batch's `VALUES` list `v`
/// (one row per write).
#[derive(Clone, Copy)]
pub(super) enum Values {
    Parameters(usize),
    Columns(&'static str),
}

impl Values {
    /// The `i`-th value (from 0).
    pub(super) fn at(self, i: usize) -> String {
        match self {
            Values::Parameters(first) => format!("${}", first + i),
            Values::Columns(prefix) => format!("v.{prefix}{i}"),
        }
    }

    /// Values `0..n`, separated by commas.
    pub(super) fn list(self, n: usize) -> String {
        (0..n).map(|i| self.at(i)).collect::<Vec<_>>().join(", ")
    }
}

/// A `VALUES` list of `rows` rows of `columns` parameters each, numbered from `$1` row by row:
/// `($1, $2), ($3, $4)` for two rows of two.
pub(super) fn values(rows: usize, columns: usize) -> String {
    let row = |r: usize| {
        let params: Vec<String> = (1..=columns)
            .map(|c| format!("${}", r * columns + c))
            .collect();
        format!("({})", params.join(", "))
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_number_parameters_row_by_row() {
        assert_eq!(super::values(1, 3), "($1, $2, $3)");
        assert_eq!(super::values(2, 2), "($1, $2), ($3, $4)");
    }

    #[test]
    fn values_are_parameters_or_a_batch_s_columns() {
        use super::Values;
        assert_eq!(Values::Parameters(14).list(3), "$14, $15, $16");
        assert_eq!(Values::Columns("a").list(2), "v.a0, v.a1");
    }
}
