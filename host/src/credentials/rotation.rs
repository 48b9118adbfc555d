//! `pixgw vault rotate`: every stored secret — credentials' fields and webhook tokens, webhook
//! endpoints' signing secrets — re-encrypted under the vault's current key, safely beside
//! running gateways.
//!
//! The procedure (README, "Rotating the master key"): restart every gateway with the new key in
//! `PIXGW_MASTER_KEY` and the old one in `PIXGW_MASTER_KEY_PREVIOUS` (they then seal under the
//! new key and open under both), run `pixgw vault rotate` with the same two variables, then drop
//! the old key. Meanwhile merchants keep editing:
//!
//! - Row by row, a compare-and-swap on the row's `version`: a change a merchant saved between
//!   the read and the write is never overwritten by the old secret re-encrypted; the row is read
//!   again and re-encrypted as it is now.
//! - A merchant's save that does not touch the secrets writes none, so it cannot put back a
//!   ciphertext the rotation replaced.
//! - A second pass checks that nothing is left under an old key. Values that appeared there
//!   meanwhile mean some gateway still seals under the old key: they are re-encrypted too, and
//!   the command fails naming the key, because that gateway will keep doing it until restarted.

use std::collections::BTreeSet;

use super::webhook::webhook_token_aad;
use crate::store::credentials::{CredentialRecord, Saved};
use crate::store::webhook_endpoints::EndpointRecord;
use crate::store::{Store, StoreError, now_ms};
use crate::vault::{Aad, Vault, VaultError};
use crate::webhooks::endpoints::secret_aad;

/// Tries per row before giving up: each retry means a merchant saved that row meanwhile.
const MAX_TRIES: usize = 20;

/// What a rotation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rotated {
    pub credentials: usize,
    pub endpoints: usize,
    /// Values re-encrypted.
    pub resealed: usize,
}

/// Why a rotation did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("single sign-on client secrets: {0}")]
    Sso(#[from] crate::sso::SsoError),
    #[error("{what} {id}: {source}")]
    Vault {
        what: &'static str,
        id: String,
        source: VaultError,
    },
    #[error(
        "{what} {id} changed {MAX_TRIES} times while being re-encrypted; run the rotation again"
    )]
    Busy { what: &'static str, id: String },
    #[error(
        "{count} secrets were sealed under the old key {} while rotating (now re-encrypted): a \
         running gateway still has it as PIXGW_MASTER_KEY. Restart every gateway with \
         PIXGW_MASTER_KEY set to the new key and PIXGW_MASTER_KEY_PREVIOUS to the old one, then \
         run `pixgw vault rotate` again before dropping the old key",
        .key_ids.iter().cloned().collect::<Vec<_>>().join(", ")
    )]
    OldKeyStillInUse {
        count: usize,
        key_ids: BTreeSet<String>,
    },
}

/// Re-encrypts every stored secret under the vault's current key (see the module docs).
pub async fn rotate_all(store: &Store, vault: &Vault) -> Result<Rotated, RotationError> {
    let first = pass(store, vault).await?;
    // The adapters' cache is only a cache: rather than re-encrypt it, start it afresh.
    store.clear_adapter_cache().await?;
    let check = pass(store, vault).await?;
    if check.resealed > 0 {
        return Err(RotationError::OldKeyStillInUse {
            count: check.resealed,
            key_ids: check.old_keys,
        });
    }
    Ok(Rotated {
        credentials: first.credentials,
        endpoints: first.endpoints,
        resealed: first.resealed,
    })
}

#[derive(Default)]
struct Pass {
    credentials: usize,
    endpoints: usize,
    resealed: usize,
    /// Ids of the keys the re-encrypted values were under.
    old_keys: BTreeSet<String>,
}

