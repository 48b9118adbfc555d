//! `/dashboard/links`: the merchant's payment links of the dashboard's environment — name,
//! address (with a copy button), amount, paid payments against the limit, whether the link
//! takes payments now and why not; a create form; each link's page with its QR code (to print),
//! an edit form, and deactivate / activate. Calls [`crate::payment_links`], as the API does.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::charges::ProviderChoice;
use crate::domain::Amount;
use crate::payment_links::{
    self, Availability, Changes, LinkError, MAX_NAME_CHARS, MAX_SLUG_CHARS, NewLink, Price, Slug,
    Window,
};
use crate::policy::Action;
use crate::store::now_ms;
use crate::store::payment_links::PaymentLinkRecord;

/// Links the list shows per page.
const PAGE_SIZE: u32 = 50;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/links", get(index).post(create))
        .route("/dashboard/links/{id}", get(detail).post(update))
        .route("/dashboard/links/{id}/deactivate", post(deactivate))
        .route("/dashboard/links/{id}/activate", post(activate))
}

/// (badge class, catalog key) of a link's availability.
fn availability_badge(a: Availability) -> (&'static str, &'static str) {
    match a {
        Availability::Open => ("ok", "links.status.open"),
        Availability::Inactive => ("disabled", "links.status.inactive"),
        Availability::Scheduled => ("pending", "links.status.scheduled"),
        Availability::Expired => ("expired", "links.status.expired"),
        Availability::UsedUp => ("canceled", "links.status.used_up"),
    }
}

/// São Paulo time (UTC−3 all year), in which people type the validity window.
fn sao_paulo() -> time::UtcOffset {
    time::UtcOffset::from_hms(-3, 0, 0).expect("a valid offset")
}

/// `AAAA-MM-DDTHH:MM` (what `<input type=datetime-local>` sends) in São Paulo time.
fn parse_local(text: &str) -> Option<i64> {
    let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
    let text = text.trim();
    let text = text
        .get(..16)
        .filter(|_| text.len() == 16 || text.len() == 19)?;
    let t = time::PrimitiveDateTime::parse(text, &format).ok()?;
    Some((t.assume_offset(sao_paulo()).unix_timestamp_nanos() / 1_000_000) as i64)
}

/// A stored time as `<input type=datetime-local>` shows it, in São Paulo time.
fn local_input(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .to_offset(sao_paulo());
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

/// Centavos as typed into the form: `19,90` / `19.90`.
fn reais_input(lang: Lang, centavos: i64) -> String {
    let mark = if lang == Lang::PtBr { ',' } else { '.' };
    format!("{}{mark}{:02}", centavos / 100, centavos % 100)
}

/// The link form as typed.
#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct LinkForm {
    name: String,
    /// `fixed` or `open`.
    amount_mode: String,
    amount: String,
    min_amount: String,
    max_amount: String,
    usage_limit: String,
    valid_from: String,
    valid_until: String,
    provider: String,
    slug: String,
}

impl LinkForm {
    fn of(lang: Lang, link: &PaymentLinkRecord) -> LinkForm {
        let reais = |c: Option<i64>| c.map(|c| reais_input(lang, c)).unwrap_or_default();
        LinkForm {
            name: link.name.clone(),
            amount_mode: if link.amount.is_some() {
                "fixed"
            } else {
                "open"
            }
            .into(),
            amount: reais(link.amount),
            min_amount: reais(link.min_amount),
            max_amount: reais(link.max_amount),
            usage_limit: link.usage_limit.map(|l| l.to_string()).unwrap_or_default(),
            valid_from: link.valid_from.map(local_input).unwrap_or_default(),
            valid_until: link.valid_until.map(local_input).unwrap_or_default(),
            provider: link.provider.clone(),
            slug: link.slug.clone(),
        }
    }
}

/// The form, taken apart: every value valid, or the field at fault and what to say.
struct Parsed {
    name: String,
    price: Price,
    usage_limit: Option<i64>,
    window: Window,
    provider: ProviderChoice,
    slug: Option<Slug>,
}

