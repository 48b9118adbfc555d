//! Merchant API keys: stored as a lookup prefix and a hash, never in clear.

use super::row_cache::{Lookup, Table};
use super::{Columns, Store, StoreError, now_ms};
use crate::domain::Environment;

/// A key's row, without anything that would let one use it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ApiKeyRecord {
    pub id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub prefix: String,
    #[serde(skip)]
    pub hash: String,
    pub label: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

const COLUMNS: &str =
    "id, merchant_id, environment, prefix, hash, label, created_at, last_used_at, revoked_at";

impl Store {
    /// Writes a key, if the merchant's plan has room for one more in `environment`.
    pub async fn insert_api_key(
        &self,
        merchant_id: &str,
        environment: Environment,
        prefix: &str,
        hash: &str,
        label: Option<&str>,
    ) -> Result<crate::plans::Admission<ApiKeyRecord>, StoreError> {
        let record = ApiKeyRecord {
            id: format!("key_{}", uuid::Uuid::now_v7().simple()),
            merchant_id: merchant_id.to_owned(),
            environment,
            prefix: prefix.to_owned(),
            hash: hash.to_owned(),
            label: label.map(str::to_owned),
            created_at: now_ms(),
            last_used_at: None,
            revoked_at: None,
        };
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                merchant_id,
                environment,
                crate::plans::Resource::ApiKeys,
                record.created_at,
            )
            .await?
        {
            return Ok(Err(reached));
        }
        sqlx::query(
            "INSERT INTO api_keys (id, merchant_id, environment, prefix, hash, label, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&record.id)
        .bind(&record.merchant_id)
        .bind(record.environment.as_str())
        .bind(&record.prefix)
        .bind(&record.hash)
        .bind(&record.label)
        .bind(record.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        // Keys are kept by prefix, with every key of that prefix.
        self.rows_changed(Table::ApiKeys).await;
        Ok(Ok(record))
    }

    /// Keys whose visible prefix is `prefix` (normally one); the caller verifies the hash.
    /// Kept in memory on PostgreSQL while no change is heard (`row_cache`).
    pub async fn api_keys_by_prefix(&self, prefix: &str) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let ticket = match self.rows.api_keys(prefix) {
            Lookup::Kept(keys) => return Ok(keys),
            Lookup::Read(ticket) => ticket,
        };
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys WHERE prefix = $1"))
            .bind(prefix)
            .fetch_all(self.reads())
            .await?;
        let keys = rows.iter().map(record_of).collect::<Result<Vec<_>, _>>()?;
        self.rows.keep_api_keys(ticket, prefix, &keys);
        Ok(keys)
    }

    /// A merchant's keys, of one environment or both, newest first.
    pub async fn api_keys(
        &self,
        merchant_id: &str,
        environment: Option<Environment>,
    ) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM api_keys WHERE merchant_id = $1 \
             AND ($2 IS NULL OR environment = $2) ORDER BY created_at DESC, id DESC"
        ))
        .bind(merchant_id)
        .bind(environment.map(Environment::as_str))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// A key by its id, whoever's it is: for the operator's CLI.
    pub async fn api_key(&self, id: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// Revokes one of a merchant's keys of `environment`; the key as revoked, or `None` when
    /// that merchant has no such key still active.
    pub async fn revoke_api_key(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<ApiKeyRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "UPDATE api_keys SET revoked_at = $1 \
             WHERE id = $2 AND merchant_id = $3 AND environment = $4 AND revoked_at IS NULL \
             RETURNING {COLUMNS}"
        ))
        .bind(now_ms())
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        if row.is_some() {
            self.rows_changed(Table::ApiKeys).await;
        }
        row.as_ref().map(record_of).transpose()
    }

    /// Records a use. Callers throttle it: one write per key per minute is plenty.
    pub async fn touch_api_key(&self, id: &str, at: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
            .bind(at)
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<ApiKeyRecord, StoreError> {
    Ok(ApiKeyRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        prefix: r.col("prefix")?,
        hash: r.col("hash")?,
        label: r.col("label")?,
        created_at: r.col("created_at")?,
        last_used_at: r.col("last_used_at")?,
        revoked_at: r.col("revoked_at")?,
    })
}
