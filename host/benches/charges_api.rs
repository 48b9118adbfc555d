//! `POST /v1/charges` through the real gateway, and the same charge straight at the simulator.
//!
//! - `charges_api/gateway_create`: one charge through `pixgw serve` (release build, SQLite):
//!   auth, validation, storage, the efi adapter in its sandbox, the PSP exchange.
//! - `charges_api/direct_create`: the PSP exchange alone, as the adapter performs it (cached
//!   token, `PUT /v2/cob/{txid}` over the same mTLS; the QR image is drawn by the gateway).
//!
//! The difference is the gateway's overhead: 500 charges one at a time through each,
//! interleaved, print p50 and p99 side by side with the overhead against its targets (≤ 1 ms
//! p50, ≤ 5 ms p99). A load run of each (concurrency 8) then prints throughput, p50 and p99. Last, `pay → webhook`: from `POST /_sim/pay` to the merchant's
//! endpoint receiving the signed `charge.paid` (PSP notification, confirming query, state
//! change, outbox, delivery), p50 and p99 over 200 charges. Run with `cargo xtask bench`;
//! `PIXGW_BENCH_SQLITE_SYNCHRONOUS=normal` runs it with SQLite's `synchronous = NORMAL`
//! instead of the default FULL, to see what durability costs.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant_on};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

struct Direct {
    client: reqwest::Client,
    api: String,
    token: String,
    pix_key: String,
}

