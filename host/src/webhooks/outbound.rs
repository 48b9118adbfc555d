//! The delivery worker: takes due rows from the outbox, signs and POSTs each event to its
//! endpoint, logs the attempt, and schedules the next one.
//!
//! Each attempt runs as a task of its own, at most [`DeliveryConfig::concurrency`] at once and
//! [`DeliveryConfig::per_endpoint`] to one endpoint, [`DeliveryConfig::per_failing_endpoint`]
//! once its last attempt failed, so an endpoint that never answers (a tar pit) holds a few
//! slots until its timeout while every other merchant's events go out, and a healthy one
//! keeps up with a merchant making charges from many clients at once. An
//! attempt holds a short lease on its row ([`DeliveryConfig::lease`]), renewed while it runs:
//! after a crash the row is due again within one lease. The endpoint is read right after the
//! claim, and a row whose endpoint is no longer enabled is left; an attempt that does not start
//! within [`RECHECK_AFTER`] of that read asks for its lease again first, so an endpoint deleted
//! or disabled meanwhile gets nothing, and an attempt whose row is canceled while it runs is
//! dropped. At most [`MAX_RESPONSE_BYTES`] of an answer are read.
//!
//! Retries follow [`DeliveryConfig::retry_delays`] (by default 10 attempts over more than 72
//! hours) with up to 25 % random extra delay so endpoints coming back are not hit by every
//! gateway at once; a `Retry-After` answer pushes the next attempt later, never earlier. An
//! endpoint answering 410 Gone, or failing for more than 5 days, is disabled. The
//! `webhook-id` of an event is its id, the same on every attempt and after a restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};

use super::destination::DestinationPolicy;
use super::signature;
use crate::app::App;
use crate::store::events::{AttemptOutcome, ClaimLimits, DueDelivery};
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
    /// How long a delivery in flight stays leased without a renewal; renewed every third of
    /// it. A crashed gateway's deliveries are due again after at most this long.
    pub lease: Duration,
    /// Attempts this gateway runs at once.
    pub concurrency: usize,
    /// Attempts in flight to one healthy endpoint at once (every gateway on the database
    /// together).
    pub per_endpoint: usize,
    /// The same to an endpoint whose last attempt failed, until one succeeds; at most
    /// `per_endpoint`.
    pub per_failing_endpoint: usize,
    /// Endpoints a merchant may have per environment when its plan sets no limit.
    pub max_endpoints: u64,
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
            lease: Duration::from_secs(10),
            concurrency: DEFAULT_CONCURRENCY,
            per_endpoint: DEFAULT_PER_ENDPOINT,
            per_failing_endpoint: DEFAULT_PER_FAILING_ENDPOINT,
            max_endpoints: 50,
        }
    }
}

/// Attempts one gateway runs at once, by default.
pub const DEFAULT_CONCURRENCY: usize = 256;
/// Attempts in flight to one healthy endpoint, by default. An attempt holds its place from the
/// claim to its record, about a charge's round trip under load, so an endpoint keeps up with
/// its merchant's charges only with about as many places as the merchant has clients creating
/// them: 16 (the earlier default) fell behind 32 clients on SQLite (`cargo xtask load`), and
/// the backlog grew for as long as they ran.
pub const DEFAULT_PER_ENDPOINT: usize = 64;
/// Attempts in flight to one failing endpoint, by default.
pub const DEFAULT_PER_FAILING_ENDPOINT: usize = 4;

/// How old the claim's check of an endpoint may be for an attempt to go without a second one.
/// A fresh claim is sent at once: the second check cost a write, and a writer wait, per
/// delivery, and found nothing the first did not in all but a sub-second window.
const RECHECK_AFTER: Duration = Duration::from_millis(250);

