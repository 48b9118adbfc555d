//! What every dashboard page shares: the [`Page`] its template reads (language, navigation,
//! CSRF token, environment, flash message), rendering, redirects, and the one error type of
//! the dashboard, [`WebError`], which answers with a page (never a blank screen or JSON).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::i18n::Lang;
use super::session::{FLASH_COOKIE, Viewer};
use crate::domain::Environment;
use crate::policy::{Action, Role};

/// One entry of the side navigation.
pub struct NavItem {
    pub href: &'static str,
    /// Catalog key of its label.
    pub label: &'static str,
    pub current: bool,
}

/// The navigation, in order, with the action that shows each entry.
const NAV: &[(&str, &str, Action)] = &[
    ("/dashboard", "nav.overview", Action::ViewOverview),
    ("/dashboard/cashier", "nav.cashier", Action::UseCashier),
    ("/dashboard/charges", "nav.charges", Action::ViewCharges),
    ("/dashboard/statement", "nav.statement", Action::ViewCharges),
    ("/dashboard/links", "nav.links", Action::ViewPaymentLinks),
    ("/dashboard/psps", "nav.psps", Action::ViewCredentials),
    ("/dashboard/api-keys", "nav.api_keys", Action::ViewApiKeys),
    (
        "/dashboard/webhooks",
        "nav.webhooks",
        Action::ViewWebhookEndpoints,
    ),
    ("/dashboard/team", "nav.team", Action::ViewTeam),
    ("/dashboard/plan", "nav.plan", Action::ManagePlan),
    ("/dashboard/settings/sso", "nav.sso", Action::ManageSso),
    ("/dashboard/audit", "nav.audit", Action::ViewAudit),
    ("/dashboard/adapters", "nav.adapters", Action::ViewAdapters),
];

/// What the layout template needs; every page template has one as `c`.
pub struct Page {
    pub lang: Lang,
    /// Catalog key of the page's title.
    pub title: &'static str,
    pub csrf: String,
    pub user_name: String,
    pub user_email: String,
    pub role: Role,
    pub merchant_name: String,
    pub environment: Environment,
    pub nav: Vec<NavItem>,
    pub flash: Option<String>,
    /// The request's path and query, where the language and environment switches return.
    pub path: String,
}

impl Page {
    pub fn new(viewer: &Viewer, title: &'static str) -> Page {
        let path = viewer.path.split('?').next().unwrap_or("/dashboard");
        // The longest matching entry is the current one (`/dashboard` is everyone's prefix).
        let current = NAV
            .iter()
            .filter(|(href, _, _)| path == *href || path.starts_with(&format!("{href}/")))
            .map(|(href, _, _)| *href)
            .max_by_key(|href| href.len());
        Page {
            lang: viewer.lang,
            title,
            csrf: viewer.signed_in.session.csrf_token.clone(),
            user_name: viewer.signed_in.user.name.clone(),
            user_email: viewer.signed_in.user.email.clone(),
            role: viewer.signed_in.role,
            merchant_name: viewer.signed_in.merchant_name.clone(),
            environment: viewer.signed_in.session.environment,
            nav: NAV
                .iter()
                .filter(|(_, _, action)| viewer.can(*action))
                .map(|(href, label, _)| NavItem {
                    href,
                    label,
                    current: Some(*href) == current,
                })
                .collect(),
            flash: viewer.flash.clone(),
            path: viewer.path.clone(),
        }
    }

    pub fn t<'a>(&self, key: &'a str) -> &'a str {
        self.lang.t(key)
    }

    pub fn tf(&self, key: &str, args: &[(&str, &str)]) -> String {
        self.lang.tf(key, args)
    }

    pub fn money(&self, centavos: impl Int) -> String {
        self.lang.money(centavos.int())
    }

    pub fn time(&self, ms: impl Int) -> String {
        format_time(self.lang, ms.int())
    }

    pub fn is_live(&self) -> bool {
        self.environment == Environment::Live
    }

    pub fn role_label(&self) -> &'static str {
        role_key(self.role)
    }

    /// The static files' version, for their URLs.
    pub fn v(&self) -> &'static str {
        super::assets::version()
    }
}

/// An integer as templates hand it over: by value or through references, depending on the
/// expression (a field, a loop variable, a pattern binding).
pub trait Int {
    fn int(self) -> i64;
}

impl Int for i64 {
    fn int(self) -> i64 {
        self
    }
}

impl<T: Int + Copy> Int for &T {
    fn int(self) -> i64 {
        (*self).int()
    }
}

/// The catalog key of a role's name.
pub fn role_key(role: Role) -> &'static str {
    match role {
        Role::Owner => "role.owner",
        Role::Manager => "role.manager",
        Role::Cashier => "role.cashier",
        Role::ReadOnly => "role.read_only",
    }
}

