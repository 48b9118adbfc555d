//! The `http` import: outbound HTTP for adapters, performed by the host.
//!
//! Each call is checked against the call's [`EgressPolicy`] before anything is sent. Mutual TLS
//! uses the credential's client identity, which the host holds and the adapter never sees. One
//! pooled `reqwest::Client` exists per client identity (and one without), so connections to a PSP
//! are reused across calls. Redirects are not followed: a redirect could leave the allow-list.
//! Failures are classified by whether anything can have reached the PSP.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use super::bindings::http::{HttpError, Method, Request, Response};
use super::egress::EgressPolicy;

/// Default and ceiling for one exchange when the adapter gives no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle pooled connection to a PSP is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// A PSP answer larger than this is cut off and treated as no answer.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Clients kept for distinct identities before the cache is flushed.
const MAX_CLIENTS: usize = 1024;

/// A client certificate chain and its private key, parsed from the credential's PEM fields.
pub struct ClientIdentity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    fingerprint: [u8; 32],
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("fingerprint", &hex::encode(self.fingerprint))
            .finish_non_exhaustive()
    }
}

impl ClientIdentity {
    /// Parses PEM text holding one or more `CERTIFICATE` blocks and one private key block (PKCS#8,
    /// PKCS#1 or SEC1), in any order. The error says which part is missing or broken.
    pub fn from_pem(pem: &str) -> Result<ClientIdentity, String> {
        let mut chain = Vec::new();
        let mut key = None;
        for item in rustls_pemfile::read_all(&mut pem.as_bytes()) {
            match item.map_err(|e| format!("the certificate PEM does not parse: {e}"))? {
                rustls_pemfile::Item::X509Certificate(c) => chain.push(c),
                rustls_pemfile::Item::Pkcs8Key(k) => key = Some(PrivateKeyDer::Pkcs8(k)),
                rustls_pemfile::Item::Pkcs1Key(k) => key = Some(PrivateKeyDer::Pkcs1(k)),
                rustls_pemfile::Item::Sec1Key(k) => key = Some(PrivateKeyDer::Sec1(k)),
                _ => {}
            }
        }
        if chain.is_empty() {
            return Err("the client certificate PEM has no CERTIFICATE block".into());
        }
        let key = key.ok_or("the client certificate PEM has no PRIVATE KEY block")?;
        let fingerprint = Sha256::digest(pem.as_bytes()).into();
        Ok(ClientIdentity {
            chain,
            key,
            fingerprint,
        })
    }
}

/// Checks a certificate-and-key PEM the way a merchant needs to hear about it on save: both
/// parts present, the key belonging to the certificate, and the certificate valid `now`.
pub fn check_identity_pem(pem: &str, now: time::OffsetDateTime) -> Result<(), String> {
    let identity = ClientIdentity::from_pem(pem)?;
    let provider = rustls::crypto::ring::default_provider();
    rustls::sign::CertifiedKey::from_der(
        identity.chain.clone(),
        identity.key.clone_key(),
        &provider,
    )
    .map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => "the certificate does not match the private key: \
                upload the certificate and the key that were issued together"
            .to_owned(),
        other => format!("the private key cannot be used: {other}"),
    })?;
    check_validity(&identity.chain[0], now)
}

/// Checks a PEM holding only certificates: it parses and the first one is valid now.
pub fn check_certificate_pem(pem: &str) -> Result<(), String> {
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the certificate PEM does not parse: {e}"))?;
    let first = chain
        .first()
        .ok_or("the certificate PEM has no CERTIFICATE block")?;
    check_validity(first, time::OffsetDateTime::now_utc())
}

/// Checks a PEM holding a private key (PKCS#8, PKCS#1 or SEC1).
pub fn check_private_key_pem(pem: &str) -> Result<(), String> {
    match rustls_pemfile::private_key(&mut pem.as_bytes()) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err("the private key PEM has no PRIVATE KEY block".into()),
        Err(e) => Err(format!("the private key PEM does not parse: {e}")),
    }
}

