//! `/dashboard/statement`: the statement (extrato) of the environment being viewed: paid
//! charges by payment time, newest first, filtered by São Paulo days (the current month when
//! the address names none), PSP, operator and payment link; the totals of the filter; a chart
//! of the daily totals per PSP drawn on the server, with a table of the same numbers; and
//! `/dashboard/statement.csv`, the same set as a file ([`crate::api::statement::csv_download`],
//! the API's own export).
//!
//! A viewer without [`Action::ViewAllCharges`] (a cashier) gets only their own sales, by the
//! same rule as the charges pages ([`super::charges::operator_scope`]).

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use jiff::civil::Date;
use serde::Deserialize;

use super::charges::{operator_scope, page_href, page_size};
use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status};
use super::session::Viewer;
use crate::api::statement::{csv_download, provider_names};
use crate::app::App;
use crate::policy::Action;
use crate::statement::chart::{self, ChartText, Size};
use crate::statement::{
    self, DailySeries, DaySpan, FilterError, Statement, StatementError, StatementFilter,
    StatementLine, Totals,
};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/statement", get(show))
        .route("/dashboard/statement.csv", get(download))
}

/// Payment links offered in the filter; a merchant with more finds the rest by the link's page.
const MAX_LINKS: u32 = 100;

/// The page's address as typed; every field is kept to fill the form again.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StatementQuery {
    /// `None` (absent, not empty) on a first visit: the page opens on the current month.
    from: Option<String>,
    to: Option<String>,
    provider: String,
    /// `usr_…`, `api` or `payment_link`.
    operator: String,
    link: String,
    /// The last line of the previous page: show older ones.
    before: String,
    limit: String,
}

/// The filter as the form shows it: the days the page opened on, or as typed.
struct Filters {
    from: String,
    to: String,
    provider: String,
    operator: String,
    link: String,
}

impl Filters {
    /// An absent range is the current month up to today, in the merchant's days.
    fn of(query: &StatementQuery) -> Filters {
        let (from, to) = match (&query.from, &query.to) {
            (None, None) => {
                let today = statement::today(statement::time_zone());
                (iso(today.first_of_month()), iso(today))
            }
            (from, to) => (
                from.clone().unwrap_or_default(),
                to.clone().unwrap_or_default(),
            ),
        };
        Filters {
            from,
            to,
            provider: query.provider.trim().to_owned(),
            operator: query.operator.trim().to_owned(),
            link: query.link.trim().to_owned(),
        }
    }

    /// The parsed filter, and the days it spans (either end open); the error is a catalog key.
    fn parse(
        &self,
        viewer: &Viewer,
    ) -> Result<(StatementFilter, Option<Date>, Option<Date>), &'static str> {
        let key = |e: FilterError| match e {
            FilterError::Day | FilterError::Time => "statement.filter.date_invalid",
            FilterError::Order => "statement.filter.date_order",
            FilterError::Provider => "statement.filter.provider_invalid",
            FilterError::Operator => "statement.filter.operator_invalid",
            FilterError::PaymentLink => "statement.filter.link_invalid",
        };
        let day = |text: &str| match text.trim() {
            "" => Ok(None),
            text => statement::parse_day(text).map(Some),
        };
        let (from, to) = (day(&self.from).map_err(key)?, day(&self.to).map_err(key)?);
        let (paid_gte, paid_lt) =
            statement::paid_on_days(from, to, statement::time_zone()).map_err(key)?;
        let optional = |text: &str, parse: fn(&str) -> Result<String, FilterError>| match text {
            "" => Ok(None),
            text => parse(text).map(Some).map_err(key),
        };
        Ok((
            StatementFilter {
                paid_gte,
                paid_lt,
                provider: optional(&self.provider, statement::parse_provider)?,
                operator: match self.operator.as_str() {
                    "" => None,
                    text => Some(statement::parse_operator(text).map_err(key)?),
                },
                payment_link_id: optional(&self.link, statement::parse_payment_link)?,
                own_sales_of: operator_scope(viewer),
            },
            from,
            to,
        ))
    }

    /// `path?…` with these filters and `extra` (empty values left out).
    fn href(&self, path: &str, extra: &[(&str, &str)]) -> String {
        let mut params = vec![
            ("from", self.from.as_str()),
            ("to", self.to.as_str()),
            ("provider", self.provider.as_str()),
            ("operator", self.operator.as_str()),
            ("link", self.link.as_str()),
        ];
        params.extend_from_slice(extra);
        let href = page_href(path, &params);
        // An open range must stay open, not turn back into the current month.
        if self.from.is_empty() && self.to.is_empty() {
            let sep = if href.contains('?') { '&' } else { '?' };
            format!("{href}{sep}from=&to=")
        } else {
            href
        }
    }
}

/// `AAAA-MM-DD`, as `<input type=date>` writes it.
fn iso(day: Date) -> String {
    day.strftime("%Y-%m-%d").to_string()
}

