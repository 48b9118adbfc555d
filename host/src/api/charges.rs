//! `/v1/charges`: create (idempotent), read, list, cancel. Everything is scoped to the API
//! key's merchant and environment.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::body::{JsonBody, JsonObject};
use super::error::{ApiError, ErrorResponse, ErrorType, Refusal};
use super::{psp_failure, request_id};
use crate::app::App;
use crate::charges::object::ChargeObject;
use crate::charges::{self, Caller, ChargeInput, PayerInput, Placement, ProviderChoice};
use crate::domain::{Amount, Document, DomainError, Email, Line, Metadata, Reference};
use crate::store::charges::{ChargeFilter, ChargeState};
use crate::store::idempotency::{self, Claim, HeldKey, KeyClaim, KeyScope};
use crate::store::{now_ms, parse_rfc3339};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/charges", post(create).get(list))
        .route("/v1/charges/{id}", get(read))
        .route("/v1/charges/{id}/cancel", post(cancel))
        .route("/v1/charges/{id}/stream", get(stream))
}

/// Idempotency keys are kept at least this long, and at least until the charge expires.
const IDEMPOTENCY_TTL_MS: i64 = 24 * 3600 * 1000;
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// `POST /v1/charges` body: what [`parse_input`] accepts, with its limits. `null` is the same as
/// leaving a field out; text is trimmed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreateChargeRequest {
    /// Integer centavos: 1 (R$ 0,01) to 1000000000 (R$ 10.000.000,00).
    #[schema(minimum = 1, maximum = 1_000_000_000, example = 1990)]
    amount: i64,
    /// An installed adapter id (`efi`, `stripe`, …; see `GET /v1/adapters`) for which the
    /// merchant has an active credential in the key's environment — or `random`: round robin
    /// over the merchant's PSPs that accept this payer, with failover that never makes two
    /// charges; the answer's `routing` says which PSPs were tried.
    #[schema(
        example = "efi",
        max_length = 64,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    provider: String,
    /// Shown to the payer by most PSPs; 1 to 140 characters, not only spaces.
    #[schema(
        max_length = 140,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    description: Option<String>,
    payer: Option<CreateChargePayer>,
    /// Seconds the charge can be paid: 60 to 1209600 (14 days); default 3600.
    #[schema(minimum = 60, maximum = 1_209_600)]
    expires_in: Option<u32>,
    /// Up to 20 string values (keys 1 to 40 characters, values up to 500), returned as given.
    #[schema(schema_with = metadata_schema)]
    metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// The payer of a new charge. Some PSPs require some of these fields (`GET /v1/adapters`:
/// `required_payer_fields`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreateChargePayer {
    /// One `@`, a domain of two labels or more, no spaces.
    #[schema(
        max_length = 254,
        example = "ana@example.com",
        pattern = "^[\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*[^@\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+@[^@.\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+(\\.[^@.\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+)+[\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    email: Option<String>,
    /// 1 to 200 characters, not only spaces.
    #[schema(
        max_length = 200,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    name: Option<String>,
    /// CPF (11 digits) or CNPJ (14 characters: 12 letters or digits, then 2 digits) with valid
    /// check digits; `.`, `-`, `/` and spaces are removed first.
    #[schema(
        max_length = 32,
        example = "529.982.247-25",
        pattern = "^[ ./-]*([0-9][ ./-]*){11}$|^[ ./-]*([0-9A-Za-z][ ./-]*){12}([0-9][ ./-]*){2}$"
    )]
    document: Option<String>,
}

/// `metadata` as [`parse_input`] reads it, from the same limits.
fn metadata_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    // Keys and values are one line each (`refuse_control`).
    let one_line = serde_json::json!({"type": "string", "pattern": format!("[{}]", super::openapi::TEXT_CONTROLS)});
    let mut names = utoipa::openapi::extensions::Extensions::default();
    names.insert(
        "propertyNames".into(),
        serde_json::json!({"minLength": 1, "maxLength": charges::MAX_METADATA_KEY_LEN, "not": one_line.clone()}),
    );
    let mut values = utoipa::openapi::extensions::Extensions::default();
    values.insert("not".into(), one_line);
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Object,
            Type::Null,
        ]))
        .max_properties(Some(charges::MAX_METADATA_KEYS))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(charges::MAX_METADATA_VALUE_LEN))
                .extensions(Some(values)),
        ))
        .extensions(Some(names))
        .build()
}

