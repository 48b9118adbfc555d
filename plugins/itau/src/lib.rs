//! Itaú: the central-bank Pix API over mTLS, with a separate token host and Itaú's API key and
//! correlation headers on every API call.

use pixgw_plugin_sdk::prelude::*;

/// Itaú's facts (PSPS.md): token at `sts.itau.com.br/api/oauth/token` (endpoint `oauth`), form
/// body with grant type, id and secret; paths under `/pix_recebimentos/v2`, each carrying
/// `x-itau-apikey` (the client id) and `x-itau-correlationID`; create answers 201.
const ITAU: CentralBankPsp = CentralBankPsp {
    token_endpoint: "oauth",
    token_path: "/api/oauth/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Body,
    scopes: None,
    path_prefix: "/pix_recebimentos/v2",
    headers: &[
        ("x-itau-apikey", Source::Field("client-id")),
        ("x-itau-correlationID", Source::RequestId),
    ],
    // 201 by the standard; 200 accepted as PSPS.md asks of every central-bank PSP.
    create_statuses: &[201, 200],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Itau;

impl Adapter for Itau {
    fn manifest() -> Manifest {
        Manifest {
            id: "itau",
            display_name: "Itaú",
            kind: "bank (central-bank Pix API)",
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Itaú's developer portal: your application's client_id."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the client_id of the same application."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Itaú account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The PEM certificate Itaú issued for the application."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The PEM private key of that certificate."),
            ],
            required_payer_fields: vec![],
            // The sandbox hosts are unverified (PSPS.md names only production).
            endpoints: vec![
                Endpoint::new(
                    "api",
                    "https://sandbox.devportal.itau.com.br",
                    "https://secure.api.itau",
                ),
                Endpoint::new(
                    "oauth",
                    "https://sandbox.devportal.itau.com.br",
                    "https://sts.itau.com.br",
                ),
            ],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: Capabilities::CANCEL_CHARGE
                | Capabilities::REGISTER_WEBHOOK
                | Capabilities::CHECK_CREDENTIALS,
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        ITAU.create(host, ctx, request)
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        ITAU.query(host, ctx, reference, psp_id)
    }

    fn parse_webhook(
        _: &dyn Host,
        _: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        central_bank::parse_webhook(request)
    }

    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        ITAU.cancel(host, ctx, reference, psp_id)
    }

    fn register_webhook(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        ITAU.register_webhook(host, ctx)
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        ITAU.check_credentials(host, ctx)
    }
}

export!(Itau);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn token_on_sts_and_itau_headers_on_api_calls() {
        let ctx = Context::new(Environment::Live)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", "https://secure.api.itau")
            .with_endpoint("oauth", "https://sts.itau.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(200, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"ATIVA","valor":{"original":"1.00"}}"#);
        Itau::query(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap();
        let sent = host.sent();
        assert_eq!(sent[0].url, "https://sts.itau.com.br/api/oauth/token");
        assert_eq!(
            sent[0].body,
            b"grant_type=client_credentials&client_id=id&client_secret=secret"
        );
        assert_eq!(
            sent[1].url,
            "https://secure.api.itau/pix_recebimentos/v2/cob/abcdefghijklmnopqrstuvwxyz1"
        );
        assert_eq!(sent[1].header_value("x-itau-apikey"), Some("id"));
        assert_eq!(
            sent[1].header_value("x-itau-correlationID"),
            Some("req-test")
        );
    }
}
