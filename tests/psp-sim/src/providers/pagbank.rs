//! PagBank (PagSeguro) Orders API: an order carrying one Pix QR code.
//!
//! - `POST /orders` with `Authorization: Bearer <token>`: `reference_id`, `customer{name?,
//!   email?, tax_id}` (the CPF/CNPJ is required), `items[]?`, `qr_codes[{amount{value},
//!   expiration_date?}]`, `notification_urls[]?` → 201 with the order (`ORDE_…`, `qr_codes[0]`
//!   `QRCO_…` with a BR Code `text` and `links`).
//! - `GET /orders/{id}`: an order is found by its id only. As in PagBank's public API there is
//!   no listing by `reference_id` (`GET /orders?…` is an unknown route, 404) and no
//!   idempotency key: a repeated `POST /orders` makes another order, whatever its headers.
//! - Errors `{"error_messages":[{"code","description","parameter_name"?}]}`.
//! - Payment adds a `PAID` charge to `charges[]` and POSTs the order to every notification URL
//!   with `x-authenticity-token` = SHA-256 hex of `<token>-<raw body>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use sha2::Digest;
use time::OffsetDateTime;

use crate::central_bank::{cnpj_valid, cpf_valid};
use crate::server::ConnKill;
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex,
};

/// PagSeguro Internet's ISPB, the start of its endToEndIds.
const ISPB: &str = "08561701";
/// Where the real sandbox serves QR images; the simulator does not serve them.
const QR_HOST: &str = "https://sandbox.api.pagseguro.com";
/// Expiry of a QR code sent without `expiration_date` (unverified).
const DEFAULT_EXPIRY_SECS: i64 = 86_400;
/// Answer to a missing or wrong bearer token, as PagBank words it.
pub const UNAUTHORIZED: &str = "Invalid credential. Review AUTHORIZATION header";

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    Ok(Arc::new(PagBank {
        common,
        token: format!("{}{}", uuid::Uuid::new_v4(), random_hex(64)),
        store: Mutex::default(),
    }))
}

struct PagBank {
    common: Arc<Common>,
    token: String,
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    orders: Vec<Order>,
}

struct Order {
    id: String,
    reference_id: String,
    created_at: OffsetDateTime,
    customer: Value,
    items: Value,
    qr_id: String,
    amount: u64,
    expires_at: OffsetDateTime,
    /// `expiration_date` as sent (PagBank echoes it), or as the simulator set it.
    expiration_date: String,
    text: String,
    notification_urls: Vec<String>,
    charges: Vec<Value>,
}

impl Order {
    fn paid(&self) -> bool {
        self.charges.iter().any(|c| c["status"] == "PAID")
    }

    fn expired(&self) -> bool {
        !self.paid() && self.expires_at <= OffsetDateTime::now_utc()
    }

    fn to_json(&self) -> Value {
        let qr = &self.qr_id;
        let mut order = json!({
            "id": self.id,
            "reference_id": self.reference_id,
            "created_at": brt(self.created_at),
            "customer": self.customer,
            "items": self.items,
            "qr_codes": [{
                "id": qr,
                "expiration_date": self.expiration_date,
                "amount": { "value": self.amount },
                "text": self.text,
                "arrangements": ["PIX"],
                "links": [
                    { "rel": "QRCODE.PNG", "href": format!("{QR_HOST}/qrcode/{qr}/png"), "media": "image/png", "type": "GET" },
                    { "rel": "QRCODE.BASE64", "href": format!("{QR_HOST}/qrcode/{qr}/base64"), "media": "text/plain", "type": "GET" },
                ],
            }],
            "notification_urls": self.notification_urls,
            "links": [
                { "rel": "SELF", "href": format!("{QR_HOST}/orders/{}", self.id), "media": "application/json", "type": "GET" },
                { "rel": "PAY", "href": format!("{QR_HOST}/orders/{}/pay", self.id), "media": "application/json", "type": "POST" },
            ],
        });
        if !self.charges.is_empty() {
            order["charges"] = json!(self.charges);
        }
        order
    }

