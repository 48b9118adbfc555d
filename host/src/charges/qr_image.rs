//! The QR image in stored charge JSON: an idempotency key's answer and an event's payload are
//! stored without it (`"qr_code_base64":null`, [`ChargeObject::stored`]) and get it back,
//! drawn again from the Pix code beside it, when they leave the gateway.
//!
//! Why: the image is a function of the code (the gateway always draws it, from the code), about
//! 1.1 KB of base64 in a ~2 KB row, so an answer or event with it took a 4 KB SQLite page of its
//! own; without it four share a page, and a created charge writes fewer pages.
//!
//! [`QrImages`] remembers the images drawn last: a charge's answer and its `charge.created`
//! delivery, moments after the charge was made, get its image without drawing it again.
//!
//! [`ChargeObject::stored`]: super::object::ChargeObject::stored

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::domain::DomainError;

/// How many images [`QrImages`] keeps: about 1.4 MB, a few hundred milliseconds of charges at
/// full load (their answers and first deliveries follow them by milliseconds).
const REMEMBERED: usize = 1024;

/// What an image left out of stored JSON looks like there.
const LEFT_OUT: &str = r#""qr_code_base64":null"#;

/// The Pix QR images drawn last, by code.
pub struct QrImages {
    recent: parking_lot::Mutex<Recent>,
    capacity: usize,
}

#[derive(Default)]
struct Recent {
    images: HashMap<Arc<str>, Arc<str>>,
    /// Codes in the order their images were drawn: the first is forgotten first.
    order: VecDeque<Arc<str>>,
}

impl Default for QrImages {
    fn default() -> QrImages {
        QrImages::with_capacity(REMEMBERED)
    }
}

