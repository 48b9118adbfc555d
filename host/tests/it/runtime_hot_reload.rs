//! Hot reload: a new `efi.wasm` replaces the serving one while calls run, losing none; a corrupt
//! file or one that claims another provider id is rejected and the old version keeps serving.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use common::*;
use pixgw::runtime::{Limits, Runtime};

/// Installs a file the way an operator should: write aside, then rename over.
fn install(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn serving(runtime: &Arc<Runtime>) -> String {
    runtime.adapter("efi").unwrap().version().to_owned()
}

fn last_error(runtime: &Arc<Runtime>) -> Option<String> {
    runtime
        .status()
        .into_iter()
        .find(|s| s.id == "efi")
        .and_then(|s| s.last_error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_efi_under_load_loses_no_call_and_bad_files_are_rejected() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let runtime = rt.runtime.clone();
    let dir = rt.plugin_dir.path().to_owned();
    let _watch = runtime.watch().unwrap();
    let original = serving(&runtime);
    let credential = sim_credential(&sim, "efi", None);

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU32::new(0));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (runtime, credential, stop, done) = (
                runtime.clone(),
                credential.clone(),
                stop.clone(),
                done.clone(),
            );
            tokio::spawn(async move {
                let (mut calls, mut versions) = (0u32, BTreeSet::new());
                while !stop.load(Ordering::Relaxed) {
                    let efi = runtime.adapter("efi").expect("efi is always served");
                    let cred = efi.prepare(&credential);
                    let request = charge_request(700);
                    let charge = efi.create_charge(&cred, "req", &request).await;
                    let charge = charge.unwrap_or_else(|e| {
                        panic!("call {calls} on {:.12} failed: {e}", efi.version())
                    });
                    assert_eq!(charge.reference, request.reference);
                    versions.insert(efi.version().to_owned());
                    calls += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                (calls, versions)
            })
        })
        .collect();

    // Each phase lets the callers complete more calls before the next change.
    let more_calls = |n: u32| {
        let (done, target) = (done.clone(), done.load(Ordering::Relaxed) + n);
        move || done.load(Ordering::Relaxed) >= target
    };
    eventually(
        Duration::from_secs(60),
        "calls on the original version",
        more_calls(16),
    )
    .await;
    let efi_bytes = std::fs::read(built_adapter("efi")).unwrap();
    let upgrade = new_version_of(&efi_bytes, "v2");
    let upgraded = pixgw::runtime::registry::sha256_hex(&upgrade);
    install(&dir, "efi.wasm", &upgrade);
    eventually(Duration::from_secs(60), "the new version to serve", || {
        serving(&runtime) == upgraded
    })
    .await;
    eventually(
        Duration::from_secs(60),
        "calls on the new version",
        more_calls(16),
    )
    .await;

    // A truncated file, written in place as a careless copy would.
    std::fs::write(dir.join("efi.wasm"), &efi_bytes[..efi_bytes.len() / 2]).unwrap();
    eventually(
        Duration::from_secs(60),
        "the corrupt file to be rejected",
        || last_error(&runtime).is_some(),
    )
    .await;
    assert!(
        last_error(&runtime)
            .unwrap()
            .contains("is not a valid adapter component"),
        "{:?}",
        last_error(&runtime)
    );
    assert_eq!(serving(&runtime), upgraded);

    // A valid adapter that says it is another provider.
    install(
        &dir,
        "efi.wasm",
        &std::fs::read(built_adapter("hostile")).unwrap(),
    );
    eventually(
        Duration::from_secs(60),
        "the impostor to be rejected",
        || last_error(&runtime).is_some_and(|e| e.contains("declares provider id \"hostile\"")),
    )
    .await;
    assert_eq!(serving(&runtime), upgraded);
    eventually(
        Duration::from_secs(60),
        "calls after the rejections",
        more_calls(16),
    )
    .await;

    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    let mut seen = BTreeSet::new();
    for caller in callers {
        let (calls, versions) = caller.await.expect("no caller saw a failed call");
        total += calls;
        seen.extend(versions);
    }
    assert!(total >= 48, "the callers made {total} calls");
    assert_eq!(
        seen,
        BTreeSet::from([original, upgraded]),
        "calls ran on the old version, then the new"
    );
}
