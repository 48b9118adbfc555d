//! `/v1/credentials`: the merchant's accounts at PSPs, in the API key's environment.
//!
//! Fields follow the adapter's manifest (`GET /v1/adapters`). Secrets are write-only: a
//! response lists which secret fields are set, never their values. Saving creates the webhook
//! URL `{base_url}/api/wh/<uuid>` and its token, which the owner can read again here.
//!
//! The rules (checks, sealing, trying at the PSP, webhook registration, the audit log) live in
//! [`crate::credentials`], shared with the dashboard; this module reads requests and maps
//! outcomes to answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
use super::concurrency::{self, etag};
use super::error::{ApiError, ErrorResponse, ErrorType};
use super::psp_failure;
use crate::app::App;
use crate::charges::Caller;
use crate::credentials::{
    self, CredentialChange, CredentialError, CredentialView, NewCredential, POSITIONS, ROUTE_LIMITS,
};
use crate::store::rfc3339;

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
    /// Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a
    /// change so that one made meanwhile by someone else is refused (409) instead of undone.
    version: i64,
}

impl Verification {
    fn of(v: &credentials::Verification) -> Verification {
        Verification {
            status: v.status.as_str(),
            message: v.message.clone(),
        }
    }
}

/// The merchant's credentials, in routing order.
#[derive(Serialize, ToSchema)]
pub struct CredentialList {
    /// Always `list`.
    object: &'static str,
    data: Vec<CredentialObject>,
}

/// `POST /v1/credentials` body: what [`create`] reads. `null` is the same as leaving a field out.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreateCredentialRequest {
    /// An installed adapter id (`GET /v1/adapters`).
    #[schema(
        example = "efi",
        max_length = 64,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    provider: String,
    /// 1 to 100 characters; default: the adapter's name.
    #[schema(
        max_length = 100,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    label: Option<String>,
    /// The adapter's `credential_fields` (`GET /v1/adapters`), each a string.
    #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
    fields: Option<BTreeMap<String, String>>,
    /// Order in the round robin, lower first; default 0.
    #[schema(minimum = 0, maximum = 1_000_000)]
    position: Option<i64>,
    /// Consecutive charges in a round robin before the turn passes on; default 1.
    #[schema(minimum = 1, maximum = 1000)]
    route_limit: Option<i64>,
    /// Default `true`: try the credential at the PSP when the adapter can.
    verify: Option<bool>,
    /// Default `true`: register the webhook URL at the PSP when the adapter can.
    register_webhook: Option<bool>,
}

/// `PATCH /v1/credentials/{id}` body: what [`update`] reads. Omitted fields keep their value.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UpdateCredentialRequest {
    #[schema(
        max_length = 100,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    label: Option<String>,
    /// `false`: no new charge uses it.
    active: Option<bool>,
    #[schema(minimum = 0, maximum = 1_000_000)]
    position: Option<i64>,
    #[schema(minimum = 1, maximum = 1000)]
    route_limit: Option<i64>,
    /// Fields to change; the others keep their value.
    #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
    fields: Option<BTreeMap<String, String>>,
    /// Default `true`: try new fields at the PSP before saving them.
    verify: Option<bool>,
    register_webhook: Option<bool>,
    /// The `version` this change is made against (or send `If-Match: "<version>"`): if the
    /// credential changed since, 409 `conflict` and nothing is saved.
    #[schema(minimum = 1)]
    version: Option<i64>,
}

/// The `ETag` header of an answer.
type Tagged = [(axum::http::HeaderName, axum::http::HeaderValue); 1];

/// The API's object of a credential; `verification` is shown only where a request just
/// tried the credential.
fn object_of(view: CredentialView, verification: Option<Verification>) -> CredentialObject {
    let CredentialView {
        record, webhook, ..
    } = view;
    CredentialObject {
        id: record.id.to_string(),
        object: "credential",
        provider: record.provider,
        environment: record.environment.as_str(),
        label: record.label,
        active: record.active,
        position: record.position,
        route_limit: record.route_limit,
        fields: record.public_fields,
        secret_fields_set: record.sealed_fields.into_keys().collect(),
        webhook: WebhookInfo {
            url: webhook.url,
            token: webhook.token.to_string(),
            header: webhook.header,
            registration: webhook
                .registration
                .map(|r| serde_json::to_value(r).expect("a registration serialises")),
        },
        verification,
        created_at: rfc3339(record.created_at),
        updated_at: rfc3339(record.updated_at),
        version: record.version,
    }
}

