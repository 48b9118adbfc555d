//! `pixgw plugins conformance <file.wasm> --sim <url> --as <psp>`: the life of a charge through
//! one adapter, loaded by the real runtime against a PSP simulator, exactly as the gateway drives
//! it: credentials checked (and a wrong secret refused as `bad-credentials` for the reason
//! `credentials`), the notification URL registered, a charge to a Pix key that is not the
//! account's refused for the reason `pix-key`, a charge created with a valid BR Code of its
//! amount, created again harmlessly, read, paid, notified and read as paid, a second charge
//! canceled, an unknown one `not-found` for the reason `not-found`. Which steps run follows the
//! adapter's manifest (its capabilities and fields). The reasons matter: the gateway's hint and
//! error code come from them.
//!
//! The simulator is `tests/psp-sim` of a pixgw checkout (`cargo xtask demo` starts one); `--as`
//! names the simulated PSP whose protocol the adapter speaks (a new central-bank bank speaks
//! `bradesco`'s, the standard). Its test account becomes the credential; its endpoints, the
//! adapter's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Deserialize;
use serde_json::json;

use crate::domain::BrCode;
use crate::runtime::{
    Adapter, CallError, Capabilities, ChargeRequest, ChargeStatus, Credential, Environment,
    FieldKind, Payer, PayerField, PspError, RefusalReason, Runtime, RuntimeConfig, WebhookRequest,
};

/// The credential field central-bank adapters (and the scaffold) name the account's Pix key.
const PIX_KEY_FIELD: &str = "pix-key";

pub struct Options {
    pub file: PathBuf,
    /// The simulator's control URL, e.g. `http://127.0.0.1:7070`.
    pub sim: String,
    /// The simulated PSP to run against.
    pub as_provider: String,
    pub compile_cache_dir: Option<PathBuf>,
}

pub enum Outcome {
    Passed(String),
    Failed(String),
    Skipped(String),
}

pub struct Step {
    pub name: &'static str,
    pub outcome: Outcome,
}

impl Step {
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }
}

/// The table `pixgw plugins conformance` prints.
pub fn render(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        let (mark, detail) = match &step.outcome {
            Outcome::Passed(d) => ("ok     ", d),
            Outcome::Failed(d) => ("FAILED ", d),
            Outcome::Skipped(d) => ("skipped", d),
        };
        out.push_str(&format!("{mark} {:<28} {detail}\n", step.name));
    }
    let failed = steps.iter().filter(|s| s.failed()).count();
    out.push_str(&if failed == 0 {
        format!("conformance: all {} steps passed or skipped\n", steps.len())
    } else {
        format!("conformance: {failed} of {} steps FAILED\n", steps.len())
    });
    out
}

#[derive(Deserialize)]
struct SimInfo {
    ca_pem: String,
    providers: BTreeMap<String, SimProvider>,
}

#[derive(Deserialize)]
struct SimProvider {
    endpoints: BTreeMap<String, String>,
    credentials: BTreeMap<String, String>,
}

