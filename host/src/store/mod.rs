//! Storage: one [`Store`] over SQLite (the embedded default) or PostgreSQL (several gateway
//! instances on one database), chosen by the database URL.
//!
//! Queries are written once, through sqlx's `Any` driver, in the subset of SQL both backends
//! speak: `$n` placeholders, `BIGINT` Unix-millisecond times, `TEXT` JSON, `ON CONFLICT`,
//! `RETURNING`. The schema lives in one folder, `migrations/`, for both backends, embedded in the
//! binary ([`schema`]); records are read from rows by column name ([`Columns`]). One module per
//! table family: [`merchants`], [`api_keys`], [`credentials`], [`charges`], [`idempotency`],
//! [`inbound`] (PSP notifications), [`webhook_endpoints`] and [`events`] (with the outbox of
//! deliveries), [`routing`]; for the dashboard [`users`] (with
//! memberships and invitations), [`sessions`] (with sign-in throttling) and [`audit`];
//! [`payment_links`] (public checkout pages); [`statement`] (paid charges by payment time);
//! [`evidence`] (sale evidence: photos and places attached to charges);
//! [`plans`] (each merchant's plan, the monthly charge counter, the limit check);
//! [`retention`] (logs swept after the plan's retention days); [`sso`] (single sign-on:
//! each merchant's identity provider, its domains, sign-ins under way); `row_cache` (API keys
//! and active credentials kept in memory on PostgreSQL while no gateway changes them).
//!
//! The charge path's writes go through [`Store::write`] (`group_commit`): on SQLite, many
//! requests' writes share one transaction and one sync to disk. On PostgreSQL, where each
//! request's write is a statement of its own, the busiest ones share statements instead
//! (`batching`: the plan's count in `plan_counter`, a webhook attempt's record in [`events`],
//! a charge's `creating` row in [`charges`], an idempotency key's claim in [`idempotency`]).

pub mod adapter_cache;
pub mod api_keys;
pub mod audit;
mod batching;
pub use batching::BatchStats;
pub mod charges;
pub mod credentials;
pub mod events;
pub mod evidence;
mod group_commit;
mod inline_sqlite;
pub use group_commit::{Durability, OnDisk, WriteUnit};
pub mod idempotency;
pub mod inbound;
pub mod live;
pub mod merchants;
pub mod payment_links;
mod plan_counter;
pub mod plans;
pub mod retention;
pub mod routing;
mod row_cache;
pub mod schema;
pub mod sessions;
pub mod sso;
pub mod statement;
pub mod users;
pub mod webhook_endpoints;

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Connection, Executor};

