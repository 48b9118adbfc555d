//! Banco Inter (PJ accounts): the central-bank Pix API over mTLS with a `.crt` and a `.key`.

use pixgw_plugin_sdk::prelude::*;

/// Inter's facts (sources in `README.md`): form token body carrying id, secret, grant type and
/// scopes; paths under `/pix/v2`; create answers 201; removed charges spelled `REMOVIDO_…`;
/// notifications as a bare JSON array or a single Pix object (both read by
/// `central_bank::parse_webhook`).
const INTER: CentralBankPsp = CentralBankPsp {
    token_path: "/oauth/v2/token",
    token_body: BodyEncoding::Form,
    client_auth: ClientAuth::Body,
    scopes: Some(central_bank::SCOPES),
    path_prefix: "/pix/v2",
    // 201 by the standard; 200 accepted as at every central-bank PSP.
    create_statuses: &[201, 200],
    status_aliases: &[
        (
            "REMOVIDO_PELO_USUARIO_RECEBEDOR",
            "REMOVIDA_PELO_USUARIO_RECEBEDOR",
        ),
        ("REMOVIDO_PELO_PSP", "REMOVIDA_PELO_PSP"),
    ],
    mtls: true,
    ..CentralBankPsp::STANDARD
};

struct Inter;

impl CentralBankAdapter for Inter {
    fn describe() -> Manifest {
        Manifest {
            id: "inter",
            display_name: "Banco Inter",
            kind: central_bank::KIND,
            credential_fields: vec![
                CredentialField::text("client-id", "Client ID")
                    .help("Internet Banking PJ > Soluções para sua empresa > Nova Integração > Client ID."),
                CredentialField::secret("client-secret", "Client Secret")
                    .help("Shown with the Client ID of the same integration."),
                CredentialField::text("pix-key", "Pix key")
                    .help("A Pix key of the Inter account that receives the payments."),
                CredentialField::client_certificate("certificate", "Certificate (.crt)")
                    .help("The integration's certificate file (Inter_API_Certificado.crt)."),
                CredentialField::client_private_key("private-key", "Private key (.key)")
                    .help("The integration's key file (Inter_API_Chave.key)."),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://cdpj-sandbox.partners.uatinter.co",
                "https://cdpj.partners.bancointer.com.br",
            )],
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: central_bank::capabilities(),
        }
    }

    fn facts(_: &Context) -> &'static CentralBankPsp {
        &INTER
    }
}

export!(Inter);

#[cfg(test)]
mod tests {
    use super::*;
    use pixgw_plugin_sdk::host::fake::FakeHost;

    #[test]
    fn token_in_the_form_body_and_removed_spelled_the_inter_way() {
        let ctx = Context::new(Environment::Test)
            .with_field("client-id", "id")
            .with_field("client-secret", "secret")
            .with_endpoint("api", "https://cdpj-sandbox.partners.uatinter.co");
        let host = FakeHost::new();
        host.reply(200, r#"{"access_token":"t","expires_in":3600}"#)
            .reply(200, r#"{"txid":"abcdefghijklmnopqrstuvwxyz1","status":"REMOVIDO_PELO_USUARIO_RECEBEDOR","valor":{"original":"1.00"}}"#);
        let charge = Inter::query(&host, &ctx, "abcdefghijklmnopqrstuvwxyz1", None).unwrap();
        assert_eq!(charge.status, ChargeStatus::Canceled);
        let sent = host.sent();
        assert_eq!(
            sent[0].url,
            "https://cdpj-sandbox.partners.uatinter.co/oauth/v2/token"
        );
        assert_eq!(sent[0].header_value("authorization"), None);
        assert_eq!(
            String::from_utf8_lossy(&sent[0].body),
            "grant_type=client_credentials&scope=cob.write+cob.read+pix.read+webhook.write+webhook.read&client_id=id&client_secret=secret"
        );
        assert_eq!(
            sent[1].url,
            "https://cdpj-sandbox.partners.uatinter.co/pix/v2/cob/abcdefghijklmnopqrstuvwxyz1"
        );
        assert!(sent.iter().all(|r| r.mtls));
    }
}
