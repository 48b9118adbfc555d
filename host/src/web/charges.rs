//! `/dashboard/charges`: the charges of the environment being viewed, newest first, filtered by
//! status, PSP and São Paulo days, a page at a time ("older" follows a cursor);
//! `/dashboard/charges/{id}`: one charge with its Pix code while it can be paid, the tries at
//! PSPs, its events and their deliveries, and a cancel button that goes through the same service
//! as `POST /v1/charges/{id}/cancel`; a refusal reads as the cashier's ([`super::refusals`]),
//! with the API's status.
//!
//! A viewer without [`Action::ViewAllCharges`] (a cashier) sees only the charges they made:
//! [`operator_scope`] is that rule, for the list, the detail and the cancel alike. Anything the
//! viewer may not see is a 404, never a hint that it exists.
//!
//! [`DayRange`] (days typed as `AAAA-MM-DD`, taken in São Paulo time) and [`page_href`] serve
//! the audit page's filters too.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::refusals::{self, Doing, Refusal};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::policy::Action;
use crate::store::charges::{ChargeFilter, ChargeRecord, ChargeState};
use crate::store::events::{DeliveryRecord, EventRecord};
use crate::store::routing::AttemptRow;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/charges", get(list))
        .route("/dashboard/charges/{id}", get(detail))
        .route("/dashboard/charges/{id}/cancel", post(cancel))
}

/// Rows per page unless the address asks for another number (1 to 100).
const PAGE_SIZE: u32 = 25;
/// Events shown on a charge's page; a charge has a handful at most.
const MAX_EVENTS: u32 = 50;
/// São Paulo has kept UTC−3 all year since 2019.
const SAO_PAULO_OFFSET_MS: i64 = 3 * 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// A calendar day typed as `AAAA-MM-DD`, meant in São Paulo time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Day(time::Date);

impl Day {
    pub(super) fn parse(text: &str) -> Option<Day> {
        let format = time::macros::format_description!("[year]-[month]-[day]");
        // Exactly four digits of year: `+2026` or `20260` are not what anyone typed on purpose.
        let text = text.trim();
        if text.len() != 10 || !text.as_bytes()[0].is_ascii_digit() {
            return None;
        }
        time::Date::parse(text, &format).ok().map(Day)
    }

    /// Midnight at the start of the day in São Paulo, in stored milliseconds (UTC).
    fn start_ms(self) -> i64 {
        self.0.midnight().assume_utc().unix_timestamp() * 1000 + SAO_PAULO_OFFSET_MS
    }
}

/// The days a listing is narrowed to, both ends included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct DayRange {
    pub from: Option<Day>,
    pub to: Option<Day>,
}

impl DayRange {
    /// Both ends as typed (empty: open); the error is a catalog key.
    pub(super) fn parse(from: &str, to: &str) -> Result<DayRange, &'static str> {
        let day = |text: &str| match text.trim() {
            "" => Ok(None),
            text => Day::parse(text)
                .map(Some)
                .ok_or("charges.filter.date_invalid"),
        };
        let range = DayRange {
            from: day(from)?,
            to: day(to)?,
        };
        match (range.from, range.to) {
            (Some(from), Some(to)) if from > to => Err("charges.filter.date_order"),
            _ => Ok(range),
        }
    }

    /// From the first millisecond of `from` in São Paulo.
    pub(super) fn created_gte(&self) -> Option<i64> {
        self.from.map(Day::start_ms)
    }

    /// Up to the last millisecond of `to` in São Paulo.
    pub(super) fn created_lt(&self) -> Option<i64> {
        self.to.map(|day| day.start_ms() + DAY_MS)
    }
}

/// The `limit` of a listing's address: absent is the default page size.
pub(super) fn page_size(lang: Lang, text: &str) -> Result<u32, WebError> {
    match text.trim() {
        "" => Ok(PAGE_SIZE),
        text => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or(WebError::BadRequest(lang, "charges.filter.limit_invalid")),
    }
}

