//! The control API (plain HTTP, JSON) through which tests drive the simulator: pay or expire a
//! charge, inject faults, change settings, issue extra client certificates, and read what each
//! PSP holds and received. Documented with examples in the crate's README.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::faults::FaultsPatch;
use crate::{ChargeSelector, ControlError, Provider, Shared, delivery};

impl IntoResponse for ControlError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            ControlError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ControlError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ControlError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ControlError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        (
            status,
            Json(json!({ "error": { "code": code, "message": self.to_string() } })),
        )
            .into_response()
    }
}

type Ctl = State<Arc<Shared>>;
type Result<T> = std::result::Result<T, ControlError>;

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/_sim/info", get(info))
        .route("/_sim/pay", post(pay))
        .route("/_sim/expire", post(expire))
        .route(
            "/_sim/faults",
            post(set_faults).delete(clear_faults).get(get_faults),
        )
        .route("/_sim/config", post(set_config))
        .route("/_sim/reset", post(reset))
        .route("/_sim/certificates", post(issue_certificate))
        .route("/_sim/charges", get(charges))
        .route("/_sim/webhooks", get(webhooks))
        .route("/_sim/customers", get(customers))
        .route("/_sim/requests", get(requests))
        .route("/_sim/deliveries", get(deliveries))
        .with_state(shared)
}

fn provider(shared: &Shared, id: &str) -> Result<Arc<Provider>> {
    shared
        .providers
        .get(id)
        .cloned()
        .ok_or_else(|| ControlError::NotFound(format!("unknown provider {id:?}")))
}

/// `?provider=<id>`
#[derive(Deserialize)]
struct ProviderQuery {
    provider: String,
}

/// Parses a JSON body ourselves so that a bad body gets our error shape, not axum's text.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T> {
    serde_json::from_slice(body)
        .map_err(|e| ControlError::BadRequest(format!("bad JSON body: {e}")))
}

