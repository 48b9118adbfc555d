//! `/dashboard/psps`: the merchant's PSP connections in the environment being viewed, in
//! routing order, and connecting a new one from the adapter's manifest (its fields become the
//! form; certificates can be uploaded as files). Each connection's page shows its webhook URL
//! and token to copy, how the PSP is set up to use them, and the changes: label and routing
//! limit, new credentials, activate or deactivate, remove. The list moves connections up and
//! down the routing order.
//!
//! Every rule is [`crate::credentials`]'s, shared with the API: this module reads forms, asks
//! the policy, and turns refusals into messages next to the field at fault, keeping what was
//! typed.

use std::collections::BTreeMap;
use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::credentials::{
    self, CredentialChange, CredentialError, CredentialView, FieldError, FieldProblem, Move,
    NewCredential, RegistrationStatus, VerificationStatus, WebhookSetup,
};
use crate::domain::Environment;
use crate::policy::Action;
use crate::runtime::{self, FieldKind};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/psps", get(list))
        .route(
            "/dashboard/psps/connect/{provider}",
            get(connect_form).post(connect),
        )
        .route("/dashboard/psps/{id}", get(detail))
        .route("/dashboard/psps/{id}/settings", post(settings))
        .route("/dashboard/psps/{id}/fields", post(replace_fields))
        .route("/dashboard/psps/{id}/active", post(set_active))
        .route("/dashboard/psps/{id}/move", post(move_step))
        .route("/dashboard/psps/{id}/delete", post(delete))
}

/// A status badge: its CSS class, its catalog key, and a line that explains it.
pub struct Badge {
    pub class: &'static str,
    pub label: &'static str,
    pub detail: Option<String>,
}

/// One connection as the list and its page show it.
pub struct Row {
    pub id: String,
    pub label: String,
    pub psp_name: String,
    /// 1-based place in the routing order.
    pub place: usize,
    pub route_limit: i64,
    pub active: bool,
    pub verification: Badge,
    pub webhook: Badge,
}

impl Row {
    fn of(lang: Lang, view: &CredentialView, place: usize) -> Row {
        Row {
            id: view.record.id.to_string(),
            label: view.record.label.clone(),
            psp_name: view.psp_name.clone(),
            place,
            route_limit: view.record.route_limit,
            active: view.record.active,
            verification: verification_badge(lang, view),
            webhook: webhook_badge(lang, view),
        }
    }
}

fn verification_badge(lang: Lang, view: &CredentialView) -> Badge {
    let unverified = |detail: String| Badge {
        class: "pending",
        label: "psps.badge.unverified",
        detail: Some(detail),
    };
    match &view.verification {
        Some(v) => match v.status {
            VerificationStatus::Ok => Badge {
                class: "verified",
                label: "psps.badge.verified",
                detail: None,
            },
            VerificationStatus::Unreachable => {
                let mut detail = lang.t("psps.verification.unreachable").to_owned();
                if let Some(message) = &v.message {
                    detail = format!("{detail} {message}");
                }
                unverified(detail)
            }
            VerificationStatus::Unsupported => {
                unverified(lang.t("psps.verification.unsupported").to_owned())
            }
            VerificationStatus::Skipped => {
                unverified(lang.t("psps.verification.skipped").to_owned())
            }
        },
        None => unverified(lang.t("psps.verification.unknown").to_owned()),
    }
}

fn webhook_badge(lang: Lang, view: &CredentialView) -> Badge {
    let badge = |class, label, detail| Badge {
        class,
        label,
        detail,
    };
    match &view.webhook.registration {
        Some(r) => match r.status {
            RegistrationStatus::Registered => {
                badge("registered", "psps.badge.webhook_registered", None)
            }
            RegistrationStatus::Manual => badge(
                "manual",
                "psps.badge.webhook_manual",
                Some(lang.t("psps.webhook.manual_detail").to_owned()),
            ),
            // The PSP's own words: what the merchant can act on.
            RegistrationStatus::Failed => {
                badge("failed", "psps.badge.webhook_failed", r.message.clone())
            }
            RegistrationStatus::Skipped => badge("", "psps.badge.webhook_skipped", None),
        },
        None => badge("", "psps.badge.webhook_unknown", None),
    }
}

