//! Events and their outbox: an event is written, with one delivery row per subscribed webhook
//! endpoint, in the same transaction as the charge change it reports (see
//! [`Store::transition_charge`]); a worker then delivers the rows.
//!
//! **Leases.** Rows are claimed with a short lease under a token of the claim
//! ([`DeliveryLease`]), renewed while the attempt runs, so several gateways on one database
//! never deliver the same row at the same time, and the row of a gateway killed mid-delivery is
//! due again within one lease. Every later write is fenced by the token: a worker that lost its
//! lease (or whose row was canceled or queued again) cannot overwrite what happened since.
//!
//! **Removed endpoints.** Nothing is claimed or renewed for an endpoint that is disabled or
//! deleted, and recording an attempt never revives a canceled delivery.
//!
//! **Writes.** The worker's writes (claims, renewals, attempts) go through the store's writer
//! as [`Durability::Deferred`]: on SQLite they join the charge path's group commits instead of
//! waiting on its write lock, and none of them costs a sync. A crash may lose the last of them;
//! the lease then runs out and the delivery is sent again, which at-least-once delivery (event
//! ids for receivers to deduplicate) already promises. On PostgreSQL an attempt's record
//! commits durably, with the attempts that wait beside it ([`AttemptRecords`]).

use sqlx::Row;

use super::{Columns, Durability, Store, StoreError, now_ms};
use crate::domain::Environment;

/// Makes the event a charge's move reports, from the charge as moved (in the move's
/// transaction: [`Store::transition_charge_with`]).
pub type Emit = std::sync::Arc<dyn Fn(&super::charges::ChargeRecord) -> EventRecord + Send + Sync>;

#[derive(Debug, Clone)]
pub struct EventRecord {
    pub id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub kind: String,
    pub charge_id: Option<String>,
    /// The whole event as delivered.
    pub payload: serde_json::Value,
    pub created_at: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DeliveryRecord {
    pub id: String,
    pub event_id: String,
    pub endpoint_id: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct AttemptRecord {
    pub attempt: i64,
    pub at: i64,
    pub status_code: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub response_excerpt: Option<String>,
}

/// A delivery as a listing shows it: with its event's type and charge, and its endpoint's URL.
#[derive(Debug, Clone)]
pub struct DeliveryListing {
    pub delivery: DeliveryRecord,
    pub event_kind: String,
    pub charge_id: Option<String>,
    pub endpoint_url: String,
}

/// A delivery this worker holds the lease of, with what it needs to send it.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    pub delivery: DeliveryRecord,
    pub payload: String,
    /// The endpoint as read right after the claim: enabled then.
    pub endpoint: super::webhook_endpoints::EndpointRecord,
    pub lease: DeliveryLease,
    /// When the endpoint was read.
    pub checked_at: std::time::Instant,
}

/// The token of one claim: renewals and the attempt's record only apply while the row still
/// carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryLease(String);

/// How the worker claims: the lease's length, how many rows, and how many attempts may be in
/// flight to one endpoint (across every gateway on the database): `per_endpoint` to a healthy
/// one, `per_failing_endpoint` to one whose last attempt failed (`failing_since` set), so a
/// fast endpoint keeps up with its merchant's charges while one that stopped answering holds
/// only a few slots.
#[derive(Debug, Clone, Copy)]
pub struct ClaimLimits {
    pub lease_ms: i64,
    pub rows: i64,
    pub per_endpoint: i64,
    pub per_failing_endpoint: i64,
}

/// How an attempt ended, and what happens next.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub response_excerpt: Option<String>,
    /// `delivered`, `pending` (retry at `next_attempt_at`) or `failed` (gave up).
    pub next_status: &'static str,
    pub next_attempt_at: i64,
}

const EVENT_COLUMNS: &str = "id, merchant_id, environment, type, charge_id, payload, created_at";
const DELIVERY_COLUMNS: &str = "id, event_id, endpoint_id, status, attempts, next_attempt_at, \
    last_status, last_error, created_at, delivered_at";

