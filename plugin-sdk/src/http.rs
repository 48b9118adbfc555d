//! Building requests for the host's `http.send` and reading its answers.
//!
//! [`Request`] is a builder: method and URL, then query parameters (percent-encoded), headers,
//! a JSON or form body, Basic or Bearer authorisation, the mTLS flag and a timeout. [`Response`]
//! has the status, headers and body, and decodes JSON with an error that keeps an excerpt of
//! the body, so a surprising answer can be diagnosed from the log alone.
//!
//! [`Request::call`] and [`Response::decode`] are the whole round trip of an adapter's own
//! protocol: send, classify a failure into the WIT error for the [`Op`] (the PSP's error body
//! read by the adapter's `describe`), read the answer.

use base64::Engine as _;
use serde::de::DeserializeOwned;

pub use crate::bindings::pixgw::psp::http::{HttpError, Method};
use crate::error::{self, Error, Op, PspError};
use crate::host::Host;

/// An outbound HTTP request, sent through [`Host::http_send`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// Absolute URL, query included.
    pub url: String,
    /// Header names as given (the host sends them case-insensitively).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Present the credential's client certificate.
    pub mtls: bool,
    pub timeout_ms: Option<u32>,
}

impl Request {
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Request {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            mtls: false,
            timeout_ms: None,
        }
    }

    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }

    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }

    pub fn put(url: impl Into<String>) -> Self {
        Self::new(Method::Put, url)
    }

    pub fn patch(url: impl Into<String>) -> Self {
        Self::new(Method::Patch, url)
    }

    pub fn delete(url: impl Into<String>) -> Self {
        Self::new(Method::Delete, url)
    }

    /// Appends `name=value` to the URL's query, both percent-encoded.
    pub fn query(mut self, name: &str, value: &str) -> Self {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        self.url = format!(
            "{}{separator}{}={}",
            self.url,
            percent_encode(name),
            percent_encode(value)
        );
        self
    }

    /// Sets a header, replacing any other value of the same name (case-insensitively).
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// `Authorization: Bearer <token>`.
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }

    /// `Authorization: Basic base64(<user>:<password>)`.
    pub fn basic(self, user: &str, password: &str) -> Self {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.header("authorization", format!("Basic {encoded}"))
    }

    /// A JSON body, with `content-type: application/json`.
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = body.to_string().into_bytes();
        self.header("content-type", "application/json")
    }

    /// An `application/x-www-form-urlencoded` body.
    pub fn form(mut self, fields: &[(&str, &str)]) -> Self {
        self.body = form_urlencode(fields).into_bytes();
        self.header("content-type", "application/x-www-form-urlencoded")
    }

    pub fn mtls(mut self, mtls: bool) -> Self {
        self.mtls = mtls;
        self
    }

    pub fn timeout_ms(mut self, timeout_ms: Option<u32>) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// The value of a header, by case-insensitive name.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// Sends as it is; any HTTP answer, success or not, is returned.
    pub fn send(self, host: &dyn Host) -> Result<Response, HttpError> {
        host.http_send(&self)
    }

    /// Sends, and makes every failure the WIT error for `op`: a transport failure with
    /// [`error::from_transport`], an answer that is not a success with
    /// [`Response::error_for_status`] (the PSP's body read by `describe`, e.g.
    /// [`error::describe_body`] or the adapter's own reader).
    pub fn call(
        self,
        host: &dyn Host,
        op: Op,
        describe: fn(u16, &[u8]) -> PspError,
    ) -> Result<Response, Error> {
        self.send(host)
            .map_err(|e| error::from_transport(op, &e))?
            .error_for_status(op, describe)
    }
}

/// An answer from the PSP (any status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names in lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A response with a body and no headers (handy in tests).
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The response itself when it is a success; otherwise the error for `op` classified by
    /// [`error::from_status`], with what the PSP said as `describe` reads the body.
    pub fn error_for_status(
        self,
        op: Op,
        describe: fn(u16, &[u8]) -> PspError,
    ) -> Result<Self, Error> {
        if self.is_success() {
            return Ok(self);
        }
        Err(error::from_status(
            op,
            self.status,
            describe(self.status, &self.body),
        ))
    }

    /// Decodes a success answer as JSON; one that cannot be read is [`error::undecodable`] for
    /// `op` (after a write the PSP may have acted), quoting the start of the body.
    pub fn decode<T: DeserializeOwned>(&self, op: Op) -> Result<T, Error> {
        self.json()
            .map_err(|e| error::undecodable(op, self.status, e))
    }

    /// Decodes the body as JSON; the error names the status and quotes the start of the body.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(&self.body).map_err(|e| {
            format!(
                "could not read the PSP's answer (HTTP {}): {e}; body: {}",
                self.status,
                excerpt(&self.body)
            )
        })
    }
}

