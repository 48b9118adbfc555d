//! A charge as merchants see it: in API answers and in webhook events alike.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::store::charges::ChargeRecord;
use crate::store::rfc3339;

#[derive(Serialize, Deserialize, ToSchema)]
pub struct PayerSchema {
    /// Required by some PSPs (the manifest's required payer fields).
    pub email: Option<String>,
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), with valid check digits;
    /// punctuation is accepted and removed.
    pub document: Option<String>,
}

/// Where a charge stands. `processing`: the PSP reported a payment the gateway is confirming.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ChargeStatus {
    Pending,
    Processing,
    Paid,
    Expired,
    Canceled,
    Failed,
}

/// The Pix data the payer uses.
#[derive(Serialize, ToSchema)]
pub struct PixData {
    /// The Pix copy-and-paste code (BR Code), checked (TLV and CRC) before it is returned.
    copy_paste: Option<String>,
    /// PNG of the QR code of `copy_paste`, base64 without a `data:` prefix: black on white,
    /// 1 bit a pixel, 8 pixels a module, about 1 KB.
    qr_code_base64: Option<String>,
    /// RFC 3339.
    expires_at: Option<String>,
}

/// The payment link a charge came from.
#[derive(Serialize, ToSchema)]
pub struct ChargePaymentLink {
    /// `plink_…`.
    id: String,
    /// The link's name when the charge was made (what the payer saw).
    name: String,
}

/// A charge.
#[derive(Serialize, ToSchema)]
pub struct ChargeObject {
    /// `chg_…`; ids sort by creation time.
    id: String,
    /// Always `charge`.
    object: &'static str,
    #[schema(value_type = ChargeStatus)]
    status: &'static str,
    /// Centavos.
    amount: i64,
    /// Always `BRL`.
    currency: &'static str,
    /// The PSP that holds the charge.
    provider: String,
    /// The gateway-chosen reference sent to the PSP (its txid, idempotency key or correlation id).
    reference: String,
    /// The PSP's own id for the charge.
    psp_id: Option<String>,
    description: Option<String>,
    payer: Option<PayerSchema>,
    pix: PixData,
    /// `true` for live keys' charges.
    livemode: bool,
    created_at: String,
    paid_at: Option<String>,
    end_to_end_id: Option<String>,
    /// What the payer paid, in centavos, as the PSP reported it.
    amount_paid: Option<i64>,
    /// Set when the PSP reported a payment of another amount than the charge's.
    amount_mismatch: bool,
    /// `true` when the charge is `paid` but `amount_paid` is less than `amount`: the payer paid
    /// only part. Such a payment is announced by the event `charge.underpaid`, never
    /// `charge.paid`; do not treat it as settled (ask for the rest, or refund at the PSP).
    underpaid: bool,
    /// `true` when the payment arrived after the gateway had told you the charge was `expired`
    /// or `canceled` (the PSP still accepted it): the charge is now `paid` and `charge.paid`
    /// (or `charge.underpaid`) was sent. The money is in your PSP account; refund it there if
    /// the order was abandoned.
    paid_late: bool,
    /// The payment link the payer paid through, with the link's name when the charge was made;
    /// `null` for charges made otherwise.
    payment_link: Option<ChargePaymentLink>,
    /// For `provider: "random"`: `{mode: "round_robin", selected_provider, attempted_providers}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    routing: Option<serde_json::Value>,
    metadata: serde_json::Value,
}

impl ChargeObject {
    /// The charge as stored JSON keeps it (an idempotency key's answer, an event's payload):
    /// without its QR image, drawn back in when the JSON leaves the gateway
    /// ([`super::qr_image`]).
    pub fn stored(c: &ChargeRecord) -> ChargeObject {
        ChargeObject::of(c, false)
    }

    /// `c`, with its QR image or without it (not copied only to be dropped: this runs twice a
    /// created charge).
    fn of(c: &ChargeRecord, with_image: bool) -> ChargeObject {
        let has_payer =
            c.payer_email.is_some() || c.payer_name.is_some() || c.payer_document.is_some();
        let payer = has_payer.then(|| PayerSchema {
            email: c.payer_email.clone(),
            name: c.payer_name.clone(),
            document: c.payer_document.clone(),
        });
        ChargeObject {
            id: c.id.clone(),
            object: "charge",
            status: c.status.as_str(),
            amount: c.amount,
            currency: "BRL",
            provider: c.provider.clone(),
            reference: c.reference.to_string(),
            psp_id: c.psp_id.clone(),
            description: c.description.clone(),
            payer,
            pix: PixData {
                copy_paste: c.copy_paste.clone(),
                qr_code_base64: if with_image {
                    c.qr_png_base64.clone()
                } else {
                    None
                },
                expires_at: c.expires_at.map(rfc3339),
            },
            livemode: c.environment == crate::domain::Environment::Live,
            created_at: rfc3339(c.created_at),
            paid_at: c.paid_at.map(rfc3339),
            end_to_end_id: c.end_to_end_id.clone(),
            amount_paid: c.amount_paid,
            amount_mismatch: c.amount_paid.is_some_and(|paid| paid != c.amount),
            underpaid: c.underpaid(),
            paid_late: c.paid_late,
            payment_link: c.payment_link_id.as_ref().map(|id| ChargePaymentLink {
                id: id.clone(),
                name: c.payment_link_name.clone().unwrap_or_default(),
            }),
            routing: c.routing.clone(),
            metadata: c.metadata.clone(),
        }
    }
}

impl From<&ChargeRecord> for ChargeObject {
    fn from(c: &ChargeRecord) -> Self {
        ChargeObject::of(c, true)
    }
}
