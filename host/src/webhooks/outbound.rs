//! The delivery worker: takes due rows from the outbox, signs and POSTs each event to its
//! endpoint, logs the attempt, and schedules the next one.
//!
//! Retries follow [`DeliveryConfig::retry_delays`] (by default 10 attempts over more than 72
//! hours) with up to 25 % random extra delay so endpoints coming back are not hit by every
//! gateway at once; a `Retry-After` answer pushes the next attempt later, never earlier. An
//! endpoint answering 410 Gone, or failing for more than 5 days, is disabled. The
//! `webhook-id` of an event is its id, the same on every attempt and after a restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::destination::DestinationPolicy;
use super::signature;
use crate::app::App;
use crate::store::events::{AttemptOutcome, DueDelivery};
use crate::store::{StoreError, now_ms};
use crate::vault::Aad;

/// Operator settings of delivery.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Delay before attempt 2, 3, …; one more attempt than delays in all.
    pub retry_delays: Vec<Duration>,
    pub timeout: Duration,
    /// An endpoint failing this long is disabled.
    pub disable_after: Duration,
    /// How often the outbox is polled when nothing wakes the worker (other gateways' events).
    pub poll_interval: Duration,
    pub destinations: DestinationPolicy,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        let minutes = |m: u64| Duration::from_secs(m * 60);
        DeliveryConfig {
            // 1 + 9 retries over 75.6 hours before jitter.
            retry_delays: vec![
                minutes(1),
                minutes(5),
                minutes(30),
                minutes(120),
                minutes(300),
                minutes(600),
                minutes(840),
                minutes(1200),
                minutes(1440),
            ],
            timeout: Duration::from_secs(15),
            disable_after: Duration::from_secs(5 * 24 * 3600),
            poll_interval: Duration::from_secs(1),
            destinations: DestinationPolicy::default(),
        }
    }
}

/// Leases outlive the longest attempt, so a live worker never loses its row.
const LEASE_MS: i64 = 60_000;
const BATCH: i64 = 32;
const EXCERPT: usize = 512;

/// Wakes the worker when this gateway wrote to the outbox.
#[derive(Default)]
pub struct OutboxSignal(Notify);

