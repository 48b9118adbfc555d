//! `/dashboard/cashier`: the point-of-sale screen. The operator types an amount (`19,90` or
//! `19.90`), an optional description and picks a PSP (or `random`), and types the payer's
//! details when that PSP needs them ([`super::payer`]: the page shows each field for the PSPs
//! that need it, all of them without JavaScript, and only the chosen one's are read); a charge
//! valid for 30 minutes is created and its screen shows the QR code, the copy-and-paste code and a
//! countdown, and turns to paid by itself when the PSP confirms (server-sent events from
//! [`crate::live::follow`], with a polling fallback). Nobody can mark a charge paid by hand.
//!
//! Every cashier charge records its operator; a cashier sees only their own.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::Deserialize;

use super::charges::visible_charge;
use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other};
use super::payer;
use super::refusals::{self, Doing, Refusal};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::charges::{ChargeInput, ProviderChoice};
use crate::domain::{Amount, Line, Reference};
use crate::policy::Action;
use crate::runtime::PayerField;
use crate::store::charges::{ChargeRecord, ChargeState};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/cashier", get(form).post(create))
        .route("/dashboard/cashier/{id}", get(screen))
        .route("/dashboard/cashier/{id}/stream", get(stream))
        .route("/dashboard/cashier/{id}/status", get(status))
        .route("/dashboard/cashier/{id}/cancel", post(cancel))
}

/// A cashier charge can be paid for 30 minutes.
const VALIDITY_SECS: u32 = 30 * 60;
pub const MAX_DESCRIPTION_CHARS: usize = 140;

/// Whether the merchant's plan includes the cashier on a phone (Pro, Enterprise): the one
/// place the cashier asks.
pub fn phone_cashier_allowed(plan: crate::plans::PlanId) -> bool {
    crate::plans::allows_phone_cashier(plan)
}

/// A phone's browser, by its user agent (tablets and computers are not phones).
fn is_phone(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ua| ua.contains("Mobi") || ua.contains("iPhone"))
}

fn require_cashier(viewer: &Viewer, headers: &HeaderMap) -> Result<(), WebError> {
    viewer.require(Action::UseCashier)?;
    let plan = viewer.signed_in.plan;
    if is_phone(headers) && !phone_cashier_allowed(plan) {
        return Err(WebError::PlanLimit(
            viewer.lang,
            crate::plans::LimitReached::feature(plan, crate::plans::Resource::PhoneCashier),
        ));
    }
    Ok(())
}

/// One PSP the operator can choose.
#[derive(Clone)]
pub struct ProviderOption {
    pub value: String,
    pub label: String,
    /// The payer fields a charge there needs.
    pub needs: Vec<PayerField>,
}

/// A payer field some PSP of the list needs: the page shows it for those PSPs only.
pub struct AskedField {
    /// The form field: `name`, `email` or `document`.
    pub name: &'static str,
    /// Its label's key.
    pub label: &'static str,
    /// The options (PSP ids, `random`) needing it, space-separated.
    pub needed_by: String,
    /// Which PSPs need it, in words.
    pub help: String,
    pub value: String,
}

#[derive(Template)]
#[template(path = "cashier.html")]
struct CashierPage {
    c: Page,
    /// The reference of the sale this form creates.
    sale: String,
    providers: Vec<ProviderOption>,
    /// The payer fields the PSPs listed need.
    payer: Vec<AskedField>,
    amount: String,
    description: String,
    provider: String,
    error: Option<FormError>,
}

/// A refusal, as the form shows it: which field, what happened, the PSP's own words, what to
/// do.
pub struct FormError {
    pub field: Option<&'static str>,
    pub message: String,
    pub psp_message: Option<String>,
    pub hint: Option<String>,
}

impl FormError {
    /// A message next to `field`.
    fn at(field: &'static str, message: String) -> FormError {
        FormError {
            field: Some(field),
            message,
            psp_message: None,
            hint: None,
        }
    }

    /// A failed charge operation, in the viewer's language.
    fn refused(refusal: Refusal) -> FormError {
        FormError {
            field: None,
            message: refusal.message,
            psp_message: refusal.psp_message,
            hint: refusal.hint,
        }
    }
}

