//! `GET /v1/adapters`: which adapters serve, which version, and why a new file was refused.
//! Also what a dashboard needs to draw a credential form: each field's name, label and kind.
//!
//! [`views`] builds that report once; the API serializes it and the dashboard's adapters page
//! (`web::adapters`) renders it.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Serialize, Serializer};

use std::sync::Arc;
use std::time::SystemTime;

use crate::app::App;
use crate::runtime::{Capabilities, Runtime, Tier, WebhookAuth};

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/v1/adapters", get(list))
}

/// One adapter the runtime knows: the version serving (if any), the last refused file, and its
/// manifest.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdapterView {
    pub id: String,
    /// SHA-256 of the component serving now.
    pub serving_sha256: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = Option<String>)]
    pub serving_since: Option<SystemTime>,
    /// Which compiler made the code serving now: `baseline` (Winch's single pass, what a new
    /// version serves for its first moments after a hot swap) or `optimized` (Cranelift's).
    pub serving_tier: Option<Tier>,
    /// Why the latest file for this id was refused (the previous version keeps serving).
    pub last_error: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = Option<String>)]
    pub last_error_at: Option<SystemTime>,
    /// `None` while no version serves.
    pub manifest: Option<ManifestView>,
}

impl AdapterView {
    /// The display name, or the id while no version serves.
    pub fn name(&self) -> &str {
        self.manifest
            .as_ref()
            .map_or(&self.id, |m| m.display_name.as_str())
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ManifestView {
    pub display_name: String,
    pub kind: String,
    pub wit_version: String,
    pub credential_fields: Vec<FieldView>,
    /// `email`, `name`, `document`.
    pub required_payer_fields: Vec<String>,
    /// Endpoint names (their URLs are the operator's to override).
    pub endpoints: Vec<String>,
    pub webhook_auth: WebhookAuthView,
    /// `cancel-charge`, `register-webhook`, `check-credentials`.
    pub capabilities: Vec<&'static str>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct FieldView {
    pub name: String,
    pub label: String,
    pub kind: String,
    pub required: bool,
    pub multiline: bool,
    pub help: Option<String>,
}

/// How the PSP's notifications authenticate.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum WebhookAuthView {
    UrlToken,
    HeaderToken { header: String },
    PspSignature,
}

/// Every adapter the runtime knows, by id.
pub fn views(runtime: &Arc<Runtime>) -> Vec<AdapterView> {
    runtime
        .status()
        .into_iter()
        .map(|status| {
            let manifest = runtime.adapter(&status.id).map(|a| {
                let m = a.manifest();
                ManifestView {
                    display_name: m.display_name.clone(),
                    kind: m.kind.clone(),
                    wit_version: m.wit_version.clone(),
                    credential_fields: m
                        .credential_fields
                        .iter()
                        .map(|f| FieldView {
                            name: f.name.clone(),
                            label: f.label.clone(),
                            kind: format!("{:?}", f.kind).to_lowercase(),
                            required: f.required,
                            multiline: f.multiline,
                            help: f.help.clone(),
                        })
                        .collect(),
                    required_payer_fields: m
                        .required_payer_fields
                        .iter()
                        .map(|f| format!("{f:?}").to_lowercase())
                        .collect(),
                    endpoints: m.endpoints.iter().map(|e| e.name.clone()).collect(),
                    webhook_auth: match &m.webhook_auth {
                        WebhookAuth::UrlToken => WebhookAuthView::UrlToken,
                        WebhookAuth::HeaderToken(header) => WebhookAuthView::HeaderToken {
                            header: header.clone(),
                        },
                        WebhookAuth::PspSignature => WebhookAuthView::PspSignature,
                    },
                    capabilities: capabilities(m.capabilities),
                }
            });
            AdapterView {
                id: status.id,
                serving_sha256: status.serving_sha256,
                serving_since: status.serving_since,
                serving_tier: status.serving_tier,
                last_error: status.last_error.as_deref().map(without_directories),
                last_error_at: status.last_error_at,
                manifest,
            }
        })
        .collect()
}

/// The adapters list of the API.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdapterList {
    /// Always `list`.
    object: &'static str,
    data: Vec<AdapterView>,
}

