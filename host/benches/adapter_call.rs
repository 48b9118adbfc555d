//! The plugin runtime's own costs, side by side.
//!
//! - `adapter_call/no_io`: bare host overhead — a fresh store, instantiate, and the test
//!   adapter's trivial `create-charge` (no I/O, no host imports): the runtime's cost per call.
//! - `adapter_call/efi_create_charge`: the efi adapter's full create against an in-process HTTP
//!   responder (token cached; `PUT /v2/cob/{txid}`).
//! - `adapter_call/efi_create_charge_baseline`: the same on Winch's code, what a new version
//!   runs between a hot swap and its optimized code.
//! - `adapter_call/http_only`: the same exchange sent straight with reqwest, so the difference to
//!   the previous line is the runtime's overhead excluding the HTTP exchange.
//! - `startup/cached_13`: a gateway start's runtime part with the thirteen adapters whose
//!   compiled artifacts are cached (engine, linker, load and validate each one).
//! - `swap/new_efi_version`: what hot reload does with an efi file never seen before (Winch's
//!   compile, validate, swap): the bulk of a hot swap's latency until the new version serves;
//!   `swap/new_efi_version_optimized`: the same file loaded straight to Cranelift's code (with
//!   the compiled functions it shares cached), what the optimized code that follows costs.
//! - printed once before those: the first start of the thirteen with an empty compile cache,
//!   and `swap/changed_code`: efi loaded where only inter's functions are cached (what a
//!   version with changed code costs) against efi with nothing cached.
//!
//! Run with `cargo xtask bench` (builds the adapters first), or
//! `cargo bench -p pixgw --bench adapter_call` once `cargo xtask plugins` has run.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{post, put};
use criterion::{Criterion, criterion_group, criterion_main};
use pixgw::runtime::{
    ChargeRequest, Credential, EndpointOverride, Environment, Payer, Runtime, RuntimeConfig, Tier,
};

const COB: &str = r#"{"calendario":{"criacao":"2026-11-22T12:00:00Z","expiracao":3600},"txid":"TXID","revisao":0,"loc":{"id":7,"location":"pix.example/qr/v2/7","tipoCob":"cob"},"location":"pix.example/qr/v2/7","status":"ATIVA","valor":{"original":"12.34"},"chave":"key","pixCopiaECola":"00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"}"#;
const TOKEN: &str =
    r#"{"access_token":"t","token_type":"Bearer","expires_in":3600,"scope":"cob.write"}"#;

