//! Request bodies: JSON read field by field, so every error names the parameter at fault
//! (`payer.document`), unknown parameters are refused, and an oversized body is a 413.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorType};

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON object body, not yet taken apart.
pub struct JsonBody(pub JsonObject);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        ErrorType::InvalidRequestError,
                        "request_too_large",
                        format!("The request body is larger than {MAX_BODY_BYTES} bytes."),
                    )
                } else {
                    ApiError::bad_request("body_unreadable", rejection.body_text())
                }
            })?;
        JsonObject::parse(&bytes).map(JsonBody)
    }
}

/// A free-form object parameter: its full name (`metadata`) and its members.
pub type NamedMap = (String, Map<String, Value>);

/// A JSON object whose fields are taken one by one; [`JsonObject::finish`] refuses leftovers.
pub struct JsonObject {
    map: Map<String, Value>,
    /// `payer.` for a nested object, "" at the top.
    path: String,
}

impl JsonObject {
    pub fn parse(bytes: &[u8]) -> Result<JsonObject, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonObject {
                map: Map::new(),
                path: String::new(),
            });
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(
                "invalid_json",
                format!("The request body is not valid JSON: {e}."),
            )
        })?;
        match value {
            Value::Object(map) => Ok(JsonObject {
                map,
                path: String::new(),
            }),
            _ => Err(ApiError::bad_request(
                "invalid_json",
                "The request body must be a JSON object.",
            )),
        }
    }

    /// The whole object as canonical text (keys sorted), for request fingerprints.
    pub fn canonical(&self) -> String {
        Value::Object(self.map.clone()).to_string()
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.path)
    }

    /// The value of `key`; JSON `null` counts as absent.
    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is given as JSON `null`, which in an update clears an optional setting.
    /// Takes it when it is.
    pub fn null(&mut self, key: &str) -> bool {
        let null = self.map.get(key).is_some_and(Value::is_null);
        if null {
            self.map.remove(key);
        }
        null
    }

    pub fn integer(&mut self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
            // JSON Schema counts 3.0 as an integer; so does the API.
            Some(Value::Number(n))
                if n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && (-9.0e15..=9.0e15).contains(&f)) =>
            {
                Ok(n.as_f64().map(|f| f as i64))
            }
            Some(other) => Err(ApiError::invalid_param(
                self.name(key),
                format!("{} must be an integer; got {other}.", self.name(key)),
            )),
        }
    }

    pub fn required_integer(&mut self, key: &str, what: &str) -> Result<i64, ApiError> {
        self.integer(key)?.ok_or_else(|| self.missing(key, what))
    }

    /// A string of at most `max_chars` characters, not only whitespace; returned trimmed.
    /// The limit counts the string as sent, as the OpenAPI document's `maxLength` does.
    pub fn string(&mut self, key: &str, max_chars: usize) -> Result<Option<String>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => {
                let sent = s.chars().count();
                let s = s.trim().to_owned();
                let chars = if s.is_empty() { 0 } else { sent };
                if chars == 0 || chars > max_chars {
                    return Err(ApiError::invalid_param(
                        self.name(key),
                        format!(
                            "{} must have 1 to {max_chars} characters; it has {chars}.",
                            self.name(key)
                        ),
                    ));
                }
                // Every string parameter is a name, label, description or id: one line.
                crate::domain::refuse_control(&self.name(key), &s)
                    .map_err(|e| ApiError::invalid_param(self.name(key), format!("{e}.")))?;
                Ok(Some(s))
            }
            Some(other) => Err(ApiError::invalid_param(
                self.name(key),
                format!("{} must be a string; got {other}.", self.name(key)),
            )),
        }
    }

    pub fn required_string(
        &mut self,
        key: &str,
        max_chars: usize,
        what: &str,
    ) -> Result<String, ApiError> {
        self.string(key, max_chars)?
            .ok_or_else(|| self.missing(key, what))
    }

    pub fn boolean(&mut self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(ApiError::invalid_param(
                self.name(key),
                format!("{} must be true or false; got {other}.", self.name(key)),
            )),
        }
    }

    /// A nested object, taken apart the same way.
    pub fn object(&mut self, key: &str) -> Result<Option<JsonObject>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(JsonObject {
                map,
                path: format!("{}.", self.name(key)),
            })),
            Some(other) => Err(ApiError::invalid_param(
                self.name(key),
                format!("{} must be an object; got {other}.", self.name(key)),
            )),
        }
    }

    /// A nested object whose keys are free (metadata, credential fields): its full parameter
    /// name and its raw map.
    pub fn map(&mut self, key: &str) -> Result<Option<NamedMap>, ApiError> {
        Ok(self.object(key)?.map(|o| {
            let name = o.path.trim_end_matches('.').to_owned();
            (name, o.map)
        }))
    }

    /// A JSON array: its full parameter name and its items.
    pub fn list(&mut self, key: &str) -> Result<Option<(String, Vec<Value>)>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some((self.name(key), items))),
            Some(other) => Err(ApiError::invalid_param(
                self.name(key),
                format!("{} must be a list; got {other}.", self.name(key)),
            )),
        }
    }

    fn missing(&self, key: &str, what: &str) -> ApiError {
        ApiError::invalid_param(
            self.name(key),
            format!("{} is required: {what}.", self.name(key)),
        )
        .with_code("parameter_missing")
    }

    /// Refuses any parameter not taken.
    pub fn finish(self) -> Result<(), ApiError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(ApiError::invalid_param(
                self.name(key),
                format!(
                    "Unknown parameter {}; see /v1/openapi.json for the accepted ones.",
                    self.name(key)
                ),
            )
            .with_code("parameter_unknown")),
        }
    }
}
