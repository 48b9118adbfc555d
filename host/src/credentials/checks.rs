//! A credential's checks at its PSP, both optional capabilities of the adapter: trying the
//! fields before they are saved ([`verify`]), and registering the webhook URL after
//! ([`register`]). Each outcome is kept on the credential for the merchant to see.

use std::collections::BTreeMap;

use super::CredentialError;
use super::prepared::runtime_credential;
use super::webhook::token_header;
use crate::api::{psp_failure, request_id};
use crate::app::App;
use crate::runtime::{self, CallError, Capabilities, PspError};
use crate::store::credentials::{
    CredentialRecord, Registration, RegistrationStatus, Verification, VerificationStatus,
};
use crate::store::{now_ms, rfc3339};

/// Tries the credential at the PSP when the adapter can. A refusal of the credential itself is
/// the error; a PSP that cannot be reached is only reported.
pub async fn verify(
    app: &App,
    adapter: &runtime::Adapter,
    record: &CredentialRecord,
    fields: BTreeMap<String, String>,
    token: &str,
) -> Result<Verification, CallError> {
    let outcome = |status, message| Verification {
        status,
        message,
        at: now_ms(),
    };
    if !adapter
        .manifest()
        .capabilities
        .contains(Capabilities::CHECK_CREDENTIALS)
    {
        return Ok(outcome(VerificationStatus::Unsupported, None));
    }
    let credential = runtime_credential(adapter, &app.config.base_url, record, fields, token);
    let prepared = adapter.prepare(&credential);
    match adapter
        .check_credentials(&prepared, &request_id::current())
        .await
    {
        Ok(()) => Ok(outcome(VerificationStatus::Ok, None)),
        Err(CallError::Psp {
            error: PspError::Unavailable(e),
            ..
        }) => Ok(outcome(VerificationStatus::Unreachable, Some(e.message))),
        Err(error) => Err(error),
    }
}

/// A verification that did not happen (`verify: false`).
pub fn skipped() -> Verification {
    Verification {
        status: VerificationStatus::Skipped,
        message: None,
        at: now_ms(),
    }
}

/// Registers the credential's webhook URL at the PSP when the adapter can, and keeps the
/// outcome on the credential. A failure is reported, not fatal: the reconciler still settles
/// charges without notifications.
pub async fn register(
    app: &App,
    adapter: &runtime::Adapter,
    record: &CredentialRecord,
    wanted: bool,
) -> Result<Registration, CredentialError> {
    let outcome = |status, message, hint| Registration {
        status,
        message,
        hint,
        at: rfc3339(now_ms()),
    };
    let registration = if !wanted {
        outcome(RegistrationStatus::Skipped, None, None)
    } else if !adapter
        .manifest()
        .capabilities
        .contains(Capabilities::REGISTER_WEBHOOK)
    {
        let provider = &record.provider;
        let message = match token_header(adapter.manifest()) {
            Some(header) => format!(
                "{provider} takes its webhook in its dashboard: set the URL there, with the \
                 header {header} carrying the token"
            ),
            None => format!(
                "{provider} takes its webhook in its dashboard: set the URL there (it carries \
                 the token)"
            ),
        };
        outcome(RegistrationStatus::Manual, Some(message), None)
    } else {
        let prepared = app.charges.prepare(adapter, record)?;
        match adapter
            .register_webhook(&prepared, &request_id::current())
            .await
        {
            Ok(()) => outcome(RegistrationStatus::Registered, None, None),
            Err(error) => {
                // The API's phrasing of PSP failures, kept as the API shows it.
                let e = psp_failure::from_call(&error, record.environment);
                let body = *e.body;
                outcome(
                    RegistrationStatus::Failed,
                    Some(body.psp_message.unwrap_or(body.message)),
                    body.hint,
                )
            }
        }
    };
    app.store
        .set_webhook_registration(record.id.as_str(), &registration)
        .await?;
    Ok(registration)
}
