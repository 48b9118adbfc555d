//! The `cache` import: small strings with expiry, scoped to (adapter, credential) by the host so
//! one credential's OAuth token can never be read by another.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

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
