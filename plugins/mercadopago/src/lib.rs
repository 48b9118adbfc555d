//! Mercado Pago: Pix through the Payments API (JSON); notifications carry no status, so the
//! adapter queries the payment they name. Notifications to a payment's own `notification_url`
//! may come unsigned (the secret signature belongs to the webhook set in "Your integrations"):
//! a signature is verified when there is one, and the query is what counts either way. Facts
//! and their sources in `../README.md`.

use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::{error, http::percent_encode, money, time};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct MpPayment {
    /// A number on the wire.
    id: Value,
    status: String,
    #[serde(default)]
    status_detail: Option<String>,
    transaction_amount: Value,
    external_reference: Option<String>,
    date_approved: Option<String>,
    date_of_expiration: Option<String>,
    point_of_interaction: Option<PointOfInteraction>,
}

#[derive(Deserialize)]
struct PointOfInteraction {
    transaction_data: Option<TransactionData>,
}

#[derive(Deserialize)]
struct TransactionData {
    qr_code: Option<String>,
    qr_code_base64: Option<String>,
    e2e_id: Option<String>,
}

/// `2024-05-01T09:00:00.000-04:00` → `2024-05-01T13:00:00Z`; kept as written if unreadable.
fn utc(text: &str) -> String {
    time::parse_rfc3339(text).map_or_else(|_| text.to_owned(), time::format_rfc3339)
}

