//! `/v1/statement`: the paid charges of the API key's merchant and environment by payment time,
//! newest first, with the totals of the filter; `/v1/statement.csv`: the same set as CSV for
//! Brazilian spreadsheets, streamed. Days are the merchant's (São Paulo's); the rules live in
//! [`crate::statement`], which the dashboard's statement page asks too.
//!
//! [`csv_download`] is the one way a statement leaves as a file, from here and from the
//! dashboard: same columns, same words, same bytes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorResponse};
use super::request_id;
use crate::app::App;
use crate::charges::Caller;
use crate::statement::export::{self, CsvLabels};
use crate::statement::{
    self, FilterError, Statement, StatementError, StatementFilter, StatementLine,
};
use crate::store::rfc3339;
use crate::web::i18n::Lang;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/statement", get(list))
        .route("/v1/statement.csv", get(csv))
}

/// Lines per page unless `limit` says otherwise.
const DEFAULT_LIMIT: u32 = 20;

/// The filters of both endpoints.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// Paid at or after: a day `AAAA-MM-DD` of 1970 or later (from its first moment in São
    /// Paulo) or an RFC 3339 time.
    #[param(schema_with = bound_schema)]
    paid_gte: Option<String>,
    /// Paid before: a day `AAAA-MM-DD` of 1970 or later (before its first moment in São Paulo,
    /// so `paid_gte=2026-11-01&paid_lt=2026-12-01` is November) or an RFC 3339 time; not before
    /// `paid_gte` (422).
    #[param(schema_with = bound_schema)]
    paid_lt: Option<String>,
    /// An adapter id, e.g. `efi`.
    #[param(schema_with = provider_schema)]
    provider: Option<String>,
    /// Who sold: a team member's id (`usr_…`, their cashier sales), `api` (charges created
    /// through the API) or `payment_link` (charges paid through any payment link).
    #[param(schema_with = operator_schema)]
    operator: Option<String>,
    /// A payment link's id (`plink_…`): the charges paid through it.
    #[param(schema_with = payment_link_schema)]
    payment_link: Option<String>,
}

/// Pagination of `GET /v1/statement`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// 1 to 100; default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// A line's `charge_id`: the page after it (older payments).
    starting_after: Option<String>,
}

/// A filter parameter as [`filter_of`] reads it: `pattern` around `WHITESPACE*`, which the
/// parsers trim.
fn trimmed(pattern: &str, format: Option<&str>) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use super::openapi::WHITESPACE;
    let mut schema = serde_json::json!({
        "type": "string",
        "pattern": format!("^[{WHITESPACE}]*(?:{pattern})[{WHITESPACE}]*$"),
    });
    if let Some(format) = format {
        schema["format"] = format.into();
    }
    serde_json::from_value(schema).expect("a schema")
}

/// `paid_gte`, `paid_lt`: a day of 1970 or later ([`statement::parse_day`]) or an RFC 3339
/// time ([`crate::store::parse_rfc3339`]).
fn bound_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    serde_json::from_value(serde_json::json!({"anyOf": [
        {"type": "string", "format": "date", "pattern": "^(?:19[7-9][0-9]|[2-9][0-9]{3})-[0-9]{2}-[0-9]{2}$"},
        {"type": "string", "format": "date-time"},
    ]}))
    .expect("a schema")
}

/// [`statement::parse_provider`].
fn provider_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    trimmed("[a-z0-9_-]{1,64}", None)
}

/// [`statement::parse_operator`].
fn operator_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    trimmed("api|payment_link|usr_[0-9a-fA-F]{32}", None)
}

/// [`statement::parse_payment_link`]: `plink_` and 22 base62 characters. Every id starts with
/// `0` for millennia to come (a UUIDv7 leads with its time); `[0-6]` keeps the pattern inside
/// the 128-bit values the parser takes.
fn payment_link_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    trimmed("plink_[0-6][0-9A-Za-z]{21}", None)
}

