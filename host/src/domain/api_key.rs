//! [`ApiKey`]: a merchant's API key, `pgw_test_<secret>` or `pgw_live_<secret>`.
//!
//! The gateway never stores a key. It stores two things derived from it: the lookup prefix (the
//! first 16 characters, in clear, to find the row and to show in listings) and the SHA-256 hash
//! of the whole key, against which a presented key is verified in constant time.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{DomainError, Environment, base62};

/// A merchant API key in plaintext: a secret.
///
/// Holds no `Display` or `Serialize` and a redacting `Debug`, so the key cannot reach a log or a
/// response by accident; [`ApiKey::as_str`] is the one deliberate way to read it, used once, to
/// show a new key to its owner. Not `PartialEq` either: compare keys with [`ApiKey::verify`].
#[derive(Clone)]
pub struct ApiKey {
    key: String,
    environment: Environment,
}

const PREFIX: &str = "pgw_";
/// Random characters in a generated key: 40 base62 characters ≈ 238 bits.
const GENERATED_SECRET_LEN: usize = 40;
/// Shortest secret accepted when parsing: ≈ 190 bits, still far beyond guessing.
const MIN_SECRET_LEN: usize = 32;
/// Characters stored in clear: `pgw_test_` plus 7 secret characters (≈ 42 bits), enough to find
/// the row, far too few to help guess the other 33.
const LOOKUP_PREFIX_LEN: usize = 16;

impl ApiKey {
    /// A new key for `environment`, with a 40-character secret from the operating system's
    /// CSPRNG. Show [`ApiKey::as_str`] to the merchant once, then keep only
    /// [`ApiKey::lookup_prefix`] and [`ApiKey::hash`].
    pub fn generate(environment: Environment) -> Self {
        let key = format!(
            "{PREFIX}{}_{}",
            environment.as_str(),
            base62::random(GENERATED_SECRET_LEN)
        );
        ApiKey { key, environment }
    }

    /// Checks a presented key's format: `pgw_test_` or `pgw_live_`, then at least 32 letters and
    /// digits. Says nothing about whether the key exists; that is [`ApiKey::verify`]'s job.
    /// Errors never quote the key.
    pub fn parse(input: &str) -> Result<Self, DomainError> {
        let (environment, secret) = [Environment::Test, Environment::Live]
            .into_iter()
            .find_map(|env| {
                input
                    .strip_prefix(PREFIX)
                    .and_then(|rest| rest.strip_prefix(env.as_str()))
                    .and_then(|rest| rest.strip_prefix('_'))
                    .map(|secret| (env, secret))
            })
            .ok_or(DomainError::ApiKeyPrefix)?;
        // ASCII letters and digits are exactly the base62 alphabet.
        if !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(DomainError::ApiKeySecretCharacter);
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(DomainError::ApiKeySecretLength { len: secret.len() });
        }
        Ok(ApiKey {
            key: input.to_owned(),
            environment,
        })
    }

    /// Whether the key is for test or live.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The whole key in plaintext. Only for showing a newly generated key to its owner.
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// The first 16 characters (`pgw_test_Ab3dE5f`): stored in clear to find the key's row and
    /// to tell keys apart in listings.
    pub fn lookup_prefix(&self) -> &str {
        // Every key holds at least 9 + 32 ASCII characters, so this slice is in bounds and on a
        // character boundary.
        &self.key[..LOOKUP_PREFIX_LEN]
    }

    /// Lowercase hex SHA-256 of the whole key, the only form the gateway stores.
    ///
    /// A fast hash is the right tool here, not a password hash like Argon2: the key is at
    /// least 190 random bits, so there is no dictionary to try and brute force is hopeless at any
    /// speed, while a slow hash would only make every API request slower.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.key.as_bytes()))
    }

    /// Whether this key hashes to `stored_hash_hex` (as [`ApiKey::hash`] produced it; either hex
    /// case). The digests are compared in constant time, so response timing reveals nothing
    /// about how much of a guess was right. A malformed stored hash never verifies.
    pub fn verify(&self, stored_hash_hex: &str) -> bool {
        let Ok(stored) = hex::decode(stored_hash_hex) else {
            return false;
        };
        let computed = Sha256::digest(self.key.as_bytes());
        // `ct_eq` on slices of different lengths is false; lengths are not secret.
        computed[..].ct_eq(&stored[..]).into()
    }
}

