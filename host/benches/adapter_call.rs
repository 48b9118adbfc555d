//! One adapter call through the runtime: new store, instantiate, call.
//!
//! - `adapter_call/no_io`: the test adapter's `create-charge` that does no I/O — the runtime's
//!   own cost per call.
//! - `adapter_call/efi_create_charge`: the efi adapter's full create against an in-process HTTP
//!   responder (token cached; `PUT /v2/cob/{txid}` and `GET /v2/loc/{id}/qrcode`).
//! - `adapter_call/http_only`: the same two exchanges sent straight with reqwest, so the
//!   difference to the previous line is the runtime's overhead excluding the HTTP exchange.
//!
//! Run with `cargo xtask bench` (builds the adapters first).

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post, put};
use criterion::{Criterion, criterion_group, criterion_main};
use pixgw::runtime::{
    ChargeRequest, Credential, EndpointOverride, Environment, Payer, Runtime, RuntimeConfig,
};

const COB: &str = r#"{"calendario":{"criacao":"2026-11-22T12:00:00Z","expiracao":3600},"txid":"TXID","revisao":0,"loc":{"id":7,"location":"pix.example/qr/v2/7","tipoCob":"cob"},"location":"pix.example/qr/v2/7","status":"ATIVA","valor":{"original":"12.34"},"chave":"key","pixCopiaECola":"00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"}"#;
const QR: &str = r#"{"qrcode":"000201","imagemQrcode":"data:image/png;base64,iVBORw0KGgo="}"#;
const TOKEN: &str =
    r#"{"access_token":"t","token_type":"Bearer","expires_in":3600,"scope":"cob.write"}"#;

async fn responder() -> String {
    let json = |body: &'static str| ([("content-type", "application/json")], body);
    let app = Router::new()
        .route("/oauth/token", post(move || async move { json(TOKEN) }))
        .route(
            "/v2/cob/{txid}",
            put(move || async move { (axum::http::StatusCode::CREATED, json(COB)) }),
        )
        .route("/v2/loc/{id}/qrcode", get(move || async move { json(QR) }));
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
    let runtime = Runtime::new(RuntimeConfig {
        plugin_dir: plugins.path().to_owned(),
        compile_cache_dir: Some(target.join("bench-compile-cache")),
        endpoint_overrides: vec![EndpointOverride {
            provider: "efi".into(),
            endpoint: "api".into(),
            environment: None,
            url: url.clone(),
        }],
        ..Default::default()
    })
    .unwrap();
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
    let efi_cred = efi.prepare(&credential(&[
        ("client-id", "id".into()),
        ("client-secret", "secret".into()),
        ("pix-key", "key".into()),
        (
            "certificate",
            format!("{}{}", cert.pem(), key.serialize_pem()),
        ),
    ]));
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
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    group.bench_function("http_only", |b| {
        b.to_async(&tokio).iter(|| {
            n += 1;
            let (client, url, txid) = (&client, &url, request(n).reference);
            async move {
                let put = client.put(format!("{url}/v2/cob/{txid}")).bearer_auth("t").body(r#"{"calendario":{"expiracao":3600},"valor":{"original":"12.34"},"chave":"key"}"#).send().await.unwrap();
                put.bytes().await.unwrap();
                let qr = client.get(format!("{url}/v2/loc/7/qrcode")).bearer_auth("t").send().await.unwrap();
                qr.bytes().await.unwrap()
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
