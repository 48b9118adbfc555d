//! Asaas (API v3): customers, and `PIX` payments of a customer.
//!
//! - Every `/v3` call needs the header `access_token` = one of the account's keys (missing or
//!   wrong → 401) and a non-empty `User-Agent` (missing → 400), checked in that order. The
//!   account has a current sandbox key (`$aact_hmlg_…`) and one in the older format without
//!   an environment prefix (`$aact_<base64>`, `other_credentials.legacy`): both work.
//! - `POST /v3/customers` `{name, cpfCnpj}` (11-digit CPF or 14-character CNPJ, check digits
//!   verified) → `cus_…`; `GET /v3/customers?cpfCnpj=` lists them. Like Asaas, a second customer
//!   with the same document is accepted: avoiding duplicates is the client's business.
//! - `POST /v3/payments` `{customer, billingType:"PIX", value, dueDate, description?,
//!   externalReference?}` → `pay_…`, `PENDING`; the customer must exist first.
//!   `GET /v3/payments?externalReference=`, `GET /v3/payments/{id}`,
//!   `GET /v3/payments/{id}/pixQrCode` → `{encodedImage, payload, expirationDate}` (12 months
//!   after the due date, as Asaas documents), `DELETE /v3/payments/{id}` → `{deleted:true, id}`.
//! - `OVERDUE` (`/_sim/expire`: the due date passed) stays payable, as at Asaas: only a
//!   deleted payment cannot be paid.
//! - Errors `{"errors":[{"code","description"}]}`.
//! - `/_sim/pay` → `RECEIVED` and a `PAYMENT_RECEIVED` notification to the URL set with
//!   `/_sim/config {"webhook_url", "webhook_headers"}` (the merchant sets both in Asaas's
//!   dashboard; the headers carry `asaas-access-token`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use time::{Date, OffsetDateTime, UtcOffset};

use crate::central_bank::{cnpj_valid, cpf_valid};
use crate::server::ConnKill;
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex,
};

/// Answers to a missing or wrong key, and to a missing User-Agent (unverified wording).
pub const MISSING_KEY: &str =
    "O cabeçalho de autenticação 'access_token' é obrigatório e não foi encontrado na requisição";
pub const INVALID_KEY: &str = "A chave de API fornecida é inválida";
pub const MISSING_USER_AGENT: &str = "O header User-Agent é obrigatório.";
pub const UNKNOWN_CUSTOMER: &str = "Cliente inválido ou não informado.";
const MERCHANT_NAME: &str = "PIXGW TESTE ASAAS";
const MERCHANT_CITY: &str = "JOINVILLE";
const PAYMENT_FIELDS: &[&str] = &[
    "customer",
    "billingType",
    "value",
    "dueDate",
    "description",
    "externalReference",
    "daysAfterDueDateToRegistrationCancellation",
    "postalService",
];

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    Ok(Arc::new(Asaas {
        common,
        api_key: format!("$aact_hmlg_{}", random_alnum(64)),
        legacy_key: format!(
            "$aact_{}",
            base64::engine::general_purpose::STANDARD.encode(random_hex(48))
        ),
        store: Mutex::default(),
    }))
}

pub struct Asaas {
    common: Arc<Common>,
    api_key: String,
    /// A key from before the environment prefixes: `$aact_` and base64, no `hmlg_`/`prod_`.
    legacy_key: String,
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    customers: Vec<Customer>,
    payments: Vec<AsaasPayment>,
}

#[derive(Clone, Debug)]
struct Customer {
    id: String,
    name: String,
    cpf_cnpj: String,
    created: String,
}

impl Customer {
    fn to_json(&self) -> Value {
        json!({
            "object": "customer",
            "id": self.id,
            "dateCreated": self.created,
            "name": self.name,
            "email": null,
            "cpfCnpj": self.cpf_cnpj,
            "personType": if self.cpf_cnpj.len() == 11 { "FISICA" } else { "JURIDICA" },
            "deleted": false,
            "notificationDisabled": false,
        })
    }
}