/// The one error type of this boundary. Constraint violations that callers act on get their
/// own case; everything else is an internal error the API logs and hides.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL is kept with its password masked ([`redact_url`]): this error is printed.
    #[error("database URL {0:?} is not valid: {1}")]
    BadUrl(String, String),
    #[error("cannot connect to the database: {0}")]
    Connect(sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("a stored value is corrupt: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    /// A charge's `creating` row was not written: the request's idempotency key is not held
    /// by it for that reference ([`idempotency::HeldKey`]); nothing was created.
    #[error("the idempotency key is not held by this request")]
    KeyNotHeld,
    /// A committed write did not reach the disk ([`OnDisk`]).
    #[error("the database could not make a write durable: {0}")]
    Unsynced(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// How long a pooled connection may sit idle before it is checked with a ping when taken.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);

/// The database every part of the gateway shares.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// [`Store::reads`]: on a SQLite file, read-only connections that run SQLite in the task
    /// that asks; elsewhere the pool itself.
    reads: AnyPool,
    /// PostgreSQL: sessions with `synchronous_commit = off`, for deferred units that run
    /// without a transaction ([`Store::write_autocommit`]); `None` on SQLite.
    deferred: Option<AnyPool>,
    backend: Backend,
    /// SQLite's group-commit writer; `None` on PostgreSQL (and for in-memory SQLite, whose
    /// connections each see a database of their own).
    writer: Option<group_commit::Writer>,
    /// API keys and active credentials kept in memory on PostgreSQL (`row_cache`).
    rows: std::sync::Arc<row_cache::RowCache>,
    /// PostgreSQL: charges counted against their plan's month together (`plan_counter`).
    counter: plan_counter::PlanCounter,
    /// PostgreSQL: webhook attempts recorded together (`events`).
    attempts: events::AttemptRecorder,
    /// PostgreSQL: charges' `creating` rows inserted together (`charges`).
    creating: charges::CreatingInserts,
    /// PostgreSQL: moves of charges their callers knew, written together (`charges`).
    moves: charges::KnownMoveWrites,
    /// PostgreSQL: idempotency keys claimed together (`idempotency`).
    claims: idempotency::KeyClaims,
}

impl Store {
    /// Opens `url` (`sqlite://path/to/file.db` or `postgres://…`). A SQLite file and its folder
    /// are created when missing; SQLite runs in WAL mode with a busy timeout so concurrent
    /// requests wait for the writer instead of failing, and with `synchronous = FULL`: a durable
    /// write ([`Durability`]) the API acknowledged survives a power loss, and a deferred one is
    /// recovered from what did (the group-commit writer syncs the WAL on a thread of its own:
    /// `group_commit`). `?synchronous=normal` on the URL trades that for no syncs at all (in
    /// WAL mode NORMAL can lose the last commits on power loss, never corrupt the file).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        install_drivers();
        let bad = |reason: &str| StoreError::BadUrl(redact_url(url), reason.to_owned());
        let mut synchronous = Synchronous::Full;
        let mut in_memory = false;
        let mut database_file = None;
        let (backend, url) = if let Some(path) = url.strip_prefix("sqlite://") {
            let (file, query) = path.split_once('?').unwrap_or((path, ""));
            // Ours, not sqlx's: taken out of the query before sqlx reads it.
            let mut kept = Vec::new();
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some(("synchronous", value)) => {
                        synchronous = match value.to_ascii_lowercase().as_str() {
                            "full" => Synchronous::Full,
                            "normal" => Synchronous::Normal,
                            _ => return Err(bad("synchronous must be full or normal")),
                        }
                    }
                    _ => kept.push(pair),
                }
            }
            let query = kept.join("&");
            let query = query.as_str();
            if file.is_empty() {
                return Err(bad("give a file path, e.g. sqlite://data/pixgw.db"));
            }
            in_memory = file == ":memory:";
            database_file = Some(std::path::PathBuf::from(file));
            if file != ":memory:"
                && let Some(dir) = std::path::Path::new(file).parent()
                && !dir.as_os_str().is_empty()
            {
                std::fs::create_dir_all(dir)
                    .map_err(|e| bad(&format!("cannot create {}: {e}", dir.display())))?;
            }
            let query = if query.contains("mode=") {
                query.to_owned()
            } else if query.is_empty() {
                "mode=rwc".to_owned()
            } else {
                format!("{query}&mode=rwc")
            };
            (Backend::Sqlite, format!("sqlite://{file}?{query}"))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (Backend::Postgres, url.to_owned())
        } else {
            return Err(bad("it must start with sqlite:// or postgres://"));
        };
        let options = AnyConnectOptions::from_str(&url)
            .map_err(|e| bad(&redact_url(&e.to_string())))?
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1))
            .log_statements(tracing::log::LevelFilter::Trace);
        let pool = pool_options(match backend {
            Backend::Sqlite => 8,
            Backend::Postgres => 16,
        })
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    conn.execute(synchronous.pragmas()).await?;
                }
                Ok(())
            })
        })
        .connect_with(options.clone())
        .await
        .map_err(StoreError::Connect)?;
        // A few connections: its units are one short statement each, and more sessions made
        // PostgreSQL's backends contend (16 of them delivered a quarter fewer webhooks under load
        // on two cores; 4: 12–24 % more charges a second, as many webhooks).
        let deferred = (backend == Backend::Postgres).then(|| {
            pool_options(4)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("SET synchronous_commit = off").await?;
                        Ok(())
                    })
                })
                .connect_lazy_with(options.clone())
        });
        // The batched moves' statements (`KnownMoves`) differ from one run to the next only in
        // their values, yet under PostgreSQL's default `plan_cache_mode = auto` each run was
        // planned anew (the planner always estimated a custom plan cheaper): planning was a
        // quarter of the moves' server time, and the generic plan runs them no slower. Their own
        // connections plan each statement once, from the statistics of that moment (the same
        // choice of the charges' index a custom plan would make then). Not for every statement:
        // the webhook attempt records' generic plan ran them twice as slowly (round 40 in the
        // README).
        //
        // One statement runs at a time per kind of move (`MOVE_STATEMENTS_AT_ONCE`): a few
        // connections serve them all, opened as the kinds come.
        let generic_plans = (backend == Backend::Postgres).then(|| {
            pool_options(8)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("SET plan_cache_mode = force_generic_plan")
                            .await?;
                        Ok(())
                    })
                })
                .connect_lazy_with(options)
        });
        let (writer, reads) =
            match database_file.filter(|_| backend == Backend::Sqlite && !in_memory) {
                Some(file) => {
                    // The writer opens the file the pool made, and syncs its WAL, by absolute path.
                    let file = std::fs::canonicalize(&file)
                        .map_err(|e| bad(&format!("cannot open {}: {e}", file.display())))?;
                    let sync = match synchronous {
                        Synchronous::Full => Some(group_commit::wal_sync(&file)),
                        Synchronous::Normal => None,
                    };
                    let reads = AnyPoolOptions::new()
                        // A read holds its connection only while it runs, on an async worker.
                        .max_connections(4)
                        .acquire_timeout(Duration::from_secs(10))
                        .test_before_acquire(false)
                        .connect_lazy_with(
                            inline_sqlite::options(&file, inline_sqlite::Access::ReadOnly)
                                .map_err(StoreError::Connect)?,
                        );
                    let writer = group_commit::Writer::start(file, sync)
                        .map_err(|e| StoreError::Connect(sqlx::Error::Io(e)))?;
                    (Some(writer), reads)
                }
                None => (None, pool.clone()),
            };
        let rows = row_cache::RowCache::new((backend == Backend::Postgres).then(|| url.clone()));
        let counter = plan_counter::PlanCounter::new(plan_counter::PlanCount {
            pool: deferred.clone().unwrap_or_else(|| pool.clone()),
        });
        let attempts = events::AttemptRecorder::new(events::AttemptRecords { pool: pool.clone() });
        let creating = charges::CreatingInserts::new(charges::CreatingRows { pool: pool.clone() });
        // Durable, on connections of their own: on the deferred pool's four, shared with the
        // counts and claims, a statement of every charge held the load back (round 19, `cargo
        // xtask load --compare`).
        let moves = charges::KnownMoveWrites::new(charges::KnownMoves::new(
            generic_plans.unwrap_or_else(|| pool.clone()),
        ));
        let claims = idempotency::KeyClaims::new(idempotency::NewKeys {
            pool: deferred.clone().unwrap_or_else(|| pool.clone()),
        });
        Ok(Store {
            pool,
            reads,
            deferred,
            backend,
            writer,
            rows,
            counter,
            attempts,
            creating,
            moves,
            claims,
        })
    }

    /// Brings the schema up to date. Safe to run from several processes at once.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        schema::adopt_split_folders(&self.pool, self.backend).await?;
        schema::MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// For a read on the request path that takes a row or a few by key and holds no
    /// transaction: on a SQLite file it runs in the asking task, on a read-only connection
    /// (`inline_sqlite`), not as a round trip to a connection's thread. It sees every write
    /// committed before it starts. Not for scans or long reads: they would hold up an async
    /// worker (use [`Store::pool`]). On PostgreSQL and in-memory SQLite, the pool.
    pub fn reads(&self) -> &AnyPool {
        &self.reads
    }

    /// The connections charges' batched moves run on (durable commits): on PostgreSQL their
    /// own, with generic plans (see [`Store::connect`]); elsewhere the pool itself.
    pub fn moves_pool(&self) -> &AnyPool {
        self.moves.batch().pool()
    }

    /// Answers when the database does and takes writes: for `/readyz`. A writer stopped by a
    /// failed sync makes the gateway not ready until it is restarted.
    pub async fn ping(&self) -> Result<(), StoreError> {
        if let Some(reason) = self.writer.as_ref().and_then(|w| w.stopped_by()) {
            return Err(StoreError::Sql(sqlx::Error::Protocol(reason)));
        }
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// What every pool of [`Store::connect`] shares: `max` connections, a 10 s wait for one, and a
/// ping only for a connection that sat idle.
fn pool_options(max: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(10))
        // sqlx pings every connection it hands out by default: on PostgreSQL a round trip
        // before each transaction and each read (several per charge). Only a connection
        // that sat idle is likely to have been dropped by the server or the network, so
        // only those are checked.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= IDLE_BEFORE_PING {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}

/// Registers the database drivers `Store::connect` opens URLs with: sqlx's SQLite and
/// PostgreSQL, and the writer's inline SQLite. Once per process; later calls do nothing. Code
/// that opens an `AnyPool` itself calls this first (sqlx's `install_default_drivers` would
/// leave the writer's driver out, and the drivers can be installed only once).
pub fn install_drivers() {
    static DRIVERS: [sqlx_core::any::driver::AnyDriver; 3] = [
        sqlx::sqlite::any::DRIVER,
        sqlx::postgres::any::DRIVER,
        inline_sqlite::DRIVER,
    ];
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        sqlx::any::install_drivers(&DRIVERS).expect("no driver is installed before this");
    });
}

