//! `/p/<slug>`: the public checkout of a payment link. No account, no app, phone first, in
//! Portuguese or English. Opening the page creates nothing; the payer types the amount (open
//! links) and the payer fields the link's PSP needs, and only pressing pay creates a charge,
//! whose screen is the cashier's ([`super::cashier::LiveCharge`], `live_charge.html`): QR code,
//! copy-and-paste code, and the paid panel as soon as the PSP confirms. A link that is inactive,
//! outside its window or used up shows why and creates nothing.
//!
//! The payer's checkout session is an HttpOnly cookie per link holding the reference of their
//! charge, drawn when the page is first shown: a reload, a second tap on pay or a lost answer
//! finds that charge instead of making another, and the status URLs only ever show the charge
//! the cookie names. Charge creation is limited per client address (`PIXGW_CHECKOUT_RATE_LIMIT`
//! a minute). Every failure is a page in the payer's language; a PSP's own words go to the log,
//! not to the payer, who reads only what they can do about it ([`super::refusals`]).

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::Deserialize;

use super::cashier::{LiveCharge, status_json};
use super::i18n::Lang;
use super::page::{WebError, format_time, see_other};
use super::payer;
use super::refusals::PayerCan;
use super::session::{Visitor, VisitorPosted, cookie};
use crate::app::App;
use crate::charges::ChargeError;
use crate::domain::{Amount, Environment, Reference};
use crate::payment_links::{self, AmountRefused, Availability, PayError, Price};
use crate::runtime::PayerField;
use crate::store::charges::{ChargeRecord, ChargeState};
use crate::store::now_ms;
use crate::store::payment_links::PaymentLinkRecord;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/p/{slug}", get(page).post(pay))
        .route("/p/{slug}/new", post(start_over))
        .route("/p/{slug}/status", get(status))
        .route("/p/{slug}/stream", get(stream))
}

/// How long a payer's checkout session lasts: longer than any charge it can make is payable.
const SESSION_SECS: i64 = 24 * 3600;
/// A charge still at its PSP this long after the first press is taken to be abandoned (the
/// gateway stopped mid-call); pressing pay again resumes it with the same reference.
const CREATING_PATIENCE_MS: i64 = 60_000;

/// The cookie holding the payer's reference for one link.
fn session_cookie_name(link: &PaymentLinkRecord) -> String {
    format!("pgw_pay_{}", link.id)
}

/// The payer's reference for `link`, if their browser holds one.
fn payer_reference(headers: &HeaderMap, link: &PaymentLinkRecord) -> Option<Reference> {
    cookie(headers, &session_cookie_name(link)).and_then(|v| Reference::parse(v).ok())
}

/// `Set-Cookie` for the payer's session of `link`: the reference, or `None` to end it. Scoped
/// to the checkout pages, HttpOnly, `Secure` when the gateway is on https.
fn session_cookie(
    app: &App,
    link: &PaymentLinkRecord,
    reference: Option<&Reference>,
) -> HeaderValue {
    let (value, age) = match reference {
        Some(r) => (r.as_str(), SESSION_SECS),
        None => ("", 0),
    };
    let mut c = format!(
        "{}={value}; Path=/p/; HttpOnly; SameSite=Lax; Max-Age={age}",
        session_cookie_name(link)
    );
    if app.config.sessions.secure_cookies {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).expect("ids and references are cookie-safe")
}

fn with_cookie(mut response: Response, cookie: HeaderValue) -> Response {
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// What every checkout page's layout reads, as `c`.
pub struct Checkout {
    pub lang: Lang,
    pub title: String,
    pub csrf: String,
    /// Where the language switch returns.
    pub path: String,
    /// The merchant paid, when the page is about a link.
    pub merchant_name: Option<String>,
    /// A test-environment link: no real money moves.
    pub test_mode: bool,
}

impl Checkout {
    pub fn t<'a>(&self, key: &'a str) -> &'a str {
        self.lang.t(key)
    }

    pub fn v(&self) -> &'static str {
        super::assets::version()
    }
}

/// The failures a payer can meet, each a page in their language.
#[derive(Debug)]
enum CheckoutError {
    NotFound(Lang),
    /// A form from a page that went stale (or a cross-site post).
    Expired(Lang, String),
    /// Logged; the page says only that it failed.
    Internal(Lang),
}

impl CheckoutError {
    fn internal(lang: Lang, error: impl std::fmt::Display) -> CheckoutError {
        tracing::error!(request_id = %crate::api::request_id::current(), error = %error, "checkout request failed");
        CheckoutError::Internal(lang)
    }
}

