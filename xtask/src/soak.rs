//! `cargo xtask soak [--charges N] [--minutes M]`: the gateway under load and faults, killed
//! twice, checked from the outside.
//!
//! Everything runs on loopback: the PSP simulator, a fresh gateway (`pixgw serve`, SQLite, or
//! `PIXGW_SOAK_DATABASE_URL`), and a merchant's webhook receiver. Client threads create
//! charges (each order has its own `Idempotency-Key` and amount, and is retried with the same
//! key while the gateway is down or busy) and pay each one at the simulator. Meanwhile the
//! simulator injects faults (latency, 503s on creates, replies lost after the charge was
//! created, duplicated notifications), the receiver answers some deliveries 503, one of the
//! two endpoints is deleted halfway, and the gateway is killed with SIGKILL twice and started
//! again on the same database.
//!
//! At the end it checks, and prints as a table:
//! - duplicate live charges at the simulator: orders with more than one charge that is not
//!   removed at the PSP (a retried order must never charge twice) — must be 0;
//! - lost `charge.paid`: charges paid at the simulator whose event never reached the
//!   receiver — must be 0;
//! - duplicated `charge.paid`: charges whose paid event reached the receiver under more than
//!   one event id (redeliveries of one id are at-least-once and only counted) — must be 0;
//! - deliveries to the deleted endpoint after its deletion was acknowledged — must be 0.
//!
//! Bounded in count (`--charges`, 120 by default) and time (`--minutes`, 10 by default): when
//! the time runs out the run stops and fails.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use super::gateway::{free_addr, http_json as http, wait_for};
use super::{Reaper, cargo, plugins, run, target_dir};

struct Settings {
    charges: usize,
    deadline: Instant,
}

fn settings(args: &[String]) -> anyhow::Result<Settings> {
    let mut charges = 120;
    let mut minutes = 10;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = || -> anyhow::Result<u64> {
            Ok(args
                .clone()
                .next()
                .with_context(|| format!("{arg} needs a number"))?
                .parse()
                .with_context(|| format!("{arg} needs a number"))?)
        };
        match arg.as_str() {
            "--charges" => charges = value()?.clamp(1, 5000) as usize,
            "--minutes" => minutes = value()?.clamp(1, 120),
            other => bail!("unknown soak option {other:?}: use --charges N and --minutes M"),
        }
        args.next();
    }
    Ok(Settings {
        charges,
        deadline: Instant::now() + Duration::from_secs(minutes * 60),
    })
}

/// What the merchant's receiver got: (path, webhook-id, event type, charge id, when).
#[derive(Clone, Debug)]
struct Receipt {
    path: String,
    event_id: String,
    kind: String,
    charge_id: String,
    at: Instant,
}

/// A merchant's endpoints on one listener: records every delivery and answers every seventh
/// one 503, so retries happen too.
fn receiver(listener: TcpListener, receipts: Arc<Mutex<Vec<Receipt>>>) {
    let count = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming().flatten() {
        let (receipts, count) = (receipts.clone(), count.clone());
        std::thread::spawn(move || {
            let _ = receive(stream, &receipts, &count);
        });
    }
}

