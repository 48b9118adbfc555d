//! The `cache` import: small strings with expiry, scoped to (adapter, credential) by the host so
//! one credential's OAuth token can never be read by another.
//!
//! [`Cache`] keeps entries in memory and, once the gateway plugs one in, in a [`DurableCache`]
//! (the database): an adapter's cached ids (a PSP's customer id for a CPF) then survive restarts
//! and are shared by every gateway on the database. Memory answers first; the durable store is
//! read on a miss and written on every set.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;
use parking_lot::Mutex;

/// Where cache entries outlive the process. Implementations log their own failures: the cache
/// is an optimisation, and a lost entry only costs the adapter a call to its PSP.
pub trait DurableCache: Send + Sync {
    /// The value and its expiry (Unix milliseconds), if any and not expired.
    fn get<'a>(&'a self, scope: &'a str, key: &'a str) -> BoxFuture<'a, Option<(String, i64)>>;
    fn set<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        value: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, ()>;
    fn delete<'a>(&'a self, scope: &'a str, key: &'a str) -> BoxFuture<'a, ()>;
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Memory first, then the durable store when one is plugged in.
#[derive(Default)]
pub struct Cache {
    memory: MemoryCache,
    durable: OnceLock<Arc<dyn DurableCache>>,
}

impl Cache {
    /// Plugs in the durable store; only the first call counts.
    pub fn set_durable(&self, durable: Arc<dyn DurableCache>) {
        let _ = self.durable.set(durable);
    }

    pub async fn get(&self, scope: &str, key: &str) -> Option<String> {
        if let Some(value) = self.memory.get(scope, key) {
            return Some(value);
        }
        let (value, expires_at) = self.durable.get()?.get(scope, key).await?;
        let left = expires_at - unix_ms(SystemTime::now());
        if left <= 0 {
            return None;
        }
        self.memory.set(
            scope,
            key.to_owned(),
            value.clone(),
            Duration::from_millis(left as u64),
        );
        Some(value)
    }

    pub async fn set(&self, scope: &str, key: String, value: String, ttl: Duration) {
        if value.len() > MAX_VALUE_BYTES || ttl.is_zero() {
            return;
        }
        if let Some(durable) = self.durable.get() {
            let expires_at = unix_ms(SystemTime::now()) + ttl.as_millis() as i64;
            durable.set(scope, &key, &value, expires_at).await;
        }
        self.memory.set(scope, key, value, ttl);
    }

    pub async fn delete(&self, scope: &str, key: &str) {
        self.memory.delete(scope, key);
        if let Some(durable) = self.durable.get() {
            durable.delete(scope, key).await;
        }
    }
}

/// Entries kept per scope; beyond it the expired entries go first, then everything in that scope.
const MAX_ENTRIES_PER_SCOPE: usize = 256;
const MAX_VALUE_BYTES: usize = 64 * 1024;

/// One scope's entries: key → (value, expiry).
type Entries = HashMap<String, (String, Instant)>;

#[derive(Default)]
pub struct MemoryCache {
    scopes: Mutex<HashMap<String, Entries>>,
}

impl MemoryCache {
    pub fn get(&self, scope: &str, key: &str) -> Option<String> {
        let mut scopes = self.scopes.lock();
        let entries = scopes.get_mut(scope)?;
        match entries.get(key) {
            Some((value, expires)) if *expires > Instant::now() => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub fn set(&self, scope: &str, key: String, value: String, ttl: Duration) {
        if value.len() > MAX_VALUE_BYTES || ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut scopes = self.scopes.lock();
        let entries = scopes.entry(scope.to_owned()).or_default();
        if entries.len() >= MAX_ENTRIES_PER_SCOPE {
            entries.retain(|_, (_, expires)| *expires > now);
            if entries.len() >= MAX_ENTRIES_PER_SCOPE {
                entries.clear();
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    pub fn delete(&self, scope: &str, key: &str) {
        if let Some(entries) = self.scopes.lock().get_mut(scope) {
            entries.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_isolated_and_entries_expire() {
        let cache = MemoryCache::default();
        cache.set(
            "efi/cred-a",
            "token".into(),
            "A".into(),
            Duration::from_secs(60),
        );
        cache.set(
            "efi/cred-b",
            "token".into(),
            "B".into(),
            Duration::from_nanos(1),
        );
        assert_eq!(cache.get("efi/cred-a", "token").as_deref(), Some("A"));
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(cache.get("efi/cred-b", "token"), None);
        assert_eq!(cache.get("other/cred-a", "token"), None);
        cache.delete("efi/cred-a", "token");
        assert_eq!(cache.get("efi/cred-a", "token"), None);
    }
}
