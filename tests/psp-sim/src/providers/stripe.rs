//! Stripe: Pix through PaymentIntents, as strict as the real API where its reference says how
//! (facts and sources in `plugins/stripe/README.md`).
//!
//! - `POST /v1/payment_intents` (form-encoded only; a JSON body is refused the way Stripe
//!   refuses it), `GET /v1/payment_intents[/{id}]`, `GET /v1/payment_intents/search`,
//!   `POST /v1/payment_intents/{id}/cancel`; `expand[]=latest_charge` (`data.latest_charge` on
//!   lists) expands the Charge, whose `payment_method_details.pix.bank_transaction_id` is the
//!   end-to-end id.
//! - `Authorization: Bearer sk_test_…` (or Basic with the key as user); the account's
//!   restricted key `rk_test_…` works the same; any other key, a live key included, is
//!   `Invalid API Key provided: sk_test_****abcd`.
//! - `Idempotency-Key`: the same key with the same parameters replays the first answer
//!   (`Idempotent-Replayed: true`); with other parameters it is an `idempotency_error`.
//! - Events `payment_intent.succeeded`, `.payment_failed` (expiry) and `.canceled` go to the
//!   URL set with `POST /_sim/config {"webhook_url"}` (Stripe's dashboard setting), signed with
//!   `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">` under the account's
//!   `whsec_` secret.
//! - The payer e-mail `paid@example.com` makes the intent succeed by itself half a second
//!   after it is created.
//! - Account settings (sim only): `POST /_sim/account` on the Stripe listener,
//!   `{"pix_enabled": false}` (the Pix-not-activated error) or `{"country": "US"}` (intents
//!   come back without `next_action`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hmac::Mac as _;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::server::ConnKill;
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex,
};

/// The designated sandbox e-mail: an intent with it succeeds by itself.
pub const PAID_EMAIL: &str = "paid@example.com";
const AUTO_PAY_AFTER: Duration = Duration::from_millis(500);
const EXPIRES_AFTER_SECONDS: std::ops::RangeInclusive<i64> = 10..=1_209_600;
const DEFAULT_EXPIRES_AFTER_SECONDS: i64 = 86_400;
/// Stripe's minimum for BRL: R$ 0.50.
const MIN_AMOUNT: i64 = 50;
const MAX_AMOUNT: i64 = 99_999_999;
const KNOWN_METHOD_TYPES: &[&str] = &["pix", "card", "boleto"];
const CANCELABLE: &[&str] = &[
    "requires_payment_method",
    "requires_capture",
    "requires_confirmation",
    "requires_action",
    "processing",
];

/// A Stripe error: `{"error":{type, code?, message, param?, doc_url?}}`.
#[derive(Debug)]
struct StripeError {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    message: String,
    param: Option<String>,
}

impl StripeError {
    fn invalid(
        code: Option<&'static str>,
        message: impl Into<String>,
        param: Option<&str>,
    ) -> Self {
        StripeError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            message: message.into(),
            param: param.map(str::to_string),
        }
    }

    fn missing(param: &str) -> Self {
        Self::invalid(
            Some("parameter_missing"),
            format!("Missing required param: {param}."),
            Some(param),
        )
    }

    fn unauthorized(message: String) -> Self {
        StripeError {
            status: StatusCode::UNAUTHORIZED,
            kind: "invalid_request_error",
            code: None,
            message,
            param: None,
        }
    }

    fn no_such_intent(id: &str) -> Self {
        StripeError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: Some("resource_missing"),
            message: format!("No such payment_intent: '{id}'"),
            param: Some("intent".into()),
        }
    }

    fn method_type_invalid(t: &str) -> Self {
        Self::invalid(
            Some("payment_method_invalid_parameter"),
            format!(
                "The payment method type \"{t}\" is invalid. Please ensure the provided type is \
                 activated in your dashboard (https://dashboard.stripe.com/account/payments/settings) \
                 and your account is enabled for any preview features that you are trying to use."
            ),
            Some("payment_method_types"),
        )
    }
}

impl IntoResponse for StripeError {
    fn into_response(self) -> Response {
        let mut error = json!({ "type": self.kind, "message": self.message });
        if let Some(code) = self.code {
            error["code"] = json!(code);
            error["doc_url"] = json!(format!(
                "https://stripe.com/docs/error-codes/{}",
                code.replace('_', "-")
            ));
        }
        if let Some(param) = self.param {
            error["param"] = json!(param);
        }
        (self.status, axum::Json(json!({ "error": error }))).into_response()
    }
}