/// Turns SQLite's memory statistics off for the process. On (the bundled library's default),
/// every allocation SQLite makes takes one global mutex, shared by the writer and every read
/// connection, to keep counters the gateway never reads. Once SQLite is initialised it refuses
/// the change and nothing happens, which is why the result is ignored.
///
/// # Safety
///
/// No other thread may use SQLite while this runs (`sqlite3_config` is not thread-safe): the
/// binary calls it first thing in `main`, before it spawns anything.
pub unsafe fn sqlite_memory_statistics_off() {
    // SAFETY: the option takes one `int` argument; the caller rules out concurrent SQLite use.
    unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int);
    }
}

/// How SQLite syncs commits to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Synchronous {
    /// Every commit is on disk before it returns (the default).
    Full,
    /// Commits reach disk at WAL checkpoints: faster, and the last ones can be lost on power
    /// loss.
    Normal,
}

impl Synchronous {
    fn pragmas(self) -> &'static str {
        match self {
            Synchronous::Full => {
                "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; \
                 PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
            }
            Synchronous::Normal => {
                "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; \
                 PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
            }
        }
    }
}

/// A database URL fit for logs and error messages: its password, if any, masked as `***`.
pub fn redact_url(url: &str) -> String {
    // `scheme://user:password@host…`: only the part between the first ':' after the scheme
    // and the last '@' before the path is secret.
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_owned(),
    }
}

