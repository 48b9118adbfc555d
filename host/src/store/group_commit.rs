//! Group commit for SQLite: the charge path's writes from many requests share one transaction,
//! so one `fsync` (with `synchronous = FULL`) makes all of them durable.
//!
//! SQLite has one writer at a time and each commit syncs the WAL (about 4 ms on an ordinary
//! disk), so committing each request's writes apart caps the gateway at a few hundred commits
//! a second. [`Store::write`] hands a unit of work to one writer thread; the writer takes every
//! unit waiting, runs them in one `BEGIN IMMEDIATE` transaction (should one fail, again with a
//! savepoint each, so that one is rolled back alone), commits, and only then answers each unit:
//! a request is never told a durable write happened before the write is on disk.
//!
//! On PostgreSQL a unit is simply its own transaction on the pool: the server already groups
//! concurrent commits into one WAL flush.
//!
//! A unit is [`Durability::Durable`] or [`Durability::Deferred`]. A deferred write may be lost
//! by a crash until the next durable commit (or checkpoint) carries it to disk, and costs no
//! `fsync`: the idempotency claim before a charge's `creating` row (that row's durable commit
//! carries the claim with it; a claim lost alone lost nothing), a created charge's move out of
//! `creating` (what it writes came from the PSP: lost, the durable `creating` row makes a retry
//! or the reconciler ask the PSP again) and a successful answer stored for its key (a retry that
//! finds no answer resumes with the same reference and finds the charge). A created charge's move
//! recovered that way is reported again: its `charge.created` event may reach the merchant twice,
//! under two event ids, after a power loss.
//!
//! On SQLite the writer splits what it took in two: the deferred units, committed first at
//! `synchronous = NORMAL` (in WAL mode a later synced commit syncs every frame before it), then
//! the durable ones, committed as configured; a deferred write never waits for a sync.
//! PostgreSQL: `synchronous_commit = off` for a deferred unit's transaction.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use sqlx::{Acquire, AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, Store, StoreError};

/// The most units one transaction takes: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// What a unit hands the writer after running: whether it succeeded (its writes are kept), and
/// how to answer its caller once the group's commit is known.
type Ran = (bool, Answer);
type Answer = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A unit as the writer holds it: callable again, for when its group is rolled back and run a
/// second time.
type Work = Box<dyn for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Ran> + Send>;

/// Whether a write must be on disk before its caller hears it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// On disk when the write returns (as the database is configured: SQLite's
    /// `synchronous = NORMAL` setting relaxes every write).
    Durable,
    /// Committed and visible when the write returns, on disk with the next durable commit.
    Deferred,
}

struct Unit {
    durability: Durability,
    work: Work,
}

/// The queue to the writer thread.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    units: mpsc::UnboundedSender<Unit>,
}

impl Writer {
    /// Starts the writer on a connection of its own, taken from `pool` (so it keeps the pool's
    /// pragmas), and on a thread of its own: a unit is a chain of round trips to the
    /// connection's thread, and on the shared runtime each hop would queue behind request tasks
    /// (QR codes, adapter calls) while every other write waits for this one. It ends when the
    /// last [`Store`] holding it is dropped.
    pub(super) fn start(pool: sqlx::AnyPool) -> std::io::Result<Writer> {
        let (units, queue) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("pixgw-writer".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime.block_on(run(pool, queue)),
                    // Units sent find the queue closed and fail as "the writer has stopped".
                    Err(e) => {
                        tracing::error!(error = %e, "the group commit writer could not start")
                    }
                }
            })?;
        Ok(Writer { units })
    }
}

/// The writer's connection and its `synchronous` levels: as configured, and as set now.
struct WriterConn {
    conn: AnyConnection,
    configured: i64,
    current: i64,
}

/// SQLite's `PRAGMA synchronous` values.
const SYNC_NORMAL: i64 = 1;

async fn run(pool: sqlx::AnyPool, mut queue: mpsc::UnboundedReceiver<Unit>) {
    let mut writer: Option<WriterConn> = None;
    while let Some(first) = queue.recv().await {
        let mut units = vec![first];
        while units.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(unit) => units.push(unit),
                Err(_) => break,
            }
        }
        // Deferred units first, in a transaction of their own that skips the sync, so their
        // callers go on without waiting for the disk; then the durable ones, whose sync (WAL)
        // carries the deferred frames before them too.
        let (deferred, durable): (Vec<Unit>, Vec<Unit>) = units
            .into_iter()
            .partition(|u| u.durability == Durability::Deferred);
        for (units, durable) in [(deferred, false), (durable, true)] {
            if units.is_empty() {
                continue;
            }
            if writer.is_none() {
                match connect(&pool).await {
                    Ok(w) => writer = Some(w),
                    Err(e) => {
                        fail(units, &format!("no database connection: {e}"));
                        continue;
                    }
                }
            }
            let w = writer.as_mut().expect("set above");
            // Deferred groups relax FULL (or EXTRA) to NORMAL; a NORMAL database stays NORMAL.
            let level = if durable {
                w.configured
            } else {
                w.configured.min(SYNC_NORMAL)
            };
            let result = async {
                if level != w.current {
                    sqlx::query(&format!("PRAGMA synchronous = {level}"))
                        .execute(&mut w.conn)
                        .await?;
                    w.current = level;
                }
                group(&mut w.conn, units).await
            }
            .await;
            if let Err(e) = result {
                // The connection may be broken: the next group starts on a fresh one.
                tracing::error!(error = %e, "a group commit failed");
                writer = None;
            }
        }
    }
}

