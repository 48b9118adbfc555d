//! iugu: a Pix charge is an invoice payable only by Pix.
//!
//! HTTP Basic with the API token as user and a blank password; JSON requests; the copy-paste
//! code in `pix.qrcode_text`. Notifications are iugu's `invoice.status_changed` trigger, a
//! form-encoded POST to the URL the merchant registers. A trigger is only an event and a URL
//! (no custom headers), so the host's token rides in that URL's query; the adapter reads the
//! invoice id from the form and asks iugu for the invoice before saying anything. Facts and
//! their sources in `../README.md`.

use pixgw_plugin_sdk::error::{self, describe_body};
use pixgw_plugin_sdk::http::percent_encode;
use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::time;
use serde::Deserialize;
use serde_json::{Value, json};

/// iugu's facts (sources in `../README.md`): one host for both environments, the token
/// decides.
const API: &str = "api";
const BASE_URL: &str = "https://api.iugu.com";
const TOKEN: &str = "api-token";
const DEFAULT_EMAIL: &str = "default-email";
/// The custom variable that carries the gateway's reference.
const REFERENCE: &str = "reference";
/// The only trigger that says anything about a charge.
const STATUS_CHANGED: &str = "invoice.status_changed";
/// How long a create attempt is remembered, so that a retry looks for its invoice first.
const ATTEMPT_TTL: u32 = 14 * 86_400;

struct Iugu;

impl Adapter for Iugu {
    fn manifest() -> Manifest {
        Manifest {
            id: "iugu",
            display_name: "iugu",
            kind: "invoicing PSP",
            credential_fields: vec![
                CredentialField::secret(TOKEN, "API token").help(
                    "In iugu's dashboard: Settings > API tokens, the live token. iugu's test \
                     and live tokens share one host and cannot be told apart, so the test \
                     environment does not take iugu: try it live with a small amount.",
                ),
                CredentialField::text(DEFAULT_EMAIL, "Default payer e-mail")
                    .optional()
                    .help(
                        "iugu requires an e-mail on every invoice: this address is used when a \
                         charge has no payer.email (iugu may send the invoice to it).",
                    ),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(API, BASE_URL, BASE_URL)],
            // A trigger is an event and a URL, nothing else: the token must be in the URL.
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: Capabilities::CANCEL_CHARGE | Capabilities::CHECK_CREDENTIALS,
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        // Also here, not only when the credential was saved: a test charge must never be an
        // invoice someone can pay for real.
        environment_checkable(ctx)?;
        create_at(host, ctx, request, time::now_unix())
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let invoice = match psp_id {
            Some(id) => get_invoice(host, ctx, id)?,
            None => find_by_reference(host, ctx, reference)?.ok_or_else(|| not_found(reference))?,
        };
        charge(&invoice, reference).map_err(|e| error::undecodable(Op::Read, 200, e))
    }

    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&request.body)
            .map_err(|e| Error::invalid_webhook(format!("the trigger is not a form: {e}")))?;
        let value = |name: &str| {
            form.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        if value("event") != Some(STATUS_CHANGED) {
            return Ok(Vec::new());
        }
        let id = value("data[id]")
            .filter(|id| !id.is_empty())
            .ok_or_else(|| Error::invalid_webhook("the trigger has no data[id]"))?;
        // The form is not signed: what iugu says now about the invoice is what counts.
        let invoice = get_invoice(host, ctx, id)?;
        let charge = charge(&invoice, "").map_err(|e| error::undecodable(Op::Read, 200, e))?;
        Ok(vec![PaymentEvent::from(charge)])
    }

    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let id = match psp_id {
            Some(id) => id.to_owned(),
            None => {
                find_by_reference(host, ctx, reference)?
                    .ok_or_else(|| not_found(reference))?
                    .id
            }
        };
        let path = format!("/v1/invoices/{}/cancel", percent_encode(&id));
        let response = call(host, ctx, Op::Change, Method::Put, &path, None)?;
        let invoice: Invoice = response.decode(Op::Change)?;
        charge(&invoice, reference).map_err(|e| error::undecodable(Op::Change, response.status, e))
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        environment_checkable(ctx)?;
        call(
            host,
            ctx,
            Op::Read,
            Method::Get,
            "/v1/invoices?limit=1",
            None,
        )
        .map(drop)
    }
}

export!(Iugu);

/// iugu's own host serves test and live alike and the token alone decides, yet iugu publishes
/// no way to ask which kind a token is (README, "Test or live"). A live token saved in the test
/// environment would make every test charge a real, payable invoice, so the test environment
/// does not call iugu's own host at all: it takes iugu only where the operator points the
/// endpoint elsewhere (a simulator). To try iugu for real, use the live environment with a
/// small amount.
fn environment_checkable(ctx: &Context) -> Result<(), Error> {
    let at_iugu = ctx.endpoint(API)? == BASE_URL;
    if matches!(ctx.environment, Environment::Test) && at_iugu {
        return Err(Error::BadCredentials(
            PspError::with_code(
                "iugu cannot be used in the test environment: iugu's test and live tokens share \
                 one host and iugu offers no way to check that a token is a test token, so a \
                 live token here would make test charges real invoices. To try iugu, connect \
                 your live token in the live environment and charge a small amount (then \
                 cancel it); to test an integration without real money, use another PSP's \
                 test environment.",
                Some("test_environment_unverifiable".into()),
            )
            .because(Reason::Credentials),
        ));
    }
    Ok(())
}