/// The API's answer to a credential operation that failed; `id` is the credential asked for.
fn api_error(error: CredentialError, caller: &Caller, id: &str) -> ApiError {
    match error {
        CredentialError::UnknownProvider {
            provider,
            available,
        } => ApiError::unprocessable_param(
            "provider",
            format!(
                "No PSP adapter {provider:?} is installed. Available: {}.",
                available.join(", ")
            ),
        )
        .with_code("provider_unknown"),
        CredentialError::AdapterMissing { provider } => ApiError::unprocessable(
            "provider_unknown",
            format!("The {provider} adapter is not installed, so its fields cannot be checked."),
        ),
        // The adapter's own fields: the document knows only "an object of strings".
        CredentialError::Field(e) => ApiError::unprocessable_param(
            format!("fields.{}", e.field),
            format!("fields.{}: {}", e.field, e.message()),
        ),
        CredentialError::Refused { provider, error } => {
            let mut e = psp_failure::from_call(&error, caller.environment);
            e.status = StatusCode::UNPROCESSABLE_ENTITY;
            e.body.kind = ErrorType::InvalidRequestError;
            e.body.message = format!(
                "{provider} refused these credentials, so they were not saved: {}",
                e.body.psp_message.clone().unwrap_or_default()
            );
            e.body.param = Some("fields".into());
            e
        }
        CredentialError::NotFound => ApiError::not_found("credential", id),
        CredentialError::Conflict { expected, current } => {
            concurrency::conflict("credential", expected, current)
        }
        CredentialError::PlanLimit(reached) => reached.into(),
        CredentialError::Store(e) => ApiError::internal(e),
        CredentialError::Vault(e) => ApiError::internal(format!("vault: {e}")),
    }
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
        Some(n) if !ROUTE_LIMITS.contains(&n) => Err(ApiError::invalid_param(
            "route_limit",
            "route_limit must be between 1 and 1000 consecutive charges.",
        )),
        n => Ok(n),
    }
}

fn position_param(body: &mut JsonObject) -> Result<Option<i64>, ApiError> {
    match body.integer("position")? {
        Some(p) if !POSITIONS.contains(&p) => Err(ApiError::invalid_param(
            "position",
            "position must be between 0 and 1000000.",
        )),
        p => Ok(p),
    }
}

