//! PSP credentials: a merchant's account at one PSP, as the adapter's manifest describes it, and
//! the one place that connects, changes, reorders and removes them, for the API
//! (`api::credentials`) and the dashboard (`web::psps`) alike. HTTP-free: callers map
//! [`CredentialError`] to their answers. Every change is written to the audit log with the
//! caller's actor.
//!
//! - [`fields`]: fields checked against the manifest; secrets sealed by the vault.
//! - [`checks`]: trying a credential at its PSP, registering its webhook URL there.
//! - [`webhook`]: the webhook URL and token, and how the PSP is set up to use them.
//! - [`prepared`]: credentials made ready for adapter calls, cached.
//! - [`rotation`]: re-encryption under a new master key.

pub mod checks;
pub mod fields;
pub mod prepared;
pub mod rotation;
pub mod webhook;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use zeroize::Zeroizing;

pub use fields::{FieldError, FieldProblem, MAX_FIELD_BYTES, open_fields, seal, validate};
pub use prepared::{PreparedCache, runtime_credential};
pub use rotation::rotate_all;
pub use webhook::{WebhookSetup, token_header, token_in_url, webhook_token_aad, webhook_url};

use crate::app::App;
use crate::audit;
use crate::charges::Caller;
use crate::domain::{CredentialId, Reference};
use crate::runtime::CallError;
use crate::store::credentials::Saved;
pub use crate::store::credentials::{
    CredentialChecks, CredentialRecord, Registration, RegistrationStatus, Verification,
    VerificationStatus,
};
use crate::store::{StoreError, now_ms};
use crate::vault::VaultError;

/// A label has 1 to this many characters, after trimming.
pub const MAX_LABEL_CHARS: usize = 100;
/// Consecutive charges a credential may take in a round robin before the turn passes on.
pub const ROUTE_LIMITS: RangeInclusive<i64> = 1..=1000;
/// Positions a caller may give; the dashboard's moves renumber from 0.
pub const POSITIONS: RangeInclusive<i64> = 0..=1_000_000;

/// Why a credential was not connected or changed.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("no PSP adapter {provider:?} is installed")]
    UnknownProvider {
        provider: String,
        available: Vec<String>,
    },
    /// New fields cannot be checked without the credential's adapter.
    #[error("the {provider} adapter is not installed")]
    AdapterMissing { provider: String },
    #[error(transparent)]
    Field(#[from] FieldError),
    /// The PSP refused the credential when it was tried; nothing was saved.
    #[error("{provider} refused the credential: {error}")]
    Refused { provider: String, error: CallError },
    /// No such credential for this merchant and environment.
    #[error("no such credential")]
    NotFound,
    /// Someone else changed the credential since the caller read it: nothing was saved.
    #[error(
        "the credential was changed since version {expected} was read (it is at version \
         {current} now): read it again and repeat the change"
    )]
    Conflict { expected: i64, current: i64 },
    /// The merchant's plan has no room for one more connected PSP in this environment.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("vault: {0}")]
    Vault(#[from] VaultError),
}

/// A credential to connect, its values already within their ranges.
#[derive(Debug, Clone)]
pub struct NewCredential {
    pub provider: String,
    /// `None`: the PSP's display name.
    pub label: Option<String>,
    pub fields: BTreeMap<String, String>,
    /// `None`: after the merchant's other credentials.
    pub position: Option<i64>,
    pub route_limit: i64,
    /// Try the credential at the PSP before saving it, when the adapter can.
    pub verify: bool,
    /// Register the webhook URL at the PSP, when the adapter can.
    pub register_webhook: bool,
}