/// A PSP a merchant can connect: an adapter that is loaded.
pub struct Choice {
    pub provider: String,
    pub name: String,
    pub kind: String,
}

#[derive(Template)]
#[template(path = "psps.html")]
struct ListPage {
    c: Page,
    rows: Vec<Row>,
    choices: Vec<Choice>,
    can_manage: bool,
}

async fn list(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ViewCredentials)?;
    let views = credentials::list(&app, &viewer.caller())
        .await
        .map_err(|e| internal(&viewer, e))?;
    let mut choices: Vec<Choice> = app
        .runtime
        .providers()
        .into_iter()
        .filter_map(|provider| {
            let adapter = app.runtime.adapter(&provider)?;
            let m = adapter.manifest();
            Some(Choice {
                provider,
                name: m.display_name.clone(),
                kind: m.kind.clone(),
            })
        })
        .collect();
    choices.sort_by_key(|c| c.name.to_lowercase());
    render(&ListPage {
        c: Page::new(&viewer, "psps.title"),
        rows: views
            .iter()
            .enumerate()
            .map(|(i, view)| Row::of(viewer.lang, view, i + 1))
            .collect(),
        choices,
        can_manage: viewer.can(Action::ManageCredentials),
    })
}

/// How a manifest field is entered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Text,
    /// Write-only: a password input.
    Secret,
    /// A certificate or key: a text area, and a file to load into it.
    Pem,
}

/// One input of a credential form, built from the manifest.
pub struct FieldInput {
    /// The manifest's name; the form posts it as `fields.<name>`.
    pub name: String,
    pub label: String,
    pub help: Option<String>,
    pub control: Control,
    pub multiline: bool,
    pub required: bool,
    /// What was typed (or, for a saved text field, its value).
    pub value: String,
    pub placeholder: Option<String>,
    pub error: Option<String>,
}

impl FieldInput {
    pub fn form_name(&self) -> String {
        format!("fields.{}", self.name)
    }

    pub fn id(&self) -> String {
        format!("field-{}", self.name)
    }

    pub fn is_pem(&self) -> bool {
        self.control == Control::Pem
    }

    pub fn is_secret(&self) -> bool {
        self.control == Control::Secret
    }

    /// A text area: certificates, keys, and fields the manifest makes multiline.
    pub fn is_area(&self) -> bool {
        self.is_pem() || self.multiline
    }
}

/// The inputs of `manifest`'s fields for `environment`, holding `values`. On an update
/// (`saved`: the fields already stored), secrets start empty and may stay so.
fn field_inputs(
    lang: Lang,
    manifest: &runtime::Manifest,
    environment: Environment,
    values: &BTreeMap<String, String>,
    saved: Option<&BTreeMap<String, String>>,
) -> Vec<FieldInput> {
    manifest
        .credential_fields
        .iter()
        .map(|spec| {
            let control = match spec.kind {
                FieldKind::Text => Control::Text,
                FieldKind::Secret => Control::Secret,
                FieldKind::ClientCertificate
                | FieldKind::ClientPrivateKey
                | FieldKind::ClientIdentity => Control::Pem,
            };
            let secret_saved = credentials::fields::is_secret(spec.kind)
                && saved.is_some_and(|s| s.contains_key(&spec.name));
            let placeholder = if secret_saved {
                Some(lang.t("psps.keep_secret").to_owned())
            } else {
                spec.value_prefix.as_ref().map(|p| match environment {
                    Environment::Test => format!("{}…", p.test),
                    Environment::Live => format!("{}…", p.live),
                })
            };
            FieldInput {
                name: spec.name.clone(),
                label: spec.label.clone(),
                help: spec.help.clone(),
                control,
                multiline: spec.multiline,
                required: spec.required && !secret_saved,
                value: values.get(&spec.name).cloned().unwrap_or_default(),
                placeholder,
                error: None,
            }
        })
        .collect()
}

