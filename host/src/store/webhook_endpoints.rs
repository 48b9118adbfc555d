//! Merchants' webhook endpoints: where events are delivered, with their signing secrets
//! (sealed by the vault) and their health.

use sqlx::Row;

use super::credentials::Saved;
use super::{Columns, Store, StoreError, now_ms};
use crate::domain::Environment;

#[derive(Debug, Clone)]
pub struct EndpointRecord {
    pub id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub url: String,
    pub description: Option<String>,
    pub events: Vec<String>,
    pub secret_sealed: String,
    pub previous_secret_sealed: Option<String>,
    pub previous_expires_at: Option<i64>,
    /// `enabled` or `disabled`.
    pub status: String,
    pub disabled_reason: Option<String>,
    pub failing_since: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Moves on by one with every change a merchant makes, or the gateway's disabling;
    /// 1 when created.
    pub version: i64,
}

const COLUMNS: &str = "id, merchant_id, environment, url, description, events, secret_sealed, \
    previous_secret_sealed, previous_expires_at, status, disabled_reason, failing_since, \
    created_at, updated_at, version";

/// Why an endpoint was not written: the merchant's plan is full, or (for a plan without a
/// limit) the operator's cap per merchant and environment is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointLimit {
    Plan(crate::plans::LimitReached),
    Operator { limit: u64, usage: u64 },
}

