//! Provider id → the adapter version currently serving it, swapped atomically.
//!
//! Loading validates before anything serves: the file compiles, instantiates, answers
//! `manifest()`, speaks WIT major version [`WIT_MAJOR`], and calls itself by the id its file
//! name promises. A file that fails keeps the previous version serving; the failure is logged
//! and kept for the status view. Calls hold an `Arc` of the version they started on, so a swap
//! never cuts one off.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::LoadedAdapter;
use super::bindings::types::Manifest;
use super::engine::Tier;

/// The WIT major version this host implements.
pub const WIT_MAJOR: u64 = 2;

/// The SDK line that builds adapters of this contract, named in load errors.
pub const SDK_LINE: &str = "pixgw-plugin-sdk 2.x";

/// What the registry knows about one provider id, for operators.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdapterStatus {
    pub id: String,
    /// SHA-256 of the `.wasm` serving now, if any.
    pub serving_sha256: Option<String>,
    pub serving_since: Option<SystemTime>,
    /// Which compiler made the code serving now.
    pub serving_tier: Option<Tier>,
    /// The most recent failure to load a new file for this id, kept until a load succeeds.
    pub last_error: Option<String>,
    pub last_error_at: Option<SystemTime>,
}

#[derive(Default)]
pub struct Registry {
    serving: ArcSwap<HashMap<String, Arc<LoadedAdapter>>>,
    status: Mutex<BTreeMap<String, AdapterStatus>>,
    /// Serialises swaps so two reloads of different files cannot lose each other's update.
    swap_lock: Mutex<()>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid adapter component: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error(
        "{path} declares WIT version {found}; this host speaks {WIT_MAJOR}.x: rebuild it against \
         {SDK_LINE}"
    )]
    WitVersion { path: PathBuf, found: String },
    #[error("{path} declares provider id {found:?} but its file name says {expected:?}")]
    IdMismatch {
        path: PathBuf,
        expected: String,
        found: String,
    },
}

/// The provider id a plugin file must declare: its file stem (`efi.wasm` → `efi`).
pub fn expected_id(path: &Path) -> Option<String> {
    (path.extension()? == "wasm").then_some(())?;
    let stem = path.file_stem()?.to_str()?;
    let valid = !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    valid.then(|| stem.to_owned())
}

/// An adapter built against another version of the contract imports `pixgw:psp/…@<version>`
/// that this host does not provide: say which version it was built for and what to do, rather
/// than wasmtime's "import not found".
pub fn contract_mismatch(imports: &[String]) -> Option<String> {
    imports.iter().find_map(|name| {
        let version = name.strip_prefix("pixgw:psp/")?.split_once('@')?.1;
        let major = version.split('.').next()?.parse::<u64>().ok();
        (major != Some(WIT_MAJOR)).then(|| {
            format!(
                "it was built against the contract pixgw:psp@{version} (it imports {name}); this \
                 gateway speaks pixgw:psp@{WIT_MAJOR}.x: rebuild it against {SDK_LINE} (set \
                 `pixgw-plugin-sdk = \"{WIT_MAJOR}\"` in its Cargo.toml)"
            )
        })
    })
}

