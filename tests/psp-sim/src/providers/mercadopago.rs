//! Mercado Pago: the Payments API with `payment_method_id: "pix"`.
//!
//! - `POST /v1/payments` (JSON; `X-Idempotency-Key` mandatory: the same key with the same body
//!   answers the payment it first created, with another body 409), `GET /v1/payments/{id}`,
//!   `GET /v1/payments/search`
//!   (`external_reference`, `status`, `limit`, `offset`), `PUT /v1/payments/{id}`
//!   `{"status":"cancelled"}`.
//! - `Authorization: Bearer <access token>`; anything else is 401 `invalid access token`.
//!   Two accounts share the one host, as at Mercado Pago: a **test user** (the test
//!   environment's credentials; `GET /users/me` lists the tag `test_user`) and a **real seller**
//!   (`live_credentials`; no such tag). Test and live differ only by whose token it is, so the
//!   adapter must ask `GET /users/me`; each payment records which account made it (`psp_live` in
//!   `/_sim/charges`).
//! - Errors `{"message","error","status","cause":[{"code","description"}]}`.
//! - On every status change (paid, expired, cancelled) a notification
//!   `POST <url>?data.id=<id>&type=payment` with `{"action":"payment.updated","data":{"id"},…}`
//!   and `x-request-id` goes to the payment's `notification_url`, **unsigned** (the secret
//!   signature belongs to the webhook of "Your integrations"); a payment without one notifies
//!   the application's webhook (`/_sim/config {"webhook_url"}`), signed with `x-signature:
//!   ts=<ms>,v1=<hex HMAC-SHA256 of "id:<data.id>;request-id:<x-request-id>;ts:<ts>;">` under
//!   the account's webhook secret.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use hmac::Mac as _;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::server::ConnKill;
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex,
};

/// Mercado Pago's answers carry this offset (its servers' zone).
const MP_OFFSET: time::UtcOffset = match time::UtcOffset::from_hms(-4, 0, 0) {
    Ok(offset) => offset,
    Err(_) => panic!("valid offset"),
};
/// Pix payments expire after a day unless `date_of_expiration` says otherwise.
const DEFAULT_EXPIRATION: time::Duration = time::Duration::days(1);
const FIELDS: &[&str] = &[
    "transaction_amount",
    "description",
    "payment_method_id",
    "payer",
    "external_reference",
    "notification_url",
    "date_of_expiration",
    "metadata",
    "statement_descriptor",
];
const PAYER_FIELDS: &[&str] = &[
    "email",
    "first_name",
    "last_name",
    "identification",
    "entity_type",
    "type",
];

/// `{"message","error","status","cause":[…]}`.
#[derive(Debug)]
struct MpError {
    status: StatusCode,
    error: &'static str,
    message: String,
    cause: Option<u32>,
}

impl MpError {
    fn bad_request(cause: u32, message: impl Into<String>) -> Self {
        MpError {
            status: StatusCode::BAD_REQUEST,
            error: "bad_request",
            message: message.into(),
            cause: Some(cause),
        }
    }

    fn not_found() -> Self {
        MpError {
            status: StatusCode::NOT_FOUND,
            error: "not_found",
            message: "Payment not found".into(),
            cause: Some(2000),
        }
    }

    fn unauthorized(message: &str) -> Self {
        MpError {
            status: StatusCode::UNAUTHORIZED,
            error: "unauthorized",
            message: message.into(),
            cause: None,
        }
    }
}

impl IntoResponse for MpError {
    fn into_response(self) -> Response {
        let cause: Vec<Value> = self
            .cause
            .map(|code| json!({ "code": code, "description": self.message, "data": null }))
            .into_iter()
            .collect();
        let body = json!({
            "message": self.message,
            "error": self.error,
            "status": self.status.as_u16(),
            "cause": cause,
        });
        (self.status, axum::Json(body)).into_response()
    }
}