/// A stored time as a person in Brazil reads it: São Paulo time (UTC−3 all year since 2019).
pub fn format_time(lang: Lang, ms: i64) -> String {
    let offset = time::UtcOffset::from_hms(-3, 0, 0).expect("a valid offset");
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .to_offset(offset);
    match lang {
        Lang::PtBr => format!(
            "{:02}/{:02}/{} {:02}:{:02}",
            t.day(),
            u8::from(t.month()),
            t.year(),
            t.hour(),
            t.minute()
        ),
        Lang::En => format!(
            "{}-{:02}-{:02} {:02}:{:02}",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute()
        ),
    }
}

/// Renders a template as a page.
pub fn render(template: &impl askama::Template) -> Result<Response, WebError> {
    render_status(StatusCode::OK, template)
}

/// Renders a template with a status (422 for a form with errors).
pub fn render_status(
    status: StatusCode,
    template: &impl askama::Template,
) -> Result<Response, WebError> {
    let html = template
        .render()
        .map_err(|e| WebError::internal(Lang::default(), format!("template: {e}")))?;
    Ok((
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html,
    )
        .into_response())
}

/// 303 to `path` (after a form).
pub fn see_other(path: &str) -> Response {
    Redirect::to(path).into_response()
}

/// 303 to `path`, leaving a one-time message (a `flash.` catalog key) for the next page.
pub fn see_other_with(path: &str, flash: &'static str) -> Response {
    debug_assert!(flash.starts_with("flash."));
    let mut response = see_other(path);
    if let Ok(value) = HeaderValue::from_str(&format!(
        "{FLASH_COOKIE}={flash}; Path=/; HttpOnly; SameSite=Lax; Max-Age=60"
    )) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// The dashboard's one error type: each case is a page saying what happened and what to do.
#[derive(Debug)]
pub enum WebError {
    /// No live session: go sign in, then come back to `next`.
    SignIn {
        next: String,
    },
    /// The role does not allow this.
    Forbidden(Lang),
    NotFound(Lang),
    /// The form's CSRF token is missing or stale (an old tab, a cross-site post).
    Csrf(Lang),
    /// A request the dashboard's own forms never send; the key says what.
    BadRequest(Lang, &'static str),
    /// Logged; the page says only that it failed.
    Internal(Lang),
    /// The merchant's plan does not allow this: the page says the plan, its limit, the usage
    /// and the smallest plan that allows it ([`super::plan::refusal`]).
    PlanLimit(Lang, crate::plans::LimitReached),
}

impl WebError {
    pub fn internal(lang: Lang, error: impl std::fmt::Display) -> WebError {
        tracing::error!(request_id = %crate::api::request_id::current(), error = %error, "dashboard request failed");
        WebError::Internal(lang)
    }
}

impl From<crate::store::StoreError> for WebError {
    fn from(e: crate::store::StoreError) -> Self {
        WebError::internal(Lang::default(), e)
    }
}

#[derive(askama::Template)]
#[template(path = "error.html")]
struct ErrorPage {
    lang: Lang,
    title: &'static str,
    message: String,
    /// What to do, when the page knows (a plan's limit).
    hint: Option<String>,
    /// Link to the plan page (a plan's limit).
    plan_link: bool,
    request_id: String,
}

impl ErrorPage {
    fn t<'a>(&self, key: &'a str) -> &'a str {
        self.lang.t(key)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, lang, title, message) = match self {
            WebError::SignIn { next } => {
                let next = if next.starts_with("/dashboard") {
                    next
                } else {
                    "/dashboard".into()
                };
                let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
                return see_other(&format!("/dashboard/sign-in?{query}"));
            }
            WebError::Forbidden(lang) => (
                StatusCode::FORBIDDEN,
                lang,
                "error.forbidden.title",
                "error.forbidden.message",
            ),
            WebError::NotFound(lang) => (
                StatusCode::NOT_FOUND,
                lang,
                "error.not_found.title",
                "error.not_found.message",
            ),
            WebError::Csrf(lang) => (
                StatusCode::FORBIDDEN,
                lang,
                "error.csrf.title",
                "error.csrf.message",
            ),
            WebError::BadRequest(lang, key) => (
                StatusCode::BAD_REQUEST,
                lang,
                "error.bad_request.title",
                key,
            ),
            WebError::Internal(lang) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                lang,
                "error.internal.title",
                "error.internal",
            ),
            WebError::PlanLimit(lang, reached) => {
                let (message, hint) = super::plan::refusal(lang, &reached);
                let page = ErrorPage {
                    lang,
                    title: "error.plan.title",
                    message,
                    hint: Some(hint),
                    plan_link: true,
                    request_id: crate::api::request_id::current(),
                };
                return error_page(StatusCode::FORBIDDEN, &page);
            }
        };
        let page = ErrorPage {
            lang,
            title,
            message: lang.t(message).to_owned(),
            hint: None,
            plan_link: false,
            request_id: crate::api::request_id::current(),
        };
        error_page(status, &page)
    }
}

fn error_page(status: StatusCode, page: &ErrorPage) -> Response {
    match askama::Template::render(page) {
        Ok(html) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
        Err(_) => (status, page.message.clone()).into_response(),
    }
}
