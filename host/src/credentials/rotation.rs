//! `pixgw vault rotate`: every stored secret of every credential re-encrypted under the
//! vault's current key.

use super::webhook::webhook_token_aad;
use crate::store::{Store, now_ms};
use crate::vault::{Aad, Vault};

/// Re-encrypts every stored secret under the vault's current key.
/// Returns (credentials examined, values re-encrypted).
pub async fn rotate_all(store: &Store, vault: &Vault) -> anyhow::Result<(usize, usize)> {
    let mut resealed = 0;
    let records = store.all_credentials().await?;
    for mut record in records.clone() {
        let mut changed = false;
        for (name, sealed) in record.sealed_fields.iter_mut() {
            if vault.needs_rotation(sealed) {
                *sealed = vault.reseal(sealed, &Aad::new("credentials", &record.id, name))?;
                changed = true;
                resealed += 1;
            }
        }
        if vault.needs_rotation(&record.webhook_token_sealed) {
            record.webhook_token_sealed =
                vault.reseal(&record.webhook_token_sealed, &webhook_token_aad(&record.id))?;
            changed = true;
            resealed += 1;
        }
        if changed {
            // updated_at moves so cached prepared credentials are rebuilt.
            record.updated_at = now_ms().max(record.updated_at + 1);
            store.update_credential(&record).await?;
        }
    }
    // The adapters' cache is only a cache: rather than re-encrypt it, start it afresh.
    store.clear_adapter_cache().await?;
    Ok((records.len(), resealed))
}