impl OutboxSignal {
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

pub struct Deliverer {
    client: reqwest::Client,
    config: DeliveryConfig,
}

impl Deliverer {
    pub fn new(config: DeliveryConfig) -> anyhow::Result<Deliverer> {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
        .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .dns_resolver(config.destinations.resolver())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .user_agent(concat!("pixgw/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Deliverer { client, config })
    }

    /// Runs until the task is dropped.
    pub async fn run(self: Arc<Self>, app: Arc<App>) {
        loop {
            match app.store.claim_due_deliveries(LEASE_MS, BATCH).await {
                Ok(due) if !due.is_empty() => {
                    let sends = due.into_iter().map(|d| self.deliver(&app, d));
                    for result in futures::future::join_all(sends).await {
                        if let Err(e) = result {
                            tracing::warn!(error = %e, "recording a webhook delivery failed");
                        }
                    }
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "reading the webhook outbox failed"),
            }
            let _ = tokio::time::timeout(self.config.poll_interval, app.outbox.0.notified()).await;
        }
    }

    async fn deliver(&self, app: &App, due: DueDelivery) -> Result<(), StoreError> {
        let DueDelivery {
            delivery,
            payload,
            endpoint,
        } = due;
        let now = now_ms();
        let mut keys = Vec::new();
        let open = |sealed: &str| {
            app.vault
                .open_string(
                    sealed,
                    &Aad::new("webhook_endpoints", &endpoint.id, "secret"),
                )
                .map_err(|e| e.to_string())
                .and_then(|s| signature::secret_key(&s))
        };
        match open(&endpoint.secret_sealed) {
            Ok(key) => keys.push(key),
            Err(e) => {
                return Err(StoreError::Corrupt(format!(
                    "endpoint {} secret: {e}",
                    endpoint.id
                )));
            }
        }
        if let (Some(previous), Some(until)) = (
            &endpoint.previous_secret_sealed,
            endpoint.previous_expires_at,
        ) && until > now
            && let Ok(key) = open(previous)
        {
            keys.push(key);
        }
        let timestamp = now / 1000;
        let started = Instant::now();
        let response = self
            .client
            .post(&endpoint.url)
            .header("content-type", "application/json")
            .header("webhook-id", &delivery.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                signature::header(&keys, &delivery.event_id, timestamp, payload.as_bytes()),
            )
            .body(payload)
            .send()
            .await;
        let latency_ms = started.elapsed().as_millis() as i64;
        let attempt = delivery.attempts + 1;
        let (status_code, error, excerpt, retry_after) = match response {
            Ok(r) => {
                let status = r.status().as_u16();
                let retry_after = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after);
                let text = r.text().await.unwrap_or_default();
                let mut excerpt = text;
                excerpt.truncate(excerpt.floor_char_boundary(EXCERPT));
                (Some(status), None, Some(excerpt), retry_after)
            }
            Err(e) => (None, Some(describe(&e)), None, None),
        };
        let ok = status_code.is_some_and(|s| (200..300).contains(&s));
        let gone = status_code == Some(410);
        let (next_status, next_attempt_at) = if ok {
            ("delivered", now)
        } else if gone {
            ("failed", now)
        } else {
            match self.config.retry_delays.get(attempt as usize - 1) {
                Some(delay) => {
                    let jitter = rand::random::<f64>() * 0.25;
                    let mut next = now + (delay.as_millis() as f64 * (1.0 + jitter)) as i64;
                    if let Some(after) = retry_after {
                        next = next.max(now + after.as_millis() as i64);
                    }
                    ("pending", next)
                }
                None => ("failed", now),
            }
        };
        app.store
            .record_attempt(
                &delivery,
                &AttemptOutcome {
                    status_code,
                    latency_ms,
                    error: error.clone(),
                    response_excerpt: excerpt,
                    next_status,
                    next_attempt_at,
                },
            )
            .await?;
        tracing::info!(event = %delivery.event_id, endpoint = %endpoint.id, attempt, status = ?status_code,
            error = ?error, latency_ms, next = next_status, "webhook delivery");
        if ok {
            app.store
                .set_webhook_endpoint_health(&endpoint.id, true)
                .await?;
        } else if gone {
            app.store
                .disable_webhook_endpoint(&endpoint.id, "the endpoint answered 410 Gone")
                .await?;
        } else {
            app.store
                .set_webhook_endpoint_health(&endpoint.id, false)
                .await?;
            let failing_since = endpoint.failing_since.unwrap_or(now);
            if now - failing_since > self.config.disable_after.as_millis() as i64 {
                app.store
                    .disable_webhook_endpoint(
                        &endpoint.id,
                        "deliveries failed for more than 5 days",
                    )
                    .await?;
            }
        }
        Ok(())
    }
}

/// `Retry-After` in seconds or as an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    if let Ok(seconds) = value.trim().parse::<u64>() {
        return Some(Duration::from_secs(seconds.min(7 * 24 * 3600)));
    }
    let format = time::format_description::well_known::Rfc2822;
    let at = time::OffsetDateTime::parse(value.trim(), &format).ok()?;
    let delta = at - time::OffsetDateTime::now_utc();
    Some(Duration::from_secs(
        delta.whole_seconds().clamp(0, 7 * 24 * 3600) as u64,
    ))
}

fn describe(error: &reqwest::Error) -> String {
    use std::error::Error;
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_spans_more_than_72_hours_in_10_attempts() {
        let config = DeliveryConfig::default();
        assert_eq!(config.retry_delays.len() + 1, 10);
        let total: Duration = config.retry_delays.iter().sum();
        assert!(total >= Duration::from_secs(72 * 3600), "{total:?}");
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(parse_retry_after("120"), Some(Duration::from_secs(120)));
        let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(90);
        let text = soon
            .format(&time::format_description::well_known::Rfc2822)
            .unwrap();
        let parsed = parse_retry_after(&text).unwrap();
        assert!((88..=90).contains(&parsed.as_secs()), "{parsed:?}");
        assert_eq!(parse_retry_after("soon"), None);
    }
}
