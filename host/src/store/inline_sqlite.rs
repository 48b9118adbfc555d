//! An sqlx `Any` driver that runs SQLite on the calling thread: the group-commit writer's
//! connection, and the read-only connections of [`Store::reads`](super::Store::reads).
//!
//! sqlx's own SQLite connection runs every statement on a thread of its own and hands the
//! results back over a channel. The writer runs one statement after another, each waiting for
//! the last, so every statement cost two thread hops, a futex wake and a sleep on that thread:
//! more than SQLite's own work, and on the charge path of every request. This connection runs
//! the statement where it is asked, through rusqlite on the same libsqlite3 as sqlx's, so its
//! futures are ready when first polled and the writer's thread does all of its SQLite work.
//! The same holds for the point reads of the charge path and the webhook worker (an API key by
//! prefix, the active credential, an endpoint by id): a read of a WAL database waits for no
//! writer, and runs in the task that asks for it in less time than the two thread hops it
//! replaces.
//!
//! It is an `AnyConnection` like any other, so the write units stay the same sqlx code that runs
//! on PostgreSQL. Rows carry the values sqlx's SQLite driver gives `Any` (by each value's storage
//! class: INTEGER as `BigInt`, REAL as `Double`, TEXT, BLOB, NULL), parameters bind as it binds
//! them (`?`, `?NNN`, `$NNN`; missing ones are NULL), and SQLite's errors come back as database
//! errors with its codes and kinds, so a unit cannot tell the two connections apart. It does what
//! the writer needs: statements, transactions and savepoints. It does not prepare or describe
//! statements for the query macros, nor run migrations (the pool does both).
//!
//! **Checkpoints are the writer thread's.** SQLite checkpoints the WAL (copies its pages into
//! the database file, syncing both) inside the commit that takes it past 1,000 pages, on the
//! thread that commits. The writer's connection also commits on request threads
//! (`group_commit`'s `run_here`), so its automatic checkpoint is replaced by a WAL hook that
//! only notes, for the committing thread, that one is due ([`take_checkpoint_due`]); the
//! writer thread runs it.
//!
//! sqlx builds an `AnyConnection` only through a registered driver, and a driver is a
//! [`Database`]: [`InlineSqlite`] is one whose row, column, value and statement types are never
//! made (every row reaches the writer as an `AnyRow`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, ready};
use futures::stream::BoxStream;
use rusqlite::ffi;
use rusqlite::types::{ToSqlOutput, ValueRef};
use sqlx::any::{
    Any, AnyArguments, AnyConnectOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo,
    AnyTypeInfoKind, AnyValue,
};
use sqlx::error::{BoxDynError, DatabaseError, ErrorKind};
use sqlx::{ConnectOptions, Connection, Database, Error, Transaction};
use sqlx_core::any::driver::AnyDriver;
use sqlx_core::any::{AnyColumn, AnyConnection, AnyConnectionBackend, AnyValueKind};
use sqlx_core::describe::Describe;
use sqlx_core::ext::ustr::UStr;
use sqlx_core::transaction::TransactionManager;
use tracing::log::LevelFilter;
use url::Url;

/// The URL scheme the driver answers to.
const SCHEME: &str = "pixgw-sqlite-inline";

/// The driver, for `sqlx::any::install_drivers` beside sqlx's own.
pub(crate) const DRIVER: AnyDriver = AnyDriver::without_migrate::<InlineSqlite>();

/// Prepared statements kept per connection: the writer's units use a few dozen.
const STATEMENT_CACHE: usize = 256;

/// A statement slower than this is logged as a warning, as the pool's are (`Store::connect`).
const SLOW: Duration = Duration::from_secs(1);

/// WAL pages past which a checkpoint is due: SQLite's own automatic threshold.
const CHECKPOINT_PAGES: std::os::raw::c_int = 1000;

