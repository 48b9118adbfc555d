//! The audit log: every change with its actor, newest first.

use super::{Columns, Store, StoreError};

#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditRecord {
    pub id: String,
    pub merchant_id: String,
    /// `user`, `api_key` or `system`.
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub actor_label: String,
    pub action: String,
    pub target_kind: Option<String>,
    pub target_id: Option<String>,
    pub summary: String,
    pub ip: Option<String>,
    pub environment: Option<String>,
    pub created_at: i64,
}

/// Which entries a listing wants; every field narrows it.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor_kind: Option<String>,
    pub actor_id: Option<String>,
    /// An action (`credential.create`) or a family (`credential`).
    pub action: Option<String>,
    pub created_gte: Option<i64>,
    pub created_lt: Option<i64>,
    /// Entries older than this id (the previous page's last).
    pub before_id: Option<String>,
    pub limit: i64,
}

const COLUMNS: &str = "id, merchant_id, actor_kind, actor_id, actor_label, action, target_kind, \
     target_id, summary, ip, environment, created_at";

impl Store {
    pub async fn insert_audit(&self, e: &AuditRecord) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO audit_log ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        ))
        .bind(&e.id)
        .bind(&e.merchant_id)
        .bind(&e.actor_kind)
        .bind(&e.actor_id)
        .bind(&e.actor_label)
        .bind(&e.action)
        .bind(&e.target_kind)
        .bind(&e.target_id)
        .bind(&e.summary)
        .bind(&e.ip)
        .bind(&e.environment)
        .bind(e.created_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn audit_entries(
        &self,
        merchant_id: &str,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM audit_log WHERE merchant_id = $1");
        let mut binds: Vec<String> = Vec::new();
        let mut push = |sql: &mut String, clause: &str, value: String| {
            binds.push(value);
            sql.push_str(&clause.replace('?', &format!("${}", binds.len() + 1)));
        };
        if let Some(kind) = &filter.actor_kind {
            push(&mut sql, " AND actor_kind = ?", kind.clone());
        }
        if let Some(id) = &filter.actor_id {
            push(&mut sql, " AND actor_id = ?", id.clone());
        }
        if let Some(action) = &filter.action {
            if action.contains('.') {
                push(&mut sql, " AND action = ?", action.clone());
            } else {
                push(&mut sql, " AND action LIKE ?", format!("{action}.%"));
            }
        }
        if let Some(before) = &filter.before_id {
            push(&mut sql, " AND id < ?", before.clone());
        }
        // Times are numbers: bound apart from the text values.
        let mut n = binds.len() + 1;
        if filter.created_gte.is_some() {
            n += 1;
            sql.push_str(&format!(" AND created_at >= ${n}"));
        }
        if filter.created_lt.is_some() {
            n += 1;
            sql.push_str(&format!(" AND created_at < ${n}"));
        }
        sql.push_str(&format!(
            " ORDER BY id DESC LIMIT {}",
            filter.limit.clamp(1, 500)
        ));
        let mut query = sqlx::query(&sql).bind(merchant_id);
        for value in &binds {
            query = query.bind(value);
        }
        if let Some(t) = filter.created_gte {
            query = query.bind(t);
        }
        if let Some(t) = filter.created_lt {
            query = query.bind(t);
        }
        let rows = query.fetch_all(self.pool()).await?;
        rows.iter().map(audit_of).collect()
    }
}

fn audit_of(r: &sqlx::any::AnyRow) -> Result<AuditRecord, StoreError> {
    Ok(AuditRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        actor_kind: r.col("actor_kind")?,
        actor_id: r.col("actor_id")?,
        actor_label: r.col("actor_label")?,
        action: r.col("action")?,
        target_kind: r.col("target_kind")?,
        target_id: r.col("target_id")?,
        summary: r.col("summary")?,
        ip: r.col("ip")?,
        environment: r.col("environment")?,
        created_at: r.col("created_at")?,
    })
}
