//! Rows every API request reads and that rarely change — API keys by prefix, each merchant's
//! active credential per PSP — kept in memory on PostgreSQL, where each read is a round trip
//! (two of the seven a charge made there).
//!
//! Kept only while this gateway listens for changes: every write of those rows, by any gateway
//! or `pixgw` command on the database, is followed by a `NOTIFY` on [`CHANNEL`] naming the
//! table ([`Store::rows_changed`]), and each gateway drops what it kept of that table when it
//! hears it (its own writes drop it at once, before they answer). Without a listening
//! connection (not yet connected, or lost, when notifications may have been missed) nothing is
//! kept and every read goes to the database. A row changed other than through the gateway (SQL
//! by hand) is seen within [`RowCache::kept_for`]. SQLite keeps nothing: its reads run in the
//! asking task, without a round trip.
//!
//! A read that overlapped a change must not be kept: what a read found is kept only when no
//! change was heard between the read's start and its end (the `generation` of its [`Ticket`]).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::api_keys::ApiKeyRecord;
use super::credentials::CredentialRecord;
use super::{Backend, Store};
use crate::domain::Environment;

/// The channel the gateways' changes to kept rows are announced on.
pub const CHANNEL: &str = "pixgw_rows";

/// How long a kept row is used at most, for changes no notification announces.
const KEPT_FOR: Duration = Duration::from_secs(2);

/// Kept entries of one table at most; beyond, the table starts afresh (entries are small, and
/// only keys and credentials that exist are kept).
const MAX_ENTRIES: usize = 100_000;

/// A table whose rows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    ApiKeys,
    Credentials,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::ApiKeys => "api_keys",
            Table::Credentials => "credentials",
        }
    }

    fn parse(name: &str) -> Option<Table> {
        [Table::ApiKeys, Table::Credentials]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// Permission to keep what a read finds, taken before the read: `None` when nothing may be
/// kept (not listening).
pub(super) struct Ticket(Option<u64>);

/// What a lookup gives: the kept value, or the ticket for the read that replaces it.
pub(super) enum Lookup<V> {
    Kept(V),
    Read(Ticket),
}

pub(super) struct RowCache {
    /// The database listened to; `None` (SQLite) keeps nothing.
    url: Option<String>,
    kept_for: parking_lot::Mutex<Duration>,
    state: parking_lot::Mutex<State>,
    listener: std::sync::OnceLock<tokio::task::JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// The listener hears every change from now on.
    listening: bool,
    /// Moves on at every change heard or made, and whenever listening starts or stops.
    generation: u64,
    /// By lookup prefix.
    api_keys: Entries<Vec<ApiKeyRecord>>,
    /// By merchant: its active credentials kept (a few, one per environment and PSP), used
    /// until the first of them was kept for too long. Looked up by `&str`: a request's lookup
    /// allocates nothing.
    credentials: Entries<Vec<CredentialRecord>>,
}

/// Values by a text key, each with the time it was kept.
struct Entries<V>(HashMap<String, (Instant, V)>);

impl<V> Default for Entries<V> {
    fn default() -> Self {
        Entries(HashMap::new())
    }
}

impl<V: Default> Entries<V> {
    /// The value kept for `key` less than `kept_for` ago.
    fn get(&mut self, key: &str, kept_for: Duration) -> Option<&V> {
        if self
            .0
            .get(key)
            .is_some_and(|(at, _)| at.elapsed() >= kept_for)
        {
            self.0.remove(key);
        }
        self.0.get(key).map(|(_, value)| value)
    }

    /// The value kept for `key`, a new one (kept now) when there is none still in time.
    fn entry(&mut self, key: &str, kept_for: Duration) -> &mut V {
        if self.get(key, kept_for).is_none() {
            if self.0.len() >= MAX_ENTRIES {
                self.0.clear();
            }
            self.0
                .insert(key.to_owned(), (Instant::now(), V::default()));
        }
        &mut self.0.get_mut(key).expect("inserted above").1
    }
}

impl RowCache {
    /// A cache of `url`'s rows (PostgreSQL), or one that keeps nothing (`None`).
    pub(super) fn new(url: Option<String>) -> Arc<RowCache> {
        Arc::new(RowCache {
            url,
            kept_for: parking_lot::Mutex::new(KEPT_FOR),
            state: parking_lot::Mutex::default(),
            listener: std::sync::OnceLock::new(),
        })
    }

    /// The API keys kept for `prefix`.
    pub(super) fn api_keys(self: &Arc<Self>, prefix: &str) -> Lookup<Vec<ApiKeyRecord>> {
        let kept_for = self.kept_for();
        self.lookup(|state| state.api_keys.get(prefix, kept_for).cloned())
    }

    /// The active credential kept for `merchant_id`'s `provider` in `environment`.
    pub(super) fn credential(
        self: &Arc<Self>,
        merchant_id: &str,
        environment: Environment,
        provider: &str,
    ) -> Lookup<CredentialRecord> {
        let kept_for = self.kept_for();
        self.lookup(|state| {
            state
                .credentials
                .get(merchant_id, kept_for)?
                .iter()
                .find(|c| c.environment == environment && c.provider == provider)
                .cloned()
        })
    }

    /// Keeps the keys a read under `ticket` found for `prefix` (none found: nothing kept).
    pub(super) fn keep_api_keys(&self, ticket: Ticket, prefix: &str, keys: &[ApiKeyRecord]) {
        if !keys.is_empty() {
            let kept_for = self.kept_for();
            self.keep(ticket, |state| {
                *state.api_keys.entry(prefix, kept_for) = keys.to_vec();
            });
        }
    }

    /// Keeps `found`, the active credential a read under `ticket` found for its merchant, PSP
    /// and environment.
    pub(super) fn keep_credential(&self, ticket: Ticket, found: &CredentialRecord) {
        let kept_for = self.kept_for();
        self.keep(ticket, |state| {
            let kept = state.credentials.entry(&found.merchant_id, kept_for);
            kept.retain(|c| !(c.environment == found.environment && c.provider == found.provider));
            kept.push(found.clone());
        });
    }

    /// Forgets `table`'s rows (every table's for `None`): they changed, or may have.
    pub(super) fn changed(&self, table: Option<Table>) {
        let mut state = self.state.lock();
        state.generation += 1;
        match table {
            Some(Table::ApiKeys) => state.api_keys.0.clear(),
            Some(Table::Credentials) => state.credentials.0.clear(),
            None => {
                state.api_keys.0.clear();
                state.credentials.0.clear();
            }
        }
    }

    /// Tests: how long a row is kept when no notification says it changed.
    pub(super) fn set_kept_for(&self, kept_for: Duration) {
        *self.kept_for.lock() = kept_for;
    }

    fn kept_for(&self) -> Duration {
        *self.kept_for.lock()
    }

    fn lookup<V>(self: &Arc<Self>, find: impl FnOnce(&mut State) -> Option<V>) -> Lookup<V> {
        if self.url.is_none() {
            return Lookup::Read(Ticket(None));
        }
        self.start_listening();
        let mut state = self.state.lock();
        if !state.listening {
            return Lookup::Read(Ticket(None));
        }
        match find(&mut state) {
            Some(value) => Lookup::Kept(value),
            None => Lookup::Read(Ticket(Some(state.generation))),
        }
    }

    fn keep(&self, ticket: Ticket, put: impl FnOnce(&mut State)) {
        let mut state = self.state.lock();
        if state.listening && ticket.0 == Some(state.generation) {
            put(&mut state);
        }
    }

    /// Listening starts with the first lookup: a `pixgw` command that never reads kept rows
    /// opens no listening connection.
    fn start_listening(self: &Arc<Self>) {
        let Some(url) = &self.url else { return };
        self.listener
            .get_or_init(|| tokio::spawn(listen(Arc::downgrade(self), url.clone())));
    }

    /// Listening started (`true`) or stopped: either way, what was kept may be stale.
    fn listening(&self, listening: bool) {
        let mut state = self.state.lock();
        state.listening = listening;
        state.generation += 1;
        state.api_keys.0.clear();
        state.credentials.0.clear();
    }
}

impl std::fmt::Debug for RowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("RowCache")
            .field("listening", &state.listening)
            .field("api_keys", &state.api_keys.0.len())
            .field("credentials", &state.credentials.0.len())
            .finish()
    }
}