thread_local! {
    /// Set on the thread of a commit of the writer's connection that left the WAL at
    /// [`CHECKPOINT_PAGES`] or more.
    static CHECKPOINT_DUE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a commit of the writer's connection on this thread, since the last call, left the
/// WAL due for a checkpoint. Cleared by the call.
pub(crate) fn take_checkpoint_due() -> bool {
    CHECKPOINT_DUE.with(|due| due.replace(false))
}

/// The writer connection's WAL hook, in place of SQLite's automatic checkpoint: called after
/// each commit with the pages the WAL now holds, it only notes that a checkpoint is due.
unsafe extern "C" fn note_checkpoint_due(
    _: *mut std::os::raw::c_void,
    _: *mut ffi::sqlite3,
    _: *const std::os::raw::c_char,
    pages: std::os::raw::c_int,
) -> std::os::raw::c_int {
    if pages >= CHECKPOINT_PAGES {
        // `try_with`: nothing may panic across SQLite's C frames, not even a thread's exit.
        let _ = CHECKPOINT_DUE.try_with(|due| due.set(true));
    }
    ffi::SQLITE_OK
}

/// Opens `file` (an existing SQLite database in WAL mode) for the writer. Its commits are not
/// synced by SQLite (`synchronous = NORMAL`): the writer's syncer makes them durable, or the
/// store was configured with `NORMAL` to begin with. Nor do they checkpoint the WAL: a commit
/// past the threshold is noted for [`take_checkpoint_due`], and the writer checkpoints.
pub(crate) async fn connect(file: &Path) -> Result<AnyConnection, Error> {
    AnyConnection::connect_with(&options(file, Access::ReadWrite)?).await
}

/// What a connection may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The writer's.
    ReadWrite,
    /// Reads only (`SQLITE_OPEN_READONLY`): a pool of these serves short reads on the request
    /// path, where a wait for the write lock would hold up an async worker.
    ReadOnly,
}

/// The options that open `file` with `access`, for `AnyConnection` or an `AnyPool`.
pub(crate) fn options(file: &Path, access: Access) -> Result<AnyConnectOptions, Error> {
    let path = file.to_str().ok_or_else(|| {
        Error::Configuration(format!("{} is not a UTF-8 path", file.display()).into())
    })?;
    let mut url = Url::parse(&format!("{SCHEME}:database")).expect("a valid URL");
    url.query_pairs_mut().append_pair("file", path);
    if access == Access::ReadOnly {
        url.query_pairs_mut().append_pair("mode", "ro");
    }
    AnyConnectOptions::from_str(url.as_str())
}

/// The driver's [`Database`]: only its connection and options are ever made.
#[derive(Debug)]
pub(crate) struct InlineSqlite;

impl Database for InlineSqlite {
    type Connection = InlineConnection;
    type TransactionManager = InlineTransactions;
    type Row = Never;
    type QueryResult = NoResult;
    type Column = Never;
    type TypeInfo = Never;
    type Value = Never;
    type ValueRef<'r> = Never;
    type Arguments<'q> = NoArguments;
    type ArgumentBuffer<'q> = ();
    type Statement<'q> = Never;
    const NAME: &'static str = "SQLite (inline)";
    const URL_SCHEMES: &'static [&'static str] = &[SCHEME];
}

/// A connection: one SQLite handle, used on whichever thread holds it.
pub(crate) struct InlineConnection {
    db: rusqlite::Connection,
    /// 0 outside a transaction, 1 in one, 2 and more in savepoints.
    depth: usize,
    /// The columns of each cached statement's rows, named once.
    columns: std::collections::HashMap<String, Arc<Columns>>,
}

impl std::fmt::Debug for InlineConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineConnection")
            .field("path", &self.db.path())
            .field("depth", &self.depth)
            .finish()
    }
}

/// A statement's result columns as `AnyRow` wants them.
struct Columns {
    names: Arc<sqlx_core::HashMap<UStr, usize>>,
    columns: Vec<AnyColumn>,
}