/// Runs the suite; an error means it could not start (no simulator, a file that does not load).
pub async fn run(options: &Options) -> anyhow::Result<Vec<Step>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let sim = options.sim.trim_end_matches('/').to_owned();
    let info: SimInfo = client
        .get(format!("{sim}/_sim/info"))
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .with_context(|| {
            format!("no PSP simulator answers at {sim} (start one with `cargo xtask demo`)")
        })?
        .json()
        .await
        .context("the simulator's /_sim/info is not what this pixgw expects")?;
    let Some(psp) = info.providers.get(&options.as_provider) else {
        bail!(
            "the simulator has no PSP {:?}; it has: {}",
            options.as_provider,
            info.providers
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    };

    // The adapter alone in a private plugin directory, its endpoints pointed at the simulator.
    let id = crate::runtime::registry::expected_id(&options.file)
        .with_context(|| format!("{} is not named <provider-id>.wasm", options.file.display()))?;
    let dir = PrivateDir::new()?;
    let file = dir.path().join(format!("{id}.wasm"));
    std::fs::copy(&options.file, &file)
        .with_context(|| format!("cannot read {}", options.file.display()))?;
    let loaded = Runtime::new(RuntimeConfig {
        plugin_dir: dir.path().to_owned(),
        compile_cache_dir: options.compile_cache_dir.clone(),
        ..Default::default()
    })?
    .inspect(&file)
    .await?;
    let overrides: Vec<String> = loaded
        .manifest
        .endpoints
        .iter()
        .filter_map(|e| {
            let url = psp
                .endpoints
                .get(&e.name)
                .or_else(|| psp.endpoints.get("api"))?;
            Some(format!("{id}.{}={url}", e.name))
        })
        .collect();
    let runtime = Runtime::new(RuntimeConfig {
        plugin_dir: dir.path().to_owned(),
        compile_cache_dir: options.compile_cache_dir.clone(),
        trusted_ca_pem: vec![info.ca_pem.clone()],
        endpoint_overrides: crate::config::parse_endpoint_overrides(&overrides.join(","))
            .map_err(anyhow::Error::msg)?,
        ..Default::default()
    })?;
    runtime.load_file(&file).await?;
    let adapter = runtime.adapter(&id).context("the adapter did not load")?;

    let (webhook_url, deliveries) = receiver().await?;
    let credential = Credential {
        id: format!("conformance-{id}"),
        environment: Environment::Test,
        fields: psp.credentials.clone(),
        webhook_url: Some(webhook_url),
    };
    let suite = Suite {
        adapter,
        credential,
        client,
        sim,
        as_provider: options.as_provider.clone(),
        deliveries: tokio::sync::Mutex::new(deliveries),
    };
    Ok(suite.run().await)
}

struct Suite {
    adapter: Adapter,
    credential: Credential,
    client: reqwest::Client,
    sim: String,
    as_provider: String,
    deliveries: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<WebhookRequest>>,
}

/// A step's result: its detail when it passed, or what went wrong.
type Checked = Result<String, String>;

impl Suite {
    async fn run(&self) -> Vec<Step> {
        let capabilities = self.adapter.manifest().capabilities;
        let mut steps = Vec::new();
        let mut push = |name, outcome| steps.push(Step { name, outcome });

        if capabilities.contains(Capabilities::CHECK_CREDENTIALS) {
            push(
                "credentials accepted",
                outcome(self.credentials_accepted().await),
            );
            push(
                "wrong secret refused",
                outcome(self.wrong_secret_refused().await),
            );
        } else {
            let skip = Outcome::Skipped("no check-credentials capability".into());
            push("credentials accepted", skip);
        }
        let registered = capabilities.contains(Capabilities::REGISTER_WEBHOOK);
        if registered {
            push(
                "notification URL registered",
                outcome(self.register().await),
            );
        }
        if self.credential.fields.contains_key(PIX_KEY_FIELD) {
            push(
                "wrong Pix key refused",
                outcome(self.wrong_pix_key_refused().await),
            );
        }
        let reference = new_reference();
        let created = self.create(&reference, 1234).await;
        let created_ok = created.is_ok();
        push("create", outcome(created));
        if !created_ok {
            return steps;
        }
        push(
            "create again: same charge",
            outcome(self.create_again(&reference).await),
        );
        push(
            "query: pending",
            outcome(self.query_is(&reference, ChargeStatus::Pending).await),
        );
        push("paid at the PSP", outcome(self.pay(&reference).await));
        if registered {
            push(
                "notification: paid",
                outcome(self.notified_paid(&reference).await),
            );
        } else {
            let skip = Outcome::Skipped(
                "the adapter registers no notification URL (set at the PSP by the merchant)".into(),
            );
            push("notification: paid", skip);
        }
        push(
            "query: paid",
            outcome(self.query_is(&reference, ChargeStatus::Paid).await),
        );
        if capabilities.contains(Capabilities::CANCEL_CHARGE) {
            push("cancel", outcome(self.cancel().await));
        } else {
            push(
                "cancel",
                Outcome::Skipped("no cancel-charge capability".into()),
            );
        }
        push(
            "unknown charge: not-found",
            outcome(self.unknown_is_not_found().await),
        );
        steps
    }

