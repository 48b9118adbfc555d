//! Sale evidence over the API, end to end on SQLite and PostgreSQL: a real JPEG (with EXIF) is
//! attached to a paid charge, stored re-encoded without metadata in the evidence directory,
//! listed and fetched back; a renamed text file, an oversized photo, an unpaid charge and
//! another merchant's charge are refused with clear answers. Then the sweeper, with its clock
//! in the test's hands: kept at 179 days, gone at 180 (row, file, audit line).

use crate::both_backends;
use crate::common;

use std::io::Cursor;
use std::time::Duration;

use common::gateway::{Backend, Gateway, GatewayOptions, Merchant, TestDb, create_merchant};
use common::{poll, sim_control, start_sim};
use serde_json::{Value, json};

const DAY_MS: i64 = 86_400_000;

/// A multipart/form-data body: text fields and at most one file, as a browser sends them.
fn multipart(fields: &[(&str, &str)], photo: Option<(&str, &str, &[u8])>) -> (String, Vec<u8>) {
    let boundary = "----pixgw-evidence-test-7f3a";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some((filename, content_type, bytes)) = photo {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// What a camera writes into a JPEG, and what must never be stored: an EXIF segment (here a
/// description that stands for the GPS position and serial number).
const EXIF_MARKER: &str = "GPS -23.5505 -46.6333 camera serial 4711";

/// A real JPEG of `width`×`height` with an EXIF (APP1) segment right after its start marker.
pub fn camera_jpeg(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x + y) % 255) as u8])
    });
    let mut jpeg = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut jpeg, image::ImageFormat::Jpeg)
        .unwrap();
    let jpeg = jpeg.into_inner();
    // TIFF: big-endian header, one IFD with ImageDescription (ASCII) pointing after it.
    let text = format!("{EXIF_MARKER}\0");
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    tiff.extend_from_slice(&1u16.to_be_bytes());
    tiff.extend_from_slice(&0x010Eu16.to_be_bytes());
    tiff.extend_from_slice(&2u16.to_be_bytes());
    tiff.extend_from_slice(&(text.len() as u32).to_be_bytes());
    tiff.extend_from_slice(&26u32.to_be_bytes());
    tiff.extend_from_slice(&0u32.to_be_bytes());
    tiff.extend_from_slice(text.as_bytes());
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    assert!(has_app1(&out));
    out
}

/// Whether a JPEG holds an APP1 segment (EXIF, XMP) before its image data.
pub fn has_app1(jpeg: &[u8]) -> bool {
    assert_eq!(&jpeg[..2], b"\xFF\xD8", "a JPEG");
    let mut at = 2;
    while at + 4 <= jpeg.len() && jpeg[at] == 0xFF {
        match jpeg[at + 1] {
            0xDA => break,
            0xE1 => return true,
            _ => at += 2 + u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize,
        }
    }
    false
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

struct Sale {
    db: TestDb,
    _sim: psp_sim::Sim,
    gw: Gateway,
    merchant: Merchant,
    charge: String,
}

/// A gateway with a merchant whose efi test account took a charge that is now paid.
async fn paid_sale(backend: Backend) -> Sale {
    let db = TestDb::new(backend).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let merchant = create_merchant(&db, "Padaria");
    gw.connect(&sim, &merchant.test_key, "efi", &[]).await;
    let charge = create_charge(&gw, &merchant.test_key).await;
    let (_, body) = gw
        .get(&format!("/v1/charges/{charge}"), &merchant.test_key)
        .await;
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": body["reference"]})),
    )
    .await;
    poll(
        Duration::from_secs(30),
        "the charge to be paid",
        async || {
            let (_, body) = gw
                .get(&format!("/v1/charges/{charge}"), &merchant.test_key)
                .await;
            (body["status"] == "paid").then_some(())
        },
    )
    .await;
    Sale {
        db,
        _sim: sim,
        gw,
        merchant,
        charge,
    }
}

