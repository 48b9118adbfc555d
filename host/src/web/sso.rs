//! Single sign-on in the dashboard: the owner's settings page (`/dashboard/settings/sso`,
//! Enterprise plan), "Sign in with SSO" by e-mail address (the sign-in page's form) or by
//! merchant (a link to bookmark, `/dashboard/sso/<merchant id>`), the provider's callback, and
//! a page for every way a sign-in can fail that says what happened and what to do.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::auth::{Public, safe_next, signed_in, with_csrf_cookie};
use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer, Visitor, VisitorPosted, cookie, set_cookie};
use crate::app::App;
use crate::plans::{LimitReached, Resource};
use crate::policy::{Action, Role};
use crate::sso::oidc::OidcError;
use crate::sso::{self, Settings, SettingsForm, SsoError};

/// The browser's half of a sign-in under way: the state sent to the provider.
pub const STATE_COOKIE: &str = "pgw_sso_state";

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/settings/sso", get(settings_page).post(save))
        .route("/dashboard/settings/sso/remove", post(remove))
        .route("/dashboard/sso/start", post(start_by_email))
        .route(sso::CALLBACK_PATH, get(callback))
        .route("/dashboard/sso/{merchant_id}", get(start_by_merchant))
}

/// An SSO error as the person reads it: what happened, what to do, and the provider's or the
/// library's own words when there are some.
struct Words {
    message: String,
    hint: Option<String>,
    detail: Option<String>,
}

fn words(lang: Lang, error: &SsoError) -> Words {
    let t = |key: &str| lang.t(key).to_owned();
    let tf = |key: &str, args: &[(&str, &str)]| lang.tf(key, args);
    let say = |message: String, hint: Option<String>, detail: Option<String>| Words {
        message,
        hint,
        detail,
    };
    match error {
        SsoError::IssuerInvalid => say(t("sso.error.issuer_invalid"), None, None),
        SsoError::ClientIdInvalid => say(t("sso.error.client_id_invalid"), None, None),
        SsoError::SecretMissing => say(t("sso.error.secret_missing"), None, None),
        SsoError::DomainsMissing => say(t("sso.error.domains_missing"), None, None),
        SsoError::DomainInvalid(d) => {
            say(tf("sso.error.domain_invalid", &[("domain", d)]), None, None)
        }
        SsoError::TooManyDomains => say(t("sso.error.too_many_domains"), None, None),
        SsoError::DomainTaken(d) => say(
            tf("sso.error.domain_taken", &[("domain", d)]),
            Some(t("sso.hint.domain_taken")),
            None,
        ),
        SsoError::RoleInvalid => say(t("sso.error.role_invalid"), None, None),
        SsoError::ClaimInvalid => say(t("sso.error.claim_invalid"), None, None),
        SsoError::MappingInvalid(line) => say(
            tf("sso.error.mapping_invalid", &[("line", line)]),
            None,
            None,
        ),
        SsoError::MappingWithoutClaim => say(t("sso.error.mapping_without_claim"), None, None),
        SsoError::Provider(e) => provider_words(lang, e),
        SsoError::EmailInvalid(e) => {
            say(tf("sso.error.email_invalid", &[("email", e)]), None, None)
        }
        SsoError::UnknownDomain(d) => say(
            tf("sso.error.unknown_domain", &[("domain", d)]),
            Some(t("sso.hint.unknown_domain")),
            None,
        ),
        SsoError::NotConfigured => say(
            t("sso.error.not_configured"),
            Some(t("sso.hint.use_password")),
            None,
        ),
        SsoError::Plan(reached) => {
            let (message, _) = super::plan::refusal(lang, reached);
            say(message, Some(t("sso.hint.plan")), None)
        }
        SsoError::StateMismatch => say(
            t("sso.error.state_mismatch"),
            Some(t("sso.hint.start_again_same_browser")),
            None,
        ),
        SsoError::AttemptExpired => say(
            t("sso.error.attempt_expired"),
            Some(t("sso.hint.start_again")),
            None,
        ),
        SsoError::Denied => say(t("sso.error.denied"), Some(t("sso.hint.denied")), None),
        SsoError::ProviderRefused(detail) => say(
            t("sso.error.provider_refused"),
            Some(t("sso.hint.ask_admin")),
            Some(detail.clone()),
        ),
        SsoError::CodeMissing => say(
            t("sso.error.code_missing"),
            Some(t("sso.hint.start_again")),
            None,
        ),
        SsoError::EmailMissing => say(
            t("sso.error.email_missing"),
            Some(t("sso.hint.email_missing")),
            None,
        ),
        SsoError::EmailUnverified(e) => say(
            tf("sso.error.email_unverified", &[("email", e)]),
            Some(t("sso.hint.ask_admin")),
            None,
        ),
        SsoError::DomainNotAllowed(e) => say(
            tf("sso.error.domain_not_allowed", &[("email", e)]),
            Some(t("sso.hint.domain_not_allowed")),
            None,
        ),
        SsoError::NotAMember(e) => say(
            tf("sso.error.not_a_member", &[("email", e)]),
            Some(t("sso.hint.not_a_member")),
            None,
        ),
        SsoError::Vault(_) | SsoError::Store(_) => say(t("error.internal"), None, None),
    }
}

