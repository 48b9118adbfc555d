//! Webhooks in both directions.
//!
//! - [`inbound`]: PSP notifications at `/api/wh/<uuid>` — authenticated by the credential's
//!   token, stored before processing, parsed by the adapter, confirmed with `query-charge`.
//! - [`outbound`]: events to merchants' endpoints — the delivery worker, retries, endpoint health.
//! - [`signature`]: Standard Webhooks signing (`webhook-id`, `webhook-timestamp`,
//!   `webhook-signature`) and `whsec_` secrets.
//! - [`endpoints`]: merchants' endpoints (create, change, rotate the secret, delete) and
//!   manual redelivery, for the API and the dashboard alike.
//! - [`destination`]: which merchant URLs may be called (no loopback, private or other
//!   special-purpose addresses unless the operator allows them).
//!
//! [`event_for`] builds the one event format every PSP's changes are reported in.

pub mod destination;
pub mod endpoints;
pub mod inbound;
pub mod outbound;
pub mod signature;

use crate::charges::object::ChargeObject;
use crate::domain::{Environment, EventId};
use crate::store::charges::{ChargeRecord, ChargeState};
use crate::store::events::EventRecord;
use crate::store::{now_ms, rfc3339};

/// Every event type, in the order the API documents them.
pub const EVENT_TYPES: [&str; 6] = [
    "charge.created",
    "charge.paid",
    "charge.underpaid",
    "charge.expired",
    "charge.canceled",
    "charge.failed",
];

/// Event types an endpoint gets when it does not choose: every one but `charge.created`.
pub const DEFAULT_EVENT_TYPES: [&str; 5] = [
    "charge.paid",
    "charge.underpaid",
    "charge.expired",
    "charge.canceled",
    "charge.failed",
];

/// Sent instead of `charge.paid` when the payer paid less than the charge's amount (the
/// charge is `paid` with `underpaid: true` and `amount_paid`).
pub const UNDERPAID: &str = "charge.underpaid";

/// The event a charge reaching `state` emits (`processing` emits none).
pub fn event_type(state: ChargeState, created: bool) -> Option<&'static str> {
    match state {
        ChargeState::Pending if created => Some("charge.created"),
        ChargeState::Paid => Some("charge.paid"),
        ChargeState::Expired => Some("charge.expired"),
        ChargeState::Canceled => Some("charge.canceled"),
        ChargeState::Failed => Some("charge.failed"),
        _ => None,
    }
}

/// `{id: "evt_…", type, created_at, livemode, data: {object: <charge>}}`, the charge as stored
/// (without its QR image: [`crate::charges::qr_image`] draws it back in when the event is sent
/// or read).
pub fn event_for(charge: &ChargeRecord, kind: &str) -> EventRecord {
    let id = EventId::generate().to_string();
    let created_at = now_ms();
    let payload = serde_json::json!({
        "id": id,
        "object": "event",
        "type": kind,
        "created_at": rfc3339(created_at),
        "livemode": charge.environment == Environment::Live,
        "data": { "object": ChargeObject::stored(charge) },
    });
    EventRecord {
        id,
        merchant_id: charge.merchant_id.clone(),
        environment: charge.environment,
        kind: kind.to_owned(),
        charge_id: Some(charge.id.clone()),
        payload,
        created_at,
    }
}
