//! iugu: invoices payable by Pix.
//!
//! - HTTP Basic on every call, the API token as user and a **blank** password; anything else
//!   (no header, another scheme, a wrong token, a non-blank password) → 401
//!   `{"errors":"Unauthorized"}`.
//! - `POST /v1/invoices` (JSON) `{email, due_date, items[{description, quantity, price_cents}],
//!   payable_with, payer?{cpf_cnpj, name}, custom_variables?[{name, value}]}` → 200 invoice
//!   with `pix{qrcode (image URL), qrcode_text (BR Code), status}`. Validation errors are 422
//!   `{"errors":{"<field>":["<mensagem>"]}}`.
//! - `GET /v1/invoices/{id}`, `GET /v1/invoices?query=&limit=` (`{totalItems, items}`),
//!   `PUT /v1/invoices/{id}/cancel`.
//! - Account flags (`/_sim/config {"flags":{…}}`): `pix_disabled` → a create answers 422
//!   `{"errors":{"payable_with":["Pix não está habilitado para esta conta"]}}`; `pix_missing`
//!   → the invoice is created without a `pix` object.
//! - `/_sim/pay` sends the `invoice.status_changed` trigger, form-encoded, to the URL set with
//!   `/_sim/config {"webhook_url"}` (iugu's triggers are set in its dashboard or through
//!   `POST /v1/web_hooks {event, url}`: an event and a URL, nothing else). Like iugu, it sends
//!   no custom headers: `webhook_headers` is ignored, so a token must ride in the URL.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
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

pub const UNAUTHORIZED: &str = "Unauthorized";
/// The Portuguese refusal of an account without Pix (unverified wording).
pub const PIX_DISABLED: &str = "Pix não está habilitado para esta conta";
const MERCHANT_NAME: &str = "PIXGW TESTE IUGU";
const MERCHANT_CITY: &str = "SAO PAULO";
/// Top-level fields of `POST /v1/invoices` the simulator knows; others are refused.
const INVOICE_FIELDS: &[&str] = &[
    "email",
    "due_date",
    "items",
    "payable_with",
    "payer",
    "custom_variables",
    "return_url",
    "expired_url",
    "notification_url",
    "ensure_workday_due_date",
    "order_id",
];

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    Ok(Arc::new(Iugu {
        common,
        token: random_hex(32).to_uppercase(),
        account_id: random_hex(32).to_uppercase(),
        store: Mutex::default(),
    }))
}

pub struct Iugu {
    common: Arc<Common>,
    token: String,
    account_id: String,
    store: Mutex<Vec<Invoice>>,
}

#[derive(Clone, Debug)]
struct Invoice {
    id: String,
    secure_id: String,
    status: &'static str,
    email: String,
    due_date: String,
    items: Vec<Value>,
    total_cents: u64,
    payable_with: Value,
    payer: Option<Map<String, Value>>,
    custom_variables: Vec<(String, String)>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    paid_at: Option<OffsetDateTime>,
    paid_cents: Option<u64>,
    pix: Option<InvoicePix>,
    /// Set by `/_sim/expire`.
    expired: bool,
}

#[derive(Clone, Debug)]
struct InvoicePix {
    qrcode_text: String,
    end_to_end_id: Option<String>,
}

impl Invoice {
    fn reference(&self) -> Option<&str> {
        self.custom_variables
            .iter()
            .find(|(n, _)| n == "reference")
            .map(|(_, v)| v.as_str())
    }

    fn to_json(&self, account_id: &str) -> Value {
        let mut v = json!({
            "id": self.id,
            "account_id": account_id,
            "status": self.status,
            "email": self.email,
            "due_date": self.due_date,
            "currency": "BRL",
            "total_cents": self.total_cents,
            "total": reais(self.total_cents),
            "items": self.items,
            "payable_with": self.payable_with,
            "custom_variables": self.custom_variables.iter()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect::<Vec<_>>(),
            "secure_id": self.secure_id,
            "secure_url": format!("https://faturas.iugu.sim.localhost/{}", self.secure_id),
            "created_at": local(self.created_at),
            "updated_at": local(self.updated_at),
            "paid_at": self.paid_at.map(local),
            "paid_cents": self.paid_cents,
            "total_paid_cents": self.paid_cents.unwrap_or(0),
        });
        if let Some(payer) = &self.payer {
            for (key, value) in payer {
                v[format!("payer_{key}")] = value.clone();
            }
        }
        if let Some(pix) = &self.pix {
            v["pix"] = json!({
                "qrcode": format!("https://faturas.iugu.sim.localhost/qr/{}.png", self.secure_id),
                "qrcode_text": pix.qrcode_text,
                "status": if self.status == "paid" { "paid" } else { "qr_code_created" },
            });
            if let Some(e2e) = &pix.end_to_end_id {
                v["pix"]["end_to_end_id"] = json!(e2e);
            }
        }
        v
    }
}

