//! A failed charge operation as the dashboard shows it, in the viewer's language: what
//! happened, the PSP's own words verbatim, and what usually fixes it. The credential page, the
//! cashier, the charge page and the public checkout read the API's error `code`
//! ([`crate::api::psp_failure`]) through this one table, never its English `message` or
//! `hint`.
//!
//! Merchants get set-up advice (credentials, certificate, Pix key, the PSP's limits). Payers at
//! a checkout get only what they can act on: another amount, their own details, trying again
//! in a moment, or asking the store; never the merchant's set-up, and never the PSP's words,
//! which go to the log.

use axum::http::StatusCode;

use super::i18n::Lang;
use super::page::WebError;
use crate::api::error::ApiError;
use crate::charges::ChargeError;
use crate::domain::Environment;

/// What a payer can do about a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PayerRemedy {
    /// The PSP refused the amount: type another (when the link lets them).
    OtherAmount,
    /// The PSP refused the payer's data: check what they typed (when they typed any).
    CheckDetails,
    /// Passing: try again in a moment.
    TryLater,
    /// The merchant's set-up: nothing the payer can change.
    AskStore,
}

/// What each code means: the catalog key of the merchant's remedy (none where the headline
/// says all) and the payer's. `None` for a code this table does not know; a test keeps every
/// code the API gives a charge operation in it.
fn meaning(code: &str) -> Option<(Option<&'static str>, PayerRemedy)> {
    use PayerRemedy::*;
    Some(match code {
        "psp_authentication_failed" => (Some("refusal.hint.authentication"), AskStore),
        "psp_certificate_invalid" => (Some("refusal.hint.certificate"), AskStore),
        "psp_resource_not_found" => (Some("refusal.hint.not_found"), AskStore),
        "psp_pix_key_invalid" => (Some("refusal.hint.pix_key"), AskStore),
        "psp_pix_not_enabled" => (Some("refusal.hint.pix_not_enabled"), AskStore),
        "psp_pix_not_payable" => (Some("refusal.hint.pix_not_payable"), AskStore),
        "psp_pix_unavailable_for_account" => (Some("refusal.hint.no_pix_data"), AskStore),
        "psp_amount_invalid" => (Some("refusal.hint.amount"), OtherAmount),
        "psp_payer_invalid" => (Some("refusal.hint.payer"), CheckDetails),
        "psp_rejected" => (Some("refusal.hint.rejected"), TryLater),
        "psp_unavailable" => (Some("refusal.hint.unavailable"), TryLater),
        "psp_outcome_unknown" => (Some("refusal.hint.outcome_unknown"), TryLater),
        "psp_invalid_response" => (Some("refusal.hint.invalid_response"), TryLater),
        "adapter_failed" => (Some("refusal.hint.adapter_failed"), TryLater),
        "gateway_busy" => (Some("refusal.hint.busy"), TryLater),
        // The gateway's own refusals, before any PSP: the merchant's set-up as it sees it.
        "parameter_missing" => (Some("refusal.hint.payer_field"), AskStore),
        "provider_not_connected" => (Some("refusal.hint.not_connected"), AskStore),
        "provider_unknown" => (Some("refusal.hint.no_adapter"), AskStore),
        "no_eligible_provider" => (Some("refusal.hint.no_route"), AskStore),
        "payment_link_closed" => (None, AskStore),
        "charge_not_cancelable" => (None, AskStore),
        "cancel_unsupported" => (None, AskStore),
        _ => return None,
    })
}

/// What usually fixes a refusal, for the merchant: `psp` is the PSP's display name and
/// `environment` the one being viewed.
pub fn hint(lang: Lang, code: &str, psp: &str, environment: Environment) -> Option<String> {
    let key = match meaning(code) {
        Some((key, _)) => key?,
        None => "refusal.hint.rejected",
    };
    let psp_environment = match environment {
        Environment::Test => lang.t("refusal.psp_env.test"),
        Environment::Live => lang.t("refusal.psp_env.live"),
    };
    let env = match environment {
        Environment::Test => lang.t("refusal.env.test"),
        Environment::Live => lang.t("refusal.env.live"),
    };
    Some(lang.tf(
        key,
        &[("psp", psp), ("env", env), ("psp_env", psp_environment)],
    ))
}

/// What the merchant was doing when the charge operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing {
    Create,
    Cancel,
}

