//! `cargo xtask api-contract`: the gateway against its own OpenAPI document, with schemathesis.
//!
//! Starts `cargo xtask demo` on free ports in a directory of its own (`target/api-contract`),
//! so it runs beside a person's demo, with the API key's rate limit and the failed-auth limit
//! off (schemathesis sends thousands of requests, many deliberately without a key). Then runs
//! every schemathesis check in every phase (examples, coverage, fuzzing, stateful) against
//! `/v1/openapi.json` with a bounded number of examples and a fixed seed, and fails on any
//! failure. The options live in `xtask/schemathesis.toml`, each with its reason.
//!
//! Schemathesis is a Python tool: `.ci/run` installs the pinned [`SCHEMATHESIS_VERSION`] with
//! pip; elsewhere `pip install schemathesis==<version>` (the command says so when it is missing).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::{root, run, target_dir};

/// The version `.ci/run` installs; the options below are this version's.
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// Test cases per operation and phase: enough to cross every documented limit, bounded so the
/// step takes minutes, not hours.
const MAX_EXAMPLES: &str = "30";
/// A fixed seed: a failure here fails again on the next run.
const SEED: &str = "20261122";
/// How long the demo may take to come up: it builds the gateway first when it is not built.
const DEMO_START_TIMEOUT: Duration = Duration::from_secs(30 * 60);

pub fn api_contract() -> anyhow::Result<()> {
    let schemathesis = std::env::var("SCHEMATHESIS").unwrap_or_else(|_| "schemathesis".into());
    let version = Command::new(&schemathesis).arg("--version").output();
    match version {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            if !text.contains(SCHEMATHESIS_VERSION) {
                eprintln!(
                    "xtask: {} is not the pinned {SCHEMATHESIS_VERSION}; its checks may differ",
                    text.trim()
                );
            }
        }
        _ => bail!(
            "schemathesis is not installed (or not on PATH): install it with \
             `pip install schemathesis=={SCHEMATHESIS_VERSION}` (Python 3.10 or later), or point \
             SCHEMATHESIS at its executable"
        ),
    }
    let demo = Demo::start()?;
    let (url, key) = (demo.var("PIXGW_URL")?, demo.var("PIXGW_API_KEY")?);
    let reports = demo.dir.join("report");
    let result = run(Command::new(&schemathesis)
        .current_dir(&demo.dir)
        .arg("--config-file")
        .arg(root().join("xtask/schemathesis.toml"))
        .arg("run")
        .arg(format!("{url}/v1/openapi.json"))
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", MAX_EXAMPLES, "--seed", SEED])
        .args(["--generation-database", "none"])
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--report", "junit", "--report-dir"])
        .arg(&reports)
        .arg("--no-color"));
    drop(demo);
    result.with_context(|| {
        format!(
            "the gateway does not answer as its OpenAPI document says; the failures are above \
             (JUnit report in {})",
            reports.display()
        )
    })
}

/// A `cargo xtask demo` on free ports, ended with its whole process group when dropped.
struct Demo {
    child: Child,
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Demo {
    fn start() -> anyhow::Result<Demo> {
        use std::os::unix::process::CommandExt;
        let dir = target_dir().join("api-contract");
        let env_file = dir.join("demo.env");
        let _ = std::fs::remove_file(&env_file);
        std::fs::create_dir_all(&dir)?;
        let log_path = dir.join("demo.log");
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(std::env::current_exe()?)
            .arg("demo")
            .current_dir(root())
            .env("PIXGW_DEMO_DIR", &dir)
            .env("PIXGW_LISTEN", format!("127.0.0.1:{}", free_port()?))
            .env("PSP_SIM_ADDR", format!("127.0.0.1:{}", free_port()?))
            // 0: no limit. The limits themselves are tested in host/tests.
            .env("PIXGW_RATE_LIMIT", "0")
            .env("PIXGW_AUTH_FAILURE_LIMIT", "0")
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group: the gateway and simulator it starts are ended with it.
            .process_group(0)
            .spawn()
            .context("starting cargo xtask demo")?;
        let mut demo = Demo {
            child,
            dir,
            env: Vec::new(),
        };
        eprintln!(
            "xtask: waiting for the API contract's demo (log: {})",
            log_path.display()
        );
        let start = Instant::now();
        while !env_file.exists() {
            if let Some(status) = demo.child.try_wait()? {
                bail!(
                    "the demo exited ({status}) before it was up; see {}",
                    log_path.display()
                );
            }
            ensure!(
                start.elapsed() < DEMO_START_TIMEOUT,
                "the demo was not up within {DEMO_START_TIMEOUT:?}; see {}",
                log_path.display()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        // demo.env is written in one call; read after a beat, it is whole.
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&env_file)
            .with_context(|| format!("reading {}", env_file.display()))?;
        demo.env = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        Ok(demo)
    }

    fn var(&self, name: &str) -> anyhow::Result<String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .with_context(|| format!("{} lacks {name}", self.dir.join("demo.env").display()))
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Quiet: the group is usually gone by now.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
