//! PSP notifications at `{base_url}/api/wh/<uuid>` (and below it: central-bank PSPs append
//! `/pix`).
//!
//! 1. The credential is found by the URL's uuid; the notification must carry the credential's
//!    webhook token — query `token`, header `x-<provider>-webhook-token`, `x-pixgw-token`, or
//!    the header the adapter's manifest names (`asaas-access-token`) — compared in constant
//!    time. Otherwise 401, and nothing is stored or done.
//! 2. The raw notification is stored before anything else, so an answer of 200 never loses it;
//!    the PSP is answered as soon as it is stored. Steps 3 and 4 run in the background: they call
//!    the PSP, and PSPs give a notification a few seconds (Itaú: 5 s) before counting it failed.
//! 3. The adapter's `parse-webhook` reads it into events (checking the PSP's signature where the
//!    PSP signs); each event is matched to a charge of this credential by reference or PSP id.
//! 4. The host asks the PSP (`query-charge`) and moves the charge by what the PSP answers, never
//!    by what the notification claims: a forged or replayed notification cannot mark anything
//!    paid, and a repeated, late or reordered one changes nothing — except a payment: money
//!    the PSP took for a charge the gateway had closed (expired, canceled) is recorded, the
//!    charge becoming `paid` with `paid_late` (see
//!    [`charges::Service::apply_psp_view`](crate::charges::Service::apply_psp_view)).
//!
//! A notification whose processing failed half-way (PSP unreachable, gateway killed) is taken up
//! again by [`retry_unprocessed`].

use std::sync::Arc;
use std::time::Duration;

use subtle::ConstantTimeEq;

use crate::app::App;
use crate::charges::ChargeError;
use crate::credentials::webhook_token_aad;
use crate::runtime::{self, CallError, PspError};
use crate::store::charges::ChargeState;
use crate::store::credentials::CredentialRecord;
use crate::store::inbound::NotificationRecord;
use crate::store::{StoreError, now_ms};

/// A notification as it reached the route.
pub struct RawNotification {
    pub method: String,
    /// Below `/api/wh/<uuid>`, e.g. `` or `/pix`.
    pub path: String,
    pub query: String,
    /// Names in lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Why a notification was refused before it was stored.
#[derive(Debug, thiserror::Error)]
pub enum InboundError {
    #[error("no webhook is registered at this URL")]
    UnknownWebhook,
    #[error("the notification does not carry this webhook's token")]
    Unauthorized,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A notification stored and handed to background processing: the PSP may be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub notification_id: String,
}

/// What became of a stored notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// Done: how many charges moved.
    Applied { moved: usize },
    /// The adapter says it is not authentic or not understood; it will not be retried.
    Rejected(String),
    /// Something on the way failed; it will be retried.
    Deferred(String),
}

/// Leases outlive processing (a PSP query included), so a live processor keeps its row.
const LEASE_MS: i64 = 120_000;
/// Attempts before a notification is given up (and left for an operator).
const MAX_ATTEMPTS: i64 = 20;

impl App {
    /// Authenticates and stores a notification, then processes it in the background: the
    /// answer never waits for the PSP.
    pub async fn receive_notification(
        self: &Arc<Self>,
        webhook_id: &str,
        mut raw: RawNotification,
    ) -> Result<Accepted, InboundError> {
        let credential = self
            .store
            .credential_by_webhook_id(webhook_id)
            .await?
            .ok_or(InboundError::UnknownWebhook)?;
        let token = self
            .vault
            .open_string(
                &credential.webhook_token_sealed,
                &webhook_token_aad(credential.id.as_str()),
            )
            .map_err(|e| StoreError::Corrupt(format!("webhook token of {}: {e}", credential.id)))?;
        let header = self.runtime.adapter(&credential.provider).and_then(|a| {
            crate::credentials::token_header(a.manifest()).map(str::to_ascii_lowercase)
        });
        let presented = take_token(&mut raw, &credential.provider, header.as_deref());
        let genuine = presented
            .iter()
            .any(|p| bool::from(p.as_bytes().ct_eq(token.as_bytes())));
        if !genuine {
            return Err(InboundError::Unauthorized);
        }
        let notification = NotificationRecord {
            id: format!("ntf_{}", uuid::Uuid::now_v7().simple()),
            credential_id: credential.id.to_string(),
            received_at: now_ms(),
            method: raw.method,
            path: raw.path,
            query: raw.query,
            headers: raw.headers,
            body: raw.body,
            attempts: 1,
        };
        self.store
            .insert_notification(&notification, LEASE_MS)
            .await?;
        let accepted = Accepted {
            notification_id: notification.id.clone(),
        };
        // The lease taken on insert keeps `retry_unprocessed` off it while this runs; if the
        // gateway dies first, the lease runs out and the retry takes it up.
        let app = Arc::clone(self);
        tokio::spawn(async move {
            app.process_notification(&credential, &notification).await;
        });
        Ok(accepted)
    }