impl Direct {
    async fn new(sim: &psp_sim::Sim) -> Direct {
        let efi = sim.provider("efi").unwrap();
        let tls = psp_sim::tls::client_config(&sim.ca_pem(), Some(&efi.credentials["certificate"]))
            .unwrap();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .unwrap();
        let api = efi.endpoints["api"].clone();
        let token: Value = client
            .post(format!("{api}/oauth/token"))
            .basic_auth(
                &efi.credentials["client-id"],
                Some(&efi.credentials["client-secret"]),
            )
            .json(&json!({"grant_type": "client_credentials"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Direct {
            client,
            api,
            token: token["access_token"].as_str().unwrap().to_owned(),
            pix_key: efi.credentials["pix-key"].clone(),
        }
    }

    async fn create(&self) {
        let txid = uuid::Uuid::new_v4().simple().to_string();
        let cob = self
            .client
            .put(format!("{}/v2/cob/{txid}", self.api))
            .bearer_auth(&self.token)
            .json(&json!({"calendario": {"expiracao": 3600}, "valor": {"original": "19.90"}, "chave": self.pix_key}))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        assert!(cob["pixCopiaECola"].is_string(), "{cob}");
    }
}

async fn gateway_create(gw: &Gateway, key: &str) {
    let (status, body) = gw
        .post(
            "/v1/charges",
            key,
            json!({"amount": 1990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

/// `count` charges through the gateway and `count` straight at the simulator, alternating:
/// ((p50, p99) gateway, (p50, p99) direct).
async fn one_at_a_time(
    gw: &Gateway,
    key: &str,
    direct: &Direct,
    count: usize,
) -> ((Duration, Duration), (Duration, Duration)) {
    let (mut g, mut d) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for _ in 0..count {
        let t = Instant::now();
        gateway_create(gw, key).await;
        g.push(t.elapsed());
        let t = Instant::now();
        direct.create().await;
        d.push(t.elapsed());
    }
    let pct = |v: &mut Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[(v.len() * 99 / 100).min(v.len() - 1)])
    };
    (pct(&mut g), pct(&mut d))
}

/// `total` calls of `f`, `concurrency` at a time: (throughput per second, p50, p99).
async fn load<F, Fut>(total: usize, concurrency: usize, f: F) -> (f64, Duration, Duration)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let per_worker = total / concurrency;
    let workers = (0..concurrency).map(|_| {
        let f = f.clone();
        tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_worker);
            for _ in 0..per_worker {
                let t = Instant::now();
                f().await;
                latencies.push(t.elapsed());
            }
            latencies
        })
    });
    let mut all: Vec<Duration> = Vec::new();
    for w in futures::future::join_all(workers).await {
        all.extend(w.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    (
        all.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (sim, db, gw, key, direct) = rt.block_on(async {
        let sim = common::start_sim().await;
        let mut db = TestDb::new(Backend::Sqlite).await;
        // `PIXGW_BENCH_SQLITE_SYNCHRONOUS=normal` measures the faster, less durable setting
        // against the default FULL.
        if let Ok(mode) = std::env::var("PIXGW_BENCH_SQLITE_SYNCHRONOUS") {
            db.url = format!("{}?synchronous={mode}", db.url);
        }
        // Ultra 2: thousands of charges a run stay far below its monthly count.
        let merchant = create_merchant_on(&db, "Bench", "ultra_2");
        let options = GatewayOptions {
            env: vec![
                ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
                ("PIXGW_RATE_LIMIT".into(), "0".into()),
                ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
            ],
            ..Default::default()
        };
        let gw = Gateway::start(&db, &sim, &["efi"], options).await;
        gw.connect(&sim, &merchant.test_key, "efi", &[]).await;
        let direct = Direct::new(&sim).await;
        // Warm both paths: token, TLS sessions, compiled adapter, SQLite pages.
        for _ in 0..20 {
            gateway_create(&gw, &merchant.test_key).await;
            direct.create().await;
        }
        (sim, db, gw, merchant.test_key, direct)
    });

    let mut group = c.benchmark_group("charges_api");
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("gateway_create", |b| {
        b.to_async(&rt).iter(|| gateway_create(&gw, &key))
    });
    group.bench_function("direct_create", |b| {
        b.to_async(&rt).iter(|| direct.create())
    });
    group.finish();

    let (g, d) = rt.block_on(one_at_a_time(&gw, &key, &direct, 500));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("\none charge at a time, 500 through each (interleaved):");
    println!("  {:<10} {:>9} {:>9}", "", "p50 ms", "p99 ms");
    println!("  {:<10} {:>9.2} {:>9.2}", "gateway", ms(g.0), ms(g.1));
    println!("  {:<10} {:>9.2} {:>9.2}", "direct", ms(d.0), ms(d.1));
    let (o50, o99) = (ms(g.0) - ms(d.0), ms(g.1) - ms(d.1));
    println!(
        "  {:<10} {:>9.2} {:>9.2}   (targets: <= 1 ms p50 {}, <= 5 ms p99 {})",
        "overhead",
        o50,
        o99,
        if o50 <= 1.0 { "met" } else { "MISSED" },
        if o99 <= 5.0 { "met" } else { "MISSED" },
    );

    let gw = std::sync::Arc::new(gw);
    let direct = std::sync::Arc::new(direct);
    let key = std::sync::Arc::new(key);
    let (g, d) = rt.block_on(async {
        let (gw2, key2) = (gw.clone(), key.clone());
        let g = load(2000, 8, move || {
            let (gw, key) = (gw2.clone(), key2.clone());
            async move { gateway_create(&gw, &key).await }
        })
        .await;
        let direct2 = direct.clone();
        let d = load(2000, 8, move || {
            let direct = direct2.clone();
            async move { direct.create().await }
        })
        .await;
        (g, d)
    });
    println!("\nload, 2000 charges, concurrency 8:");
    println!(
        "  gateway:   {:>7.0}/s  p50 {:>8.2?}  p99 {:>8.2?}",
        g.0, g.1, g.2
    );
    println!(
        "  simulator: {:>7.0}/s  p50 {:>8.2?}  p99 {:>8.2?}",
        d.0, d.1, d.2
    );
    println!(
        "  overhead:  p50 {:>8.2?}  p99 {:>8.2?}",
        g.1.saturating_sub(d.1),
        g.2.saturating_sub(d.2)
    );

    let latencies = rt.block_on(pay_to_webhook(&gw, &key, &sim, 200));
    println!("\npay -> webhook, 200 charges:");
    println!("  p50 {:>8.2?}  p99 {:>8.2?}", latencies.0, latencies.1);
    drop((gw, sim, db));
}

/// From `POST /_sim/pay` to the merchant endpoint holding the signed `charge.paid`: (p50, p99).
async fn pay_to_webhook(
    gw: &Gateway,
    key: &str,
    sim: &psp_sim::Sim,
    count: usize,
) -> (Duration, Duration) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let tx = tx.clone();
        async move {
            let event: Value = serde_json::from_slice(&body).unwrap_or_default();
            let _ = tx.send(
                event["data"]["object"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/events", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (status, _) = gw
        .post("/v1/webhook_endpoints", key, json!({"url": url}))
        .await;
    assert_eq!(status, 201);
    let control = reqwest::Client::new();
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let (_, charge) = gw
            .post(
                "/v1/charges",
                key,
                json!({"amount": 1990, "provider": "efi"}),
            )
            .await;
        let id = charge["id"].as_str().unwrap().to_owned();
        let started = Instant::now();
        control
            .post(format!("{}/_sim/pay", sim.control_url()))
            .json(&json!({"provider": "efi", "reference": charge["reference"]}))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap();
        loop {
            let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .unwrap()
                .unwrap();
            if got == id {
                break;
            }
        }
        latencies.push(started.elapsed());
    }
    latencies.sort();
    (latencies[count / 2], latencies[count * 99 / 100])
}

criterion_group!(benches, bench);
criterion_main!(benches);
