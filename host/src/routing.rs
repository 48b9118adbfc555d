//! `provider: "random"`: the merchant's PSPs in turn.
//!
//! - **Candidates**: the merchant's active credentials of the key's environment, in their order
//!   (position, then creation); dropped before any attempt: those whose adapter is not loaded,
//!   whose manifest requires a payer field the request lacks, and those whose circuit is open.
//! - **Round robin**: one counter per merchant and environment in the database, advanced
//!   atomically, so every gateway on one database shares the queue. A credential's
//!   `route_limit` is how many consecutive turns it takes (default 1).
//! - **Failover**: when the PSP whose turn it is certainly created nothing (`rejected`,
//!   `unavailable`, `bad-credentials`, `not-found`, or no call slot freed up for it), the next
//!   candidate is tried with the same reference. When the outcome is unknown (`ambiguous`, an
//!   adapter fault), the same PSP is asked about the same reference: found → that charge is used;
//!   not there → the next candidate; still unknown → the request stops with
//!   `psp_outcome_unknown` and no other PSP is contacted. One request never leaves two live
//!   charges, and its retry (same idempotency key) resumes at that same PSP
//!   ([`Service::create_charge`]).
//! - **Health**: a credential whose PSP answered `unavailable` [`BreakerConfig::threshold`] times
//!   in a row is skipped for [`BreakerConfig::cooldown`] (a circuit breaker, per gateway).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::charges::{
    Attempt, Caller, ChargeError, ChargeInput, PayerInput, Service, nothing_created,
};
/// Where it always was; defined with the other settings.
pub use crate::config::BreakerConfig;
use crate::domain::{Environment, Reference};
use crate::runtime::{self, CallError, PayerField, PspError};
use crate::store::charges::{ChargeRecord, ChargeState};
use crate::store::credentials::CredentialRecord;
use crate::store::routing::AttemptRecord;

/// Per-credential health as this gateway sees it.
#[derive(Default)]
pub struct Breaker {
    config: BreakerConfig,
    state: Mutex<HashMap<String, (u32, Option<Instant>)>>,
}

impl Breaker {
    pub fn new(config: BreakerConfig) -> Breaker {
        Breaker {
            config,
            state: Mutex::default(),
        }
    }

    fn is_open(&self, credential: &str) -> bool {
        self.state
            .lock()
            .get(credential)
            .and_then(|(_, until)| *until)
            .is_some_and(|until| Instant::now() < until)
    }

    fn record(&self, credential: &CredentialRecord, unavailable: bool) {
        let mut state = self.state.lock();
        let entry = state.entry(credential.id.to_string()).or_default();
        let mut opened = false;
        if unavailable {
            entry.0 += 1;
            if entry.0 >= self.config.threshold {
                opened = entry.1.is_none_or(|until| Instant::now() >= until);
                entry.1 = Some(Instant::now() + self.config.cooldown);
                tracing::warn!(credential = %credential.id, provider = %credential.provider,
                    failures = entry.0, cooldown = ?self.config.cooldown, "circuit open: skipping this PSP");
            }
        } else {
            *entry = (0, None);
        }
        crate::metrics::psp_health(&credential.provider, unavailable, opened);
    }
}

/// What the router knows about one of the merchant's active credentials; `target` is what the
/// caller attempts when its turn comes (for the gateway: the credential and its adapter).
#[derive(Debug, Clone)]
pub struct Candidate<T> {
    pub target: T,
    pub provider: String,
    /// Where the merchant ranked it; ties keep the order given (creation).
    pub position: i64,
    /// Consecutive turns it takes before the turn passes on (below 1 counts as 1).
    pub route_limit: i64,
    pub adapter_loaded: bool,
    /// Payer fields its adapter cannot create a charge without.
    pub required_payer_fields: Vec<PayerField>,
    /// Its PSP failed often enough lately that it is paused ([`Breaker`]).
    pub circuit_open: bool,
}

/// Why no PSP can be attempted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoute {
    /// The merchant has no active credential in the environment.
    NoCredentials,
    /// Every candidate was dropped: `"<provider> (<why>)"` each, in order.
    NoneUsable(Vec<String>),
}