async fn responder() -> String {
    let json = |body: &'static str| ([("content-type", "application/json")], body);
    let app = Router::new()
        .route("/oauth/token", post(move || async move { json(TOKEN) }))
        .route(
            "/v2/cob/{txid}",
            put(move || async move { (axum::http::StatusCode::CREATED, json(COB)) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn request(n: u64) -> ChargeRequest {
    ChargeRequest {
        reference: format!("benchreference{n:020}"),
        amount: 1234,
        description: None,
        payer: Payer {
            email: None,
            name: None,
            document: None,
        },
        expires_in: 3600,
    }
}

/// A plugin directory with all thirteen built adapters.
fn all_adapters(target: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut count = 0;
    for entry in std::fs::read_dir(target.join("plugins")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wasm") {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
            count += 1;
        }
    }
    assert_eq!(
        count, 13,
        "expected the 13 built adapters in target/plugins"
    );
    dir
}

/// One start of the runtime over `plugins`: engine, linker, every adapter loaded.
async fn start(plugins: &Path, cache: &Path) -> Arc<Runtime> {
    let runtime = Runtime::new(RuntimeConfig {
        plugin_dir: plugins.to_owned(),
        compile_cache_dir: Some(cache.to_owned()),
        ..Default::default()
    })
    .unwrap();
    for loaded in runtime.load_all().await {
        loaded.unwrap();
    }
    runtime
}

fn startup(c: &mut Criterion, tokio: &tokio::runtime::Runtime, target: &Path) {
    let plugins = all_adapters(target);
    let cache = tempfile::tempdir().unwrap();
    // Once: criterion's ten samples of Cranelift on thirteen adapters would take minutes.
    let started = Instant::now();
    drop(tokio.block_on(start(plugins.path(), cache.path())));
    println!(
        "startup/first_13 (empty compile cache): {:.3} s",
        started.elapsed().as_secs_f64()
    );

    // A version whose code changed: efi compiled where only inter (another central-bank
    // adapter, the same SDK and libraries) was compiled before, so only the functions the two
    // do not share go through Cranelift.
    let (one, cold) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(
        target.join("plugins/inter.wasm"),
        one.path().join("inter.wasm"),
    )
    .unwrap();
    let runtime = tokio.block_on(start(one.path(), cold.path()));
    std::fs::copy(target.join("plugins/efi.wasm"), one.path().join("efi.wasm")).unwrap();
    let started = Instant::now();
    tokio
        .block_on(runtime.load_file(&one.path().join("efi.wasm")))
        .unwrap();
    let shared = started.elapsed();
    let (alone, empty) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let runtime = tokio.block_on(start(alone.path(), empty.path()));
    std::fs::copy(
        target.join("plugins/efi.wasm"),
        alone.path().join("efi.wasm"),
    )
    .unwrap();
    let started = Instant::now();
    tokio
        .block_on(runtime.load_file(&alone.path().join("efi.wasm")))
        .unwrap();
    println!(
        "swap/changed_code: efi after inter {:.0} ms, efi with nothing cached {:.0} ms",
        shared.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64() * 1000.0
    );
    drop(runtime);

    let mut group = c.benchmark_group("startup");
    group.sample_size(10);
    group.bench_function("cached_13", |b| {
        b.to_async(tokio)
            .iter(|| async { start(plugins.path(), cache.path()).await })
    });
    group.finish();

    let efi = std::fs::read(target.join("plugins/efi.wasm")).unwrap();
    let swap_dir = tempfile::tempdir().unwrap();
    let runtime = tokio.block_on(start(swap_dir.path(), cache.path()));
    let file: PathBuf = swap_dir.path().join("efi.wasm");
    let mut version = 0;
    let mut group = c.benchmark_group("swap");
    group.sample_size(10);
    for (name, first) in [
        ("new_efi_version", Tier::Baseline),
        ("new_efi_version_optimized", Tier::Optimized),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    version += 1;
                    let bytes = common::new_version_of(&efi, &version.to_string());
                    std::fs::write(&file, bytes).unwrap();
                    let started = Instant::now();
                    match first {
                        Tier::Baseline => tokio.block_on(runtime.reload_file(&file)),
                        Tier::Optimized => tokio.block_on(runtime.load_file(&file)),
                    }
                    .unwrap();
                    spent += started.elapsed();
                    assert_eq!(runtime.adapter("efi").unwrap().tier(), first);
                    // Not timed: the optimized compile that follows, so the next sample is idle.
                    tokio.block_on(runtime.optimized());
                }
                spent
            })
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let plugins = tempfile::tempdir().unwrap();
    for (dir, id) in [("plugins", "efi"), ("test-plugins", "hostile")] {
        let built = target.join(dir).join(format!("{id}.wasm"));
        assert!(
            built.exists(),
            "{} missing: run `cargo xtask bench`",
            built.display()
        );
        std::fs::copy(built, plugins.path().join(format!("{id}.wasm"))).unwrap();
    }
    let url = tokio.block_on(responder());
    let config = |compile_cache_dir| RuntimeConfig {
        plugin_dir: plugins.path().to_owned(),
        compile_cache_dir,
        endpoint_overrides: vec![EndpointOverride {
            provider: "efi".into(),
            endpoint: "api".into(),
            environment: None,
            url: url.clone(),
        }],
        ..Default::default()
    };
    let runtime = Runtime::new(config(Some(target.join("bench-compile-cache")))).unwrap();
    for loaded in tokio.block_on(runtime.load_all()) {
        loaded.unwrap();
    }
    let runtime: Arc<Runtime> = runtime;

    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["bench".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let credential = |fields: &[(&str, String)]| Credential {
        id: "bench".into(),
        environment: Environment::Test,
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        webhook_url: None,
    };
    let efi = runtime.adapter("efi").unwrap();
    let efi_credential = credential(&[
        ("client-id", "id".into()),
        ("client-secret", "secret".into()),
        ("pix-key", "key".into()),
        (
            "certificate",
            format!("{}{}", cert.pem(), key.serialize_pem()),
        ),
    ]);
    let efi_cred = efi.prepare(&efi_credential);
    // Another runtime's efi as a hot swap serves it first: Winch's code (a handle keeps the
    // code it was taken with; the optimized compile that follows is awaited, not timed).
    let swapped = Runtime::new(config(None)).unwrap();
    tokio
        .block_on(swapped.reload_file(&plugins.path().join("efi.wasm")))
        .unwrap();
    let efi_baseline = swapped.adapter("efi").unwrap();
    assert_eq!(efi_baseline.tier(), Tier::Baseline);
    let efi_baseline_cred = efi_baseline.prepare(&efi_credential);
    tokio.block_on(swapped.optimized());
    let hostile = runtime.adapter("hostile").unwrap();
    let hostile_cred = hostile.prepare(&credential(&[("behaviour", "ok".into())]));

    let mut group = c.benchmark_group("adapter_call");
    let mut n = 0;
    group.bench_function("no_io", |b| {
        b.to_async(&tokio).iter(|| {
            n += 1;
            let (hostile, cred, req) = (&hostile, &hostile_cred, request(n));
            async move { hostile.create_charge(cred, "bench", &req).await.unwrap() }
        })
    });
    group.bench_function("efi_create_charge", |b| {
        b.to_async(&tokio).iter(|| {
            n += 1;
            let (efi, cred, req) = (&efi, &efi_cred, request(n));
            async move { efi.create_charge(cred, "bench", &req).await.unwrap() }
        })
    });
    group.bench_function("efi_create_charge_baseline", |b| {
        b.to_async(&tokio).iter(|| {
            n += 1;
            let (efi, cred, req) = (&efi_baseline, &efi_baseline_cred, request(n));
            async move { efi.create_charge(cred, "bench", &req).await.unwrap() }
        })
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    group.bench_function("http_only", |b| {
        b.to_async(&tokio).iter(|| {
            n += 1;
            let (client, url, txid) = (&client, &url, request(n).reference);
            async move {
                let put = client.put(format!("{url}/v2/cob/{txid}")).bearer_auth("t").body(r#"{"calendario":{"expiracao":3600},"valor":{"original":"12.34"},"chave":"key"}"#).send().await.unwrap();
                put.bytes().await.unwrap()
            }
        })
    });
    group.finish();

    startup(c, &tokio, &target);
}

criterion_group!(benches, bench);
criterion_main!(benches);
