//! Who is looking at a dashboard page, and forms they may post.
//!
//! - [`Viewer`]: a signed-in person (session cookie → [`SignedIn`]), with their language and
//!   address. Pages take it; without a live session they redirect to sign-in.
//! - [`Visitor`]: anyone, for the sign-in, sign-up and invitation pages.
//! - [`Posted`] / [`VisitorPosted`]: a form body checked against CSRF: the session's token
//!   for signed-in people, a double-submit cookie before sign-in. Cross-site posts are refused
//!   outright (`Sec-Fetch-Site`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::i18n::Lang;
use super::page::WebError;
use crate::accounts::{self, SignedIn};
use crate::app::App;
use crate::charges::Caller;
use crate::policy::{self, Action};

pub const SESSION_COOKIE: &str = "pgw_session";
pub const CSRF_COOKIE: &str = "pgw_csrf";
pub const LANG_COOKIE: &str = "pgw_lang";
pub const FLASH_COOKIE: &str = "pgw_flash";
/// The form field that carries the CSRF token.
pub const CSRF_FIELD: &str = "_csrf";
/// Forms are small; a pasted certificate chain is the largest thing they carry.
const MAX_FORM_BYTES: usize = 256 * 1024;

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, `Secure` when the dashboard is on https.
pub fn set_cookie(app: &App, name: &str, value: &str, max_age_secs: Option<i64>) -> String {
    let mut c = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if let Some(age) = max_age_secs {
        c.push_str(&format!("; Max-Age={age}"));
    }
    if app.config.sessions.secure_cookies {
        c.push_str("; Secure");
    }
    c
}

/// The request's language: the switch's cookie, then the account's choice, then the browser.
fn language(headers: &HeaderMap, account: Option<&str>) -> Lang {
    cookie(headers, LANG_COOKIE)
        .and_then(Lang::from_tag)
        .or_else(|| account.and_then(Lang::from_tag))
        .or_else(|| {
            headers
                .get(axum::http::header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok())
                .and_then(Lang::from_accept_language)
        })
        .unwrap_or_default()
}

/// A signed-in person looking at the dashboard.
pub struct Viewer {
    pub signed_in: SignedIn,
    pub lang: Lang,
    pub ip: Option<IpAddr>,
    /// A one-time message left by the previous action (a catalog key).
    pub flash: Option<String>,
    /// The path and query of this request, for the navigation.
    pub path: String,
}

impl Viewer {
    pub fn can(&self, action: Action) -> bool {
        policy::allows(self.signed_in.role, action)
    }

    /// A 403 page unless the role allows `action`.
    pub fn require(&self, action: Action) -> Result<(), WebError> {
        if self.can(action) {
            Ok(())
        } else {
            Err(WebError::Forbidden(self.lang))
        }
    }

    /// The caller the services see.
    pub fn caller(&self) -> Caller {
        self.signed_in.caller(self.ip)
    }

    pub fn user_id(&self) -> &str {
        &self.signed_in.user.id
    }
}

impl FromRequestParts<Arc<App>> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, WebError> {
        let lang = language(&parts.headers, None);
        let path = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/dashboard".into());
        let sign_in = || WebError::SignIn { next: path.clone() };
        let token = cookie(&parts.headers, SESSION_COOKIE).ok_or_else(sign_in)?;
        let signed_in = accounts::session(app, token)
            .await
            .map_err(|e| WebError::internal(lang, e))?
            .ok_or_else(sign_in)?;
        let lang = language(&parts.headers, signed_in.user.locale.as_deref());
        let flash = cookie(&parts.headers, FLASH_COOKIE)
            .filter(|k| k.starts_with("flash.") && k.len() < 64)
            .map(str::to_owned);
        Ok(Viewer {
            signed_in,
            lang,
            ip: super::super::api::auth::client_ip(parts),
            flash,
            path,
        })
    }
}

/// Anyone, signed in or not: the pages before sign-in.
pub struct Visitor {
    pub lang: Lang,
    pub ip: Option<IpAddr>,
    /// The double-submit token the visitor's forms carry.
    pub csrf: String,
    /// The CSRF cookie is new: the response must set it.
    pub new_csrf: bool,
}

impl FromRequestParts<Arc<App>> for Visitor {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, _app: &Arc<App>) -> Result<Self, WebError> {
        let existing = cookie(&parts.headers, CSRF_COOKIE)
            .filter(|v| v.len() >= 32 && v.len() <= 64)
            .map(str::to_owned);
        Ok(Visitor {
            lang: language(&parts.headers, None),
            ip: super::super::api::auth::client_ip(parts),
            new_csrf: existing.is_none(),
            csrf: existing.unwrap_or_else(accounts::new_token),
        })
    }
}

/// A signed-in person's form, its CSRF token checked.
pub struct Posted<T> {
    pub viewer: Viewer,
    pub form: T,
}

/// A form posted before sign-in, its double-submit token checked.
pub struct VisitorPosted<T> {
    pub visitor: Visitor,
    pub form: T,
}

/// Reads a form body and its CSRF field.
async fn read_form<T: DeserializeOwned>(
    lang: Lang,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<(T, String), WebError> {
    // Browsers say where a request comes from; a cross-site post is never ours.
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site == "cross-site")
    {
        return Err(WebError::Csrf(lang));
    }
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| WebError::BadRequest(lang, "error.form_too_large"))?;
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
        .map_err(|_| WebError::BadRequest(lang, "error.form_malformed"))?;
    let token = fields
        .into_iter()
        .find(|(k, _)| k == CSRF_FIELD)
        .map(|(_, v)| v)
        .unwrap_or_default();
    let form = serde_urlencoded::from_bytes(&bytes)
        .map_err(|_| WebError::BadRequest(lang, "error.form_malformed"))?;
    Ok((form, token))
}

/// Checks the CSRF token of a body the handler read itself (a multipart upload), as
/// [`Posted`] does for forms.
pub fn check_csrf(viewer: &Viewer, headers: &HeaderMap, token: &str) -> Result<(), WebError> {
    let cross_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site == "cross-site");
    if cross_site || !same_token(token, &viewer.signed_in.session.csrf_token) {
        return Err(WebError::Csrf(viewer.lang));
    }
    Ok(())
}

fn same_token(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    !a.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl<T: DeserializeOwned> FromRequest<Arc<App>> for Posted<T> {
    type Rejection = WebError;

    async fn from_request(req: Request, app: &Arc<App>) -> Result<Self, WebError> {
        let (mut parts, body) = req.into_parts();
        let viewer = Viewer::from_request_parts(&mut parts, app).await?;
        let (form, token) = read_form(viewer.lang, &parts.headers, body).await?;
        if !same_token(&token, &viewer.signed_in.session.csrf_token) {
            return Err(WebError::Csrf(viewer.lang));
        }
        Ok(Posted { viewer, form })
    }
}

impl<T: DeserializeOwned> FromRequest<Arc<App>> for VisitorPosted<T> {
    type Rejection = WebError;

    async fn from_request(req: Request, app: &Arc<App>) -> Result<Self, WebError> {
        let (mut parts, body) = req.into_parts();
        let visitor = Visitor::from_request_parts(&mut parts, app).await?;
        let (form, token) = read_form(visitor.lang, &parts.headers, body).await?;
        if visitor.new_csrf || !same_token(&token, &visitor.csrf) {
            return Err(WebError::Csrf(visitor.lang));
        }
        Ok(VisitorPosted { visitor, form })
    }
}