/// `R$ 19,90`, as iugu writes totals.
fn reais(cents: u64) -> String {
    format!("R$ {},{:02}", cents / 100, cents % 100)
}

fn sao_paulo() -> UtcOffset {
    UtcOffset::from_hms(-3, 0, 0).expect("a valid offset")
}

/// iugu writes local times with their offset: `2024-05-01T10:15:00-03:00`.
fn local(t: OffsetDateTime) -> String {
    t.to_offset(sao_paulo())
        .replace_nanosecond(0)
        .unwrap_or(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn errors(status: StatusCode, errors: Value) -> Response {
    (status, axum::Json(json!({ "errors": errors }))).into_response()
}

/// An error answer: its status and the value of `errors`.
struct Refusal(StatusCode, Value);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        errors(self.0, self.1)
    }
}

/// A 422 naming one field, as iugu's validation answers.
fn invalid(field: &str, message: &str) -> Refusal {
    Refusal(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({ field: [message] }),
    )
}

fn not_found() -> Response {
    errors(StatusCode::NOT_FOUND, json!("Not Found"))
}

impl Iugu {
    /// Basic with the token as user and nothing after the colon.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let ok = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b64| {
                base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .ok()
            })
            .and_then(|raw| String::from_utf8(raw).ok())
            .is_some_and(|pair| pair == format!("{}:", self.token));
        if ok {
            Ok(())
        } else {
            Err(Refusal(StatusCode::UNAUTHORIZED, json!(UNAUTHORIZED)))
        }
    }

    fn sim_view(&self, invoice: &Invoice) -> Value {
        json!({
            "reference": invoice.reference(),
            "psp_id": invoice.id,
            "amount": invoice.total_cents,
            "status": invoice.status,
            "expired": invoice.expired,
            "psp": invoice.to_json(&self.account_id),
        })
    }

    fn find<'a>(
        invoices: &'a mut [Invoice],
        sel: &ChargeSelector,
    ) -> Result<&'a mut Invoice, ControlError> {
        let found = match (&sel.psp_id, &sel.reference) {
            (Some(id), _) => invoices.iter_mut().find(|i| &i.id == id),
            (None, Some(reference)) => invoices
                .iter_mut()
                .find(|i| i.reference() == Some(reference.as_str())),
            (None, None) => {
                return Err(ControlError::BadRequest(
                    "give `reference` or `psp_id`".into(),
                ));
            }
        };
        found.ok_or_else(|| ControlError::NotFound("no such invoice".into()))
    }

    fn flag(&self, name: &str) -> bool {
        self.common.flag(name)
    }

    /// Validates a `POST /v1/invoices` body and stores the invoice.
    fn create_invoice(&self, headers: &HeaderMap, body: &[u8]) -> Result<Value, Refusal> {
        let json_content = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let obj = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(obj)) if json_content => obj,
            _ => {
                return Err(Refusal(
                    StatusCode::BAD_REQUEST,
                    json!("Corpo da requisição inválido: envie um objeto JSON"),
                ));
            }
        };
        if let Some(unknown) = obj.keys().find(|k| !INVOICE_FIELDS.contains(&k.as_str())) {
            return Err(invalid(unknown, "não é um parâmetro permitido"));
        }
        let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::trim);
        let email = match text("email") {
            None | Some("") => return Err(invalid("email", "não pode ficar em branco")),
            Some(e) if !valid_email(e) => return Err(invalid("email", "não é válido")),
            Some(e) => e.to_owned(),
        };
        let due_date = match text("due_date") {
            None | Some("") => return Err(invalid("due_date", "não pode ficar em branco")),
            Some(d) => d.to_owned(),
        };
        let format = time::macros::format_description!("[year]-[month]-[day]");
        let Ok(due) = Date::parse(&due_date, &format) else {
            return Err(invalid("due_date", "não é uma data válida"));
        };
        if due < OffsetDateTime::now_utc().to_offset(sao_paulo()).date() {
            return Err(invalid("due_date", "não pode ser anterior a hoje"));
        }
        let (items, total_cents) = parse_items(obj.get("items"))?;
        let payable_with = obj.get("payable_with").cloned().unwrap_or(Value::Null);
        let methods: Vec<&str> = match &payable_with {
            Value::String(s) => s.split(',').map(str::trim).collect(),
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !methods.iter().any(|m| *m == "pix" || *m == "all") {
            return Err(invalid("payable_with", "deve incluir pix"));
        }
        let payer = match obj.get("payer") {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => {
                if let Some(doc) = p.get("cpf_cnpj") {
                    let doc = doc.as_str().unwrap_or_default();
                    if !(cpf_valid(doc) || cnpj_valid(doc)) {
                        return Err(invalid("payer.cpf_cnpj", "não é válido"));
                    }
                }
                if p.get("name").is_some_and(|n| !n.is_string()) {
                    return Err(invalid("payer.name", "não é válido"));
                }
                Some(p.clone())
            }
            Some(_) => return Err(invalid("payer", "não é válido")),
        };
        let custom_variables = match obj.get("custom_variables") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => {
                let mut vars = Vec::new();
                for v in list {
                    match (
                        v.get("name").and_then(Value::as_str),
                        v.get("value").and_then(Value::as_str),
                    ) {
                        (Some(n), Some(value)) if !n.is_empty() => {
                            vars.push((n.to_owned(), value.to_owned()))
                        }
                        _ => return Err(invalid("custom_variables", "não é válido")),
                    }
                }
                vars
            }
            Some(_) => return Err(invalid("custom_variables", "não é válido")),
        };
        if self.flag("pix_disabled") {
            return Err(invalid("payable_with", PIX_DISABLED));
        }
        let id = random_hex(32).to_uppercase();
        let secure_id = format!("{}-{}", id.to_lowercase(), random_hex(4));
        let pix = (!self.flag("pix_missing")).then(|| InvoicePix {
            qrcode_text: crate::brcode::Dynamic {
                location: &format!("pix.iugu.sim.localhost/qr/v2/{}", uuid::Uuid::new_v4()),
                amount: &format!("{}.{:02}", total_cents / 100, total_cents % 100),
                merchant_name: MERCHANT_NAME,
                merchant_city: MERCHANT_CITY,
            }
            .encode(),
            end_to_end_id: None,
        });
        let now = OffsetDateTime::now_utc();
        let invoice = Invoice {
            id,
            secure_id,
            status: "pending",
            email,
            due_date,
            items,
            total_cents,
            payable_with,
            payer,
            custom_variables,
            created_at: now,
            updated_at: now,
            paid_at: None,
            paid_cents: None,
            pix,
            expired: false,
        };
        let json = invoice.to_json(&self.account_id);
        self.store.lock().push(invoice);
        Ok(json)
    }
}

