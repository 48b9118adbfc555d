//! Group commit for SQLite: the charge path's writes from many requests share one transaction,
//! and one sync to disk makes all of them durable.
//!
//! SQLite has one writer at a time and each synced commit waits for the disk (1–4 ms), so
//! committing each request's writes apart caps the gateway at a few hundred commits a second.
//! [`Store::write`] hands a unit of work to one writer thread, whose connection runs SQLite on
//! that thread ([`inline_sqlite`]: no hop per statement); the writer takes every unit
//! waiting, runs them in one `BEGIN IMMEDIATE` transaction (should one fail, again with a
//! savepoint each, so that one is rolled back alone), commits, and only then answers each unit.
//!
//! **An idle writer is passed by.** When no unit is queued and the writer's connection is free,
//! the caller runs its unit itself on that connection, as a group of one (`Writer::run_here`):
//! at low load, handing a unit to the writer's thread and being woken with its answer were two
//! thread wakes, each about as long as the unit. Units never overtake one queued before them.
//! Nor does a caller checkpoint the WAL: a commit that makes one due only notes it
//! ([`inline_sqlite`]), callers queue their units while it is due, and the writer thread runs
//! it after its next group, once that group's units are answered.
//!
//! **Syncs off the writer.** With `synchronous = FULL` (the default) the writer's own connection
//! still commits at `NORMAL`, which in WAL mode writes the transaction's frames to the WAL file
//! without syncing it; a syncer thread then `fdatasync`s the WAL and only after that answers the
//! transaction's durable units. The writer goes on with the next group meanwhile, so the disk's
//! latency is no longer on every write's path, and one sync covers every transaction committed
//! before it began. This is what `FULL` itself does (sync the WAL after the commit's frames),
//! moved to another thread: a unit is never told a durable write happened before its frames are
//! on disk. A failed sync stops the writer for good (see [`Syncer`]). At low load (a commit run
//! in its caller, the syncer with nothing to sync) the syncer starts writing out what deferred
//! commits left in the page cache, so that the next durable unit's sync waits for little more
//! than its own frames. [`Store::write_then_sync`]
//! answers a write at its commit and hands its caller the sync to wait for later: a charge's
//! adapter call gets ready meanwhile.
//!
//! [`Store::write_now`] hands a unit over when it is called, not when its answer is awaited:
//! an idempotency key's claim goes first, and the request's `creating` row, queued behind it,
//! checks in its own transaction that the claim went its way (`HeldKey`), so a charge
//! waits for the writer once for the two.
//!
//! On PostgreSQL a unit is simply its own transaction on the pool: the server already groups
//! concurrent commits into one WAL flush.
//!
//! A unit is [`Durability::Durable`] or [`Durability::Deferred`]. A deferred write may be lost
//! by a crash until the next sync carries it to disk, and never waits for one: the idempotency
//! claim before a charge's `creating` row (that row's durable commit carries the claim with it;
//! a claim lost alone lost nothing), a created charge's move out of `creating` (what it writes
//! came from the PSP: lost, the durable `creating` row makes a retry or the reconciler ask the
//! PSP again), the created charge's answer stored for its key, with that move (a retry that
//! finds no answer resumes with the same reference and finds the charge), and on PostgreSQL the
//! charge's count in its month's plan usage, ahead of the `creating` row
//! ([`Store::insert_creating_charge`]). A created charge's move recovered that way is
//! reported again: its `charge.created` event may reach the merchant twice, under two event ids,
//! after a power loss. Deferred and durable units share transactions: a transaction's frames
//! reach the disk together, with the first sync after it.
//! PostgreSQL: `synchronous_commit = off` for a deferred unit's transaction, or its session
//! when it runs without one ([`Store::write_autocommit`]). A created charge's move made in one
//! statement there is durable (`store/charges.rs`, `KnownMoves`).

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use sqlx::{Acquire, AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, Store, StoreError, inline_sqlite};

/// The most units one transaction takes: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// What a unit hands the writer after running: whether it succeeded (its writes are kept), and
/// how to answer its caller once the group's commit is known.
type Ran = (bool, Answer);
type Answer = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A unit as the writer holds it: callable again, for when its group is rolled back and run a
/// second time.
type Work = Box<dyn for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Ran> + Send>;

/// A write handed to [`Store::write`] and its kin: it runs on the writer's connection inside a
/// transaction (on PostgreSQL, a pool transaction of its own), and may run more than once, a
/// clone each time, when its group is rolled back and run again.
pub trait WriteUnit<T>:
    for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
    + Clone
    + Send
    + 'static
{
}

impl<T, F> WriteUnit<T> for F where
    F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
        + Clone
        + Send
        + 'static
{
}

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

