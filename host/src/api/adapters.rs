//! `GET /v1/adapters`: which adapters serve, which version, and why a new file was refused.
//! Also what a dashboard needs to draw a credential form: each field's name, label and kind.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use std::sync::Arc;

use crate::app::App;
use crate::runtime::{Capabilities, WebhookAuth};

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/v1/adapters", get(list))
}

/// The adapters this gateway serves: version, load errors, and each one's manifest (credential
/// fields, required payer fields, endpoints).
#[utoipa::path(get, path = "/v1/adapters", tag = "operations",
    responses((status = 200, description = "`{object: \"list\", data: [{id, serving_sha256, serving_since, last_error, last_error_at, manifest}]}`")))]
pub async fn list(State(state): State<Arc<App>>) -> Json<Value> {
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
                    "credential_fields": m.credential_fields.iter().map(|f| json!({
                        "name": f.name,
                        "label": f.label,
                        "kind": format!("{:?}", f.kind).to_lowercase(),
                        "required": f.required,
                        "multiline": f.multiline,
                        "help": f.help,
                    })).collect::<Vec<_>>(),
                    "required_payer_fields": m.required_payer_fields.iter().map(|f| format!("{f:?}").to_lowercase()).collect::<Vec<_>>(),
                    "endpoints": m.endpoints.iter().map(|e| &e.name).collect::<Vec<_>>(),
                    "webhook_auth": match &m.webhook_auth {
                        WebhookAuth::UrlToken => json!({"type": "url-token"}),
                        WebhookAuth::HeaderToken(header) => json!({"type": "header-token", "header": header}),
                        WebhookAuth::PspSignature => json!({"type": "psp-signature"}),
                    },
                    "capabilities": capabilities(m.capabilities),
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

fn capabilities(flags: Capabilities) -> Vec<&'static str> {
    [
        (Capabilities::CANCEL_CHARGE, "cancel-charge"),
        (Capabilities::REGISTER_WEBHOOK, "register-webhook"),
        (Capabilities::CHECK_CREDENTIALS, "check-credentials"),
    ]
    .into_iter()
    .filter(|(flag, _)| flags.contains(*flag))
    .map(|(_, name)| name)
    .collect()
}