fn valid_email(e: &str) -> bool {
    matches!(e.split_once('@'), Some((user, domain))
        if !user.is_empty() && domain.contains('.') && !domain.starts_with('.') && !e.contains(' '))
}

/// `items[{description, quantity, price_cents}]` → the stored items and the total.
fn parse_items(items: Option<&Value>) -> Result<(Vec<Value>, u64), Refusal> {
    let list = match items {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err(invalid("items", "não pode ficar em branco")),
    };
    let mut stored = Vec::new();
    let mut total: u64 = 0;
    for item in list {
        let description = item.get("description").and_then(Value::as_str);
        if description.is_none_or(|d| d.trim().is_empty()) {
            return Err(invalid("items.description", "não pode ficar em branco"));
        }
        let Some(quantity) = item
            .get("quantity")
            .and_then(Value::as_u64)
            .filter(|q| *q >= 1)
        else {
            return Err(invalid(
                "items.quantity",
                "deve ser um número inteiro maior que 0",
            ));
        };
        let Some(price) = item
            .get("price_cents")
            .and_then(Value::as_u64)
            .filter(|p| *p >= 1)
        else {
            return Err(invalid(
                "items.price_cents",
                "deve ser um número inteiro maior que 0",
            ));
        };
        total = total.saturating_add(quantity.saturating_mul(price));
        stored.push(json!({
            "id": random_hex(32).to_uppercase(),
            "description": description,
            "quantity": quantity,
            "price_cents": price,
            "price": reais(price),
        }));
    }
    Ok((stored, total))
}

type S = State<Arc<Iugu>>;

