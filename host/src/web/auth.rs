//! Getting in and out: sign-up (a merchant and its owner, free, no card), sign-in, sign-out,
//! password change, accepting a team invitation, and the language and test/live switches.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other, see_other_with};
use super::session::{
    CSRF_COOKIE, LANG_COOKIE, Posted, SESSION_COOKIE, Viewer, Visitor, VisitorPosted, set_cookie,
};
use crate::accounts::{self, AccountError, NewSession, SignUp};
use crate::app::App;
use crate::domain::Environment;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/sign-up", get(sign_up_page).post(sign_up))
        .route("/dashboard/sign-in", get(sign_in_page).post(sign_in))
        .route("/dashboard/sign-out", post(sign_out))
        .route(
            "/dashboard/account",
            get(account_page).post(change_password),
        )
        .route(
            "/dashboard/invitations/{token}",
            get(invitation_page).post(accept_invitation),
        )
        .route("/dashboard/language", get(language))
        .route("/dashboard/environment", post(environment))
}

/// What the pages before sign-in share (the `auth_layout.html` context).
pub struct Public {
    pub lang: Lang,
    pub csrf: String,
    pub title: &'static str,
    /// Where the language switch returns.
    pub path: String,
}

impl Public {
    pub(super) fn new(visitor: &Visitor, title: &'static str, path: &str) -> Public {
        Public {
            lang: visitor.lang,
            csrf: visitor.csrf.clone(),
            title,
            path: path.to_owned(),
        }
    }

    pub fn t<'a>(&self, key: &'a str) -> &'a str {
        self.lang.t(key)
    }

    pub fn v(&self) -> &'static str {
        super::assets::version()
    }
}

/// An account error as the person reads it.
fn account_message(lang: Lang, e: &AccountError) -> String {
    if let AccountError::Store(inner) = e {
        tracing::error!(error = %inner, "dashboard account operation failed");
    }
    // The invitee cannot change the plan: they are told whom to ask.
    if let AccountError::PlanLimit(_) = e {
        return lang.t("plan.invitation_full").to_owned();
    }
    match e.minutes() {
        Some(minutes) => lang.tf(e.code(), &[("minutes", &minutes.to_string())]),
        None => lang.t(e.code()).to_owned(),
    }
}

/// Where to go after sign-in: a dashboard path only (never another site).
pub(super) fn safe_next(next: &str) -> &str {
    if next.starts_with("/dashboard") && !next.starts_with("//") && !next.contains('\\') {
        next
    } else {
        "/dashboard"
    }
}

