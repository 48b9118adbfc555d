//! Merchants' API keys, without HTTP: issue one (its plaintext exists only in the answer),
//! list them, revoke one. The operator's CLI (`pixgw key …`) and the dashboard
//! (`web::api_keys`) both call these, and each change is written to the audit log; the API's
//! authentication (`api::auth`) only reads keys.

use crate::audit::{self, Actor};
use crate::charges::Caller;
use crate::domain::{ApiKey, Environment};
use crate::store::api_keys::ApiKeyRecord;
use crate::store::{Store, StoreError};

/// Longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 100;

/// Why a key operation was refused; [`ApiKeyError::code`] names the dashboard's message.
#[derive(Debug, thiserror::Error)]
pub enum ApiKeyError {
    #[error("a key's label has at most {MAX_LABEL_CHARS} characters and no line breaks")]
    Label,
    #[error("there is no active API key {0:?} for this merchant and environment")]
    NotFound(String),
    /// The merchant's plan has no room for one more key in this environment.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ApiKeyError {
    /// The catalog key of the message shown to the person.
    pub fn code(&self) -> &'static str {
        match self {
            ApiKeyError::Label => "api_keys.error.label",
            ApiKeyError::NotFound(_) => "api_keys.error.not_found",
            ApiKeyError::PlanLimit(_) => "error.plan.title",
            ApiKeyError::Store(_) => "error.internal",
        }
    }
}

/// A label as typed: trimmed; empty is no label.
pub fn label(input: &str) -> Result<Option<String>, ApiKeyError> {
    let label = input.trim();
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(ApiKeyError::Label);
    }
    Ok((!label.is_empty()).then(|| label.to_owned()))
}

/// The operator's CLI acting for a merchant: the audit log says `system`.
pub fn operator(merchant_id: &str, environment: Environment) -> Caller {
    Caller {
        merchant_id: merchant_id.to_owned(),
        environment,
        actor: Actor::System,
        ip: None,
    }
}

/// A key just issued: the stored record and the key itself, to be shown once.
pub struct IssuedKey {
    pub record: ApiKeyRecord,
    pub key: ApiKey,
}

/// Issues a key for the caller's merchant in the caller's environment. Only the key's
/// lookup prefix and hash are stored.
pub async fn issue(
    store: &Store,
    caller: &Caller,
    label: Option<&str>,
) -> Result<IssuedKey, ApiKeyError> {
    let label = match label {
        Some(input) => self::label(input)?,
        None => None,
    };
    let key = ApiKey::generate(caller.environment);
    let record = store
        .insert_api_key(
            &caller.merchant_id,
            caller.environment,
            key.lookup_prefix(),
            &key.hash(),
            label.as_deref(),
        )
        .await??;
    audit::record(
        store,
        caller,
        "api_key.create",
        Some(("api_key", &record.id)),
        format!(
            "{} key {}… created{}",
            record.environment,
            record.prefix,
            labelled(&record)
        ),
    )
    .await?;
    Ok(IssuedKey { record, key })
}

/// The merchant's keys of one environment (or both, for the operator), newest first.
pub async fn list(
    store: &Store,
    merchant_id: &str,
    environment: Option<Environment>,
) -> Result<Vec<ApiKeyRecord>, StoreError> {
    store.api_keys(merchant_id, environment).await
}

/// A key by its id, whoever's it is: for the operator's CLI, which then acts for its merchant.
pub async fn find(store: &Store, id: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
    store.api_key(id).await
}

/// Revokes one of the caller's keys (of the caller's environment): requests with it get 401
/// from then on.
pub async fn revoke(store: &Store, caller: &Caller, id: &str) -> Result<ApiKeyRecord, ApiKeyError> {
    let record = store
        .revoke_api_key(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| ApiKeyError::NotFound(id.to_owned()))?;
    audit::record(
        store,
        caller,
        "api_key.revoke",
        Some(("api_key", &record.id)),
        format!(
            "{} key {}… revoked{}",
            record.environment,
            record.prefix,
            labelled(&record)
        ),
    )
    .await?;
    Ok(record)
}

/// ` ("label")` for the audit summary, or nothing.
fn labelled(record: &ApiKeyRecord) -> String {
    record
        .label
        .as_deref()
        .map(|l| format!(" ({l:?})"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_trimmed_and_bounded() {
        assert_eq!(
            label("  loja virtual  ").unwrap().as_deref(),
            Some("loja virtual")
        );
        assert_eq!(label("   ").unwrap(), None);
        assert_eq!(
            label(&"é".repeat(MAX_LABEL_CHARS))
                .unwrap()
                .map(|l| l.chars().count()),
            Some(100)
        );
        assert!(matches!(
            label(&"a".repeat(MAX_LABEL_CHARS + 1)),
            Err(ApiKeyError::Label)
        ));
        assert!(matches!(label("linha\nquebrada"), Err(ApiKeyError::Label)));
    }

    #[test]
    fn the_operator_acts_as_the_system() {
        let caller = operator("mer_1", Environment::Live);
        assert_eq!(caller.merchant_id, "mer_1");
        assert_eq!(caller.environment, Environment::Live);
        assert_eq!(caller.actor, Actor::System);
        assert_eq!(caller.ip, None);
    }
}
