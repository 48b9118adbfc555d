//! `cargo xtask <command>`: the project's build and test tasks, in Rust so they run wherever
//! cargo does.
//!
//! - `plugins`: builds every `plugins/<id>` crate (and the test adapters under `tests/`) for
//!   `wasm32-wasip2` and installs them as `target/plugins/<id>.wasm` (`target/test-plugins/`).
//! - `test`: `plugins`, then every test of the workspace, then `api-contract`, then `sdk-test`.
//! - `api-contract`: schemathesis against a demo: the gateway answers as its OpenAPI document
//!   says (`api_contract.rs`).
//! - `sdk-test`: the TypeScript and Python SDKs' suites against a demo of their own (`sdk.rs`).
//! - `demo`: `plugins`, then the PSP simulator and the gateway, wired together, until Ctrl-C.
//! - `bench`: `plugins`, then the criterion benchmarks (release build).
//! - `soak`: the gateway under load and simulator faults, killed and restarted twice, checked
//!   from outside: no duplicate charge, no lost or duplicated `charge.paid`, nothing sent to a
//!   deleted endpoint (`soak.rs`).
//! - `load`: sustained charges straight at the simulator and through the gateway (SQLite,
//!   PostgreSQL), side by side, and an adapter hot swap under that load (`load.rs`).
//!
//! `gateway.rs` holds what these share: demos on free ports, an HTTP helper, waiting.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use anyhow::{Context, bail, ensure};

mod api_contract;
mod gateway;
mod load;
mod sdk;
mod soak;

use gateway::{http, wait_for, wait_http};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("plugins") => plugins().map(drop),
        Some("test") => test(rest),
        Some("demo") => demo(),
        Some("sdk-test") => sdk::sdk_test(None),
        Some("api-contract") => api_contract::api_contract(None),
        Some("bench") => bench(rest),
        Some("soak") => soak::soak(rest),
        Some("load") => load::load(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <plugins|test|api-contract|sdk-test|demo|bench|soak|load> [args passed to cargo]"
            );
            std::process::exit(2);
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status: ExitStatus = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    ensure!(status.success(), "{cmd:?} failed with {status}");
    Ok(())
}

/// (provider id or test adapter name, package name, install directory)
fn adapter_crates() -> anyhow::Result<Vec<(String, String, PathBuf)>> {
    let mut crates = Vec::new();
    let sources = [
        ("plugins", target_dir().join("plugins")),
        ("tests", target_dir().join("test-plugins")),
    ];
    for (folder, install) in sources {
        let mut dirs: Vec<_> = std::fs::read_dir(root().join(folder))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            let manifest = dir.join("Cargo.toml");
            let Ok(text) = std::fs::read_to_string(&manifest) else {
                continue;
            };
            if !text.contains("cdylib") {
                continue;
            }
            let package = text
                .lines()
                .find_map(|l| {
                    l.trim()
                        .strip_prefix("name = ")
                        .map(|v| v.trim_matches('"').to_owned())
                })
                .with_context(|| format!("{} has no package name", manifest.display()))?;
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            // Test adapters are named by what they are: tests/hostile-adapter → hostile.wasm.
            let id = name.strip_suffix("-adapter").unwrap_or(&name).to_owned();
            crates.push((id, package, install.clone()));
        }
    }
    Ok(crates)
}

/// The adapters' target. rustup installs the targets `rust-toolchain.toml` lists only where it
/// auto-installs (not with `RUSTUP_AUTO_INSTALL=0`, nor when the pinned toolchain is already
/// there without the target): look for its standard library, and install it when missing.
const WASM_TARGET: &str = "wasm32-wasip2";

