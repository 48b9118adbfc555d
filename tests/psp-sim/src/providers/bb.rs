//! Banco do Brasil: the central-bank Pix API with BB's parameters.
//!
//! - OAuth on its own listener (endpoint `oauth`, BB's `oauth.bb.com.br`): `POST /oauth/token`,
//!   Basic client id:secret, form body `grant_type` and `scope` (required).
//! - Paths under `/pix/v2`; every API call needs the query parameter `gw-dev-app-key` = the
//!   account's developer application key (credential field `app-key`; 403 otherwise); create
//!   answers 201; a repeated txid is 400 with `codigo` `txid_duplicado`.
//! - Errors as `{"erros":[{"codigo","versao","mensagem","ocorrencia"}]}`.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::central_bank::{
    ApiError, ApiKey, CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn,
    KeyCarrier, KeyValue, Params, TokenBody, TokenRequest, WebhookShape, oauth_body,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "bb",
    // Banco do Brasil's ISPB.
    ispb: "00000000",
    api_prefix: "/pix/v2",
    revise_prefix: None,
    sandbox: None,
    token_listener: Some("oauth"),
    token_path: "/oauth/token",
    token_request: TokenRequest {
        body: TokenBody::Form,
        client_auth: ClientAuth::Basic,
        grant_type_in: GrantTypeIn::Body,
        scope_required: true,
    },
    invalid_client_message: "Credenciais do cliente inválidas ou inativas",
    api_key: Some(ApiKey {
        carrier: KeyCarrier::Query("gw-dev-app-key"),
        value: KeyValue::AppKey,
    }),
    scope: "cob.write cob.read pix.read webhook.write webhook.read",
    create_status: StatusCode::CREATED,
    post_cob: true,
    duplicate_status: StatusCode::BAD_REQUEST,
    removed_status: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::Object,
    location_template: "qrcodes.bb.sim.localhost/pix/v2/{id}",
    has_loc_qrcode: false,
    client_id_prefix: "",
    client_secret_prefix: "",
    merchant_name: "PIXGW TESTE BB",
    merchant_city: "SAO PAULO",
    fields: CredentialFields {
        client_id: "client-id",
        client_secret: "client-secret",
        pix_key: "pix-key",
        certificate: CertificateFields::Separate {
            certificate: "certificate",
            private_key: "private-key",
        },
        app_key: Some("app-key"),
    },
    error_body,
    token_error_body: oauth_body,
};

/// BB's error body: a list of `{codigo, versao, mensagem, ocorrencia}`. The `codigo` is the
/// error's snake-case name (BB's real codes are numbers this simulator does not know).
fn error_body(err: &ApiError) -> Response {
    let erro = json!({
        "codigo": err.name,
        "versao": "1",
        "mensagem": err.message,
        "ocorrencia": format!("SIM-{}", crate::random_hex(16)),
    });
    (err.status, axum::Json(json!({ "erros": [erro] }))).into_response()
}

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    debug_assert_eq!(common.id, PARAMS.id);
    Ok(CentralBank::new(&PARAMS, common)?)
}