impl MpPayment {
    fn id(&self) -> String {
        match &self.id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    fn status(&self, now: i64) -> ChargeStatus {
        match self.status.as_str() {
            // A payment in mediation, refunded or charged back was paid: reversals are not
            // states of a charge.
            "approved" | "in_mediation" | "refunded" | "charged_back" => ChargeStatus::Paid,
            "in_process" => ChargeStatus::Processing,
            "rejected" => ChargeStatus::Failed,
            "cancelled" if self.status_detail.as_deref() == Some("expired") => {
                ChargeStatus::Expired
            }
            "cancelled" => ChargeStatus::Canceled,
            // pending, authorized: still payable until `date_of_expiration`.
            _ if self.expires_at().is_some_and(|t| t <= now) => ChargeStatus::Expired,
            _ => ChargeStatus::Pending,
        }
    }

    fn expires_at(&self) -> Option<i64> {
        time::parse_rfc3339(self.date_of_expiration.as_deref()?).ok()
    }

    fn into_charge(self, op: Op, reference: &str, now: i64) -> Result<Charge, Error> {
        let amount = money::from_json_number(&self.transaction_amount)
            .map_err(|e| error::undecodable(op, 200, format!("transaction_amount: {e}")))?;
        let status = self.status(now);
        let data = self
            .point_of_interaction
            .as_ref()
            .and_then(|p| p.transaction_data.as_ref());
        let payment = (status == ChargeStatus::Paid).then(|| Payment {
            end_to_end_id: data.and_then(|d| d.e2e_id.clone()),
            amount,
            paid_at: self
                .date_approved
                .as_deref()
                .map_or_else(|| time::format_rfc3339(now), utc),
        });
        Ok(Charge {
            reference: self
                .external_reference
                .clone()
                .unwrap_or_else(|| reference.to_owned()),
            psp_id: self.id(),
            status,
            amount,
            copy_paste: data.and_then(|d| d.qr_code.clone()),
            qr_png_base64: data.and_then(|d| d.qr_code_base64.clone()),
            expires_at: self.date_of_expiration.as_deref().map(utc),
            payment,
        })
    }
}

/// How long a charge's `date_of_expiration` is remembered: a retried create must send the
/// first attempt's body, and retries end within a day (the host's idempotency window).
const EXPIRATION_TTL: u32 = 2 * 86_400;

struct MercadoPago;

impl Adapter for MercadoPago {
    fn manifest() -> Manifest {
        Manifest {
            id: "mercadopago",
            display_name: "Mercado Pago",
            kind: "international payment processor",
            credential_fields: vec![
                // No prefix check: test and production access tokens both start with APP_USR-
                // today (TEST- is legacy), so a prefix cannot tell the environments apart.
                CredentialField::secret("access-token", "Access token")
                    .help("Your integrations > your application > Production or Test credentials > Access Token (APP_USR-…)."),
                CredentialField::secret("webhook-secret", "Webhook secret signature")
                    .help("Your integrations > your application > Webhooks > Secret signature. Without it notifications are not verified; the payment is always queried.")
                    .optional(),
            ],
            required_payer_fields: vec![PayerField::Email],
            endpoints: vec![Endpoint::new(
                "api",
                "https://api.mercadopago.com",
                "https://api.mercadopago.com",
            )],
            webhook_auth: WebhookAuth::PspSignature,
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
        let payment = match psp_id {
            Some(id) => fetch(host, ctx, id)?,
            None => search(host, ctx, reference)?,
        };
        payment.into_charge(Op::Read, reference, time::now_unix())
    }

    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        let query = |name: &str| {
            request
                .query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_owned())
        };
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        // Webhooks say `type` and `data.id`; the older IPN format `topic` and `id`.
        let kind = query("type")
            .or_else(|| body["type"].as_str().map(str::to_owned))
            .or_else(|| query("topic"))
            .unwrap_or_default();
        if kind != "payment" {
            return Ok(Vec::new());
        }
        let data_id = query("data.id")
            .or_else(|| match &body["data"]["id"] {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .or_else(|| query("id"))
            .ok_or_else(|| Error::invalid_webhook("a payment notification without data.id"))?;
        let signed = request.headers.iter().any(|(n, _)| n == "x-signature");
        if let Some(secret) = ctx.optional_field("webhook-secret")
            && signed
        {
            verify_signature(host, secret, &request.headers, &data_id)?;
        }
        // The notification says only which payment changed: ask Mercado Pago what it is now.
        let charge = fetch(host, ctx, &data_id)?.into_charge(Op::Read, "", time::now_unix())?;
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
            None => search(host, ctx, reference)?.id(),
        };
        let url = format!(
            "{}/v1/payments/{}",
            ctx.endpoint("api")?,
            percent_encode(&id)
        );
        let http = Request::put(url).json(&json!({ "status": "cancelled" }));
        send(host, ctx, Op::Change, http)?
            .decode::<MpPayment>(Op::Change)?
            .into_charge(Op::Change, reference, time::now_unix())
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        // Asked afresh: a credential being saved is checked at Mercado Pago, never from cache.
        account_environment(host, ctx, false)?;
        let url = format!("{}/v1/payments/search", ctx.endpoint("api")?);
        send(host, ctx, Op::Read, Request::get(url).query("limit", "1")).map(drop)
    }
}

/// How long the environment of a token's account is remembered: whose token it is never
/// changes, so this only bounds the cache.
const ACCOUNT_CHECK_TTL: u32 = 3600;

/// Test and live share one host and one token format (test users' tokens start with `APP_USR-`
/// too): only the account says which environment a token belongs to. The test environment takes
/// a test user (`GET /users/me` lists the tag `test_user`) or a legacy `TEST-` sandbox
/// token; the live environment takes a real account and never a `TEST-` token. Anything else is
/// `bad-credentials` with a message saying which token to paste. With `cached`, an answer of
/// the last hour for this very token is reused.
fn account_environment(host: &dyn Host, ctx: &Context, cached: bool) -> Result<(), Error> {
    let token = ctx.field("access-token")?;
    let live = matches!(ctx.environment, Environment::Live);
    let legacy_sandbox = token.starts_with("TEST-");
    if legacy_sandbox {
        return match live {
            false => Ok(()),
            true => Err(environment_mismatch(
                "this is a TEST- sandbox access token, which cannot receive real payments: in \
                 the live environment use the production access token of your Mercado Pago \
                 account (Your integrations > Production credentials)",
            )),
        };
    }
    let digest = host.sha256(token.as_bytes());
    let key = format!("account-environment:{}", hex(&digest[..8]));
    let wanted = if live { "live" } else { "test" };
    if cached && host.cache_get(&key).as_deref() == Some(wanted) {
        return Ok(());
    }
    #[derive(Deserialize)]
    struct User {
        id: Value,
        #[serde(default)]
        tags: Vec<String>,
    }
    let url = format!("{}/users/me", ctx.endpoint("api")?);
    let user: User = send(host, ctx, Op::Read, Request::get(url))?.decode(Op::Read)?;
    let test_user = user.tags.iter().any(|t| t == "test_user");
    match (live, test_user) {
        (false, true) | (true, false) => {
            host.cache_set(&key, wanted, ACCOUNT_CHECK_TTL);
            Ok(())
        }
        (false, false) => Err(environment_mismatch(&format!(
            "this access token belongs to the real Mercado Pago account {}, whose payments are \
             real money: in the test environment use a test user's access token (Your \
             integrations > Test accounts), or connect this token in the live environment",
            user.id
        ))),
        (true, true) => Err(environment_mismatch(&format!(
            "this access token belongs to the test user {}, which cannot receive real \
             payments: in the live environment use the production access token of your \
             Mercado Pago account, or connect this one in the test environment",
            user.id
        ))),
    }
}

fn environment_mismatch(message: &str) -> Error {
    Error::BadCredentials(
        PspError::with_code(message, Some("account_environment_mismatch".into()))
            .because(Reason::Credentials),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `POST /v1/payments`; `now` (Unix seconds) decides a first attempt's `date_of_expiration`.
fn create_at(
    host: &dyn Host,
    ctx: &Context,
    request: &ChargeRequest,
    now: i64,
) -> Result<Charge, Error> {
    let email = request.payer.email.as_deref().ok_or_else(|| {
        Error::rejected("Mercado Pago requires the payer's e-mail").because(Reason::PayerData)
    })?;
    // Also here, not only when the credential was saved (which may skip checks): a test charge
    // must never be a real payment.
    account_environment(host, ctx, true)?;
    let mut payer = json!({ "email": email });
    if let Some(name) = request.payer.name.as_deref().map(str::trim) {
        let (first, last) = name.split_once(' ').unwrap_or((name, ""));
        payer["first_name"] = json!(first);
        if !last.trim().is_empty() {
            payer["last_name"] = json!(last.trim());
        }
    }
    if let Some(document) = &request.payer.document {
        let kind = if document.len() == 11 { "CPF" } else { "CNPJ" };
        payer["identification"] = json!({ "type": kind, "number": document });
    }
    let mut body = json!({
        "transaction_amount": money::json_number(request.amount),
        "payment_method_id": "pix",
        "payer": payer,
        "external_reference": request.reference,
        "date_of_expiration": expiration_of(host, request, now),
    });
    if let Some(description) = &request.description {
        body["description"] = json!(description);
    }
    if let Some(url) = &ctx.webhook_url {
        body["notification_url"] = json!(notification_url(url));
    }
    let http = Request::post(format!("{}/v1/payments", ctx.endpoint("api")?))
        .header("X-Idempotency-Key", &request.reference)
        .json(&body);
    send(host, ctx, Op::Create, http)?
        .decode::<MpPayment>(Op::Create)?
        .into_charge(Op::Create, &request.reference, now)
}

/// The payment's `date_of_expiration`: the one the first attempt with this reference sent,
/// else `now + expires-in`, remembered. A retried create then sends the same body under the
/// same `X-Idempotency-Key`, as Mercado Pago's idempotency expects.
fn expiration_of(host: &dyn Host, request: &ChargeRequest, now: i64) -> String {
    let key = format!("expiration:{}", request.reference);
    if let Some(sent) = host.cache_get(&key) {
        return sent;
    }
    let expiration = date_of_expiration(now + i64::from(request.expires_in));
    host.cache_set(&key, &expiration, EXPIRATION_TTL);
    expiration
}

/// The credential's webhook URL with `source_news=webhooks`, which asks Mercado Pago for
/// Webhooks-format notifications only (no IPN duplicates) at a payment's `notification_url`.
fn notification_url(webhook_url: &str) -> String {
    let separator = if webhook_url.contains('?') { '&' } else { '?' };
    format!("{webhook_url}{separator}source_news=webhooks")
}

/// RFC 3339 with milliseconds and Brasília's offset (UTC−3, no daylight saving since 2019),
/// as Mercado Pago's examples write it: `2026-11-22T10:00:00.000-03:00`.
fn date_of_expiration(unix: i64) -> String {
    let local = time::format_rfc3339(unix + time::SAO_PAULO_OFFSET_SECONDS);
    format!("{}.000-03:00", local.trim_end_matches('Z'))
}

/// Sends with the access token.
fn send(host: &dyn Host, ctx: &Context, op: Op, request: Request) -> Result<Response, Error> {
    request
        .bearer(ctx.field("access-token")?)
        .call(host, op, describe)
}

/// A refusal keeps Mercado Pago's `message` verbatim, with the first `cause` code (or `error`)
/// as the code.
fn describe(status: u16, body: &[u8]) -> PspError {
    #[derive(Deserialize)]
    struct Body {
        message: String,
        error: Option<String>,
        #[serde(default)]
        cause: Value,
    }
    match serde_json::from_slice::<Body>(body) {
        Ok(said) => {
            let cause = said.cause.get(0).unwrap_or(&said.cause);
            let code = match &cause["code"] {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
            let reason = reason(code.as_deref());
            PspError::with_code(said.message, code.or(said.error)).because(reason)
        }
        Err(_) => error::describe_body(status, body),
    }
}

/// Mercado Pago's `cause` codes (its Payments API error table).
fn reason(code: Option<&str>) -> Reason {
    match code.unwrap_or_default() {
        // transaction_amount null / invalid.
        "4019" | "4037" => Reason::Amount,
        // payer.email invalid; "Invalid user identification number" (CPF/CNPJ).
        "4050" | "2067" => Reason::PayerData,
        // "Collector user without key enabled for QR render": the account has no Pix key.
        "13253" => Reason::PixNotEnabled,
        _ => Reason::Unspecified,
    }
}

fn fetch(host: &dyn Host, ctx: &Context, id: &str) -> Result<MpPayment, Error> {
    let url = format!(
        "{}/v1/payments/{}",
        ctx.endpoint("api")?,
        percent_encode(id)
    );
    send(host, ctx, Op::Read, Request::get(url))?.decode(Op::Read)
}

/// The payment created with `reference` (after an ambiguous create), newest first.
fn search(host: &dyn Host, ctx: &Context, reference: &str) -> Result<MpPayment, Error> {
    #[derive(Deserialize)]
    struct Found {
        results: Vec<MpPayment>,
    }
    let http = Request::get(format!("{}/v1/payments/search", ctx.endpoint("api")?))
        .query("external_reference", reference)
        .query("sort", "date_created")
        .query("criteria", "desc");
    let found: Found = send(host, ctx, Op::Read, http)?.decode(Op::Read)?;
    found.results.into_iter().next().ok_or_else(|| {
        Error::not_found(format!(
            "Mercado Pago has no payment with external_reference {reference}"
        ))
    })
}

/// `x-signature: ts=<ts>,v1=<hex>`: `v1` is the HMAC-SHA256 under the webhook secret of
/// `id:<data.id>;request-id:<x-request-id>;ts:<ts>;`, where parts absent from the
/// notification are left out and an alphanumeric `data.id` is lowercased.
fn verify_signature(
    host: &dyn Host,
    secret: &str,
    headers: &[(String, String)],
    data_id: &str,
) -> Result<(), Error> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.trim())
    };
    let signature =
        header("x-signature").ok_or_else(|| Error::invalid_webhook("no x-signature header"))?;
    let (mut ts, mut v1) = (None, None);
    for part in signature.split(',') {
        match part.trim().split_once('=') {
            Some(("ts", value)) => ts = Some(value),
            Some(("v1", value)) => v1 = Some(value.to_ascii_lowercase()),
            _ => {}
        }
    }
    let (ts, v1) = ts
        .zip(v1)
        .ok_or_else(|| Error::invalid_webhook("x-signature lacks ts or v1"))?;
    let mut manifest = format!("id:{};", data_id.to_ascii_lowercase());
    if let Some(request_id) = header("x-request-id") {
        manifest.push_str(&format!("request-id:{request_id};"));
    }
    manifest.push_str(&format!("ts:{ts};"));
    let expected: String = host
        .hmac_sha256(secret.as_bytes(), manifest.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if !host.constant_time_eq(expected.as_bytes(), v1.as_bytes()) {
        return Err(Error::invalid_webhook(
            "x-signature does not match the notification and the webhook secret",
        ));
    }
    Ok(())
}

export!(MercadoPago);

#[cfg(test)]
mod tests;