async fn create_invoice(
    State(iugu): S,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = iugu.authorize(&headers) {
        return refused.into_response();
    }
    match iugu.create_invoice(&headers, &body) {
        Ok(json) => {
            if iugu.common.faults.lock().take_drop_after_create() {
                iugu.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                std::future::pending::<()>().await;
            }
            axum::Json(json).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

async fn list_invoices(
    State(iugu): S,
    Query(params): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = iugu.authorize(&headers) {
        return refused.into_response();
    }
    let query = params.get("query").map(String::as_str).unwrap_or_default();
    let limit = params
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(100usize);
    let store = iugu.store.lock();
    let matching: Vec<&Invoice> = store
        .iter()
        .rev()
        .filter(|i| {
            query.is_empty()
                || i.id == query
                || i.email.contains(query)
                || i.custom_variables.iter().any(|(_, v)| v.contains(query))
        })
        .collect();
    axum::Json(json!({
        "facets": {},
        "totalItems": matching.len(),
        "items": matching.iter().take(limit).map(|i| i.to_json(&iugu.account_id)).collect::<Vec<_>>(),
    }))
    .into_response()
}

async fn get_invoice(State(iugu): S, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(refused) = iugu.authorize(&headers) {
        return refused.into_response();
    }
    let store = iugu.store.lock();
    match store.iter().find(|i| i.id == id) {
        Some(invoice) => axum::Json(invoice.to_json(&iugu.account_id)).into_response(),
        None => not_found(),
    }
}

async fn cancel_invoice(State(iugu): S, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(refused) = iugu.authorize(&headers) {
        return refused.into_response();
    }
    let mut store = iugu.store.lock();
    let Some(invoice) = store.iter_mut().find(|i| i.id == id) else {
        return not_found();
    };
    if invoice.status != "pending" {
        return errors(
            StatusCode::BAD_REQUEST,
            json!("Esta fatura não pode ser cancelada"),
        );
    }
    invoice.status = "canceled";
    invoice.updated_at = OffsetDateTime::now_utc();
    axum::Json(invoice.to_json(&iugu.account_id)).into_response()
}

impl Psp for Iugu {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("api-token".into(), self.token.clone()),
            (
                "default-email".into(),
                "pagamentos@loja.pixgw-sim.example".into(),
            ),
        ])
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            .route("/v1/invoices", post(create_invoice).get(list_invoices))
            .route("/v1/invoices/{id}", get(get_invoice))
            .route("/v1/invoices/{id}/cancel", put(cancel_invoice))
            .fallback(|| async { not_found() })
            .with_state(self);
        vec![EndpointSpec {
            name: "api",
            router,
            mtls: false,
            live: false,
        }]
    }

    fn generic_error(&self, status: StatusCode) -> Response {
        errors(
            status,
            json!(status.canonical_reason().unwrap_or("Internal Server Error")),
        )
    }

    fn charges(&self) -> Vec<Value> {
        self.store.lock().iter().map(|i| self.sim_view(i)).collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        let config = self.common.config.lock();
        config
            .webhook_url
            .iter()
            .map(|url| json!({"url": url, "event": "invoice.status_changed"}))
            .collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        _info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let invoice = Self::find(&mut store, sel)?;
        if invoice.status != "pending" || invoice.expired {
            return Err(ControlError::Conflict(format!(
                "invoice {} is {}{}",
                invoice.id,
                invoice.status,
                if invoice.expired { " (expired)" } else { "" }
            )));
        }
        let Some(pix) = invoice.pix.as_mut() else {
            return Err(ControlError::Conflict(format!(
                "invoice {} has no Pix code to pay",
                invoice.id
            )));
        };
        let now = OffsetDateTime::now_utc();
        pix.end_to_end_id = Some(format!(
            "E00000000{}{}",
            now.format(time::macros::format_description!(
                "[year][month][day][hour][minute]"
            ))
            .unwrap_or_default(),
            random_alnum(11)
        ));
        invoice.status = "paid";
        invoice.paid_at = Some(now);
        invoice.updated_at = now;
        invoice.paid_cents = Some(amount.unwrap_or(invoice.total_cents));
        let charge = self.sim_view(invoice);
        let form = serde_urlencoded::to_string([
            ("event", "invoice.status_changed"),
            ("data[id]", invoice.id.as_str()),
            ("data[status]", "paid"),
            ("data[account_id]", self.account_id.as_str()),
        ])
        .map_err(|e| ControlError::Internal(e.to_string()))?;
        let config = self.common.config.lock();
        // A trigger is an event and a URL: no custom header, whatever `webhook_headers` says.
        let notifications = config
            .webhook_url
            .iter()
            .map(|url| Notification {
                url: url.clone(),
                headers: vec![(
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                )],
                body: Value::String(form.clone()),
            })
            .collect();
        Ok(Payment {
            charge,
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let invoice = Self::find(&mut store, sel)?;
        if invoice.status != "pending" {
            return Err(ControlError::Conflict(format!(
                "invoice {} is {}, not pending",
                invoice.id, invoice.status
            )));
        }
        invoice.status = "expired";
        invoice.expired = true;
        invoice.updated_at = OffsetDateTime::now_utc();
        Ok(self.sim_view(invoice))
    }

    fn reset(&self) {
        self.store.lock().clear();
    }
}
