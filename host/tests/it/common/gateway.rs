//! The real `pixgw` binary for end-to-end tests: a fresh database (SQLite file or a PostgreSQL
//! database of its own), the operator CLI for merchants and keys, and `pixgw serve` on port 0
//! wired to the in-process PSP simulator.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// Which storage backend a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs an async test body once per backend: `both_backends!(name)` expects an
/// `async fn name(backend: Backend)` and makes `name::sqlite` and `name::postgres` tests.
#[macro_export]
macro_rules! both_backends {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::common::gateway::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::common::gateway::Backend::Postgres).await
            }
        }
    };
}

/// The PostgreSQL server tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("PIXGW_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A database of one test; a PostgreSQL one is dropped when this is.
pub struct TestDb {
    pub url: String,
    postgres_name: Option<String>,
    /// Holds the SQLite file's folder (and the gateway's data directory).
    pub dir: tempfile::TempDir,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        match backend {
            Backend::Sqlite => TestDb {
                url: format!("sqlite://{}/pixgw.db", dir.path().display()),
                postgres_name: None,
                dir,
            },
            Backend::Postgres => {
                use sqlx::Connection;
                let name = format!("pixgw_test_{}", uuid::Uuid::new_v4().simple());
                let admin = postgres_admin_url();
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL must run at {admin} for the storage tests (set PIXGW_TEST_POSTGRES_URL): {e}")
                });
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                let base = admin.rsplit_once('/').unwrap().0;
                TestDb {
                    url: format!("{base}/{name}"),
                    postgres_name: Some(name),
                    dir,
                }
            }
        }
    }

    pub fn sqlite_file(&self) -> Option<PathBuf> {
        self.postgres_name
            .is_none()
            .then(|| self.dir.path().join("pixgw.db"))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(name) = self.postgres_name.take() else {
            return;
        };
        // Drop runs inside the test's runtime: use a thread with a runtime of its own.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                use sqlx::Connection;
                if let Ok(mut conn) = sqlx::PgConnection::connect(&postgres_admin_url()).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join()
        .ok();
    }
}

pub fn pixgw_bin() -> &'static str {
    env!("CARGO_BIN_EXE_pixgw")
}

