//! Itaú: the central-bank Pix API with Itaú's parameters.
//!
//! - Production: OAuth on its own listener (endpoint `oauth`, Itaú's `sts` host), `POST
//!   /api/oauth/token`, form body `grant_type`, `client_id`, `client_secret` (a Basic header is
//!   refused), over mTLS; paths under `/regulatorio-pix/v2`; every API call needs
//!   `x-itau-apikey` = the client id (403 otherwise).
//! - Homologation is the developer portal's sandbox: one listener **without mTLS** (the account
//!   has no certificate), token at `POST /api/oauth/jwt` on it, paths under
//!   `/itau-ep9-api-regulatorio-pix-v2-externo/v2`, no `x-itau-apikey` check.
//! - Create answers 201; errors as RFC 7807 problem+json.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::central_bank::{
    ApiKey, CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, KeyCarrier,
    KeyValue, Params, Sandbox, TokenBody, TokenRequest, WebhookShape, oauth_body, problem_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "itau",
    // Itaú's ISPB.
    ispb: "60701190",
    api_prefix: "/regulatorio-pix/v2",
    revise_prefix: None,
    sandbox: Some(Sandbox {
        api_prefix: "/itau-ep9-api-regulatorio-pix-v2-externo/v2",
        token_path: "/api/oauth/jwt",
        mtls: false,
        api_key: false,
    }),
    token_listener: Some("oauth"),
    token_path: "/api/oauth/token",
    token_request: TokenRequest {
        body: TokenBody::Form,
        client_auth: ClientAuth::Body,
        grant_type_in: GrantTypeIn::Body,
        scope_required: false,
    },
    invalid_client_message: "Credenciais do cliente inválidas ou inativas",
    api_key: Some(ApiKey {
        carrier: KeyCarrier::Header("x-itau-apikey"),
        value: KeyValue::ClientId,
    }),
    scope: "cob.write cob.read pix.read webhook.write webhook.read",
    create_status: StatusCode::CREATED,
    post_cob: true,
    duplicate_status: StatusCode::CONFLICT,
    removed_status: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::Object,
    location_template: "qrcodes.itau.sim.localhost/pix/v2/{id}",
    has_loc_qrcode: false,
    client_id_prefix: "",
    client_secret_prefix: "",
    merchant_name: "PIXGW TESTE ITAU",
    merchant_city: "SAO PAULO",
    fields: CredentialFields {
        client_id: "client-id",
        client_secret: "client-secret",
        pix_key: "pix-key",
        certificate: CertificateFields::Separate {
            certificate: "certificate",
            private_key: "private-key",
        },
        app_key: None,
    },
    error_body: problem_body,
    token_error_body: oauth_body,
};

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    debug_assert_eq!(common.id, PARAMS.id);
    Ok(CentralBank::new(&PARAMS, common)?)
}
