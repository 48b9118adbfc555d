//! Efí Bank: the central-bank Pix API over mTLS.

use pixgw_plugin_sdk::prelude::*;

/// Efí's facts (sources in `README.md`): JSON token body with Basic auth, paths under `/v2`, mTLS everywhere,
/// and a header that lets the webhook URL be served without mTLS. Efí's QR image
/// (`GET /v2/loc/{id}/qrcode`) is not fetched: the host draws its own from the code, and a second
/// call per charge would only add latency.
const EFI: CentralBankPsp = CentralBankPsp {
    api_endpoint: "api",
    token_endpoint: "api",
    token_path: "/oauth/token",
    token_body: BodyEncoding::Json,
    client_auth: ClientAuth::Basic,
    scopes: None,
    path_prefix: "/v2",
    duplicate_txid_codes: &["txid_duplicado"],
    webhook_headers: &[("x-skip-mtls-checking", Source::Fixed("true"))],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Efi;

impl CentralBankAdapter for Efi {
    fn describe() -> Manifest {
        Manifest {
            id: "efi",
            display_name: "Efí Bank",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("In Efí's dashboard: API > Applications > your application > Client_Id."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown next to the Client_Id of the same application."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Efí account that receives the payments."),
                CredentialField::client_identity("certificate", "Certificate (PEM)").help(
                    "The application's .p12 converted to one PEM with the certificate and private key: \
                     openssl pkcs12 -in cert.p12 -out cert.pem -nodes -password pass:",
                ),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://pix-h.api.efipay.com.br",
                "https://pix.api.efipay.com.br",
            )],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &EFI
    }
}

export!(Efi);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn create_is_one_call_after_the_token_over_mtls() {
        let ctx = Context::new(Environment::Test)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_field("pix-key", "key")
            .with_endpoint("api", "https://pix-h.api.efipay.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","token_type":"Bearer","expires_in":3600}"#)
            .reply(201, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"ATIVA","calendario":{"criacao":"2024-01-01T00:00:00Z","expiracao":60},"loc":{"id":7},"valor":{"original":"1.00"},"pixCopiaECola":"000201"}"#);
        let request = ChargeRequest {
            reference: "abcdefghijklmnopqrstuvwxyz1".into(),
            amount: 100,
            description: None,
            payer: Payer {
                email: None,
                name: None,
                document: None,
            },
            expires_in: 60,
        };
        let charge = Efi::create(&host, &ctx, &request).unwrap();
        assert_eq!(charge.copy_paste.as_deref(), Some("000201"));
        assert_eq!(charge.qr_png_base64, None, "the host draws the QR code");
        let sent = host.sent();
        assert_eq!(sent.len(), 2, "token and create, no image fetch");
        assert_eq!(
            sent[1].url,
            "https://pix-h.api.efipay.com.br/v2/cob/abcdefghijklmnopqrstuvwxyz1"
        );
        assert!(host.sent().iter().all(|r| r.mtls));
        assert_eq!(<Efi as Adapter>::manifest().into_wit().wit_version, "2.0.0");
    }
}
