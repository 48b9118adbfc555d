//! psp-sim: local simulators of the PSP wire protocols pixgw talks to.
//!
//! [`Sim::start`] generates a server CA, starts one HTTPS listener per PSP endpoint (each with
//! its own rustls config and, for mTLS PSPs, its own client CA), and a plain-HTTP control API
//! (`/_sim/...`, see `control`) through which tests pay or expire charges, inject faults and
//! inspect what each PSP received.
//!
//! Layout: `central_bank` holds the central-bank Pix API once, parameterised; `providers/`
//! holds each PSP's parameters (`providers/efi.rs`); `server` the HTTPS listeners; `tls` the
//! certificates; `faults` the fault set; `delivery` outbound webhooks; `brcode` and `qr` the
//! Pix copy-paste code and its PNG.

pub mod brcode;
mod central_bank;
mod control;
mod delivery;
pub mod faults;
mod providers;
pub mod qr;
mod server;
pub mod tls;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::faults::Faults;

/// How to start the simulator.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Address of the plain-HTTP control API; tests use `127.0.0.1:0`.
    pub control_addr: SocketAddr,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            control_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        }
    }
}

/// Everything a client needs to talk to the simulator; the JSON of `GET /_sim/info`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimInfo {
    pub control_url: String,
    pub ca_pem: String,
    pub providers: BTreeMap<String, ProviderInfo>,
    /// Every provider's [`ProviderInfo::endpoint_overrides`], ready for the gateway's
    /// `--endpoint-overrides` (comma-joined).
    pub endpoint_overrides: Vec<String>,
}

/// One simulated PSP.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProviderInfo {
    pub id: String,
    /// endpoint name -> base URL without trailing slash, e.g. "api" -> "https://localhost:40123"
    pub endpoints: BTreeMap<String, String>,
    /// credential field name -> value for a ready-made TEST account at this PSP
    pub credentials: BTreeMap<String, String>,
    /// The production environment's endpoints, for PSPs simulated with both environments
    /// apart (the central-bank PSPs); empty when one set of hosts serves both.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub live_endpoints: BTreeMap<String, String>,
    /// A ready-made account of the production environment, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_credentials: Option<BTreeMap<String, String>>,
    /// Other keys of the same test account, by name, each a complete credential: Stripe's
    /// restricted key (`restricted`), an Asaas key in the older format (`legacy`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_credentials: BTreeMap<String, BTreeMap<String, String>>,
}

impl ProviderInfo {
    /// The gateway's endpoint overrides (`provider.endpoint[.test|.live]=url`) that send each
    /// environment to its simulated hosts.
    pub fn endpoint_overrides(&self) -> Vec<String> {
        let id = &self.id;
        if self.live_endpoints.is_empty() {
            return self
                .endpoints
                .iter()
                .map(|(e, url)| format!("{id}.{e}={url}"))
                .collect();
        }
        let test = self
            .endpoints
            .iter()
            .map(|(e, url)| format!("{id}.{e}.test={url}"));
        let live = self
            .live_endpoints
            .iter()
            .map(|(e, url)| format!("{id}.{e}.live={url}"));
        test.chain(live).collect()
    }
}

/// A running simulator. Dropping it (or [`Sim::shutdown`]) stops every listener.
pub struct Sim {
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    control_task: Option<JoinHandle<()>>,
}

impl Sim {
    pub async fn start(opts: SimOptions) -> anyhow::Result<Sim> {
        // The control address first: a caller that picked a free port for it released it a
        // moment ago, and the PSPs' listeners below take ports of the kernel's choosing, which
        // could be that one.
        let listener = tokio::net::TcpListener::bind(opts.control_addr).await?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let server_ca = tls::Ca::generate("psp-sim server CA")?;
        let webhook_client = delivery::client();

        let mut providers = BTreeMap::new();
        for (id, build) in providers::ALL {
            let common = Arc::new(Common::new(id)?);
            let psp = build(common.clone())?;
            let mut endpoints = BTreeMap::new();
            let mut urls = BTreeMap::new();
            let mut live_urls = BTreeMap::new();
            for spec in psp.clone().endpoints() {
                let router = spec.router.layer(axum::middleware::from_fn_with_state(
                    (common.clone(), psp.clone()),
                    psp_middleware,
                ));
                let identity = server_ca.issue_server()?;
                let client_ca = spec.mtls.then_some(&common.client_ca);
                let tls = tls::server_config(&identity, &server_ca, client_ca)?;
                let endpoint = server::Endpoint::start(tls, router, shutdown_rx.clone()).await?;
                let url = format!("https://localhost:{}", endpoint.port());
                let key = if spec.live {
                    live_urls.insert(spec.name.to_string(), url);
                    format!("{}.live", spec.name)
                } else {
                    urls.insert(spec.name.to_string(), url);
                    spec.name.to_string()
                };
                endpoints.insert(key, endpoint);
            }
            let info = ProviderInfo {
                id: id.to_string(),
                endpoints: urls,
                credentials: psp.credentials(),
                live_endpoints: live_urls,
                live_credentials: psp.live_credentials(),
                other_credentials: psp.other_credentials(),
            };
            providers.insert(
                id.to_string(),
                Arc::new(Provider {
                    common,
                    psp,
                    endpoints,
                    info,
                }),
            );
        }

        let control_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            server_ca,
            control_url,
            providers,
            webhook_client,
        });
        let app = control::router(shared.clone());
        let mut stop = shutdown_rx.clone();
        let control_task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            });
            if let Err(err) = serve.await {
                tracing::error!(%err, "control API stopped");
            }
        });
        Ok(Sim {
            shared,
            shutdown,
            control_task: Some(control_task),
        })
    }

    /// `http://127.0.0.1:<port>` of the control API.
    pub fn control_url(&self) -> String {
        self.shared.control_url.clone()
    }

    /// PEM of the CA that signed every PSP server certificate.
    pub fn ca_pem(&self) -> String {
        self.shared.server_ca.cert_pem().to_string()
    }

    pub fn provider(&self, id: &str) -> Option<ProviderInfo> {
        self.shared.providers.get(id).map(|p| p.info.clone())
    }

    pub fn info(&self) -> SimInfo {
        self.shared.info()
    }

    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.control_task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// State shared by the control API and the PSP listeners.
