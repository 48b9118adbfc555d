//! Charges: create one at a PSP, read them, cancel one, move one to a new state. HTTP-free;
//! `api::charges` and `web::charges` map these outcomes to responses. [`Service`] holds what
//! these operations use; the gateway keeps one, as `App::charges`.
//!
//! A charge made by a dashboard user keeps them as its operator (a cashier's sale); a cancel is
//! written to the audit log with whoever asked for it.
//!
//! Creation writes the charge as `creating` (with the gateway's reference) before the PSP is
//! called, so whatever the PSP did can be found again: a refusal removes the row (nothing exists
//! at the PSP), an answer makes it `pending`, and an unknown outcome keeps it for a retry with
//! the same idempotency key, which resumes with the same reference **at the same PSP**: it asks
//! that PSP about the reference first, and only when the PSP has no such charge is the request
//! placed again (routed requests then take a turn as if new). A `creating` row is never an
//! answer.
//!
//! Money is never dropped: a payment the PSP reports for a charge the gateway had closed
//! (expired or canceled) makes it `paid` with `paid_late`, and a payment of less than the
//! amount is reported as `charge.underpaid`, not `charge.paid`.

pub mod object;
pub mod qr_image;

use std::sync::Arc;

use crate::audit::{self, Actor};
use crate::credentials::PreparedCache;
use crate::domain::{
    Amount, BrCode, ChargeId, Document, Email, Environment, Line, Metadata, Reference,
};
use crate::live::LiveUpdates;
use crate::routing::Breaker;
use crate::runtime::{self, CallError, PspError, Runtime};
use crate::store::charges::{AnswerWith, ChargeRecord, ChargeState, PspUpdate};
use crate::store::credentials::CredentialRecord;
use crate::store::idempotency::HeldKey;
use crate::store::{Durability, Store, StoreError, now_ms};
use crate::vault::{Vault, VaultError};
use crate::webhooks::outbound::OutboxSignal;

/// Settings of charge creation.
#[derive(Debug, Clone)]
pub struct ChargesConfig {
    /// How long an idempotency key's lock lasts without renewal. The request holding it renews
    /// it every third of this while it runs; after a crash a retry may resume after this long.
    pub idempotency_lock: std::time::Duration,
}

impl Default for ChargesConfig {
    fn default() -> Self {
        ChargesConfig {
            idempotency_lock: std::time::Duration::from_secs(30),
        }
    }
}

/// Seconds a charge can be paid when the request does not say.
pub const DEFAULT_EXPIRES_IN: u32 = 3600;
pub const MIN_EXPIRES_IN: u32 = 60;
/// 14 days: the longest every supported PSP accepts.
pub const MAX_EXPIRES_IN: u32 = 1_209_600;

/// The merchant and environment a request acts for, and who is acting (for the audit log).
#[derive(Debug, Clone)]
pub struct Caller {
    pub merchant_id: String,
    pub environment: Environment,
    pub actor: crate::audit::Actor,
    /// The client's address, when the request came over the network.
    pub ip: Option<std::net::IpAddr>,
}

#[derive(Debug, Clone, Default)]
pub struct PayerInput {
    pub email: Option<Email>,
    pub name: Option<Line>,
    pub document: Option<Document>,
}

/// Which PSP a charge request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoice {
    /// One adapter id.
    One(String),
    /// `random`: the router picks among the merchant's PSPs.
    Random,
}

impl ProviderChoice {
    pub fn as_str(&self) -> &str {
        match self {
            ProviderChoice::One(id) => id,
            ProviderChoice::Random => "random",
        }
    }
}

/// A charge request, parsed: every value here is valid.
#[derive(Debug, Clone)]
pub struct ChargeInput {
    pub amount: Amount,
    pub provider: ProviderChoice,
    pub description: Option<Line>,
    pub payer: PayerInput,
    pub expires_in: u32,
    pub metadata: Metadata,
    /// The payment link a payer is paying through (the public checkout); `None` otherwise.
    pub payment_link: Option<LinkOrigin>,
}

/// The payment link a charge comes from: recorded on the charge with the name the payer saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkOrigin {
    pub id: String,
    pub name: String,
}

