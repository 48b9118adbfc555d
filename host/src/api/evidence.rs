//! `/v1/charges/{id}/evidence`: a sale's photo and place. `POST` attaches one (multipart:
//! `photo` file, `latitude`, `longitude`, `accuracy` or `address`); `GET` lists what the charge
//! holds; `GET …/{evidence_id}/photo` answers the stored JPEG. Scoped like the charge itself:
//! a charge of another merchant or environment is a 404.

use std::sync::Arc;

use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorResponse, ErrorType};
use crate::app::App;
use crate::charges::Caller;
use crate::evidence::{self, EvidenceError, Place};
use crate::store::charges::ChargeRecord;
use crate::store::evidence::EvidenceRecord;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route(
            "/v1/charges/{id}/evidence",
            get(list)
                .post(attach)
                .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES)),
        )
        .route("/v1/charges/{id}/evidence/{evidence_id}/photo", get(photo))
}

/// The largest upload body read. A photo over [`evidence::MAX_PHOTO_BYTES`] is refused, but
/// its body is read to the end up to this size so that the client, still sending, gets the
/// 413 instead of a connection reset.
pub const MAX_UPLOAD_BYTES: usize = 12 * 1024 * 1024;

/// A photo and the place of a sale, as stored.
#[derive(Serialize, ToSchema)]
pub struct EvidenceObject {
    /// `evi_…`
    id: String,
    /// Always `evidence`.
    object: &'static str,
    /// `chg_…`
    charge: String,
    photo: PhotoInfo,
    /// Where the sale happened, as the device or the person said.
    location: Option<LocationInfo>,
    /// Who attached it: a member's e-mail or an API key's prefix.
    uploaded_by: Uploader,
    /// When the gateway received it (its own clock, never the client's).
    created_at: String,
    /// When it is deleted, with its photo: 180 days after `created_at`.
    expires_at: String,
}

/// The stored photo: always a JPEG re-encoded by the gateway, without the original's metadata.
#[derive(Serialize, ToSchema)]
pub struct PhotoInfo {
    #[schema(example = "image/jpeg")]
    content_type: String,
    /// Bytes of the stored JPEG.
    size: i64,
    width: i64,
    height: i64,
    /// Hex SHA-256 of the stored JPEG.
    sha256: String,
    /// `GET` it with the same API key.
    url: String,
}

#[derive(Serialize, ToSchema)]
pub struct LocationInfo {
    /// Degrees, WGS 84.
    latitude: Option<f64>,
    longitude: Option<f64>,
    /// Metres.
    accuracy: Option<f64>,
    address: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Uploader {
    /// `user` or `api_key`.
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    label: String,
}

impl From<&EvidenceRecord> for EvidenceObject {
    fn from(e: &EvidenceRecord) -> Self {
        let has_place = e.latitude.is_some() || e.address.is_some();
        EvidenceObject {
            id: e.id.clone(),
            object: "evidence",
            charge: e.charge_id.clone(),
            photo: PhotoInfo {
                content_type: e.content_type.clone(),
                size: e.byte_size,
                width: e.width,
                height: e.height,
                sha256: e.sha256.clone(),
                url: format!("/v1/charges/{}/evidence/{}/photo", e.charge_id, e.id),
            },
            location: has_place.then(|| LocationInfo {
                latitude: e.latitude,
                longitude: e.longitude,
                accuracy: e.accuracy,
                address: e.address.clone(),
            }),
            uploaded_by: Uploader {
                kind: e.uploaded_by_kind.clone(),
                id: e.uploaded_by_id.clone(),
                label: e.uploaded_by_label.clone(),
            },
            created_at: crate::store::rfc3339(e.created_at),
            expires_at: crate::store::rfc3339(e.expires_at),
        }
    }
}

/// A charge's evidence, oldest first.
#[derive(Serialize, ToSchema)]
pub struct EvidenceList {
    /// Always `list`.
    object: &'static str,
    data: Vec<EvidenceObject>,
}

/// `POST` body (documentation of what [`read_upload`] accepts).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct AttachEvidenceRequest {
    /// A JPEG, PNG or WebP photo of at most 10 MB. It is decoded to check it is one, turned
    /// upright, scaled to at most 2048 pixels a side and stored as a JPEG without metadata.
    /// An empty file part is no photo (what a form's empty file input sends): 400.
    #[schema(value_type = String, format = Binary, min_length = 1)]
    photo: Vec<u8>,
    /// Degrees, -90 to 90; with `longitude`.
    #[schema(minimum = -90, maximum = 90)]
    latitude: Option<f64>,
    /// Degrees, -180 to 180; with `latitude`.
    #[schema(minimum = -180, maximum = 180)]
    longitude: Option<f64>,
    /// Metres, as the device reports it; only with `latitude` and `longitude`.
    #[schema(minimum = 0, maximum = 1_000_000)]
    accuracy: Option<f64>,
    /// Up to 300 characters, instead of or beside the coordinates.
    #[schema(max_length = 300)]
    address: Option<String>,
}

