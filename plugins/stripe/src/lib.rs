//! Stripe: Pix through PaymentIntents (form-encoded), notifications signed with
//! `Stripe-Signature`. Facts in `../README.md`.

use std::collections::BTreeMap;

use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::{error, http::percent_encode, time};
use serde::Deserialize;
use serde_json::Value;

/// Stripe's limits for `payment_method_options[pix][expires_after_seconds]`.
const MIN_EXPIRY: u32 = 10;
const MAX_EXPIRY: u32 = 1_209_600;
/// How far a `Stripe-Signature` timestamp may be from now (Stripe's own libraries: 300 s).
const SIGNATURE_TOLERANCE: i64 = 300;
/// `last_payment_error.code` of a Pix code that lapsed unpaid.
const ATTEMPT_EXPIRED: &str = "payment_intent_payment_attempt_expired";
/// Secret (`sk_`) and restricted (`rk_`) keys, per environment: the host cannot check two
/// prefixes per environment, so the adapter refuses the other environment's before sending.
const TEST_KEYS: &[&str] = &["sk_test_", "rk_test_"];
const LIVE_KEYS: &[&str] = &["sk_live_", "rk_live_"];
/// Events that say something about a PaymentIntent's Pix payment.
const EVENTS: &[&str] = &[
    "payment_intent.succeeded",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
    "payment_intent.processing",
    "payment_intent.requires_action",
];

#[derive(Deserialize)]
struct Intent {
    id: String,
    status: String,
    amount: u64,
    #[serde(default)]
    amount_received: u64,
    #[serde(default)]
    created: i64,
    #[serde(default)]
    metadata: BTreeMap<String, Value>,
    next_action: Option<NextAction>,
    last_payment_error: Option<LastError>,
    /// The Charge's id, or the Charge itself with `expand[]=latest_charge`.
    latest_charge: Option<Value>,
}

#[derive(Deserialize)]
struct NextAction {
    pix_display_qr_code: Option<PixQrCode>,
}

#[derive(Deserialize)]
struct PixQrCode {
    data: String,
    expires_at: Option<i64>,
}

#[derive(Deserialize)]
struct LastError {
    code: Option<String>,
}