/// A fresh owner tag for rows leased by one claim (deliveries, notifications, checks).
fn lease_owner() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Store {
    /// Runs a claim's lease-taking `UPDATE` (`$1` the lease's end, `$2` its owner, `$3` now,
    /// `$4` the most rows, `$5` the `threshold` when there is one) through the writer: a pool
    /// write would sleep in SQLite's busy handler while the charge path writes. Deferred: a
    /// lease lost in a crash lapses with the process that held it, and another claimer takes
    /// the rows sooner.
    async fn take_leases(
        &self,
        update: String,
        owner: &str,
        now: i64,
        lease_ms: i64,
        limit: i64,
        threshold: Option<i64>,
    ) -> Result<(), StoreError> {
        let owner = owner.to_owned();
        self.write_with(Durability::Deferred, move |conn| {
            Box::pin(async move {
                let mut update = sqlx::query(&update)
                    .bind(now + lease_ms)
                    .bind(&owner)
                    .bind(now)
                    .bind(limit);
                if let Some(threshold) = threshold {
                    update = update.bind(threshold);
                }
                update.execute(&mut *conn).await?;
                Ok(())
            })
        })
        .await
    }
}

/// A stored `environment` column.
fn environment_of(text: String) -> Result<crate::domain::Environment, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("environment {text:?}")))
}

/// Reads a row's columns by name, so a record's mapping does not depend on the order of a
/// `SELECT` list. A column that is missing or holds another type is a corrupt row, named in the
/// error. The `Any` driver decodes the portable types only (`i64`, `String`, `Option`s of them),
/// which is what the schema uses: flags are `BIGINT` 0/1 and JSON is `TEXT`, hence [`flag`] and
/// [`json`] beside [`col`].
///
/// [`flag`]: Columns::flag
/// [`json`]: Columns::json
/// [`col`]: Columns::col
pub(crate) trait Columns {
    fn col<T>(&self, name: &str) -> Result<T, StoreError>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>;

