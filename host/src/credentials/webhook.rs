//! Where a PSP notifies for a credential: `{base_url}/api/wh/<uuid>`, authenticated by the
//! credential's token, in the URL's query or in a header the PSP is configured to send, as the
//! adapter's manifest says. [`WebhookSetup`] is what the merchant needs to know about that, read
//! from the manifest alone.

use crate::runtime::{self, Capabilities, WebhookAuth};
use crate::store::credentials::CredentialRecord;
use crate::vault::Aad;

pub fn webhook_token_aad(credential_id: &str) -> Aad {
    Aad::new("credentials", credential_id, "webhook-token")
}

/// Whether the webhook URL given to the PSP carries the token (see [`webhook_url`]).
pub fn token_in_url(manifest: &runtime::Manifest) -> bool {
    token_header(manifest).is_none()
}

/// The header in which the PSP sends the host's token, when the manifest names one.
pub fn token_header(manifest: &runtime::Manifest) -> Option<&str> {
    match &manifest.webhook_auth {
        WebhookAuth::HeaderToken(header) => Some(header),
        _ => None,
    }
}

/// The URL a PSP notifies for this credential.
pub fn webhook_url(
    base_url: &str,
    record: &CredentialRecord,
    token: &str,
    url_token: bool,
) -> String {
    let base = format!(
        "{}/api/wh/{}",
        base_url.trim_end_matches('/'),
        record.webhook_id
    );
    if url_token {
        format!("{base}?token={token}")
    } else {
        base
    }
}

/// How a PSP's webhook is set up for an adapter: what the merchant does, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSetup {
    /// The adapter registers the URL at the PSP itself when the credential is saved;
    /// otherwise the merchant pastes it into the PSP's dashboard.
    pub registered_by_adapter: bool,
    /// The PSP sends the token in this header (configured at the PSP); the URL carries none.
    pub header: Option<String>,
    /// The PSP signs each notification and the adapter verifies the signature.
    pub psp_signs: bool,
}

impl WebhookSetup {
    pub fn of(manifest: &runtime::Manifest) -> WebhookSetup {
        WebhookSetup {
            registered_by_adapter: manifest
                .capabilities
                .contains(Capabilities::REGISTER_WEBHOOK),
            header: token_header(manifest).map(str::to_owned),
            psp_signs: matches!(manifest.webhook_auth, WebhookAuth::PspSignature),
        }
    }

    pub fn token_in_url(&self) -> bool {
        self.header.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::fields::tests::manifest;

    #[test]
    fn the_setup_follows_the_manifest() {
        let mut m = manifest();
        assert_eq!(
            WebhookSetup::of(&m),
            WebhookSetup {
                registered_by_adapter: false,
                header: None,
                psp_signs: true
            }
        );
        m.webhook_auth = WebhookAuth::HeaderToken("asaas-access-token".into());
        let setup = WebhookSetup::of(&m);
        assert_eq!(setup.header.as_deref(), Some("asaas-access-token"));
        assert!(!setup.token_in_url() && !setup.psp_signs);
        m.webhook_auth = WebhookAuth::UrlToken;
        m.capabilities = Capabilities::REGISTER_WEBHOOK | Capabilities::CHECK_CREDENTIALS;
        assert_eq!(
            WebhookSetup::of(&m),
            WebhookSetup {
                registered_by_adapter: true,
                header: None,
                psp_signs: false
            }
        );
    }

    #[test]
    fn the_token_rides_in_the_url_unless_a_header_carries_it() {
        let record = CredentialRecord {
            id: crate::domain::CredentialId::generate(),
            merchant_id: "mer".into(),
            environment: crate::domain::Environment::Test,
            provider: "p".into(),
            label: "x".into(),
            public_fields: Default::default(),
            sealed_fields: Default::default(),
            webhook_id: "0b8e".into(),
            webhook_token_sealed: String::new(),
            active: true,
            position: 0,
            route_limit: 1,
            created_at: 0,
            updated_at: 0,
            version: 1,
        };
        assert_eq!(
            webhook_url("https://gw.example/", &record, "tok", true),
            "https://gw.example/api/wh/0b8e?token=tok"
        );
        assert_eq!(
            webhook_url("https://gw.example", &record, "tok", false),
            "https://gw.example/api/wh/0b8e"
        );
    }
}