    /// A charge request with the payer fields the adapter's manifest requires (valid values: a
    /// CPF with its check digits).
    fn request(&self, reference: &str, amount: u64) -> ChargeRequest {
        let required = &self.adapter.manifest().required_payer_fields;
        let wants = |field: PayerField| required.contains(&field);
        ChargeRequest {
            reference: reference.into(),
            amount,
            description: Some("conformance".into()),
            payer: Payer {
                email: wants(PayerField::Email).then(|| "maria.silva@example.com".into()),
                name: wants(PayerField::Name).then(|| "Maria da Silva".into()),
                document: wants(PayerField::Document).then(|| "52998224725".into()),
            },
            expires_in: 3600,
        }
    }

    fn prepared(&self, credential: &Credential) -> crate::runtime::PreparedCredential {
        self.adapter.prepare(credential)
    }

    async fn credentials_accepted(&self) -> Checked {
        let cred = self.prepared(&self.credential);
        self.adapter
            .check_credentials(&cred, "conformance-check")
            .await
            .map(|()| "check-credentials answered ok".into())
            .map_err(|e| format!("the simulator's test account was refused: {e}"))
    }

    async fn wrong_secret_refused(&self) -> Checked {
        let manifest = self.adapter.manifest();
        let Some(secret) = manifest
            .credential_fields
            .iter()
            .find(|f| f.kind == FieldKind::Secret && self.credential.fields.contains_key(&f.name))
        else {
            return Ok("no secret field to spoil".into());
        };
        let mut wrong = self.credential.clone();
        wrong
            .fields
            .get_mut(&secret.name)
            .expect("checked")
            .push_str("-wrong");
        wrong.id.push_str("-wrong");
        match self
            .adapter
            .check_credentials(&self.prepared(&wrong), "conformance-wrong")
            .await
        {
            Err(CallError::Psp {
                error: PspError::BadCredentials(e),
                ..
            }) if e.reason == RefusalReason::Credentials => {
                Ok(format!("bad-credentials (credentials): {}", e.message))
            }
            Err(CallError::Psp {
                error: PspError::BadCredentials(e),
                ..
            }) => Err(format!(
                "a wrong `{}` is bad-credentials but for the reason {:?}: it must be \
                 `credentials` (the gateway's hint follows it)",
                secret.name, e.reason
            )),
            Err(e) => Err(format!(
                "a wrong `{}` must be bad-credentials (the dashboard then says so), got {e}",
                secret.name
            )),
            Ok(()) => Err(format!("a wrong `{}` was accepted", secret.name)),
        }
    }

    /// A Pix key that is not the account's: the PSP refuses the charge, and the adapter says
    /// the key is why.
    async fn wrong_pix_key_refused(&self) -> Checked {
        let mut wrong = self.credential.clone();
        wrong.fields.insert(
            PIX_KEY_FIELD.into(),
            "00000000-0000-4000-8000-000000000000".into(),
        );
        wrong.id.push_str("-wrong-key");
        let request = self.request(&new_reference(), 1234);
        match self
            .adapter
            .create_charge(&self.prepared(&wrong), "conformance-wrong-key", &request)
            .await
        {
            Err(CallError::Psp {
                error: PspError::Rejected(e),
                ..
            }) if e.reason == RefusalReason::PixKey => {
                Ok(format!("rejected (pix-key): {}", e.message))
            }
            Err(CallError::Psp { error, .. }) => Err(format!(
                "a Pix key that is not the account's must be rejected for the reason `pix-key`, \
                 got {error:?}"
            )),
            Err(e) => Err(format!("a wrong Pix key: {e}")),
            Ok(c) => Err(format!(
                "a Pix key that is not the account's was accepted: {}",
                c.psp_id
            )),
        }
    }

