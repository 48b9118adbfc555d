//! An integrator's path, from a directory outside the repository, through the real `pixgw`
//! binary: `plugins new --central-bank` → the crate's own tests → `plugins build` → `plugins
//! check` → `plugins conformance` against the PSP simulator. And what `plugins check` says about
//! a missing or empty directory, a stray file, and a component without the SDK's `export!`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pixgw(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pixgw"))
        .args(args)
        .current_dir(cwd)
        // One build directory for every run of this test, outside the crate.
        .env("CARGO_TARGET_DIR", common::target_dir().join("integrators"))
        .env(
            "PIXGW_COMPILE_CACHE_DIR",
            common::target_dir().join("test-compile-cache"),
        )
        .env_remove("PIXGW_PLUGIN_DIR")
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_central_bank_adapter_from_scaffold_to_conformance_outside_the_repository() {
    let outside = tempfile::tempdir().unwrap();
    assert!(!outside.path().starts_with(common::workspace()));
    let crate_dir: PathBuf = outside.path().join("acme");

    let new = pixgw(
        &[
            "plugins",
            "new",
            "acme",
            "--central-bank",
            "--name",
            "Acme Bank",
            "--dir",
            "acme",
        ],
        outside.path(),
    );
    assert!(new.status.success(), "{}", text(&new));
    assert!(
        text(&new).contains("created acme (adapter `acme`)"),
        "{}",
        text(&new)
    );

    // The crate's own fake-host tests, natively.
    let tests = Command::new(env!("CARGO"))
        .args(["test", "--quiet"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", common::target_dir().join("integrators"))
        .output()
        .unwrap();
    assert!(tests.status.success(), "{}", text(&tests));
    assert!(text(&tests).contains("2 passed"), "{}", text(&tests));

    let build = pixgw(
        &["plugins", "build", "acme", "--out", "dist"],
        outside.path(),
    );
    assert!(build.status.success(), "{}", text(&build));
    let report = text(&build);
    assert!(
        report.contains("ok      acme  Acme Bank (bank (central-bank Pix API))"),
        "{report}"
    );
    assert!(report.contains("installed dist/acme.wasm"), "{report}");
    let leftovers: Vec<_> = std::fs::read_dir(outside.path().join("dist"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers,
        ["acme.wasm"],
        "only the component, no staging files"
    );

    let check = pixgw(&["plugins", "check", "dist"], outside.path());
    assert!(check.status.success(), "{}", text(&check));
    let manifest = text(&check);
    for line in [
        "contract       pixgw:psp@2.0.0",
        "client-id        required text  \"Client ID\"",
        "private-key      required client private key (PEM), multiline  \"Private key (.key)\"",
        "api      test https://pix-sandbox.acme.example",
        "live https://pix.acme.example",
        "notifications  the host's token in the notification URL",
        "capabilities   cancel-charge, register-webhook, check-credentials",
        "1 of 1 file(s) would serve",
    ] {
        assert!(
            manifest.contains(line),
            "{line:?} missing from:\n{manifest}"
        );
    }

    // The standard central-bank API is what the simulated Bradesco speaks.
    let sim = common::start_sim().await;
    let conformance = pixgw(
        &[
            "plugins",
            "conformance",
            "dist/acme.wasm",
            "--sim",
            &sim.control_url(),
            "--as",
            "bradesco",
        ],
        outside.path(),
    );
    let table = text(&conformance);
    assert!(conformance.status.success(), "{table}");
    for step in [
        "ok      credentials accepted",
        "ok      wrong secret refused",
        "ok      notification URL registered",
        "ok      wrong Pix key refused",
        "ok      create ",
        "ok      create again: same charge",
        "ok      query: pending",
        "ok      paid at the PSP",
        "ok      notification: paid",
        "ok      query: paid",
        "ok      cancel",
        "ok      unknown charge: not-found",
        "conformance: all 12 steps passed or skipped",
    ] {
        assert!(table.contains(step), "{step:?} missing from:\n{table}");
    }
}

#[test]
fn check_fails_on_what_would_not_serve() {
    let tmp = tempfile::tempdir().unwrap();

    let missing = pixgw(&["plugins", "check", "nowhere"], tmp.path());
    assert!(!missing.status.success());
    assert!(
        text(&missing).contains("nowhere does not exist: build adapters first"),
        "{}",
        text(&missing)
    );

    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let empty = pixgw(&["plugins", "check", "empty"], tmp.path());
    assert!(!empty.status.success());
    assert!(
        text(&empty).contains("empty holds no adapter"),
        "{}",
        text(&empty)
    );

    // A stray file beside a good adapter: reported, and the check fails.
    let dir = tmp.path().join("plugins");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(common::built_adapter("efi"), dir.join("efi.wasm")).unwrap();
    std::fs::write(dir.join("Efi-v2.wasm"), b"").unwrap();
    std::fs::write(dir.join(".efi.wasm.tmp"), b"in progress").unwrap();
    let stray = pixgw(&["plugins", "check", "plugins"], tmp.path());
    let report = text(&stray);
    assert!(!stray.status.success(), "{report}");
    assert!(report.contains("ok      efi  Efí Bank"), "{report}");
    assert!(report.contains("SKIPPED plugins/Efi-v2.wasm"), "{report}");
    assert!(
        !report.contains(".efi.wasm.tmp"),
        "hidden files are writes in progress: {report}"
    );
    assert!(
        report.contains("1 of 2 file(s) would serve: fix the ones above"),
        "{report}"
    );
    assert!(!report.contains("previous version"), "{report}");

    // A real component built against contract 1.0.0 (tests/contract-v1-adapter, the way the
    // 0.1 SDK built adapters): refused, saying which contract it was built for and what to do.
    std::fs::copy(
        common::built_adapter("contract-v1"),
        tmp.path().join("contract-v1.wasm"),
    )
    .unwrap();
    let outdated = pixgw(&["plugins", "check", "contract-v1.wasm"], tmp.path());
    let report = text(&outdated);
    assert!(!outdated.status.success(), "{report}");
    assert!(report.contains("FAILED  contract-v1.wasm"), "{report}");
    assert!(
        report.contains("it was built against the contract pixgw:psp@1.0.0 (it imports pixgw:psp/"),
        "{report}"
    );
    assert!(
        report.contains(
            "this gateway speaks pixgw:psp@2.x: rebuild it against pixgw-plugin-sdk 2.x (set \
             `pixgw-plugin-sdk = \"2\"` in its Cargo.toml)"
        ),
        "{report}"
    );

    // A component that exports nothing: the author forgot `export!`.
    let bare = tmp.path().join("bare.wasm");
    std::fs::write(&bare, b"\0asm\x0d\0\x01\0").unwrap();
    let unexported = pixgw(&["plugins", "check", "bare.wasm"], tmp.path());
    let report = text(&unexported);
    assert!(!unexported.status.success(), "{report}");
    assert!(report.contains("FAILED  bare.wasm"), "{report}");
    assert!(
        report.contains("add `pixgw_plugin_sdk::export!(YourAdapter);` to the crate's src/lib.rs"),
        "{report}"
    );
}

#[test]
fn a_new_json_api_adapter_builds_tests_and_checks() {
    let outside = tempfile::tempdir().unwrap();
    let new = pixgw(
        &["plugins", "new", "acme-pay", "--dir", "acme-pay"],
        outside.path(),
    );
    assert!(new.status.success(), "{}", text(&new));

    let tests = Command::new(env!("CARGO"))
        .args(["test", "--quiet"])
        .current_dir(outside.path().join("acme-pay"))
        .env("CARGO_TARGET_DIR", common::target_dir().join("integrators"))
        .output()
        .unwrap();
    assert!(tests.status.success(), "{}", text(&tests));
    assert!(text(&tests).contains("3 passed"), "{}", text(&tests));

    let build = pixgw(
        &["plugins", "build", "acme-pay", "--out", "dist"],
        outside.path(),
    );
    let report = text(&build);
    assert!(build.status.success(), "{report}");
    for line in [
        "ok      acme-pay  Acme Pay (payment processor)",
        "api-key          required secret  \"API key\"",
        "capabilities   cancel-charge, check-credentials",
        "installed dist/acme-pay.wasm",
    ] {
        assert!(report.contains(line), "{line:?} missing from:\n{report}");
    }
}
