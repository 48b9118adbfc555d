//! `pixgw`: the gateway binary. Reads settings, then hands over to the library.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use pixgw::api_keys;
use pixgw::config;
use pixgw::domain::Environment;
use pixgw::plans::PlanId;
use pixgw::runtime::Runtime;
use pixgw::store::Store;
use pixgw::vault::Vault;

/// Under load glibc's malloc took about a tenth of the gateway's CPU (requests, QR images and
/// SQLite pages allocated and freed across threads); with mimalloc the gateway makes 12–19 %
/// more charges a second. Built without transparent huge pages (`no_thp`), which doubled its
/// resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    Serve(Box<ServeArgs>),
    /// Inspect PSP adapters.
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
    /// Bring the database schema up to date (serve does this at start too).
    Migrate(DatabaseArgs),
    /// Manage merchants.
    Merchant {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: MerchantCommand,
    },
    /// Give people access to a merchant's dashboard.
    Member {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: MemberCommand,
    },
    /// Manage merchants' API keys.
    Key {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// The vault that encrypts PSP secrets.
    Vault {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(subcommand)]
        command: VaultCommand,
    },
}

#[derive(clap::Args, Clone)]
struct DatabaseArgs {
    /// `sqlite://path/to/file.db` (embedded, the default) or `postgres://user@host/db`.
    #[arg(
        long,
        env = "PIXGW_DATABASE_URL",
        default_value = "sqlite://data/pixgw.db"
    )]
    database_url: String,
    /// Where the development master key and other local state live.
    #[arg(long, env = "PIXGW_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum MerchantCommand {
    /// Create a merchant; prints its id.
    Create {
        #[arg(long)]
        name: String,
        /// The plan it starts on: free, basic, pro, business, scale, enterprise, ultra, ultra_2.
        #[arg(long, default_value = "free")]
        plan: String,
    },
    /// List merchants (id, created, plan, name).
    List,
    /// Put a merchant on a plan, any plan ("on request" ones included); recorded in the
    /// audit log. Nothing the merchant has is removed by a smaller plan.
    SetPlan {
        /// `mer_…`
        merchant: String,
        /// free, basic, pro, business, scale, enterprise, ultra, ultra_2
        plan: String,
    },
}

#[derive(Subcommand)]
enum MemberCommand {
    /// Make someone a member with a role; a new account's password is read from
    /// PIXGW_MEMBER_PASSWORD (an existing account keeps its own). Prints the user id.
    Add {
        #[arg(long)]
        merchant: String,
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = ["owner", "manager", "cashier", "read_only"])]
        role: String,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create an API key; prints it once (only its hash is stored).
    Create {
        #[arg(long)]
        merchant: String,
        #[arg(long, value_parser = ["test", "live"])]
        env: String,
        #[arg(long)]
        label: Option<String>,
    },
    /// List a merchant's keys (prefixes only).
    List {
        #[arg(long)]
        merchant: String,
    },
    /// Revoke a key by its id (`key_…`): requests with it get 401 at once.
    Revoke { id: String },
}

#[derive(Subcommand)]
enum VaultCommand {
    /// Re-encrypt every secret (credentials, webhook tokens, webhook endpoints' signing
    /// secrets) under PIXGW_MASTER_KEY; the old key goes in PIXGW_MASTER_KEY_PREVIOUS. Safe
    /// while gateways run, once they were restarted with the same two variables: rows are
    /// swapped one by one, never over a change saved meanwhile.
    Rotate,
}

