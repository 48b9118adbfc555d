//! Shared set-up for the runtime's integration tests: the built adapters, a runtime over a
//! private plugin directory, the PSP simulator, and credentials at it.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod gateway;
pub mod records;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pixgw::runtime::{
    ChargeRequest, Credential, Environment, Limits, Payer, Runtime, RuntimeConfig,
};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// The build's target directory (`CARGO_TARGET_DIR` when set, as for xtask).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// The same component with a custom section appended: identical behaviour, another hash (so
/// the whole-artifact compile cache cannot answer for it).
pub fn new_version_of(wasm: &[u8], marker: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let name = b"pixgw-test-version";
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.extend_from_slice(marker.as_bytes());
    let mut out = wasm.to_vec();
    out.push(0); // custom section id
    leb(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

/// A component built by `cargo xtask plugins` (`plugins/` or `tests/` adapters).
pub fn built_adapter(id: &str) -> PathBuf {
    let target = target_dir();
    let path = [target.join("plugins"), target.join("test-plugins")]
        .into_iter()
        .map(|dir| dir.join(format!("{id}.wasm")))
        .find(|p| p.exists());
    path.unwrap_or_else(|| {
        panic!("{id}.wasm is not built: run `cargo xtask plugins` (or `cargo xtask test`)")
    })
}

pub struct TestRuntime {
    pub runtime: Arc<Runtime>,
    pub plugin_dir: tempfile::TempDir,
}

/// A runtime whose plugin directory holds copies of the named adapters.
pub async fn runtime_with(ids: &[&str], limits: Limits, sim: Option<&psp_sim::Sim>) -> TestRuntime {
    let plugin_dir = tempfile::tempdir().unwrap();
    for id in ids {
        std::fs::copy(
            built_adapter(id),
            plugin_dir.path().join(format!("{id}.wasm")),
        )
        .unwrap();
    }
    let mut config = RuntimeConfig {
        plugin_dir: plugin_dir.path().to_owned(),
        // Shared across tests so each test does not pay Cranelift again.
        compile_cache_dir: Some(target_dir().join("test-compile-cache")),
        limits,
        ..Default::default()
    };
    if let Some(sim) = sim {
        config.trusted_ca_pem.push(sim.ca_pem());
        config.endpoint_overrides =
            pixgw::config::parse_endpoint_overrides(&sim.info().endpoint_overrides.join(","))
                .unwrap();
    }
    let runtime = Runtime::new(config).unwrap();
    for result in runtime.load_all().await {
        result.unwrap();
    }
    TestRuntime {
        runtime,
        plugin_dir,
    }
}

pub async fn start_sim() -> psp_sim::Sim {
    psp_sim::Sim::start(psp_sim::SimOptions::default())
        .await
        .unwrap()
}

/// The simulator's ready-made test account at `provider`, as a credential.
pub fn sim_credential(
    sim: &psp_sim::Sim,
    provider: &str,
    webhook_url: Option<String>,
) -> Credential {
    let info = sim.provider(provider).unwrap();
    Credential {
        id: format!("cred-{provider}"),
        environment: Environment::Test,
        fields: info.credentials,
        webhook_url,
    }
}

pub fn credential(id: &str, fields: &[(&str, &str)]) -> Credential {
    Credential {
        id: id.into(),
        environment: Environment::Test,
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        webhook_url: None,
    }
}

/// A fresh gateway-style reference: 32 alphanumerics.
pub fn reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub fn charge_request(amount: u64) -> ChargeRequest {
    ChargeRequest {
        reference: reference(),
        amount,
        description: Some("Pedido 42".into()),
        payer: Payer {
            email: None,
            name: None,
            document: None,
        },
        expires_in: 3600,
    }
}

/// Polls `check` until it holds or `timeout` passes; for events that happen on other threads.
pub async fn eventually(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    poll(timeout, what, async || check().then_some(())).await
}

/// Repeats `probe` until it yields a value or `timeout` passes.
pub async fn poll<T>(
    timeout: Duration,
    what: &str,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stand-in for the gateway's webhook route at `http://127.0.0.1:<port>{base_path}`: records
/// every request, with `path` relative to `base_path` (what the host hands `parse-webhook`).
pub async fn webhook_receiver(
    base_path: &str,
) -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<pixgw::runtime::WebhookRequest>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let base = base_path.to_owned();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (tx, base) = (tx.clone(), base.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
            let _ = tx.send(pixgw::runtime::WebhookRequest {
                method: parts.method.to_string(),
                path: parts.uri.path().trim_start_matches(&base).to_owned(),
                query: parts.uri.query().unwrap_or_default().to_owned(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
                    .collect(),
                body,
            });
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{base_path}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, rx)
}

/// `GET` (no body) or `POST` (JSON body) on the simulator's control API; asserts a 2xx.
pub async fn sim_control(
    sim: &psp_sim::Sim,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let url = format!("{}{path}", sim.control_url());
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.json().await.unwrap()
}

/// The text of the QR code in a PNG: the API's image, or a screenshot of it as a browser drew it.
pub fn decode_qr(png_bytes: &[u8]) -> Option<String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let luma = |x: usize, y: usize| -> u8 {
        let p = &buf[(y * w + x) * channels..];
        match channels {
            1 | 2 => p[0],
            _ => ((u16::from(p[0]) * 3 + u16::from(p[1]) * 6 + u16::from(p[2])) / 10) as u8,
        }
    };
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(w, h, luma);
    image
        .detect_grids()
        .into_iter()
        .find_map(|grid| grid.decode().ok().map(|(_, text)| text))
}