fn provider_words(lang: Lang, error: &OidcError) -> Words {
    let t = |key: &str| lang.t(key).to_owned();
    let tf = |key: &str, args: &[(&str, &str)]| lang.tf(key, args);
    let (message, hint, detail) = match error {
        OidcError::Unreachable { url, detail } => (
            tf("sso.error.unreachable", &[("url", url)]),
            t("sso.hint.unreachable"),
            Some(detail.clone()),
        ),
        OidcError::NotDiscovery { url, status } => (
            tf(
                "sso.error.not_discovery",
                &[("url", url), ("status", &status.to_string())],
            ),
            t("sso.hint.issuer"),
            None,
        ),
        OidcError::Invalid(detail) => (
            t("sso.error.invalid_provider"),
            t("sso.hint.issuer"),
            Some(detail.clone()),
        ),
        OidcError::IssuerMismatch { expected, found } => (
            tf(
                "sso.error.issuer_mismatch",
                &[("expected", expected), ("found", found)],
            ),
            tf("sso.hint.issuer_mismatch", &[("found", found)]),
            None,
        ),
        OidcError::Exchange(detail) => (
            t("sso.error.exchange"),
            t("sso.hint.exchange"),
            Some(detail.clone()),
        ),
        OidcError::NoIdToken => (t("sso.error.no_id_token"), t("sso.hint.ask_admin"), None),
        OidcError::Expired(detail) => (
            t("sso.error.expired"),
            t("sso.hint.expired"),
            Some(detail.clone()),
        ),
        OidcError::ClockSkew(detail) => (
            t("sso.error.clock_skew"),
            t("sso.hint.clock_skew"),
            Some(detail.clone()),
        ),
        OidcError::TokenInvalid(detail) => (
            t("sso.error.token_invalid"),
            t("sso.hint.ask_admin"),
            Some(detail.clone()),
        ),
    };
    Words {
        message,
        hint: Some(hint),
        detail,
    }
}

/// A failed sign-in's page (before sign-in: the public layout).
#[derive(Template)]
#[template(path = "sso_error.html")]
struct ErrorPage {
    c: Public,
    message: String,
    hint: Option<String>,
    detail: Option<String>,
}