/// A refusal as a merchant's page shows it.
pub struct Refusal {
    /// What happened.
    pub message: String,
    /// The PSP's own words, verbatim.
    pub psp_message: Option<String>,
    /// What usually fixes it.
    pub hint: Option<String>,
}

/// A failed charge operation (create, cancel) for a merchant's page: the HTTP status the API
/// gives it and the [`Refusal`], naming the PSP with `psp_name` (given the PSP the API error
/// names, if any). The gateway's own failures (a server error naming no PSP) are an error
/// page instead, their details in the log.
pub fn of_charge_error(
    lang: Lang,
    error: ChargeError,
    environment: Environment,
    doing: Doing,
    psp_name: impl FnOnce(Option<&str>) -> String,
) -> Result<(StatusCode, Refusal), WebError> {
    let e = crate::api::psp_failure::from_charge_error(error, environment);
    if e.status.is_server_error() && e.body.psp_message.is_none() && e.body.provider.is_none() {
        return Err(WebError::internal(lang, &e.body.message));
    }
    let psp = psp_name(e.body.provider.as_deref());
    Ok((e.status, for_merchant(lang, &e, &psp, environment, doing)))
}

/// The merchant's words for a failed charge operation (`error`, as the API would answer it):
/// `psp` is the display name of the PSP it was for.
pub fn for_merchant(
    lang: Lang,
    error: &ApiError,
    psp: &str,
    environment: Environment,
    doing: Doing,
) -> Refusal {
    let body = &error.body;
    let code = body.code.as_str();
    let field = match body.param.as_deref() {
        Some("payer.name") => lang.t("refusal.field.name"),
        Some("payer.email") => lang.t("refusal.field.email"),
        Some("payer.document") => lang.t("refusal.field.document"),
        other => other.unwrap_or_default(),
    };
    let key = match (code, doing) {
        ("parameter_missing", _) => "refusal.payer_field",
        ("provider_not_connected", _) => "refusal.not_connected",
        ("provider_unknown", _) => "refusal.no_adapter",
        ("no_eligible_provider", _) => "refusal.no_route",
        ("payment_link_closed", _) => "refusal.link_closed",
        ("charge_not_cancelable", _) => "refusal.not_cancelable",
        ("cancel_unsupported", _) => "refusal.cancel_unsupported",
        ("psp_outcome_unknown", Doing::Create) => "refusal.create_unconfirmed",
        ("psp_outcome_unknown", Doing::Cancel) => "refusal.cancel_unconfirmed",
        (_, Doing::Create) => "refusal.create",
        (_, Doing::Cancel) => "refusal.cancel",
    };
    let mut message = lang.tf(key, &[("psp", psp), ("field", field)]);
    if let Some(attempted) = body.attempted_providers.as_ref().filter(|a| a.len() > 1) {
        let tried = lang.tf("refusal.all_failed", &[("psps", &attempted.join(", "))]);
        message = format!("{tried} {message}");
    }
    Refusal {
        message,
        psp_message: body.psp_message.clone(),
        hint: hint(lang, code, psp, environment),
    }
}

/// What the checkout's form lets the payer change.
#[derive(Debug, Clone, Copy)]
pub struct PayerCan {
    /// The link's amount is typed by the payer.
    pub retype_amount: bool,
    /// The form asked for the payer's name, e-mail or document.
    pub retype_details: bool,
}