/// Writes an event and a pending delivery to each enabled endpoint of its merchant and
/// environment that subscribes to its type, inside the caller's transaction, and then `rider`.
/// The deliveries are one `INSERT … SELECT` over the endpoints ([`deliveries_for`]); on
/// PostgreSQL the event's insert rides in its `WITH`, and the rider's statement is the one
/// they ride in: one round trip where the insert, the endpoints' read, an insert per endpoint
/// and the rider took four or more.
pub(super) async fn insert_event(
    tx: &mut sqlx::AnyConnection,
    backend: super::Backend,
    event: &EventRecord,
    rider: Option<Rider<'_>>,
) -> Result<(), StoreError> {
    let insert =
        format!("INSERT INTO events ({EVENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)");
    fn bind<'q>(sql: &'q str, event: &'q EventRecord) -> AnyQuery<'q> {
        bind_columns(sqlx::query(sql), event)
    }
    match backend {
        super::Backend::Postgres => {
            let returning = "RETURNING id, merchant_id, environment, type, created_at";
            let deliveries = deliveries_for(backend, "$8", "");
            let Some(rider) = rider else {
                let sql = format!("WITH ev AS ({insert} {returning}) {deliveries}");
                bind(&sql, event)
                    .bind(delivery_id_prefix())
                    .execute(&mut *tx)
                    .await?;
                return Ok(());
            };
            // Every statement in a `WITH` runs, referenced or not, against the same snapshot:
            // the rider must not read what the event's statements write.
            let sql = format!(
                "WITH ev AS ({insert} {returning}), delivered AS ({deliveries}) {}",
                (rider.sql)(9)
            );
            let query = (rider.bind)(bind(&sql, event).bind(delivery_id_prefix()));
            let changed = query.execute(&mut *tx).await?.rows_affected();
            (rider.done)(changed);
        }
        // SQLite has no `INSERT` in `WITH` (and no round trips to save).
        super::Backend::Sqlite => {
            bind(&insert, event).execute(&mut *tx).await?;
            insert_deliveries(tx, backend, event, event.created_at, "").await?;
            if let Some(rider) = rider {
                rider.run(tx).await?;
            }
        }
    }
    Ok(())
}

/// Binds an event's columns, in [`EVENT_COLUMNS`]' order (a batch's row of [`events_with`]:
/// the deliveries' prefix is the statement's, [`delivery_id_prefix`]).
pub(super) fn bind_columns<'q>(query: AnyQuery<'q>, event: &'q EventRecord) -> AnyQuery<'q> {
    query
        .bind(&event.id)
        .bind(&event.merchant_id)
        .bind(event.environment.as_str())
        .bind(&event.kind)
        .bind(&event.charge_id)
        .bind(event.payload.to_string())
        .bind(event.created_at)
}

/// How many values an event's columns take ([`bind_columns`] binds them).
pub(super) const EVENT_COLUMN_COUNT: usize = 7;

/// The insert of events and their deliveries as two `WITH` entries (`ev`, `delivered`) of a
/// PostgreSQL statement: the events whose columns, in [`EVENT_COLUMNS`]' order, are `values`
/// taken `from` (with its `WHERE`), a batch's; their deliveries' ids start with `prefix`.
pub(super) fn events_with(values: super::batching::Values, from: &str, prefix: &str) -> String {
    format!(
        "ev AS (INSERT INTO events ({EVENT_COLUMNS}) SELECT {} {from} \
                RETURNING id, merchant_id, environment, type, created_at), \
         delivered AS ({})",
        values.list(EVENT_COLUMN_COUNT),
        deliveries_for(super::Backend::Postgres, prefix, "")
    )
}

/// A query of the `Any` driver, its parameters bound or still to bind.
pub(super) type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// A write that goes with an event's insert in its round trip on PostgreSQL
/// ([`insert_event`]): a charge's move stores the key's answer this way.
pub(super) struct Rider<'q> {
    /// Its SQL, its parameters numbered from the one given; it ends in its `WHERE` clause, so
    /// a statement can add a condition with `AND`.
    pub sql: fn(usize) -> String,
    /// Binds its parameters, in order, after the ones bound before them (values it owns: the
    /// query lives no longer than the statement's SQL).
    pub bind: Box<dyn for<'a> FnOnce(AnyQuery<'a>) -> AnyQuery<'a> + Send + 'q>,
    /// Told how many rows it changed.
    pub done: Box<dyn FnOnce(u64) + Send + 'q>,
}

impl Rider<'_> {
    /// Runs it as a statement of its own.
    pub(super) async fn run(self, conn: &mut sqlx::AnyConnection) -> Result<(), StoreError> {
        let sql = (self.sql)(1);
        let changed = (self.bind)(sqlx::query(&sql))
            .execute(conn)
            .await?
            .rows_affected();
        (self.done)(changed);
        Ok(())
    }
}

/// Inserts a pending delivery of `event` (written already), due and created `at`, to each
/// endpoint that should get one ([`deliveries_for`]); returns how many.
async fn insert_deliveries(
    tx: &mut sqlx::AnyConnection,
    backend: super::Backend,
    event: &EventRecord,
    at: i64,
    and: &str,
) -> Result<u64, StoreError> {
    let sql = format!(
        "WITH ev AS (SELECT $1 AS id, $2 AS merchant_id, $3 AS environment, $4 AS type, \
                            $5 AS created_at) {}",
        deliveries_for(backend, "$6", and)
    );
    let inserted = sqlx::query(&sql)
        .bind(&event.id)
        .bind(&event.merchant_id)
        .bind(event.environment.as_str())
        .bind(&event.kind)
        .bind(at)
        .bind(delivery_id_prefix())
        .execute(&mut *tx)
        .await?
        .rows_affected();
    Ok(inserted)
}

