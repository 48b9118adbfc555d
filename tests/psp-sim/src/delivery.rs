//! Outbound webhooks: what a PSP sends to the merchant's registered URL when a charge is paid.
//!
//! Delivery is synchronous with `POST /_sim/pay` so the control API can answer the outcome.
//! A failed attempt (connection error or non-2xx) is retried twice with a short pause; every
//! attempt is recorded in the provider's delivery log. https targets are verified against the
//! system roots only (never the simulator's own CA), as a real PSP would.

use std::time::Duration;

use rustls_platform_verifier::BuilderVerifierExt;
use serde::Serialize;

use crate::{Common, DeliveryRecord, Notification, now_rfc3339};

const ATTEMPTS: u32 = 3;

/// The HTTP client used for every webhook delivery.
pub fn client() -> reqwest::Client {
    let tls = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_platform_verifier())
        .map(|b| b.with_no_client_auth());
    let builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none());
    let builder = match tls {
        Ok(tls) => builder.use_preconfigured_tls(tls),
        Err(err) => {
            tracing::warn!(%err, "no system roots; https webhook deliveries will fail");
            let tls = crate::tls::client_config("", None).expect("empty-root TLS config");
            builder.use_preconfigured_tls(tls)
        }
    };
    builder.build().expect("webhook HTTP client")
}

/// What happened to one notification, answered by `POST /_sim/pay`.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub url: String,
    /// `delivered` (a 2xx), `failed` (after retries) or `skipped` (fault).
    pub outcome: &'static str,
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub attempts: u32,
}

pub async fn deliver(
    client: &reqwest::Client,
    common: &Common,
    notification: &Notification,
) -> Outcome {
    let mut last = Outcome {
        url: notification.url.clone(),
        outcome: "failed",
        status: None,
        error: None,
        attempts: 0,
    };
    for attempt in 1..=ATTEMPTS {
        if attempt > 1 {
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
        }
        let (content_type, body) = wire_body(notification);
        let mut request = client
            .post(&notification.url)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(body);
        for (name, value) in &notification.headers {
            if !name.eq_ignore_ascii_case("content-type") {
                request = request.header(name, value);
            }
        }
        let result = request.send().await;
        let (status, error) = match result {
            Ok(response) => (Some(response.status().as_u16()), None),
            Err(err) => (None, Some(error_chain(&err))),
        };
        common.deliveries.lock().push(DeliveryRecord {
            id: common.next_id(),
            at: now_rfc3339(),
            url: notification.url.clone(),
            attempt,
            body: notification.body.clone(),
            status,
            error: error.clone(),
        });
        last.status = status;
        last.error = error;
        last.attempts = attempt;
        if status.is_some_and(|s| (200..300).contains(&s)) {
            last.outcome = "delivered";
            break;
        }
        tracing::warn!(provider = common.id, url = %notification.url, ?status, error = ?last.error, attempt, "webhook delivery failed");
    }
    last
}

/// JSON by default. A notification whose headers name another content type (iugu's
/// form-encoded triggers) carries its body as a JSON string, sent as is.
fn wire_body(notification: &Notification) -> (String, Vec<u8>) {
    let named = notification
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.clone());
    match (named, &notification.body) {
        (Some(content_type), serde_json::Value::String(raw)) if !content_type.contains("json") => {
            (content_type, raw.clone().into_bytes())
        }
        (named, body) => (
            named.unwrap_or_else(|| "application/json".into()),
            serde_json::to_vec(body).unwrap_or_default(),
        ),
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut s = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        s.push_str(": ");
        s.push_str(&e.to_string());
        source = e.source();
    }
    s
}
