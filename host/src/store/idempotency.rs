//! Idempotency keys: the first request with a key claims it; a replay gets the first answer.
//!
//! The claim is one `INSERT … ON CONFLICT DO NOTHING`, so of N concurrent requests with one key
//! exactly one proceeds, on SQLite and on PostgreSQL shared by several gateways. The claim also
//! reserves the charge reference: if the first request dies half-way, a retry after its lock
//! expires resumes with the same reference, so the PSP cannot create a second charge. On
//! PostgreSQL the claims that wait while others run share that `INSERT` ([`NewKeys`]); a key
//! one of them finds held is then read alone.
//!
//! A lock belongs to one request (its `lock_owner`): the request renews it while it runs
//! ([`Store::hold_idempotency_key`]), so it can be short and a crashed gateway's key is free
//! again within seconds, and a request that lost its lock can neither renew it nor store an
//! answer over the retry that took it.

use futures::future::BoxFuture;
use sqlx::Row;

use super::events::{AnyQuery, Rider};
use super::{Durability, Store, StoreError, now_ms};
use crate::domain::Environment;

/// Who owns a key: one merchant in one environment.
#[derive(Debug, Clone, Copy)]
pub struct KeyScope<'a> {
    pub merchant_id: &'a str,
    pub environment: Environment,
    pub key: &'a str,
}

/// A request's claim on its key: its fingerprint (`request_hash`), the reference it would use,
/// its `lock` (a new [`new_lock`] per request), how long it may take before a retry may resume
/// it (`lock_ms`) and how long the key is kept at least (`ttl_ms`).
#[derive(Debug, Clone, Copy)]
pub struct KeyClaim<'a> {
    pub scope: KeyScope<'a>,
    pub request_hash: &'a str,
    pub reference: &'a str,
    pub lock: &'a str,
    pub lock_ms: i64,
    pub ttl_ms: i64,
}

/// The outcome of trying to claim a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This request owns the key; create with this reference. `lock` identifies its lock.
    Fresh { reference: String, lock: String },
    /// A request with this key died before answering; this one resumes with its reference.
    Resume { reference: String, lock: String },
    /// The key has an answer: give it again.
    Replay { status: u16, body: String },
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running.
    InProgress,
}

impl Store {
    /// Claims a key for a request.
    pub async fn claim_idempotency_key(&self, claim: KeyClaim<'_>) -> Result<Claim, StoreError> {
        if self.backend == super::Backend::Postgres {
            // Usually a key nobody holds: inserted with the claims that wait beside it
            // ([`NewKeys`]). Any other outcome (taken, replayed, expired) is read alone below.
            let now = now_ms();
            let (lock, reference) = (claim.lock.to_owned(), claim.reference.to_owned());
            let new = NewKey {
                merchant_id: claim.scope.merchant_id.to_owned(),
                environment: claim.scope.environment,
                key: claim.scope.key.to_owned(),
                request_hash: claim.request_hash.to_owned(),
                reference: reference.clone(),
                locked_until: now + claim.lock_ms,
                created_at: now,
                expires_at: now + claim.ttl_ms,
                lock: lock.clone(),
            };
            if self.claims.write((), new).await == Some(true) {
                return Ok(Claim::Fresh { reference, lock });
            }
        }
        // Deferred: the charge's `creating` row is written durably before any PSP call and
        // carries this claim to disk with it; a claim lost alone in a crash lost nothing.
        // Without a transaction on PostgreSQL: each statement of the claim stands alone (an
        // insert that loses to another is followed by a read, and the loop reads again).
        self.write_autocommit(Durability::Deferred, claim_unit(claim))
            .await
    }

    /// [`Store::claim_idempotency_key`] handed to SQLite's writer now ([`Store::write_now`]):
    /// the request's `creating` row, queued behind it, is written only if the claim made the
    /// request the key's holder with `reference` ([`HeldKey`] checks it in the row's
    /// transaction), so the request waits for the writer once instead of twice. `None` on
    /// PostgreSQL, where the claim is awaited first.
    pub fn claim_idempotency_key_now(
        &self,
        claim: KeyClaim<'_>,
    ) -> Option<impl Future<Output = Result<Claim, StoreError>> + Send + use<>> {
        self.write_now(Durability::Deferred, claim_unit(claim))
    }

    /// How PostgreSQL's claims of new keys went: statements, and the keys they claimed
    /// together or found taken.
    pub fn idempotency_claim_stats(&self) -> super::BatchStats {
        self.claims.stats()
    }

