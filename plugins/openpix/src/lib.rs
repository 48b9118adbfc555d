//! OpenPix (Woovi): charges keyed by our `correlationID`, `Authorization: <AppID>`, and
//! notifications signed with OpenPix's RSA key.

use base64::Engine as _;
use pixgw_plugin_sdk::http::percent_encode;
use pixgw_plugin_sdk::prelude::*;
use pixgw_plugin_sdk::{error, time};
use serde::Deserialize;
use serde_json::json;

struct OpenPix;

impl Adapter for OpenPix {
    fn manifest() -> Manifest {
        Manifest {
            id: "openpix",
            display_name: "OpenPix (Woovi)",
            kind: "fintech",
            credential_fields: vec![
                CredentialField::secret("app-id", "AppID")
                    .help("In OpenPix: API/Plugins > your application > AppID."),
                CredentialField {
                    multiline: true,
                    ..CredentialField::text("webhook-public-key", "Webhook public key (PEM)").help(
                        "OpenPix's public key for webhook signatures, from its developer docs \
                         (the PEM, or the base64 text OpenPix publishes).",
                    )
                },
            ],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://api.woovi-sandbox.com",
                "https://api.openpix.com.br",
            )],
            // Webhooks are set in OpenPix's dashboard; every notification is signed.
            webhook_auth: WebhookAuth::PspSignature,
            capabilities: Capabilities::CANCEL_CHARGE,
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        let mut body = json!({
            "correlationID": request.reference,
            "value": request.amount,
            "expiresIn": request.expires_in,
        });
        if let Some(comment) = request.description.as_deref().filter(|d| !d.is_empty()) {
            body["comment"] = json!(comment);
        }
        // OpenPix takes a customer only with a name and one of taxID, email or phone.
        let payer = &request.payer;
        if let Some(name) = &payer.name
            && (payer.document.is_some() || payer.email.is_some())
        {
            let mut customer = json!({ "name": name });
            if let Some(document) = &payer.document {
                customer["taxID"] = json!(document);
            }
            if let Some(email) = &payer.email {
                customer["email"] = json!(email);
            }
            body["customer"] = customer;
        }
        // `return_existing`: a repeated correlationID answers the charge that exists.
        let post = Request::post(format!("{}/api/v1/charge", ctx.endpoint("api")?))
            .query("return_existing", "true")
            .json(&body);
        charge_of(Op::Create, &send(host, ctx, Op::Create, post)?)
    }

    /// By correlationID (our reference), which OpenPix accepts wherever it takes a charge id.
    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        _: Option<&str>,
    ) -> Result<Charge, Error> {
        let get = Request::get(charge_url(ctx, reference)?);
        charge_of(Op::Read, &send(host, ctx, Op::Read, get)?)
    }

    /// `DELETE` removes an `ACTIVE` charge and answers only `{status, id}`: the charge is read
    /// first, and one that is no longer active is answered as it is.
    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let mut charge = Self::query(host, ctx, reference, psp_id)?;
        if charge.status != ChargeStatus::Pending {
            return Ok(charge);
        }
        send(
            host,
            ctx,
            Op::Change,
            Request::delete(charge_url(ctx, reference)?),
        )?;
        charge.status = ChargeStatus::Canceled;
        charge.copy_paste = None;
        Ok(charge)
    }

    /// `x-webhook-signature` (base64 RSA-SHA256 of the raw body) is required and verified with
    /// the credential's public key before the body is read.
    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        let signature = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("x-webhook-signature"))
            .and_then(|(_, value)| {
                base64::engine::general_purpose::STANDARD
                    .decode(value.trim())
                    .ok()
            })
            .ok_or_else(|| Error::invalid_webhook("no valid x-webhook-signature header"))?;
        let key = public_key(ctx)?;
        match host.verify_rsa_sha256(&key, &request.body, &signature) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Error::invalid_webhook(
                    "x-webhook-signature does not match the body",
                ));
            }
            Err(e) => return Err(Error::invalid_webhook(format!("webhook-public-key: {e}"))),
        }

        #[derive(Deserialize)]
        struct Notification {
            event: Option<String>,
            charge: Option<OpenPixCharge>,
            pix: Option<Pix>,
        }
        #[derive(Deserialize)]
        struct Pix {
            #[serde(rename = "endToEndId")]
            end_to_end_id: Option<String>,
            value: Option<u64>,
            time: Option<String>,
        }
        let notification: Notification = serde_json::from_slice(&request.body).map_err(|e| {
            Error::invalid_webhook(format!("the notification is not OpenPix's JSON: {e}"))
        })?;
        let status = match notification.event.as_deref() {
            Some("OPENPIX:CHARGE_COMPLETED") => ChargeStatus::Paid,
            Some("OPENPIX:CHARGE_EXPIRED") => ChargeStatus::Expired,
            // Test pings, transactions without a charge, other events: nothing to act on.
            _ => return Ok(Vec::new()),
        };
        let charge = notification
            .charge
            .ok_or_else(|| Error::invalid_webhook("the notification has no charge"))?;
        let payment = (status == ChargeStatus::Paid).then(|| {
            let pix = notification.pix;
            let pix_time = pix.as_ref().and_then(|p| p.time.clone());
            Payment {
                end_to_end_id: pix.as_ref().and_then(|p| p.end_to_end_id.clone()),
                amount: pix.as_ref().and_then(|p| p.value).unwrap_or(charge.value),
                paid_at: charge
                    .paid_at
                    .clone()
                    .or(pix_time)
                    .unwrap_or_else(|| time::format_rfc3339(time::now_unix())),
            }
        });
        Ok(vec![PaymentEvent {
            reference: Some(charge.correlation_id.clone()),
            psp_id: Some(charge.correlation_id),
            status,
            payment,
        }])
    }
}

