//! What an adapter declares about itself, minus what the SDK knows better.
//!
//! [`Manifest`] is the WIT manifest without `wit-version`: the SDK fills that from
//! [`crate::WIT_VERSION`], so an adapter cannot claim a contract it was not built against.
//! Constructors on [`CredentialField`] and [`Endpoint`] keep the declaration table-like.

use crate::bindings::pixgw::psp::types::Manifest as WitManifest;
pub use crate::bindings::pixgw::psp::types::{
    Capabilities, CredentialField, Endpoint, EnvironmentPrefixes, FieldKind, PayerField,
    WebhookAuth,
};

#[derive(Clone, Debug)]
pub struct Manifest {
    /// Provider id, lowercase and stable: `efi`.
    pub id: &'static str,
    pub display_name: &'static str,
    pub kind: &'static str,
    pub credential_fields: Vec<CredentialField>,
    pub required_payer_fields: Vec<PayerField>,
    pub endpoints: Vec<Endpoint>,
    pub webhook_auth: WebhookAuth,
    pub capabilities: Capabilities,
}

impl Manifest {
    /// The WIT record, with the SDK's WIT version.
    pub fn into_wit(self) -> WitManifest {
        WitManifest {
            id: self.id.into(),
            display_name: self.display_name.into(),
            kind: self.kind.into(),
            wit_version: crate::WIT_VERSION.into(),
            credential_fields: self.credential_fields,
            required_payer_fields: self.required_payer_fields,
            endpoints: self.endpoints,
            webhook_auth: self.webhook_auth,
            capabilities: self.capabilities,
        }
    }
}

impl CredentialField {
    /// A required field of this kind; multiline for PEM kinds.
    pub fn new(name: &str, label: &str, kind: FieldKind) -> Self {
        let multiline = matches!(
            kind,
            FieldKind::ClientCertificate | FieldKind::ClientPrivateKey | FieldKind::ClientIdentity
        );
        CredentialField {
            name: name.into(),
            label: label.into(),
            kind,
            required: true,
            multiline,
            help: None,
            value_prefix: None,
        }
    }

    /// Plain text, shown back (client id, Pix key).
    pub fn text(name: &str, label: &str) -> Self {
        Self::new(name, label, FieldKind::Text)
    }

    /// Write-only secret.
    pub fn secret(name: &str, label: &str) -> Self {
        Self::new(name, label, FieldKind::Secret)
    }

    /// PEM certificate (`.crt`).
    pub fn client_certificate(name: &str, label: &str) -> Self {
        Self::new(name, label, FieldKind::ClientCertificate)
    }

    /// PEM private key (`.key`); never passed to the adapter.
    pub fn client_private_key(name: &str, label: &str) -> Self {
        Self::new(name, label, FieldKind::ClientPrivateKey)
    }

    /// One PEM with certificate and key blocks; never passed to the adapter.
    pub fn client_identity(name: &str, label: &str) -> Self {
        Self::new(name, label, FieldKind::ClientIdentity)
    }

    pub fn help(mut self, help: &str) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The value starts with `test` in the test environment and `live` in production (e.g.
    /// `sk_test_` / `sk_live_`); the host refuses a value saved in the wrong environment.
    pub fn prefixed(mut self, test: &str, live: &str) -> Self {
        self.value_prefix = Some(EnvironmentPrefixes {
            test: test.into(),
            live: live.into(),
        });
        self
    }

    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }
}

impl Endpoint {
    pub fn new(name: &str, test_url: &str, live_url: &str) -> Self {
        Endpoint {
            name: name.into(),
            test_url: test_url.into(),
            live_url: live_url.into(),
        }
    }
}
