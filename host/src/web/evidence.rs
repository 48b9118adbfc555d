//! Sale evidence in the dashboard: the form that attaches a photo and the place of a sale
//! (on the charge's page, and on the cashier's paid screen), and the photos themselves.
//!
//! The form is a plain multipart upload: the file input asks a phone for its camera
//! (`capture=environment`), and an address can be typed. With `app.js`, a button fills the
//! position from the browser's geolocation. Both go through the same service as
//! `POST /v1/charges/{id}/evidence`; the charge is found with the viewer's scope, so a cashier
//! reaches only their own sales' evidence.

use std::sync::Arc;

use axum::Router;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};

use super::charges::visible_charge;
use super::i18n::Lang;
use super::page::{WebError, render_status, see_other_with};
use super::session::{Viewer, check_csrf};
use crate::api::evidence::{MAX_UPLOAD_BYTES, UploadError, photo_response, read_upload};
use crate::app::App;
use crate::evidence::{EvidenceError, Place};
use crate::policy::Action;
use crate::store::evidence::EvidenceRecord;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route(
            "/dashboard/charges/{id}/evidence",
            post(attach).layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES)),
        )
        .route(
            "/dashboard/charges/{id}/evidence/{evidence_id}/photo",
            get(photo),
        )
}

/// One item as the pages show it.
pub struct EvidenceView {
    pub id: String,
    pub photo_url: String,
    pub width: i64,
    pub height: i64,
    pub created_at: i64,
    pub expires_at: i64,
    /// `-23.55052, -46.63331`
    pub coordinates: Option<String>,
    /// `±12 m`
    pub accuracy: Option<String>,
    /// The place on OpenStreetMap.
    pub map_url: Option<String>,
    pub address: Option<String>,
    pub uploaded_by: String,
}

impl EvidenceView {
    fn new(e: &EvidenceRecord) -> EvidenceView {
        let coordinates = e.latitude.zip(e.longitude);
        EvidenceView {
            id: e.id.clone(),
            photo_url: format!("/dashboard/charges/{}/evidence/{}/photo", e.charge_id, e.id),
            width: e.width,
            height: e.height,
            created_at: e.created_at,
            expires_at: e.expires_at,
            coordinates: coordinates.map(|(lat, lon)| format!("{lat:.5}, {lon:.5}")),
            accuracy: e.accuracy.map(|m| format!("±{} m", m.round() as i64)),
            map_url: coordinates.map(|(lat, lon)| {
                format!(
                    "https://www.openstreetmap.org/?mlat={lat:.6}&mlon={lon:.6}#map=18/{lat:.6}/{lon:.6}"
                )
            }),
            address: e.address.clone(),
            uploaded_by: e.uploaded_by_label.clone(),
        }
    }

    /// The thumbnail's height for a given width, keeping the photo's proportions.
    pub fn height_for(&self, width: i64) -> i64 {
        if self.width <= 0 {
            return width;
        }
        (width * self.height / self.width).max(1)
    }
}

/// What the pages need of a charge's evidence.
pub async fn views(app: &App, charge_id: &str) -> Result<Vec<EvidenceView>, WebError> {
    Ok(app
        .store
        .evidence_of(charge_id)
        .await?
        .iter()
        .map(EvidenceView::new)
        .collect())
}

/// A refusal in the viewer's words.
pub fn message(lang: Lang, error: &EvidenceError) -> String {
    lang.t(error.code()).to_owned()
}

/// Where the form came from: the cashier's screen or the charge's page.
fn back_to(back: &str, id: &str) -> String {
    if back == "cashier" {
        format!("/dashboard/cashier/{id}")
    } else {
        format!("/dashboard/charges/{id}")
    }
}

async fn attach(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    viewer: Viewer,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, WebError> {
    viewer.require(Action::AttachEvidence)?;
    let lang = viewer.lang;
    let charge = visible_charge(&app, &viewer, &id).await?;
    let multipart = multipart.map_err(|_| WebError::BadRequest(lang, "error.form_malformed"))?;
    let upload = match read_upload(multipart, &["_csrf", "back"]).await {
        Ok(upload) => upload,
        Err(UploadError::TooLarge) => {
            // The token is unread: the refusal changes nothing, and says what to do.
            return refuse(&app, &viewer, charge, "", &EvidenceError::PhotoTooLarge).await;
        }
        Err(UploadError::Malformed(_) | UploadError::Unknown(_)) => {
            return Err(WebError::BadRequest(lang, "error.form_malformed"));
        }
    };
    check_csrf(&viewer, &headers, &upload.csrf)?;
    let place = match Place::parse(
        &upload.latitude,
        &upload.longitude,
        &upload.accuracy,
        &upload.address,
    ) {
        Ok(place) => place,
        Err(e) => return refuse(&app, &viewer, charge, &upload.back, &e).await,
    };
    let Some(photo) = upload.photo else {
        return refuse(
            &app,
            &viewer,
            charge,
            &upload.back,
            &EvidenceError::PhotoMissing,
        )
        .await;
    };
    match app
        .attach_evidence(&viewer.caller(), &charge, photo, place)
        .await
    {
        Ok(_) => Ok(see_other_with(
            &back_to(&upload.back, &id),
            "flash.evidence_attached",
        )),
        Err(e @ (EvidenceError::Storage(_) | EvidenceError::Store(_))) => {
            Err(WebError::internal(lang, e))
        }
        Err(e) => refuse(&app, &viewer, charge, &upload.back, &e).await,
    }
}

/// The page the form came from again, with the reason above the form.
async fn refuse(
    app: &Arc<App>,
    viewer: &Viewer,
    charge: crate::store::charges::ChargeRecord,
    back: &str,
    error: &EvidenceError,
) -> Result<Response, WebError> {
    let status = match error {
        EvidenceError::PhotoTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        EvidenceError::NotPaid(_) | EvidenceError::Full => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let text = message(viewer.lang, error);
    if back == "cashier" && viewer.can(Action::UseCashier) {
        let page = super::cashier::screen_with_evidence(app, viewer, &charge, Some(text)).await?;
        return render_status(status, &page);
    }
    let mut page = super::charges::detail_page(app, viewer, charge).await?;
    page.evidence_error = Some(text);
    render_status(status, &page)
}

async fn photo(
    State(app): State<Arc<App>>,
    Path((id, evidence_id)): Path<(String, String)>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewEvidence)?;
    let charge = visible_charge(&app, &viewer, &id).await?;
    match app.evidence_photo(&charge, &evidence_id).await {
        Ok((record, bytes)) => Ok(photo_response(&record, bytes)),
        Err(EvidenceError::NotFound(_)) => Err(WebError::NotFound(viewer.lang)),
        Err(e) => Err(WebError::internal(viewer.lang, e)),
    }
}
