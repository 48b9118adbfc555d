//! PSP failures as API errors: 502 with the PSP's own message, its code, and a hint that says
//! in plain words what usually fixes it.
//!
//! The hint and the error `code` come from what the adapter reported, never from which PSP it
//! was, so the table holds for every adapter, present and future: first the typed refusal
//! reason (`refusal-reason` in the contract, read by each adapter from its PSP's error codes),
//! then the error case (which says what is safe to do next) and the PSP's HTTP status. Only
//! when the reason is `unspecified` are the words of the PSP's message matched, a fallback for
//! adapters (and PSP answers) that say nothing more precise.

use axum::http::StatusCode;

use super::error::{ApiError, ErrorType};
use crate::charges::ChargeError;
use crate::domain::Environment;
use crate::runtime::{CallError, PspError, RefusalReason, TransportFailure};

/// Remedies, one per failure family; `{provider}` and `{env}` are filled in.
const HINT_CREDENTIALS: &str = "The PSP refused the credential (OAuth or API key). Check the \
    client id and secret (or key) saved for {provider}: copy them again without extra spaces, \
    and make sure they belong to the PSP's {env_name} environment — sandbox credentials do not \
    work in production and vice versa.";
const HINT_CERTIFICATE: &str = "The PSP refused the client certificate, or it could not be \
    used. Upload the certificate and private key issued by {provider} for its {env_name} \
    environment (PEM; a .p12 converted with openssl), check that they belong together and have \
    not expired.";
const HINT_NOT_FOUND: &str = "The PSP does not know this resource. This usually means the \
    credential belongs to the other environment: {env} requests need {provider} {env_name} \
    credentials.";
const HINT_PIX_KEY: &str = "The PSP refused the Pix key. Check the Pix key saved in the {provider} \
    credential: it must be an active key registered to this same account at {provider}.";
const HINT_PIX_NOT_ENABLED: &str = "Pix is not enabled for this account at {provider}. Activate \
    Pix among the account's payment methods in {provider}'s dashboard, then retry.";
const HINT_NO_PIX_DATA: &str = "{provider} created the payment without Pix data, which happens \
    when the account cannot take Pix: check the account's country setting (Pix needs a Brazilian \
    account) and that Pix is activated among its payment methods.";
const HINT_NOT_PAYABLE_WITH_PIX: &str = "{provider} did not offer Pix for this charge: Pix was not \
    among the account's payable methods. Enable Pix in the account's payment methods at \
    {provider}, then retry.";
const HINT_AMOUNT: &str = "{provider} refused the amount. Check that it is in centavos and \
    within the limits {provider} sets for a Pix charge on this account.";
const HINT_PAYER: &str = "{provider} refused the payer's data. Check payer.document (a valid \
    CPF or CNPJ), payer.name and payer.email: {provider} requires them as its message says.";
const HINT_REJECTED: &str = "The PSP refused the charge; its message says why. Fix what it \
    names (in the request or in the account at {provider}) and retry.";
const HINT_UNAVAILABLE: &str = "{provider} could not be reached or said it did nothing, so no \
    charge exists. Retry in a moment (the same Idempotency-Key is safe) or use another provider.";
const HINT_AMBIGUOUS: &str = "{provider} did not confirm whether it created the charge. Retry \
    with the same Idempotency-Key: the gateway will find the charge instead of creating another.";
const HINT_FAULT: &str = "The {provider} adapter failed inside the gateway; this is not a \
    problem with your request or account. Retry, or use another provider while the operator \
    looks into it.";

fn fill(template: &str, provider: &str, environment: Environment) -> String {
    let env_name = match environment {
        Environment::Test => "sandbox (homologation)",
        Environment::Live => "production",
    };
    template
        .replace("{provider}", provider)
        .replace("{env_name}", env_name)
        .replace("{env}", environment.as_str())
}

/// Which remedy fits, and the error code merchants can branch on.
fn classify(error: &PspError, transport: Option<TransportFailure>) -> (&'static str, &'static str) {
    // The host saw the TLS client certificate fail, whatever the adapter said.
    if matches!(error, PspError::BadCredentials(_))
        && transport == Some(TransportFailure::Certificate)
    {
        return ("psp_certificate_invalid", HINT_CERTIFICATE);
    }
    let reason = error_detail(error).map_or(RefusalReason::Unspecified, |d| d.reason);
    match error {
        // A lost answer or an unreachable PSP says what to do whatever the reason.
        PspError::Unavailable(_) => ("psp_unavailable", HINT_UNAVAILABLE),
        PspError::Ambiguous(_) => ("psp_outcome_unknown", HINT_AMBIGUOUS),
        PspError::InvalidWebhook(_) | PspError::Unsupported(_) => ("psp_rejected", HINT_REJECTED),
        PspError::Rejected(_) | PspError::NotFound(_) | PspError::BadCredentials(_) => {
            by_reason(reason).unwrap_or_else(|| by_words(error))
        }
    }
}