struct MpPayment {
    id: u64,
    json: Value,
    centavos: u64,
    expires: OffsetDateTime,
    expired: bool,
    /// Made with the real seller's token: real money, at the real Mercado Pago.
    live: bool,
}

impl MpPayment {
    fn status(&self) -> &str {
        self.json["status"].as_str().unwrap_or_default()
    }

    fn reference(&self) -> Option<&str> {
        self.json["external_reference"].as_str()
    }
}

#[derive(Default)]
struct Store {
    payments: Vec<MpPayment>,
    /// X-Idempotency-Key → payment id, and the body it came with.
    idempotency: HashMap<String, (u64, Value)>,
}

pub struct MercadoPago {
    common: Arc<Common>,
    /// The test user's token (test environment).
    access_token: String,
    /// The real seller's token (production).
    live_access_token: String,
    live_user_id: u64,
    webhook_secret: String,
    user_id: u64,
    client: reqwest::Client,
    next_id: std::sync::atomic::AtomicU64,
    store: Mutex<Store>,
}

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    use rand::Rng;
    let mut rng = rand::rng();
    let user_id: u64 = rng.random_range(100_000_000..1_000_000_000);
    let live_user_id: u64 = rng.random_range(100_000_000..1_000_000_000);
    // Test users' tokens start with APP_USR- like real ones: the prefix tells nothing.
    let token = |rng: &mut rand::rngs::ThreadRng, user: u64| -> anyhow::Result<String> {
        Ok(format!(
            "APP_USR-{}-{}-{}-{user}",
            rng.random_range(1_000_000_000_000_000u64..10_000_000_000_000_000),
            OffsetDateTime::now_utc()
                .format(time::macros::format_description!("[month][day][hour]"))?,
            random_hex(32),
        ))
    };
    let access_token = token(&mut rng, user_id)?;
    let live_access_token = token(&mut rng, live_user_id)?;
    Ok(Arc::new(MercadoPago {
        common,
        access_token,
        live_access_token,
        live_user_id,
        webhook_secret: random_hex(64),
        user_id,
        client: crate::delivery::client(),
        next_id: rng.random_range(80_000_000_000..90_000_000_000u64).into(),
        store: Mutex::default(),
    }))
}

/// `2026-11-22T09:00:00.000-04:00`: how Mercado Pago writes times.
fn mp_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(MP_OFFSET);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond(),
        "-04:00"
    )
}