type Refusal = (&'static str, String);

fn refusal(lang: Lang, e: &LinkError) -> Refusal {
    let message = lang.tf(
        e.code(),
        &[
            ("max_name", &MAX_NAME_CHARS.to_string()),
            ("max_slug", &MAX_SLUG_CHARS.to_string()),
            ("max_limit", &payment_links::MAX_USAGE_LIMIT.to_string()),
        ],
    );
    (e.field().unwrap_or("name"), message)
}

fn parse(app: &App, lang: Lang, form: &LinkForm) -> Result<Parsed, Refusal> {
    let fail = |e: LinkError| refusal(lang, &e);
    let name = payment_links::name(&form.name).map_err(fail)?;
    let reais = |field: &'static str, text: &str| -> Result<Option<Amount>, Refusal> {
        match text.trim() {
            "" => Ok(None),
            text => Amount::parse_reais(text)
                .map(Some)
                .map_err(|_| (field, lang.t("links.error.amount").to_owned())),
        }
    };
    let price = if form.amount_mode == "open" {
        Price::new(
            None,
            reais("min_amount", &form.min_amount)?,
            reais("max_amount", &form.max_amount)?,
        )
    } else {
        let amount = reais("amount", &form.amount)?
            .ok_or(("amount", lang.t("links.error.amount").to_owned()))?;
        Price::new(Some(amount), None, None)
    }
    .map_err(fail)?;
    let usage_limit = match form.usage_limit.trim() {
        "" => None,
        text => Some(
            text.parse::<i64>()
                .map_err(|_| LinkError::UsageLimit)
                .and_then(payment_links::usage_limit)
                .map_err(fail)?,
        ),
    };
    let time = |field: &'static str, text: &str| -> Result<Option<i64>, Refusal> {
        match text.trim() {
            "" => Ok(None),
            text => parse_local(text)
                .map(Some)
                .ok_or((field, lang.t("links.error.time").to_owned())),
        }
    };
    let window = Window::new(
        time("valid_from", &form.valid_from)?,
        time("valid_until", &form.valid_until)?,
    )
    .map_err(fail)?;
    let provider = payment_links::provider(app, &form.provider).map_err(fail)?;
    let slug = match form.slug.trim() {
        "" => None,
        text => Some(Slug::parse(text).map_err(fail)?),
    };
    Ok(Parsed {
        name,
        price,
        usage_limit,
        window,
        provider,
        slug,
    })
}

/// The form for a template: what to show, the PSPs to choose from, and the refusal.
struct FormView {
    form: LinkForm,
    providers: Vec<(String, String)>,
    error: Option<Refusal>,
}

impl FormView {
    fn error_for(&self, field: &str) -> Option<&str> {
        self.error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, message)| message.as_str())
    }

    fn is_open(&self) -> bool {
        self.form.amount_mode == "open"
    }
}

/// `random` and the PSPs of the merchant's active credentials in the viewer's environment
/// (and the link's own, should it no longer be connected).
async fn providers(
    app: &App,
    viewer: &Viewer,
    current: &str,
) -> Result<Vec<(String, String)>, WebError> {
    let caller = viewer.caller();
    let mut options = vec![(
        "random".to_owned(),
        viewer.lang.t("links.random").to_owned(),
    )];
    let credentials = app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?;
    let connected = credentials
        .iter()
        .filter(|c| c.active)
        .map(|c| c.provider.as_str());
    for id in connected.chain([current]) {
        if !id.is_empty() && !options.iter().any(|(v, _)| v == id) {
            options.push((id.to_owned(), app.runtime.display_name(id)));
        }
    }
    Ok(options)
}

/// One link as the pages show it.
struct LinkView {
    link: PaymentLinkRecord,
    url: String,
    badge: (&'static str, &'static str),
}

impl LinkView {
    fn of(app: &App, link: PaymentLinkRecord, now: i64) -> LinkView {
        LinkView {
            url: payment_links::url(app, &link),
            badge: availability_badge(payment_links::availability(&link, now)),
            link,
        }
    }
}

#[derive(Template)]
#[template(path = "links.html")]
struct LinksPage {
    c: Page,
    links: Vec<LinkView>,
    older: Option<String>,
    can_manage: bool,
    form: FormView,
    max_name: usize,
    max_slug: usize,
}

impl LinksPage {
    fn price(&self, link: &PaymentLinkRecord) -> String {
        price_text(&self.c, link)
    }
}