/// The filter both endpoints take, parsed; a parameter without the documented shape is a 400
/// naming it, `paid_lt` before `paid_gte` a 422.
fn filter_of(params: &ExportParams) -> Result<StatementFilter, ApiError> {
    let tz = statement::time_zone();
    let bad = |param: &str, e: FilterError| {
        let example = match e {
            FilterError::Day | FilterError::Time => {
                ", e.g. 2026-11-22 (a day in São Paulo) or 2026-11-22T10:00:00-03:00"
            }
            _ => "",
        };
        ApiError::invalid_param(param, format!("{param} {e}{example}."))
    };
    let bound = |param: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(|v| statement::parse_bound(v, tz).map_err(|e| bad(param, e)))
            .transpose()
    };
    let paid_gte = bound("paid_gte", &params.paid_gte)?;
    let paid_lt = bound("paid_lt", &params.paid_lt)?;
    if let (Some(gte), Some(lt)) = (paid_gte, paid_lt)
        && lt < gte
    {
        return Err(ApiError::unprocessable_param(
            "paid_lt",
            format!("paid_lt {}.", FilterError::Order),
        ));
    }
    Ok(StatementFilter {
        paid_gte,
        paid_lt,
        provider: params
            .provider
            .as_deref()
            .map(|p| statement::parse_provider(p).map_err(|e| bad("provider", e)))
            .transpose()?,
        operator: params
            .operator
            .as_deref()
            .map(|o| statement::parse_operator(o).map_err(|e| bad("operator", e)))
            .transpose()?,
        payment_link_id: params
            .payment_link
            .as_deref()
            .map(|l| statement::parse_payment_link(l).map_err(|e| bad("payment_link", e)))
            .transpose()?,
        own_sales_of: None,
    })
}

fn statement_of(caller: &Caller, filter: StatementFilter) -> Statement {
    Statement {
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        filter,
    }
}

/// Who made a sale.
#[derive(Serialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OperatorType {
    /// A team member, at the dashboard's cashier.
    User,
    /// Created through the API.
    Api,
    /// Paid through a payment link.
    PaymentLink,
}

#[derive(Serialize, ToSchema)]
pub struct Operator {
    #[serde(rename = "type")]
    kind: OperatorType,
    /// For `user`: the member's id (`usr_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// For `user`: the member's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

/// The payment link a charge was paid through.
#[derive(Serialize, ToSchema)]
pub struct LinkRef {
    /// `plink_…`
    id: String,
    /// The link's name when the charge was made, as the payer saw it.
    name: Option<String>,
}

/// One paid charge.
#[derive(Serialize, ToSchema)]
pub struct StatementLineObject {
    /// `chg_…`
    charge_id: String,
    /// When the PSP says it was paid: RFC 3339, UTC.
    paid_at: String,
    /// The same moment in the merchant's time zone, RFC 3339 with its offset, e.g.
    /// `2026-11-22T21:30:05-03:00`: its date is the statement day the line belongs to.
    paid_at_local: String,
    /// Centavos paid (what the PSP reported, else the charge's amount).
    amount: i64,
    /// The adapter id of the PSP that was paid.
    provider: String,
    operator: Operator,
    payment_link: Option<LinkRef>,
    description: Option<String>,
    /// The Pix end-to-end id (E2E) the central bank gave the payment.
    end_to_end_id: Option<String>,
}

impl From<&StatementLine> for StatementLineObject {
    fn from(line: &StatementLine) -> Self {
        let local = statement::local(line.paid_at, statement::time_zone());
        let operator = match (&line.operator_id, &line.payment_link_id) {
            (Some(id), _) => Operator {
                kind: OperatorType::User,
                id: Some(id.clone()),
                name: line.operator_name.clone(),
            },
            (None, Some(_)) => Operator {
                kind: OperatorType::PaymentLink,
                id: None,
                name: None,
            },
            (None, None) => Operator {
                kind: OperatorType::Api,
                id: None,
                name: None,
            },
        };
        StatementLineObject {
            charge_id: line.charge_id.clone(),
            paid_at: rfc3339(line.paid_at),
            paid_at_local: local
                .timestamp()
                .display_with_offset(local.offset())
                .to_string(),
            amount: line.amount,
            provider: line.provider.clone(),
            operator,
            payment_link: line.payment_link_id.as_ref().map(|id| LinkRef {
                id: id.clone(),
                name: line.payment_link_name.clone(),
            }),
            description: line.description.clone(),
            end_to_end_id: line.end_to_end_id.clone(),
        }
    }
}

/// Count and sum of every line the filter holds (not only this page's).
#[derive(Serialize, ToSchema)]
pub struct StatementTotals {
    count: i64,
    /// Centavos.
    amount: i64,
}

/// A page of the statement, newest payment first.
#[derive(Serialize, ToSchema)]
pub struct StatementList {
    /// Always `statement`.
    object: &'static str,
    /// The zone whose days `paid_gte`, `paid_lt` and `paid_at_local` use.
    #[schema(example = "America/Sao_Paulo")]
    time_zone: &'static str,
    data: Vec<StatementLineObject>,
    /// Whether more lines follow: pass the last `charge_id` as `starting_after`.
    has_more: bool,
    totals: StatementTotals,
}

/// List the paid charges by payment time, newest first, with the totals of the filter.
#[utoipa::path(get, path = "/v1/statement", tag = "statement", operation_id = "list_statement", params(ExportParams, PageParams),
    responses((status = 200, body = StatementList), (status = 400, body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 422, description = "`paid_lt` is before `paid_gte`, or `starting_after` is not the `charge_id` of a line of this statement", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    filter: Result<Query<ExportParams>, QueryRejection>,
    page: Result<Query<PageParams>, QueryRejection>,
) -> Result<Json<StatementList>, ApiError> {
    let malformed = |e: QueryRejection| ApiError::bad_request("parameter_invalid", e.body_text());
    let (Query(filter), Query(q)) = (filter.map_err(malformed)?, page.map_err(malformed)?);
    let limit = match q.limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| {
                ApiError::invalid_param("limit", "limit must be an integer from 1 to 100.")
            })?,
    };
    let statement = statement_of(&caller, filter_of(&filter)?);
    let page = statement
        .page(&app.store, q.starting_after.as_deref(), limit)
        .await
        .map_err(|e| match e {
            StatementError::UnknownCursor(_) => ApiError::unprocessable_param(
                "starting_after",
                "starting_after must be the charge_id of a line of this statement (a paid \
                 charge of this key's merchant and environment).",
            ),
            StatementError::Store(e) => e.into(),
        })?;
    let totals = statement.totals(&app.store).await?;
    Ok(Json(StatementList {
        object: "statement",
        time_zone: statement::DEFAULT_TIME_ZONE,
        data: page.lines.iter().map(StatementLineObject::from).collect(),
        has_more: page.has_more,
        totals: StatementTotals {
            count: totals.count,
            amount: totals.amount,
        },
    }))
}

