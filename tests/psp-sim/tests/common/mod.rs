//! Helpers shared by the integration tests: a started simulator with Efí's test account, HTTP
//! clients with and without the client certificate, and a local webhook receiver.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::Request;
use parking_lot::Mutex;
use psp_sim::{ProviderInfo, Sim, SimOptions};
use serde_json::{Value, json};

pub struct Efi {
    pub sim: Sim,
    pub info: ProviderInfo,
    pub api: String,
    pub client_id: String,
    pub client_secret: String,
    pub pix_key: String,
    pub certificate: String,
    /// Client presenting the account's certificate.
    pub http: reqwest::Client,
    /// Plain client for the control API.
    pub ctl: reqwest::Client,
}

pub async fn start() -> Efi {
    let sim = Sim::start(SimOptions::default()).await.expect("sim starts");
    let info = sim.provider("efi").expect("efi is simulated");
    let cred = |k: &str| {
        info.credentials
            .get(k)
            .cloned()
            .unwrap_or_else(|| panic!("credential {k}"))
    };
    let certificate = cred("certificate");
    let http = client(&sim.ca_pem(), Some(&certificate));
    let ctl = client(&sim.ca_pem(), None);
    Efi {
        api: info.endpoints["api"].clone(),
        client_id: cred("client-id"),
        client_secret: cred("client-secret"),
        pix_key: cred("pix-key"),
        certificate,
        info,
        sim,
        http,
        ctl,
    }
}

/// A client trusting the simulator's CA, presenting `identity` (cert + key PEM) when given.
pub fn client(ca_pem: &str, identity: Option<&str>) -> reqwest::Client {
    let tls = psp_sim::tls::client_config(ca_pem, identity).expect("TLS config");
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client")
}

pub fn txid() -> String {
    uuid::Uuid::new_v4().simple().to_string() // 32 hex chars
}

impl Efi {
    pub async fn token_with(&self, http: &reqwest::Client) -> String {
        let res = http
            .post(format!("{}/oauth/token", self.api))
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .json(&json!({ "grant_type": "client_credentials" }))
            .send()
            .await
            .expect("token request");
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_string()
    }

    pub async fn token(&self) -> String {
        self.token_with(&self.http).await
    }

    pub fn cob_body(&self, valor: &str) -> Value {
        json!({
            "calendario": { "expiracao": 3600 },
            "devedor": { "cpf": "12345678909", "nome": "Fulano de Tal" },
            "valor": { "original": valor },
            "chave": self.pix_key,
            "solicitacaoPagador": "Pedido 42",
        })
    }

    /// `PUT /v2/cob/{txid}`, returning status and JSON body.
    pub async fn put_cob(&self, token: &str, txid: &str, body: &Value) -> (u16, Value) {
        let res = self
            .http
            .put(format!("{}/v2/cob/{txid}", self.api))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("create request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub async fn create(&self, token: &str) -> String {
        let txid = txid();
        let (status, body) = self.put_cob(token, &txid, &self.cob_body("10.00")).await;
        assert_eq!(status, 201, "{body}");
        txid
    }

    pub async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub async fn ctl_post(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self
            .ctl
            .post(format!("{}{path}", self.sim.control_url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap())
    }

    pub async fn ctl_get(&self, path: &str) -> Value {
        let res = self
            .ctl
            .get(format!("{}{path}", self.sim.control_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }

    pub async fn ctl_delete(&self, path: &str) -> u16 {
        let res = self
            .ctl
            .delete(format!("{}{path}", self.sim.control_url()))
            .send()
            .await
            .unwrap();
        res.status().as_u16()
    }

    pub async fn register_webhook(&self, token: &str, url: &str) {
        let res = self
            .http
            .put(format!("{}/v2/webhook/{}", self.api, self.pix_key))
            .bearer_auth(token)
            .header("x-skip-mtls-checking", "true")
            .json(&json!({ "webhookUrl": url }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
}

/// A request seen by [`Receiver`].
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// Path and query exactly as requested.
    pub target: String,
    pub content_type: Option<String>,
    pub body: Value,
}

/// A local webhook receiver answering 200 (or `status`) and recording everything.
pub struct Receiver {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start(status: u16) -> Receiver {
        let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
        let record = seen.clone();
        let app = axum::Router::new().fallback(move |req: Request| {
            let record = record.clone();
            async move {
                let (parts, body) = req.into_parts();
                let bytes: Bytes = axum::body::to_bytes(body, 1 << 20)
                    .await
                    .unwrap_or_default();
                record.lock().push(Received {
                    method: parts.method.to_string(),
                    target: parts
                        .uri
                        .path_and_query()
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                    content_type: parts
                        .headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string),
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                });
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { addr, seen }
    }

    pub fn received(&self) -> Vec<Received> {
        self.seen.lock().clone()
    }
}

/// Polls `check` until it returns `Some` or the deadline passes.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