impl InlineConnection {
    fn open(file: &Path, access: Access) -> Result<InlineConnection, Error> {
        use rusqlite::OpenFlags;
        let (flags, pragmas) = match access {
            // As the pool's connections are set up (`Synchronous::pragmas`), at NORMAL.
            Access::ReadWrite => (
                OpenFlags::SQLITE_OPEN_READ_WRITE,
                "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; \
                 PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
            ),
            // The journal mode is the file's (WAL, set by the pool); a reader of a WAL database
            // waits for no writer.
            Access::ReadOnly => (
                OpenFlags::SQLITE_OPEN_READ_ONLY,
                "PRAGMA busy_timeout = 10000; PRAGMA query_only = ON;",
            ),
        };
        let db =
            rusqlite::Connection::open_with_flags(file, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(sql_error)?;
        db.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        db.execute_batch(pragmas).map_err(sql_error)?;
        if access == Access::ReadWrite {
            // After the pragmas: `PRAGMA wal_autocheckpoint` would replace the hook.
            // SAFETY: the handle is this open connection's; the hook takes no argument and
            // stays valid for the program's life.
            unsafe {
                ffi::sqlite3_wal_hook(db.handle(), Some(note_checkpoint_due), std::ptr::null_mut());
            }
        }
        Ok(InlineConnection {
            db,
            depth: 0,
            columns: Default::default(),
        })
    }

    /// A connection in this process is alive while it exists; what a ping can still find is a
    /// transaction left open by a caller that went away mid-way (sqlx pings a pooled
    /// connection as it comes back), rolled back here so the next user starts clean.
    fn ping(&mut self) -> Result<(), Error> {
        if !self.db.is_autocommit() {
            self.control("ROLLBACK")?;
        }
        self.depth = 0;
        Ok(())
    }

    /// Runs a statement of our own (transaction control): prepared once, kept.
    fn control(&mut self, sql: &str) -> Result<(), Error> {
        let mut statement = self.db.prepare_cached(sql).map_err(sql_error)?;
        statement.raw_execute().map_err(sql_error)?;
        Ok(())
    }

    fn begin(&mut self, statement: Option<Cow<'static, str>>) -> Result<(), Error> {
        match (self.depth, statement) {
            (0, statement) => self.control(statement.as_deref().unwrap_or("BEGIN"))?,
            (_, Some(_)) => return Err(Error::InvalidSavePointStatement),
            (depth, None) => self.control(&format!("SAVEPOINT pixgw_{depth}"))?,
        }
        self.depth += 1;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), Error> {
        match self.depth {
            0 => return Ok(()),
            1 => self.control("COMMIT")?,
            depth => self.control(&format!("RELEASE SAVEPOINT pixgw_{}", depth - 1))?,
        }
        self.depth -= 1;
        Ok(())
    }

    fn rollback(&mut self) -> Result<(), Error> {
        match self.depth {
            0 => return Ok(()),
            // SQLite rolls a transaction back itself after some errors (a full disk, say).
            1 if self.db.is_autocommit() => {}
            1 => self.control("ROLLBACK")?,
            depth => {
                let name = format!("pixgw_{}", depth - 1);
                self.control(&format!("ROLLBACK TO SAVEPOINT {name}"))?;
                self.control(&format!("RELEASE SAVEPOINT {name}"))?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// Runs `sql` with `arguments`: its rows (the first `limit` of them) and the rows it
    /// changed. A statement with arguments is prepared once and kept, as sqlx keeps it; one
    /// without may be a script of several, run in turn (their arguments taken in turn).
    fn run(
        &mut self,
        sql: &str,
        persistent: bool,
        arguments: Option<AnyArguments<'_>>,
        limit: Option<usize>,
    ) -> Result<(Vec<AnyRow>, u64), Error> {
        let started = std::time::Instant::now();
        let ran = self.run_statements(sql, persistent, arguments, limit);
        // Logged as sqlx logs its own statements, under the same target and limits.
        let elapsed = started.elapsed();
        if elapsed > SLOW {
            tracing::warn!(target: "sqlx::query", statement = sql, ?elapsed, "slow statement");
        } else if let Ok((rows, changed)) = &ran {
            tracing::trace!(target: "sqlx::query", statement = sql, rows_returned = rows.len(),
                rows_affected = changed, ?elapsed);
        }
        ran
    }

    fn run_statements(
        &mut self,
        sql: &str,
        persistent: bool,
        arguments: Option<AnyArguments<'_>>,
        limit: Option<usize>,
    ) -> Result<(Vec<AnyRow>, u64), Error> {
        let values = arguments.map(|a| a.values.0).unwrap_or_default();
        let mut out = Vec::new();
        if persistent && !values.is_empty() {
            let columns = match self.columns.get(sql) {
                Some(columns) => columns.clone(),
                None => {
                    let columns = Arc::new(self.single(sql)?);
                    if self.columns.len() >= STATEMENT_CACHE {
                        self.columns.clear();
                    }
                    self.columns.insert(sql.to_owned(), columns.clone());
                    columns
                }
            };
            let mut statement = self.db.prepare_cached(sql).map_err(sql_error)?;
            bind(&mut statement, &values, 0)?;
            step(&mut statement, &columns, limit, &mut out)?;
            return Ok((out, self.db.changes()));
        }
        let mut script = rusqlite::Batch::new(&self.db, sql);
        let (mut taken, mut changed) = (0, 0);
        while let Some(mut statement) = script.next().map_err(sql_error)? {
            taken += bind(&mut statement, &values, taken)?;
            let columns = columns_of(&statement);
            step(&mut statement, &columns, limit, &mut out)?;
            changed += self.db.changes();
        }
        Ok((out, changed))
    }

    /// The result columns of `sql`, which must be one statement: its arguments are bound to
    /// the one statement kept.
    fn single(&self, sql: &str) -> Result<Columns, Error> {
        let mut script = rusqlite::Batch::new(&self.db, sql);
        let first = script.next().map_err(sql_error)?;
        match (first, script.next().map_err(sql_error)?) {
            (Some(statement), None) => Ok(columns_of(&statement)),
            (None, _) => Err(Error::Protocol(format!("no SQL statement in {sql:?}"))),
            (Some(_), Some(_)) => Err(Error::Protocol(format!(
                "the writer's connection keeps one statement per query with arguments: {sql}"
            ))),
        }
    }
}

/// Steps `statement` to its end (or to `limit` rows in `out`), adding its rows to `out`.
fn step(
    statement: &mut rusqlite::Statement<'_>,
    columns: &Columns,
    limit: Option<usize>,
    out: &mut Vec<AnyRow>,
) -> Result<(), Error> {
    let mut rows = statement.raw_query();
    while limit.is_none_or(|limit| out.len() < limit) {
        let Some(row) = rows.next().map_err(sql_error)? else {
            break;
        };
        let mut values = Vec::with_capacity(columns.columns.len());
        for i in 0..columns.columns.len() {
            values.push(AnyValue {
                kind: value_of(row.get_ref(i).map_err(sql_error)?, i)?,
            });
        }
        out.push(AnyRow {
            column_names: columns.names.clone(),
            columns: columns.columns.clone(),
            values,
        });
    }
    Ok(())
}

/// Binds `values` to `statement`'s parameters as sqlx's SQLite driver does: `?NNN` and `$NNN`
/// take the NNNth value, a bare `?` the next one after the `taken` before, and a parameter past
/// the values stays NULL. Returns how many bare `?` it took.
fn bind(
    statement: &mut rusqlite::Statement<'_>,
    values: &[AnyValueKind<'_>],
    taken: usize,
) -> Result<usize, Error> {
    let mut next = taken;
    for parameter in 1..=statement.parameter_count() {
        let n = match statement.parameter_name(parameter) {
            None => {
                next += 1;
                next
            }
            Some(name) => name
                .strip_prefix(['?', '$'])
                .and_then(|digits| digits.parse::<usize>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    Error::Protocol(format!(
                        "unsupported SQL parameter {name}: use ?NNN or $NNN"
                    ))
                })?,
        };
        let Some(value) = values.get(n - 1) else {
            break;
        };
        let value = match value {
            AnyValueKind::Null(_) => ValueRef::Null,
            AnyValueKind::Bool(b) => ValueRef::Integer(i64::from(*b)),
            AnyValueKind::SmallInt(i) => ValueRef::Integer(i64::from(*i)),
            AnyValueKind::Integer(i) => ValueRef::Integer(i64::from(*i)),
            AnyValueKind::BigInt(i) => ValueRef::Integer(*i),
            AnyValueKind::Real(r) => ValueRef::Real(f64::from(*r)),
            AnyValueKind::Double(d) => ValueRef::Real(*d),
            AnyValueKind::Text(t) => ValueRef::Text(t.as_bytes()),
            AnyValueKind::Blob(b) => ValueRef::Blob(b),
            other => {
                return Err(Error::Protocol(format!(
                    "the writer's connection cannot bind {other:?}"
                )));
            }
        };
        statement
            .raw_bind_parameter(parameter, ToSqlOutput::Borrowed(value))
            .map_err(sql_error)?;
    }
    Ok(next - taken)
}

fn columns_of(statement: &rusqlite::Statement<'_>) -> Columns {
    let mut names = sqlx_core::HashMap::new();
    let mut columns = Vec::with_capacity(statement.column_count());
    for (ordinal, name) in statement.column_names().into_iter().enumerate() {
        let name = UStr::new(name);
        names.insert(name.clone(), ordinal);
        columns.push(AnyColumn {
            ordinal,
            name,
            // sqlx's SQLite driver types a column by its declared type; units decode by the
            // value's own type, which every `AnyValue` carries.
            type_info: AnyTypeInfo {
                kind: AnyTypeInfoKind::Null,
            },
        });
    }
    Columns {
        names: Arc::new(names),
        columns,
    }
}

/// A value as sqlx's SQLite driver gives it to `Any`: by its storage class.
fn value_of(value: ValueRef<'_>, column: usize) -> Result<AnyValueKind<'static>, Error> {
    Ok(match value {
        ValueRef::Null => AnyValueKind::Null(AnyTypeInfoKind::Null),
        ValueRef::Integer(i) => AnyValueKind::BigInt(i),
        ValueRef::Real(r) => AnyValueKind::Double(r),
        ValueRef::Text(t) => {
            AnyValueKind::Text(Cow::Owned(String::from_utf8(t.to_vec()).map_err(|e| {
                Error::ColumnDecode {
                    index: column.to_string(),
                    source: e.into(),
                }
            })?))
        }
        ValueRef::Blob(b) => AnyValueKind::Blob(Cow::Owned(b.to_vec())),
    })
}

/// SQLite's error as sqlx's SQLite driver reports it: a database error with SQLite's extended
/// code, its message, and the kind that code means.
#[derive(Debug)]
struct SqliteError {
    code: i32,
    message: String,
}

fn sql_error(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(failure, message) => {
            Error::Database(Box::new(SqliteError {
                code: failure.extended_code,
                message: message.unwrap_or_else(|| failure.to_string()),
            }))
        }
        other => Error::Protocol(format!("SQLite: {other}")),
    }
}

impl std::fmt::Display for SqliteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SqliteError {}

impl DatabaseError for SqliteError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(self.code.to_string().into())
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        match self.code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                ErrorKind::UniqueViolation
            }
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

impl AnyConnectionBackend for InlineConnection {
    fn name(&self) -> &str {
        InlineSqlite::NAME
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn close_hard(self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn ping(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(self.ping()))
    }

    fn begin(&mut self, statement: Option<Cow<'static, str>>) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(InlineConnection::begin(self, statement)))
    }

    fn commit(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(InlineConnection::commit(self)))
    }

    fn rollback(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(InlineConnection::rollback(self)))
    }

    fn start_rollback(&mut self) {
        // A transaction dropped unfinished: rolled back now, there being no later to wait for.
        if let Err(e) = InlineConnection::rollback(self) {
            tracing::error!(error = %e, "rolling back a dropped transaction failed");
        }
    }

    fn get_transaction_depth(&self) -> usize {
        self.depth
    }

    fn shrink_buffers(&mut self) {}

    fn flush(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn should_flush(&self) -> bool {
        false
    }

    fn fetch_many<'q>(
        &'q mut self,
        query: &'q str,
        persistent: bool,
        arguments: Option<AnyArguments<'q>>,
    ) -> BoxStream<'q, Result<sqlx::Either<AnyQueryResult, AnyRow>, Error>> {
        let items: Vec<_> = match self.run(query, persistent, arguments, None) {
            Ok((rows, changed)) => rows
                .into_iter()
                .map(|row| Ok(sqlx::Either::Right(row)))
                .chain([Ok(sqlx::Either::Left(AnyQueryResult {
                    rows_affected: changed,
                    last_insert_id: None,
                }))])
                .collect(),
            Err(e) => vec![Err(e)],
        };
        Box::pin(futures::stream::iter(items))
    }

    fn fetch_optional<'q>(
        &'q mut self,
        query: &'q str,
        persistent: bool,
        arguments: Option<AnyArguments<'q>>,
    ) -> BoxFuture<'q, Result<Option<AnyRow>, Error>> {
        let first = self
            .run(query, persistent, arguments, Some(1))
            .map(|(rows, _)| rows.into_iter().next());
        Box::pin(ready(first))
    }

    fn prepare_with<'c, 'q: 'c>(
        &'c mut self,
        _sql: &'q str,
        _parameters: &[AnyTypeInfo],
    ) -> BoxFuture<'c, Result<AnyStatement<'q>, Error>> {
        Box::pin(ready(Err(unsupported("prepared statement handles"))))
    }

    fn describe<'q>(&'q mut self, _sql: &'q str) -> BoxFuture<'q, Result<Describe<Any>, Error>> {
        Box::pin(ready(Err(unsupported("describing statements"))))
    }
}

