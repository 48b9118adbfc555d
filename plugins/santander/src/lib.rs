//! Santander: the central-bank Pix API over mTLS with a `.crt` and a `.key`.

use pixgw_plugin_sdk::prelude::*;

/// Santander's facts (sources in `README.md`): token at `/oauth/token?grant_type=client_credentials`
/// with id and secret in a form body; paths under `/api/v1`, but a charge is revised (canceled)
/// with `PATCH /api/v2/cob/{txid}`; create by `PUT` only (the SDK never posts), answered 200.
const SANTANDER: CentralBankPsp = CentralBankPsp {
    token_path: "/oauth/token",
    token_query: &[("grant_type", "client_credentials")],
    grant_type_in_body: false,
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Body,
    scopes: None,
    path_prefix: "/api/v1",
    revise_path_prefix: Some("/api/v2"),
    // Santander answers 200; 201 (the standard) accepted too.
    create_statuses: &[200, 201],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Santander;

impl CentralBankAdapter for Santander {
    fn describe() -> Manifest {
        Manifest {
            id: "santander",
            display_name: "Santander",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Santander's developer portal: your application's Client ID."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the Client ID of the same application."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Santander account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The PEM certificate Santander issued for the application."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The PEM private key of that certificate."),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://trust-pix-h.santander.com.br",
                "https://trust-pix.santander.com.br",
            )],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &SANTANDER
    }
}

export!(Santander);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn grant_type_in_the_query_and_credentials_in_the_body() {
        let ctx = Context::new(Environment::Test)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", "https://trust-pix-h.santander.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(200, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"ATIVA","valor":{"original":"1.00"}}"#);
        Santander::query(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap();
        let sent = host.sent();
        assert_eq!(
            sent[0].url,
            "https://trust-pix-h.santander.com.br/oauth/token?grant_type=client_credentials"
        );
        assert_eq!(sent[0].body, b"client_id=id&client_secret=secret");
        assert_eq!(sent[0].header_value("authorization"), None);
        assert_eq!(
            sent[1].url,
            "https://trust-pix-h.santander.com.br/api/v1/cob/abcdefghijklmnopqrstuvwxyz1"
        );
    }

    #[test]
    fn a_charge_is_canceled_under_api_v2() {
        let ctx = Context::new(Environment::Live)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", "https://trust-pix.santander.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(200, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"REMOVIDA_PELO_USUARIO_RECEBEDOR","valor":{"original":"1.00"}}"#);
        let charge = Santander::cancel(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap();
        assert_eq!(charge.status, ChargeStatus::Canceled);
        let patch = &host.sent()[1];
        assert_eq!(
            (patch.method, patch.url.as_str()),
            (
                Method::Patch,
                "https://trust-pix.santander.com.br/api/v2/cob/abcdefghijklmnopqrstuvwxyz1"
            )
        );
    }
}
