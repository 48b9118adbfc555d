//! Banco do Brasil: the central-bank Pix API over mTLS, with a separate token host and the
//! developer application key on every API call.

use pixgw_plugin_sdk::prelude::*;

/// BB's facts (sources in `README.md`): token at `oauth.bb.com.br` (endpoint `oauth`), form body with the
/// grant type and scopes, Basic client auth; paths under `/pix/v2`, each carrying
/// `gw-dev-app-key`; create answers 201; errors as `{"erros":[{codigo, mensagem}]}`;
/// homologation may name the code `textoImagemQRcode` (read by the SDK).
const BB: CentralBankPsp = CentralBankPsp {
    token_endpoint: "oauth",
    token_path: "/oauth/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Basic,
    scopes: Some(central_bank::SCOPES),
    path_prefix: "/pix/v2",
    query: &[("gw-dev-app-key", Source::Field("app-key"))],
    // 201 by the standard; 200 accepted as at every central-bank PSP.
    create_statuses: &[201, 200],
    // A repeated txid is refused with this `codigo` (a choice of the simulator: unverified).
    duplicate_txid_codes: &["txid_duplicado"],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Bb;

impl CentralBankAdapter for Bb {
    fn describe() -> Manifest {
        Manifest {
            id: "bb",
            display_name: "Banco do Brasil",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID").help(
                    "BB's developer portal (developers.bb.com.br): your application's client_id.",
                ),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the client_id of the same application."),
                CredentialField::text("app-key", "Developer application key")
                    .help("The application's developer_application_key, sent as gw-dev-app-key."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the BB account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The PEM certificate Banco do Brasil issued for the application."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The PEM private key of that certificate."),
            ],
            required_payer_fields: vec![],
            endpoints: vec![
                Endpoint::new(
                    "api",
                    "https://api.hm.bb.com.br",
                    "https://api-pix.bb.com.br",
                ),
                Endpoint::new(
                    "oauth",
                    "https://oauth.hm.bb.com.br",
                    "https://oauth.bb.com.br",
                ),
            ],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &BB
    }
}

export!(Bb);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn token_on_the_oauth_host_and_the_app_key_on_api_calls() {
        let ctx = Context::new(Environment::Test)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_field("app-key", "appkey")
            .with_endpoint("api", "https://api.hm.bb.com.br")
            .with_endpoint("oauth", "https://oauth.hm.bb.com.br");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(404, r#"{"erros":[{"codigo":"cobranca_nao_encontrada","mensagem":"Cobrança não encontrada"}]}"#);
        let error = Bb::query(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap_err();
        assert_eq!(error.kind(), "not-found");
        assert_eq!(
            error.psp_error().unwrap().message,
            "Cobrança não encontrada"
        );
        let sent = host.sent();
        assert_eq!(sent[0].url, "https://oauth.hm.bb.com.br/oauth/token");
        assert_eq!(
            sent[1].url,
            "https://api.hm.bb.com.br/pix/v2/cob/abcdefghijklmnopqrstuvwxyz1?gw-dev-app-key=appkey"
        );
    }
}