/// The queue to the writer thread, and the connection it writes on.
#[derive(Clone)]
pub(super) struct Writer {
    units: mpsc::UnboundedSender<Unit>,
    /// Why the writer takes no more units, once a sync failed.
    failed: Arc<Mutex<Option<String>>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("pending", &self.shared.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// What the writer thread and the callers that run their unit themselves share.
struct Shared {
    /// The one write connection; `None` until the writer opens it, and after a group broke it.
    /// Held for a whole group: whoever holds it is the writer.
    conn: Mutex<Option<AnyConnection>>,
    /// Units queued and not yet run to their commit (or dropped): a caller runs its unit itself
    /// only when this is 0, so no unit ever overtakes one queued before it.
    pending: AtomicUsize,
    /// A commit left the WAL due for a checkpoint, which the writer thread runs: callers queue
    /// their units until it has.
    checkpoint_due: AtomicBool,
    syncer: Option<Syncer>,
}

/// Makes every commit before the call durable: `fdatasync` of the WAL file, or a test's stand-in.
pub(super) type SyncFn = Arc<dyn Fn() -> std::io::Result<()> + Send + Sync>;

impl Writer {
    /// Starts the writer on a thread of its own, with a connection of its own to `file` that
    /// runs SQLite on that thread ([`inline_sqlite`]): a unit is a chain of statements, each
    /// waiting for the last, and every other write waits for the unit. On sqlx's own SQLite
    /// connection each statement was two hops to the connection's thread and back, and on the
    /// shared runtime each hop would also queue behind request tasks (QR codes, adapter calls).
    /// The thread sleeps only while the queue is empty. It ends when the last [`Store`] holding
    /// it is dropped.
    ///
    /// The writer commits at `synchronous = NORMAL`. With `sync`, a [`Syncer`] thread calls it
    /// before answering durable units, and starts the WAL's write-back when idle; without it,
    /// nothing syncs (the store is `NORMAL`).
    pub(super) fn start(file: PathBuf, sync: Option<SyncFn>) -> std::io::Result<Writer> {
        let write_back = wal_write_back(&file);
        Writer::start_with(file, sync.map(|sync| (sync, write_back)))
    }

    /// [`Writer::start`] with the syncer's sync and write-back given.
    fn start_with(file: PathBuf, disk: Option<(SyncFn, WriteBackFn)>) -> std::io::Result<Writer> {
        let (units, queue) = mpsc::unbounded_channel();
        let failed = Arc::new(Mutex::new(None));
        let syncer = disk
            .map(|(sync, write_back)| Syncer::start(sync, write_back, failed.clone()))
            .transpose()?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(None),
            pending: AtomicUsize::new(0),
            checkpoint_due: AtomicBool::new(false),
            syncer,
        });
        // Units are sqlx code: should one ever reach for the runtime (a timer, a spawn), it
        // finds the one that started the writer.
        let context = tokio::runtime::Handle::try_current().ok();
        let writes = shared.clone();
        std::thread::Builder::new()
            .name("pixgw-writer".into())
            .spawn(move || {
                let _entered = context.as_ref().map(|c| c.enter());
                run(file, queue, writes);
            })?;
        Ok(Writer {
            units,
            failed,
            shared,
        })
    }
}