/// The remedy the adapter's typed reason names.
fn by_reason(reason: RefusalReason) -> Option<(&'static str, &'static str)> {
    Some(match reason {
        RefusalReason::Unspecified => return None,
        RefusalReason::Credentials => ("psp_authentication_failed", HINT_CREDENTIALS),
        RefusalReason::Certificate => ("psp_certificate_invalid", HINT_CERTIFICATE),
        RefusalReason::PixKey => ("psp_pix_key_invalid", HINT_PIX_KEY),
        RefusalReason::PixNotEnabled => ("psp_pix_not_enabled", HINT_PIX_NOT_ENABLED),
        RefusalReason::PixNotOffered => ("psp_pix_not_payable", HINT_NOT_PAYABLE_WITH_PIX),
        RefusalReason::AccountCannotTakePix => {
            ("psp_pix_unavailable_for_account", HINT_NO_PIX_DATA)
        }
        RefusalReason::NotFound => ("psp_resource_not_found", HINT_NOT_FOUND),
        RefusalReason::Amount => ("psp_amount_invalid", HINT_AMOUNT),
        RefusalReason::PayerData => ("psp_payer_invalid", HINT_PAYER),
    })
}

/// The fallback for an `unspecified` reason: the error case, the HTTP status, and the words of
/// the PSP's message (the central bank's vocabulary, `chave`, and phrases PSPs use).
fn by_words(error: &PspError) -> (&'static str, &'static str) {
    let detail = error_detail(error);
    let words = detail
        .map(|d| format!("{} {}", d.message, d.code.as_deref().unwrap_or("")).to_lowercase())
        .unwrap_or_default();
    let status = detail.and_then(|d| d.http_status);
    let mentions = |needles: &[&str]| needles.iter().any(|n| words.contains(n));
    match error {
        PspError::BadCredentials(_) if mentions(&["certificate", "certificado"]) => {
            ("psp_certificate_invalid", HINT_CERTIFICATE)
        }
        PspError::BadCredentials(_) => ("psp_authentication_failed", HINT_CREDENTIALS),
        PspError::NotFound(_) => ("psp_resource_not_found", HINT_NOT_FOUND),
        PspError::Rejected(_) if mentions(&["chave", "pix key", "dict"]) => {
            ("psp_pix_key_invalid", HINT_PIX_KEY)
        }
        PspError::Rejected(_) if mentions(&["payable methods", "métodos de pagamento"]) => {
            ("psp_pix_not_payable", HINT_NOT_PAYABLE_WITH_PIX)
        }
        PspError::Rejected(_)
            if mentions(&[
                "payment method type",
                "habilitad",
                "not enabled",
                "not activated",
            ]) =>
        {
            ("psp_pix_not_enabled", HINT_PIX_NOT_ENABLED)
        }
        PspError::Rejected(_) if mentions(&["country", "país", "without pix data"]) => {
            ("psp_pix_unavailable_for_account", HINT_NO_PIX_DATA)
        }
        PspError::Rejected(_) if status == Some(404) => ("psp_resource_not_found", HINT_NOT_FOUND),
        _ => ("psp_rejected", HINT_REJECTED),
    }
}

fn error_detail(error: &PspError) -> Option<&crate::runtime::PspErrorDetail> {
    match error {
        PspError::Rejected(e)
        | PspError::Unavailable(e)
        | PspError::Ambiguous(e)
        | PspError::NotFound(e)
        | PspError::BadCredentials(e) => Some(e),
        PspError::InvalidWebhook(_) | PspError::Unsupported(_) => None,
    }
}

