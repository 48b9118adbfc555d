//! OAuth 2 client credentials, with the token kept in the host's cache.
//!
//! A [`TokenSource`] says where and how to ask for a token (JSON or form body, client
//! authentication by Basic or in the body, scopes, extra query parameters, mTLS). The token is
//! cached under a key derived from the token URL and client id until shortly before
//! `expires_in`; [`TokenSource::send`] sends an API call with it and, on a 401, drops the cached
//! token, fetches a new one and retries once.
//!
//! Failures to get a token never create anything at the PSP, so they are classified as reads:
//! the token endpoint's 400/401/403 (`invalid_client`, `invalid_grant`…) are `bad-credentials`.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{self, Error, Op};
use crate::host::{Host, Level};
use crate::http::{Request, Response};

/// How the token request's body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyEncoding {
    Json,
    Form,
}

/// Where the client id and secret go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// `Authorization: Basic base64(id:secret)`.
    Basic,
    /// `client_id` and `client_secret` in the body.
    Body,
}

/// Token lifetime assumed when the answer has no `expires_in`.
const DEFAULT_EXPIRES_IN: u64 = 300;

/// Where and how to obtain a client-credentials token.
#[derive(Clone, Debug)]
pub struct TokenSource {
    /// Absolute token URL (query parameters go in `query`).
    pub url: String,
    pub client_id: String,
    pub client_secret: String,
    pub encoding: BodyEncoding,
    pub client_auth: ClientAuth,
    /// Send `grant_type=client_credentials` in the body (otherwise put it in `query`).
    pub grant_type_in_body: bool,
    /// Space-separated scopes, sent as `scope` when present.
    pub scope: Option<String>,
    pub query: Vec<(String, String)>,
    pub mtls: bool,
    pub timeout_ms: Option<u32>,
}

/// A fresh token as the token endpoint answered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub access_token: String,
    pub expires_in: u64,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<Value>,
}

impl TokenSource {
    /// A source with JSON body, Basic auth, grant type in the body, no scope, no mTLS.
    pub fn new(
        url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        TokenSource {
            url: url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            encoding: BodyEncoding::Json,
            client_auth: ClientAuth::Basic,
            grant_type_in_body: true,
            scope: None,
            query: Vec::new(),
            mtls: false,
            timeout_ms: None,
        }
    }

    /// The cache key of this source's token.
    pub fn cache_key(&self) -> String {
        format!("oauth-token {} {}", self.url, self.client_id)
    }