/// `fdatasync` of a SQLite database's WAL file: every frame written to it so far reaches the
/// disk. Opened for each sync, so it is always the file SQLite writes now (SQLite deletes it
/// when the last connection closes, after checkpointing it into the database file and syncing
/// that: a WAL that is gone has nothing left to sync).
pub(super) fn wal_sync(database: &std::path::Path) -> SyncFn {
    let wal = wal_path(database);
    Arc::new(move || match std::fs::File::open(&wal) {
        Ok(file) => file.sync_data(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    })
}

fn wal_path(database: &std::path::Path) -> PathBuf {
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// The thread that makes committed transactions durable and then answers their durable units.
///
/// Whatever was committed while a sync ran waits for the next one, which then covers it all:
/// one sync per disk round trip, however many transactions. A sync that fails leaves the WAL's
/// state on disk unknown (Linux may have dropped the pages it could not write, so a later sync
/// can succeed without them): every unit waiting is answered with the error, and the writer
/// refuses every later unit until the gateway is restarted, as PostgreSQL does on a failed
/// `fsync`.
///
/// Between syncs, when it has nothing to do, it starts writing out what deferred commits left
/// in the page cache ([`Syncer::write_back`]): at one charge at a time those frames (the move
/// out of `creating`, the webhook's) were still to be written by the next charge's sync,
/// which waits for them.
struct Syncer {
    queue: std::sync::mpsc::Sender<ToSyncer>,
    failed: Arc<Mutex<Option<String>>>,
    /// Set while the syncer waits with nothing to do; taken by the one write-back hint it may
    /// be sent then.
    idle: Arc<AtomicBool>,
}

enum ToSyncer {
    /// Answers to give after the next sync.
    Sync(Vec<Answer>),
    /// Start writing committed frames out, waiting for nothing.
    WriteBack,
}

/// Starts writing out the WAL's dirty pages without waiting for them: a hint, its failure
/// ignored (the next sync tells of a disk that fails).
type WriteBackFn = Box<dyn Fn() + Send>;

impl Syncer {
    fn start(
        sync: SyncFn,
        write_back: WriteBackFn,
        failed: Arc<Mutex<Option<String>>>,
    ) -> std::io::Result<Syncer> {
        let (queue, waiting) = std::sync::mpsc::channel::<ToSyncer>();
        let failure = failed.clone();
        let idle = Arc::new(AtomicBool::new(true));
        let idle_here = idle.clone();
        std::thread::Builder::new()
            .name("pixgw-syncer".into())
            .spawn(move || {
                while let Ok(first) = waiting.recv() {
                    idle_here.store(false, Ordering::SeqCst);
                    let mut answers = Vec::new();
                    let mut to_sync = false;
                    for message in std::iter::once(first).chain(waiting.try_iter()) {
                        if let ToSyncer::Sync(more) = message {
                            answers.extend(more);
                            to_sync = true;
                        }
                    }
                    if !to_sync {
                        write_back();
                        idle_here.store(true, Ordering::SeqCst);
                        continue;
                    }
                    // Read apart: the writer reads it before each group, and must not wait
                    // for the sync below.
                    let failed_before = failure.lock().clone();
                    let outcome = match failed_before {
                        Some(reason) => Err(reason),
                        None => sync().map_err(|e| {
                            let reason = format!(
                                "syncing the database's WAL to disk failed ({e}); the gateway \
                                 takes no more writes until it is restarted: check the disk"
                            );
                            tracing::error!("{reason}");
                            *failure.lock() = Some(reason.clone());
                            reason
                        }),
                    };
                    // Idle before answering: a unit answered may commit again at once.
                    idle_here.store(true, Ordering::SeqCst);
                    for answer in answers {
                        answer(outcome.clone());
                    }
                }
            })?;
        Ok(Syncer {
            queue,
            failed,
            idle,
        })
    }

    /// Hands `answers` to the next sync; handed back when the syncer has stopped.
    fn sync_then(&self, answers: Vec<Answer>) -> Result<(), Vec<Answer>> {
        self.queue
            .send(ToSyncer::Sync(answers))
            .map_err(|std::sync::mpsc::SendError(message)| match message {
                ToSyncer::Sync(answers) => answers,
                ToSyncer::WriteBack => Vec::new(),
            })
    }

    /// Asks an idle syncer to start writing out committed frames: the next durable unit's
    /// sync then waits for its own frames, not for everything deferred since the last sync.
    /// A busy syncer is left alone (its next sync writes them anyway). A `write_then_sync`
    /// asks for its sync right after its commit's hint: the syncer usually takes both at once
    /// and only syncs; should it start the write-back first, the sync after it has those pages
    /// already on their way.
    fn write_back(&self) {
        if self.idle.swap(false, Ordering::SeqCst) {
            let _ = self.queue.send(ToSyncer::WriteBack);
        }
    }
}

/// `sync_file_range(SYNC_FILE_RANGE_WRITE)` of a SQLite database's WAL file: its dirty pages
/// start on their way to the disk, and the call returns without waiting for them.
pub(super) fn wal_write_back(database: &std::path::Path) -> WriteBackFn {
    let wal = wal_path(database);
    Box::new(move || {
        #[cfg(target_os = "linux")]
        if let Ok(file) = std::fs::File::open(&wal) {
            use std::os::fd::AsRawFd;
            // SAFETY: a plain system call on a descriptor this closure owns until it returns.
            unsafe {
                libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = &wal;
    })
}

/// The writer thread's loop. Each wait and each group is driven by its own `block_on`, so the
/// connection's lock is never held across a suspension point.
fn run(file: PathBuf, mut queue: mpsc::UnboundedReceiver<Unit>, shared: Arc<Shared>) {
    let syncer = shared.syncer.as_ref();
    while let Some(first) = futures::executor::block_on(queue.recv()) {
        let mut units = vec![first];
        while units.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(unit) => units.push(unit),
                Err(_) => break,
            }
        }
        let committed = {
            let mut conn = shared.conn.lock();
            // No longer pending once taken under the lock: a caller that gets the lock next
            // finds them committed.
            shared.pending.fetch_sub(units.len(), Ordering::SeqCst);
            let committed = futures::executor::block_on(written(&file, &mut conn, units, syncer));
            shared.note_checkpoint();
            committed
        };
        // No write-back hints from here: units queue for this thread under load, when the
        // syncer's next sync is near anyway (a hint there was one more thread wake a charge).
        give_answers(committed, syncer, false);
        if shared.checkpoint_due.load(Ordering::SeqCst) {
            shared.checkpoint();
        }
    }
}

impl Shared {
    /// Marks a checkpoint due when a commit on this thread, with the connection held, made
    /// one due.
    fn note_checkpoint(&self) {
        if inline_sqlite::take_checkpoint_due() {
            self.checkpoint_due.store(true, Ordering::SeqCst);
        }
    }

    /// Runs the checkpoint due, as SQLite's automatic one would have run it (passive: it
    /// copies what no reader still needs, waiting for none), on the writer thread.
    fn checkpoint(&self) {
        let mut conn = self.conn.lock();
        if let Some(c) = conn.as_mut()
            && let Err(e) = futures::executor::block_on(
                sqlx::raw_sql("PRAGMA wal_checkpoint(PASSIVE)").execute(c),
            )
        {
            tracing::warn!(error = %e, "checkpointing the database's WAL failed");
        }
        self.checkpoint_due.store(false, Ordering::SeqCst);
    }
}

/// A commit on its way to the disk ([`Store::write_then_sync`]): resolves once it is there, or
/// with why it never will be ([`StoreError::Unsynced`] says it to a caller).
#[must_use = "an unawaited OnDisk says nothing about the disk"]
pub struct OnDisk(BoxFuture<'static, Result<(), String>>);

impl OnDisk {
    /// A commit that was durable when it returned.
    pub(super) fn already() -> OnDisk {
        OnDisk(Box::pin(std::future::ready(Ok(()))))
    }
}

impl std::future::Future for OnDisk {
    type Output = Result<(), String>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for OnDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnDisk")
    }
}

/// Units committed, with the answers to give them once their commit is as durable as each
/// asked: given by [`give_answers`] after the connection is let go.
type Committed = Vec<(Durability, Answer)>;

/// Runs `units` as one group on `conn`, opening it first if needed. A unit not in what it
/// returns was answered already, or dropped unrun (which its caller reads as a failure).
async fn written(
    file: &std::path::Path,
    conn: &mut Option<AnyConnection>,
    units: Vec<Unit>,
    syncer: Option<&Syncer>,
) -> Committed {
    if let Some(reason) = syncer.and_then(|s| s.failed.lock().clone()) {
        fail(units, &reason);
        return Vec::new();
    }
    if conn.is_none() {
        match inline_sqlite::connect(file).await {
            Ok(c) => *conn = Some(c),
            Err(e) => {
                fail(units, &format!("no database connection: {e}"));
                return Vec::new();
            }
        }
    }
    group_on(conn, units).await
}

/// Runs `units` as one group on the connection in `conn`, and drops the connection should the
/// group leave it broken: the next group opens a fresh one.
async fn group_on(conn: &mut Option<AnyConnection>, units: Vec<Unit>) -> Committed {
    let Some(c) = conn.as_mut() else {
        fail(units, "no database connection");
        return Vec::new();
    };
    group(c, units).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "a group commit failed");
        *conn = None;
        Vec::new()
    })
}