/// The insert of a pending delivery of the event `ev` (a `WITH` name: id, merchant_id,
/// environment, type, created_at) to each enabled endpoint of its merchant and environment
/// that subscribes to its type, `and` a further condition on the endpoint `e`. A delivery's id
/// is the [`delivery_id_prefix`] bound as `prefix` and 64 random bits the database draws (it
/// alone knows how many endpoints there are).
fn deliveries_for(backend: super::Backend, prefix: &str, and: &str) -> String {
    let (random, subscribed) = match backend {
        super::Backend::Postgres => (
            "substr(md5(random()::text), 1, 16)",
            "EXISTS (SELECT 1 FROM json_array_elements_text(e.events::json) AS t(kind) \
                     WHERE t.kind = ev.type)",
        ),
        super::Backend::Sqlite => (
            "lower(hex(randomblob(8)))",
            "EXISTS (SELECT 1 FROM json_each(e.events) AS t WHERE t.value = ev.type)",
        ),
    };
    format!(
        "INSERT INTO webhook_deliveries ({DELIVERY_COLUMNS}) \
         SELECT 'whd_' || {prefix} || {random}, ev.id, e.id, 'pending', 0, ev.created_at, \
                NULL, NULL, ev.created_at, NULL \
         FROM ev JOIN webhook_endpoints e \
           ON e.merchant_id = ev.merchant_id AND e.environment = ev.environment \
         WHERE e.status = 'enabled' AND e.deleted_at IS NULL AND {subscribed} {and}"
    )
}

/// The first half of a delivery id's 32 hex digits: those of a UUIDv7 that hold its time, so
/// ids grow with time as whole UUIDv7s do, and the primary key takes them at its right edge
/// instead of all over the index.
pub(super) fn delivery_id_prefix() -> String {
    let v7 = uuid::Uuid::now_v7().simple().to_string();
    v7[..16].to_owned()
}

