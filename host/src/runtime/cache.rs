//! The `cache` import: small strings with expiry, scoped to (adapter, credential) by the host so
//! one credential's OAuth token can never be read by another.
//!
//! [`Cache`] keeps entries in memory and, once the gateway plugs one in, in a [`DurableCache`]
//! (the database): an adapter's cached ids (a PSP's customer id for a CPF) then survive restarts
//! and are shared by every gateway on the database. Memory answers first; the durable store is
//! read on a miss and written on every set.
//!
//! Each credential's scope is bounded ([`MAX_ENTRIES_PER_SCOPE`] entries of at most
//! [`MAX_VALUE_BYTES`], keys of at most [`MAX_KEY_BYTES`], [`MAX_SCOPE_BYTES`] in all, in memory
//! and in the durable store alike), so an adapter caching an id per payer cannot grow without
//! end: past a bound, expired entries go first, then those expiring soonest.

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
        if !fits(&key, &value) || ttl.is_zero() {
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

/// Entries kept per scope (one credential of one adapter).
pub const MAX_ENTRIES_PER_SCOPE: usize = 256;
/// Bytes of one value; a larger one is not cached.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Bytes of one key; a longer one is not cached.
pub const MAX_KEY_BYTES: usize = 256;
/// Bytes of keys and values kept per scope in memory.
pub const MAX_SCOPE_BYTES: usize = 1024 * 1024;

fn fits(key: &str, value: &str) -> bool {
    key.len() <= MAX_KEY_BYTES && value.len() <= MAX_VALUE_BYTES
}

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
        if !fits(&key, &value) || ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut scopes = self.scopes.lock();
        let entries = scopes.entry(scope.to_owned()).or_default();
        entries.remove(&key);
        let size = |entries: &Entries| -> usize {
            entries.iter().map(|(k, (v, _))| k.len() + v.len()).sum()
        };
        let full = |entries: &Entries| {
            entries.len() >= MAX_ENTRIES_PER_SCOPE
                || size(entries) + key.len() + value.len() > MAX_SCOPE_BYTES
        };
        if full(entries) {
            entries.retain(|_, (_, expires)| *expires > now);
        }
        while full(entries) {
            // The entry expiring soonest is the one worth least.
            let soonest = entries
                .iter()
                .min_by_key(|(_, (_, expires))| *expires)
                .map(|(k, _)| k.clone());
            match soonest {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        entries.insert(key, (value, now + ttl));
    }

    /// Entries held for `scope` (expired ones included until they are swept).
    pub fn len(&self, scope: &str) -> usize {
        self.scopes.lock().get(scope).map_or(0, HashMap::len)
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

    #[test]
    fn a_scope_is_bounded_and_the_soonest_to_expire_go_first() {
        let cache = MemoryCache::default();
        let scope = "asaas/cred-a";
        cache.set(scope, "token".into(), "T".into(), Duration::from_secs(3600));
        for i in 0..1000 {
            let ttl = Duration::from_secs(60 + i);
            cache.set(scope, format!("customer:{i}"), format!("cus_{i}"), ttl);
        }
        assert_eq!(cache.len(scope), MAX_ENTRIES_PER_SCOPE);
        // The long-lived token and the newest entries stay; the oldest ids went.
        assert_eq!(cache.get(scope, "token").as_deref(), Some("T"));
        assert_eq!(cache.get(scope, "customer:999").as_deref(), Some("cus_999"));
        assert_eq!(cache.get(scope, "customer:0"), None);
        assert_eq!(cache.len("asaas/cred-b"), 0);

        // Bytes are bounded too: 64 KiB values fill 1 MiB with 16 of them.
        let big = "v".repeat(MAX_VALUE_BYTES);
        for i in 0..40 {
            cache.set(
                "big",
                format!("k{i}"),
                big.clone(),
                Duration::from_secs(60 + i),
            );
        }
        assert!(
            cache.len("big") <= MAX_SCOPE_BYTES / MAX_VALUE_BYTES,
            "{}",
            cache.len("big")
        );
        // Oversized keys and values are not cached at all.
        cache.set(
            "big",
            "k".repeat(MAX_KEY_BYTES + 1),
            "v".into(),
            Duration::from_secs(60),
        );
        cache.set(
            "big",
            "huge".into(),
            "v".repeat(MAX_VALUE_BYTES + 1),
            Duration::from_secs(60),
        );
        assert_eq!(cache.get("big", "huge"), None);
    }
}
