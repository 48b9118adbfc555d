//! Public object ids: [`ChargeId`] (`chg_…`), [`EventId`] (`evt_…`), [`CredentialId`] (`cred_…`),
//! [`PaymentLinkId`] (`plink_…`).
//!
//! Each is a type prefix and a UUIDv7 written as 22 base62 characters. A UUIDv7 starts with the
//! creation time in milliseconds and `Uuid::now_v7` keeps ids from one process strictly
//! increasing; the base62 encoding is fixed-width with an alphabet in ASCII order. Together: an
//! id created later sorts later as a plain string, so listings and keyset pagination need no
//! separate timestamp column to be in creation order.
//!
//! The prefix makes an id say what it is in logs and support tickets, and stops a charge id from
//! being accepted where an event id is expected.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use uuid::Uuid;

use super::{DomainError, base62, excerpt};

/// Characters after the prefix: the fixed-width base62 form of a 128-bit UUID.
pub(super) const BODY_LEN: usize = base62::U128_WIDTH;

/// A fresh id body: the current UUIDv7 in fixed-width base62.
fn generate_body() -> String {
    base62::encode_u128(Uuid::now_v7().as_u128())
}

/// Whether `input` is `prefix` followed by a body that some 128-bit value encodes to.
fn is_valid(input: &str, prefix: &str) -> bool {
    input
        .strip_prefix(prefix)
        .is_some_and(|body| body.len() == BODY_LEN && base62::decode_u128(body).is_some())
}

/// Writes one prefixed id type; the encoding and checking live once, in the functions above.
macro_rules! public_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        ///
        /// Serialises as its string; deserialises through `parse`, so a malformed id never
        /// reaches a handler.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
        #[serde(try_from = "String")]
        pub struct $name(String);

        impl $name {
            /// The prefix every id of this type starts with.
            pub const PREFIX: &'static str = $prefix;

            /// A new id that sorts after every id this process made before it.
            pub fn generate() -> Self {
                $name(format!("{}{}", $prefix, generate_body()))
            }

            /// Checks the prefix, the length and the alphabet.
            pub fn parse(input: &str) -> Result<Self, DomainError> {
                if is_valid(input, $prefix) {
                    Ok($name(input.to_owned()))
                } else {
                    Err(DomainError::InvalidId { kind: $kind, prefix: $prefix, got: excerpt(input) })
                }
            }

            /// The id as the API shows it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = DomainError;

            fn from_str(input: &str) -> Result<Self, Self::Err> {
                $name::parse(input)
            }
        }

        impl TryFrom<String> for $name {
            type Error = DomainError;

            fn try_from(value: String) -> Result<Self, Self::Error> {
                $name::parse(&value)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }
    };
}

public_id!(
    /// The public id of a charge: `chg_` and 22 base62 characters.
    ChargeId, "chg_", "charge id"
);
public_id!(
    /// The public id of a webhook event: `evt_` and 22 base62 characters.
    EventId, "evt_", "event id"
);
public_id!(
    /// The public id of a stored PSP credential: `cred_` and 22 base62 characters.
    CredentialId, "cred_", "credential id"
);
public_id!(
    /// The public id of a payment link: `plink_` and 22 base62 characters.
    PaymentLinkId, "plink_", "payment link id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_prefix_and_fixed_length() {
        let charge = ChargeId::generate();
        assert!(charge.as_str().starts_with("chg_"));
        assert_eq!(charge.as_str().len(), 4 + 22);
        assert_eq!(EventId::generate().as_str().len(), 4 + 22);
        let cred = CredentialId::generate();
        assert!(cred.as_str().starts_with("cred_"));
        assert_eq!(cred.as_str().len(), 5 + 22);
    }

    #[test]
    fn the_body_is_the_uuid_v7_in_base62() {
        let id = ChargeId::generate();
        let value = base62::decode_u128(&id.as_str()[4..]).unwrap();
        let uuid = Uuid::from_u128(value);
        assert_eq!(uuid.get_version_num(), 7);
    }

    #[test]
    fn string_order_follows_creation_order() {
        // Thousands of ids made within the same few milliseconds: the UUIDv7 counter, not the
        // clock, must carry the order here, and the string form must keep it.
        let ids: Vec<ChargeId> = (0..5000).map(|_| ChargeId::generate()).collect();
        assert!(
            ids.windows(2).all(|w| w[0].as_str() < w[1].as_str()),
            "not strictly increasing"
        );
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
    }

    #[test]
    fn order_holds_across_milliseconds() {
        let first = EventId::generate();
        std::thread::sleep(std::time::Duration::from_millis(3));
        let second = EventId::generate();
        assert!(first < second);
    }

    #[test]
    fn parse_accepts_what_generate_makes() {
        let id = CredentialId::generate();
        assert_eq!(CredentialId::parse(id.as_str()).unwrap(), id);
        assert!(ChargeId::parse("chg_0000000000000000000000").is_ok());
        assert!(
            ChargeId::parse("chg_7n42DGM5Tflk9n8mt7Fhc7").is_ok(),
            "u128::MAX"
        );
    }

    #[test]
    fn parse_rejects_wrong_prefix_length_and_alphabet() {
        let body = &ChargeId::generate().as_str()[4..].to_owned();
        let cases = [
            format!("evt_{body}"),               // another type's prefix
            format!("CHG_{body}"),               // prefix case
            body.clone(),                        // no prefix
            format!("chg_{}", &body[..21]),      // one short
            format!("chg_{body}0"),              // one long
            format!("chg_{}-", &body[..21]),     // outside the alphabet
            format!("chg_{}é", &body[..20]),     // non-ASCII, 22 bytes
            "chg_7n42DGM5Tflk9n8mt7Fhc8".into(), // u128::MAX + 1: not a 128-bit value
            "chg_".into(),
            String::new(),
        ];
        for bad in cases {
            assert_eq!(
                ChargeId::parse(&bad),
                Err(DomainError::InvalidId {
                    kind: "charge id",
                    prefix: "chg_",
                    got: bad.clone()
                }),
                "{bad}"
            );
        }
        assert!(EventId::parse(&format!("chg_{body}")).is_err());
        assert!(CredentialId::parse(&format!("cre_{body}")).is_err());
    }

    #[test]
    fn error_message_says_what_an_id_looks_like() {
        assert_eq!(
            EventId::parse("evt_123").unwrap_err().to_string(),
            "event id must be \"evt_\" followed by 22 letters or digits (0-9, A-Z, a-z), as \
             returned by the API; got \"evt_123\""
        );
    }

    #[test]
    fn serde_goes_through_parse() {
        let id = ChargeId::generate();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ChargeId>(&json).unwrap(), id);
        let err = serde_json::from_str::<EventId>(&json).unwrap_err();
        assert!(err.to_string().starts_with("event id must be \"evt_\""));
    }
}