impl Store {
    pub async fn event(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<EventRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE id = $1 AND merchant_id = $2 AND environment = $3"
        ))
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(event_of).transpose()
    }

    /// Newest first; `limit + 1` rows so the caller can tell whether more follow.
    pub async fn events(
        &self,
        merchant_id: &str,
        environment: Environment,
        kind: Option<&str>,
        charge_id: Option<&str>,
        starting_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE merchant_id = $1 AND environment = $2 \
             AND ($3 IS NULL OR type = $3) AND ($4 IS NULL OR charge_id = $4) \
             AND ($5 IS NULL OR id < $5) ORDER BY id DESC LIMIT $6"
        ))
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(kind)
        .bind(charge_id)
        .bind(starting_after)
        .bind(i64::from(limit) + 1)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(event_of).collect()
    }

    pub async fn deliveries_of(&self, event_id: &str) -> Result<Vec<DeliveryRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE event_id = $1 ORDER BY id"
        ))
        .bind(event_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(delivery_of).collect()
    }

    pub async fn attempts_of(&self, delivery_id: &str) -> Result<Vec<AttemptRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT attempt, at, status_code, latency_ms, error, response_excerpt \
             FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt",
        )
        .bind(delivery_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .iter()
            .map(|r| AttemptRecord {
                attempt: r.get(0),
                at: r.get(1),
                status_code: r.get(2),
                latency_ms: r.get(3),
                error: r.get(4),
                response_excerpt: r.get(5),
            })
            .collect())
    }

    /// The merchant's latest deliveries in `environment` (to one endpoint, or to any), newest
    /// event first.
    pub async fn recent_deliveries(
        &self,
        merchant_id: &str,
        environment: Environment,
        endpoint_id: Option<&str>,
        limit: i64,
    ) -> Result<Vec<DeliveryListing>, StoreError> {
        let rows = sqlx::query(
            "SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.next_attempt_at, \
             d.last_status, d.last_error, d.created_at, d.delivered_at, e.type, e.charge_id, w.url \
             FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
             JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             WHERE e.merchant_id = $1 AND e.environment = $2 AND ($3 IS NULL OR d.endpoint_id = $3) \
             ORDER BY e.id DESC, d.id DESC LIMIT $4",
        )
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(endpoint_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(DeliveryListing {
                    delivery: delivery_of(r)?,
                    event_kind: r.col("type")?,
                    charge_id: r.col("charge_id")?,
                    endpoint_url: r.col("url")?,
                })
            })
            .collect()
    }

    /// Takes the lease of up to `limits.rows` deliveries that are due, to enabled endpoints
    /// only, and never more than an endpoint's places in flight ([`ClaimLimits`]), so a slow
    /// endpoint holds a few workers and the others serve everyone else. A lease that ran out
    /// (its holder died) makes the row due again.
    pub async fn claim_due_deliveries(
        &self,
        limits: ClaimLimits,
    ) -> Result<Vec<DueDelivery>, StoreError> {
        let now = now_ms();
        // On SQLite an empty claim would still take the writer; on PostgreSQL the claim is
        // one statement outside a transaction, as cheap as the check when nothing is due, and
        // the check would be one more round trip when something is (under load, every time).
        if self.backend == super::Backend::Sqlite && !self.any_delivery_due(now).await? {
            return Ok(Vec::new());
        }
        // A concurrent claimer re-checks the outer WHERE clause on the rows it updates
        // (PostgreSQL) or waits for the single writer (SQLite), so no row is leased twice. The
        // per-endpoint count may be passed by a few when gateways claim at the same instant.
        let lease = DeliveryLease(super::lease_owner());
        let owner = lease.0.clone();
        // The first due deliveries of each enabled endpoint, read off its index (never the
        // whole backlog): a LATERAL join on PostgreSQL, a correlated IN list on SQLite, which
        // has no LATERAL (its CROSS JOIN keeps the endpoints as the outer loop).
        let first_due = |columns: &str| {
            format!(
                "SELECT {columns} FROM webhook_deliveries y \
                 WHERE y.endpoint_id = w.id AND y.status = 'pending' \
                   AND y.next_attempt_at <= $3 AND y.lease_until < $3 \
                 ORDER BY y.next_attempt_at, y.id LIMIT $5"
            )
        };
        let candidates = match self.backend {
            super::Backend::Postgres => format!(
                "webhook_endpoints w CROSS JOIN LATERAL ({}) x",
                first_due("y.id, y.endpoint_id, y.next_attempt_at")
            ),
            super::Backend::Sqlite => format!(
                "webhook_endpoints w CROSS JOIN webhook_deliveries x ON x.id IN ({})",
                first_due("y.id")
            ),
        };
        // Of those, as many per endpoint as it has free places (its limit, `$5` healthy or `$6`
        // failing, less the deliveries in flight to it), the earliest first.
        let claim = format!(
            "UPDATE webhook_deliveries SET lease_until = $1, lease_owner = $2 \
             WHERE id IN (SELECT id FROM ( \
                 SELECT x.id, x.next_attempt_at, \
                   ROW_NUMBER() OVER (PARTITION BY x.endpoint_id \
                                      ORDER BY x.next_attempt_at, x.id) AS n, \
                   (SELECT COUNT(*) FROM webhook_deliveries z WHERE z.endpoint_id = x.endpoint_id \
                      AND z.status = 'pending' AND z.lease_until >= $3) AS busy, \
                   CASE WHEN w.failing_since IS NULL THEN $5 ELSE $6 END AS places \
                 FROM {candidates} \
                 WHERE w.status = 'enabled' AND w.deleted_at IS NULL) due \
               WHERE due.n + due.busy <= due.places ORDER BY due.next_attempt_at LIMIT $4) \
               AND status = 'pending' AND lease_until < $3"
        );
        // The endpoint's columns in the PostgreSQL claim's rows, beside the delivery's.
        const ENDPOINT: &str = "w_";
        // One statement that gives the rows it leased with their events' payloads: no read
        // after it, so two round trips fewer on PostgreSQL on the way of every attempt in
        // flight (each holds its endpoint's place from this claim to its record), and on
        // SQLite no read transaction, whose first read after a commit dropped the read
        // connection's page cache and re-read pages from the WAL (the rows were read back by
        // their owner, which cost every lease an entry in an index of owners, too).
        let claim = match self.backend {
            // With the endpoints' columns.
            super::Backend::Postgres => format!(
                "WITH d AS ({claim} RETURNING *) \
                 SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempts, \
                   d.next_attempt_at, d.last_status, d.last_error, d.created_at, \
                   d.delivered_at, e.payload, {} \
                 FROM d JOIN events e ON e.id = d.event_id \
                 JOIN webhook_endpoints w ON w.id = d.endpoint_id",
                super::webhook_endpoints::columns_as("w", ENDPOINT)
            ),
            // SQLite has no `UPDATE` in `WITH`, but its `RETURNING` takes a subquery.
            super::Backend::Sqlite => format!(
                "{claim} RETURNING id, event_id, endpoint_id, status, attempts, \
                 next_attempt_at, last_status, last_error, created_at, delivered_at, \
                 (SELECT e.payload FROM events e WHERE e.id = webhook_deliveries.event_id) \
                 AS payload"
            ),
        };
        // On SQLite the rows' endpoints are read in the claim's transaction, on the writer's
        // connection (whose pages are fresh), one read per endpoint: a busy endpoint has many
        // rows in a claim.
        let sqlite = self.backend == super::Backend::Sqlite;
        let (rows, mut endpoints) = self
            .write_autocommit(Durability::Deferred, move |conn| {
                Box::pin(async move {
                    let rows = bind_claim(sqlx::query(&claim), now, &owner, limits)
                        .fetch_all(&mut *conn)
                        .await?;
                    let mut endpoints = std::collections::HashMap::new();
                    if sqlite {
                        for row in &rows {
                            let id: String = row.col("endpoint_id")?;
                            if !endpoints.contains_key(&id) {
                                let endpoint =
                                    super::webhook_endpoints::endpoint_by_id_on(conn, &id).await?;
                                endpoints.insert(id, endpoint);
                            }
                        }
                    }
                    Ok((rows, endpoints))
                })
            })
            .await?;
        let mut due = Vec::with_capacity(rows.len());
        for row in &rows {
            let delivery = delivery_of(row)?;
            // On PostgreSQL the claim's rows hold their endpoints.
            if !endpoints.contains_key(&delivery.endpoint_id) {
                let endpoint = super::webhook_endpoints::endpoint_of(row, ENDPOINT)?;
                endpoints.insert(delivery.endpoint_id.clone(), Some(endpoint));
            }
            // The claim took rows of enabled endpoints only and read them with it: a guard,
            // should that ever change (deleting disables; the row is canceled).
            let Some(endpoint) = endpoints[&delivery.endpoint_id]
                .as_ref()
                .filter(|e| e.status == "enabled")
            else {
                continue;
            };
            due.push(DueDelivery {
                delivery,
                payload: row.col("payload")?,
                endpoint: endpoint.clone(),
                lease: lease.clone(),
                checked_at: std::time::Instant::now(),
            });
        }
        Ok(due)
    }

    /// Whether any delivery to an enabled endpoint is due and unleased, read on the read
    /// connections; asked on SQLite only. The worker claims again after every attempt, for
    /// rows the per-endpoint limit held back; at low load that claim finds nothing, and asked
    /// this way first it costs no write transaction: none on the writer's connection, where it
    /// made the next request's writes queue behind it. A row committed after this read wakes the worker
    /// again (or the next poll finds it).
    async fn any_delivery_due(&self, now: i64) -> Result<bool, StoreError> {
        // Per endpoint, off the same index as the claim's first due rows.
        let due = sqlx::query(
            "SELECT 1 FROM webhook_endpoints w \
             WHERE w.status = 'enabled' AND w.deleted_at IS NULL \
               AND EXISTS (SELECT 1 FROM webhook_deliveries y \
                           WHERE y.endpoint_id = w.id AND y.status = 'pending' \
                             AND y.next_attempt_at <= $1 AND y.lease_until < $1) \
             LIMIT 1",
        )
        .bind(now)
        .fetch_optional(self.reads())
        .await?;
        Ok(due.is_some())
    }

    /// Extends the lease of a delivery in flight. `false` when the worker must not send (or
    /// go on): the row was canceled, delivered or queued again, another worker holds it, or its
    /// endpoint is disabled or deleted. The worker asks this right before sending, too.
    pub async fn renew_delivery_lease(
        &self,
        delivery_id: &str,
        lease: &DeliveryLease,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        let (delivery_id, owner) = (delivery_id.to_owned(), lease.0.clone());
        self.write_with(Durability::Deferred, move |conn| {
            Box::pin(async move {
                let renewed = sqlx::query(
                    "UPDATE webhook_deliveries SET lease_until = $1 \
                     WHERE id = $2 AND lease_owner = $3 AND status = 'pending' \
                       AND endpoint_id IN (SELECT id FROM webhook_endpoints \
                                           WHERE status = 'enabled' AND deleted_at IS NULL)",
                )
                .bind(now_ms() + lease_ms)
                .bind(&delivery_id)
                .bind(&owner)
                .execute(&mut *conn)
                .await?
                .rows_affected();
                Ok(renewed == 1)
            })
        })
        .await
    }

    /// Logs an attempt and moves the delivery on; releases its lease. A delivery canceled while
    /// the attempt ran stays canceled (the attempt is still logged: it happened). Returns
    /// `false`, writing nothing, when the lease was lost: another worker (or a manual
    /// redelivery) owns the row now.
    ///
    /// On PostgreSQL the attempt is recorded with the attempts that wait beside it, in one
    /// statement ([`AttemptRecords`]), committed durably before this returns. On the main pool,
    /// not the deferred one: there every charge's claim and count keep its four sessions busy,
    /// and the wait for one held the delivery's slot and the endpoint's place in flight (16 by
    /// default) until the record landed. Measured (`cargo xtask load --compare`, PostgreSQL):
    /// webhooks delivered 264 and 229 a second against 164 and 163, charges unchanged: a
    /// durable commit's flush costs less than that wait.
    pub async fn record_attempt(
        &self,
        delivery: &DeliveryRecord,
        lease: &DeliveryLease,
        outcome: &AttemptOutcome,
    ) -> Result<bool, StoreError> {
        if self.backend == super::Backend::Sqlite {
            let record = record_attempt_on(delivery, lease, outcome);
            return self.write_autocommit(Durability::Deferred, record).await;
        }
        let row = AttemptRow::new(delivery, lease, outcome);
        if let Some(moved) = self.attempts.write((), row.clone()).await {
            return Ok(moved);
        }
        // Not recorded together (the statement failed): alone, so that its error is its own.
        let moved = record_rows(self.pool(), std::slice::from_ref(&row)).await?;
        Ok(moved.contains(&row.id))
    }

    /// [`Store::record_attempt`] written behind ([`Store::write_behind`]) on SQLite: the
    /// worker's slot is free at once, and its next claim, queued after this write, sees the
    /// lease released. PostgreSQL has no writer to queue behind: this returns once the record
    /// is committed. A lost lease is logged.
    pub async fn record_attempt_behind(
        &self,
        delivery: &DeliveryRecord,
        lease: &DeliveryLease,
        outcome: &AttemptOutcome,
    ) -> Result<(), StoreError> {
        let (event, attempt) = (delivery.event_id.clone(), delivery.attempts + 1);
        if self.backend == super::Backend::Postgres {
            if !self.record_attempt(delivery, lease, outcome).await? {
                log_lost_lease_of(&event, attempt);
            }
            return Ok(());
        }
        let logged = log_lost_lease(record_attempt_on(delivery, lease, outcome), event, attempt);
        self.write_behind(Durability::Deferred, "recording a webhook attempt", logged)
            .await
    }

    /// How PostgreSQL's records of webhook attempts went: statements, and the attempts they
    /// recorded together.
    pub fn attempt_record_stats(&self) -> super::BatchStats {
        self.attempts.stats()
    }

    /// Queues an event again: its deliveries to enabled endpoints become due now, and
    /// endpoints subscribed since get one. Returns how many deliveries are queued.
    pub async fn redeliver_event(&self, event: &EventRecord) -> Result<u64, StoreError> {
        let now = now_ms();
        let mut tx = self.pool().begin().await?;
        let reset = sqlx::query(
            "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1, lease_until = 0, \
             lease_owner = NULL WHERE event_id = $2 AND endpoint_id IN (SELECT id FROM webhook_endpoints \
                 WHERE status = 'enabled' AND deleted_at IS NULL)",
        )
        .bind(now)
        .bind(&event.id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let added = insert_deliveries(
            &mut tx,
            self.backend,
            event,
            now,
            "AND e.id NOT IN (SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ev.id)",
        )
        .await?;
        tx.commit().await?;
        Ok(reset + added)
    }
}