fn error_page(visitor: &Visitor, error: &SsoError) -> Result<Response, WebError> {
    if let SsoError::Store(_) | SsoError::Vault(_) = error {
        return Err(WebError::internal(visitor.lang, error));
    }
    let status = match error {
        SsoError::Provider(
            OidcError::Unreachable { .. }
            | OidcError::NotDiscovery { .. }
            | OidcError::Invalid(_)
            | OidcError::IssuerMismatch { .. }
            | OidcError::Exchange(_)
            | OidcError::NoIdToken,
        ) => StatusCode::BAD_GATEWAY,
        SsoError::Plan(_) | SsoError::Denied | SsoError::DomainNotAllowed(_) => {
            StatusCode::FORBIDDEN
        }
        SsoError::NotAMember(_) => StatusCode::FORBIDDEN,
        SsoError::UnknownDomain(_) | SsoError::NotConfigured => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    };
    let Words {
        message,
        hint,
        detail,
    } = words(visitor.lang, error);
    let mut response = render_status(
        status,
        &ErrorPage {
            c: Public::new(visitor, "sso.error.title", "/dashboard/sign-in"),
            message,
            hint,
            detail,
        },
    )?;
    forget_state(&mut response);
    Ok(response)
}

fn forget_state(response: &mut Response) {
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{STATE_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"
    )) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// To the provider, the state in a cookie that outlives the attempt by nothing.
fn to_provider(app: &App, started: sso::Started) -> Response {
    with_state(app, super::page::see_other(&started.url), &started.state)
}

#[derive(Template)]
#[template(path = "sso_redirect.html")]
struct RedirectPage {
    c: Public,
    url: String,
}

/// To the provider after a form: the dashboard's `form-action 'self'` forbids a form's
/// redirect to another site, so a page sends the browser on (a `Refresh`, and a link).
fn to_provider_page(
    app: &App,
    visitor: &Visitor,
    started: sso::Started,
) -> Result<Response, WebError> {
    let mut response = render(&RedirectPage {
        c: Public::new(visitor, "sso.sign_in.title", "/dashboard/sign-in"),
        url: started.url.clone(),
    })?;
    if let Ok(v) = HeaderValue::from_str(&format!("0;url={}", started.url)) {
        response.headers_mut().insert("refresh", v);
    }
    Ok(with_state(app, response, &started.state))
}

