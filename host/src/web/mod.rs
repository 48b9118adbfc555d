//! The merchant dashboard, served by `pixgw serve` under `/dashboard`: server-rendered HTML
//! (askama templates in `dashboard/templates`), small JavaScript modules for progressive
//! enhancement (`dashboard/static`), strings from per-language catalogs (`dashboard/i18n`), all
//! compiled into the binary.
//!
//! Pages call the same services as the API (`accounts`, `credentials`, `charges`, …) and ask
//! [`crate::policy`] before every view and action; none runs SQL itself.
//!
//! - [`session`]: who is looking (session cookie, language) and CSRF-checked forms;
//!   [`page`]: the layout's context, rendering, redirects, the error pages; [`i18n`]: the
//!   catalogs; [`assets`]: static files.
//! - One module per area, each with its own `router()`: [`auth`] (sign-up, sign-in,
//!   sign-out, password, language and environment switches, invitations), [`overview`],
//!   [`psps`] (PSP credentials), [`api_keys`], [`webhooks`] (endpoints and deliveries),
//!   [`cashier`] (the point-of-sale screen), [`charges`], [`links`] (payment links), [`team`],
//!   [`audit_log`], [`adapters`], [`plan`] (the plan, its usage, the change of plan).
//! - [`statement`]: the statement (paid charges by payment day), its chart and its CSV.
//! - [`evidence`]: a sale's photo and place, attached from the charge's page and the
//!   cashier's paid screen, and the photos themselves.
//! - [`sso`]: single sign-on: the owner's settings, "Sign in with SSO", the provider's
//!   callback and its error pages.
//! - [`checkout`]: the public pages of payment links (`/p/<slug>`), for payers: no sign-in,
//!   their own minimal layout.
//! - [`refusals`]: a failed charge operation (a PSP's refusal) in the viewer's language, for
//!   the credential pages, the cashier and the checkout.

pub mod adapters;
pub mod api_keys;
pub mod assets;
pub mod audit_log;
pub mod auth;
pub mod cashier;
pub mod charges;
pub mod checkout;
pub mod evidence;
pub mod i18n;
pub mod links;
pub mod overview;
pub mod page;
pub mod payer;
pub mod plan;
pub mod psps;
pub mod refusals;
pub mod session;
pub mod sso;
pub mod statement;
pub mod team;
pub mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::app::App;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .merge(auth::router())
        .merge(overview::router())
        .merge(psps::router())
        .merge(api_keys::router())
        .merge(webhooks::router())
        .merge(cashier::router())
        .merge(charges::router())
        .merge(evidence::router())
        .merge(statement::router())
        .merge(links::router())
        .merge(checkout::router())
        .merge(team::router())
        .merge(plan::router())
        .merge(sso::router())
        .merge(audit_log::router())
        .merge(adapters::router())
        .route("/dashboard/{*rest}", axum::routing::any(not_found))
        .layer(axum::middleware::from_fn(headers))
        .merge(assets::router())
}

/// Unknown dashboard paths get the dashboard's 404 page, in the visitor's language.
async fn not_found(visitor: session::Visitor) -> page::WebError {
    page::WebError::NotFound(visitor.lang)
}

/// Headers on every dashboard page: no caching of pages that show private data, a strict
/// content security policy (no inline script or style, nothing from elsewhere), no framing;
/// and the one-time flash message cleared once a page has shown it.
async fn headers(request: Request, next: Next) -> Response {
    let had_flash = session::cookie(request.headers(), session::FLASH_COOKIE).is_some();
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; \
             connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if had_flash && !response.status().is_redirection() {
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_static("pgw_flash=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"),
        );
    }
    response
}
