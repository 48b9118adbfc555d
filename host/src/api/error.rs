//! The API's one error type, mapped to HTTP once.
//!
//! Every error answers `{"error": {type, code, message, param?, provider?, psp_message?, hint?,
//! request_id}}`; a plan's limit adds `plan`, `resource`, `limit`, `usage` and `upgrade_to`.
//! Messages say what to fix; a PSP's own words travel verbatim in `psp_message`; internal
//! failures are logged with the request id and answered with a generic message, never their
//! details.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::request_id;

/// The families of errors, as `error.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// The request is malformed or names something invalid (400, 404, 413, 422).
    InvalidRequestError,
    /// No valid API key (401).
    AuthenticationError,
    /// The key is valid but may not do this, or the merchant's plan does not allow it (403).
    PermissionError,
    /// An `Idempotency-Key` conflict (409, 422).
    IdempotencyError,
    /// Too many requests (429).
    RateLimitError,
    /// The PSP refused or failed; `psp_message` and `hint` say why and what to do (502).
    PspError,
    /// Something failed inside the gateway (500, 503).
    ApiError,
}

/// The `error` object of every error response.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    #[serde(rename = "type")]
    pub kind: ErrorType,
    /// Stable machine-readable code, e.g. `parameter_invalid`, `provider_not_connected`.
    pub code: String,
    /// What went wrong and how to fix it, in plain words.
    pub message: String,
    /// The request parameter at fault, e.g. `payer.document`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// The PSP involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The PSP's own message, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psp_message: Option<String>,
    /// The PSP's own error code, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psp_code: Option<String>,
    /// The likely remedy, in plain words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// For `provider: "random"`: every PSP tried, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempted_providers: Option<Vec<String>>,
    /// For `plan_limit_reached`: the merchant's plan (`free`, `basic`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// For `plan_limit_reached`: what is limited (`live_charges`, `payment_links`, …; see
    /// `GET /v1/usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// For `plan_limit_reached`: the plan's limit (`0` for a feature it lacks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// For `plan_limit_reached`: how many the merchant has (this month, for charges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<u64>,
    /// For `plan_limit_reached`: the smallest plan that allows one more; absent when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_to: Option<String>,
    /// The id of this request (also in the `x-request-id` header): quote it to support.
    pub request_id: String,
}

/// `{"error": …}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorBody,
}

/// Why a request is refused, which decides its status here, once, for the whole API.
///
/// 400 means "fix the request's shape": what the OpenAPI document says (a type, a required
/// field, a length, a pattern, an unknown field) is not met, so a client generated from the
/// document would never send it. 422 means "the request is well formed, and the gateway still
/// refuses it" by a rule the document cannot state: CPF/CNPJ check digits, a provider that is
/// not installed or not connected, an adapter's own required fields, a webhook URL that does
/// not resolve or is private, rules across fields (a payment link's amount with
/// `min_amount`), an `Idempotency-Key` reused with another body. Both keep
/// `invalid_request_error` and the same `code`, `param` and `hint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The request does not match the document: 400.
    Shape,
    /// The request matches the document; a rule beyond it refuses it: 422.
    Rule,
}

