//! A credential's fields as the adapter's manifest describes them: checking what the merchant
//! sent ([`validate`]), splitting it into what is stored in clear and what is sealed
//! ([`seal`]), and opening it again ([`open_fields`]).
//!
//! Validation refuses unknown and missing fields, values over 64 KiB, PEMs that do not parse,
//! a certificate that does not match its key or has expired, and a key whose prefix belongs to
//! the other environment. Each refusal is a [`FieldError`] naming the field and the
//! [`FieldProblem`], so the API can phrase it in English and the dashboard in its language.

use std::collections::BTreeMap;
use std::fmt;

use crate::domain::Environment;
use crate::runtime::{self, FieldKind};
use crate::store::credentials::CredentialRecord;
use crate::vault::{Aad, Vault, VaultError};

/// The longest value a field may hold: a certificate chain fits with room to spare.
pub const MAX_FIELD_BYTES: usize = 64 * 1024;

/// A field the merchant sent that cannot be saved, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's name, as the manifest declares it.
    pub field: String,
    pub problem: FieldProblem,
}

/// Why a field's value cannot be saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldProblem {
    /// The adapter has no such field.
    Unknown {
        provider: String,
        known: Vec<String>,
    },
    Required {
        label: String,
    },
    TooLong,
    /// The value starts with the other environment's prefix (`sk_live_` in test).
    OtherEnvironment {
        /// The credential's environment.
        environment: Environment,
        found: String,
        expected: String,
    },
    /// The value does not start with this environment's prefix.
    WrongPrefix {
        environment: Environment,
        expected: String,
    },
    /// A PEM that does not parse, a certificate that does not match its key or is not valid
    /// now: the check's own words.
    Pem(String),
}

