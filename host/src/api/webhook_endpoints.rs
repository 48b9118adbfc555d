//! `/v1/webhook_endpoints`: where a merchant receives events, per environment. The signing
//! secret (`whsec_…`) is shown when an endpoint is created and when it is rotated; during a
//! rotation's overlap both secrets sign every delivery.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
use super::concurrency::etag;
use super::error::{ApiError, ErrorResponse};
use crate::app::App;
use crate::charges::Caller;
use crate::domain::Environment;
use crate::store::webhook_endpoints::EndpointRecord;
use crate::store::{now_ms, rfc3339};
use crate::webhooks::EVENT_TYPES;
use crate::webhooks::endpoints::{
    self, Changes, EndpointError, EndpointUrl, EventTypes, NewEndpoint, Overlap,
};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/webhook_endpoints", post(create).get(list))
        .route(
            "/v1/webhook_endpoints/{id}",
            get(read).patch(update).delete(remove),
        )
        .route("/v1/webhook_endpoints/{id}/rotate_secret", post(rotate))
}

/// A webhook endpoint.
#[derive(Serialize, ToSchema)]
pub struct EndpointObject {
    /// `we_…`.
    id: String,
    /// Always `webhook_endpoint`.
    object: &'static str,
    url: String,
    description: Option<String>,
    /// The event types delivered here.
    events: Vec<String>,
    /// `enabled` or `disabled`.
    status: String,
    /// Why the gateway disabled it (a 410 answer, days of failures).
    disabled_reason: Option<String>,
    /// Deliveries have failed since then.
    failing_since: Option<String>,
    /// Only when created or rotated: the `whsec_…` signing secret. Keep it: it is not shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
    /// Until then the previous secret signs too.
    previous_secret_expires_at: Option<String>,
    livemode: bool,
    created_at: String,
    /// Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a
    /// change so that one made meanwhile is refused (409) instead of undone.
    version: i64,
}

/// The merchant's webhook endpoints in the key's environment.
#[derive(Serialize, ToSchema)]
pub struct EndpointList {
    /// Always `list`.
    object: &'static str,
    data: Vec<EndpointObject>,
}

/// An event type an endpoint can receive.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub enum EventType {
    #[serde(rename = "charge.created")]
    ChargeCreated,
    #[serde(rename = "charge.paid")]
    ChargePaid,
    #[serde(rename = "charge.underpaid")]
    ChargeUnderpaid,
    #[serde(rename = "charge.expired")]
    ChargeExpired,
    #[serde(rename = "charge.canceled")]
    ChargeCanceled,
    #[serde(rename = "charge.failed")]
    ChargeFailed,
}

/// `POST /v1/webhook_endpoints` body: what [`create`] reads. `null` is the same as leaving a
/// field out.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreateEndpointRequest {
    /// Where events are POSTed: an http or https URL. Live endpoints need https; a host that
    /// does not resolve, or resolves to a loopback or private address, is refused (422) unless
    /// the operator allows private addresses.
    #[schema(
        format = "uri",
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://",
        example = "https://example.com/pix/events"
    )]
    url: String,
    /// Default: every type but `charge.created`.
    #[schema(min_items = 1)]
    events: Option<Vec<EventType>>,
    #[schema(schema_with = description_schema)]
    description: Option<String>,
}

/// `PATCH /v1/webhook_endpoints/{id}` body: what [`update`] reads; omitted fields keep their
/// value.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UpdateEndpointRequest {
    /// As on create.
    #[schema(
        format = "uri",
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://"
    )]
    url: Option<String>,
    #[schema(min_items = 1)]
    events: Option<Vec<EventType>>,
    #[schema(schema_with = description_schema)]
    description: Option<String>,
    /// `enabled` turns a disabled endpoint on again.
    #[schema(value_type = Option<EndpointStatus>)]
    status: Option<String>,
    /// The `version` this change is made against (or send `If-Match: "<version>"`): if the
    /// endpoint changed since, 409 `conflict` and nothing is saved.
    #[schema(minimum = 1)]
    version: Option<i64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum EndpointStatus {
    Enabled,
    Disabled,
}

/// `POST /v1/webhook_endpoints/{id}/rotate_secret` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct RotateSecretRequest {
    /// Seconds the old secret keeps signing: 0 to 604800 (a week); default 86400.
    #[schema(minimum = 0, maximum = 604_800)]
    overlap_seconds: Option<i64>,
}

/// One line, 1 to 200 characters, not only spaces, no control characters.
fn description_schema() -> utoipa::openapi::Object {
    super::openapi::line(endpoints::MAX_DESCRIPTION_CHARS)
}

/// The `ETag` header of an answer.
type Tagged = [(axum::http::HeaderName, axum::http::HeaderValue); 1];

