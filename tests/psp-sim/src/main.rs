//! `psp-sim`: runs the PSP simulators until SIGINT/SIGTERM.
//!
//! Writes the [`psp_sim::SimInfo`] JSON to `--info-file` (atomically) once listening and
//! prints `psp-sim ready <control_url>` on stdout, so scripts can wait for either.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use psp_sim::{Sim, SimOptions};

#[derive(Parser)]
#[command(about = "Local simulators of the PSP wire protocols pixgw talks to")]
struct Args {
    /// Address of the plain-HTTP control API.
    #[arg(long, default_value = "127.0.0.1:7070")]
    control_addr: SocketAddr,
    /// Where to write the SimInfo JSON (CA, endpoints, test credentials).
    #[arg(long)]
    info_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "psp_sim=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    // Handlers first: a SIGTERM sent right after the ready line must not kill us uncleanly.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let sim = Sim::start(SimOptions {
        control_addr: args.control_addr,
    })
    .await?;
    if let Some(path) = &args.info_file {
        write_atomically(path, &serde_json::to_vec_pretty(&sim.info())?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("psp-sim ready {}", sim.control_url());

    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    sim.shutdown().await;
    Ok(())
}

/// Temp file in the same directory, then rename, so readers never see half a file.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