impl IntoResponse for CheckoutError {
    fn into_response(self) -> Response {
        let (status, lang, heading, message, action) = match self {
            CheckoutError::NotFound(lang) => (
                StatusCode::NOT_FOUND,
                lang,
                "checkout.not_found.title",
                "checkout.not_found.message",
                None,
            ),
            CheckoutError::Expired(lang, path) => (
                StatusCode::FORBIDDEN,
                lang,
                "checkout.stale.title",
                "checkout.stale.message",
                Some(path),
            ),
            CheckoutError::Internal(lang) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                lang,
                "checkout.internal.title",
                "checkout.internal.message",
                None,
            ),
        };
        let page = MessagePage {
            c: Checkout {
                lang,
                title: lang.t(heading).to_owned(),
                csrf: String::new(),
                path: action.clone().unwrap_or_else(|| "/p/".into()),
                merchant_name: None,
                test_mode: false,
            },
            heading: lang.t(heading).to_owned(),
            message: lang.t(message).to_owned(),
            refresh: false,
            action: action.map(|href| (href, "checkout.reload")),
        };
        match page.render() {
            Ok(html) => (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                html,
            )
                .into_response(),
            Err(_) => (status, lang.t(message).to_owned()).into_response(),
        }
    }
}

impl From<crate::store::StoreError> for CheckoutError {
    fn from(e: crate::store::StoreError) -> Self {
        CheckoutError::internal(Lang::default(), e)
    }
}

fn html(
    status: StatusCode,
    template: &impl Template,
    lang: Lang,
) -> Result<Response, CheckoutError> {
    let body = template
        .render()
        .map_err(|e| CheckoutError::internal(lang, format!("template: {e}")))?;
    Ok((
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response())
}

/// A page with a heading and a message: a closed link, a charge being prepared, an error.
#[derive(Template)]
#[template(path = "checkout_message.html")]
struct MessagePage {
    c: Checkout,
    heading: String,
    message: String,
    /// Read the page again in a moment (a charge still being created at the PSP).
    refresh: bool,
    /// A button: where it goes and its label's key.
    action: Option<(String, &'static str)>,
}

/// The pay form.
#[derive(Template)]
#[template(path = "checkout.html")]
struct PayPage {
    c: Checkout,
    slug: String,
    name: String,
    /// The amount, written out, for a fixed-price link.
    fixed_amount: Option<String>,
    /// The bounds of a typed amount, in words.
    range: Option<String>,
    ask_name: bool,
    ask_email: bool,
    ask_document: bool,
    form: PayForm,
    /// The field at fault (`""` for the whole form) and what to say.
    error: Option<(&'static str, String)>,
}

impl PayPage {
    fn field_error(&self, field: &str) -> Option<&str> {
        self.error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, m)| m.as_str())
    }
}

/// The payer's charge, live.
#[derive(Template)]
#[template(path = "checkout_charge.html")]
struct ChargePage {
    c: Checkout,
    slug: String,
    name: String,
    charge: LiveCharge,
}

/// The form as typed.
#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct PayForm {
    amount: String,
    name: String,
    email: String,
    document: String,
}

/// Everything a page about `link` needs.
struct Context {
    link: PaymentLinkRecord,
    merchant_name: String,
}

impl Context {
    fn checkout(&self, visitor: &Visitor, title: String) -> Checkout {
        Checkout {
            lang: visitor.lang,
            title,
            csrf: visitor.csrf.clone(),
            path: format!("/p/{}", self.link.slug),
            merchant_name: Some(self.merchant_name.clone()),
            test_mode: self.link.environment == Environment::Test,
        }
    }

    fn path(&self) -> String {
        format!("/p/{}", self.link.slug)
    }
}

async fn context(app: &App, slug: &str, lang: Lang) -> Result<Context, CheckoutError> {
    let link = payment_links::by_slug(app, slug)
        .await?
        .ok_or(CheckoutError::NotFound(lang))?;
    let merchant_name = app
        .store
        .merchant(&link.merchant_id)
        .await?
        .map(|m| m.name)
        .unwrap_or_default();
    Ok(Context {
        link,
        merchant_name,
    })
}

/// The charge the payer's reference names, if it belongs to this link.
async fn own_charge(
    app: &App,
    link: &PaymentLinkRecord,
    reference: &Reference,
) -> Result<Option<ChargeRecord>, CheckoutError> {
    Ok(app
        .store
        .charge_by_reference(reference.as_str())
        .await?
        .filter(|c| {
            c.payment_link_id.as_deref() == Some(link.id.as_str())
                && c.merchant_id == link.merchant_id
                && c.environment == link.environment
        }))
}