fn check_validity(cert: &CertificateDer<'_>, now: time::OffsetDateTime) -> Result<(), String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| format!("the certificate cannot be read: {e}"))?;
    let validity = parsed.validity();
    let now = now.unix_timestamp();
    if now > validity.not_after.timestamp() {
        return Err(format!(
            "the certificate expired on {}: download a new one from the PSP",
            validity.not_after
        ));
    }
    if now < validity.not_before.timestamp() {
        return Err(format!(
            "the certificate is not valid before {}",
            validity.not_before
        ));
    }
    Ok(())
}

/// Pooled clients, one per client identity, sharing the trusted roots.
pub struct HttpClients {
    roots: Arc<rustls::RootCertStore>,
    plain: reqwest::Client,
    with_identity: Mutex<HashMap<[u8; 32], reqwest::Client>>,
}

impl HttpClients {
    /// `extra_roots_pem`: CA certificates the operator trusts beyond the public web roots (a
    /// proxy's, or the PSP simulator's).
    pub fn new(extra_roots_pem: &[String]) -> anyhow::Result<HttpClients> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for pem in extra_roots_pem {
            let mut found = false;
            for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
                roots.add(cert?)?;
                found = true;
            }
            anyhow::ensure!(found, "a trusted CA PEM holds no CERTIFICATE block");
        }
        let roots = Arc::new(roots);
        let plain = build_client(&roots, None).map_err(anyhow::Error::msg)?;
        Ok(HttpClients {
            roots,
            plain,
            with_identity: Mutex::new(HashMap::new()),
        })
    }

    fn client_for(&self, identity: Option<&ClientIdentity>) -> Result<reqwest::Client, HttpError> {
        let Some(identity) = identity else {
            return Ok(self.plain.clone());
        };
        if let Some(client) = self.with_identity.lock().get(&identity.fingerprint) {
            return Ok(client.clone());
        }
        let client = build_client(&self.roots, Some(identity)).map_err(HttpError::Certificate)?;
        let mut clients = self.with_identity.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(identity.fingerprint, client.clone());
        Ok(client)
    }

    /// Performs one exchange for an adapter.
    pub async fn send(
        &self,
        policy: &EgressPolicy,
        identity: Option<&Result<ClientIdentity, String>>,
        request: Request,
    ) -> Result<Response, HttpError> {
        let url = policy.check(&request.url).map_err(HttpError::Denied)?;
        let identity = if request.mtls {
            match identity {
                None => {
                    return Err(HttpError::Certificate(
                        "mutual TLS was requested but this credential has no client certificate"
                            .into(),
                    ));
                }
                Some(Err(why)) => return Err(HttpError::Certificate(why.clone())),
                Some(Ok(identity)) => Some(identity),
            }
        } else {
            None
        };
        let client = self.client_for(identity)?;
        let method = match request.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        let timeout = request
            .timeout_ms
            .map(|ms| Duration::from_millis(ms.into()).min(MAX_TIMEOUT))
            .unwrap_or(DEFAULT_TIMEOUT);
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &request.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::NotSent(format!("invalid header name {name:?}")))?;
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| HttpError::NotSent(format!("invalid value for header {name}")))?;
            headers.append(name, value);
        }
        let mut response = match client
            .request(method, url.clone())
            .headers(headers)
            .body(request.body)
            .timeout(timeout)
            .send()
            .await
        {
            Ok(response) => response,
            Err(e) => {
                let error = classify(&e);
                // With TLS 1.3 a server refuses the client certificate after the client thinks
                // the handshake is done, and that can surface as a mere broken
                // connection. Ask the server once more, alone, to hear its alert.
                if let (Some(identity), HttpError::NoAnswer(_) | HttpError::NotSent(_)) =
                    (identity, &error)
                    && !e.is_timeout()
                    && let Some(alert) = self.probe_client_certificate(&url, identity).await
                {
                    return Err(HttpError::Certificate(format!(
                        "the PSP refused the TLS client certificate (alert {alert}); check that \
                         the certificate is the one issued for this account and environment"
                    )));
                }
                return Err(error);
            }
        };
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| classify(&e))? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(HttpError::NoAnswer(format!(
                    "the answer exceeded {MAX_RESPONSE_BYTES} bytes and was cut off"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

impl HttpClients {
    /// Opens a bare TLS connection to `url`'s server with `identity` and waits briefly for an
    /// alert refusing the certificate. Only run after a failed exchange, never on the way of a
    /// successful one.
    async fn probe_client_certificate(
        &self,
        url: &url::Url,
        identity: &ClientIdentity,
    ) -> Option<String> {
        use tokio::io::AsyncReadExt;
        const PROBE: Duration = Duration::from_secs(2);
        let host = url.host_str()?.trim_matches(['[', ']']).to_owned();
        let port = url.port_or_known_default()?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(self.roots.clone())
        .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
        .ok()?;
        let name = rustls::pki_types::ServerName::try_from(host.clone()).ok()?;
        let probe = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .ok()?;
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            let mut tls = match connector.connect(name, tcp).await {
                Ok(tls) => tls,
                Err(e) => return find_alert(&e),
            };
            let mut byte = [0u8; 1];
            match tokio::time::timeout(PROBE, tls.read(&mut byte)).await {
                Ok(Err(e)) => find_alert(&e),
                _ => None,
            }
        };
        let alert = tokio::time::timeout(PROBE * 2, probe)
            .await
            .ok()
            .flatten()?;
        CLIENT_CERTIFICATE_ALERTS
            .contains(&alert.as_str())
            .then_some(alert)
    }
}

fn build_client(
    roots: &Arc<rustls::RootCertStore>,
    identity: Option<&ClientIdentity>,
) -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots.clone());
    let mut tls = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| format!("the client certificate or its key is unusable: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    // HTTP/1.1 only, over pooled keep-alive connections: a request's head and body go out in
    // one write. Over HTTP/2 hyper also spawns a task for each request's answer and one for
    // its body, and writes the head and body apart: about 0.14 ms more a charge made alone,
    // and no faster under load (`cargo xtask load`, README). A PSP call is one short
    // exchange, so multiplexing buys little a pool of connections does not.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .http1_only()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        // Under the keep-alive of the usual load balancers (60–75 s), so an idle connection
        // is dropped here before the PSP's side closes it under a request.
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())
}

