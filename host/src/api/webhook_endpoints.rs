//! `/v1/webhook_endpoints`: where a merchant receives events, per environment. The signing
//! secret (`whsec_…`) is shown when an endpoint is created and when it is rotated; during a
//! rotation's overlap both secrets sign every delivery.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
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
}

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
    }
}

impl From<EndpointError> for ApiError {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::UrlMissing => {
                ApiError::invalid_param("url", "url is required: where events are POSTed.")
                    .with_code("parameter_missing")
            }
            EndpointError::UrlRejected(_) => ApiError::invalid_param("url", e.to_string()),
            EndpointError::UrlTooLong(_)
            | EndpointError::NoEvents
            | EndpointError::DescriptionTooLong(_)
            | EndpointError::Overlap => {
                let param = e.field().unwrap_or_default();
                ApiError::invalid_param(param, format!("{e}."))
            }
            EndpointError::UnknownEvent(kind) => bad_event(&serde_json::Value::String(kind)),
            EndpointError::NotFound(id) => ApiError::not_found("webhook endpoint", &id),
            EndpointError::EventNotFound(id) => ApiError::not_found("event", &id),
            EndpointError::PlanLimit(reached) => reached.into(),
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
#[utoipa::path(post, path = "/v1/webhook_endpoints", tag = "webhooks",
    request_body(content = serde_json::Value, description = "`{url, events?: [\"charge.paid\", …] (default: all but charge.created), description?}`. Live endpoints need https; loopback and private addresses are refused unless the operator allows them."),
    responses((status = 201, body = EndpointObject), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 403, description = "The plan's webhook endpoints are used up in this environment: `plan_limit_reached`", body = ErrorResponse)),
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
#[utoipa::path(get, path = "/v1/webhook_endpoints", tag = "webhooks",
    responses((status = 200, body = [EndpointObject]), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let endpoints = endpoints::list(&app, &caller).await?;
    let data: Vec<EndpointObject> = endpoints.iter().map(|e| object_of(e, None)).collect();
    Ok(Json(serde_json::json!({"object": "list", "data": data})))
}

/// Retrieve a webhook endpoint (without its secret).
#[utoipa::path(get, path = "/v1/webhook_endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "`we_…`")),
    responses((status = 200, body = EndpointObject), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<EndpointObject>, ApiError> {
    Ok(Json(object_of(
        &endpoints::find(&app, &caller, &id).await?,
        None,
    )))
}

/// Change an endpoint's URL, events, description, or enable it again (`status: "enabled"`).
#[utoipa::path(patch, path = "/v1/webhook_endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "`we_…`")),
    request_body(content = serde_json::Value, description = "`{url?, events?, description?, status?: \"enabled\"|\"disabled\"}`"),
    responses((status = 200, body = EndpointObject), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody,
) -> Result<Json<EndpointObject>, ApiError> {
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
    };
    body.finish()?;
    let endpoint = endpoints::update(&app, &caller, &id, changes).await?;
    Ok(Json(object_of(&endpoint, None)))
}

/// Delete an endpoint; its pending deliveries are canceled.
#[utoipa::path(delete, path = "/v1/webhook_endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "`we_…`")),
    responses((status = 200, description = "`{id, object, deleted: true}`"), (status = 404, body = ErrorResponse)),
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
#[utoipa::path(post, path = "/v1/webhook_endpoints/{id}/rotate_secret", tag = "webhooks",
    params(("id" = String, Path, description = "`we_…`")),
    request_body(content = serde_json::Value, description = "`{overlap_seconds?}`"),
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