#[derive(clap::Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DatabaseArgs,
    /// Public URL of this gateway, used in the webhook URLs given to PSPs; defaults to
    /// `http://<listen address>`.
    #[arg(long, env = "PIXGW_BASE_URL")]
    base_url: Option<String>,
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
    /// Let merchants' webhook endpoints be loopback or private addresses (development, tests).
    #[arg(long, env = "PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS")]
    allow_private_webhook_urls: bool,
    /// Delays between webhook delivery attempts (the default: 10 attempts over 75 hours).
    #[arg(long, env = "PIXGW_WEBHOOK_RETRY_DELAYS", default_value = "1m,5m,30m,2h,5h,10h,14h,20h,24h", value_parser = config::parse_durations)]
    webhook_retry_delays: std::vec::Vec<std::time::Duration>,
    /// How long one webhook delivery attempt may take, answer included.
    #[arg(long, env = "PIXGW_WEBHOOK_TIMEOUT", default_value = "15s", value_parser = config::parse_duration)]
    webhook_timeout: std::time::Duration,
    /// Lease of a delivery in flight, renewed while the attempt runs: after a crash, another
    /// (or the restarted) gateway delivers within this long.
    #[arg(long, env = "PIXGW_WEBHOOK_LEASE", default_value = "10s", value_parser = config::parse_lease)]
    webhook_lease: std::time::Duration,
    /// Webhook attempts this gateway runs at once.
    #[arg(long, env = "PIXGW_WEBHOOK_CONCURRENCY", default_value_t = pixgw::webhooks::outbound::DEFAULT_CONCURRENCY)]
    webhook_concurrency: usize,
    /// Webhook attempts in flight to one healthy endpoint, from every gateway on the database
    /// together: a fast endpoint gets this many at once.
    #[arg(long, env = "PIXGW_WEBHOOK_PER_ENDPOINT", default_value_t = pixgw::webhooks::outbound::DEFAULT_PER_ENDPOINT)]
    webhook_per_endpoint: usize,
    /// The same to an endpoint whose last attempt failed, until one succeeds (at most
    /// `--webhook-per-endpoint`): an endpoint that stopped answering holds this many.
    #[arg(long, env = "PIXGW_WEBHOOK_PER_FAILING_ENDPOINT", default_value_t = pixgw::webhooks::outbound::DEFAULT_PER_FAILING_ENDPOINT)]
    webhook_per_failing_endpoint: usize,
    /// Webhook endpoints a merchant may have per environment when its plan sets no limit.
    #[arg(long, env = "PIXGW_MAX_WEBHOOK_ENDPOINTS", default_value_t = 50)]
    max_webhook_endpoints: u64,
    /// Live charge streams a merchant may hold open on this gateway at once (more get 429).
    #[arg(long, env = "PIXGW_MAX_LIVE_STREAMS", default_value_t = pixgw::live::DEFAULT_STREAMS_PER_MERCHANT)]
    max_live_streams: usize,
    /// When the reconciler asks PSPs about a charge after its creation; the last delay repeats.
    #[arg(long, env = "PIXGW_RECONCILE_SCHEDULE", default_value = "10s,30s,1m,2m,5m,10m,15m", value_parser = config::parse_durations)]
    reconcile_schedule: std::vec::Vec<std::time::Duration>,
    /// Time after a charge's expiry before an unpaid charge is declared expired.
    #[arg(long, env = "PIXGW_RECONCILE_GRACE", default_value = "5m", value_parser = config::parse_duration)]
    reconcile_grace: std::time::Duration,
    /// Requests per API key and second, with bursts of twice as many (0: no limit).
    #[arg(long, env = "PIXGW_RATE_LIMIT", default_value_t = 100)]
    rate_limit: u32,
    /// Charges a client address may create from public payment links per minute, all at once
    /// if it likes (0: no limit).
    #[arg(long, env = "PIXGW_CHECKOUT_RATE_LIMIT", default_value_t = 20)]
    checkout_rate_limit: u32,
    /// Failed API-key authentications a client address may make per minute; past them its
    /// requests get 429 until a minute's share has passed (0: no limit). Behind a proxy every
    /// client shares the proxy's address.
    #[arg(long, env = "PIXGW_AUTH_FAILURE_LIMIT", default_value_t = 30)]
    auth_failure_limit: u32,
    /// Run without PIXGW_MASTER_KEY, sealing PSP secrets with a key generated into
    /// `<data dir>/master.key`: for development and tests only. Without this flag `serve`
    /// refuses to start when PIXGW_MASTER_KEY is not set.
    #[arg(long, env = "PIXGW_INSECURE_DEV_MASTER_KEY")]
    insecure_dev_master_key: bool,
    /// After this long, a charge whose create's outcome stayed unknown is settled: canceled at
    /// the PSP if it turned up there, forgotten if not.
    #[arg(long, env = "PIXGW_ORPHAN_AGE", default_value = "10m", value_parser = config::parse_duration)]
    orphan_age: std::time::Duration,
    /// How long the reconciler holds a charge without renewing its lease (renewed while the
    /// check runs): after a crash, other gateways or this one restarted take it up this soon.
    #[arg(long, env = "PIXGW_RECONCILE_LEASE", default_value = "15s", value_parser = config::parse_duration)]
    reconcile_lease: std::time::Duration,
    /// Charges the reconciler checks at once.
    #[arg(long, env = "PIXGW_RECONCILE_CONCURRENCY", default_value_t = 16)]
    reconcile_concurrency: usize,
    /// The longest one reconciler check may take; then it is retried later.
    #[arg(long, env = "PIXGW_RECONCILE_TIMEOUT", default_value = "2m", value_parser = config::parse_duration)]
    reconcile_timeout: std::time::Duration,
    /// How long a charge request's Idempotency-Key lock lasts unrenewed (the request renews it
    /// while it runs): after a crash, a retry with the key resumes after this long.
    #[arg(long, env = "PIXGW_IDEMPOTENCY_LOCK", default_value = "30s", value_parser = config::parse_duration)]
    idempotency_lock: std::time::Duration,
    /// Adapter calls running at once across all PSPs (the instance pool's size).
    #[arg(long, env = "PIXGW_MAX_ADAPTER_CALLS", default_value_t = 256)]
    max_adapter_calls: u32,
    /// Adapter calls running at once to any one PSP, so a slow PSP cannot take every slot.
    #[arg(long, env = "PIXGW_MAX_ADAPTER_CALLS_PER_PSP", default_value_t = 64)]
    max_adapter_calls_per_psp: u32,
    /// How long a call waits for a free slot before the request is answered 503 `gateway_busy`.
    #[arg(long, env = "PIXGW_ADAPTER_QUEUE_TIMEOUT", default_value = "5s", value_parser = config::parse_duration)]
    adapter_queue_timeout: std::time::Duration,
    /// Consecutive `unavailable` answers after which the router skips a PSP credential.
    #[arg(long, env = "PIXGW_BREAKER_THRESHOLD", default_value_t = 5)]
    breaker_threshold: u32,
    /// How long the router skips a credential whose circuit opened.
    #[arg(long, env = "PIXGW_BREAKER_COOLDOWN", default_value = "30s", value_parser = config::parse_duration)]
    breaker_cooldown: std::time::Duration,
    /// How often the background workers look for work that other gateways queued.
    #[arg(long, env = "PIXGW_WORKER_POLL", default_value = "1s", value_parser = config::parse_duration)]
    worker_poll: std::time::Duration,
    /// `provider.endpoint[.test|.live]=url`, comma-separated: reach a PSP through a proxy or a
    /// simulator.
    #[arg(long, env = "PIXGW_ENDPOINT_OVERRIDES", default_value = "")]
    endpoint_overrides: String,
    /// A dashboard session without a request for this long ends.
    #[arg(long, env = "PIXGW_SESSION_IDLE_TIMEOUT", default_value = "2h", value_parser = config::parse_duration)]
    session_idle_timeout: std::time::Duration,
    /// A dashboard session ends this long after sign-in, however active.
    #[arg(long, env = "PIXGW_SESSION_MAX_AGE", default_value = "12h", value_parser = config::parse_duration)]
    session_max_age: std::time::Duration,
    /// Where sale evidence photos are kept: a directory (default `<data dir>/evidence`) or
    /// `s3://bucket[/prefix]`, connected by the `AWS_*` variables (`AWS_ENDPOINT` for other
    /// S3-compatible stores).
    #[arg(long, env = "PIXGW_EVIDENCE_STORE", default_value = "")]
    evidence_store: String,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Load adapters exactly as `serve` would, print each manifest whole, and exit non-zero when
    /// the directory is missing or empty, or a file fails or would be skipped.
    Check {
        /// A plugin directory or one `<id>.wasm` file.
        #[arg(env = "PIXGW_PLUGIN_DIR", default_value = default_plugin_dir())]
        path: PathBuf,
        /// The same, as an option (older scripts).
        #[arg(long, conflicts_with = "path", hide = true)]
        dir: Option<PathBuf>,
        /// Reuse (and fill) this compile cache instead of compiling from scratch.
        #[arg(long, env = "PIXGW_COMPILE_CACHE_DIR")]
        compile_cache_dir: Option<PathBuf>,
    },
    /// Create a new adapter crate that builds on its own, outside any pixgw checkout.
    New {
        /// The provider id (lowercase): the adapter's file name and its `provider` value.
        id: String,
        /// A bank on the central bank's Pix API: the crate is the bank's facts only.
        #[arg(long)]
        central_bank: bool,
        /// The PSP's display name (default: from the id).
        #[arg(long)]
        name: Option<String>,
        /// Where to create the crate (default: `./pixgw-plugin-<id>`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The SDK's source directory (default: the checkout this pixgw was built from, if
        /// present; otherwise the published `pixgw-plugin-sdk`).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Build an adapter crate for wasm32-wasip2, check it, and only then put `<id>.wasm` into
    /// `--out` with one rename (a gateway watching that directory hot-reloads it).
    Build {
        /// The adapter crate's directory.
        #[arg(default_value = ".")]
        crate_dir: PathBuf,
        /// The plugin directory to install into.
        #[arg(long, default_value = "dist")]
        out: PathBuf,
        #[arg(long, env = "PIXGW_COMPILE_CACHE_DIR")]
        compile_cache_dir: Option<PathBuf>,
    },
    /// Drive a charge's whole life through one adapter against the PSP simulator, as the gateway
    /// would: credentials, create (twice), query, pay, notification, cancel, refusals.
    Conformance {
        /// The adapter component, `<id>.wasm`.
        file: PathBuf,
        /// The simulator's control URL (`cargo xtask demo` starts one on this address).
        #[arg(long, default_value = "http://127.0.0.1:7070")]
        sim: String,
        /// The simulated PSP whose protocol the adapter speaks (`bradesco` for the standard
        /// central-bank API).
        #[arg(long = "as")]
        as_provider: String,
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
    // SAFETY: nothing has touched SQLite yet; the runtime's workers are idle until `main`
    // spawns work.
    unsafe { pixgw::store::sqlite_memory_statistics_off() };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PIXGW_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(*args).await?,
        Command::Plugins { command } => plugins(command).await?,
        Command::Migrate(db) => {
            open_store(&db).await?;
            println!("database schema is up to date");
        }
        Command::Merchant { db, command } => {
            let store = open_store(&db).await?;
            match command {
                MerchantCommand::Create { name, plan } => {
                    let plan: PlanId = plan.parse().map_err(anyhow::Error::msg)?;
                    let merchant = store.create_merchant(&name, plan).await?;
                    println!("{}", merchant.id);
                }
                MerchantCommand::List => {
                    for m in store.merchants().await? {
                        println!(
                            "{}  {}  {:<10}  {}",
                            m.id,
                            pixgw::store::rfc3339(m.created_at),
                            m.plan.as_str(),
                            m.name
                        );
                    }
                }
                MerchantCommand::SetPlan { merchant, plan } => {
                    let plan: PlanId = plan.parse().map_err(anyhow::Error::msg)?;
                    let caller = api_keys::operator(&merchant, Environment::Live);
                    let previous = match pixgw::plans::set(&store, &caller, plan).await {
                        Err(pixgw::plans::PlanError::NoMerchant(_)) => anyhow::bail!(
                            "no merchant {merchant:?}: `pixgw merchant list` shows them"
                        ),
                        other => other?,
                    };
                    println!(
                        "{merchant}: {} → {}",
                        previous.plan().name,
                        plan.plan().name
                    );
                }
            }
        }
        Command::Member {
            db,
            command:
                MemberCommand::Add {
                    merchant,
                    email,
                    name,
                    role,
                },
        } => {
            let store = open_store(&db).await?;
            anyhow::ensure!(
                store.merchant(&merchant).await?.is_some(),
                "no merchant {merchant:?}: create one with `pixgw merchant create --name …`"
            );
            let email = pixgw::accounts::account_email(&email).map_err(anyhow::Error::msg)?;
            let role: pixgw::policy::Role = role.parse().map_err(anyhow::Error::msg)?;
            let password = std::env::var("PIXGW_MEMBER_PASSWORD").unwrap_or_default();
            let hash = if store.user_by_email(&email).await?.is_some() {
                String::new()
            } else {
                pixgw::accounts::check_password(&password).map_err(|e| {
                    anyhow::anyhow!("PIXGW_MEMBER_PASSWORD: {e} (a new account needs one)")
                })?;
                pixgw::accounts::hash_password(&password).await
            };
            let user = store
                .add_member(&merchant, &email, &name, &hash, role)
                .await?
                .map_err(|reached| plan_refusal(&merchant, &reached))?;
            eprintln!("{email} is {role} at {merchant}");
            println!("{}", user.id);
        }
        Command::Key { db, command } => {
            let store = open_store(&db).await?;
            match command {
                KeyCommand::Create {
                    merchant,
                    env,
                    label,
                } => {
                    anyhow::ensure!(
                        store.merchant(&merchant).await?.is_some(),
                        "no merchant {merchant:?}: create one with `pixgw merchant create --name …`"
                    );
                    let env: Environment = env.parse().map_err(anyhow::Error::msg)?;
                    let issued = api_keys::issue(
                        &store,
                        &api_keys::operator(&merchant, env),
                        label.as_deref(),
                    )
                    .await
                    .map_err(|e| match e {
                        api_keys::ApiKeyError::PlanLimit(reached) => {
                            plan_refusal(&merchant, &reached)
                        }
                        e => e.into(),
                    })?;
                    eprintln!(
                        "created {} for {merchant} ({}); the key is shown only now:",
                        issued.record.id,
                        env.as_str()
                    );
                    println!("{}", issued.key.as_str());
                }
                KeyCommand::List { merchant } => {
                    for k in api_keys::list(&store, &merchant, None).await? {
                        println!(
                            "{}  {}…  {}  {}{}",
                            k.id,
                            k.prefix,
                            k.environment.as_str(),
                            k.label.as_deref().unwrap_or("-"),
                            if k.revoked_at.is_some() {
                                "  (revoked)"
                            } else {
                                ""
                            }
                        );
                    }
                }
                KeyCommand::Revoke { id } => {
                    let key = api_keys::find(&store, &id)
                        .await?
                        .filter(|k| k.revoked_at.is_none())
                        .ok_or_else(|| anyhow::anyhow!("no active API key {id:?}"))?;
                    api_keys::revoke(
                        &store,
                        &api_keys::operator(&key.merchant_id, key.environment),
                        &id,
                    )
                    .await?;
                    println!("revoked {id}");
                }
            }
        }
        Command::Vault {
            db,
            command: VaultCommand::Rotate,
        } => {
            let store = open_store(&db).await?;
            let vault = open_vault(&db)?;
            let rotated = pixgw::credentials::rotate_all(&store, &vault).await?;
            println!(
                "{} credentials examined, {} secrets re-encrypted under key {} ({} webhook \
                 endpoints examined)",
                rotated.credentials,
                rotated.resealed,
                vault.current_key_id(),
                rotated.endpoints
            );
        }
    }
    Ok(())
}