/// Runs `units` in one transaction and returns, once it is committed, the answers to give.
///
/// Optimistically first: the units run one after another with no savepoint between them, since
/// nearly every unit succeeds and a savepoint costs two more statements per unit. Should one
/// fail, the transaction is rolled back and the group runs again with a
/// savepoint per unit, so the failed one is rolled back alone. A group of one needs no second
/// run: rolling back the transaction rolled back exactly that unit.
async fn group(conn: &mut AnyConnection, mut units: Vec<Unit>) -> Result<Committed, sqlx::Error> {
    Ok(match pass(conn, &mut units, false).await? {
        Pass::Committed(answers) => answers,
        Pass::Answered => Vec::new(),
        Pass::RolledBack => match pass(conn, &mut units, true).await? {
            Pass::Committed(answers) => answers,
            Pass::Answered | Pass::RolledBack => Vec::new(),
        },
    })
}

/// Answers committed units: deferred ones now, durable ones after the syncer's next sync, when
/// there is a syncer. With `write_back`, a commit of deferred units only asks an idle syncer to
/// start writing them out.
fn give_answers(committed: Committed, syncer: Option<&Syncer>, write_back: bool) {
    // A group that committed nothing has nothing to write out.
    let write_back = write_back && !committed.is_empty();
    let mut to_sync = Vec::new();
    for (durability, answer) in committed {
        match (durability, syncer) {
            (Durability::Durable, Some(_)) => to_sync.push(answer),
            _ => answer(Ok(())),
        }
    }
    let Some(syncer) = syncer else { return };
    if to_sync.is_empty() {
        if write_back {
            syncer.write_back();
        }
    } else if let Err(answers) = syncer.sync_then(to_sync) {
        for answer in answers {
            answer(Err("the syncer has stopped".into()));
        }
    }
}