fn object_of(e: &EndpointRecord, secret: Option<String>) -> EndpointObject {
    EndpointObject {
        id: e.id.clone(),
        object: "webhook_endpoint",
        url: e.url.clone(),
        description: e.description.clone(),
        events: e.events.clone(),
        status: e.status.clone(),
        disabled_reason: e.disabled_reason.clone(),
        failing_since: e.failing_since.map(rfc3339),
        secret,
        previous_secret_expires_at: e.previous_expires_at.filter(|t| *t > now_ms()).map(rfc3339),
        livemode: e.environment == Environment::Live,
        created_at: rfc3339(e.created_at),
        version: e.version,
    }
}

impl From<EndpointError> for ApiError {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::UrlMissing => {
                ApiError::invalid_param("url", "url is required: where events are POSTed.")
                    .with_code("parameter_missing")
            }
            // `url_param` answered 400 for a URL without the documented shape; what the
            // destination policy refuses beyond it (resolution, private address, http in live,
            // a user name) is a rule the document cannot state.
            EndpointError::UrlRejected(_) => ApiError::unprocessable_param("url", e.to_string()),
            EndpointError::UrlTooLong(_)
            | EndpointError::NoEvents
            | EndpointError::DescriptionTooLong(_)
            | EndpointError::DescriptionControl
            | EndpointError::Overlap => {
                let param = e.field().unwrap_or_default();
                ApiError::invalid_param(param, format!("{e}."))
            }
            EndpointError::UnknownEvent(kind) => bad_event(&serde_json::Value::String(kind)),
            EndpointError::NotFound(id) => ApiError::not_found("webhook endpoint", &id),
            EndpointError::EventNotFound(id) => ApiError::not_found("event", &id),
            EndpointError::PlanLimit(reached) => reached.into(),
            EndpointError::TooMany { limit, usage, .. } => {
                let mut error = ApiError::new(
                    axum::http::StatusCode::FORBIDDEN,
                    crate::api::error::ErrorType::PermissionError,
                    "endpoint_limit_reached",
                    format!("{}.", e),
                );
                error.body.limit = Some(limit);
                error.body.usage = Some(usage);
                error
            }
            EndpointError::Conflict { expected, current } => {
                super::concurrency::conflict("webhook endpoint", expected, current)
            }
            EndpointError::Store(e) => ApiError::internal(e),
        }
    }
}

fn bad_event(value: &serde_json::Value) -> ApiError {
    ApiError::invalid_param(
        "events",
        format!(
            "events must be a list of: {}; got {value}.",
            EVENT_TYPES.join(", ")
        ),
    )
}

async fn url_param(
    app: &App,
    caller: &Caller,
    body: &mut JsonObject,
) -> Result<Option<EndpointUrl>, ApiError> {
    let Some(url) = body.string("url", endpoints::MAX_URL_CHARS)? else {
        return Ok(None);
    };
    // The documented shape (`pattern`, `format: uri`): an http or https URL.
    let scheme = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    if !(scheme.starts_with("http://") || scheme.starts_with("https://")) {
        return Err(ApiError::invalid_param(
            "url",
            format!("url: {url:?} is not an http or https URL"),
        ));
    }
    if let Err(e) = url::Url::parse(&url) {
        return Err(ApiError::invalid_param(
            "url",
            format!("url: {url:?} is not a URL: {e}"),
        ));
    }
    Ok(Some(
        EndpointUrl::parse(&app.config.delivery.destinations, caller.environment, &url).await?,
    ))
}

fn events_param(body: &mut JsonObject) -> Result<Option<EventTypes>, ApiError> {
    let Some((_, list)) = body.list("events")? else {
        return Ok(None);
    };
    let kinds = list
        .iter()
        .map(|value| value.as_str().ok_or_else(|| bad_event(value)))
        .collect::<Result<Vec<&str>, ApiError>>()?;
    Ok(Some(EventTypes::parse(kinds)?))
}

fn description_param(body: &mut JsonObject) -> Result<Option<String>, ApiError> {
    match body.string("description", endpoints::MAX_DESCRIPTION_CHARS)? {
        Some(text) => Ok(endpoints::description(&text)?),
        None => Ok(None),
    }
}

/// Create a webhook endpoint; the answer shows its signing secret once.
#[utoipa::path(post, path = "/v1/webhook_endpoints", tag = "webhooks", operation_id = "create_webhook_endpoint",
    request_body = CreateEndpointRequest,
    responses((status = 201, body = EndpointObject), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 403, description = "The plan's webhook endpoints are used up in this environment: `plan_limit_reached`", body = ErrorResponse),
        (status = 422, description = "The `url` is well formed and refused: its host does not resolve, or resolves to a loopback, private or reserved address, it carries a user name, or it is http in live", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    JsonBody(mut body): JsonBody,
) -> Result<(StatusCode, Json<EndpointObject>), ApiError> {
    let url = url_param(&app, &caller, &mut body)
        .await?
        .ok_or(EndpointError::UrlMissing)?;
    let events = events_param(&mut body)?.unwrap_or_else(EventTypes::default_set);
    let description = description_param(&mut body)?;
    body.finish()?;
    let created = endpoints::create(
        &app,
        &caller,
        NewEndpoint {
            url,
            events,
            description,
        },
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(object_of(&created.endpoint, Some(created.secret))),
    ))
}

