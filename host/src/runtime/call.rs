//! One adapter call: a fresh store with its limits, the call's scope (egress policy, client
//! identity, cache scope, log tags), and the mapping of traps to [`PluginFault`]s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, Shared};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::types::{
    CallContext, Environment, FieldKind, FieldValue, Manifest, ResolvedEndpoint,
};
use super::bindings::{self, http, types};
use super::cache::Cache;
use super::egress::EgressPolicy;
use super::outbound::{ClientIdentity, HttpClients};
use super::{crypto, engine::AdapterEngine};

/// What the host lends every call: pooled HTTP clients and the cache.
pub struct Services {
    pub http: HttpClients,
    pub cache: Cache,
}

/// A merchant's credential at one PSP, as the vault hands it over: every field by name, private
/// keys included. [`super::LoadedAdapter::prepare`] turns it into what one call needs.
#[derive(Clone)]
pub struct Credential {
    /// Stable id of the credential; scopes the adapter's cache.
    pub id: String,
    pub environment: Environment,
    pub fields: std::collections::BTreeMap<String, String>,
    pub webhook_url: Option<String>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("id", &self.id)
            .field("environment", &self.environment)
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// A credential bound to one adapter version: the context the adapter sees, the client identity
/// the host presents for it, and the origins it may reach. Build once, use for many calls.
pub struct PreparedCredential {
    pub(super) context: CallContext,
    pub(super) identity: Option<Arc<Result<ClientIdentity, String>>>,
    pub(super) policy: Arc<EgressPolicy>,
    pub(super) cache_scope: Arc<str>,
}

impl PreparedCredential {
    pub(super) fn new(
        manifest: &Manifest,
        endpoints: Vec<ResolvedEndpoint>,
        credential: &Credential,
    ) -> Self {
        let mut fields = Vec::new();
        let (mut identity_pem, mut cert_pem, mut key_pem) = (None, None, None);
        for spec in &manifest.credential_fields {
            let Some(value) = credential.fields.get(&spec.name) else {
                continue;
            };
            match spec.kind {
                FieldKind::Text | FieldKind::Secret => fields.push(FieldValue {
                    name: spec.name.clone(),
                    value: value.clone(),
                }),
                FieldKind::ClientCertificate => {
                    fields.push(FieldValue {
                        name: spec.name.clone(),
                        value: value.clone(),
                    });
                    cert_pem = Some(value.as_str());
                }
                FieldKind::ClientPrivateKey => key_pem = Some(value.as_str()),
                FieldKind::ClientIdentity => identity_pem = Some(value.clone()),
            }
        }
        let identity_pem = identity_pem.or_else(|| match (cert_pem, key_pem) {
            (Some(cert), Some(key)) => Some(format!("{cert}\n{key}")),
            (Some(cert), None) => Some(cert.to_owned()),
            _ => None,
        });
        let identity = identity_pem.map(|pem| Arc::new(ClientIdentity::from_pem(&pem)));
        let policy = Arc::new(EgressPolicy::from_endpoints(
            endpoints.iter().map(|e| e.url.as_str()),
        ));
        PreparedCredential {
            context: CallContext {
                environment: credential.environment,
                request_id: String::new(),
                fields,
                endpoints,
                webhook_url: credential.webhook_url.clone(),
            },
            identity,
            policy,
            cache_scope: format!("{}/{}", manifest.id, credential.id).into(),
        }
    }

    pub(super) fn context(&self, request_id: &str) -> CallContext {
        CallContext {
            request_id: request_id.to_owned(),
            ..self.context.clone()
        }
    }
}

/// Why a call produced no answer from the adapter's own logic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginFault {
    #[error("the adapter did not finish within {0:?}")]
    Deadline(Duration),
    #[error("the adapter exceeded its memory limit of {0} bytes")]
    MemoryLimit(usize),
    #[error("the adapter panicked")]
    Panic,
    #[error("the adapter trapped: {0}")]
    Trap(String),
    #[error("the adapter could not be instantiated: {0}")]
    Instantiate(String),
}

/// A failure of the host's own `http.send` during a call: what the host saw, whatever the
/// adapter made of it. The API's hints rely on it rather than on an adapter's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    Denied,
    NotSent,
    Certificate,
    NoAnswer,
}

/// What an adapter call's requests to the PSP wait for, the first of them before it goes out
/// ([`super::Adapter::create_charge_after`]): the adapter runs meanwhile (it is instantiated,
/// finds its token, builds and signs its request). An `Err` keeps every request of the call
/// unsent, the adapter hearing that reason as a request not sent.
pub type SendGate = Shared<BoxFuture<'static, Result<(), String>>>;