/// What to change of a credential; `None` keeps the value. The default changes nothing and
/// would try new fields at the PSP.
#[derive(Debug, Clone)]
pub struct CredentialChange {
    pub label: Option<String>,
    pub active: Option<bool>,
    pub position: Option<i64>,
    pub route_limit: Option<i64>,
    /// New values; omitted fields keep theirs, an empty value removes an optional one.
    pub fields: Option<BTreeMap<String, String>>,
    /// Try new fields at the PSP before saving them.
    pub verify: bool,
    /// Register the webhook URL again; `None`: when the fields change.
    pub register_webhook: Option<bool>,
    /// The version the caller's view was read at (`If-Match`, a form's hidden field): the
    /// change is refused with [`CredentialError::Conflict`] if the credential moved on since.
    /// `None`: the version [`update`] is given, so a change made between that read and the
    /// write is still never undone.
    pub expected_version: Option<i64>,
}

impl Default for CredentialChange {
    fn default() -> Self {
        CredentialChange {
            label: None,
            active: None,
            position: None,
            route_limit: None,
            fields: None,
            verify: true,
            register_webhook: None,
            expected_version: None,
        }
    }
}

/// A credential as the merchant sees it.
pub struct CredentialView {
    pub record: CredentialRecord,
    /// The PSP's name from its manifest; the provider id when its adapter is not loaded.
    pub psp_name: String,
    pub webhook: WebhookView,
    /// How trying the fields at the PSP went when they were last saved.
    pub verification: Option<Verification>,
}

/// Where and how the PSP notifies for a credential.
pub struct WebhookView {
    /// Register this URL at the PSP; it carries the token unless `header` is set.
    pub url: String,
    /// The token that authenticates notifications (a secret).
    pub token: Zeroizing<String>,
    /// The header the PSP is configured to send the token in.
    pub header: Option<String>,
    pub registration: Option<Registration>,
    /// `None` when the adapter is not loaded.
    pub setup: Option<WebhookSetup>,
}

impl WebhookView {
    /// The URL with the token hidden, for people who may not read the token.
    pub fn masked_url(&self) -> String {
        match self.url.split_once("?token=") {
            Some((base, _)) => format!("{base}?token=••••••••"),
            None => self.url.clone(),
        }
    }
}

/// What [`update`] did.
pub struct Updated {
    pub view: CredentialView,
    /// The verification of new fields, when this change tried them.
    pub verification: Option<Verification>,
}

/// A step in the routing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
}

/// Connects an account at a PSP: fields checked, tried at the PSP (a refusal saves nothing),
/// saved with a new webhook URL and token, the URL registered at the PSP when the adapter can.
pub async fn connect(
    app: &App,
    caller: &Caller,
    new: NewCredential,
) -> Result<CredentialView, CredentialError> {
    let adapter =
        app.runtime
            .adapter(&new.provider)
            .ok_or_else(|| CredentialError::UnknownProvider {
                provider: new.provider.clone(),
                available: app.runtime.providers(),
            })?;
    let manifest = adapter.manifest();
    let fields = validate(manifest, caller.environment, &new.fields, None)?;
    // A full plan is said before the PSP is asked; the insert asks again, atomically.
    app.store
        .admits(
            &caller.merchant_id,
            caller.environment,
            crate::plans::Resource::Psps,
        )
        .await??;
    let position = match new.position {
        Some(position) => position,
        None => app
            .store
            .credentials(&caller.merchant_id, caller.environment)
            .await?
            .iter()
            .map(|c| c.position + 1)
            .max()
            .unwrap_or(0),
    };

    let id = CredentialId::generate();
    let token = Reference::generate().to_string();
    let (public_fields, sealed_fields) = seal(&app.vault, manifest, id.as_str(), &fields);
    let now = now_ms();
    let record = CredentialRecord {
        webhook_token_sealed: app
            .vault
            .seal(token.as_bytes(), &webhook_token_aad(id.as_str())),
        id,
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        provider: new.provider.clone(),
        label: new.label.unwrap_or_else(|| manifest.display_name.clone()),
        public_fields,
        sealed_fields,
        webhook_id: uuid::Uuid::new_v4().to_string(),
        active: true,
        position,
        route_limit: new.route_limit,
        created_at: now,
        updated_at: now,
        version: 1,
    };
    let verification = if new.verify {
        checks::verify(app, &adapter, &record, fields, &token)
            .await
            .map_err(|error| refused(&record, error))?
    } else {
        checks::skipped()
    };
    app.store.insert_credential(&record).await??;
    app.store
        .set_verification(record.id.as_str(), &verification)
        .await?;
    let registration = checks::register(app, &adapter, &record, new.register_webhook).await?;
    audit::record(
        &app.store,
        caller,
        "credential.connect",
        Some(("credential", record.id.as_str())),
        format!(
            "connected {} {:?}: verification {}, webhook {}",
            record.provider,
            record.label,
            verification.status.as_str(),
            registration.status.as_str()
        ),
    )
    .await?;
    view(
        app,
        record,
        CredentialChecks {
            verification: Some(verification),
            registration: Some(registration),
        },
    )
}