impl Refusal {
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::Shape => StatusCode::BAD_REQUEST,
            Refusal::Rule => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// Boxed: errors travel through every `Result` of the API layer, which stays small.
    pub body: Box<ErrorBody>,
    /// Seconds, for a 429 or a 503 `gateway_busy`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        kind: ErrorType,
        code: &str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            body: Box::new(ErrorBody {
                kind,
                code: code.to_owned(),
                message: message.into(),
                param: None,
                provider: None,
                psp_message: None,
                psp_code: None,
                hint: None,
                attempted_providers: None,
                plan: None,
                resource: None,
                limit: None,
                usage: None,
                upgrade_to: None,
                request_id: request_id::current(),
            }),
            retry_after: None,
        }
    }

    /// 503 `gateway_busy`: the gateway's own limit of concurrent PSP calls was reached and no
    /// slot freed up in time; nothing reached a PSP, so retrying (same Idempotency-Key) is safe.
    pub fn gateway_busy(message: impl Into<String>) -> Self {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorType::ApiError,
            "gateway_busy",
            message,
        )
        .with_hint(
            "Retry after the number of seconds in the Retry-After header; the same \
             Idempotency-Key is safe. If this persists, the PSP is answering slowly.",
        );
        e.retry_after = Some(1);
        e
    }

    /// A refused request, answered 400 or 422 by [`Refusal::status`]: `invalid_request_error`
    /// with `code`.
    pub fn invalid(refusal: Refusal, code: &str, message: impl Into<String>) -> Self {
        Self::new(
            refusal.status(),
            ErrorType::InvalidRequestError,
            code,
            message,
        )
    }

    /// 400 `parameter_invalid` naming the parameter at fault: it does not have the documented
    /// shape.
    pub fn invalid_param(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::invalid(Refusal::Shape, "parameter_invalid", message).with_param(param)
    }

    /// 422 `parameter_invalid` naming the parameter at fault: it has the documented shape, and
    /// a rule beyond the document refuses it.
    pub fn unprocessable_param(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::invalid(Refusal::Rule, "parameter_invalid", message).with_param(param)
    }

    /// 400: the request does not have the documented shape.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::invalid(Refusal::Shape, code, message)
    }

    /// 422: the request has the documented shape, and a rule beyond the document refuses it.
    pub fn unprocessable(code: &str, message: impl Into<String>) -> Self {
        Self::invalid(Refusal::Rule, code, message)
    }

    pub fn unauthorized(code: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorType::AuthenticationError,
            code,
            message,
        )
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            ErrorType::InvalidRequestError,
            "resource_missing",
            format!("No {what} {id:?} exists for this API key's merchant and environment."),
        )
    }

    /// A failure inside the gateway: logged in full, answered without details.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorType::ApiError,
            "internal_error",
            "The gateway failed to handle this request. Nothing was charged twice; retry with \
             the same Idempotency-Key, or quote the request id to support.",
        );
        tracing::error!(request_id = %e.body.request_id, error = %error, "internal error");
        e
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.body.param = Some(param.into());
        self
    }

    pub fn with_code(mut self, code: &str) -> Self {
        self.body.code = code.to_owned();
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.body.hint = Some(hint.into());
        self
    }

    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.body.provider = Some(provider.into());
        self
    }
}

/// A plan's limit: 403 `permission_error` with code `plan_limit_reached` (the key is valid,
/// the plan does not allow this), the plan, the limit, the usage, and a hint naming the
/// smallest plan that allows it. 403 rather than 429: waiting does not help (except for a new
/// month of charges), a plan change does.
impl From<crate::plans::LimitReached> for ApiError {
    fn from(reached: crate::plans::LimitReached) -> Self {
        let mut e = ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorType::PermissionError,
            "plan_limit_reached",
            reached.message(),
        )
        .with_hint(reached.hint());
        e.body.plan = Some(reached.plan.as_str().to_owned());
        e.body.resource = Some(reached.resource.as_str().to_owned());
        e.body.limit = Some(reached.limit);
        e.body.usage = Some(reached.usage);
        e.body.upgrade_to = reached.upgrade().map(|p| p.id.as_str().to_owned());
        e
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        ApiError::internal(error)
    }
}

impl From<crate::live::LiveError> for ApiError {
    fn from(error: crate::live::LiveError) -> Self {
        match error {
            crate::live::LiveError::TooMany { .. } => {
                let mut e = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorType::RateLimitError,
                    "too_many_streams",
                    format!("{}.", error),
                );
                e.retry_after = Some(5);
                e
            }
            crate::live::LiveError::Store(e) => ApiError::internal(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, code = %self.body.code, request_id = %self.body.request_id,
                provider = ?self.body.provider, psp_message = ?self.body.psp_message, "request failed");
        }
        let mut response =
            (self.status, axum::Json(ErrorResponse { error: *self.body })).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// Answers for requests no route matched.
pub async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorType::InvalidRequestError,
        "route_not_found",
        format!(
            "There is no {method} {}; see /v1/openapi.json for the API.",
            uri.path()
        ),
    )
}
