//! The running gateway: storage, vault, adapters and settings, built once at start and shared
//! by every request and background task.

use std::sync::Arc;

use crate::runtime::Runtime;
use crate::store::Store;
use crate::vault::Vault;

/// Where it always was; defined with the other settings.
pub use crate::config::AppConfig;

pub struct App {
    pub store: Store,
    pub vault: Arc<Vault>,
    pub runtime: Arc<Runtime>,
    /// Charge operations, with the state they own: prepared credentials, PSP health, live
    /// updates and the outbox signal.
    pub charges: crate::charges::Service,
    pub config: AppConfig,
    pub metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// API keys whose last use was recorded recently: at most one write per key per minute.
    pub key_uses: parking_lot::Mutex<std::collections::HashMap<String, i64>>,
    pub rate_limiter: crate::rate_limit::RateLimiter,
    /// Charges created from public payment links, per client address.
    pub checkout_limiter: crate::rate_limit::RateLimiter,
    /// Failed API-key authentications, per client address.
    pub auth_failures: crate::rate_limit::RateLimiter,
}

impl App {
    pub fn new(store: Store, vault: Vault, runtime: Arc<Runtime>, config: AppConfig) -> Arc<App> {
        let vault = Arc::new(vault);
        Arc::new(App {
            charges: crate::charges::Service::new(
                store.clone(),
                runtime.clone(),
                vault.clone(),
                &config,
            ),
            store,
            vault,
            runtime,
            metrics: crate::metrics::install(),
            key_uses: Default::default(),
            rate_limiter: crate::rate_limit::RateLimiter::new(config.rate_limit),
            checkout_limiter: crate::rate_limit::RateLimiter::per_minute(
                config.checkout_rate_limit,
            ),
            auth_failures: crate::rate_limit::RateLimiter::per_minute(config.auth_failure_limit),
            config,
        })
    }
}
