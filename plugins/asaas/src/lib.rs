//! Asaas (API v3): a Pix charge is a `PIX` payment of a customer, and the customer is found or
//! created by CPF/CNPJ.
//!
//! Every call carries the API key in the `access_token` header and a `User-Agent` (Asaas
//! refuses requests without one). The customer id is kept in the host's cache under a hash of
//! the document, so the next charge for the same payer goes straight to `POST /v3/payments`.
//! Notifications are JSON `{id, event, payment}` whose `asaas-access-token` header the host
//! checks; the adapter reads the payment from them.
//!
//! An overdue Pix payment stays payable at Asaas (its QR code lasts 12 months past the due
//! date), so the charge's expiry is the adapter's to enforce: a query that finds a payment
//! still payable past the charge's expiry deletes it at Asaas and only then says `expired`.
//! Facts and their sources in `../README.md`.

use pixgw_plugin_sdk::error::{self, describe_body};
use pixgw_plugin_sdk::http::percent_encode;
use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::{money, time};
use serde::Deserialize;
use serde_json::{Value, json};

/// Asaas's facts (sources in `../README.md`).
const API: &str = "api";
const SANDBOX_URL: &str = "https://api-sandbox.asaas.com";
const PRODUCTION_URL: &str = "https://api.asaas.com";
const KEY: &str = "api-key";
/// The environment prefixes of current keys; older keys have neither and still work.
const SANDBOX_KEYS: &[&str] = &["$aact_hmlg_"];
const PRODUCTION_KEYS: &[&str] = &["$aact_prod_"];
const USER_AGENT: &str = "pixgw";
/// The error code of a payment for a customer Asaas does not know (e.g. deleted since cached).
const UNKNOWN_CUSTOMER: &str = "invalid_customer";
/// A customer id is stable; keep it for 90 days.
const CUSTOMER_TTL: u32 = 90 * 86_400;
/// How long a create attempt is remembered, so that a retry looks for its payment first.
const ATTEMPT_TTL: u32 = 14 * 86_400;
/// How long after its expiry a charge's exact expiry is remembered: the gateway asks about an
/// unsettled charge for days.
const EXPIRY_TTL: u32 = 30 * 86_400;

struct Asaas;