/// The page for a closed link: why, in the payer's words.
fn closed_page(
    ctx: &Context,
    visitor: &Visitor,
    why: Availability,
) -> Result<Response, CheckoutError> {
    let lang = visitor.lang;
    let (heading, message) = match why {
        Availability::Expired => (
            "checkout.closed.expired_title",
            lang.tf(
                "checkout.closed.expired",
                &[(
                    "time",
                    &format_time(lang, ctx.link.valid_until.unwrap_or_default()),
                )],
            ),
        ),
        Availability::Scheduled => (
            "checkout.closed.scheduled_title",
            lang.tf(
                "checkout.closed.scheduled",
                &[(
                    "time",
                    &format_time(lang, ctx.link.valid_from.unwrap_or_default()),
                )],
            ),
        ),
        Availability::UsedUp => (
            "checkout.closed.used_up_title",
            lang.t("checkout.closed.used_up").to_owned(),
        ),
        Availability::Inactive | Availability::Open => (
            "checkout.closed.inactive_title",
            lang.t("checkout.closed.inactive").to_owned(),
        ),
    };
    let page = MessagePage {
        c: ctx.checkout(visitor, ctx.link.name.clone()),
        heading: lang.t(heading).to_owned(),
        message,
        refresh: false,
        action: None,
    };
    // Not yet open is a page to come back to; the others are gone.
    let status = if why == Availability::Scheduled {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::GONE
    };
    html(status, &page, lang)
}

/// The charge being created at the PSP: the page reads itself again in a moment.
fn preparing_page(ctx: &Context, visitor: &Visitor) -> Result<Response, CheckoutError> {
    let lang = visitor.lang;
    let page = MessagePage {
        c: ctx.checkout(visitor, ctx.link.name.clone()),
        heading: lang.t("checkout.preparing.title").to_owned(),
        message: lang.t("checkout.preparing.message").to_owned(),
        refresh: true,
        action: Some((ctx.path(), "checkout.reload")),
    };
    html(StatusCode::OK, &page, lang)
}

fn charge_page(
    ctx: &Context,
    visitor: &Visitor,
    charge: &ChargeRecord,
) -> Result<Response, CheckoutError> {
    let mut live = LiveCharge::new(visitor.lang, charge, &ctx.path());
    // The description is the link's name, already the page's heading.
    live.description = None;
    let page = ChargePage {
        c: ctx.checkout(visitor, ctx.link.name.clone()),
        slug: ctx.link.slug.clone(),
        name: ctx.link.name.clone(),
        charge: live,
    };
    html(StatusCode::OK, &page, visitor.lang)
}

