//! Hot reload: watches the plugin directory and reloads a `<id>.wasm` once its writes settle.
//!
//! Events are debounced per file, so a copy in progress is read once it has gone quiet; an
//! operator who installs by rename (write `efi.wasm.tmp`, then `mv`) never exposes a partial
//! file at all. A file that fails validation leaves the previous version serving.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::{Runtime, registry};

/// Quiet time after the last event on a file before it is reloaded.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// Keeps the watch alive; dropping it stops hot reload.
pub struct WatchGuard {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Runtime {
    /// Starts hot reload of the plugin directory. Must be called within a tokio runtime.
    pub fn watch(self: &Arc<Self>) -> anyhow::Result<WatchGuard> {
        let dir = self.config.plugin_dir.clone();
        std::fs::create_dir_all(&dir)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event)
                    if matches!(
                        event.kind,
                        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
                    ) =>
                {
                    for path in event.paths {
                        if registry::expected_id(&path).is_some() {
                            let _ = tx.send(path);
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "plugin directory watch error"),
            })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;

        let runtime = self.clone();
        let task = tokio::spawn(async move {
            let mut pending: HashMap<PathBuf, tokio::time::Instant> = HashMap::new();
            loop {
                let next_due = pending.values().min().copied();
                tokio::select! {
                    path = rx.recv() => match path {
                        Some(path) => { pending.insert(path, tokio::time::Instant::now() + DEBOUNCE); }
                        None => break,
                    },
                    _ = async { tokio::time::sleep_until(next_due.unwrap()).await }, if next_due.is_some() => {
                        let now = tokio::time::Instant::now();
                        let due: Vec<PathBuf> = pending.iter().filter(|(_, t)| **t <= now).map(|(p, _)| p.clone()).collect();
                        for path in due {
                            pending.remove(&path);
                            if path.exists() {
                                let _ = runtime.load_file(&path).await;
                            } else {
                                runtime.unload_file(&path);
                            }
                        }
                    }
                }
            }
        });
        Ok(WatchGuard {
            _watcher: watcher,
            task,
        })
    }
}