    /// Stores the answer of the request holding `lock`, kept until `expires_at` at least. When
    /// that request lost the lock (it lapsed and a retry took it over), nothing is stored: the
    /// retry's answer is the one kept.
    ///
    /// A created charge's answer is usually stored by the charge's move ([`HeldKey`]); when it
    /// is not (the move was another request's), it is written behind ([`Store::write_behind`]):
    /// the request answers at once, and the next claim of the key (a retry) is queued after this
    /// write, so it finds the answer. Lost in a crash, a retry resumes with the same reference and
    /// answers with the stored charge. A refusal is synced before the request answers: lost, a
    /// retry would try the PSP again.
    pub async fn complete_idempotency_key(
        &self,
        scope: KeyScope<'_>,
        lock: &str,
        status: u16,
        body: &str,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let unit = store_answer(StoredAnswer {
            merchant_id: scope.merchant_id.to_owned(),
            environment: scope.environment,
            key: scope.key.to_owned(),
            lock: lock.to_owned(),
            status,
            body: body.to_owned(),
            expires_at,
        });
        if (200..300).contains(&status) {
            self.write_behind(
                Durability::Deferred,
                "storing an idempotency key's answer",
                unit,
            )
            .await
        } else {
            self.write_with(Durability::Durable, unit).await
        }
    }

    /// Extends the lock `lock` holds to `lock_ms` from now; `false` when the lock is no
    /// longer this request's.
    pub async fn renew_idempotency_lock(
        &self,
        scope: KeyScope<'_>,
        lock: &str,
        lock_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE idempotency_keys SET locked_until = $1 \
             WHERE merchant_id = $2 AND environment = $3 AND key = $4 AND lock_owner = $5 \
               AND response_status IS NULL AND locked_until > 0",
        )
        .bind(now_ms() + lock_ms)
        .bind(scope.merchant_id)
        .bind(scope.environment.as_str())
        .bind(scope.key)
        .bind(lock)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Keeps `lock` on the key renewed every third of `lock_ms` until the returned guard is
    /// dropped: a request holds its key for as long as it runs, however long its PSP takes,
    /// and a gateway that dies frees it within `lock_ms`.
    pub fn hold_idempotency_key(
        &self,
        scope: KeyScope<'_>,
        lock: &str,
        lock_ms: i64,
    ) -> LockHeartbeat {
        let store = self.clone();
        let (merchant, environment, key, lock) = (
            scope.merchant_id.to_owned(),
            scope.environment,
            scope.key.to_owned(),
            lock.to_owned(),
        );
        let every = std::time::Duration::from_millis((lock_ms / 3).max(1) as u64);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tick.tick().await;
                let scope = KeyScope {
                    merchant_id: &merchant,
                    environment,
                    key: &key,
                };
                match store.renew_idempotency_lock(scope, &lock, lock_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(key = %key, "an idempotency lock was lost while its request ran");
                        return;
                    }
                    // A database hiccup: the next tick tries again before the lock lapses.
                    Err(e) => tracing::warn!(error = %e, "renewing an idempotency lock failed"),
                }
            }
        });
        LockHeartbeat(task)
    }

    /// Ends the lock `lock` of a request that gave no final answer, keeping its reference: a
    /// retry with the same key resumes at once instead of waiting for the lock to lapse.
    pub async fn unlock_idempotency_key(
        &self,
        scope: KeyScope<'_>,
        lock: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE idempotency_keys SET locked_until = 0 \
             WHERE merchant_id = $1 AND environment = $2 AND key = $3 AND response_status IS NULL \
               AND lock_owner = $4",
        )
        .bind(scope.merchant_id)
        .bind(scope.environment.as_str())
        .bind(scope.key)
        .bind(lock)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Deletes expired keys; run now and then by a background task.
    pub async fn sweep_idempotency_keys(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM idempotency_keys WHERE expires_at <= $1")
            .bind(now_ms())
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
}

/// A key held by a running request, for storing its answer inside the write that makes the
/// answer: a created charge's answer is written with the charge's move out of `creating`
/// ([`Store::transition_charge_with`]), one transaction where a second one followed it. Stored
/// so, the answer is committed before the request answers, as a written-behind one would be
/// queued before it. The body is rendered inside that write, from the charge it moved, and kept
/// here once the write committed, for the response.
pub struct HeldKey {
    merchant_id: String,
    environment: Environment,
    key: String,
    lock: String,
    expires_at: i64,
    answer: parking_lot::Mutex<Option<String>>,
}

