//! The call context: environment, credential fields, endpoints and webhook URL of one call.
//!
//! Lookups by name return a `rejected` error naming what is missing, so an adapter can write
//! `ctx.field("pix-key")?` and the merchant learns which field to fill in.

use crate::bindings::pixgw::psp::types::CallContext;
pub use crate::bindings::pixgw::psp::types::Environment;
use crate::error::Error;

#[derive(Clone, Debug)]
pub struct Context {
    pub environment: Environment,
    /// The host's request id, for logs and PSP correlation headers.
    pub request_id: String,
    /// Credential fields (name, value); private keys are never here.
    pub fields: Vec<(String, String)>,
    /// Endpoints (name, base URL) resolved for this call's environment.
    pub endpoints: Vec<(String, String)>,
    pub webhook_url: Option<String>,
}

impl From<CallContext> for Context {
    fn from(ctx: CallContext) -> Self {
        Context {
            environment: ctx.environment,
            request_id: ctx.request_id,
            fields: ctx.fields.into_iter().map(|f| (f.name, f.value)).collect(),
            endpoints: ctx.endpoints.into_iter().map(|e| (e.name, e.url)).collect(),
            webhook_url: ctx.webhook_url,
        }
    }
}

impl Context {
    /// An empty context (for tests); add to it with the `with_*` methods.
    pub fn new(environment: Environment) -> Self {
        Context {
            environment,
            request_id: "req-test".into(),
            fields: Vec::new(),
            endpoints: Vec::new(),
            webhook_url: None,
        }
    }

    pub fn with_field(mut self, name: &str, value: &str) -> Self {
        self.fields.push((name.into(), value.into()));
        self
    }

    pub fn with_endpoint(mut self, name: &str, url: &str) -> Self {
        self.endpoints.push((name.into(), url.into()));
        self
    }

    pub fn with_webhook_url(mut self, url: &str) -> Self {
        self.webhook_url = Some(url.into());
        self
    }

    /// A credential field that must be present and non-empty.
    pub fn field(&self, name: &str) -> Result<&str, Error> {
        self.optional_field(name).ok_or_else(|| {
            Error::rejected(format!(
                "the credential has no value for the field `{name}`"
            ))
        })
    }

    /// A key whose prefix tells its environment (Stripe's `sk_test_`/`rk_test_` against
    /// `sk_live_`/`rk_live_`): a value carrying one of the *other* environment's prefixes is
    /// refused as `bad-credentials` before anything is sent. A value with none of the prefixes
    /// passes (an older key format, a key kind the list does not name): only the PSP can tell.
    ///
    /// Used instead of the manifest's `value-prefix` where a PSP has more than one prefix per
    /// environment, or keys without one, which the host's single prefix would refuse.
    pub fn environment_key(&self, name: &str, test: &[&str], live: &[&str]) -> Result<&str, Error> {
        let value = self.field(name)?;
        let (other, other_name, this_name) = match self.environment {
            Environment::Test => (live, "live", "test"),
            Environment::Live => (test, "test", "live"),
        };
        match other.iter().find(|prefix| value.starts_with(*prefix)) {
            Some(prefix) => Err(Error::BadCredentials(
                crate::error::PspError::new(format!(
                    "the credential's `{name}` is a {other_name} key (it starts with {prefix}) but the credential is for the {this_name} environment: paste the {this_name} key"
                ))
                .because(crate::error::Reason::Credentials),
            )),
            None => Ok(value),
        }
    }

    /// A credential field that may be absent (empty counts as absent).
    pub fn optional_field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// An endpoint's base URL, without a trailing slash.
    pub fn endpoint(&self, name: &str) -> Result<&str, Error> {
        self.endpoints
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, url)| url.trim_end_matches('/'))
            .filter(|url| !url.is_empty())
            .ok_or_else(|| {
                Error::rejected(format!("no URL is configured for the endpoint `{name}`"))
            })
    }

    /// The URL the PSP should notify.
    pub fn webhook_url(&self) -> Result<&str, Error> {
        self.webhook_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| Error::rejected("this credential has no webhook URL to register"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_name_what_is_missing() {
        let ctx = Context::new(Environment::Test)
            .with_field("pix-key", " ")
            .with_endpoint("api", "https://x/");
        assert_eq!(ctx.endpoint("api").unwrap(), "https://x");
        let e = ctx.field("pix-key").unwrap_err();
        assert_eq!(e.kind(), "rejected");
        assert!(e.psp_error().unwrap().message.contains("`pix-key`"));
        assert!(
            ctx.endpoint("oauth")
                .unwrap_err()
                .psp_error()
                .unwrap()
                .message
                .contains("`oauth`")
        );
        assert_eq!(ctx.webhook_url().unwrap_err().kind(), "rejected");
    }

    #[test]
    fn a_key_of_the_other_environment_is_refused_and_an_unknown_prefix_passes() {
        const TEST: &[&str] = &["sk_test_", "rk_test_"];
        const LIVE: &[&str] = &["sk_live_", "rk_live_"];
        let test = |key: &str| Context::new(Environment::Test).with_field("secret-key", key);
        for key in ["sk_test_1", "rk_test_1", "legacy_key"] {
            assert_eq!(
                test(key).environment_key("secret-key", TEST, LIVE).unwrap(),
                key
            );
        }
        let e = test("rk_live_1")
            .environment_key("secret-key", TEST, LIVE)
            .unwrap_err();
        assert_eq!(e.kind(), "bad-credentials");
        let message = &e.psp_error().unwrap().message;
        assert!(
            message.contains("live key") && message.contains("rk_live_"),
            "{message}"
        );
        let live = Context::new(Environment::Live).with_field("secret-key", "sk_test_1");
        assert_eq!(
            live.environment_key("secret-key", TEST, LIVE)
                .unwrap_err()
                .kind(),
            "bad-credentials"
        );
        assert_eq!(
            test("")
                .environment_key("secret-key", TEST, LIVE)
                .unwrap_err()
                .kind(),
            "rejected"
        );
    }
}
