//! The plugin runtime: PSP adapters as sandboxed WebAssembly components.
//!
//! - [`engine`]: the wasmtime engines (Cranelift's optimized code; Winch's baseline code, which a
//!   hot swap serves until the optimized is ready), pooling, epochs, limits, the compile cache;
//!   [`function_cache`]: compiled functions kept for the next version of an adapter.
//! - [`registry`]: provider id → the adapter version serving now; validation of new files.
//! - [`watcher`]: hot reload of the plugin directory.
//! - [`call`]: one call — a fresh store, its scope and limits, traps mapped to [`PluginFault`].
//! - [`admission`]: how many calls run at once, per PSP and in all; the rest wait their turn.
//! - [`outbound`], [`egress`], [`cache`], [`crypto`]: the host side of the adapter's imports.
//!
//! [`Runtime`] ties them together; the rest of the host asks it for an adapter by provider id and
//! calls typed methods on it. Nothing here knows any particular PSP.

pub mod admission;
pub mod bindings;
pub mod cache;
pub mod call;
pub mod compile_cache;
pub mod crypto;
pub mod egress;
pub mod engine;
pub mod function_cache;
pub mod outbound;
pub mod registry;
pub mod watcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

pub use admission::{AdmissionConfig, Saturated};
pub use bindings::types::{
    Capabilities, Charge, ChargeRequest, ChargeStatus, CredentialField, Environment,
    EnvironmentPrefixes, Error as PspError, FieldKind, Manifest, Payer, PayerField, PaymentEvent,
    PspError as PspErrorDetail, RefusalReason, WebhookAuth, WebhookRequest,
};
pub use call::{Credential, PluginFault, PreparedCredential, SendGate, TransportFailure};
pub use engine::{Limits, Tier};
pub use outbound::{check_certificate_pem, check_identity_pem, check_private_key_pem};
pub use registry::{AdapterStatus, LoadError};

use bindings::types::ResolvedEndpoint;
use call::{CallState, Services};
use engine::AdapterEngine;
use registry::Registry;

/// Operator settings of the runtime.
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    /// Where `<provider-id>.wasm` files live.
    pub plugin_dir: PathBuf,
    /// Where compiled artifacts are cached; `None` compiles on every load.
    pub compile_cache_dir: Option<PathBuf>,
    pub limits: Limits,
    /// CA certificates (PEM) trusted for PSP connections beyond the public web roots.
    pub trusted_ca_pem: Vec<String>,
    /// Replaces an adapter endpoint's base URL, to reach a proxy or a simulator.
    pub endpoint_overrides: Vec<EndpointOverride>,
    /// Calls per PSP, and how long a call waits for a slot.
    pub admission: AdmissionConfig,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointOverride {
    pub provider: String,
    pub endpoint: String,
    /// `None` overrides both environments.
    pub environment: Option<Environment>,
    pub url: String,
}

impl From<crate::domain::Environment> for Environment {
    fn from(environment: crate::domain::Environment) -> Self {
        match environment {
            crate::domain::Environment::Test => Environment::Test,
            crate::domain::Environment::Live => Environment::Live,
        }
    }
}

/// Why an adapter call gave no charge: the PSP's answer, or the adapter itself failing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("{provider}: {error:?}")]
    Psp {
        provider: String,
        error: PspError,
        /// What the host's HTTP client saw go wrong during the call, if anything.
        transport: Option<TransportFailure>,
    },
    #[error("adapter {provider} (sha256 {version:.12}) failed: {fault}")]
    Fault {
        provider: String,
        version: String,
        fault: PluginFault,
    },
    /// No call slot freed up in time; the PSP was not contacted.
    #[error("{provider}: {saturated}")]
    Busy {
        provider: String,
        saturated: Saturated,
    },
}

pub struct Runtime {
    engine: Arc<AdapterEngine>,
    services: Arc<Services>,
    registry: Registry,
    admission: admission::Admission,
    config: RuntimeConfig,
    /// Versions serving baseline code whose optimized code is being compiled.
    optimizing: tokio::sync::watch::Sender<usize>,
}

