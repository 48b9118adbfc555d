//! `/v1/credentials`: the merchant's accounts at PSPs, in the API key's environment.
//!
//! Fields follow the adapter's manifest (`GET /v1/adapters`). Secrets are write-only: a
//! response lists which secret fields are set, never their values. Saving creates the webhook
//! URL `{base_url}/api/wh/<uuid>` and its token, which the owner can read again here.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
use super::error::{ApiError, ErrorResponse, ErrorType};
use super::{psp_failure, request_id};
use crate::app::App;
use crate::charges::Caller;
use crate::credentials::{self, FieldError};
use crate::domain::CredentialId;
use crate::runtime::{self, CallError, Capabilities, PspError};
use crate::store::credentials::CredentialRecord;
use crate::store::{now_ms, rfc3339};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/credentials", post(create).get(list))
        .route(
            "/v1/credentials/{id}",
            get(read).patch(update).delete(remove),
        )
}

/// Where the PSP sends notifications for this credential.
#[derive(Serialize, ToSchema)]
pub struct WebhookInfo {
    /// Register this URL at the PSP (adapters that can register it do so themselves).
    url: String,
    /// The token that authenticates notifications: already in `url`, unless `header` is set.
    token: String,
    /// For PSPs configured in their dashboard to send the token in a header: its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<String>,
    /// How registering `url` at the PSP went: `{status: "registered" | "failed" | "manual" |
    /// "skipped", message?, at}`. `manual`: this PSP is configured in its own dashboard.
    #[schema(value_type = Option<Object>)]
    registration: Option<serde_json::Value>,
}

