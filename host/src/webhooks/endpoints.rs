//! Merchants' webhook endpoints, without HTTP: create one (its `whsec_…` signing secret exists
//! only in the answer), change it, enable or disable it, rotate its secret with an overlap,
//! delete it; and what was delivered to them, with manual redelivery of an event. The API
//! (`api::webhook_endpoints`, `api::events`) and the dashboard (`web::webhooks`) call these;
//! every change is written to the audit log.
//!
//! Inputs are parsed first into [`EndpointUrl`], [`EventTypes`], a description and an
//! [`Overlap`], so the operations only ever see valid values.

use crate::app::App;
use crate::audit;
use crate::charges::Caller;
use crate::domain::Environment;
use crate::store::credentials::Saved;
use crate::store::events::DeliveryListing;
use crate::store::webhook_endpoints::{EndpointLimit, EndpointRecord};
use crate::store::{StoreError, now_ms};
use crate::vault::Aad;
use crate::webhooks::destination::DestinationPolicy;
use crate::webhooks::{DEFAULT_EVENT_TYPES, EVENT_TYPES, signature};

pub const MAX_URL_CHARS: usize = 2048;
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Why an endpoint is disabled when its merchant disabled it.
pub const DISABLED_BY_MERCHANT: &str = "disabled by the merchant";

/// Why an endpoint operation was refused; [`EndpointError::code`] names the dashboard's
/// message, `api::webhook_endpoints` maps each case to the API's error.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("url is required: where events are POSTed")]
    UrlMissing,
    #[error("url must have 1 to {MAX_URL_CHARS} characters; it has {0}")]
    UrlTooLong(usize),
    /// The destination policy's reason (not a URL, not https in live, a private address…).
    #[error("url: {0}")]
    UrlRejected(String),
    #[error("events must name at least one event type")]
    NoEvents,
    #[error("{0:?} is not an event type")]
    UnknownEvent(String),
    #[error("description must have 1 to {MAX_DESCRIPTION_CHARS} characters; it has {0}")]
    DescriptionTooLong(usize),
    #[error("overlap_seconds must be between 0 and {}", Overlap::MAX_SECONDS)]
    Overlap,
    #[error("no webhook endpoint {0:?}")]
    NotFound(String),
    #[error("no event {0:?}")]
    EventNotFound(String),
    #[error("description must not contain control characters (line breaks, tabs and the like)")]
    DescriptionControl,
    /// The merchant's plan has no room for one more endpoint in this environment.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    /// The plan sets no limit and the operator's cap per merchant and environment is reached.
    #[error(
        "this gateway allows at most {limit} webhook endpoints per merchant in {environment} \
         and {usage} exist; delete one you no longer use (an endpoint can receive every event type)"
    )]
    TooMany {
        limit: u64,
        usage: u64,
        environment: Environment,
    },
    /// Someone else changed the endpoint since the caller read it: nothing was saved.
    #[error(
        "the webhook endpoint was changed since version {expected} was read (it is at version \
         {current} now): read it again and repeat the change"
    )]
    Conflict { expected: i64, current: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EndpointError {
    /// The catalog key of the message shown to the person.
    pub fn code(&self) -> &'static str {
        match self {
            EndpointError::UrlMissing => "webhooks.error.url_missing",
            EndpointError::UrlTooLong(_) => "webhooks.error.url_too_long",
            EndpointError::UrlRejected(_) => "webhooks.error.url_rejected",
            EndpointError::NoEvents => "webhooks.error.no_events",
            EndpointError::UnknownEvent(_) => "webhooks.error.unknown_event",
            EndpointError::DescriptionTooLong(_) => "webhooks.error.description_too_long",
            EndpointError::DescriptionControl => "webhooks.error.description_control",
            EndpointError::TooMany { .. } => "webhooks.error.too_many",
            EndpointError::Overlap => "webhooks.error.overlap",
            EndpointError::NotFound(_) | EndpointError::EventNotFound(_) => {
                "error.not_found.message"
            }
            EndpointError::PlanLimit(_) => "error.plan.title",
            EndpointError::Conflict { .. } => "webhooks.error.conflict",
            EndpointError::Store(_) => "error.internal",
        }
    }

    /// The input at fault: `url`, `events`, `description`, `overlap_seconds`.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            EndpointError::UrlMissing
            | EndpointError::UrlTooLong(_)
            | EndpointError::UrlRejected(_) => Some("url"),
            EndpointError::NoEvents | EndpointError::UnknownEvent(_) => Some("events"),
            EndpointError::DescriptionTooLong(_) | EndpointError::DescriptionControl => {
                Some("description")
            }
            EndpointError::Overlap => Some("overlap_seconds"),
            _ => None,
        }
    }
}