    /// A `BIGINT` 0/1 column.
    fn flag(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.col::<i64>(name)? != 0)
    }

    /// A `TEXT` column holding JSON.
    fn json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T, StoreError> {
        let text: String = self.col(name)?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
    }

    /// A nullable `TEXT` column holding JSON.
    fn json_opt<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        self.col::<Option<String>>(name)?
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
    }

    /// A column holding a value of a type that parses from its text (`environment`, roles,
    /// plans, typed ids…).
    fn parsed<T: FromStr>(&self, name: &str) -> Result<T, StoreError> {
        let text: String = self.col(name)?;
        text.parse()
            .map_err(|_| StoreError::Corrupt(format!("column {name}: {text:?}")))
    }
}

impl Columns for sqlx::any::AnyRow {
    fn col<T>(&self, name: &str) -> Result<T, StoreError>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        sqlx::Row::try_get(self, name)
            .map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
    }
}

/// Now, in the stored representation: Unix milliseconds, UTC.
pub fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// A stored time as RFC 3339 with millisecond precision, for API output.
pub fn rfc3339(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Parses an RFC 3339 time into stored milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let t =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.123Z"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T19:13:20.123-03:00"),
            Some(1_700_000_000_123)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn urls_lose_their_password_only() {
        assert_eq!(
            redact_url("postgres://pixgw:s3cr3t@db.internal:5432/pixgw?sslmode=require"),
            "postgres://pixgw:***@db.internal:5432/pixgw?sslmode=require"
        );
        assert_eq!(
            redact_url("postgresql://u:p%40ss@h/db"),
            "postgresql://u:***@h/db"
        );
        for unchanged in [
            "postgres://postgres@127.0.0.1:5432/postgres",
            "sqlite://data/pixgw.db",
            "sqlite://data/a@b.db",
            "not a url",
        ] {
            assert_eq!(redact_url(unchanged), unchanged);
        }
    }

    #[tokio::test]
    async fn a_bad_url_is_reported_without_its_password() {
        let err = Store::connect("mysql://root:hunter2@db/x")
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("mysql://root:***@db/x"), "{err}");
    }
}

#[cfg(test)]
mod sqlite_settings {
    use sqlx::Row;

    async fn pragma(conn: &mut sqlx::pool::PoolConnection<sqlx::Any>, pragma: &str) -> String {
        let row = sqlx::query(&format!("PRAGMA {pragma}"))
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        row.try_get::<String, _>(0)
            .or_else(|_| row.try_get::<i64, _>(0).map(|n| n.to_string()))
            .unwrap()
    }

    /// `?synchronous=normal` is the operator's explicit trade; sqlx never sees the parameter.
    #[tokio::test]
    async fn synchronous_normal_is_an_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/t.db?synchronous=normal", dir.path().display());
        let store = super::Store::connect(&url).await.unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        assert_eq!(pragma(&mut conn, "synchronous").await, "1", "NORMAL");
        assert_eq!(pragma(&mut conn, "journal_mode").await, "wal");
        let bad = format!("sqlite://{}/t.db?synchronous=off", dir.path().display());
        let err = super::Store::connect(&bad).await.unwrap_err().to_string();
        assert!(err.ends_with("synchronous must be full or normal"), "{err}");
    }

    /// Every pooled SQLite connection runs in WAL mode, waits for a busy writer, and syncs
    /// durable commits (FULL): an acknowledged payment survives a power loss.
    #[tokio::test]
    async fn connections_get_the_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::connect(&format!("sqlite://{}/t.db", dir.path().display()))
            .await
            .unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        assert_eq!(pragma(&mut conn, "synchronous").await, "2", "FULL");
        assert_eq!(pragma(&mut conn, "journal_mode").await, "wal");
        assert_eq!(pragma(&mut conn, "busy_timeout").await, "10000");
        assert_eq!(pragma(&mut conn, "foreign_keys").await, "1");
    }
}