fn event_of(r: &sqlx::any::AnyRow) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        kind: r.col("type")?,
        charge_id: r.col("charge_id")?,
        payload: r.json("payload")?,
        created_at: r.col("created_at")?,
    })
}

fn delivery_of(r: &sqlx::any::AnyRow) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        id: r.col("id")?,
        event_id: r.col("event_id")?,
        endpoint_id: r.col("endpoint_id")?,
        status: r.col("status")?,
        attempts: r.col("attempts")?,
        next_attempt_at: r.col("next_attempt_at")?,
        last_status: r.col("last_status")?,
        last_error: r.col("last_error")?,
        created_at: r.col("created_at")?,
        delivered_at: r.col("delivered_at")?,
    })
}

/// Binds the claim's parameters: `$1` the lease's end, `$2` its owner, `$3` now, `$4` the rows
/// to take at most, `$5` and `$6` the places in flight a healthy and a failing endpoint have.
fn bind_claim<'q>(
    query: AnyQuery<'q>,
    now: i64,
    owner: &'q str,
    limits: ClaimLimits,
) -> AnyQuery<'q> {
    query
        .bind(now + limits.lease_ms)
        .bind(owner)
        .bind(now)
        .bind(limits.rows)
        .bind(limits.per_endpoint)
        .bind(limits.per_failing_endpoint)
}