/// The API error for an adapter call that failed.
pub fn from_call(error: &CallError, environment: Environment) -> ApiError {
    match error {
        CallError::Psp {
            provider,
            error,
            transport,
        } => {
            let (code, hint) = classify(error, *transport);
            let (psp_message, psp_code) = match error {
                PspError::InvalidWebhook(m) | PspError::Unsupported(m) => (m.clone(), None),
                _ => {
                    let d = error_detail(error).expect("cases with a PSP error");
                    (d.message.clone(), d.code.clone())
                }
            };
            let mut e = ApiError::new(
                StatusCode::BAD_GATEWAY,
                ErrorType::PspError,
                code,
                format!("{provider} did not create or change the charge: {psp_message}"),
            )
            .with_provider(provider.clone())
            .with_hint(fill(hint, provider, environment));
            if code == "psp_outcome_unknown" {
                e.body.message = format!("{provider} did not confirm the outcome: {psp_message}");
            }
            e.body.psp_message = Some(psp_message);
            e.body.psp_code = psp_code;
            e
        }
        CallError::Busy {
            provider,
            saturated,
        } => ApiError::gateway_busy(format!(
            "The gateway is at its limit of calls to {} and could not place this request in \
             time ({saturated}); nothing was sent to the PSP.",
            match saturated {
                crate::runtime::Saturated::Psp { .. } => provider.as_str(),
                crate::runtime::Saturated::Gateway { .. } => "the PSPs",
            }
        ))
        .with_provider(provider.clone()),
        CallError::Fault {
            provider, fault, ..
        } => ApiError::new(
            StatusCode::BAD_GATEWAY,
            ErrorType::PspError,
            "adapter_failed",
            format!("The {provider} adapter failed: {fault}."),
        )
        .with_provider(provider.clone())
        .with_hint(fill(HINT_FAULT, provider, environment)),
    }
}

