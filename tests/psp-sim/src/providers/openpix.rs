//! OpenPix (Woovi) charges API.
//!
//! - Every call carries `Authorization: <AppID>`, the AppID alone (no scheme).
//! - `POST /api/v1/charge` `{correlationID, value (centavos), comment?, customer?{name, taxID?,
//!   email?, phone?}, expiresIn?}` → 200 `{charge, correlationID, brCode}`; a correlationID
//!   already used answers the existing charge (with or without `?return_existing=true`).
//! - `GET /api/v1/charge/{id}` (correlationID or globalID) → `{charge}`; statuses `ACTIVE`,
//!   `COMPLETED`, `EXPIRED`.
//! - `DELETE /api/v1/charge/{id}` → `{status:"OK", id}` for an `ACTIVE` charge, which is gone
//!   afterwards.
//! - Errors `{"error": "<Portuguese message>"}`.
//! - Notifications go to the URL set with `/_sim/config {"webhook_url"}` (OpenPix's are set in
//!   its dashboard), signed: `x-webhook-signature` = base64 RSA-SHA256 (PKCS#1 v1.5) of the raw
//!   body, with a key pair generated once per process; the public key PEM is the test account's
//!   `webhook-public-key`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use parking_lot::Mutex;
use rsa::pkcs8::EncodePublicKey;
use rsa::signature::{SignatureEncoding, Signer};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::central_bank::{cnpj_valid, cpf_valid};
use crate::server::ConnKill;
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex, rfc3339,
};

/// OpenPix's default expiry: one month.
const DEFAULT_EXPIRES_IN: i64 = 30 * 86_400;
/// Answer to a missing or wrong AppID (unverified wording).
pub const INVALID_APP_ID: &str = "appID inválido";
const NOT_FOUND: &str = "Cobrança não encontrada";
/// The ISPB of the bank behind OpenPix's Pix accounts in the simulator's endToEndIds.
const ISPB: &str = "54811417";

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    let (signing_key, public_key_pem) = keys()?;
    let app_id = base64::engine::general_purpose::STANDARD.encode(format!(
        "Client_Id_{}:Client_Secret_{}",
        uuid::Uuid::new_v4(),
        random_alnum(40)
    ));
    Ok(Arc::new(OpenPix {
        common,
        app_id,
        signing_key,
        public_key_pem,
        store: Mutex::default(),
    }))
}

/// One RSA-2048 key pair per process: generating one costs a noticeable fraction of a second
/// and every simulator start builds every provider.
fn keys() -> anyhow::Result<(rsa::pkcs1v15::SigningKey<sha2::Sha256>, String)> {
    static KEY: OnceLock<Result<(rsa::RsaPrivateKey, String), String>> = OnceLock::new();
    let generated = KEY.get_or_init(|| {
        let private =
            rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).map_err(|e| e.to_string())?;
        let pem = private
            .to_public_key()
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .map_err(|e| e.to_string())?;
        Ok((private, pem))
    });
    let (private, pem) = generated
        .as_ref()
        .map_err(|e| anyhow::anyhow!("RSA key generation: {e}"))?;
    Ok((rsa::pkcs1v15::SigningKey::new(private.clone()), pem.clone()))
}

struct OpenPix {
    common: Arc<Common>,
    app_id: String,
    signing_key: rsa::pkcs1v15::SigningKey<sha2::Sha256>,
    public_key_pem: String,
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    charges: Vec<Charge>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Active,
    Completed,
    Expired,
    /// Removed with `DELETE`: unknown to the API from then on.
    Deleted,
}

struct Charge {
    correlation_id: String,
    global_id: String,
    transaction_id: String,
    payment_link_id: String,
    value: u64,
    comment: Option<String>,
    customer: Value,
    expires_in: i64,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    br_code: String,
    status: Status,
    paid_at: Option<OffsetDateTime>,
    end_to_end_id: Option<String>,
}

impl Charge {
    fn expires_at(&self) -> OffsetDateTime {
        self.created_at + time::Duration::seconds(self.expires_in)
    }

    /// The status the API reports: an `ACTIVE` charge past its expiry is `EXPIRED`.
    fn status(&self) -> Status {
        if self.status == Status::Active && self.expires_at() <= OffsetDateTime::now_utc() {
            Status::Expired
        } else {
            self.status
        }
    }

