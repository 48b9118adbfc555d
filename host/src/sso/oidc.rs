//! The OpenID Connect side of single sign-on, through the `openidconnect` crate: discovery
//! (the provider's metadata and signing keys), the authorization URL of the code flow with
//! PKCE, state and nonce, and the code exchange with the ID token's checks (signature against
//! the provider's JWKS, issuer, audience, expiry with a minute's tolerance, issue time, nonce).
//!
//! The crate's HTTP calls go through the gateway's own `reqwest` (rustls; the public web roots
//! plus the CAs the operator trusts with `--trusted-ca`), redirects not followed (a redirect
//! could lead a discovery fetch anywhere), answers capped at 1 MiB.

use std::sync::OnceLock;

use crate::webhooks::destination::DestinationPolicy;
use std::time::Duration;

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, DiscoveryError, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError,
    Scope, TokenResponse,
};

/// How far the provider's clock may be from ours: an ID token is accepted this long after its
/// `exp`, and refused when issued further than this in the future.
pub const CLOCK_TOLERANCE: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Starts the message of an issue time in the future, so it is told from an expiry.
const FUTURE_MARK: &str = "issued in the future";

/// What went wrong talking to the provider, in words for the person who can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// No answer (DNS, connection, TLS, timeout).
    #[error("the identity provider did not answer at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// An answer, but not a discovery document (a 404: the issuer URL is wrong).
    #[error("{url} answered HTTP {status}, not an OpenID Connect discovery document")]
    NotDiscovery { url: String, status: u16 },
    #[error("the provider's discovery document or keys are not valid: {0}")]
    Invalid(String),
    /// The provider names itself differently: the issuer URL must be exactly its own.
    #[error("the provider says its issuer is {found}, not {expected}")]
    IssuerMismatch { expected: String, found: String },
    /// The provider refused the code (used, expired) or the client's credentials.
    #[error("the provider refused the sign-in code: {0}")]
    Exchange(String),
    #[error("the provider's answer has no ID token")]
    NoIdToken,
    #[error("the ID token expired: {0}")]
    Expired(String),
    /// Issued later than now: the provider's clock (or ours) is off.
    #[error("the ID token was issued in the future: {0}")]
    ClockSkew(String),
    /// Signature, issuer, audience or nonce did not check out.
    #[error("the ID token is not valid: {0}")]
    TokenInvalid(String),
}

/// An HTTP failure, as the crate hands it back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Transport(String);

/// The client every SSO exchange uses, built once from the runtime's trusted CAs.
fn http_client(
    trusted_ca_pem: &[String],
    policy: DestinationPolicy,
) -> Result<reqwest::Client, String> {
    // One client per policy: the operator's (private addresses refused) or a test's.
    static STRICT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static OPEN: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let cell = if policy.allow_private { &OPEN } else { &STRICT };
    cell.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for pem in trusted_ca_pem {
            for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
                let cert = cert.map_err(|e| format!("a trusted CA does not parse: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("a trusted CA is unusable: {e}"))?;
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
        // The issuer is the owner's URL: like a webhook URL it must not reach the gateway's
        // own network (names checked at each connection, proxies ignored).
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .no_proxy()
            .dns_resolver(policy.resolver())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| e.to_string())
    })
    .clone()
}

/// Sends one of the crate's requests.
async fn send(
    client: reqwest::Client,
    policy: DestinationPolicy,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, Transport> {
    let (parts, body) = request.into_parts();
    // An address written in a URL (the discovery document's endpoints too) meets no resolver.
    policy
        .check_literal(&parts.uri.to_string())
        .map_err(Transport)?;
    let mut response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|e| Transport(error_chain(&e)))?;
    let mut answer = openidconnect::http::Response::builder().status(response.status());
    if let Some(headers) = answer.headers_mut() {
        *headers = response.headers().clone();
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Transport(error_chain(&e)))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_ANSWER_BYTES {
            return Err(Transport("the answer is larger than 1 MiB".into()));
        }
    }
    answer.body(body).map_err(|e| Transport(e.to_string()))
}

