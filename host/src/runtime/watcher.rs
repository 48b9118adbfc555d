//! Hot reload: watches the plugin directory and reloads a `<id>.wasm` once its writes settle.
//!
//! A file that is complete is loaded at once: one renamed into place (write `efi.wasm.tmp`, then
//! `mv`, which never exposes a partial file) or one whose writer has just closed it. Other events
//! (a copy still writing, a removal) are debounced per file, so they are acted on once the file
//! has gone quiet. A file that fails validation leaves the previous version serving; a file whose
//! bytes are those already serving is not loaded again. A new version serves its baseline code
//! first ([`Runtime::reload_file`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
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
        let (tx, mut rx) = mpsc::unbounded_channel::<(PathBuf, Duration)>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) => {
                    let Some(delay) = delay_for(&event.kind) else {
                        return;
                    };
                    for path in event.paths {
                        if registry::expected_id(&path).is_some() {
                            let _ = tx.send((path, delay));
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "plugin directory watch error"),
            })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;

        let runtime = self.clone();
        let task = tokio::spawn(async move {
            let mut pending: HashMap<PathBuf, tokio::time::Instant> = HashMap::new();
            loop {
                let next_due = pending.values().min().copied();
                tokio::select! {
                    event = rx.recv() => match event {
                        Some((path, delay)) => { pending.insert(path, tokio::time::Instant::now() + delay); }
                        None => break,
                    },
                    _ = async { tokio::time::sleep_until(next_due.unwrap()).await }, if next_due.is_some() => {
                        let now = tokio::time::Instant::now();
                        let due: Vec<PathBuf> = pending.iter().filter(|(_, t)| **t <= now).map(|(p, _)| p.clone()).collect();
                        for path in due {
                            pending.remove(&path);
                            if path.exists() {
                                let _ = runtime.reload_file(&path).await;
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

/// How long to wait after `kind` before acting on the file, or `None` to ignore the event. A
/// rename into place or a writer closing the file means the bytes are complete: act now.
fn delay_for(kind: &EventKind) -> Option<Duration> {
    match kind {
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
        | EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(Duration::ZERO),
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => Some(DEBOUNCE),
        EventKind::Access(_) | EventKind::Any | EventKind::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, RemoveKind};

    #[test]
    fn complete_files_load_at_once_and_writes_in_progress_wait() {
        let rename_in = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        let writing = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        let created = EventKind::Create(CreateKind::File);
        let renamed_away = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        let removed = EventKind::Remove(RemoveKind::File);
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        assert_eq!(delay_for(&rename_in), Some(Duration::ZERO));
        assert_eq!(delay_for(&renamed), Some(Duration::ZERO));
        assert_eq!(delay_for(&closed), Some(Duration::ZERO));
        assert_eq!(delay_for(&writing), Some(DEBOUNCE));
        assert_eq!(delay_for(&created), Some(DEBOUNCE));
        assert_eq!(delay_for(&renamed_away), Some(DEBOUNCE));
        assert_eq!(delay_for(&removed), Some(DEBOUNCE));
        assert_eq!(delay_for(&read), None);
    }
}