/// Download the statement as CSV: every line of the filter, oldest payment first.
///
/// Made for the spreadsheets used in Brazil: UTF-8 with a byte-order mark, `;` between fields
/// (the comma is the decimal mark there), amounts as `1234,56`, times as `DD/MM/AAAA HH:MM:SS`
/// in São Paulo, CRLF line ends, fields quoted per RFC 4180. The columns: payment time, amount,
/// PSP (its name), operator (a member's name, `API`, or payment link), payment link name,
/// description, charge id, end-to-end id; the header row is in Portuguese unless
/// `Accept-Language` prefers English. A text field starting with `=`, `+`, `-` or `@` is
/// written with a leading `'` so spreadsheets show it rather than run it. Streamed: a year of
/// lines starts at once and never waits for the whole file.
#[utoipa::path(get, path = "/v1/statement.csv", tag = "statement", operation_id = "download_statement", params(ExportParams),
    responses(
        (status = 200, description = "The CSV file (`Content-Disposition: attachment`)", content_type = "text/csv", body = String),
        (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 422, description = "`paid_lt` is before `paid_gte`", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn csv(
    State(app): State<Arc<App>>,
    caller: Caller,
    headers: HeaderMap,
    query: Result<Query<ExportParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request("parameter_invalid", e.body_text()))?;
    let statement = statement_of(&caller, filter_of(&q)?);
    let lang = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .and_then(Lang::from_accept_language)
        .unwrap_or_default();
    Ok(csv_download(&app, statement, lang, "statement.csv"))
}

/// Adapter ids and the names people know their PSPs by, for the adapters the gateway serves.
pub fn provider_names(app: &App) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = app
        .runtime
        .providers()
        .into_iter()
        .map(|id| {
            let name = app.runtime.display_name(&id);
            (id, name)
        })
        .collect();
    names.sort_by_key(|(_, name)| name.to_lowercase());
    names
}

/// The statement as a CSV attachment named `filename`, streamed, its words in `lang`.
pub fn csv_download(app: &App, statement: Statement, lang: Lang, filename: &str) -> Response {
    let labels = CsvLabels {
        headers: [
            "statement.csv.paid_at",
            "statement.csv.amount",
            "statement.csv.psp",
            "statement.csv.operator",
            "statement.csv.payment_link",
            "statement.csv.description",
            "statement.csv.charge_id",
            "statement.csv.end_to_end_id",
        ]
        .map(|key| lang.t(key).to_owned()),
        api: lang.t("statement.operator.api").to_owned(),
        payment_link: lang.t("statement.operator.payment_link").to_owned(),
        provider_names: provider_names(app).into_iter().collect::<HashMap<_, _>>(),
    };
    let request_id = request_id::current();
    let stream = export::csv(
        statement,
        app.store.clone(),
        statement::time_zone().clone(),
        labels,
    )
    .inspect_err(move |e| {
        // The headers are gone: the client sees the download cut short.
        tracing::error!(request_id = %request_id, error = %e, "statement CSV export failed");
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}