async fn pass(store: &Store, vault: &Vault) -> Result<Pass, RotationError> {
    let mut done = Pass::default();
    for mut record in store.all_credentials().await? {
        done.credentials += 1;
        let mut settled = false;
        for _ in 0..MAX_TRIES {
            let Some(keys) = reseal_credential(vault, &mut record)? else {
                settled = true;
                break;
            };
            if store.reseal_credential(&record).await? == Saved::Done {
                done.resealed += keys.len();
                done.old_keys.extend(keys);
                settled = true;
                break;
            }
            // A merchant saved it meanwhile: take it as it is now.
            match store.credential_by_id(record.id.as_str()).await? {
                Some(now) => record = now,
                None => {
                    settled = true;
                    break;
                }
            }
        }
        if !settled {
            return Err(RotationError::Busy {
                what: "credential",
                id: record.id.to_string(),
            });
        }
    }
    for mut endpoint in store.all_webhook_endpoints().await? {
        done.endpoints += 1;
        let mut settled = false;
        for _ in 0..MAX_TRIES {
            let Some(keys) = reseal_endpoint(vault, &mut endpoint)? else {
                settled = true;
                break;
            };
            if store.reseal_webhook_endpoint(&endpoint).await? == Saved::Done {
                done.resealed += keys.len();
                done.old_keys.extend(keys);
                settled = true;
                break;
            }
            match store.webhook_endpoint_by_id(&endpoint.id).await? {
                Some(now) => endpoint = now,
                None => {
                    settled = true;
                    break;
                }
            }
        }
        if !settled {
            return Err(RotationError::Busy {
                what: "webhook endpoint",
                id: endpoint.id,
            });
        }
    }
    // Merchants' single sign-on client secrets, each a compare-and-swap on its ciphertext.
    done.resealed += crate::sso::reseal_secrets(store, vault).await?;
    Ok(done)
}

/// The old key id of `sealed` when it needs re-encrypting.
fn old_key(vault: &Vault, sealed: &str) -> Option<String> {
    vault.needs_rotation(sealed).then(|| {
        vault
            .key_id_of(sealed)
            .map_or_else(|_| "(malformed)".to_owned(), str::to_owned)
    })
}

/// Re-encrypts in `record` what is not under the current key: the keys the values were under,
/// one per value, or `None` when nothing needed it.
fn reseal_credential(
    vault: &Vault,
    record: &mut CredentialRecord,
) -> Result<Option<Vec<String>>, RotationError> {
    let failed = |id: &str| {
        let id = id.to_owned();
        move |source| RotationError::Vault {
            what: "credential",
            id,
            source,
        }
    };
    let mut keys = Vec::new();
    for (name, sealed) in record.sealed_fields.iter_mut() {
        if let Some(key) = old_key(vault, sealed) {
            *sealed = vault
                .reseal(sealed, &Aad::new("credentials", record.id.as_str(), name))
                .map_err(failed(record.id.as_str()))?;
            keys.push(key);
        }
    }
    if let Some(key) = old_key(vault, &record.webhook_token_sealed) {
        record.webhook_token_sealed = vault
            .reseal(
                &record.webhook_token_sealed,
                &webhook_token_aad(record.id.as_str()),
            )
            .map_err(failed(record.id.as_str()))?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Ok(None);
    }
    // updated_at moves so cached prepared credentials are rebuilt.
    record.updated_at = now_ms().max(record.updated_at + 1);
    Ok(Some(keys))
}

/// [`reseal_credential`] for an endpoint's signing secrets (the current and, during a secret
/// rotation's overlap, the previous one).
fn reseal_endpoint(
    vault: &Vault,
    endpoint: &mut EndpointRecord,
) -> Result<Option<Vec<String>>, RotationError> {
    let aad = secret_aad(&endpoint.id);
    let failed = |id: &str| {
        let id = id.to_owned();
        move |source| RotationError::Vault {
            what: "webhook endpoint",
            id,
            source,
        }
    };
    let mut keys = Vec::new();
    if let Some(key) = old_key(vault, &endpoint.secret_sealed) {
        endpoint.secret_sealed = vault
            .reseal(&endpoint.secret_sealed, &aad)
            .map_err(failed(&endpoint.id))?;
        keys.push(key);
    }
    if let Some(previous) = &endpoint.previous_secret_sealed
        && let Some(key) = old_key(vault, previous)
    {
        let resealed = vault.reseal(previous, &aad).map_err(failed(&endpoint.id))?;
        endpoint.previous_secret_sealed = Some(resealed);
        keys.push(key);
    }
    Ok((!keys.is_empty()).then_some(keys))
}