impl HeldKey {
    /// `scope` held under `lock`; an answer stored through it is kept until `expires_at` at least.
    pub fn new(scope: KeyScope<'_>, lock: &str, expires_at: i64) -> std::sync::Arc<HeldKey> {
        std::sync::Arc::new(HeldKey {
            merchant_id: scope.merchant_id.to_owned(),
            environment: scope.environment,
            key: scope.key.to_owned(),
            lock: lock.to_owned(),
            expires_at,
            answer: parking_lot::Mutex::new(None),
        })
    }

    /// Whether the key is still held under this lock for a request placing `reference`, with no
    /// answer yet: read in the transaction that writes a charge's `creating` row, so that a
    /// request whose claim went another way (a replay, another request's key, a resumed
    /// reference) never creates a charge.
    pub(super) async fn holds_on(
        &self,
        conn: &mut sqlx::AnyConnection,
        reference: &str,
    ) -> Result<bool, StoreError> {
        let held = sqlx::query(
            "SELECT 1 FROM idempotency_keys WHERE merchant_id = $1 AND environment = $2 \
             AND key = $3 AND lock_owner = $4 AND reference = $5 AND response_status IS NULL",
        )
        .bind(&self.merchant_id)
        .bind(self.environment.as_str())
        .bind(&self.key)
        .bind(&self.lock)
        .bind(reference)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(held.is_some())
    }

    /// The body of the 2xx answer a committed write stored for the key (or left to the retry
    /// that took the lock over), taken once; `None` when no write did: the request's answer is
    /// still its own to store.
    pub fn take_answer(&self) -> Option<String> {
        self.answer.lock().take()
    }

    /// The write storing `body` as the key's 201 answer, to run inside the transaction of the
    /// move it reports (with the move's event, on PostgreSQL: [`Rider`]).
    pub(super) fn store_created<'q>(&'q self, body: &str) -> Rider<'q> {
        let answer = StoredAnswer {
            merchant_id: self.merchant_id.clone(),
            environment: self.environment,
            key: self.key.clone(),
            lock: self.lock.clone(),
            status: 201,
            body: body.to_owned(),
            expires_at: self.expires_at,
        };
        Rider {
            sql: answer_sql,
            bind: Box::new(move |query| answer.bind(query)),
            done: Box::new(|changed| answered(&self.key, changed)),
        }
    }

    /// Records that the write storing `body` committed.
    pub(super) fn stored(&self, body: String) {
        *self.answer.lock() = Some(body);
    }
}

/// Renews an idempotency lock while it lives; see [`Store::hold_idempotency_key`].
pub struct LockHeartbeat(tokio::task::JoinHandle<()>);

impl Drop for LockHeartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A new request's lock on the key it claims.
pub fn new_lock() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The claim's write, owning what it needs.
fn claim_unit(claim: KeyClaim<'_>) -> impl super::WriteUnit<Claim> + use<> {
    let (merchant, environment, key) = (
        claim.scope.merchant_id.to_owned(),
        claim.scope.environment,
        claim.scope.key.to_owned(),
    );
    let (request_hash, reference, lock) = (
        claim.request_hash.to_owned(),
        claim.reference.to_owned(),
        claim.lock.to_owned(),
    );
    let (lock_ms, ttl_ms) = (claim.lock_ms, claim.ttl_ms);
    move |conn: &mut sqlx::AnyConnection| -> BoxFuture<'_, Result<Claim, StoreError>> {
        Box::pin(async move {
            let claim = KeyClaim {
                scope: KeyScope {
                    merchant_id: &merchant,
                    environment,
                    key: &key,
                },
                request_hash: &request_hash,
                reference: &reference,
                lock: &lock,
                lock_ms,
                ttl_ms,
            };
            claim_on(conn, claim).await
        })
    }
}