/// Takes the request apart into a [`ChargeInput`]; every bad field is a 400 naming it.
pub(super) fn parse_input(mut body: JsonObject) -> Result<ChargeInput, ApiError> {
    let amount = body.required_integer(
        "amount",
        "the amount in integer centavos, e.g. 1990 for R$ 19,90",
    )?;
    let amount = Amount::from_centavos(amount)
        .map_err(|e| ApiError::invalid_param("amount", e.to_string()))?;
    let provider = body.required_string(
        "provider",
        64,
        "the PSP to charge through, e.g. \"efi\", or \"random\"",
    )?;
    let provider = match provider.as_str() {
        "random" => ProviderChoice::Random,
        _ => ProviderChoice::One(provider),
    };
    let description = body
        .string("description", 140)?
        .map(|d| Line::parse("description", &d, 140))
        .transpose()
        .map_err(|e| ApiError::invalid_param("description", format!("{e}.")))?;
    let mut payer = PayerInput::default();
    if let Some(mut p) = body.object("payer")? {
        if let Some(email) = p.string("email", 254)? {
            payer.email = Some(
                Email::parse(&email)
                    .map_err(|e| ApiError::invalid_param("payer.email", e.to_string()))?,
            );
        }
        payer.name = p
            .string("name", 200)?
            .map(|n| Line::parse("payer.name", &n, 200))
            .transpose()
            .map_err(|e| ApiError::invalid_param("payer.name", format!("{e}.")))?;
        if let Some(document) = p.string("document", 32)? {
            payer.document = Some(Document::parse(&document).map_err(|e| {
                // The document's pattern states the characters and the length; the check
                // digits are a rule beyond it.
                let refusal = match e {
                    DomainError::DocumentRepeatedDigits { .. }
                    | DomainError::DocumentCheckDigits { .. } => Refusal::Rule,
                    _ => Refusal::Shape,
                };
                ApiError::invalid(refusal, "parameter_invalid", e.to_string())
                    .with_param("payer.document")
            })?);
        }
        p.finish()?;
    }
    let expires_in = match body.integer("expires_in")? {
        None => charges::DEFAULT_EXPIRES_IN,
        Some(s)
            if (i64::from(charges::MIN_EXPIRES_IN)..=i64::from(charges::MAX_EXPIRES_IN))
                .contains(&s) =>
        {
            s as u32
        }
        Some(s) => {
            return Err(ApiError::invalid_param(
                "expires_in",
                format!(
                    "expires_in must be between {} and {} seconds (14 days); got {s}.",
                    charges::MIN_EXPIRES_IN,
                    charges::MAX_EXPIRES_IN
                ),
            ));
        }
    };
    let mut metadata = Metadata::default();
    if let Some((name, map)) = body.map("metadata")? {
        if map.len() > charges::MAX_METADATA_KEYS {
            return Err(ApiError::invalid_param(
                name,
                format!(
                    "metadata may hold at most {} keys.",
                    charges::MAX_METADATA_KEYS
                ),
            ));
        }
        for (key, value) in map {
            let param = format!("metadata.{key}");
            let ok_key = (1..=charges::MAX_METADATA_KEY_LEN).contains(&key.chars().count());
            let value = match value {
                serde_json::Value::String(s)
                    if ok_key && s.chars().count() <= charges::MAX_METADATA_VALUE_LEN =>
                {
                    s
                }
                _ => {
                    return Err(ApiError::invalid_param(
                        param,
                        format!(
                            "metadata keys must have 1 to {} characters and values must be strings of at most {} characters.",
                            charges::MAX_METADATA_KEY_LEN,
                            charges::MAX_METADATA_VALUE_LEN
                        ),
                    ));
                }
            };
            metadata
                .insert(&param, key, value)
                .map_err(|e| ApiError::invalid_param(&param, format!("{e}.")))?;
        }
    }
    body.finish()?;
    Ok(ChargeInput {
        amount,
        provider,
        description,
        payer,
        expires_in,
        metadata,
        payment_link: None,
    })
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().ok().map(str::trim).unwrap_or_default();
    if key.is_empty()
        || key.len() > MAX_IDEMPOTENCY_KEY
        || !key.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ApiError::invalid_param(
            "Idempotency-Key",
            format!(
                "The Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters, e.g. a UUID."
            ),
        ));
    }
    Ok(Some(key.to_owned()))
}