#[derive(Clone, Debug)]
struct Account {
    pix_enabled: bool,
    country: String,
}

impl Default for Account {
    fn default() -> Self {
        Account {
            pix_enabled: true,
            country: "BR".into(),
        }
    }
}

struct Intent {
    /// The PaymentIntent as Stripe renders it (with `latest_charge` as an id).
    json: Value,
    /// The Charge of a succeeded intent.
    charge: Option<Value>,
    expired: bool,
}

impl Intent {
    fn id(&self) -> &str {
        self.json["id"].as_str().unwrap_or_default()
    }

    fn status(&self) -> &str {
        self.json["status"].as_str().unwrap_or_default()
    }

    fn reference(&self) -> Option<&str> {
        self.json["metadata"]["reference"].as_str()
    }

    /// The intent, with the Charge in place of its id when `expand` says so.
    fn render(&self, expand: bool) -> Value {
        let mut json = self.json.clone();
        if expand && let Some(charge) = &self.charge {
            json["latest_charge"] = charge.clone();
        }
        json
    }
}

#[derive(Default)]
struct State_ {
    intents: Vec<Intent>,
    /// Idempotency-Key → (sorted parameters, the answer given).
    idempotency: HashMap<String, (Vec<(String, String)>, Value)>,
    account: Account,
}

pub struct Stripe {
    common: Arc<Common>,
    secret_key: String,
    /// A restricted key of the same account (`rk_test_…`), allowed everything the adapter does.
    restricted_key: String,
    webhook_secret: String,
    client: reqwest::Client,
    state: Mutex<State_>,
}

