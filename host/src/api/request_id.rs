//! Every request gets an id: the caller's `x-request-id` when it is sane, a fresh `req_…`
//! otherwise. It is echoed in the response header, carried in error bodies, passed to adapters
//! and tagged on log lines.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being handled on this task ("" outside a request).
pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

pub async fn middleware(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            (1..=128).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        })
        .map(str::to_owned)
        .unwrap_or_else(|| format!("req_{}", uuid::Uuid::new_v4().simple()));
    let span = tracing::info_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path());
    let mut response = REQUEST_ID
        .scope(
            id.clone(),
            tracing::Instrument::instrument(next.run(request), span),
        )
        .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
