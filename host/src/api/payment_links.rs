//! `/v1/payment_links`: create, list, read, update and deactivate the merchant's payment links
//! (public checkout pages at `/p/<slug>`), in the API key's environment. Calls
//! [`crate::payment_links`], as the dashboard does.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
use super::error::{ApiError, ErrorResponse, ErrorType};
use crate::app::App;
use crate::charges::Caller;
use crate::domain::{Amount, Environment};
use crate::payment_links::{
    self, Changes, LinkError, MAX_NAME_CHARS, MAX_SLUG_CHARS, NewLink, Price, Slug, Window,
};
use crate::store::payment_links::PaymentLinkRecord;
use crate::store::{now_ms, parse_rfc3339, rfc3339};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/payment_links", post(create).get(list))
        .route("/v1/payment_links/{id}", get(read).patch(update))
        .route("/v1/payment_links/{id}/deactivate", post(deactivate))
}

/// A payment link: a public page where anyone pays the merchant by Pix.
#[derive(Serialize, ToSchema)]
pub struct PaymentLinkObject {
    /// `plink_…`.
    id: String,
    /// Always `payment_link`.
    object: &'static str,
    /// What the payer pays for; shown on the page and sent to the PSP as the description.
    name: String,
    /// The last part of `url`.
    slug: String,
    /// The page to share: `{base_url}/p/{slug}`.
    url: String,
    /// A fixed amount in centavos; `null` when the payer types the amount.
    amount: Option<i64>,
    /// For a typed amount: the least the payer may pay, in centavos.
    min_amount: Option<i64>,
    /// For a typed amount: the most the payer may pay, in centavos.
    max_amount: Option<i64>,
    /// How many paid payments the link takes; `null`: no limit.
    usage_limit: Option<i64>,
    /// Paid payments made through the link.
    paid_count: i64,
    /// Their total, in centavos.
    paid_amount: i64,
    /// RFC 3339; before it the page says when it opens.
    valid_from: Option<String>,
    /// RFC 3339; from then on the page says the link expired.
    valid_until: Option<String>,
    /// The PSP that takes the charges (an adapter id) or `random`.
    provider: String,
    /// `false` once deactivated.
    active: bool,
    /// Whether the link takes payments now: `open`, `inactive`, `scheduled` (before
    /// `valid_from`), `expired` (after `valid_until`) or `used_up` (`usage_limit` reached).
    status: &'static str,
    /// `true` for live keys' links.
    livemode: bool,
    created_at: String,
    updated_at: String,
}

pub fn object_of(app: &App, l: &PaymentLinkRecord) -> PaymentLinkObject {
    PaymentLinkObject {
        id: l.id.clone(),
        object: "payment_link",
        name: l.name.clone(),
        slug: l.slug.clone(),
        url: payment_links::url(app, l),
        amount: l.amount,
        min_amount: l.min_amount,
        max_amount: l.max_amount,
        usage_limit: l.usage_limit,
        paid_count: l.paid_count,
        paid_amount: l.paid_amount,
        valid_from: l.valid_from.map(rfc3339),
        valid_until: l.valid_until.map(rfc3339),
        provider: l.provider.clone(),
        active: l.active,
        status: payment_links::availability(l, now_ms()).as_str(),
        livemode: l.environment == Environment::Live,
        created_at: rfc3339(l.created_at),
        updated_at: rfc3339(l.updated_at),
    }
}

/// A page of payment links, newest first.
#[derive(Serialize, ToSchema)]
pub struct PaymentLinkList {
    /// Always `list`.
    object: &'static str,
    data: Vec<PaymentLinkObject>,
    /// Whether more links follow: pass the last id as `starting_after`.
    has_more: bool,
}