/// A plan's refusal for the operator: what is full, and the command that changes the plan.
fn plan_refusal(merchant: &str, reached: &pixgw::plans::LimitReached) -> anyhow::Error {
    let next = reached.upgrade().map_or("<plan>", |p| p.id.as_str());
    anyhow::anyhow!(
        "{} To allow more: pixgw merchant set-plan {merchant} {next}",
        reached.message()
    )
}

async fn open_store(db: &DatabaseArgs) -> anyhow::Result<Store> {
    let store = Store::connect(&db.database_url).await?;
    store.migrate().await?;
    Ok(store)
}

fn open_vault(db: &DatabaseArgs) -> anyhow::Result<Vault> {
    let master = std::env::var(pixgw::vault::MASTER_KEY_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    let previous = std::env::var(pixgw::vault::PREVIOUS_KEYS_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    let (vault, _source) =
        Vault::from_env_or_dev_file(master.as_deref(), previous.as_deref(), &db.data_dir)?;
    Ok(vault)
}

/// `pixgw plugins …`: the commands live in `pixgw::adapter_tools`; this prints and sets the exit
/// code.
async fn plugins(command: PluginsCommand) -> anyhow::Result<()> {
    use pixgw::adapter_tools::{build, check, conformance, scaffold};
    match command {
        PluginsCommand::Check {
            path,
            dir,
            compile_cache_dir,
        } => {
            let verdicts = check::check(&dir.unwrap_or(path), compile_cache_dir).await?;
            print!("{}", check::render(&verdicts));
            if !verdicts.iter().all(check::Verdict::passed) {
                std::process::exit(1);
            }
        }
        PluginsCommand::New {
            id,
            central_bank,
            name,
            dir,
            sdk,
        } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(format!("pixgw-plugin-{id}")));
            let sdk = sdk.or_else(scaffold::sdk_of_this_build);
            scaffold::scaffold(&scaffold::NewAdapter {
                id: id.clone(),
                name,
                central_bank,
                dir: dir.clone(),
                sdk: sdk.clone(),
            })?;
            println!("created {} (adapter `{id}`)", dir.display());
            match sdk {
                Some(sdk) => println!("  the SDK: {}", sdk.display()),
                None => println!(
                    "  the SDK: pixgw-plugin-sdk 2 from crates.io (--sdk <dir> for a checkout's)"
                ),
            }
            println!(
                "next:\n  cd {}\n  cargo test\n  pixgw plugins build . --out dist",
                dir.display()
            );
        }
        PluginsCommand::Build {
            crate_dir,
            out,
            compile_cache_dir,
        } => {
            let built = build::build(&crate_dir, &out, compile_cache_dir).await?;
            print!("{}", built.report);
            println!("installed {}", built.installed.display());
        }
        PluginsCommand::Conformance {
            file,
            sim,
            as_provider,
            compile_cache_dir,
        } => {
            let steps = conformance::run(&conformance::Options {
                file,
                sim,
                as_provider,
                compile_cache_dir,
            })
            .await?;
            print!("{}", conformance::render(&steps));
            if steps.iter().any(conformance::Step::failed) {
                std::process::exit(1);
            }
        }
    }
    Ok(())
}