/// A link's price in words: `R$ 59,90`, or `Valor livre (R$ 5,00 a R$ 100,00)`.
fn price_text(c: &Page, link: &PaymentLinkRecord) -> String {
    match (link.amount, link.min_amount, link.max_amount) {
        (Some(amount), _, _) => c.money(amount),
        (None, None, None) => c.t("links.price.open").to_owned(),
        (None, Some(min), None) => c.tf("links.price.open_min", &[("min", &c.money(min))]),
        (None, None, Some(max)) => c.tf("links.price.open_max", &[("max", &c.money(max))]),
        (None, Some(min), Some(max)) => c.tf(
            "links.price.open_range",
            &[("min", &c.money(min)), ("max", &c.money(max))],
        ),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListQuery {
    starting_after: String,
}

async fn list_page(
    app: &App,
    viewer: &Viewer,
    starting_after: &str,
    form: FormView,
) -> Result<LinksPage, WebError> {
    let caller = viewer.caller();
    let after = Some(starting_after).filter(|s| !s.is_empty());
    let (links, more) = payment_links::list(app, &caller, after, PAGE_SIZE)
        .await
        .map_err(|e| WebError::internal(viewer.lang, e))?;
    let now = now_ms();
    let older = more
        .then(|| links.last())
        .flatten()
        .map(|l| super::charges::page_href("/dashboard/links", &[("starting_after", &l.id)]));
    Ok(LinksPage {
        c: Page::new(viewer, "links.title"),
        links: links
            .into_iter()
            .map(|l| LinkView::of(app, l, now))
            .collect(),
        older,
        can_manage: viewer.can(Action::ManagePaymentLinks),
        form,
        max_name: MAX_NAME_CHARS,
        max_slug: MAX_SLUG_CHARS,
    })
}

async fn index(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewPaymentLinks)?;
    let form = FormView {
        form: LinkForm {
            amount_mode: "fixed".into(),
            provider: "random".into(),
            ..LinkForm::default()
        },
        providers: providers(&app, &viewer, "random").await?,
        error: None,
    };
    render(&list_page(&app, &viewer, &query.starting_after, form).await?)
}

async fn create(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<LinkForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManagePaymentLinks)?;
    let refuse = async |form: LinkForm, error: Refusal| {
        let view = FormView {
            providers: providers(&app, &viewer, &form.provider).await?,
            form,
            error: Some(error),
        };
        render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &list_page(&app, &viewer, "", view).await?,
        )
    };
    let parsed = match parse(&app, viewer.lang, &form) {
        Ok(parsed) => parsed,
        Err(error) => return refuse(form, error).await,
    };
    let created = payment_links::create(
        &app,
        &viewer.caller(),
        NewLink {
            name: parsed.name,
            price: parsed.price,
            usage_limit: parsed.usage_limit,
            window: parsed.window,
            provider: parsed.provider,
            slug: parsed.slug,
            active: true,
        },
    )
    .await;
    match created {
        Ok(link) => Ok(see_other_with(
            &format!("/dashboard/links/{}", link.id),
            "flash.links_created",
        )),
        Err(LinkError::Store(e)) => Err(WebError::internal(viewer.lang, e)),
        Err(LinkError::PlanLimit(reached)) => Err(WebError::PlanLimit(viewer.lang, reached)),
        Err(e) => refuse(form, refusal(viewer.lang, &e)).await,
    }
}

#[derive(Template)]
#[template(path = "links_detail.html")]
struct DetailPage {
    c: Page,
    view: LinkView,
    /// The page's address as a QR code (`data:` URI), to print.
    qr_data_uri: Option<String>,
    can_manage: bool,
    form: FormView,
    max_name: usize,
    max_slug: usize,
}

impl DetailPage {
    fn price(&self) -> String {
        price_text(&self.c, &self.view.link)
    }
}

async fn detail_page(
    app: &App,
    viewer: &Viewer,
    link: PaymentLinkRecord,
    form: Option<(LinkForm, Refusal)>,
) -> Result<DetailPage, WebError> {
    let view = LinkView::of(app, link, now_ms());
    let url = view.url.clone();
    // Drawing and PNG-encoding is CPU work: keep it off the async workers.
    let qr = tokio::task::spawn_blocking(move || crate::domain::qr_png_base64(&url))
        .await
        .map_err(|e| WebError::internal(viewer.lang, e))?
        .inspect_err(|e| tracing::warn!(error = %e, "a payment link's QR code was not drawn"))
        .ok();
    let (form, error) = match form {
        Some((form, error)) => (form, Some(error)),
        None => (LinkForm::of(viewer.lang, &view.link), None),
    };
    Ok(DetailPage {
        c: Page::new(viewer, "links.title"),
        qr_data_uri: qr.map(|b64| format!("data:image/png;base64,{b64}")),
        can_manage: viewer.can(Action::ManagePaymentLinks),
        form: FormView {
            providers: providers(app, viewer, &view.link.provider).await?,
            form,
            error,
        },
        view,
        max_name: MAX_NAME_CHARS,
        max_slug: MAX_SLUG_CHARS,
    })
}