/// A refusal of the whole form: the PSP's words and what usually fixes it.
pub struct FormAlert {
    pub message: String,
    pub psp_message: Option<String>,
    pub hint: Option<String>,
}

#[derive(Template)]
#[template(path = "psps_connect.html")]
struct ConnectPage {
    c: Page,
    provider: String,
    psp_name: String,
    lead: String,
    label: String,
    label_error: Option<String>,
    inputs: Vec<FieldInput>,
    alert: Option<FormAlert>,
}

/// The form's pairs: `label`, `fields.<name>`, and whatever else the form carries.
type Pairs = Vec<(String, String)>;

fn value<'a>(pairs: &'a Pairs, name: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The `fields.<name>` pairs, by name.
fn posted_fields(pairs: &Pairs) -> BTreeMap<String, String> {
    pairs
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("fields.")?.to_owned(), v.clone())))
        .collect()
}

/// A label as typed: `Ok(None)` when empty, an error message when too long.
fn parse_label(lang: Lang, text: &str) -> Result<Option<String>, String> {
    let label = text.trim();
    match label.chars().count() {
        0 => Ok(None),
        n if n > credentials::MAX_LABEL_CHARS => Err(lang.t("psps.error.label").to_owned()),
        _ => Ok(Some(label.to_owned())),
    }
}

fn connect_page(
    viewer: &Viewer,
    adapter: &runtime::Adapter,
    label: String,
    values: &BTreeMap<String, String>,
) -> ConnectPage {
    let m = adapter.manifest();
    let environment = viewer.caller().environment;
    ConnectPage {
        c: Page::new(viewer, "psps.connect_title"),
        provider: m.id.clone(),
        psp_name: m.display_name.clone(),
        lead: viewer.lang.tf(
            "psps.connect_lead",
            &[
                ("psp", &m.display_name),
                ("env", env_name(viewer.lang, environment)),
            ],
        ),
        label,
        label_error: None,
        inputs: field_inputs(viewer.lang, m, environment, values, None),
        alert: None,
    }
}

async fn connect_form(
    State(app): State<Arc<App>>,
    Path(provider): Path<String>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let adapter = app
        .runtime
        .adapter(&provider)
        .ok_or(WebError::NotFound(viewer.lang))?;
    render(&connect_page(
        &viewer,
        &adapter,
        String::new(),
        &BTreeMap::new(),
    ))
}