/// A component that lacks the world's exports was built without the SDK's `export!`: say so.
pub fn explain_missing_exports(reason: String) -> String {
    if reason.contains("export") {
        format!(
            "{reason}: the component does not export the pixgw:psp adapter world; \
             add `pixgw_plugin_sdk::export!(YourAdapter);` to the crate's src/lib.rs"
        )
    } else {
        reason
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Checks what `manifest()` returned against what the host and the file name expect.
pub fn check_manifest(path: &Path, expected: &str, manifest: &Manifest) -> Result<(), LoadError> {
    let major = manifest
        .wit_version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u64>().ok());
    if major != Some(WIT_MAJOR) {
        return Err(LoadError::WitVersion {
            path: path.into(),
            found: manifest.wit_version.clone(),
        });
    }
    if manifest.id != expected {
        return Err(LoadError::IdMismatch {
            path: path.into(),
            expected: expected.into(),
            found: manifest.id.clone(),
        });
    }
    Ok(())
}

impl Registry {
    pub fn get(&self, id: &str) -> Option<Arc<LoadedAdapter>> {
        self.serving.load().get(id).cloned()
    }

    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<_> = self.serving.load().keys().cloned().collect();
        ids.sort();
        ids
    }

    pub fn status(&self) -> Vec<AdapterStatus> {
        self.status.lock().values().cloned().collect()
    }

    pub(super) fn install(&self, adapter: Arc<LoadedAdapter>) {
        let _guard = self.swap_lock.lock();
        let id = adapter.manifest.id.clone();
        let mut next = HashMap::clone(&self.serving.load());
        let status = AdapterStatus {
            id: id.clone(),
            serving_sha256: Some(adapter.sha256.clone()),
            serving_since: Some(SystemTime::now()),
            serving_tier: Some(adapter.tier),
            last_error: None,
            last_error_at: None,
        };
        next.insert(id.clone(), adapter);
        self.serving.store(Arc::new(next));
        self.status.lock().insert(id, status);
    }

    /// Serves `next` (the same file's code from another compiler) in place of `current`, if
    /// `current` still serves. Whether it did.
    pub(super) fn replace(&self, current: &Arc<LoadedAdapter>, next: Arc<LoadedAdapter>) -> bool {
        let _guard = self.swap_lock.lock();
        let id = &current.manifest.id;
        let serving = self.serving.load();
        if !serving.get(id).is_some_and(|s| Arc::ptr_eq(s, current)) {
            return false;
        }
        let mut serving = HashMap::clone(&serving);
        let tier = next.tier;
        serving.insert(id.clone(), next);
        self.serving.store(Arc::new(serving));
        if let Some(status) = self.status.lock().get_mut(id) {
            status.serving_tier = Some(tier);
        }
        true
    }

    pub(super) fn remove(&self, id: &str) {
        let _guard = self.swap_lock.lock();
        let mut next = HashMap::clone(&self.serving.load());
        if next.remove(id).is_some() {
            self.serving.store(Arc::new(next));
            tracing::info!(provider = id, "adapter unloaded: its file was removed");
        }
        self.status.lock().remove(id);
    }

    /// Forgets the last failure of `id`: the file in place is the one serving.
    pub(super) fn clear_failure(&self, id: &str) {
        if let Some(entry) = self.status.lock().get_mut(id) {
            entry.last_error = None;
            entry.last_error_at = None;
        }
    }

    pub(super) fn record_failure(&self, id: &str, error: &LoadError) {
        let mut status = self.status.lock();
        let entry = status
            .entry(id.to_owned())
            .or_insert_with(|| AdapterStatus {
                id: id.to_owned(),
                serving_sha256: None,
                serving_since: None,
                serving_tier: None,
                last_error: None,
                last_error_at: None,
            });
        entry.last_error = Some(error.to_string());
        entry.last_error_at = Some(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_id_comes_from_the_file_stem() {
        assert_eq!(
            expected_id(Path::new("/p/efi.wasm")).as_deref(),
            Some("efi")
        );
        assert_eq!(
            expected_id(Path::new("/p/mercadopago.wasm")).as_deref(),
            Some("mercadopago")
        );
        assert_eq!(expected_id(Path::new("/p/efi.wasm.tmp")), None);
        assert_eq!(expected_id(Path::new("/p/Efi.wasm")), None);
        assert_eq!(expected_id(Path::new("/p/.wasm")), None);
        assert_eq!(expected_id(Path::new("/p/readme.txt")), None);
    }

    #[test]
    fn an_adapter_of_another_contract_is_told_which_sdk_to_rebuild_with() {
        let imports = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            contract_mismatch(&imports(&["wasi:io/error@0.2.0", "pixgw:psp/log@1.0.0"])).as_deref(),
            Some(
                "it was built against the contract pixgw:psp@1.0.0 (it imports \
                 pixgw:psp/log@1.0.0); this gateway speaks pixgw:psp@2.x: rebuild it against \
                 pixgw-plugin-sdk 2.x (set `pixgw-plugin-sdk = \"2\"` in its Cargo.toml)"
            )
        );
        assert_eq!(
            contract_mismatch(&imports(&["pixgw:psp/http@2.0.0", "pixgw:psp/types@2.1.0"])),
            None
        );
    }
}
