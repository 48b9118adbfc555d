//! Dashboard sessions (in the database, so every gateway behind a load balancer knows them)
//! and the failed sign-in counters that throttle password guessing.

use sqlx::Row;

use super::{Columns, Store, StoreError};
use crate::domain::Environment;

#[derive(Debug, Clone)]
pub struct SessionRecord {
    /// Hex SHA-256 of the cookie's token.
    pub id: String,
    pub user_id: String,
    pub merchant_id: String,
    pub csrf_token: String,
    pub environment: Environment,
    pub ip: Option<String>,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
}

const COLUMNS: &str =
    "id, user_id, merchant_id, csrf_token, environment, ip, created_at, last_seen_at, expires_at";

impl Store {
    pub async fn insert_session(&self, s: &SessionRecord) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO sessions ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(&s.id)
        .bind(&s.user_id)
        .bind(&s.merchant_id)
        .bind(&s.csrf_token)
        .bind(s.environment.as_str())
        .bind(&s.ip)
        .bind(s.created_at)
        .bind(s.last_seen_at)
        .bind(s.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM sessions WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(session_of).transpose()
    }

    pub async fn touch_session(&self, id: &str, at: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET last_seen_at = $1 WHERE id = $2")
            .bind(at)
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    pub async fn set_session_environment(
        &self,
        id: &str,
        environment: Environment,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET environment = $1 WHERE id = $2")
            .bind(environment.as_str())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    pub async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Ends every session of a user but `keep` (after a password change).
    pub async fn delete_user_sessions(&self, user_id: &str, keep: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id <> $2")
            .bind(user_id)
            .bind(keep)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Records that session `id` was started by single sign-on.
    pub async fn mark_sso_session(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO sso_sessions (session_id) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Ends the sessions at `merchant_id` that no single sign-on started, except the owners'
    /// (when SSO becomes required); how many ended.
    pub async fn end_password_sessions(&self, merchant_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM sessions WHERE merchant_id = $1 \
             AND id NOT IN (SELECT session_id FROM sso_sessions) \
             AND user_id NOT IN (SELECT user_id FROM memberships \
                                 WHERE merchant_id = $1 AND role = 'owner')",
        )
        .bind(merchant_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// Sessions past their absolute end or idle for longer than `idle_ms`.
    pub async fn sweep_sessions(&self, now: i64, idle_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2")
            .bind(now)
            .bind(now - idle_ms)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Until when `key` may not try again, if it is locked now.
    pub async fn sign_in_locked_until(
        &self,
        key: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query("SELECT locked_until FROM sign_in_failures WHERE key = $1")
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        Ok(row
            .and_then(|r| r.get::<Option<i64>, _>(0))
            .filter(|until| *until > now))
    }

    /// Counts a failure for `key` in a window of `window_ms`; the `max`th locks the key for
    /// `lock_ms`. One statement, so concurrent failures all count.
    pub async fn record_sign_in_failure(
        &self,
        key: &str,
        now: i64,
        window_ms: i64,
        max: i64,
        lock_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sign_in_failures (key, failures, window_start, locked_until) \
             VALUES ($1, 1, $2, NULL) \
             ON CONFLICT (key) DO UPDATE SET \
               failures = CASE WHEN sign_in_failures.window_start <= $2 - $3 THEN 1 \
                          ELSE sign_in_failures.failures + 1 END, \
               window_start = CASE WHEN sign_in_failures.window_start <= $2 - $3 THEN $2 \
                          ELSE sign_in_failures.window_start END",
        )
        .bind(key)
        .bind(now)
        .bind(window_ms)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "UPDATE sign_in_failures SET locked_until = $2, failures = 0, window_start = $3 \
             WHERE key = $1 AND failures >= $4",
        )
        .bind(key)
        .bind(now + lock_ms)
        .bind(now)
        .bind(max)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn clear_sign_in_failures(&self, key: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sign_in_failures WHERE key = $1")
            .bind(key)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

fn session_of(r: &sqlx::any::AnyRow) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: r.col("id")?,
        user_id: r.col("user_id")?,
        merchant_id: r.col("merchant_id")?,
        csrf_token: r.col("csrf_token")?,
        environment: r.parsed("environment")?,
        ip: r.col("ip")?,
        created_at: r.col("created_at")?,
        last_seen_at: r.col("last_seen_at")?,
        expires_at: r.col("expires_at")?,
    })
}
