//! `/v1/events`: every event the merchant's charges emitted, with each delivery and its
//! attempts, and manual redelivery (`webhooks::endpoints::redeliver`, audited).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::{ApiError, ErrorResponse};
use crate::app::App;
use crate::charges::Caller;
use crate::store::events::EventRecord;
use crate::store::rfc3339;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/events", get(list))
        .route("/v1/events/{id}", get(read))
        .route("/v1/events/{id}/redeliver", post(redeliver))
}

/// An event, as listed and as delivered to endpoints (the stored payload, verbatim).
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct EventObject {
    /// `evt_…`
    id: String,
    /// Always `event`.
    object: String,
    #[schema(value_type = super::webhook_endpoints::EventType)]
    #[serde(rename = "type")]
    kind: String,
    created_at: String,
    livemode: bool,
    data: EventData,
    /// Only when an event is retrieved: its deliveries and every attempt.
    deliveries: Option<Vec<DeliveryObject>>,
}

/// What an event is about.
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct EventData {
    /// The charge as it was when the event happened.
    object: crate::charges::object::ChargeObject,
}

/// One endpoint's delivery of an event.
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct DeliveryObject {
    id: String,
    /// `we_…`
    endpoint: String,
    /// `pending`, `delivered`, `failed` or `canceled`.
    status: String,
    next_attempt_at: Option<String>,
    delivered_at: Option<String>,
    attempts: Vec<AttemptObject>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct AttemptObject {
    attempt: i64,
    at: String,
    /// The endpoint's HTTP status; `null` when it could not be reached.
    status_code: Option<i64>,
    latency_ms: Option<i64>,
    error: Option<String>,
    response_excerpt: Option<String>,
}

/// A page of events, newest first.
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct EventList {
    /// Always `list`.
    object: String,
    data: Vec<EventObject>,
    has_more: bool,
}

/// What a redelivery queued.
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct Redelivery {
    id: String,
    /// Always `event`.
    object: String,
    /// Deliveries queued: one per enabled endpoint subscribed to the event's type.
    queued: i64,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// 1 to 100; default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// An event id: the events before it (the next page).
    starting_after: Option<String>,
    /// e.g. `charge.paid`.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// A charge id: only its events.
    charge: Option<String>,
}

/// List events, newest first.
#[utoipa::path(get, path = "/v1/events", tag = "webhooks", operation_id = "list_events", params(ListParams),
    responses((status = 200, body = EventList), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    query: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
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
    let mut events = app
        .store
        .events(
            &caller.merchant_id,
            caller.environment,
            q.kind.as_deref(),
            q.charge.as_deref(),
            q.starting_after.as_deref(),
            limit,
        )
        .await?;
    let has_more = events.len() > limit as usize;
    events.truncate(limit as usize);
    let data: Vec<Value> = events
        .into_iter()
        .map(|mut e| {
            app.charges.qr_images.event_with_image(&mut e.payload);
            e.payload
        })
        .collect();
    Ok(Json(
        json!({"object": "list", "data": data, "has_more": has_more}),
    ))
}

async fn find(app: &App, caller: &Caller, id: &str) -> Result<EventRecord, ApiError> {
    app.store
        .event(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| ApiError::not_found("event", id))
}

/// Retrieve an event with its deliveries and every attempt (status, latency, response excerpt).
#[utoipa::path(get, path = "/v1/events/{id}", tag = "webhooks", operation_id = "get_event",
    params(("id" = String, Path, description = "`evt_…`")),
    responses((status = 200, description = "The event with its `deliveries`", body = EventObject), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let event = find(&app, &caller, &id).await?;
    let mut deliveries = Vec::new();
    for d in app.store.deliveries_of(&event.id).await? {
        let attempts: Vec<Value> = app
            .store
            .attempts_of(&d.id)
            .await?
            .into_iter()
            .map(|a| {
                json!({
                    "attempt": a.attempt,
                    "at": rfc3339(a.at),
                    "status_code": a.status_code,
                    "latency_ms": a.latency_ms,
                    "error": a.error,
                    "response_excerpt": a.response_excerpt,
                })
            })
            .collect();
        deliveries.push(json!({
            "id": d.id,
            "endpoint": d.endpoint_id,
            "status": d.status,
            "next_attempt_at": (d.status == "pending").then(|| rfc3339(d.next_attempt_at)),
            "delivered_at": d.delivered_at.map(rfc3339),
            "attempts": attempts,
        }));
    }
    let mut body = event.payload;
    app.charges.qr_images.event_with_image(&mut body);
    body["deliveries"] = Value::Array(deliveries);
    Ok(Json(body))
}

/// Deliver an event again to every enabled endpoint subscribed to its type.
#[utoipa::path(post, path = "/v1/events/{id}/redeliver", tag = "webhooks", operation_id = "redeliver_event",
    params(("id" = String, Path, description = "`evt_…`")),
    responses((status = 200, body = Redelivery), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn redeliver(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let queued = crate::webhooks::endpoints::redeliver(&app, &caller, &id).await?;
    Ok(Json(json!({"id": id, "object": "event", "queued": queued})))
}