/// Store data of one call.
pub struct CallState {
    /// The last transport failure of this call, if any.
    transport_failure: Option<TransportFailure>,
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
    services: Arc<Services>,
    policy: Arc<EgressPolicy>,
    identity: Option<Arc<Result<ClientIdentity, String>>>,
    cache_scope: Arc<str>,
    provider: Arc<str>,
    request_id: String,
    send_gate: Option<SendGate>,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Counts linear memory across all of an instance's memories and refuses growth past the limit,
/// remembering that it did so: a failed allocation then aborts the guest, and the flag tells that
/// trap apart from an ordinary panic.
struct MemoryLimiter {
    limit: usize,
    used: usize,
    hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used - current.min(self.used) + desired;
        if total > self.limit {
            self.hit = true;
            return Ok(false);
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// Whom one call is for: the adapter's provider, the credential it acts with (none to read a
/// manifest), the request it serves, and what its requests wait for.
pub(super) struct Scope<'a> {
    pub provider: &'a Arc<str>,
    pub credential: Option<&'a PreparedCredential>,
    pub request_id: &'a str,
    pub send_gate: Option<SendGate>,
}

/// Runs `f` against a fresh instance of `pre` with the call's limits and scope.
pub(super) async fn run<R>(
    engine: &AdapterEngine,
    services: &Arc<Services>,
    pre: &bindings::AdapterPre<CallState>,
    scope: Scope<'_>,
    f: impl AsyncFnOnce(&bindings::Adapter, &mut Store<CallState>) -> wasmtime::Result<R>,
) -> (Result<R, PluginFault>, Option<TransportFailure>) {
    let Scope {
        provider,
        credential,
        request_id,
        send_gate,
    } = scope;
    let limits = &engine.limits;
    let state = CallState {
        transport_failure: None,
        wasi: WasiCtx::builder()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter {
            limit: limits.memory_bytes,
            used: 0,
            hit: false,
        },
        services: services.clone(),
        policy: credential.map(|c| c.policy.clone()).unwrap_or_default(),
        identity: credential.and_then(|c| c.identity.clone()),
        cache_scope: credential
            .map(|c| c.cache_scope.clone())
            .unwrap_or_else(|| provider.clone()),
        provider: provider.clone(),
        request_id: request_id.to_owned(),
        send_gate,
    };
    // The engine of the tier `pre` was compiled by.
    let mut store = Store::new(pre.instance_pre().engine(), state);
    store.limiter(|s| &mut s.limiter);
    let deadline = Instant::now() + limits.call_deadline;
    store.set_epoch_deadline(1);
    // Yield to tokio at every tick so a spinning adapter cannot hog a worker, and interrupt it
    // once its wall-clock deadline has passed.
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(1)
        })
    });

    let call = async {
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| (e, true))?;
        f(&instance, &mut store).await.map_err(|e| (e, false))
    };
    // The epoch only interrupts running wasm; a call parked in a host import (a slow PSP) is
    // bounded by this timeout, which drops the fiber with the store.
    let result = match tokio::time::timeout(limits.call_deadline + EPOCH_SLACK, call).await {
        Err(_) => Err(PluginFault::Deadline(limits.call_deadline)),
        Ok(Ok(value)) => Ok(value),
        Ok(Err((error, instantiating))) => Err(fault_of(
            &error,
            store.data().limiter.hit,
            limits,
            instantiating,
        )),
    };
    (result, store.data().transport_failure)
}

const EPOCH_SLACK: Duration = Duration::from_millis(250);

fn fault_of(
    error: &wasmtime::Error,
    memory_hit: bool,
    limits: &super::Limits,
    instantiating: bool,
) -> PluginFault {
    if memory_hit {
        return PluginFault::MemoryLimit(limits.memory_bytes);
    }
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => PluginFault::Deadline(limits.call_deadline),
        Some(wasmtime::Trap::UnreachableCodeReached) => PluginFault::Panic,
        Some(trap) => PluginFault::Trap(trap.to_string()),
        None if instantiating => PluginFault::Instantiate(format!("{error:#}")),
        None => PluginFault::Trap(format!("{error:#}")),
    }
}

impl http::Host for CallState {
    async fn send(&mut self, request: http::Request) -> Result<http::Response, http::HttpError> {
        if let Some(gate) = &self.send_gate
            && let Err(why) = gate.clone().await
        {
            self.transport_failure = Some(TransportFailure::NotSent);
            return Err(http::HttpError::NotSent(why));
        }
        let started = Instant::now();
        let (method, url) = (request.method, request.url.clone());
        let result = self
            .services
            .http
            .send(&self.policy, self.identity.as_deref(), request)
            .await;
        let outcome = match &result {
            Ok(r) => r.status.to_string(),
            Err(e) => format!("{e:?}"),
        };
        if let Err(e) = &result {
            self.transport_failure = Some(match e {
                http::HttpError::Denied(_) => TransportFailure::Denied,
                http::HttpError::NotSent(_) => TransportFailure::NotSent,
                http::HttpError::Certificate(_) => TransportFailure::Certificate,
                http::HttpError::NoAnswer(_) => TransportFailure::NoAnswer,
            });
        }
        tracing::debug!(target: "adapter", provider = %self.provider, request_id = %self.request_id,
            method = ?method, url = %url, outcome = %outcome, elapsed_ms = started.elapsed().as_millis() as u64, "psp call");
        crate::metrics::psp_http(&self.provider, &result, started.elapsed());
        result
    }
}