pub fn build(common: Arc<Common>) -> anyhow::Result<Arc<dyn Psp>> {
    Ok(Arc::new(Stripe {
        common,
        secret_key: format!("sk_test_51{}", random_alnum(96)),
        restricted_key: format!("rk_test_51{}", random_alnum(96)),
        webhook_secret: format!("whsec_{}", random_alnum(32)),
        client: crate::delivery::client(),
        state: Mutex::default(),
    }))
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// `sk_test_****abcd`: Stripe shows the key's prefix and its last four characters.
fn redact(key: &str) -> String {
    let prefix = ["sk_test_", "sk_live_", "rk_test_", "rk_live_"]
        .into_iter()
        .find(|p| key.starts_with(p))
        .unwrap_or("");
    let tail: String = key
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{prefix}****{tail}")
}

impl Stripe {
    fn authorize(&self, headers: &HeaderMap) -> Result<(), StripeError> {
        let auth = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let key = if let Some(bearer) = auth.strip_prefix("Bearer ") {
            bearer.trim().to_string()
        } else if let Some(basic) = auth.strip_prefix("Basic ") {
            use base64::Engine as _;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(basic.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            decoded.split(':').next().unwrap_or_default().to_string()
        } else {
            String::new()
        };
        if key.is_empty() {
            return Err(StripeError::unauthorized(
                "You did not provide an API key. You need to provide your API key in the \
                 Authorization header, using Bearer auth (e.g. 'Authorization: Bearer \
                 YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, \
                 or we can help at https://support.stripe.com/."
                    .into(),
            ));
        }
        if key != self.secret_key && key != self.restricted_key {
            return Err(StripeError::unauthorized(format!(
                "Invalid API Key provided: {}",
                redact(&key)
            )));
        }
        Ok(())
    }

    fn find<'a>(
        intents: &'a mut [Intent],
        sel: &ChargeSelector,
    ) -> Result<&'a mut Intent, ControlError> {
        let found = match (&sel.psp_id, &sel.reference) {
            (Some(id), _) => intents.iter_mut().find(|i| i.id() == id),
            (None, Some(r)) => intents
                .iter_mut()
                .find(|i| i.reference() == Some(r.as_str())),
            (None, None) => {
                return Err(ControlError::BadRequest(
                    "give `reference` or `psp_id`".into(),
                ));
            }
        };
        found.ok_or_else(|| ControlError::NotFound("no such PaymentIntent".into()))
    }

    fn sim_view(intent: &Intent) -> Value {
        json!({
            "reference": intent.reference(),
            "psp_id": intent.id(),
            "amount": intent.json["amount"],
            "status": intent.status(),
            "expired": intent.expired,
            "psp": intent.render(true),
        })
    }

    /// The signed event for the configured webhook URL, if one is set.
    fn event(&self, kind: &str, intent: &Value) -> Vec<Notification> {
        let Some(url) = self.common.config.lock().webhook_url.clone() else {
            return Vec::new();
        };
        let created = unix_now();
        let body = json!({
            "id": format!("evt_{}", random_alnum(24)),
            "object": "event",
            "api_version": "2024-06-20",
            "created": created,
            "data": { "object": intent },
            "livemode": false,
            "pending_webhooks": 1,
            "request": { "id": null, "idempotency_key": null },
            "type": kind,
        });
        // The delivery serialises the same value the same way, so this is the raw body signed.
        let raw = serde_json::to_vec(&body).unwrap_or_default();
        let signature = sign(&self.webhook_secret, created, &raw);
        vec![Notification {
            url,
            headers: vec![
                (
                    "stripe-signature".into(),
                    format!("t={created},v1={signature}"),
                ),
                (
                    "user-agent".into(),
                    "Stripe/1.0 (+https://stripe.com/docs/webhooks)".into(),
                ),
            ],
            body,
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

    /// Marks a `requires_action` intent paid; answers the intent and its events.
    fn succeed(&self, intent: &mut Intent) -> Vec<Notification> {
        let now = unix_now();
        let amount = intent.json["amount"].clone();
        let charge_id = format!("ch_{}", random_alnum(24));
        intent.charge = Some(json!({
            "id": charge_id,
            "object": "charge",
            "amount": amount,
            "amount_captured": amount,
            "captured": true,
            "created": now,
            "currency": "brl",
            "paid": true,
            "payment_intent": intent.id(),
            "payment_method_details": {
                "type": "pix",
                "pix": { "bank_transaction_id": end_to_end_id() },
            },
            "status": "succeeded",
        }));
        let json = &mut intent.json;
        json["status"] = json!("succeeded");
        json["amount_received"] = amount;
        json["latest_charge"] = json!(charge_id);
        json["next_action"] = Value::Null;
        self.event("payment_intent.succeeded", &intent.json)
    }

    fn create(self: &Arc<Self>, params: &[(String, String)]) -> Result<Value, StripeError> {
        let account = self.state.lock().account.clone();
        let new = parse_create(params, &account)?;
        let id = format!("pi_{}", random_alnum(24));
        let now = unix_now();
        let confirmed = new.confirm;
        let next_action = (confirmed && account.country == "BR").then(|| {
            let location = format!(
                "pix.stripe.sim.localhost/qr/v2/{}",
                uuid::Uuid::new_v4().simple()
            );
            let amount = format!("{}.{:02}", new.amount / 100, new.amount % 100);
            let code = crate::brcode::Dynamic {
                location: &location,
                amount: &amount,
                merchant_name: "PIXGW TESTE STRIPE",
                merchant_city: "SAO PAULO",
            }
            .encode();
            let token = random_hex(32);
            json!({
                "type": "pix_display_qr_code",
                "pix_display_qr_code": {
                    "data": code,
                    "expires_at": now + new.expires_after_seconds,
                    "image_url_png": format!("https://qr.stripe.com/{token}.png"),
                    "image_url_svg": format!("https://qr.stripe.com/{token}.svg"),
                    "hosted_instructions_url": format!("https://payments.stripe.com/pix/instructions/{token}"),
                },
            })
        });
        let status = match &next_action {
            Some(_) => "requires_action",
            None => "requires_payment_method",
        };
        let json = json!({
            "id": id,
            "object": "payment_intent",
            "amount": new.amount,
            "amount_capturable": 0,
            "amount_received": 0,
            "canceled_at": null,
            "cancellation_reason": null,
            "capture_method": "automatic",
            "client_secret": format!("{id}_secret_{}", random_alnum(25)),
            "confirmation_method": "automatic",
            "created": now,
            "currency": "brl",
            "description": new.description,
            "last_payment_error": null,
            "latest_charge": null,
            "livemode": false,
            "metadata": new.metadata,
            "next_action": next_action,
            "payment_method": confirmed.then(|| format!("pm_{}", random_alnum(24))),
            "payment_method_options": { "pix": { "expires_after_seconds": new.expires_after_seconds } },
            "payment_method_types": new.method_types,
            "receipt_email": null,
            "status": status,
        });
        let paid_by_itself =
            status == "requires_action" && new.email.as_deref() == Some(PAID_EMAIL);
        self.state.lock().intents.push(Intent {
            json: json.clone(),
            charge: None,
            expired: false,
        });
        if paid_by_itself {
            self.pay_later(id);
        }
        Ok(json)
    }

    /// The sandbox e-mail's behaviour: the intent succeeds shortly, with its event.
    fn pay_later(self: &Arc<Self>, id: String) {
        let stripe = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(AUTO_PAY_AFTER).await;
            let notifications = {
                let mut state = stripe.state.lock();
                match state.intents.iter_mut().find(|i| i.id() == id) {
                    Some(intent) if intent.status() == "requires_action" && !intent.expired => {
                        stripe.succeed(intent)
                    }
                    _ => return,
                }
            };
            stripe.deliver_later(notifications);
        });
    }
}

/// 32 characters: `E`, an ISPB (`99999999`, the simulator's), `yyyyMMddHHmm`, 11 alphanumerics.
fn end_to_end_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "E99999999{:04}{:02}{:02}{:02}{:02}{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        random_alnum(11)
    )
}

fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes any key length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// A validated `POST /v1/payment_intents`.
struct NewIntent {
    amount: i64,
    confirm: bool,
    method_types: Vec<String>,
    expires_after_seconds: i64,
    email: Option<String>,
    description: Option<String>,
    metadata: BTreeMap<String, String>,
}

/// `name[]` or `name[<index>]`: how Stripe's clients spell list items.
fn is_list_item(key: &str, name: &str) -> bool {
    key.strip_prefix(name)
        .and_then(|r| r.strip_prefix('['))
        .and_then(|r| r.strip_suffix(']'))
        .is_some_and(|i| i.bytes().all(|b| b.is_ascii_digit()))
}

fn parse_create(params: &[(String, String)], account: &Account) -> Result<NewIntent, StripeError> {
    const SCALARS: &[&str] = &[
        "amount",
        "currency",
        "confirm",
        "description",
        "payment_method_data[type]",
        "payment_method_data[billing_details][email]",
        "payment_method_data[billing_details][name]",
        "payment_method_options[pix][expires_after_seconds]",
        "payment_method_options[pix][expires_at]",
    ];
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let mut method_types = Vec::new();
    let mut metadata = BTreeMap::new();
    for (key, value) in params {
        if SCALARS.contains(&key.as_str()) || is_list_item(key, "expand") {
            continue;
        }
        if is_list_item(key, "payment_method_types") {
            method_types.push(value.clone());
            continue;
        }
        if let Some(name) = key
            .strip_prefix("metadata[")
            .and_then(|r| r.strip_suffix(']'))
        {
            if name.is_empty() || name.chars().count() > 40 || value.chars().count() > 500 {
                return Err(StripeError::invalid(
                    Some("parameter_invalid_string"),
                    "Metadata keys can be at most 40 characters and values at most 500 characters.",
                    Some(key),
                ));
            }
            metadata.insert(name.to_string(), value.clone());
            continue;
        }
        return Err(StripeError::invalid(
            Some("parameter_unknown"),
            format!("Received unknown parameter: {key}"),
            Some(key),
        ));
    }
    if metadata.len() > 50 {
        return Err(StripeError::invalid(
            Some("parameter_invalid_string"),
            "You can have at most 50 metadata keys.",
            Some("metadata"),
        ));
    }

    let amount_text = get("amount").ok_or_else(|| StripeError::missing("amount"))?;
    let amount: i64 = amount_text.parse().map_err(|_| {
        StripeError::invalid(
            Some("parameter_invalid_integer"),
            format!("Invalid integer: {amount_text}"),
            Some("amount"),
        )
    })?;
    if amount < MIN_AMOUNT {
        return Err(StripeError::invalid(
            Some("amount_too_small"),
            "Amount must be at least R$0.50 brl",
            Some("amount"),
        ));
    }
    if amount > MAX_AMOUNT {
        return Err(StripeError::invalid(
            Some("amount_too_large"),
            "Amount must be no more than R$999,999.99 brl",
            Some("amount"),
        ));
    }
    let currency = get("currency")
        .ok_or_else(|| StripeError::missing("currency"))?
        .to_ascii_lowercase();

    for t in &method_types {
        if !KNOWN_METHOD_TYPES.contains(&t.as_str()) || (t == "pix" && !account.pix_enabled) {
            return Err(StripeError::method_type_invalid(t));
        }
    }
    if !method_types.iter().any(|t| t == "pix") {
        return Err(StripeError::invalid(
            Some("payment_intent_invalid_parameter"),
            "payment_method_types must include \"pix\" to confirm this PaymentIntent with a pix \
             payment method.",
            Some("payment_method_types"),
        ));
    }
    if currency != "brl" {
        return Err(StripeError::invalid(
            Some("payment_intent_invalid_parameter"),
            format!(
                "The currency provided ({currency}) is invalid. Payments with pix support the \
                 following currencies: brl."
            ),
            Some("currency"),
        ));
    }

    let confirm = match get("confirm") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(StripeError::invalid(
                Some("parameter_invalid_boolean"),
                format!("Invalid boolean: {other}"),
                Some("confirm"),
            ));
        }
    };
    match get("payment_method_data[type]") {
        Some("pix") => {}
        Some(other) => {
            return Err(StripeError::invalid(
                Some("payment_intent_invalid_parameter"),
                format!(
                    "The payment method type provided: {other} is invalid. This simulator \
                     confirms PaymentIntents with pix only."
                ),
                Some("payment_method_data[type]"),
            ));
        }
        None if confirm => {
            return Err(StripeError::invalid(
                Some("payment_intent_unexpected_state"),
                "You cannot confirm this PaymentIntent because it's missing a payment method. \
                 Pass payment_method_data[type]=pix to confirm it with Pix.",
                Some("payment_method_data[type]"),
            ));
        }
        None => {}
    }

    const AFTER: &str = "payment_method_options[pix][expires_after_seconds]";
    const AT: &str = "payment_method_options[pix][expires_at]";
    let range_error = |param: &str| {
        StripeError::invalid(
            Some("parameter_invalid_integer"),
            format!(
                "Invalid {param}: the Pix code must expire between 10 seconds and 14 days \
                 (1209600 seconds) from now."
            ),
            Some(param),
        )
    };
    let expires_after_seconds = match (get(AFTER), get(AT)) {
        (Some(_), Some(_)) => {
            return Err(StripeError::invalid(
                Some("parameter_invalid_integer"),
                "You may only specify one of these parameters: expires_after_seconds, expires_at.",
                Some(AFTER),
            ));
        }
        (Some(after), None) => after
            .parse::<i64>()
            .ok()
            .filter(|s| EXPIRES_AFTER_SECONDS.contains(s))
            .ok_or_else(|| range_error(AFTER))?,
        (None, Some(at)) => at
            .parse::<i64>()
            .ok()
            .map(|at| at - unix_now())
            .filter(|s| EXPIRES_AFTER_SECONDS.contains(s))
            .ok_or_else(|| range_error(AT))?,
        (None, None) => DEFAULT_EXPIRES_AFTER_SECONDS,
    };

    const EMAIL: &str = "payment_method_data[billing_details][email]";
    let email = get(EMAIL).map(str::to_string);
    if let Some(e) = &email {
        let valid = e
            .split_once('@')
            .is_some_and(|(user, domain)| !user.is_empty() && domain.contains('.'))
            && !e.contains(char::is_whitespace);
        if !valid {
            return Err(StripeError::invalid(
                Some("email_invalid"),
                format!("Invalid email address: {e}"),
                Some(EMAIL),
            ));
        }
    }
    let description = get("description").map(str::to_string);
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 1000)
    {
        return Err(StripeError::invalid(
            Some("parameter_invalid_string"),
            "Invalid description: must be at most 1000 characters",
            Some("description"),
        ));
    }
    Ok(NewIntent {
        amount,
        confirm,
        method_types,
        expires_after_seconds,
        email,
        description,
        metadata,
    })
}