/// `{api}/api/v1/charge/{correlationID}`.
fn charge_url(ctx: &Context, reference: &str) -> Result<String, Error> {
    Ok(format!(
        "{}/api/v1/charge/{}",
        ctx.endpoint("api")?,
        percent_encode(reference)
    ))
}

/// The PEM as pasted, or the base64 text of it that OpenPix's docs publish.
fn public_key(ctx: &Context) -> Result<String, Error> {
    let value = ctx
        .field("webhook-public-key")
        .map_err(|_| Error::invalid_webhook("the credential has no webhook-public-key"))?;
    if value.contains("-----BEGIN") {
        return Ok(value.to_owned());
    }
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()
        .and_then(|pem| String::from_utf8(pem).ok())
        .filter(|pem| pem.contains("-----BEGIN"))
        .ok_or_else(|| {
            Error::invalid_webhook("webhook-public-key is neither a PEM nor base64 of one")
        })
}

/// Sends with `Authorization: <AppID>`.
fn send(host: &dyn Host, ctx: &Context, op: Op, request: Request) -> Result<Response, Error> {
    request
        .header("authorization", ctx.field("app-id")?)
        .call(host, op, describe)
}

/// A non-2xx answer keeps OpenPix's `{"error": "…"}`.
fn describe(status: u16, body: &[u8]) -> PspError {
    #[derive(Deserialize)]
    struct Body {
        error: String,
    }
    match serde_json::from_slice::<Body>(body) {
        Ok(said) => PspError::new(said.error),
        Err(_) => error::describe_body(status, body),
    }
}

/// `{charge: {...}}`, the answer of create and query.
fn charge_of(op: Op, response: &Response) -> Result<Charge, Error> {
    #[derive(Deserialize)]
    struct Answer {
        charge: OpenPixCharge,
    }
    let Answer { charge } = response.decode(op)?;
    charge
        .into_charge()
        .map_err(|e| error::undecodable(op, response.status, e))
}

/// A charge: the fields the gateway reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenPixCharge {
    status: String,
    value: u64,
    #[serde(rename = "correlationID")]
    correlation_id: String,
    br_code: Option<String>,
    expires_date: Option<String>,
    paid_at: Option<String>,
    payment_methods: Option<PaymentMethods>,
}

#[derive(Deserialize)]
struct PaymentMethods {
    pix: Option<PixMethod>,
}

#[derive(Deserialize)]
struct PixMethod {
    #[serde(rename = "endToEndId")]
    end_to_end_id: Option<String>,
}

impl OpenPixCharge {
    fn into_charge(self) -> Result<Charge, String> {
        let status = match self.status.as_str() {
            "ACTIVE" => ChargeStatus::Pending,
            "COMPLETED" => ChargeStatus::Paid,
            "EXPIRED" => ChargeStatus::Expired,
            other => return Err(format!("unknown OpenPix charge status {other:?}")),
        };
        let expires_at = self
            .expires_date
            .as_deref()
            .map(|d| time::parse_rfc3339(d).map(time::format_rfc3339))
            .transpose()?;
        let payment = (status == ChargeStatus::Paid).then(|| Payment {
            end_to_end_id: self.payment_methods.and_then(|m| m.pix?.end_to_end_id),
            amount: self.value,
            paid_at: self
                .paid_at
                .unwrap_or_else(|| time::format_rfc3339(time::now_unix())),
        });
        Ok(Charge {
            reference: self.correlation_id.clone(),
            psp_id: self.correlation_id,
            status,
            amount: self.value,
            copy_paste: self.br_code.filter(|c| !c.is_empty()),
            // `qrCodeImage` is a URL on another host: the host draws the QR code.
            qr_png_base64: None,
            expires_at,
            payment,
        })
    }
}

export!(OpenPix);

#[cfg(test)]
mod tests;
