//! `cargo xtask load`: sustained charge creation, straight at the PSP simulator and through the
//! gateway, side by side, and an adapter hot swap under that load.
//!
//! Bounded and loopback only: a release [`Demo`] (simulator + `pixgw serve`, merchant on the
//! `ultra_2` plan, rate limit off, reconciler idle) per backend, an in-process load generator
//! (tokio + reqwest) that creates efi charges with an `Idempotency-Key` each, closed loop
//! (`--concurrency` requests in flight) or open loop (`--rate` per second, latency measured from
//! each request's scheduled time), for `--seconds` (60 by default) per run.
//!
//! `--compare <dir>` stands up a second demo running the `pixgw` and `psp-sim` in `<dir>`
//! (another build, kept aside) and loads both at the same time, each with its own generator
//! tasks on this process's one worker: the two builds meet the same machine at the same
//! moment, where runs one after the other differ by ±15 % on their own.
//!
//! Runs: (a) the simulator alone — the PSP exchange the efi adapter performs (`PUT /v2/cob`
//! with a cached OAuth token over mTLS); (b) the gateway on each backend (`--backend sqlite`,
//! `sqlite-normal` (`synchronous = NORMAL`: the durability cost), `postgres` (a database of
//! its own, dropped afterwards), `both` = sqlite + postgres (default), `all`); (c) halfway
//! through each gateway run, a new version of `efi.wasm` (one more custom section) is renamed
//! into the gateway's plugin directory, as an operator would, and `GET /v1/adapters` is
//! polled until the new version serves. The table gives charges/s, the webhooks the gateway
//! delivered per second meanwhile (each charge's `charge.created` goes to the demo's
//! endpoint: the outbox keeps up only if the two match), p50/p90/p99/max, errors,
//! the gateway's peak RSS during the run (`VmHWM`, reset as the run starts: the start's peak,
//! compiling the thirteen adapters when the compile cache is empty, is printed apart), the
//! swap's time to serve and the requests that failed while it happened (must be 0: the
//! command fails otherwise), and the bytes the gateway (on PostgreSQL: the gateway and the
//! server) had written to storage per charge during the run (`write_bytes` of `/proc/<pid>/io`:
//! WAL frames, checkpoints and the database file's growth; the filesystem's own journal is
//! not counted). Below the table, each run's tail: the p99 of each tenth of the run, the p99
//! outside the swap's window, and around the swap the requests started and the slowest of
//! them per 50 ms (how deep the swap's dip goes and how long its queue takes to drain).
//! `PIXGW_LOAD_SAMPLES=<dir>` also writes each run's requests there, one CSV line each
//! ([`write_samples`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use sha2::Digest;

use crate::gateway::Demo;
use crate::{plugins, target_dir};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    SqliteNormal,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::SqliteNormal => "sqlite-normal",
            Backend::Postgres => "postgres",
        }
    }
}

struct Settings {
    seconds: u64,
    concurrency: usize,
    /// Open loop at this many requests per second; closed loop when `None`.
    rate: Option<u32>,
    backends: Vec<Backend>,
    direct: bool,
    /// Another build's binaries, loaded at the same time as this one's.
    compare: Option<PathBuf>,
}

const USAGE: &str = "cargo xtask load [--seconds N (60)] [--concurrency N (32)] [--rate N] \
                     [--backend sqlite|sqlite-normal|postgres|both|all] [--no-direct] \
                     [--compare <dir of another build's pixgw and psp-sim>]";

fn settings(args: &[String]) -> anyhow::Result<Settings> {
    let mut s = Settings {
        seconds: 60,
        concurrency: 32,
        rate: None,
        backends: vec![Backend::Sqlite, Backend::Postgres],
        direct: true,
        compare: None,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .with_context(|| format!("{flag} needs a value; usage: {USAGE}"))
        };
        let number = |v: &String| -> anyhow::Result<u64> {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .with_context(|| format!("{flag} takes a positive whole number, not {v:?}"))
        };
        match flag.as_str() {
            "--seconds" => s.seconds = number(value()?)?.min(3600),
            "--concurrency" => s.concurrency = number(value()?)?.min(4096) as usize,
            "--rate" => s.rate = Some(number(value()?)?.min(100_000) as u32),
            "--backend" => {
                s.backends = match value()?.as_str() {
                    "sqlite" => vec![Backend::Sqlite],
                    "sqlite-normal" => vec![Backend::SqliteNormal],
                    "postgres" => vec![Backend::Postgres],
                    "both" => vec![Backend::Sqlite, Backend::Postgres],
                    "all" => vec![Backend::Sqlite, Backend::SqliteNormal, Backend::Postgres],
                    other => bail!(
                        "--backend {other:?}: use sqlite, sqlite-normal, postgres, both or all"
                    ),
                }
            }
            "--no-direct" => s.direct = false,
            "--compare" => {
                let dir = PathBuf::from(value()?);
                for bin in ["pixgw", "psp-sim"] {
                    ensure!(
                        dir.join(bin).is_file(),
                        "--compare {}: no {bin} there; give a directory holding another \
                         build's pixgw and psp-sim",
                        dir.display()
                    );
                }
                s.compare = Some(dir);
            }
            other => bail!("unknown option {other:?}; usage: {USAGE}"),
        }
    }
    Ok(s)
}

