//! [`Reference`]: the id the gateway chooses for a charge and sends to the PSP (the central-bank
//! API's `txid`, Stripe's idempotency key, OpenPix's `correlationID`, ...).

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::{DomainError, base62, excerpt};

/// 26 to 35 ASCII letters and digits: the intersection of what every PSP accepts (the
/// central-bank Pix API's `txid` is `[a-zA-Z0-9]{26,35}`).
///
/// The gateway makes them with [`Reference::generate`]; [`Reference::parse`] reads them back
/// from storage and PSP callbacks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Reference(String);

impl Reference {
    /// Shortest reference accepted.
    pub const MIN_LEN: usize = 26;
    /// Longest reference accepted.
    pub const MAX_LEN: usize = 35;
    /// Length of generated references, inside every PSP's limit.
    const GENERATED_LEN: usize = 32;

    /// A fresh reference of 32 base62 characters: a UUIDv7 (creation time, then random bits),
    /// written as the public ids write it, then 10 characters from the operating system's
    /// CSPRNG; over 130 random bits in all, so two never collide.
    ///
    /// Time first because every reference is a key of unique indexes (charges, charge attempts):
    /// random keys put each new charge's entry on a page of its own, and each such page is
    /// written again (SQLite's WAL frames, PostgreSQL's full-page images); references made one
    /// after another land on the same page.
    pub fn generate() -> Self {
        let mut reference = base62::encode_u128(uuid::Uuid::now_v7().as_u128());
        reference.push_str(&base62::random(Self::GENERATED_LEN - reference.len()));
        Reference(reference)
    }

    /// Checks that `input` is 26 to 35 ASCII letters or digits.
    pub fn parse(input: &str) -> Result<Self, DomainError> {
        if let Some(ch) = input.chars().find(|c| !c.is_ascii_alphanumeric()) {
            return Err(DomainError::ReferenceCharacter {
                got: excerpt(input),
                ch,
            });
        }
        let len = input.len();
        if !(Self::MIN_LEN..=Self::MAX_LEN).contains(&len) {
            return Err(DomainError::ReferenceLength {
                got: excerpt(input),
                len,
            });
        }
        Ok(Reference(input.to_owned()))
    }

    /// The reference as sent to the PSP.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Reference {
    type Err = DomainError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Reference::parse(input)
    }
}

impl TryFrom<String> for Reference {
    type Error = DomainError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Reference::parse(&value)
    }
}

impl Serialize for Reference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_references_are_32_base62_characters_and_parse_back() {
        let r = Reference::generate();
        assert_eq!(r.as_str().len(), 32);
        assert!(r.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(Reference::parse(r.as_str()).unwrap(), r);
    }

    #[test]
    fn generated_references_do_not_repeat_and_use_the_whole_alphabet() {
        let refs: Vec<Reference> = (0..200).map(|_| Reference::generate()).collect();
        let unique: std::collections::HashSet<_> = refs.iter().collect();
        assert_eq!(unique.len(), refs.len());
        // 6,400 draws from 62 symbols: each class shows up, so this is not hex or one case only.
        let all: String = refs.iter().map(Reference::as_str).collect();
        assert!(all.bytes().any(|b| b.is_ascii_digit()));
        assert!(all.bytes().any(|b| b.is_ascii_uppercase()));
        assert!(all.bytes().any(|b| b.is_ascii_lowercase() && b > b'f'));
    }

    #[test]
    fn generated_references_sort_by_creation() {
        // Made within a few milliseconds: the UUIDv7's counter carries the order.
        let refs: Vec<Reference> = (0..2000).map(|_| Reference::generate()).collect();
        assert!(
            refs.windows(2).all(|w| w[0] < w[1]),
            "not strictly increasing"
        );
    }

    #[test]
    fn accepts_26_to_35_characters_only() {
        assert!(Reference::parse(&"a".repeat(26)).is_ok());
        assert!(Reference::parse(&"Z9".repeat(17)).is_ok());
        assert!(Reference::parse(&"0".repeat(35)).is_ok());
        assert_eq!(
            Reference::parse(&"a".repeat(25)),
            Err(DomainError::ReferenceLength {
                got: "a".repeat(25),
                len: 25
            })
        );
        assert_eq!(
            Reference::parse(&"a".repeat(36)),
            Err(DomainError::ReferenceLength {
                got: "a".repeat(36),
                len: 36
            })
        );
        assert_eq!(
            Reference::parse(""),
            Err(DomainError::ReferenceLength {
                got: "".into(),
                len: 0
            })
        );
    }

    #[test]
    fn rejects_characters_outside_letters_and_digits_naming_them() {
        let input = format!("{}-{}", "a".repeat(15), "b".repeat(15));
        let err = Reference::parse(&input).unwrap_err();
        assert_eq!(
            err,
            DomainError::ReferenceCharacter {
                got: input.clone(),
                ch: '-'
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "reference must be 26 to 35 letters or digits (A-Z, a-z, 0-9); \"{input}\" \
                 contains '-'"
            )
        );
        assert!(matches!(
            Reference::parse(&format!("{}ç", "a".repeat(30))),
            Err(DomainError::ReferenceCharacter { ch: 'ç', .. })
        ));
    }

    #[test]
    fn serde_goes_through_parse() {
        let r = Reference::generate();
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, format!("\"{r}\""));
        assert_eq!(serde_json::from_str::<Reference>(&json).unwrap(), r);
        assert!(serde_json::from_str::<Reference>("\"short\"").is_err());
    }
}