fn json_response(status: StatusCode, body: String, replayed: bool) -> Response {
    let mut response = (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Create a Pix charge at a PSP.
#[utoipa::path(post, path = "/v1/charges", tag = "charges", operation_id = "create_charge",
    request_body = CreateChargeRequest,
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255, pattern = "^[!-~]+$", description = "Up to 255 characters. A replay returns the first answer (header `idempotent-replayed: true`); the same key with another body is a 422; while the first request runs, a 409. Kept at least 24 h and until the charge expires.")),
    responses(
        (status = 201, description = "Created", body = ChargeObject),
        (status = 400, description = "A parameter does not have the documented shape; `param` names it", body = ErrorResponse),
        (status = 401, description = "No valid API key", body = ErrorResponse),
        (status = 403, description = "The plan's charges for this month are used up: `plan_limit_reached`", body = ErrorResponse),
        (status = 409, description = "A request with this Idempotency-Key is still running", body = ErrorResponse),
        (status = 413, description = "Body over 64 KiB", body = ErrorResponse),
        (status = 422, description = "Well formed, and refused by a rule beyond the document: `payer.document` check digits (`parameter_invalid`), a provider not installed (`provider_unknown`) or not connected in this environment (`provider_not_connected`), a payer field the PSP requires (`parameter_missing`), no PSP for `random` (`no_eligible_provider`), or the Idempotency-Key reused with another request (`idempotency_key_reused`)", body = ErrorResponse),
        (status = 502, description = "The PSP refused or failed: `psp_message` and `hint`", body = ErrorResponse),
        (status = 503, description = "The gateway's PSP calls are all busy (`gateway_busy`); nothing reached a PSP: retry after `Retry-After` with the same Idempotency-Key", body = ErrorResponse),
    ),
    security(("api_key" = [])))]