impl Drop for RowCache {
    fn drop(&mut self) {
        if let Some(task) = self.listener.take() {
            task.abort();
        }
    }
}

/// Listens on [`CHANNEL`] for as long as the cache lives, connecting again a second after a
/// failure; rows are kept only while a connection listens.
async fn listen(cache: Weak<RowCache>, url: String) {
    loop {
        let connected = async {
            let mut listener = sqlx::postgres::PgListener::connect(&url).await?;
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        }
        .await;
        match connected {
            Ok(mut listener) => {
                let Some(live) = cache.upgrade() else { return };
                live.listening(true);
                drop(live);
                let lost = loop {
                    // `None`: the connection was lost, and notifications with it.
                    match listener.try_recv().await {
                        Ok(Some(heard)) => {
                            let Some(live) = cache.upgrade() else { return };
                            live.changed(Table::parse(heard.payload()));
                        }
                        Ok(None) => break "the connection was lost".to_owned(),
                        Err(e) => break e.to_string(),
                    }
                };
                let Some(live) = cache.upgrade() else { return };
                live.listening(false);
                tracing::warn!(reason = %lost, "stopped listening for changes to API keys and credentials: reading them from the database until listening again");
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for changes to API keys and credentials: reading them from the database until it can")
            }
        }
        if cache.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl Store {
    /// Rows of `table` were written: what this gateway kept of them goes at once, and on
    /// PostgreSQL every gateway listening hears it. Called after the write committed.
    pub(super) async fn rows_changed(&self, table: Table) {
        self.rows.changed(Some(table));
        if self.backend != Backend::Postgres {
            return;
        }
        // The payload is a table's fixed name; NOTIFY takes no parameters.
        let notify = format!("NOTIFY {CHANNEL}, '{}'", table.name());
        if let Err(e) = sqlx::Executor::execute(self.pool(), notify.as_str()).await {
            tracing::warn!(table = table.name(), error = %e, "other gateways were not told of a change to {}: they see it within {} s", table.name(), KEPT_FOR.as_secs());
        }
    }

    /// Tests: how long a kept row is used when no notification says it changed (2 s).
    pub fn keep_rows_for(&self, kept_for: Duration) {
        self.rows.set_kept_for(kept_for);
    }
}