    fn sim_view(&self) -> Value {
        let status = if self.paid() {
            "PAID"
        } else if self.expired() {
            "EXPIRED"
        } else {
            "WAITING"
        };
        json!({
            "reference": self.reference_id,
            "psp_id": self.id,
            "amount": self.amount,
            "status": status,
            "expired": self.expired(),
            "psp": self.to_json(),
        })
    }
}

/// A PagBank error: one entry of `error_messages`.
struct ApiError {
    status: StatusCode,
    code: &'static str,
    description: String,
    parameter: Option<String>,
}

impl ApiError {
    fn unauthorized() -> Self {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            code: "UNAUTHORIZED",
            description: UNAUTHORIZED.into(),
            parameter: None,
        }
    }

    fn required(parameter: &str) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "40001",
            description: "required_parameter".into(),
            parameter: Some(parameter.into()),
        }
    }

    fn invalid(parameter: &str) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "40002",
            description: "invalid_parameter".into(),
            parameter: Some(parameter.into()),
        }
    }

    fn not_found() -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            code: "NOT_FOUND",
            description: "resource_not_found".into(),
            parameter: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut message = json!({ "code": self.code, "description": self.description });
        if let Some(p) = self.parameter {
            message["parameter_name"] = json!(p);
        }
        (
            self.status,
            axum::Json(json!({ "error_messages": [message] })),
        )
            .into_response()
    }
}

/// RFC 3339 in Brasília time (`2026-01-02T03:04:05.678-03:00`), as PagBank writes times.
fn brt(t: OffsetDateTime) -> String {
    let offset = time::UtcOffset::from_hms(-3, 0, 0).expect("valid offset");
    let t = t
        .to_offset(offset)
        .replace_nanosecond(t.millisecond() as u32 * 1_000_000)
        .unwrap_or(t);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn sha256_hex(data: &[u8]) -> String {
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `E` + ISPB + `yyyyMMddHHmm` + 11 alphanumerics.
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

fn upper_hex_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().hyphenated()).to_uppercase()
}

impl PagBank {
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let presented = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match presented {
            Some(token) if token.trim() == self.token => Ok(()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    fn find<'a>(
        orders: &'a mut [Order],
        sel: &ChargeSelector,
    ) -> Result<&'a mut Order, ControlError> {
        let found = match (&sel.psp_id, &sel.reference) {
            (Some(id), _) => orders.iter_mut().find(|o| &o.id == id),
            (None, Some(reference)) => orders
                .iter_mut()
                .rev()
                .find(|o| &o.reference_id == reference),
            (None, None) => {
                return Err(ControlError::BadRequest(
                    "give `reference` or `psp_id`".into(),
                ));
            }
        };
        found.ok_or_else(|| ControlError::NotFound("no such PagBank order".into()))
    }
}

/// A validated `POST /orders` body.
struct OrderRequest {
    reference_id: String,
    customer: Value,
    items: Value,
    amount: u64,
    expires_at: OffsetDateTime,
    expiration_date: String,
    notification_urls: Vec<String>,
}