/// The reference a create places its charge under, and whether a charge may hold it already.
#[derive(Debug, Clone, Copy)]
pub enum Placement<'a> {
    /// Drawn for this request alone: no charge can hold it, so none is looked for.
    New(&'a Reference),
    /// Reserved before this request (an idempotency key a dead request held, a cashier form,
    /// a checkout session): a charge an earlier try left under it is carried on.
    Reserved(&'a Reference),
}

impl<'a> Placement<'a> {
    pub fn reference(self) -> &'a Reference {
        match self {
            Placement::New(reference) | Placement::Reserved(reference) => reference,
        }
    }
}

/// One charge request being tried at a PSP.
#[derive(Clone, Copy)]
pub(crate) struct Attempt<'a> {
    pub caller: &'a Caller,
    pub input: &'a ChargeInput,
    pub reference: &'a Reference,
    pub request_id: &'a str,
    /// `{mode, selected_provider, attempted_providers}` for routed requests.
    pub routing: Option<&'a serde_json::Value>,
    /// The idempotency key the request holds: a created charge's answer is stored with its
    /// move out of `creating`.
    pub key: Option<&'a Arc<HeldKey>>,
}

/// The first payer field `adapter` requires that `payer` lacks.
pub(crate) fn missing_payer_field(
    adapter: &runtime::Adapter,
    payer: &PayerInput,
) -> Option<&'static str> {
    crate::routing::missing_payer_field(&adapter.manifest().required_payer_fields, payer)
}