/// The start of a body as text, at most 300 characters, for error messages.
pub fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters: safe for a path segment
/// or a query component.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `application/x-www-form-urlencoded` serialisation of name/value pairs.
pub fn form_urlencode(fields: &[(&str, &str)]) -> String {
    let encode = |s: &str| percent_encode(s).replace("%20", "+");
    fields
        .iter()
        .map(|(n, v)| format!("{}={}", encode(n), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_query_headers_and_bodies() {
        let r = Request::get("https://psp.example/v2/cob")
            .query("inicio", "2024-01-01T00:00:00Z")
            .query("gw-dev-app-key", "a b&c")
            .header("X-One", "1")
            .header("x-one", "2")
            .basic("id", "secret")
            .mtls(true);
        assert_eq!(
            r.url,
            "https://psp.example/v2/cob?inicio=2024-01-01T00%3A00%3A00Z&gw-dev-app-key=a%20b%26c"
        );
        assert_eq!(
            r.headers,
            vec![
                ("x-one".into(), "2".into()),
                ("authorization".into(), "Basic aWQ6c2VjcmV0".into())
            ]
        );
        assert!(r.mtls);

        let f = Request::post("https://x").form(&[
            ("grant_type", "client_credentials"),
            ("scope", "cob.read pix.read"),
        ]);
        assert_eq!(
            f.body,
            b"grant_type=client_credentials&scope=cob.read+pix.read"
        );
        assert_eq!(
            f.header_value("Content-Type"),
            Some("application/x-www-form-urlencoded")
        );

        let j = Request::put("https://x")
            .json(&serde_json::json!({"a": "10.00"}))
            .bearer("t");
        assert_eq!(j.body, br#"{"a":"10.00"}"#);
        assert_eq!(j.header_value("authorization"), Some("Bearer t"));
    }

    #[test]
    fn json_errors_quote_the_body() {
        let r = Response::new(201, "<html>oops</html>");
        let e = r.json::<serde_json::Value>().unwrap_err();
        assert!(
            e.contains("HTTP 201") && e.contains("<html>oops</html>"),
            "{e}"
        );
        assert_eq!(excerpt("é".repeat(400).as_bytes()).chars().count(), 301);
    }

    fn upper_case(_: u16, body: &[u8]) -> PspError {
        PspError::new(String::from_utf8_lossy(body).to_uppercase())
    }

    #[test]
    fn call_classifies_failures_for_the_op_with_the_psps_reader() {
        use crate::host::fake::FakeHost;
        let host = FakeHost::new();
        host.reply(201, r#"{"id":"1"}"#)
            .reply(422, "no such key")
            .reply(500, "")
            .fail(HttpError::NoAnswer("reset".into()));
        let ok = Request::post("https://psp.example/charges")
            .call(&host, Op::Create, upper_case)
            .unwrap();
        assert_eq!(ok.status, 201);

        let refused = Request::post("https://psp.example/charges")
            .call(&host, Op::Create, upper_case)
            .unwrap_err();
        assert_eq!(refused.kind(), "rejected");
        let psp = refused.psp_error().unwrap();
        assert_eq!(
            (psp.message.as_str(), psp.http_status),
            ("NO SUCH KEY", Some(422))
        );

        let read = Request::get("https://psp.example/charges/1")
            .call(&host, Op::Read, error::describe_body)
            .unwrap_err();
        assert_eq!(read.kind(), "unavailable");
        assert_eq!(read.psp_error().unwrap().message, "HTTP 500");

        let lost = Request::post("https://psp.example/charges")
            .call(&host, Op::Create, upper_case)
            .unwrap_err();
        assert_eq!(lost.kind(), "ambiguous");
        assert_eq!(host.sent().len(), 4);
    }

    #[test]
    fn decode_reads_a_success_or_says_it_could_not_for_the_op() {
        #[derive(Debug, serde::Deserialize)]
        struct Charge {
            id: String,
        }
        let charge: Charge = Response::new(200, r#"{"id":"7"}"#)
            .decode(Op::Read)
            .unwrap();
        assert_eq!(charge.id, "7");

        let garbled = Response::new(201, "<html>");
        let e = garbled.decode::<Charge>(Op::Create).unwrap_err();
        assert_eq!(e.kind(), "ambiguous");
        let psp = e.psp_error().unwrap();
        assert_eq!(psp.http_status, Some(201));
        assert!(psp.message.contains("<html>"), "{}", psp.message);
        assert_eq!(
            garbled.decode::<Charge>(Op::Read).unwrap_err().kind(),
            "unavailable"
        );
    }
}