/// What the PSP said when the credential was tried on save.
#[derive(Serialize, ToSchema)]
pub struct Verification {
    /// `ok`, `unreachable` (saved; the PSP could not be asked), `unsupported` (the adapter
    /// cannot check credentials) or `skipped` (`verify: false`).
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// A PSP credential.
#[derive(Serialize, ToSchema)]
pub struct CredentialObject {
    /// `cred_…`.
    id: String,
    /// Always `credential`.
    object: &'static str,
    provider: String,
    /// `test` or `live`: the environment of the key that saved it.
    environment: &'static str,
    label: String,
    /// Used for charges when true.
    active: bool,
    /// Order among the merchant's credentials (lower first): the order of the round robin.
    position: i64,
    /// Consecutive charges this credential takes in a round robin before the turn passes on.
    route_limit: i64,
    /// The fields that are not secret, as saved.
    fields: BTreeMap<String, String>,
    /// Names of the secret fields that hold a value (values are never returned).
    secret_fields_set: Vec<String>,
    webhook: WebhookInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    verification: Option<Verification>,
    created_at: String,
    updated_at: String,
}

async fn object_of(
    app: &App,
    record: &CredentialRecord,
    verification: Option<Verification>,
) -> Result<CredentialObject, ApiError> {
    let registration = app.store.webhook_registration(&record.id).await?;
    let token = webhook_token(app, record)?;
    let adapter = app.runtime.adapter(&record.provider);
    let header = adapter
        .as_ref()
        .and_then(|a| credentials::token_header(a.manifest()).map(str::to_owned));
    Ok(CredentialObject {
        id: record.id.clone(),
        object: "credential",
        provider: record.provider.clone(),
        environment: record.environment.as_str(),
        label: record.label.clone(),
        active: record.active,
        position: record.position,
        route_limit: record.route_limit,
        fields: record.public_fields.clone(),
        secret_fields_set: record.sealed_fields.keys().cloned().collect(),
        webhook: WebhookInfo {
            url: credentials::webhook_url(&app.config.base_url, record, &token, header.is_none()),
            token: token.to_string(),
            header,
            registration,
        },
        verification,
        created_at: rfc3339(record.created_at),
        updated_at: rfc3339(record.updated_at),
    })
}

fn field_error(e: FieldError) -> ApiError {
    ApiError::invalid_param(
        format!("fields.{}", e.field),
        format!("fields.{}: {}", e.field, e.message),
    )
}

/// `fields` of a request body: an object of strings.
fn fields_param(body: &mut JsonObject) -> Result<Option<BTreeMap<String, String>>, ApiError> {
    let Some((name, map)) = body.map("fields")? else {
        return Ok(None);
    };
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            _ => Err(ApiError::invalid_param(
                format!("{name}.{k}"),
                format!("{name}.{k} must be a string."),
            )),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

fn route_limit_param(body: &mut JsonObject) -> Result<Option<i64>, ApiError> {
    match body.integer("route_limit")? {
        Some(n) if !(1..=1000).contains(&n) => Err(ApiError::invalid_param(
            "route_limit",
            "route_limit must be between 1 and 1000 consecutive charges.",
        )),
        n => Ok(n),
    }
}

fn position_param(body: &mut JsonObject) -> Result<Option<i64>, ApiError> {
    match body.integer("position")? {
        Some(p) if !(0..=1_000_000).contains(&p) => Err(ApiError::invalid_param(
            "position",
            "position must be between 0 and 1000000.",
        )),
        p => Ok(p),
    }
}

/// The token in the credential's webhook URL, out of the vault.
fn webhook_token(
    app: &App,
    record: &CredentialRecord,
) -> Result<zeroize::Zeroizing<String>, ApiError> {
    app.vault
        .open_string(
            &record.webhook_token_sealed,
            &credentials::webhook_token_aad(&record.id),
        )
        .map_err(|e| ApiError::internal(format!("vault: {e}")))
}

/// Tries the credential at the PSP when the adapter can. A refusal of the credential itself is
/// an error; a PSP that cannot be reached is only reported.
async fn verify(
    app: &App,
    adapter: &runtime::Adapter,
    record: &CredentialRecord,
    fields: BTreeMap<String, String>,
    token: &str,
) -> Result<Verification, ApiError> {
    if !adapter
        .manifest()
        .capabilities
        .contains(Capabilities::CHECK_CREDENTIALS)
    {
        return Ok(Verification {
            status: "unsupported",
            message: None,
        });
    }
    let credential =
        credentials::runtime_credential(adapter, &app.config.base_url, record, fields, token);
    let prepared = adapter.prepare(&credential);
    match adapter
        .check_credentials(&prepared, &request_id::current())
        .await
    {
        Ok(()) => Ok(Verification {
            status: "ok",
            message: None,
        }),
        Err(CallError::Psp {
            error: PspError::Unavailable(e),
            ..
        }) => Ok(Verification {
            status: "unreachable",
            message: Some(e.message),
        }),
        Err(error) => {
            let mut e = psp_failure::from_call(&error, record.environment);
            e.status = StatusCode::UNPROCESSABLE_ENTITY;
            e.body.kind = ErrorType::InvalidRequestError;
            e.body.message = format!(
                "{} refused these credentials, so they were not saved: {}",
                record.provider,
                e.body.psp_message.clone().unwrap_or_default()
            );
            e.body.param = Some("fields".into());
            Err(e)
        }
    }
}

/// Registers the credential's webhook URL at the PSP when the adapter can, and keeps the
/// outcome on the credential. A failure is reported, not fatal: the reconciler still settles
/// charges without notifications.
async fn register(
    app: &App,
    adapter: &runtime::Adapter,
    record: &CredentialRecord,
    wanted: bool,
) -> Result<(), ApiError> {
    let at = rfc3339(now_ms());
    let outcome = if !wanted {
        serde_json::json!({"status": "skipped", "at": at})
    } else if !adapter
        .manifest()
        .capabilities
        .contains(Capabilities::REGISTER_WEBHOOK)
    {
        serde_json::json!({
            "status": "manual",
            "message": match credentials::token_header(adapter.manifest()) {
                Some(header) => format!("{} takes its webhook in its dashboard: set the URL there, with the header {header} carrying the token", record.provider),
                None => format!("{} takes its webhook in its dashboard: set the URL there (it carries the token)", record.provider),
            },
            "at": at,
        })
    } else {
        let prepared = app
            .prepared
            .get_or_prepare(&app.vault, &app.config.base_url, adapter, record)
            .map_err(|e| ApiError::internal(format!("vault: {e}")))?;
        match adapter
            .register_webhook(&prepared, &request_id::current())
            .await
        {
            Ok(()) => serde_json::json!({"status": "registered", "at": at}),
            Err(error) => {
                let e = psp_failure::from_call(&error, record.environment);
                serde_json::json!({
                    "status": "failed",
                    "message": e.body.psp_message.unwrap_or(e.body.message),
                    "hint": e.body.hint,
                    "at": at,
                })
            }
        }
    };
    app.store
        .set_webhook_registration(&record.id, &outcome)
        .await?;
    Ok(())
}

/// Connect an account at a PSP.
#[utoipa::path(post, path = "/v1/credentials", tag = "credentials",
    request_body(content = serde_json::Value, description = "`{provider, label?, fields: {<manifest field>: string}, position?, route_limit? (1..1000, default 1), verify?: bool (default true: try the credential at the PSP when the adapter can), register_webhook?: bool (default true: register the webhook URL at the PSP when the adapter can)}`"),
    responses(
        (status = 201, body = CredentialObject),
        (status = 400, description = "A field is missing or invalid (a PEM that does not parse, a certificate that does not match its key or has expired, a key for the other environment); `param` names it", body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 422, description = "The PSP refused the credential; `psp_message` and `hint`", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    JsonBody(mut body): JsonBody,
) -> Result<(StatusCode, Json<CredentialObject>), ApiError> {
    let provider = body.required_string("provider", 64, "the adapter id, e.g. \"efi\"")?;
    let label = body.string("label", 100)?;
    let fields = fields_param(&mut body)?.unwrap_or_default();
    let position = position_param(&mut body)?.unwrap_or(0);
    let route_limit = route_limit_param(&mut body)?.unwrap_or(1);
    let verify_on_save = body.boolean("verify")?.unwrap_or(true);
    let register_webhook = body.boolean("register_webhook")?.unwrap_or(true);
    body.finish()?;
    let adapter = app.runtime.adapter(&provider).ok_or_else(|| {
        ApiError::invalid_param(
            "provider",
            format!(
                "No PSP adapter {provider:?} is installed. Available: {}.",
                app.runtime.providers().join(", ")
            ),
        )
        .with_code("provider_unknown")
    })?;
    let manifest = adapter.manifest();
    let fields =
        credentials::validate(manifest, caller.environment, &fields, None).map_err(field_error)?;

    let id = CredentialId::generate().to_string();
    let token = crate::domain::Reference::generate().to_string();
    let (public_fields, sealed_fields) = credentials::seal(&app.vault, manifest, &id, &fields);
    let now = now_ms();
    let record = CredentialRecord {
        webhook_token_sealed: app
            .vault
            .seal(token.as_bytes(), &credentials::webhook_token_aad(&id)),
        id,
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        provider: provider.clone(),
        label: label.unwrap_or_else(|| manifest.display_name.clone()),
        public_fields,
        sealed_fields,
        webhook_id: uuid::Uuid::new_v4().to_string(),
        active: true,
        position,
        route_limit,
        created_at: now,
        updated_at: now,
    };
    let verification = if verify_on_save {
        verify(&app, &adapter, &record, fields, &token).await?
    } else {
        Verification {
            status: "skipped",
            message: None,
        }
    };
    app.store.insert_credential(&record).await?;
    register(&app, &adapter, &record, register_webhook).await?;
    Ok((
        StatusCode::CREATED,
        Json(object_of(&app, &record, Some(verification)).await?),
    ))
}

/// The merchant's credentials in this environment, in routing order.
#[utoipa::path(get, path = "/v1/credentials", tag = "credentials",
    responses((status = 200, body = [CredentialObject]), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let records = app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?;
    let mut data = Vec::with_capacity(records.len());
    for record in &records {
        data.push(object_of(&app, record, None).await?);
    }
    Ok(Json(serde_json::json!({ "object": "list", "data": data })))
}

async fn find(app: &App, caller: &Caller, id: &str) -> Result<CredentialRecord, ApiError> {
    app.store
        .credential(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| ApiError::not_found("credential", id))
}

/// Retrieve a credential, with its webhook URL and token.
#[utoipa::path(get, path = "/v1/credentials/{id}", tag = "credentials",
    params(("id" = String, Path, description = "`cred_…`")),
    responses((status = 200, body = CredentialObject), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CredentialObject>, ApiError> {
    let record = find(&app, &caller, &id).await?;
    Ok(Json(object_of(&app, &record, None).await?))
}

/// Change a credential's label, order, active flag or fields (omitted fields keep their value).
/// New fields are tried at the PSP first, as on create, unless `verify` is false.
#[utoipa::path(patch, path = "/v1/credentials/{id}", tag = "credentials",
    params(("id" = String, Path, description = "`cred_…`")),
    request_body(content = serde_json::Value, description = "`{label?, active?, position?, route_limit?, fields?, verify?: bool (default true: try new fields at the PSP before saving them), register_webhook?}`"),
    responses((status = 200, body = CredentialObject), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 422, description = "The PSP refused the new fields, which were not saved; `psp_message` and `hint`", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody,
) -> Result<Json<CredentialObject>, ApiError> {
    let mut record = find(&app, &caller, &id).await?;
    if let Some(label) = body.string("label", 100)? {
        record.label = label;
    }
    if let Some(active) = body.boolean("active")? {
        record.active = active;
    }
    if let Some(position) = position_param(&mut body)? {
        record.position = position;
    }
    if let Some(route_limit) = route_limit_param(&mut body)? {
        record.route_limit = route_limit;
    }
    let fields = fields_param(&mut body)?;
    let verify_on_save = body.boolean("verify")?.unwrap_or(true);
    let register_webhook = body.boolean("register_webhook")?;
    body.finish()?;
    let fields_changed = fields.is_some();
    let mut verification = None;
    if let Some(fields) = fields {
        let adapter = app.runtime.adapter(&record.provider).ok_or_else(|| {
            ApiError::bad_request(
                "provider_unknown",
                format!(
                    "The {} adapter is not installed, so its fields cannot be checked.",
                    record.provider
                ),
            )
        })?;
        let existing = credentials::open_fields(&app.vault, &record)
            .map_err(|e| ApiError::internal(format!("vault: {e}")))?;
        let merged = credentials::validate(
            adapter.manifest(),
            caller.environment,
            &fields,
            Some(&existing),
        )
        .map_err(field_error)?;
        if verify_on_save {
            let token = webhook_token(&app, &record)?;
            verification = Some(verify(&app, &adapter, &record, merged.clone(), &token).await?);
        }
        (record.public_fields, record.sealed_fields) =
            credentials::seal(&app.vault, adapter.manifest(), &record.id, &merged);
    }
    record.updated_at = now_ms().max(record.updated_at + 1);
    app.store.update_credential(&record).await?;
    // New fields (another Pix key, another account) need the webhook registered again.
    let register_again =
        (fields_changed && register_webhook != Some(false)) || register_webhook == Some(true);
    if register_again && let Some(adapter) = app.runtime.adapter(&record.provider) {
        register(&app, &adapter, &record, true).await?;
    }
    Ok(Json(object_of(&app, &record, verification).await?))
}

/// Remove a credential: no new charge uses it; its charges keep their history.
#[utoipa::path(delete, path = "/v1/credentials/{id}", tag = "credentials",
    params(("id" = String, Path, description = "`cred_…`")),
    responses((status = 200, description = "`{id, object: \"credential\", deleted: true}`"), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn remove(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    if !app
        .store
        .delete_credential(&caller.merchant_id, caller.environment, &id)
        .await?
    {
        return Err(ApiError::not_found("credential", &id));
    }
    Ok(Json(
        serde_json::json!({ "id": id, "object": "credential", "deleted": true }),
    ))
}
