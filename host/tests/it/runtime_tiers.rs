//! Compile tiers: a hot swap serves Winch's baseline code as soon as it validates, then
//! Cranelift's optimized code once compiled; a version the compile cache holds serves optimized
//! code at once. Every built adapter runs on baseline code.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use pixgw::runtime::registry::sha256_hex;
use pixgw::runtime::{Limits, Payer, Runtime, RuntimeConfig, Tier};

/// The version serving efi, the tier its handle runs, and the tier the status report gives.
fn serving(runtime: &Arc<Runtime>) -> (String, Tier, Option<Tier>) {
    let efi = runtime.adapter("efi").unwrap();
    (
        efi.version().to_owned(),
        efi.tier(),
        tier_in_status(runtime, "efi"),
    )
}

fn tier_in_status(runtime: &Arc<Runtime>, id: &str) -> Option<Tier> {
    runtime
        .status()
        .into_iter()
        .find(|s| s.id == id)
        .and_then(|s| s.serving_tier)
}

/// One charge through whatever serves `id` now, against the simulator.
async fn charge(runtime: &Arc<Runtime>, sim: &psp_sim::Sim, id: &str) -> Result<(), String> {
    let adapter = runtime.adapter(id).unwrap();
    let credential = adapter.prepare(&sim_credential(sim, id, None));
    let request = pixgw::runtime::ChargeRequest {
        payer: Payer {
            email: Some("fulano@example.com".into()),
            name: Some("Fulano de Tal".into()),
            document: Some("12345678909".into()),
        },
        ..charge_request(1990)
    };
    let charge = adapter
        .create_charge(&credential, "tiers", &request)
        .await
        .map_err(|e| format!("{id} on {:?} code: {e}", adapter.tier()))?;
    assert_eq!(charge.reference, request.reference);
    assert!(charge.copy_paste.is_some(), "{id}: {charge:?}");
    Ok(())
}

/// The simulator, a runtime serving efi (optimized, from the shared cache), its file and bytes.
async fn efi_loaded() -> (psp_sim::Sim, TestRuntime, std::path::PathBuf, Vec<u8>) {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let file = rt.plugin_dir.path().join("efi.wasm");
    let original = std::fs::read(&file).unwrap();
    (sim, rt, file, original)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_version_serves_baseline_code_then_optimized_and_a_cached_one_optimized_at_once() {
    let (sim, rt, file, original) = efi_loaded().await;
    let runtime = rt.runtime.clone();
    assert_eq!(runtime.adapter("efi").unwrap().tier(), Tier::Optimized);

    // A version no cache has seen (the cache is shared by the tests): Winch's code serves it.
    let new = new_version_of(&original, &uuid::Uuid::new_v4().to_string());
    std::fs::write(&file, &new).unwrap();
    assert_eq!(runtime.reload_file(&file).await.unwrap(), "efi");
    assert_eq!(
        serving(&runtime),
        (sha256_hex(&new), Tier::Baseline, Some(Tier::Baseline))
    );
    charge(&runtime, &sim, "efi").await.unwrap();

    // Then Cranelift's, the same version.
    runtime.optimized().await;
    assert_eq!(
        serving(&runtime),
        (sha256_hex(&new), Tier::Optimized, Some(Tier::Optimized))
    );
    charge(&runtime, &sim, "efi").await.unwrap();

    // Back to the first version, whose optimized code the cache holds: no baseline step.
    std::fs::write(&file, &original).unwrap();
    runtime.reload_file(&file).await.unwrap();
    assert_eq!(
        serving(&runtime),
        (
            sha256_hex(&original),
            Tier::Optimized,
            Some(Tier::Optimized)
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_replaced_before_its_optimized_code_is_ready_never_comes_back() {
    let (sim, rt, file, original) = efi_loaded().await;
    let runtime = rt.runtime.clone();

    // Two new versions, each serving Winch's code while Cranelift compiles it, then the first
    // version again, whose optimized code the cache holds: it serves at once, and the two
    // compiles that finish after it must not bring their versions back.
    for _ in 0..2 {
        let version = new_version_of(&original, &uuid::Uuid::new_v4().to_string());
        std::fs::write(&file, &version).unwrap();
        runtime.reload_file(&file).await.unwrap();
        assert_eq!(serving(&runtime).1, Tier::Baseline);
    }
    std::fs::write(&file, &original).unwrap();
    runtime.reload_file(&file).await.unwrap();
    runtime.optimized().await;
    assert_eq!(
        serving(&runtime),
        (
            sha256_hex(&original),
            Tier::Optimized,
            Some(Tier::Optimized)
        )
    );
    charge(&runtime, &sim, "efi").await.unwrap();
}

/// A runtime over an empty plugin directory, with no compile cache: every load compiles.
fn uncached(sim: &psp_sim::Sim, plugins: &Path) -> Arc<Runtime> {
    let mut config = RuntimeConfig {
        plugin_dir: plugins.to_owned(),
        compile_cache_dir: None,
        ..Default::default()
    };
    config.trusted_ca_pem.push(sim.ca_pem());
    config.endpoint_overrides =
        pixgw::config::parse_endpoint_overrides(&sim.info().endpoint_overrides.join(",")).unwrap();
    Runtime::new(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_adapter_compiles_and_charges_on_baseline_code() {
    let sim = start_sim().await;
    let plugins = tempfile::tempdir().unwrap();
    let runtime = uncached(&sim, plugins.path());
    let mut ids: Vec<String> = std::fs::read_dir(target_dir().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 13, "{ids:?}");
    for id in &ids {
        let file = plugins.path().join(format!("{id}.wasm"));
        std::fs::copy(built_adapter(id), &file).unwrap();
        assert_eq!(&runtime.reload_file(&file).await.unwrap(), id);
        // Winch took it (no fallback to Cranelift), and its code makes a charge.
        assert_eq!(runtime.adapter(id).unwrap().tier(), Tier::Baseline, "{id}");
        charge(&runtime, &sim, id).await.unwrap();
    }
    runtime.optimized().await;
    for id in &ids {
        assert_eq!(runtime.adapter(id).unwrap().tier(), Tier::Optimized, "{id}");
        charge(&runtime, &sim, id).await.unwrap();
    }
}