impl Adapter for Asaas {
    fn manifest() -> Manifest {
        Manifest {
            id: "asaas",
            display_name: "Asaas",
            kind: "invoicing PSP",
            credential_fields: vec![
                // No `value-prefix`: keys issued before the environment prefixes have none and
                // still work; a key of the other environment is refused by `call`.
                CredentialField::secret(KEY, "API key").help(
                    "In Asaas: Integrations > API key. Sandbox keys start with $aact_hmlg_, \
                     production keys with $aact_prod_ (older keys have neither).",
                ),
            ],
            required_payer_fields: vec![PayerField::Document],
            endpoints: vec![Endpoint::new(API, SANDBOX_URL, PRODUCTION_URL)],
            webhook_auth: WebhookAuth::HeaderToken("asaas-access-token".into()),
            capabilities: Capabilities::CANCEL_CHARGE | Capabilities::CHECK_CREDENTIALS,
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        create_at(host, ctx, request, time::now_unix())
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        query_at(host, ctx, reference, psp_id, time::now_unix())
    }

    fn parse_webhook(
        _: &dyn Host,
        _: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        #[derive(Deserialize)]
        struct Notification {
            event: String,
            #[serde(default)]
            payment: Option<AsaasPayment>,
        }
        // The host checked the `asaas-access-token` header (the token the merchant set at
        // Asaas); the body is not signed, and the host confirms with `query-charge`.
        let notification: Notification = serde_json::from_slice(&request.body)
            .map_err(|e| Error::invalid_webhook(format!("not an Asaas notification: {e}")))?;
        let Some(payment) = notification
            .payment
            .filter(|_| notification.event.starts_with("PAYMENT_"))
        else {
            return Ok(Vec::new());
        };
        let mut charge = charge(&payment).map_err(Error::invalid_webhook)?;
        if notification.event == "PAYMENT_DELETED" {
            charge.status = ChargeStatus::Canceled;
        }
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
        let path = format!("/v3/payments/{}", percent_encode(&id));
        call(host, ctx, Op::Change, Method::Delete, &path, None)?;
        let payment = get_payment(host, ctx, &id)?;
        let mut charge = charge(&payment).map_err(|e| error::undecodable(Op::Change, 200, e))?;
        // Deleted is deleted, whatever status Asaas still shows.
        charge.status = ChargeStatus::Canceled;
        charge.reference = reference.to_owned();
        Ok(charge)
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        call(
            host,
            ctx,
            Op::Read,
            Method::Get,
            "/v3/customers?limit=1",
            None,
        )
        .map(drop)
    }
}

export!(Asaas);

/// The charge's state at `now`; a payment still payable past the charge's expiry is lapsed.
fn query_at(
    host: &dyn Host,
    ctx: &Context,
    reference: &str,
    psp_id: Option<&str>,
    now: i64,
) -> Result<Charge, Error> {
    let payment = match psp_id {
        Some(id) => get_payment(host, ctx, id)?,
        None => find_by_reference(host, ctx, reference)?.ok_or_else(|| not_found(reference))?,
    };
    let expiry = expiry_of(host, reference, &payment);
    let mut charge = charge(&payment).map_err(|e| error::undecodable(Op::Read, 200, e))?;
    charge.reference = reference.to_owned();
    charge.expires_at = expiry.map(time::format_rfc3339);
    if charge.status != ChargeStatus::Pending {
        return Ok(charge);
    }
    if expiry.is_some_and(|at| at <= now) {
        return lapse(host, ctx, &payment, charge);
    }
    // Best effort: the state is what was asked; the code helps a caller that lost it.
    if let Ok(qr) = qr_code(host, ctx, &payment.id) {
        (charge.copy_paste, charge.qr_png_base64) = (Some(qr.payload), qr.encoded_image);
    }
    Ok(charge)
}

/// Deletes at Asaas a payment the charge's expiry has passed, so its QR code (payable for
/// months after the due date) can no longer be paid, and reports it `expired`. A payment paid
/// meanwhile cannot be deleted and is reported as it is; a payment that could not be deleted
/// is an error, so that nobody takes the charge for expired while it can still be paid.
fn lapse(
    host: &dyn Host,
    ctx: &Context,
    payment: &AsaasPayment,
    pending: Charge,
) -> Result<Charge, Error> {
    let path = format!("/v3/payments/{}", percent_encode(&payment.id));
    let refused = match call(host, ctx, Op::Change, Method::Delete, &path, None) {
        Ok(_) => None,
        // E.g. `invalid_action`: received in the meantime. What Asaas holds now decides.
        Err(Error::Rejected(e)) => Some(e.message),
        Err(e) => return Err(e),
    };
    let now = get_payment(host, ctx, &payment.id)?;
    let mut charge = charge(&now).map_err(|e| error::undecodable(Op::Read, 200, e))?;
    (charge.reference, charge.expires_at) = (pending.reference, pending.expires_at);
    match charge.status {
        ChargeStatus::Canceled => charge.status = ChargeStatus::Expired,
        ChargeStatus::Pending => {
            return Err(Error::unavailable(format!(
                "Asaas payment {} is past the charge's expiry but could not be deleted: {}",
                payment.id,
                refused.unwrap_or_else(|| "it is still payable".into())
            )));
        }
        _ => {}
    }
    Ok(charge)
}

/// The cache key of a charge's exact expiry (Unix seconds), set when it is created.
fn expiry_key(reference: &str) -> String {
    format!("expires:{reference}")
}

/// When the charge stops being payable: its exact expiry when this adapter created it, else
/// the end of the payment's due date in São Paulo.
fn expiry_of(host: &dyn Host, reference: &str, payment: &AsaasPayment) -> Option<i64> {
    host.cache_get(&expiry_key(reference))
        .and_then(|at| at.parse().ok())
        .or_else(|| {
            let end = time::sao_paulo_end_of_day(payment.due_date.as_deref()?).ok()?;
            time::parse_rfc3339(&end).ok()
        })
}

/// Customer, then `POST /v3/payments`, then `GET …/pixQrCode`; `now` decides the due date.
fn create_at(
    host: &dyn Host,
    ctx: &Context,
    request: &ChargeRequest,
    now: i64,
) -> Result<Charge, Error> {
    let document = request
        .payer
        .document
        .as_deref()
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            Error::rejected("Asaas requires the payer's CPF or CNPJ (payer.document)")
                .because(Reason::PayerData)
        })?;
    // Asaas has no idempotency key: a retry of a create that may have reached Asaas, or whose
    // answer was lost, looks for the payment carrying this externalReference before creating
    // another.
    let once = CreateOnce::new(host, &request.reference, ATTEMPT_TTL, || {
        find_by_reference(host, ctx, &request.reference)
    });
    if let Some(payment) = once.earlier()? {
        return with_qr_code(host, ctx, &payment, &request.reference);
    }
    let name = request
        .payer
        .name
        .as_deref()
        .filter(|n| !n.trim().is_empty());
    let (mut customer, mut cached) = customer_id(host, ctx, document, name)?;
    let expires_at = now + i64::from(request.expires_in);
    host.cache_set(
        &expiry_key(&request.reference),
        &expires_at.to_string(),
        request.expires_in.saturating_add(EXPIRY_TTL),
    );
    let mut body = json!({
        "customer": customer,
        "billingType": "PIX",
        "value": money::json_number(request.amount),
        "dueDate": time::sao_paulo_date(expires_at),
        "externalReference": request.reference,
    });
    if let Some(description) = request.description.as_deref().filter(|d| !d.is_empty()) {
        body["description"] = json!(description);
    }
    let payment = once.create(|| {
        loop {
            body["customer"] = json!(customer);
            match call(
                host,
                ctx,
                Op::Create,
                Method::Post,
                "/v3/payments",
                Some(&body),
            ) {
                // A customer id from the cache that Asaas no longer knows: look it up afresh,
                // once.
                Err(Error::Rejected(e))
                    if cached && e.code.as_deref() == Some(UNKNOWN_CUSTOMER) =>
                {
                    host.cache_delete(&customer_key(host, document));
                    (customer, cached) = customer_id(host, ctx, document, name)?;
                }
                answer => return answer,
            }
        }
    })?;
    with_qr_code(host, ctx, &payment, &request.reference)
}

