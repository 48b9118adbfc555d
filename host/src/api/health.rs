//! `/healthz` (the process answers), `/readyz` (the database answers and adapters are loaded)
//! and `/metrics` (Prometheus text).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::app::App;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/healthz", get(live))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
}

/// The process answers (liveness).
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "get_healthz",
    responses((status = 200, description = "`ok`", content_type = "text/plain")))]
pub async fn live() -> &'static str {
    "ok"
}

/// The database answers and at least one adapter is loaded (readiness).
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "get_readyz",
    responses(
        (status = 200, description = "`{status: \"ready\", database: \"ok\", adapters: [...]}`"),
        (status = 503, description = "`{status: \"not_ready\", database: \"ok\" | \"unavailable\", adapters}` saying what is missing; the database's own error goes to the log only")))]
pub async fn ready(State(app): State<Arc<App>>) -> impl IntoResponse {
    let database = app.store.ping().await;
    if let Err(e) = &database {
        // The details (hosts, users, SQL) are for the operator's logs: this route is public.
        tracing::error!(error = %e, "readiness: the database does not answer");
    }
    let adapters = app.runtime.providers();
    let ok = database.is_ok() && !adapters.is_empty();
    let body = json!({
        "status": if ok { "ready" } else { "not_ready" },
        "database": if database.is_ok() { "ok" } else { "unavailable" },
        "adapters": adapters,
    });
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body))
}

/// Prometheus metrics: requests by route and status, PSP call latency by provider and
/// operation, charges created by provider and status.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "get_metrics",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(app): State<Arc<App>>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        app.metrics.render(),
    )
}