impl CashierPage {
    fn field_error(&self, field: &str) -> Option<&str> {
        self.error
            .as_ref()
            .filter(|e| e.field == Some(field))
            .map(|e| e.message.as_str())
    }
}

/// The PSPs of the merchant's active credentials in the viewer's environment, in routing
/// order, with `random` first when there are several.
async fn providers(app: &App, viewer: &Viewer) -> Result<Vec<ProviderOption>, WebError> {
    let caller = viewer.caller();
    let mut seen = Vec::new();
    for credential in app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?
        .into_iter()
        .filter(|c| c.active)
    {
        if !seen.contains(&credential.provider) {
            seen.push(credential.provider);
        }
    }
    let mut options: Vec<ProviderOption> = seen
        .into_iter()
        .map(|id| ProviderOption {
            label: app.runtime.display_name(&id),
            needs: app
                .runtime
                .adapter(&id)
                .map(|a| a.manifest().required_payer_fields.clone())
                .unwrap_or_default(),
            value: id,
        })
        .collect();
    if options.len() > 1 {
        let needs =
            crate::routing::payer_fields_for_random(options.iter().map(|o| o.needs.clone()));
        options.insert(
            0,
            ProviderOption {
                value: "random".into(),
                label: viewer.lang.t("cashier.random").to_owned(),
                needs,
            },
        );
    }
    Ok(options)
}