/// The runtime's settings from the flags (reads the trusted CA files).
fn runtime_config(args: &ServeArgs) -> anyhow::Result<config::RuntimeConfig> {
    let mut trusted_ca_pem = Vec::new();
    for path in &args.trusted_ca {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read trusted CA file {}: {e}", path.display()))?;
        trusted_ca_pem.push(pem);
    }
    Ok(config::RuntimeConfig {
        plugin_dir: args.plugin_dir.clone(),
        compile_cache_dir: Some(args.compile_cache_dir.clone()),
        trusted_ca_pem,
        endpoint_overrides: config::parse_endpoint_overrides(&args.endpoint_overrides)
            .map_err(anyhow::Error::msg)?,
        limits: config::Limits {
            max_concurrent_calls: args.max_adapter_calls.max(1),
            ..Default::default()
        },
        admission: config::AdmissionConfig {
            per_psp: args.max_adapter_calls_per_psp.max(1),
            queue_timeout: args.adapter_queue_timeout,
        },
        ..Default::default()
    })
}

/// The gateway's settings from the flags, once the listener's address fixed `base_url` and the
/// evidence store is open.
fn app_config(
    args: ServeArgs,
    base_url: String,
    evidence: pixgw::evidence::PhotoStore,
) -> config::AppConfig {
    config::AppConfig {
        rate_limit: args.rate_limit,
        checkout_rate_limit: args.checkout_rate_limit,
        auth_failure_limit: args.auth_failure_limit,
        breaker: config::BreakerConfig {
            threshold: args.breaker_threshold.max(1),
            cooldown: args.breaker_cooldown,
        },
        delivery: config::DeliveryConfig {
            retry_delays: args.webhook_retry_delays,
            timeout: args.webhook_timeout,
            lease: args.webhook_lease,
            concurrency: args.webhook_concurrency.max(1),
            per_endpoint: args.webhook_per_endpoint.max(1),
            per_failing_endpoint: args.webhook_per_failing_endpoint.max(1),
            max_endpoints: args.max_webhook_endpoints,
            poll_interval: args.worker_poll,
            destinations: config::DestinationPolicy {
                allow_private: args.allow_private_webhook_urls,
            },
            ..Default::default()
        },
        reconciler: config::ReconcilerConfig {
            schedule: args.reconcile_schedule,
            grace: args.reconcile_grace,
            poll_interval: args.worker_poll,
            orphan_age: args.orphan_age,
            lease: args.reconcile_lease,
            concurrency: args.reconcile_concurrency.max(1),
            item_timeout: args.reconcile_timeout,
        },
        charges: config::ChargesConfig {
            idempotency_lock: args.idempotency_lock,
        },
        sessions: config::SessionConfig {
            idle: args.session_idle_timeout,
            absolute: args.session_max_age,
            secure_cookies: base_url.starts_with("https://"),
        },
        live_streams_per_merchant: args.max_live_streams.max(1),
        base_url,
        evidence,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Before anything else: a production gateway that quietly generated its own key would seal
    // merchants' secrets under a file nobody backs up.
    let has_master_key = std::env::var(pixgw::vault::MASTER_KEY_ENV).is_ok_and(|v| !v.is_empty());
    anyhow::ensure!(
        has_master_key || args.insecure_dev_master_key,
        "{} is not set. Generate a key with `openssl rand -base64 32`, keep it safe, and set \
         {} to it. For development only, pass --insecure-dev-master-key (or set \
         PIXGW_INSECURE_DEV_MASTER_KEY=true) to use a key generated into {}.",
        pixgw::vault::MASTER_KEY_ENV,
        pixgw::vault::MASTER_KEY_ENV,
        args.db.data_dir.join(pixgw::vault::DEV_KEY_FILE).display()
    );
    let runtime = Runtime::new(runtime_config(&args)?)?;
    for result in runtime.load_all().await {
        if let Err(e) = result {
            tracing::error!(error = %e, "adapter not loaded");
        }
    }
    let _watch = runtime.watch()?;
    let store = open_store(&args.db).await?;
    let vault = open_vault(&args.db)?;
    let evidence =
        pixgw::evidence::storage::StorageLocation::parse(&args.evidence_store, &args.db.data_dir)
            .map_err(anyhow::Error::msg)?;
    let evidence = pixgw::evidence::PhotoStore::open(&evidence)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"))
        .trim_end_matches('/')
        .to_owned();
    let poll = args.worker_poll;
    let config = app_config(args, base_url, evidence);
    let deliverer = std::sync::Arc::new(pixgw::webhooks::outbound::Deliverer::new(
        config.delivery.clone(),
    )?);
    let app = pixgw::app::App::new(store, vault, runtime, config);
    app.runtime.set_durable_cache(std::sync::Arc::new(
        pixgw::store::adapter_cache::StoreCache {
            store: app.store.clone(),
            vault: app.vault.clone(),
        },
    ));
    // Background work, each loop restarted after a panic (logged, counted in /metrics); each
    // ends with the process.
    let backoff = pixgw::supervisor::Backoff::default();
    let supervise = |name: &'static str, run: fn(Arc<pixgw::app::App>, Duration) -> Task| {
        let app = app.clone();
        pixgw::supervisor::supervise(name, backoff, move || run(app.clone(), poll))
    };
    let deliver = {
        let (app, deliverer) = (app.clone(), deliverer.clone());
        pixgw::supervisor::supervise("webhook_delivery", backoff, move || {
            let (app, deliverer) = (app.clone(), deliverer.clone());
            Box::pin(async move { deliverer.run(app).await }) as Task
        })
    };
    let tasks = [
        supervise("sweeper", |app, _| Box::pin(sweep_idempotency_keys(app))),
        deliver,
        supervise("reconciler", |app, _| Box::pin(pixgw::reconciler::run(app))),
        supervise("retention", |app, _| Box::pin(pixgw::retention::run(app))),
        supervise("evidence_sweeper", |app, _| {
            Box::pin(pixgw::evidence::run_sweeper(app))
        }),
        supervise("inbound_retry", |app, poll| {
            Box::pin(pixgw::webhooks::inbound::retry_unprocessed(app, poll * 5))
        }),
    ];
    let router = pixgw::api::router(app);
    tracing::info!(%addr, "pixgw listening");
    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("pixgw listening on http://{addr}");
    // Answers go out at once: with Nagle's algorithm an answer written in two parts waits for
    // the client's delayed ACK (40 ms on Linux).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    for task in tasks {
        task.abort();
    }
    tracing::info!("pixgw stopped");
    Ok(())
}

/// A background loop, as the supervisor starts it.
type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Expired idempotency keys, adapter cache entries and dashboard sessions go hourly.
async fn sweep_idempotency_keys(app: std::sync::Arc<pixgw::app::App>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
    loop {
        every.tick().await;
        match app.store.sweep_idempotency_keys().await {
            Ok(n) if n > 0 => tracing::info!(deleted = n, "expired idempotency keys swept"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "sweeping idempotency keys failed"),
        }
        if let Err(e) = app.store.sweep_adapter_cache().await {
            tracing::warn!(error = %e, "sweeping the adapter cache failed");
        }
        let idle = app.config.sessions.idle.as_millis() as i64;
        if let Err(e) = app.store.sweep_sessions(pixgw::store::now_ms(), idle).await {
            tracing::warn!(error = %e, "sweeping dashboard sessions failed");
        }
    }
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