/// One loaded version of one adapter.
pub struct LoadedAdapter {
    pub manifest: Manifest,
    pub sha256: String,
    pub path: PathBuf,
    pub loaded_at: SystemTime,
    /// Which compiler made the code this version runs.
    pub tier: Tier,
    pre: bindings::AdapterPre<CallState>,
    id: Arc<str>,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Arc<Runtime>> {
        let engine = Arc::new(AdapterEngine::new(
            config.limits.clone(),
            config.compile_cache_dir.clone(),
        )?);
        let services = Arc::new(Services {
            http: outbound::HttpClients::new(&config.trusted_ca_pem)?,
            cache: Default::default(),
        });
        Ok(Arc::new(Runtime {
            engine,
            services,
            registry: Registry::default(),
            admission: admission::Admission::new(
                config.limits.max_concurrent_calls,
                config.admission.clone(),
            ),
            config,
            optimizing: tokio::sync::watch::Sender::new(0),
        }))
    }

    /// Makes the adapters' cache durable (the gateway's database).
    pub fn set_durable_cache(&self, durable: Arc<dyn cache::DurableCache>) {
        self.services.cache.set_durable(durable);
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The adapter serving `provider` now.
    pub fn adapter(self: &Arc<Self>, provider: &str) -> Option<Adapter> {
        Some(Adapter {
            loaded: self.registry.get(provider)?,
            runtime: self.clone(),
        })
    }

    /// The name people know `provider` by (its manifest's), or its id when no adapter serves
    /// it now.
    pub fn display_name(self: &Arc<Self>, provider: &str) -> String {
        self.adapter(provider).map_or_else(
            || provider.to_owned(),
            |a| a.manifest().display_name.clone(),
        )
    }

    pub fn providers(&self) -> Vec<String> {
        self.registry.ids()
    }

    pub fn status(&self) -> Vec<AdapterStatus> {
        self.registry.status()
    }

    /// Loads every `*.wasm` of the plugin directory; one bad file does not stop the others.
    pub async fn load_all(self: &Arc<Self>) -> Vec<Result<String, LoadError>> {
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&self.config.plugin_dir) {
            Ok(dir) => dir
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| registry::expected_id(p).is_some())
                .collect(),
            Err(e) => {
                tracing::warn!(dir = %self.config.plugin_dir.display(), error = %e, "plugin directory unreadable");
                Vec::new()
            }
        };
        files.sort();
        let mut results = Vec::new();
        for path in files {
            results.push(self.load_file(&path).await);
        }
        results
    }

    /// Loads (or reloads) one plugin file and swaps it in if it validates, running optimized
    /// code from its first call. Returns the provider id.
    pub async fn load_file(self: &Arc<Self>, path: &Path) -> Result<String, LoadError> {
        self.load_file_as(path, Tier::Optimized).await
    }

    /// What hot reload runs for a new file: [`Runtime::load_file`], except that a version whose
    /// optimized code the compile cache does not hold serves baseline code as soon as that
    /// validates, and is swapped for its optimized code once Cranelift has compiled it. A swap
    /// under load then waits for Winch's one pass, not for Cranelift sharing the cores with the
    /// load.
    pub async fn reload_file(self: &Arc<Self>, path: &Path) -> Result<String, LoadError> {
        self.load_file_as(path, Tier::Baseline).await
    }

    /// Resolves once no version is waiting for its optimized code.
    pub async fn optimized(&self) {
        let mut pending = self.optimizing.subscribe();
        let _ = pending.wait_for(|n| *n == 0).await;
    }

    async fn load_file_as(self: &Arc<Self>, path: &Path, first: Tier) -> Result<String, LoadError> {
        let expected = registry::expected_id(path).ok_or_else(|| LoadError::Invalid {
            path: path.into(),
            reason: "plugin files are named <provider-id>.wasm with a lowercase id".into(),
        })?;
        let bytes: Arc<[u8]> = read_plugin(path)?.into();
        if let Some(serving) = self.registry.get(&expected)
            && serving.sha256 == registry::sha256_hex(&bytes)
        {
            // Touched or rewritten with the same bytes: what serves is already this file.
            self.registry.clear_failure(&expected);
            return Ok(expected);
        }
        let started = std::time::Instant::now();
        let result = self
            .load_validated(path, bytes.clone(), &expected, first)
            .await;
        // How long a swap took here, apart from the watcher's latency and the first request.
        let load_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(adapter) => {
                tracing::info!(provider = %expected, sha256 = %adapter.sha256, path = %path.display(), tier = ?adapter.tier, load_ms, "adapter loaded");
                self.registry.install(adapter.clone());
                if adapter.tier == Tier::Baseline {
                    self.optimize_later(adapter.clone(), bytes);
                }
            }
            Err(error) => {
                tracing::error!(provider = %expected, error = %error, "adapter rejected; the previous version keeps serving");
                self.registry.record_failure(&expected, error);
            }
        }
        result.map(|_| expected)
    }

    /// Compiles `baseline`'s optimized code in the background and swaps it in, unless another
    /// version has replaced `baseline` meanwhile. Should Cranelift refuse what Winch took, the
    /// baseline code keeps serving and the failure is reported like a refused file's.
    fn optimize_later(self: &Arc<Self>, baseline: Arc<LoadedAdapter>, bytes: Arc<[u8]>) {
        /// Counts the compile as pending while it lives, however its task ends.
        struct Pending(Arc<Runtime>);
        impl Drop for Pending {
            fn drop(&mut self) {
                self.0.optimizing.send_modify(|n| *n -= 1);
            }
        }
        self.optimizing.send_modify(|n| *n += 1);
        let pending = Pending(self.clone());
        tokio::spawn(async move {
            let runtime = &pending.0;
            let started = std::time::Instant::now();
            let result = runtime
                .load_validated(
                    &baseline.path,
                    bytes,
                    &baseline.manifest.id,
                    Tier::Optimized,
                )
                .await;
            let compile_ms = started.elapsed().as_millis() as u64;
            match result {
                Ok(optimized) => {
                    if runtime.registry.replace(&baseline, optimized) {
                        tracing::info!(provider = %baseline.id, sha256 = %baseline.sha256, compile_ms, "adapter optimized");
                    }
                }
                Err(error) => {
                    if runtime
                        .registry
                        .get(&baseline.id)
                        .is_some_and(|serving| Arc::ptr_eq(&serving, &baseline))
                    {
                        tracing::error!(provider = %baseline.id, sha256 = %baseline.sha256, error = %error, "adapter's optimized compile failed; its baseline code keeps serving");
                        runtime.registry.record_failure(&baseline.id, &error);
                    }
                }
            }
        });
    }

    /// Compiles and validates one plugin file, as a load does, without installing it or logging:
    /// what `pixgw plugins check` runs.
    pub async fn inspect(self: &Arc<Self>, path: &Path) -> Result<Arc<LoadedAdapter>, LoadError> {
        let expected = registry::expected_id(path).ok_or_else(|| LoadError::Invalid {
            path: path.into(),
            reason: "plugin files are named <provider-id>.wasm with a lowercase id".into(),
        })?;
        self.load_validated(path, read_plugin(path)?.into(), &expected, Tier::Optimized)
            .await
    }

    /// Called when a plugin file disappears.
    pub fn unload_file(&self, path: &Path) {
        if let Some(id) = registry::expected_id(path) {
            self.registry.remove(&id);
        }
    }

    /// Compiles and validates `bytes`: with `tier` optimized, to optimized code; with baseline,
    /// to optimized code if the compile cache holds it, else to baseline code (or optimized
    /// code, should Winch refuse what Cranelift takes).
    async fn load_validated(
        self: &Arc<Self>,
        path: &Path,
        bytes: Arc<[u8]>,
        expected: &str,
        tier: Tier,
    ) -> Result<Arc<LoadedAdapter>, LoadError> {
        let invalid = |reason: String| LoadError::Invalid {
            path: path.into(),
            reason,
        };
        let engine = self.engine.clone();
        let (pre, sha256, tier) = tokio::task::spawn_blocking(move || {
            let sha256 = registry::sha256_hex(&bytes);
            let optimized = || engine.compile(&bytes).map(|c| (c, Tier::Optimized));
            let compiled = match tier {
                Tier::Optimized => optimized(),
                Tier::Baseline => match engine.cached(&bytes) {
                    Some(component) => Ok((component, Tier::Optimized)),
                    None => engine
                        .compile_baseline(&bytes)
                        .map(|c| (c, Tier::Baseline))
                        .or_else(|error| {
                            tracing::debug!(error = %error, "Winch refused the component; compiling it with Cranelift");
                            optimized()
                        }),
                },
            };
            let (component, tier) = compiled.map_err(|e| format!("{e:#}"))?;
            let compiler = engine.compiler(tier);
            // An adapter of another contract version fails one way or another: say so instead.
            let mismatch = || {
                let imports = component
                    .component_type()
                    .imports(&compiler.engine)
                    .map(|(name, _)| name.to_owned())
                    .collect::<Vec<_>>();
                registry::contract_mismatch(&imports)
            };
            let instance_pre = compiler
                .linker
                .instantiate_pre(&component)
                .map_err(|e| mismatch().unwrap_or_else(|| format!("{e:#}")))?;
            let pre = bindings::AdapterPre::new(instance_pre).map_err(|e| {
                mismatch().unwrap_or_else(|| registry::explain_missing_exports(format!("{e:#}")))
            })?;
            Ok::<_, String>((pre, sha256, tier))
        })
        .await
        .map_err(|e| invalid(format!("compilation task failed: {e}")))?
        .map_err(invalid)?;

        let id: Arc<str> = expected.into();
        let (manifest, _) = call::run(
            &self.engine,
            &self.services,
            &pre,
            call::Scope {
                provider: &id,
                credential: None,
                request_id: "load",
                send_gate: None,
            },
            async |adapter, store| adapter.call_manifest(store).await,
        )
        .await;
        let manifest = manifest.map_err(|fault| invalid(format!("manifest() failed: {fault}")))?;
        registry::check_manifest(path, expected, &manifest)?;
        Ok(Arc::new(LoadedAdapter {
            manifest,
            sha256,
            path: path.into(),
            loaded_at: SystemTime::now(),
            tier,
            pre,
            id,
        }))
    }

    /// The adapter's endpoints for `environment`, with operator overrides applied.
    fn resolve_endpoints(
        &self,
        manifest: &Manifest,
        environment: Environment,
    ) -> Vec<ResolvedEndpoint> {
        manifest
            .endpoints
            .iter()
            .map(|e| {
                let default = match environment {
                    Environment::Test => &e.test_url,
                    Environment::Live => &e.live_url,
                };
                let url = endpoint_override(
                    &self.config.endpoint_overrides,
                    &manifest.id,
                    &e.name,
                    environment,
                )
                .unwrap_or(default);
                ResolvedEndpoint {
                    name: e.name.clone(),
                    url: url.trim_end_matches('/').to_owned(),
                }
            })
            .collect()
    }
}

