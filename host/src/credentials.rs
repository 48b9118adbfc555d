//! PSP credentials: a merchant's account at one PSP, as the adapter's manifest describes it.
//!
//! On save the fields are checked against the manifest (unknown, missing, PEMs that do not
//! parse, a certificate that does not match its key or has expired, a key whose prefix
//! contradicts the environment) with errors naming the field and the fix. Secrets, private keys
//! and the webhook token are sealed by the [`Vault`]; nothing else is secret. For a call, the
//! record is opened into the runtime's [`Credential`] and prepared once per adapter version.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::domain::Environment;
use crate::runtime::{self, Adapter, Credential, PreparedCredential};
use crate::store::credentials::CredentialRecord;
use crate::store::now_ms;
use crate::vault::{Aad, Vault, VaultError};

/// A field the merchant sent that cannot be saved, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's name, as the manifest declares it.
    pub field: String,
    pub message: String,
}

fn field_error(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Whether a field is sealed at rest.
fn is_secret(kind: runtime::FieldKind) -> bool {
    use runtime::FieldKind::*;
    matches!(kind, Secret | ClientPrivateKey | ClientIdentity)
}

/// Checks `fields` against the manifest for `environment`. `existing` are the fields already
/// saved (on an update, omitted fields keep their value).
pub fn validate(
    manifest: &runtime::Manifest,
    environment: Environment,
    fields: &BTreeMap<String, String>,
    existing: Option<&BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, FieldError> {
    let known: Vec<&str> = manifest
        .credential_fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    if let Some(unknown) = fields.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(field_error(
            unknown,
            format!(
                "{} credentials have no field {unknown:?}; the fields are: {}",
                manifest.id,
                known.join(", ")
            ),
        ));
    }
    let mut merged = existing.cloned().unwrap_or_default();
    for (name, value) in fields {
        merged.insert(name.clone(), value.trim().to_owned());
    }
    merged.retain(|_, v| !v.is_empty());
    for spec in &manifest.credential_fields {
        let value = merged.get(&spec.name);
        let Some(value) = value else {
            if spec.required {
                return Err(field_error(
                    &spec.name,
                    format!("{} ({}) is required", spec.label, spec.name),
                ));
            }
            continue;
        };
        if value.len() > 64 * 1024 {
            return Err(field_error(&spec.name, "is longer than 64 KiB"));
        }
        if let Some(prefixes) = &spec.value_prefix {
            let (expected, other, other_env) = match environment {
                Environment::Test => (&prefixes.test, &prefixes.live, "live"),
                Environment::Live => (&prefixes.live, &prefixes.test, "test"),
            };
            if !value.starts_with(expected.as_str()) {
                let why = if value.starts_with(other.as_str()) {
                    format!(
                        "starts with {other:?}, which is a {other_env} key, but this is a {} \
                         credential: use the key that starts with {expected:?}, or save it \
                         with a {other_env} API key",
                        environment.as_str()
                    )
                } else {
                    format!(
                        "must start with {expected:?} in the {} environment",
                        environment.as_str()
                    )
                };
                return Err(field_error(&spec.name, why));
            }
        }
    }
    check_pems(manifest, &merged)?;
    Ok(merged)
}

/// Parses the certificate fields and checks the certificate against its key and the clock.
fn check_pems(
    manifest: &runtime::Manifest,
    fields: &BTreeMap<String, String>,
) -> Result<(), FieldError> {
    use runtime::FieldKind;
    let of_kind = |kind: FieldKind| {
        manifest
            .credential_fields
            .iter()
            .find(|f| f.kind == kind)
            .and_then(|f| fields.get(&f.name).map(|v| (f.name.as_str(), v.as_str())))
    };
    let (field, pem) = match (
        of_kind(FieldKind::ClientIdentity),
        of_kind(FieldKind::ClientCertificate),
        of_kind(FieldKind::ClientPrivateKey),
    ) {
        (Some((name, pem)), _, _) => (name, pem.to_owned()),
        (None, Some((cert_name, cert)), Some((key_name, key))) => {
            runtime::check_private_key_pem(key).map_err(|m| field_error(key_name, m))?;
            (cert_name, format!("{cert}\n{key}"))
        }
        (None, Some((cert_name, cert)), None) => {
            runtime::check_certificate_pem(cert).map_err(|m| field_error(cert_name, m))?;
            return Ok(());
        }
        _ => return Ok(()),
    };
    runtime::check_identity_pem(&pem, time::OffsetDateTime::now_utc())
        .map_err(|m| field_error(field, m))
}

/// Splits validated fields into what is stored in clear and what is sealed.
pub fn seal(
    vault: &Vault,
    manifest: &runtime::Manifest,
    credential_id: &str,
    fields: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut public = BTreeMap::new();
    let mut sealed = BTreeMap::new();
    for spec in &manifest.credential_fields {
        let Some(value) = fields.get(&spec.name) else {
            continue;
        };
        if is_secret(spec.kind) {
            let aad = Aad::new("credentials", credential_id, &spec.name);
            sealed.insert(spec.name.clone(), vault.seal(value.as_bytes(), &aad));
        } else {
            public.insert(spec.name.clone(), value.clone());
        }
    }
    (public, sealed)
}

/// Every field of a stored credential, secrets opened.
pub fn open_fields(
    vault: &Vault,
    record: &CredentialRecord,
) -> Result<BTreeMap<String, String>, VaultError> {
    let mut fields = record.public_fields.clone();
    for (name, sealed) in &record.sealed_fields {
        let aad = Aad::new("credentials", &record.id, name);
        fields.insert(name.clone(), vault.open_string(sealed, &aad)?.to_string());
    }
    Ok(fields)
}

pub fn webhook_token_aad(credential_id: &str) -> Aad {
    Aad::new("credentials", credential_id, "webhook-token")
}

/// Whether the webhook URL given to the PSP carries the token (see [`webhook_url`]).
pub fn token_in_url(manifest: &runtime::Manifest) -> bool {
    token_header(manifest).is_none()
}

/// The header in which the PSP sends the host's token, when the manifest names one.
pub fn token_header(manifest: &runtime::Manifest) -> Option<&str> {
    match &manifest.webhook_auth {
        runtime::WebhookAuth::HeaderToken(header) => Some(header),
        _ => None,
    }
}

/// The URL a PSP notifies for this credential.
pub fn webhook_url(
    base_url: &str,
    record: &CredentialRecord,
    token: &str,
    url_token: bool,
) -> String {
    let base = format!(
        "{}/api/wh/{}",
        base_url.trim_end_matches('/'),
        record.webhook_id
    );
    if url_token {
        format!("{base}?token={token}")
    } else {
        base
    }
}

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
        id: record.id.clone(),
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
            record.id.clone(),
            record.updated_at,
            adapter.version().to_owned(),
        );
        if let Some(hit) = self.entries.lock().get(&key) {
            return Ok(hit.clone());
        }
        let fields = open_fields(vault, record)?;
        let token =
            vault.open_string(&record.webhook_token_sealed, &webhook_token_aad(&record.id))?;
        let credential = runtime_credential(adapter, base_url, record, fields, &token);
        let prepared = Arc::new(adapter.prepare(&credential));
        let mut entries = self.entries.lock();
        // Stale versions of this credential go; the map stays as small as the live credentials.
        entries.retain(|(id, ..), _| id != &record.id);
        entries.insert(key, prepared.clone());
        Ok(prepared)
    }
}

