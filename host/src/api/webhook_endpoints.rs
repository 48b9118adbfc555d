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
use crate::vault::Aad;
use crate::webhooks::{DEFAULT_EVENT_TYPES, EVENT_TYPES, signature};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/webhook_endpoints", post(create).get(list))
        .route(
            "/v1/webhook_endpoints/{id}",
            get(read).patch(update).delete(remove),
        )
        .route("/v1/webhook_endpoints/{id}/rotate_secret", post(rotate))
}

/// Longest overlap of a rotation: a week.
const MAX_OVERLAP_SECONDS: i64 = 7 * 24 * 3600;

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

fn secret_aad(id: &str) -> Aad {
    Aad::new("webhook_endpoints", id, "secret")
}

async fn url_param(
    app: &App,
    caller: &Caller,
    body: &mut JsonObject,
) -> Result<Option<String>, ApiError> {
    let Some(url) = body.string("url", 2048)? else {
        return Ok(None);
    };
    app.config
        .delivery
        .destinations
        .check_url(&url, caller.environment)
        .await
        .map_err(|e| ApiError::invalid_param("url", format!("url: {e}")))?;
    Ok(Some(url))
}

fn events_param(body: &mut JsonObject) -> Result<Option<Vec<String>>, ApiError> {
    let Some((name, list)) = body.list("events")? else {
        return Ok(None);
    };
    let mut events = Vec::new();
    for value in list {
        match value.as_str() {
            Some(kind) if EVENT_TYPES.contains(&kind) => {
                if !events.iter().any(|e: &String| e == kind) {
                    events.push(kind.to_owned());
                }
            }
            _ => {
                return Err(ApiError::invalid_param(
                    name,
                    format!(
                        "events must be a list of: {}; got {value}.",
                        EVENT_TYPES.join(", ")
                    ),
                ));
            }
        }
    }
    if events.is_empty() {
        return Err(ApiError::invalid_param(
            name,
            "events must name at least one event type.",
        ));
    }
    Ok(Some(events))
}

/// Create a webhook endpoint; the answer shows its signing secret once.
#[utoipa::path(post, path = "/v1/webhook_endpoints", tag = "webhooks",
    request_body(content = serde_json::Value, description = "`{url, events?: [\"charge.paid\", …] (default: all but charge.created), description?}`. Live endpoints need https; loopback and private addresses are refused unless the operator allows them."),
    responses((status = 201, body = EndpointObject), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    JsonBody(mut body): JsonBody,
) -> Result<(StatusCode, Json<EndpointObject>), ApiError> {
    let url = url_param(&app, &caller, &mut body).await?.ok_or_else(|| {
        ApiError::invalid_param("url", "url is required: where events are POSTed.")
            .with_code("parameter_missing")
    })?;
    let events = events_param(&mut body)?
        .unwrap_or_else(|| DEFAULT_EVENT_TYPES.iter().map(|s| s.to_string()).collect());
    let description = body.string("description", 200)?;
    body.finish()?;
    let id = format!("we_{}", uuid::Uuid::now_v7().simple());
    let secret = signature::generate_secret();
    let now = now_ms();
    let endpoint = EndpointRecord {
        secret_sealed: app.vault.seal(secret.as_bytes(), &secret_aad(&id)),
        id,
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        url,
        description,
        events,
        previous_secret_sealed: None,
        previous_expires_at: None,
        status: "enabled".into(),
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
    };
    app.store.insert_webhook_endpoint(&endpoint).await?;
    Ok((
        StatusCode::CREATED,
        Json(object_of(&endpoint, Some(secret))),
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
    let endpoints = app
        .store
        .webhook_endpoints(&caller.merchant_id, caller.environment)
        .await?;
    let data: Vec<EndpointObject> = endpoints.iter().map(|e| object_of(e, None)).collect();
    Ok(Json(serde_json::json!({"object": "list", "data": data})))
}

async fn find(app: &App, caller: &Caller, id: &str) -> Result<EndpointRecord, ApiError> {
    app.store
        .webhook_endpoint(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint", id))
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
    Ok(Json(object_of(&find(&app, &caller, &id).await?, None)))
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
    let mut endpoint = find(&app, &caller, &id).await?;
    if let Some(url) = url_param(&app, &caller, &mut body).await? {
        endpoint.url = url;
    }
    if let Some(events) = events_param(&mut body)? {
        endpoint.events = events;
    }
    if let Some(description) = body.string("description", 200)? {
        endpoint.description = Some(description);
    }
    match body.string("status", 16)?.as_deref() {
        None => {}
        Some("enabled") => {
            endpoint.status = "enabled".into();
            endpoint.disabled_reason = None;
            endpoint.failing_since = None;
        }
        Some("disabled") => {
            endpoint.status = "disabled".into();
            endpoint.disabled_reason = Some("disabled by the merchant".into());
        }
        Some(_) => {
            return Err(ApiError::invalid_param(
                "status",
                "status must be \"enabled\" or \"disabled\".",
            ));
        }
    }
    body.finish()?;
    endpoint.updated_at = now_ms();
    app.store.update_webhook_endpoint(&endpoint).await?;
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
    let endpoint = find(&app, &caller, &id).await?;
    app.store.delete_webhook_endpoint(&endpoint.id).await?;
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
    let overlap = body.integer("overlap_seconds")?.unwrap_or(86_400);
    if !(0..=MAX_OVERLAP_SECONDS).contains(&overlap) {
        return Err(ApiError::invalid_param(
            "overlap_seconds",
            "overlap_seconds must be between 0 and 604800.",
        ));
    }
    body.finish()?;
    let mut endpoint = find(&app, &caller, &id).await?;
    let secret = signature::generate_secret();
    let now = now_ms();
    endpoint.previous_secret_sealed = Some(std::mem::replace(
        &mut endpoint.secret_sealed,
        app.vault.seal(secret.as_bytes(), &secret_aad(&endpoint.id)),
    ));
    endpoint.previous_expires_at = Some(now + overlap * 1000);
    endpoint.updated_at = now;
    app.store.update_webhook_endpoint(&endpoint).await?;
    Ok(Json(object_of(&endpoint, Some(secret))))
}
