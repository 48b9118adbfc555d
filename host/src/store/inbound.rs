//! PSP notifications as they arrived, stored before they are processed: a notification the
//! gateway answered 200 is never lost, even if the gateway dies while processing it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sqlx::Row;

use super::{Columns, Store, StoreError, now_ms};

#[derive(Debug, Clone)]
pub struct NotificationRecord {
    pub id: String,
    pub credential_id: String,
    pub received_at: i64,
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub attempts: i64,
}

const COLUMNS: &str =
    "id, credential_id, received_at, method, path, query, headers, body, attempts";

impl Store {
    /// Stores a notification, leased to the caller who processes it right away. Durable: the
    /// PSP hears 200 only once it is on disk.
    pub async fn insert_notification(
        &self,
        n: &NotificationRecord,
        lease_ms: i64,
    ) -> Result<(), StoreError> {
        let n = n.clone();
        self.write(move |conn| {
            Box::pin(async move {
                sqlx::query(
                    "INSERT INTO inbound_notifications (id, credential_id, received_at, method, \
                     path, query, headers, body, status, attempts, lease_until) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'received', 1, $9)",
                )
                .bind(&n.id)
                .bind(&n.credential_id)
                .bind(n.received_at)
                .bind(&n.method)
                .bind(&n.path)
                .bind(&n.query)
                .bind(serde_json::to_string(&n.headers).expect("strings serialise"))
                .bind(STANDARD.encode(&n.body))
                .bind(n.received_at + lease_ms)
                .execute(&mut *conn)
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Records how processing ended: `processed`, `rejected` (not authentic or not
    /// understood; never retried) or `received` again with a later lease (retry). Deferred: a
    /// lost outcome leaves the notification to be processed again, which finds nothing to do.
    pub async fn finish_notification(
        &self,
        id: &str,
        status: &str,
        outcome: &str,
        retry_at: Option<i64>,
    ) -> Result<(), StoreError> {
        let (id, status, outcome) = (id.to_owned(), status.to_owned(), outcome.to_owned());
        self.write_with(super::Durability::Deferred, move |conn| {
            Box::pin(async move {
                sqlx::query(
                    "UPDATE inbound_notifications SET status = $1, outcome = $2, \
                     processed_at = CASE WHEN $1 = 'received' THEN NULL ELSE $3 END, \
                     lease_until = $4 WHERE id = $5",
                )
                .bind(&status)
                .bind(&outcome)
                .bind(now_ms())
                .bind(retry_at.unwrap_or(0))
                .bind(&id)
                .execute(&mut *conn)
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Notifications left unprocessed (their processor died or asked for a retry), leased.
    pub async fn claim_unprocessed_notifications(
        &self,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<NotificationRecord>, StoreError> {
        let now = now_ms();
        let owner = super::lease_owner();
        self.take_leases(
            "UPDATE inbound_notifications SET lease_until = $1, lease_owner = $2, \
             attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM inbound_notifications \
                          WHERE status = 'received' AND lease_until < $3 \
                          ORDER BY received_at LIMIT $4) \
               AND status = 'received' AND lease_until < $3"
                .to_owned(),
            &owner,
            now,
            lease_ms,
            limit,
            None,
        )
        .await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM inbound_notifications \
             WHERE lease_owner = $1 AND status = 'received' AND lease_until > $2"
        ))
        .bind(&owner)
        .bind(now)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// How many notifications a credential received, by status: for tests and operators.
    pub async fn notification_counts(
        &self,
        credential_id: &str,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT status, COUNT(*) FROM inbound_notifications WHERE credential_id = $1 \
             GROUP BY status ORDER BY status",
        )
        .bind(credential_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<NotificationRecord, StoreError> {
    Ok(NotificationRecord {
        id: r.col("id")?,
        credential_id: r.col("credential_id")?,
        received_at: r.col("received_at")?,
        method: r.col("method")?,
        path: r.col("path")?,
        query: r.col("query")?,
        headers: r.json("headers")?,
        body: STANDARD
            .decode(r.col::<String>("body")?)
            .map_err(|e| StoreError::Corrupt(format!("notification body: {e}")))?,
        attempts: r.col("attempts")?,
    })
}