pub(crate) struct Shared {
    server_ca: tls::Ca,
    control_url: String,
    providers: BTreeMap<String, Arc<Provider>>,
    webhook_client: reqwest::Client,
}

impl Shared {
    fn info(&self) -> SimInfo {
        SimInfo {
            control_url: self.control_url.clone(),
            ca_pem: self.server_ca.cert_pem().to_string(),
            providers: self
                .providers
                .iter()
                .map(|(id, p)| (id.clone(), p.info.clone()))
                .collect(),
            endpoint_overrides: self
                .providers
                .values()
                .flat_map(|p| p.info.endpoint_overrides())
                .collect(),
        }
    }
}

pub(crate) struct Provider {
    common: Arc<Common>,
    psp: Arc<dyn Psp>,
    endpoints: BTreeMap<String, Arc<server::Endpoint>>,
    info: ProviderInfo,
}

impl Provider {
    /// Opens or closes every listener of this provider to match its `refuse_connections`.
    async fn apply_listening(&self) -> anyhow::Result<()> {
        let refuse = self.common.faults.lock().refuse_connections;
        for endpoint in self.endpoints.values() {
            endpoint.set_refusing(refuse).await?;
        }
        Ok(())
    }
}

/// What every PSP has regardless of protocol: faults, settings and the records tests read.
pub(crate) struct Common {
    pub id: &'static str,
    /// Issues this PSP's client certificates (mTLS PSPs only use it).
    pub client_ca: tls::Ca,
    pub faults: Mutex<Faults>,
    pub config: Mutex<Config>,
    pub requests: Mutex<Vec<RequestRecord>>,
    pub deliveries: Mutex<Vec<DeliveryRecord>>,
    next_id: AtomicU64,
    /// Wakes held requests whenever the faults change (see `faults::Hold`).
    pub hold_changed: tokio::sync::Notify,
}

impl Common {
    fn new(id: &'static str) -> anyhow::Result<Common> {
        Ok(Common {
            id,
            client_ca: tls::Ca::generate(&format!("psp-sim {id} client CA"))?,
            faults: Mutex::default(),
            config: Mutex::default(),
            requests: Mutex::default(),
            deliveries: Mutex::default(),
            next_id: AtomicU64::new(1),
            hold_changed: tokio::sync::Notify::new(),
        })
    }