fn ensure_wasm_target() -> anyhow::Result<()> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .current_dir(root())
        .args(["--print", "sysroot"])
        .output()
        .with_context(|| format!("cannot run {rustc} --print sysroot"))?;
    ensure!(sysroot.status.success(), "{rustc} --print sysroot failed");
    let sysroot = PathBuf::from(String::from_utf8(sysroot.stdout)?.trim());
    if sysroot
        .join("lib/rustlib")
        .join(WASM_TARGET)
        .join("lib")
        .is_dir()
    {
        return Ok(());
    }
    eprintln!("xtask: the {WASM_TARGET} standard library is missing; installing it with rustup");
    let status = Command::new("rustup")
        .current_dir(root())
        .args(["target", "add", WASM_TARGET])
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => bail!(
            "the adapters build for {WASM_TARGET}, whose standard library is not installed for \
             this toolchain ({}), and `rustup target add {WASM_TARGET}` did not succeed. Run it \
             yourself in {}, or install the target with your Rust distribution.",
            sysroot.display(),
            root().display()
        ),
    }
}

fn plugins() -> anyhow::Result<Vec<PathBuf>> {
    ensure_wasm_target()?;
    let crates = adapter_crates()?;
    let mut cmd = cargo();
    cmd.args(["build", "--target", WASM_TARGET, "--profile", "wasm"]);
    for (_, package, _) in &crates {
        cmd.args(["-p", package]);
    }
    run(&mut cmd)?;
    let mut installed = Vec::new();
    for (id, package, install) in crates {
        let built = target_dir()
            .join(WASM_TARGET)
            .join("wasm")
            .join(format!("{}.wasm", package.replace('-', "_")));
        std::fs::create_dir_all(&install)?;
        let dest = install.join(format!("{id}.wasm"));
        // Rename into place: a gateway watching the directory never sees a half-written file.
        let tmp = install.join(format!(".{id}.wasm.tmp"));
        std::fs::copy(&built, &tmp).with_context(|| format!("copying {}", built.display()))?;
        std::fs::rename(&tmp, &dest)?;
        eprintln!(
            "xtask: installed {} ({} KiB)",
            dest.display(),
            std::fs::metadata(&dest)?.len() / 1024
        );
        installed.push(dest);
    }
    Ok(installed)
}

fn test(extra: &[String]) -> anyhow::Result<()> {
    plugins()?;
    run(cargo()
        .args(["test", "--workspace", "--exclude", "pixgw-hostile-adapter"])
        .args(["--exclude", "pixgw-contract-v1-adapter"])
        .args(extra))?;
    // The demos of the API contract and the SDKs run the `pixgw` and `psp-sim` that the whole
    // workspace's `cargo test` just built for the integration tests: built apart (`-p pixgw -p
    // psp-sim`), their shared dependencies would resolve other features and compile again. A
    // run narrowed by arguments may not have built them: the demos build their own then.
    let built = target_dir().join("debug");
    let built = extra.is_empty().then_some(built.as_path());
    api_contract::api_contract(built)?;
    sdk::sdk_test(built)
}

fn bench(extra: &[String]) -> anyhow::Result<()> {
    plugins()?;
    run(cargo().args(["bench", "-p", "pixgw"]).args(extra))
}

/// Kills a child process when dropped, so Ctrl-C or an error leaves nothing running.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The demo merchant's owner, for the dashboard.
const DEMO_EMAIL: &str = "demo@pixgw.test";
const DEMO_PASSWORD: &str = "pixgw-demo-2026";