fn with_state(app: &App, mut response: Response, state: &str) -> Response {
    let age = sso::ATTEMPT_TTL_MS / 1000;
    if let Ok(v) = HeaderValue::from_str(&set_cookie(app, STATE_COOKIE, state, Some(age))) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StartForm {
    email: String,
    next: String,
}

/// "Sign in with SSO" by e-mail address: its domain names the merchant.
async fn start_by_email(
    State(app): State<Arc<App>>,
    VisitorPosted { visitor, form }: VisitorPosted<StartForm>,
) -> Result<Response, WebError> {
    let started = match sso::merchant_for_email(&app, &form.email).await {
        Ok(merchant_id) => sso::begin(&app, &merchant_id, safe_next(&form.next)).await,
        Err(e) => Err(e),
    };
    match started {
        Ok(started) => to_provider_page(&app, &visitor, started),
        Err(e) => {
            if let SsoError::UnknownDomain(domain) = &e {
                tracing::info!(domain, "SSO sign-in for a domain no merchant has");
            }
            with_page_csrf(&app, &visitor, error_page(&visitor, &e))
        }
    }
}

/// "Sign in with SSO" by merchant: the link the settings page gives to share.
async fn start_by_merchant(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    Path(merchant_id): Path<String>,
    Query(query): Query<NextQuery>,
) -> Result<Response, WebError> {
    if merchant_id.len() > 64 {
        return Err(WebError::NotFound(visitor.lang));
    }
    match sso::begin(&app, &merchant_id, safe_next(&query.next)).await {
        Ok(started) => Ok(to_provider(&app, started)),
        Err(e) => with_page_csrf(&app, &visitor, error_page(&visitor, &e)),
    }
}

fn with_page_csrf(
    app: &App,
    visitor: &Visitor,
    page: Result<Response, WebError>,
) -> Result<Response, WebError> {
    page.map(|response| with_csrf_cookie(app, visitor, response))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NextQuery {
    next: String,
}

/// The provider sends the person back here, with a code or an error.
async fn callback(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    headers: axum::http::HeaderMap,
    Query(query): Query<sso::Callback>,
) -> Result<Response, WebError> {
    let state = cookie(&headers, STATE_COOKIE);
    match sso::finish(&app, state, &query, visitor.ip).await {
        Ok(done) => {
            let mut response = signed_in(&app, done.session, &done.next);
            forget_state(&mut response);
            Ok(response)
        }
        Err(e) => with_page_csrf(&app, &visitor, error_page(&visitor, &e)),
    }
}

#[derive(Template)]
#[template(path = "sso_settings.html")]
struct SettingsPage {
    c: Page,
    /// The form's values (the secret never: it is not shown back).
    issuer_url: String,
    client_id: String,
    secret_saved: bool,
    domains: String,
    default_role: String,
    role_claim: String,
    role_mapping: String,
    require_sso: bool,
    configured: bool,
    callback_url: String,
    sign_in_link: String,
    error: Option<Words>,
}

impl SettingsPage {
    fn roles(&self) -> [(&'static str, &'static str); 3] {
        [Role::Manager, Role::Cashier, Role::ReadOnly]
            .map(|r| (r.as_str(), super::page::role_key(r)))
    }
}

/// The page's guard: the owner's action, on a plan with single sign-on.
fn allowed(viewer: &Viewer) -> Result<(), WebError> {
    viewer.require(Action::ManageSso)?;
    let plan = viewer.signed_in.plan;
    if !crate::plans::allows_sso(plan) {
        return Err(WebError::PlanLimit(
            viewer.lang,
            LimitReached::feature(plan, Resource::Sso),
        ));
    }
    Ok(())
}

async fn page(app: &App, viewer: &Viewer) -> Result<SettingsPage, WebError> {
    let merchant_id = &viewer.signed_in.session.merchant_id;
    let saved = app.store.sso_config(merchant_id).await?;
    let mut page = SettingsPage {
        c: Page::new(viewer, "sso.title"),
        issuer_url: String::new(),
        client_id: String::new(),
        secret_saved: false,
        domains: String::new(),
        default_role: Role::ReadOnly.as_str().to_owned(),
        role_claim: String::new(),
        role_mapping: String::new(),
        require_sso: false,
        configured: saved.is_some(),
        callback_url: sso::redirect_uri(app),
        sign_in_link: sso::sign_in_link(app, merchant_id),
        error: None,
    };
    if let Some(saved) = saved {
        page.issuer_url = saved.issuer_url;
        page.client_id = saved.client_id;
        page.secret_saved = true;
        page.domains = saved.domains.join(", ");
        page.default_role = saved.default_role.as_str().to_owned();
        page.role_claim = saved.role_claim.unwrap_or_default();
        page.role_mapping = sso::mapping_text(&saved.role_mapping);
        page.require_sso = saved.require_sso;
    }
    Ok(page)
}

async fn settings_page(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    allowed(&viewer)?;
    render(&page(&app, &viewer).await?)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SaveForm {
    issuer_url: String,
    client_id: String,
    client_secret: String,
    domains: String,
    default_role: String,
    role_claim: String,
    role_mapping: String,
    /// A ticked checkbox sends `on`; an unticked one sends nothing.
    require_sso: Option<String>,
}

async fn save(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<SaveForm>,
) -> Result<Response, WebError> {
    allowed(&viewer)?;
    let typed = SettingsForm {
        issuer_url: form.issuer_url,
        client_id: form.client_id,
        client_secret: Zeroizing::new(form.client_secret),
        domains: form.domains,
        default_role: form.default_role,
        role_claim: form.role_claim,
        role_mapping: form.role_mapping,
        require_sso: form.require_sso.is_some(),
    };
    let outcome = match Settings::parse(&typed) {
        Ok(settings) => sso::save(&app, &viewer.signed_in, settings, viewer.ip).await,
        Err(e) => Err(e),
    };
    let error = match outcome {
        Ok(()) => return Ok(see_other_with("/dashboard/settings/sso", "flash.sso_saved")),
        Err(SsoError::Plan(reached)) => return Err(WebError::PlanLimit(viewer.lang, reached)),
        Err(e @ (SsoError::Store(_) | SsoError::Vault(_))) => {
            return Err(WebError::internal(viewer.lang, e));
        }
        Err(e) => e,
    };
    // The form again, as typed (but the secret), with what to fix.
    let mut page = page(&app, &viewer).await?;
    page.issuer_url = typed.issuer_url.trim().to_owned();
    page.client_id = typed.client_id.trim().to_owned();
    page.domains = typed.domains.clone();
    page.default_role = typed.default_role.clone();
    page.role_claim = typed.role_claim.trim().to_owned();
    page.role_mapping = typed.role_mapping.clone();
    page.require_sso = typed.require_sso;
    page.error = Some(words(viewer.lang, &error));
    let status = match error {
        SsoError::Provider(_) => StatusCode::BAD_GATEWAY,
        SsoError::DomainTaken(_) => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    render_status(status, &page)
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn remove(
    State(app): State<Arc<App>>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageSso)?;
    match sso::remove(&app, &viewer.signed_in, viewer.ip).await {
        Ok(true) => Ok(see_other_with(
            "/dashboard/settings/sso",
            "flash.sso_removed",
        )),
        Ok(false) => Err(WebError::NotFound(viewer.lang)),
        Err(e) => Err(WebError::internal(viewer.lang, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error has words in both languages (no catalog key shows through).
    #[test]
    fn every_error_has_words() {
        let reached = LimitReached::feature(crate::plans::PlanId::Pro, Resource::Sso);
        let errors = [
            SsoError::IssuerInvalid,
            SsoError::ClientIdInvalid,
            SsoError::SecretMissing,
            SsoError::DomainsMissing,
            SsoError::DomainInvalid("x".into()),
            SsoError::TooManyDomains,
            SsoError::DomainTaken("acme.com".into()),
            SsoError::RoleInvalid,
            SsoError::ClaimInvalid,
            SsoError::MappingInvalid("x".into()),
            SsoError::MappingWithoutClaim,
            SsoError::EmailInvalid("x".into()),
            SsoError::UnknownDomain("x.com".into()),
            SsoError::NotConfigured,
            SsoError::Plan(reached),
            SsoError::StateMismatch,
            SsoError::AttemptExpired,
            SsoError::Denied,
            SsoError::ProviderRefused("x".into()),
            SsoError::CodeMissing,
            SsoError::EmailMissing,
            SsoError::EmailUnverified("a@b.com".into()),
            SsoError::DomainNotAllowed("a@b.com".into()),
            SsoError::NotAMember("a@b.com".into()),
            SsoError::Provider(OidcError::Unreachable {
                url: "u".into(),
                detail: "d".into(),
            }),
            SsoError::Provider(OidcError::NotDiscovery {
                url: "u".into(),
                status: 404,
            }),
            SsoError::Provider(OidcError::Invalid("d".into())),
            SsoError::Provider(OidcError::IssuerMismatch {
                expected: "e".into(),
                found: "f".into(),
            }),
            SsoError::Provider(OidcError::Exchange("d".into())),
            SsoError::Provider(OidcError::NoIdToken),
            SsoError::Provider(OidcError::Expired("d".into())),
            SsoError::Provider(OidcError::ClockSkew("d".into())),
            SsoError::Provider(OidcError::TokenInvalid("d".into())),
        ];
        for lang in Lang::ALL {
            for error in &errors {
                let w = words(lang, error);
                for text in [Some(&w.message), w.hint.as_ref()].into_iter().flatten() {
                    assert!(
                        !text.contains("sso."),
                        "{error:?} in {}: {text}",
                        lang.tag()
                    );
                    assert!(!text.contains('{'), "{error:?} in {}: {text}", lang.tag());
                }
            }
        }
    }
}