/// The merchant's credentials in the caller's environment, in routing order.
pub async fn list(app: &App, caller: &Caller) -> Result<Vec<CredentialView>, CredentialError> {
    let records = app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?;
    let mut checks = app
        .store
        .credentials_checks(&caller.merchant_id, caller.environment)
        .await?;
    records
        .into_iter()
        .map(|record| {
            let checks = checks.remove(record.id.as_str()).unwrap_or_default();
            view(app, record, checks)
        })
        .collect()
}

/// The credential `id` of the caller's merchant and environment.
pub async fn find(
    app: &App,
    caller: &Caller,
    id: &str,
) -> Result<CredentialRecord, CredentialError> {
    app.store
        .credential(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or(CredentialError::NotFound)
}

pub async fn get(app: &App, caller: &Caller, id: &str) -> Result<CredentialView, CredentialError> {
    let record = find(app, caller, id).await?;
    let checks = app.store.credential_checks(record.id.as_str()).await?;
    view(app, record, checks)
}

/// Changes a credential found with [`find`]. New fields are checked and tried at the PSP
/// first, as on connect: a refusal changes nothing.
pub async fn update(
    app: &App,
    caller: &Caller,
    mut record: CredentialRecord,
    change: CredentialChange,
) -> Result<Updated, CredentialError> {
    // Checked before the PSP is asked anything: a stale form costs no PSP call.
    if let Some(expected) = change.expected_version
        && expected != record.version
    {
        return Err(CredentialError::Conflict {
            expected,
            current: record.version,
        });
    }
    let before = record.clone();
    if let Some(label) = change.label {
        record.label = label;
    }
    if let Some(active) = change.active {
        record.active = active;
    }
    if let Some(position) = change.position {
        record.position = position;
    }
    if let Some(route_limit) = change.route_limit {
        record.route_limit = route_limit;
    }
    let fields_changed = change.fields.is_some();
    let mut tried = None;
    let mut replaced = Vec::new();
    if let Some(fields) = change.fields {
        let adapter = app.runtime.adapter(&record.provider).ok_or_else(|| {
            CredentialError::AdapterMissing {
                provider: record.provider.clone(),
            }
        })?;
        let existing = open_fields(&app.vault, &record)?;
        let merged = validate(
            adapter.manifest(),
            caller.environment,
            &fields,
            Some(&existing),
        )?;
        replaced = changed_names(&existing, &merged);
        tried = Some(if change.verify {
            let token = app.vault.open_string(
                &record.webhook_token_sealed,
                &webhook_token_aad(record.id.as_str()),
            )?;
            checks::verify(app, &adapter, &record, merged.clone(), &token)
                .await
                .map_err(|error| refused(&record, error))?
        } else {
            checks::skipped()
        });
        (record.public_fields, record.sealed_fields) =
            seal(&app.vault, adapter.manifest(), record.id.as_str(), &merged);
    }
    record.updated_at = now_ms().max(record.updated_at + 1);
    if app.store.update_credential(&record, fields_changed).await? == Saved::Conflict {
        let current = find(app, caller, record.id.as_str()).await?;
        return Err(CredentialError::Conflict {
            expected: record.version,
            current: current.version,
        });
    }
    record.version += 1;
    if let Some(outcome) = &tried {
        app.store
            .set_verification(record.id.as_str(), outcome)
            .await?;
    }
    // The answer tells the verification only when this change asked for one.
    let verification = tried.filter(|_| change.verify);
    // New fields (another Pix key, another account) need the webhook registered again.
    let register_again = (fields_changed && change.register_webhook != Some(false))
        || change.register_webhook == Some(true);
    let mut registration = None;
    if register_again && let Some(adapter) = app.runtime.adapter(&record.provider) {
        registration = Some(checks::register(app, &adapter, &record, true).await?);
    }

    let target = Some(("credential", record.id.as_str()));
    if before.active != record.active {
        let (action, verb) = match record.active {
            true => ("credential.activate", "activated"),
            false => ("credential.deactivate", "deactivated"),
        };
        let summary = format!("{} {:?} {verb}", record.provider, record.label);
        audit::record(&app.store, caller, action, target, summary).await?;
    }
    let changes = describe_changes(&before, &record, &replaced, registration.as_ref());
    if !changes.is_empty() {
        let summary = format!(
            "{} {:?}: {}",
            record.provider,
            record.label,
            changes.join("; ")
        );
        audit::record(&app.store, caller, "credential.update", target, summary).await?;
    }
    let checks = app.store.credential_checks(record.id.as_str()).await?;
    Ok(Updated {
        view: view(app, record, checks)?,
        verification,
    })
}

/// Moves a credential one step in the routing order; the merchant's credentials are
/// renumbered 0, 1, 2… Moving the first up or the last down changes nothing.
pub async fn reorder(
    app: &App,
    caller: &Caller,
    id: &str,
    step: Move,
) -> Result<(), CredentialError> {
    let records = app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?;
    let Some(at) = records.iter().position(|r| r.id.as_str() == id) else {
        return Err(CredentialError::NotFound);
    };
    let Some(to) = step_target(at, records.len(), step) else {
        return Ok(());
    };
    let mut order: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    order.swap(at, to);
    app.store
        .reorder_credentials(&caller.merchant_id, caller.environment, &order, now_ms())
        .await?;
    let record = &records[at];
    let summary = format!(
        "{} {:?} moved {}: position {} of {}",
        record.provider,
        record.label,
        match step {
            Move::Up => "up",
            Move::Down => "down",
        },
        to + 1,
        order.len()
    );
    audit::record(
        &app.store,
        caller,
        "credential.reorder",
        Some(("credential", id)),
        summary,
    )
    .await?;
    Ok(())
}

/// Removes a credential: no new charge uses it; its charges keep their history.
pub async fn remove(app: &App, caller: &Caller, id: &str) -> Result<(), CredentialError> {
    let record = find(app, caller, id).await?;
    if !app
        .store
        .delete_credential(&caller.merchant_id, caller.environment, id)
        .await?
    {
        return Err(CredentialError::NotFound);
    }
    audit::record(
        &app.store,
        caller,
        "credential.delete",
        Some(("credential", id)),
        format!("{} {:?} removed", record.provider, record.label),
    )
    .await?;
    Ok(())
}

fn refused(record: &CredentialRecord, error: CallError) -> CredentialError {
    CredentialError::Refused {
        provider: record.provider.clone(),
        error,
    }
}

fn view(
    app: &App,
    record: CredentialRecord,
    checks: CredentialChecks,
) -> Result<CredentialView, CredentialError> {
    let token = app.vault.open_string(
        &record.webhook_token_sealed,
        &webhook_token_aad(record.id.as_str()),
    )?;
    let adapter = app.runtime.adapter(&record.provider);
    let manifest = adapter.as_ref().map(|a| a.manifest());
    let header = manifest.and_then(|m| token_header(m).map(str::to_owned));
    Ok(CredentialView {
        psp_name: manifest.map_or_else(|| record.provider.clone(), |m| m.display_name.clone()),
        webhook: WebhookView {
            url: webhook_url(&app.config.base_url, &record, &token, header.is_none()),
            token,
            header,
            registration: checks.registration,
            setup: manifest.map(WebhookSetup::of),
        },
        verification: checks.verification,
        record,
    })
}

/// Where the credential at index `at` of `len` goes one step up or down; `None` at the ends.
fn step_target(at: usize, len: usize, step: Move) -> Option<usize> {
    match step {
        Move::Up => at.checked_sub(1),
        Move::Down => (at + 1 < len).then_some(at + 1),
    }
}

/// Names of the fields whose value differs: what the audit log may say of them.
fn changed_names(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// What an update changed, for the audit log: settings with their values, fields by name
/// only (their values may be secrets).
fn describe_changes(
    before: &CredentialRecord,
    after: &CredentialRecord,
    replaced: &[String],
    registration: Option<&Registration>,
) -> Vec<String> {
    let mut changes = Vec::new();
    if before.label != after.label {
        changes.push(format!("label {:?} → {:?}", before.label, after.label));
    }
    if before.position != after.position {
        changes.push(format!("position {} → {}", before.position, after.position));
    }
    if before.route_limit != after.route_limit {
        changes.push(format!(
            "route limit {} → {}",
            before.route_limit, after.route_limit
        ));
    }
    if !replaced.is_empty() {
        changes.push(format!("fields changed: {}", replaced.join(", ")));
    }
    if let Some(registration) = registration {
        changes.push(format!(
            "webhook registration {}",
            registration.status.as_str()
        ));
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Environment;

    #[test]
    fn moves_go_one_step_and_stop_at_the_ends() {
        assert_eq!(step_target(1, 3, Move::Up), Some(0));
        assert_eq!(step_target(1, 3, Move::Down), Some(2));
        assert_eq!(step_target(0, 3, Move::Up), None);
        assert_eq!(step_target(2, 3, Move::Down), None);
        assert_eq!(step_target(0, 1, Move::Down), None);
    }

    fn record() -> CredentialRecord {
        CredentialRecord {
            id: crate::domain::CredentialId::generate(),
            merchant_id: "mer".into(),
            environment: Environment::Test,
            provider: "efi".into(),
            label: "Efí".into(),
            public_fields: Default::default(),
            sealed_fields: Default::default(),
            webhook_id: "w".into(),
            webhook_token_sealed: String::new(),
            active: true,
            position: 0,
            route_limit: 1,
            created_at: 0,
            updated_at: 0,
            version: 1,
        }
    }

    #[test]
    fn the_audit_summary_names_changed_fields_never_their_values() {
        let before = fields::tests::fields(&[("client-secret", "s3cr3t"), ("pix-key", "a@b.c")]);
        let after = fields::tests::fields(&[("client-secret", "n3w"), ("pix-key", "a@b.c")]);
        let replaced = changed_names(&before, &after);
        assert_eq!(replaced, ["client-secret"]);
        let changed = CredentialRecord {
            label: "Efí loja".into(),
            route_limit: 5,
            ..record()
        };
        let changes = describe_changes(&record(), &changed, &replaced, None);
        assert_eq!(
            changes,
            [
                "label \"Efí\" → \"Efí loja\"",
                "route limit 1 → 5",
                "fields changed: client-secret"
            ]
        );
        assert!(!changes.concat().contains("n3w"));
        assert!(describe_changes(&record(), &record(), &[], None).is_empty());
    }

    #[test]
    fn a_masked_url_hides_only_the_token() {
        let webhook = |url: &str| WebhookView {
            url: url.into(),
            token: Zeroizing::new("tok".into()),
            header: None,
            registration: None,
            setup: None,
        };
        assert_eq!(
            webhook("https://gw/api/wh/1?token=tok").masked_url(),
            "https://gw/api/wh/1?token=••••••••"
        );
        assert_eq!(
            webhook("https://gw/api/wh/1").masked_url(),
            "https://gw/api/wh/1"
        );
    }
}