/// A created payment as a charge, with its Pix code. Without the code the charge is of no use
/// yet, but it exists: `ambiguous`, so that the host queries (which fetches the code again).
fn with_qr_code(
    host: &dyn Host,
    ctx: &Context,
    payment: &AsaasPayment,
    reference: &str,
) -> Result<Charge, Error> {
    let mut charge = charge(payment).map_err(|e| error::undecodable(Op::Create, 200, e))?;
    charge.expires_at = expiry_of(host, reference, payment).map(time::format_rfc3339);
    if charge.status != ChargeStatus::Pending {
        return Ok(charge);
    }
    let qr = qr_code(host, ctx, &payment.id).map_err(|e| {
        let why = e.psp_error().map(|p| p.message.clone()).unwrap_or_default();
        Error::Ambiguous(PspError::new(format!(
            "Asaas created payment {} but its Pix QR code could not be read: {why}",
            payment.id
        )))
    })?;
    (charge.copy_paste, charge.qr_png_base64) = (Some(qr.payload), qr.encoded_image);
    Ok(charge)
}

/// The customer with this CPF/CNPJ: from the cache, else `GET /v3/customers?cpfCnpj=`, else
/// `POST /v3/customers`. Also says whether the id came from the cache.
fn customer_id(
    host: &dyn Host,
    ctx: &Context,
    document: &str,
    name: Option<&str>,
) -> Result<(String, bool), Error> {
    #[derive(Deserialize)]
    struct Customer {
        id: String,
        #[serde(default)]
        deleted: bool,
    }
    let key = customer_key(host, document);
    if let Some(id) = host.cache_get(&key) {
        return Ok((id, true));
    }
    let path = format!("/v3/customers?cpfCnpj={}", percent_encode(document));
    let list: List<Customer> =
        call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)?;
    let id = match list.data.into_iter().find(|c| !c.deleted) {
        Some(customer) => customer.id,
        None => {
            // Asaas wants a name; a payer without one is named by the document.
            let body = json!({"name": name.unwrap_or(document), "cpfCnpj": document});
            // No charge exists yet, so a lost answer is safe to retry anywhere (at worst Asaas
            // keeps a second customer record): classified as a read.
            let response = call(
                host,
                ctx,
                Op::Read,
                Method::Post,
                "/v3/customers",
                Some(&body),
            )?;
            response.decode::<Customer>(Op::Read)?.id
        }
    };
    host.cache_set(&key, &id, CUSTOMER_TTL);
    Ok((id, false))
}