    async fn register(&self) -> Checked {
        self.adapter
            .register_webhook(&self.prepared(&self.credential), "conformance-register")
            .await
            .map(|()| "register-webhook answered ok".into())
            .map_err(|e| e.to_string())
    }

    async fn create(&self, reference: &str, amount: u64) -> Checked {
        let charge = self
            .adapter
            .create_charge(
                &self.prepared(&self.credential),
                "conformance-create",
                &self.request(reference, amount),
            )
            .await
            .map_err(|e| e.to_string())?;
        if charge.reference != reference || charge.status != ChargeStatus::Pending {
            return Err(format!(
                "expected a pending charge named {reference}, got {:?} named {}",
                charge.status, charge.reference
            ));
        }
        if charge.amount != amount {
            return Err(format!(
                "asked {amount} centavos, the charge says {}",
                charge.amount
            ));
        }
        let code = charge
            .copy_paste
            .ok_or("the charge has no Pix copy-paste code")?;
        let brcode = BrCode::parse(&code)
            .map_err(|e| format!("the Pix code is not a valid BR Code: {e}"))?;
        match brcode.amount_centavos() {
            Some(a) if a == amount => Ok(format!(
                "pending, BR Code of {amount} centavos, psp id {}",
                charge.psp_id
            )),
            other => Err(format!("the BR Code's amount is {other:?}, not {amount}")),
        }
    }

    async fn create_again(&self, reference: &str) -> Checked {
        let cred = self.prepared(&self.credential);
        let again = self
            .adapter
            .create_charge(&cred, "conformance-again", &self.request(reference, 1234))
            .await
            .map_err(|e| format!("a repeated create must answer the existing charge: {e}"))?;
        let held = self.sim_charges().await?;
        let copies = held
            .iter()
            .filter(|c| c.to_string().contains(reference))
            .count();
        if copies != 1 {
            return Err(format!(
                "the PSP now holds {copies} charges for one reference"
            ));
        }
        Ok(format!(
            "the same charge ({}), one at the PSP",
            again.psp_id
        ))
    }

    async fn query_is(&self, reference: &str, expected: ChargeStatus) -> Checked {
        let charge = self
            .adapter
            .query_charge(
                &self.prepared(&self.credential),
                "conformance-query",
                reference,
                None,
            )
            .await
            .map_err(|e| e.to_string())?;
        if charge.status != expected {
            return Err(format!("expected {expected:?}, got {:?}", charge.status));
        }
        match (expected, &charge.payment) {
            (ChargeStatus::Paid, Some(p)) if p.amount == 1234 => {
                Ok(format!("paid {} centavos at {}", p.amount, p.paid_at))
            }
            (ChargeStatus::Paid, p) => Err(format!(
                "a paid charge must carry its payment of 1234, got {p:?}"
            )),
            _ => Ok(format!("{expected:?}")),
        }
    }

