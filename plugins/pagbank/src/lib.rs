//! PagBank (PagSeguro): a Pix charge is an order with one QR code (Orders API), Bearer token.
//!
//! PagBank's public API has no idempotency key for `POST /orders` and no lookup of orders by
//! `reference_id`: an order is found only by its `ORDE_…` id. The adapter remembers that id
//! by reference in the host's cache as soon as it sees it, so a query or a retried create with
//! only the reference finds the order; an order whose create answer never arrived cannot be
//! found (see `../README.md`, "Residual risk"). Facts and their sources in `../README.md`.

use pixgw_plugin_sdk::http::percent_encode;
use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::{error, time};
use serde::Deserialize;
use serde_json::json;

/// The item line PagBank lists when the request has no description.
const DEFAULT_ITEM: &str = "Cobrança Pix";
/// How long after its expiry an order's id is remembered by reference: the gateway asks
/// about an unsettled charge for days.
const ORDER_TTL: u32 = 30 * 86_400;

struct PagBank;

impl Adapter for PagBank {
    fn manifest() -> Manifest {
        Manifest {
            id: "pagbank",
            display_name: "PagBank",
            kind: "fintech",
            credential_fields: vec![CredentialField::secret("token", "Token").help(
                "In PagBank: Conta > Integrações > Gerar token (sandbox tokens come from the \
                 developer portal). Also checks each notification's x-authenticity-token.",
            )],
            // PagBank refuses an order whose customer has no CPF/CNPJ (`customer.tax_id`).
            required_payer_fields: vec![PayerField::Document],
            endpoints: vec![Endpoint::new(
                "api",
                "https://sandbox.api.pagseguro.com",
                "https://api.pagseguro.com",
            )],
            // Each order names its notification URL: ours, with the host's token in it.
            webhook_auth: WebhookAuth::UrlToken,
            // PagBank offers no cancellation of a QR-code order.
            capabilities: Capabilities::empty(),
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        let Some(tax_id) = request.payer.document.as_deref() else {
            return Err(Error::rejected(
                "PagBank requires the payer's CPF or CNPJ (payer.document)",
            )
            .because(Reason::PayerData));
        };
        // PagBank has no idempotency key: a retry whose first attempt was answered carries on
        // with that order instead of making a second one.
        if let Some(id) = host.cache_get(&order_key(&request.reference)) {
            match get_order(host, ctx, &id, &request.reference) {
                Err(Error::NotFound(_)) => host.cache_delete(&order_key(&request.reference)),
                known => return known,
            }
        }
        let mut customer = json!({ "tax_id": tax_id });
        if let Some(name) = &request.payer.name {
            customer["name"] = json!(name);
        }
        if let Some(email) = &request.payer.email {
            customer["email"] = json!(email);
        }
        let item = request
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .unwrap_or(DEFAULT_ITEM);
        let mut body = json!({
            "reference_id": request.reference,
            "customer": customer,
            "items": [{ "name": item, "quantity": 1, "unit_amount": request.amount }],
            "qr_codes": [{
                "amount": { "value": request.amount },
                "expiration_date": brasilia(time::now_unix() + i64::from(request.expires_in)),
            }],
        });
        if let Some(url) = &ctx.webhook_url {
            body["notification_urls"] = json!([url]);
        }
        let post = Request::post(format!("{}/orders", ctx.endpoint("api")?)).json(&body);
        let response = send(host, ctx, Op::Create, post)?;
        let charge = charge_of(Op::Create, &response, &request.reference)?;
        host.cache_set(
            &order_key(&request.reference),
            &charge.psp_id,
            request.expires_in.saturating_add(ORDER_TTL),
        );
        Ok(charge)
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let remembered = host.cache_get(&order_key(reference));
        match psp_id.or(remembered.as_deref()) {
            Some(id) => get_order(host, ctx, id, reference),
            // PagBank cannot look orders up by reference_id. An order whose create answer was
            // lost is unknown here, and nobody was given its QR code: it lapses unpaid.
            None => Err(Error::not_found(format!(
                "no PagBank order is known for reference_id {reference} (PagBank's API finds \
                 orders by id only, and no create answer with an id arrived)"
            ))),
        }
    }

    /// The order, POSTed to its notification URL. `x-authenticity-token`, when present, must be
    /// SHA-256 hex of `<token>-<raw body>`; the host confirms any payment by query anyway.
    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        let presented = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("x-authenticity-token"))
            .map(|(_, value)| value.trim().to_ascii_lowercase());
        if let Some(presented) = presented {
            let token = ctx.field("token").map_err(|_| {
                Error::invalid_webhook("no token in the credential to check x-authenticity-token")
            })?;
            // The separator is unverified: `<token>-<body>` first, then `<token><body>`.
            let authentic = [&b"-"[..], b""].iter().any(|separator| {
                let digest = host.sha256(&[token.as_bytes(), separator, &request.body].concat());
                host.constant_time_eq(hex(&digest).as_bytes(), presented.as_bytes())
            });
            if !authentic {
                return Err(Error::invalid_webhook(
                    "x-authenticity-token does not match the notification",
                ));
            }
        }
        let order: Order = serde_json::from_slice(&request.body).map_err(|e| {
            Error::invalid_webhook(format!("the notification is not a PagBank order: {e}"))
        })?;
        let reference = order.reference_id.clone().unwrap_or_default();
        let charge = order
            .into_charge(&reference, time::now_unix())
            .map_err(|e| Error::invalid_webhook(format!("the notification's order: {e}")))?;
        if charge.status != ChargeStatus::Paid {
            return Ok(Vec::new());
        }
        Ok(vec![PaymentEvent::from(charge)])
    }
}