fn unsupported(what: &str) -> Error {
    Error::AnyDriverError(format!("the writer's SQLite connection does not support {what}").into())
}

impl Connection for InlineConnection {
    type Database = InlineSqlite;
    type Options = InlineOptions;

    fn close(self) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn close_hard(self) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn ping(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(self.ping()))
    }

    fn begin(&mut self) -> BoxFuture<'_, Result<Transaction<'_, InlineSqlite>, Error>> {
        Transaction::begin(self, None)
    }

    fn shrink_buffers(&mut self) {}

    fn flush(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(Ok(())))
    }

    fn should_flush(&self) -> bool {
        false
    }
}

pub(crate) struct InlineTransactions;

impl TransactionManager for InlineTransactions {
    type Database = InlineSqlite;

    fn begin<'conn>(
        conn: &'conn mut InlineConnection,
        statement: Option<Cow<'static, str>>,
    ) -> BoxFuture<'conn, Result<(), Error>> {
        Box::pin(ready(conn.begin(statement)))
    }

    fn commit(conn: &mut InlineConnection) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(conn.commit()))
    }

    fn rollback(conn: &mut InlineConnection) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(ready(conn.rollback()))
    }

    fn start_rollback(conn: &mut InlineConnection) {
        AnyConnectionBackend::start_rollback(conn)
    }

    fn get_transaction_depth(conn: &InlineConnection) -> usize {
        conn.depth
    }
}