/// The merchant's webhook endpoints in this environment.
#[utoipa::path(get, path = "/v1/webhook_endpoints", tag = "webhooks", operation_id = "list_webhook_endpoints",
    responses((status = 200, body = EndpointList), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<Json<EndpointList>, ApiError> {
    let endpoints = endpoints::list(&app, &caller).await?;
    let data: Vec<EndpointObject> = endpoints.iter().map(|e| object_of(e, None)).collect();
    Ok(Json(EndpointList {
        object: "list",
        data,
    }))
}

/// Retrieve a webhook endpoint (without its secret).
#[utoipa::path(get, path = "/v1/webhook_endpoints/{id}", tag = "webhooks", operation_id = "get_webhook_endpoint",
    params(("id" = String, Path, description = "`we_…`")),
    responses((status = 200, body = EndpointObject), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(Tagged, Json<EndpointObject>), ApiError> {
    let endpoint = endpoints::find(&app, &caller, &id).await?;
    Ok((etag(endpoint.version), Json(object_of(&endpoint, None))))
}

/// Change an endpoint's URL, events, description, or enable it again (`status: "enabled"`).
#[utoipa::path(patch, path = "/v1/webhook_endpoints/{id}", tag = "webhooks", operation_id = "update_webhook_endpoint",
    params(("id" = String, Path, description = "`we_…`"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the endpoint as read, e.g. `\"3\"`: the change is refused with 409 if it changed since")),
    request_body = UpdateEndpointRequest,
    responses((status = 200, body = EndpointObject), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 409, description = "The endpoint changed since the version named (`If-Match` or `version`): `conflict`, nothing saved", body = ErrorResponse),
        (status = 422, description = "The `url` is well formed and refused: its host does not resolve, or resolves to a loopback, private or reserved address, it carries a user name, or it is http in live", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    JsonBody(mut body): JsonBody,
) -> Result<(Tagged, Json<EndpointObject>), ApiError> {
    // An unknown endpoint is a 404 whatever the body says.
    endpoints::find(&app, &caller, &id).await?;
    let changes = Changes {
        url: url_param(&app, &caller, &mut body).await?,
        events: events_param(&mut body)?,
        description: description_param(&mut body)?.map(Some),
        enabled: match body.string("status", 16)?.as_deref() {
            None => None,
            Some("enabled") => Some(true),
            Some("disabled") => Some(false),
            Some(_) => {
                return Err(ApiError::invalid_param(
                    "status",
                    "status must be \"enabled\" or \"disabled\".",
                ));
            }
        },
        expected_version: super::concurrency::expected_version(&headers, &mut body)?,
    };
    body.finish()?;
    let endpoint = endpoints::update(&app, &caller, &id, changes).await?;
    Ok((etag(endpoint.version), Json(object_of(&endpoint, None))))
}

/// Delete an endpoint; its pending deliveries are canceled.
#[utoipa::path(delete, path = "/v1/webhook_endpoints/{id}", tag = "webhooks", operation_id = "delete_webhook_endpoint",
    params(("id" = String, Path, description = "`we_…`")),
    responses((status = 200, description = "Deleted", body = crate::api::openapi::Deleted), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn remove(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    endpoints::delete(&app, &caller, &id).await?;
    Ok(Json(
        serde_json::json!({"id": id, "object": "webhook_endpoint", "deleted": true}),
    ))
}

/// Replace the signing secret. The old one keeps signing (both signatures are sent) for
/// `overlap_seconds` (default 86400, at most a week), so receivers can switch without loss.
#[utoipa::path(post, path = "/v1/webhook_endpoints/{id}/rotate_secret", tag = "webhooks", operation_id = "rotate_webhook_secret",
    params(("id" = String, Path, description = "`we_…`")),
    request_body = RotateSecretRequest,
    responses((status = 200, body = EndpointObject), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn rotate(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody,
) -> Result<Json<EndpointObject>, ApiError> {
    let overlap = match body.integer("overlap_seconds")? {
        Some(seconds) => Overlap::seconds(seconds)?,
        None => Overlap::default(),
    };
    body.finish()?;
    let rotated = endpoints::rotate_secret(&app, &caller, &id, overlap).await?;
    Ok(Json(object_of(&rotated.endpoint, Some(rotated.secret))))
}