#[derive(Clone, Debug)]
struct AsaasPayment {
    id: String,
    customer: String,
    value: u64,
    description: Option<String>,
    due_date: String,
    external_reference: Option<String>,
    status: &'static str,
    deleted: bool,
    created: String,
    payment_date: Option<String>,
    payload: String,
    /// Set by `/_sim/expire`.
    expired: bool,
}

impl AsaasPayment {
    fn to_json(&self) -> Value {
        json!({
            "object": "payment",
            "id": self.id,
            "dateCreated": self.created,
            "customer": self.customer,
            "value": number(self.value),
            "netValue": number(self.value.saturating_sub(99)),
            "originalValue": null,
            "description": self.description,
            "billingType": "PIX",
            "pixTransaction": null,
            "status": self.status,
            "dueDate": self.due_date,
            "originalDueDate": self.due_date,
            "paymentDate": self.payment_date,
            "clientPaymentDate": self.payment_date,
            "confirmedDate": self.payment_date,
            "invoiceUrl": format!("https://sandbox.asaas.sim.localhost/i/{}", &self.id[4..]),
            "externalReference": self.external_reference,
            "deleted": self.deleted,
            "anticipated": false,
            "postalService": false,
        })
    }
}

/// Centavos as Asaas's JSON number of reais (`19.9`).
fn number(cents: u64) -> Value {
    let text = format!("{}.{:02}", cents / 100, cents % 100);
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A JSON number of reais with at most two decimals, greater than zero, as centavos.
fn parse_value(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else { return None };
    let text = n.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    if frac.len() > 2 || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let cents = int.parse::<u64>().ok()? * 100 + format!("{frac:0<2}").parse::<u64>().ok()?;
    (cents > 0).then_some(cents)
}

fn today() -> Date {
    OffsetDateTime::now_utc()
        .to_offset(UtcOffset::from_hms(-3, 0, 0).expect("a valid offset"))
        .date()
}

/// The same day twelve months later (`2024-02-29` → `2025-02-28`): how long Asaas keeps a
/// payment's Pix QR code payable after its due date.
fn a_year_after(date: &str) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(date, &format)
        .ok()
        .and_then(|d| {
            Date::from_calendar_date(d.year() + 1, d.month(), d.day())
                .or_else(|_| Date::from_calendar_date(d.year() + 1, d.month(), d.day() - 1))
                .ok()
        })
        .map_or_else(|| date.to_owned(), date_text)
}

fn date_text(d: Date) -> String {
    d.format(time::macros::format_description!("[year]-[month]-[day]"))
        .unwrap_or_default()
}

fn error(status: StatusCode, code: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({ "errors": [{ "code": code, "description": description }] })),
    )
        .into_response()
}

/// A 400 in Asaas's shape, kept small until it becomes the response.
struct Refusal {
    code: &'static str,
    description: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error(StatusCode::BAD_REQUEST, self.code, &self.description)
    }
}

fn invalid(code: &'static str, description: &str) -> Refusal {
    Refusal {
        code,
        description: description.to_owned(),
    }
}

fn not_found(what: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("{what} não encontrado(a)."),
    )
}

/// A JSON object body, or Asaas's refusal.
fn json_object(headers: &HeaderMap, body: &[u8]) -> Result<Map<String, Value>, Refusal> {
    let json_content = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(obj)) if json_content => Ok(obj),
        _ => Err(invalid(
            "invalid_object",
            "O corpo da requisição deve ser um objeto JSON (Content-Type: application/json).",
        )),
    }
}

impl Asaas {
    fn sim_view(&self, p: &AsaasPayment) -> Value {
        json!({
            "reference": p.external_reference,
            "psp_id": p.id,
            "amount": p.value,
            "status": if p.deleted { "DELETED" } else { p.status },
            "expired": p.expired,
            "customer": p.customer,
            "psp": p.to_json(),
        })
    }