impl NoRoute {
    /// The merchant-facing reason.
    pub fn reason(&self, environment: Environment) -> String {
        match self {
            NoRoute::NoCredentials => format!(
                "this merchant has no active PSP credential in the {} environment",
                environment.as_str()
            ),
            NoRoute::NoneUsable(skipped) => format!(
                "none of the connected PSPs can take it: {}",
                skipped.join(", ")
            ),
        }
    }
}

/// The first of `required` that `payer` lacks.
pub fn missing_payer_field(required: &[PayerField], payer: &PayerInput) -> Option<&'static str> {
    required.iter().find_map(|field| {
        let (name, present) = match field {
            PayerField::Email => ("email", payer.email.is_some()),
            PayerField::Name => ("name", payer.name.is_some()),
            PayerField::Document => ("document", payer.document.is_some()),
        };
        (!present).then_some(name)
    })
}

/// The payer fields to ask for a `random` charge among PSPs that each need `each`: none when
/// some PSP needs none (the router drops those needing fields a payer lacks), otherwise those
/// of the PSP that needs fewest.
pub fn payer_fields_for_random(each: impl IntoIterator<Item = Vec<PayerField>>) -> Vec<PayerField> {
    each.into_iter().min_by_key(Vec::len).unwrap_or_default()
}

/// Why a candidate cannot be attempted for this payer, if it cannot.
fn unusable<T>(candidate: &Candidate<T>, payer: &PayerInput) -> Option<String> {
    if !candidate.adapter_loaded {
        return Some("adapter not loaded".into());
    }
    if let Some(field) = missing_payer_field(&candidate.required_payer_fields, payer) {
        return Some(format!("needs payer.{field}"));
    }
    candidate.circuit_open.then(|| "failing; paused".into())
}

/// Whether any candidate can be attempted, i.e. whether [`plan`] will need a turn of the round
/// robin (the caller takes one from the shared counter only then).
pub fn any_usable<T>(candidates: &[Candidate<T>], payer: &PayerInput) -> bool {
    candidates.iter().any(|c| unusable(c, payer).is_none())
}

/// Orders the attempts for one routed charge: the usable candidates (by position), starting with
/// the one whose turn `turn` is, then the others in order, wrapping around. Turns are dealt in
/// blocks of each usable candidate's `route_limit`, so `turn` 0, 1, 2, … takes every candidate
/// `route_limit` times in a row.
pub fn plan<T>(
    mut candidates: Vec<Candidate<T>>,
    payer: &PayerInput,
    turn: i64,
) -> Result<Vec<T>, NoRoute> {
    if candidates.is_empty() {
        return Err(NoRoute::NoCredentials);
    }
    candidates.sort_by_key(|c| c.position);
    let mut skipped = Vec::new();
    let mut usable = Vec::new();
    for candidate in candidates {
        match unusable(&candidate, payer) {
            Some(why) => skipped.push(format!("{} ({why})", candidate.provider)),
            None => usable.push(candidate),
        }
    }
    if usable.is_empty() {
        return Err(NoRoute::NoneUsable(skipped));
    }
    let total: i64 = usable.iter().map(|c| c.route_limit.max(1)).sum();
    let turn = turn.rem_euclid(total);
    let mut seen = 0;
    let start = usable
        .iter()
        .position(|c| {
            seen += c.route_limit.max(1);
            turn < seen
        })
        .expect("turn is below the sum of the limits");
    usable.rotate_left(start);
    Ok(usable.into_iter().map(|c| c.target).collect())
}

/// The attempt outcome recorded for an adapter error.
pub fn outcome_of(error: &CallError) -> &'static str {
    match error {
        CallError::Psp { error, .. } => match error {
            PspError::Rejected(_) => "rejected",
            PspError::Unavailable(_) => "unavailable",
            PspError::Ambiguous(_) => "ambiguous",
            PspError::NotFound(_) => "not_found",
            PspError::BadCredentials(_) => "bad_credentials",
            PspError::InvalidWebhook(_) | PspError::Unsupported(_) => "rejected",
        },
        CallError::Fault { .. } => "fault",
        CallError::Busy { .. } => "busy",
    }
}