    /// Processes a stored notification and records the outcome.
    async fn process_notification(
        &self,
        credential: &CredentialRecord,
        notification: &NotificationRecord,
    ) -> Processed {
        let processed = match self.apply_notification(credential, notification).await {
            Ok(moved) => Processed::Applied { moved },
            Err(ChargeError::Psp(CallError::Psp {
                error: PspError::InvalidWebhook(reason),
                ..
            })) => Processed::Rejected(reason),
            Err(e) => Processed::Deferred(e.to_string()),
        };
        let (status, outcome, retry_at) = match &processed {
            Processed::Applied { moved } => ("processed", format!("{moved} charge(s) moved"), None),
            Processed::Rejected(reason) => ("rejected", reason.clone(), None),
            Processed::Deferred(_) if notification.attempts >= MAX_ATTEMPTS => (
                "failed",
                format!("gave up after {MAX_ATTEMPTS} attempts"),
                None,
            ),
            Processed::Deferred(reason) => {
                let backoff = 5_000 * notification.attempts.clamp(1, 60);
                ("received", reason.clone(), Some(now_ms() + backoff))
            }
        };
        if let Err(e) = self
            .store
            .finish_notification(&notification.id, status, &outcome, retry_at)
            .await
        {
            tracing::warn!(notification = %notification.id, error = %e, "recording a notification's outcome failed");
        }
        tracing::info!(notification = %notification.id, provider = %credential.provider, status, %outcome, "PSP notification");
        processed
    }

    async fn apply_notification(
        &self,
        credential: &CredentialRecord,
        notification: &NotificationRecord,
    ) -> Result<usize, ChargeError> {
        let adapter = self.runtime.adapter(&credential.provider).ok_or_else(|| {
            ChargeError::UnknownProvider {
                provider: credential.provider.clone(),
                available: self.runtime.providers(),
            }
        })?;
        let prepared = self.charges.prepare(&adapter, credential)?;
        let request_id = format!("notification_{}", notification.id);
        let events = adapter
            .parse_webhook(
                &prepared,
                &request_id,
                &runtime::WebhookRequest {
                    method: notification.method.clone(),
                    path: notification.path.clone(),
                    query: notification.query.clone(),
                    headers: notification.headers.clone(),
                    body: notification.body.clone(),
                },
            )
            .await?;
        let mut moved = 0;
        for event in events {
            let charge = match (&event.reference, &event.psp_id) {
                (Some(reference), _) => self.store.charge_by_reference(reference).await?,
                (None, Some(psp_id)) => {
                    self.store
                        .charge_by_psp_id(credential.id.as_str(), psp_id)
                        .await?
                }
                (None, None) => None,
            };
            // Only this credential's charges: a notification cannot touch another account's.
            let Some(charge) = charge.filter(|c| c.credential_id == credential.id.as_str()) else {
                tracing::info!(provider = %credential.provider, reference = ?event.reference, psp_id = ?event.psp_id,
                    "notification about a charge this credential does not hold; ignored");
                continue;
            };
            // Paid and failed charges cannot change; an expired or canceled one can still turn
            // out paid at the PSP, and that money must be recorded.
            if matches!(charge.status, ChargeState::Paid | ChargeState::Failed) {
                continue;
            }
            let psp = adapter
                .query_charge(
                    &prepared,
                    &request_id,
                    charge.reference.as_str(),
                    charge.psp_id.as_deref(),
                )
                .await?;
            if self.charges.apply_psp_view(&charge, &psp).await?.is_some() {
                moved += 1;
            }
        }
        Ok(moved)
    }
}