impl FieldError {
    /// The API's wording, e.g. `must start with "sk_test_" in the test environment`.
    pub fn message(&self) -> String {
        match &self.problem {
            FieldProblem::Unknown { provider, known } => format!(
                "{provider} credentials have no field {:?}; the fields are: {}",
                self.field,
                known.join(", ")
            ),
            FieldProblem::Required { label } => format!("{label} ({}) is required", self.field),
            FieldProblem::TooLong => "is longer than 64 KiB".to_owned(),
            FieldProblem::OtherEnvironment {
                environment,
                found,
                expected,
            } => {
                let other = other_environment(*environment).as_str();
                format!(
                    "starts with {found:?}, which is a {other} key, but this is a {} \
                     credential: use the key that starts with {expected:?}, or save it with a \
                     {other} API key",
                    environment.as_str()
                )
            }
            FieldProblem::WrongPrefix {
                environment,
                expected,
            } => format!(
                "must start with {expected:?} in the {} environment",
                environment.as_str()
            ),
            FieldProblem::Pem(message) => message.clone(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl std::error::Error for FieldError {}

/// The environment a key of `environment`'s credential must not come from.
pub fn other_environment(environment: Environment) -> Environment {
    match environment {
        Environment::Test => Environment::Live,
        Environment::Live => Environment::Test,
    }
}
fn field_error(field: &str, problem: FieldProblem) -> FieldError {
    FieldError {
        field: field.to_owned(),
        problem,
    }
}

/// Whether a field is sealed at rest.
pub fn is_secret(kind: FieldKind) -> bool {
    matches!(
        kind,
        FieldKind::Secret | FieldKind::ClientPrivateKey | FieldKind::ClientIdentity
    )
}

/// Checks `fields` against the manifest for `environment`. `existing` are the fields already
/// saved (on an update, omitted fields keep their value; an empty value removes one).
pub fn validate(
    manifest: &runtime::Manifest,
    environment: Environment,
    fields: &BTreeMap<String, String>,
    existing: Option<&BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, FieldError> {
    let known: Vec<String> = manifest
        .credential_fields
        .iter()
        .map(|f| f.name.clone())
        .collect();
    if let Some(unknown) = fields.keys().find(|k| !known.contains(k)) {
        return Err(field_error(
            unknown,
            FieldProblem::Unknown {
                provider: manifest.id.clone(),
                known,
            },
        ));
    }
    let mut merged = existing.cloned().unwrap_or_default();
    for (name, value) in fields {
        merged.insert(name.clone(), value.trim().to_owned());
    }
    merged.retain(|_, v| !v.is_empty());
    for spec in &manifest.credential_fields {
        let Some(value) = merged.get(&spec.name) else {
            if spec.required {
                return Err(field_error(
                    &spec.name,
                    FieldProblem::Required {
                        label: spec.label.clone(),
                    },
                ));
            }
            continue;
        };
        if value.len() > MAX_FIELD_BYTES {
            return Err(field_error(&spec.name, FieldProblem::TooLong));
        }
        if let Some(prefixes) = &spec.value_prefix {
            let (expected, other) = match environment {
                Environment::Test => (&prefixes.test, &prefixes.live),
                Environment::Live => (&prefixes.live, &prefixes.test),
            };
            if !value.starts_with(expected.as_str()) {
                let problem = if value.starts_with(other.as_str()) {
                    FieldProblem::OtherEnvironment {
                        environment,
                        found: other.clone(),
                        expected: expected.clone(),
                    }
                } else {
                    FieldProblem::WrongPrefix {
                        environment,
                        expected: expected.clone(),
                    }
                };
                return Err(field_error(&spec.name, problem));
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
    let of_kind = |kind: FieldKind| {
        manifest
            .credential_fields
            .iter()
            .find(|f| f.kind == kind)
            .and_then(|f| fields.get(&f.name).map(|v| (f.name.as_str(), v.as_str())))
    };
    let pem_error = |field: &str, message: String| field_error(field, FieldProblem::Pem(message));
    let (field, pem) = match (
        of_kind(FieldKind::ClientIdentity),
        of_kind(FieldKind::ClientCertificate),
        of_kind(FieldKind::ClientPrivateKey),
    ) {
        (Some((name, pem)), _, _) => (name, pem.to_owned()),
        (None, Some((cert_name, cert)), Some((key_name, key))) => {
            runtime::check_private_key_pem(key).map_err(|m| pem_error(key_name, m))?;
            (cert_name, format!("{cert}\n{key}"))
        }
        (None, Some((cert_name, cert)), None) => {
            runtime::check_certificate_pem(cert).map_err(|m| pem_error(cert_name, m))?;
            return Ok(());
        }
        _ => return Ok(()),
    };
    runtime::check_identity_pem(&pem, time::OffsetDateTime::now_utc())
        .map_err(|m| pem_error(field, m))
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
        let aad = Aad::new("credentials", record.id.as_str(), name);
        fields.insert(name.clone(), vault.open_string(sealed, &aad)?.to_string());
    }
    Ok(fields)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runtime::{
        Capabilities, CredentialField, EnvironmentPrefixes, FieldKind, Manifest, WebhookAuth,
    };

    /// A Stripe-like manifest: one prefixed secret key, one optional note.
    pub(crate) fn manifest() -> Manifest {
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

    pub(crate) fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
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
            err.problem,
            FieldProblem::OtherEnvironment {
                environment: Environment::Live,
                found: "sk_test_".into(),
                expected: "sk_live_".into(),
            }
        );
        assert_eq!(
            err.message(),
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
            err.message(),
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
    fn required_unknown_long_and_kept_fields() {
        let m = manifest();
        let err = validate(&m, Environment::Test, &fields(&[]), None).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.message().as_str()),
            ("secret-key", "secret-key (secret-key) is required")
        );
        let err = validate(&m, Environment::Test, &fields(&[("sekret", "x")]), None).unwrap_err();
        assert_eq!(err.field, "sekret");
        assert_eq!(
            err.message(),
            "stripe-like credentials have no field \"sekret\"; the fields are: secret-key, note"
        );
        let long = "n".repeat(MAX_FIELD_BYTES + 1);
        let err = validate(
            &m,
            Environment::Test,
            &fields(&[("secret-key", "sk_test_1"), ("note", &long)]),
            None,
        )
        .unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.message().as_str()),
            ("note", "is longer than 64 KiB")
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
        let id = crate::domain::CredentialId::generate();
        let (public, sealed) = seal(
            &vault,
            &m,
            id.as_str(),
            &fields(&[("secret-key", "sk_test_1"), ("note", "n")]),
        );
        assert_eq!(public, fields(&[("note", "n")]));
        assert!(!sealed["secret-key"].contains("sk_test_1"));
        let record = CredentialRecord {
            id,
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
            version: 1,
        };
        assert_eq!(
            open_fields(&vault, &record).unwrap()["secret-key"],
            "sk_test_1"
        );
        let moved = CredentialRecord {
            id: crate::domain::CredentialId::generate(),
            ..record
        };
        assert!(matches!(
            open_fields(&vault, &moved),
            Err(VaultError::Tampered)
        ));
    }
}
