//! A scripted [`Host`] for native unit tests of the SDK and of adapters.
//!
//! Queue answers with [`FakeHost::reply`] (or [`FakeHost::fail`] for a transport error); each
//! `http_send` takes the next one and records the request. The cache honours TTLs against a
//! clock that only moves with [`FakeHost::advance`]. HMAC and SHA-256 are real; signature
//! verification answers what [`FakeHost::signatures_valid`] says.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

use hmac::Mac as _;
use sha2::Digest as _;

use super::{Host, Level};
use crate::http::{HttpError, Request, Response};

#[derive(Default)]
pub struct FakeHost {
    replies: RefCell<VecDeque<Result<Response, HttpError>>>,
    sent: RefCell<Vec<Request>>,
    cache: RefCell<BTreeMap<String, (String, u64)>>,
    now: Cell<u64>,
    logs: RefCell<Vec<(Level, String)>>,
    signatures_valid: Cell<bool>,
}

impl FakeHost {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues an answer with this status and body.
    pub fn reply(&self, status: u16, body: &str) -> &Self {
        self.replies
            .borrow_mut()
            .push_back(Ok(Response::new(status, body)));
        self
    }

    /// Queues a transport failure.
    pub fn fail(&self, error: HttpError) -> &Self {
        self.replies.borrow_mut().push_back(Err(error));
        self
    }

    /// Every request sent so far, in order.
    pub fn sent(&self) -> Vec<Request> {
        self.sent.borrow().clone()
    }

    /// Answers still queued.
    pub fn pending_replies(&self) -> usize {
        self.replies.borrow().len()
    }

    /// Moves the cache's clock forward.
    pub fn advance(&self, seconds: u64) {
        self.now.set(self.now.get() + seconds);
    }

    /// A live cache entry and its remaining TTL.
    pub fn cached(&self, key: &str) -> Option<(String, u64)> {
        let now = self.now.get();
        self.cache
            .borrow()
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(v, until)| (v.clone(), until - now))
    }

    pub fn logs(&self) -> Vec<(Level, String)> {
        self.logs.borrow().clone()
    }

    /// What the RSA/ECDSA verifications answer (false by default).
    pub fn signatures_valid(&self, valid: bool) {
        self.signatures_valid.set(valid);
    }
}

impl Host for FakeHost {
    fn http_send(&self, request: &Request) -> Result<Response, HttpError> {
        self.sent.borrow_mut().push(request.clone());
        self.replies.borrow_mut().pop_front().unwrap_or_else(|| {
            panic!(
                "FakeHost: no reply queued for {:?} {}",
                request.method, request.url
            )
        })
    }

    fn cache_get(&self, key: &str) -> Option<String> {
        self.cached(key).map(|(v, _)| v)
    }

    fn cache_set(&self, key: &str, value: &str, ttl_seconds: u32) {
        let until = self.now.get() + u64::from(ttl_seconds);
        self.cache
            .borrow_mut()
            .insert(key.to_owned(), (value.to_owned(), until));
    }

    fn cache_delete(&self, key: &str) {
        self.cache.borrow_mut().remove(key);
    }

    fn log(&self, level: Level, message: &str, fields: &[(&str, &str)]) {
        let fields: Vec<String> = fields.iter().map(|(k, v)| format!(" {k}={v}")).collect();
        self.logs
            .borrow_mut()
            .push((level, format!("{message}{}", fields.concat())));
    }

    fn hmac_sha256(&self, key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(message);
        mac.finalize().into_bytes().to_vec()
    }

    fn sha256(&self, data: &[u8]) -> Vec<u8> {
        sha2::Sha256::digest(data).to_vec()
    }

    fn verify_rsa_sha256(&self, _: &str, _: &[u8], _: &[u8]) -> Result<bool, String> {
        Ok(self.signatures_valid.get())
    }

    fn verify_ecdsa_p256_sha256(&self, _: &str, _: &[u8], _: &[u8]) -> Result<bool, String> {
        Ok(self.signatures_valid.get())
    }

    fn constant_time_eq(&self, a: &[u8], b: &[u8]) -> bool {
        a == b
    }
}