/// One run's results.
struct Run {
    label: String,
    /// (start since the run began, latency, success), one per request.
    samples: Vec<(Duration, Duration, bool)>,
    elapsed: Duration,
    first_error: Option<String>,
    rss: Option<RssPeaks>,
    /// Cores used during the run: the gateway's (none for the direct run), the simulator's,
    /// this load generator's and, on PostgreSQL, the database server's, read from `/proc`.
    cores: Cores,
    swap: Option<Swap>,
    /// Webhooks the gateway delivered per second during the run, from its `/metrics`: the
    /// outbox keeps up only when this matches charges/s.
    webhooks_per_s: Option<f64>,
    /// Bytes written to storage during the run by the gateway and, on PostgreSQL, the server
    /// (shared by `--compare`'s runs, each reporting all of it).
    written: Option<u64>,
}

#[derive(Default, Clone, Copy)]
struct Cores {
    gateway: Option<f64>,
    simulator: Option<f64>,
    generator: Option<f64>,
    /// Every `postgres` process of the machine's server: runs at the same time (`--compare`)
    /// share it, and each reports all of it.
    database: Option<f64>,
}

/// The gateway's peak resident set, in KiB.
#[derive(Clone, Copy)]
struct RssPeaks {
    /// Before the run: its start (with the compile cache empty, all thirteen adapters are
    /// compiled then) and the warm-up.
    before: u64,
    /// During the run; `None` when the peak could not be reset (`/proc/<pid>/clear_refs`),
    /// and `before` is then the whole life's.
    during: Option<u64>,
}

/// CPU time used so far by the processes whose cores a run reports.
struct CpuClock {
    at: Instant,
    gateway: Option<(u32, u64)>,
    simulator: Option<(u32, u64)>,
    generator: Option<u64>,
    database: Option<HashMap<u32, u64>>,
}

impl CpuClock {
    /// Starts counting for `gateway` (the gateway's pid, or `None`), the simulator started
    /// beside `sibling_of` (a pid whose parent also started the simulator) and, when
    /// `postgres`, the PostgreSQL server.
    fn start(gateway: Option<u32>, sibling_of: u32, postgres: bool) -> CpuClock {
        let simulator = simulator_pid(sibling_of);
        CpuClock {
            at: Instant::now(),
            gateway: gateway.and_then(|pid| Some((pid, cpu_ticks(pid)?))),
            simulator: simulator.and_then(|pid| Some((pid, cpu_ticks(pid)?))),
            generator: cpu_ticks(std::process::id()),
            database: postgres.then(postgres_ticks),
        }
    }

    fn read(&self) -> Cores {
        let seconds = self.at.elapsed().as_secs_f64();
        // `/proc` counts in USER_HZ, 100 a second on Linux.
        let cores = |before: u64, now: Option<u64>| {
            now.map(|now| now.saturating_sub(before) as f64 / 100.0 / seconds)
        };
        Cores {
            gateway: self.gateway.and_then(|(pid, t)| cores(t, cpu_ticks(pid))),
            simulator: self.simulator.and_then(|(pid, t)| cores(t, cpu_ticks(pid))),
            generator: self
                .generator
                .and_then(|t| cores(t, cpu_ticks(std::process::id()))),
            // A backend started during the run counts from nothing; one that ended is lost
            // (the gateway's pooled sessions last the run).
            database: self.database.as_ref().and_then(|before| {
                let used = postgres_ticks()
                    .iter()
                    .map(|(pid, now)| now - before.get(pid).copied().unwrap_or(0).min(*now))
                    .sum();
                cores(0, Some(used))
            }),
        }
    }
}

/// CPU ticks so far of every process named `postgres`, by pid.
fn postgres_ticks() -> HashMap<u32, u64> {
    postgres_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, cpu_ticks(pid)?)))
        .collect()
}

/// Every process named `postgres`.
fn postgres_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid = entry.ok()?.file_name().into_string().ok()?;
            let (name, _) = proc_stat(&pid)?;
            (name == "postgres").then(|| pid.parse().ok())?
        })
        .collect()
}