    async fn pay(&self, reference: &str) -> Checked {
        let answer = self
            .client
            .post(format!("{}/_sim/pay", self.sim))
            .json(&json!({"provider": self.as_provider, "reference": reference}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        if status.is_success() {
            Ok("the simulator paid it".into())
        } else {
            Err(format!("the simulator could not pay it ({status}): {body}"))
        }
    }

    async fn notified_paid(&self, reference: &str) -> Checked {
        let mut deliveries = self.deliveries.lock().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let delivery = tokio::time::timeout_at(deadline, deliveries.recv())
                .await
                .map_err(|_| "no notification reached the registered URL within 15 s".to_owned())?
                .ok_or("the receiver stopped")?;
            let events = self
                .adapter
                .parse_webhook(
                    &self.prepared(&self.credential),
                    "conformance-webhook",
                    &delivery,
                )
                .await
                .map_err(|e| format!("parse-webhook refused the PSP's notification: {e}"))?;
            if events
                .iter()
                .any(|e| e.reference.as_deref() == Some(reference))
            {
                return Ok(format!("{} event(s), naming the charge", events.len()));
            }
        }
    }

    async fn cancel(&self) -> Checked {
        let reference = new_reference();
        self.create(&reference, 500).await?;
        let cred = self.prepared(&self.credential);
        let canceled = self
            .adapter
            .cancel_charge(&cred, "conformance-cancel", &reference, None)
            .await
            .map_err(|e| e.to_string())?;
        if canceled.status != ChargeStatus::Canceled {
            return Err(format!("cancel answered {:?}", canceled.status));
        }
        let read = self
            .adapter
            .query_charge(&cred, "conformance-query-canceled", &reference, None)
            .await;
        match read {
            Ok(read) if read.status == ChargeStatus::Canceled => {
                Ok("canceled, and read back canceled".into())
            }
            Ok(read) => Err(format!("canceled, but read back {:?}", read.status)),
            // Some PSPs forget a removed charge (OpenPix): gone is canceled too.
            Err(CallError::Psp {
                error: PspError::NotFound(_),
                ..
            }) => Ok("canceled; the PSP forgets canceled charges (not-found)".into()),
            Err(e) => Err(format!("canceled, but reading it back failed: {e}")),
        }
    }

    async fn unknown_is_not_found(&self) -> Checked {
        match self
            .adapter
            .query_charge(
                &self.prepared(&self.credential),
                "conformance-unknown",
                &new_reference(),
                None,
            )
            .await
        {
            Err(CallError::Psp {
                error: PspError::NotFound(e),
                ..
            }) if e.reason == RefusalReason::NotFound => Ok(format!("not-found: {}", e.message)),
            Err(CallError::Psp {
                error: PspError::NotFound(e),
                ..
            }) => Err(format!(
                "an unknown charge is not-found but for the reason {:?}: say `not-found` \
                 (`Error::not_found` in the SDK)",
                e.reason
            )),
            Err(e) => Err(format!(
                "an unknown charge must be not-found (the gateway then knows it was never created), got {e}"
            )),
            Ok(c) => Err(format!(
                "an unknown reference answered a charge: {:?}",
                c.status
            )),
        }
    }

    async fn sim_charges(&self) -> Result<Vec<serde_json::Value>, String> {
        self.client
            .get(format!(
                "{}/_sim/charges?provider={}",
                self.sim, self.as_provider
            ))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())
    }
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "pixgw-conformance-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(PrivateDir(dir))
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn outcome(checked: Checked) -> Outcome {
    match checked {
        Ok(detail) => Outcome::Passed(detail),
        Err(why) => Outcome::Failed(why),
    }
}

/// A gateway-style reference: 32 alphanumerics (a valid central-bank txid).
fn new_reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The gateway's webhook route stand-in: every request under `/api/wh/conformance`, with its path
/// relative to that base, as the gateway hands it to `parse-webhook`.
async fn receiver() -> anyhow::Result<(String, tokio::sync::mpsc::UnboundedReceiver<WebhookRequest>)>
{
    const BASE: &str = "/api/wh/conformance";
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let tx = tx.clone();
        async move {
            let (parts, body) = request.into_parts();
            let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
                return axum::http::StatusCode::PAYLOAD_TOO_LARGE;
            };
            let _ = tx.send(WebhookRequest {
                method: parts.method.to_string(),
                path: parts.uri.path().trim_start_matches(BASE).to_owned(),
                query: parts.uri.query().unwrap_or_default().to_owned(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
                    .collect(),
                body: body.to_vec(),
            });
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}{BASE}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, rx))
}