/// [`Store::claim_idempotency_key`] on the writer's connection.
async fn claim_on(
    conn: &mut sqlx::AnyConnection,
    claim: KeyClaim<'_>,
) -> Result<Claim, StoreError> {
    let KeyClaim {
        scope,
        request_hash,
        reference,
        lock,
        lock_ms,
        ttl_ms,
    } = claim;
    // Two rounds at most: the second one runs after an expired key was swept.
    for _ in 0..2 {
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash, \
             reference, locked_until, created_at, expires_at, lock_owner) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(scope.merchant_id)
        .bind(scope.environment.as_str())
        .bind(scope.key)
        .bind(request_hash)
        .bind(reference)
        .bind(now + lock_ms)
        .bind(now)
        .bind(now + ttl_ms)
        .bind(lock)
        .execute(&mut *conn)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Claim::Fresh {
                reference: reference.to_owned(),
                lock: lock.to_owned(),
            });
        }
        let Some(row) = sqlx::query(
            "SELECT request_hash, reference, response_status, response_body, locked_until, \
             expires_at FROM idempotency_keys \
             WHERE merchant_id = $1 AND environment = $2 AND key = $3",
        )
        .bind(scope.merchant_id)
        .bind(scope.environment.as_str())
        .bind(scope.key)
        .fetch_optional(&mut *conn)
        .await?
        else {
            continue; // released between our insert and select: try again
        };
        let (stored_hash, stored_reference): (String, String) = (row.get(0), row.get(1));
        let (status, body): (Option<i64>, Option<String>) = (row.get(2), row.get(3));
        let (locked_until, expires_at): (i64, i64) = (row.get(4), row.get(5));
        if expires_at <= now {
            sqlx::query(
                "DELETE FROM idempotency_keys \
                 WHERE merchant_id = $1 AND environment = $2 AND key = $3 AND expires_at <= $4",
            )
            .bind(scope.merchant_id)
            .bind(scope.environment.as_str())
            .bind(scope.key)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            continue;
        }
        if stored_hash != request_hash {
            return Ok(Claim::Mismatch);
        }
        if let (Some(status), Some(body)) = (status, body) {
            return Ok(Claim::Replay {
                status: u16::try_from(status)
                    .map_err(|_| StoreError::Corrupt(format!("response status {status}")))?,
                body,
            });
        }
        if locked_until > now {
            return Ok(Claim::InProgress);
        }
        // The first request died: take its lock over, unless someone else just did.
        let taken = sqlx::query(
            "UPDATE idempotency_keys SET locked_until = $1, lock_owner = $6 \
             WHERE merchant_id = $2 AND environment = $3 AND key = $4 \
               AND response_status IS NULL AND locked_until = $5",
        )
        .bind(now + lock_ms)
        .bind(scope.merchant_id)
        .bind(scope.environment.as_str())
        .bind(scope.key)
        .bind(locked_until)
        .bind(lock)
        .execute(&mut *conn)
        .await?;
        return Ok(if taken.rows_affected() == 1 {
            Claim::Resume {
                reference: stored_reference,
                lock: lock.to_owned(),
            }
        } else {
            Claim::InProgress
        });
    }
    Ok(Claim::InProgress)
}

/// Claims of new keys on PostgreSQL, many in one statement; see [`NewKeys`].
pub(super) type KeyClaims = super::batching::Batcher<NewKeys>;

/// Statements claiming new keys that one PostgreSQL gateway runs at once: one
/// (`store/batching.rs`, "One statement at a time").
pub const CLAIM_STATEMENTS_AT_ONCE: usize = 1;

/// Claims of keys on PostgreSQL, as many as wait in one `INSERT … VALUES (…), (…) ON CONFLICT
/// DO NOTHING RETURNING lock_owner`: a claim is a statement a charge with a key before. A key
/// that is not inserted (held, answered, expired, or claimed twice in one statement, where the
/// first row wins as it would have by arriving first) is claimed alone ([`claim_on`]), which
/// reads what holds it. On the deferred pool, as alone: the charge's durable `creating` row
/// takes the claim to disk with it.
pub(super) struct NewKeys {
    pub pool: sqlx::AnyPool,
}

/// A key to insert, held by `lock` (new for each claim: the statement answers by it).
pub(super) struct NewKey {
    merchant_id: String,
    environment: Environment,
    key: String,
    request_hash: String,
    reference: String,
    locked_until: i64,
    created_at: i64,
    expires_at: i64,
    lock: String,
}

impl super::batching::Batch for NewKeys {
    type Key = ();
    type Write = NewKey;
    type Outcome = bool;
    const NAME: &'static str = "idempotency_claim";
    const AT_ONCE: usize = CLAIM_STATEMENTS_AT_ONCE;
    /// Nine parameters a row; a statement's text for each number of rows.
    const MAX_WRITES: usize = 32;