/// `POST /v1/invoices`, with `now` (Unix seconds) deciding the due date.
fn create_at(
    host: &dyn Host,
    ctx: &Context,
    request: &ChargeRequest,
    now: i64,
) -> Result<Charge, Error> {
    let email = request
        .payer
        .email
        .as_deref()
        .filter(|e| !e.trim().is_empty())
        .or(ctx.optional_field(DEFAULT_EMAIL))
        .ok_or_else(|| {
            Error::rejected(
                "iugu requires an e-mail on every invoice: give payer.email, or set the \
                 credential's default payer e-mail (default-email)",
            )
            .because(Reason::PayerData)
        })?;
    let mut body = json!({
        "email": email,
        "due_date": time::sao_paulo_date(now + i64::from(request.expires_in)),
        "items": [{
            "description": request.description.as_deref().filter(|d| !d.is_empty()).unwrap_or("Pix"),
            "quantity": 1,
            "price_cents": request.amount,
        }],
        "payable_with": "pix",
        "custom_variables": [{"name": REFERENCE, "value": request.reference}],
    });
    let payer = &request.payer;
    if payer.document.is_some() || payer.name.is_some() {
        let mut p = json!({});
        if let Some(document) = &payer.document {
            p["cpf_cnpj"] = json!(document);
        }
        if let Some(name) = &payer.name {
            p["name"] = json!(name);
        }
        body["payer"] = p;
    }
    // iugu has no idempotency key: a retry of a create that may have reached iugu, or whose
    // answer was lost, looks for the invoice carrying this reference before creating another.
    let once = CreateOnce::new(host, &request.reference, ATTEMPT_TTL, || {
        find_by_reference(host, ctx, &request.reference)
    });
    let invoice = match once.earlier()? {
        Some(invoice) => invoice,
        None => once.create(|| {
            call(
                host,
                ctx,
                Op::Create,
                Method::Post,
                "/v1/invoices",
                Some(&body),
            )
        })?,
    };
    created(host, ctx, &invoice, &request.reference)
}

/// A created invoice as a charge; one without a Pix code is canceled and refused.
fn created(
    host: &dyn Host,
    ctx: &Context,
    invoice: &Invoice,
    reference: &str,
) -> Result<Charge, Error> {
    let has_pix = invoice
        .pix
        .as_ref()
        .and_then(|p| p.qrcode_text.as_deref())
        .is_some_and(|t| !t.is_empty());
    if !has_pix {
        // Payable with Pix only and without a Pix code, nobody can pay it: cancel it so that
        // `rejected` ("no charge exists") holds.
        let path = format!("/v1/invoices/{}/cancel", percent_encode(&invoice.id));
        let canceled = call(host, ctx, Op::Change, Method::Put, &path, None);
        let mut message = format!(
            "iugu created invoice {} without a Pix QR code: Pix was not among the payable \
             methods, Pix is not enabled for this iugu account",
            invoice.id
        );
        match canceled {
            Ok(_) => message.push_str("; the invoice was canceled"),
            Err(e) => {
                let why = e.psp_error().map(|p| p.message.clone()).unwrap_or_default();
                message.push_str(&format!("; canceling the invoice failed: {why}"));
            }
        }
        return Err(Error::Rejected(
            PspError::with_code(message, Some("pix_not_payable".into()))
                .because(Reason::PixNotOffered),
        ));
    }
    charge(invoice, reference).map_err(|e| error::undecodable(Op::Create, 200, e))
}

/// `GET /v1/invoices/{id}`.
fn get_invoice(host: &dyn Host, ctx: &Context, id: &str) -> Result<Invoice, Error> {
    let path = format!("/v1/invoices/{}", percent_encode(id));
    call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)
}

/// `GET /v1/invoices?query=<reference>`, then the invoice whose `reference` custom variable
/// is exactly this one (the search is full-text).
fn find_by_reference(
    host: &dyn Host,
    ctx: &Context,
    reference: &str,
) -> Result<Option<Invoice>, Error> {
    #[derive(Deserialize)]
    struct List {
        #[serde(default)]
        items: Vec<Invoice>,
    }
    let path = format!("/v1/invoices?query={}&limit=100", percent_encode(reference));
    let list: List = call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)?;
    Ok(list
        .items
        .into_iter()
        .find(|i| i.reference() == Some(reference)))
}

fn not_found(reference: &str) -> Error {
    Error::not_found(format!(
        "iugu has no invoice with the custom variable reference={reference}"
    ))
}