async fn visible_charge(app: &App, caller: &Caller, id: &str) -> Result<ChargeRecord, ApiError> {
    app.store
        .charge(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| ApiError::not_found("charge", id))
}

/// An evidence refusal as the API answers it.
fn api_error(error: EvidenceError) -> ApiError {
    let message = format!("{}.", capitalised(&error.to_string()));
    match error {
        EvidenceError::NotPaid(_) => ApiError::new(
            StatusCode::CONFLICT,
            ErrorType::InvalidRequestError,
            "charge_not_paid",
            message,
        ),
        EvidenceError::Full => ApiError::new(
            StatusCode::CONFLICT,
            ErrorType::InvalidRequestError,
            "evidence_limit_reached",
            message,
        ),
        EvidenceError::PhotoMissing => ApiError::invalid_param("photo", message),
        EvidenceError::PhotoTooLarge => too_large(),
        EvidenceError::Photo(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorType::InvalidRequestError,
            "photo_invalid",
            message,
        )
        .with_param("photo"),
        // The form's text fields as numbers, and which go together: rules a multipart body's
        // schema does not hold a client to.
        EvidenceError::Place { field, .. } => ApiError::unprocessable_param(field, message),
        EvidenceError::NotFound(id) => ApiError::not_found("evidence", &id),
        EvidenceError::Storage(e) => ApiError::internal(e),
        EvidenceError::Store(e) => ApiError::internal(e),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorType::InvalidRequestError,
        "photo_too_large",
        format!(
            "The photo is larger than {} MB. Send a smaller one: a phone photo at normal quality is 2 to 5 MB, or scale it down before sending.",
            evidence::MAX_PHOTO_BYTES / 1024 / 1024
        ),
    )
    .with_param("photo")
}

/// What an upload carried: the photo's bytes and the place's fields as typed.
#[derive(Default)]
pub struct Upload {
    pub photo: Option<Bytes>,
    pub latitude: String,
    pub longitude: String,
    pub accuracy: String,
    pub address: String,
    /// The dashboard's CSRF token (`_csrf`); the API has none.
    pub csrf: String,
    /// Other text fields the dashboard's forms send (`back`).
    pub back: String,
}

/// Why a multipart body could not be read.
pub enum UploadError {
    TooLarge,
    Malformed(String),
    Unknown(String),
}

/// Reads a multipart body field by field. The photo may be at most
/// [`evidence::MAX_PHOTO_BYTES`]; text fields are short.
pub async fn read_upload(mut multipart: Multipart, extra: &[&str]) -> Result<Upload, UploadError> {
    const MAX_TEXT: usize = 4096;
    let mut upload = Upload::default();
    let mut photo_too_large = false;
    let too_large =
        |e: &axum::extract::multipart::MultipartError| e.status() == StatusCode::PAYLOAD_TOO_LARGE;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) if photo_too_large => return Err(UploadError::TooLarge),
            Ok(None) => return Ok(upload),
            Err(e) if too_large(&e) => return Err(UploadError::TooLarge),
            Err(e) => return Err(UploadError::Malformed(e.body_text())),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "photo" {
            let mut field = field;
            let mut photo = Vec::new();
            let mut over = false;
            loop {
                match field.chunk().await {
                    Ok(Some(chunk)) => {
                        over |= photo.len() + chunk.len() > evidence::MAX_PHOTO_BYTES;
                        if !over {
                            photo.extend_from_slice(&chunk);
                        }
                    }
                    Ok(None) => break,
                    Err(e) if too_large(&e) => return Err(UploadError::TooLarge),
                    Err(e) => return Err(UploadError::Malformed(e.body_text())),
                }
            }
            if over {
                photo_too_large = true;
            } else if !photo.is_empty() {
                // A form's file input left empty sends an empty part: no photo.
                upload.photo = Some(photo.into());
            }
            continue;
        }
        let text = match field.text().await {
            Ok(text) if text.len() <= MAX_TEXT => text,
            Ok(_) => {
                return Err(UploadError::Malformed(format!(
                    "the field {name:?} is too long"
                )));
            }
            Err(e) if too_large(&e) => return Err(UploadError::TooLarge),
            Err(e) => return Err(UploadError::Malformed(e.body_text())),
        };
        match name.as_str() {
            "latitude" => upload.latitude = text,
            "longitude" => upload.longitude = text,
            "accuracy" => upload.accuracy = text,
            "address" => upload.address = text,
            "_csrf" if extra.contains(&"_csrf") => upload.csrf = text,
            "back" if extra.contains(&"back") => upload.back = text,
            _ => return Err(UploadError::Unknown(name)),
        }
    }
}