/// `record`, logging (not failing) when it wrote nothing because the lease was lost.
fn log_lost_lease(
    record: impl super::WriteUnit<bool>,
    event: String,
    attempt: i64,
) -> impl super::WriteUnit<()> {
    move |conn| {
        Box::pin(async move {
            if !record(conn).await? {
                log_lost_lease_of(&event, attempt);
            }
            Ok(())
        })
    }
}

/// Logs that an attempt wrote nothing because its lease was lost.
fn log_lost_lease_of(event: &str, attempt: i64) {
    tracing::info!(event = %event, attempt,
        "webhook attempt not recorded: the row was queued again or taken over meanwhile");
}

/// Statements recording webhook attempts that one PostgreSQL gateway runs at once: one
/// (`store/batching.rs`, "One statement at a time"). Each attempt holds its endpoint's place in
/// flight until its record commits, so the records' wait is the outbox's pace: in round 22, with
/// 16 places an endpoint and the rows as JSON, one statement at a time delivered 402 webhooks a
/// second for 650–708 charges and four kept up; with 64 places and typed rows, one keeps up
/// (round 38: 1,365–1,461 webhooks a second, as many as charges, 5.1 attempts a statement).
pub const ATTEMPT_STATEMENTS_AT_ONCE: usize = 1;