/// Bytes a process caused to be written to storage so far (`write_bytes` of `/proc/<pid>/io`).
fn write_bytes(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// User and system CPU time of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let (_, fields) = proc_stat(&pid.to_string())?;
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The `psp-sim` process started by the parent of `sibling`.
fn simulator_pid(sibling: u32) -> Option<u32> {
    let parent = proc_stat(&sibling.to_string())?.1.get(1)?.clone();
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid = entry.ok()?.file_name().into_string().ok()?;
        let (name, fields) = proc_stat(&pid)?;
        if name == "psp-sim" && fields.get(1) == Some(&parent) {
            pid.parse().ok()
        } else {
            None
        }
    })
}

/// A process's name and the fields of `/proc/<pid>/stat` after it (state, parent, …); the
/// name may hold spaces and ends at the last `)`.
fn proc_stat(pid: &str) -> Option<(String, Vec<String>)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let fields = stat[close + 2..]
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    Some((stat[open + 1..close].to_owned(), fields))
}

/// The hot swap of one run.
struct Swap {
    /// From the file's rename to `/v1/adapters` naming the new version as serving.
    serving_after: Result<Duration, String>,
    /// From the rename to the new version serving its optimized code, when it served baseline
    /// code first.
    optimized_after: Option<Duration>,
    /// Requests that failed between the rename and one second after the new version served.
    failed: usize,
    /// That window, since the run began, when the swap completed.
    window: Option<(Duration, Duration)>,
}