/// Connect an account at a PSP.
#[utoipa::path(post, path = "/v1/credentials", tag = "credentials", operation_id = "create_credential",
    request_body = CreateCredentialRequest,
    responses(
        (status = 201, body = CredentialObject),
        (status = 400, description = "The body does not have the documented shape; `param` names the parameter", body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 403, description = "The plan's connected PSPs are used up in this environment: `plan_limit_reached`", body = ErrorResponse),
        (status = 422, description = "Well formed, and refused: no such adapter (`provider_unknown`); one of the adapter's own fields is missing or invalid (a PEM that does not parse, a certificate that does not match its key or has expired, a key for the other environment; `param` names it); or the PSP refused the credential (`psp_message` and `hint`)", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    JsonBody(mut body): JsonBody,
) -> Result<(StatusCode, Tagged, Json<CredentialObject>), ApiError> {
    let provider = body.required_string("provider", 64, "the adapter id, e.g. \"efi\"")?;
    let label = body.string("label", credentials::MAX_LABEL_CHARS)?;
    let fields = fields_param(&mut body)?.unwrap_or_default();
    let position = position_param(&mut body)?.unwrap_or(0);
    let route_limit = route_limit_param(&mut body)?.unwrap_or(1);
    let verify_on_save = body.boolean("verify")?.unwrap_or(true);
    let register_webhook = body.boolean("register_webhook")?.unwrap_or(true);
    body.finish()?;
    let new = NewCredential {
        provider,
        label,
        fields,
        position: Some(position),
        route_limit,
        verify: verify_on_save,
        register_webhook,
    };
    let view = credentials::connect(&app, &caller, new)
        .await
        .map_err(|e| api_error(e, &caller, ""))?;
    let verification = view.verification.as_ref().map(Verification::of);
    let tag = etag(view.record.version);
    Ok((
        StatusCode::CREATED,
        tag,
        Json(object_of(view, verification)),
    ))
}

/// The merchant's credentials in this environment, in routing order.
#[utoipa::path(get, path = "/v1/credentials", tag = "credentials", operation_id = "list_credentials",
    responses((status = 200, body = CredentialList), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<Json<CredentialList>, ApiError> {
    let data: Vec<CredentialObject> = credentials::list(&app, &caller)
        .await
        .map_err(|e| api_error(e, &caller, ""))?
        .into_iter()
        .map(|view| object_of(view, None))
        .collect();
    Ok(Json(CredentialList {
        object: "list",
        data,
    }))
}

/// Retrieve a credential, with its webhook URL and token.
#[utoipa::path(get, path = "/v1/credentials/{id}", tag = "credentials", operation_id = "get_credential",
    params(("id" = String, Path, description = "`cred_…`")),
    responses((status = 200, body = CredentialObject), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(Tagged, Json<CredentialObject>), ApiError> {
    let view = credentials::get(&app, &caller, &id)
        .await
        .map_err(|e| api_error(e, &caller, &id))?;
    Ok((etag(view.record.version), Json(object_of(view, None))))
}

/// Change a credential's label, order, active flag or fields (omitted fields keep their value).
/// New fields are tried at the PSP first, as on create, unless `verify` is false.
#[utoipa::path(patch, path = "/v1/credentials/{id}", tag = "credentials", operation_id = "update_credential",
    params(("id" = String, Path, description = "`cred_…`"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the credential as read, e.g. `\"3\"`: the change is refused with 409 if it changed since")),
    request_body = UpdateCredentialRequest,
    responses((status = 200, body = CredentialObject), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 409, description = "The credential changed since the version named (`If-Match` or `version`): `conflict`, nothing saved", body = ErrorResponse),
        (status = 422, description = "Well formed, and refused: one of the adapter's own fields is invalid (`param` names it), or the PSP refused the new fields (`psp_message` and `hint`); nothing was saved", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(mut body): JsonBody,
) -> Result<(Tagged, Json<CredentialObject>), ApiError> {
    // A credential that does not exist is the answer, whatever the body says.
    let record = credentials::find(&app, &caller, &id)
        .await
        .map_err(|e| api_error(e, &caller, &id))?;
    let change = CredentialChange {
        label: body.string("label", credentials::MAX_LABEL_CHARS)?,
        active: body.boolean("active")?,
        position: position_param(&mut body)?,
        route_limit: route_limit_param(&mut body)?,
        fields: fields_param(&mut body)?,
        verify: body.boolean("verify")?.unwrap_or(true),
        register_webhook: body.boolean("register_webhook")?,
        expected_version: concurrency::expected_version(&headers, &mut body)?,
    };
    body.finish()?;
    let updated = credentials::update(&app, &caller, record, change)
        .await
        .map_err(|e| api_error(e, &caller, &id))?;
    let verification = updated.verification.as_ref().map(Verification::of);
    let tag = etag(updated.view.record.version);
    Ok((tag, Json(object_of(updated.view, verification))))
}

/// Remove a credential: no new charge uses it; its charges keep their history.
#[utoipa::path(delete, path = "/v1/credentials/{id}", tag = "credentials", operation_id = "delete_credential",
    params(("id" = String, Path, description = "`cred_…`")),
    responses((status = 200, description = "Deleted", body = crate::api::openapi::Deleted), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn remove(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    credentials::remove(&app, &caller, &id)
        .await
        .map_err(|e| api_error(e, &caller, &id))?;
    Ok(Json(
        serde_json::json!({ "id": id, "object": "credential", "deleted": true }),
    ))
}