/// Rows claimed at once, at most.
const BATCH: usize = 32;
/// Characters of an answer kept in the delivery log.
const EXCERPT: usize = 512;
/// Bytes of an answer read, at most: enough for the excerpt; the rest is never downloaded.
pub const MAX_RESPONSE_BYTES: usize = 4096;

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
            // A proxy would connect to the merchant's host itself, past the resolver's check.
            .no_proxy()
            .timeout(config.timeout)
            .user_agent(concat!("pixgw/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Deliverer { client, config })
    }

    fn lease_ms(&self) -> i64 {
        self.config.lease.as_millis().max(1) as i64
    }

    /// Runs until the task is dropped: claims as many due rows as there are free slots and
    /// starts one task per row.
    pub async fn run(self: Arc<Self>, app: Arc<App>) {
        let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        loop {
            let free = slots.available_permits();
            if free == 0 {
                // Every slot is busy: wait for one to free before claiming more.
                drop(slots.clone().acquire_owned().await);
                continue;
            }
            let limits = ClaimLimits {
                lease_ms: self.lease_ms(),
                rows: free.min(BATCH) as i64,
                per_endpoint: self.config.per_endpoint.max(1) as i64,
                per_failing_endpoint: self
                    .config
                    .per_failing_endpoint
                    .clamp(1, self.config.per_endpoint.max(1))
                    as i64,
            };
            match app.store.claim_due_deliveries(limits).await {
                Ok(due) if !due.is_empty() => {
                    for delivery in due {
                        let slot = slots
                            .clone()
                            .try_acquire_owned()
                            .expect("no more rows are claimed than slots are free");
                        let (deliverer, app) = (self.clone(), app.clone());
                        tokio::spawn(async move {
                            if let Err(e) = deliverer.deliver(&app, delivery).await {
                                tracing::warn!(error = %e, "recording a webhook delivery failed");
                            }
                            drop(slot);
                            // A row held back by the per-endpoint limit may be claimable now.
                            app.charges.outbox.wake();
                        });
                    }
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "reading the webhook outbox failed"),
            }
            let _ =
                tokio::time::timeout(self.config.poll_interval, app.charges.outbox.0.notified())
                    .await;
        }
    }

    /// Renews the lease every third of it until the lease is lost (the row was canceled,
    /// queued again or taken over, or its endpoint removed); never returns while it holds.
    async fn hold_lease(&self, app: &App, due: &DueDelivery) {
        let every = (self.config.lease / 3).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(every).await;
            match app
                .store
                .renew_delivery_lease(&due.delivery.id, &due.lease, self.lease_ms())
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                // The database is out of reach: keep the attempt; the lease may run out.
                Err(e) => tracing::warn!(error = %e, "renewing a webhook delivery lease failed"),
            }
        }
    }

    async fn deliver(&self, app: &App, due: DueDelivery) -> Result<(), StoreError> {
        // The endpoint may have been deleted or disabled since the claim read it enabled: asked
        // again unless that read was a moment ago (as it is when a slot was free for the row).
        if due.checked_at.elapsed() > RECHECK_AFTER
            && !app
                .store
                .renew_delivery_lease(&due.delivery.id, &due.lease, self.lease_ms())
                .await?
        {
            tracing::info!(delivery = %due.delivery.id, "webhook delivery dropped: canceled or its endpoint removed");
            return Ok(());
        }
        let attempt = tokio::select! {
            attempt = self.attempt(app, &due) => attempt?,
            () = self.hold_lease(app, &due) => {
                tracing::info!(delivery = %due.delivery.id, "webhook attempt abandoned: canceled, queued again or its endpoint removed");
                return Ok(());
            }
        };
        self.settle(app, due, attempt).await
    }

    /// Signs and sends one attempt; the answer's status, its first bytes and `Retry-After`.
    async fn attempt(&self, app: &App, due: &DueDelivery) -> Result<Sent, StoreError> {
        let DueDelivery {
            delivery,
            payload,
            endpoint,
            ..
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
        if let Err(reason) = self.config.destinations.check_literal(&endpoint.url) {
            return Ok(Sent {
                status_code: None,
                error: Some(reason),
                excerpt: None,
                retry_after: None,
                latency_ms: 0,
            });
        }
        // Stored without its charge's QR image: sent with it.
        let payload = app.charges.qr_images.event_text_with_image(payload.clone());
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
        Ok(match response {
            Ok(r) => {
                let status = r.status().as_u16();
                let retry_after = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after);
                let body = read_capped(r, MAX_RESPONSE_BYTES).await;
                let mut excerpt = String::from_utf8_lossy(&body).into_owned();
                excerpt.truncate(excerpt.floor_char_boundary(EXCERPT));
                Sent {
                    status_code: Some(status),
                    error: None,
                    excerpt: Some(excerpt),
                    retry_after,
                    latency_ms: started.elapsed().as_millis() as i64,
                }
            }
            Err(e) => Sent {
                status_code: None,
                error: Some(describe(&e)),
                excerpt: None,
                retry_after: None,
                latency_ms: started.elapsed().as_millis() as i64,
            },
        })
    }

    /// Logs the attempt, schedules what comes next, and keeps the endpoint's health.
    async fn settle(&self, app: &App, due: DueDelivery, sent: Sent) -> Result<(), StoreError> {
        let DueDelivery {
            delivery,
            endpoint,
            lease,
            ..
        } = due;
        let Sent {
            status_code,
            error,
            excerpt,
            retry_after,
            latency_ms,
        } = sent;
        let now = now_ms();
        let attempt = delivery.attempts + 1;
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
        crate::metrics::webhook_attempt(next_status);
        // Written behind: the slot is free at once, and the worker's next claim is queued
        // after this write. The endpoint's health below follows the attempt whether or not the
        // row was taken over meanwhile: the attempt happened.
        app.store
            .record_attempt_behind(
                &delivery,
                &lease,
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
            // Healthy already (as the claim read it): nothing to write on the common path.
            if endpoint.failing_since.is_some() {
                app.store
                    .set_webhook_endpoint_health(&endpoint.id, true)
                    .await?;
            }
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

/// What one attempt got back.
struct Sent {
    status_code: Option<u16>,
    error: Option<String>,
    excerpt: Option<String>,
    retry_after: Option<Duration>,
    latency_ms: i64,
}

/// The first `max` bytes of an answer; the rest is left unread (the connection is dropped), so
/// an endpoint answering gigabytes, or forever, costs at most `max` bytes.
async fn read_capped(mut response: reqwest::Response, max: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < max {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(max - body.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    body
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