/// What a payer reads when the charge they asked for was not made, and the form's field it is
/// about (`""`: the whole form).
pub fn for_payer(lang: Lang, code: &str, can: PayerCan) -> (&'static str, String) {
    let remedy = meaning(code).map_or(PayerRemedy::TryLater, |(_, remedy)| remedy);
    let (field, key) = match remedy {
        PayerRemedy::OtherAmount if can.retype_amount => ("amount", "refusal.payer.amount"),
        PayerRemedy::CheckDetails if can.retype_details => ("", "refusal.payer.details"),
        PayerRemedy::TryLater => ("", "refusal.payer.try_later"),
        _ => ("", "refusal.payer.ask_store"),
    };
    (field, lang.t(key).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::psp_failure::{from_call, from_charge_error};
    use crate::charges::ChargeError;
    use crate::runtime::{
        CallError, PluginFault, PspError, PspErrorDetail, RefusalReason, Saturated,
        TransportFailure,
    };
    use crate::store::charges::ChargeState;

    fn detail(reason: RefusalReason) -> PspErrorDetail {
        PspErrorDetail {
            message: "Valor acima do limite".into(),
            code: Some("valor_invalido".into()),
            http_status: Some(400),
            reason,
        }
    }

    fn psp(error: PspError) -> CallError {
        CallError::Psp {
            provider: "efi".into(),
            error,
            transport: None,
        }
    }

    /// Every failure of a charge operation the pages meet (the plan's limit and the store's
    /// failures have pages of their own).
    fn every_failure() -> Vec<ChargeError> {
        use RefusalReason::*;
        let reasons = [
            Unspecified,
            Credentials,
            Certificate,
            PixKey,
            PixNotEnabled,
            PixNotOffered,
            AccountCannotTakePix,
            NotFound,
            Amount,
            PayerData,
        ];
        // A new reason does not compile here until it is in the list above.
        for reason in reasons {
            match reason {
                Unspecified | Credentials | Certificate | PixKey | PixNotEnabled
                | PixNotOffered | AccountCannotTakePix | NotFound | Amount | PayerData => {}
            }
        }
        let mut calls = Vec::new();
        for reason in reasons {
            let d = detail(reason);
            calls.push(psp(PspError::Rejected(d.clone())));
            calls.push(psp(PspError::NotFound(d.clone())));
            calls.push(psp(PspError::BadCredentials(d.clone())));
            calls.push(psp(PspError::Unavailable(d.clone())));
            calls.push(psp(PspError::Ambiguous(d)));
        }
        calls.push(psp(PspError::InvalidWebhook("bad signature".into())));
        calls.push(psp(PspError::Unsupported("cancel-charge".into())));
        calls.push(CallError::Psp {
            provider: "efi".into(),
            error: PspError::BadCredentials(detail(RefusalReason::Credentials)),
            transport: Some(TransportFailure::Certificate),
        });
        calls.push(CallError::Fault {
            provider: "efi".into(),
            version: "0".repeat(64),
            fault: PluginFault::Panic,
        });
        calls.push(CallError::Busy {
            provider: "efi".into(),
            saturated: Saturated::Psp {
                limit: 8,
                waited: std::time::Duration::from_secs(1),
            },
        });
        let mut failures: Vec<ChargeError> = calls.into_iter().map(ChargeError::Psp).collect();
        failures.extend([
            ChargeError::UnknownProvider {
                provider: "efi".into(),
                available: vec![],
            },
            ChargeError::NotConnected {
                provider: "efi".into(),
                environment: Environment::Test,
            },
            ChargeError::NoRoute {
                reason: "no active credential".into(),
            },
            ChargeError::PayerFieldRequired {
                provider: "mercadopago".into(),
                field: "email",
            },
            ChargeError::CancelUnsupported {
                provider: "pagbank".into(),
            },
            ChargeError::NotCancelable {
                status: ChargeState::Paid,
            },
            ChargeError::LinkClosed {
                link: "plink_1".into(),
            },
            ChargeError::BadPspAnswer {
                provider: "efi".into(),
                detail: "no BR Code".into(),
            },
            ChargeError::Unfinished {
                provider: "efi".into(),
                detail: "creating".into(),
            },
            ChargeError::AllFailed {
                attempted: vec!["efi".into(), "stripe".into()],
                last: Box::new(ChargeError::Psp(psp(PspError::Rejected(detail(
                    RefusalReason::Amount,
                ))))),
            },
        ]);
        failures
    }

    #[test]
    fn every_code_the_api_gives_has_words_in_each_language() {
        for failure in every_failure() {
            let said = format!("{failure:?}");
            let e = from_charge_error(failure, Environment::Test);
            let code = e.body.code.as_str();
            assert!(
                meaning(code).is_some(),
                "{code} ({said}) is not in the table"
            );
            for lang in Lang::ALL {
                for doing in [Doing::Create, Doing::Cancel] {
                    let r = for_merchant(lang, &e, "Efí Bank", Environment::Live, doing);
                    for text in [Some(&r.message), r.hint.as_ref()].into_iter().flatten() {
                        assert!(
                            !text.contains("refusal.") && !text.contains('{'),
                            "{code} in {lang:?}: {text}"
                        );
                    }
                }
                let (_, text) = for_payer(
                    lang,
                    code,
                    PayerCan {
                        retype_amount: true,
                        retype_details: true,
                    },
                );
                assert!(!text.contains("refusal."), "{code} in {lang:?}: {text}");
            }
        }
    }

    #[test]
    fn a_refused_credential_gets_the_remedy_of_its_code() {
        let refused = from_call(
            &psp(PspError::BadCredentials(detail(RefusalReason::PixKey))),
            Environment::Test,
        );
        assert_eq!(
            hint(
                Lang::PtBr,
                &refused.body.code,
                "Efí Bank",
                Environment::Test
            )
            .as_deref(),
            Some(
                "Confira a chave Pix da conexão com o Efí Bank: ela precisa ser uma chave ativa, \
                 cadastrada nesta mesma conta do Efí Bank."
            )
        );
        // A code from a newer gateway than this table still gets words.
        assert_eq!(
            hint(Lang::En, "psp_something_new", "Stripe", Environment::Live).as_deref(),
            Some("Stripe's answer says why: fix what it names and try again.")
        );
    }

    #[test]
    fn the_merchant_reads_the_psps_words_apart_in_their_language() {
        let e = from_charge_error(
            ChargeError::Psp(psp(PspError::Rejected(detail(RefusalReason::Amount)))),
            Environment::Test,
        );
        let r = for_merchant(Lang::PtBr, &e, "Efí Bank", Environment::Test, Doing::Create);
        assert_eq!(r.message, "O Efí Bank não criou a cobrança.");
        assert_eq!(r.psp_message.as_deref(), Some("Valor acima do limite"));
        assert_eq!(
            r.hint.as_deref(),
            Some(
                "O Efí Bank não aceitou este valor. Confira os limites que o Efí Bank define para \
                 uma cobrança Pix nesta conta (um mínimo, um máximo) e tente outro valor."
            )
        );
        // Every PSP tried is named before the last one's refusal.
        let e = from_charge_error(
            ChargeError::AllFailed {
                attempted: vec!["efi".into(), "stripe".into()],
                last: Box::new(ChargeError::Psp(psp(PspError::Unavailable(detail(
                    RefusalReason::Unspecified,
                ))))),
            },
            Environment::Test,
        );
        let r = for_merchant(Lang::En, &e, "Stripe", Environment::Test, Doing::Create);
        assert_eq!(
            r.message,
            "No PSP took the charge (efi, stripe). Stripe did not create the charge."
        );
        // A PSP that needs a payer field the form left empty.
        let e = from_charge_error(
            ChargeError::PayerFieldRequired {
                provider: "mercadopago".into(),
                field: "email",
            },
            Environment::Test,
        );
        let r = for_merchant(
            Lang::PtBr,
            &e,
            "Mercado Pago",
            Environment::Test,
            Doing::Create,
        );
        assert_eq!(
            r.message,
            "O Mercado Pago precisa do e-mail do pagador para gerar um Pix."
        );
    }

    #[test]
    fn a_payer_reads_only_what_they_can_do() {
        let can = |retype_amount, retype_details| PayerCan {
            retype_amount,
            retype_details,
        };
        let amount = "psp_amount_invalid";
        assert_eq!(
            for_payer(Lang::PtBr, amount, can(true, false)),
            (
                "amount",
                "A instituição de pagamento não aceitou este valor, e nada foi cobrado. Digite \
                 outro valor."
                    .to_owned()
            )
        );
        // A fixed amount is the store's to change.
        let ask_store = for_payer(Lang::En, "psp_pix_key_invalid", can(true, true));
        assert_eq!(
            ask_store,
            (
                "",
                "This store cannot take this payment by Pix right now, and nothing was charged. \
                 Contact the store to pay another way."
                    .to_owned()
            )
        );
        assert_eq!(for_payer(Lang::En, amount, can(false, true)), ask_store);
        assert_eq!(
            for_payer(Lang::En, "psp_payer_invalid", can(false, true)),
            (
                "",
                "The payment institution did not accept your details, and nothing was charged. \
                 Check what you typed and try again."
                    .to_owned()
            )
        );
        assert_eq!(
            for_payer(Lang::En, "psp_payer_invalid", can(true, false)),
            ask_store
        );
        assert_eq!(
            for_payer(Lang::En, "psp_unavailable", can(true, true)).1,
            "The Pix could not be created right now, and nothing was charged. Try again in a \
             moment; if it happens again, contact the store."
        );
    }
}