    fn status_str(&self) -> &'static str {
        match self.status() {
            Status::Active => "ACTIVE",
            Status::Completed => "COMPLETED",
            Status::Expired => "EXPIRED",
            Status::Deleted => "DELETED",
        }
    }

    fn matches(&self, id: &str) -> bool {
        self.correlation_id == id || self.global_id == id
    }

    fn to_json(&self) -> Value {
        let image = format!(
            "https://api.woovi-sandbox.com/openpix/charge/brcode/image/{}.png",
            self.payment_link_id
        );
        let mut pix_method = json!({
            "method": "PIX_COB",
            "txId": self.transaction_id,
            "value": self.value,
            "status": self.status_str(),
            "fee": 0,
            "brCode": self.br_code,
            "transactionID": self.transaction_id,
            "identifier": self.transaction_id,
            "qrCodeImage": image,
        });
        if let Some(e2e) = &self.end_to_end_id {
            pix_method["endToEndId"] = json!(e2e);
        }
        let mut charge = json!({
            "status": self.status_str(),
            "customer": self.customer,
            "value": self.value,
            "comment": self.comment,
            "correlationID": self.correlation_id,
            "paymentLinkID": self.payment_link_id,
            "paymentLinkUrl": format!("https://woovi-sandbox.com/pay/{}", self.payment_link_id),
            "globalID": self.global_id,
            "transactionID": self.transaction_id,
            "identifier": self.transaction_id,
            "qrCodeImage": image,
            "brCode": self.br_code,
            "type": "DYNAMIC",
            "expiresIn": self.expires_in,
            "expiresDate": rfc3339(self.expires_at()),
            "createdAt": rfc3339(self.created_at),
            "updatedAt": rfc3339(self.updated_at),
            "paymentMethods": { "pix": pix_method },
        });
        if let Some(paid_at) = self.paid_at {
            charge["paidAt"] = json!(rfc3339(paid_at));
        }
        charge
    }

    fn sim_view(&self) -> Value {
        json!({
            "reference": self.correlation_id,
            "psp_id": self.correlation_id,
            "amount": self.value,
            "status": self.status_str(),
            "expired": self.status() == Status::Expired,
            "psp": self.to_json(),
        })
    }
}

/// OpenPix's error answer: `{"error": "<message>"}`.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({ "error": self.1 }))).into_response()
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError(status, message.into())
}

fn bad_request(message: impl Into<String>) -> ApiError {
    error(StatusCode::BAD_REQUEST, message)
}

impl OpenPix {
    /// The AppID exactly: `Bearer <AppID>` or anything else is refused.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let presented = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if presented == Some(self.app_id.as_str()) {
            Ok(())
        } else {
            Err(error(StatusCode::UNAUTHORIZED, INVALID_APP_ID))
        }
    }

    fn sign(&self, body: &[u8]) -> String {
        let signature = self.signing_key.sign(body);
        base64::engine::general_purpose::STANDARD.encode(signature.to_bytes())
    }

    fn find<'a>(
        charges: &'a mut [Charge],
        sel: &ChargeSelector,
    ) -> Result<&'a mut Charge, ControlError> {
        let id = sel
            .psp_id
            .as_deref()
            .or(sel.reference.as_deref())
            .ok_or_else(|| ControlError::BadRequest("give `reference` or `psp_id`".into()))?;
        charges
            .iter_mut()
            .find(|c| c.matches(id))
            .ok_or_else(|| ControlError::NotFound(format!("no OpenPix charge {id}")))
    }
}

/// A validated `POST /api/v1/charge` body.
struct ChargeRequest {
    correlation_id: String,
    value: u64,
    comment: Option<String>,
    customer: Value,
    expires_in: i64,
}

