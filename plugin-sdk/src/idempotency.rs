//! Creating at most once at a PSP that has no idempotency key (iugu, Asaas).
//!
//! Such a PSP creates a second charge when a create is repeated, and the router repeats a create
//! whose answer was lost. What the PSP creates carries the gateway's reference (a custom
//! variable, an external reference), so the adapter can look it up; [`CreateOnce`] decides
//! when, with an `attempt:<reference>` marker in the host's cache:
//!
//! - [`earlier`](CreateOnce::earlier), before anything else: when the marker exists (an attempt
//!   may have reached the PSP), the lookup's find is the answer and nothing is created;
//! - [`create`](CreateOnce::create): sets the marker, sends, and reads the answer. After a lost
//!   answer (`ambiguous`) it looks up once: what it finds is the answer, otherwise (nothing
//!   found, or the lookup failed) the `ambiguous` error stands, for the router to query later.
//!
//! ```ignore
//! let once = CreateOnce::new(host, &request.reference, ATTEMPT_TTL, || find(host, ctx, &request.reference));
//! if let Some(found) = once.earlier()? {
//!     return Ok(found);
//! }
//! // … anything needed before sending (e.g. the PSP's customer) …
//! let created: Invoice = once.create(|| Request::post(url).json(&body).call(host, Op::Create, describe))?;
//! ```

use serde::de::DeserializeOwned;

use crate::error::{Error, Op};
use crate::host::Host;
use crate::http::Response;

/// One create, by reference; `find` looks up what the PSP holds for that reference.
pub struct CreateOnce<'h, F> {
    host: &'h dyn Host,
    marker: String,
    ttl_seconds: u32,
    find: F,
}

impl<'h, F> CreateOnce<'h, F> {
    /// `ttl_seconds`: how long an attempt is remembered (as long as a retry may come).
    pub fn new(host: &'h dyn Host, reference: &str, ttl_seconds: u32, find: F) -> Self {
        CreateOnce {
            host,
            marker: format!("attempt:{reference}"),
            ttl_seconds,
            find,
        }
    }

    /// What an earlier attempt with this reference created: asks `find` only when there was
    /// one (its error is returned as it is), else `None` without a request.
    pub fn earlier<T>(&self) -> Result<Option<T>, Error>
    where
        F: Fn() -> Result<Option<T>, Error>,
    {
        if self.host.cache_get(&self.marker).is_none() {
            return Ok(None);
        }
        (self.find)()
    }

    /// Remembers the attempt, then `send`s the create (e.g. [`Request::call`] with
    /// [`Op::Create`]) and decodes its answer ([`Response::decode`]: one that cannot be read is
    /// `ambiguous`). When `send` fails with `ambiguous`, one `find`: the object it finds, else
    /// that error. Any other error is returned as it is.
    ///
    /// [`Request::call`]: crate::http::Request::call
    pub fn create<T>(&self, send: impl FnOnce() -> Result<Response, Error>) -> Result<T, Error>
    where
        T: DeserializeOwned,
        F: Fn() -> Result<Option<T>, Error>,
    {
        self.host.cache_set(&self.marker, "1", self.ttl_seconds);
        match send() {
            Ok(response) => response.decode(Op::Create),
            Err(lost @ Error::Ambiguous(_)) => (self.find)().ok().flatten().ok_or(lost),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde::Deserialize;

    use super::*;
    use crate::error;
    use crate::host::fake::FakeHost;
    use crate::http::{HttpError, Request};

    const REF: &str = "ref123";
    const TTL: u32 = 600;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Invoice {
        id: String,
    }

    fn invoice(id: &str) -> Invoice {
        Invoice { id: id.into() }
    }

    fn send(host: &FakeHost) -> Result<Response, Error> {
        Request::post("https://psp.example/invoices").call(host, Op::Create, error::describe_body)
    }

    /// A `find` answering `answer` and counting its calls.
    fn finder<'a>(
        calls: &'a Cell<u32>,
        answer: fn() -> Result<Option<Invoice>, Error>,
    ) -> impl Fn() -> Result<Option<Invoice>, Error> + 'a {
        move || {
            calls.set(calls.get() + 1);
            answer()
        }
    }