/// A URL events may be POSTed to: at most [`MAX_URL_CHARS`], and allowed by the operator's
/// destination policy in its environment (https in live, no private address unless allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl(String);

impl EndpointUrl {
    pub async fn parse(
        policy: &DestinationPolicy,
        environment: Environment,
        input: &str,
    ) -> Result<EndpointUrl, EndpointError> {
        let url = input.trim();
        let chars = url.chars().count();
        if chars == 0 {
            return Err(EndpointError::UrlMissing);
        }
        if chars > MAX_URL_CHARS {
            return Err(EndpointError::UrlTooLong(chars));
        }
        policy
            .check_url(url, environment)
            .await
            .map_err(EndpointError::UrlRejected)?;
        Ok(EndpointUrl(url.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The event types an endpoint receives: each one of [`EVENT_TYPES`], once, at least one, in
/// the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTypes(Vec<&'static str>);

impl EventTypes {
    pub fn parse<'a>(
        kinds: impl IntoIterator<Item = &'a str>,
    ) -> Result<EventTypes, EndpointError> {
        let mut types: Vec<&'static str> = Vec::new();
        for kind in kinds {
            let known = EVENT_TYPES
                .iter()
                .find(|t| **t == kind)
                .ok_or_else(|| EndpointError::UnknownEvent(kind.to_owned()))?;
            if !types.contains(known) {
                types.push(known);
            }
        }
        if types.is_empty() {
            return Err(EndpointError::NoEvents);
        }
        Ok(EventTypes(types))
    }

    /// What an endpoint gets when it does not choose: every type but `charge.created`.
    pub fn default_set() -> EventTypes {
        EventTypes(DEFAULT_EVENT_TYPES.to_vec())
    }

    pub fn as_slice(&self) -> &[&'static str] {
        &self.0
    }

    fn to_strings(&self) -> Vec<String> {
        self.0.iter().map(|t| t.to_string()).collect()
    }
}

/// A description as typed: trimmed, at most [`MAX_DESCRIPTION_CHARS`], one line without
/// control characters; empty is none.
pub fn description(input: &str) -> Result<Option<String>, EndpointError> {
    let text = input.trim();
    let chars = text.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(EndpointError::DescriptionTooLong(chars));
    }
    if crate::domain::control_character(text).is_some() {
        return Err(EndpointError::DescriptionControl);
    }
    Ok((chars > 0).then(|| text.to_owned()))
}

/// How long the previous secret keeps signing after a rotation: up to a week, a day unless
/// said otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap(i64);

impl Overlap {
    pub const MAX_SECONDS: i64 = 7 * 24 * 3600;

    pub fn seconds(seconds: i64) -> Result<Overlap, EndpointError> {
        if (0..=Self::MAX_SECONDS).contains(&seconds) {
            Ok(Overlap(seconds))
        } else {
            Err(EndpointError::Overlap)
        }
    }
}

impl Default for Overlap {
    fn default() -> Self {
        Overlap(24 * 3600)
    }
}

/// The associated data the vault seals an endpoint's secrets with.
pub fn secret_aad(endpoint_id: &str) -> Aad {
    Aad::new("webhook_endpoints", endpoint_id, "secret")
}

/// An endpoint and its signing secret: only in the answer to a create or a rotation.
pub struct WithSecret {
    pub endpoint: EndpointRecord,
    pub secret: String,
}

/// What a new endpoint is.
pub struct NewEndpoint {
    pub url: EndpointUrl,
    pub events: EventTypes,
    pub description: Option<String>,
}

/// What a change changes; `None` leaves a field as it is.
#[derive(Default)]
pub struct Changes {
    pub url: Option<EndpointUrl>,
    pub events: Option<EventTypes>,
    /// `Some(None)` removes the description.
    pub description: Option<Option<String>>,
    /// Enable (which also forgets past failures) or disable.
    pub enabled: Option<bool>,
    /// The version the caller read (`If-Match`, the form's hidden field): a change of an
    /// endpoint that moved on since is refused with [`EndpointError::Conflict`]. `None`: the
    /// version read here, so a change made meanwhile is still never undone.
    pub expected_version: Option<i64>,
}

/// Creates an endpoint for the caller's merchant and environment, enabled, with a new secret.
pub async fn create(
    app: &App,
    caller: &Caller,
    new: NewEndpoint,
) -> Result<WithSecret, EndpointError> {
    let id = format!("we_{}", uuid::Uuid::now_v7().simple());
    let secret = signature::generate_secret();
    let now = now_ms();
    let endpoint = EndpointRecord {
        secret_sealed: app.vault.seal(secret.as_bytes(), &secret_aad(&id)),
        id,
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        url: new.url.0,
        description: new.description,
        events: new.events.to_strings(),
        previous_secret_sealed: None,
        previous_expires_at: None,
        status: "enabled".into(),
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
        version: 1,
    };
    let cap = app.config.delivery.max_endpoints;
    match app.store.insert_webhook_endpoint(&endpoint, cap).await? {
        Ok(()) => {}
        Err(EndpointLimit::Plan(reached)) => return Err(reached.into()),
        Err(EndpointLimit::Operator { limit, usage }) => {
            return Err(EndpointError::TooMany {
                limit,
                usage,
                environment: endpoint.environment,
            });
        }
    }
    audit::record(
        &app.store,
        caller,
        "webhook_endpoint.create",
        Some(("webhook_endpoint", &endpoint.id)),
        format!(
            "endpoint {} for {}",
            shown_url(&endpoint.url),
            endpoint.events.join(", ")
        ),
    )
    .await?;
    Ok(WithSecret { endpoint, secret })
}

/// The caller's endpoints in its environment.
pub async fn list(app: &App, caller: &Caller) -> Result<Vec<EndpointRecord>, StoreError> {
    app.store
        .webhook_endpoints(&caller.merchant_id, caller.environment)
        .await
}

/// One of the caller's endpoints.
pub async fn find(app: &App, caller: &Caller, id: &str) -> Result<EndpointRecord, EndpointError> {
    app.store
        .webhook_endpoint(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| EndpointError::NotFound(id.to_owned()))
}

/// Changes an endpoint. Each kind of change is its own audit entry: `update` for the URL,
/// events and description, `enable` / `disable` when the status changes.
pub async fn update(
    app: &App,
    caller: &Caller,
    id: &str,
    changes: Changes,
) -> Result<EndpointRecord, EndpointError> {
    let mut endpoint = find(app, caller, id).await?;
    if let Some(expected) = changes.expected_version
        && expected != endpoint.version
    {
        return Err(EndpointError::Conflict {
            expected,
            current: endpoint.version,
        });
    }
    let mut edited = Vec::new();
    if let Some(url) = changes.url {
        edited.push(format!("url {}", shown_url(url.as_str())));
        endpoint.url = url.0;
    }
    if let Some(events) = changes.events {
        edited.push(format!("events {}", events.as_slice().join(", ")));
        endpoint.events = events.to_strings();
    }
    if let Some(description) = changes.description {
        edited.push("description".to_owned());
        endpoint.description = description;
    }
    let was_enabled = endpoint.status == "enabled";
    match changes.enabled {
        None => {}
        Some(true) => {
            endpoint.status = "enabled".into();
            endpoint.disabled_reason = None;
            endpoint.failing_since = None;
        }
        Some(false) => {
            endpoint.status = "disabled".into();
            endpoint.disabled_reason = Some(DISABLED_BY_MERCHANT.into());
        }
    }
    endpoint.updated_at = now_ms();
    save(app, caller, &mut endpoint).await?;
    if changes.enabled == Some(false) {
        // The worker claims nothing for a disabled endpoint; what was pending is dropped, as
        // when the gateway disables an endpoint itself.
        app.store.cancel_pending_deliveries(&endpoint.id).await?;
    }
    let target = Some(("webhook_endpoint", endpoint.id.as_str()));
    if !edited.is_empty() {
        audit::record(
            &app.store,
            caller,
            "webhook_endpoint.update",
            target,
            format!("{}: {}", shown_url(&endpoint.url), edited.join("; ")),
        )
        .await?;
    }
    if let Some(enabled) = changes.enabled.filter(|e| *e != was_enabled) {
        let action = if enabled {
            "webhook_endpoint.enable"
        } else {
            "webhook_endpoint.disable"
        };
        let summary = format!(
            "{} {}",
            shown_url(&endpoint.url),
            if enabled { "enabled" } else { "disabled" }
        );
        audit::record(&app.store, caller, action, target, summary).await?;
    }
    Ok(endpoint)
}

/// Writes back a change of `endpoint` as read (compare-and-swap on its version), which then
/// moves on by one; a change saved by someone else meanwhile makes this a conflict.
async fn save(
    app: &App,
    caller: &Caller,
    endpoint: &mut EndpointRecord,
) -> Result<(), EndpointError> {
    if app.store.update_webhook_endpoint(endpoint).await? == Saved::Conflict {
        let current = find(app, caller, &endpoint.id).await?;
        return Err(EndpointError::Conflict {
            expected: endpoint.version,
            current: current.version,
        });
    }
    endpoint.version += 1;
    Ok(())
}

/// Gives an endpoint a new secret; the previous one keeps signing for `overlap` (both
/// signatures are sent), so receivers can switch without losing an event.
pub async fn rotate_secret(
    app: &App,
    caller: &Caller,
    id: &str,
    overlap: Overlap,
) -> Result<WithSecret, EndpointError> {
    let mut endpoint = find(app, caller, id).await?;
    let secret = signature::generate_secret();
    let now = now_ms();
    endpoint.previous_secret_sealed = Some(std::mem::replace(
        &mut endpoint.secret_sealed,
        app.vault.seal(secret.as_bytes(), &secret_aad(&endpoint.id)),
    ));
    endpoint.previous_expires_at = Some(now + overlap.0 * 1000);
    endpoint.updated_at = now;
    save(app, caller, &mut endpoint).await?;
    audit::record(
        &app.store,
        caller,
        "webhook_endpoint.rotate_secret",
        Some(("webhook_endpoint", &endpoint.id)),
        format!(
            "{}: new signing secret; the previous one signs for {} s more",
            shown_url(&endpoint.url),
            overlap.0
        ),
    )
    .await?;
    Ok(WithSecret { endpoint, secret })
}

/// Deletes an endpoint; its pending deliveries are canceled.
pub async fn delete(app: &App, caller: &Caller, id: &str) -> Result<EndpointRecord, EndpointError> {
    let endpoint = find(app, caller, id).await?;
    app.store.delete_webhook_endpoint(&endpoint.id).await?;
    audit::record(
        &app.store,
        caller,
        "webhook_endpoint.delete",
        Some(("webhook_endpoint", &endpoint.id)),
        format!("endpoint {} deleted", shown_url(&endpoint.url)),
    )
    .await?;
    Ok(endpoint)
}

/// The caller's latest deliveries (to one endpoint or to any), newest event first.
pub async fn recent_deliveries(
    app: &App,
    caller: &Caller,
    endpoint_id: Option<&str>,
    limit: i64,
) -> Result<Vec<DeliveryListing>, StoreError> {
    app.store
        .recent_deliveries(&caller.merchant_id, caller.environment, endpoint_id, limit)
        .await
}

/// Sends one of the caller's events again, with the same id, to every enabled endpoint
/// subscribed to its type; returns how many deliveries are queued.
pub async fn redeliver(app: &App, caller: &Caller, event_id: &str) -> Result<u64, EndpointError> {
    let event = app
        .store
        .event(&caller.merchant_id, caller.environment, event_id)
        .await?
        .ok_or_else(|| EndpointError::EventNotFound(event_id.to_owned()))?;
    let queued = app.store.redeliver_event(&event).await?;
    app.charges.outbox.wake();
    audit::record(
        &app.store,
        caller,
        "event.redeliver",
        Some(("event", &event.id)),
        format!("{} queued again to {queued} endpoint(s)", event.kind),
    )
    .await?;
    Ok(queued)
}

/// A URL for the audit log: scheme, host, port and path. A query string can carry the
/// receiver's own token, and summaries never hold secrets.
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!("{}{}", u.origin().ascii_serialization(), u.path()),
        Err(_) => "(unparsable URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_are_known_unique_and_at_least_one() {
        let types = EventTypes::parse(["charge.paid", "charge.created", "charge.paid"]).unwrap();
        assert_eq!(types.as_slice(), ["charge.paid", "charge.created"]);
        assert!(matches!(
            EventTypes::parse(["charge.paid", "charge.refunded"]),
            Err(EndpointError::UnknownEvent(kind)) if kind == "charge.refunded"
        ));
        assert!(matches!(
            EventTypes::parse([]),
            Err(EndpointError::NoEvents)
        ));
        assert_eq!(
            EventTypes::default_set().as_slice(),
            [
                "charge.paid",
                "charge.underpaid",
                "charge.expired",
                "charge.canceled",
                "charge.failed"
            ]
        );
    }

