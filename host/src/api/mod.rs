//! The gateway's HTTP surface. Each module exposes its own `router()`; [`router`] joins them
//! under the layers every request passes: request id, metrics, body limit.
//!
//! - [`charges`]: `/v1/charges` (and each charge's live stream); [`credentials`]:
//!   `/v1/credentials`; [`webhook_endpoints`]: `/v1/webhook_endpoints`; [`events`]:
//!   `/v1/events`; [`notifications`]: `/api/wh/<uuid>`, where PSPs notify; [`adapters`]:
//!   `/v1/adapters`; [`payment_links`]: `/v1/payment_links`; [`health`]: `/healthz`,
//!   `/readyz`, `/metrics`; [`openapi`]: `/v1/openapi.json`.
//! - [`statement`]: `/v1/statement` and `/v1/statement.csv`, paid charges by payment day.
//! - [`usage`]: `/v1/usage`, the merchant's plan, its limits and this month's usage.
//! - [`evidence`]: `/v1/charges/{id}/evidence`, a sale's photo and place.
//! - The dashboard's routes ([`crate::web`]) join here, under the same layers.
//! - [`auth`] turns an API key into a [`crate::charges::Caller`]; [`body`] reads JSON bodies
//!   field by field; [`error`] is the one error type; [`psp_failure`] maps PSP failures to it;
//!   [`concurrency`]: versions, `ETag` and `If-Match` of what merchants edit.

pub mod adapters;
pub mod auth;
pub mod body;
pub mod charges;
pub mod concurrency;
pub mod credentials;
pub mod error;
pub mod events;
pub mod evidence;
pub mod health;
pub mod notifications;
pub mod openapi;
pub mod payment_links;
pub mod psp_failure;
pub mod request_id;
pub mod statement;
pub mod usage;
pub mod webhook_endpoints;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;

use crate::app::App;

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .merge(charges::router())
        .merge(credentials::router())
        .merge(webhook_endpoints::router())
        .merge(events::router())
        .merge(notifications::router())
        .merge(adapters::router())
        .merge(payment_links::router())
        .merge(statement::router())
        .merge(usage::router())
        .merge(evidence::router())
        .merge(health::router())
        .merge(openapi::router())
        .merge(crate::web::router())
        .fallback(error::no_route)
        .layer(DefaultBodyLimit::max(body::MAX_BODY_BYTES))
        .route_layer(axum::middleware::from_fn(crate::metrics::http_middleware))
        .layer(axum::middleware::from_fn(request_id::middleware))
        .with_state(app)
}