/// How a run over a group ended.
enum Pass {
    /// Committed: the answers of the units, to give once their commit is as durable as each
    /// asked.
    Committed(Committed),
    /// Every unit answered: its one unit was rolled back, or the commit failed.
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
    let mut answers: Committed = Vec::with_capacity(units.len());
    for unit in units.iter_mut() {
        if !isolated {
            let (ok, answer) = run_unit(unit, &mut tx).await;
            if ok {
                answers.push((unit.durability, answer));
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
                for (_, answer) in answers {
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
            for (_, answer) in answers {
                answer(Err(e.to_string()));
            }
            return Err(e);
        }
        // A unit rolled back has its error to give, and nothing to wait for.
        answers.push((
            if ok {
                unit.durability
            } else {
                Durability::Deferred
            },
            answer,
        ));
    }
    match tx.commit().await {
        Ok(()) => Ok(Pass::Committed(answers)),
        Err(e) => {
            for (_, answer) in answers {
                answer(Err(e.to_string()));
            }
            Err(e)
        }
    }
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
        F: WriteUnit<T>,
    {
        self.write_with(Durability::Durable, unit).await
    }

    /// [`Store::write`] with the given [`Durability`].
    pub async fn write_with<T, F>(&self, durability: Durability, unit: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
        let Some(writer) = &self.writer else {
            let mut tx = if durability == Durability::Deferred && self.backend == Backend::Postgres
            {
                // One round trip: the two statements go as one simple query.
                self.pool()
                    .begin_with("BEGIN; SET LOCAL synchronous_commit = off")
                    .await?
            } else {
                self.pool().begin().await?
            };
            let value = unit(&mut tx).await?;
            tx.commit().await?;
            return Ok(value);
        };
        debug_assert_eq!(self.backend, Backend::Sqlite);
        writer.submit(durability, unit).await
    }

    /// [`Store::write_with`] handed to SQLite's writer now, when this is called, rather than
    /// when the future it returns is first polled: the caller goes on (reads, building its
    /// next write) while the unit commits, and its next write, queued behind this one, sees
    /// it. `None` without the writer (PostgreSQL, an in-memory database): there a write runs
    /// only once awaited.
    pub fn write_now<T, F>(
        &self,
        durability: Durability,
        unit: F,
    ) -> Option<impl Future<Output = Result<T, StoreError>> + Send + use<T, F>>
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
        Some(self.writer.as_ref()?.submit(durability, unit))
    }

    /// [`Store::write`] split in two: the unit's result once its transaction is committed (and
    /// seen by every later read and write), and an [`OnDisk`] that resolves once that commit
    /// is on disk. A caller can then start what needs only the result, and wait for the disk
    /// just before what must not happen without it: a charge's adapter call builds and signs
    /// its request while its `creating` row is synced, and only sends it after.
    ///
    /// On SQLite with a syncer the unit commits as a deferred one and the syncer's next sync,
    /// begun after the commit, resolves it; elsewhere the write is durable when it returns
    /// (PostgreSQL's commit, or SQLite at `synchronous = NORMAL`, which never syncs) and so is
    /// the `OnDisk`.
    pub async fn write_then_sync<T, F>(&self, unit: F) -> Result<(T, OnDisk), StoreError>
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
        match &self.writer {
            Some(writer) if writer.shared.syncer.is_some() => {
                let value = self.write_with(Durability::Deferred, unit).await?;
                Ok((value, writer.synced()))
            }
            _ => {
                let value = self.write_with(Durability::Durable, unit).await?;
                Ok((value, OnDisk::already()))
            }
        }
    }

    /// [`Store::write_with`] for a unit whose statements each leave the data consistent on
    /// their own (one statement, or a statement and a re-read on conflict): on PostgreSQL it runs
    /// outside a transaction, each statement committing by itself, which saves the two round
    /// trips of BEGIN and COMMIT (a deferred unit runs on a session with
    /// `synchronous_commit = off`). A failure part way keeps the statements that ran. On SQLite
    /// it is [`Store::write_with`]: the writer groups units in transactions anyway.
    pub async fn write_autocommit<T, F>(
        &self,
        durability: Durability,
        unit: F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
        if self.backend != Backend::Postgres {
            return self.write_with(durability, unit).await;
        }
        let pool = match (durability, &self.deferred) {
            (Durability::Deferred, Some(deferred)) => deferred,
            _ => self.pool(),
        };
        let mut conn = pool.acquire().await?;
        unit(&mut conn).await
    }

    /// [`Store::write_with`] for a write its caller need not wait for. On SQLite the unit is
    /// queued and this returns at once: the writer runs units in the order they came, so every
    /// write given to the store after this one sees it (an idempotency key's claim sees the
    /// answer stored by the request before). Its failure is logged, with `what`. Without the
    /// writer (PostgreSQL) this returns once the write is committed, as `write_with` does.
    pub async fn write_behind<F>(
        &self,
        durability: Durability,
        what: &'static str,
        unit: F,
    ) -> Result<(), StoreError>
    where
        F: WriteUnit<()>,
    {
        let Some(writer) = &self.writer else {
            return self.write_with(durability, unit).await;
        };
        // Answered on the writer's (or the syncer's) thread: a failure is logged there, and
        // the charge path spawns no task to wait for it. A unit dropped unrun is logged by
        // `fail`.
        writer.queue(Writer::unit(durability, unit, move |result| {
            if let Err(e) = result {
                tracing::warn!(error = %e, "{what} failed");
            }
        }))
    }
}

impl Writer {
    /// Runs `unit` here if the writer is idle, or queues it, at once; the future answers once
    /// its transaction is committed (and synced, if durable).
    fn submit<T, F>(
        &self,
        durability: Durability,
        unit: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + use<T, F>
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
        let (reply, answer) = oneshot::channel();
        let unit = Writer::unit(durability, unit, move |result| {
            let _ = reply.send(result);
        });
        let queued = match self.run_here(unit) {
            Ok(()) => Ok(()),
            Err(unit) => self.queue(unit),
        };
        let failed = self.failed.clone();
        async move {
            queued?;
            answer.await.map_err(|_| stopped(&failed))?
        }
    }

