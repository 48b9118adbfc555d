//! Optimistic concurrency for what merchants edit (credentials, webhook endpoints).
//!
//! Each object carries `version` and answers with `ETag: "<version>"`. A change names the
//! version it was made against, as `If-Match: "<version>"` or a `version` field of the body;
//! if the object moved on since, the answer is 409 `conflict` and nothing changes. A change that
//! names no version is still checked against the version the gateway read before applying it,
//! so two concurrent changes never silently undo one another.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};

use super::body::JsonObject;
use super::error::{ApiError, ErrorType};

/// The `ETag` of an object at `version`.
pub fn etag(version: i64) -> [(header::HeaderName, HeaderValue); 1] {
    let value = HeaderValue::from_str(&format!("\"{version}\"")).expect("digits are a header");
    [(header::ETAG, value)]
}

/// The version a change is made against: `If-Match` or the body's `version`, which must agree
/// when both are given. `If-Match: *` names none.
pub fn expected_version(
    headers: &HeaderMap,
    body: &mut JsonObject,
) -> Result<Option<i64>, ApiError> {
    let from_body = body.integer("version")?;
    let from_header = match headers.get(header::IF_MATCH) {
        None => None,
        Some(value) => parse_if_match(value)?,
    };
    match (from_header, from_body) {
        // Each is well formed; together they disagree: a rule across fields, 422.
        (Some(h), Some(b)) if h != b => Err(ApiError::unprocessable_param(
            "version",
            format!("The If-Match header names version {h} and the body version {b}; send one."),
        )),
        (h, b) => Ok(h.or(b)),
    }
}

fn parse_if_match(value: &HeaderValue) -> Result<Option<i64>, ApiError> {
    let bad = || {
        ApiError::invalid_param(
            "If-Match",
            "If-Match must be the ETag of the object, e.g. \"3\" (with the quotes), as the last \
             GET answered.",
        )
    };
    let text = value.to_str().map_err(|_| bad())?.trim();
    if text == "*" {
        return Ok(None);
    }
    let unquoted = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    unquoted
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 1)
        .map(Some)
        .ok_or_else(bad)
}

/// 409 `conflict`: `what` changed since `expected` was read.
pub fn conflict(what: &str, expected: i64, current: i64) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        ErrorType::InvalidRequestError,
        "conflict",
        format!(
            "The {what} was changed by someone else since version {expected} was read; it is at \
             version {current} now. Nothing was saved: read it again (GET), then repeat your \
             change with If-Match: \"{current}\"."
        ),
    )
    .with_param("version")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(json: serde_json::Value) -> JsonObject {
        JsonObject::parse(json.to_string().as_bytes()).unwrap()
    }

    fn headers(if_match: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::IF_MATCH, HeaderValue::from_str(if_match).unwrap());
        h
    }

    #[test]
    fn the_version_comes_from_if_match_or_the_body() {
        let none = HeaderMap::new();
        let empty = || body(serde_json::json!({}));
        assert_eq!(expected_version(&none, &mut empty()).unwrap(), None);
        assert_eq!(
            expected_version(&headers("\"3\""), &mut empty()).unwrap(),
            Some(3)
        );
        assert_eq!(
            expected_version(&headers("3"), &mut empty()).unwrap(),
            Some(3)
        );
        assert_eq!(expected_version(&headers("*"), &mut empty()).unwrap(), None);
        let mut with_version = body(serde_json::json!({"version": 4}));
        assert_eq!(expected_version(&none, &mut with_version).unwrap(), Some(4));
        with_version.finish().unwrap();
        let mut both = body(serde_json::json!({"version": 4}));
        assert_eq!(
            expected_version(&headers("\"4\""), &mut both).unwrap(),
            Some(4)
        );
    }

    #[test]
    fn a_bad_or_disagreeing_version_names_what_to_fix() {
        let err =
            expected_version(&headers("W/\"x\""), &mut body(serde_json::json!({}))).unwrap_err();
        assert_eq!(err.body.param.as_deref(), Some("If-Match"));
        assert_eq!(
            err.status,
            StatusCode::BAD_REQUEST,
            "not the documented shape"
        );
        let err = expected_version(
            &headers("\"3\""),
            &mut body(serde_json::json!({"version": 4})),
        )
        .unwrap_err();
        assert_eq!(
            err.body.message,
            "The If-Match header names version 3 and the body version 4; send one."
        );
        assert_eq!(
            err.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "each well formed"
        );
        assert_eq!(conflict("credential", 3, 5).status, StatusCode::CONFLICT);
        assert_eq!(conflict("credential", 3, 5).body.code, "conflict");
    }
}