    fn find<'a>(
        payments: &'a mut [AsaasPayment],
        sel: &ChargeSelector,
    ) -> Result<&'a mut AsaasPayment, ControlError> {
        let found = match (&sel.psp_id, &sel.reference) {
            (Some(id), _) => payments.iter_mut().find(|p| &p.id == id),
            (None, Some(r)) => payments
                .iter_mut()
                .find(|p| p.external_reference.as_deref() == Some(r.as_str())),
            (None, None) => {
                return Err(ControlError::BadRequest(
                    "give `reference` or `psp_id`".into(),
                ));
            }
        };
        found.ok_or_else(|| ControlError::NotFound("no such payment".into()))
    }

    fn create_customer(&self, obj: &Map<String, Value>) -> Result<Value, Refusal> {
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid("invalid_name", "O nome do cliente deve ser informado."))?;
        let document = obj
            .get("cpfCnpj")
            .and_then(Value::as_str)
            .filter(|d| cpf_valid(d) || cnpj_valid(d))
            .ok_or_else(|| invalid("invalid_cpfCnpj", "O CPF/CNPJ informado é inválido."))?;
        let customer = Customer {
            id: format!("cus_{:012}", rand::random::<u64>() % 1_000_000_000_000),
            name: name.to_owned(),
            cpf_cnpj: document.to_owned(),
            created: date_text(today()),
        };
        let json = customer.to_json();
        self.store.lock().customers.push(customer);
        Ok(json)
    }

    fn create_payment(&self, obj: &Map<String, Value>) -> Result<Value, Refusal> {
        if let Some(unknown) = obj.keys().find(|k| !PAYMENT_FIELDS.contains(&k.as_str())) {
            return Err(invalid(
                "invalid_object",
                &format!("O parâmetro {unknown} não é suportado."),
            ));
        }
        let text = |key: &str| obj.get(key).and_then(Value::as_str);
        let customer = text("customer").unwrap_or_default().to_owned();
        if !self.store.lock().customers.iter().any(|c| c.id == customer) {
            return Err(invalid("invalid_customer", UNKNOWN_CUSTOMER));
        }
        match text("billingType") {
            Some("PIX") => {}
            None => {
                return Err(invalid(
                    "invalid_billingType",
                    "A forma de pagamento deve ser informada.",
                ));
            }
            Some(_) => {
                return Err(invalid(
                    "invalid_billingType",
                    "O simulador só aceita billingType PIX.",
                ));
            }
        }
        let value = obj.get("value").and_then(parse_value).ok_or_else(|| {
            invalid(
                "invalid_value",
                "O valor da cobrança deve ser um número maior que zero, com até duas casas decimais.",
            )
        })?;
        let format = time::macros::format_description!("[year]-[month]-[day]");
        let due = text("dueDate")
            .and_then(|d| Date::parse(d, &format).ok())
            .ok_or_else(|| invalid("invalid_dueDate", "A data de vencimento é inválida."))?;
        if due < today() {
            return Err(invalid(
                "invalid_dueDate",
                "Não é permitido data de vencimento inferior a hoje.",
            ));
        }
        let description = match obj.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) if d.chars().count() <= 500 => Some(d.clone()),
            Some(_) => {
                return Err(invalid(
                    "invalid_description",
                    "A descrição deve ter no máximo 500 caracteres.",
                ));
            }
        };
        let external_reference = match obj.get("externalReference") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) if r.chars().count() <= 100 => Some(r.clone()),
            Some(_) => {
                return Err(invalid(
                    "invalid_externalReference",
                    "A referência externa deve ter no máximo 100 caracteres.",
                ));
            }
        };
        let payment = AsaasPayment {
            id: format!("pay_{}", random_alnum(16).to_lowercase()),
            customer,
            value,
            description,
            due_date: date_text(due),
            external_reference,
            status: "PENDING",
            deleted: false,
            created: date_text(today()),
            payment_date: None,
            payload: crate::brcode::Dynamic {
                location: &format!("pix.asaas.sim.localhost/qr/cobv/{}", uuid::Uuid::new_v4()),
                amount: &format!("{}.{:02}", value / 100, value % 100),
                merchant_name: MERCHANT_NAME,
                merchant_city: MERCHANT_CITY,
            }
            .encode(),
            expired: false,
        };
        let json = payment.to_json();
        self.store.lock().payments.push(payment);
        Ok(json)
    }
}