/// `cargo xtask demo`. Settings for the tasks that start one ([`gateway::Demo`]), by
/// environment: `PIXGW_DEMO_DIR` (its directory), `PIXGW_DEMO_PROFILE=release` (an optimised
/// build), `PIXGW_DEMO_DATABASE_URL` (another database, e.g. PostgreSQL; the caller makes it
/// fresh), `PIXGW_DEMO_PLUGIN_DIR` (adapters from a copy the caller may change), and
/// `PIXGW_DEMO_PLAN` (the merchant's plan, `enterprise` by default), `PIXGW_DEMO_BIN_DIR`
/// (binaries built elsewhere).
fn demo() -> anyhow::Result<()> {
    let release = std::env::var("PIXGW_DEMO_PROFILE").is_ok_and(|p| p == "release");
    // `PIXGW_DEMO_BIN_DIR`: run binaries built elsewhere (e.g. a kept copy, to compare
    // versions), building nothing.
    let bin = match std::env::var_os("PIXGW_DEMO_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            plugins()?;
            let mut build = cargo();
            build.args(["build", "-p", "pixgw", "-p", "psp-sim"]);
            if release {
                build.arg("--release");
            }
            run(&mut build)?;
            target_dir().join(if release { "release" } else { "debug" })
        }
    };
    let plugin_dir = std::env::var_os("PIXGW_DEMO_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("plugins"));
    let plan = std::env::var("PIXGW_DEMO_PLAN").unwrap_or_else(|_| "enterprise".into());
    // `PIXGW_DEMO_DIR` lets a second demo (a test suite's, on other ports) keep its database
    // and demo.env apart from the one a person runs.
    let demo_dir = std::env::var_os("PIXGW_DEMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("demo"));
    std::fs::create_dir_all(&demo_dir)?;
    let info_file = demo_dir.join("psp-sim.json");
    let _ = std::fs::remove_file(&info_file);

    let sim_control = std::env::var("PSP_SIM_ADDR").unwrap_or_else(|_| "127.0.0.1:7070".into());
    let _sim = Reaper(
        Command::new(bin.join("psp-sim"))
            .args(["--control-addr", &sim_control, "--info-file"])
            .arg(&info_file)
            .spawn()
            .context("starting psp-sim")?,
    );
    let info = wait_for(&info_file, Duration::from_secs(30))?;
    let info: serde_json::Value = serde_json::from_str(&info)?;
    let ca_file = demo_dir.join("psp-sim-ca.pem");
    std::fs::write(
        &ca_file,
        info["ca_pem"]
            .as_str()
            .context("psp-sim info lacks ca_pem")?,
    )?;

    // Point every adapter the simulator knows at the simulator, each environment at its hosts.
    let overrides: Vec<&str> = info["endpoint_overrides"]
        .as_array()
        .context("psp-sim info lacks endpoint_overrides")?
        .iter()
        .filter_map(|o| o.as_str())
        .collect();
    // A fresh database each run: the simulator's test accounts are new each start too.
    let data_dir = demo_dir.join("data");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir)?;
    let database_url = std::env::var("PIXGW_DEMO_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", data_dir.join("pixgw.db").display()));
    let pixgw = |args: &[&str]| -> anyhow::Result<String> {
        let output = Command::new(bin.join("pixgw"))
            .args(args)
            .env("PIXGW_DATABASE_URL", &database_url)
            .env("PIXGW_DATA_DIR", &data_dir)
            .env("PIXGW_MEMBER_PASSWORD", DEMO_PASSWORD)
            .output()
            .with_context(|| format!("running pixgw {args:?}"))?;
        ensure!(
            output.status.success(),
            "pixgw {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?.trim().to_owned())
    };
    pixgw(&["migrate"])?;
    // Enterprise: the demo connects every adapter and shows the cashier on a phone, which
    // smaller plans do not allow.
    let merchant = pixgw(&[
        "merchant",
        "create",
        "--name",
        "Demo Store",
        "--plan",
        &plan,
    ])?;
    pixgw(&[
        "member",
        "add",
        "--merchant",
        &merchant,
        "--email",
        DEMO_EMAIL,
        "--name",
        "Demo Owner",
        "--role",
        "owner",
    ])?;
    let api_key = pixgw(&[
        "key",
        "create",
        "--merchant",
        &merchant,
        "--env",
        "test",
        "--label",
        "demo",
    ])?;

    let listen = match std::env::var("PIXGW_LISTEN") {
        // Port 0 (a test's demo): a free port picked now, once the simulator holds all of its
        // own, so none of them can be this one.
        Ok(addr) if addr.ends_with(":0") => gateway::free_addr()?,
        Ok(addr) => addr,
        Err(_) => "127.0.0.1:8080".into(),
    };
    let gateway = Reaper(
        Command::new(bin.join("pixgw"))
            // The demo's secrets are sealed with a key generated into its data directory.
            .args([
                "serve",
                "--insecure-dev-master-key",
                "--listen",
                &listen,
                "--plugin-dir",
            ])
            .arg(&plugin_dir)
            .arg("--trusted-ca")
            .arg(&ca_file)
            .args(["--endpoint-overrides", &overrides.join(",")])
            .env("PIXGW_DATABASE_URL", &database_url)
            .env("PIXGW_DATA_DIR", &data_dir)
            // The demo's event receiver listens on loopback.
            .env("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS", "true")
            .arg("--compile-cache-dir")
            .arg(target_dir().join("demo/compiled"))
            .spawn()
            .context("starting pixgw")?,
    );
    let url = format!("http://{listen}");
    wait_http(&format!("{url}/readyz"), Duration::from_secs(120))?;

    let bearer = format!("Bearer {api_key}");
    // Connect the simulator's test account at every PSP that has an adapter.
    let (_, adapters) = http(&url, "GET", "/v1/adapters", &[], None)?;
    let adapters: serde_json::Value = serde_json::from_str(&adapters)?;
    let loaded: Vec<&str> = adapters["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| !a["serving_sha256"].is_null())
        .filter_map(|a| a["id"].as_str())
        .collect();
    let mut connected = Vec::new();
    for (provider, p) in info["providers"].as_object().into_iter().flatten() {
        if !loaded.contains(&provider.as_str()) {
            continue;
        }
        let body = serde_json::json!({
            "provider": provider,
            "label": format!("{provider} (simulator)"),
            "fields": p["credentials"],
        });
        let (status, answer) = http(
            &url,
            "POST",
            "/v1/credentials",
            &[("Authorization", &bearer)],
            Some(&body.to_string()),
        )?;
        ensure!(
            status == 201,
            "connecting {provider} failed ({status}): {answer}"
        );
        // PSPs without a webhook API take the URL in their dashboard: set it at the simulator,
        // as the credential's answer tells a merchant to.
        let credential: serde_json::Value = serde_json::from_str(&answer)?;
        if credential["webhook"]["registration"]["status"] == "manual" {
            let mut headers = serde_json::Map::new();
            if let Some(header) = credential["webhook"]["header"].as_str() {
                headers.insert(header.to_owned(), credential["webhook"]["token"].clone());
            }
            let config = serde_json::json!({
                "provider": provider,
                "webhook_url": credential["webhook"]["url"],
                "webhook_headers": headers,
            });
            let control = info["control_url"].as_str().unwrap_or_default();
            let (status, answer) = http(
                control,
                "POST",
                "/_sim/config",
                &[],
                Some(&config.to_string()),
            )?;
            ensure!(
                status == 200,
                "configuring {provider}'s webhook at the simulator failed ({status}): {answer}"
            );
        }
        connected.push(provider.clone());
    }
    // A receiver for the merchant's signed events, printing each one as it arrives.
    let receiver =
        std::net::TcpListener::bind("127.0.0.1:0").context("binding the event receiver")?;
    let receiver_url = format!("http://{}/events", receiver.local_addr()?);
    let body = serde_json::json!({
        "url": receiver_url,
        "events": ["charge.created", "charge.paid", "charge.expired", "charge.canceled", "charge.failed"],
        "description": "cargo xtask demo receiver",
    });
    let (status, answer) = http(
        &url,
        "POST",
        "/v1/webhook_endpoints",
        &[("Authorization", &bearer)],
        Some(&body.to_string()),
    )?;
    ensure!(
        status == 201,
        "registering the demo's webhook endpoint failed ({status}): {answer}"
    );
    let endpoint: serde_json::Value = serde_json::from_str(&answer)?;
    let secret = endpoint["secret"]
        .as_str()
        .context("the endpoint has no secret")?
        .to_owned();
    std::thread::spawn(move || receive_events(receiver, &secret));

    let control_url = info["control_url"].as_str().unwrap_or_default();
    std::fs::write(
        demo_dir.join("demo.env"),
        format!(
            "PIXGW_URL={url}\nPIXGW_API_KEY={api_key}\nPSP_SIM_URL={control_url}\n\
             PIXGW_DASHBOARD_EMAIL={DEMO_EMAIL}\nPIXGW_DASHBOARD_PASSWORD={DEMO_PASSWORD}\n\
             PIXGW_PID={}\nPSP_SIM_INFO={}\n",
            gateway.0.id(),
            info_file.display()
        ),
    )?;
    println!(
        "\npixgw demo is up (merchant {merchant}; test credentials at {}).\n\
         \n  dashboard:      {url}/dashboard  (sign in as {DEMO_EMAIL}, password {DEMO_PASSWORD})\n  gateway:        {url}\n  API key:        {api_key}\n  PSP simulator:  {control_url}/_sim/info\n  settings:       {}\n\
         \nCreate a charge:\n\n  curl -s {url}/v1/charges -H 'Authorization: Bearer {api_key}' \\\n    -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' \\\n    -d '{{\"amount\": 1990, \"provider\": \"efi\", \"description\": \"Demo\"}}'\n\
         \nPay it at the simulator (use the charge's reference):\n\n  curl -s {control_url}/_sim/pay -H 'Content-Type: application/json' \\\n    -d '{{\"provider\": \"efi\", \"reference\": \"<reference>\"}}'\n\nSigned events to the demo endpoint ({receiver_url}) are printed below. Ctrl-C stops everything.",
        connected.join(", "),
        demo_dir.join("demo.env").display()
    );
    // Ctrl-C or SIGTERM returns from here, so the reapers stop both processes.
    let (tx, rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = tx.send(());
    })?;
    let _ = rx.recv();
    eprintln!("xtask: stopping the demo");
    Ok(())
}

