//! Sicredi: the central-bank Pix API over mTLS with a `.crt` and a `.key`.

use pixgw_plugin_sdk::prelude::*;

/// Sicredi's facts (sources in `README.md`): form token body with the grant type and scopes, Basic client
/// auth; paths under `/api/v2`; create answers 200.
const SICREDI: CentralBankPsp = CentralBankPsp {
    token_path: "/oauth/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Basic,
    scopes: Some(central_bank::SCOPES),
    path_prefix: "/api/v2",
    // Sicredi answers 200; 201 (the standard) accepted too.
    create_statuses: &[200, 201],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Sicredi;

impl CentralBankAdapter for Sicredi {
    fn describe() -> Manifest {
        Manifest {
            id: "sicredi",
            display_name: "Sicredi",
            kind: "cooperative bank (central-bank Pix API)",
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Issued by Sicredi with the Pix API access (ask your cooperative)."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Issued together with the Client ID."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Sicredi account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The PEM certificate Sicredi issued for the application."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The PEM private key of that certificate."),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://api-pix-h.sicredi.com.br",
                "https://api-pix.sicredi.com.br",
            )],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &SICREDI
    }
}

export!(Sicredi);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn basic_form_token_and_api_v2_paths() {
        let ctx = Context::new(Environment::Test)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_field("pix-key", "key")
            .with_endpoint("api", "https://api-pix-h.sicredi.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(200, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"ATIVA","valor":{"original":"1.00"}}"#);
        let charge = Sicredi::cancel(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap();
        assert_eq!(charge.status, ChargeStatus::Pending);
        let sent = host.sent();
        assert_eq!(
            sent[0].header_value("authorization"),
            Some("Basic aWQ6c2VjcmV0")
        );
        assert!(
            String::from_utf8_lossy(&sent[0].body)
                .starts_with("grant_type=client_credentials&scope=cob.write")
        );
        assert_eq!(
            sent[1].url,
            "https://api-pix-h.sicredi.com.br/api/v2/cob/abcdefghijklmnopqrstuvwxyz1"
        );
    }
}