async fn create_charge(gw: &Gateway, key: &str) -> String {
    let (status, body) = gw
        .post(
            "/v1/charges",
            key,
            json!({"amount": 1990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

async fn upload(
    gw: &Gateway,
    key: &str,
    charge: &str,
    fields: &[(&str, &str)],
    photo: Option<(&str, &str, &[u8])>,
) -> (u16, Value) {
    let (content_type, body) = multipart(fields, photo);
    gw.send(
        gw.request(
            reqwest::Method::POST,
            &format!("/v1/charges/{charge}/evidence"),
            Some(key),
        )
        .header("content-type", content_type)
        .body(body),
    )
    .await
}

async fn get_bytes(gw: &Gateway, key: &str, path: &str) -> (u16, String, Vec<u8>) {
    let response = gw
        .request(reqwest::Method::GET, path, Some(key))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

async fn store_of(db: &TestDb) -> pixgw::store::Store {
    pixgw::store::Store::connect(&db.url).await.unwrap()
}

async fn audit_actions(
    db: &TestDb,
    merchant: &str,
    action: &str,
) -> Vec<pixgw::store::audit::AuditRecord> {
    store_of(db)
        .await
        .audit_entries(
            merchant,
            &pixgw::store::audit::AuditFilter {
                action: Some(action.into()),
                limit: 50,
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

both_backends!(a_real_photo_is_stored_without_its_metadata);
async fn a_real_photo_is_stored_without_its_metadata(backend: Backend) {
    let sale = paid_sale(backend).await;
    let (gw, key, charge) = (&sale.gw, &sale.merchant.test_key, &sale.charge);
    let photo = camera_jpeg(2400, 1600);
    assert!(contains(&photo, EXIF_MARKER.as_bytes()));
    let before = pixgw::store::now_ms();
    let (status, evidence) = upload(
        gw,
        key,
        charge,
        &[
            ("latitude", "-23.550520"),
            ("longitude", "-46.633308"),
            ("accuracy", "12.5"),
        ],
        Some(("IMG_0042.jpg", "image/jpeg", &photo)),
    )
    .await;
    let after = pixgw::store::now_ms();
    assert_eq!(status, 201, "{evidence}");
    let id = evidence["id"].as_str().unwrap();
    assert!(id.starts_with("evi_"), "{id}");
    assert_eq!(evidence["object"], "evidence");
    assert_eq!(evidence["charge"], charge.as_str());
    // Scaled to 2048 on its longest side, re-encoded as JPEG.
    assert_eq!(evidence["photo"]["content_type"], "image/jpeg");
    assert_eq!(evidence["photo"]["width"], 2048);
    assert_eq!(evidence["photo"]["height"], 1365);
    assert_eq!(
        evidence["location"],
        json!({"latitude": -23.55052, "longitude": -46.633308, "accuracy": 12.5, "address": null})
    );
    assert_eq!(evidence["uploaded_by"]["type"], "api_key");
    // The server's clock stamps it, and it is kept 180 days.
    let created = pixgw::store::parse_rfc3339(evidence["created_at"].as_str().unwrap()).unwrap();
    let expires = pixgw::store::parse_rfc3339(evidence["expires_at"].as_str().unwrap()).unwrap();
    assert!(
        (before..=after).contains(&created),
        "{created} in {before}..={after}"
    );
    assert_eq!(expires - created, 180 * DAY_MS);

    // The photo as the API answers it: a JPEG that decodes, without EXIF.
    let url = evidence["photo"]["url"].as_str().unwrap();
    assert_eq!(url, format!("/v1/charges/{charge}/evidence/{id}/photo"));
    let (status, content_type, stored) = get_bytes(gw, key, url).await;
    assert_eq!((status, content_type.as_str()), (200, "image/jpeg"));
    assert!(
        !has_app1(&stored),
        "the stored photo has no APP1 (EXIF) segment"
    );
    assert!(!contains(&stored, EXIF_MARKER.as_bytes()));
    let decoded = image::load_from_memory_with_format(&stored, image::ImageFormat::Jpeg).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2048, 1365));
    assert_eq!(evidence["photo"]["size"], stored.len());
    assert_eq!(
        evidence["photo"]["sha256"],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&stored))
    );
    // Outside the database: a file under the data directory, the same bytes.
    let file = sale.db.dir.path().join(format!(
        "data/evidence/{}/test/{charge}/{id}.jpg",
        sale.merchant.id
    ));
    assert_eq!(std::fs::read(&file).unwrap(), stored);

    // Listed with the charge; an address alone is a place too.
    let (status, second) = upload(
        gw,
        key,
        charge,
        &[("address", "Rua Augusta, 1500 — São Paulo")],
        Some(("recibo.png", "image/png", &png(300, 200))),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(
        second["location"]["address"],
        "Rua Augusta, 1500 — São Paulo"
    );
    assert_eq!(second["location"]["latitude"], Value::Null);
    let (status, list) = gw.get(&format!("/v1/charges/{charge}/evidence"), key).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id, second["id"].as_str().unwrap()]);

    // Every attachment is in the audit log with its actor.
    let audit = audit_actions(&sale.db, &sale.merchant.id, "evidence.attach").await;
    assert_eq!(audit.len(), 2);
    assert!(
        audit
            .iter()
            .all(|a| a.actor_kind == "api_key" && a.target_id.as_deref() == Some(charge.as_str()))
    );

    // At most five per charge.
    for _ in 0..3 {
        let (status, body) = upload(
            gw,
            key,
            charge,
            &[],
            Some(("p.png", "image/png", &png(10, 10))),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = upload(
        gw,
        key,
        charge,
        &[],
        Some(("p.png", "image/png", &png(10, 10))),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "evidence_limit_reached");
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
        width,
        height,
        image::Rgba([200, 30, 30, 255]),
    ))
    .write_to(&mut out, image::ImageFormat::Png)
    .unwrap();
    out.into_inner()
}

both_backends!(what_is_not_a_photo_or_not_ours_is_refused);
async fn what_is_not_a_photo_or_not_ours_is_refused(backend: Backend) {
    let sale = paid_sale(backend).await;
    let (gw, key, charge) = (&sale.gw, &sale.merchant.test_key, &sale.charge);

    // A text file renamed to .jpg and sent as image/jpeg.
    let (status, body) = upload(
        gw,
        key,
        charge,
        &[],
        Some((
            "foto.jpg",
            "image/jpeg",
            b"Nota fiscal 123\nTotal: R$ 19,90\n",
        )),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "photo_invalid");
    assert_eq!(body["error"]["param"], "photo");
    assert_eq!(
        body["error"]["message"],
        "The file is not a JPEG, PNG or WebP image."
    );

    // Over 10 MB: 413, saying what to do.
    let big = vec![0xAB_u8; 10 * 1024 * 1024 + 1];
    let (status, body) = upload(gw, key, charge, &[], Some(("big.jpg", "image/jpeg", &big))).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "photo_too_large");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("10 MB") && message.contains("smaller"),
        "{message}"
    );

    // No photo (400); a latitude without a longitude (well formed, refused by a rule: 422); an
    // unknown field (400).
    let (status, body) = upload(gw, key, charge, &[("address", "Loja 1")], None).await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("photo"))
    );
    let jpeg = camera_jpeg(64, 48);
    let photo = Some(("p.jpg", "image/jpeg", jpeg.as_slice()));
    let (status, body) = upload(gw, key, charge, &[("latitude", "-23.5")], photo).await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (422, Some("longitude")),
        "{body}"
    );
    let (status, body) = upload(gw, key, charge, &[("lat", "-23.5")], photo).await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("lat")),
        "{body}"
    );

    // A charge that is not paid.
    let pending = create_charge(gw, key).await;
    let (status, body) = upload(gw, key, &pending, &[], photo).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "charge_not_paid");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("paid charges only"),
        "{body}"
    );

    // Another merchant's charge does not exist for this key, nor its evidence; nor does the
    // same merchant's charge for its live key.
    let (status, _) = upload(gw, key, charge, &[], photo).await;
    assert_eq!(status, 201);
    let (_, list) = gw.get(&format!("/v1/charges/{charge}/evidence"), key).await;
    let photo_url = list["data"][0]["photo"]["url"].as_str().unwrap().to_owned();
    let other = create_merchant(&sale.db, "Concorrente");
    for other_key in [&other.test_key, &sale.merchant.live_key] {
        let (status, body) = upload(gw, other_key, charge, &[], photo).await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], "resource_missing");
        let (status, _) = gw
            .get(&format!("/v1/charges/{charge}/evidence"), other_key)
            .await;
        assert_eq!(status, 404);
        let (status, _, bytes) = get_bytes(gw, other_key, &photo_url).await;
        assert_eq!(status, 404);
        assert!(!bytes.starts_with(b"\xFF\xD8"));
    }
    // Nothing refused was stored.
    let (_, list) = gw.get(&format!("/v1/charges/{charge}/evidence"), key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
}