/// The cache key of a document's customer: a hash, so no CPF is stored in the clear.
fn customer_key(host: &dyn Host, document: &str) -> String {
    let digest = host.sha256(document.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("customer:{hex}")
}

fn get_payment(host: &dyn Host, ctx: &Context, id: &str) -> Result<AsaasPayment, Error> {
    let path = format!("/v3/payments/{}", percent_encode(id));
    call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)
}

/// `GET /v3/payments?externalReference=<reference>`.
fn find_by_reference(
    host: &dyn Host,
    ctx: &Context,
    reference: &str,
) -> Result<Option<AsaasPayment>, Error> {
    let path = format!(
        "/v3/payments?externalReference={}",
        percent_encode(reference)
    );
    let list: List<AsaasPayment> =
        call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)?;
    Ok(list
        .data
        .into_iter()
        .filter(|p| p.external_reference.as_deref() == Some(reference))
        .min_by_key(|p| p.deleted))
}

fn not_found(reference: &str) -> Error {
    Error::not_found(format!(
        "Asaas has no payment with externalReference {reference}"
    ))
}

#[derive(Deserialize)]
struct QrCode {
    payload: String,
    #[serde(default, rename = "encodedImage")]
    encoded_image: Option<String>,
}

/// `GET /v3/payments/{id}/pixQrCode` → `{encodedImage, payload, expirationDate}`.
fn qr_code(host: &dyn Host, ctx: &Context, id: &str) -> Result<QrCode, Error> {
    let path = format!("/v3/payments/{}/pixQrCode", percent_encode(id));
    let qr: QrCode = call(host, ctx, Op::Read, Method::Get, &path, None)?.decode(Op::Read)?;
    if qr.payload.is_empty() {
        return Err(Error::unavailable("Asaas answered an empty Pix payload"));
    }
    Ok(QrCode {
        encoded_image: qr.encoded_image.filter(|i| !i.is_empty()),
        ..qr
    })
}