    #[test]
    fn descriptions_are_trimmed_and_bounded() {
        assert_eq!(description("  Loja  ").unwrap().as_deref(), Some("Loja"));
        assert_eq!(description("   ").unwrap(), None);
        assert!(description(&"é".repeat(MAX_DESCRIPTION_CHARS)).is_ok());
        assert!(matches!(
            description(&"a".repeat(MAX_DESCRIPTION_CHARS + 1)),
            Err(EndpointError::DescriptionTooLong(201))
        ));
        for bad in [
            "Loja\nCentro",
            "Loja\u{7}",
            "Lo\tja",
            "Loja\u{9b}x",
            "a\u{202e}b",
        ] {
            assert!(
                matches!(description(bad), Err(EndpointError::DescriptionControl)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn overlaps_last_up_to_a_week() {
        assert_eq!(Overlap::default(), Overlap::seconds(86_400).unwrap());
        assert!(Overlap::seconds(0).is_ok());
        assert!(Overlap::seconds(604_800).is_ok());
        assert!(matches!(
            Overlap::seconds(604_801),
            Err(EndpointError::Overlap)
        ));
        assert!(matches!(Overlap::seconds(-1), Err(EndpointError::Overlap)));
    }

    #[tokio::test]
    async fn urls_are_required_bounded_and_checked_by_the_policy() {
        let strict = DestinationPolicy::default();
        let open = DestinationPolicy {
            allow_private: true,
        };
        assert!(matches!(
            EndpointUrl::parse(&strict, Environment::Test, "  ").await,
            Err(EndpointError::UrlMissing)
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(matches!(
            EndpointUrl::parse(&strict, Environment::Test, &long).await,
            Err(EndpointError::UrlTooLong(2068))
        ));
        match EndpointUrl::parse(&strict, Environment::Test, "http://127.0.0.1:9/hook").await {
            Err(EndpointError::UrlRejected(reason)) => {
                assert!(reason.contains("loopback, private or reserved"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        match EndpointUrl::parse(&open, Environment::Live, "http://127.0.0.1:9/hook").await {
            Err(EndpointError::UrlRejected(reason)) => {
                assert_eq!(reason, "live webhook endpoints must use https")
            }
            other => panic!("{other:?}"),
        }
        let url = EndpointUrl::parse(&open, Environment::Test, " http://127.0.0.1:9/hook ")
            .await
            .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/hook");
    }

    #[test]
    fn audit_summaries_show_urls_without_their_query() {
        assert_eq!(
            shown_url("https://loja.com.br:8443/hooks/pix?token=s3cr3t"),
            "https://loja.com.br:8443/hooks/pix"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:9/hook"),
            "http://127.0.0.1:9/hook"
        );
    }
}
