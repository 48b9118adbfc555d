//! Efí (formerly Gerencianet): the central-bank Pix API with Efí's parameters.
//!
//! - OAuth: `POST /oauth/token`, HTTP Basic client id:secret, JSON body
//!   `{"grant_type":"client_credentials"}`, over mTLS like every call.
//! - Paths straight under the base URL (`/v2/cob/{txid}`, ...), plus Efí's
//!   `GET /v2/loc/{id}/qrcode` returning `{qrcode, imagemQrcode}`.
//! - Errors as `{"nome": "...", "mensagem": "..."}`.
//! - Client ids `Client_Id_<40 hex>`, secrets `Client_Secret_<40 hex>`; the account's
//!   certificate is the `.p12` converted to one PEM (certificate then key), CN = client id.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::central_bank::{
    ApiError, CentralBank, CertificateFields, ClientAuth, CredentialFields, GrantTypeIn, Params,
    TokenBody, TokenRequest, WebhookShape,
};
use crate::{Common, Psp};

pub static PARAMS: Params = Params {
    id: "efi",
    // Efí Pay's ISPB.
    ispb: "09089356",
    api_prefix: "/v2",
    revise_prefix: None,
    sandbox: None,
    token_listener: None,
    token_path: "/oauth/token",
    token_request: TokenRequest {
        body: TokenBody::Json,
        client_auth: ClientAuth::Basic,
        grant_type_in: GrantTypeIn::Body,
        scope_required: false,
    },
    invalid_client_message: "Invalid or inactive credentials",
    api_key: None,
    scope: "cob.write cob.read pix.write pix.read webhook.write webhook.read payloadlocation.write payloadlocation.read",
    create_status: StatusCode::CREATED,
    post_cob: true,
    duplicate_status: StatusCode::BAD_REQUEST,
    removed_status: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    webhook_shape: WebhookShape::Object,
    location_template: "qrcodes-pix.efi.sim.localhost/v2/{id}",
    has_loc_qrcode: true,
    client_id_prefix: "Client_Id_",
    client_secret_prefix: "Client_Secret_",
    merchant_name: "PIXGW TESTE EFI",
    merchant_city: "SAO PAULO",
    fields: CredentialFields {
        client_id: "client-id",
        client_secret: "client-secret",
        pix_key: "pix-key",
        certificate: CertificateFields::Combined("certificate"),
        app_key: None,
    },
    error_body,
    token_error_body: error_body,
};

/// Efí's error body: `{"nome", "mensagem"}` with a snake-case Portuguese name.
fn error_body(err: &ApiError) -> Response {
    (
        err.status,
        axum::Json(json!({ "nome": err.name, "mensagem": err.message })),
    )
        .into_response()
}

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    debug_assert_eq!(common.id, PARAMS.id);
    Ok(CentralBank::new(&PARAMS, common)?)
}