    /// The token request, exactly as it goes on the wire.
    pub fn token_request(&self) -> Request {
        let mut request = Request::post(&self.url)
            .mtls(self.mtls)
            .timeout_ms(self.timeout_ms);
        for (name, value) in &self.query {
            request = request.query(name, value);
        }
        let mut fields: Vec<(&str, &str)> = Vec::new();
        if self.grant_type_in_body {
            fields.push(("grant_type", "client_credentials"));
        }
        if let Some(scope) = &self.scope {
            fields.push(("scope", scope));
        }
        match self.client_auth {
            ClientAuth::Basic => request = request.basic(&self.client_id, &self.client_secret),
            ClientAuth::Body => {
                fields.push(("client_id", &self.client_id));
                fields.push(("client_secret", &self.client_secret));
            }
        }
        match self.encoding {
            BodyEncoding::Form => request.form(&fields),
            BodyEncoding::Json => {
                let body: serde_json::Map<String, Value> = fields
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), json!(v)))
                    .collect();
                request.json(&Value::Object(body))
            }
        }
    }

    /// A cached token, or a fresh one.
    pub fn token(&self, host: &dyn Host) -> Result<String, Error> {
        if let Some(token) = host.cache_get(&self.cache_key()) {
            return Ok(token);
        }
        Ok(self.fetch(host)?.access_token)
    }

    /// Always asks the token endpoint, and caches the answer.
    pub fn fetch(&self, host: &dyn Host) -> Result<Token, Error> {
        let response = self
            .token_request()
            .send(host)
            .map_err(|e| error::from_transport(Op::Read, &e))?;
        if !response.is_success() {
            let what = error::describe_body(response.status, &response.body);
            return Err(match response.status {
                // The token endpoint refusing is the credential's fault, whatever the status.
                400 | 401 | 403 => Error::BadCredentials(
                    error::PspError {
                        http_status: Some(response.status),
                        ..what
                    }
                    .because(error::Reason::Credentials),
                ),
                status => error::from_status(Op::Read, status, what),
            });
        }
        let answer: TokenAnswer = response.decode(Op::Read)?;
        let expires_in = match &answer.expires_in {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        }
        .unwrap_or(DEFAULT_EXPIRES_IN);
        let ttl = expires_in.saturating_sub((expires_in / 10).min(60));
        if ttl > 0 {
            host.cache_set(
                &self.cache_key(),
                &answer.access_token,
                ttl.min(u64::from(u32::MAX)) as u32,
            );
        }
        host.log(
            Level::Debug,
            "obtained an OAuth token",
            &[("url", &self.url), ("expires_in", &expires_in.to_string())],
        );
        Ok(Token {
            access_token: answer.access_token,
            expires_in,
        })
    }

    /// Forgets the cached token.
    pub fn invalidate(&self, host: &dyn Host) {
        host.cache_delete(&self.cache_key());
    }

    /// Sends `request` with `Authorization: Bearer <token>`. On a 401 the cached token is
    /// dropped and the request is retried once with a fresh one. Transport failures are
    /// classified with `op`; any HTTP answer, success or not, is returned for the caller to read.
    pub fn send(&self, host: &dyn Host, op: Op, request: Request) -> Result<Response, Error> {
        let token = self.token(host)?;
        let response = request
            .clone()
            .bearer(&token)
            .send(host)
            .map_err(|e| error::from_transport(op, &e))?;
        if response.status != 401 {
            return Ok(response);
        }
        host.log(
            Level::Info,
            "the PSP refused the OAuth token; retrying with a fresh one",
            &[("url", &request.url)],
        );
        self.invalidate(host);
        let token = self.fetch(host)?.access_token;
        request
            .bearer(&token)
            .send(host)
            .map_err(|e| error::from_transport(op, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeHost;
    use crate::http::HttpError;

    const TOKEN: &str =
        r#"{"access_token":"tok-1","token_type":"Bearer","expires_in":3600,"scope":"cob.write"}"#;

    fn source() -> TokenSource {
        TokenSource::new("https://psp.example/oauth/token", "id", "secret")
    }

    #[test]
    fn token_request_shapes() {
        let json = source().token_request();
        assert_eq!(json.body, br#"{"grant_type":"client_credentials"}"#);
        assert_eq!(
            json.header_value("authorization"),
            Some("Basic aWQ6c2VjcmV0")
        );
        assert_eq!(json.header_value("content-type"), Some("application/json"));

        let form = TokenSource {
            encoding: BodyEncoding::Form,
            client_auth: ClientAuth::Body,
            scope: Some("cob.write cob.read".into()),
            ..source()
        }
        .token_request();
        assert_eq!(form.body, b"grant_type=client_credentials&scope=cob.write+cob.read&client_id=id&client_secret=secret");
        assert_eq!(form.header_value("authorization"), None);

        let query = TokenSource {
            encoding: BodyEncoding::Form,
            grant_type_in_body: false,
            query: vec![("grant_type".into(), "client_credentials".into())],
            mtls: true,
            ..source()
        }
        .token_request();
        assert_eq!(
            query.url,
            "https://psp.example/oauth/token?grant_type=client_credentials"
        );
        assert_eq!(query.body, b"");
        assert!(query.mtls);
    }

    #[test]
    fn token_is_cached_until_shortly_before_expiry() {
        let host = FakeHost::new();
        host.reply(200, TOKEN);
        assert_eq!(source().token(&host).unwrap(), "tok-1");
        assert_eq!(source().token(&host).unwrap(), "tok-1");
        assert_eq!(host.sent().len(), 1, "the second call uses the cache");
        assert_eq!(
            host.cached(&source().cache_key()),
            Some(("tok-1".into(), 3540))
        );

        host.advance(3539);
        assert_eq!(source().token(&host).unwrap(), "tok-1");
        host.advance(1);
        host.reply(200, &TOKEN.replace("tok-1", "tok-2"));
        assert_eq!(source().token(&host).unwrap(), "tok-2");
        assert_eq!(host.sent().len(), 2);
    }

    #[test]
    fn a_401_refreshes_the_token_and_retries_once() {
        let host = FakeHost::new();
        host.reply(200, TOKEN)
            .reply(401, "")
            .reply(200, &TOKEN.replace("tok-1", "tok-2"))
            .reply(200, "{}");
        let response = source()
            .send(
                &host,
                Op::Read,
                Request::get("https://psp.example/v2/cob/x"),
            )
            .unwrap();
        assert_eq!(response.status, 200);
        let sent = host.sent();
        assert_eq!(sent.len(), 4);
        assert_eq!(sent[1].header_value("authorization"), Some("Bearer tok-1"));
        assert_eq!(sent[3].header_value("authorization"), Some("Bearer tok-2"));
        assert_eq!(host.cached(&source().cache_key()).unwrap().0, "tok-2");

        // Only once: a second 401 is returned to the caller.
        host.reply(401, "")
            .reply(200, TOKEN)
            .reply(401, r#"{"nome":"nao_autorizado","mensagem":"x"}"#);
        let response = source()
            .send(
                &host,
                Op::Read,
                Request::get("https://psp.example/v2/cob/x"),
            )
            .unwrap();
        assert_eq!(response.status, 401);
        assert_eq!(host.pending_replies(), 0);
    }

    #[test]
    fn token_failures() {
        let host = FakeHost::new();
        host.reply(
            401,
            r#"{"error":"invalid_client","error_description":"Invalid or missing credentials"}"#,
        );
        let e = source().fetch(&host).unwrap_err();
        assert_eq!(e.kind(), "bad-credentials");
        assert_eq!(
            e.psp_error().unwrap().message,
            "Invalid or missing credentials"
        );
        assert_eq!(e.psp_error().unwrap().http_status, Some(401));

        host.reply(500, "");
        assert_eq!(source().fetch(&host).unwrap_err().kind(), "unavailable");
        host.fail(HttpError::NoAnswer("timeout".into()));
        assert_eq!(
            source().fetch(&host).unwrap_err().kind(),
            "unavailable",
            "a token fetch creates nothing"
        );
        host.fail(HttpError::Certificate("refused".into()));
        assert_eq!(source().fetch(&host).unwrap_err().kind(), "bad-credentials");
        host.reply(200, r#"{"token_type":"Bearer"}"#);
        assert_eq!(source().fetch(&host).unwrap_err().kind(), "unavailable");
        assert!(host.cached(&source().cache_key()).is_none());
    }
}