/// An error with its causes: reqwest's own message alone says little ("error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The provider's metadata and keys, as discovery found them.
pub struct Provider {
    metadata: CoreProviderMetadata,
    http: reqwest::Client,
    policy: DestinationPolicy,
}

/// Fetches `issuer`'s discovery document and signing keys, and checks that the provider calls
/// itself `issuer`.
pub async fn discover(
    issuer: &str,
    trusted_ca_pem: &[String],
    policy: DestinationPolicy,
) -> Result<Provider, OidcError> {
    let http = http_client(trusted_ca_pem, policy).map_err(OidcError::Invalid)?;
    let issuer_url =
        IssuerUrl::new(issuer.to_owned()).map_err(|e| OidcError::Invalid(e.to_string()))?;
    let discovery_url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let client = http.clone();
    let call = move |request| send(client.clone(), policy, request);
    let metadata = CoreProviderMetadata::discover_async(issuer_url, &call)
        .await
        .map_err(|e| match e {
            DiscoveryError::Request(t) => OidcError::Unreachable {
                url: discovery_url.clone(),
                detail: t.0,
            },
            DiscoveryError::Response(status, _, detail) if status.as_u16() == 200 => {
                OidcError::Invalid(detail)
            }
            DiscoveryError::Response(status, _, _) => OidcError::NotDiscovery {
                url: discovery_url.clone(),
                status: status.as_u16(),
            },
            DiscoveryError::Parse(e) => OidcError::Invalid(e.to_string()),
            DiscoveryError::Validation(detail) => match issuer_of(&detail) {
                Some(found) => OidcError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found,
                },
                None => OidcError::Invalid(detail),
            },
            other => OidcError::Invalid(other.to_string()),
        })?;
    Ok(Provider {
        metadata,
        http,
        policy,
    })
}

/// The issuer a validation message quotes: "unexpected issuer URI `X` (expected `Y`)".
fn issuer_of(detail: &str) -> Option<String> {
    let rest = detail.strip_prefix("unexpected issuer URI `")?;
    Some(rest[..rest.find('`')?].to_owned())
}

/// The values a sign-in keeps until the provider sends the person back.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Where to send the person: the provider's authorization endpoint with a fresh state, nonce
/// and PKCE (S256) challenge, asking for `openid email profile`.
pub fn authorize(
    provider: &Provider,
    client_id: &str,
    redirect_uri: &str,
) -> Result<Authorization, OidcError> {
    let client = CoreClient::from_provider_metadata(
        provider.metadata.clone(),
        ClientId::new(client_id.to_owned()),
        None,
    )
    .set_redirect_uri(
        RedirectUrl::new(redirect_uri.to_owned()).map_err(|e| OidcError::Invalid(e.to_string()))?,
    );
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .set_pkce_challenge(challenge)
        .url();
    Ok(Authorization {
        url: url.to_string(),
        state: state.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
    })
}

/// What a valid ID token says about the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    /// `None` when the provider does not say.
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    /// Every claim of the token, for the claim → role mapping.
    pub claims: serde_json::Map<String, serde_json::Value>,
}

/// The client's side of a sign-in coming back.
pub struct Exchange<'a> {
    pub client_id: &'a str,
    pub client_secret: &'a str,
    pub redirect_uri: &'a str,
    pub code: &'a str,
    pub pkce_verifier: &'a str,
    pub nonce: &'a str,
}

