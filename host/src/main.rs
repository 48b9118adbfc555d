//! `pixgw`: the gateway binary. Reads settings, then hands over to the library.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use pixgw::runtime::{Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "pixgw",
    version,
    about = "One API for Pix charges across Brazilian PSPs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway.
    Serve(ServeArgs),
    /// Inspect PSP adapters.
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    #[arg(long, env = "PIXGW_LISTEN", default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    #[arg(long, env = "PIXGW_PLUGIN_DIR", default_value = default_plugin_dir())]
    plugin_dir: PathBuf,
    /// Where compiled adapters are cached between restarts.
    #[arg(long, env = "PIXGW_COMPILE_CACHE_DIR", default_value = "data/compiled")]
    compile_cache_dir: PathBuf,
    /// A PEM file of CA certificates to trust for PSP connections (repeatable).
    #[arg(long = "trusted-ca", env = "PIXGW_TRUSTED_CA", value_delimiter = ',')]
    trusted_ca: Vec<PathBuf>,
    /// `provider.endpoint[.test|.live]=url`, comma-separated: reach a PSP through a proxy or a
    /// simulator.
    #[arg(long, env = "PIXGW_ENDPOINT_OVERRIDES", default_value = "")]
    endpoint_overrides: String,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Load every adapter of a directory, validate it, and print its manifest.
    Check {
        #[arg(long, env = "PIXGW_PLUGIN_DIR", default_value = default_plugin_dir())]
        dir: PathBuf,
        /// Reuse (and fill) this compile cache instead of compiling from scratch.
        #[arg(long, env = "PIXGW_COMPILE_CACHE_DIR")]
        compile_cache_dir: Option<PathBuf>,
    },
}

/// Where `cargo xtask plugins` puts the components of this build.
const fn default_plugin_dir() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../target/plugins")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PIXGW_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await?,
        Command::Plugins {
            command:
                PluginsCommand::Check {
                    dir,
                    compile_cache_dir,
                },
        } => {
            let runtime = Runtime::new(RuntimeConfig {
                plugin_dir: dir,
                compile_cache_dir,
                ..Default::default()
            })?;
            let mut failed = false;
            for result in runtime.load_all().await {
                match result {
                    Ok(id) => {
                        let adapter = runtime.adapter(&id).expect("just loaded");
                        let m = adapter.manifest();
                        println!(
                            "ok     {id:<12} {} ({}) sha256 {}",
                            m.display_name,
                            m.kind,
                            &adapter.version()[..12]
                        );
                    }
                    Err(e) => {
                        failed = true;
                        println!("FAILED {e}");
                    }
                }
            }
            if failed {
                std::process::exit(1);
            }
        }
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut trusted_ca_pem = Vec::new();
    for path in &args.trusted_ca {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read trusted CA file {}: {e}", path.display()))?;
        trusted_ca_pem.push(pem);
    }
    let config = RuntimeConfig {
        plugin_dir: args.plugin_dir,
        compile_cache_dir: Some(args.compile_cache_dir),
        trusted_ca_pem,
        endpoint_overrides: pixgw::config::parse_endpoint_overrides(&args.endpoint_overrides)
            .map_err(anyhow::Error::msg)?,
        ..Default::default()
    };
    let runtime = Runtime::new(config)?;
    for result in runtime.load_all().await {
        if let Err(e) = result {
            tracing::error!(error = %e, "adapter not loaded");
        }
    }
    let _watch = runtime.watch()?;
    let app = pixgw::api::router(pixgw::api::AppState { runtime });
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "pixgw listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    tracing::info!("pixgw stopped");
    Ok(())
}

/// Ctrl-C or SIGTERM: stop accepting, let requests in flight finish.
async fn shutdown_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