fn parse_charge(headers: &HeaderMap, body: &[u8]) -> Result<ChargeRequest, ApiError> {
    let json_content = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    let obj: Map<String, Value> = match serde_json::from_slice(body) {
        Ok(Value::Object(obj)) if json_content => obj,
        _ => {
            return Err(bad_request(
                "Corpo da requisição inválido: envie um objeto JSON",
            ));
        }
    };
    let correlation_id = match obj.get("correlationID") {
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 100 => s.clone(),
        _ => return Err(bad_request("correlationID é obrigatório")),
    };
    let value = match obj.get("value") {
        Some(v) if v.is_u64() && v.as_u64().is_some_and(|n| n > 0) => v.as_u64().unwrap_or(0),
        _ => {
            return Err(bad_request(
                "value deve ser um número inteiro de centavos maior que zero",
            ));
        }
    };
    let comment = match obj.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() <= 140 => Some(s.clone()),
        Some(_) => return Err(bad_request("comment deve ter até 140 caracteres")),
    };
    let customer = match obj.get("customer") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(c)) => {
            let text = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
            };
            if text("name").is_none() {
                return Err(bad_request("Nome do cliente é obrigatório"));
            }
            if text("taxID").is_none() && text("email").is_none() && text("phone").is_none() {
                return Err(bad_request(
                    "Cliente deve ter taxID, email ou telefone além do nome",
                ));
            }
            if let Some(tax_id) = text("taxID") {
                let digits: String = tax_id.chars().filter(char::is_ascii_alphanumeric).collect();
                if !cpf_valid(&digits) && !cnpj_valid(&digits) {
                    return Err(bad_request("CPF/CNPJ do cliente inválido"));
                }
            }
            if text("email").is_some_and(|e| !e.contains('@')) {
                return Err(bad_request("Email do cliente inválido"));
            }
            Value::Object(c.clone())
        }
        Some(_) => return Err(bad_request("customer deve ser um objeto")),
    };
    let expires_in = match obj.get("expiresIn") {
        None | Some(Value::Null) => DEFAULT_EXPIRES_IN,
        Some(v) => match v.as_i64().filter(|&n| n > 0 && v.is_u64()) {
            Some(n) => n,
            None => {
                return Err(bad_request(
                    "expiresIn deve ser um número inteiro de segundos",
                ));
            }
        },
    };
    Ok(ChargeRequest {
        correlation_id,
        value,
        comment,
        customer,
        expires_in,
    })
}

fn end_to_end_id() -> String {
    let now = OffsetDateTime::now_utc();
    format!(
        "E{ISPB}{:04}{:02}{:02}{:02}{:02}{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        random_alnum(11)
    )
}

// ---- HTTP handlers ----

type Op = State<Arc<OpenPix>>;

async fn create_charge(
    State(op): Op,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let created = (|| {
        op.authorize(&headers)?;
        let request = parse_charge(&headers, &body)?;
        let mut store = op.store.lock();
        // correlationID makes creation idempotent: the charge that exists is the answer.
        if let Some(existing) = store
            .charges
            .iter()
            .find(|c| c.correlation_id == request.correlation_id)
        {
            return Ok(existing.to_json());
        }
        let payment_link_id = uuid::Uuid::new_v4().to_string();
        let location = format!("pix.woovi.sim.localhost/qr/v2/{}", random_hex(32));
        let br_code = crate::brcode::Dynamic {
            location: &location,
            amount: &format!("{}.{:02}", request.value / 100, request.value % 100),
            merchant_name: "PIXGW TESTE OPENPIX",
            merchant_city: "SAO PAULO",
        }
        .encode();
        let now = OffsetDateTime::now_utc();
        let charge = Charge {
            global_id: base64::engine::general_purpose::STANDARD
                .encode(format!("Charge:{}", random_hex(24))),
            transaction_id: random_hex(32),
            correlation_id: request.correlation_id,
            payment_link_id,
            value: request.value,
            comment: request.comment,
            customer: request.customer,
            expires_in: request.expires_in,
            created_at: now,
            updated_at: now,
            br_code,
            status: Status::Active,
            paid_at: None,
            end_to_end_id: None,
        };
        let json = charge.to_json();
        store.charges.push(charge);
        Ok::<_, ApiError>(json)
    })();
    match created {
        Ok(charge) => {
            if op.common.faults.lock().take_drop_after_create() {
                op.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                std::future::pending::<()>().await;
            }
            let body = json!({
                "correlationID": charge["correlationID"],
                "brCode": charge["brCode"],
                "charge": charge,
            });
            axum::Json(body).into_response()
        }
        Err(err) => err.into_response(),
    }
}

async fn get_charge(State(op): Op, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(err) = op.authorize(&headers) {
        return err.into_response();
    }
    let store = op.store.lock();
    match store
        .charges
        .iter()
        .find(|c| c.matches(&id) && c.status != Status::Deleted)
    {
        Some(charge) => axum::Json(json!({ "charge": charge.to_json() })).into_response(),
        None => error(StatusCode::NOT_FOUND, NOT_FOUND).into_response(),
    }
}

