//! `GET /v1/adapters`: which adapters serve, which version, and why a new file was refused.
//! Operator-facing; the charges API issue puts it behind operator authentication.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/adapters", get(list))
}

async fn list(State(state): State<AppState>) -> Json<Value> {
    let adapters: Vec<Value> = state
        .runtime
        .status()
        .into_iter()
        .map(|status| {
            let manifest = state.runtime.adapter(&status.id).map(|a| {
                let m = a.manifest();
                json!({
                    "display_name": m.display_name,
                    "kind": m.kind,
                    "wit_version": m.wit_version,
                    "credential_fields": m.credential_fields.iter().map(|f| &f.name).collect::<Vec<_>>(),
                    "endpoints": m.endpoints.iter().map(|e| &e.name).collect::<Vec<_>>(),
                })
            });
            json!({
                "id": status.id,
                "serving_sha256": status.serving_sha256,
                "serving_since": status.serving_since.map(rfc3339),
                "last_error": status.last_error,
                "last_error_at": status.last_error_at.map(rfc3339),
                "manifest": manifest,
            })
        })
        .collect();
    Json(json!({ "object": "list", "data": adapters }))
}

fn rfc3339(t: std::time::SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
