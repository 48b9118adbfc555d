//! Itaú: the central-bank Pix API ("Recebimentos Pix", product
//! `itau-ep9-api-regulatorio-pix-v2-externo`). Production is over mTLS with a token from Itaú's
//! STS host; the sandbox is hosted by the developer portal, without mTLS, token and API on one
//! host. Facts and their sources: `README.md`.

use pixgw_plugin_sdk::prelude::*;

/// Production: token at `sts.itau.com.br/api/oauth/token` (endpoint `oauth`), form body with
/// grant type, id and secret, mTLS; paths under `/regulatorio-pix/v2` on `pix-pj.api.itau.com`,
/// each carrying `x-itau-apikey` (the client id) and `x-correlationID`.
const PRODUCTION: CentralBankPsp = CentralBankPsp {
    token_endpoint: "oauth",
    token_path: "/api/oauth/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Body,
    scopes: None,
    path_prefix: "/regulatorio-pix/v2",
    headers: &[
        ("x-itau-apikey", Source::Field("client-id")),
        ("x-correlationID", Source::RequestId),
    ],
    // 201 by the standard; 200 accepted as at every central-bank PSP.
    create_statuses: &[201, 200],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

/// The portal's sandbox: the same API under `/itau-ep9-api-regulatorio-pix-v2-externo/v2`, its
/// token at `/api/oauth/jwt` on the same host, no client certificate.
const SANDBOX: CentralBankPsp = CentralBankPsp {
    token_endpoint: "api",
    token_path: "/api/oauth/jwt",
    path_prefix: "/itau-ep9-api-regulatorio-pix-v2-externo/v2",
    mtls: false,
    ..PRODUCTION
};

/// The facts of the call's environment.
fn itau(ctx: &Context) -> &'static CentralBankPsp {
    match ctx.environment {
        Environment::Live => &PRODUCTION,
        Environment::Test => &SANDBOX,
    }
}

struct Itau;

impl CentralBankAdapter for Itau {
    fn describe() -> Manifest {
        Manifest {
            id: "itau",
            display_name: "Itaú",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Itaú's developer portal: your application's client_id."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the client_id of the same application."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Itaú account that receives the payments."),
                // The portal's sandbox has no certificate; production needs both.
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("Production only: the PEM certificate Itaú issued for the application.")
                    .optional(),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("Production only: the PEM private key of that certificate.")
                    .optional(),
            ],
            required_payer_fields: vec![],
            endpoints: vec![
                Endpoint::new(
                    "api",
                    "https://sandbox.devportal.itau.com.br",
                    "https://pix-pj.api.itau.com",
                ),
                // The sandbox's token is on the API host; its URL here is never called.
                Endpoint::new(
                    "oauth",
                    "https://sandbox.devportal.itau.com.br",
                    "https://sts.itau.com.br",
                ),
            ],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(ctx: &Context) -> &'static CentralBankPsp {
        itau(ctx)
    }
}

export!(Itau);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    const TXID: &str = "abcdefghijklmnopqrstuvwxyz1";
    const COB: &str =
        r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"ATIVA","valor":{"original":"1.00"}}"#;

    fn ctx(environment: Environment, api: &str) -> Context {
        Context::new(environment)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", api)
            .with_endpoint("oauth", "https://sts.itau.com.br")
    }

    #[test]
    fn production_token_on_sts_over_mtls_and_itau_headers_on_api_calls() {
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":300}"#)
            .reply(200, COB);
        let ctx = ctx(Environment::Live, "https://pix-pj.api.itau.com");
        Itau::query(&host, &ctx, TXID, None).unwrap();
        let sent = host.sent();
        assert_eq!(sent[0].url, "https://sts.itau.com.br/api/oauth/token");
        assert_eq!(
            sent[0].body,
            b"grant_type=client_credentials&client_id=id&client_secret=secret"
        );
        assert_eq!(
            sent[1].url,
            format!("https://pix-pj.api.itau.com/regulatorio-pix/v2/cob/{TXID}")
        );
        assert_eq!(sent[1].header_value("x-itau-apikey"), Some("id"));
        assert_eq!(sent[1].header_value("x-correlationID"), Some("req-test"));
        assert_eq!(sent[1].header_value("x-itau-correlationID"), None);
        assert!(sent.iter().all(|r| r.mtls));
    }

    #[test]
    fn sandbox_token_and_api_on_the_portal_without_mtls() {
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":300}"#)
            .reply(200, COB);
        let ctx = ctx(Environment::Test, "https://sandbox.devportal.itau.com.br");
        Itau::query(&host, &ctx, TXID, None).unwrap();
        let sent = host.sent();
        assert_eq!(
            sent[0].url,
            "https://sandbox.devportal.itau.com.br/api/oauth/jwt"
        );
        assert_eq!(
            sent[0].body,
            b"grant_type=client_credentials&client_id=id&client_secret=secret"
        );
        assert_eq!(
            sent[1].url,
            format!(
                "https://sandbox.devportal.itau.com.br/itau-ep9-api-regulatorio-pix-v2-externo/v2/cob/{TXID}"
            )
        );
        assert!(sent.iter().all(|r| !r.mtls));
        let manifest = <Itau as Adapter>::manifest();
        assert!(
            manifest
                .credential_fields
                .iter()
                .filter(|f| f.name == "certificate" || f.name == "private-key")
                .all(|f| !f.required)
        );
    }
}