/// Attach a photo and the place of the sale to a paid charge.
#[utoipa::path(post, path = "/v1/charges/{id}/evidence", tag = "charges", operation_id = "attach_evidence",
    params(("id" = String, Path, description = "`chg_…` of a paid charge")),
    request_body(content = AttachEvidenceRequest, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Attached", body = EvidenceObject),
        (status = 400, description = "The body is not multipart/form-data, has an unknown field, or lacks `photo`; `param` names it", body = ErrorResponse),
        (status = 401, body = ErrorResponse),
        (status = 404, description = "No such charge for this key", body = ErrorResponse),
        (status = 409, description = "The charge is not paid, or holds 5 items already", body = ErrorResponse),
        (status = 413, description = "The photo is over 10 MB", body = ErrorResponse),
        (status = 422, description = "The file is not a JPEG, PNG or WebP image (or is damaged, or has too many pixels; `photo_invalid`), or a place field is refused: not a number in its range, a coordinate without the other, `accuracy` without coordinates, an `address` over 300 characters or with control characters (`param` names it)", body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn attach(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let charge = visible_charge(&app, &caller, &id).await?;
    let multipart = multipart.map_err(|e| {
        ApiError::bad_request(
            "body_unreadable",
            format!(
                "Send the evidence as multipart/form-data with a `photo` file: {}",
                e.body_text()
            ),
        )
    })?;
    let upload = match read_upload(multipart, &[]).await {
        Ok(upload) => upload,
        Err(UploadError::TooLarge) => return Err(too_large()),
        Err(UploadError::Malformed(why)) => {
            return Err(ApiError::bad_request(
                "body_unreadable",
                format!("The multipart body cannot be read: {why}"),
            ));
        }
        Err(UploadError::Unknown(name)) => {
            return Err(ApiError::invalid_param(
                name.clone(),
                format!(
                    "Unknown field {name:?}: send photo, latitude, longitude, accuracy or address."
                ),
            ));
        }
    };
    let place = Place::parse(
        &upload.latitude,
        &upload.longitude,
        &upload.accuracy,
        &upload.address,
    )
    .map_err(api_error)?;
    let photo = upload
        .photo
        .ok_or_else(|| api_error(EvidenceError::PhotoMissing))?;
    let record = app
        .attach_evidence(&caller, &charge, photo, place)
        .await
        .map_err(api_error)?;
    Ok((StatusCode::CREATED, Json(EvidenceObject::from(&record))).into_response())
}

/// List a charge's evidence, oldest first.
#[utoipa::path(get, path = "/v1/charges/{id}/evidence", tag = "charges", operation_id = "list_evidence",
    params(("id" = String, Path, description = "`chg_…`")),
    responses((status = 200, body = EvidenceList), (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<EvidenceList>, ApiError> {
    let charge = visible_charge(&app, &caller, &id).await?;
    let items = app.evidence_of(&charge).await.map_err(api_error)?;
    Ok(Json(EvidenceList {
        object: "list",
        data: items.iter().map(EvidenceObject::from).collect(),
    }))
}

/// The stored photo (a JPEG).
#[utoipa::path(get, path = "/v1/charges/{id}/evidence/{evidence_id}/photo", tag = "charges", operation_id = "get_evidence_photo",
    params(("id" = String, Path, description = "`chg_…`"), ("evidence_id" = String, Path, description = "`evi_…`")),
    responses(
        (status = 200, description = "The photo", content_type = "image/jpeg"),
        (status = 401, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("api_key" = [])))]
pub async fn photo(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path((id, evidence_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let charge = visible_charge(&app, &caller, &id).await?;
    let (record, bytes) = app
        .evidence_photo(&charge, &evidence_id)
        .await
        .map_err(api_error)?;
    Ok(photo_response(&record, bytes))
}

/// A stored photo as an HTTP answer: private, never sniffed as anything else.
pub fn photo_response(record: &EvidenceRecord, bytes: Bytes) -> Response {
    (
        [
            (header::CONTENT_TYPE, record.content_type.clone()),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"{}.jpg\"", record.id),
            ),
        ],
        bytes,
    )
        .into_response()
}