/// Runs a `pixgw` CLI command against `db`; returns stdout, asserting success.
pub fn cli(db: &TestDb, env: &[(&str, &str)], args: &[&str]) -> String {
    let output = cli_output(db, env, args);
    assert!(
        output.status.success(),
        "pixgw {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

pub fn cli_output(db: &TestDb, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    Command::new(pixgw_bin())
        .args(args)
        .env("PIXGW_DATABASE_URL", &db.url)
        .env("PIXGW_DATA_DIR", db.dir.path().join("data"))
        .env_remove("PIXGW_MASTER_KEY")
        .env_remove("PIXGW_MASTER_KEY_PREVIOUS")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// A merchant with a test and a live key, on the Enterprise plan: the tests of other features
/// connect several PSPs, endpoints and links, which Free does not allow (the plans' own tests
/// choose their plans with [`create_merchant_on`]).
pub struct Merchant {
    pub id: String,
    pub test_key: String,
    pub live_key: String,
}

pub fn create_merchant(db: &TestDb, name: &str) -> Merchant {
    create_merchant_on(db, name, "enterprise")
}

/// A merchant on `plan` with a test and a live key.
pub fn create_merchant_on(db: &TestDb, name: &str, plan: &str) -> Merchant {
    let id = cli(
        db,
        &[],
        &["merchant", "create", "--name", name, "--plan", plan],
    );
    let test_key = cli(
        db,
        &[],
        &["key", "create", "--merchant", &id, "--env", "test"],
    );
    let live_key = cli(
        db,
        &[],
        &["key", "create", "--merchant", &id, "--env", "live"],
    );
    Merchant {
        id,
        test_key,
        live_key,
    }
}

/// A running `pixgw serve`; killed when dropped.
pub struct Gateway {
    child: tokio::process::Child,
    pub url: String,
    /// The directory the gateway loads (and hot-reloads) adapters from.
    pub plugin_dir: PathBuf,
    pub http: reqwest::Client,
}

/// Options beyond the defaults of [`Gateway::start`].
#[derive(Default, Clone)]
pub struct GatewayOptions {
    pub env: Vec<(String, String)>,
    /// `provider.endpoint[.test|.live]=url` after the simulator's own, so they win.
    pub endpoint_overrides: Vec<String>,
}

impl GatewayOptions {
    /// The environment `defaults` then `extra` give, a variable in both taking `extra`'s value:
    /// a test file's usual settings, and one test's own.
    pub fn with_env(defaults: &[(&str, &str)], extra: &[(&str, &str)]) -> GatewayOptions {
        let mut env: Vec<(String, String)> = Vec::new();
        for (k, v) in defaults.iter().chain(extra) {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.to_string()));
        }
        GatewayOptions {
            env,
            ..Default::default()
        }
    }
}

impl Gateway {
    /// Starts `pixgw serve` on `db` with the named adapters, pointed at `sim`.
    pub async fn start(
        db: &TestDb,
        sim: &psp_sim::Sim,
        adapters: &[&str],
        options: GatewayOptions,
    ) -> Gateway {
        Self::start_with(db, Some(sim), adapters, options).await
    }

    /// Starts `pixgw serve`, with or without the simulator.
    pub async fn start_with(
        db: &TestDb,
        sim: Option<&psp_sim::Sim>,
        adapters: &[&str],
        options: GatewayOptions,
    ) -> Gateway {
        let plugin_dir = db.dir.path().join("plugins");
        std::fs::create_dir_all(&plugin_dir).unwrap();
        for id in adapters {
            std::fs::copy(
                super::built_adapter(id),
                plugin_dir.join(format!("{id}.wasm")),
            )
            .unwrap();
        }
        let mut child = tokio::process::Command::new(pixgw_bin());
        child
            .args(["serve", "--listen", "127.0.0.1:0"])
            // Tests that need a real key pass PIXGW_MASTER_KEY in `options.env`; it wins.
            .arg("--insecure-dev-master-key")
            .arg("--plugin-dir")
            .arg(&plugin_dir)
            .arg("--compile-cache-dir")
            .arg(super::target_dir().join("test-compile-cache"));
        if let Some(sim) = sim {
            let ca = db.dir.path().join("sim-ca.pem");
            std::fs::write(&ca, sim.ca_pem()).unwrap();
            let mut overrides = sim.info().endpoint_overrides;
            overrides.extend(options.endpoint_overrides.iter().cloned());
            child
                .arg("--trusted-ca")
                .arg(&ca)
                .arg("--endpoint-overrides")
                .arg(overrides.join(","));
        }
        child
            .env("PIXGW_DATABASE_URL", &db.url)
            .env("PIXGW_DATA_DIR", db.dir.path().join("data"))
            .env(
                "PIXGW_LOG",
                std::env::var("PIXGW_TEST_LOG").unwrap_or_else(|_| "error".into()),
            )
            .env_remove("PIXGW_MASTER_KEY")
            .env_remove("PIXGW_MASTER_KEY_PREVIOUS")
            .envs(options.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = child.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let url = tokio::time::timeout(Duration::from_secs(120), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("pixgw listening on ") {
                    return url.to_owned();
                }
            }
            panic!("pixgw exited before listening");
        })
        .await
        .expect("pixgw did not start within 120 s");
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let _ = rustls::crypto::ring::default_provider().install_default();
        Gateway {
            child,
            url,
            plugin_dir,
            http: reqwest::Client::new(),
        }
    }

    /// Stops the gateway at once (SIGKILL), as a crash would.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.url));
        match key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    /// Sends and returns (status, JSON body).
    pub async fn send(&self, builder: reqwest::RequestBuilder) -> (u16, Value) {
        let response = builder.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body)
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.send(
            self.request(reqwest::Method::POST, path, Some(key))
                .json(&body),
        )
        .await
    }

    pub async fn get(&self, path: &str, key: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::GET, path, Some(key)))
            .await
    }

    /// Connects the simulator's test account at `provider` for `key`'s merchant.
    pub async fn connect(
        &self,
        sim: &psp_sim::Sim,
        key: &str,
        provider: &str,
        overrides: &[(&str, &str)],
    ) -> Value {
        let mut fields = serde_json::Map::new();
        for (k, v) in sim.provider(provider).unwrap().credentials {
            fields.insert(k, Value::String(v));
        }
        for (k, v) in overrides {
            fields.insert(k.to_string(), Value::String(v.to_string()));
        }
        let verify = overrides.is_empty();
        let (status, body) = self
            .post(
                "/v1/credentials",
                key,
                json!({ "provider": provider, "fields": fields, "verify": verify }),
            )
            .await;
        assert_eq!(status, 201, "connecting {provider}: {body}");
        body
    }
}