pub fn load(args: &[String]) -> anyhow::Result<()> {
    let s = settings(args)?;
    // Built here (the demo builds them again, a no-op) so each run gets a fresh copy to swap in.
    if std::env::var_os("PIXGW_DEMO_BIN_DIR").is_none() {
        plugins()?;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let load_avg = |when: &str| {
        let avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let avg: Vec<&str> = avg.split_whitespace().take(3).collect();
        eprintln!("xtask: load average {when}: {}", avg.join(" "));
        avg.join(" ")
    };
    let before = load_avg("before the runs");
    let mut runs = Vec::new();
    for (i, backend) in s.backends.iter().copied().enumerate() {
        let this = Stand::up(&rt, backend, "", None)?;
        if i == 0 && s.direct {
            let target = rt.block_on(Direct::new(&this.info))?;
            let target = Target::Direct(target);
            eprintln!("xtask: {} s straight at the simulator", s.seconds);
            let clock = CpuClock::start(None, this.pid, false);
            let mut run = rt.block_on(drive(
                "simulator (direct)".into(),
                Arc::new(target),
                &s,
                None,
            ));
            run.cores = clock.read();
            runs.push(run);
        }
        let other = s
            .compare
            .as_deref()
            .map(|dir| Stand::up(&rt, backend, "-compare", Some(dir)))
            .transpose()?;
        eprintln!(
            "xtask: {} s through the gateway ({}){}",
            s.seconds,
            backend.name(),
            if other.is_some() {
                ", this build and the other at the same time"
            } else {
                ""
            }
        );
        let label = format!("gateway {}", backend.name());
        match &other {
            None => runs.push(rt.block_on(this.measure(label, &s))?),
            Some(other) => {
                let compared = format!("{label} (other)");
                let (a, b) = rt.block_on(async {
                    tokio::join!(this.measure(label, &s), other.measure(compared, &s))
                });
                runs.extend([a?, b?]);
            }
        }
    }
    let after = load_avg("after the runs");

    println!(
        "\ncargo xtask load: {} s per run, {}, efi charges with an Idempotency-Key each, \
         release build, {} cores, load average {before} before / {after} after\n",
        s.seconds,
        match s.rate {
            Some(r) => format!("open loop at {r}/s (latency from the scheduled time)"),
            None => format!("closed loop, concurrency {}", s.concurrency),
        },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "{:<24} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>27} {:>16}",
        "run",
        "charges/s",
        "webhooks/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "errors",
        "RSS peak",
        "cores gateway/sim/load/db",
        "written/charge"
    );
    let mut swap_failures = 0;
    for run in &runs {
        let mut ok: Vec<Duration> = run.samples.iter().filter(|s| s.2).map(|s| s.1).collect();
        ok.sort();
        let errors = run.samples.len() - ok.len();
        let pct = |p: f64| percentile_ms(&ok, p);
        let cores = |c: Option<f64>| c.map_or("-".to_owned(), |c| format!("{c:.2}"));
        let cores = format!(
            "{}/{}/{}/{}",
            cores(run.cores.gateway),
            cores(run.cores.simulator),
            cores(run.cores.generator),
            cores(run.cores.database)
        );
        let written = match run.written {
            Some(bytes) if !ok.is_empty() => {
                format!("{:.1} KB", bytes as f64 / ok.len() as f64 / 1000.0)
            }
            _ => "-".to_owned(),
        };
        println!(
            "{:<24} {:>10.0} {:>10} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7} {:>10} {:>27} {:>16}",
            run.label,
            ok.len() as f64 / run.elapsed.as_secs_f64(),
            run.webhooks_per_s.map_or("-".into(), |w| format!("{w:.0}")),
            pct(0.50),
            pct(0.90),
            pct(0.99),
            ok.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
            errors,
            run.rss.map_or("-".into(), |rss| match rss.during {
                Some(during) => mb(during),
                None => format!("{} (life)", mb(rss.before)),
            }),
            cores,
            written,
        );
    }
    println!();
    if let Some(dir) = &s.compare {
        println!(
            "(other): the build in {}, loaded at the same time as this one\n",
            dir.display()
        );
    }
    for run in &runs {
        if let Some(error) = &run.first_error {
            println!("{}: first error: {error}", run.label);
        }
        if let Some(swap) = &run.swap {
            swap_failures += swap.failed;
            match &swap.serving_after {
                Ok(d) => println!(
                    "{}: hot swap of efi.wasm: the new version served {:.0} ms after the file \
                     landed{}; failed requests during the swap: {}",
                    run.label,
                    d.as_secs_f64() * 1000.0,
                    swap.optimized_after.map_or(String::new(), |o| format!(
                        " (baseline code; optimized {:.0} ms after)",
                        o.as_secs_f64() * 1000.0
                    )),
                    swap.failed
                ),
                Err(e) => println!("{}: hot swap of efi.wasm failed: {e}", run.label),
            }
        }
        if let Some(RssPeaks {
            before,
            during: Some(_),
        }) = run.rss
        {
            println!(
                "{}: RSS peak before the run (the start, its compiles, the warm-up): {}",
                run.label,
                mb(before)
            );
        }
        println!("{}: {}", run.label, tail(run));
    }
    ensure!(
        swap_failures == 0,
        "{swap_failures} requests failed during the hot swaps"
    );
    ensure!(
        runs.iter()
            .all(|r| r.swap.as_ref().is_none_or(|s| s.serving_after.is_ok())),
        "a hot swap did not serve the new version"
    );
    Ok(())
}

/// The `p` quantile of `sorted` latencies in milliseconds (NaN when there are none).
fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1)))
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// Where a run's tail lies: the p99 of each tenth of the run (by start time), and the p99 of
/// the requests that did not overlap the hot swap's window (its rename to a second after it
/// served), to tell a steady tail from one the swap's compile made.
fn tail(run: &Run) -> String {
    let p99 = |mut latencies: Vec<Duration>| {
        latencies.sort();
        format!("{:.1}", percentile_ms(&latencies, 0.99))
    };
    let ok = || run.samples.iter().filter(|s| s.2);
    let tenth = run.elapsed / 10;
    let slices: Vec<String> = (0..10)
        .map(|i| {
            let (from, to) = (tenth * i, tenth * (i + 1));
            p99(ok()
                .filter(|s| s.0 >= from && s.0 < to)
                .map(|s| s.1)
                .collect())
        })
        .collect();
    let mut line = format!("p99 ms by tenth of the run: {}", slices.join(" "));
    if let Some((from, to)) = run.swap.as_ref().and_then(|s| s.window) {
        let outside = ok().filter(|s| s.0 + s.1 < from || s.0 > to).map(|s| s.1);
        line += &format!(
            "; outside the swap's window p99 {} ms",
            p99(outside.collect())
        );
        line += &format!("\n{}: {}", run.label, around_swap(run, from));
    }
    line
}

/// Requests started, and the slowest of them, in each 50 ms from 300 ms before the new file
/// landed to 700 ms after: how deep the swap's dip is and how long the queue takes to drain.
fn around_swap(run: &Run, landed: Duration) -> String {
    const STEP: Duration = Duration::from_millis(50);
    let first = landed.saturating_sub(STEP * 6);
    let steps: Vec<String> = (0..20u32)
        .map(|i| {
            let (from, to) = (first + STEP * i, first + STEP * (i + 1));
            let (count, slowest) = run
                .samples
                .iter()
                .filter(|s| s.2 && s.0 >= from && s.0 < to)
                .fold((0, Duration::ZERO), |(n, max), s| (n + 1, max.max(s.1)));
            format!("{count}/{:.0}", slowest.as_secs_f64() * 1e3)
        })
        .collect();
    format!(
        "around the swap, requests started/slowest ms per 50 ms from 300 ms before the file \
         landed: {}",
        steps.join(" ")
    )
}