impl Intent {
    fn reference(&self) -> Option<String> {
        self.metadata
            .get("reference")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn status(&self) -> ChargeStatus {
        match self.status.as_str() {
            "succeeded" => ChargeStatus::Paid,
            "processing" | "requires_capture" => ChargeStatus::Processing,
            "canceled" => ChargeStatus::Canceled,
            "requires_payment_method" => match &self.last_payment_error {
                Some(e) if e.code.as_deref() == Some(ATTEMPT_EXPIRED) => ChargeStatus::Expired,
                Some(_) => ChargeStatus::Failed,
                None => ChargeStatus::Pending,
            },
            _ => ChargeStatus::Pending, // requires_action, requires_confirmation
        }
    }

    /// The payment of a succeeded intent. Paid-at is the Charge's creation when expanded, else
    /// `fallback` (the event's time), else the intent's creation.
    fn payment(&self, fallback: Option<i64>) -> Option<Payment> {
        if self.status != "succeeded" {
            return None;
        }
        let charge = self.latest_charge.as_ref().filter(|c| c.is_object());
        let paid_at = charge.and_then(|c| c["created"].as_i64()).or(fallback);
        Some(Payment {
            end_to_end_id: charge
                .and_then(|c| c.pointer("/payment_method_details/pix/bank_transaction_id"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            amount: if self.amount_received > 0 {
                self.amount_received
            } else {
                self.amount
            },
            paid_at: time::format_rfc3339(paid_at.unwrap_or(self.created)),
        })
    }

    fn into_charge(self, reference: &str) -> Charge {
        let qr = self
            .next_action
            .as_ref()
            .and_then(|n| n.pix_display_qr_code.as_ref());
        Charge {
            reference: self.reference().unwrap_or_else(|| reference.to_owned()),
            status: self.status(),
            amount: self.amount,
            // The PNG is at a URL (`image_url_png`) we do not fetch: the host draws one.
            copy_paste: qr.map(|q| q.data.clone()),
            qr_png_base64: None,
            expires_at: qr.and_then(|q| q.expires_at).map(time::format_rfc3339),
            payment: self.payment(None),
            psp_id: self.id,
        }
    }
}

struct Stripe;

impl Adapter for Stripe {
    fn manifest() -> Manifest {
        Manifest {
            id: "stripe",
            display_name: "Stripe",
            kind: "international payment processor",
            credential_fields: vec![
                // No `value-prefix`: a restricted key (rk_…) is as good as a secret key (sk_…).
                CredentialField::secret("secret-key", "Secret key")
                    .help("Dashboard > Developers > API keys: the secret key (sk_test_… in test mode, sk_live_… live), or a restricted key (rk_test_…, rk_live_…) allowed to write PaymentIntents."),
                CredentialField::secret("webhook-secret", "Webhook signing secret")
                    .help("Dashboard > Developers > Webhooks > your endpoint (this credential's webhook URL) > Signing secret (whsec_…). Without it notifications are not verified, only confirmed by a query.")
                    .optional(),
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://api.stripe.com",
                "https://api.stripe.com",
            )],
            webhook_auth: WebhookAuth::PspSignature,
            capabilities: Capabilities::CANCEL_CHARGE | Capabilities::CHECK_CREDENTIALS,
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        let amount = request.amount.to_string();
        let expiry = request.expires_in.clamp(MIN_EXPIRY, MAX_EXPIRY).to_string();
        let mut form: Vec<(&str, &str)> = vec![
            ("amount", &amount),
            ("currency", "brl"),
            ("payment_method_types[]", "pix"),
            ("payment_method_data[type]", "pix"),
            ("confirm", "true"),
            (
                "payment_method_options[pix][expires_after_seconds]",
                &expiry,
            ),
            ("metadata[reference]", &request.reference),
        ];
        if let Some(email) = &request.payer.email {
            form.push(("payment_method_data[billing_details][email]", email));
        }
        if let Some(name) = &request.payer.name {
            form.push(("payment_method_data[billing_details][name]", name));
        }
        if let Some(description) = &request.description {
            form.push(("description", description));
        }
        let http = Request::post(format!("{}/payment_intents", base(ctx)?))
            .header("Idempotency-Key", &request.reference)
            .form(&form);
        let intent: Intent = send(host, ctx, Op::Create, http)?.decode(Op::Create)?;
        let id = intent.id.clone();
        let charge = intent.into_charge(&request.reference);
        if charge.status == ChargeStatus::Pending && charge.copy_paste.is_none() {
            // Useless without a code: cancel it (best effort) so nobody can complete it later.
            let _ = cancel_intent(host, ctx, &id);
            return Err(Error::rejected(format!(
                "Stripe answered PaymentIntent {id} without Pix data (no \
                 next_action.pix_display_qr_code): check the Stripe account's country setting \
                 (Pix needs an account in Brazil) and that Pix is enabled"
            ))
            .because(Reason::AccountCannotTakePix));
        }
        Ok(charge)
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let intent = match psp_id {
            Some(id) => {
                let url = format!("{}/payment_intents/{}", base(ctx)?, percent_encode(id));
                let http = Request::get(url).query("expand[]", "latest_charge");
                send(host, ctx, Op::Read, http)?.decode(Op::Read)?
            }
            None => search(host, ctx, reference)?,
        };
        Ok(intent.into_charge(reference))
    }

    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        if let Some(secret) = ctx.optional_field("webhook-secret") {
            let header = request
                .headers
                .iter()
                .find(|(name, _)| name == "stripe-signature")
                .map(|(_, value)| value.as_str())
                .ok_or_else(|| Error::invalid_webhook("no Stripe-Signature header"))?;
            verify_signature(host, secret, header, &request.body, time::now_unix())?;
        }
        #[derive(Deserialize)]
        struct Event {
            #[serde(rename = "type")]
            kind: String,
            created: Option<i64>,
            data: EventData,
        }
        #[derive(Deserialize)]
        struct EventData {
            object: Value,
        }
        let event: Event = serde_json::from_slice(&request.body)
            .map_err(|e| Error::invalid_webhook(format!("not a Stripe event: {e}")))?;
        if !EVENTS.contains(&event.kind.as_str()) {
            return Ok(Vec::new());
        }
        let intent: Intent = serde_json::from_value(event.data.object).map_err(|e| {
            Error::invalid_webhook(format!("{} without a PaymentIntent: {e}", event.kind))
        })?;
        // The intent's own state says more than the event's name (a failed attempt that lapsed
        // is `expired`, not `failed`).
        Ok(vec![PaymentEvent {
            reference: intent.reference(),
            psp_id: Some(intent.id.clone()),
            status: intent.status(),
            payment: intent.payment(event.created),
        }])
    }

    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let id = match psp_id {
            Some(id) => id.to_owned(),
            None => search(host, ctx, reference)?.id,
        };
        Ok(cancel_intent(host, ctx, &id)?.into_charge(reference))
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        let url = format!("{}/payment_intents", base(ctx)?);
        send(host, ctx, Op::Read, Request::get(url).query("limit", "1")).map(drop)
    }
}

fn base(ctx: &Context) -> Result<String, Error> {
    Ok(format!("{}/v1", ctx.endpoint("api")?))
}

/// Sends with the secret key.
fn send(host: &dyn Host, ctx: &Context, op: Op, request: Request) -> Result<Response, Error> {
    request
        .bearer(ctx.environment_key("secret-key", TEST_KEYS, LIVE_KEYS)?)
        .call(host, op, describe)
}

/// A refusal keeps Stripe's `error.message` verbatim and its `code` (or `type` when it has
/// none); the reason comes from the code and the `param` it names.
fn describe(status: u16, body: &[u8]) -> PspError {
    #[derive(Deserialize)]
    struct Body {
        error: Detail,
    }
    #[derive(Deserialize)]
    struct Detail {
        message: String,
        code: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
        param: Option<String>,
    }
    match serde_json::from_slice::<Body>(body) {
        Ok(Body { error }) => {
            let reason = reason(error.code.as_deref(), error.param.as_deref());
            PspError::with_code(error.message, error.code.or(error.kind)).because(reason)
        }
        Err(_) => error::describe_body(status, body),
    }
}

/// Stripe's error codes (docs.stripe.com/error-codes) and the parameter they name.
fn reason(code: Option<&str>, param: Option<&str>) -> Reason {
    let param = param.unwrap_or_default();
    match code.unwrap_or_default() {
        // "The payment method type "pix" is invalid … ensure the provided type is activated".
        "payment_method_invalid_parameter" if param == "payment_method_types" => {
            Reason::PixNotEnabled
        }
        "amount_too_small" | "amount_too_large" => Reason::Amount,
        "email_invalid" => Reason::PayerData,
        "resource_missing" => Reason::NotFound,
        "api_key_expired" | "secret_key_required" => Reason::Credentials,
        _ if param == "amount" => Reason::Amount,
        _ if param.starts_with("payment_method_data[billing_details]") => Reason::PayerData,
        _ => Reason::Unspecified,
    }
}

/// The intent created with `reference`, through Stripe's search (after an ambiguous create).
fn search(host: &dyn Host, ctx: &Context, reference: &str) -> Result<Intent, Error> {
    #[derive(Deserialize)]
    struct Found {
        data: Vec<Intent>,
    }
    // References are `[a-zA-Z0-9]`, so they need no escaping inside the quotes.
    let http = Request::get(format!("{}/payment_intents/search", base(ctx)?))
        .query("query", &format!("metadata['reference']:'{reference}'"))
        .query("expand[]", "data.latest_charge");
    let found: Found = send(host, ctx, Op::Read, http)?.decode(Op::Read)?;
    found.data.into_iter().next().ok_or_else(|| {
        Error::not_found(format!(
            "Stripe has no PaymentIntent with metadata.reference {reference}"
        ))
    })
}

fn cancel_intent(host: &dyn Host, ctx: &Context, id: &str) -> Result<Intent, Error> {
    let url = format!(
        "{}/payment_intents/{}/cancel",
        base(ctx)?,
        percent_encode(id)
    );
    send(host, ctx, Op::Change, Request::post(url).form(&[]))?.decode(Op::Change)
}

/// `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`: one `v1` must be the HMAC-SHA256 of
/// `"<t>.<raw body>"` under the `whsec_…` secret, and `t` within the tolerance of `now`.
fn verify_signature(
    host: &dyn Host,
    secret: &str,
    header: &str,
    body: &[u8],
    now: i64,
) -> Result<(), Error> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v1)) => signatures.push(v1.to_ascii_lowercase()),
            _ => {}
        }
    }
    let t = timestamp.ok_or_else(|| Error::invalid_webhook("Stripe-Signature has no timestamp"))?;
    let mut payload = format!("{t}.").into_bytes();
    payload.extend_from_slice(body);
    let expected = hex(&host.hmac_sha256(secret.as_bytes(), &payload));
    if !signatures
        .iter()
        .any(|s| host.constant_time_eq(expected.as_bytes(), s.as_bytes()))
    {
        return Err(Error::invalid_webhook(
            "Stripe-Signature does not match the body and the webhook signing secret",
        ));
    }
    if (now - t).abs() > SIGNATURE_TOLERANCE {
        return Err(Error::invalid_webhook(format!(
            "Stripe-Signature timestamp {t} is more than {SIGNATURE_TOLERANCE} s from now \
             ({now}): a replayed or delayed notification"
        )));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

export!(Stripe);

#[cfg(test)]
mod tests;