fn hmac_hex(secret: &str, message: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// A JSON number of reais with at most two decimals, above zero, as centavos.
fn centavos(v: &Value) -> Option<u64> {
    let n = v.as_f64().filter(|n| *n > 0.0 && n.is_finite())?;
    let text = v.to_string();
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    (decimals <= 2 && !text.contains(['e', 'E'])).then(|| (n * 100.0).round() as u64)
}

/// 32 characters: `E`, Mercado Pago's ISPB (10573521), `yyyyMMddHHmm`, 11 alphanumerics.
fn end_to_end_id() -> String {
    let now = OffsetDateTime::now_utc();
    format!(
        "E10573521{:04}{:02}{:02}{:02}{:02}{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        random_alnum(11)
    )
}

/// A validated `POST /v1/payments` body.
struct NewPayment {
    centavos: u64,
    amount: Value,
    description: Option<String>,
    payer: Map<String, Value>,
    external_reference: Option<String>,
    notification_url: Option<String>,
    expires: OffsetDateTime,
}

fn parse_payment(body: &Map<String, Value>) -> Result<NewPayment, MpError> {
    let unknown = |names: Vec<&String>| {
        let list: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        MpError::bad_request(
            8,
            format!(
                "The name of the following parameters is wrong : [{}]",
                list.join(", ")
            ),
        )
    };
    let wrong: Vec<&String> = body
        .keys()
        .filter(|k| !FIELDS.contains(&k.as_str()))
        .collect();
    if !wrong.is_empty() {
        return Err(unknown(wrong));
    }
    let amount = body
        .get("transaction_amount")
        .cloned()
        .ok_or_else(|| MpError::bad_request(4019, "transaction_amount attribute can't be null"))?;
    let centavos = centavos(&amount).ok_or_else(|| {
        MpError::bad_request(
            4037,
            "Invalid transaction_amount: a positive number with at most two decimals",
        )
    })?;
    match body.get("payment_method_id").and_then(Value::as_str) {
        Some("pix") => {}
        Some(_) => {
            return Err(MpError::bad_request(
                4004,
                "Invalid payment_method_id: this account accepts pix only",
            ));
        }
        None => {
            return Err(MpError::bad_request(
                4003,
                "payment_method_id attribute can't be null",
            ));
        }
    }
    let payer = match body.get("payer") {
        Some(Value::Object(p)) => p.clone(),
        _ => {
            return Err(MpError::bad_request(
                4050,
                "payer.email must be a valid email",
            ));
        }
    };
    let wrong: Vec<&String> = payer
        .keys()
        .filter(|k| !PAYER_FIELDS.contains(&k.as_str()))
        .collect();
    if !wrong.is_empty() {
        return Err(unknown(wrong));
    }
    let email_ok = payer
        .get("email")
        .and_then(Value::as_str)
        .and_then(|e| e.split_once('@'))
        .is_some_and(|(user, domain)| !user.is_empty() && domain.contains('.'));
    if !email_ok {
        return Err(MpError::bad_request(
            4050,
            "payer.email must be a valid email",
        ));
    }
    if let Some(id) = payer.get("identification") {
        let kind = id.get("type").and_then(Value::as_str);
        let number = id.get("number").and_then(Value::as_str).unwrap_or_default();
        let valid = match kind {
            Some("CPF") => crate::central_bank::cpf_valid(number),
            Some("CNPJ") => crate::central_bank::cnpj_valid(number),
            _ => false,
        };
        if !valid {
            return Err(MpError::bad_request(
                2067,
                "Invalid user identification number",
            ));
        }
    }
    let text = |name: &str, max: usize| -> Result<Option<String>, MpError> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
            Some(_) => Err(MpError::bad_request(
                4000,
                format!("{name} must be a string of at most {max} characters"),
            )),
        }
    };
    let description = text("description", 600)?;
    let external_reference = text("external_reference", 256)?;
    let notification_url = text("notification_url", 500)?;
    if let Some(url) = &notification_url {
        let ok = reqwest::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            return Err(MpError::bad_request(
                4020,
                "notification_url attribute must be url valid",
            ));
        }
    }
    let now = OffsetDateTime::now_utc();
    let expires = match text("date_of_expiration", 64)? {
        None => now + DEFAULT_EXPIRATION,
        Some(s) => OffsetDateTime::parse(&s, &time::format_description::well_known::Rfc3339)
            .ok()
            .filter(|t| *t > now)
            .ok_or_else(|| {
                MpError::bad_request(
                    4053,
                    "date_of_expiration must be a future date in the format \
                     yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                )
            })?,
    };
    Ok(NewPayment {
        centavos,
        amount,
        description,
        payer,
        external_reference,
        notification_url,
        expires,
    })
}