/// Where the connection opens and how: `pixgw-sqlite-inline:database?file=<path>[&mode=ro]`.
#[derive(Debug, Clone)]
pub(crate) struct InlineOptions {
    file: PathBuf,
    access: Access,
}

impl FromStr for InlineOptions {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_url(&Url::parse(s).map_err(|e| Error::Configuration(e.into()))?)
    }
}

impl TryFrom<&AnyConnectOptions> for InlineOptions {
    type Error = Error;

    fn try_from(options: &AnyConnectOptions) -> Result<Self, Error> {
        Self::from_url(&options.database_url)
    }
}

impl ConnectOptions for InlineOptions {
    type Connection = InlineConnection;

    fn from_url(url: &Url) -> Result<Self, Error> {
        let file = url
            .query_pairs()
            .find_map(|(k, v)| (k == "file").then(|| PathBuf::from(v.as_ref())))
            .ok_or_else(|| Error::Configuration(format!("{url} names no file").into()))?;
        let access = match url.query_pairs().find(|(k, _)| k == "mode") {
            None => Access::ReadWrite,
            Some((_, mode)) if mode == "ro" => Access::ReadOnly,
            Some((_, mode)) => {
                return Err(Error::Configuration(
                    format!("mode={mode} in {url}: only ro is known").into(),
                ));
            }
        };
        Ok(InlineOptions { file, access })
    }