    /// An account switch set through `/_sim/config {"flags": {…}}`; off unless set.
    pub fn flag(&self, name: &str) -> bool {
        self.config.lock().flags.get(name).copied().unwrap_or(false)
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn reset(&self) {
        *self.faults.lock() = Faults::default();
        self.hold_changed.notify_waiters();
        *self.config.lock() = Config::default();
        self.requests.lock().clear();
        self.deliveries.lock().clear();
    }

    /// Notes on a logged request what happened instead of a normal answer.
    pub fn mark_request(&self, id: RequestId, outcome: &str) {
        self.with_request(id.0, |r| r.outcome = Some(outcome.to_string()));
    }

    /// Changes the logged request `id`. Searched from the newest: a request in flight is among
    /// the last few logged, and the log of a load run holds tens of thousands.
    fn with_request(&self, id: u64, change: impl FnOnce(&mut RequestRecord)) {
        if let Some(r) = self.requests.lock().iter_mut().rev().find(|r| r.id == id) {
            change(r);
        }
    }
}

/// Per-provider settings changed through `POST /_sim/config`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Config {
    pub token_ttl_secs: u64,
    /// Where the PSP sends notifications when the merchant configures that in the PSP's
    /// dashboard rather than through its API (OpenPix, Stripe…); `None` until set.
    pub webhook_url: Option<String>,
    /// Headers sent with every notification to `webhook_url`, as the merchant configured them
    /// at the PSP (Asaas's `asaas-access-token`); PSPs whose notifications carry no custom
    /// headers (iugu) ignore them.
    pub webhook_headers: BTreeMap<String, String>,
    /// Account switches of one PSP's test account (iugu: `pix_disabled`, `pix_missing`).
    pub flags: BTreeMap<String, bool>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token_ttl_secs: 3600,
            webhook_url: None,
            webhook_headers: BTreeMap::new(),
            flags: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct RequestRecord {
    pub id: u64,
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// The HTTP version the request came in: `HTTP/1.1` or `HTTP/2.0` (the simulator offers
    /// both, as PSPs do).
    pub version: String,
    pub at: String,
    /// Status answered; `None` while in flight or when the connection was dropped.
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeliveryRecord {
    pub id: u64,
    pub at: String,
    pub url: String,
    pub attempt: u32,
    pub body: Value,
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Id of the request-log entry of the request being handled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestId(pub u64);

/// One listener of a PSP: its name in [`ProviderInfo::endpoints`] (or `live_endpoints`), its
/// routes, whether it demands a client certificate.
pub(crate) struct EndpointSpec {
    pub name: &'static str,
    pub router: Router,
    pub mtls: bool,
    /// Serves the PSP's production environment (published in `live_endpoints`).
    pub live: bool,
}

/// A charge selected by the control API.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ChargeSelector {
    pub reference: Option<String>,
    pub psp_id: Option<String>,
}

/// A simulated payment: the charge afterwards and the notifications the PSP sends for it.
pub(crate) struct Payment {
    pub charge: Value,
    pub notifications: Vec<Notification>,
}

/// An outbound webhook call.
#[derive(Clone, Debug)]
pub(crate) struct Notification {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// Errors of the control API.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ControlError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Internal(String),
}

/// The protocol behaviour of one PSP.
pub(crate) trait Psp: Send + Sync + 'static {
    fn credentials(&self) -> BTreeMap<String, String>;
    /// The production environment's account, for PSPs simulated with both environments apart.
    fn live_credentials(&self) -> Option<BTreeMap<String, String>> {
        None
    }
    /// Other keys of the test account, by name (see [`ProviderInfo::other_credentials`]).
    fn other_credentials(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        BTreeMap::new()
    }
    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec>;
    /// The PSP's generic error answer, used by the `fail_next` fault when no body is given.
    fn generic_error(&self, status: http::StatusCode) -> Response;
    /// Charges held, in creation order, each `{reference, psp_id, amount, status, expired, psp}`.
    fn charges(&self) -> Vec<Value>;
    fn webhooks(&self) -> Vec<Value>;
    /// Customer records, at PSPs that keep them (Asaas); `GET /_sim/customers`.
    fn customers(&self) -> Vec<Value> {
        Vec::new()
    }
    fn pay(
        &self,
        charge: &ChargeSelector,
        amount: Option<u64>,
        info_pagador: Option<String>,
    ) -> Result<Payment, ControlError>;
    fn expire(&self, charge: &ChargeSelector) -> Result<Value, ControlError>;
    /// Forgets charges, webhooks and tokens.
    fn reset(&self);
}

/// In front of every PSP router: request log, latency and forced failures.
async fn psp_middleware(
    State((common, psp)): State<(Arc<Common>, Arc<dyn Psp>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let id = common.next_id();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    common.requests.lock().push(RequestRecord {
        id,
        method: req.method().to_string(),
        path: path.clone(),
        version: format!("{:?}", req.version()),
        at: now_rfc3339(),
        status: None,
        outcome: None,
    });
    req.extensions_mut().insert(RequestId(id));

    let (latency, failure) = {
        let mut faults = common.faults.lock();
        (
            faults.latency_ms,
            faults.take_failure(req.method().as_str(), req.uri().path()),
        )
    };
    if latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
    }
    let (method, path_only) = (req.method().to_string(), req.uri().path().to_string());
    if common.faults.lock().holds(&method, &path_only) {
        common.mark_request(RequestId(id), "held");
        loop {
            // Registered before the check, so a release between the two is not missed.
            let changed = common.hold_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !common.faults.lock().holds(&method, &path_only) {
                break;
            }
            changed.await;
        }
    }
    let response = match failure {
        Some(fail) => {
            let status = http::StatusCode::from_u16(fail.status)
                .unwrap_or(http::StatusCode::SERVICE_UNAVAILABLE);
            common.mark_request(RequestId(id), "fail_next");
            match fail.body {
                Some(body) => (status, body).into_response(),
                None => psp.generic_error(status),
            }
        }
        None => next.run(req).await,
    };
    let status = response.status().as_u16();
    common.with_request(id, |r| r.status = Some(status));
    response
}

/// Now, UTC, RFC 3339 with milliseconds (`2026-01-02T03:04:05.678Z`).
pub(crate) fn now_rfc3339() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

pub(crate) fn rfc3339(t: time::OffsetDateTime) -> String {
    let t = t
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(t.millisecond() as u32 * 1_000_000)
        .unwrap_or(t);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `n` random ASCII letters and digits.
pub(crate) fn random_alnum(n: usize) -> String {
    use rand::Rng;
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// `n` random lowercase hex digits.
pub(crate) fn random_hex(n: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..n)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}
