//! Sale evidence, without HTTP: a photo of the sale and where it happened, attached to a paid
//! charge by the cashier after payment, from the charge's page, or by the API
//! (`POST /v1/charges/{id}/evidence`). `api::evidence` and `web::evidence` call these; both
//! find the charge first with the caller's scope (a cashier reaches only their own sales).
//!
//! - [`photo`]: the photo is decoded (JPEG, PNG or WebP, by content), guarded against
//!   decompression bombs, and re-encoded as a JPEG without metadata.
//! - [`storage`]: photos live outside the database, in a directory or S3-compatible storage.
//! - Each item is stamped with the **server's** clock and kept [`RETENTION_DAYS`] days;
//!   [`sweep`] removes the photo and the row after that, and records `evidence.delete` in the
//!   audit log; [`run_sweeper`] runs it hourly. Attaching records `evidence.attach`.

pub mod photo;
pub mod storage;

use std::sync::Arc;

use bytes::Bytes;

use crate::app::App;
use crate::audit::{self, Actor};
use crate::charges::Caller;
use crate::store::charges::{ChargeRecord, ChargeState};
use crate::store::evidence::EvidenceRecord;
use crate::store::{Store, StoreError, now_ms};
pub use photo::PhotoError;
pub use storage::{PhotoStore, StorageError};

/// How long evidence is kept, from the moment the server received it.
pub const RETENTION_DAYS: i64 = 180;
pub const RETENTION_MS: i64 = RETENTION_DAYS * 86_400_000;
/// The largest photo file taken, as sent: 10 MB (a phone's full-resolution JPEG fits).
pub const MAX_PHOTO_BYTES: usize = 10 * 1024 * 1024;
/// Items one charge may hold.
pub const MAX_PER_CHARGE: i64 = 5;
pub const MAX_ADDRESS_CHARS: usize = 300;
/// Photos decoded at once by this gateway: each may take up to
/// [`photo::MAX_DECODED_BYTES`] of memory while it is worked on.
const CONCURRENT_DECODES: usize = 2;
static DECODES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_DECODES);

/// Why evidence was not attached (or not found); [`EvidenceError::code`] names the dashboard's
/// message, `api::evidence` maps each case to the API's error.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error(
        "evidence is about a sale: it can be attached to paid charges only, and this charge is {0}"
    )]
    NotPaid(&'static str),
    #[error("this charge holds {MAX_PER_CHARGE} evidence items already, the most it may")]
    Full,
    #[error("send the photo as a file in the `photo` field")]
    PhotoMissing,
    #[error(
        "the photo is larger than {} MB; send a smaller one (a phone photo at normal quality is 2 to 5 MB)",
        MAX_PHOTO_BYTES / 1024 / 1024
    )]
    PhotoTooLarge,
    #[error(transparent)]
    Photo(#[from] PhotoError),
    /// Latitude and longitude go together, each a number in its range.
    #[error("{field}: {message}")]
    Place {
        field: &'static str,
        message: String,
    },
    #[error("no evidence {0:?} on this charge")]
    NotFound(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EvidenceError {
    /// The catalog key of the message shown to the person.
    pub fn code(&self) -> &'static str {
        match self {
            EvidenceError::NotPaid(_) => "evidence.error.not_paid",
            EvidenceError::Full => "evidence.error.full",
            EvidenceError::PhotoMissing => "evidence.error.photo_missing",
            EvidenceError::PhotoTooLarge => "evidence.error.too_large",
            EvidenceError::Photo(PhotoError::NotAnImage) => "evidence.error.not_an_image",
            EvidenceError::Photo(PhotoError::Unsupported(_)) => "evidence.error.unsupported",
            EvidenceError::Photo(PhotoError::TooManyPixels) => "evidence.error.too_many_pixels",
            EvidenceError::Photo(PhotoError::Damaged(_)) => "evidence.error.damaged",
            EvidenceError::Place { .. } => "evidence.error.place",
            EvidenceError::NotFound(_) => "error.not_found.message",
            EvidenceError::Storage(_) | EvidenceError::Store(_) => "error.internal",
        }
    }
}

/// Where the sale happened: the browser's position, a typed address, or both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Place {
    pub coordinates: Option<Coordinates>,
    pub address: Option<String>,
}

/// A position as the browser's geolocation gives it: degrees (WGS 84), accuracy in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coordinates {
    pub latitude: f64,
    pub longitude: f64,
    pub accuracy: Option<f64>,
}

