//! Bradesco: the central-bank Pix API with Bradesco's parameters.
//!
//! - OAuth: `POST /oauth/token`, Basic client id:secret, form body `grant_type`.
//! - Paths under `/v2`; create answers 200; errors as RFC 7807 problem+json.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::central_bank::{
    CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, Params, TokenBody,
    TokenRequest, WebhookShape, oauth_body, problem_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "bradesco",
    // Bradesco's ISPB.
    ispb: "60746948",
    api_prefix: "/v2",
    revise_prefix: None,
    sandbox: None,
    token_listener: None,
    token_path: "/oauth/token",
    token_request: TokenRequest {
        body: TokenBody::Form,
        client_auth: ClientAuth::Basic,
        grant_type_in: GrantTypeIn::Body,
        scope_required: false,
    },
    invalid_client_message: "Credenciais do cliente inválidas ou inativas",
    api_key: None,
    scope: "cob.write cob.read pix.read webhook.write webhook.read",
    create_status: StatusCode::OK,
    post_cob: true,
    duplicate_status: StatusCode::CONFLICT,
    removed_status: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::Object,
    location_template: "qrcodes.bradesco.sim.localhost/pix/v2/{id}",
    has_loc_qrcode: false,
    client_id_prefix: "",
    client_secret_prefix: "",
    merchant_name: "PIXGW TESTE BRADESCO",
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