/// The adapters this gateway serves: version, load errors, and each one's manifest (credential
/// fields, required payer fields, endpoints).
#[utoipa::path(get, path = "/v1/adapters", tag = "operations", operation_id = "list_adapters",
    responses((status = 200, body = AdapterList)))]
pub async fn list(State(state): State<Arc<App>>) -> Json<AdapterList> {
    Json(AdapterList {
        object: "list",
        data: views(&state.runtime),
    })
}

/// `text` with every absolute path cut to its file name: the report is public (anyone may call
/// `GET /v1/adapters`), where the gateway's files live is the operator's to know, from the logs
/// or `pixgw plugins check`.
fn without_directories(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('/') {
        let (before, from_slash) = rest.split_at(start);
        // A path starts at a slash that begins a word (`/srv/…`, `"/srv/…`, `(/srv/…`).
        let begins_word = before
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | '[' | '=' | '`'));
        let end = from_slash
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | ']' | ',' | '`'))
            .unwrap_or(from_slash.len());
        let (word, after) = from_slash.split_at(end);
        out.push_str(before);
        if begins_word {
            // The file name keeps a trailing ':' of `path: reason`.
            out.push_str(word.rsplit('/').next().unwrap_or(word));
        } else {
            out.push_str(word);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn rfc3339<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    let text = t.map(|t| {
        time::OffsetDateTime::from(t)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    });
    text.serialize(s)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_errors_show_file_names_not_where_files_live() {
        assert_eq!(
            without_directories(
                "/srv/pixgw/plugins/efi.wasm is not a valid adapter component: bad magic"
            ),
            "efi.wasm is not a valid adapter component: bad magic"
        );
        assert_eq!(
            without_directories(
                "cannot read /var/lib/pixgw/plugins/bb.wasm: No such file or directory (os error 2)"
            ),
            "cannot read bb.wasm: No such file or directory (os error 2)"
        );
        assert_eq!(
            without_directories("cache \"/tmp/c/ab12.cwasm\" stale; 1/2 done and/or not"),
            "cache \"ab12.cwasm\" stale; 1/2 done and/or not"
        );
        assert_eq!(without_directories("no paths here"), "no paths here");
    }

    /// The API's JSON keeps the shape it had before the view was shared with the dashboard.
    #[test]
    fn the_report_serializes_as_the_api_documents_it() {
        let view = AdapterView {
            id: "efi".into(),
            serving_sha256: Some("ab".repeat(32)),
            serving_since: Some(
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_316_400),
            ),
            serving_tier: Some(Tier::Baseline),
            last_error: None,
            last_error_at: None,
            manifest: Some(ManifestView {
                display_name: "Efí Bank".into(),
                kind: "bank".into(),
                wit_version: "1.0.0".into(),
                credential_fields: vec![FieldView {
                    name: "client-id".into(),
                    label: "Client ID".into(),
                    kind: "text".into(),
                    required: true,
                    multiline: false,
                    help: None,
                }],
                required_payer_fields: vec![],
                endpoints: vec!["api".into()],
                webhook_auth: WebhookAuthView::HeaderToken {
                    header: "x-token".into(),
                },
                capabilities: vec!["cancel-charge"],
            }),
        };
        assert_eq!(
            serde_json::to_value(&view).unwrap(),
            serde_json::json!({
                "id": "efi",
                "serving_sha256": "ab".repeat(32),
                "serving_since": "2026-11-22T03:00:00Z",
                "serving_tier": "baseline",
                "last_error": null,
                "last_error_at": null,
                "manifest": {
                    "display_name": "Efí Bank",
                    "kind": "bank",
                    "wit_version": "1.0.0",
                    "credential_fields": [{
                        "name": "client-id", "label": "Client ID", "kind": "text",
                        "required": true, "multiline": false, "help": null
                    }],
                    "required_payer_fields": [],
                    "endpoints": ["api"],
                    "webhook_auth": {"type": "header-token", "header": "x-token"},
                    "capabilities": ["cancel-charge"]
                }
            })
        );
        assert_eq!(
            serde_json::to_value(WebhookAuthView::UrlToken).unwrap(),
            serde_json::json!({"type": "url-token"})
        );
    }
}