    /// `unit` as the writer runs it: `reply` gets its result once its transaction is committed
    /// (and synced, if durable). A unit that never runs drops `reply` uncalled.
    fn unit<T, F>(
        durability: Durability,
        unit: F,
        reply: impl FnOnce(Result<T, StoreError>) + Send + 'static,
    ) -> Unit
    where
        T: Send + 'static,
        F: WriteUnit<T>,
    {
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
                        reply(match (result, commit) {
                            (Ok(value), Ok(())) => Ok(value),
                            (Ok(_), Err(e)) => Err(commit_failed(e)),
                            (Err(e), _) => Err(e),
                        });
                    }
                });
                (ok, answer)
            })
        }));
        Unit { durability, work }
    }

    /// Runs `unit` as a group of its own on the calling thread, when the writer is idle: no
    /// unit pending and the connection free. Hands it back otherwise, to be queued.
    ///
    /// At low load most writes find the writer idle, and handing one to its thread and being
    /// woken for the answer were two thread wakes, each about as long as the unit itself; a
    /// deferred unit run here needs none, a durable one only the syncer's. Under load the
    /// writer is rarely idle, and units queue and share its groups as before. It never waits:
    /// the connection runs SQLite in place ([`inline_sqlite`]), so each of the group's futures
    /// is ready when first polled, and a busy writer is passed by, not waited for. Nor does it
    /// touch the disk beyond the commit's own WAL writes: a checkpoint the commit makes due
    /// is left to the writer thread, and units queue until it has run.
    fn run_here(&self, unit: Unit) -> Result<(), Unit> {
        let shared = &self.shared;
        if shared.pending.load(Ordering::SeqCst) != 0 {
            return Err(unit);
        }
        let Some(mut conn) = shared.conn.try_lock() else {
            return Err(unit);
        };
        // Read again under the lock, which the writer lowers it under once its group is
        // committed; a stopped writer or a closed connection is the writer thread's to handle.
        if shared.pending.load(Ordering::SeqCst) != 0
            || shared.checkpoint_due.load(Ordering::SeqCst)
            || conn.is_none()
            || self.failed.lock().is_some()
        {
            return Err(unit);
        }
        let committed = futures::executor::block_on(group_on(&mut conn, vec![unit]));
        shared.note_checkpoint();
        drop(conn);
        give_answers(committed, shared.syncer.as_ref(), true);
        Ok(())
    }

    /// Hands `unit` to the writer thread.
    fn queue(&self, unit: Unit) -> Result<(), StoreError> {
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        self.units.send(unit).map_err(|_| {
            self.shared.pending.fetch_sub(1, Ordering::SeqCst);
            commit_failed("the writer has stopped".into())
        })
    }

    /// Resolves once every commit made before the call is on disk: the syncer's next sync
    /// begins after it is asked, and so covers them. `Err` when that sync failed, or an
    /// earlier one did.
    fn synced(&self) -> OnDisk {
        let Some(syncer) = &self.shared.syncer else {
            return OnDisk::already();
        };
        let (tx, rx) = oneshot::channel();
        let answer: Answer = Box::new(move |result| {
            let _ = tx.send(result);
        });
        // A syncer that has stopped drops the answer unsent, and the receiver says so.
        let _ = syncer.sync_then(vec![answer]);
        OnDisk(Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err("the syncer has stopped".into()))
        }))
    }

    /// Why the writer takes no more units, once a sync failed.
    pub(super) fn stopped_by(&self) -> Option<String> {
        self.failed.lock().clone()
    }
}