fn receive(
    stream: TcpStream,
    receipts: &Mutex<Vec<Receipt>>,
    count: &AtomicUsize,
) -> anyhow::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(&stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    receipts.lock().unwrap().push(Receipt {
        path,
        event_id: headers.get("webhook-id").cloned().unwrap_or_default(),
        kind: event["type"].as_str().unwrap_or_default().to_owned(),
        charge_id: event["data"]["object"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        at: Instant::now(),
    });
    let status = if count.fetch_add(1, Ordering::Relaxed) % 7 == 6 {
        "503 Service Unavailable"
    } else {
        "200 OK"
    };
    (&stream).write_all(
        format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
    )?;
    Ok(())
}

/// The gateway process, started and killed at will on one database and port.
struct Gateway {
    child: Option<Child>,
    bin: PathBuf,
    listen: String,
    env: Vec<(String, String)>,
    args: Vec<String>,
    log: PathBuf,
}

impl Gateway {
    fn start(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(&self.bin)
            .args([
                "serve",
                "--insecure-dev-master-key",
                "--listen",
                &self.listen,
            ])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting pixgw")?;
        self.child = Some(child);
        let url = format!("http://{}", self.listen);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            if matches!(http(&url, "GET", "/readyz", &[], None), Ok((200, _))) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!(
            "the gateway did not get ready within 120 s; see {}",
            self.log.display()
        )
    }

    /// SIGKILL, as a crash or the OOM killer would.
    fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// An order the client placed: its charge, once created.
#[derive(Clone, Debug)]
struct Order {
    charge_id: String,
    reference: String,
    paid_at_psp: bool,
}

pub fn soak(args: &[String]) -> anyhow::Result<()> {
    let settings = settings(args)?;
    plugins()?;
    run(cargo().args(["build", "-p", "pixgw", "-p", "psp-sim"]))?;
    let bin = target_dir().join("debug");
    let dir = target_dir().join("soak");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let started = Instant::now();

    // The simulator.
    let info_file = dir.join("psp-sim.json");
    let _sim = Reaper(
        Command::new(bin.join("psp-sim"))
            .args(["--control-addr", &free_addr()?, "--info-file"])
            .arg(&info_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting psp-sim")?,
    );
    let info: Value = serde_json::from_str(&wait_for(&info_file, Duration::from_secs(30))?)?;
    let control = info["control_url"]
        .as_str()
        .context("control_url")?
        .to_owned();
    let ca_file = dir.join("psp-sim-ca.pem");
    std::fs::write(&ca_file, info["ca_pem"].as_str().context("ca_pem")?)?;
    let overrides: Vec<&str> = info["endpoint_overrides"]
        .as_array()
        .context("endpoint_overrides")?
        .iter()
        .filter_map(Value::as_str)
        .collect();

    // The database and the merchant.
    let data_dir = dir.join("data");
    std::fs::create_dir_all(&data_dir)?;
    let database_url = std::env::var("PIXGW_SOAK_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", data_dir.join("pixgw.db").display()));
    let env = vec![
        ("PIXGW_DATABASE_URL".to_owned(), database_url.clone()),
        ("PIXGW_DATA_DIR".to_owned(), data_dir.display().to_string()),
        ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
        ("PIXGW_RATE_LIMIT".into(), "0".into()),
        ("PIXGW_WORKER_POLL".into(), "200ms".into()),
        ("PIXGW_WEBHOOK_LEASE".into(), "2s".into()),
        ("PIXGW_WEBHOOK_TIMEOUT".into(), "10s".into()),
        (
            "PIXGW_WEBHOOK_RETRY_DELAYS".into(),
            "200ms,500ms,1s,2s,3s,3s,3s,3s,3s,3s,3s,3s".into(),
        ),
        ("PIXGW_RECONCILE_SCHEDULE".into(), "1s,2s,3s".into()),
        ("PIXGW_ORPHAN_AGE".into(), "30s".into()),
        ("PIXGW_LOG".into(), "warn".into()),
    ];
    let cli = |args: &[&str]| -> anyhow::Result<String> {
        let output = Command::new(bin.join("pixgw"))
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()?;
        ensure!(
            output.status.success(),
            "pixgw {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?.trim().to_owned())
    };
    cli(&["migrate"])?;
    let merchant = cli(&[
        "merchant",
        "create",
        "--name",
        "Soak",
        "--plan",
        "enterprise",
    ])?;
    let key = cli(&["key", "create", "--merchant", &merchant, "--env", "test"])?;
    let auth = format!("Bearer {key}");

    let listen = free_addr()?;
    let url = format!("http://{listen}");
    let mut gateway = Gateway {
        child: None,
        bin: bin.join("pixgw"),
        listen: listen.clone(),
        env: env.clone(),
        args: vec![
            "--plugin-dir".into(),
            target_dir().join("plugins").display().to_string(),
            "--trusted-ca".into(),
            ca_file.display().to_string(),
            "--endpoint-overrides".into(),
            overrides.join(","),
            "--compile-cache-dir".into(),
            target_dir().join("soak-compiled").display().to_string(),
        ],
        log: dir.join("pixgw.log"),
    };
    gateway.start()?;

    let provider = "efi";
    let fields = &info["providers"][provider]["credentials"];
    let (status, answer) = http(
        &url,
        "POST",
        "/v1/credentials",
        &[("Authorization", &auth)],
        Some(&json!({"provider": provider, "fields": fields})),
    )?;
    ensure!(status == 201, "connecting {provider}: {status} {answer}");

    // The receiver, with two endpoints: one stays, one is deleted halfway.
    let receipts = Arc::new(Mutex::new(Vec::<Receipt>::new()));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let hooks = format!("http://{}", listener.local_addr()?);
    {
        let receipts = receipts.clone();
        std::thread::spawn(move || receiver(listener, receipts));
    }
    let mut endpoints = Vec::new();
    for path in ["/kept", "/deleted"] {
        let (status, answer) = http(
            &url,
            "POST",
            "/v1/webhook_endpoints",
            &[("Authorization", &auth)],
            Some(&json!({"url": format!("{hooks}{path}"), "events": ["charge.paid"]})),
        )?;
        ensure!(
            status == 201,
            "creating the endpoint {path}: {status} {answer}"
        );
        endpoints.push(answer["id"].as_str().context("endpoint id")?.to_owned());
    }

    // Faults at the simulator for the whole run.
    let fault = |patch: Value| -> anyhow::Result<()> {
        let (status, answer) = http(&control, "POST", "/_sim/faults", &[], Some(&patch))?;
        ensure!(status == 200, "setting faults {patch}: {status} {answer}");
        Ok(())
    };
    fault(json!({"provider": provider, "latency_ms": 30, "duplicate_webhooks": true}))?;

    // The load: client threads take orders in turn.
    let orders: Arc<Mutex<BTreeMap<usize, Order>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let retries = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (orders, next, stop, retries, refused) = (
            orders.clone(),
            next.clone(),
            stop.clone(),
            retries.clone(),
            refused.clone(),
        );
        let (url, auth, control, total) =
            (url.clone(), auth.clone(), control.clone(), settings.charges);
        clients.push(std::thread::spawn(move || {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total || stop.load(Ordering::Relaxed) {
                    return;
                }
                let idempotency = format!("soak-order-{n}");
                let amount = 1000 + n as u64;
                let body = json!({"amount": amount, "provider": "efi", "description": format!("Soak order {n}")});
                // The same key until a final answer: a killed or busy gateway is retried.
                let created = loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match http(
                        &url,
                        "POST",
                        "/v1/charges",
                        &[("Authorization", &auth), ("Idempotency-Key", &idempotency)],
                        Some(&body),
                    ) {
                        Ok((201, charge)) => break Some(charge),
                        // In flight elsewhere, busy, or the gateway going down: again.
                        Ok((409 | 429 | 500 | 503, _)) | Err(_) => {}
                        // A final refusal (a fault the PSP answered): no charge exists.
                        Ok(_) => break None,
                    }
                    retries.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(200));
                };
                let Some(charge) = created else {
                    refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let mut order = Order {
                    charge_id: charge["id"].as_str().unwrap_or_default().to_owned(),
                    reference: charge["reference"].as_str().unwrap_or_default().to_owned(),
                    paid_at_psp: false,
                };
                let pay = json!({"provider": "efi", "reference": order.reference});
                for _ in 0..50 {
                    if let Ok((200, _)) = http(&control, "POST", "/_sim/pay", &[], Some(&pay)) {
                        order.paid_at_psp = true;
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                orders.lock().unwrap().insert(n, order);
            }
        }));
    }

    // Faults, the deletion and the two kills, placed along the run.
    let progress = || orders.lock().unwrap().len();
    let total = settings.charges;
    let mut kills = 0;
    let mut deleted_at: Option<Instant> = None;
    let mut faults_done = 0;
    let mut restart_times = Vec::new();
    while clients.iter().any(|c| !c.is_finished()) {
        ensure!(
            Instant::now() < settings.deadline,
            "the soak ran out of time with {} of {total} orders placed",
            progress()
        );
        let done = progress();
        if faults_done < 3 && done >= total * (faults_done + 1) / 5 {
            let patch = match faults_done {
                0 => json!({"provider": provider, "drop_reply_after_create": 2}),
                1 => {
                    json!({"provider": provider, "fail_next": {"count": 3, "status": 503, "method": "POST", "path_contains": "/cob"}})
                }
                _ => json!({"provider": provider, "latency_ms": 300}),
            };
            fault(patch)?;
            faults_done += 1;
        }
        if deleted_at.is_none() && done >= total / 2 {
            let path = format!("/v1/webhook_endpoints/{}", endpoints[1]);
            if let Ok((200, _)) = http(&url, "DELETE", &path, &[("Authorization", &auth)], None) {
                deleted_at = Some(Instant::now());
            }
        }
        if kills < 2 && done >= total * (kills + 1) / 3 {
            gateway.kill()?;
            kills += 1;
            let down = Instant::now();
            gateway.start()?;
            restart_times.push(down.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for client in clients {
        client
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
    }
    fault(json!({"provider": provider, "latency_ms": 0, "duplicate_webhooks": false}))?;
    let orders: Vec<Order> = orders.lock().unwrap().values().cloned().collect();
    let paid: Vec<&Order> = orders.iter().filter(|o| o.paid_at_psp).collect();
    let deleted_at = deleted_at.context("the endpoint was never deleted")?;

    // Every paid charge's event at the kept endpoint, or the deadline.
    let kept = |receipts: &[Receipt]| -> BTreeMap<String, BTreeSet<String>> {
        let mut by_charge: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in receipts
            .iter()
            .filter(|r| r.path == "/kept" && r.kind == "charge.paid")
        {
            by_charge
                .entry(r.charge_id.clone())
                .or_default()
                .insert(r.event_id.clone());
        }
        by_charge
    };
    let settle_start = Instant::now();
    loop {
        let by_charge = kept(&receipts.lock().unwrap());
        if paid.iter().all(|o| by_charge.contains_key(&o.charge_id)) {
            break;
        }
        if Instant::now() >= settings.deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let settled = settle_start.elapsed();

    // The checks.
    let receipts = receipts.lock().unwrap().clone();
    let by_charge = kept(&receipts);
    let lost = paid
        .iter()
        .filter(|o| !by_charge.contains_key(&o.charge_id))
        .count();
    let duplicated = by_charge.values().filter(|ids| ids.len() > 1).count();
    let paid_receipts = receipts
        .iter()
        .filter(|r| r.path == "/kept" && r.kind == "charge.paid")
        .count();
    let redelivered = paid_receipts - by_charge.values().map(BTreeSet::len).sum::<usize>();
    let to_deleted_after = receipts
        .iter()
        .filter(|r| r.path == "/deleted" && r.at > deleted_at)
        .count();
    let to_deleted_before = receipts
        .iter()
        .filter(|r| r.path == "/deleted" && r.at <= deleted_at)
        .count();
    let (status, sim_charges) = http(
        &control,
        "GET",
        &format!("/_sim/charges?provider={provider}"),
        &[],
        None,
    )?;
    ensure!(status == 200, "listing the simulator's charges: {status}");
    let mut live_by_amount: HashMap<u64, usize> = HashMap::new();
    let mut at_psp = 0;
    for c in sim_charges.as_array().into_iter().flatten() {
        at_psp += 1;
        let status = c["status"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_uppercase();
        if status.contains("REMOVID") || status.contains("CANCEL") {
            continue;
        }
        *live_by_amount
            .entry(c["amount"].as_u64().unwrap_or(0))
            .or_default() += 1;
    }
    let duplicate_live = live_by_amount.values().filter(|n| **n > 1).count();

    let rows: Vec<(&str, String, Option<bool>)> = vec![
        ("orders placed", format!("{total}"), None),
        (
            "orders refused by an injected fault (no charge)",
            refused.load(Ordering::Relaxed).to_string(),
            None,
        ),
        (
            "charges created",
            orders.len().to_string(),
            Some(orders.len() + refused.load(Ordering::Relaxed) == total),
        ),
        (
            "charges paid at the simulator",
            paid.len().to_string(),
            None,
        ),
        (
            "charges at the simulator (all states)",
            at_psp.to_string(),
            None,
        ),
        (
            "client retries (same Idempotency-Key)",
            retries.load(Ordering::Relaxed).to_string(),
            None,
        ),
        (
            "gateway SIGKILLs and restarts",
            format!(
                "{kills} ({})",
                restart_times
                    .iter()
                    .map(|d| format!("{:.1}s", d.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(kills == 2),
        ),
        (
            "duplicate live charges at the simulator",
            duplicate_live.to_string(),
            Some(duplicate_live == 0),
        ),
        ("charge.paid lost", lost.to_string(), Some(lost == 0)),
        (
            "charge.paid duplicated (distinct event ids)",
            duplicated.to_string(),
            Some(duplicated == 0),
        ),
        (
            "charge.paid redeliveries of one id",
            redelivered.to_string(),
            None,
        ),
        (
            "deliveries to the deleted endpoint (before / after)",
            format!("{to_deleted_before} / {to_deleted_after}"),
            Some(to_deleted_after == 0),
        ),
        (
            "time for the last events after the load",
            format!("{:.1}s", settled.as_secs_f64()),
            None,
        ),
        (
            "whole run",
            format!("{:.0}s", started.elapsed().as_secs_f64()),
            None,
        ),
    ];
    println!("\n{:<52} {:>16}  check", "cargo xtask soak", "");
    for (what, value, check) in &rows {
        let mark = match check {
            Some(true) => "ok",
            Some(false) => "FAILED",
            None => "",
        };
        println!("{what:<52} {value:>16}  {mark}");
    }
    println!("\ngateway log: {}", dir.join("pixgw.log").display());
    let failed: Vec<&str> = rows
        .iter()
        .filter(|(_, _, check)| *check == Some(false))
        .map(|(what, ..)| *what)
        .collect();
    ensure!(
        failed.is_empty(),
        "soak checks failed: {}",
        failed.join(", ")
    );
    Ok(())
}