/// Exchanges the code (with the PKCE verifier and the client's secret) and checks the ID token.
pub async fn exchange(provider: &Provider, x: Exchange<'_>) -> Result<Identity, OidcError> {
    let client = CoreClient::from_provider_metadata(
        provider.metadata.clone(),
        ClientId::new(x.client_id.to_owned()),
        Some(ClientSecret::new(x.client_secret.to_owned())),
    )
    .set_redirect_uri(
        RedirectUrl::new(x.redirect_uri.to_owned())
            .map_err(|e| OidcError::Invalid(e.to_string()))?,
    );
    let (http, policy) = (provider.http.clone(), provider.policy);
    let call = move |request| send(http.clone(), policy, request);
    let tokens = client
        .exchange_code(AuthorizationCode::new(x.code.to_owned()))
        .map_err(|e| OidcError::Invalid(e.to_string()))?
        .set_pkce_verifier(PkceCodeVerifier::new(x.pkce_verifier.to_owned()))
        .request_async(&call)
        .await
        .map_err(|e| match e {
            RequestTokenError::ServerResponse(answer) => {
                OidcError::Exchange(match answer.error_description() {
                    Some(why) => format!("{} ({why})", answer.error()),
                    None => answer.error().to_string(),
                })
            }
            RequestTokenError::Request(t) => OidcError::Exchange(t.0),
            other => OidcError::Exchange(error_chain(&other)),
        })?;
    let id_token = tokens.id_token().ok_or(OidcError::NoIdToken)?;
    let tolerance = chrono::Duration::from_std(CLOCK_TOLERANCE).expect("a minute fits");
    let verifier = client
        .id_token_verifier()
        // Expiry: a token is still good for the tolerance after `exp`.
        .set_time_fn(move || chrono::Utc::now() - tolerance)
        .set_issue_time_verifier_fn(move |iat| {
            let now = chrono::Utc::now();
            if iat > now + tolerance {
                Err(format!("{FUTURE_MARK} at {iat} (current time is {now})"))
            } else {
                Ok(())
            }
        });
    let nonce = Nonce::new(x.nonce.to_owned());
    let claims = id_token.claims(&verifier, &nonce).map_err(|e| {
        use openidconnect::ClaimsVerificationError as E;
        match e {
            E::Expired(detail) if detail.starts_with(FUTURE_MARK) => OidcError::ClockSkew(detail),
            E::Expired(detail) => OidcError::Expired(detail),
            other => OidcError::TokenInvalid(other.to_string()),
        }
    })?;
    // The access token, when the ID token binds it, must be the one issued with it.
    if let Some(expected) = claims.access_token_hash() {
        let alg = id_token
            .signing_alg()
            .map_err(|e| OidcError::TokenInvalid(e.to_string()))?;
        let key = id_token
            .signing_key(&verifier)
            .map_err(|e| OidcError::TokenInvalid(e.to_string()))?;
        let actual = openidconnect::AccessTokenHash::from_token(tokens.access_token(), alg, key)
            .map_err(|e| OidcError::TokenInvalid(e.to_string()))?;
        if actual != *expected {
            return Err(OidcError::TokenInvalid(
                "the access token does not match the ID token's at_hash".into(),
            ));
        }
    }
    Ok(Identity {
        subject: claims.subject().to_string(),
        email: claims.email().map(|e| e.to_string()),
        email_verified: claims.email_verified(),
        name: claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.to_string()),
        // The signature checked out above: the payload can be read as it is.
        claims: payload_of(&id_token.to_string()).unwrap_or_default(),
    })
}

/// The JSON payload of a compact JWS.
fn payload_of(jwt: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    use base64::Engine;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_issuer_on_the_gateways_own_network_is_not_called() {
        for issuer in [
            "https://127.0.0.1:9/",
            "https://[::1]:9/",
            "https://169.254.169.254/",
        ] {
            let error = discover(issuer, &[], DestinationPolicy::default())
                .await
                .err()
                .expect("refused");
            let text = error.to_string();
            assert!(
                text.contains("resolves to a loopback, private or reserved address"),
                "{issuer}: {text}"
            );
        }
    }

    #[test]
    fn the_issuer_a_provider_claims_is_read_from_the_crates_words() {
        assert_eq!(
            issuer_of("unexpected issuer URI `https://a.example/` (expected `https://a.example`)"),
            Some("https://a.example/".into())
        );
        assert_eq!(issuer_of("something else"), None);
    }

    #[test]
    fn a_payload_is_read_from_a_compact_token() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbmEiLCJncm91cHMiOlsiZmluYW5jZSJdfQ.c2ln";
        let claims = payload_of(jwt).unwrap();
        assert_eq!(claims["sub"], "ana");
        assert_eq!(claims["groups"][0], "finance");
        assert_eq!(payload_of("not a token"), None);
    }
}