impl MercadoPago {
    /// Whose token the request carries: `Ok(true)` for the real seller.
    fn authorize(&self, headers: &HeaderMap) -> Result<bool, MpError> {
        let token = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| MpError::unauthorized("Must provide your access_token to proceed"))?;
        if token == self.access_token {
            Ok(false)
        } else if token == self.live_access_token {
            Ok(true)
        } else {
            Err(MpError::unauthorized("invalid access token"))
        }
    }

    fn create(&self, new: NewPayment, live: bool) -> (u64, Value) {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = OffsetDateTime::now_utc();
        let location = format!(
            "pix.mercadopago.sim.localhost/qr/v2/{}",
            uuid::Uuid::new_v4().simple()
        );
        let code = crate::brcode::Dynamic {
            location: &location,
            amount: &format!("{}.{:02}", new.centavos / 100, new.centavos % 100),
            merchant_name: "PIXGW TESTE MERCADOPAGO",
            merchant_city: "OSASCO",
        }
        .encode();
        let image = crate::qr::png(&code)
            .map(|png| base64::engine::general_purpose::STANDARD.encode(png))
            .unwrap_or_default();
        let json = json!({
            "id": id,
            "date_created": mp_time(now),
            "date_approved": null,
            "date_last_updated": mp_time(now),
            "date_of_expiration": mp_time(new.expires),
            "money_release_date": null,
            "operation_type": "regular_payment",
            "payment_method_id": "pix",
            "payment_type_id": "bank_transfer",
            "status": "pending",
            "status_detail": "pending_waiting_transfer",
            "currency_id": "BRL",
            "description": new.description,
            "live_mode": false,
            "collector_id": self.user_id,
            "payer": new.payer,
            "metadata": {},
            "external_reference": new.external_reference,
            "transaction_amount": new.amount,
            "transaction_amount_refunded": 0,
            "transaction_details": {
                "net_received_amount": 0,
                "total_paid_amount": new.amount,
                "overpaid_amount": 0,
                "installment_amount": 0,
                "financial_institution": null,
                "transaction_id": null,
            },
            "notification_url": new.notification_url,
            "point_of_interaction": {
                "type": "OPENPLATFORM",
                "sub_type": null,
                "transaction_data": {
                    "qr_code": code,
                    "qr_code_base64": image,
                    "ticket_url": format!("https://www.mercadopago.com.br/payments/{id}/ticket?caller_id={}", self.user_id),
                    "transaction_id": null,
                    "e2e_id": null,
                },
            },
        });
        self.store.lock().payments.push(MpPayment {
            id,
            json: json.clone(),
            centavos: new.centavos,
            expires: new.expires,
            expired: false,
            live,
        });
        (id, json)
    }

    /// The `payment.updated` notification for `payment`: to its `notification_url`, unsigned,
    /// else to the application's webhook (a dashboard setting), signed; none without either.
    fn notification(&self, payment: &MpPayment) -> Vec<Notification> {
        let own = payment.json["notification_url"].as_str().map(str::to_owned);
        let (url, signed) = match own {
            Some(url) => (url, false),
            None => match self.common.config.lock().webhook_url.clone() {
                Some(url) => (url, true),
                None => return Vec::new(),
            },
        };
        let data_id = payment.id.to_string();
        let request_id = uuid::Uuid::new_v4().to_string();
        let mut headers = vec![("x-request-id".to_string(), request_id.clone())];
        if signed {
            let ts = OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
            let manifest = format!("id:{data_id};request-id:{request_id};ts:{ts};");
            let signature = hmac_hex(&self.webhook_secret, &manifest);
            headers.push(("x-signature".into(), format!("ts={ts},v1={signature}")));
        }
        let separator = if url.contains('?') { '&' } else { '?' };
        vec![Notification {
            url: format!("{url}{separator}data.id={data_id}&type=payment"),
            headers,
            body: json!({
                "action": "payment.updated",
                "api_version": "v1",
                "data": { "id": data_id },
                "date_created": mp_time(OffsetDateTime::now_utc()),
                "id": self.common.next_id() + 120_000_000_000,
                "live_mode": false,
                "type": "payment",
                "user_id": self.user_id.to_string(),
            }),
        }]
    }

    /// Sends notifications from a background task, honouring the webhook faults.
    fn deliver_later(&self, notifications: Vec<Notification>) {
        let (skip, duplicate) = {
            let f = self.common.faults.lock();
            (f.skip_webhooks, f.duplicate_webhooks)
        };
        if notifications.is_empty() || skip {
            return;
        }
        let (client, common) = (self.client.clone(), self.common.clone());
        tokio::spawn(async move {
            for n in &notifications {
                for _ in 0..(1 + u8::from(duplicate)) {
                    crate::delivery::deliver(&client, &common, n).await;
                }
            }
        });
    }

    fn find<'a>(
        payments: &'a mut [MpPayment],
        sel: &ChargeSelector,
    ) -> Result<&'a mut MpPayment, ControlError> {
        let found = match (&sel.psp_id, &sel.reference) {
            (Some(id), _) => payments.iter_mut().find(|p| p.id.to_string() == *id),
            (None, Some(r)) => payments
                .iter_mut()
                .find(|p| p.reference() == Some(r.as_str())),
            (None, None) => {
                return Err(ControlError::BadRequest(
                    "give `reference` or `psp_id`".into(),
                ));
            }
        };
        found.ok_or_else(|| ControlError::NotFound("no such payment".into()))
    }

    fn sim_view(p: &MpPayment) -> Value {
        json!({
            "reference": p.reference(),
            "psp_id": p.id.to_string(),
            "amount": p.centavos,
            "status": p.status(),
            "expired": p.expired,
            "psp": p.json,
            "psp_live": p.live,
        })
    }

    /// A pending payment past its `date_of_expiration` becomes `cancelled` / `expired`, as
    /// Mercado Pago does with unpaid Pix.
    fn lapse(p: &mut MpPayment) -> bool {
        if p.status() == "pending" && (p.expired || p.expires <= OffsetDateTime::now_utc()) {
            p.expired = true;
            p.json["status"] = json!("cancelled");
            p.json["status_detail"] = json!("expired");
            p.json["date_last_updated"] = json!(mp_time(OffsetDateTime::now_utc()));
            return true;
        }
        false
    }
}

