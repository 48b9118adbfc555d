//! The running gateway: storage, vault, adapters and settings, built once at start and shared
//! by every request and background task.

use std::sync::Arc;

use crate::credentials::PreparedCache;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::vault::Vault;

/// Settings the API needs beyond the runtime's.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Public base URL of this gateway, without a trailing slash: webhook URLs start with it.
    pub base_url: String,
}

pub struct App {
    pub store: Store,
    pub vault: Vault,
    pub runtime: Arc<Runtime>,
    pub prepared: PreparedCache,
    pub config: AppConfig,
    pub metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// API keys whose last use was recorded recently: at most one write per key per minute.
    pub key_uses: parking_lot::Mutex<std::collections::HashMap<String, i64>>,
}

impl App {
    pub fn new(store: Store, vault: Vault, runtime: Arc<Runtime>, config: AppConfig) -> Arc<App> {
        Arc::new(App {
            store,
            vault,
            runtime,
            prepared: PreparedCache::default(),
            config,
            metrics: crate::metrics::install(),
            key_uses: Default::default(),
        })
    }
}