/// Why a charge was not created (or not changed).
#[derive(Debug, thiserror::Error)]
pub enum ChargeError {
    #[error("no adapter serves provider {provider:?}")]
    UnknownProvider {
        provider: String,
        available: Vec<String>,
    },
    #[error("no active {provider} credential for this merchant in {environment}")]
    NotConnected {
        provider: String,
        environment: Environment,
    },
    /// `random` found no PSP to try.
    #[error("no PSP can take this charge: {reason}")]
    NoRoute { reason: String },
    /// Every PSP the router tried refused; the last one's error, and who was tried.
    #[error("{attempted:?}: {last}")]
    AllFailed {
        attempted: Vec<String>,
        last: Box<ChargeError>,
    },
    #[error("{provider} requires payer.{field}")]
    PayerFieldRequired {
        provider: String,
        field: &'static str,
    },
    #[error("{provider} does not support canceling charges")]
    CancelUnsupported { provider: String },
    #[error("the charge is {status:?} and can no longer be canceled")]
    NotCancelable { status: ChargeState },
    /// The payment link takes no more charges (deactivated, outside its window, used up).
    #[error("payment link {link} takes no more charges")]
    LinkClosed { link: String },
    /// The month's charges of the merchant's plan are used up; nothing reached a PSP.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    /// The PSP refused or failed, or the adapter did.
    #[error(transparent)]
    Psp(#[from] CallError),
    /// The PSP answered with something unusable (no or invalid BR Code).
    #[error("{provider} answered with an unusable charge: {detail}")]
    BadPspAnswer { provider: String, detail: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a stored secret cannot be opened: {0}")]
    Vault(#[from] crate::vault::VaultError),
    /// The charge's outcome at the PSP is still unknown (an earlier try with this reference
    /// may have created it): retrying with the same idempotency key resumes it.
    #[error("{provider} has not confirmed the charge yet: {detail}")]
    Unfinished { provider: String, detail: String },
}

pub(crate) fn state_of(status: runtime::ChargeStatus) -> ChargeState {
    use runtime::ChargeStatus as S;
    match status {
        S::Pending => ChargeState::Pending,
        S::Processing => ChargeState::Processing,
        S::Paid => ChargeState::Paid,
        S::Expired => ChargeState::Expired,
        S::Canceled => ChargeState::Canceled,
        S::Failed => ChargeState::Failed,
    }
}

/// What a PSP's view of a charge adds to ours.
pub(crate) fn update_of(charge: &runtime::Charge) -> PspUpdate {
    let payment = charge.payment.as_ref();
    PspUpdate {
        psp_id: Some(charge.psp_id.clone()).filter(|s| !s.is_empty()),
        paid_at: payment.and_then(|p| crate::store::parse_rfc3339(&p.paid_at)),
        end_to_end_id: payment.and_then(|p| p.end_to_end_id.clone()),
        amount_paid: payment.and_then(|p| i64::try_from(p.amount).ok()),
        ..Default::default()
    }
}

/// The charge operations and what they use: shared handles on the gateway's store, adapters and
/// vault, and the state charge operations own (prepared credentials, PSP health, live updates,
/// the outbox signal), which the rest of the gateway reaches through `app.charges`.
pub struct Service {
    pub(crate) store: Store,
    pub(crate) runtime: Arc<Runtime>,
    vault: Arc<Vault>,
    /// Prepared credentials: the vault opened and the certificate parsed once per version.
    prepared: PreparedCache,
    /// PSP health for the router.
    pub(crate) breaker: Breaker,
    /// Charge status changes made by this gateway, for live screens.
    pub live: LiveUpdates,
    /// Wakes the delivery worker when this gateway wrote to the outbox.
    pub outbox: OutboxSignal,
    /// The gateway's public URL, under which each credential's webhook URL lies.
    base_url: String,
    /// Milliseconds from a charge's creation to the reconciler's first check of it.
    first_check_ms: i64,
    /// The QR images drawn last, for stored charge JSON leaving the gateway.
    pub qr_images: qr_image::QrImages,
}

impl Service {
    pub fn new(
        store: Store,
        runtime: Arc<Runtime>,
        vault: Arc<Vault>,
        config: &crate::config::AppConfig,
    ) -> Service {
        Service {
            store,
            runtime,
            vault,
            prepared: PreparedCache::default(),
            breaker: Breaker::new(config.breaker.clone()),
            live: LiveUpdates::new(config.live_streams_per_merchant),
            outbox: OutboxSignal::default(),
            base_url: config.base_url.clone(),
            first_check_ms: config.reconciler.first_check_ms(),
            qr_images: qr_image::QrImages::default(),
        }
    }

    /// `credential` ready for calls to `adapter` (from the cache when unchanged).
    pub fn prepare(
        &self,
        adapter: &runtime::Adapter,
        credential: &CredentialRecord,
    ) -> Result<Arc<runtime::PreparedCredential>, VaultError> {
        self.prepared
            .get_or_prepare(&self.vault, &self.base_url, adapter, credential)
    }

    /// The adapter serving `provider`, or the list of those that exist.
    fn adapter_for(&self, provider: &str) -> Result<runtime::Adapter, ChargeError> {
        self.runtime
            .adapter(provider)
            .ok_or_else(|| ChargeError::UnknownProvider {
                provider: provider.to_owned(),
                available: self.runtime.providers(),
            })
    }

    /// The prepared credential a stored charge was created with.
    async fn connection_of(
        &self,
        adapter: &runtime::Adapter,
        charge: &ChargeRecord,
    ) -> Result<Arc<runtime::PreparedCredential>, ChargeError> {
        let record = self
            .store
            .credential_by_id(&charge.credential_id)
            .await?
            .ok_or_else(|| {
                StoreError::Corrupt(format!("charge {} names no credential", charge.id))
            })?;
        Ok(self.prepare(adapter, &record)?)
    }

    /// Creates a charge at the PSP the request names, or at the one the router picks for
    /// `random`, under the placement's reference. Calling again with a reserved reference (a
    /// resumed idempotent request) finds the charge instead of making a second one.
    ///
    /// With `key` (the idempotency key the request holds), a charge created here has its 201
    /// answer stored with it, in the move out of `creating`: [`HeldKey::take_answer`] then gives
    /// the body, and the caller stores no answer of its own.
    pub async fn create_charge(
        &self,
        caller: &Caller,
        input: &ChargeInput,
        placement: Placement<'_>,
        request_id: &str,
        key: Option<&Arc<HeldKey>>,
    ) -> Result<ChargeRecord, ChargeError> {
        let reference = placement.reference();
        // A resumed request (same idempotency key) carries on with the charge it placed, at
        // the PSP it placed it at, whatever the router's turn or the active credential now.
        let existing = match placement {
            Placement::New(_) => None,
            Placement::Reserved(_) => self.store.charge_by_reference(reference.as_str()).await?,
        };
        if let Some(existing) = existing {
            if existing.status != ChargeState::Creating {
                return Ok(existing);
            }
            if let Some(found) = self
                .resume_creating(&existing, input.expires_in, request_id)
                .await?
            {
                return Ok(found);
            }
        }
        let charge = match &input.provider {
            ProviderChoice::Random => {
                crate::routing::route(self, caller, input, reference, request_id, key).await?
            }
            ProviderChoice::One(provider) => {
                self.create_at(caller, input, provider, reference, request_id, key)
                    .await?
            }
        };
        // `creating` is internal: it is never an answer (nor replayed for an idempotency key).
        if charge.status == ChargeState::Creating {
            return Err(ChargeError::Unfinished {
                provider: charge.provider,
                detail: "the charge is still being created".into(),
            });
        }
        Ok(charge)
    }

    /// Asks the PSP of a `creating` charge left by an earlier try whether it holds the charge:
    /// found → the charge is finished from the PSP's view; not there → the row goes and
    /// `None` says to place the charge afresh; no answer → [`ChargeError::Unfinished`].
    async fn resume_creating(
        &self,
        charge: &ChargeRecord,
        expires_in: u32,
        request_id: &str,
    ) -> Result<Option<ChargeRecord>, ChargeError> {
        let (adapter, prepared) = self.adapter_of(charge).await?;
        let result = adapter
            .query_charge(
                &prepared,
                request_id,
                charge.reference.as_str(),
                charge.psp_id.as_deref(),
            )
            .await;
        let outcome = match &result {
            Ok(_) => "found",
            Err(CallError::Psp {
                error: PspError::NotFound(_),
                ..
            }) => "absent",
            Err(_) => "unknown",
        };
        self.store
            .record_charge_attempt(&crate::store::routing::AttemptRecord {
                reference: charge.reference.clone(),
                credential_id: charge.credential_id.clone(),
                provider: charge.provider.clone(),
                outcome,
                message: result.as_ref().err().map(|e| e.to_string()),
            })
            .await?;
        match result {
            Ok(psp) => self.finish_created(charge, psp, expires_in).await.map(Some),
            Err(CallError::Psp {
                error: PspError::NotFound(_),
                ..
            }) => {
                self.store.delete_creating_charge(&charge.id).await?;
                Ok(None)
            }
            Err(error) => Err(ChargeError::Unfinished {
                provider: charge.provider.clone(),
                detail: format!("asking it about the charge failed ({})", summary(&error)),
            }),
        }
    }

    /// Creates a charge at the one PSP the request names.
    async fn create_at(
        &self,
        caller: &Caller,
        input: &ChargeInput,
        provider: &str,
        reference: &Reference,
        request_id: &str,
        key: Option<&Arc<HeldKey>>,
    ) -> Result<ChargeRecord, ChargeError> {
        let adapter = self.adapter_for(provider)?;
        if let Some(field) = missing_payer_field(&adapter, &input.payer) {
            return Err(ChargeError::PayerFieldRequired {
                provider: provider.to_owned(),
                field,
            });
        }
        let record = self
            .store
            .active_credential(&caller.merchant_id, caller.environment, provider)
            .await?
            .ok_or_else(|| ChargeError::NotConnected {
                provider: provider.to_owned(),
                environment: caller.environment,
            })?;
        let attempt = Attempt {
            caller,
            input,
            reference,
            request_id,
            routing: None,
            key,
        };
        self.attempt_at(&attempt, &adapter, &record).await
    }

    /// One try at one PSP: writes the charge as `creating`, calls the adapter, and finishes the
    /// charge from its answer. A refusal removes the row (nothing exists at the PSP); an unknown
    /// outcome keeps it.
    pub(crate) async fn attempt_at(
        &self,
        attempt: &Attempt<'_>,
        adapter: &runtime::Adapter,
        credential: &CredentialRecord,
    ) -> Result<ChargeRecord, ChargeError> {
        let Attempt {
            caller,
            input,
            reference,
            request_id,
            routing,
            key,
        } = *attempt;
        let prepared = self.prepare(adapter, credential)?;
        let provider = adapter.manifest().id.clone();
        let now = now_ms();
        let charge = ChargeRecord {
            id: ChargeId::generate().to_string(),
            merchant_id: caller.merchant_id.clone(),
            environment: caller.environment,
            credential_id: credential.id.to_string(),
            provider: provider.clone(),
            reference: reference.clone(),
            psp_id: None,
            status: ChargeState::Creating,
            amount: input.amount.centavos() as i64,
            description: input.description.as_ref().map(|d| d.as_str().to_owned()),
            payer_email: input.payer.email.as_ref().map(|e| e.to_string()),
            payer_name: input.payer.name.as_ref().map(|n| n.as_str().to_owned()),
            payer_document: input.payer.document.as_ref().map(|d| d.as_str().to_owned()),
            copy_paste: None,
            qr_png_base64: None,
            expires_at: None,
            metadata: serde_json::Value::Object(input.metadata.as_map().clone()),
            paid_at: None,
            end_to_end_id: None,
            amount_paid: None,
            routing: routing.cloned(),
            operator_id: match &caller.actor {
                Actor::User { id, .. } => Some(id.clone()),
                Actor::ApiKey { .. } | Actor::System => None,
            },
            payment_link_id: input.payment_link.as_ref().map(|l| l.id.clone()),
            payment_link_name: input.payment_link.as_ref().map(|l| l.name.clone()),
            paid_late: false,
            created_at: now,
            updated_at: now,
        };
        let (admitted, on_disk) = self
            .store
            .insert_creating_charge_then_sync(&charge, key)
            .await?;
        if !admitted? {
            // A request with this reference got here first (resumed requests are settled
            // before they reach this point).
            let Some(existing) = self.store.charge_by_reference(reference.as_str()).await? else {
                // Nothing holds the reference: the insert refused the charge's closed link.
                return Err(match &input.payment_link {
                    Some(link) => ChargeError::LinkClosed {
                        link: link.id.clone(),
                    },
                    None => StoreError::Corrupt(format!("reference {reference} vanished")).into(),
                });
            };
            if existing.status != ChargeState::Creating {
                return Ok(existing);
            }
            // Its create is still running (or died a moment ago): its outcome is unknown.
            return Err(ChargeError::Unfinished {
                provider: existing.provider,
                detail: "another request is creating this charge".into(),
            });
        }

        let request = runtime::ChargeRequest {
            reference: reference.to_string(),
            amount: input.amount.centavos(),
            description: charge.description.clone(),
            payer: runtime::Payer {
                email: charge.payer_email.clone(),
                name: charge.payer_name.clone(),
                document: charge.payer_document.clone(),
            },
            expires_in: input.expires_in,
        };
        // The PSP must not hear of the charge before its `creating` row is on disk: a crash
        // would lose a charge the PSP holds. The adapter gets ready while the row is synced
        // (instantiated, its token found, its request built and signed) and sends after.
        let on_disk: runtime::SendGate = futures::FutureExt::shared(Box::pin(on_disk));
        let started = std::time::Instant::now();
        let result = adapter
            .create_charge_after(&prepared, request_id, &request, on_disk.clone())
            .await;
        if let Some(Err(why)) = on_disk.peek() {
            // Nothing reached the PSP; the writer takes no more writes (not even this row's
            // removal) until the gateway is restarted.
            return Err(StoreError::Unsynced(why.clone()).into());
        }
        crate::metrics::psp_call(
            &provider,
            "create-charge",
            started.elapsed(),
            result.is_ok(),
        );
        let outcome = match &result {
            Ok(_) => "created",
            Err(e) => crate::routing::outcome_of(e),
        };
        let attempt = crate::store::routing::AttemptRecord {
            reference: reference.clone(),
            credential_id: credential.id.to_string(),
            provider: provider.clone(),
            outcome,
            message: result.as_ref().err().map(|e| e.to_string()),
        };
        match result {
            // The attempt is written with the charge's move to `pending`: one commit.
            Ok(psp) => {
                self.finish_created_with(&charge, psp, input.expires_in, Some(attempt), key)
                    .await
            }
            Err(error) => {
                self.store.record_charge_attempt(&attempt).await?;
                if nothing_created(&error) {
                    self.store.delete_creating_charge(&charge.id).await?;
                }
                Err(error.into())
            }
        }
    }

    /// Makes a `creating` charge `pending` (or further) from the PSP's answer, after checking
    /// its copy-and-paste code and drawing the QR code when the PSP gave no image.
    pub(crate) async fn finish_created(
        &self,
        charge: &ChargeRecord,
        psp: runtime::Charge,
        expires_in: u32,
    ) -> Result<ChargeRecord, ChargeError> {
        self.finish_created_with(charge, psp, expires_in, None, None)
            .await
    }

    /// [`Service::finish_created`], recording `attempt` (the create that brought the answer) in
    /// the same transaction as the move, and the created charge as `key`'s answer.
    async fn finish_created_with(
        &self,
        charge: &ChargeRecord,
        psp: runtime::Charge,
        expires_in: u32,
        attempt: Option<crate::store::routing::AttemptRecord>,
        key: Option<&Arc<HeldKey>>,
    ) -> Result<ChargeRecord, ChargeError> {
        let now = now_ms();
        let mut update = update_of(&psp);
        let unusable = |detail: String| ChargeError::BadPspAnswer {
            provider: charge.provider.clone(),
            detail,
        };
        let copy_paste = match &psp.copy_paste {
            None => Err(unusable("it has no Pix copy-and-paste code".into())),
            Some(code) => BrCode::parse(code)
                .map_err(|e| unusable(format!("its Pix copy-and-paste code is invalid: {e}"))),
        };
        let money_moved = matches!(
            state_of(psp.status),
            ChargeState::Paid | ChargeState::Processing
        );
        let copy_paste = match copy_paste {
            Ok(code) => Some(code),
            // The PSP says it was paid (a resumed create found it so): the payment is what
            // counts, and a paid charge needs no code to show.
            Err(error) if money_moved => {
                tracing::warn!(charge = %charge.id, "paid at the PSP with an unusable code: {error}");
                None
            }
            Err(error) => {
                // The charge exists at the PSP but cannot be paid through us: keep it, failed,
                // without an event (the merchant got the error instead of a charge).
                update.next_check_at = Some(None);
                if let Some(attempt) = &attempt {
                    self.store.record_charge_attempt(attempt).await?;
                }
                self.store
                    .transition_charge(
                        &charge.id,
                        &[ChargeState::Creating],
                        ChargeState::Failed,
                        &update,
                        None,
                    )
                    .await?;
                return Err(error);
            }
        };
        if let Some(copy_paste) = copy_paste {
            // The image is always drawn here from the code, not taken from the PSP: one compact
            // 1-bit PNG (about 2.5 KB) whichever PSP made the charge, where PSPs' own are up to
            // 50 KB.
            // Drawn in place: it takes 65–90 µs (`qr/pix_code`), less than the hop to the
            // blocking pool and back cost (a charge made alone: 165 µs drawn here, 220 there).
            // Remembered: the answer and the first delivery, which store it left out, want it
            // again in a moment.
            let drawn = self.qr_images.image(copy_paste.as_str());
            update.qr_png_base64 =
                Some(drawn.map(|image| image.to_string()).map_err(|e| {
                    unusable(format!("its copy-and-paste code cannot be drawn: {e}"))
                })?);
            update.copy_paste = Some(copy_paste.as_str().to_owned());
        }
        update.expires_at = psp
            .expires_at
            .as_deref()
            .and_then(crate::store::parse_rfc3339)
            .or(Some(now + i64::from(expires_in) * 1000));
        let state = match state_of(psp.status) {
            ChargeState::Paid | ChargeState::Processing => state_of(psp.status),
            _ => ChargeState::Pending,
        };
        // Deferred: everything this move writes came from the PSP, under the reference the
        // durable `creating` row holds. Lost in a crash, the charge is still `creating` there,
        // and a retry of the request or the reconciler asks the PSP again and finishes it: one
        // sync per charge instead of two. The key's answer is as deferred as the move it reports.
        // (On PostgreSQL the move made in one statement commits durably: see
        // `Store::transition_charge_with`.)
        let answer = key.map(|key| AnswerWith {
            key: key.clone(),
            render: Arc::new(|charge: &ChargeRecord| {
                serde_json::to_string(&object::ChargeObject::stored(charge)).ok()
            }),
        });
        let stored = self
            .move_charge_with(
                &charge.id,
                &[ChargeState::Creating],
                state,
                update,
                true,
                attempt,
                answer,
                Durability::Deferred,
                // The row this request wrote (or resumed): on PostgreSQL the move, its event
                // and its answer are then one statement.
                Some(charge),
            )
            .await?;
        match stored {
            Some(stored) => Ok(stored),
            // Someone else finished this very charge (a resumed request racing the first).
            None => Ok(self
                .store
                .charge_by_reference(charge.reference.as_str())
                .await?
                .ok_or_else(|| {
                    StoreError::Corrupt(format!("reference {} vanished", charge.reference))
                })?),
        }
    }

    /// Whether the PSP holding `provider`'s charges lets them be canceled.
    pub fn cancel_supported(&self, provider: &str) -> bool {
        self.runtime.adapter(provider).is_some_and(|a| cancels(&a))
    }

    /// Asks the PSP to cancel a charge that can still be paid, for `caller` (recorded in the
    /// audit log as `charge.cancel`).
    pub async fn cancel_charge(
        &self,
        caller: &Caller,
        charge: ChargeRecord,
        request_id: &str,
    ) -> Result<ChargeRecord, ChargeError> {
        if charge.status.is_final() {
            return Err(ChargeError::NotCancelable {
                status: charge.status,
            });
        }
        let adapter = self.adapter_for(&charge.provider)?;
        if !cancels(&adapter) {
            return Err(ChargeError::CancelUnsupported {
                provider: charge.provider.clone(),
            });
        }
        let prepared = self.connection_of(&adapter, &charge).await?;
        let started = std::time::Instant::now();
        let result = adapter
            .cancel_charge(
                &prepared,
                request_id,
                charge.reference.as_str(),
                charge.psp_id.as_deref(),
            )
            .await;
        crate::metrics::psp_call(
            &charge.provider,
            "cancel-charge",
            started.elapsed(),
            result.is_ok(),
        );
        let psp = result?;
        let state = state_of(psp.status);
        let open = [ChargeState::Pending, ChargeState::Processing];
        let moved = match state {
            ChargeState::Canceled
            | ChargeState::Paid
            | ChargeState::Expired
            | ChargeState::Failed => {
                self.move_charge(&charge.id, &open, state, update_of(&psp), false)
                    .await?
            }
            _ => None,
        };
        let current = match moved {
            Some(c) => c,
            None => self
                .store
                .charge(&charge.merchant_id, charge.environment, &charge.id)
                .await?
                .unwrap_or(charge),
        };
        if current.status != ChargeState::Canceled {
            return Err(ChargeError::NotCancelable {
                status: current.status,
            });
        }
        // The charge is canceled at the PSP whatever happens next: an audit write that fails
        // is logged by `record` and must not turn this answer into an error.
        let _ = audit::record(
            &self.store,
            caller,
            "charge.cancel",
            Some(("charge", &current.id)),
            format!(
                "{} centavos at {} canceled",
                current.amount, current.provider
            ),
        )
        .await;
        Ok(current)
    }
}

impl Service {
    /// Moves a charge to `to` and reports the move: the event its new state emits (with the
    /// outbox rows, in the same transaction), the reconciler's schedule, live screens and
    /// metrics. `None` when the charge was no longer in `from`: nothing happened.
    pub(crate) async fn move_charge(
        &self,
        charge_id: &str,
        from: &[ChargeState],
        to: ChargeState,
        update: PspUpdate,
        created: bool,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        self.move_charge_with(
            charge_id,
            from,
            to,
            update,
            created,
            None,
            None,
            Durability::Durable,
            None,
        )
        .await
    }

    /// [`Service::move_charge`], recording `attempt` and storing `answer` in the same
    /// transaction, on disk as `durability` says.
    #[allow(clippy::too_many_arguments)]
    async fn move_charge_with(
        &self,
        charge_id: &str,
        from: &[ChargeState],
        to: ChargeState,
        mut update: PspUpdate,
        created: bool,
        attempt: Option<crate::store::routing::AttemptRecord>,
        answer: Option<AnswerWith>,
        durability: Durability,
        known: Option<&ChargeRecord>,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        update.next_check_at = if to.is_final() {
            Some(None)
        } else if created {
            Some(Some(now_ms() + self.first_check_ms))
        } else {
            None
        };
        let kind = crate::webhooks::event_type(to, created);
        // A payment of less than the amount is not a plain `charge.paid`: the merchant must
        // not hand over goods for it.
        let emit = kind.map(|kind| {
            std::sync::Arc::new(move |c: &ChargeRecord| {
                let kind = if c.underpaid() {
                    crate::webhooks::UNDERPAID
                } else {
                    kind
                };
                crate::webhooks::event_for(c, kind)
            }) as crate::store::events::Emit
        });
        let moved = self
            .store
            .transition_charge_with(
                charge_id.to_owned(),
                from.to_vec(),
                to,
                update,
                attempt,
                emit,
                answer,
                durability,
                known.cloned(),
            )
            .await?;
        if let Some(charge) = &moved {
            if kind.is_some() {
                self.outbox.wake();
            }
            self.live.publish(&charge.id, charge.status.as_str());
            crate::metrics::charge_status(&charge.provider, charge.status.as_str());
            if let Some(paid) = charge.amount_paid.filter(|paid| *paid != charge.amount) {
                tracing::warn!(charge = %charge.id, amount = charge.amount, paid, "the PSP reports a payment of another amount");
            }
            if charge.paid_late && charge.status == ChargeState::Paid {
                tracing::warn!(charge = %charge.id, provider = %charge.provider, "a payment arrived after the charge was closed; recorded as paid late");
            }
        }
        Ok(moved)
    }

    /// Brings a stored charge to what the PSP says, when that is a move forward: a charge that
    /// can still be paid moves to `processing` or a final state, and nothing ever moves back —
    /// except that money wins: a charge the gateway closed (expired, canceled) that the PSP
    /// reports paid becomes `paid`, flagged `paid_late`.
    pub async fn apply_psp_view(
        &self,
        charge: &ChargeRecord,
        psp: &runtime::Charge,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let to = state_of(psp.status);
        const CLOSED: [ChargeState; 2] = [ChargeState::Expired, ChargeState::Canceled];
        let mut update = update_of(psp);
        let from: &[ChargeState] = match to {
            ChargeState::Creating | ChargeState::Pending => return Ok(None),
            ChargeState::Processing => &[ChargeState::Pending],
            ChargeState::Paid if CLOSED.contains(&charge.status) => {
                update.paid_late = true;
                &CLOSED
            }
            _ => &[ChargeState::Pending, ChargeState::Processing],
        };
        if !from.contains(&charge.status) {
            return Ok(None);
        }
        self.move_charge(&charge.id, from, to, update, false).await
    }

    /// The adapter and prepared credential of a stored charge.
    pub(crate) async fn adapter_of(
        &self,
        charge: &ChargeRecord,
    ) -> Result<(runtime::Adapter, Arc<runtime::PreparedCredential>), ChargeError> {
        let adapter = self.adapter_for(&charge.provider)?;
        let prepared = self.connection_of(&adapter, charge).await?;
        Ok((adapter, prepared))
    }
}

/// A failed call in a few words for the merchant: the PSP's own message, or what failed.
fn summary(error: &CallError) -> String {
    match error {
        CallError::Psp { error, .. } => match error {
            PspError::Rejected(d)
            | PspError::Unavailable(d)
            | PspError::Ambiguous(d)
            | PspError::NotFound(d)
            | PspError::BadCredentials(d) => d.message.clone(),
            PspError::InvalidWebhook(m) | PspError::Unsupported(m) => m.clone(),
        },
        CallError::Fault { fault, .. } => format!("the adapter failed: {fault}"),
        CallError::Busy { saturated, .. } => saturated.to_string(),
    }
}

/// Whether `adapter` declares the cancel capability.
fn cancels(adapter: &runtime::Adapter) -> bool {
    adapter
        .manifest()
        .capabilities
        .contains(runtime::Capabilities::CANCEL_CHARGE)
}

/// Whether a failed create certainly left nothing at the PSP.
pub(crate) fn nothing_created(error: &CallError) -> bool {
    matches!(
        error,
        // Refused before the adapter ran: the PSP was never contacted.
        CallError::Busy { .. }
            | CallError::Psp {
                error: PspError::Rejected(_)
                    | PspError::Unavailable(_)
                    | PspError::BadCredentials(_)
                    | PspError::NotFound(_)
                    | PspError::Unsupported(_)
                    | PspError::InvalidWebhook(_),
                ..
            }
    )
}

/// Metadata limits, so a charge row stays small.
pub const MAX_METADATA_KEYS: usize = 20;
pub const MAX_METADATA_KEY_LEN: usize = 40;
pub const MAX_METADATA_VALUE_LEN: usize = 500;