// ---- HTTP handlers ----

type Mp = State<Arc<MercadoPago>>;

fn json_object(headers: &HeaderMap, body: &[u8]) -> Result<Map<String, Value>, MpError> {
    let is_json = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) if is_json => Ok(map),
        _ => Err(MpError::bad_request(
            1,
            "Params Error: the body must be a JSON object sent as application/json",
        )),
    }
}

async fn create_payment(
    State(mp): Mp,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| -> Result<(Value, bool), MpError> {
        let live = mp.authorize(&headers)?;
        let key = headers
            .get("x-idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| MpError {
                status: StatusCode::BAD_REQUEST,
                error: "bad_request",
                message: "Header X-Idempotency-Key can't be null".into(),
                cause: None,
            })?
            .to_string();
        let object = json_object(&headers, &body)?;
        {
            let store = mp.store.lock();
            if let Some((id, first)) = store.idempotency.get(&key)
                && let Some(p) = store.payments.iter().find(|p| p.id == *id)
            {
                if *first != Value::Object(object) {
                    return Err(MpError {
                        status: StatusCode::CONFLICT,
                        error: "conflict",
                        message: format!(
                            "X-Idempotency-Key {key} was already used with a different request body"
                        ),
                        cause: None,
                    });
                }
                return Ok((p.json.clone(), true));
            }
        }
        let new = parse_payment(&object)?;
        let (id, json) = mp.create(new, live);
        mp.store
            .lock()
            .idempotency
            .insert(key, (id, Value::Object(object)));
        Ok((json, false))
    })();
    match result {
        Ok((json, replayed)) => {
            if !replayed && mp.common.faults.lock().take_drop_after_create() {
                mp.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                // The connection is closing; never answer.
                std::future::pending::<()>().await;
            }
            (StatusCode::CREATED, axum::Json(json)).into_response()
        }
        Err(err) => err.into_response(),
    }
}

async fn get_payment(State(mp): Mp, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(err) = mp.authorize(&headers) {
        return err.into_response();
    }
    let (json, lapsed) = {
        let mut store = mp.store.lock();
        let Some(p) = store.payments.iter_mut().find(|p| p.id.to_string() == id) else {
            return MpError::not_found().into_response();
        };
        let lapsed = MercadoPago::lapse(p).then(|| mp.notification(p));
        (p.json.clone(), lapsed)
    };
    mp.deliver_later(lapsed.unwrap_or_default());
    axum::Json(json).into_response()
}