// ---- HTTP handlers ----

type St = State<Arc<Stripe>>;

/// The parameters of a form body; Stripe reads nothing else.
fn form(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, StripeError> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !body.is_empty() && !content_type.starts_with("application/x-www-form-urlencoded") {
        return Err(StripeError::invalid(
            None,
            "Invalid request (check that your POST content type is \
             application/x-www-form-urlencoded). If you have any questions, we can help at \
             https://support.stripe.com/.",
            None,
        ));
    }
    serde_urlencoded::from_bytes(body).map_err(|_| {
        StripeError::invalid(
            None,
            "Invalid request: the body is not application/x-www-form-urlencoded.",
            None,
        )
    })
}

fn query_params(query: &Option<String>) -> Vec<(String, String)> {
    serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default()
}

fn expands(params: &[(String, String)], what: &str) -> bool {
    params
        .iter()
        .any(|(k, v)| is_list_item(k, "expand") && v == what)
}

fn limit(params: &[(String, String)]) -> Result<usize, StripeError> {
    match params.iter().find(|(k, _)| k == "limit") {
        None => Ok(10),
        Some((_, v)) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| {
                StripeError::invalid(
                    Some("parameter_invalid_integer"),
                    format!("Invalid integer: {v}: limit must be between 1 and 100"),
                    Some("limit"),
                )
            }),
    }
}