/// The cache key of the order id created for a reference.
fn order_key(reference: &str) -> String {
    format!("order:{reference}")
}

/// `GET /orders/{id}`.
fn get_order(host: &dyn Host, ctx: &Context, id: &str, reference: &str) -> Result<Charge, Error> {
    let url = format!("{}/orders/{}", ctx.endpoint("api")?, percent_encode(id));
    let response = send(host, ctx, Op::Read, Request::get(url))?;
    charge_of(Op::Read, &response, reference)
}

/// Sends a request with the account's bearer token; a non-2xx answer becomes an error carrying
/// PagBank's `error_messages`.
fn send(host: &dyn Host, ctx: &Context, op: Op, request: Request) -> Result<Response, Error> {
    request.bearer(ctx.field("token")?).call(host, op, describe)
}

/// `{"error_messages":[{code, description, parameter_name?}]}` → descriptions (each with its
/// parameter) joined, the first code, the reason from the first parameter (or code) that says
/// one; any other body as the SDK reads it.
fn describe(status: u16, body: &[u8]) -> PspError {
    #[derive(Deserialize)]
    struct Body {
        error_messages: Vec<Message>,
    }
    #[derive(Deserialize)]
    struct Message {
        code: Option<serde_json::Value>,
        description: Option<String>,
        parameter_name: Option<String>,
    }
    let Ok(Body { error_messages }) = serde_json::from_slice(body) else {
        return error::describe_body(status, body);
    };
    let message: Vec<String> = error_messages
        .iter()
        .filter_map(|m| {
            let description = m.description.as_deref()?;
            Some(match &m.parameter_name {
                Some(parameter) => format!("{description} ({parameter})"),
                None => description.to_owned(),
            })
        })
        .collect();
    if message.is_empty() {
        return error::describe_body(status, body);
    }
    let code = error_messages.iter().find_map(|m| match &m.code {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    let reason = error_messages
        .iter()
        .map(|m| match (m.parameter_name.as_deref(), code.as_deref()) {
            (Some(parameter), _) => parameter_reason(parameter),
            (None, Some("NOT_FOUND")) => Reason::NotFound,
            (None, Some("UNAUTHORIZED")) => Reason::Credentials,
            (None, _) => Reason::Unspecified,
        })
        .find(|r| *r != Reason::Unspecified)
        .unwrap_or(Reason::Unspecified);
    PspError::with_code(message.join("; "), code).because(reason)
}

/// The order's parameter PagBank refused: `qr_codes[0].amount.value` is the amount,
/// `customer.*` the payer.
fn parameter_reason(parameter: &str) -> Reason {
    if parameter.starts_with("customer") {
        Reason::PayerData
    } else if parameter.contains("amount") {
        Reason::Amount
    } else {
        Reason::Unspecified
    }
}

/// The charge in an order answer; an answer we cannot read after a create is ambiguous.
fn charge_of(op: Op, response: &Response, reference: &str) -> Result<Charge, Error> {
    let order: Order = response.decode(op)?;
    order
        .into_charge(reference, time::now_unix())
        .map_err(|e| error::undecodable(op, response.status, e))
}

/// RFC 3339 in Brasília time (`2026-01-02T09:00:00-03:00`), as PagBank writes its dates.
fn brasilia(unix_seconds: i64) -> String {
    let utc = time::format_rfc3339(unix_seconds + time::SAO_PAULO_OFFSET_SECONDS);
    format!("{}-03:00", utc.trim_end_matches('Z'))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An order: the fields the gateway reads.
#[derive(Deserialize)]
struct Order {
    id: String,
    reference_id: Option<String>,
    #[serde(default)]
    qr_codes: Vec<QrCode>,
    #[serde(default)]
    charges: Vec<OrderCharge>,
}

#[derive(Deserialize)]
struct QrCode {
    text: Option<String>,
    expiration_date: Option<String>,
    amount: Amount,
}

#[derive(Deserialize)]
struct Amount {
    value: u64,
}

#[derive(Deserialize)]
struct OrderCharge {
    status: String,
    amount: Option<Amount>,
    paid_at: Option<String>,
    payment_method: Option<PaymentMethod>,
}

#[derive(Deserialize)]
struct PaymentMethod {
    pix: Option<PixDetails>,
}

#[derive(Deserialize)]
struct PixDetails {
    end_to_end_id: Option<String>,
}

impl Order {
    /// Paid when a charge is `PAID`; expired when unpaid past the QR code's expiration date.
    fn into_charge(self, reference: &str, now: i64) -> Result<Charge, String> {
        let qr = self
            .qr_codes
            .into_iter()
            .next()
            .ok_or("the order has no qr_codes")?;
        let expires = qr
            .expiration_date
            .as_deref()
            .map(time::parse_rfc3339)
            .transpose()?;
        let payment = self
            .charges
            .into_iter()
            .find(|c| c.status == "PAID")
            .map(|c| Payment {
                end_to_end_id: c.payment_method.and_then(|m| m.pix?.end_to_end_id),
                amount: c.amount.map_or(qr.amount.value, |a| a.value),
                paid_at: c.paid_at.unwrap_or_else(|| time::format_rfc3339(now)),
            });
        let status = match (&payment, expires) {
            (Some(_), _) => ChargeStatus::Paid,
            (None, Some(at)) if at <= now => ChargeStatus::Expired,
            (None, _) => ChargeStatus::Pending,
        };
        Ok(Charge {
            reference: self.reference_id.unwrap_or_else(|| reference.to_owned()),
            psp_id: self.id,
            status,
            amount: qr.amount.value,
            copy_paste: qr.text.filter(|t| !t.is_empty()),
            // `links[rel=QRCODE.BASE64]` is a URL outside the API's origin: the host draws one.
            qr_png_base64: None,
            expires_at: expires.map(time::format_rfc3339),
            payment,
        })
    }
}

export!(PagBank);

#[cfg(test)]
mod tests;