async fn pay_page(
    app: &App,
    ctx: &Context,
    visitor: &Visitor,
    form: PayForm,
    error: Option<(&'static str, String)>,
    status: StatusCode,
) -> Result<Response, CheckoutError> {
    let lang = visitor.lang;
    let fields = payment_links::payer_fields(app, &ctx.link).await?;
    let (fixed_amount, range) = match Price::of(&ctx.link) {
        Price::Fixed(amount) => (Some(lang.money(amount.centavos() as i64)), None),
        Price::Open { min, max } => {
            let m = |a: Amount| lang.money(a.centavos() as i64);
            let range = match (min, max) {
                (Some(min), Some(max)) => {
                    Some(lang.tf("checkout.range", &[("min", &m(min)), ("max", &m(max))]))
                }
                (Some(min), None) => Some(lang.tf("checkout.range_min", &[("min", &m(min))])),
                (None, Some(max)) => Some(lang.tf("checkout.range_max", &[("max", &m(max))])),
                (None, None) => None,
            };
            (None, range)
        }
    };
    let page = PayPage {
        c: ctx.checkout(visitor, ctx.link.name.clone()),
        slug: ctx.link.slug.clone(),
        name: ctx.link.name.clone(),
        fixed_amount,
        range,
        ask_name: fields.contains(&PayerField::Name),
        ask_email: fields.contains(&PayerField::Email),
        ask_document: fields.contains(&PayerField::Document),
        form,
        error,
    };
    html(status, &page, lang)
}

async fn page(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    headers: HeaderMap,
    Path(slug): Path<String>,
) -> Result<Response, CheckoutError> {
    let ctx = context(&app, &slug, visitor.lang).await?;
    let reference = payer_reference(&headers, &ctx.link);
    // Its forms (pay, another payment) carry the visitor's double-submit token.
    let response = page_for(&app, &ctx, &visitor, reference.as_ref()).await?;
    let response = super::auth::with_csrf_cookie(&app, &visitor, response);
    // The session starts with the page: a reference for the charge pressing pay will make.
    Ok(match reference {
        Some(_) => response,
        None => with_cookie(
            response,
            session_cookie(&app, &ctx.link, Some(&Reference::generate())),
        ),
    })
}

/// The payer's charge if their session has one, whatever the link's state now (pending, paid,
/// or why it ended); otherwise the pay form, or why the link takes no payments.
async fn page_for(
    app: &App,
    ctx: &Context,
    visitor: &Visitor,
    reference: Option<&Reference>,
) -> Result<Response, CheckoutError> {
    if let Some(reference) = reference
        && let Some(charge) = own_charge(app, &ctx.link, reference).await?
    {
        return match charge.status {
            ChargeState::Creating => preparing_page(ctx, visitor),
            _ => charge_page(ctx, visitor, &charge),
        };
    }
    match payment_links::availability(&ctx.link, now_ms()) {
        Availability::Open => {}
        closed => return closed_page(ctx, visitor, closed),
    }
    pay_page(app, ctx, visitor, PayForm::default(), None, StatusCode::OK).await
}

/// What the payer reads when their amount is refused.
fn amount_refusal(lang: Lang, refused: AmountRefused) -> (&'static str, String) {
    let money = |a: Amount| lang.money(a.centavos() as i64);
    let message = match refused {
        AmountRefused::Missing => lang.t("checkout.error.amount").to_owned(),
        AmountRefused::BelowMin(min) => {
            lang.tf("checkout.error.below_min", &[("min", &money(min))])
        }
        AmountRefused::AboveMax(max) => {
            lang.tf("checkout.error.above_max", &[("max", &money(max))])
        }
    };
    ("amount", message)
}

async fn pay(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(slug): Path<String>,
    posted: Result<VisitorPosted<PayForm>, WebError>,
) -> Result<Response, CheckoutError> {
    let VisitorPosted { visitor, form } = posted.map_err(|e| stale(&e, &slug))?;
    let lang = visitor.lang;
    let ctx = context(&app, &slug, lang).await?;
    let reference = payer_reference(&headers, &ctx.link);
    if let Some(reference) = &reference
        && let Some(charge) = own_charge(&app, &ctx.link, reference).await?
    {
        // Sent twice (a double tap, a resend after a lost answer): show the charge there is.
        // One still at its PSP for long was abandoned mid-call: resume it below.
        let abandoned = charge.status == ChargeState::Creating
            && now_ms() - charge.created_at > CREATING_PATIENCE_MS;
        if !abandoned {
            return Ok(see_other(&ctx.path()));
        }
    }
    match payment_links::availability(&ctx.link, now_ms()) {
        Availability::Open => {}
        closed => return closed_page(&ctx, &visitor, closed),
    }
    let refuse = async |form: PayForm, error: (&'static str, String), status: StatusCode| {
        pay_page(&app, &ctx, &visitor, form, Some(error), status).await
    };
    let typed = match form.amount.trim() {
        "" => None,
        text => match Amount::parse_reais(text) {
            Ok(amount) => Some(amount),
            Err(_) => {
                let error = ("amount", lang.t("checkout.error.amount").to_owned());
                return refuse(form, error, StatusCode::UNPROCESSABLE_ENTITY).await;
            }
        },
    };
    if let Err(refused) = Price::of(&ctx.link).charge(typed) {
        return refuse(
            form,
            amount_refusal(lang, refused),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    let fields = payment_links::payer_fields(&app, &ctx.link).await?;
    let details = payer::Typed {
        name: &form.name,
        email: &form.email,
        document: &form.document,
    };
    let payer = match payer::parse(lang, details, &fields, payer::Typist::Payer) {
        Ok(payer) => payer,
        Err(error) => return refuse(form, error, StatusCode::UNPROCESSABLE_ENTITY).await,
    };
    // Only presses that would make a charge count against the address's limit.
    let address = visitor.ip.map(|ip| ip.to_string()).unwrap_or_default();
    if let Err(wait) = app.checkout_limiter.check(&address) {
        let seconds = wait.as_secs().max(1).to_string();
        let error = (
            "",
            lang.tf("checkout.error.rate_limited", &[("seconds", &seconds)]),
        );
        let mut response = refuse(form, error, StatusCode::TOO_MANY_REQUESTS).await?;
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
        return Ok(response);
    }
    let reference = reference.unwrap_or_else(Reference::generate);
    let cookie = session_cookie(&app, &ctx.link, Some(&reference));
    match payment_links::pay(&app, &ctx.link, typed, payer, &reference, visitor.ip).await {
        Ok(_) => Ok(with_cookie(see_other(&ctx.path()), cookie)),
        Err(PayError::Closed(why)) => closed_page(&ctx, &visitor, why),
        Err(PayError::Amount(refused)) => {
            refuse(
                form,
                amount_refusal(lang, refused),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(PayError::Charge(ChargeError::PlanLimit(reached))) => {
            // The merchant's plan is full this month: the payer is told to contact the store,
            // the store's log says why.
            tracing::warn!(link = %ctx.link.id, merchant = %ctx.link.merchant_id, %reached, "a payment link's charge was refused by the merchant's plan");
            let error = ("", lang.t("plan.checkout_full").to_owned());
            Ok(with_cookie(
                refuse(form, error, StatusCode::FORBIDDEN).await?,
                cookie,
            ))
        }
        Err(PayError::Charge(e)) => {
            let status = failure_status(&e);
            // The merchant's words (and the PSP's) go to the log; the payer reads what they
            // can do: another amount, their own details, again later, or ask the store.
            tracing::warn!(link = %ctx.link.id, merchant = %ctx.link.merchant_id, error = %e, "a payment link's charge was not created");
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                return Err(CheckoutError::internal(lang, e));
            }
            let failure = crate::api::psp_failure::from_charge_error(e, ctx.link.environment);
            let can = PayerCan {
                retype_amount: matches!(Price::of(&ctx.link), Price::Open { .. }),
                retype_details: !fields.is_empty(),
            };
            let error = super::refusals::for_payer(lang, &failure.body.code, can);
            Ok(with_cookie(refuse(form, error, status).await?, cookie))
        }
    }
}

/// The status of a charge that could not be made: the gateway's own failure, or the PSP's
/// (or no PSP could take it).
fn failure_status(e: &ChargeError) -> StatusCode {
    match e {
        ChargeError::Store(_) | ChargeError::Vault(_) => StatusCode::INTERNAL_SERVER_ERROR,
        ChargeError::AllFailed { last, .. } => failure_status(last),
        ChargeError::NoRoute { .. }
        | ChargeError::NotConnected { .. }
        | ChargeError::UnknownProvider { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_GATEWAY,
    }
}

/// A refused form (stale page, cross-site post) as the payer sees it.
fn stale(e: &WebError, slug: &str) -> CheckoutError {
    let lang = match e {
        WebError::Csrf(lang) | WebError::BadRequest(lang, _) => *lang,
        _ => Lang::default(),
    };
    match payment_links::Slug::parse(slug) {
        Ok(slug) => CheckoutError::Expired(lang, format!("/p/{}", slug.as_str())),
        Err(_) => CheckoutError::NotFound(lang),
    }
}

#[derive(Deserialize, Default)]
struct Empty {}

/// Ends the payer's session for the link: the page then offers a new payment.
async fn start_over(
    State(app): State<Arc<App>>,
    Path(slug): Path<String>,
    posted: Result<VisitorPosted<Empty>, WebError>,
) -> Result<Response, CheckoutError> {
    let VisitorPosted { visitor, .. } = posted.map_err(|e| stale(&e, &slug))?;
    let ctx = context(&app, &slug, visitor.lang).await?;
    Ok(with_cookie(
        see_other(&ctx.path()),
        session_cookie(&app, &ctx.link, None),
    ))
}

/// The payer's own charge of this link (from their cookie), or a 404 page.
async fn payer_charge(
    app: &App,
    visitor: &Visitor,
    headers: &HeaderMap,
    slug: &str,
) -> Result<ChargeRecord, CheckoutError> {
    let ctx = context(app, slug, visitor.lang).await?;
    let reference =
        payer_reference(headers, &ctx.link).ok_or(CheckoutError::NotFound(visitor.lang))?;
    own_charge(app, &ctx.link, &reference)
        .await?
        .filter(|c| c.status != ChargeState::Creating)
        .ok_or(CheckoutError::NotFound(visitor.lang))
}

/// The polling fallback: the payer's charge's status now, as JSON.
async fn status(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    headers: HeaderMap,
    Path(slug): Path<String>,
) -> Result<Response, CheckoutError> {
    let charge = payer_charge(&app, &visitor, &headers, &slug).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        status_json(visitor.lang, &charge),
    )
        .into_response())
}

/// `text/event-stream` of the payer's charge's status until it is final.
async fn stream(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    headers: HeaderMap,
    Path(slug): Path<String>,
) -> Result<Response, CheckoutError> {
    let lang = visitor.lang;
    let charge = payer_charge(&app, &visitor, &headers, &slug).await?;
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
        return Err(CheckoutError::NotFound(lang));
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
