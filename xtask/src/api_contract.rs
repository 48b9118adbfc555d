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

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use crate::gateway::Demo;
use crate::{root, run};

/// The version `.ci/run` installs; the options below are this version's.
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// Test cases per operation and phase: enough to cross every documented limit, bounded so the
/// step takes minutes, not hours.
const MAX_EXAMPLES: &str = "30";
/// A fixed seed: a failure here fails again on the next run.
const SEED: &str = "20261122";

/// `built`: a folder holding `pixgw` and `psp-sim` built already (else the demo builds them).
pub fn api_contract(built: Option<&Path>) -> anyhow::Result<()> {
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
    // 0: no limit. The limits themselves are tested in host/tests.
    let demo = Demo::start(
        "api-contract",
        &[("PIXGW_RATE_LIMIT", "0"), ("PIXGW_AUTH_FAILURE_LIMIT", "0")],
        built,
    )?;
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