/// A release demo stood up for a gateway run: the gateway to load and what a run reads of it.
struct Stand {
    gateway: Arc<Target>,
    /// The gateway's URL, for its `/metrics` and the hot swap's polls.
    url: String,
    pid: u32,
    /// The simulator's `psp-sim.json`.
    info: Value,
    plugin_dir: PathBuf,
    /// Whether its database is the PostgreSQL server (whose cores a run reports).
    postgres: bool,
    // Dropped last: the demo stops before its database is dropped.
    _demo: Demo,
    _database: Option<PgDatabase>,
}

impl Stand {
    /// A demo on `backend` named `load-<backend><suffix>`, running the binaries in `built`
    /// (those of `PIXGW_DEMO_BIN_DIR`, or this checkout's release build, when `None`), warmed.
    fn up(
        rt: &tokio::runtime::Runtime,
        backend: Backend,
        suffix: &str,
        built: Option<&std::path::Path>,
    ) -> anyhow::Result<Stand> {
        let name = format!("load-{}{suffix}", backend.name());
        let dir = target_dir().join(&name);
        let plugin_dir = dir.join("plugins");
        let _ = std::fs::remove_dir_all(&plugin_dir);
        std::fs::create_dir_all(&plugin_dir)?;
        for entry in std::fs::read_dir(target_dir().join("plugins"))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "wasm") {
                std::fs::copy(&path, plugin_dir.join(path.file_name().unwrap()))?;
            }
        }
        let database = match backend {
            Backend::Sqlite | Backend::SqliteNormal => None,
            Backend::Postgres => Some(PgDatabase::create(suffix)?),
        };
        let url = match (&database, backend) {
            (Some(db), _) => db.url.clone(),
            (None, Backend::SqliteNormal) => format!(
                "sqlite://{}?synchronous=normal",
                dir.join("data/pixgw.db").display()
            ),
            (None, _) => format!("sqlite://{}", dir.join("data/pixgw.db").display()),
        };
        let plugin_dir_text = plugin_dir.display().to_string();
        let demo = Demo::start(
            &name,
            &[
                ("PIXGW_DEMO_PROFILE", "release"),
                ("PIXGW_DEMO_DATABASE_URL", &url),
                ("PIXGW_DEMO_PLUGIN_DIR", &plugin_dir_text),
                // 500,000 charges a month: a run's charges stay far below.
                ("PIXGW_DEMO_PLAN", "ultra_2"),
                ("PIXGW_RATE_LIMIT", "0"),
                // The reconciler's checks of pending charges are load of another kind.
                ("PIXGW_RECONCILE_SCHEDULE", "1h"),
                ("RUST_LOG", "warn"),
            ],
            built,
        )?;
        let pid: u32 = demo.var("PIXGW_PID")?.parse()?;
        let info: Value =
            serde_json::from_str(&std::fs::read_to_string(demo.var("PSP_SIM_INFO")?)?)?;
        let gateway = Gateway {
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(4096)
                .timeout(Duration::from_secs(30))
                .build()?,
            url: demo.var("PIXGW_URL")?,
            auth: format!("Bearer {}", demo.var("PIXGW_API_KEY")?),
            run: uuid_like(),
        };
        // Warm: the adapter's OAuth token, connections, the database's pages.
        for n in 0..20 {
            rt.block_on(gateway.create(n))
                .map_err(|e| anyhow::anyhow!("a warm-up charge failed ({name}): {e}"))?;
        }
        Ok(Stand {
            url: gateway.url.clone(),
            gateway: Arc::new(Target::Gateway(gateway)),
            pid,
            info,
            plugin_dir,
            postgres: database.is_some(),
            _demo: demo,
            _database: database,
        })
    }

    /// One run through this gateway, with a hot swap halfway, and what the gateway used.
    async fn measure(&self, label: String, s: &Settings) -> anyhow::Result<Run> {
        let swap = SwapPlan {
            url: self.url.clone(),
            file: self.plugin_dir.join("efi.wasm"),
            after: Duration::from_secs(s.seconds) / 2,
        };
        let clock = CpuClock::start(Some(self.pid), self.pid, self.postgres);
        let metrics = format!("{}/metrics", self.url);
        let client = reqwest::Client::new();
        let delivered_before = webhooks_delivered(&client, &metrics).await?;
        let before = rss_peak_kib(self.pid);
        let reset = reset_rss_peak(self.pid);
        let written_before = self.written();
        let mut run = drive(label, self.gateway.clone(), s, Some(swap)).await;
        run.cores = clock.read();
        run.written = self
            .written()
            .zip(written_before)
            .map(|(now, before)| now.saturating_sub(before));
        let delivered = webhooks_delivered(&client, &metrics).await? - delivered_before;
        run.webhooks_per_s = Some(delivered / run.elapsed.as_secs_f64());
        let now = rss_peak_kib(self.pid);
        run.rss = match (before, reset) {
            (Some(before), Ok(())) => Some(RssPeaks {
                before,
                during: now,
            }),
            (_, Err(e)) => {
                eprintln!(
                    "xtask: the gateway's RSS peak could not be reset ({e}); the table shows \
                     its whole life's"
                );
                now.map(|before| RssPeaks {
                    before,
                    during: None,
                })
            }
            (None, Ok(())) => None,
        };
        Ok(run)
    }
}