/// The demo merchant's endpoint: prints every event and whether its Standard Webhooks
/// signature checks out with the endpoint's secret. Connections are kept alive and served on
/// threads of their own, as a merchant's server would: the gateway's deliveries under
/// `cargo xtask load` do not wait for one another or for a new connection each.
fn receive_events(listener: std::net::TcpListener, secret: &str) {
    use base64::Engine;
    let key = std::sync::Arc::new(
        base64::engine::general_purpose::STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap_or_default(),
    );
    for stream in listener.incoming().flatten() {
        let key = key.clone();
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(&stream);
            while receive_event(&mut reader, &stream, &key) {}
        });
    }
}

/// Reads, checks, prints and answers one request of a connection; `false` once it is closed.
fn receive_event(
    reader: &mut std::io::BufReader<&std::net::TcpStream>,
    mut stream: &std::net::TcpStream,
    key: &[u8],
) -> bool {
    use base64::Engine;
    use hmac::{Hmac, Mac};
    use std::io::{BufRead, Read, Write};
    let mut headers = std::collections::HashMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return false; // request line
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return false;
    }
    let header = |name: &str| headers.get(name).map(String::as_str).unwrap_or("");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
    mac.update(format!("{}.{}.", header("webhook-id"), header("webhook-timestamp")).as_bytes());
    mac.update(&body);
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    let valid = header("webhook-signature")
        .split(' ')
        .any(|s| s == expected);
    let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    println!(
        "demo endpoint <- {} {} charge {} is {} (signature {})",
        event["id"].as_str().unwrap_or("?"),
        event["type"].as_str().unwrap_or("?"),
        event["data"]["object"]["id"].as_str().unwrap_or("?"),
        event["data"]["object"]["status"].as_str().unwrap_or("?"),
        if valid { "valid" } else { "INVALID" }
    );
    let keep_alive = !header("connection").eq_ignore_ascii_case("close");
    let answer: &[u8] = if keep_alive {
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
    } else {
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    };
    stream.write_all(answer).is_ok() && keep_alive
}