async fn create_intent(
    State(s): St,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| {
        s.authorize(&headers)?;
        let mut params = form(&headers, &body)?;
        params.sort();
        let key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if let Some(key) = &key
            && let Some((first, answer)) = s.state.lock().idempotency.get(key)
        {
            if *first == params {
                return Ok((answer.clone(), true));
            }
            return Err(StripeError {
                status: StatusCode::BAD_REQUEST,
                kind: "idempotency_error",
                code: None,
                message: format!(
                    "Keys for idempotent requests can only be used with the same parameters \
                     they were first used with. Try using a key other than '{key}' if you meant \
                     to execute a different request."
                ),
                param: None,
            });
        }
        let json = s.create(&params)?;
        if let Some(key) = key {
            s.state
                .lock()
                .idempotency
                .insert(key, (params, json.clone()));
        }
        Ok((json, false))
    })();
    match result {
        Ok((json, replayed)) => {
            if !replayed && s.common.faults.lock().take_drop_after_create() {
                s.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                // The connection is closing; never answer.
                std::future::pending::<()>().await;
            }
            let mut response = axum::Json(json).into_response();
            if replayed {
                response.headers_mut().insert(
                    "idempotent-replayed",
                    http::HeaderValue::from_static("true"),
                );
            }
            response
        }
        Err(err) => err.into_response(),
    }
}

async fn get_intent(
    State(s): St,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Err(err) = s.authorize(&headers) {
        return err.into_response();
    }
    let expand = expands(&query_params(&query), "latest_charge");
    let state = s.state.lock();
    match state.intents.iter().find(|i| i.id() == id) {
        Some(intent) => axum::Json(intent.render(expand)).into_response(),
        None => StripeError::no_such_intent(&id).into_response(),
    }
}

async fn list_intents(State(s): St, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let result = (|| -> Result<Value, StripeError> {
        s.authorize(&headers)?;
        let params = query_params(&query);
        let limit = limit(&params)?;
        let expand = expands(&params, "data.latest_charge");
        let state = s.state.lock();
        let data: Vec<Value> = state
            .intents
            .iter()
            .rev()
            .take(limit)
            .map(|i| i.render(expand))
            .collect();
        Ok(json!({
            "object": "list",
            "data": data,
            "has_more": state.intents.len() > limit,
            "url": "/v1/payment_intents",
        }))
    })();
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => err.into_response(),
    }
}

enum SearchField {
    Metadata(String),
    Status,
}

/// `'value'` or `"value"`, with `\'` / `\"` escapes.
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next().filter(|q| *q == '\'' || *q == '"')?;
    let inner = s.strip_prefix(quote)?.strip_suffix(quote)?;
    Some(inner.replace(&format!("\\{quote}"), &quote.to_string()))
}

/// Stripe's search syntax, the part the simulator knows: `metadata['key']:'value'` and
/// `status:'value'` clauses joined by ` AND `.
fn parse_search(query: &str) -> Option<Vec<(SearchField, String)>> {
    query
        .split(" AND ")
        .map(|clause| {
            let (field, value) = clause.trim().split_once(':')?;
            let field = match field {
                "status" => SearchField::Status,
                _ => SearchField::Metadata(unquote(
                    field.strip_prefix("metadata[")?.strip_suffix(']')?,
                )?),
            };
            Some((field, unquote(value.trim())?))
        })
        .collect()
}