    fn connect(&self) -> BoxFuture<'_, Result<InlineConnection, Error>> {
        Box::pin(ready(InlineConnection::open(&self.file, self.access)))
    }

    fn log_statements(self, _level: LevelFilter) -> Self {
        self
    }

    fn log_slow_statements(self, _level: LevelFilter, _duration: Duration) -> Self {
        self
    }
}

/// The driver's row, column, type, value and statement: never made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Never {}

impl std::fmt::Display for Never {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

impl sqlx::TypeInfo for Never {
    fn is_null(&self) -> bool {
        match *self {}
    }

    fn name(&self) -> &str {
        match *self {}
    }
}

impl sqlx::Column for Never {
    type Database = InlineSqlite;

    fn ordinal(&self) -> usize {
        match *self {}
    }

    fn name(&self) -> &str {
        match *self {}
    }

    fn type_info(&self) -> &Never {
        self
    }
}

impl sqlx::Row for Never {
    type Database = InlineSqlite;

    fn columns(&self) -> &[Never] {
        match *self {}
    }

    fn try_get_raw<I>(&self, _index: I) -> Result<Never, Error>
    where
        I: sqlx::ColumnIndex<Self>,
    {
        match *self {}
    }
}

impl sqlx::Value for Never {
    type Database = InlineSqlite;

    fn as_ref(&self) -> Never {
        match *self {}
    }

    fn type_info(&self) -> Cow<'_, Never> {
        match *self {}
    }

    fn is_null(&self) -> bool {
        match *self {}
    }
}

impl<'r> sqlx::ValueRef<'r> for Never {
    type Database = InlineSqlite;

    fn to_owned(&self) -> Never {
        match *self {}
    }

    fn type_info(&self) -> Cow<'_, Never> {
        match *self {}
    }

    fn is_null(&self) -> bool {
        match *self {}
    }
}

impl<'q> sqlx::Statement<'q> for Never {
    type Database = InlineSqlite;

    fn to_owned(&self) -> Never {
        match *self {}
    }

    fn sql(&self) -> &str {
        match *self {}
    }

    fn parameters(&self) -> Option<sqlx::Either<&[Never], usize>> {
        match *self {}
    }

    fn columns(&self) -> &[Never] {
        match *self {}
    }

    sqlx_core::impl_statement_query!(NoArguments);
}

/// Arguments reach the connection as `AnyArguments`; the driver's own take none.
#[derive(Default)]
pub(crate) struct NoArguments;

impl<'q> sqlx::Arguments<'q> for NoArguments {
    type Database = InlineSqlite;

    fn reserve(&mut self, _additional: usize, _size: usize) {}

    fn add<T>(&mut self, _value: T) -> Result<(), BoxDynError>
    where
        T: 'q + sqlx::Encode<'q, InlineSqlite> + sqlx::Type<InlineSqlite>,
    {
        Err("the writer's SQLite connection takes arguments through `Any` only".into())
    }

    fn len(&self) -> usize {
        0
    }
}

/// Rows changed are counted through `Any`; the driver's own result says nothing.
#[derive(Default)]
pub(crate) struct NoResult;

impl Extend<NoResult> for NoResult {
    fn extend<T: IntoIterator<Item = NoResult>>(&mut self, _iter: T) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Row;