async fn info(State(shared): Ctl) -> Json<crate::SimInfo> {
    Json(shared.info())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PayRequest {
    provider: String,
    reference: Option<String>,
    psp_id: Option<String>,
    /// Centavos actually paid, when not the charge's amount.
    amount: Option<u64>,
    info_pagador: Option<String>,
}

async fn pay(State(shared): Ctl, body: axum::body::Bytes) -> Result<Json<Value>> {
    let req: PayRequest = parse(&body)?;
    let p = provider(&shared, &req.provider)?;
    let sel = ChargeSelector {
        reference: req.reference,
        psp_id: req.psp_id,
    };
    let payment = p.psp.pay(&sel, req.amount, req.info_pagador)?;
    let (skip, duplicate) = {
        let f = p.common.faults.lock();
        (f.skip_webhooks, f.duplicate_webhooks)
    };
    let webhook = if payment.notifications.is_empty() {
        json!({ "outcome": "not_registered", "deliveries": [] })
    } else if skip {
        json!({ "outcome": "skipped", "deliveries": [] })
    } else {
        let mut outcomes = Vec::new();
        for n in &payment.notifications {
            outcomes.push(delivery::deliver(&shared.webhook_client, &p.common, n).await);
            if duplicate {
                outcomes.push(delivery::deliver(&shared.webhook_client, &p.common, n).await);
            }
        }
        let all_ok = outcomes.iter().all(|o| o.outcome == "delivered");
        let first = outcomes.first();
        json!({
            "outcome": if all_ok { "delivered" } else { "failed" },
            "status": first.and_then(|o| o.status),
            "error": first.and_then(|o| o.error.clone()),
            "deliveries": outcomes,
        })
    };
    Ok(Json(
        json!({ "charge": payment.charge, "webhook": webhook }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpireRequest {
    provider: String,
    reference: Option<String>,
    psp_id: Option<String>,
}

async fn expire(State(shared): Ctl, body: axum::body::Bytes) -> Result<Json<Value>> {
    let req: ExpireRequest = parse(&body)?;
    let p = provider(&shared, &req.provider)?;
    let charge = p.psp.expire(&ChargeSelector {
        reference: req.reference,
        psp_id: req.psp_id,
    })?;
    Ok(Json(json!({ "charge": charge })))
}

async fn set_faults(State(shared): Ctl, body: axum::body::Bytes) -> Result<Json<Value>> {
    let patch: FaultsPatch = parse(&body)?;
    let p = provider(&shared, &patch.provider)?;
    let faults = {
        let mut f = p.common.faults.lock();
        f.merge(patch);
        f.clone()
    };
    p.common.hold_changed.notify_waiters();
    p.apply_listening()
        .await
        .map_err(|e| ControlError::Internal(format!("listener: {e:#}")))?;
    Ok(Json(json!(faults)))
}

async fn clear_faults(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    let p = provider(&shared, &q.provider)?;
    *p.common.faults.lock() = Default::default();
    p.common.hold_changed.notify_waiters();
    p.apply_listening()
        .await
        .map_err(|e| ControlError::Internal(format!("listener: {e:#}")))?;
    Ok(Json(json!(*p.common.faults.lock())))
}

async fn get_faults(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    let p = provider(&shared, &q.provider)?;
    Ok(Json(json!(*p.common.faults.lock())))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigRequest {
    provider: String,
    token_ttl_secs: Option<u64>,
    /// The dashboard-configured notification URL; `""` clears it.
    webhook_url: Option<String>,
    /// Headers of every notification, replacing the previous set; `{}` clears them.
    webhook_headers: Option<std::collections::BTreeMap<String, String>>,
    /// Account switches, merged into the current ones.
    flags: Option<std::collections::BTreeMap<String, bool>>,
}

async fn set_config(State(shared): Ctl, body: axum::body::Bytes) -> Result<Json<Value>> {
    let req: ConfigRequest = parse(&body)?;
    let p = provider(&shared, &req.provider)?;
    let mut config = p.common.config.lock();
    if let Some(ttl) = req.token_ttl_secs {
        config.token_ttl_secs = ttl;
    }
    if let Some(url) = req.webhook_url {
        config.webhook_url = Some(url).filter(|u| !u.is_empty());
    }
    if let Some(headers) = req.webhook_headers {
        config.webhook_headers = headers;
    }
    if let Some(flags) = req.flags {
        config.flags.extend(flags);
    }
    Ok(Json(json!(*config)))
}

async fn reset(State(shared): Ctl) -> Result<Json<Value>> {
    for p in shared.providers.values() {
        p.common.reset();
        p.psp.reset();
        p.apply_listening()
            .await
            .map_err(|e| ControlError::Internal(format!("listener: {e:#}")))?;
    }
    Ok(Json(json!({ "reset": true })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CertificateRequest {
    provider: String,
    /// Subject CN of the new certificate.
    cn: String,
    /// Issue from a fresh CA the PSP does not trust instead of the PSP's client CA.
    #[serde(default)]
    foreign_ca: bool,
}

/// Issues an extra client certificate (for tests of a wrong CN or an untrusted CA).
async fn issue_certificate(State(shared): Ctl, body: axum::body::Bytes) -> Result<Json<Value>> {
    let req: CertificateRequest = parse(&body)?;
    let p = provider(&shared, &req.provider)?;
    let internal = |e: anyhow::Error| ControlError::Internal(format!("{e:#}"));
    let identity = if req.foreign_ca {
        crate::tls::Ca::generate("psp-sim foreign CA").and_then(|ca| ca.issue_client(&req.cn))
    } else {
        p.common.client_ca.issue_client(&req.cn)
    }
    .map_err(internal)?;
    // `certificate` as Efí's combined PEM; the two blocks apart for the `.crt` + `.key` PSPs.
    Ok(Json(json!({
        "certificate": identity.combined_pem(),
        "certificate_pem": identity.cert_pem,
        "private_key_pem": identity.key_pem,
    })))
}

async fn charges(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    Ok(Json(json!(provider(&shared, &q.provider)?.psp.charges())))
}

async fn webhooks(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    Ok(Json(json!(provider(&shared, &q.provider)?.psp.webhooks())))
}

async fn customers(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    Ok(Json(json!(provider(&shared, &q.provider)?.psp.customers())))
}

async fn requests(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    Ok(Json(json!(
        *provider(&shared, &q.provider)?.common.requests.lock()
    )))
}

async fn deliveries(State(shared): Ctl, Query(q): Query<ProviderQuery>) -> Result<Json<Value>> {
    Ok(Json(json!(
        *provider(&shared, &q.provider)?.common.deliveries.lock()
    )))
}
