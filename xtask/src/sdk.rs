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

use std::path::Path;
use std::process::Command;

use anyhow::ensure;

use crate::gateway::Demo;
use crate::{root, run, target_dir};

/// `built`: a folder holding `pixgw` and `psp-sim` built already (else the demo builds them).
pub fn sdk_test(built: Option<&Path>) -> anyhow::Result<()> {
    let demo = Demo::start("sdk-demo", &[], built)?;
    let env = demo.env().to_vec();
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
