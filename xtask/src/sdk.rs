//! `cargo xtask sdk-test`: the official SDKs' suites (`sdks/typescript`, `sdks/python`) against
//! a demo gateway of their own.
//!
//! Starts `cargo xtask demo` on free ports with its own directory (`target/sdk-demo`), so it
//! runs beside a person's demo, and waits for its `demo.env`. Then, with `PIXGW_URL`,
//! `PIXGW_API_KEY` and `PSP_SIM_URL` set from it:
//! - TypeScript: `npm ci`, the build, `tsc --noEmit`, `npm run check-types` (the generated types
//!   match the gateway's OpenAPI document) and `npm test` (node's test runner);
//! - Python: a virtual environment in `target/sdk-venv` with the package and its dev extras,
//!   `mypy --strict` and `pytest` (whose suite checks the generated types too).
//!
//! The demo runs in a process group of its own, ended as a whole when this returns.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::{root, run, target_dir};

/// How long the demo may take to come up: it builds the gateway first when it is not built.
const DEMO_START_TIMEOUT: Duration = Duration::from_secs(30 * 60);

pub fn sdk_test() -> anyhow::Result<()> {
    let demo = Demo::start()?;
    let env = demo.env()?;
    // Every step runs, so one report names everything that fails.
    let mut failed = Vec::new();
    for (name, result) in [
        ("TypeScript SDK", typescript(&env)),
        ("Python SDK", python(&env)),
    ] {
        if let Err(e) = result {
            eprintln!("xtask: {name}: {e:#}");
            failed.push(format!("{name}: {e:#}"));
        }
    }
    drop(demo);
    ensure!(
        failed.is_empty(),
        "the SDK suites failed:\n{}",
        failed.join("\n")
    );
    Ok(())
}

/// Runs each command in turn, all of them, and fails with the ones that failed.
fn steps(commands: Vec<Command>) -> anyhow::Result<()> {
    let failed: Vec<String> = commands
        .into_iter()
        .filter_map(|mut cmd| run(&mut cmd).err().map(|e| e.to_string()))
        .collect();
    ensure!(failed.is_empty(), "{}", failed.join("; "));
    Ok(())
}

fn typescript(env: &[(String, String)]) -> anyhow::Result<()> {
    let dir = root().join("sdks/typescript");
    let npm = |args: &[&str]| {
        let mut cmd = Command::new("npm");
        cmd.current_dir(&dir).args(args).envs(env.iter().cloned());
        cmd
    };
    // Without the build nothing else can run.
    run(&mut npm(&["ci", "--no-audit", "--no-fund"]))?;
    run(&mut npm(&["run", "build"]))?;
    steps(vec![
        npm(&["run", "typecheck"]),
        npm(&["run", "check-types"]),
        npm(&["test"]),
    ])
}

fn python(env: &[(String, String)]) -> anyhow::Result<()> {
    let dir = root().join("sdks/python");
    let venv = target_dir().join("sdk-venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(Command::new(&interpreter).args(["-m", "venv"]).arg(&venv))?;
    }
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-e",
        ])
        .arg(format!("{}[dev]", dir.display())))?;
    let mut mypy = Command::new(&python);
    mypy.current_dir(&dir).args(["-m", "mypy"]);
    let mut pytest = Command::new(&python);
    pytest
        .current_dir(&dir)
        .args(["-m", "pytest", "-q"])
        .envs(env.iter().cloned());
    steps(vec![mypy, pytest])
}

/// A `cargo xtask demo` on free ports, ended with its whole process group when dropped.
struct Demo {
    child: Child,
    dir: PathBuf,
}

impl Demo {
    fn start() -> anyhow::Result<Demo> {
        use std::os::unix::process::CommandExt;
        let dir = target_dir().join("sdk-demo");
        let env_file = dir.join("demo.env");
        let _ = std::fs::remove_file(&env_file);
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::File::create(dir.join("demo.log"))?;
        let child = Command::new(std::env::current_exe()?)
            .arg("demo")
            .current_dir(root())
            .env("PIXGW_DEMO_DIR", &dir)
            .env("PIXGW_LISTEN", format!("127.0.0.1:{}", free_port()?))
            .env("PSP_SIM_ADDR", format!("127.0.0.1:{}", free_port()?))
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group: the gateway and simulator it starts are ended with it.
            .process_group(0)
            .spawn()
            .context("starting cargo xtask demo")?;
        let mut demo = Demo { child, dir };
        eprintln!(
            "xtask: waiting for the SDK suites' demo (log: {})",
            demo.dir.join("demo.log").display()
        );
        let start = Instant::now();
        while !env_file.exists() {
            if let Some(status) = demo.child.try_wait()? {
                bail!(
                    "the demo for the SDK suites exited ({status}) before it was up; see {}",
                    demo.dir.join("demo.log").display()
                );
            }
            ensure!(
                start.elapsed() < DEMO_START_TIMEOUT,
                "the demo for the SDK suites was not up within {DEMO_START_TIMEOUT:?}; see {}",
                demo.dir.join("demo.log").display()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        // demo.env is written in one call; one more read after a beat is a whole file.
        std::thread::sleep(Duration::from_millis(100));
        demo.check_env()?;
        Ok(demo)
    }

    fn check_env(&mut self) -> anyhow::Result<()> {
        let env = self.env()?;
        for name in ["PIXGW_URL", "PIXGW_API_KEY", "PSP_SIM_URL"] {
            ensure!(
                env.iter().any(|(k, _)| k == name),
                "{} lacks {name}",
                self.env_file().display()
            );
        }
        Ok(())
    }

    fn env_file(&self) -> PathBuf {
        self.dir.join("demo.env")
    }

    /// The variables of its `demo.env`.
    fn env(&self) -> anyhow::Result<Vec<(String, String)>> {
        parse_env(&self.env_file())
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever is left of the group (usually nothing: the error is silenced).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

fn parse_env(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