async fn delete_charge(State(op): Op, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(err) = op.authorize(&headers) {
        return err.into_response();
    }
    let mut store = op.store.lock();
    let Some(charge) = store
        .charges
        .iter_mut()
        .find(|c| c.matches(&id) && c.status != Status::Deleted)
    else {
        return error(StatusCode::NOT_FOUND, NOT_FOUND).into_response();
    };
    if charge.status() != Status::Active {
        return bad_request("Somente cobranças ativas podem ser removidas").into_response();
    }
    charge.status = Status::Deleted;
    charge.updated_at = OffsetDateTime::now_utc();
    axum::Json(json!({ "status": "OK", "id": id })).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "Rota não encontrada").into_response()
}

impl Psp for OpenPix {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app-id".to_string(), self.app_id.clone()),
            (
                "webhook-public-key".to_string(),
                self.public_key_pem.clone(),
            ),
        ])
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            .route("/api/v1/charge", post(create_charge))
            .route("/api/v1/charge/{id}", get(get_charge).delete(delete_charge))
            .fallback(not_found)
            .with_state(self);
        vec![EndpointSpec {
            name: "api",
            router,
            mtls: false,
            live: false,
        }]
    }

    fn generic_error(&self, status: StatusCode) -> Response {
        error(status, "Erro interno, tente novamente mais tarde").into_response()
    }

    fn charges(&self) -> Vec<Value> {
        self.store
            .lock()
            .charges
            .iter()
            .map(Charge::sim_view)
            .collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        self.common
            .config
            .lock()
            .webhook_url
            .iter()
            .map(|url| json!({ "url": url, "events": ["OPENPIX:CHARGE_COMPLETED"] }))
            .collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let charge = Self::find(&mut store.charges, sel)?;
        if charge.status() != Status::Active {
            return Err(ControlError::Conflict(format!(
                "charge {} is {}, not ACTIVE",
                charge.correlation_id,
                charge.status_str()
            )));
        }
        let now = OffsetDateTime::now_utc();
        let e2e = end_to_end_id();
        charge.status = Status::Completed;
        charge.paid_at = Some(now);
        charge.updated_at = now;
        charge.end_to_end_id = Some(e2e.clone());
        let mut pix = json!({
            "charge": { "correlationID": charge.correlation_id },
            "time": rfc3339(now),
            "value": amount.unwrap_or(charge.value),
            "transactionID": charge.transaction_id,
            "endToEndId": e2e,
        });
        if let Some(info) = info_pagador {
            pix["infoPagador"] = json!(info);
        }
        let body = json!({
            "event": "OPENPIX:CHARGE_COMPLETED",
            "charge": charge.to_json(),
            "pix": pix,
            "company": { "name": "PIXGW TESTE OPENPIX" },
            "account": {},
        });
        // The delivery sends exactly `serde_json::to_vec(&body)`, so that is what is signed.
        let signature = self.sign(&serde_json::to_vec(&body).unwrap_or_default());
        // To the dashboard's URL, with the headers configured there, signed.
        let config = self.common.config.lock();
        let mut headers: Vec<(String, String)> =
            config.webhook_headers.clone().into_iter().collect();
        headers.push(("x-webhook-signature".into(), signature));
        let notifications = config
            .webhook_url
            .iter()
            .map(|url| Notification {
                url: url.clone(),
                headers: headers.clone(),
                body: body.clone(),
            })
            .collect();
        Ok(Payment {
            charge: charge.sim_view(),
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let charge = Self::find(&mut store.charges, sel)?;
        if charge.status() != Status::Active {
            return Err(ControlError::Conflict(format!(
                "charge {} is {}, not ACTIVE",
                charge.correlation_id,
                charge.status_str()
            )));
        }
        charge.status = Status::Expired;
        charge.updated_at = OffsetDateTime::now_utc();
        Ok(charge.sim_view())
    }

    fn reset(&self) {
        *self.store.lock() = Store::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::pkcs8::DecodePublicKey;
    use rsa::signature::Verifier;

    #[test]
    fn signatures_verify_with_the_published_key() {
        let (key, pem) = keys().unwrap();
        let signature = key.sign(b"{\"event\":\"x\"}");
        let public = rsa::RsaPublicKey::from_public_key_pem(&pem).unwrap();
        let verifier = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(public);
        assert!(verifier.verify(b"{\"event\":\"x\"}", &signature).is_ok());
        assert!(verifier.verify(b"{\"event\":\"y\"}", &signature).is_err());
    }
}