/// Sorts a failed exchange by what may have reached the PSP.
fn classify(err: &reqwest::Error) -> HttpError {
    let detail = error_chain(err);
    if let Some(alert) = find_alert(err)
        && CLIENT_CERTIFICATE_ALERTS.contains(&alert.as_str())
    {
        return HttpError::Certificate(format!(
            "the PSP refused the TLS client certificate (alert {alert}); check that the \
             certificate is the one issued for this account and environment"
        ));
    }
    if let Some(tls) = find_rustls_error(err) {
        return match tls {
            rustls::Error::InvalidCertificate(why) => HttpError::NotSent(format!(
                "the PSP's server certificate is not trusted ({why:?}); nothing was sent"
            )),
            _ => HttpError::NotSent(format!("TLS failed before the request was sent: {detail}")),
        };
    }
    if err.is_builder() || err.is_connect() {
        HttpError::NotSent(detail)
    } else if err.is_timeout() {
        HttpError::NoAnswer(format!("no answer within the timeout: {detail}"))
    } else {
        HttpError::NoAnswer(detail)
    }
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// TLS alerts by which a server refuses the client's certificate (or its absence).
const CLIENT_CERTIFICATE_ALERTS: &[&str] = &[
    "CertificateRequired",
    "BadCertificate",
    "UnknownCA",
    "CertificateUnknown",
    "CertificateExpired",
    "CertificateRevoked",
    "UnsupportedCertificate",
    "AccessDenied",
    "HandshakeFailure",
];

/// The name of a TLS alert the server sent. With TLS 1.3 a refused client certificate surfaces
/// after the handshake, on the first read, where tokio-rustls has already turned the rustls error
/// into an `io::Error` carrying only its text; so both forms are read.
fn find_alert(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    if let Some(rustls::Error::AlertReceived(alert)) = find_rustls_error(err) {
        return Some(format!("{alert:?}"));
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(alert) = inner.to_string().strip_prefix("received fatal alert: ")
        {
            return Some(alert.to_owned());
        }
        current = e.source();
    }
    None
}

fn find_rustls_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current: Option<&'a (dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(tls) = io
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(tls);
        }
        current = e.source();
    }
    None
}
