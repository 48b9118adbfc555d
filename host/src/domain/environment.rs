//! [`Environment`]: whether something belongs to the merchant's test or live world.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{DomainError, excerpt};

/// `test` (PSP sandboxes, no real money) or `live`. Part of every API key and credential, so the
/// two worlds never mix.
///
/// Serialises as `"test"` / `"live"`; deserialises through [`FromStr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Environment {
    /// Sandboxes only; no real money moves.
    Test,
    /// Production: real charges, real money.
    Live,
}

impl Environment {
    /// `"test"` or `"live"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Test => "test",
            Environment::Live => "live",
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exactly `test` or `live`, lowercase, as the API writes them.
impl FromStr for Environment {
    type Err = DomainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "test" => Ok(Environment::Test),
            "live" => Ok(Environment::Live),
            other => Err(DomainError::InvalidEnvironment {
                got: excerpt(other),
            }),
        }
    }
}

impl TryFrom<String> for Environment {
    type Error = DomainError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_the_two_names() {
        for env in [Environment::Test, Environment::Live] {
            assert_eq!(env.as_str().parse::<Environment>().unwrap(), env);
            assert_eq!(env.to_string(), env.as_str());
        }
        assert_eq!("live".parse::<Environment>().unwrap(), Environment::Live);
    }

    #[test]
    fn rejects_anything_else_with_the_accepted_values() {
        let err = "LIVE".parse::<Environment>().unwrap_err();
        assert_eq!(err, DomainError::InvalidEnvironment { got: "LIVE".into() });
        assert_eq!(
            err.to_string(),
            "environment must be \"test\" or \"live\" (lowercase); got \"LIVE\""
        );
        assert!("production".parse::<Environment>().is_err());
        assert!("".parse::<Environment>().is_err());
    }

    #[test]
    fn serde_uses_lowercase_names() {
        assert_eq!(
            serde_json::to_string(&Environment::Test).unwrap(),
            "\"test\""
        );
        assert_eq!(
            serde_json::to_string(&Environment::Live).unwrap(),
            "\"live\""
        );
        assert_eq!(
            serde_json::from_str::<Environment>("\"live\"").unwrap(),
            Environment::Live
        );
        let err = serde_json::from_str::<Environment>("\"prod\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("environment must be \"test\" or \"live\"")
        );
    }
}