/// Shows the environment and lookup prefix only, never the secret.
impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("environment", &self.environment)
            .field("lookup_prefix", &self.lookup_prefix())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape() {
        let test = ApiKey::generate(Environment::Test);
        assert!(test.as_str().starts_with("pgw_test_"));
        assert_eq!(test.as_str().len(), 9 + 40);
        assert!(
            test.as_str()[9..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric())
        );
        assert_eq!(test.environment(), Environment::Test);

        let live = ApiKey::generate(Environment::Live);
        assert!(live.as_str().starts_with("pgw_live_"));
        assert_eq!(live.environment(), Environment::Live);
        assert_ne!(ApiKey::generate(Environment::Live).as_str(), live.as_str());
    }

    #[test]
    fn parse_reads_back_generated_keys_and_their_environment() {
        for env in [Environment::Test, Environment::Live] {
            let key = ApiKey::generate(env);
            let parsed = ApiKey::parse(key.as_str()).unwrap();
            assert_eq!(parsed.as_str(), key.as_str());
            assert_eq!(parsed.environment(), env);
        }
    }

    #[test]
    fn parse_accepts_32_secret_characters_and_more() {
        assert!(ApiKey::parse(&format!("pgw_live_{}", "a".repeat(32))).is_ok());
        assert!(ApiKey::parse(&format!("pgw_live_{}", "Z9".repeat(40))).is_ok());
    }

    #[test]
    fn parse_rejects_bad_prefixes_without_quoting_the_key() {
        let secret = "A".repeat(40);
        for bad in [
            format!("pgw_prod_{secret}"),
            format!("PGW_TEST_{secret}"),
            format!("pgw_test{secret}"),
            format!("sk_test_{secret}"),
            format!(" pgw_test_{secret}"),
            String::new(),
        ] {
            let err = ApiKey::parse(&bad).unwrap_err();
            assert_eq!(err, DomainError::ApiKeyPrefix, "{bad}");
            assert!(!err.to_string().contains(&secret));
        }
        assert_eq!(
            DomainError::ApiKeyPrefix.to_string(),
            "the API key must be pgw_test_ or pgw_live_ followed by at least 32 letters and \
             digits, exactly as it was shown when it was created; this one does not start with \
             pgw_test_ or pgw_live_"
        );
    }

    #[test]
    fn parse_rejects_short_or_foreign_secrets() {
        assert_eq!(
            ApiKey::parse(&format!("pgw_test_{}", "a".repeat(31))).unwrap_err(),
            DomainError::ApiKeySecretLength { len: 31 }
        );
        assert_eq!(
            ApiKey::parse("pgw_test_").unwrap_err(),
            DomainError::ApiKeySecretLength { len: 0 }
        );
        for bad in [
            format!("pgw_test_{}-", "a".repeat(40)),
            format!("pgw_test_{} ", "a".repeat(40)),
            format!("pgw_test_{}ã", "a".repeat(40)),
        ] {
            assert_eq!(
                ApiKey::parse(&bad).unwrap_err(),
                DomainError::ApiKeySecretCharacter
            );
        }
    }

    #[test]
    fn lookup_prefix_is_the_first_16_characters() {
        let key = ApiKey::parse("pgw_test_Ab3dE5fGhIjKlMnOpQrStUvWxYz0123456789").unwrap();
        assert_eq!(key.lookup_prefix(), "pgw_test_Ab3dE5f");
        assert_eq!(
            ApiKey::generate(Environment::Live).lookup_prefix().len(),
            16
        );
    }

    #[test]
    fn hash_is_hex_sha256_of_the_whole_key() {
        let key = ApiKey::parse(&format!("pgw_test_{}", "a".repeat(32))).unwrap();
        // Independent value: `printf '%s' pgw_test_aaaa…(32) | sha256sum`.
        assert_eq!(
            key.hash(),
            "c688f413338177222afe37efe3a2f72553af143b7cfb78152b6df2f7da6630da"
        );
        assert_eq!(key.hash().len(), 64);
    }

    #[test]
    fn verify_accepts_the_stored_hash_in_either_case_and_nothing_else() {
        let key = ApiKey::generate(Environment::Live);
        let stored = key.hash();
        assert!(key.verify(&stored));
        assert!(key.verify(&stored.to_uppercase()));

        let other = ApiKey::generate(Environment::Live);
        assert!(!other.verify(&stored));
        assert!(!key.verify(&stored[..62]), "truncated hash");
        assert!(!key.verify(&format!("{stored}00")), "longer hash");
        assert!(!key.verify("not hex at all"));
        assert!(!key.verify(""));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = ApiKey::generate(Environment::Test);
        let debug = format!("{key:?}");
        assert!(!debug.contains(&key.as_str()[16..]));
        assert_eq!(
            debug,
            format!(
                "ApiKey {{ environment: Test, lookup_prefix: {:?}, .. }}",
                key.lookup_prefix()
            )
        );
    }
}