/// An authenticated request to iugu; an answer that is not a success becomes an error
/// ([`describe`]).
fn call(
    host: &dyn Host,
    ctx: &Context,
    op: Op,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Response, Error> {
    let mut request = Request::new(method, format!("{}{path}", ctx.endpoint(API)?))
        .basic(ctx.field(TOKEN)?, "")
        .header("accept", "application/json");
    if let Some(body) = body {
        request = request.json(body);
    }
    request.call(host, op, describe)
}

/// iugu's error bodies: `{"errors": "Unauthorized"}` or, for validation,
/// `{"errors": {"field": ["message", …]}}` → `"field: message; …"`, the reason from the first
/// field it names (`payable_with`: the account does not take Pix).
fn describe(status: u16, body: &[u8]) -> PspError {
    let errors = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("errors").cloned());
    let (message, reason) = match errors {
        Some(Value::String(message)) if !message.is_empty() => (message, Reason::Unspecified),
        Some(Value::Object(fields)) if !fields.is_empty() => {
            let message = fields
                .iter()
                .map(|(field, messages)| {
                    let text = match messages {
                        Value::Array(list) => list
                            .iter()
                            .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(", "),
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    format!("{field}: {text}")
                })
                .collect::<Vec<_>>()
                .join("; ");
            let reason = fields
                .keys()
                .map(|f| field_reason(f))
                .find(|r| *r != Reason::Unspecified)
                .unwrap_or(Reason::Unspecified);
            (message, reason)
        }
        _ => return describe_body(status, body),
    };
    PspError::new(message).because(reason)
}

/// What a field of `POST /v1/invoices` refused says must be fixed.
fn field_reason(field: &str) -> Reason {
    match field.rsplit('.').next().unwrap_or(field) {
        "payable_with" => Reason::PixNotEnabled,
        "price_cents" | "total" | "total_cents" => Reason::Amount,
        "email" | "cpf_cnpj" | "name" => Reason::PayerData,
        _ => Reason::Unspecified,
    }
}

/// The fields of an invoice the gateway reads.
#[derive(Debug, Deserialize)]
struct Invoice {
    id: String,
    status: String,
    #[serde(default)]
    total_cents: Option<u64>,
    #[serde(default)]
    due_date: Option<String>,
    #[serde(default)]
    paid_at: Option<String>,
    #[serde(default)]
    paid_cents: Option<u64>,
    #[serde(default)]
    total_paid_cents: Option<u64>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    custom_variables: Option<Vec<Variable>>,
    #[serde(default)]
    pix: Option<InvoicePix>,
}

#[derive(Debug, Deserialize)]
struct Variable {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Debug, Deserialize)]
struct InvoicePix {
    #[serde(default)]
    qrcode_text: Option<String>,
    #[serde(default)]
    end_to_end_id: Option<String>,
}

impl Invoice {
    fn reference(&self) -> Option<&str> {
        self.custom_variables
            .iter()
            .flatten()
            .find(|v| v.name == REFERENCE)
            .and_then(|v| v.value.as_deref())
    }
}

/// iugu's invoice statuses → the gateway's.
fn status(status: &str) -> ChargeStatus {
    match status {
        "paid" | "partially_refunded" => ChargeStatus::Paid,
        "canceled" | "refunded" | "chargeback" => ChargeStatus::Canceled,
        "expired" => ChargeStatus::Expired,
        "partially_paid" | "in_analysis" | "authorized" | "in_protest" => ChargeStatus::Processing,
        // `pending`, `draft` and anything new: still payable as far as we know.
        _ => ChargeStatus::Pending,
    }
}

/// An invoice as a charge; `reference` is the caller's, else the invoice's custom variable.
fn charge(invoice: &Invoice, reference: &str) -> Result<Charge, String> {
    let amount = invoice
        .total_cents
        .ok_or("the invoice has no total_cents")?;
    let status = status(&invoice.status);
    let payment = match status {
        ChargeStatus::Paid => Some(Payment {
            end_to_end_id: invoice
                .pix
                .as_ref()
                .and_then(|p| p.end_to_end_id.clone())
                .filter(|e| !e.is_empty()),
            amount: invoice
                .paid_cents
                .or(invoice.total_paid_cents)
                .unwrap_or(amount),
            paid_at: invoice
                .paid_at
                .as_deref()
                .or(invoice.updated_at.as_deref())
                .map(utc)
                .ok_or("a paid invoice without paid_at")?,
        }),
        _ => None,
    };
    let reference = match reference {
        "" => invoice.reference().unwrap_or_default(),
        given => given,
    };
    Ok(Charge {
        reference: reference.to_owned(),
        psp_id: invoice.id.clone(),
        status,
        amount,
        copy_paste: invoice
            .pix
            .as_ref()
            .and_then(|p| p.qrcode_text.clone())
            .filter(|c| !c.is_empty()),
        // `pix.qrcode` is an image URL on iugu's site, out of the adapter's reach: the host
        // draws the QR from the copy-paste code.
        qr_png_base64: None,
        expires_at: invoice
            .due_date
            .as_deref()
            .and_then(|d| time::sao_paulo_end_of_day(d).ok()),
        payment,
    })
}

/// An RFC 3339 time in UTC; anything else is kept as iugu wrote it.
fn utc(text: &str) -> String {
    time::parse_rfc3339(text)
        .map(time::format_rfc3339)
        .unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests;
