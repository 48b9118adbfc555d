//! Compiled components are cached by content hash: a restart reuses them, and an unusable
//! cached artifact is recompiled rather than trusted.

use crate::common;

use common::*;
use pixgw::runtime::{Runtime, RuntimeConfig};

fn runtime(plugin_dir: &std::path::Path, cache_dir: &std::path::Path) -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        plugin_dir: plugin_dir.to_owned(),
        compile_cache_dir: Some(cache_dir.to_owned()),
        ..Default::default()
    })
    .unwrap()
}

fn artifacts(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn a_restart_reuses_the_compiled_artifact_and_a_corrupt_one_is_recompiled() {
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let efi = std::fs::read(built_adapter("efi")).unwrap();
    std::fs::write(plugins.path().join("efi.wasm"), &efi).unwrap();
    let sha = pixgw::runtime::registry::sha256_hex(&efi);

    let first = runtime(plugins.path(), cache.path());
    assert_eq!(
        first
            .load_all()
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
        ["efi"]
    );
    let cached = artifacts(cache.path());
    assert_eq!(cached.len(), 1);
    let name = cached[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with(&sha) && name.ends_with(".cwasm"), "{name}");
    let modified = std::fs::metadata(&cached[0]).unwrap().modified().unwrap();

    // A restart loads from the artifact: the file is read, not rewritten.
    let second = runtime(plugins.path(), cache.path());
    second
        .load_all()
        .await
        .into_iter()
        .for_each(|r| assert_eq!(r.unwrap(), "efi"));
    assert_eq!(
        std::fs::metadata(&cached[0]).unwrap().modified().unwrap(),
        modified
    );
    assert_eq!(second.adapter("efi").unwrap().version(), sha);

    // A damaged artifact is discarded and replaced by a fresh compilation.
    std::fs::write(&cached[0], b"not an artifact").unwrap();
    let third = runtime(plugins.path(), cache.path());
    third
        .load_all()
        .await
        .into_iter()
        .for_each(|r| assert_eq!(r.unwrap(), "efi"));
    assert_eq!(artifacts(cache.path()), cached);
    assert_ne!(std::fs::read(&cached[0]).unwrap(), b"not an artifact");
}