/// Records webhook attempts on PostgreSQL, many in one statement; see [`AttemptRecords`].
pub(super) type AttemptRecorder = super::batching::Batcher<AttemptRecords>;

/// One attempt's record for [`AttemptRecords`]: [`MOVE_DELIVERY`]'s and the log's values.
#[derive(Debug, Clone)]
pub(super) struct AttemptRow {
    id: String,
    owner: String,
    /// Attempts before this one: the row moves only if it still says so.
    before: i64,
    attempt: i64,
    next_status: &'static str,
    next_at: i64,
    status_code: Option<i64>,
    error: Option<String>,
    at: i64,
    latency_ms: i64,
    excerpt: Option<String>,
}

impl AttemptRow {
    fn new(delivery: &DeliveryRecord, lease: &DeliveryLease, outcome: &AttemptOutcome) -> Self {
        AttemptRow {
            id: delivery.id.clone(),
            owner: lease.0.clone(),
            before: delivery.attempts,
            attempt: delivery.attempts + 1,
            next_status: outcome.next_status,
            next_at: outcome.next_attempt_at,
            status_code: outcome.status_code.map(i64::from),
            error: outcome.error.clone(),
            at: now_ms(),
            latency_ms: outcome.latency_ms,
            excerpt: outcome.response_excerpt.clone(),
        }
    }
}

/// Webhook attempts' records on PostgreSQL, as many as wait in one statement ([`record_rows`]).
/// Every gateway's worker records an attempt a charge, so this was a statement and a durable
/// commit a charge.
pub(super) struct AttemptRecords {
    pub pool: sqlx::AnyPool,
}

impl super::batching::Batch for AttemptRecords {
    type Key = ();
    type Write = AttemptRow;
    /// Whether the row moved: `false` when the lease was lost meanwhile.
    type Outcome = bool;
    const NAME: &'static str = "webhook_attempt";
    const AT_ONCE: usize = ATTEMPT_STATEMENTS_AT_ONCE;
    /// Eleven parameters a row; a statement's text for each number of rows.
    const MAX_WRITES: usize = 32;

    /// A delivery twice in one batch is written alone (one worker holds a row's lease, so this
    /// does not happen).
    async fn write_all(&self, _: &(), rows: Vec<AttemptRow>) -> Option<Vec<bool>> {
        let moved = record_rows(&self.pool, &rows);
        super::batching::written_by_key("webhook attempts", &rows, |r| r.id.as_str(), moved).await
    }
}

/// Records `rows` in one statement on PostgreSQL: each delivery moved as [`MOVE_DELIVERY`]
/// moves it, and its attempt logged if it moved. Returns the deliveries that moved.
///
/// The rows are typed parameters in a `VALUES` list, one statement text per number of rows.
/// Tried first and measured slower: the rows as one JSON array (`json_to_recordset`): even one
/// row a statement cost the server more than the statement it replaced (540 charges a second
/// against 654–708, the server busier). The `IN` list of ids has the planner find the rows by
/// primary key: joined to JSON rows alone (of which it guesses a hundred) it scanned the whole
/// outbox, a cost growing with the table.
async fn record_rows(
    pool: &sqlx::AnyPool,
    rows: &[AttemptRow],
) -> Result<std::collections::HashSet<String>, StoreError> {
    let sql = record_rows_sql(rows.len());
    let mut query = sqlx::query_scalar(sql);
    for r in rows {
        query = query
            .bind(&r.id)
            .bind(&r.owner)
            .bind(r.before)
            .bind(r.attempt)
            .bind(r.next_status)
            .bind(r.next_at)
            .bind(r.status_code)
            .bind(&r.error)
            .bind(r.at)
            .bind(r.latency_ms)
            .bind(&r.excerpt);
    }
    let moved: Vec<String> = query.fetch_all(pool).await?;
    Ok(moved.into_iter().collect())
}