/// Sets the visitor's CSRF cookie on a response when it is new.
pub(super) fn with_csrf_cookie(app: &App, visitor: &Visitor, mut response: Response) -> Response {
    if visitor.new_csrf
        && let Ok(v) = HeaderValue::from_str(&set_cookie(app, CSRF_COOKIE, &visitor.csrf, None))
    {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

/// Signs the session's cookie in and goes to `next`.
pub(super) fn signed_in(app: &App, session: NewSession, next: &str) -> Response {
    let mut response = see_other(safe_next(next));
    let age = app.config.sessions.absolute.as_secs() as i64;
    if let Ok(v) =
        HeaderValue::from_str(&set_cookie(app, SESSION_COOKIE, &session.token, Some(age)))
    {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

#[derive(Template)]
#[template(path = "sign_up.html")]
struct SignUpPage {
    c: Public,
    business_name: String,
    name: String,
    email: String,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SignUpForm {
    business_name: String,
    name: String,
    email: String,
    password: String,
}

async fn sign_up_page(State(app): State<Arc<App>>, visitor: Visitor) -> Result<Response, WebError> {
    let page = SignUpPage {
        c: Public::new(&visitor, "sign_up.title", "/dashboard/sign-up"),
        business_name: String::new(),
        name: String::new(),
        email: String::new(),
        error: None,
    };
    Ok(with_csrf_cookie(&app, &visitor, render(&page)?))
}

async fn sign_up(
    State(app): State<Arc<App>>,
    VisitorPosted { visitor, form }: VisitorPosted<SignUpForm>,
) -> Result<Response, WebError> {
    let outcome = accounts::sign_up(
        &app,
        SignUp {
            business_name: &form.business_name,
            name: &form.name,
            email: &form.email,
            password: &form.password,
        },
        visitor.ip,
    )
    .await;
    match outcome {
        Ok(session) => Ok(signed_in(&app, session, "/dashboard")),
        Err(e) => render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &SignUpPage {
                c: Public::new(&visitor, "sign_up.title", "/dashboard/sign-up"),
                business_name: form.business_name,
                name: form.name,
                email: form.email,
                error: Some(account_message(visitor.lang, &e)),
            },
        ),
    }
}

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    c: Public,
    email: String,
    next: String,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NextQuery {
    next: String,
}

async fn sign_in_page(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    Query(query): Query<NextQuery>,
) -> Result<Response, WebError> {
    let page = SignInPage {
        c: Public::new(&visitor, "sign_in.title", "/dashboard/sign-in"),
        email: String::new(),
        next: safe_next(&query.next).to_owned(),
        error: None,
    };
    Ok(with_csrf_cookie(&app, &visitor, render(&page)?))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SignInForm {
    email: String,
    password: String,
    next: String,
}

async fn sign_in(
    State(app): State<Arc<App>>,
    VisitorPosted { visitor, form }: VisitorPosted<SignInForm>,
) -> Result<Response, WebError> {
    match accounts::sign_in(&app, &form.email, &form.password, visitor.ip).await {
        Ok(session) => Ok(signed_in(&app, session, &form.next)),
        Err(e) => {
            let status = if e.minutes().is_some() {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            render_status(
                status,
                &SignInPage {
                    c: Public::new(&visitor, "sign_in.title", "/dashboard/sign-in"),
                    email: form.email,
                    next: safe_next(&form.next).to_owned(),
                    error: Some(account_message(visitor.lang, &e)),
                },
            )
        }
    }
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn sign_out(
    State(app): State<Arc<App>>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    accounts::sign_out(&app, &viewer.signed_in, viewer.ip).await?;
    let mut response = see_other("/dashboard/sign-in");
    if let Ok(v) = HeaderValue::from_str(&set_cookie(&app, SESSION_COOKIE, "", Some(0))) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(response)
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    c: Page,
    error: Option<String>,
}

async fn account_page(viewer: Viewer) -> Result<Response, WebError> {
    render(&AccountPage {
        c: Page::new(&viewer, "account.title"),
        error: None,
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PasswordForm {
    current_password: String,
    new_password: String,
}

async fn change_password(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<PasswordForm>,
) -> Result<Response, WebError> {
    match accounts::change_password(
        &app,
        &viewer.signed_in,
        &form.current_password,
        &form.new_password,
        viewer.ip,
    )
    .await
    {
        Ok(()) => Ok(see_other_with(
            "/dashboard/account",
            "flash.password_changed",
        )),
        Err(e) => render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &AccountPage {
                error: Some(account_message(viewer.lang, &e)),
                c: Page::new(&viewer, "account.title"),
            },
        ),
    }
}

#[derive(Template)]
#[template(path = "invitation.html")]
struct InvitationPage {
    c: Public,
    token: String,
    email: String,
    merchant_name: String,
    role: &'static str,
    /// The invited address has an account: only its password is asked.
    existing_account: bool,
    /// The account has no password (single sign-on made it): it accepts by signing in with the
    /// merchant's SSO, at this address.
    sso_link: Option<String>,
    name: String,
    error: Option<String>,
}

async fn invitation_view(
    app: &App,
    visitor: &Visitor,
    token: &str,
) -> Result<Result<InvitationPage, String>, WebError> {
    let path = format!("/dashboard/invitations/{token}");
    let invitation = match accounts::invitation(app, token).await {
        Ok(i) => i,
        Err(e) => return Ok(Err(account_message(visitor.lang, &e))),
    };
    let merchant_name = app
        .store
        .merchant(&invitation.merchant_id)
        .await?
        .map(|m| m.name)
        .unwrap_or_default();
    let existing = app.store.user_by_email(&invitation.email).await?;
    let existing_account = existing.is_some();
    let sso_only = existing.as_ref().is_some_and(crate::sso::has_no_password);
    let has_sso = app
        .store
        .sso_config(&invitation.merchant_id)
        .await?
        .is_some();
    let sso_link =
        (sso_only && has_sso).then(|| crate::sso::sign_in_link(app, &invitation.merchant_id));
    Ok(Ok(InvitationPage {
        c: Public::new(visitor, "invitation.title", &path),
        token: token.to_owned(),
        email: invitation.email,
        merchant_name,
        role: super::page::role_key(invitation.role),
        existing_account,
        sso_link,
        name: String::new(),
        error: None,
    }))
}

#[derive(Template)]
#[template(path = "invitation_invalid.html")]
struct InvitationInvalidPage {
    c: Public,
    message: String,
}

async fn invitation_page(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    Path(token): Path<String>,
) -> Result<Response, WebError> {
    let response = match invitation_view(&app, &visitor, &token).await? {
        Ok(page) => render(&page)?,
        Err(message) => render_status(
            StatusCode::GONE,
            &InvitationInvalidPage {
                c: Public::new(&visitor, "invitation.title", "/dashboard/sign-in"),
                message,
            },
        )?,
    };
    Ok(with_csrf_cookie(&app, &visitor, response))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AcceptForm {
    name: String,
    password: String,
}

async fn accept_invitation(
    State(app): State<Arc<App>>,
    Path(token): Path<String>,
    VisitorPosted { visitor, form }: VisitorPosted<AcceptForm>,
) -> Result<Response, WebError> {
    match accounts::accept_invitation(&app, &token, &form.name, &form.password, visitor.ip).await {
        Ok(session) => Ok(signed_in(&app, session, "/dashboard")),
        Err(e) => match invitation_view(&app, &visitor, &token).await? {
            Ok(mut page) => {
                page.name = form.name;
                page.error = Some(account_message(visitor.lang, &e));
                render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
            }
            Err(message) => render_status(
                StatusCode::GONE,
                &InvitationInvalidPage {
                    c: Public::new(&visitor, "invitation.title", "/dashboard/sign-in"),
                    message,
                },
            ),
        },
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LanguageQuery {
    lang: String,
    next: String,
}

/// The language switch: a cookie for a year, then back where the person was.
async fn language(State(app): State<Arc<App>>, Query(q): Query<LanguageQuery>) -> Response {
    let lang = Lang::from_tag(&q.lang).unwrap_or_default();
    // Payers switch language on the public checkout pages too.
    let next = match q.next.strip_prefix("/p/") {
        Some(rest) if !rest.starts_with('/') && !q.next.contains('\\') => q.next.as_str(),
        _ => safe_next(&q.next),
    };
    let mut response = see_other(next);
    if let Ok(v) = HeaderValue::from_str(&set_cookie(
        &app,
        LANG_COOKIE,
        lang.tag(),
        Some(365 * 24 * 3600),
    )) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EnvironmentForm {
    environment: String,
    next: String,
}

/// The test/live switch: what every page shows and changes follows it.
async fn environment(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<EnvironmentForm>,
) -> Result<Response, WebError> {
    let environment: Environment = form
        .environment
        .parse()
        .map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed"))?;
    app.store
        .set_session_environment(&viewer.signed_in.session.id, environment)
        .await?;
    Ok(see_other(safe_next(&form.next)).into_response())
}
