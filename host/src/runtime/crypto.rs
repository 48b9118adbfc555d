//! The `crypto` import: primitives adapters need to verify PSP notifications, run natively.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

pub fn sha256(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

pub fn verify_rsa_sha256(
    public_key_pem: &str,
    message: &[u8],
    signature: &[u8],
) -> Result<bool, String> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    use rsa::signature::Verifier;
    let key = rsa::RsaPublicKey::from_public_key_pem(public_key_pem)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(public_key_pem))
        .map_err(|e| format!("the RSA public key does not parse: {e}"))?;
    let key = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key);
    let Ok(signature) = rsa::pkcs1v15::Signature::try_from(signature) else {
        return Ok(false);
    };
    Ok(key.verify(message, &signature).is_ok())
}

pub fn verify_ecdsa_p256_sha256(
    public_key_pem: &str,
    message: &[u8],
    signature: &[u8],
) -> Result<bool, String> {
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::DecodePublicKey;
    let key = p256::ecdsa::VerifyingKey::from_public_key_pem(public_key_pem)
        .map_err(|e| format!("the P-256 public key does not parse: {e}"))?;
    let signature = p256::ecdsa::Signature::from_der(signature)
        .or_else(|_| p256::ecdsa::Signature::from_slice(signature));
    Ok(signature.is_ok_and(|s| key.verify(message, &s).is_ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            hex::encode(sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn constant_time_eq_compares_contents_and_length() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn rsa_and_ecdsa_signatures_verify_and_tampering_fails() {
        use p256::ecdsa::signature::Signer;
        use p256::pkcs8::EncodePublicKey;
        let sk = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
        let pem = sk
            .verifying_key()
            .to_public_key_pem(Default::default())
            .unwrap();
        let sig: p256::ecdsa::Signature = sk.sign(b"body");
        assert_eq!(
            verify_ecdsa_p256_sha256(&pem, b"body", &sig.to_der().to_bytes()),
            Ok(true)
        );
        assert_eq!(
            verify_ecdsa_p256_sha256(&pem, b"body", &sig.to_bytes()),
            Ok(true)
        );
        assert_eq!(
            verify_ecdsa_p256_sha256(&pem, b"bodY", &sig.to_bytes()),
            Ok(false)
        );
        assert!(verify_ecdsa_p256_sha256("junk", b"body", &sig.to_bytes()).is_err());

        use rsa::signature::SignatureEncoding;
        let mut rng = rand_core::OsRng;
        let private = rsa::RsaPrivateKey::new(&mut rng, 1024).unwrap();
        let pem = private
            .to_public_key()
            .to_public_key_pem(Default::default())
            .unwrap();
        let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(private);
        let sig = signer.sign(b"payload").to_vec();
        assert_eq!(verify_rsa_sha256(&pem, b"payload", &sig), Ok(true));
        assert_eq!(verify_rsa_sha256(&pem, b"payloaD", &sig), Ok(false));
        assert_eq!(verify_rsa_sha256(&pem, b"payload", b"short"), Ok(false));
    }
}
