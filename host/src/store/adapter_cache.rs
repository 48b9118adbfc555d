//! The adapters' cache, durable: the runtime's [`DurableCache`], kept in the database with every
//! value sealed by the vault and bound to its scope and key.

use futures::future::BoxFuture;
use sqlx::Row;

use super::{Store, now_ms};
use crate::runtime::cache::{DurableCache, MAX_ENTRIES_PER_SCOPE};
use crate::vault::{Aad, Vault};

pub struct StoreCache {
    pub store: Store,
    pub vault: std::sync::Arc<Vault>,
}

fn aad(scope: &str, key: &str) -> Aad {
    // Scopes hold `/` and keys are the adapter's own; both go into the record id, which may.
    Aad::new("adapter_cache", &format!("{scope}\u{1f}{key}"), "value")
}

impl DurableCache for StoreCache {
    fn get<'a>(&'a self, scope: &'a str, key: &'a str) -> BoxFuture<'a, Option<(String, i64)>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT value, expires_at FROM adapter_cache WHERE scope = $1 AND key = $2 AND expires_at > $3",
            )
            .bind(scope)
            .bind(key)
            .bind(now_ms())
            .fetch_optional(self.store.pool())
            .await
            .inspect_err(|e| tracing::warn!(error = %e, "reading the adapter cache failed"))
            .ok()??;
            let (sealed, expires_at): (String, i64) = (row.get(0), row.get(1));
            match self.vault.open_string(&sealed, &aad(scope, key)) {
                Ok(value) => Some((value.to_string(), expires_at)),
                Err(e) => {
                    tracing::warn!(scope, error = %e, "an adapter cache entry cannot be opened; ignored");
                    None
                }
            }
        })
    }

    fn set<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        value: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let sealed = self.vault.seal(value.as_bytes(), &aad(scope, key));
            if let Err(e) = sqlx::query(
                "INSERT INTO adapter_cache (scope, key, value, expires_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
            )
            .bind(scope)
            .bind(key)
            .bind(sealed)
            .bind(expires_at)
            .execute(self.store.pool())
            .await
            {
                tracing::warn!(error = %e, "writing the adapter cache failed");
                return;
            }
            if let Err(e) = self.bound(scope).await {
                tracing::warn!(error = %e, "bounding the adapter cache failed");
            }
        })
    }

    fn delete<'a>(&'a self, scope: &'a str, key: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = sqlx::query("DELETE FROM adapter_cache WHERE scope = $1 AND key = $2")
                .bind(scope)
                .bind(key)
                .execute(self.store.pool())
                .await
            {
                tracing::warn!(error = %e, "deleting from the adapter cache failed");
            }
        })
    }
}

impl StoreCache {
    /// Keeps a scope within [`MAX_ENTRIES_PER_SCOPE`]: expired entries go, then those
    /// expiring soonest.
    async fn bound(&self, scope: &str) -> Result<(), sqlx::Error> {
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM adapter_cache WHERE scope = $1")
            .bind(scope)
            .fetch_one(self.store.pool())
            .await?
            .get(0);
        let over = count - MAX_ENTRIES_PER_SCOPE as i64;
        if over <= 0 {
            return Ok(());
        }
        sqlx::query(
            "DELETE FROM adapter_cache WHERE scope = $1 AND key IN \
             (SELECT key FROM adapter_cache WHERE scope = $1 ORDER BY expires_at, key LIMIT $2)",
        )
        .bind(scope)
        .bind(over)
        .execute(self.store.pool())
        .await?;
        Ok(())
    }
}

impl Store {
    /// Forgets every entry: after a vault rotation, when they are sealed under the old key.
    pub async fn clear_adapter_cache(&self) -> Result<(), super::StoreError> {
        sqlx::query("DELETE FROM adapter_cache")
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes expired adapter cache entries.
    pub async fn sweep_adapter_cache(&self) -> Result<u64, super::StoreError> {
        Ok(
            sqlx::query("DELETE FROM adapter_cache WHERE expires_at <= $1")
                .bind(now_ms())
                .execute(self.pool())
                .await?
                .rows_affected(),
        )
    }
}