impl Stand {
    /// Bytes written to storage so far by the gateway and, on PostgreSQL, every `postgres`
    /// process (one that ended during the run is lost, as for cores).
    fn written(&self) -> Option<u64> {
        let gateway = write_bytes(self.pid)?;
        if !self.postgres {
            return Some(gateway);
        }
        Some(
            gateway
                + postgres_pids()
                    .into_iter()
                    .filter_map(write_bytes)
                    .sum::<u64>(),
        )
    }
}

/// What a run sends requests to.
enum Target {
    Gateway(Gateway),
    Direct(Direct),
}

impl Target {
    async fn call(&self, n: u64) -> Result<(), String> {
        match self {
            Target::Gateway(g) => g.create(n).await,
            Target::Direct(d) => d.create().await,
        }
    }
}

struct Gateway {
    client: reqwest::Client,
    url: String,
    auth: String,
    /// Makes this run's idempotency keys its own.
    run: String,
}

impl Gateway {
    async fn create(&self, n: u64) -> Result<(), String> {
        let response = self
            .client
            .post(format!("{}/v1/charges", self.url))
            .header("Authorization", &self.auth)
            .header("Idempotency-Key", format!("load-{}-{n}", self.run))
            .json(&json!({"amount": 1990, "provider": "efi", "description": "load"}))
            .send()
            .await
            .map_err(|e| format!("{e:#}"))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| format!("{e:#}"))?;
        if status != 201 {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(())
    }
}

/// The PSP exchange of efi's create, as its adapter performs it: an OAuth token fetched once,
/// then `PUT /v2/cob/{txid}` over mTLS.
struct Direct {
    client: reqwest::Client,
    api: String,
    token: String,
    pix_key: String,
}

