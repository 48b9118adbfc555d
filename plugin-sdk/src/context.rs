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
}
