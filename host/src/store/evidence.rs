//! Sale evidence: what the gateway knows of a photo (and the place) attached to a charge. The
//! photo itself is in the evidence storage under `storage_key`; rows go at `expires_at`.

use sqlx::Row;

use super::{Columns, Store, StoreError};
use crate::domain::Environment;

#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRecord {
    pub id: String,
    pub charge_id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub storage_key: String,
    pub content_type: String,
    pub byte_size: i64,
    pub width: i64,
    pub height: i64,
    /// Hex SHA-256 of the stored photo.
    pub sha256: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Metres.
    pub accuracy: Option<f64>,
    pub address: Option<String>,
    /// `user` or `api_key`.
    pub uploaded_by_kind: String,
    pub uploaded_by_id: Option<String>,
    pub uploaded_by_label: String,
    pub created_at: i64,
    pub expires_at: i64,
}

const COLUMNS: &str = "id, charge_id, merchant_id, environment, storage_key, content_type, \
    byte_size, width, height, sha256, latitude, longitude, accuracy, address, uploaded_by_kind, \
    uploaded_by_id, uploaded_by_label, created_at, expires_at";

impl Store {
    /// Writes evidence unless its charge holds `limit` items already (checked in the insert
    /// itself, so two uploads at once cannot both pass it). `false`: the charge is full.
    pub async fn insert_evidence(
        &self,
        e: &EvidenceRecord,
        limit: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!(
            "INSERT INTO charge_evidence ({COLUMNS}) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13, $14, $15, $16, $17, $18, $19 \
             WHERE (SELECT COUNT(*) FROM charge_evidence WHERE charge_id = $2) < $20"
        ))
        .bind(&e.id)
        .bind(&e.charge_id)
        .bind(&e.merchant_id)
        .bind(e.environment.as_str())
        .bind(&e.storage_key)
        .bind(&e.content_type)
        .bind(e.byte_size)
        .bind(e.width)
        .bind(e.height)
        .bind(&e.sha256)
        .bind(e.latitude)
        .bind(e.longitude)
        .bind(e.accuracy)
        .bind(&e.address)
        .bind(&e.uploaded_by_kind)
        .bind(&e.uploaded_by_id)
        .bind(&e.uploaded_by_label)
        .bind(e.created_at)
        .bind(e.expires_at)
        .bind(limit)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A charge's evidence, oldest first.
    pub async fn evidence_of(&self, charge_id: &str) -> Result<Vec<EvidenceRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charge_evidence WHERE charge_id = $1 ORDER BY id"
        ))
        .bind(charge_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// How many items a charge holds.
    pub async fn evidence_count(&self, charge_id: &str) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM charge_evidence WHERE charge_id = $1")
            .bind(charge_id)
            .fetch_one(self.pool())
            .await?;
        Ok(row.get(0))
    }

    /// Which of `charge_ids` hold evidence (for indicators on lists).
    pub async fn charges_with_evidence(
        &self,
        charge_ids: &[String],
    ) -> Result<Vec<String>, StoreError> {
        if charge_ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (1..=charge_ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT DISTINCT charge_id FROM charge_evidence WHERE charge_id IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for id in charge_ids {
            query = query.bind(id);
        }
        let rows = query.fetch_all(self.pool()).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Evidence that expired at `now`, oldest first, at most `limit` items.
    pub async fn expired_evidence(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<EvidenceRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charge_evidence WHERE expires_at <= $1 \
             ORDER BY expires_at, id LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// Removes one item; `false` when it was gone already (another gateway's sweeper).
    pub async fn delete_evidence(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM charge_evidence WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<EvidenceRecord, StoreError> {
    Ok(EvidenceRecord {
        id: r.col("id")?,
        charge_id: r.col("charge_id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        storage_key: r.col("storage_key")?,
        content_type: r.col("content_type")?,
        byte_size: r.col("byte_size")?,
        width: r.col("width")?,
        height: r.col("height")?,
        sha256: r.col("sha256")?,
        latitude: r.col("latitude")?,
        longitude: r.col("longitude")?,
        accuracy: r.col("accuracy")?,
        address: r.col("address")?,
        uploaded_by_kind: r.col("uploaded_by_kind")?,
        uploaded_by_id: r.col("uploaded_by_id")?,
        uploaded_by_label: r.col("uploaded_by_label")?,
        created_at: r.col("created_at")?,
        expires_at: r.col("expires_at")?,
    })
}