async fn connect(pool: &sqlx::AnyPool) -> Result<WriterConn, sqlx::Error> {
    let mut conn = pool.acquire().await?.detach();
    let configured: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(&mut conn)
        .await?;
    Ok(WriterConn {
        conn,
        configured,
        current: configured,
    })
}

/// Runs `units` in one transaction and answers each after its commit.
///
/// Optimistically first: the units run one after another with no savepoint between them, since
/// nearly every unit succeeds and a savepoint costs two more round trips to the connection's
/// thread. Should one fail, the transaction is rolled back and the group runs again with a
/// savepoint per unit, so the failed one is rolled back alone. A group of one needs no second
/// run: rolling back the transaction rolled back exactly that unit.
async fn group(conn: &mut AnyConnection, mut units: Vec<Unit>) -> Result<(), sqlx::Error> {
    match pass(conn, &mut units, false).await? {
        Pass::Answered => Ok(()),
        Pass::RolledBack => pass(conn, &mut units, true).await.map(|_| ()),
    }
}

/// How a run over a group ended.
enum Pass {
    /// Committed (or its one unit rolled back), and every unit answered.
    Answered,
    /// A unit failed without a savepoint: nothing is committed and nobody answered.
    RolledBack,
}

/// One run over `units` in one transaction; with `isolated`, each in a savepoint of its own.
async fn pass(
    conn: &mut AnyConnection,
    units: &mut [Unit],
    isolated: bool,
) -> Result<Pass, sqlx::Error> {
    // IMMEDIATE: the write lock is taken now, so a unit that reads before it writes cannot
    // meet a snapshot another connection's commit made stale.
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let alone = units.len() == 1;
    let mut answers: Vec<Answer> = Vec::with_capacity(units.len());
    for unit in units.iter_mut() {
        if !isolated {
            let (ok, answer) = run_unit(unit, &mut tx).await;
            if ok {
                answers.push(answer);
                continue;
            }
            tx.rollback().await?;
            if alone {
                // The unit's own error is its answer.
                answer(Ok(()));
                return Ok(Pass::Answered);
            }
            return Ok(Pass::RolledBack);
        }
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
        let (ok, answer) = run_unit(unit, &mut savepoint).await;
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
    committed.map(|_| Pass::Answered)
}

/// Runs one unit. A unit that panics is a failed unit, not a dead writer: every later write of
/// the gateway goes through this thread. Its caller reads the dropped reply as a failure.
async fn run_unit(unit: &mut Unit, conn: &mut AnyConnection) -> Ran {
    match AssertUnwindSafe((unit.work)(conn)).catch_unwind().await {
        Ok(ran) => ran,
        Err(_) => {
            tracing::error!("a group commit unit panicked; its writes are rolled back");
            (false, Box::new(|_| {}))
        }
    }
}

/// Pins a closure to the writer's unit signature (a future borrowing the connection).
fn work_of<F>(f: F) -> F
where
    F: for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Ran>,
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
    /// and on disk (on SQLite, with other requests' units in one group commit). An `Err` from
    /// `unit` rolls back its writes only. `unit` may run more than once (a clone each time):
    /// when another unit of its group fails, the group's writes are rolled back and run again,
    /// and only the run that commits is answered.
    pub async fn write<T, F>(&self, unit: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Clone
            + Send
            + 'static,
    {
        self.write_with(Durability::Durable, unit).await
    }

    /// [`Store::write`] with the given [`Durability`].
    pub async fn write_with<T, F>(&self, durability: Durability, unit: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Clone
            + Send
            + 'static,
    {
        let Some(writer) = &self.writer else {
            let mut tx = self.pool().begin().await?;
            if durability == Durability::Deferred && self.backend == Backend::Postgres {
                sqlx::query("SET LOCAL synchronous_commit = off")
                    .execute(&mut *tx)
                    .await?;
            }
            let value = unit(&mut *tx).await?;
            tx.commit().await?;
            return Ok(value);
        };
        debug_assert_eq!(self.backend, Backend::Sqlite);
        let (reply, answer) = oneshot::channel::<Result<T, StoreError>>();
        // Taken by the answer of the run that counts; a run rolled back with its group is
        // never answered.
        let reply = Arc::new(Mutex::new(Some(reply)));
        let work: Work = Box::new(work_of(move |conn| {
            let (unit, reply) = (unit.clone(), reply.clone());
            Box::pin(async move {
                let result = unit(conn).await;
                let ok = result.is_ok();
                let answer: Answer = Box::new(move |commit: Result<(), String>| {
                    if let Some(reply) = reply.lock().take() {
                        let _ = reply.send(match (result, commit) {
                            (Ok(value), Ok(())) => Ok(value),
                            (Ok(_), Err(e)) => Err(commit_failed(e)),
                            (Err(e), _) => Err(e),
                        });
                    }
                });
                (ok, answer)
            })
        }));
        writer
            .units
            .send(Unit { durability, work })
            .map_err(|_| commit_failed("the writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| commit_failed("the group's transaction could not start".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PRAGMA synchronous` as a unit of `durability` sees it inside its transaction.
    async fn level_seen(store: &Store, durability: Durability) -> i64 {
        store
            .write_with(durability, |conn| {
                Box::pin(async move {
                    Ok(sqlx::query_scalar::<_, i64>("PRAGMA synchronous")
                        .fetch_one(&mut *conn)
                        .await?)
                })
            })
            .await
            .unwrap()
    }

    async fn sqlite(dir: &tempfile::TempDir, query: &str) -> Store {
        let url = format!("sqlite://{}/t.db{query}", dir.path().display());
        Store::connect(&url).await.unwrap()
    }

    /// A store with a table `t (v INTEGER)` to write to.
    async fn with_table(dir: &tempfile::TempDir) -> Store {
        let store = sqlite(dir, "").await;
        sqlx::query("CREATE TABLE t (v INTEGER)")
            .execute(store.pool())
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn deferred_units_skip_the_sync_and_durable_ones_never_do() {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite(&dir, "").await;
        assert_eq!(level_seen(&store, Durability::Durable).await, 2);
        assert_eq!(level_seen(&store, Durability::Deferred).await, 1);
        assert_eq!(level_seen(&store, Durability::Durable).await, 2);

        // Many at once: a durable unit is never in a group that skips the sync, and a deferred
        // one never waits for one.
        let runs = (0..64).map(|i| {
            let store = store.clone();
            let durability = if i % 4 == 0 {
                Durability::Durable
            } else {
                Durability::Deferred
            };
            tokio::spawn(async move { (durability, level_seen(&store, durability).await) })
        });
        for run in futures::future::join_all(runs).await {
            let (durability, level) = run.unwrap();
            let expected = match durability {
                Durability::Durable => 2,
                Durability::Deferred => 1,
            };
            assert_eq!(level, expected, "{durability:?}");
        }
    }

    #[tokio::test]
    async fn a_database_set_to_normal_is_never_raised() {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite(&dir, "?synchronous=normal").await;
        assert_eq!(level_seen(&store, Durability::Durable).await, 1);
        assert_eq!(level_seen(&store, Durability::Deferred).await, 1);
    }

    /// Units run at once land in shared groups: the failing ones leave nothing, every other
    /// one is committed exactly once, although its group was rolled back and run again.
    #[tokio::test]
    async fn a_failing_unit_takes_only_its_own_writes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        let runs = (0..64i64).map(|v| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(move |conn| {
                        Box::pin(async move {
                            sqlx::query("INSERT INTO t (v) VALUES ($1)")
                                .bind(v)
                                .execute(&mut *conn)
                                .await?;
                            if v % 5 == 0 {
                                return Err(StoreError::Corrupt(format!("unit {v} fails")));
                            }
                            Ok(v)
                        })
                    })
                    .await
            })
        });
        for (v, run) in futures::future::join_all(runs)
            .await
            .into_iter()
            .enumerate()
        {
            match run.unwrap() {
                Ok(got) => assert_eq!(got, v as i64),
                Err(StoreError::Corrupt(why)) => assert_eq!(why, format!("unit {v} fails")),
                Err(other) => panic!("unit {v}: {other}"),
            }
        }
        let values: Vec<i64> = sqlx::query_scalar("SELECT v FROM t ORDER BY v")
            .fetch_all(store.pool())
            .await
            .unwrap();
        let expected: Vec<i64> = (0..64).filter(|v| v % 5 != 0).collect();
        assert_eq!(values, expected);
    }

    #[tokio::test]
    async fn a_panicking_unit_is_rolled_back_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        let panicked = store
            .write(|conn| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO t (v) VALUES (1)")
                        .execute(&mut *conn)
                        .await?;
                    if true {
                        panic!("a bug in a unit");
                    }
                    Ok(())
                })
            })
            .await;
        assert!(panicked.is_err());
        store
            .write(|conn| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO t (v) VALUES (2)")
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            })
            .await
            .unwrap();
        let values: Vec<i64> = sqlx::query_scalar("SELECT v FROM t")
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert_eq!(values, vec![2]);
    }
}