impl Place {
    /// The fields as sent (empty: absent). Latitude and longitude come together; accuracy only
    /// with them.
    pub fn parse(
        latitude: &str,
        longitude: &str,
        accuracy: &str,
        address: &str,
    ) -> Result<Place, EvidenceError> {
        let bad = |field: &'static str, message: &str| EvidenceError::Place {
            field,
            message: message.to_owned(),
        };
        let number =
            |field: &'static str, text: &str, range: std::ops::RangeInclusive<f64>| match text
                .trim()
            {
                "" => Ok(None),
                text => text
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite() && range.contains(n))
                    .map(Some)
                    .ok_or_else(|| {
                        bad(
                            field,
                            &format!(
                                "must be a number from {} to {}, e.g. -23.5505",
                                range.start(),
                                range.end()
                            ),
                        )
                    }),
            };
        let latitude = number("latitude", latitude, -90.0..=90.0)?;
        let longitude = number("longitude", longitude, -180.0..=180.0)?;
        let accuracy = number("accuracy", accuracy, 0.0..=1_000_000.0)?;
        let coordinates = match (latitude, longitude) {
            (Some(latitude), Some(longitude)) => Some(Coordinates {
                latitude,
                longitude,
                accuracy,
            }),
            (None, None) if accuracy.is_none() => None,
            (None, None) => {
                return Err(bad("accuracy", "is given only with latitude and longitude"));
            }
            (Some(_), None) => return Err(bad("longitude", "is required with latitude")),
            (None, Some(_)) => return Err(bad("latitude", "is required with longitude")),
        };
        let address = address.trim();
        if address.chars().count() > MAX_ADDRESS_CHARS
            || address.chars().any(|c| c.is_control() && c != '\n')
        {
            return Err(bad(
                "address",
                &format!("must have at most {MAX_ADDRESS_CHARS} characters"),
            ));
        }
        Ok(Place {
            coordinates,
            address: (!address.is_empty()).then(|| address.to_owned()),
        })
    }
}

/// Where a photo is kept in the storage: by merchant, environment and charge.
fn storage_key(charge: &ChargeRecord, id: &str) -> String {
    format!(
        "{}/{}/{}/{id}.jpg",
        charge.merchant_id,
        charge.environment.as_str(),
        charge.id
    )
}

/// Checks and re-encodes a photo on a blocking thread, a bounded number at a time.
async fn prepare(photo: Bytes) -> Result<photo::Photo, EvidenceError> {
    let _turn = DECODES
        .acquire()
        .await
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || photo::reencode(&photo))
        .await
        .map_err(|e| EvidenceError::Photo(PhotoError::Damaged(format!("decoding stopped: {e}"))))?
        .map_err(EvidenceError::from)
}

impl App {
    /// Attaches a photo (and where the sale happened) to `charge`, which the caller was found
    /// allowed to see. The time is the server's; the item goes after [`RETENTION_DAYS`].
    pub async fn attach_evidence(
        &self,
        caller: &Caller,
        charge: &ChargeRecord,
        photo: Bytes,
        place: Place,
    ) -> Result<EvidenceRecord, EvidenceError> {
        if charge.status != ChargeState::Paid {
            return Err(EvidenceError::NotPaid(charge.status.as_str()));
        }
        if photo.is_empty() {
            return Err(EvidenceError::PhotoMissing);
        }
        if photo.len() > MAX_PHOTO_BYTES {
            return Err(EvidenceError::PhotoTooLarge);
        }
        // Refused before the decoding work when it cannot fit; the insert checks again.
        if self.store.evidence_count(&charge.id).await? >= MAX_PER_CHARGE {
            return Err(EvidenceError::Full);
        }
        let prepared = prepare(photo).await?;
        let id = format!("evi_{}", uuid::Uuid::now_v7().simple());
        let key = storage_key(charge, &id);
        let sha256 = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(&prepared.jpeg))
        };
        let now = now_ms();
        let record = EvidenceRecord {
            id: id.clone(),
            charge_id: charge.id.clone(),
            merchant_id: charge.merchant_id.clone(),
            environment: charge.environment,
            storage_key: key.clone(),
            content_type: photo::Photo::CONTENT_TYPE.to_owned(),
            byte_size: prepared.jpeg.len() as i64,
            width: i64::from(prepared.width),
            height: i64::from(prepared.height),
            sha256,
            latitude: place.coordinates.map(|c| c.latitude),
            longitude: place.coordinates.map(|c| c.longitude),
            accuracy: place.coordinates.and_then(|c| c.accuracy),
            address: place.address.clone(),
            uploaded_by_kind: caller.actor.kind().to_owned(),
            uploaded_by_id: caller.actor.id().map(str::to_owned),
            uploaded_by_label: caller.actor.label(),
            created_at: now,
            expires_at: now + RETENTION_MS,
        };
        // The photo first: a row never names a photo that was not written.
        self.config.evidence.put(&key, prepared.jpeg.into()).await?;
        match self.store.insert_evidence(&record, MAX_PER_CHARGE).await {
            Ok(true) => {}
            outcome => {
                if let Err(e) = self.config.evidence.delete(&key).await {
                    tracing::warn!(key, error = %e, "an unsaved evidence photo was not removed");
                }
                outcome?;
                return Err(EvidenceError::Full);
            }
        }
        let where_ = match (&place.coordinates, &place.address) {
            (Some(_), Some(_)) => "with coordinates and an address",
            (Some(_), None) => "with coordinates",
            (None, Some(_)) => "with an address",
            (None, None) => "without a place",
        };
        // The evidence is saved whatever happens next: a failed audit write is logged by
        // `record` and must not turn this answer into an error.
        let _ = audit::record(
            &self.store,
            caller,
            "evidence.attach",
            Some(("charge", &charge.id)),
            format!(
                "photo {id} ({}×{}, {} bytes) {where_}",
                record.width, record.height, record.byte_size
            ),
        )
        .await;
        Ok(record)
    }

    /// A charge's evidence, oldest first.
    pub async fn evidence_of(
        &self,
        charge: &ChargeRecord,
    ) -> Result<Vec<EvidenceRecord>, EvidenceError> {
        Ok(self.store.evidence_of(&charge.id).await?)
    }

    /// One item of `charge` and its photo.
    pub async fn evidence_photo(
        &self,
        charge: &ChargeRecord,
        evidence_id: &str,
    ) -> Result<(EvidenceRecord, Bytes), EvidenceError> {
        let record = self
            .store
            .evidence_of(&charge.id)
            .await?
            .into_iter()
            .find(|e| e.id == evidence_id)
            .ok_or_else(|| EvidenceError::NotFound(evidence_id.to_owned()))?;
        let photo = self.config.evidence.get(&record.storage_key).await?;
        Ok((record, photo))
    }
}