/// Queries after an unknown outcome, and the pause before each.
const AMBIGUITY_QUERIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_millis(1000),
];

/// What asking a PSP about a reference after an unknown outcome taught.
enum Settled {
    Found(runtime::Charge),
    Absent,
    Unknown,
}

async fn settle(
    adapter: &runtime::Adapter,
    prepared: &runtime::PreparedCredential,
    reference: &Reference,
    request_id: &str,
) -> Settled {
    for pause in AMBIGUITY_QUERIES {
        tokio::time::sleep(pause).await;
        match adapter
            .query_charge(prepared, request_id, reference.as_str(), None)
            .await
        {
            Ok(charge) => return Settled::Found(charge),
            Err(CallError::Psp {
                error: PspError::NotFound(_),
                ..
            }) => return Settled::Absent,
            Err(_) => continue,
        }
    }
    Settled::Unknown
}

/// Places a charge at the merchant's PSPs in turn, failing over as the module says; `key` as
/// [`Service::create_charge`] says.
pub async fn route(
    service: &Service,
    caller: &Caller,
    input: &ChargeInput,
    reference: &Reference,
    request_id: &str,
    key: Option<&std::sync::Arc<crate::store::idempotency::HeldKey>>,
) -> Result<ChargeRecord, ChargeError> {
    // A resumed request (same idempotency key) was settled at its PSP by
    // `Service::create_charge` before it got here: this is a fresh placement.
    let candidates: Vec<_> = service
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?
        .into_iter()
        .filter(|c| c.active)
        .map(|credential| {
            let adapter = service.runtime.adapter(&credential.provider);
            Candidate {
                provider: credential.provider.clone(),
                position: credential.position,
                route_limit: credential.route_limit,
                adapter_loaded: adapter.is_some(),
                required_payer_fields: adapter
                    .as_ref()
                    .map(|a| a.manifest().required_payer_fields.clone())
                    .unwrap_or_default(),
                circuit_open: service.breaker.is_open(credential.id.as_str()),
                target: (credential, adapter),
            }
        })
        .collect();
    // Only a request some PSP can take uses up a turn of the shared queue.
    let turn = if any_usable(&candidates, &input.payer) {
        service
            .store
            .next_route_turn(&caller.merchant_id, caller.environment)
            .await?
    } else {
        0
    };
    let attempts =
        plan(candidates, &input.payer, turn).map_err(|no_route| ChargeError::NoRoute {
            reason: no_route.reason(caller.environment),
        })?;

    let mut attempted: Vec<String> = Vec::new();
    let mut last = None;
    for (credential, adapter) in &attempts {
        // `plan` only returns candidates whose adapter is loaded.
        let Some(adapter) = adapter else { continue };
        let provider = credential.provider.clone();
        attempted.push(provider.clone());
        let routing = serde_json::json!({
            "mode": "round_robin",
            "selected_provider": provider,
            "attempted_providers": attempted,
        });
        let attempt = Attempt {
            caller,
            input,
            reference,
            request_id,
            routing: Some(&routing),
            key,
        };
        let error = match service.attempt_at(&attempt, adapter, credential).await {
            Ok(charge) => {
                service.breaker.record(credential, false);
                return Ok(charge);
            }
            Err(ChargeError::Psp(call)) => call,
            Err(other) => return Err(other),
        };
        let unavailable = matches!(
            error,
            CallError::Psp {
                error: PspError::Unavailable(_),
                ..
            }
        );
        service.breaker.record(credential, unavailable);
        if nothing_created(&error) {
            tracing::info!(provider = %provider, outcome = outcome_of(&error), "failing over to the next PSP");
            last = Some(ChargeError::Psp(error));
            continue;
        }
        // The charge may exist at this PSP: ask before anything else.
        let prepared = service.prepare(adapter, credential)?;
        let settled = settle(adapter, &prepared, reference, request_id).await;
        let record = |outcome| AttemptRecord {
            reference: reference.clone(),
            credential_id: credential.id.to_string(),
            provider: provider.clone(),
            outcome,
            message: None,
        };
        match settled {
            Settled::Found(psp) => {
                service
                    .store
                    .record_charge_attempt(&record("found"))
                    .await?;
                let charge = service
                    .store
                    .charge_by_reference(reference.as_str())
                    .await?
                    .ok_or_else(|| {
                        crate::store::StoreError::Corrupt(format!(
                            "the charge of {reference} is gone"
                        ))
                    })?;
                if charge.status != ChargeState::Creating {
                    // The reconciler settled it meanwhile; its state is the answer.
                    return Ok(charge);
                }
                return service.finish_created(&charge, psp, input.expires_in).await;
            }
            Settled::Absent => {
                service
                    .store
                    .record_charge_attempt(&record("absent"))
                    .await?;
                if let Some(charge) = service
                    .store
                    .charge_by_reference(reference.as_str())
                    .await?
                    && charge.status == ChargeState::Creating
                {
                    service.store.delete_creating_charge(&charge.id).await?;
                }
                last = Some(ChargeError::Psp(error));
                continue;
            }
            Settled::Unknown => {
                service
                    .store
                    .record_charge_attempt(&record("unknown"))
                    .await?;
                // Contact no other PSP: this one may hold the charge.
                return Err(ChargeError::AllFailed {
                    attempted,
                    last: Box::new(ChargeError::Psp(error)),
                });
            }
        }
    }
    Err(ChargeError::AllFailed {
        attempted,
        last: Box::new(last.expect("at least one candidate was tried")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Email;

    fn psp(provider: &'static str, position: i64, route_limit: i64) -> Candidate<&'static str> {
        Candidate {
            target: provider,
            provider: provider.into(),
            position,
            route_limit,
            adapter_loaded: true,
            required_payer_fields: Vec::new(),
            circuit_open: false,
        }
    }

    fn no_payer() -> PayerInput {
        PayerInput::default()
    }

    /// The PSP each of `turns` consecutive requests starts at.
    fn firsts(candidates: &[Candidate<&'static str>], turns: i64) -> Vec<&'static str> {
        (0..turns)
            .map(|turn| plan(candidates.to_vec(), &no_payer(), turn).unwrap()[0])
            .collect()
    }

    #[test]
    fn turns_go_round_and_each_plan_fails_over_in_order() {
        let three = [psp("efi", 0, 1), psp("bb", 1, 1), psp("itau", 2, 1)];
        assert_eq!(
            firsts(&three, 7),
            ["efi", "bb", "itau", "efi", "bb", "itau", "efi"]
        );
        assert_eq!(
            plan(three.to_vec(), &no_payer(), 1).unwrap(),
            ["bb", "itau", "efi"]
        );
        assert_eq!(
            plan(three.to_vec(), &no_payer(), 5).unwrap(),
            ["itau", "efi", "bb"]
        );
    }

    #[test]
    fn the_order_is_by_position_whatever_order_they_come_in() {
        let shuffled = [psp("itau", 2, 1), psp("efi", 0, 1), psp("bb", 1, 1)];
        assert_eq!(
            plan(shuffled.to_vec(), &no_payer(), 0).unwrap(),
            ["efi", "bb", "itau"]
        );
        // Equal positions keep the order given (creation).
        let tied = [psp("bb", 0, 1), psp("efi", 0, 1)];
        assert_eq!(firsts(&tied, 2), ["bb", "efi"]);
    }

    #[test]
    fn a_route_limit_takes_that_many_turns_in_a_row() {
        let limits = [psp("efi", 0, 3), psp("bb", 1, 1), psp("itau", 2, 2)];
        assert_eq!(
            firsts(&limits, 12),
            [
                "efi", "efi", "efi", "bb", "itau", "itau", "efi", "efi", "efi", "bb", "itau",
                "itau"
            ]
        );
        // A limit below 1 counts as 1.
        let zero = [psp("efi", 0, 0), psp("bb", 1, -4)];
        assert_eq!(firsts(&zero, 4), ["efi", "bb", "efi", "bb"]);
    }

    #[test]
    fn any_counter_value_maps_to_a_turn() {
        // Three turns a round: efi's, then bb's two.
        let two = [psp("efi", 0, 1), psp("bb", 1, 2)];
        assert_eq!(plan(two.to_vec(), &no_payer(), -1).unwrap()[0], "bb");
        assert_eq!(plan(two.to_vec(), &no_payer(), -3).unwrap()[0], "efi");
        // i64::MAX = 3k + 1.
        assert_eq!(plan(two.to_vec(), &no_payer(), i64::MAX).unwrap()[0], "bb");
        assert_eq!(
            plan(two.to_vec(), &no_payer(), i64::MAX - 1).unwrap()[0],
            "efi"
        );
    }

    #[test]
    fn psps_needing_a_missing_payer_field_are_dropped_before_the_turn_is_dealt() {
        let mut stripe = psp("stripe", 1, 1);
        stripe.required_payer_fields = vec![PayerField::Email];
        let mut iugu = psp("iugu", 2, 1);
        iugu.required_payer_fields = vec![PayerField::Name, PayerField::Document];
        let candidates = [psp("efi", 0, 1), stripe, iugu];

        // Without the fields only efi is left, and it takes every turn.
        assert_eq!(firsts(&candidates, 3), ["efi", "efi", "efi"]);
        assert_eq!(plan(candidates.to_vec(), &no_payer(), 1).unwrap(), ["efi"]);

        let with_email = PayerInput {
            email: Some(Email::parse("ana@example.com").unwrap()),
            ..PayerInput::default()
        };
        assert_eq!(
            plan(candidates.to_vec(), &with_email, 1).unwrap(),
            ["stripe", "efi"]
        );
        let named = PayerInput {
            name: Some(crate::domain::Line::parse("name", "Ana", 100).unwrap()),
            ..PayerInput::default()
        };
        // Name is there, document is not: iugu still cannot take it.
        assert!(!any_usable(&candidates[2..], &named));
        assert_eq!(
            plan(candidates[2..].to_vec(), &named, 0).unwrap_err(),
            NoRoute::NoneUsable(vec!["iugu (needs payer.document)".into()])
        );
    }

    #[test]
    fn open_circuits_and_unloaded_adapters_are_skipped() {
        let mut bb = psp("bb", 1, 1);
        bb.circuit_open = true;
        let mut itau = psp("itau", 2, 1);
        itau.adapter_loaded = false;
        let candidates = [psp("efi", 0, 1), bb, itau, psp("inter", 3, 1)];
        assert_eq!(firsts(&candidates, 3), ["efi", "inter", "efi"]);
        assert_eq!(
            plan(candidates.to_vec(), &no_payer(), 1).unwrap(),
            ["inter", "efi"]
        );
    }

    #[test]
    fn no_candidates_and_none_usable_say_why() {
        assert!(!any_usable::<&str>(&[], &no_payer()));
        let none = plan::<&str>(Vec::new(), &no_payer(), 0).unwrap_err();
        assert_eq!(none, NoRoute::NoCredentials);
        assert_eq!(
            none.reason(Environment::Live),
            "this merchant has no active PSP credential in the live environment"
        );

        let mut bb = psp("bb", 0, 1);
        bb.circuit_open = true;
        let mut itau = psp("itau", 1, 1);
        itau.adapter_loaded = false;
        let mut stripe = psp("stripe", 2, 1);
        stripe.required_payer_fields = vec![PayerField::Email];
        let dropped = [bb, itau, stripe];
        assert!(!any_usable(&dropped, &no_payer()));
        let none = plan(dropped.to_vec(), &no_payer(), 7).unwrap_err();
        assert_eq!(
            none.reason(Environment::Test),
            "none of the connected PSPs can take it: bb (failing; paused), \
             itau (adapter not loaded), stripe (needs payer.email)"
        );
    }
}