/// `path?query` with the non-empty parameters, for pagination links that keep the filters.
pub(super) fn page_href(path: &str, params: &[(&str, &str)]) -> String {
    let kept: Vec<(&str, &str)> = params
        .iter()
        .copied()
        .filter(|(_, value)| !value.is_empty())
        .collect();
    match serde_urlencoded::to_string(&kept) {
        Ok(query) if !query.is_empty() => format!("{path}?{query}"),
        _ => path.to_owned(),
    }
}

/// Only this operator's charges, for a viewer who may not see everyone's: the one rule behind
/// the list, the detail page and the cancel button.
pub(super) fn operator_scope(viewer: &Viewer) -> Option<String> {
    (!viewer.can(Action::ViewAllCharges)).then(|| viewer.user_id().to_owned())
}

/// A charge of the viewer's merchant and environment that the viewer may see; a 404 otherwise.
pub(super) async fn visible_charge(
    app: &App,
    viewer: &Viewer,
    id: &str,
) -> Result<ChargeRecord, WebError> {
    let caller = viewer.caller();
    let scope = operator_scope(viewer);
    app.store
        .charge(&caller.merchant_id, caller.environment, id)
        .await?
        .filter(|charge| scope.is_none() || charge.operator_id == scope)
        .ok_or(WebError::NotFound(viewer.lang))
}

/// The catalog key of a status's name.
fn status_key(status: ChargeState) -> &'static str {
    match status {
        // Never listed (the store hides charges still being created); named for completeness.
        ChargeState::Creating => "charges.status.creating",
        ChargeState::Pending => "charges.status.pending",
        ChargeState::Processing => "charges.status.processing",
        ChargeState::Paid => "charges.status.paid",
        ChargeState::Expired => "charges.status.expired",
        ChargeState::Canceled => "charges.status.canceled",
        ChargeState::Failed => "charges.status.failed",
    }
}

/// The statuses a merchant can filter on, in their order of life.
const LISTED: [ChargeState; 6] = [
    ChargeState::Pending,
    ChargeState::Processing,
    ChargeState::Paid,
    ChargeState::Expired,
    ChargeState::Canceled,
    ChargeState::Failed,
];

/// The adapters the gateway serves, as (id, display name), by name.
fn providers(app: &App) -> Vec<(String, String)> {
    let mut list: Vec<(String, String)> = app
        .runtime
        .providers()
        .into_iter()
        .map(|id| {
            let name = app.runtime.display_name(&id);
            (id, name)
        })
        .collect();
    list.sort_by_key(|(_, name)| name.to_lowercase());
    list
}

/// The list's address, as typed: every field is kept to fill the form again.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ListQuery {
    status: String,
    provider: String,
    from: String,
    to: String,
    /// The last charge of the previous page: list older ones.
    before: String,
    limit: String,
}

#[derive(Template)]
#[template(path = "charges.html")]
struct ListPage {
    c: Page,
    query: ListQuery,
    rows: Vec<ChargeRecord>,
    providers: Vec<(String, String)>,
    /// A filter that cannot be applied (a catalog key); nothing is listed then.
    error: Option<&'static str>,
    /// Some filter narrows the list.
    filtered: bool,
    /// The viewer sees only their own sales.
    own_only: bool,
    older: Option<String>,
    newest: Option<String>,
}

impl ListPage {
    fn statuses(&self) -> Vec<(&'static str, &'static str)> {
        LISTED
            .iter()
            .map(|s| (s.as_str(), status_key(*s)))
            .collect()
    }

    fn status_name(&self, status: &ChargeState) -> &'static str {
        self.c.t(status_key(*status))
    }

    fn provider_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.providers
            .iter()
            .find(|(p, _)| p == id)
            .map_or(id, |(_, name)| name.as_str())
    }
}