async fn search_intents(State(s): St, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let result = (|| -> Result<Value, StripeError> {
        s.authorize(&headers)?;
        let params = query_params(&query);
        let text = params
            .iter()
            .find(|(k, _)| k == "query")
            .map(|(_, v)| v.clone())
            .ok_or_else(|| StripeError::missing("query"))?;
        let clauses = parse_search(&text).ok_or_else(|| {
            StripeError::invalid(
                Some("parameter_invalid_string"),
                format!(
                    "Invalid search query: {text}. The simulator understands \
                     metadata['key']:'value' and status:'value' clauses joined by AND."
                ),
                Some("query"),
            )
        })?;
        let limit = limit(&params)?;
        let expand = expands(&params, "data.latest_charge");
        let state = s.state.lock();
        let data: Vec<Value> = state
            .intents
            .iter()
            .rev()
            .filter(|i| {
                clauses.iter().all(|(field, value)| match field {
                    SearchField::Status => i.status() == value,
                    SearchField::Metadata(key) => {
                        i.json["metadata"][key].as_str() == Some(value.as_str())
                    }
                })
            })
            .take(limit)
            .map(|i| i.render(expand))
            .collect();
        Ok(json!({
            "object": "search_result",
            "data": data,
            "has_more": false,
            "next_page": null,
            "url": "/v1/payment_intents/search",
        }))
    })();
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => err.into_response(),
    }
}

async fn cancel_intent(
    State(s): St,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    const REASONS: &[&str] = &[
        "duplicate",
        "fraudulent",
        "requested_by_customer",
        "abandoned",
    ];
    let result = (|| {
        s.authorize(&headers)?;
        let mut reason = None;
        for (key, value) in form(&headers, &body)? {
            match key.as_str() {
                "cancellation_reason" if REASONS.contains(&value.as_str()) => reason = Some(value),
                "cancellation_reason" => {
                    return Err(StripeError::invalid(
                        Some("parameter_invalid_string"),
                        format!(
                            "Invalid cancellation_reason: must be one of {}",
                            REASONS.join(", ")
                        ),
                        Some("cancellation_reason"),
                    ));
                }
                k if is_list_item(k, "expand") => {}
                _ => {
                    return Err(StripeError::invalid(
                        Some("parameter_unknown"),
                        format!("Received unknown parameter: {key}"),
                        Some(&key),
                    ));
                }
            }
        }
        let mut state = s.state.lock();
        let intent = state
            .intents
            .iter_mut()
            .find(|i| i.id() == id)
            .ok_or_else(|| StripeError::no_such_intent(&id))?;
        if !CANCELABLE.contains(&intent.status()) {
            return Err(StripeError::invalid(
                Some("payment_intent_unexpected_state"),
                format!(
                    "You cannot cancel this PaymentIntent because it has a status of {}. Only a \
                     PaymentIntent with one of the following statuses may be canceled: {}.",
                    intent.status(),
                    CANCELABLE.join(", ")
                ),
                None,
            ));
        }
        let json = &mut intent.json;
        json["status"] = json!("canceled");
        json["canceled_at"] = json!(unix_now());
        json["cancellation_reason"] = json!(reason);
        json["next_action"] = Value::Null;
        Ok((
            intent.json.clone(),
            s.event("payment_intent.canceled", &intent.json),
        ))
    })();
    match result {
        Ok((json, notifications)) => {
            s.deliver_later(notifications);
            axum::Json(json).into_response()
        }
        Err(err) => err.into_response(),
    }
}

/// Sim only: the account's settings. `POST` a JSON patch; an empty body reads them.
async fn account(State(s): St, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Patch {
        pix_enabled: Option<bool>,
        country: Option<String>,
    }
    if !body.is_empty() {
        match serde_json::from_slice::<Patch>(&body) {
            Ok(patch) => {
                let mut state = s.state.lock();
                if let Some(v) = patch.pix_enabled {
                    state.account.pix_enabled = v;
                }
                if let Some(c) = patch.country {
                    state.account.country = c.to_ascii_uppercase();
                }
            }
            Err(e) => {
                let error = json!({ "error": { "code": "bad_request", "message": format!("bad JSON body: {e}") } });
                return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
            }
        }
    }
    let a = s.state.lock().account.clone();
    axum::Json(json!({ "pix_enabled": a.pix_enabled, "country": a.country })).into_response()
}

async fn not_found(method: http::Method, uri: http::Uri) -> Response {
    StripeError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: None,
        message: format!(
            "Unrecognized request URL ({method}: {}). Please see https://stripe.com/docs or we \
             can help at https://support.stripe.com/.",
            uri.path()
        ),
        param: None,
    }
    .into_response()
}