fn read_plugin(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.into(),
        source,
    })
}

/// The operator's URL for one adapter endpoint in `environment`: an override for this
/// environment beats one for both, whatever their order; among equals the last given wins.
fn endpoint_override<'a>(
    overrides: &'a [EndpointOverride],
    provider: &str,
    endpoint: &str,
    environment: Environment,
) -> Option<&'a str> {
    overrides
        .iter()
        .filter(|o| o.provider == provider && o.endpoint == endpoint)
        .filter(|o| o.environment.is_none_or(|e| e == environment))
        // `max_by_key` keeps the last of equal keys.
        .max_by_key(|o| o.environment.is_some())
        .map(|o| o.url.as_str())
}

/// A handle on the adapter version serving a provider at the time it was taken.
#[derive(Clone)]
pub struct Adapter {
    loaded: Arc<LoadedAdapter>,
    runtime: Arc<Runtime>,
}

impl Adapter {
    pub fn manifest(&self) -> &Manifest {
        &self.loaded.manifest
    }

    /// SHA-256 of the component serving this handle.
    pub fn version(&self) -> &str {
        &self.loaded.sha256
    }

    /// Which compiler made the code this handle runs.
    pub fn tier(&self) -> Tier {
        self.loaded.tier
    }

    /// Binds a credential to this adapter version. Cheap to keep and reuse across calls.
    pub fn prepare(&self, credential: &Credential) -> PreparedCredential {
        let endpoints = self
            .runtime
            .resolve_endpoints(&self.loaded.manifest, credential.environment);
        PreparedCredential::new(&self.loaded.manifest, endpoints, credential)
    }