/// The webhook tokens a notification presents, taken out of it so the adapter never sees them.
///
/// Central-bank PSPs append `/pix` to the registered URL as plain text, even after its query
/// string: `…?token=abc` becomes `…?token=abc/pix`. Tokens never contain `/`, so what follows
/// one is the path the PSP appended.
fn take_token(raw: &mut RawNotification, provider: &str, header: Option<&str>) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut kept = Vec::new();
    for pair in raw.query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("token=") {
            Some(_) => {
                let value = url::form_urlencoded::parse(pair.as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                let (token, appended) = value
                    .split_once('/')
                    .map_or((value.as_str(), ""), |(t, _)| (t, &value[t.len()..]));
                tokens.push(token.to_owned());
                raw.path.push_str(appended);
            }
            None => kept.push(pair),
        }
    }
    raw.query = kept.join("&");
    let own = format!("x-{provider}-webhook-token");
    raw.headers.retain(|(name, value)| {
        let is_token = name == "x-pixgw-token" || *name == own || Some(name.as_str()) == header;
        if is_token {
            tokens.push(value.clone());
        }
        !is_token
    });
    tokens
}

/// Takes up notifications whose processing did not finish. Runs until the task is dropped.
pub async fn retry_unprocessed(app: Arc<App>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let due = match app
            .store
            .claim_unprocessed_notifications(LEASE_MS, 16)
            .await
        {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "reading unprocessed notifications failed");
                continue;
            }
        };
        for notification in due {
            match app
                .store
                .credential_by_id(&notification.credential_id)
                .await
            {
                Ok(Some(credential)) => {
                    app.process_notification(&credential, &notification).await;
                }
                Ok(None) => {
                    tracing::warn!(notification = %notification.id, "its credential is gone")
                }
                Err(e) => tracing::warn!(error = %e, "reading a notification's credential failed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(query: &str, headers: &[(&str, &str)]) -> RawNotification {
        RawNotification {
            method: "POST".into(),
            path: String::new(),
            query: query.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn tokens_come_from_the_query_or_the_headers_and_are_removed() {
        let mut r = raw(
            "data.id=7&token=abc&type=payment",
            &[("x-efi-webhook-token", "def"), ("x-other", "1")],
        );
        assert_eq!(take_token(&mut r, "efi", None), ["abc", "def"]);
        assert_eq!(r.query, "data.id=7&type=payment");
        assert_eq!(r.headers, vec![("x-other".to_string(), "1".to_string())]);
        let mut r = raw("", &[("x-pixgw-token", "ghi")]);
        assert_eq!(take_token(&mut r, "iugu", None), ["ghi"]);
        let mut r = raw("", &[("asaas-access-token", "jkl")]);
        assert_eq!(
            take_token(&mut r, "asaas", Some("asaas-access-token")),
            ["jkl"]
        );
        assert!(r.headers.is_empty(), "the adapter never sees the token");
        assert!(take_token(&mut raw("", &[]), "efi", None).is_empty());
    }

    #[test]
    fn a_path_appended_after_the_token_goes_back_to_the_path() {
        let mut r = raw("token=abc/pix", &[]);
        assert_eq!(take_token(&mut r, "efi", None), ["abc"]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/pix", ""));
        let mut r = raw("token=abc%2Fpix", &[]);
        assert_eq!(take_token(&mut r, "efi", None), ["abc"]);
        assert_eq!(r.path, "/pix");
    }
}
