//! Itaú: the central-bank Pix API with Itaú's parameters.
//!
//! - OAuth on its own listener (endpoint `oauth`, Itaú's `sts` host): `POST /api/oauth/token`,
//!   form body `grant_type`, `client_id`, `client_secret`; a Basic header is refused.
//! - Paths under `/pix_recebimentos/v2`; every API call needs `x-itau-apikey` = the client id
//!   (403 otherwise); create answers 201; errors as RFC 7807 problem+json.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::central_bank::{
    ApiKey, CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, KeyCarrier,
    KeyValue, Params, TokenBody, TokenRequest, WebhookShape, oauth_body, problem_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "itau",
    // Itaú's ISPB.
    ispb: "60701190",
    api_prefix: "/pix_recebimentos/v2",
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