    pub async fn create_charge(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        request: &ChargeRequest,
    ) -> Result<Charge, CallError> {
        self.create(cred, request_id, request, None).await
    }

    /// [`Adapter::create_charge`] whose requests wait for `gate` before going out: the
    /// adapter's own work before its first request overlaps whatever the gate waits for.
    pub async fn create_charge_after(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        request: &ChargeRequest,
        gate: SendGate,
    ) -> Result<Charge, CallError> {
        self.create(cred, request_id, request, Some(gate)).await
    }

    async fn create(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        request: &ChargeRequest,
        gate: Option<SendGate>,
    ) -> Result<Charge, CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, gate, async |a, s| {
            a.call_create_charge(s, &ctx, request).await
        })
        .await
    }

    pub async fn query_charge(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, None, async |a, s| {
            a.call_query_charge(s, &ctx, reference, psp_id).await
        })
        .await
    }

    pub async fn cancel_charge(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, None, async |a, s| {
            a.call_cancel_charge(s, &ctx, reference, psp_id).await
        })
        .await
    }

    pub async fn parse_webhook(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, None, async |a, s| {
            a.call_parse_webhook(s, &ctx, request).await
        })
        .await
    }

    pub async fn register_webhook(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
    ) -> Result<(), CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, None, async |a, s| {
            a.call_register_webhook(s, &ctx).await
        })
        .await
    }

    pub async fn check_credentials(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
    ) -> Result<(), CallError> {
        let ctx = cred.context(request_id);
        self.call(cred, request_id, None, async |a, s| {
            a.call_check_credentials(s, &ctx).await
        })
        .await
    }

    async fn call<R>(
        &self,
        cred: &PreparedCredential,
        request_id: &str,
        send_gate: Option<SendGate>,
        f: impl AsyncFnOnce(
            &bindings::Adapter,
            &mut wasmtime::Store<CallState>,
        ) -> wasmtime::Result<Result<R, PspError>>,
    ) -> Result<R, CallError> {
        let rt = &self.runtime;
        // Held until the call ends; dropped with it if the caller gives up.
        let _admitted = rt.admission.admit(&self.loaded.id).await.map_err(|saturated| {
            tracing::warn!(provider = %self.loaded.id, request_id, %saturated, "adapter call refused: no slot");
            CallError::Busy {
                provider: self.loaded.manifest.id.clone(),
                saturated,
            }
        })?;
        let (outcome, transport) = call::run(
            &rt.engine,
            &rt.services,
            &self.loaded.pre,
            call::Scope {
                provider: &self.loaded.id,
                credential: Some(cred),
                request_id,
                send_gate,
            },
            f,
        )
        .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(CallError::Psp {
                provider: self.loaded.manifest.id.clone(),
                error,
                transport,
            }),
            Err(fault) => {
                tracing::error!(provider = %self.loaded.id, version = %self.loaded.sha256, request_id, %fault, "adapter fault");
                Err(CallError::Fault {
                    provider: self.loaded.manifest.id.clone(),
                    version: self.loaded.sha256.clone(),
                    fault,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(endpoint: &str, environment: Option<Environment>, url: &str) -> EndpointOverride {
        EndpointOverride {
            provider: "efi".into(),
            endpoint: endpoint.into(),
            environment,
            url: url.into(),
        }
    }

    #[test]
    fn an_environments_override_beats_one_for_both_in_any_order() {
        let overrides = [
            o("api", Some(Environment::Test), "https://hml"),
            o("api", None, "https://both"),
            o("api", Some(Environment::Live), "https://prod-1"),
            o("api", Some(Environment::Live), "https://prod-2"),
            o("oauth", None, "https://oauth"),
        ];
        let at =
            |endpoint, environment| endpoint_override(&overrides, "efi", endpoint, environment);
        assert_eq!(at("api", Environment::Test), Some("https://hml"));
        assert_eq!(at("api", Environment::Live), Some("https://prod-2"));
        assert_eq!(at("oauth", Environment::Live), Some("https://oauth"));
        assert_eq!(at("qr", Environment::Live), None);
        assert_eq!(
            endpoint_override(&overrides, "bb", "api", Environment::Test),
            None
        );
    }
}