/// The filters of a list request, parsed; the error is a catalog key.
fn filter_of(query: &ListQuery, limit: u32) -> Result<ChargeFilter, &'static str> {
    let status = match query.status.as_str() {
        "" => None,
        text => Some(
            ChargeState::parse(text)
                .filter(|s| LISTED.contains(s))
                .ok_or("charges.filter.status_invalid")?,
        ),
    };
    let provider = match query.provider.trim() {
        "" => None,
        id if id.len() <= 64 => Some(id.to_owned()),
        _ => return Err("charges.filter.provider_invalid"),
    };
    let range = DayRange::parse(&query.from, &query.to)?;
    Ok(ChargeFilter {
        status,
        provider,
        operator_id: None,
        created_gte: range.created_gte(),
        created_lt: range.created_lt(),
        starting_after: Some(query.before.clone()).filter(|b| !b.is_empty()),
        limit,
    })
}

async fn list(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewCharges)?;
    let Query(query) =
        query.map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed"))?;
    let limit = page_size(viewer.lang, &query.limit)?;
    let own_only = operator_scope(&viewer).is_some();
    let filtered = [&query.status, &query.provider, &query.from, &query.to]
        .iter()
        .any(|v| !v.trim().is_empty());
    let mut page = ListPage {
        c: Page::new(&viewer, "charges.title"),
        rows: Vec::new(),
        providers: providers(&app),
        error: None,
        filtered,
        own_only,
        older: None,
        newest: None,
        query,
    };
    let mut filter = match filter_of(&page.query, limit) {
        Ok(filter) => filter,
        Err(key) => {
            page.error = Some(key);
            return render_status(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    filter.operator_id = operator_scope(&viewer);
    let caller = viewer.caller();
    let mut rows = app
        .store
        .charges(&caller.merchant_id, caller.environment, &filter)
        .await?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let q = &page.query;
    let keep = |before: &str| {
        page_href(
            "/dashboard/charges",
            &[
                ("status", &q.status),
                ("provider", &q.provider),
                ("from", &q.from),
                ("to", &q.to),
                ("before", before),
                ("limit", &q.limit),
            ],
        )
    };
    page.older = rows.last().filter(|_| has_more).map(|last| keep(&last.id));
    page.newest = (!q.before.is_empty()).then(|| keep(""));
    page.rows = rows;
    render(&page)
}

/// A delivery's status as a badge class.
fn delivery_badge(status: &str) -> &'static str {
    match status {
        "delivered" => "ok",
        "failed" => "failed",
        _ => "pending",
    }
}

/// An event of the charge and where it went.
struct EventView {
    event: EventRecord,
    deliveries: Vec<DeliveryRecord>,
}

#[derive(Template)]
#[template(path = "charges_detail.html")]
pub(super) struct DetailPage {
    c: Page,
    charge: ChargeRecord,
    provider_name: String,
    metadata: Vec<(String, String)>,
    attempts: Vec<AttemptRow>,
    events: Vec<EventView>,
    /// The viewer may cancel, and this charge can be canceled at its PSP.
    can_cancel: bool,
    /// The charge can still be paid but its PSP offers no cancel.
    cancel_unsupported: bool,
    /// Why the cancel just asked for did not happen.
    failure: Option<Refusal>,
    /// The sale's photos and places ([`super::evidence`]), when the viewer may see them.
    evidence: Vec<super::evidence::EvidenceView>,
    can_view_evidence: bool,
    /// The viewer may attach evidence, and the charge is paid.
    can_attach_evidence: bool,
    /// Why the last upload was refused.
    pub(super) evidence_error: Option<String>,
}

impl DetailPage {
    fn status_name(&self) -> &'static str {
        self.c.t(status_key(self.charge.status))
    }

    /// The Pix code and QR are for paying: shown only while the charge waits for payment.
    fn payable(&self) -> bool {
        self.charge.status == ChargeState::Pending
    }

    fn outcome_name<'a>(&self, outcome: &'a str) -> &'a str {
        match outcome_key(outcome) {
            Some(key) => self.c.t(key),
            None => outcome,
        }
    }

    fn delivery_name<'a>(&self, status: &'a str) -> &'a str {
        match status {
            "delivered" => self.c.t("charges.delivery.delivered"),
            "pending" => self.c.t("charges.delivery.pending"),
            "failed" => self.c.t("charges.delivery.failed"),
            other => other,
        }
    }

    fn delivery_badge(&self, status: &str) -> &'static str {
        delivery_badge(status)
    }

    fn qr_alt(&self) -> String {
        self.c.tf(
            "charges.pix.qr_alt",
            &[("amount", &self.c.money(self.charge.amount))],
        )
    }

    fn http_status(&self, status: &i64) -> String {
        self.c.tf(
            "charges.detail.http_status",
            &[("status", &status.to_string())],
        )
    }

    fn amount_differs(&self) -> bool {
        self.charge
            .amount_paid
            .is_some_and(|paid| paid != self.charge.amount)
    }
}