/// What a unit whose answer never came is told, `failed` being the writer's.
fn stopped(failed: &Mutex<Option<String>>) -> StoreError {
    commit_failed(
        failed
            .lock()
            .clone()
            .unwrap_or_else(|| "the group's transaction could not start".into()),
    )
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

    /// A sync that waits for the test to open its gate, counting the syncs begun.
    #[derive(Default)]
    struct Gate {
        open: std::sync::Mutex<bool>,
        opened: std::sync::Condvar,
        begun: std::sync::atomic::AtomicUsize,
    }

    impl Gate {
        fn sync(self: &Arc<Self>) -> SyncFn {
            let gate = self.clone();
            Arc::new(move || {
                gate.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut open = gate.open.lock().unwrap();
                while !*open {
                    open = gate.opened.wait(open).unwrap();
                }
                Ok(())
            })
        }

        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }

        async fn wait_for_a_sync(&self) {
            while self.begun.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    }

    /// `store` (on `dir`'s `t.db`) with its writer replaced by one whose syncs are `sync`.
    fn with_sync(dir: &tempfile::TempDir, mut store: Store, sync: SyncFn) -> Store {
        let file = std::fs::canonicalize(dir.path().join("t.db")).unwrap();
        store.writer = Some(Writer::start(file, Some(sync)).unwrap());
        store
    }

    /// A unit that inserts `v` into `t` and answers `v`.
    fn inserting(v: i64) -> impl WriteUnit<i64> {
        fn unit<F: WriteUnit<i64>>(f: F) -> F {
            f
        }
        unit(move |conn| {
            Box::pin(async move {
                sqlx::query("INSERT INTO t (v) VALUES ($1)")
                    .bind(v)
                    .execute(&mut *conn)
                    .await?;
                Ok(v)
            })
        })
    }

    async fn insert(store: &Store, durability: Durability, v: i64) -> Result<i64, StoreError> {
        store.write_with(durability, inserting(v)).await
    }

    /// The WAL is reused once checkpointed: writes that never pause leave it at a few megabytes.
    /// (A checkpoint run beside the writer, passive, never catches up with it, and the WAL then
    /// grows by every write: 2.7 GB in a 20 s load run.) One write after another finds the
    /// writer idle and runs in its caller, whose commit never checkpoints: the write after a
    /// commit that made a checkpoint due goes to the writer thread, which then checkpoints.
    #[tokio::test]
    async fn the_wal_stays_small_under_writes_that_never_pause() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        // 24 MB, six times what SQLite lets the WAL grow to before a checkpoint (1000 pages).
        let mut on_writer = 0;
        for _ in 0..768 {
            let there = store
                .write(|conn| {
                    Box::pin(async move {
                        sqlx::query("INSERT INTO t (v) VALUES (zeroblob(32768))")
                            .execute(&mut *conn)
                            .await?;
                        Ok(std::thread::current().name() == Some("pixgw-writer"))
                    })
                })
                .await
                .unwrap();
            on_writer += usize::from(there);
        }
        let wal = std::fs::metadata(dir.path().join("t.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 12 << 20, "the WAL grew to {wal} bytes");
        // The first (it opens the connection), and at least one after each of the five or
        // more checkpoints due; nearly all the rest in the caller.
        assert!(
            (6..=100).contains(&on_writer),
            "{on_writer} writes on the writer"
        );
    }

    #[tokio::test]
    async fn a_durable_write_waits_for_a_sync_after_its_commit_and_a_deferred_one_never_does() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(Gate::default());
        let store = with_sync(&dir, with_table(&dir).await, gate.sync());

        let durable = tokio::spawn({
            let store = store.clone();
            async move { insert(&store, Durability::Durable, 1).await }
        });
        gate.wait_for_a_sync().await;
        // The sync is held: deferred writes go on, in groups of their own, meanwhile.
        for v in 2..5 {
            assert_eq!(insert(&store, Durability::Deferred, v).await.unwrap(), v);
        }
        assert!(!durable.is_finished(), "answered before its sync");
        gate.open();
        assert_eq!(durable.await.unwrap().unwrap(), 1);

        // Many at once: every durable write is answered (after one of a few syncs).
        let runs = (10..74).map(|v| {
            let store = store.clone();
            let durability = if v % 4 == 0 {
                Durability::Durable
            } else {
                Durability::Deferred
            };
            tokio::spawn(async move { insert(&store, durability, v).await })
        });
        for (v, run) in (10..74).zip(futures::future::join_all(runs).await) {
            assert_eq!(run.unwrap().unwrap(), v);
        }
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(count, 4 + 64);
    }

    /// A commit of deferred units only, run in its caller (the writer was idle) with the
    /// syncer idle, asks the syncer to start writing its frames out; while a sync runs,
    /// nothing is asked (that sync's successor writes them), nor by the writer thread's
    /// commits (under load, when the next sync is near anyway).
    #[tokio::test]
    async fn an_idle_syncer_is_asked_to_write_back_deferred_commits() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(Gate::default());
        let (wrote_back, write_backs) = std::sync::mpsc::channel();
        let write_back: WriteBackFn = Box::new(move || {
            let _ = wrote_back.send(());
        });
        let mut store = with_table(&dir).await;
        let file = std::fs::canonicalize(dir.path().join("t.db")).unwrap();
        store.writer = Some(Writer::start_with(file, Some((gate.sync(), write_back))).unwrap());
        let next = || write_backs.recv_timeout(std::time::Duration::from_secs(30));

        // The first write opens the writer's connection, on its thread: no hint.
        insert(&store, Durability::Deferred, 0).await.unwrap();
        insert(&store, Durability::Deferred, 1).await.unwrap();
        next().expect("no write-back asked after a deferred commit");
        assert!(write_backs.try_recv().is_err(), "one hint, one write-back");

        let durable = tokio::spawn({
            let store = store.clone();
            async move { insert(&store, Durability::Durable, 2).await }
        });
        gate.wait_for_a_sync().await;
        for v in 3..6 {
            insert(&store, Durability::Deferred, v).await.unwrap();
        }
        gate.open();
        assert_eq!(durable.await.unwrap().unwrap(), 2);
        assert!(
            write_backs.try_recv().is_err(),
            "a write-back was asked while a sync ran"
        );
        insert(&store, Durability::Deferred, 6).await.unwrap();
        next().expect("no write-back asked once the sync was done");
    }

    /// The write is answered at its commit, visible to every read; its `OnDisk` only once a
    /// sync begun after that commit is done. A failed sync says why.
    #[tokio::test]
    async fn a_write_then_sync_is_answered_at_its_commit_and_on_disk_after_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(Gate::default());
        let store = with_sync(&dir, with_table(&dir).await, gate.sync());
        let insert =
            async |store: &Store, v: i64| store.write_then_sync(inserting(v)).await.unwrap();
        let (v, on_disk) = insert(&store, 1).await;
        assert_eq!(v, 1);
        let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(store.reads())
            .await
            .unwrap();
        assert_eq!(seen, 1, "committed, and seen by a read");
        let on_disk = tokio::spawn(on_disk);
        gate.wait_for_a_sync().await;
        assert!(!on_disk.is_finished(), "on disk before its sync");
        gate.open();
        assert_eq!(on_disk.await.unwrap(), Ok(()));

        let failing: SyncFn = Arc::new(|| Err(std::io::Error::other("disk on fire")));
        let store = with_sync(&dir, store, failing);
        let (_, on_disk) = insert(&store, 2).await;
        let why = on_disk.await.unwrap_err();
        assert!(
            why.contains("syncing the database's WAL to disk failed (disk on fire)"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn a_failed_sync_fails_its_writes_and_stops_every_later_one() {
        let dir = tempfile::tempdir().unwrap();
        let failing: SyncFn = Arc::new(|| Err(std::io::Error::other("disk on fire")));
        let store = with_sync(&dir, with_table(&dir).await, failing);
        store.ping().await.unwrap();
        let error = insert(&store, Durability::Durable, 1)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("syncing the database's WAL to disk failed (disk on fire)"),
            "{error}"
        );
        for (v, durability) in [(2, Durability::Deferred), (3, Durability::Durable)] {
            let later = insert(&store, durability, v).await.unwrap_err().to_string();
            assert!(later.contains("takes no more writes"), "{later}");
        }
        // `/readyz` says so.
        let ping = store.ping().await.unwrap_err().to_string();
        assert!(ping.contains("disk on fire"), "{ping}");
    }

    #[tokio::test]
    async fn the_writer_commits_at_normal_and_syncs_the_wal_itself() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        assert_eq!(level_seen(&store, Durability::Durable).await, 1);
        assert_eq!(level_seen(&store, Durability::Deferred).await, 1);
        assert_eq!(insert(&store, Durability::Durable, 7).await.unwrap(), 7);
        // The pool's connections keep FULL for the writes that do not go through the writer.
        let pooled: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(pooled, 2);
        // The real sync, on the real WAL file.
        let wal = std::fs::canonicalize(dir.path().join("t.db")).unwrap();
        wal_sync(&wal)().unwrap();
    }

    /// `Store::reads` (read-only connections running SQLite in the asking task) sees each
    /// write the writer answered, at once, and writes nothing.
    #[tokio::test]
    async fn the_read_connections_see_every_answered_write_and_never_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        for v in 0..40 {
            let durability = [Durability::Durable, Durability::Deferred][v as usize % 2];
            insert(&store, durability, v).await.unwrap();
            let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t WHERE v <= $1")
                .bind(v)
                .fetch_one(store.reads())
                .await
                .unwrap();
            assert_eq!(seen, v + 1);
        }
        // Each read's connection went back to the pool (sqlx pings it on the way): none was
        // closed for failing the ping.
        let reads = store.reads();
        for _ in 0..100 {
            if reads.num_idle() == reads.size() as usize {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(reads.size() >= 1);
        assert_eq!(reads.num_idle(), reads.size() as usize);
        let refused = sqlx::query("INSERT INTO t (v) VALUES (1)")
            .execute(store.reads())
            .await
            .unwrap_err();
        let refused = refused.as_database_error().expect("a database error");
        assert_eq!(
            refused.code().as_deref(),
            Some("8"),
            "{}",
            refused.message()
        );
        assert!(
            refused.message().contains("readonly"),
            "{}",
            refused.message()
        );
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

    /// The name of the thread a write runs on, and the rows of `t` it sees.
    async fn where_and_what(store: &Store) -> (String, i64) {
        store
            .write_with(Durability::Deferred, |conn| {
                Box::pin(async move {
                    let thread = std::thread::current().name().unwrap_or("").to_owned();
                    let rows = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM t")
                        .fetch_one(&mut *conn)
                        .await?;
                    Ok((thread, rows))
                })
            })
            .await
            .unwrap()
    }

    /// An idle writer: the caller runs its unit itself. A unit pending: the write queues behind
    /// it on the writer's thread and sees what it wrote; once it is committed, callers run
    /// their units themselves again.
    #[tokio::test]
    async fn a_write_runs_in_its_caller_only_when_nothing_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let store = with_table(&dir).await;
        // The writer opens its connection for the first unit, which it runs itself.
        let (thread, rows) = where_and_what(&store).await;
        assert_eq!((thread.as_str(), rows), ("pixgw-writer", 0));
        let (thread, rows) = where_and_what(&store).await;
        assert_ne!(thread, "pixgw-writer");
        assert_eq!(rows, 0);

        // A write behind held inside the writer by a gate.
        let gate = Arc::new(Gate::default());
        let held = gate.sync();
        store
            .write_behind(Durability::Deferred, "held", move |conn| {
                Box::pin(async move {
                    held().unwrap();
                    sqlx::query("INSERT INTO t (v) VALUES (1)")
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            })
            .await
            .unwrap();
        let mut behind = std::pin::pin!(where_and_what(&store));
        assert!(futures::poll!(behind.as_mut()).is_pending(), "it waits");
        gate.open();
        let (thread, rows) = behind.await;
        assert_eq!((thread.as_str(), rows), ("pixgw-writer", 1));
        let (thread, rows) = where_and_what(&store).await;
        assert_ne!(thread, "pixgw-writer");
        assert_eq!(rows, 1);
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