pub async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let fingerprint = hex::encode(Sha256::digest(format!(
        "POST /v1/charges {}",
        body.canonical()
    )));
    let key = idempotency_key(&headers)?;
    let input = parse_input(body)?;
    let request_id = request_id::current();
    let Some(key) = key else {
        let charge = app
            .charges
            .create_charge(
                &caller,
                &input,
                Placement::New(&Reference::generate()),
                &request_id,
                None,
            )
            .await
            .map_err(|e| psp_failure::from_charge_error(e, caller.environment))?;
        return Ok((StatusCode::CREATED, Json(ChargeObject::from(&charge))).into_response());
    };

    let scope = KeyScope {
        merchant_id: &caller.merchant_id,
        environment: caller.environment,
        key: &key,
    };
    let ttl = IDEMPOTENCY_TTL_MS.max(i64::from(input.expires_in) * 1000 + 3_600_000);
    let fresh = Reference::generate();
    // The lock is short and renewed while this request runs: a request of a gateway that died
    // is resumed by a retry within one lock period, and a live one is never overlapped.
    let lock_ms = app.config.charges.idempotency_lock.as_millis() as i64;
    let lock = idempotency::new_lock();
    let expires_at = || now_ms() + ttl;
    let held = HeldKey::new(scope, &lock, expires_at());
    // On SQLite, for one PSP, the claim goes to the writer now and the charge is placed
    // without waiting for it: the `creating` row, queued behind the claim, is written only if
    // the claim made this request the key's holder with `fresh` (a new key, the common case),
    // one wait for the writer where there were two. Otherwise nothing was created, and the
    // claim's outcome decides below, as when it is awaited first.
    let claim = KeyClaim {
        scope,
        request_hash: &fingerprint,
        reference: fresh.as_str(),
        lock: &lock,
        lock_ms,
        ttl_ms: ttl,
    };
    let ahead = match input.provider {
        ProviderChoice::One(_) => app.store.claim_idempotency_key_now(claim),
        ProviderChoice::Random => None,
    };
    let mut heartbeat = None;
    let (claimed, placed) = match ahead {
        Some(pending) => {
            heartbeat = Some(app.store.hold_idempotency_key(scope, &lock, lock_ms));
            let placed = app
                .charges
                .create_charge(
                    &caller,
                    &input,
                    Placement::New(&fresh),
                    &request_id,
                    Some(&held),
                )
                .await;
            (pending.await?, Some(placed))
        }
        None => (app.store.claim_idempotency_key(claim).await?, None),
    };
    let (reference, resumed) = match claimed {
        Claim::Fresh { reference, .. } => (reference, false),
        Claim::Resume { reference, .. } => (reference, true),
        Claim::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let body = app.charges.qr_images.answer_with_image(body);
            return Ok(json_response(status, body, true));
        }
        Claim::Mismatch => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorType::IdempotencyError,
                "idempotency_key_reused",
                "This Idempotency-Key was used with a different request. Use a new key for a new charge.",
            )
            .with_param("Idempotency-Key"));
        }
        Claim::InProgress => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                ErrorType::IdempotencyError,
                "idempotency_key_in_use",
                "A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.",
            )
            .with_param("Idempotency-Key"));
        }
    };
    let reference = Reference::parse(&reference)
        .map_err(|e| ApiError::internal(format!("stored reference: {e}")))?;
    let heartbeat =
        heartbeat.unwrap_or_else(|| app.store.hold_idempotency_key(scope, &lock, lock_ms));
    let outcome = match placed {
        // A fresh claim: the charge placed ahead was this request's (or failed as its own).
        Some(placed) if !resumed => placed,
        // Resumed: nothing was placed ahead (the key held another reference).
        _ => {
            app.charges
                .create_charge(
                    &caller,
                    &input,
                    if resumed {
                        Placement::Reserved(&reference)
                    } else {
                        Placement::New(&reference)
                    },
                    &request_id,
                    Some(&held),
                )
                .await
        }
    };
    drop(heartbeat);
    if outcome.is_ok()
        && let Some(body) = held.take_answer()
    {
        // Stored with the charge's move: answer with what was stored.
        let body = app.charges.qr_images.answer_with_image(body);
        return Ok(json_response(StatusCode::CREATED, body, false));
    }
    let (status, body) = match outcome {
        Ok(charge) => (
            StatusCode::CREATED,
            serde_json::to_string(&ChargeObject::stored(&charge)),
        ),
        Err(error) if !is_final(&error) => {
            // The PSP may hold the charge, or nothing happened yet: no answer is stored, and a
            // retry with this key resumes at once with the same reference.
            app.store.unlock_idempotency_key(scope, &lock).await?;
            return Err(psp_failure::from_charge_error(error, caller.environment));
        }
        Err(error) => {
            let error = psp_failure::from_charge_error(error, caller.environment);
            (
                error.status,
                serde_json::to_string(&super::error::ErrorResponse { error: *error.body }),
            )
        }
    };
    let body = body.map_err(ApiError::internal)?;
    app.store
        .complete_idempotency_key(scope, &lock, status.as_u16(), &body, expires_at())
        .await?;
    let body = app.charges.qr_images.answer_with_image(body);
    Ok(json_response(status, body, false))
}

/// Whether a failed create is the request's final answer, replayed for its idempotency key.
/// Not final: the PSP may hold the charge (ambiguous, adapter fault), it could not be reached,
/// or the gateway itself failed; a retry must be allowed to try again with the same reference.
fn is_final(error: &charges::ChargeError) -> bool {
    use crate::runtime::{CallError, PspError};
    if let charges::ChargeError::AllFailed { last, .. } = error {
        return is_final(last);
    }
    !matches!(
        error,
        charges::ChargeError::Psp(
            CallError::Psp {
                error: PspError::Ambiguous(_) | PspError::Unavailable(_),
                ..
            } | CallError::Fault { .. }
        ) | charges::ChargeError::Store(_)
            | charges::ChargeError::Vault(_)
            | charges::ChargeError::Unfinished { .. }
            // Not final either: after a plan change, a retry with the key creates the charge.
            | charges::ChargeError::PlanLimit(_)
    )
}

