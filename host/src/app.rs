//! The running gateway: storage, vault, adapters and settings, built once at start and shared
//! by every request and background task.

use std::sync::Arc;

use crate::credentials::PreparedCache;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::vault::Vault;

/// Where it always was; defined with the other settings.
pub use crate::config::AppConfig;

pub struct App {
    pub store: Store,
    pub vault: Arc<Vault>,
    pub runtime: Arc<Runtime>,
    pub prepared: PreparedCache,
    pub config: AppConfig,
    pub metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// API keys whose last use was recorded recently: at most one write per key per minute.
    pub key_uses: parking_lot::Mutex<std::collections::HashMap<String, i64>>,
    /// Wakes the delivery worker when this gateway wrote to the outbox.
    pub outbox: crate::webhooks::outbound::OutboxSignal,
    /// Charge status changes made by this gateway, for live screens.
    pub live: crate::live::LiveUpdates,
    pub rate_limiter: crate::rate_limit::RateLimiter,
    /// Charges created from public payment links, per client address.
    pub checkout_limiter: crate::rate_limit::RateLimiter,
    /// Failed API-key authentications, per client address.
    pub auth_failures: crate::rate_limit::RateLimiter,
    /// PSP health for the router.
    pub breaker: crate::routing::Breaker,
}

impl App {
    pub fn new(store: Store, vault: Vault, runtime: Arc<Runtime>, config: AppConfig) -> Arc<App> {
        Arc::new(App {
            store,
            vault: Arc::new(vault),
            runtime,
            prepared: PreparedCache::default(),
            metrics: crate::metrics::install(),
            key_uses: Default::default(),
            outbox: Default::default(),
            live: crate::live::LiveUpdates::new(config.live_streams_per_merchant),
            rate_limiter: crate::rate_limit::RateLimiter::new(config.rate_limit),
            checkout_limiter: crate::rate_limit::RateLimiter::per_minute(
                config.checkout_rate_limit,
            ),
            auth_failures: crate::rate_limit::RateLimiter::per_minute(config.auth_failure_limit),
            breaker: crate::routing::Breaker::new(config.breaker.clone()),
            config,
        })
    }
}