    #[test]
    fn a_first_attempt_looks_nothing_up_and_is_remembered() {
        let host = FakeHost::new();
        host.reply(200, r#"{"id":"inv_1"}"#);
        let calls = Cell::new(0);
        let once = CreateOnce::new(&host, REF, TTL, finder(&calls, || Ok(Some(invoice("x")))));
        assert_eq!(once.earlier().unwrap(), None);
        assert_eq!(once.create(|| send(&host)).unwrap(), invoice("inv_1"));
        assert_eq!(calls.get(), 0);
        assert_eq!(
            host.cached("attempt:ref123"),
            Some(("1".into(), u64::from(TTL)))
        );
    }

    #[test]
    fn a_retry_carries_on_with_what_the_earlier_attempt_created() {
        let host = FakeHost::new();
        host.cache_set("attempt:ref123", "1", TTL);
        let calls = Cell::new(0);
        let once = CreateOnce::new(
            &host,
            REF,
            TTL,
            finder(&calls, || Ok(Some(invoice("inv_1")))),
        );
        assert_eq!(once.earlier().unwrap(), Some(invoice("inv_1")));
        assert_eq!(calls.get(), 1);
        assert!(host.sent().is_empty());
    }

    #[test]
    fn a_retry_that_finds_nothing_creates_and_one_whose_lookup_fails_stops() {
        let host = FakeHost::new();
        host.cache_set("attempt:ref123", "1", TTL);
        host.reply(201, r#"{"id":"inv_2"}"#);
        let once = CreateOnce::new(&host, REF, TTL, || Ok(None));
        assert_eq!(once.earlier::<Invoice>().unwrap(), None);
        assert_eq!(once.create(|| send(&host)).unwrap(), invoice("inv_2"));

        let down = CreateOnce::new(&host, REF, TTL, || {
            Err::<Option<Invoice>, _>(Error::unavailable("search is down"))
        });
        assert_eq!(down.earlier().unwrap_err().kind(), "unavailable");
    }

    #[test]
    fn a_lost_answer_is_looked_up_once() {
        let host = FakeHost::new();
        host.fail(HttpError::NoAnswer("reset".into()));
        let calls = Cell::new(0);
        let found = CreateOnce::new(
            &host,
            REF,
            TTL,
            finder(&calls, || Ok(Some(invoice("inv_3")))),
        );
        assert_eq!(found.create(|| send(&host)).unwrap(), invoice("inv_3"));
        assert_eq!(calls.get(), 1);

        // Not found, or the lookup failed: the ambiguous error stands.
        for answer in [
            (|| Ok(None)) as fn() -> Result<Option<Invoice>, Error>,
            || Err(Error::unavailable("search is down")),
        ] {
            host.fail(HttpError::NoAnswer("reset".into()));
            let calls = Cell::new(0);
            let once = CreateOnce::new(&host, REF, TTL, finder(&calls, answer));
            let e = once.create(|| send(&host)).unwrap_err();
            assert_eq!(e.kind(), "ambiguous");
            assert!(e.psp_error().unwrap().message.ends_with("reset"), "{e:?}");
            assert_eq!(calls.get(), 1);
        }
    }

    #[test]
    fn other_failures_and_unreadable_answers_are_not_looked_up() {
        let host = FakeHost::new();
        host.reply(422, r#"{"message":"amount too small"}"#)
            .reply(200, "<html>");
        let calls = Cell::new(0);
        let once = CreateOnce::new(&host, REF, TTL, finder(&calls, || Ok(Some(invoice("x")))));
        let refused = once.create(|| send(&host)).unwrap_err();
        assert_eq!(refused.kind(), "rejected");
        let psp = refused.psp_error().unwrap();
        assert_eq!(
            (psp.message.as_str(), psp.http_status),
            ("amount too small", Some(422))
        );
        let unreadable = once.create(|| send(&host)).unwrap_err();
        assert_eq!(unreadable.kind(), "ambiguous");
        assert_eq!(calls.get(), 0);
        // The attempt is remembered all the same: a retry looks first.
        assert!(host.cached("attempt:ref123").is_some());
    }
}