/// Removes the evidence that expired at `now`: the photo, then the row, and writes
/// `evidence.delete` to the audit log with the gateway as actor. Several gateways may sweep at
/// once: an item another one removed is skipped. Returns how many items this call removed.
pub async fn sweep(store: &Store, photos: &PhotoStore, now: i64) -> Result<usize, EvidenceError> {
    const BATCH: i64 = 100;
    let mut removed = 0;
    loop {
        let expired = store.expired_evidence(now, BATCH).await?;
        let full_batch = expired.len() as i64 == BATCH;
        let mut progressed = false;
        for item in expired {
            if let Err(e) = photos.delete(&item.storage_key).await {
                // The row stays, so the next sweep tries again.
                tracing::warn!(evidence = %item.id, error = %e, "an expired evidence photo was not removed");
                continue;
            }
            if !store.delete_evidence(&item.id).await? {
                continue;
            }
            progressed = true;
            removed += 1;
            let caller = Caller {
                merchant_id: item.merchant_id.clone(),
                environment: item.environment,
                actor: Actor::System,
                ip: None,
            };
            let _ = audit::record(
                store,
                &caller,
                "evidence.delete",
                Some(("charge", &item.charge_id)),
                format!(
                    "photo {} removed after {RETENTION_DAYS} days (attached {})",
                    item.id,
                    crate::store::rfc3339(item.created_at)
                ),
            )
            .await;
        }
        if !full_batch || !progressed {
            return Ok(removed);
        }
    }
}

/// How often the sweeper looks for expired evidence.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// The background sweeper `pixgw serve` runs: [`sweep`] at start and hourly.
pub async fn run_sweeper(app: Arc<App>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    loop {
        every.tick().await;
        match sweep(&app.store, &app.config.evidence, now_ms()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "expired sale evidence removed"),
            Err(e) => tracing::warn!(error = %e, "sweeping sale evidence failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_parse_at_the_edge() {
        assert_eq!(Place::parse("", "", "", "").unwrap(), Place::default());
        let place = Place::parse("-23.5505", " -46.6333 ", "12.5", "  Rua Augusta, 100  ").unwrap();
        assert_eq!(
            place,
            Place {
                coordinates: Some(Coordinates {
                    latitude: -23.5505,
                    longitude: -46.6333,
                    accuracy: Some(12.5)
                }),
                address: Some("Rua Augusta, 100".into()),
            }
        );
        let field = |e: EvidenceError| match e {
            EvidenceError::Place { field, .. } => field,
            other => panic!("{other}"),
        };
        assert_eq!(
            field(Place::parse("91", "0", "", "").unwrap_err()),
            "latitude"
        );
        assert_eq!(
            field(Place::parse("0", "NaN", "", "").unwrap_err()),
            "longitude"
        );
        assert_eq!(
            field(Place::parse("-23.5", "", "", "").unwrap_err()),
            "longitude"
        );
        assert_eq!(
            field(Place::parse("", "", "10", "").unwrap_err()),
            "accuracy"
        );
        assert_eq!(
            field(Place::parse("0", "0", "-1", "").unwrap_err()),
            "accuracy"
        );
        assert_eq!(
            field(Place::parse("", "", "", &"x".repeat(MAX_ADDRESS_CHARS + 1)).unwrap_err()),
            "address"
        );
    }

    #[test]
    fn every_refusal_has_words() {
        use crate::web::i18n::Lang;
        let errors = [
            EvidenceError::NotPaid("pending"),
            EvidenceError::Full,
            EvidenceError::PhotoMissing,
            EvidenceError::PhotoTooLarge,
            EvidenceError::Photo(PhotoError::NotAnImage),
            EvidenceError::Photo(PhotoError::Unsupported("GIF".into())),
            EvidenceError::Photo(PhotoError::TooManyPixels),
            EvidenceError::Photo(PhotoError::Damaged(String::new())),
            EvidenceError::Place {
                field: "latitude",
                message: String::new(),
            },
        ];
        for error in errors {
            for lang in Lang::ALL {
                assert_ne!(lang.t(error.code()), error.code(), "{}", lang.tag());
            }
        }
    }
}