both_backends!(evidence_is_swept_after_180_days);
async fn evidence_is_swept_after_180_days(backend: Backend) {
    let sale = paid_sale(backend).await;
    let (gw, key, charge) = (&sale.gw, &sale.merchant.test_key, &sale.charge);
    let (status, evidence) = upload(
        gw,
        key,
        charge,
        &[("address", "Feira da Liberdade, banca 12")],
        Some(("p.jpg", "image/jpeg", &camera_jpeg(320, 240))),
    )
    .await;
    assert_eq!(status, 201, "{evidence}");
    let id = evidence["id"].as_str().unwrap();
    let created = pixgw::store::parse_rfc3339(evidence["created_at"].as_str().unwrap()).unwrap();
    let file = sale.db.dir.path().join(format!(
        "data/evidence/{}/test/{charge}/{id}.jpg",
        sale.merchant.id
    ));
    assert!(file.exists());

    // The sweeper of another gateway on the same database and storage, with the test's clock.
    let store = store_of(&sale.db).await;
    let photos =
        pixgw::evidence::PhotoStore::directory(&sale.db.dir.path().join("data/evidence")).unwrap();
    let sweep = async |now: i64| pixgw::evidence::sweep(&store, &photos, now).await.unwrap();

    assert_eq!(sweep(created + 179 * DAY_MS).await, 0);
    assert_eq!(sweep(created + 180 * DAY_MS - 1).await, 0);
    assert!(file.exists(), "kept before 180 days");
    let (_, list) = gw.get(&format!("/v1/charges/{charge}/evidence"), key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert!(
        audit_actions(&sale.db, &sale.merchant.id, "evidence.delete")
            .await
            .is_empty()
    );

    assert_eq!(sweep(created + 180 * DAY_MS).await, 1);
    assert!(!file.exists(), "the photo is gone at 180 days");
    let (_, list) = gw.get(&format!("/v1/charges/{charge}/evidence"), key).await;
    assert_eq!(list["data"], json!([]));
    let (status, _, _) = get_bytes(gw, key, evidence["photo"]["url"].as_str().unwrap()).await;
    assert_eq!(status, 404);
    let deleted = audit_actions(&sale.db, &sale.merchant.id, "evidence.delete").await;
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert_eq!(deleted[0].actor_kind, "system");
    assert_eq!(deleted[0].target_id.as_deref(), Some(charge.as_str()));
    assert!(deleted[0].summary.contains(id), "{}", deleted[0].summary);
    // A second sweep finds nothing more.
    assert_eq!(sweep(created + 181 * DAY_MS).await, 0);
}