/// The cashier's form for `providers`, holding what `typed` holds.
fn sale_page(
    viewer: &Viewer,
    providers: &[ProviderOption],
    typed: &SaleForm,
    error: Option<FormError>,
) -> CashierPage {
    let lang = viewer.lang;
    let payer = [
        (PayerField::Name, "name", "cashier.payer.name", &typed.name),
        (
            PayerField::Email,
            "email",
            "cashier.payer.email",
            &typed.email,
        ),
        (
            PayerField::Document,
            "document",
            "cashier.payer.document",
            &typed.document,
        ),
    ]
    .into_iter()
    .filter_map(|(field, name, label, value)| {
        let needing: Vec<&ProviderOption> = providers
            .iter()
            .filter(|p| p.needs.contains(&field))
            .collect();
        (!needing.is_empty()).then(|| AskedField {
            name,
            label,
            needed_by: needing
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            help: lang.tf(
                "cashier.payer.needed_by",
                &[(
                    "psps",
                    &needing
                        .iter()
                        .filter(|p| p.value != "random")
                        .map(|p| p.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                )],
            ),
            value: value.clone(),
        })
    })
    .collect();
    CashierPage {
        c: Page::new(viewer, "cashier.title"),
        sale: typed.sale.clone(),
        payer,
        providers: providers.to_vec(),
        amount: typed.amount.clone(),
        description: typed.description.clone(),
        provider: typed.provider.clone(),
        error,
    }
}

async fn form(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    require_cashier(&viewer, &headers)?;
    let providers = providers(&app, &viewer).await?;
    let blank = SaleForm {
        provider: providers
            .first()
            .map(|p| p.value.clone())
            .unwrap_or_default(),
        sale: Reference::generate().to_string(),
        ..SaleForm::default()
    };
    render(&sale_page(&viewer, &providers, &blank, None))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SaleForm {
    amount: String,
    description: String,
    provider: String,
    /// The payer's details, when the PSP chosen needs them.
    name: String,
    email: String,
    document: String,
    /// Chosen when the form was drawn: a form sent twice (a double tap, a resend after a lost
    /// answer) resumes the same charge instead of creating another.
    sale: String,
}

async fn create(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Posted { viewer, form }: Posted<SaleForm>,
) -> Result<Response, WebError> {
    require_cashier(&viewer, &headers)?;
    let providers = providers(&app, &viewer).await?;
    let refuse = |error: FormError| {
        render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &sale_page(&viewer, &providers, &form, Some(error)),
        )
    };
    let lang = viewer.lang;
    let Ok(amount) = Amount::parse_reais(&form.amount) else {
        return refuse(FormError::at(
            "amount",
            lang.t("cashier.error.amount").to_owned(),
        ));
    };
    // The same rule as the API's (`Line`): one line, no control character of any kind.
    let description = match form.description.trim() {
        "" => None,
        typed => match Line::parse("description", typed, MAX_DESCRIPTION_CHARS) {
            Ok(line) => Some(line),
            Err(_) => {
                return refuse(FormError::at(
                    "description",
                    lang.t("cashier.error.description").to_owned(),
                ));
            }
        },
    };
    let Some(choice) = providers.iter().find(|p| p.value == form.provider) else {
        return refuse(FormError::at(
            "provider",
            lang.t("cashier.error.provider").to_owned(),
        ));
    };
    let typed = payer::Typed {
        name: &form.name,
        email: &form.email,
        document: &form.document,
    };
    let payer = match payer::parse(lang, typed, &choice.needs, payer::Typist::Operator) {
        Ok(payer) => payer,
        Err((field, message)) => return refuse(FormError::at(field, message)),
    };
    // The sale's reference was drawn with the form. A charge with it exists already when the
    // form was sent twice: show that one. References are random and known only to their
    // merchant; one of another merchant is refused all the same.
    let reference = Reference::parse(&form.sale).unwrap_or_else(|_| Reference::generate());
    if let Some(existing) = app.store.charge_by_reference(reference.as_str()).await? {
        let caller = viewer.caller();
        if existing.merchant_id != caller.merchant_id || existing.environment != caller.environment
        {
            return Err(WebError::BadRequest(lang, "error.form_malformed"));
        }
        // Still `creating`: the first send is at the PSP; this one resumes it below.
        if existing.status != ChargeState::Creating {
            return Ok(see_other(&format!("/dashboard/cashier/{}", existing.id)));
        }
    }
    let input = ChargeInput {
        amount,
        provider: if choice.value == "random" {
            ProviderChoice::Random
        } else {
            ProviderChoice::One(choice.value.clone())
        },
        description,
        payer,
        expires_in: VALIDITY_SECS,
        metadata: Default::default(),
        payment_link: None,
    };
    let caller = viewer.caller();
    match app
        .charges
        .create_charge(
            &caller,
            &input,
            crate::charges::Placement::Reserved(&reference),
            &crate::api::request_id::current(),
            None,
        )
        .await
    {
        Ok(charge) => Ok(see_other(&format!("/dashboard/cashier/{}", charge.id))),
        Err(crate::charges::ChargeError::PlanLimit(reached)) => {
            let (message, hint) = super::plan::refusal(lang, &reached);
            refuse(FormError {
                field: None,
                message,
                psp_message: None,
                hint: Some(hint),
            })
        }
        Err(e) => {
            let (_, refusal) =
                refusals::of_charge_error(lang, e, caller.environment, Doing::Create, |named| {
                    // The PSP tried last (`random`), else the one chosen.
                    named.map_or_else(|| choice.label.clone(), |p| app.runtime.display_name(p))
                })?;
            refuse(FormError::refused(refusal))
        }
    }
}

/// A charge as the live screen shows it.
pub struct LiveCharge {
    pub id: String,
    pub status: &'static str,
    pub amount: String,
    pub description: Option<String>,
    pub provider: String,
    pub qr_data_uri: Option<String>,
    pub copy_paste: Option<String>,
    /// Unix milliseconds, for the countdown.
    pub expires_at: Option<i64>,
    pub paid_at: Option<String>,
    pub amount_paid: Option<String>,
    /// Where the page follows the status: the event stream and the polling fallback.
    pub stream_url: String,
    pub status_url: String,
}

impl LiveCharge {
    pub fn new(lang: Lang, charge: &ChargeRecord, base: &str) -> LiveCharge {
        LiveCharge {
            id: charge.id.clone(),
            status: charge.status.as_str(),
            amount: lang.money(charge.amount),
            description: charge.description.clone(),
            provider: charge.provider.clone(),
            qr_data_uri: charge
                .qr_png_base64
                .as_ref()
                .map(|b64| format!("data:image/png;base64,{b64}")),
            copy_paste: charge.copy_paste.clone(),
            expires_at: charge.expires_at,
            paid_at: charge.paid_at.map(|t| super::page::format_time(lang, t)),
            amount_paid: charge
                .paid_at
                .map(|_| lang.money(charge.amount_paid.unwrap_or(charge.amount))),
            stream_url: format!("{base}/stream"),
            status_url: format!("{base}/status"),
        }
    }

    pub fn is_pending(&self) -> bool {
        matches!(self.status, "pending" | "processing")
    }
}

/// What the stream and the status URL send: `{status, paid_at?, amount_paid?}`.
pub fn status_json(lang: Lang, charge: &ChargeRecord) -> String {
    let live = LiveCharge::new(lang, charge, "");
    serde_json::json!({
        "status": live.status,
        "paid_at": live.paid_at,
        "amount_paid": live.amount_paid,
    })
    .to_string()
}

#[derive(Template)]
#[template(path = "cashier_charge.html")]
pub(super) struct ScreenPage {
    c: Page,
    charge: LiveCharge,
    can_cancel: bool,
    error: Option<FormError>,
    /// The sale's photos ([`super::evidence`]), and whether the viewer may attach one (the
    /// form shows once the screen turns to paid).
    evidence: Vec<super::evidence::EvidenceView>,
    can_attach_evidence: bool,
    evidence_error: Option<String>,
}

fn screen_page(
    app: &App,
    viewer: &Viewer,
    charge: &ChargeRecord,
    error: Option<FormError>,
) -> ScreenPage {
    ScreenPage {
        c: Page::new(viewer, "cashier.title"),
        charge: LiveCharge::new(
            viewer.lang,
            charge,
            &format!("/dashboard/cashier/{}", charge.id),
        ),
        can_cancel: viewer.can(Action::CancelCharge)
            && !charge.status.is_final()
            && app.charges.cancel_supported(&charge.provider),
        error,
        evidence: Vec::new(),
        can_attach_evidence: viewer.can(Action::AttachEvidence)
            && matches!(
                charge.status,
                ChargeState::Pending | ChargeState::Processing | ChargeState::Paid
            ),
        evidence_error: None,
    }
}

/// The screen with the sale's evidence, and why the last upload was refused.
pub(super) async fn screen_with_evidence(
    app: &App,
    viewer: &Viewer,
    charge: &ChargeRecord,
    evidence_error: Option<String>,
) -> Result<ScreenPage, WebError> {
    let mut page = screen_page(app, viewer, charge, None);
    if viewer.can(Action::ViewEvidence) {
        page.evidence = super::evidence::views(app, &charge.id).await?;
    }
    page.evidence_error = evidence_error;
    Ok(page)
}

async fn screen(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    require_cashier(&viewer, &headers)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    render(&screen_with_evidence(&app, &viewer, &charge, None).await?)
}

/// `text/event-stream` of the charge's status until it is final.
async fn stream(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    viewer.require(Action::UseCashier)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    let lang = viewer.lang;
    let followed = match crate::live::follow(
        app.clone(),
        charge.merchant_id,
        charge.environment,
        charge.id,
    )
    .await
    {
        // Over the merchant's limit of open streams: a 429; the page falls back to polling.
        Err(crate::live::LiveError::Store(e)) => return Err(e.into()),
        Err(too_many) => return Ok(axum::response::IntoResponse::into_response(too_many)),
        Ok(updates) => updates,
    };
    let Some(updates) = followed else {
        return Err(WebError::NotFound(lang));
    };
    let events = updates.map(move |charge| {
        Ok::<_, std::convert::Infallible>(
            Event::default()
                .event("status")
                .data(status_json(lang, &charge)),
        )
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The polling fallback: the charge's status now, as JSON.
async fn status(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    viewer.require(Action::UseCashier)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        status_json(viewer.lang, &charge),
    )
        .into_response())
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn cancel(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::CancelCharge)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    if charge.status != ChargeState::Pending && charge.status != ChargeState::Processing {
        return Ok(see_other(&format!("/dashboard/cashier/{id}")));
    }
    let caller = viewer.caller();
    match app
        .charges
        .cancel_charge(&caller, charge.clone(), &crate::api::request_id::current())
        .await
    {
        Ok(_) => Ok(see_other(&format!("/dashboard/cashier/{id}"))),
        Err(e) => {
            let (_, refusal) = refusals::of_charge_error(
                viewer.lang,
                e,
                caller.environment,
                Doing::Cancel,
                |_| app.runtime.display_name(&charge.provider),
            )?;
            let current = visible_charge(&app, &viewer, &id).await?;
            render_status(
                StatusCode::UNPROCESSABLE_ENTITY,
                &screen_page(&app, &viewer, &current, Some(FormError::refused(refusal))),
            )
        }
    }
}