/// An authenticated request to Asaas; an answer that is not a success becomes an error.
fn call(
    host: &dyn Host,
    ctx: &Context,
    op: Op,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Response, Error> {
    let key = ctx.environment_key(KEY, SANDBOX_KEYS, PRODUCTION_KEYS)?;
    let mut request = Request::new(method, format!("{}{path}", ctx.endpoint(API)?))
        .header("access_token", key)
        .header("user-agent", USER_AGENT)
        .header("accept", "application/json");
    if let Some(body) = body {
        request = request.json(body);
    }
    request.call(host, op, describe)
}

/// `{"errors":[{"code","description"}]}`, read by the SDK; the reason from Asaas's code.
fn describe(status: u16, body: &[u8]) -> PspError {
    let said = describe_body(status, body);
    let reason = match said.code.as_deref().unwrap_or_default() {
        "invalid_value" => Reason::Amount,
        "invalid_cpfCnpj" | "invalid_name" | "invalid_email" => Reason::PayerData,
        _ => Reason::Unspecified,
    };
    said.because(reason)
}

/// Asaas's list envelope `{object:"list", hasMore, totalCount, data:[…]}`.
#[derive(Deserialize)]
struct List<T> {
    #[serde(default = "Vec::new")]
    data: Vec<T>,
}

/// The fields of a payment the gateway reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AsaasPayment {
    id: String,
    status: String,
    value: Value,
    #[serde(default)]
    due_date: Option<String>,
    #[serde(default)]
    payment_date: Option<String>,
    #[serde(default)]
    client_payment_date: Option<String>,
    #[serde(default)]
    confirmed_date: Option<String>,
    #[serde(default)]
    external_reference: Option<String>,
    #[serde(default)]
    deleted: bool,
}

/// Asaas's payment statuses → the gateway's.
fn status(status: &str) -> ChargeStatus {
    match status {
        "RECEIVED" | "CONFIRMED" | "RECEIVED_IN_CASH" => ChargeStatus::Paid,
        // The money arrived; what happens to it next is outside the gateway.
        "REFUND_REQUESTED"
        | "REFUND_IN_PROGRESS"
        | "CHARGEBACK_REQUESTED"
        | "CHARGEBACK_DISPUTE"
        | "AWAITING_CHARGEBACK_REVERSAL" => ChargeStatus::Paid,
        // Past its due date but still payable by Pix: the charge's expiry is the adapter's to
        // enforce (`lapse`).
        "OVERDUE" => ChargeStatus::Pending,
        "REFUNDED" | "DELETED" => ChargeStatus::Canceled,
        "AWAITING_RISK_ANALYSIS" => ChargeStatus::Processing,
        // `PENDING` and anything new: still payable as far as we know.
        _ => ChargeStatus::Pending,
    }
}

/// A payment as a charge, without its Pix code.
fn charge(payment: &AsaasPayment) -> Result<Charge, String> {
    let amount = money::from_json_number(&payment.value).map_err(|e| format!("value: {e}"))?;
    let status = match payment.deleted {
        true => ChargeStatus::Canceled,
        false => status(&payment.status),
    };
    let payment_info = match status {
        ChargeStatus::Paid => Some(Payment {
            end_to_end_id: None,
            amount,
            paid_at: [
                &payment.client_payment_date,
                &payment.payment_date,
                &payment.confirmed_date,
            ]
            .into_iter()
            .find_map(|d| d.as_deref().filter(|d| !d.is_empty()))
            .map(paid_at)
            .ok_or("a received payment without paymentDate")??,
        }),
        _ => None,
    };
    Ok(Charge {
        reference: payment.external_reference.clone().unwrap_or_default(),
        psp_id: payment.id.clone(),
        status,
        amount,
        copy_paste: None,
        qr_png_base64: None,
        // Set by the caller, who knows the charge's exact expiry.
        expires_at: None,
        payment: payment_info,
    })
}

/// Asaas gives the day of a payment (`2024-05-01`): the start of that day in São Paulo, in
/// UTC. A full RFC 3339 time is converted as it is.
fn paid_at(date: &str) -> Result<String, String> {
    let text = match date.len() {
        10 => format!("{date}T00:00:00-03:00"),
        _ => date.to_owned(),
    };
    time::parse_rfc3339(&text)
        .map(time::format_rfc3339)
        .map_err(|_| format!("payment date {date:?}"))
}

#[cfg(test)]
mod tests;