/// The API error for any charge operation that failed.
pub fn from_charge_error(error: ChargeError, environment: Environment) -> ApiError {
    match error {
        ChargeError::UnknownProvider {
            provider,
            available,
        } => ApiError::unprocessable_param(
            "provider",
            format!(
                "No PSP adapter {provider:?} is installed. Available: {}.",
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                }
            ),
        )
        .with_code("provider_unknown"),
        ChargeError::NotConnected {
            provider,
            environment,
        } => ApiError::unprocessable_param(
            "provider",
            format!(
                "This merchant has no active {provider} credential in the {} environment. \
                 Connect one with POST /v1/credentials using a {} API key.",
                environment.as_str(),
                environment.as_str()
            ),
        )
        .with_code("provider_not_connected"),
        ChargeError::PayerFieldRequired { provider, field } => ApiError::unprocessable_param(
            format!("payer.{field}"),
            format!("{provider} requires payer.{field} to create a Pix charge."),
        )
        .with_code("parameter_missing"),
        ChargeError::CancelUnsupported { provider } => ApiError::unprocessable(
            "cancel_unsupported",
            format!("{provider} does not let charges be canceled; it expires at its expiry time."),
        ),
        ChargeError::NotCancelable { status } => ApiError::new(
            StatusCode::CONFLICT,
            ErrorType::InvalidRequestError,
            "charge_not_cancelable",
            format!(
                "The charge is {} and can no longer be canceled.",
                status.as_str()
            ),
        ),
        ChargeError::LinkClosed { link } => ApiError::new(
            StatusCode::CONFLICT,
            ErrorType::InvalidRequestError,
            "payment_link_closed",
            format!(
                "The payment link {link} takes no more charges: it is inactive, outside its validity window, or used up."
            ),
        ),
        ChargeError::PlanLimit(reached) => reached.into(),
        ChargeError::Psp(call) => from_call(&call, environment),
        ChargeError::NoRoute { reason } => ApiError::unprocessable_param(
            "provider",
            format!("provider \"random\" found no PSP for this charge: {reason}."),
        )
        .with_code("no_eligible_provider"),
        ChargeError::AllFailed { attempted, last } => {
            let mut e = from_charge_error(*last, environment);
            if e.body.code != "psp_outcome_unknown" {
                e.body.message = format!(
                    "Every PSP tried refused ({}). The last: {}",
                    attempted.join(", "),
                    e.body.message
                );
            }
            e.body.attempted_providers = Some(attempted);
            e
        }
        ChargeError::BadPspAnswer { provider, detail } => ApiError::new(
            StatusCode::BAD_GATEWAY,
            ErrorType::PspError,
            "psp_invalid_response",
            format!("{provider} answered with an unusable charge: {detail}."),
        )
        .with_provider(provider.clone())
        .with_hint(format!(
            "The charge cannot be paid through pixgw as {provider} returned it; it was marked \
             failed. Retry, or use another provider."
        )),
        ChargeError::Unfinished { provider, detail } => ApiError::new(
            StatusCode::BAD_GATEWAY,
            ErrorType::PspError,
            "psp_outcome_unknown",
            format!("{provider} has not confirmed whether the charge exists yet: {detail}."),
        )
        .with_provider(provider.clone())
        .with_hint(fill(HINT_AMBIGUOUS, &provider, environment)),
        ChargeError::Store(e) => ApiError::internal(e),
        ChargeError::Vault(e) => ApiError::internal(format!("vault: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::PspErrorDetail;

    fn detail(message: &str, http_status: Option<u16>, reason: RefusalReason) -> PspErrorDetail {
        PspErrorDetail {
            message: message.into(),
            code: None,
            http_status,
            reason,
        }
    }

    fn code(error: PspError) -> &'static str {
        classify(&error, None).0
    }

    #[test]
    fn the_typed_reason_chooses_the_code_whatever_the_words() {
        use RefusalReason::*;
        let table = [
            (Credentials, "psp_authentication_failed"),
            (Certificate, "psp_certificate_invalid"),
            (PixKey, "psp_pix_key_invalid"),
            (PixNotEnabled, "psp_pix_not_enabled"),
            (PixNotOffered, "psp_pix_not_payable"),
            (AccountCannotTakePix, "psp_pix_unavailable_for_account"),
            (NotFound, "psp_resource_not_found"),
            (Amount, "psp_amount_invalid"),
            (PayerData, "psp_payer_invalid"),
        ];
        for (reason, expected) in table {
            // Words that would mislead the fallback: the reason wins.
            let said = detail("certificado chave not enabled country", Some(400), reason);
            assert_eq!(
                code(PspError::Rejected(said.clone())),
                expected,
                "{reason:?}"
            );
            assert_eq!(code(PspError::BadCredentials(said)), expected, "{reason:?}");
        }
    }

    #[test]
    fn the_case_decides_what_is_safe_before_any_reason() {
        let said = detail("chave", Some(503), RefusalReason::PixKey);
        assert_eq!(code(PspError::Unavailable(said.clone())), "psp_unavailable");
        assert_eq!(code(PspError::Ambiguous(said)), "psp_outcome_unknown");
        assert_eq!(
            code(PspError::Unsupported("cancel-charge".into())),
            "psp_rejected"
        );
        // The host's own view of the TLS handshake beats the adapter's reason.
        let said = detail("invalid_client", Some(401), RefusalReason::Credentials);
        assert_eq!(
            classify(
                &PspError::BadCredentials(said),
                Some(TransportFailure::Certificate)
            )
            .0,
            "psp_certificate_invalid"
        );
    }

    #[test]
    fn an_unspecified_reason_falls_back_on_the_case_the_status_and_the_words() {
        let unspecified =
            |message: &str, status| detail(message, status, RefusalReason::Unspecified);
        let table = [
            (
                PspError::BadCredentials(unspecified("O certificado expirou", Some(401))),
                "psp_certificate_invalid",
            ),
            (
                PspError::BadCredentials(unspecified("Invalid API key", Some(401))),
                "psp_authentication_failed",
            ),
            (
                PspError::NotFound(unspecified("gone", Some(404))),
                "psp_resource_not_found",
            ),
            (
                PspError::Rejected(unspecified(
                    "A chave Pix não pertence a esta conta",
                    Some(400),
                )),
                "psp_pix_key_invalid",
            ),
            (
                PspError::Rejected(unspecified("Pix não está habilitado", Some(422))),
                "psp_pix_not_enabled",
            ),
            (
                PspError::Rejected(unspecified("No such route", Some(404))),
                "psp_resource_not_found",
            ),
            (
                PspError::Rejected(unspecified("Campo inválido", Some(400))),
                "psp_rejected",
            ),
        ];
        for (error, expected) in table {
            assert_eq!(code(error.clone()), expected, "{error:?}");
        }
    }

    #[test]
    fn the_merchant_reads_the_psps_words_and_the_hint_of_the_reason() {
        let error = CallError::Psp {
            provider: "efi".into(),
            error: PspError::Rejected(PspErrorDetail {
                message: "Campo valor.original não respeita o formato".into(),
                code: Some("valor_invalido".into()),
                http_status: Some(400),
                reason: RefusalReason::Amount,
            }),
            transport: None,
        };
        let e = from_call(&error, Environment::Test);
        assert_eq!(e.body.code, "psp_amount_invalid");
        assert_eq!(
            e.body.psp_message.as_deref(),
            Some("Campo valor.original não respeita o formato")
        );
        assert_eq!(e.body.psp_code.as_deref(), Some("valor_invalido"));
        assert_eq!(
            e.body.message,
            "efi did not create or change the charge: Campo valor.original não respeita o formato"
        );
        assert!(
            e.body
                .hint
                .as_deref()
                .unwrap()
                .starts_with("efi refused the amount")
        );
    }
}