impl bindings::pixgw::psp::cache::Host for CallState {
    async fn get(&mut self, key: String) -> Option<String> {
        self.services.cache.get(&self.cache_scope, &key).await
    }
    async fn set(&mut self, key: String, value: String, ttl_seconds: u32) {
        self.services
            .cache
            .set(
                &self.cache_scope,
                key,
                value,
                Duration::from_secs(ttl_seconds.into()),
            )
            .await
    }
    async fn delete(&mut self, key: String) {
        self.services.cache.delete(&self.cache_scope, &key).await
    }
}

impl bindings::pixgw::psp::crypto::Host for CallState {
    fn hmac_sha256(&mut self, key: Vec<u8>, message: Vec<u8>) -> Vec<u8> {
        crypto::hmac_sha256(&key, &message)
    }
    fn sha256(&mut self, data: Vec<u8>) -> Vec<u8> {
        crypto::sha256(&data)
    }
    fn verify_rsa_sha256(
        &mut self,
        pem: String,
        message: Vec<u8>,
        signature: Vec<u8>,
    ) -> Result<bool, String> {
        crypto::verify_rsa_sha256(&pem, &message, &signature)
    }
    fn verify_ecdsa_p256_sha256(
        &mut self,
        pem: String,
        message: Vec<u8>,
        signature: Vec<u8>,
    ) -> Result<bool, String> {
        crypto::verify_ecdsa_p256_sha256(&pem, &message, &signature)
    }
    fn constant_time_eq(&mut self, a: Vec<u8>, b: Vec<u8>) -> bool {
        crypto::constant_time_eq(&a, &b)
    }
}

impl bindings::pixgw::psp::log::Host for CallState {
    fn log(
        &mut self,
        level: bindings::pixgw::psp::log::Level,
        message: String,
        fields: Vec<(String, String)>,
    ) {
        use bindings::pixgw::psp::log::Level;
        let message = log_limits::message(message);
        let fields = log_limits::fields(&fields);
        let (p, r) = (&*self.provider, &self.request_id);
        match level {
            Level::Trace => {
                tracing::trace!(target: "adapter", provider = p, request_id = r, %fields, "{message}")
            }
            Level::Debug => {
                tracing::debug!(target: "adapter", provider = p, request_id = r, %fields, "{message}")
            }
            Level::Info => {
                tracing::info!(target: "adapter", provider = p, request_id = r, %fields, "{message}")
            }
            Level::Warn => {
                tracing::warn!(target: "adapter", provider = p, request_id = r, %fields, "{message}")
            }
            Level::Error => {
                tracing::error!(target: "adapter", provider = p, request_id = r, %fields, "{message}")
            }
        }
    }
}

impl types::Host for CallState {}

/// What an adapter's log line may hold: a buggy or hostile adapter must not fill the disk or
/// the log pipeline with one call. Everything past a limit is cut and marked with `…`.
mod log_limits {
    /// Bytes of the message.
    pub const MESSAGE: usize = 4096;
    /// Fields kept; the rest are counted.
    pub const FIELDS: usize = 32;
    /// Bytes of a field's name and of its value.
    pub const KEY: usize = 64;
    pub const VALUE: usize = 512;

    fn cut(text: &str, max: usize) -> String {
        if text.len() <= max {
            return text.to_owned();
        }
        format!("{}…", &text[..text.floor_char_boundary(max)])
    }

    pub fn message(message: String) -> String {
        if message.len() <= MESSAGE {
            message
        } else {
            cut(&message, MESSAGE)
        }
    }

    /// `key="value"` pairs, at most [`FIELDS`] of them, each cut to its limits.
    pub fn fields(fields: &[(String, String)]) -> String {
        let mut text = fields
            .iter()
            .take(FIELDS)
            .map(|(k, v)| format!("{}={:?}", cut(k, KEY), cut(v, VALUE)))
            .collect::<Vec<_>>()
            .join(" ");
        if fields.len() > FIELDS {
            text.push_str(&format!(" (+{} fields)", fields.len() - FIELDS));
        }
        text
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn long_messages_and_fields_are_cut() {
            let long = "é".repeat(5000);
            let message = message(long);
            assert!(
                message.len() <= MESSAGE + '…'.len_utf8(),
                "{}",
                message.len()
            );
            assert!(message.ends_with('…'));
            assert_eq!(super::message("ok".into()), "ok");

            let many: Vec<(String, String)> = (0..100)
                .map(|i| (format!("k{i}{}", "K".repeat(100)), "v".repeat(10_000)))
                .collect();
            let text = fields(&many);
            assert!(
                text.ends_with(" (+68 fields)"),
                "{}",
                &text[text.len() - 20..]
            );
            let bound = FIELDS * (KEY + VALUE + 16) + 20;
            assert!(text.len() < bound, "{} >= {bound}", text.len());
            assert_eq!(fields(&[("status".into(), "201".into())]), "status=\"201\"");
        }
    }
}