impl Direct {
    async fn new(info: &Value) -> anyhow::Result<Direct> {
        let efi = &info["providers"]["efi"];
        let field = |name: &str| {
            efi["credentials"][name]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("the simulator's efi account lacks {name}"))
        };
        let tls = psp_sim::tls::client_config(
            info["ca_pem"].as_str().context("no ca_pem")?,
            Some(&field("certificate")?),
        )?;
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .pool_max_idle_per_host(4096)
            .timeout(Duration::from_secs(30))
            .build()?;
        let api = efi["endpoints"]["api"]
            .as_str()
            .context("no efi api endpoint")?
            .to_owned();
        let token: Value = client
            .post(format!("{api}/oauth/token"))
            .basic_auth(field("client-id")?, Some(field("client-secret")?))
            .json(&json!({"grant_type": "client_credentials"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(Direct {
            client,
            api,
            token: token["access_token"]
                .as_str()
                .context("no access_token")?
                .to_owned(),
            pix_key: field("pix-key")?,
        })
    }

    async fn create(&self) -> Result<(), String> {
        let txid = uuid_like();
        let response = self
            .client
            .put(format!("{}/v2/cob/{txid}", self.api))
            .bearer_auth(&self.token)
            .json(&json!({"calendario": {"expiracao": 3600}, "valor": {"original": "19.90"}, "chave": self.pix_key}))
            .send()
            .await
            .map_err(|e| format!("{e:#}"))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| format!("{e:#}"))?;
        if !status.is_success() {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(())
    }
}

/// 32 random-looking alphanumerics (a valid efi txid; unique enough for a run's keys).
fn uuid_like() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(32);
    while out.len() < 32 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(32);
    out
}

/// When and where the hot swap happens.
struct SwapPlan {
    url: String,
    file: PathBuf,
    after: Duration,
}

/// Runs `target` for the settings' duration; with `swap`, swaps the adapter halfway.
async fn drive(label: String, target: Arc<Target>, s: &Settings, swap: Option<SwapPlan>) -> Run {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(s.seconds);
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(1_000));
    let swap_task = swap.map(|plan| tokio::spawn(hot_swap(plan, started)));
    let mut samples = Vec::new();
    let mut first_error = None;
    match s.rate {
        None => {
            let workers: Vec<_> = (0..s.concurrency)
                .map(|_| {
                    let (target, counter) = (target.clone(), counter.clone());
                    tokio::spawn(async move {
                        let mut samples = Vec::new();
                        let mut first_error = None;
                        while Instant::now() < deadline {
                            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let t = Instant::now();
                            let result = target.call(n).await;
                            samples.push((t - started, t.elapsed(), result.is_ok()));
                            if let Err(e) = result {
                                first_error.get_or_insert(e);
                            }
                        }
                        (samples, first_error)
                    })
                })
                .collect();
            for worker in workers {
                if let Ok((s, e)) = worker.await {
                    samples.extend(s);
                    if first_error.is_none() {
                        first_error = e;
                    }
                }
            }
        }
        Some(rate) => {
            let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let in_flight = Arc::new(tokio::sync::Semaphore::new(s.concurrency.max(1) * 64));
            let mut tasks = Vec::new();
            loop {
                let scheduled = ticker.tick().await.into_std();
                if scheduled >= deadline {
                    break;
                }
                let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                    // The gateway fell so far behind that the generator would only queue.
                    samples.push((scheduled - started, Duration::ZERO, false));
                    first_error.get_or_insert_with(|| "too many requests in flight".to_owned());
                    continue;
                };
                let (target, counter) = (target.clone(), counter.clone());
                tasks.push(tokio::spawn(async move {
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let result = target.call(n).await;
                    drop(permit);
                    (scheduled - started, scheduled.elapsed(), result)
                }));
            }
            for task in tasks {
                if let Ok((at, latency, result)) = task.await {
                    samples.push((at, latency, result.is_ok()));
                    if let Err(e) = result {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
    }
    let elapsed = started.elapsed();
    if let Some(dir) = std::env::var_os("PIXGW_LOAD_SAMPLES") {
        write_samples(std::path::Path::new(&dir), &label, started, &samples);
    }
    let swap = match swap_task {
        None => None,
        Some(task) => {
            let (landed, serving_after, optimized_after) = match task.await {
                Ok(Ok((landed, after, optimized))) => (Some(landed), Ok(after), optimized),
                Ok(Err(e)) => (None, Err(format!("{e:#}")), None),
                Err(e) => (None, Err(e.to_string()), None),
            };
            // Failed requests in flight from the rename to a second after the new version
            // served its final code (all failures of the run when the swap never completed).
            let window_end = serving_after
                .as_ref()
                .ok()
                .zip(landed)
                .map(|(after, landed)| {
                    landed + optimized_after.unwrap_or(*after).max(*after) + Duration::from_secs(1)
                });
            let failed = samples
                .iter()
                .filter(|(at, latency, ok)| {
                    !ok && match (landed, window_end) {
                        (Some(landed), Some(end)) => *at + *latency >= landed && *at <= end,
                        _ => true,
                    }
                })
                .count();
            Some(Swap {
                serving_after,
                optimized_after,
                failed,
                window: landed.zip(window_end),
            })
        }
    };
    Run {
        label,
        samples,
        elapsed,
        first_error,
        rss: None,
        cores: Cores::default(),
        swap,
        webhooks_per_s: None,
        written: None,
    }
}

/// With `PIXGW_LOAD_SAMPLES=<dir>`, every request of a run as `<dir>/<label>.csv`: when it
/// started (Unix ms, to line up with what else was recorded meanwhile: `perf`, `/proc`
/// samples), its latency in ms and whether it succeeded. For finding where stalls happen.
fn write_samples(
    dir: &std::path::Path,
    label: &str,
    started: Instant,
    samples: &[(Duration, Duration, bool)],
) {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(started.elapsed());
    let mut sorted: Vec<_> = samples.to_vec();
    sorted.sort_by_key(|(at, _, _)| *at);
    let mut csv = String::from("start_unix_ms,latency_ms,ok\n");
    for (at, latency, ok) in sorted {
        csv.push_str(&format!(
            "{:.3},{:.3},{}\n",
            (since_epoch + at).as_secs_f64() * 1e3,
            latency.as_secs_f64() * 1e3,
            u8::from(ok)
        ));
    }
    let file = dir.join(format!("{}.csv", label.replace(' ', "-")));
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, csv)) {
        Ok(()) => eprintln!("xtask: samples of {label:?} in {}", file.display()),
        Err(e) => eprintln!("xtask: cannot write {}: {e}", file.display()),
    }
}

/// `pixgw_webhook_attempts_total{outcome="delivered"}` from the gateway's `/metrics`.
async fn webhooks_delivered(client: &reqwest::Client, url: &str) -> anyhow::Result<f64> {
    let text = client
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("pixgw_webhook_attempts_total{outcome=\"delivered\"} "))
        .map_or(Ok(0.0), |v| v.trim().parse())?)
}

