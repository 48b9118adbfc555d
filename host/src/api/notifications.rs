//! `/api/wh/<uuid>[/…]`: where PSPs notify. GET answers 200 (PSPs' verification handshake);
//! POST is authenticated by the credential's webhook token, stored and answered at once; it is
//! processed in the background by [`crate::webhooks::inbound`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::routing::any;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::error::{ApiError, ErrorType};
use crate::app::App;
use crate::webhooks::inbound::{InboundError, RawNotification};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/api/wh/{webhook_id}", any(notify))
        .route("/api/wh/{webhook_id}/{*rest}", any(notify))
}

async fn notify(
    State(app): State<Arc<App>>,
    Path(params): Path<Vec<(String, String)>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if method == Method::GET || method == Method::HEAD {
        return Ok((StatusCode::OK, Json(json!({"ok": true}))));
    }
    let webhook_id = params
        .iter()
        .find(|(k, _)| k == "webhook_id")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let prefix = format!("/api/wh/{webhook_id}");
    let raw = RawNotification {
        method: method.to_string(),
        path: uri
            .path()
            .strip_prefix(&prefix)
            .unwrap_or_default()
            .to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
    };
    match app.receive_notification(&webhook_id, raw).await {
        // Stored: what it says is confirmed with the PSP afterwards, so the PSP need not resend.
        Ok(_) => Ok((StatusCode::OK, Json(json!({"received": true})))),
        Err(InboundError::UnknownWebhook) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorType::InvalidRequestError,
            "webhook_unknown",
            "No webhook is registered at this URL.",
        )),
        Err(InboundError::Unauthorized) => Err(ApiError::unauthorized(
            "webhook_token_invalid",
            "The notification does not carry this webhook's token (query parameter `token` or \
             header `x-pixgw-token`).",
        )),
        Err(InboundError::Store(e)) => Err(ApiError::internal(e)),
    }
}
