//! Banco Inter (PJ): the central-bank Pix API with Inter's parameters.
//!
//! - OAuth: `POST /oauth/v2/token`, form body with `client_id`, `client_secret`, `grant_type`
//!   and `scope` (required); a Basic header is refused.
//! - Paths under `/pix/v2`; create answers 201; removed charges spelled `REMOVIDO_…`.
//! - Notifications as a bare JSON array `[{…pix…}]`; errors as RFC 7807 problem+json.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::central_bank::{
    CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, Params, TokenBody,
    TokenRequest, WebhookShape, oauth_body, problem_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "inter",
    // Inter's ISPB.
    ispb: "00416968",
    api_prefix: "/pix/v2",
    revise_prefix: None,
    sandbox: None,
    token_listener: None,
    token_path: "/oauth/v2/token",
    token_request: TokenRequest {
        body: TokenBody::Form,
        client_auth: ClientAuth::Body,
        grant_type_in: GrantTypeIn::Body,
        scope_required: true,
    },
    invalid_client_message: "Credenciais do cliente inválidas ou inativas",
    api_key: None,
    scope: "cob.write cob.read pix.read webhook.write webhook.read",
    create_status: StatusCode::CREATED,
    post_cob: true,
    duplicate_status: StatusCode::CONFLICT,
    removed_status: "REMOVIDO_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::BareArray,
    location_template: "qrcodes.inter.sim.localhost/pix/v2/{id}",
    has_loc_qrcode: false,
    client_id_prefix: "",
    client_secret_prefix: "",
    merchant_name: "PIXGW TESTE INTER",
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