/// `POST /v1/payment_links` body: what [`create`] reads. `null` is the same as leaving a field
/// out; text is trimmed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreatePaymentLinkRequest {
    /// 1 to 100 characters, not only spaces, no line breaks or other control characters.
    #[schema(schema_with = name_schema)]
    name: String,
    /// A fixed amount in centavos. Omit it to let the payer type the amount (then
    /// `min_amount` and `max_amount` may bound it; with `amount` they are refused).
    #[schema(minimum = 1, maximum = 1_000_000_000, example = 5990)]
    amount: Option<i64>,
    /// Only without `amount`: the least the payer may pay, in centavos; at most `max_amount`.
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    min_amount: Option<i64>,
    /// Only without `amount`: the most the payer may pay, in centavos.
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    max_amount: Option<i64>,
    /// Paid payments the link takes; then its page says it is used up.
    #[schema(minimum = 1, maximum = 1_000_000)]
    usage_limit: Option<i64>,
    /// RFC 3339: the link takes payments from then on; before `valid_until`.
    #[schema(format = DateTime, max_length = 64)]
    valid_from: Option<String>,
    /// RFC 3339: the link takes no payments from then on.
    #[schema(format = DateTime, max_length = 64)]
    valid_until: Option<String>,
    /// An installed adapter id (`GET /v1/adapters`) or `random` (the default): round robin over
    /// the merchant's PSPs, as for charges.
    #[schema(
        example = "random",
        max_length = 64,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    provider: Option<String>,
    /// A custom slug: 3 to 64 letters, digits and hyphens, starting and ending with a letter or
    /// digit (stored in lower case), not taken by another link. Default: 20 random characters.
    #[schema(
        example = "camiseta-azul",
        pattern = "^[A-Za-z0-9][A-Za-z0-9-]{1,62}[A-Za-z0-9]$"
    )]
    slug: Option<String>,
    /// Default `true`.
    active: Option<bool>,
}

/// `PATCH /v1/payment_links/{id}` body: what [`update`] reads. Absent fields keep their value;
/// `null` clears an optional one.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UpdatePaymentLinkRequest {
    #[schema(schema_with = name_schema)]
    name: Option<String>,
    /// A number makes the amount fixed (and clears `min_amount` and `max_amount` unless given);
    /// `null` lets the payer type it.
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    amount: Option<i64>,
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    min_amount: Option<i64>,
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    max_amount: Option<i64>,
    #[schema(minimum = 1, maximum = 1_000_000)]
    usage_limit: Option<i64>,
    #[schema(format = DateTime, max_length = 64)]
    valid_from: Option<String>,
    #[schema(format = DateTime, max_length = 64)]
    valid_until: Option<String>,
    #[schema(
        max_length = 64,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    provider: Option<String>,
    /// The old address stops working.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9-]{1,62}[A-Za-z0-9]$")]
    slug: Option<String>,
    /// `true` activates the link again; `false` deactivates it.
    active: Option<bool>,
}

/// A link's name as [`payment_links::name`] reads it (never `null`: a link needs a name).
fn name_schema() -> utoipa::openapi::Object {
    super::openapi::text(MAX_NAME_CHARS, super::openapi::CONTROLS, false)
}

impl From<LinkError> for ApiError {
    fn from(e: LinkError) -> Self {
        match e {
            LinkError::NotFound(id) => ApiError::not_found("payment link", &id),
            LinkError::Store(e) => ApiError::internal(e),
            LinkError::PlanLimit(reached) => reached.into(),
            LinkError::SlugTaken(_) => ApiError::new(
                StatusCode::CONFLICT,
                ErrorType::InvalidRequestError,
                "slug_taken",
                format!("{e}."),
            )
            .with_param("slug"),
            LinkError::UnknownProvider(_) => {
                ApiError::unprocessable_param("provider", format!("{e}."))
                    .with_code("provider_unknown")
            }
            // Rules across fields, beyond what the document states field by field.
            LinkError::AmountWithRange | LinkError::RangeInverted | LinkError::WindowInverted => {
                ApiError::unprocessable_param(e.field().unwrap_or_default(), format!("{e}."))
            }
            LinkError::NameMissing => {
                ApiError::invalid_param("name", format!("{e}.")).with_code("parameter_missing")
            }
            _ => ApiError::invalid_param(e.field().unwrap_or_default(), format!("{e}.")),
        }
    }
}