async fn find(app: &App, viewer: &Viewer, id: &str) -> Result<PaymentLinkRecord, WebError> {
    payment_links::find(app, &viewer.caller(), id)
        .await
        .map_err(|e| match e {
            LinkError::NotFound(_) => WebError::NotFound(viewer.lang),
            e => WebError::internal(viewer.lang, e),
        })
}

async fn detail(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewPaymentLinks)?;
    let link = find(&app, &viewer, &id).await?;
    render(&detail_page(&app, &viewer, link, None).await?)
}

async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<LinkForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManagePaymentLinks)?;
    let link = find(&app, &viewer, &id).await?;
    let refuse = async |link: PaymentLinkRecord, form: LinkForm, error: Refusal| {
        render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &detail_page(&app, &viewer, link, Some((form, error))).await?,
        )
    };
    let parsed = match parse(&app, viewer.lang, &form) {
        Ok(parsed) => parsed,
        Err(error) => return refuse(link, form, error).await,
    };
    // The form holds every setting: each one is set, and an empty optional field clears it.
    let (amount, min, max) = match parsed.price {
        Price::Fixed(amount) => (Some(amount), None, None),
        Price::Open { min, max } => (None, min, max),
    };
    let changes = Changes {
        name: Some(parsed.name),
        amount: Some(amount),
        min_amount: Some(min),
        max_amount: Some(max),
        usage_limit: Some(parsed.usage_limit),
        valid_from: Some(parsed.window.from()),
        valid_until: Some(parsed.window.until()),
        provider: Some(parsed.provider),
        slug: parsed.slug,
        active: None,
    };
    match payment_links::update(&app, &viewer.caller(), &id, changes).await {
        Ok(_) => Ok(see_other_with(
            &format!("/dashboard/links/{id}"),
            "flash.links_saved",
        )),
        Err(LinkError::NotFound(_)) => Err(WebError::NotFound(viewer.lang)),
        Err(LinkError::Store(e)) => Err(WebError::internal(viewer.lang, e)),
        Err(e) => refuse(link, form, refusal(viewer.lang, &e)).await,
    }
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn switch(app: &App, viewer: &Viewer, id: &str, active: bool) -> Result<Response, WebError> {
    viewer.require(Action::ManagePaymentLinks)?;
    match payment_links::set_active(app, &viewer.caller(), id, active).await {
        Ok(_) => Ok(see_other_with(
            &format!("/dashboard/links/{id}"),
            if active {
                "flash.links_activated"
            } else {
                "flash.links_deactivated"
            },
        )),
        Err(LinkError::NotFound(_)) => Err(WebError::NotFound(viewer.lang)),
        Err(LinkError::PlanLimit(reached)) => Err(WebError::PlanLimit(viewer.lang, reached)),
        Err(e) => Err(WebError::internal(viewer.lang, e)),
    }
}

async fn deactivate(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    switch(&app, &viewer, &id, false).await
}

async fn activate(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    switch(&app, &viewer, &id, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_times_are_typed_in_sao_paulo_time() {
        // 2026-03-01 10:30 in São Paulo is 13:30 UTC.
        let ms = parse_local("2026-03-01T10:30").unwrap();
        assert_eq!(crate::store::rfc3339(ms), "2026-03-01T13:30:00Z");
        assert_eq!(parse_local("2026-03-01T10:30:00"), Some(ms));
        assert_eq!(local_input(ms), "2026-03-01T10:30");
        for bad in [
            "",
            "2026-03-01",
            "01/03/2026 10:30",
            "2026-13-01T10:30",
            "2026-03-01T10:30Z",
        ] {
            assert_eq!(parse_local(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn amounts_are_shown_as_people_type_them() {
        assert_eq!(reais_input(Lang::PtBr, 5990), "59,90");
        assert_eq!(reais_input(Lang::En, 5), "0.05");
        assert_eq!(
            Amount::parse_reais(&reais_input(Lang::PtBr, 123_456))
                .unwrap()
                .centavos(),
            123_456
        );
    }
}