async fn connect(
    State(app): State<Arc<App>>,
    Path(provider): Path<String>,
    Posted { viewer, form }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let adapter = app
        .runtime
        .adapter(&provider)
        .ok_or(WebError::NotFound(viewer.lang))?;
    let typed_label = value(&form, "label").to_owned();
    let fields = posted_fields(&form);
    let mut page = connect_page(&viewer, &adapter, typed_label.clone(), &fields);
    let label = match parse_label(viewer.lang, &typed_label) {
        Ok(label) => label,
        Err(message) => {
            page.label_error = Some(message);
            return render_status(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    let new = NewCredential {
        provider,
        label,
        fields,
        position: None,
        route_limit: *credentials::ROUTE_LIMITS.start(),
        verify: true,
        register_webhook: true,
    };
    match credentials::connect(&app, &viewer.caller(), new).await {
        Ok(view) => Ok(see_other_with(
            &format!("/dashboard/psps/{}", view.record.id),
            "flash.psps_connected",
        )),
        Err(e) => {
            page.alert = form_refusal(&viewer, &page.psp_name, &mut page.inputs, e)?;
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}

/// Puts a refused save on the form: a field's problem next to it, a PSP's refusal on top.
/// Anything else is not the form's to show.
fn form_refusal(
    viewer: &Viewer,
    psp_name: &str,
    inputs: &mut [FieldInput],
    error: CredentialError,
) -> Result<Option<FormAlert>, WebError> {
    let lang = viewer.lang;
    match error {
        CredentialError::Field(e) => {
            let message = field_message(lang, psp_name, &e);
            match inputs.iter_mut().find(|i| i.name == e.field) {
                Some(input) => {
                    input.error = Some(message);
                    Ok(None)
                }
                // Not a field of the form: a crafted post. Still said, on top.
                None => Ok(Some(FormAlert {
                    message,
                    psp_message: None,
                    hint: None,
                })),
            }
        }
        CredentialError::Refused { error, .. } => {
            let environment = viewer.caller().environment;
            let failure = crate::api::psp_failure::from_call(&error, environment);
            Ok(Some(FormAlert {
                message: lang.tf("psps.refused", &[("psp", psp_name)]),
                psp_message: failure.body.psp_message.clone(),
                hint: super::refusals::hint(lang, &failure.body.code, psp_name, environment),
            }))
        }
        // The page offers no fields without the adapter; a post made anyway gets told why.
        CredentialError::AdapterMissing { .. } => Ok(Some(FormAlert {
            message: lang.tf("psps.error.adapter_missing", &[("psp", psp_name)]),
            psp_message: None,
            hint: None,
        })),
        CredentialError::PlanLimit(reached) => {
            let (message, hint) = super::plan::refusal(lang, &reached);
            Ok(Some(FormAlert {
                message,
                psp_message: None,
                hint: Some(hint),
            }))
        }
        CredentialError::NotFound | CredentialError::UnknownProvider { .. } => {
            Err(WebError::NotFound(lang))
        }
        // Handled before: the page is shown again as it is now.
        CredentialError::Conflict { .. } => Ok(Some(FormAlert {
            message: lang.t("psps.conflict").to_owned(),
            psp_message: None,
            hint: None,
        })),
        e @ (CredentialError::Store(_) | CredentialError::Vault(_)) => Err(internal(viewer, e)),
    }
}

/// A field's problem in the viewer's language.
fn field_message(lang: Lang, psp_name: &str, e: &FieldError) -> String {
    match &e.problem {
        FieldProblem::Unknown { .. } => lang.tf(
            "psps.error.unknown_field",
            &[("psp", psp_name), ("field", &e.field)],
        ),
        FieldProblem::Required { .. } => lang.t("psps.error.required").to_owned(),
        FieldProblem::TooLong => lang.t("psps.error.too_long").to_owned(),
        FieldProblem::OtherEnvironment {
            environment,
            found,
            expected,
        } => lang.tf(
            "psps.error.other_environment",
            &[
                ("found", found),
                ("expected", expected),
                ("env", env_name(lang, *environment)),
                (
                    "other",
                    env_name(lang, credentials::fields::other_environment(*environment)),
                ),
            ],
        ),
        FieldProblem::WrongPrefix {
            environment,
            expected,
        } => lang.tf(
            "psps.error.wrong_prefix",
            &[
                ("expected", expected),
                ("env", env_name(lang, *environment)),
            ],
        ),
        // The check's own (technical) words, after a sentence in the viewer's language.
        FieldProblem::Pem(detail) => lang.tf("psps.error.pem", &[("detail", detail)]),
    }
}

fn env_name(lang: Lang, environment: Environment) -> &'static str {
    match environment {
        Environment::Test => lang.t("psps.env.test"),
        Environment::Live => lang.t("psps.env.live"),
    }
}

/// A saved field shown on a connection's page: secrets only as "saved".
pub struct Fact {
    pub label: String,
    pub value: Option<String>,
}

/// The registration at the PSP, for the connection's page.
pub struct RegistrationFact {
    pub badge: Badge,
    /// When it was last tried, as the viewer reads times.
    pub at: Option<String>,
    pub failed: bool,
}

#[derive(Template)]
#[template(path = "psps_detail.html")]
struct DetailPage {
    c: Page,
    row: Row,
    total: usize,
    environment: &'static str,
    created_at: i64,
    updated_at: i64,
    facts: Vec<Fact>,
    /// Full for people who may read the token (or when it carries none); masked otherwise.
    webhook_url: String,
    can_copy_url: bool,
    token: Option<String>,
    header: Option<String>,
    registration: RegistrationFact,
    registration_failed_text: String,
    instructions: Vec<String>,
    can_manage: bool,
    label: String,
    label_error: Option<String>,
    route_limit: String,
    route_limit_error: Option<String>,
    inputs: Vec<FieldInput>,
    alert: Option<FormAlert>,
    /// The version the page shows: every form posts it back, so a change made meanwhile by
    /// someone else is refused instead of undone.
    version: i64,
    /// Why the last post was not saved: the connection changed meanwhile.
    conflict: Option<String>,
}

impl DetailPage {
    /// "2 of 3": the connection's place in the routing order.
    fn place_text(&self) -> String {
        self.c.tf(
            "psps.facts.place",
            &[
                ("n", &self.row.place.to_string()),
                ("total", &self.total.to_string()),
            ],
        )
    }
}

/// What the merchant does (or need not do) so the PSP's notifications arrive.
fn instructions(lang: Lang, psp: &str, setup: Option<&WebhookSetup>) -> Vec<String> {
    let Some(setup) = setup else {
        return vec![lang.t("psps.setup.unavailable").to_owned()];
    };
    let mut lines = vec![match setup.registered_by_adapter {
        true => lang.tf("psps.setup.auto", &[("psp", psp)]),
        false => lang.tf("psps.setup.manual", &[("psp", psp)]),
    }];
    lines.push(match &setup.header {
        Some(header) => lang.tf("psps.setup.header", &[("psp", psp), ("header", header)]),
        None => lang.t("psps.setup.url_token").to_owned(),
    });
    if setup.psp_signs {
        lines.push(lang.tf("psps.setup.signature", &[("psp", psp)]));
    }
    lines.push(lang.tf("psps.setup.confirm", &[("psp", psp)]));
    lines
}

async fn detail_page(
    app: &App,
    viewer: &Viewer,
    view: CredentialView,
) -> Result<DetailPage, WebError> {
    let lang = viewer.lang;
    let views = credentials::list(app, &viewer.caller())
        .await
        .map_err(|e| internal(viewer, e))?;
    let place = views
        .iter()
        .position(|v| v.record.id == view.record.id)
        .map_or(views.len(), |i| i + 1);
    let adapter = app.runtime.adapter(&view.record.provider);
    let manifest = adapter.as_ref().map(|a| a.manifest());
    // Fields in the manifest's order, with their labels; without the adapter, by name.
    let facts = match manifest {
        Some(m) => m
            .credential_fields
            .iter()
            .filter_map(|f| fact(&view, &f.name, &f.label))
            .collect(),
        None => view
            .record
            .public_fields
            .keys()
            .chain(view.record.sealed_fields.keys())
            .filter_map(|name| fact(&view, name, name))
            .collect(),
    };
    let may_read_token = viewer.can(Action::RevealWebhookToken);
    let webhook = &view.webhook;
    let registration = RegistrationFact {
        badge: webhook_badge(lang, &view),
        at: webhook
            .registration
            .as_ref()
            .and_then(|r| crate::store::parse_rfc3339(&r.at))
            .map(|ms| super::page::format_time(lang, ms)),
        failed: webhook
            .registration
            .as_ref()
            .is_some_and(|r| r.status == RegistrationStatus::Failed),
    };
    let inputs = match manifest {
        Some(m) => field_inputs(
            lang,
            m,
            view.record.environment,
            &view.record.public_fields,
            Some(&saved_names(&view)),
        ),
        None => Vec::new(),
    };
    Ok(DetailPage {
        c: Page::new(viewer, "psps.detail_title"),
        row: Row::of(lang, &view, place),
        total: views.len(),
        environment: env_name(lang, view.record.environment),
        created_at: view.record.created_at,
        updated_at: view.record.updated_at,
        facts,
        webhook_url: match may_read_token {
            true => webhook.url.clone(),
            false => webhook.masked_url(),
        },
        can_copy_url: may_read_token || webhook.header.is_some(),
        token: may_read_token.then(|| webhook.token.to_string()),
        header: webhook.header.clone(),
        registration,
        registration_failed_text: lang.tf(
            "psps.webhook.registration_failed",
            &[("psp", &view.psp_name)],
        ),
        instructions: instructions(lang, &view.psp_name, webhook.setup.as_ref()),
        can_manage: viewer.can(Action::ManageCredentials),
        label: view.record.label.clone(),
        label_error: None,
        route_limit: view.record.route_limit.to_string(),
        route_limit_error: None,
        inputs,
        alert: None,
        version: view.record.version,
        conflict: None,
    })
}

/// The saved field names (values are not needed: secrets show as "saved").
fn saved_names(view: &CredentialView) -> BTreeMap<String, String> {
    view.record
        .public_fields
        .keys()
        .chain(view.record.sealed_fields.keys())
        .map(|name| (name.clone(), String::new()))
        .collect()
}

fn fact(view: &CredentialView, name: &str, label: &str) -> Option<Fact> {
    if let Some(value) = view.record.public_fields.get(name) {
        return Some(Fact {
            label: label.to_owned(),
            value: Some(value.clone()),
        });
    }
    view.record.sealed_fields.contains_key(name).then(|| Fact {
        label: label.to_owned(),
        value: None,
    })
}

async fn detail(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewCredentials)?;
    let view = found(&viewer, credentials::get(&app, &viewer.caller(), &id).await)?;
    render(&detail_page(&app, &viewer, view).await?)
}

/// The `Ok` of a lookup; a missing connection is the 404 page.
fn found<T>(viewer: &Viewer, outcome: Result<T, CredentialError>) -> Result<T, WebError> {
    outcome.map_err(|e| match e {
        CredentialError::NotFound => WebError::NotFound(viewer.lang),
        e => internal(viewer, e),
    })
}

/// The `version` a form posted back; a form without one (an older page) is checked against the
/// version read when the post arrived.
fn posted_version(viewer: &Viewer, form: &Pairs) -> Result<Option<i64>, WebError> {
    match value(form, "version") {
        "" => Ok(None),
        text => text
            .parse()
            .map(Some)
            .map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed")),
    }
}

/// 409: the connection as it is now, saying that the post was not saved because someone
/// changed it meanwhile.
async fn conflict_page(app: &App, viewer: &Viewer, id: &str) -> Result<Response, WebError> {
    let view = found(viewer, credentials::get(app, &viewer.caller(), id).await)?;
    let mut page = detail_page(app, viewer, view).await?;
    page.conflict = Some(viewer.lang.t("psps.conflict").to_owned());
    render_status(StatusCode::CONFLICT, &page)
}

fn internal(viewer: &Viewer, error: CredentialError) -> WebError {
    WebError::internal(viewer.lang, error)
}

fn back_to(id: &str) -> String {
    format!("/dashboard/psps/{id}")
}

async fn settings(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let caller = viewer.caller();
    let record = found(&viewer, credentials::find(&app, &caller, &id).await)?;
    let typed_label = value(&form, "label");
    let typed_limit = value(&form, "route_limit");
    let label = match parse_label(viewer.lang, typed_label) {
        Ok(Some(label)) => Ok(label),
        Ok(None) => Err(viewer.lang.t("psps.error.label").to_owned()),
        Err(message) => Err(message),
    };
    let route_limit = typed_limit
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|n| credentials::ROUTE_LIMITS.contains(n))
        .ok_or_else(|| viewer.lang.t("psps.error.route_limit").to_owned());
    let (label, route_limit) = match (label, route_limit) {
        (Ok(label), Ok(route_limit)) => (label, route_limit),
        (label, route_limit) => {
            let view = found(&viewer, credentials::get(&app, &caller, &id).await)?;
            let mut page = detail_page(&app, &viewer, view).await?;
            page.label = typed_label.to_owned();
            page.route_limit = typed_limit.to_owned();
            page.label_error = label.err();
            page.route_limit_error = route_limit.err();
            return render_status(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    let change = CredentialChange {
        label: Some(label),
        route_limit: Some(route_limit),
        expected_version: posted_version(&viewer, &form)?,
        ..Default::default()
    };
    match credentials::update(&app, &caller, record, change).await {
        Err(CredentialError::Conflict { .. }) => conflict_page(&app, &viewer, &id).await,
        outcome => {
            found(&viewer, outcome)?;
            Ok(see_other_with(&back_to(&id), "flash.psps_saved"))
        }
    }
}

async fn replace_fields(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let caller = viewer.caller();
    let record = found(&viewer, credentials::find(&app, &caller, &id).await)?;
    let typed = posted_fields(&form);
    // A secret left empty keeps its saved value: the form never shows secrets.
    let secret = |name: &str| record.sealed_fields.contains_key(name);
    let fields: BTreeMap<String, String> = typed
        .iter()
        .filter(|(name, value)| !(secret(name) && value.trim().is_empty()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let change = CredentialChange {
        fields: Some(fields),
        expected_version: posted_version(&viewer, &form)?,
        ..Default::default()
    };
    match credentials::update(&app, &caller, record, change).await {
        Ok(_) => Ok(see_other_with(&back_to(&id), "flash.psps_fields_saved")),
        Err(CredentialError::Conflict { .. }) => conflict_page(&app, &viewer, &id).await,
        Err(e) => {
            let view = found(&viewer, credentials::get(&app, &caller, &id).await)?;
            let mut page = detail_page(&app, &viewer, view).await?;
            for input in &mut page.inputs {
                input.value = typed.get(&input.name).cloned().unwrap_or_default();
            }
            let psp_name = page.row.psp_name.clone();
            page.alert = form_refusal(&viewer, &psp_name, &mut page.inputs, e)?;
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}

async fn set_active(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let (active, flash) = match value(&form, "active") {
        "true" => (true, "flash.psps_activated"),
        "false" => (false, "flash.psps_deactivated"),
        _ => return Err(WebError::BadRequest(viewer.lang, "error.form_malformed")),
    };
    let caller = viewer.caller();
    let record = found(&viewer, credentials::find(&app, &caller, &id).await)?;
    let change = CredentialChange {
        active: Some(active),
        expected_version: posted_version(&viewer, &form)?,
        ..Default::default()
    };
    match credentials::update(&app, &caller, record, change).await {
        Err(CredentialError::Conflict { .. }) => conflict_page(&app, &viewer, &id).await,
        outcome => {
            found(&viewer, outcome)?;
            Ok(see_other_with(&back_to(&id), flash))
        }
    }
}

async fn move_step(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    let step = match value(&form, "direction") {
        "up" => Move::Up,
        "down" => Move::Down,
        _ => return Err(WebError::BadRequest(viewer.lang, "error.form_malformed")),
    };
    found(
        &viewer,
        credentials::reorder(&app, &viewer.caller(), &id, step).await,
    )?;
    Ok(see_other_with("/dashboard/psps", "flash.psps_moved"))
}

async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Pairs>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageCredentials)?;
    found(
        &viewer,
        credentials::remove(&app, &viewer.caller(), &id).await,
    )?;
    Ok(see_other_with("/dashboard/psps", "flash.psps_deleted"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_of_the_other_environment_is_explained_in_each_language() {
        let e = FieldError {
            field: "secret-key".into(),
            problem: FieldProblem::OtherEnvironment {
                environment: Environment::Test,
                found: "sk_live_".into(),
                expected: "sk_test_".into(),
            },
        };
        assert_eq!(
            field_message(Lang::En, "Stripe", &e),
            "This value starts with “sk_live_”, which belongs to live, but you are in the test \
             environment. Paste the value that starts with “sk_test_”, or switch to live at the \
             top of the page."
        );
        assert_eq!(
            field_message(Lang::PtBr, "Stripe", &e),
            "Este valor começa com “sk_live_”, que é de produção, mas você está no ambiente de \
             teste. Cole o valor que começa com “sk_test_” ou mude para produção no alto da \
             página."
        );
    }
}