/// A line as the table shows it.
struct LineView {
    charge_id: String,
    /// The payment's day and time of day, apart so that a narrow screen can break between.
    date: String,
    clock: String,
    amount: i64,
    psp: String,
    operator: String,
    link_name: Option<String>,
    description: Option<String>,
    end_to_end_id: Option<String>,
}

/// The chart (drawn for wide screens and for phones) and its table twin.
struct ChartView {
    wide: String,
    narrow: String,
    caption: String,
    providers: Vec<String>,
    rows: Vec<ChartRow>,
}

/// A day with payments, per PSP (in `ChartView::providers` order) and in all.
struct ChartRow {
    day: String,
    amounts: Vec<i64>,
    count: i64,
    total: i64,
}

#[derive(Template)]
#[template(path = "statement.html")]
struct StatementPage {
    c: Page,
    filters: Filters,
    limit: String,
    providers: Vec<(String, String)>,
    /// Team members (id, name): empty for a viewer who sees only their own sales.
    operators: Vec<(String, String)>,
    links: Vec<(String, String)>,
    /// A filter that cannot be applied (a catalog key); nothing is shown then.
    error: Option<&'static str>,
    own_only: bool,
    /// The filters differ from the page's first view.
    filtered: bool,
    totals: Totals,
    lines: Vec<LineView>,
    chart: Option<ChartView>,
    /// The range is longer than the chart draws.
    chart_too_long: bool,
    csv_href: String,
    older: Option<String>,
    newest: Option<String>,
}

/// How the page writes a payment time: its day and its time of day.
fn time_of(lang: Lang, ms: i64) -> (String, String) {
    let local = statement::local(ms, statement::time_zone());
    (
        day_of(lang, local.date()),
        local.strftime("%H:%M:%S").to_string(),
    )
}

fn day_of(lang: Lang, day: Date) -> String {
    match lang {
        Lang::PtBr => day.strftime("%d/%m/%Y"),
        Lang::En => day.strftime("%Y-%m-%d"),
    }
    .to_string()
}

fn line_view(lang: Lang, names: &HashMap<String, String>, line: StatementLine) -> LineView {
    let operator = match (&line.operator_id, &line.payment_link_id) {
        (Some(id), _) => line.operator_name.clone().unwrap_or_else(|| id.clone()),
        (None, Some(_)) => lang.t("statement.operator.payment_link").to_owned(),
        (None, None) => lang.t("statement.operator.api").to_owned(),
    };
    let (date, clock) = time_of(lang, line.paid_at);
    LineView {
        date,
        clock,
        amount: line.amount,
        psp: names
            .get(&line.provider)
            .cloned()
            .unwrap_or_else(|| line.provider.clone()),
        operator,
        link_name: line.payment_link_name,
        description: line.description,
        end_to_end_id: line.end_to_end_id,
        charge_id: line.charge_id,
    }
}

fn chart_view(
    lang: Lang,
    names: &HashMap<String, String>,
    span: DaySpan,
    series: &DailySeries,
) -> Result<ChartView, WebError> {
    let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let money = |c: i64| lang.money(c);
    let day = |d: Date| {
        match lang {
            Lang::PtBr => d.strftime("%d/%m"),
            Lang::En => d.strftime("%b %d"),
        }
        .to_string()
    };
    let text = ChartText {
        money: &money,
        day: &day,
        provider: &name,
    };
    let draw = |size| {
        let svg = chart::svg(series, &text, size).map_err(|e| WebError::internal(lang, e))?;
        // The drawing is described by the caption (`aria-labelledby`); its table is beside it.
        Ok::<_, WebError>(svg.replacen(
            "<svg ",
            "<svg role=\"img\" aria-labelledby=\"chart-caption\" focusable=\"false\" ",
            1,
        ))
    };
    Ok(ChartView {
        wide: draw(Size::Wide)?,
        narrow: draw(Size::Narrow)?,
        caption: lang.tf(
            "statement.chart.caption",
            &[
                ("from", &day_of(lang, span.first())),
                ("to", &day_of(lang, span.last())),
            ],
        ),
        providers: series.providers.iter().map(|p| name(p)).collect(),
        rows: series
            .paid_days()
            .into_iter()
            .map(|d| ChartRow {
                day: day_of(lang, series.days[d]),
                amounts: series.amounts.iter().map(|row| row[d]).collect(),
                count: series.day_count(d),
                total: series.day_amount(d),
            })
            .collect(),
    })
}

