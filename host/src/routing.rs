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
//!   ([`App::create_charge`]).
//! - **Health**: a credential whose PSP answered `unavailable` [`BreakerConfig::threshold`] times
//!   in a row is skipped for [`BreakerConfig::cooldown`] (a circuit breaker, per gateway).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::app::App;
use crate::charges::{
    Attempt, Caller, ChargeError, ChargeInput, missing_payer_field, nothing_created,
};
use crate::domain::Reference;
use crate::runtime::{self, CallError, PspError};
use crate::store::charges::{ChargeRecord, ChargeState};
use crate::store::credentials::CredentialRecord;
use crate::store::routing::AttemptRecord;

/// The circuit breaker's settings.
#[derive(Debug, Clone)]
pub struct BreakerConfig {
    /// Consecutive `unavailable` answers that open a credential's circuit.
    pub threshold: u32,
    /// How long an open circuit skips the credential.
    pub cooldown: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            threshold: 5,
            cooldown: Duration::from_secs(30),
        }
    }
}

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
        let entry = state.entry(credential.id.clone()).or_default();
        let mut opened = false;
        if unavailable {
            entry.0 += 1;
            if entry.0 >= self.config.threshold {
                opened = !entry.1.is_some_and(|until| Instant::now() < until);
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

/// Places a charge at the merchant's PSPs in turn, failing over as the module says.
pub async fn route(
    app: &App,
    caller: &Caller,
    input: &ChargeInput,
    reference: &Reference,
    request_id: &str,
) -> Result<ChargeRecord, ChargeError> {
    // A resumed request (same idempotency key) was settled at its PSP by
    // `App::create_charge` before it got here: this is a fresh placement.
    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    for credential in app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?
        .into_iter()
        .filter(|c| c.active)
    {
        let Some(adapter) = app.runtime.adapter(&credential.provider) else {
            skipped.push(format!("{} (adapter not loaded)", credential.provider));
            continue;
        };
        if let Some(field) = missing_payer_field(&adapter, &input.payer) {
            skipped.push(format!("{} (needs payer.{field})", credential.provider));
            continue;
        }
        if app.breaker.is_open(&credential.id) {
            skipped.push(format!("{} (failing; paused)", credential.provider));
            continue;
        }
        candidates.push((credential, adapter));
    }
    if candidates.is_empty() {
        let reason = if skipped.is_empty() {
            format!(
                "this merchant has no active PSP credential in the {} environment",
                caller.environment.as_str()
            )
        } else {
            format!(
                "none of the connected PSPs can take it: {}",
                skipped.join(", ")
            )
        };
        return Err(ChargeError::NoRoute { reason });
    }

    // Whose turn it is: turns are dealt in blocks of each candidate's limit.
    let total: i64 = candidates.iter().map(|(c, _)| c.route_limit.max(1)).sum();
    let turn = app
        .store
        .next_route_turn(&caller.merchant_id, caller.environment)
        .await?
        .rem_euclid(total);
    let mut start = 0;
    let mut seen = 0;
    for (i, (c, _)) in candidates.iter().enumerate() {
        seen += c.route_limit.max(1);
        if turn < seen {
            start = i;
            break;
        }
    }
    candidates.rotate_left(start);

    let mut attempted: Vec<String> = Vec::new();
    let mut last = None;
    for (credential, adapter) in &candidates {
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
        };
        let error = match app.attempt_at(&attempt, adapter, credential).await {
            Ok(charge) => {
                app.breaker.record(credential, false);
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
        app.breaker.record(credential, unavailable);
        if nothing_created(&error) {
            tracing::info!(provider = %provider, outcome = outcome_of(&error), "failing over to the next PSP");
            last = Some(ChargeError::Psp(error));
            continue;
        }
        // The charge may exist at this PSP: ask before anything else.
        let prepared =
            app.prepared
                .get_or_prepare(&app.vault, &app.config.base_url, adapter, credential)?;
        let settled = settle(adapter, &prepared, reference, request_id).await;
        let record = |outcome| AttemptRecord {
            reference: reference.to_string(),
            credential_id: credential.id.clone(),
            provider: provider.clone(),
            outcome,
            message: None,
        };
        match settled {
            Settled::Found(psp) => {
                app.store.record_charge_attempt(&record("found")).await?;
                let charge = app
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
                return app.finish_created(&charge, psp, input.expires_in).await;
            }
            Settled::Absent => {
                app.store.record_charge_attempt(&record("absent")).await?;
                if let Some(charge) = app.store.charge_by_reference(reference.as_str()).await?
                    && charge.status == ChargeState::Creating
                {
                    app.store.delete_creating_charge(&charge.id).await?;
                }
                last = Some(ChargeError::Psp(error));
                continue;
            }
            Settled::Unknown => {
                app.store.record_charge_attempt(&record("unknown")).await?;
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