async fn search_payments(State(mp): Mp, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let result = (|| -> Result<Value, MpError> {
        mp.authorize(&headers)?;
        let params: HashMap<String, String> =
            serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
        let number = |name: &str, default: usize| -> Result<usize, MpError> {
            params.get(name).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| MpError::bad_request(4000, format!("Invalid {name}")))
            })
        };
        let (limit, offset) = (number("limit", 30)?.min(1000), number("offset", 0)?);
        let store = mp.store.lock();
        let matching: Vec<&MpPayment> = store
            .payments
            .iter()
            .filter(|p| {
                params
                    .get("external_reference")
                    .is_none_or(|r| p.reference() == Some(r.as_str()))
                    && params.get("status").is_none_or(|s| p.status() == s)
            })
            .collect();
        let results: Vec<Value> = matching
            .iter()
            .skip(offset)
            .take(limit)
            .map(|p| p.json.clone())
            .collect();
        Ok(json!({
            "paging": { "total": matching.len(), "limit": limit, "offset": offset },
            "results": results,
        }))
    })();
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => err.into_response(),
    }
}

/// `PUT /v1/payments/{id}`: only `{"status":"cancelled"}` of a pending payment is simulated.
async fn update_payment(
    State(mp): Mp,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| -> Result<(Value, Vec<Notification>), MpError> {
        mp.authorize(&headers)?;
        let body = json_object(&headers, &body)?;
        let wrong: Vec<&str> = body
            .keys()
            .filter(|k| *k != "status")
            .map(String::as_str)
            .collect();
        if !wrong.is_empty() {
            return Err(MpError::bad_request(
                8,
                format!(
                    "The name of the following parameters is wrong : [{}]",
                    wrong.join(", ")
                ),
            ));
        }
        if body.get("status").and_then(Value::as_str) != Some("cancelled") {
            return Err(MpError::bad_request(
                4000,
                "status can only be changed to cancelled",
            ));
        }
        let mut store = mp.store.lock();
        let p = store
            .payments
            .iter_mut()
            .find(|p| p.id.to_string() == id)
            .ok_or_else(MpError::not_found)?;
        MercadoPago::lapse(p);
        if !matches!(p.status(), "pending" | "in_process") {
            return Err(MpError::bad_request(
                4000,
                format!("Payment can't be cancelled: its status is {}", p.status()),
            ));
        }
        p.json["status"] = json!("cancelled");
        p.json["status_detail"] = json!("by_collector");
        p.json["date_last_updated"] = json!(mp_time(OffsetDateTime::now_utc()));
        Ok((p.json.clone(), mp.notification(p)))
    })();
    match result {
        Ok((json, notifications)) => {
            mp.deliver_later(notifications);
            axum::Json(json).into_response()
        }
        Err(err) => err.into_response(),
    }
}

/// `GET /users/me`: the account the token belongs to. Test users carry the tag `test_user`
/// (and a `test_user_…@testuser.com` e-mail); real sellers do not.
async fn users_me(State(mp): Mp, headers: HeaderMap) -> Response {
    let live = match mp.authorize(&headers) {
        Ok(live) => live,
        Err(err) => return err.into_response(),
    };
    let (id, tags) = if live {
        (mp.live_user_id, json!(["normal"]))
    } else {
        (mp.user_id, json!(["normal", "test_user"]))
    };
    let email = if live {
        format!("loja{id}@example.com.br")
    } else {
        format!("test_user_{id}@testuser.com")
    };
    axum::Json(json!({
        "id": id,
        "nickname": if live { format!("LOJA{id}") } else { format!("TESTUSER{id}") },
        "email": email,
        "site_id": "MLB",
        "country_id": "BR",
        "tags": tags,
        "status": {"site_status": "active"},
    }))
    .into_response()
}

