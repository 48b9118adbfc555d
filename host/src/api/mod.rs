//! The gateway's HTTP surface. Each module exposes its own `router()`; [`router`] joins them.

pub mod adapters;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;

use crate::runtime::Runtime;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub runtime: Arc<Runtime>,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(adapters::router())
        .with_state(state)
}
