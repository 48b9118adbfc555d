//! Prometheus metrics, served at `/metrics`. The names and labels are defined here and only
//! here; the rest of the gateway calls the functions below.
//!
//! - `pixgw_http_requests_total{route, method, status}` and
//!   `pixgw_http_request_duration_seconds{route, method}`
//! - `pixgw_psp_call_duration_seconds{provider, operation, outcome}`: an adapter call, PSP round
//!   trips included
//! - `pixgw_psp_http_duration_seconds{provider, outcome}`: one HTTP exchange with a PSP (its
//!   latency), `outcome` the HTTP status or the transport failure
//! - `pixgw_charges_total{provider, status}`: charges reaching each status
//! - `pixgw_psp_unavailable_total{provider}` and `pixgw_psp_circuits_opened_total{provider}`:
//!   the router's view of PSP health
//! - `pixgw_webhook_attempts_total{outcome}`: webhook attempts by what comes next: `delivered`,
//!   `pending` (retried later) or `failed` (given up)
//! - `pixgw_batched_statements_total{write}` and `pixgw_batched_writes_total{write}`: on
//!   PostgreSQL, the statements that wrote many requests' writes together and the writes they
//!   wrote (`write="plan_count"`: charges counted against their plan's month, admitted or
//!   refused; `write="webhook_attempt"`: webhook attempts recorded; `write="creating_charge"`:
//!   charges' `creating` rows inserted; `write="idempotency_claim"`: idempotency keys claimed,
//!   or found held and then read alone); their ratio is how many a
//!   statement carries. A statement that failed counts, its writes do not (they are written
//!   alone)
//! - `pixgw_background_task_restarts_total{task, reason}`: a background loop that panicked
//!   (`reason="panic"`) or returned, and was started again
//!
//! `/metrics` answers anyone who can reach it, so no label names a merchant or one of their
//! credentials: every label takes a handful of values (an adapter id, an outcome, a route
//! template).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder (once) and returns the handle that renders it.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let buckets = [
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ];
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets)
                .expect("bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Another recorder may exist when the gateway is embedded (tests); ours still renders.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// Records one HTTP request by its route template, not its raw path (bounded label values).
pub async fn http_middleware(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("pixgw_http_requests_total", "route" => route.clone(), "method" => method.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("pixgw_http_request_duration_seconds", "route" => route, "method" => method)
        .record(started.elapsed().as_secs_f64());
    response
}

pub fn psp_call(provider: &str, operation: &'static str, elapsed: Duration, ok: bool) {
    metrics::histogram!("pixgw_psp_call_duration_seconds",
        "provider" => provider.to_owned(), "operation" => operation, "outcome" => if ok { "ok" } else { "error" })
    .record(elapsed.as_secs_f64());
}

/// One HTTP exchange an adapter made with its PSP.
pub fn psp_http(
    provider: &str,
    result: &Result<
        crate::runtime::bindings::http::Response,
        crate::runtime::bindings::http::HttpError,
    >,
    elapsed: Duration,
) {
    use crate::runtime::bindings::http::HttpError;
    let outcome = match result {
        Ok(r) => r.status.to_string(),
        Err(HttpError::Denied(_)) => "denied".into(),
        Err(HttpError::NotSent(_)) => "not_sent".into(),
        Err(HttpError::Certificate(_)) => "certificate".into(),
        Err(HttpError::NoAnswer(_)) => "no_answer".into(),
    };
    metrics::histogram!("pixgw_psp_http_duration_seconds", "provider" => provider.to_owned(), "outcome" => outcome)
        .record(elapsed.as_secs_f64());
}

/// A PSP answer as the router's health sees it: `unavailable` or not, and whether it opened
/// the credential's circuit. By provider only: credential ids stay out of `/metrics`.
pub fn psp_health(provider: &str, unavailable: bool, circuit_opened: bool) {
    if unavailable {
        metrics::counter!("pixgw_psp_unavailable_total", "provider" => provider.to_owned())
            .increment(1);
    }
    if circuit_opened {
        metrics::counter!("pixgw_psp_circuits_opened_total", "provider" => provider.to_owned())
            .increment(1);
    }
}

/// A supervised background task (see [`crate::supervisor`]) is being started again.
pub fn task_restart(task: &'static str, reason: &'static str) {
    metrics::counter!("pixgw_background_task_restarts_total", "task" => task, "reason" => reason)
        .increment(1);
}

/// A webhook attempt ended: `delivered`, `pending` (to be retried) or `failed` (given up).
pub fn webhook_attempt(outcome: &'static str) {
    metrics::counter!("pixgw_webhook_attempts_total", "outcome" => outcome).increment(1);
}

/// A charge reached `status` (created ones reach `pending`).
pub fn charge_status(provider: &str, status: &'static str) {
    metrics::counter!("pixgw_charges_total", "provider" => provider.to_owned(), "status" => status)
        .increment(1);
}

/// A statement ran for a batch of `write` (`store/batching.rs`).
pub fn batched_statement(write: &'static str) {
    metrics::counter!("pixgw_batched_statements_total", "write" => write).increment(1);
}

/// A batch's statement wrote `writes` writes of `write`.
pub fn batched_writes(write: &'static str, writes: usize) {
    metrics::counter!("pixgw_batched_writes_total", "write" => write).increment(writes as u64);
}
