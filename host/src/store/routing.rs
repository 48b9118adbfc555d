//! Routing state: the round-robin counter per merchant and environment, and the record of every
//! attempt at a PSP.

use sqlx::Row;

use super::{Columns, Store, StoreError, now_ms};
use crate::domain::{Environment, Reference};

/// One try at a PSP, for the record.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub reference: Reference,
    pub credential_id: String,
    pub provider: String,
    pub outcome: &'static str,
    pub message: Option<String>,
}

/// One recorded try, as read back.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// 1, 2, … in the order they were made.
    pub attempt: i64,
    pub provider: String,
    /// `created`, `rejected`, `unavailable`, `bad_credentials`, `not_found`, `ambiguous`,
    /// `found`, `absent`, `unknown` or `fault`.
    pub outcome: String,
    /// What went wrong, in the adapter's words.
    pub message: Option<String>,
    pub at: i64,
}

impl Store {
    /// Takes the next turn of the merchant's round robin: 0, 1, 2, … across every gateway
    /// sharing the database (one atomic upsert).
    pub async fn next_route_turn(
        &self,
        merchant_id: &str,
        environment: Environment,
    ) -> Result<i64, StoreError> {
        let row = sqlx::query(
            "INSERT INTO routing_cursors (merchant_id, environment, counter) VALUES ($1, $2, 1) \
             ON CONFLICT (merchant_id, environment) \
             DO UPDATE SET counter = routing_cursors.counter + 1 RETURNING counter",
        )
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_one(self.pool())
        .await?;
        Ok(row.get::<i64, _>(0) - 1)
    }

    pub async fn record_charge_attempt(&self, a: &AttemptRecord) -> Result<(), StoreError> {
        with_own_attempt_number(|| async {
            let mut conn = self.pool().acquire().await?;
            insert_attempt(&mut conn, a).await
        })
        .await
    }

    /// [`Store::write_with`] of a unit that records an attempt, run again should a concurrent
    /// write take its attempt's number ([`with_own_attempt_number`]; only PostgreSQL's can).
    pub(super) async fn write_with_own_attempt_number<T: Send + 'static>(
        &self,
        durability: super::Durability,
        unit: impl super::WriteUnit<T>,
    ) -> Result<T, StoreError> {
        match self.backend {
            // One writer: the unit is not cloned for runs that cannot happen.
            super::Backend::Sqlite => self.write_with(durability, unit).await,
            super::Backend::Postgres => {
                with_own_attempt_number(|| self.write_with(durability, unit.clone())).await
            }
        }
    }

    /// The attempts made for a reference, in order.
    pub async fn charge_attempts(&self, reference: &str) -> Result<Vec<AttemptRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT attempt, provider, outcome, message, at FROM charge_attempts \
             WHERE reference = $1 ORDER BY attempt",
        )
        .bind(reference)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(AttemptRow {
                    attempt: r.col("attempt")?,
                    provider: r.col("provider")?,
                    outcome: r.col("outcome")?,
                    message: r.col("message")?,
                    at: r.col("at")?,
                })
            })
            .collect()
    }
}

/// How many times [`with_own_attempt_number`] runs a write at most. Each run after the first
/// means another write for the same reference committed its attempt first: as many runs as
/// writes for one charge that may race (a PSP call, a reconciler's check, a resumed request).
const NUMBERING_RUNS: usize = 8;

/// Runs `write` (a whole transaction that records an attempt) until its attempt gets a number
/// of its own. An attempt is numbered one more than its reference's attempts committed when its
/// statement starts, so on PostgreSQL two writes for one reference that start together count
/// the same; the second's insert waits for the first to commit and then fails on the primary
/// key. Run again, its statement counts the first. (SQLite writes one transaction at a time:
/// its counts never meet.)
async fn with_own_attempt_number<T, F, Fut>(mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut runs = 1;
    loop {
        match write().await {
            Err(e) if runs < NUMBERING_RUNS && attempt_number_taken(&e) => {
                tracing::debug!(
                    runs,
                    "an attempt's number was taken by a concurrent write; writing again"
                );
                runs += 1;
            }
            written => return written,
        }
    }
}

/// Whether `e` is an attempt's insert refused because its reference and number were taken.
fn attempt_number_taken(e: &StoreError) -> bool {
    matches!(e, StoreError::Sql(sqlx::Error::Database(e))
        if e.is_unique_violation() && e.constraint() == Some("charge_attempts_pkey"))
}

/// Records one try inside the caller's transaction (the charge path writes it together with
/// the charge's state change).
pub(crate) async fn insert_attempt(
    conn: &mut sqlx::AnyConnection,
    a: &AttemptRecord,
) -> Result<(), StoreError> {
    bind_attempt(sqlx::query(&insert_attempt_sql(1)), a)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// How many parameters [`insert_attempt_sql`] takes ([`bind_attempt`] binds them).
pub(super) const ATTEMPT_PARAMETERS: usize = 6;

/// The insert of one try, its values bound by [`bind_attempt`] as `$first` and on (after a
/// statement's own, when it rides in that statement's `WITH`).
pub(super) fn insert_attempt_sql(first: usize) -> String {
    insert_attempts_sql(super::batching::Values::Parameters(first), "")
}

/// The insert of tries whose values, in [`bind_attempt`]'s order, are `values`, taken `from`
/// (a batch's `FROM v`, or nothing for parameters).
pub(super) fn insert_attempts_sql(values: super::batching::Values, from: &str) -> String {
    let p = |n: usize| values.at(n);
    format!(
        "INSERT INTO charge_attempts (reference, attempt, credential_id, provider, at, outcome, message) \
         SELECT {r}, (SELECT COUNT(*) + 1 FROM charge_attempts WHERE reference = {r}), {}, {}, {}, {}, {} {from}",
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        r = p(0),
    )
}

/// Binds a try's values to a statement holding [`insert_attempt_sql`], after what it bound.
pub(super) fn bind_attempt<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    a: &'q AttemptRecord,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(a.reference.as_str())
        .bind(&a.credential_id)
        .bind(&a.provider)
        .bind(now_ms())
        .bind(a.outcome)
        .bind(&a.message)
}
