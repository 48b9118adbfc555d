//! [`FunctionCache`]: Cranelift's machine code per function, kept across compiles so that a new
//! version of an adapter compiles only the functions that changed.
//!
//! Two versions of one adapter share almost all their code (the standard library, serde, the
//! SDK, most of the adapter), and adapters share much of it with each other. Cranelift keys each
//! function by a hash of its body (calls to other functions are relocations, not part of the
//! key), so a hot swap reuses the machine code of every unchanged function instead of
//! optimising and allocating registers for it again.
//!
//! With a compile cache directory the entries live there, one file per function under
//! `functions/` (the entry's SHA-256, then the entry), so they survive restarts (a start that loads whole artifacts compiles nothing
//! and so would otherwise leave the cache empty for the next swap) and cost no memory. Without
//! one they live in memory, up to [`MEMORY_BUDGET`] bytes. On disk, [`super::compile_cache`]
//! bounds them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use wasmtime::CacheStore;

/// Bytes of the SHA-256 that starts each entry on disk.
const CHECKSUM: usize = 32;

/// Bytes of machine code kept in memory when there is no cache directory: enough for the
/// thirteen adapters' distinct functions.
pub const MEMORY_BUDGET: usize = 48 << 20;

#[derive(Debug)]
pub enum FunctionCache {
    /// What compiles read and wrote since [`FunctionCache::take_activity`] last ran, for
    /// [`super::compile_cache::Upkeep`] to mark and count after the compile, not during it.
    Disk {
        dir: PathBuf,
        activity: Mutex<Activity>,
    },
    Memory(Mutex<MemoryEntries>),
}

/// The disk entries compiles used: read (`used`) and written (`written` bytes).
#[derive(Debug, Default)]
pub struct Activity {
    pub used: Vec<PathBuf>,
    pub written: u64,
}

#[derive(Debug, Default)]
pub struct MemoryEntries {
    entries: HashMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
}

impl FunctionCache {
    /// Entries under `<dir>/functions`, created if missing.
    pub fn on_disk(dir: &std::path::Path) -> std::io::Result<FunctionCache> {
        let dir = dir.join("functions");
        std::fs::create_dir_all(&dir)?;
        Ok(FunctionCache::Disk {
            dir,
            activity: Mutex::default(),
        })
    }

    /// The disk entries read and written since the last call.
    pub fn take_activity(&self) -> Activity {
        match self {
            FunctionCache::Disk { activity, .. } => std::mem::take(&mut *activity.lock()),
            FunctionCache::Memory(_) => Activity::default(),
        }
    }

    pub fn in_memory() -> FunctionCache {
        FunctionCache::Memory(Mutex::default())
    }
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        match self {
            // Machine code is run as it is read: an entry whose checksum does not match (a
            // damaged disk, a file cut short) is compiled again, not trusted.
            FunctionCache::Disk { dir, activity } => {
                let path = dir.join(hex::encode(key));
                let mut entry = std::fs::read(&path).ok()?;
                if entry.len() < CHECKSUM
                    || Sha256::digest(&entry[CHECKSUM..])[..] != entry[..CHECKSUM]
                {
                    return None;
                }
                activity.lock().used.push(path);
                entry.drain(..CHECKSUM);
                Some(Cow::Owned(entry))
            }
            FunctionCache::Memory(entries) => entries
                .lock()
                .entries
                .get(key)
                .map(|v| Cow::Owned(v.clone())),
        }
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        match self {
            FunctionCache::Disk { dir, activity } => {
                let path = dir.join(hex::encode(key));
                // Written aside and renamed, so a reader never sees half an entry; compiles run
                // on several threads and processes may share the directory.
                let tmp = path.with_extension(format!(
                    "tmp{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                let mut entry = Sha256::digest(&value).to_vec();
                entry.extend_from_slice(&value);
                match std::fs::write(&tmp, &entry).and_then(|_| std::fs::rename(&tmp, &path)) {
                    Ok(()) => {
                        activity.lock().written += entry.len() as u64;
                        true
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        tracing::debug!(error = %e, "could not cache a compiled function");
                        false
                    }
                }
            }
            FunctionCache::Memory(entries) => {
                let mut entries = entries.lock();
                if entries.bytes + key.len() + value.len() > MEMORY_BUDGET {
                    return false;
                }
                entries.bytes += key.len() + value.len();
                entries.entries.insert(key.to_vec(), value);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_entries_are_found_again_by_a_new_cache() {
        let dir = tempfile::tempdir().unwrap();
        let first = FunctionCache::on_disk(dir.path()).unwrap();
        assert!(first.get(b"key").is_none());
        assert!(first.insert(b"key", b"code".to_vec()));
        let second = FunctionCache::on_disk(dir.path()).unwrap();
        assert_eq!(second.get(b"key").as_deref(), Some(&b"code"[..]));
        // What each cache read and wrote is left for the upkeep after the compile: the entry
        // is its checksum and the code.
        let (written, read) = (first.take_activity(), second.take_activity());
        assert_eq!((written.used.len(), written.written), (0, 32 + 4));
        let path = dir.path().join("functions").join(hex::encode(b"key"));
        assert_eq!((read.used, read.written), (vec![path], 0));
        assert!(second.take_activity().used.is_empty());
        // Nothing but the entry itself is left in the directory.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("functions"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![hex::encode(b"key")]);
    }

    #[test]
    fn a_damaged_disk_entry_is_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::on_disk(dir.path()).unwrap();
        assert!(cache.insert(b"key", b"machine code".to_vec()));
        let file = dir.path().join("functions").join(hex::encode(b"key"));
        let mut bytes = std::fs::read(&file).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&file, &bytes).unwrap();
        assert!(cache.get(b"key").is_none());
        std::fs::write(&file, &bytes[..10]).unwrap();
        assert!(cache.get(b"key").is_none());
    }

    #[test]
    fn memory_entries_stop_at_the_budget() {
        let cache = FunctionCache::in_memory();
        assert!(cache.insert(b"a", vec![0; MEMORY_BUDGET - 1]));
        assert!(!cache.insert(b"b", vec![0; 8]));
        assert_eq!(cache.get(b"a").map(|v| v.len()), Some(MEMORY_BUDGET - 1));
        assert!(cache.get(b"b").is_none());
    }
}