fn parse_order(headers: &HeaderMap, body: &[u8]) -> Result<OrderRequest, ApiError> {
    let json_content = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    let obj: Map<String, Value> = match serde_json::from_slice(body) {
        Ok(Value::Object(obj)) if json_content => obj,
        _ => {
            return Err(ApiError {
                status: StatusCode::BAD_REQUEST,
                code: "40000",
                description: "invalid_request_body".into(),
                parameter: None,
            });
        }
    };
    let text = |v: Option<&Value>, name: &str, max: usize| -> Result<Option<String>, ApiError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= max => {
                Ok(Some(s.clone()))
            }
            Some(_) => Err(ApiError::invalid(name)),
        }
    };
    // Integer centavos: `10.5`, `"1050"` and `0` are refused.
    let centavos = |v: Option<&Value>, name: &str| -> Result<u64, ApiError> {
        match v {
            None => Err(ApiError::required(name)),
            Some(v) => v
                .as_u64()
                .filter(|&n| n > 0 && v.is_u64())
                .ok_or_else(|| ApiError::invalid(name)),
        }
    };

    let reference_id = text(obj.get("reference_id"), "reference_id", 64)?
        .ok_or_else(|| ApiError::required("reference_id"))?;

    let customer = match obj.get("customer") {
        Some(Value::Object(c)) => c,
        None => return Err(ApiError::required("customer")),
        Some(_) => return Err(ApiError::invalid("customer")),
    };
    text(customer.get("name"), "customer.name", 200)?;
    if let Some(email) = text(customer.get("email"), "customer.email", 255)?
        && !email
            .split_once('@')
            .is_some_and(|(user, domain)| !user.is_empty() && domain.contains('.'))
    {
        return Err(ApiError::invalid("customer.email"));
    }
    match customer.get("tax_id") {
        None | Some(Value::Null) => return Err(ApiError::required("customer.tax_id")),
        Some(Value::String(s)) if cpf_valid(s) || cnpj_valid(s) => {}
        Some(_) => return Err(ApiError::invalid("customer.tax_id")),
    }

    let items = match obj.get("items") {
        None => json!([]),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = |field: &str| format!("items[{i}].{field}");
                text(item.get("name"), &at("name"), 100)?
                    .ok_or_else(|| ApiError::required(&at("name")))?;
                centavos(item.get("quantity"), &at("quantity"))?;
                centavos(item.get("unit_amount"), &at("unit_amount"))?;
            }
            Value::Array(items.clone())
        }
        Some(_) => return Err(ApiError::invalid("items")),
    };

    let qr = match obj.get("qr_codes") {
        Some(Value::Array(list)) if list.len() == 1 => &list[0],
        None => return Err(ApiError::required("qr_codes")),
        Some(_) => return Err(ApiError::invalid("qr_codes")),
    };
    let amount = centavos(
        qr.get("amount").and_then(|a| a.get("value")),
        "qr_codes[0].amount.value",
    )?;
    let now = OffsetDateTime::now_utc();
    let (expires_at, expiration_date) = match qr.get("expiration_date") {
        None => {
            let at = now + time::Duration::seconds(DEFAULT_EXPIRY_SECS);
            (at, brt(at))
        }
        Some(v) => {
            let text = v.as_str().unwrap_or_default();
            match OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339) {
                Ok(at) if at > now => (at, text.to_string()),
                _ => return Err(ApiError::invalid("qr_codes[0].expiration_date")),
            }
        }
    };

    let notification_urls = match obj.get("notification_urls") {
        None => Vec::new(),
        Some(Value::Array(urls)) => urls
            .iter()
            .map(|u| {
                u.as_str()
                    .filter(|u| {
                        reqwest::Url::parse(u).is_ok_and(|u| {
                            matches!(u.scheme(), "http" | "https") && u.host().is_some()
                        })
                    })
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::invalid("notification_urls"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::invalid("notification_urls")),
    };

    Ok(OrderRequest {
        reference_id,
        customer: Value::Object(customer.clone()),
        items,
        amount,
        expires_at,
        expiration_date,
        notification_urls,
    })
}

// ---- HTTP handlers ----

type Pb = State<Arc<PagBank>>;

async fn create_order(
    State(pb): Pb,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let created = (|| {
        pb.authorize(&headers)?;
        let mut store = pb.store.lock();
        let request = parse_order(&headers, &body)?;
        let location = format!(
            "pix.pagbank.sim.localhost/pix/v2/{}",
            uuid::Uuid::new_v4().hyphenated().to_string().to_uppercase()
        );
        let text = crate::brcode::Dynamic {
            location: &location,
            amount: &format!("{}.{:02}", request.amount / 100, request.amount % 100),
            merchant_name: "PIXGW TESTE PAGBANK",
            merchant_city: "SAO PAULO",
        }
        .encode();
        let order = Order {
            id: upper_hex_id("ORDE_"),
            reference_id: request.reference_id,
            created_at: OffsetDateTime::now_utc(),
            customer: request.customer,
            items: request.items,
            qr_id: upper_hex_id("QRCO_"),
            amount: request.amount,
            expires_at: request.expires_at,
            expiration_date: request.expiration_date,
            text,
            notification_urls: request.notification_urls,
            charges: Vec::new(),
        };
        let json = order.to_json();
        store.orders.push(order);
        Ok::<_, ApiError>(json)
    })();
    match created {
        Ok(json) => {
            if pb.common.faults.lock().take_drop_after_create() {
                pb.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                std::future::pending::<()>().await;
            }
            (StatusCode::CREATED, axum::Json(json)).into_response()
        }
        Err(err) => err.into_response(),
    }
}

async fn get_order(State(pb): Pb, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(err) = pb.authorize(&headers) {
        return err.into_response();
    }
    let store = pb.store.lock();
    match store.orders.iter().find(|o| o.id == id) {
        Some(order) => axum::Json(order.to_json()).into_response(),
        None => ApiError::not_found().into_response(),
    }
}

async fn not_found() -> Response {
    ApiError::not_found().into_response()
}

impl Psp for PagBank {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("token".to_string(), self.token.clone())])
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            // No listing of orders in PagBank's public API: a GET here is an unknown route.
            .route("/orders", post(create_order).get(not_found))
            .route("/orders/{id}", get(get_order))
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
        ApiError {
            status,
            code: if status == StatusCode::SERVICE_UNAVAILABLE {
                "SERVICE_UNAVAILABLE"
            } else {
                "INTERNAL_SERVER_ERROR"
            },
            description: "Service temporarily unavailable, try again later".into(),
            parameter: None,
        }
        .into_response()
    }

    fn charges(&self) -> Vec<Value> {
        self.store
            .lock()
            .orders
            .iter()
            .map(Order::sim_view)
            .collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        // Notification URLs travel with each order; nothing is registered account-wide.
        Vec::new()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        _info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let order = Self::find(&mut store.orders, sel)?;
        if order.paid() {
            return Err(ControlError::Conflict(format!(
                "order {} is paid",
                order.id
            )));
        }
        if order.expired() {
            return Err(ControlError::Conflict(format!(
                "order {} is expired",
                order.id
            )));
        }
        let paid = amount.unwrap_or(order.amount);
        let now = brt(OffsetDateTime::now_utc());
        order.charges.push(json!({
            "id": upper_hex_id("CHAR_"),
            "reference_id": order.reference_id,
            "status": "PAID",
            "created_at": now,
            "paid_at": now,
            "amount": {
                "value": paid,
                "currency": "BRL",
                "summary": { "total": paid, "paid": paid, "refunded": 0 },
            },
            "payment_response": { "code": "20000", "message": "SUCESSO" },
            "payment_method": {
                "type": "PIX",
                "pix": {
                    "notification_id": upper_hex_id("NTF_"),
                    "end_to_end_id": end_to_end_id(),
                    "holder": { "name": "PAGADOR TESTE", "tax_id": "***456789**" },
                },
            },
        }));
        let body = order.to_json();
        // The delivery sends exactly `serde_json::to_vec(&body)`, so that is what is hashed.
        let raw = serde_json::to_vec(&body).unwrap_or_default();
        let token = sha256_hex(&[self.token.as_bytes(), b"-", &raw].concat());
        let notifications = order
            .notification_urls
            .iter()
            .map(|url| Notification {
                url: url.clone(),
                headers: vec![("x-authenticity-token".into(), token.clone())],
                body: body.clone(),
            })
            .collect();
        Ok(Payment {
            charge: order.sim_view(),
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let order = Self::find(&mut store.orders, sel)?;
        if order.paid() {
            return Err(ControlError::Conflict(format!(
                "order {} is paid",
                order.id
            )));
        }
        // The QR code lapses: its expiration date moves into the past.
        let past = OffsetDateTime::now_utc() - time::Duration::seconds(1);
        order.expires_at = past;
        order.expiration_date = brt(past);
        Ok(order.sim_view())
    }

    fn reset(&self) {
        *self.store.lock() = Store::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brasilia_time_and_ids() {
        let t = OffsetDateTime::from_unix_timestamp(1_599_682_500).unwrap();
        assert_eq!(brt(t), "2020-09-09T17:15:00-03:00");
        let id = upper_hex_id("ORDE_");
        assert!(id.starts_with("ORDE_") && id.len() == 41, "{id}");
        assert_eq!(end_to_end_id().len(), 32);
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