impl Store {
    /// Writes an endpoint, if the merchant's plan has room for one more in its environment;
    /// when the plan sets no limit, `operator_cap` does (delivery work grows with endpoints).
    pub async fn insert_webhook_endpoint(
        &self,
        e: &EndpointRecord,
        operator_cap: u64,
    ) -> Result<Result<(), EndpointLimit>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                &e.merchant_id,
                e.environment,
                crate::plans::Resource::WebhookEndpoints,
                e.created_at,
            )
            .await?
        {
            return Ok(Err(EndpointLimit::Plan(reached)));
        }
        // The merchant's row is locked by `admit` until the commit: concurrent creations count
        // one after the other here too.
        let plan = sqlx::query("SELECT plan FROM merchants WHERE id = $1")
            .bind(&e.merchant_id)
            .fetch_one(&mut *tx)
            .await?;
        let plan: crate::plans::PlanId = plan
            .get::<String, _>(0)
            .parse()
            .map_err(StoreError::Corrupt)?;
        if plan.plan().webhooks == crate::plans::Limit::Unlimited {
            let usage: i64 = sqlx::query(
                "SELECT COUNT(*) FROM webhook_endpoints \
                 WHERE merchant_id = $1 AND environment = $2 AND deleted_at IS NULL",
            )
            .bind(&e.merchant_id)
            .bind(e.environment.as_str())
            .fetch_one(&mut *tx)
            .await?
            .get(0);
            let usage = usage as u64;
            if usage >= operator_cap {
                return Ok(Err(EndpointLimit::Operator {
                    limit: operator_cap,
                    usage,
                }));
            }
        }
        sqlx::query(&format!(
            "INSERT INTO webhook_endpoints ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(&e.id)
        .bind(&e.merchant_id)
        .bind(e.environment.as_str())
        .bind(&e.url)
        .bind(&e.description)
        .bind(serde_json::to_string(&e.events).expect("strings serialise"))
        .bind(&e.secret_sealed)
        .bind(&e.previous_secret_sealed)
        .bind(e.previous_expires_at)
        .bind(&e.status)
        .bind(&e.disabled_reason)
        .bind(e.failing_since)
        .bind(e.created_at)
        .bind(e.updated_at)
        .bind(e.version)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// Writes back what the merchant changed of `e`, if the row is still at `e.version` (else
    /// [`Saved::Conflict`], nothing written); the row moves to `e.version + 1`. The delivery
    /// worker's health mark (`failing_since`) is left as it is now, except that an endpoint
    /// enabled again starts healthy.
    pub async fn update_webhook_endpoint(&self, e: &EndpointRecord) -> Result<Saved, StoreError> {
        let done = sqlx::query(
            "UPDATE webhook_endpoints SET url = $1, description = $2, events = $3, \
             secret_sealed = $4, previous_secret_sealed = $5, previous_expires_at = $6, \
             failing_since = CASE WHEN status = 'disabled' AND $7 = 'enabled' THEN NULL \
                                  ELSE failing_since END, \
             status = $7, disabled_reason = $8, updated_at = $9, version = version + 1 \
             WHERE id = $10 AND version = $11 AND deleted_at IS NULL",
        )
        .bind(&e.url)
        .bind(&e.description)
        .bind(serde_json::to_string(&e.events).expect("strings serialise"))
        .bind(&e.secret_sealed)
        .bind(&e.previous_secret_sealed)
        .bind(e.previous_expires_at)
        .bind(&e.status)
        .bind(&e.disabled_reason)
        .bind(e.updated_at)
        .bind(&e.id)
        .bind(e.version)
        .execute(self.pool())
        .await?;
        Ok(saved(done.rows_affected()))
    }

    /// Stores `e`'s signing secrets re-encrypted under a new master key, if the row is still at
    /// `e.version`; the version stays (`pixgw vault rotate`).
    pub async fn reseal_webhook_endpoint(&self, e: &EndpointRecord) -> Result<Saved, StoreError> {
        let done = sqlx::query(
            "UPDATE webhook_endpoints SET secret_sealed = $1, previous_secret_sealed = $2 \
             WHERE id = $3 AND version = $4",
        )
        .bind(&e.secret_sealed)
        .bind(&e.previous_secret_sealed)
        .bind(&e.id)
        .bind(e.version)
        .execute(self.pool())
        .await?;
        Ok(saved(done.rows_affected()))
    }

    /// Every endpoint, deleted ones included: for re-encryption under a new master key.
    pub async fn all_webhook_endpoints(&self) -> Result<Vec<EndpointRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints ORDER BY id"
        ))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    pub async fn webhook_endpoint(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<EndpointRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints \
             WHERE id = $1 AND merchant_id = $2 AND environment = $3 AND deleted_at IS NULL"
        ))
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// An endpoint by id alone, deleted ones included.
    pub async fn webhook_endpoint_by_id(
        &self,
        id: &str,
    ) -> Result<Option<EndpointRecord>, StoreError> {
        let row = sqlx::query(&select_by_id())
            .bind(id)
            .fetch_optional(self.reads())
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    pub async fn webhook_endpoints(
        &self,
        merchant_id: &str,
        environment: Environment,
    ) -> Result<Vec<EndpointRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints \
             WHERE merchant_id = $1 AND environment = $2 AND deleted_at IS NULL ORDER BY id"
        ))
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// Removes an endpoint; its pending deliveries are canceled.
    pub async fn delete_webhook_endpoint(&self, id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "UPDATE webhook_endpoints SET deleted_at = $1, status = 'disabled' WHERE id = $2",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        cancel_pending(&mut tx, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Cancels the deliveries still pending to an endpoint its merchant disabled.
    pub async fn cancel_pending_deliveries(&self, endpoint_id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        cancel_pending(&mut tx, endpoint_id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stops deliveries to an endpoint, saying why (a 410, days of failures).
    pub async fn disable_webhook_endpoint(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $1, updated_at = $2, \
             version = version + 1 WHERE id = $3",
        )
        .bind(reason)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        cancel_pending(&mut tx, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records that deliveries to an endpoint fail (from the first failure on) or succeed.
    /// Through the writer and deferred: the mark is a hint the next delivery sets again, and
    /// on SQLite a write from the pool would wait for the writer's lock in the busy handler's
    /// sleeps (up to 100 ms each) under load.
    pub async fn set_webhook_endpoint_health(&self, id: &str, ok: bool) -> Result<(), StoreError> {
        let id = id.to_owned();
        let now = now_ms();
        self.write_with(super::Durability::Deferred, move |conn| {
            Box::pin(async move {
                let query = if ok {
                    sqlx::query(
                        "UPDATE webhook_endpoints SET failing_since = NULL \
                         WHERE id = $1 AND failing_since IS NOT NULL",
                    )
                    .bind(id)
                } else {
                    sqlx::query(
                        "UPDATE webhook_endpoints SET failing_since = $1 \
                         WHERE id = $2 AND failing_since IS NULL",
                    )
                    .bind(now)
                    .bind(id)
                };
                query.execute(&mut *conn).await?;
                Ok(())
            })
        })
        .await
    }
}

async fn cancel_pending(tx: &mut sqlx::AnyConnection, endpoint_id: &str) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE webhook_deliveries SET status = 'canceled', lease_until = 0 \
         WHERE endpoint_id = $1 AND status = 'pending'",
    )
    .bind(endpoint_id)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The read of [`Store::webhook_endpoint_by_id`].
fn select_by_id() -> String {
    format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE id = $1")
}

/// [`Store::webhook_endpoint_by_id`] on `conn`: the webhook claim reads its rows' endpoints in
/// its own transaction on SQLite.
pub(super) async fn endpoint_by_id_on(
    conn: &mut sqlx::AnyConnection,
    id: &str,
) -> Result<Option<EndpointRecord>, StoreError> {
    let row = sqlx::query(&select_by_id())
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(record_of).transpose()
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<EndpointRecord, StoreError> {
    endpoint_of(r, "")
}

/// An endpoint's columns of the table aliased `alias`, each named `{prefix}{column}`: for a
/// query that reads an endpoint beside another table's columns ([`endpoint_of`]).
pub(super) fn columns_as(alias: &str, prefix: &str) -> String {
    COLUMNS
        .split(',')
        .map(|c| format!("{alias}.{0} AS {prefix}{0}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The endpoint in `r`'s columns named `{prefix}{column}` ([`columns_as`]).
pub(super) fn endpoint_of(
    r: &sqlx::any::AnyRow,
    prefix: &str,
) -> Result<EndpointRecord, StoreError> {
    let name = |column: &str| format!("{prefix}{column}");
    Ok(EndpointRecord {
        id: r.col(&name("id"))?,
        merchant_id: r.col(&name("merchant_id"))?,
        environment: r.parsed(&name("environment"))?,
        url: r.col(&name("url"))?,
        description: r.col(&name("description"))?,
        events: r.json(&name("events"))?,
        secret_sealed: r.col(&name("secret_sealed"))?,
        previous_secret_sealed: r.col(&name("previous_secret_sealed"))?,
        previous_expires_at: r.col(&name("previous_expires_at"))?,
        status: r.col(&name("status"))?,
        disabled_reason: r.col(&name("disabled_reason"))?,
        failing_since: r.col(&name("failing_since"))?,
        created_at: r.col(&name("created_at"))?,
        updated_at: r.col(&name("updated_at"))?,
        version: r.col(&name("version"))?,
    })
}

fn saved(rows_affected: u64) -> Saved {
    if rows_affected == 1 {
        Saved::Done
    } else {
        Saved::Conflict
    }
}