/// Re-encrypts every stored secret under the vault's current key: `pixgw vault rotate`.
/// Returns (credentials examined, values re-encrypted).
pub async fn rotate_all(
    store: &crate::store::Store,
    vault: &Vault,
) -> anyhow::Result<(usize, usize)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{
        Capabilities, CredentialField, EnvironmentPrefixes, FieldKind, Manifest, WebhookAuth,
    };

    fn manifest() -> Manifest {
        let field = |name: &str, kind, value_prefix| CredentialField {
            name: name.into(),
            label: name.into(),
            kind,
            required: true,
            multiline: false,
            help: None,
            value_prefix,
        };
        Manifest {
            id: "stripe-like".into(),
            display_name: "Stripe-like".into(),
            kind: "processor".into(),
            wit_version: "1.0.0".into(),
            credential_fields: vec![
                field(
                    "secret-key",
                    FieldKind::Secret,
                    Some(EnvironmentPrefixes {
                        test: "sk_test_".into(),
                        live: "sk_live_".into(),
                    }),
                ),
                CredentialField {
                    required: false,
                    ..field("note", FieldKind::Text, None)
                },
            ],
            required_payer_fields: vec![],
            endpoints: vec![],
            webhook_auth: WebhookAuth::PspSignature,
            capabilities: Capabilities::empty(),
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_key_for_the_other_environment_is_refused_naming_the_fix() {
        let m = manifest();
        let err = validate(
            &m,
            Environment::Live,
            &fields(&[("secret-key", "sk_test_abc")]),
            None,
        )
        .unwrap_err();
        assert_eq!(err.field, "secret-key");
        assert_eq!(
            err.message,
            "starts with \"sk_test_\", which is a test key, but this is a live credential: use the \
             key that starts with \"sk_live_\", or save it with a test API key"
        );
        let err = validate(
            &m,
            Environment::Test,
            &fields(&[("secret-key", "rk_abc")]),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "must start with \"sk_test_\" in the test environment"
        );
        let ok = validate(
            &m,
            Environment::Test,
            &fields(&[("secret-key", "  sk_test_abc ")]),
            None,
        )
        .unwrap();
        assert_eq!(
            ok,
            fields(&[("secret-key", "sk_test_abc")]),
            "values are trimmed"
        );
    }

    #[test]
    fn required_unknown_and_kept_fields() {
        let m = manifest();
        let err = validate(&m, Environment::Test, &fields(&[]), None).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.message.as_str()),
            ("secret-key", "secret-key (secret-key) is required")
        );
        let err = validate(&m, Environment::Test, &fields(&[("sekret", "x")]), None).unwrap_err();
        assert_eq!(err.field, "sekret");
        assert!(
            err.message.ends_with("the fields are: secret-key, note"),
            "{}",
            err.message
        );
        // An update may omit a saved field; an empty value removes an optional one.
        let saved = fields(&[("secret-key", "sk_test_1"), ("note", "n")]);
        let merged = validate(
            &m,
            Environment::Test,
            &fields(&[("note", "")]),
            Some(&saved),
        )
        .unwrap();
        assert_eq!(merged, fields(&[("secret-key", "sk_test_1")]));
    }

    #[test]
    fn secrets_are_sealed_and_bound_to_their_record() {
        let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let vault = Vault::new(crate::vault::MasterKey::from_base64(key).unwrap(), vec![]);
        let m = manifest();
        let (public, sealed) = seal(
            &vault,
            &m,
            "cred_1",
            &fields(&[("secret-key", "sk_test_1"), ("note", "n")]),
        );
        assert_eq!(public, fields(&[("note", "n")]));
        assert!(!sealed["secret-key"].contains("sk_test_1"));
        let record = CredentialRecord {
            id: "cred_1".into(),
            merchant_id: "mer".into(),
            environment: Environment::Test,
            provider: "stripe-like".into(),
            label: "x".into(),
            public_fields: public,
            sealed_fields: sealed,
            webhook_id: "w".into(),
            webhook_token_sealed: String::new(),
            active: true,
            position: 0,
            route_limit: 1,
            created_at: 0,
            updated_at: 0,
        };
        assert_eq!(
            open_fields(&vault, &record).unwrap()["secret-key"],
            "sk_test_1"
        );
        let moved = CredentialRecord {
            id: "cred_2".into(),
            ..record
        };
        assert!(matches!(
            open_fields(&vault, &moved),
            Err(VaultError::Tampered)
        ));
    }
}