/// The catalog key of an attempt's outcome (see `charge_attempts.outcome`).
fn outcome_key(outcome: &str) -> Option<&'static str> {
    Some(match outcome {
        "created" => "charges.outcome.created",
        "rejected" => "charges.outcome.rejected",
        "unavailable" => "charges.outcome.unavailable",
        "bad_credentials" => "charges.outcome.bad_credentials",
        "not_found" => "charges.outcome.not_found",
        "ambiguous" => "charges.outcome.ambiguous",
        "found" => "charges.outcome.found",
        "absent" => "charges.outcome.absent",
        "unknown" => "charges.outcome.unknown",
        "fault" => "charges.outcome.fault",
        _ => return None,
    })
}

pub(super) async fn detail_page(
    app: &App,
    viewer: &Viewer,
    charge: ChargeRecord,
) -> Result<DetailPage, WebError> {
    let store = &app.store;
    let events = store
        .events(
            &charge.merchant_id,
            charge.environment,
            None,
            Some(&charge.id),
            None,
            MAX_EVENTS,
        )
        .await?;
    let mut views = Vec::with_capacity(events.len());
    for event in events.into_iter().take(MAX_EVENTS as usize) {
        views.push(EventView {
            deliveries: store.deliveries_of(&event.id).await?,
            event,
        });
    }
    let supported = app.charges.cancel_supported(&charge.provider);
    let open = !charge.status.is_final();
    let metadata = match &charge.metadata {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    let can_view_evidence = viewer.can(Action::ViewEvidence);
    let evidence = if can_view_evidence {
        super::evidence::views(app, &charge.id).await?
    } else {
        Vec::new()
    };
    Ok(DetailPage {
        c: Page::new(viewer, "charges.detail.title"),
        can_attach_evidence: viewer.can(Action::AttachEvidence)
            && charge.status == ChargeState::Paid,
        can_view_evidence,
        evidence,
        evidence_error: None,
        provider_name: app.runtime.display_name(&charge.provider),
        metadata,
        attempts: store.charge_attempts(charge.reference.as_str()).await?,
        events: views,
        can_cancel: open && supported && viewer.can(Action::CancelCharge),
        cancel_unsupported: open && !supported,
        failure: None,
        charge,
    })
}

async fn detail(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewCharges)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    render(&detail_page(&app, &viewer, charge).await?)
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
    let provider = charge.provider.clone();
    let caller = viewer.caller();
    let outcome = app
        .charges
        .cancel_charge(&caller, charge, &crate::api::request_id::current())
        .await;
    let (status, failure) = match outcome {
        Ok(_) => {
            return Ok(see_other_with(
                &format!("/dashboard/charges/{id}"),
                "flash.charge_canceled",
            ));
        }
        Err(error) => refusals::of_charge_error(
            viewer.lang,
            error,
            caller.environment,
            Doing::Cancel,
            |_| app.runtime.display_name(&provider),
        )?,
    };
    // The page as it is now (the PSP may have moved the charge meanwhile), with the reason.
    let charge = visible_charge(&app, &viewer, &id).await?;
    let mut page = detail_page(&app, &viewer, charge).await?;
    page.failure = Some(failure);
    render_status(status, &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Day {
        Day::parse(text).unwrap()
    }

    #[test]
    fn a_day_is_midnight_to_midnight_in_sao_paulo() {
        let range = DayRange::parse("2026-11-22", "2026-11-22").unwrap();
        // 00:00 in São Paulo is 03:00 UTC.
        assert_eq!(range.created_gte(), Some(1_795_316_400_000)); // 2026-11-22T03:00:00Z
        assert_eq!(range.created_lt(), Some(1_795_402_800_000)); // 2026-11-23T03:00:00Z
    }

    #[test]
    fn days_parse_only_as_aaaa_mm_dd() {
        assert_eq!(day(" 2026-01-31 ").0, time::macros::date!(2026 - 01 - 31));
        for bad in [
            "2026-02-30",
            "2026-1-31",
            "31/01/2026",
            "+2026-01-31",
            "2026-01-31T00:00",
            "",
            "20260-01-31",
        ] {
            assert_eq!(Day::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ranges_are_open_or_ordered() {
        assert_eq!(DayRange::parse("", ""), Ok(DayRange::default()));
        let open_end = DayRange::parse("2026-11-22", "").unwrap();
        assert_eq!(
            (open_end.from, open_end.to),
            (Some(day("2026-11-22")), None)
        );
        assert_eq!(
            DayRange::parse("2026-11-23", "2026-11-22"),
            Err("charges.filter.date_order")
        );
        assert_eq!(
            DayRange::parse("22/11/2026", ""),
            Err("charges.filter.date_invalid")
        );
    }

    #[test]
    fn pagination_links_keep_only_the_filters_in_use() {
        assert_eq!(
            page_href(
                "/dashboard/charges",
                &[("status", "paid"), ("provider", ""), ("before", "chg_1")]
            ),
            "/dashboard/charges?status=paid&before=chg_1"
        );
        assert_eq!(
            page_href("/dashboard/charges", &[("status", "")]),
            "/dashboard/charges"
        );
    }

    #[test]
    fn list_filters_parse_at_the_edge() {
        let query = ListQuery {
            status: "paid".into(),
            provider: "efi".into(),
            from: "2026-11-22".into(),
            before: "chg_9".into(),
            ..Default::default()
        };
        let filter = filter_of(&query, 10).unwrap();
        assert_eq!(filter.status, Some(ChargeState::Paid));
        assert_eq!(filter.provider.as_deref(), Some("efi"));
        assert_eq!(filter.created_gte, Some(1_795_316_400_000));
        assert_eq!(filter.created_lt, None);
        assert_eq!(filter.starting_after.as_deref(), Some("chg_9"));
        assert_eq!(filter.limit, 10);
        let creating = ListQuery {
            status: "creating".into(),
            ..Default::default()
        };
        assert_eq!(
            filter_of(&creating, 10).err(),
            Some("charges.filter.status_invalid")
        );
    }

    #[test]
    fn every_outcome_and_status_has_words() {
        for outcome in [
            "created",
            "rejected",
            "unavailable",
            "bad_credentials",
            "not_found",
            "ambiguous",
            "found",
            "absent",
            "unknown",
            "fault",
        ] {
            let key = outcome_key(outcome).unwrap();
            for lang in Lang::ALL {
                assert_ne!(lang.t(key), key, "{key} in {}", lang.tag());
            }
        }
        assert_eq!(outcome_key("teleported"), None);
        for status in ChargeState::ALL {
            for lang in Lang::ALL {
                assert_ne!(lang.t(status_key(status)), status_key(status));
            }
        }
    }
}