/// A setting an update may clear with `null`: `Some(None)` then, `Some(Some(_))` when given,
/// `None` when absent.
fn nullable<T>(
    body: &mut JsonObject,
    key: &str,
    read: impl FnOnce(&mut JsonObject) -> Result<Option<T>, ApiError>,
) -> Result<Option<Option<T>>, ApiError> {
    if body.null(key) {
        return Ok(Some(None));
    }
    Ok(read(body)?.map(Some))
}

fn amount_param(body: &mut JsonObject, key: &str) -> Result<Option<Amount>, ApiError> {
    body.integer(key)?
        .map(|c| {
            Amount::from_centavos(c)
                .map_err(|e| ApiError::invalid_param(key, e.to_string().replacen("amount", key, 1)))
        })
        .transpose()
}

fn time_param(body: &mut JsonObject, key: &str) -> Result<Option<i64>, ApiError> {
    body.string(key, 64)?
        .map(|text| {
            parse_rfc3339(&text).ok_or_else(|| {
                ApiError::invalid_param(
                    key,
                    format!("{key} must be an RFC 3339 time, e.g. 2026-11-22T10:00:00Z."),
                )
            })
        })
        .transpose()
}

fn limit_param(body: &mut JsonObject) -> Result<Option<i64>, ApiError> {
    Ok(body
        .integer("usage_limit")?
        .map(payment_links::usage_limit)
        .transpose()?)
}

fn name_param(body: &mut JsonObject) -> Result<Option<String>, ApiError> {
    Ok(body
        .string("name", MAX_NAME_CHARS)?
        .map(|n| payment_links::name(&n))
        .transpose()?)
}

fn slug_param(body: &mut JsonObject) -> Result<Option<Slug>, ApiError> {
    Ok(body
        .string("slug", MAX_SLUG_CHARS)?
        .map(|s| Slug::parse(&s))
        .transpose()?)
}

fn provider_param(
    app: &App,
    body: &mut JsonObject,
) -> Result<Option<crate::charges::ProviderChoice>, ApiError> {
    Ok(body
        .string("provider", 64)?
        .map(|p| payment_links::provider(app, &p))
        .transpose()?)
}

/// Create a payment link.
#[utoipa::path(post, path = "/v1/payment_links", tag = "payment_links", operation_id = "create_payment_link",
    request_body = CreatePaymentLinkRequest,
    responses(
        (status = 201, body = PaymentLinkObject),
        (status = 400, description = "A parameter does not have the documented shape; `param` names it", body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 403, description = "The plan's active payment links are used up in this environment: `plan_limit_reached`", body = ErrorResponse),
        (status = 409, description = "The slug is taken", body = ErrorResponse),
        (status = 422, description = "Well formed, and refused by a rule across fields (`amount` together with `min_amount` or `max_amount`, `min_amount` above `max_amount`, `valid_from` not before `valid_until`), or no adapter serves `provider` (`provider_unknown`); `param` names the field", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    JsonBody(mut body): JsonBody,
) -> Result<(StatusCode, Json<PaymentLinkObject>), ApiError> {
    let name = name_param(&mut body)?.ok_or(LinkError::NameMissing)?;
    let price = Price::new(
        amount_param(&mut body, "amount")?,
        amount_param(&mut body, "min_amount")?,
        amount_param(&mut body, "max_amount")?,
    )?;
    let usage_limit = limit_param(&mut body)?;
    let window = Window::new(
        time_param(&mut body, "valid_from")?,
        time_param(&mut body, "valid_until")?,
    )?;
    let provider =
        provider_param(&app, &mut body)?.unwrap_or(crate::charges::ProviderChoice::Random);
    let slug = slug_param(&mut body)?;
    let active = body.boolean("active")?.unwrap_or(true);
    body.finish()?;
    let link = payment_links::create(
        &app,
        &caller,
        NewLink {
            name,
            price,
            usage_limit,
            window,
            provider,
            slug,
            active,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(object_of(&app, &link))))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// 1 to 100; default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// A payment link id: list the links created before it (the next page).
    starting_after: Option<String>,
}

/// List payment links, newest first, with cursor pagination.
#[utoipa::path(get, path = "/v1/payment_links", tag = "payment_links", operation_id = "list_payment_links", params(ListParams),
    responses((status = 200, body = PaymentLinkList), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    query: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<PaymentLinkList>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request("parameter_invalid", e.body_text()))?;
    let limit = match q.limit.as_deref() {
        None => 20,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| {
                ApiError::invalid_param("limit", "limit must be an integer from 1 to 100.")
            })?,
    };
    let (links, has_more) =
        payment_links::list(&app, &caller, q.starting_after.as_deref(), limit).await?;
    Ok(Json(PaymentLinkList {
        object: "list",
        data: links.iter().map(|l| object_of(&app, l)).collect(),
        has_more,
    }))
}