    /// Whether each key was inserted, so claimed by its write.
    async fn write_all(&self, _: &(), keys: Vec<NewKey>) -> Option<Vec<bool>> {
        let mut query = sqlx::query(new_keys_sql(keys.len()));
        for k in &keys {
            query = query
                .bind(k.merchant_id.as_str())
                .bind(k.environment.as_str())
                .bind(k.key.as_str())
                .bind(k.request_hash.as_str())
                .bind(k.reference.as_str())
                .bind(k.locked_until)
                .bind(k.created_at)
                .bind(k.expires_at)
                .bind(k.lock.as_str());
        }
        let inserted = super::batching::returned_keys(&self.pool, query);
        // By lock, unique to each claim: one key twice in a statement is not a reason to claim
        // them alone, since the statement inserts the first and answers the second as taken.
        super::batching::written_by_key("idempotency claims", &keys, |k| k.lock.as_str(), inserted)
            .await
    }
}

/// [`NewKeys`]' statement for `n` rows, built once per number.
fn new_keys_sql(n: usize) -> &'static str {
    static TEXTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (1..=<NewKeys as super::batching::Batch>::MAX_WRITES)
            .map(|n| {
                format!(
                    "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash, \
                     reference, locked_until, created_at, expires_at, lock_owner) VALUES {} \
                     ON CONFLICT DO NOTHING RETURNING lock_owner",
                    super::batching::values(n, 9)
                )
            })
            .collect()
    });
    &TEXTS[n - 1]
}

/// The write of [`Store::complete_idempotency_key`].
fn store_answer(answer: StoredAnswer) -> impl super::WriteUnit<()> {
    move |conn| Box::pin(async move { answer_on(conn, answer).await })
}

/// Stores the answer of the request holding its key's lock, on `conn`.
async fn answer_on(conn: &mut sqlx::AnyConnection, answer: StoredAnswer) -> Result<(), StoreError> {
    let sql = answer_sql(1);
    let key = answer.key.clone();
    let changed = answer.bind(sqlx::query(&sql)).execute(&mut *conn).await?;
    answered(&key, changed.rows_affected());
    Ok(())
}

/// The statement storing a held key's answer, its parameters numbered from `$first`
/// ([`StoredAnswer::bind`] binds them).
fn answer_sql(first: usize) -> String {
    answers_sql(super::batching::Values::Parameters(first), "")
}

/// How many values an answer takes ([`StoredAnswer::bind`] binds them).
pub(super) const ANSWER_PARAMETERS: usize = 7;

/// [`answer_sql`] for the answers whose values, in [`StoredAnswer::bind`]'s order, are
/// `values`, taken `from` (a batch's `FROM v`); it ends in its `WHERE` clause.
pub(super) fn answers_sql(values: super::batching::Values, from: &str) -> String {
    let [status, body, expires_at, merchant, environment, key, lock] =
        std::array::from_fn(|i| values.at(i));
    format!(
        "UPDATE idempotency_keys SET response_status = {status}, response_body = {body}, \
         expires_at = CASE WHEN expires_at > {expires_at} THEN expires_at ELSE {expires_at} END \
         {from} \
         WHERE merchant_id = {merchant} AND environment = {environment} AND key = {key} \
           AND lock_owner = {lock} AND response_status IS NULL"
    )
}

/// An answer to store for the request holding `lock` on its key.
#[derive(Clone)]
struct StoredAnswer {
    merchant_id: String,
    environment: Environment,
    key: String,
    lock: String,
    status: u16,
    body: String,
    /// The key is kept until then at least.
    expires_at: i64,
}

impl StoredAnswer {
    /// Binds [`answer_sql`]'s parameters, in order.
    fn bind(self, query: AnyQuery<'_>) -> AnyQuery<'_> {
        query
            .bind(i64::from(self.status))
            .bind(self.body)
            .bind(self.expires_at)
            .bind(self.merchant_id)
            .bind(self.environment.as_str())
            .bind(self.key)
            .bind(self.lock)
    }
}

/// What storing a key's answer changed: its one row, or nothing.
fn answered(key: &str, changed: u64) {
    if changed != 1 {
        // Cannot happen while the request's heartbeat held the lock; if the database lost it
        // anyway, the request that took it over owns the answer.
        tracing::warn!(key = %key, "an idempotency key's answer was not stored: its lock had passed to a retry");
    }
}