    /// A database with a table, the pool sqlx's SQLite driver opens on it, and the writer's
    /// inline connection.
    async fn both() -> (tempfile::TempDir, sqlx::AnyPool, AnyConnection) {
        crate::store::install_drivers();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.db");
        let pool = sqlx::AnyPool::connect(&format!("sqlite://{}?mode=rwc", file.display()))
            .await
            .unwrap();
        sqlx::raw_sql(
            "PRAGMA journal_mode = WAL; \
             CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE); \
             CREATE TABLE t (p INTEGER REFERENCES p (id), i INTEGER, f REAL, s TEXT, b BLOB, \
                             flag INTEGER, CHECK (i IS NULL OR i >= 0));",
        )
        .execute(&pool)
        .await
        .unwrap();
        let inline = connect(&file).await.unwrap();
        (dir, pool, inline)
    }

    /// The values of `sql`'s rows, as `Any` holds them. A NULL is a NULL: sqlx's driver types
    /// it by the column's declared type, which no decoding reads.
    async fn values<'e>(on: impl sqlx::AnyExecutor<'e>, sql: &'e str) -> Vec<Vec<String>> {
        let rows = sqlx::query(sql).fetch_all(on).await.unwrap();
        rows.iter()
            .map(|row| {
                row.values
                    .iter()
                    .map(|v| match &v.kind {
                        AnyValueKind::Null(_) => "NULL".to_owned(),
                        kind => format!("{kind:?}"),
                    })
                    .collect()
            })
            .collect()
    }

    #[tokio::test]
    async fn rows_and_arguments_are_what_sqlxs_sqlite_driver_gives_any() {
        let (_dir, pool, mut inline) = both().await;
        sqlx::query("INSERT INTO p (id, name) VALUES ($1, $2)")
            .bind(1i64)
            .bind("one")
            .execute(&mut inline)
            .await
            .unwrap();
        // Every kind of argument, numbered out of order, and a missing one (NULL).
        let changed = sqlx::query(
            "INSERT INTO t (p, i, f, s, b, flag) VALUES ($6, $1, $2, $3, $4, $5), \
             (?6, NULL, ?7, NULL, NULL, NULL)",
        )
        .bind(7i32)
        .bind(2.5f64)
        .bind("olá")
        .bind(vec![0u8, 255])
        .bind(true)
        .bind(1i64)
        .execute(&mut inline)
        .await
        .unwrap()
        .rows_affected();
        assert_eq!(changed, 2);
        let query = "SELECT p, i, f, s, b, flag, i + 0.5 AS half FROM t ORDER BY rowid";
        let seen = values(&mut inline, query).await;
        assert_eq!(seen, values(&pool, query).await);
        assert_eq!(seen.len(), 2);

        let row = sqlx::query("SELECT i, s, flag FROM t WHERE p = ?")
            .bind(1i64)
            .fetch_one(&mut inline)
            .await
            .unwrap();
        assert_eq!(row.get::<i64, _>("i"), 7);
        assert_eq!(row.get::<String, _>("s"), "olá");
        assert_eq!(row.get::<i64, _>("flag"), 1);
        let none: Option<(i64,)> = sqlx::query_as("SELECT i FROM t WHERE p = 99")
            .fetch_optional(&mut inline)
            .await
            .unwrap();
        assert_eq!(none, None);
    }

    #[tokio::test]
    async fn errors_carry_sqlites_codes_and_kinds_as_sqlxs_driver_gives_them() {
        let (_dir, pool, mut inline) = both().await;
        let cases = [
            ("INSERT INTO p (id, name) VALUES (1, 'a')", None),
            (
                "INSERT INTO p (id, name) VALUES (2, 'a')",
                Some(ErrorKind::UniqueViolation),
            ),
            (
                "INSERT INTO p (id, name) VALUES (1, 'b')",
                Some(ErrorKind::UniqueViolation),
            ),
            (
                "INSERT INTO p (id, name) VALUES (3, NULL)",
                Some(ErrorKind::NotNullViolation),
            ),
            (
                "INSERT INTO t (p) VALUES (42)",
                Some(ErrorKind::ForeignKeyViolation),
            ),
            (
                "INSERT INTO t (i) VALUES (-1)",
                Some(ErrorKind::CheckViolation),
            ),
            ("SELEC 1", Some(ErrorKind::Other)),
        ];
        sqlx::query("PRAGMA foreign_keys = ON")
            .execute(&pool)
            .await
            .unwrap();
        for (sql, kind) in cases {
            let ours = sqlx::query(sql).execute(&mut inline).await;
            match kind {
                None => {
                    ours.unwrap();
                    continue;
                }
                Some(kind) => {
                    let ours = ours.unwrap_err();
                    let theirs = sqlx::query(sql).execute(&pool).await.unwrap_err();
                    let (ours, theirs) = (
                        ours.as_database_error().expect(sql),
                        theirs.as_database_error().expect(sql),
                    );
                    assert_eq!(ours.kind(), kind, "{sql}");
                    assert_eq!(ours.code(), theirs.code(), "{sql}");
                    assert_eq!(ours.message(), theirs.message(), "{sql}");
                }
            }
        }
    }

    #[tokio::test]
    async fn transactions_and_savepoints_keep_and_drop_what_they_should() {
        let (_dir, pool, mut inline) = both().await;
        let insert = |id: i64| {
            sqlx::query("INSERT INTO p (id, name) VALUES ($1, $2)")
                .bind(id)
                .bind(id.to_string())
        };
        let mut tx = inline.begin_with("BEGIN IMMEDIATE").await.unwrap();
        insert(1).execute(&mut *tx).await.unwrap();
        {
            let mut kept = tx.begin().await.unwrap();
            insert(2).execute(&mut *kept).await.unwrap();
            kept.commit().await.unwrap();
        }
        {
            let mut dropped = tx.begin().await.unwrap();
            insert(3).execute(&mut *dropped).await.unwrap();
            dropped.rollback().await.unwrap();
        }
        {
            // Dropped unfinished: rolled back at once.
            let mut abandoned = tx.begin().await.unwrap();
            insert(4).execute(&mut *abandoned).await.unwrap();
        }
        insert(5).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        {
            let mut abandoned = inline.begin().await.unwrap();
            insert(6).execute(&mut *abandoned).await.unwrap();
        }
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM p ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(ids, [1, 2, 5]);
        assert!(!inline.is_in_transaction());
        // A savepoint statement is refused, as sqlx's driver refuses it.
        let mut tx = inline.begin().await.unwrap();
        assert!(matches!(
            tx.begin_with("BEGIN IMMEDIATE").await,
            Err(Error::InvalidSavePointStatement)
        ));
    }

    #[tokio::test]
    async fn a_script_runs_whole_and_a_script_with_arguments_is_refused() {
        let (_dir, pool, mut inline) = both().await;
        sqlx::raw_sql(
            "INSERT INTO p (id, name) VALUES (1, 'a'); DELETE FROM p WHERE id = 1; \
                       INSERT INTO p (id, name) VALUES (2, 'b');",
        )
        .execute(&mut inline)
        .await
        .unwrap();
        let error = sqlx::query("INSERT INTO p (id, name) VALUES ($1, 'c'); SELECT 1")
            .bind(3i64)
            .execute(&mut inline)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("one statement per query with arguments"),
            "{error}"
        );
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM p")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(ids, [2]);
    }

    #[tokio::test]
    async fn a_file_that_is_not_there_is_an_error_that_names_it() {
        crate::store::install_drivers();
        let dir = tempfile::tempdir().unwrap();
        let error = connect(&dir.path().join("missing.db")).await.unwrap_err();
        assert!(error.to_string().contains("unable to open"), "{error}");
    }

    #[tokio::test]
    async fn a_commit_past_the_checkpoint_threshold_is_noted_and_not_checkpointed() {
        let (dir, _pool, mut inline) = both().await;
        let file = dir.path().join("t.db");
        take_checkpoint_due();
        sqlx::query("INSERT INTO p (id, name) VALUES (1, 'a')")
            .execute(&mut inline)
            .await
            .unwrap();
        assert!(!take_checkpoint_due(), "a few pages are not due");
        // 160 rows of 8 pages: past the 1,000 pages of SQLite's automatic checkpoint.
        let mut tx = inline.begin().await.unwrap();
        for _ in 0..160 {
            sqlx::query("INSERT INTO t (b) VALUES (zeroblob(32768))")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        assert!(take_checkpoint_due());
        assert!(!take_checkpoint_due(), "taking it clears it");
        // The pages are in the WAL only: the commit did not copy them to the database file.
        let size = || std::fs::metadata(&file).unwrap().len();
        assert!(size() < 1 << 20, "the database file holds {} bytes", size());
        sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut inline)
            .await
            .unwrap();
        assert!(size() > 5 << 20, "the database file holds {} bytes", size());
    }

    #[tokio::test]
    async fn a_ping_rolls_back_a_transaction_its_caller_left_open() {
        let (_dir, pool, mut inline) = both().await;
        sqlx::query("BEGIN").execute(&mut inline).await.unwrap();
        sqlx::query("INSERT INTO p (id, name) VALUES (1, 'a')")
            .execute(&mut inline)
            .await
            .unwrap();
        inline.ping().await.unwrap();
        assert!(!inline.is_in_transaction());
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM p")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(count, 0);
        // The write lock went with it: another connection writes at once.
        sqlx::query("INSERT INTO p (id, name) VALUES (2, 'b')")
            .execute(&pool)
            .await
            .unwrap();
    }
}