async fn not_found() -> Response {
    MpError {
        status: StatusCode::NOT_FOUND,
        error: "not_found",
        message: "resource not found".into(),
        cause: None,
    }
    .into_response()
}

impl Psp for MercadoPago {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("access-token".to_string(), self.access_token.clone()),
            ("webhook-secret".to_string(), self.webhook_secret.clone()),
        ])
    }

    fn live_credentials(&self) -> Option<BTreeMap<String, String>> {
        Some(BTreeMap::from([(
            "access-token".to_string(),
            self.live_access_token.clone(),
        )]))
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            .route("/v1/payments", axum::routing::post(create_payment))
            .route("/v1/payments/search", get(search_payments))
            .route("/v1/payments/{id}", get(get_payment).put(update_payment))
            .route("/users/me", get(users_me))
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
        MpError {
            status,
            error: if status.is_server_error() {
                "internal_error"
            } else {
                "bad_request"
            },
            message: status
                .canonical_reason()
                .unwrap_or("internal error")
                .to_ascii_lowercase(),
            cause: None,
        }
        .into_response()
    }

    fn charges(&self) -> Vec<Value> {
        self.store
            .lock()
            .payments
            .iter()
            .map(Self::sim_view)
            .collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        // Notification URLs travel with each payment; the application's own webhook (set in
        // "Your integrations") is the only registration.
        let config = self.common.config.lock();
        config
            .webhook_url
            .iter()
            .map(|url| json!({"url": url, "signed": true}))
            .collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        _info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let p = Self::find(&mut store.payments, sel)?;
        Self::lapse(p);
        if p.status() != "pending" {
            return Err(ControlError::Conflict(format!(
                "payment {} is {} ({}), not pending",
                p.id,
                p.status(),
                p.json["status_detail"].as_str().unwrap_or_default()
            )));
        }
        if amount.is_some_and(|a| a != p.centavos) {
            return Err(ControlError::BadRequest(
                "a Pix payment at Mercado Pago pays exactly the transaction_amount".into(),
            ));
        }
        let now = mp_time(OffsetDateTime::now_utc());
        let json = &mut p.json;
        json["status"] = json!("approved");
        json["status_detail"] = json!("accredited");
        json["date_approved"] = json!(now);
        json["date_last_updated"] = json!(now);
        json["money_release_date"] = json!(now);
        json["transaction_details"]["net_received_amount"] = json["transaction_amount"].clone();
        json["point_of_interaction"]["transaction_data"]["e2e_id"] = json!(end_to_end_id());
        Ok(Payment {
            charge: Self::sim_view(p),
            notifications: self.notification(p),
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let p = Self::find(&mut store.payments, sel)?;
        if p.status() != "pending" {
            return Err(ControlError::Conflict(format!(
                "payment {} is {}, not pending",
                p.id,
                p.status()
            )));
        }
        p.expired = true;
        p.expires = OffsetDateTime::now_utc();
        p.json["date_of_expiration"] = json!(mp_time(p.expires));
        Self::lapse(p);
        let notifications = self.notification(p);
        let view = Self::sim_view(p);
        drop(store);
        self.deliver_later(notifications);
        Ok(view)
    }

    fn reset(&self) {
        *self.store.lock() = Store::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts() {
        assert_eq!(centavos(&json!(10.5)), Some(1050));
        assert_eq!(centavos(&json!(19.99)), Some(1999));
        assert_eq!(centavos(&json!(10)), Some(1000));
        assert_eq!(centavos(&json!(0.01)), Some(1));
        assert_eq!(centavos(&json!(10.001)), None);
        assert_eq!(centavos(&json!(0)), None);
        assert_eq!(centavos(&json!(-1)), None);
        assert_eq!(centavos(&json!("10.00")), None);
    }

    #[test]
    fn times_carry_milliseconds_and_the_offset() {
        let t = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        assert_eq!(mp_time(t), "2023-11-14T18:13:20.000-04:00");
    }
}