/// Retrieve a charge.
#[utoipa::path(get, path = "/v1/charges/{id}", tag = "charges", operation_id = "get_charge",
    params(("id" = String, Path, description = "`chg_…`")),
    responses((status = 200, body = ChargeObject), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ChargeObject>, ApiError> {
    let charge = app
        .store
        .charge(&caller.merchant_id, caller.environment, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("charge", &id))?;
    Ok(Json(ChargeObject::from(&charge)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// 1 to 100; default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// A charge id: list the charges created before it (the next page).
    starting_after: Option<String>,
    #[param(value_type = Option<crate::charges::object::ChargeStatus>)]
    status: Option<String>,
    /// An adapter id.
    provider: Option<String>,
    /// RFC 3339: created at or after.
    #[param(format = DateTime)]
    created_gte: Option<String>,
    /// RFC 3339: created before.
    #[param(format = DateTime)]
    created_lt: Option<String>,
}

/// A page of charges, newest first.
#[derive(Serialize, ToSchema)]
pub struct ChargeList {
    /// Always `list`.
    object: &'static str,
    data: Vec<ChargeObject>,
    /// Whether more charges follow: pass the last id as `starting_after`.
    has_more: bool,
}

/// List charges, newest first, with cursor pagination.
#[utoipa::path(get, path = "/v1/charges", tag = "charges", operation_id = "list_charges", params(ListParams),
    responses((status = 200, body = ChargeList), (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    query: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ChargeList>, ApiError> {
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
    let status =
        q.status
            .map(|s| {
                ChargeState::parse(&s).filter(|s| *s != ChargeState::Creating).ok_or_else(|| {
                ApiError::invalid_param(
                    "status",
                    "status must be pending, processing, paid, expired, canceled or failed.",
                )
            })
            })
            .transpose()?;
    let time = |name: &str, value: Option<String>| {
        value
            .map(|v| {
                parse_rfc3339(&v).ok_or_else(|| {
                    ApiError::invalid_param(
                        name,
                        format!("{name} must be an RFC 3339 time, e.g. 2026-11-22T10:00:00Z."),
                    )
                })
            })
            .transpose()
    };
    let filter = ChargeFilter {
        status,
        provider: q.provider,
        operator_id: None,
        created_gte: time("created_gte", q.created_gte)?,
        created_lt: time("created_lt", q.created_lt)?,
        starting_after: q.starting_after,
        limit,
    };
    let mut rows = app
        .store
        .charges(&caller.merchant_id, caller.environment, &filter)
        .await?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    Ok(Json(ChargeList {
        object: "list",
        data: rows.iter().map(ChargeObject::from).collect(),
        has_more,
    }))
}

/// Cancel a charge that can still be paid.
#[utoipa::path(post, path = "/v1/charges/{id}/cancel", tag = "charges", operation_id = "cancel_charge",
    params(("id" = String, Path, description = "`chg_…`")),
    responses(
        (status = 200, body = ChargeObject),
        (status = 401, body = ErrorResponse),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "Already paid, expired, canceled or failed", body = ErrorResponse),
        (status = 422, description = "The charge's PSP cannot cancel charges (`cancel_unsupported`): it expires at its expiry time", body = ErrorResponse),
        (status = 502, description = "The PSP refused or failed: `psp_message` and `hint`", body = ErrorResponse),
        (status = 503, description = "The gateway's PSP calls are all busy (`gateway_busy`): retry after `Retry-After`", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn cancel(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ChargeObject>, ApiError> {
    let charge = app
        .store
        .charge(&caller.merchant_id, caller.environment, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("charge", &id))?;
    let canceled = app
        .charges
        .cancel_charge(&caller, charge, &request_id::current())
        .await
        .map_err(|e| psp_failure::from_charge_error(e, caller.environment))?;
    Ok(Json(ChargeObject::from(&canceled)))
}

/// Follow a charge's status live (server-sent events): an `status` event with the current
/// status at once, then one at every change; the stream ends after a final status.
#[utoipa::path(get, path = "/v1/charges/{id}/stream", tag = "charges", operation_id = "stream_charge",
    params(("id" = String, Path, description = "`chg_…`")),
    responses(
        (status = 200, description = "`text/event-stream`; each event is `event: status`, `data: {\"id\", \"status\"}`", content_type = "text/event-stream"),
        (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn stream(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<
    axum::response::Sse<
        impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
    >,
    ApiError,
> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use futures::StreamExt;
    let updates = crate::live::follow(app, caller.merchant_id, caller.environment, id.clone())
        .await?
        .ok_or_else(|| ApiError::not_found("charge", &id))?;
    let events = updates.map(|charge| {
        let data = serde_json::json!({"id": charge.id, "status": charge.status.as_str()});
        Ok(Event::default().event("status").data(data.to_string()))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
