//! What the host gives an adapter, behind one trait.
//!
//! Every SDK function that reaches outside the adapter takes a `&dyn Host`. In the component,
//! [`WasmHost`] calls the WIT imports; in native unit tests, [`fake::FakeHost`] answers from a
//! script and records what was sent (on native targets the imports cannot be called).

use crate::bindings::pixgw::psp::{cache, crypto, http as wit_http, log};
use crate::http::{HttpError, Request, Response};

pub use crate::bindings::pixgw::psp::log::Level;

#[cfg(not(target_arch = "wasm32"))]
pub mod fake;

/// The host's imports: HTTP, cache, logging and crypto.
pub trait Host {
    /// Sends a request; only the origins of the adapter's endpoints are reachable.
    fn http_send(&self, request: &Request) -> Result<Response, HttpError>;
    /// A value from the (adapter, credential)-scoped cache.
    fn cache_get(&self, key: &str) -> Option<String>;
    fn cache_set(&self, key: &str, value: &str, ttl_seconds: u32);
    fn cache_delete(&self, key: &str);
    /// A structured log line; the host tags it with the adapter and request id.
    fn log(&self, level: Level, message: &str, fields: &[(&str, &str)]);
    fn hmac_sha256(&self, key: &[u8], message: &[u8]) -> Vec<u8>;
    fn sha256(&self, data: &[u8]) -> Vec<u8>;
    /// RSASSA-PKCS1-v1_5 / SHA-256; `Err` when the key does not parse.
    fn verify_rsa_sha256(
        &self,
        public_key_pem: &str,
        message: &[u8],
        signature: &[u8],
    ) -> Result<bool, String>;
    /// ECDSA P-256 / SHA-256, DER or fixed 64-byte signature.
    fn verify_ecdsa_p256_sha256(
        &self,
        public_key_pem: &str,
        message: &[u8],
        signature: &[u8],
    ) -> Result<bool, String>;
    fn constant_time_eq(&self, a: &[u8], b: &[u8]) -> bool;
}

/// The real host: the component's imports.
#[derive(Clone, Copy, Debug, Default)]
pub struct WasmHost;

impl Host for WasmHost {
    fn http_send(&self, request: &Request) -> Result<Response, HttpError> {
        let wire = wit_http::Request {
            method: request.method,
            url: request.url.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
            mtls: request.mtls,
            timeout_ms: request.timeout_ms,
        };
        wit_http::send(&wire).map(|r| Response {
            status: r.status,
            headers: r.headers,
            body: r.body,
        })
    }

    fn cache_get(&self, key: &str) -> Option<String> {
        cache::get(key)
    }

    fn cache_set(&self, key: &str, value: &str, ttl_seconds: u32) {
        cache::set(key, value, ttl_seconds)
    }

    fn cache_delete(&self, key: &str) {
        cache::delete(key)
    }

    fn log(&self, level: Level, message: &str, fields: &[(&str, &str)]) {
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        log::log(level, message, &fields)
    }

    fn hmac_sha256(&self, key: &[u8], message: &[u8]) -> Vec<u8> {
        crypto::hmac_sha256(key, message)
    }

    fn sha256(&self, data: &[u8]) -> Vec<u8> {
        crypto::sha256(data)
    }

    fn verify_rsa_sha256(
        &self,
        public_key_pem: &str,
        message: &[u8],
        signature: &[u8],
    ) -> Result<bool, String> {
        crypto::verify_rsa_sha256(public_key_pem, message, signature)
    }

    fn verify_ecdsa_p256_sha256(
        &self,
        public_key_pem: &str,
        message: &[u8],
        signature: &[u8],
    ) -> Result<bool, String> {
        crypto::verify_ecdsa_p256_sha256(public_key_pem, message, signature)
    }

    fn constant_time_eq(&self, a: &[u8], b: &[u8]) -> bool {
        crypto::constant_time_eq(a, b)
    }
}