/// Retrieve a payment link.
#[utoipa::path(get, path = "/v1/payment_links/{id}", tag = "payment_links", operation_id = "get_payment_link",
    params(("id" = String, Path, description = "`plink_…`")),
    responses((status = 200, body = PaymentLinkObject), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<PaymentLinkObject>, ApiError> {
    let link = payment_links::find(&app, &caller, &id).await?;
    Ok(Json(object_of(&app, &link)))
}

/// Change a payment link. Charges already made keep the name they were made with.
#[utoipa::path(patch, path = "/v1/payment_links/{id}", tag = "payment_links", operation_id = "update_payment_link",
    params(("id" = String, Path, description = "`plink_…`")),
    request_body = UpdatePaymentLinkRequest,
    responses(
        (status = 200, body = PaymentLinkObject),
        (status = 400, description = "A parameter does not have the documented shape; `param` names it", body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 403, description = "Activating it goes beyond the plan's active payment links: `plan_limit_reached`", body = ErrorResponse),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The slug is taken", body = ErrorResponse),
        (status = 422, description = "Well formed, and refused by a rule across fields, the link's stored ones included (`amount` together with `min_amount` or `max_amount`, `min_amount` above `max_amount`, `valid_from` not before `valid_until`), or no adapter serves `provider` (`provider_unknown`); `param` names the field", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody,
) -> Result<Json<PaymentLinkObject>, ApiError> {
    // An unknown link is a 404 whatever the body says.
    payment_links::find(&app, &caller, &id).await?;
    if body.null("name") {
        return Err(LinkError::NameMissing.into());
    }
    let changes = Changes {
        name: name_param(&mut body)?,
        amount: nullable(&mut body, "amount", |b| amount_param(b, "amount"))?,
        min_amount: nullable(&mut body, "min_amount", |b| amount_param(b, "min_amount"))?,
        max_amount: nullable(&mut body, "max_amount", |b| amount_param(b, "max_amount"))?,
        usage_limit: nullable(&mut body, "usage_limit", limit_param)?,
        valid_from: nullable(&mut body, "valid_from", |b| time_param(b, "valid_from"))?,
        valid_until: nullable(&mut body, "valid_until", |b| time_param(b, "valid_until"))?,
        provider: provider_param(&app, &mut body)?,
        slug: slug_param(&mut body)?,
        active: body.boolean("active")?,
    };
    body.finish()?;
    let link = payment_links::update(&app, &caller, &id, changes).await?;
    Ok(Json(object_of(&app, &link)))
}

/// Deactivate a payment link: its page says so and creates no charge. Charges already made
/// can still be paid. `PATCH` with `active: true` activates it again.
#[utoipa::path(post, path = "/v1/payment_links/{id}/deactivate", tag = "payment_links", operation_id = "deactivate_payment_link",
    params(("id" = String, Path, description = "`plink_…`")),
    responses((status = 200, body = PaymentLinkObject), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn deactivate(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<PaymentLinkObject>, ApiError> {
    let link = payment_links::set_active(&app, &caller, &id, false).await?;
    Ok(Json(object_of(&app, &link)))
}
