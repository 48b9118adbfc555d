//! Santander: the central-bank Pix API with Santander's parameters.
//!
//! - OAuth: `POST /oauth/token?grant_type=client_credentials` (the grant type only in the
//!   query), form body `client_id`, `client_secret`; a Basic header is refused.
//! - Paths under `/api/v1`, but `PATCH /cob/{txid}` only under `/api/v2` (404 under v1); no
//!   `POST /cob` (create by `PUT` only); create answers 200; errors as RFC 7807 problem+json.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::central_bank::{
    CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, Params, TokenBody,
    TokenRequest, WebhookShape, oauth_body, problem_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "santander",
    // Santander's ISPB.
    ispb: "90400888",
    api_prefix: "/api/v1",
    // A charge is revised (canceled) under v2, everything else is under v1.
    revise_prefix: Some("/api/v2"),
    sandbox: None,
    token_listener: None,
    token_path: "/oauth/token",
    token_request: TokenRequest {
        body: TokenBody::Form,
        client_auth: ClientAuth::Body,
        grant_type_in: GrantTypeIn::Query,
        scope_required: false,
    },
    invalid_client_message: "Credenciais do cliente inválidas ou inativas",
    api_key: None,
    scope: "cob.write cob.read pix.read webhook.write webhook.read",
    create_status: StatusCode::OK,
    post_cob: false,
    duplicate_status: StatusCode::CONFLICT,
    removed_status: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::Object,
    location_template: "qrcodes.santander.sim.localhost/pix/v2/{id}",
    has_loc_qrcode: false,
    client_id_prefix: "",
    client_secret_prefix: "",
    merchant_name: "PIXGW TESTE SANTANDER",
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
