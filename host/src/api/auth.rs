//! API key authentication: `Authorization: Bearer pgw_test_…` → the merchant and environment
//! the request acts for. The key's environment decides which credentials and charges it sees.
//!
//! Failed authentications (a malformed, unknown or revoked key) are counted per client address:
//! past `PIXGW_AUTH_FAILURE_LIMIT` a minute, that address gets 429 with `Retry-After` before its
//! key is even looked at, so keys cannot be guessed at the speed of the network.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::app::App;
use crate::charges::Caller;
use crate::domain::ApiKey;
use crate::store::now_ms;

/// Writes of `last_used_at` per key are at most this far apart.
const TOUCH_INTERVAL_MS: i64 = 60_000;

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        let ip = client_ip(parts);
        let address = ip.map(|ip| ip.to_string());
        if let Some(wait) = address
            .as_deref()
            .and_then(|a| app.auth_failures.exhausted(a))
        {
            let mut e = ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                super::error::ErrorType::RateLimitError,
                "too_many_failed_authentications",
                "Too many requests from this address failed authentication; check the API key \
                 and retry after the time in the Retry-After header.",
            );
            e.retry_after = Some(wait.as_secs().max(1));
            return Err(e);
        }
        let result = authenticate(parts, app).await;
        if let (Err(e), Some(address)) = (&result, &address)
            && e.status == axum::http::StatusCode::UNAUTHORIZED
            && e.body.code != "api_key_missing"
        {
            let _ = app.auth_failures.check(address);
        }
        let mut caller = result?;
        caller.ip = ip;
        Ok(caller)
    }
}

/// The key of the request, checked: its merchant and environment.
async fn authenticate(parts: &mut Parts, app: &Arc<App>) -> Result<Caller, ApiError> {
    let header = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::unauthorized(
                "api_key_missing",
                "No API key: send it as the header `Authorization: Bearer pgw_test_…` \
                     (or pgw_live_…). Operators create keys with `pixgw key create`.",
            )
        })?;
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::unauthorized(
                "api_key_malformed",
                "The Authorization header must be `Bearer <API key>`.",
            )
        })?;
    let key = ApiKey::parse(token).map_err(|e| {
        ApiError::unauthorized(
            "api_key_malformed",
            format!("The API key is not a pixgw key: {e}"),
        )
    })?;
    let invalid = || {
        ApiError::unauthorized(
            "api_key_invalid",
            format!(
                "The API key {}… is not valid: it was never issued or has been revoked.",
                key.lookup_prefix()
            ),
        )
    };
    let record = app
        .store
        .api_keys_by_prefix(key.lookup_prefix())
        .await?
        .into_iter()
        .find(|r| key.verify(&r.hash))
        .ok_or_else(invalid)?;
    if record.revoked_at.is_some() {
        return Err(invalid());
    }
    if let Err(wait) = app.rate_limiter.check(&record.id) {
        let mut e = ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            super::error::ErrorType::RateLimitError,
            "rate_limited",
            "Too many requests with this API key; slow down and retry after the time in \
             the Retry-After header.",
        );
        e.retry_after = Some(wait.as_secs().max(1));
        return Err(e);
    }
    let now = now_ms();
    let due = {
        let mut uses = app.key_uses.lock();
        let last = uses.get(&record.id).copied().unwrap_or(i64::MIN);
        let due = now.saturating_sub(last) >= TOUCH_INTERVAL_MS;
        if due {
            uses.insert(record.id.clone(), now);
        }
        due
    };
    if due {
        // Off the request's path: a slow write must not delay the charge.
        let (app, id) = (app.clone(), record.id.clone());
        tokio::spawn(async move {
            if let Err(e) = app.store.touch_api_key(&id, now).await {
                tracing::warn!(key = %id, error = %e, "could not record API key use");
            }
        });
    }
    Ok(Caller {
        actor: crate::audit::Actor::ApiKey {
            id: record.id,
            prefix: record.prefix,
        },
        merchant_id: record.merchant_id,
        environment: record.environment,
        ip: None,
    })
}

/// The peer's address, when the server was started with connect info (`pixgw serve` is).
pub fn client_ip(parts: &Parts) -> Option<std::net::IpAddr> {
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}
