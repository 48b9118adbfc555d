//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the bytes of a `whsec_<base64>` secret.
//! During a secret rotation both signatures are sent, space-separated.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of a generated secret: within the specification's 24 to 64.
const SECRET_BYTES: usize = 32;

/// A fresh `whsec_…` secret.
pub fn generate_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// The signing key of a `whsec_…` secret.
pub fn secret_key(secret: &str) -> Result<Vec<u8>, String> {
    let encoded = secret
        .strip_prefix("whsec_")
        .ok_or("a webhook secret starts with whsec_")?;
    STANDARD
        .decode(encoded)
        .map_err(|e| format!("a webhook secret is whsec_ and base64: {e}"))
}

/// One `v1,<signature>` for `key`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header value for every key (current first).
pub fn header(keys: &[Vec<u8>], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| sign(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector published with the Standard Webhooks specification.
    #[test]
    fn the_specifications_test_vector() {
        let key = secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_whsec_and_32_random_bytes() {
        let a = generate_secret();
        assert!(a.starts_with("whsec_"));
        assert_eq!(secret_key(&a).unwrap().len(), 32);
        assert_ne!(a, generate_secret());
        assert!(secret_key("sk_123").is_err());
    }

    #[test]
    fn a_rotation_sends_both_signatures() {
        let (old, new) = (b"old".to_vec(), b"new".to_vec());
        let both = header(&[new.clone(), old.clone()], "evt_1", 10, b"{}");
        assert_eq!(
            both,
            format!(
                "{} {}",
                sign(&new, "evt_1", 10, b"{}"),
                sign(&old, "evt_1", 10, b"{}")
            )
        );
    }
}
