//! A stored credential made ready for adapter calls: its fields opened and the webhook URL the
//! PSP should notify ([`runtime_credential`]), prepared once per adapter version and kept
//! ([`PreparedCache`]) so a charge neither opens the vault nor parses a certificate.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use super::fields::open_fields;
use super::webhook::{token_in_url, webhook_token_aad, webhook_url};
use crate::runtime::{Adapter, Credential, PreparedCredential};
use crate::store::credentials::CredentialRecord;
use crate::vault::{Vault, VaultError};

/// What the runtime needs of a credential: its fields opened, and the webhook URL the PSP
/// should notify.
pub fn runtime_credential(
    adapter: &Adapter,
    base_url: &str,
    record: &CredentialRecord,
    fields: BTreeMap<String, String>,
    token: &str,
) -> Credential {
    Credential {
        id: record.id.to_string(),
        environment: record.environment.into(),
        fields,
        webhook_url: Some(webhook_url(
            base_url,
            record,
            token,
            token_in_url(adapter.manifest()),
        )),
    }
}

/// Prepared credentials by (credential, its last update, adapter version): opening the vault
/// and parsing the client certificate once, not on every charge.
#[derive(Default)]
pub struct PreparedCache {
    entries: Mutex<HashMap<(String, i64, String), Arc<PreparedCredential>>>,
}

impl PreparedCache {
    pub fn get_or_prepare(
        &self,
        vault: &Vault,
        base_url: &str,
        adapter: &Adapter,
        record: &CredentialRecord,
    ) -> Result<Arc<PreparedCredential>, VaultError> {
        let key = (
            record.id.to_string(),
            record.updated_at,
            adapter.version().to_owned(),
        );
        if let Some(hit) = self.entries.lock().get(&key) {
            return Ok(hit.clone());
        }
        let fields = open_fields(vault, record)?;
        let token = vault.open_string(
            &record.webhook_token_sealed,
            &webhook_token_aad(record.id.as_str()),
        )?;
        let credential = runtime_credential(adapter, base_url, record, fields, &token);
        let prepared = Arc::new(adapter.prepare(&credential));
        let mut entries = self.entries.lock();
        // Stale versions of this credential go; the map stays as small as the live credentials.
        entries.retain(|(id, ..), _| id != record.id.as_str());
        entries.insert(key, prepared.clone());
        Ok(prepared)
    }
}
