//! [`Email`]: a payer's e-mail address, checked for the shape every PSP insists on.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::{DomainError, excerpt};

/// An e-mail address: at most 254 characters, one `@`, something before it, and a dotted domain
/// after it, with no spaces anywhere.
///
/// Deliberately not full RFC 5322 (which allows quoted spaces and bare IP domains no PSP accepts);
/// the address is stored as given, only trimmed, because the local part may be case-sensitive.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct Email(String);

/// The longest address SMTP can carry (RFC 5321: a 256-octet path minus the angle brackets).
const MAX_CHARS: usize = 254;

impl Email {
    /// Parses an address, trimming surrounding whitespace.
    pub fn parse(input: &str) -> Result<Self, DomainError> {
        let email = input.trim();
        if email.is_empty() {
            return Err(DomainError::EmailEmpty);
        }
        let len = email.chars().count();
        if len > MAX_CHARS {
            return Err(DomainError::EmailTooLong { len });
        }
        if email.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(DomainError::EmailWhitespace {
                got: excerpt(email),
            });
        }
        let count = email.matches('@').count();
        let Some((local, domain)) = email.split_once('@').filter(|_| count == 1) else {
            return Err(DomainError::EmailAtSign {
                got: excerpt(email),
                count,
            });
        };
        if local.is_empty() {
            return Err(DomainError::EmailLocalPartEmpty {
                got: excerpt(email),
            });
        }
        // At least two labels, none empty: rejects `example`, `.com`, `example.`, `a..com`.
        let labels: Vec<&str> = domain.split('.').collect();
        if labels.len() < 2 || labels.iter().any(|label| label.is_empty()) {
            return Err(DomainError::EmailDomain {
                got: excerpt(email),
            });
        }
        Ok(Email(email.to_owned()))
    }

    /// The address, trimmed, otherwise as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Email {
    type Error = DomainError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Email::parse(&value)
    }
}

impl Serialize for Email {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_addresses_and_keeps_them_as_given() {
        for (input, stored) in [
            ("fulano@example.com", "fulano@example.com"),
            (
                "  Fulano.Tal+pix@Mail.Example.com.br\n",
                "Fulano.Tal+pix@Mail.Example.com.br",
            ),
            ("a@b.co", "a@b.co"),
        ] {
            assert_eq!(Email::parse(input).unwrap().as_str(), stored);
        }
    }

    #[test]
    fn accepts_exactly_254_characters_and_not_255() {
        let at_limit = format!("{}@example.com", "a".repeat(MAX_CHARS - 12));
        assert_eq!(at_limit.len(), 254);
        assert!(Email::parse(&at_limit).is_ok());
        let over = format!("a{at_limit}");
        assert_eq!(
            Email::parse(&over),
            Err(DomainError::EmailTooLong { len: 255 })
        );
    }

    #[test]
    fn rejects_each_malformation_with_its_own_message() {
        assert_eq!(Email::parse("   "), Err(DomainError::EmailEmpty));
        assert_eq!(
            Email::parse("fulano.example.com"),
            Err(DomainError::EmailAtSign {
                got: "fulano.example.com".into(),
                count: 0
            })
        );
        assert_eq!(
            Email::parse("a@b@example.com"),
            Err(DomainError::EmailAtSign {
                got: "a@b@example.com".into(),
                count: 2
            })
        );
        assert_eq!(
            Email::parse("@example.com"),
            Err(DomainError::EmailLocalPartEmpty {
                got: "@example.com".into()
            })
        );
        for bad in ["a@example", "a@", "a@.com", "a@example.", "a@example..com"] {
            assert_eq!(
                Email::parse(bad),
                Err(DomainError::EmailDomain { got: bad.into() })
            );
        }
        for bad in [
            "a@exa mple.com",
            "fu lano@example.com",
            "a@example.com\u{0}",
        ] {
            assert_eq!(
                Email::parse(bad),
                Err(DomainError::EmailWhitespace { got: bad.into() })
            );
        }
    }

    #[test]
    fn messages_name_the_problem() {
        assert_eq!(
            Email::parse("a@b@example.com").unwrap_err().to_string(),
            "payer.email must be an e-mail address like name@example.com; \"a@b@example.com\" \
             has 2 '@' signs and must have exactly one"
        );
        assert_eq!(
            Email::parse("a@example").unwrap_err().to_string(),
            "payer.email must be an e-mail address like name@example.com; the domain after the \
             '@' in \"a@example\" must be dot-separated names such as example.com"
        );
    }

    #[test]
    fn serde_goes_through_parse() {
        let email: Email = serde_json::from_str("\" a@b.co \"").unwrap();
        assert_eq!(email.to_string(), "a@b.co");
        assert_eq!(serde_json::to_string(&email).unwrap(), "\"a@b.co\"");
        assert!(serde_json::from_str::<Email>("\"nope\"").is_err());
    }
}