/// Writes a new version of the adapter (one more custom section) into the plugin directory by
/// renaming it over the old one, and polls `GET /v1/adapters` until that version serves, then
/// until it serves optimized code: (the rename's time since the run began, the time to serve,
/// the time to optimized code if the first code was baseline).
async fn hot_swap(
    plan: SwapPlan,
    started: Instant,
) -> anyhow::Result<(Duration, Duration, Option<Duration>)> {
    // Everything but the rename is done before the swap is due, off the generator's one worker
    // thread (a client's start reads root certificates; the file is read, hashed and written):
    // blocking there would hold up every request in flight and show the tool's pause as the
    // gateway's.
    let file = plan.file.clone();
    let (sha, tmp, client) = tokio::task::spawn_blocking(move || {
        let mut bytes =
            std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        append_custom_section(&mut bytes, "pixgw-load", uuid_like().as_bytes());
        let sha = hex(&sha2::Sha256::digest(&bytes));
        let tmp = file.with_extension("wasm.tmp");
        std::fs::write(&tmp, &bytes)?;
        anyhow::Ok((sha, tmp, reqwest::Client::new()))
    })
    .await??;
    tokio::time::sleep_until((started + plan.after).into()).await;
    let file = plan.file.clone();
    tokio::task::spawn_blocking(move || std::fs::rename(&tmp, &file)).await??;
    let landed = Instant::now();
    let id = plan
        .file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let mut served = None;
    loop {
        if landed.elapsed() > Duration::from_secs(60) {
            bail!("the new version was not serving optimized code 60 s after the file landed");
        }
        let adapters: Value = client
            .get(format!("{}/v1/adapters", plan.url))
            .send()
            .await?
            .json()
            .await?;
        let adapter = adapters["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["id"] == id.as_str())
            .cloned()
            .unwrap_or_default();
        if adapter["serving_sha256"] == sha.as_str() {
            let now = landed.elapsed();
            let first = *served.get_or_insert(now);
            // A build that reports no tier serves optimized code from the start.
            if adapter["serving_tier"] != "baseline" {
                return Ok((landed - started, first, (first != now).then_some(now)));
            }
        }
        let poll = if served.is_some() { 10 } else { 2 };
        tokio::time::sleep(Duration::from_millis(poll)).await;
    }
}

/// A custom section (id 0) at the end of a wasm module or component: valid anywhere, ignored by
/// the runtime, and a new content hash.
fn append_custom_section(wasm: &mut Vec<u8>, name: &str, payload: &[u8]) {
    let mut content = leb128(name.len());
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(payload);
    wasm.push(0);
    wasm.extend(leb128(content.len()));
    wasm.extend(content);
}

fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The peak resident set of a process (`VmHWM`), in KiB.
fn rss_peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Sets a process's `VmHWM` back to its current resident set (Linux's `clear_refs`, value 5).
fn reset_rss_peak(pid: u32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
}

fn mb(kib: u64) -> String {
    format!("{:.1} MB", kib as f64 / 1024.0)
}

/// A PostgreSQL database of the run's own, dropped when this goes.
struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    /// The run's database; `suffix` tells apart the two of `--compare`.
    fn create(suffix: &str) -> anyhow::Result<PgDatabase> {
        // A server on loopback; `PIXGW_LOAD_POSTGRES` names another (its `postgres` database
        // is used to create and drop the run's), and may end in options for the gateway's
        // connections (`?sslmode=disable`).
        let server = std::env::var("PIXGW_LOAD_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
        let (base, options) = match server.split_once('?') {
            Some((base, options)) => (base.to_owned(), format!("?{options}")),
            None => (server, String::new()),
        };
        let name = format!(
            "pixgw_load_{}{}",
            std::process::id(),
            suffix.replace('-', "_")
        );
        let db = PgDatabase {
            admin: format!("{base}/postgres"),
            url: format!("{base}/{name}{options}"),
            name,
        };
        db.psql(&format!("DROP DATABASE IF EXISTS {}", db.name))?;
        db.psql(&format!("CREATE DATABASE {}", db.name))?;
        Ok(db)
    }

    fn psql(&self, sql: &str) -> anyhow::Result<()> {
        let out = Command::new("psql")
            .arg(&self.admin)
            .args(["-v", "ON_ERROR_STOP=1", "-qc", sql])
            .output()
            .context("running psql (the PostgreSQL client) to create the run's database")?;
        ensure!(
            out.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Err(e) = self.psql(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )) {
            eprintln!("xtask: {e:#}");
        }
    }
}