async fn show(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    query: Result<Query<StatementQuery>, QueryRejection>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewCharges)?;
    let Query(query) =
        query.map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed"))?;
    let lang = viewer.lang;
    let limit = page_size(lang, &query.limit)?;
    let filters = Filters::of(&query);
    let own_only = operator_scope(&viewer).is_some();
    let caller = viewer.caller();
    let providers = provider_names(&app);
    let names: HashMap<String, String> = providers.iter().cloned().collect();
    let operators = if own_only {
        Vec::new()
    } else {
        app.store
            .members(&caller.merchant_id)
            .await?
            .into_iter()
            .map(|m| (m.user_id, m.name))
            .collect()
    };
    let mut links: Vec<(String, String)> = app
        .store
        .payment_links(&caller.merchant_id, caller.environment, None, MAX_LINKS)
        .await?
        .into_iter()
        .map(|l| (l.id, l.name))
        .collect();
    links.sort_by_key(|(_, name)| name.to_lowercase());
    let first_view = Filters::of(&StatementQuery::default());
    let filtered = [&filters.provider, &filters.operator, &filters.link]
        .iter()
        .any(|v| !v.is_empty())
        || (&filters.from, &filters.to) != (&first_view.from, &first_view.to);
    let mut page = StatementPage {
        c: Page::new(&viewer, "statement.title"),
        csv_href: filters.href("/dashboard/statement.csv", &[]),
        filters,
        limit: query.limit.clone(),
        providers,
        operators,
        links,
        error: None,
        own_only,
        filtered,
        totals: Totals::default(),
        lines: Vec::new(),
        chart: None,
        chart_too_long: false,
        older: None,
        newest: None,
    };
    let (filter, from, to) = match page.filters.parse(&viewer) {
        Ok(parsed) => parsed,
        Err(key) => {
            page.error = Some(key);
            return render_status(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    let statement = Statement {
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        filter,
    };
    let before = Some(query.before.trim()).filter(|b| !b.is_empty());
    let found = statement
        .page(&app.store, before, limit)
        .await
        .map_err(|e| match e {
            StatementError::UnknownCursor(_) => {
                WebError::BadRequest(lang, "statement.page_invalid")
            }
            StatementError::Store(e) => WebError::internal(lang, e),
        })?;
    page.totals = statement.totals(&app.store).await?;
    // The chart spans the range asked for, or the payments found when an end is open.
    let tz = statement::time_zone();
    let first = from.or(page
        .totals
        .first_paid_at
        .map(|t| statement::local(t, tz).date()));
    let last = to.or(page
        .totals
        .last_paid_at
        .map(|t| statement::local(t, tz).date()));
    if let (Some(first), Some(last)) = (first, last) {
        match DaySpan::new(first, last) {
            Some(span) => {
                let series = statement.daily(&app.store, span, tz).await?;
                page.chart = Some(chart_view(lang, &names, span, &series)?);
            }
            None => page.chart_too_long = true,
        }
    }
    let keep = |before: &str| {
        page.filters.href(
            "/dashboard/statement",
            &[("before", before), ("limit", &page.limit)],
        )
    };
    page.older = found
        .lines
        .last()
        .filter(|_| found.has_more)
        .map(|last| keep(&last.charge_id));
    page.newest = before.map(|_| keep(""));
    page.lines = found
        .lines
        .into_iter()
        .map(|line| line_view(lang, &names, line))
        .collect();
    render(&page)
}

async fn download(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    query: Result<Query<StatementQuery>, QueryRejection>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewCharges)?;
    let lang = viewer.lang;
    let Query(query) = query.map_err(|_| WebError::BadRequest(lang, "error.form_malformed"))?;
    let filters = Filters::of(&query);
    let (filter, from, to) = filters
        .parse(&viewer)
        .map_err(|key| WebError::BadRequest(lang, key))?;
    let caller = viewer.caller();
    let statement = Statement {
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        filter,
    };
    let file = lang.t("statement.csv.file");
    let filename = match (from, to) {
        (Some(from), Some(to)) => format!("{file}_{}_{}.csv", iso(from), iso(to)),
        _ => format!("{file}.csv"),
    };
    Ok(csv_download(&app, statement, lang, &filename))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> StatementQuery {
        serde_urlencoded::from_str(&serde_urlencoded::to_string(pairs).unwrap()).unwrap()
    }

    #[test]
    fn the_page_opens_on_the_current_month() {
        let today = statement::today(statement::time_zone());
        let first = Filters::of(&query(&[]));
        assert_eq!(first.from, iso(today.first_of_month()));
        assert_eq!(first.to, iso(today));
        // Emptied on purpose: an open range, kept open by the page's links.
        let open = Filters::of(&query(&[("from", ""), ("to", "")]));
        assert_eq!((open.from.as_str(), open.to.as_str()), ("", ""));
        assert_eq!(
            open.href("/dashboard/statement", &[("before", "chg_1")]),
            "/dashboard/statement?before=chg_1&from=&to="
        );
        let half = Filters::of(&query(&[("from", "2026-03-01")]));
        assert_eq!((half.from.as_str(), half.to.as_str()), ("2026-03-01", ""));
        assert_eq!(
            half.href("/dashboard/statement.csv", &[]),
            "/dashboard/statement.csv?from=2026-03-01"
        );
    }

    #[test]
    fn times_are_written_in_sao_paulo_in_each_language() {
        // 2026-03-11T03:10:05Z
        let written = |lang| {
            let (day, clock) = time_of(lang, 1_773_198_605_000);
            format!("{day} {clock}")
        };
        assert_eq!(written(Lang::PtBr), "11/03/2026 00:10:05");
        assert_eq!(written(Lang::En), "2026-03-11 00:10:05");
    }
}