impl QrImages {
    pub fn with_capacity(capacity: usize) -> QrImages {
        QrImages {
            recent: parking_lot::Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    /// The image of the Pix code `code` ([`crate::domain::qr_png_base64`]), drawn unless it was
    /// drawn a moment ago.
    pub fn image(&self, code: &str) -> Result<Arc<str>, DomainError> {
        if let Some(image) = self.recent.lock().images.get(code) {
            return Ok(image.clone());
        }
        // Drawn outside the lock (65–90 µs).
        let image: Arc<str> = crate::domain::qr_png_base64(code)?.into();
        let mut recent = self.recent.lock();
        let code: Arc<str> = code.into();
        if recent.images.insert(code.clone(), image.clone()).is_none() {
            recent.order.push_back(code);
            while recent.order.len() > self.capacity {
                if let Some(oldest) = recent.order.pop_front() {
                    recent.images.remove(&oldest);
                }
            }
        }
        Ok(image)
    }

    /// A charge's JSON as [`ChargeObject::stored`] serialized it (an idempotency key's answer),
    /// with its image drawn back in; any other body (an error's) as it is.
    ///
    /// Found in the text, not by parsing it, so that the answer keeps its fields' order: the
    /// charge's first `"pix":{"copy_paste":` is its own, because every field before `pix` is a
    /// fixed-shape value (`payer` has only fixed keys) and `metadata` and `routing`, whose keys
    /// a merchant or the router chose, come after it.
    ///
    /// [`ChargeObject::stored`]: super::object::ChargeObject::stored
    pub fn answer_with_image(&self, body: String) -> String {
        const PIX: &str = r#""pix":{"copy_paste":"#;
        let Some(code_at) = body.find(PIX).map(|at| at + PIX.len()) else {
            return body;
        };
        let Some(code_len) = json_string_len(&body[code_at..]) else {
            return body; // `null`: no code, no image.
        };
        // The code, then `,"qr_code_base64":null` when the image was left out.
        let null_at = code_at + code_len + 1 + LEFT_OUT.len() - "null".len();
        if !body[code_at + code_len..].starts_with(',')
            || !body[code_at + code_len + 1..].starts_with(LEFT_OUT)
        {
            return body; // Stored with its image (before images were left out).
        }
        let Ok(code) = serde_json::from_str::<String>(&body[code_at..code_at + code_len]) else {
            return body;
        };
        let Some(image) = self.image_or_log(&code) else {
            return body;
        };
        let mut out = String::with_capacity(body.len() + image.len());
        out.push_str(&body[..null_at]);
        out.push('"');
        out.push_str(&image);
        out.push('"');
        out.push_str(&body[null_at + "null".len()..]);
        out
    }

    /// An event's payload as stored, with its charge's image drawn back in.
    pub fn event_with_image(&self, payload: &mut Value) {
        let Some(pix) = payload.pointer_mut("/data/object/pix") else {
            return;
        };
        if !pix.get("qr_code_base64").is_some_and(Value::is_null) {
            return;
        }
        let Some(code) = pix.get("copy_paste").and_then(Value::as_str) else {
            return;
        };
        if let Some(image) = self.image_or_log(code) {
            pix["qr_code_base64"] = Value::String(image.to_string());
        }
    }

    /// [`QrImages::event_with_image`] of a payload's text, as a webhook sends it. The text is
    /// the stored one with the image's `null` replaced: stored payloads are serialized from a
    /// [`Value`] (keys in order, no spaces), as this one is again.
    pub fn event_text_with_image(&self, payload: String) -> String {
        if !payload.contains(LEFT_OUT) {
            return payload;
        }
        let Ok(mut value) = serde_json::from_str::<Value>(&payload) else {
            return payload;
        };
        self.event_with_image(&mut value);
        value.to_string()
    }

    fn image_or_log(&self, code: &str) -> Option<Arc<str>> {
        self.image(code)
            .inspect_err(|e| {
                // The code was drawn when the charge was made: only a changed row gets here.
                tracing::error!(error = %e, "a stored charge's Pix code cannot be drawn; its JSON is sent without the image");
            })
            .ok()
    }
}

/// The length of the JSON string at the start of `text`, quotes included; `None` when `text`
/// does not start with one.
fn json_string_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::charges::object::ChargeObject;
    use crate::domain::{Environment, Reference};
    use crate::store::charges::{ChargeRecord, ChargeState};

    const CODE: &str = "00020101021226930014br.gov.bcb.pix2571qrcodes-pix.gerencianet.com.br/v2/cobv/9d36b84fc70b478fb95c12729b90ca255204000053039865406123.455802BR5905EFISA6008SAOPAULO62070503***63047D5B";

    /// A pending charge with `CODE` and its image, whose description, metadata and routing hold
    /// what an image search could take for the charge's own (a merchant chooses them).
    fn charge() -> ChargeRecord {
        let decoy = json!({"copy_paste": CODE, "qr_code_base64": null});
        ChargeRecord {
            id: "chg_1".into(),
            merchant_id: "mer_1".into(),
            environment: Environment::Test,
            credential_id: "cred_1".into(),
            provider: "efi".into(),
            reference: Reference::generate(),
            psp_id: Some("psp-1".into()),
            status: ChargeState::Pending,
            amount: 12345,
            description: Some(r#"x","pix":{"copy_paste":"1","qr_code_base64":null"#.into()),
            payer_email: None,
            payer_name: Some(r#""qr_code_base64":null"#.into()),
            payer_document: None,
            copy_paste: Some(CODE.into()),
            qr_png_base64: Some(crate::domain::qr_png_base64(CODE).unwrap()),
            expires_at: Some(1_800_000_000_000),
            metadata: json!({"pix": decoy, "qr_code_base64": null, "a\"pix": decoy}),
            paid_at: None,
            end_to_end_id: None,
            amount_paid: None,
            routing: Some(json!({"pix": decoy})),
            operator_id: None,
            payment_link_id: None,
            payment_link_name: None,
            paid_late: false,
            created_at: 1_700_000_000_000,
            updated_at: 1_700_000_000_000,
        }
    }

    #[test]
    fn a_stored_answer_gets_back_exactly_the_answer_with_its_image() {
        let charge = charge();
        let full = serde_json::to_string(&ChargeObject::from(&charge)).unwrap();
        let stored = serde_json::to_string(&ChargeObject::stored(&charge)).unwrap();
        assert!(!stored.contains(charge.qr_png_base64.as_deref().unwrap()));
        assert_eq!(
            stored.len() + charge.qr_png_base64.as_ref().unwrap().len() + 2 - "null".len(),
            full.len()
        );
        assert_eq!(QrImages::default().answer_with_image(stored), full);
    }

    #[test]
    fn a_stored_event_gets_back_exactly_the_event_with_its_image() {
        let charge = charge();
        let event = crate::webhooks::event_for(&charge, "charge.created");
        let stored = event.payload.to_string();
        let mut full = event.payload.clone();
        full["data"]["object"] = serde_json::to_value(ChargeObject::from(&charge)).unwrap();
        assert!(!stored.contains(charge.qr_png_base64.as_deref().unwrap()));
        let images = QrImages::default();
        assert_eq!(images.event_text_with_image(stored), full.to_string());
        let mut read = event.payload;
        images.event_with_image(&mut read);
        assert_eq!(read, full);
    }

    #[test]
    fn json_without_a_left_out_image_is_kept_as_it_is() {
        let images = QrImages::default();
        let charge = charge();
        // Stored before images were left out.
        let with_image = serde_json::to_string(&ChargeObject::from(&charge)).unwrap();
        assert_eq!(images.answer_with_image(with_image.clone()), with_image);
        let event = crate::webhooks::event_for(&charge, "charge.paid").payload;
        let mut old = event.clone();
        old["data"]["object"]["pix"]["qr_code_base64"] = json!("iVBORw0KGgo=");
        assert_eq!(
            images.event_text_with_image(old.to_string()),
            old.to_string()
        );
        // No code (paid with an unusable one): no image to draw.
        let mut no_code = charge;
        no_code.copy_paste = None;
        no_code.qr_png_base64 = None;
        let stored = serde_json::to_string(&ChargeObject::stored(&no_code)).unwrap();
        assert_eq!(images.answer_with_image(stored.clone()), stored);
        // An error's answer.
        let error = r#"{"error":{"type":"psp_error","message":"\"pix\":{\"copy_paste\":"}}"#;
        assert_eq!(images.answer_with_image(error.into()), error);
    }

    #[test]
    fn the_images_drawn_last_are_remembered_and_the_oldest_forgotten() {
        const OTHER: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";
        let images = QrImages::with_capacity(1);
        let first = images.image(CODE).unwrap();
        assert_eq!(&*first, crate::domain::qr_png_base64(CODE).unwrap());
        assert!(Arc::ptr_eq(&first, &images.image(CODE).unwrap()));
        let other = images.image(OTHER).unwrap();
        assert_eq!(&*other, crate::domain::qr_png_base64(OTHER).unwrap());
        let again = images.image(CODE).unwrap();
        assert!(!Arc::ptr_eq(&first, &again), "forgotten, drawn again");
        assert_eq!(again, first);
    }
}
