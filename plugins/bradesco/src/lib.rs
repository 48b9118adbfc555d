//! Bradesco: the central-bank Pix API over mTLS with a `.crt` and a `.key`.

use pixgw_plugin_sdk::prelude::*;

/// Bradesco's facts (sources in `README.md`): form token body with the grant type only, Basic client auth;
/// paths under `/v2`; create answers 200.
const BRADESCO: CentralBankPsp = CentralBankPsp {
    token_path: "/oauth/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Basic,
    scopes: None,
    path_prefix: "/v2",
    // Bradesco answers 200; 201 (the standard) accepted too.
    create_statuses: &[200, 201],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Bradesco;

impl CentralBankAdapter for Bradesco {
    fn describe() -> Manifest {
        Manifest {
            id: "bradesco",
            display_name: "Bradesco",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Bradesco's developer portal: your application's Client ID."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the Client ID of the same application."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Bradesco account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The PEM certificate Bradesco issued for the application."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The PEM private key of that certificate."),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://qrpix-h.bradesco.com.br",
                "https://qrpix.bradesco.com.br",
            )],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &BRADESCO
    }
}

export!(Bradesco);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn basic_form_token_without_scope() {
        let ctx = Context::new(Environment::Live)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", "https://qrpix.bradesco.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#);
        Bradesco::check_credentials(&host, &ctx).unwrap();
        let sent = host.sent();
        assert_eq!(sent[0].url, "https://qrpix.bradesco.com.br/oauth/token");
        assert_eq!(
            sent[0].header_value("authorization"),
            Some("Basic aWQ6c2VjcmV0")
        );
        assert_eq!(sent[0].body, b"grant_type=client_credentials");
        assert!(sent[0].mtls);
    }
}