type S = State<Arc<Asaas>>;

/// `access_token`, then `User-Agent`, on every `/v3` route.
async fn require_key(State(asaas): S, req: Request, next: Next) -> Response {
    let refused = {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        match (header("access_token"), header("user-agent")) {
            (None, _) => Some(error(
                StatusCode::UNAUTHORIZED,
                "access_token_not_found",
                MISSING_KEY,
            )),
            (Some(key), _) if key != asaas.api_key && key != asaas.legacy_key => Some(error(
                StatusCode::UNAUTHORIZED,
                "invalid_access_token",
                INVALID_KEY,
            )),
            (Some(_), None) => {
                Some(invalid("invalid_user_agent", MISSING_USER_AGENT).into_response())
            }
            (Some(_), Some(_)) => None,
        }
    };
    match refused {
        Some(response) => response,
        None => next.run(req).await,
    }
}

/// `{object:"list", hasMore, totalCount, limit, offset, data}`.
fn list(items: Vec<Value>, params: &BTreeMap<String, String>) -> Response {
    let limit = params
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(10usize)
        .min(100);
    let offset = params
        .get("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(0usize);
    let total = items.len();
    let data: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    axum::Json(json!({
        "object": "list",
        "hasMore": offset + data.len() < total,
        "totalCount": total,
        "limit": limit,
        "offset": offset,
        "data": data,
    }))
    .into_response()
}

async fn list_customers(
    State(asaas): S,
    Query(params): Query<BTreeMap<String, String>>,
) -> Response {
    let store = asaas.store.lock();
    let items = store
        .customers
        .iter()
        .filter(|c| params.get("cpfCnpj").is_none_or(|d| &c.cpf_cnpj == d))
        .map(Customer::to_json)
        .collect();
    list(items, &params)
}

async fn post_customer(State(asaas): S, headers: HeaderMap, body: Bytes) -> Response {
    match json_object(&headers, &body).and_then(|obj| asaas.create_customer(&obj)) {
        Ok(json) => axum::Json(json).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn get_customer(State(asaas): S, Path(id): Path<String>) -> Response {
    let store = asaas.store.lock();
    match store.customers.iter().find(|c| c.id == id) {
        Some(c) => axum::Json(c.to_json()).into_response(),
        None => not_found("Cliente"),
    }
}

async fn list_payments(
    State(asaas): S,
    Query(params): Query<BTreeMap<String, String>>,
) -> Response {
    let store = asaas.store.lock();
    let items = store
        .payments
        .iter()
        .rev()
        .filter(|p| !p.deleted)
        .filter(|p| {
            params
                .get("externalReference")
                .is_none_or(|r| p.external_reference.as_ref() == Some(r))
        })
        .filter(|p| params.get("customer").is_none_or(|c| &p.customer == c))
        .map(AsaasPayment::to_json)
        .collect();
    list(items, &params)
}

async fn post_payment(
    State(asaas): S,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match json_object(&headers, &body).and_then(|obj| asaas.create_payment(&obj)) {
        Ok(json) => {
            if asaas.common.faults.lock().take_drop_after_create() {
                asaas
                    .common
                    .mark_request(request_id, "dropped_after_create");
                kill.kill();
                std::future::pending::<()>().await;
            }
            axum::Json(json).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

async fn get_payment(State(asaas): S, Path(id): Path<String>) -> Response {
    let store = asaas.store.lock();
    match store.payments.iter().find(|p| p.id == id) {
        Some(p) => axum::Json(p.to_json()).into_response(),
        None => not_found("Cobrança"),
    }
}

async fn delete_payment(State(asaas): S, Path(id): Path<String>) -> Response {
    let mut store = asaas.store.lock();
    let Some(p) = store.payments.iter_mut().find(|p| p.id == id && !p.deleted) else {
        return not_found("Cobrança");
    };
    if !matches!(p.status, "PENDING" | "OVERDUE") {
        return invalid(
            "invalid_action",
            "Só é possível remover cobranças aguardando pagamento ou vencidas.",
        )
        .into_response();
    }
    p.deleted = true;
    axum::Json(json!({ "deleted": true, "id": p.id })).into_response()
}

async fn pix_qr_code(State(asaas): S, Path(id): Path<String>) -> Response {
    let store = asaas.store.lock();
    let Some(p) = store.payments.iter().find(|p| p.id == id && !p.deleted) else {
        return not_found("Cobrança");
    };
    let png = match crate::qr::png(&p.payload) {
        Ok(png) => png,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                &e.to_string(),
            );
        }
    };
    axum::Json(json!({
        "encodedImage": base64::engine::general_purpose::STANDARD.encode(png),
        "payload": p.payload,
        "expirationDate": format!("{} 23:59:59", a_year_after(&p.due_date)),
    }))
    .into_response()
}

impl Psp for Asaas {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("api-key".into(), self.api_key.clone())])
    }

    fn other_credentials(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        BTreeMap::from([(
            "legacy".to_string(),
            BTreeMap::from([("api-key".into(), self.legacy_key.clone())]),
        )])
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            .route("/v3/customers", get(list_customers).post(post_customer))
            .route("/v3/customers/{id}", get(get_customer))
            .route("/v3/payments", get(list_payments).post(post_payment))
            .route("/v3/payments/{id}", get(get_payment).delete(delete_payment))
            .route("/v3/payments/{id}/pixQrCode", get(pix_qr_code))
            .route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                require_key,
            ))
            .fallback(|| async { not_found("Recurso") })
            .with_state(self);
        vec![EndpointSpec {
            name: "api",
            router,
            mtls: false,
            live: false,
        }]
    }

    fn generic_error(&self, status: StatusCode) -> Response {
        error(
            status,
            "internal_error",
            status.canonical_reason().unwrap_or("Erro interno"),
        )
    }

    fn charges(&self) -> Vec<Value> {
        let store = self.store.lock();
        store.payments.iter().map(|p| self.sim_view(p)).collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        let config = self.common.config.lock();
        config
            .webhook_url
            .iter()
            .map(|url| json!({"url": url, "headers": config.webhook_headers}))
            .collect()
    }

    fn customers(&self) -> Vec<Value> {
        let store = self.store.lock();
        store.customers.iter().map(Customer::to_json).collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        _info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let p = Self::find(&mut store.payments, sel)?;
        // Overdue is still payable by Pix (the QR code lasts 12 months past the due date).
        if !matches!(p.status, "PENDING" | "OVERDUE") || p.deleted {
            return Err(ControlError::Conflict(format!(
                "payment {} is {}{}",
                p.id,
                p.status,
                if p.deleted { " (deleted)" } else { "" }
            )));
        }
        p.status = "RECEIVED";
        p.payment_date = Some(date_text(today()));
        if let Some(amount) = amount {
            p.value = amount;
        }
        let charge = self.sim_view(p);
        let now = OffsetDateTime::now_utc()
            .to_offset(UtcOffset::from_hms(-3, 0, 0).expect("a valid offset"));
        let body = json!({
            "id": format!("evt_{}", random_hex(32)),
            "event": "PAYMENT_RECEIVED",
            "dateCreated": now
                .format(time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"))
                .unwrap_or_default(),
            "payment": p.to_json(),
        });
        let config = self.common.config.lock();
        let notifications = config
            .webhook_url
            .iter()
            .map(|url| Notification {
                url: url.clone(),
                headers: config
                    .webhook_headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                body: body.clone(),
            })
            .collect();
        Ok(Payment {
            charge,
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let p = Self::find(&mut store.payments, sel)?;
        if p.status != "PENDING" || p.deleted {
            return Err(ControlError::Conflict(format!(
                "payment {} is {}, not PENDING",
                p.id, p.status
            )));
        }
        p.status = "OVERDUE";
        p.expired = true;
        Ok(self.sim_view(p))
    }

    fn reset(&self) {
        *self.store.lock() = Store::default();
    }
}