/// [`record_rows`]' statement for `n` rows, built once per number.
fn record_rows_sql(n: usize) -> &'static str {
    const COLUMNS: usize = 11;
    static TEXTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (1..=<AttemptRecords as super::batching::Batch>::MAX_WRITES)
            .map(|n| {
                let ids: Vec<String> = (0..n)
                    .map(|row| format!("${}", row * COLUMNS + 1))
                    .collect();
                format!(
                    "WITH i (id, owner, before, attempt, next_status, next_at, status_code, error, \
                         at, latency_ms, excerpt) AS (VALUES {}), \
                     moved AS (UPDATE webhook_deliveries AS d SET attempts = i.attempt, \
                         status = CASE WHEN d.status = 'pending' THEN i.next_status \
                                       ELSE d.status END, \
                         next_attempt_at = i.next_at, lease_until = 0, \
                         last_status = i.status_code, last_error = i.error, \
                         delivered_at = CASE WHEN d.status = 'pending' \
                                              AND i.next_status = 'delivered' \
                                             THEN i.at ELSE d.delivered_at END \
                       FROM i WHERE d.id = i.id AND d.id IN ({}) \
                         AND d.lease_owner = i.owner AND d.attempts = i.before \
                         AND d.status IN ('pending', 'canceled') \
                       RETURNING d.id, i.attempt, i.at, i.status_code, i.latency_ms, i.error, \
                         i.excerpt) \
                     INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, \
                         latency_ms, error, response_excerpt) \
                     SELECT id, attempt, at, status_code, latency_ms, error, excerpt FROM moved \
                     RETURNING delivery_id",
                    super::batching::values(n, COLUMNS),
                    ids.join(", ")
                )
            })
            .collect()
    });
    &TEXTS[n - 1]
}

/// The move of a delivery after an attempt (`$1` the attempt's number, `$2` the next status,
/// `$3` the next attempt's time, `$4` the status code, `$5` the error, `$6` now, `$7` the row,
/// `$8` the lease's owner, `$9` the attempts before): only while `$8` holds the lease. Every
/// expression on the right reads the row as it was before this update.
const MOVE_DELIVERY: &str = "UPDATE webhook_deliveries SET attempts = $1, \
     status = CASE WHEN status = 'pending' THEN $2 ELSE status END, \
     next_attempt_at = $3, lease_until = 0, last_status = $4, last_error = $5, \
     delivered_at = CASE WHEN status = 'pending' AND $2 = 'delivered' THEN $6 \
                         ELSE delivered_at END \
     WHERE id = $7 AND lease_owner = $8 AND attempts = $9 \
       AND status IN ('pending', 'canceled')";

/// The write of [`Store::record_attempt`] on SQLite: the move, and the attempt logged if it
/// moved (two statements: SQLite has no `UPDATE` in `WITH`).
fn record_attempt_on(
    delivery: &DeliveryRecord,
    lease: &DeliveryLease,
    outcome: &AttemptOutcome,
) -> impl super::WriteUnit<bool> {
    let now = now_ms();
    let attempt = delivery.attempts + 1;
    let (delivery, owner, outcome) = (delivery.clone(), lease.0.clone(), outcome.clone());
    move |conn| {
        Box::pin(async move {
            let moved = sqlx::query(MOVE_DELIVERY)
                .bind(attempt)
                .bind(outcome.next_status)
                .bind(outcome.next_attempt_at)
                .bind(outcome.status_code.map(i64::from))
                .bind(&outcome.error)
                .bind(now)
                .bind(&delivery.id)
                .bind(&owner)
                .bind(delivery.attempts)
                .execute(&mut *conn)
                .await?;
            if moved.rows_affected() == 0 {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, \
                 latency_ms, error, response_excerpt) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&delivery.id)
            .bind(attempt)
            .bind(now)
            .bind(outcome.status_code.map(i64::from))
            .bind(outcome.latency_ms)
            .bind(&outcome.error)
            .bind(&outcome.response_excerpt)
            .execute(&mut *conn)
            .await?;
            Ok(true)
        })
    }
}
