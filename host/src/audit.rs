//! The audit log: every change, from the dashboard, the API or the gateway itself, with who
//! made it ([`Actor`]), when, from where, on what, and a summary that never holds a secret.
//! Services call [`record`] after the change they make; the audit page reads
//! [`crate::store::audit`].

use crate::charges::Caller;
use crate::store::audit::AuditRecord;
use crate::store::{Store, now_ms};

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A person signed in to the dashboard.
    User { id: String, email: String },
    /// An API key (its id, and the prefix a person recognises).
    ApiKey { id: String, prefix: String },
    /// The gateway itself (a sweeper, the reconciler, the operator's CLI).
    System,
}

impl Actor {
    pub fn kind(&self) -> &'static str {
        match self {
            Actor::User { .. } => "user",
            Actor::ApiKey { .. } => "api_key",
            Actor::System => "system",
        }
    }

    pub fn id(&self) -> Option<&str> {
        match self {
            Actor::User { id, .. } | Actor::ApiKey { id, .. } => Some(id),
            Actor::System => None,
        }
    }

    pub fn label(&self) -> String {
        match self {
            Actor::User { email, .. } => email.clone(),
            Actor::ApiKey { prefix, .. } => format!("API key {prefix}…"),
            Actor::System => "system".into(),
        }
    }
}

/// What was changed: `("credential", "cred_…")`.
pub type Target<'a> = Option<(&'a str, &'a str)>;

/// Records one change made by `caller`. A failure to write is logged and returned: the
/// change itself has happened, and the caller decides whether to surface it.
pub async fn record(
    store: &Store,
    caller: &Caller,
    action: &str,
    target: Target<'_>,
    summary: impl Into<String>,
) -> Result<(), crate::store::StoreError> {
    let entry = AuditRecord {
        id: format!("aud_{}", uuid::Uuid::now_v7().simple()),
        merchant_id: caller.merchant_id.clone(),
        actor_kind: caller.actor.kind().into(),
        actor_id: caller.actor.id().map(str::to_owned),
        actor_label: caller.actor.label(),
        action: action.to_owned(),
        target_kind: target.map(|(kind, _)| kind.to_owned()),
        target_id: target.map(|(_, id)| id.to_owned()),
        summary: summary.into(),
        ip: caller.ip.map(|ip| ip.to_string()),
        environment: Some(caller.environment.as_str().to_owned()),
        created_at: now_ms(),
    };
    store.insert_audit(&entry).await.inspect_err(|e| {
        tracing::error!(action, merchant = %caller.merchant_id, error = %e, "audit entry not written")
    })
}