impl Psp for Stripe {
    fn credentials(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("secret-key".to_string(), self.secret_key.clone()),
            ("webhook-secret".to_string(), self.webhook_secret.clone()),
        ])
    }

    fn other_credentials(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut restricted = self.credentials();
        restricted.insert("secret-key".into(), self.restricted_key.clone());
        BTreeMap::from([("restricted".to_string(), restricted)])
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let router = Router::new()
            .route("/v1/payment_intents", post(create_intent).get(list_intents))
            .route("/v1/payment_intents/search", get(search_intents))
            .route("/v1/payment_intents/{id}", get(get_intent))
            .route("/v1/payment_intents/{id}/cancel", post(cancel_intent))
            .route("/_sim/account", get(account).post(account))
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
        let (kind, code, message) = if status == StatusCode::TOO_MANY_REQUESTS {
            (
                "invalid_request_error",
                Some("rate_limit"),
                "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.",
            )
        } else {
            ("api_error", None, "An unknown error occurred")
        };
        StripeError {
            status,
            kind,
            code,
            message: message.into(),
            param: None,
        }
        .into_response()
    }

    fn charges(&self) -> Vec<Value> {
        self.state
            .lock()
            .intents
            .iter()
            .map(Self::sim_view)
            .collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        let url = self.common.config.lock().webhook_url.clone();
        url.map(|url| json!({ "url": url, "enabled_events": ["*"] }))
            .into_iter()
            .collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        _info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut state = self.state.lock();
        let intent = Self::find(&mut state.intents, sel)?;
        if intent.status() != "requires_action" || intent.expired {
            return Err(ControlError::Conflict(format!(
                "PaymentIntent {} is {}{}, not awaiting a Pix payment",
                intent.id(),
                intent.status(),
                if intent.expired { " (expired)" } else { "" }
            )));
        }
        if amount.is_some_and(|a| json!(a) != intent.json["amount"]) {
            return Err(ControlError::BadRequest(
                "a Pix payment at Stripe pays exactly the PaymentIntent's amount".into(),
            ));
        }
        let notifications = self.succeed(intent);
        Ok(Payment {
            charge: Self::sim_view(intent),
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut state = self.state.lock();
        let intent = Self::find(&mut state.intents, sel)?;
        if intent.status() != "requires_action" {
            return Err(ControlError::Conflict(format!(
                "PaymentIntent {} is {}, not requires_action",
                intent.id(),
                intent.status()
            )));
        }
        intent.expired = true;
        let payment_method = intent.json["payment_method"].clone();
        let json = &mut intent.json;
        json["status"] = json!("requires_payment_method");
        json["next_action"] = Value::Null;
        json["last_payment_error"] = json!({
            "code": "payment_intent_payment_attempt_expired",
            "doc_url": "https://stripe.com/docs/error-codes/payment-intent-payment-attempt-expired",
            "message": "The latest payment attempt of this PaymentIntent has expired. Provide a \
                        new payment method to attempt to fulfill this PaymentIntent again.",
            "payment_method": { "id": payment_method, "type": "pix" },
            "type": "invalid_request_error",
        });
        let notifications = self.event("payment_intent.payment_failed", &intent.json);
        let view = Self::sim_view(intent);
        drop(state);
        self.deliver_later(notifications);
        Ok(view)
    }

    fn reset(&self) {
        *self.state.lock() = State_::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_keys_like_stripe() {
        assert_eq!(redact("sk_test_51abcdefgh1234"), "sk_test_****1234");
        assert_eq!(redact("sk_live_xyzw"), "sk_live_****xyzw");
        assert_eq!(redact("abc"), "****abc");
    }

    #[test]
    fn search_syntax() {
        let clauses = parse_search("metadata['reference']:'abc' AND status:\"succeeded\"").unwrap();
        assert!(
            matches!(&clauses[0], (SearchField::Metadata(k), v) if k == "reference" && v == "abc")
        );
        assert!(matches!(&clauses[1], (SearchField::Status, v) if v == "succeeded"));
        assert!(parse_search("reference:abc").is_none());
        assert!(parse_search("metadata['x']:abc").is_none());
    }

    #[test]
    fn list_items() {
        assert!(is_list_item(
            "payment_method_types[]",
            "payment_method_types"
        ));
        assert!(is_list_item(
            "payment_method_types[0]",
            "payment_method_types"
        ));
        assert!(!is_list_item(
            "payment_method_types[x]",
            "payment_method_types"
        ));
        assert!(!is_list_item(
            "payment_method_typesx",
            "payment_method_types"
        ));
    }
}
