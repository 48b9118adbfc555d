//! [`Amount`]: a charge amount in centavos, always within the range the gateway accepts.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::DomainError;

/// An amount of Brazilian reais, counted in centavos, between [`Amount::MIN`] (R$ 0.01) and
/// [`Amount::MAX`] (R$ 10,000,000.00).
///
/// Integer centavos end to end: no floating point ever touches money. Serialises as a JSON
/// integer (`1234`); deserialising rejects decimals, strings and out-of-range numbers with the
/// same message as [`Amount::from_centavos`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(u64);

impl Amount {
    /// R$ 0.01.
    pub const MIN: Amount = Amount(1);
    /// R$ 10,000,000.00, the most a single charge may ask for.
    pub const MAX: Amount = Amount(1_000_000_000);

    /// The amount of `centavos`, if it is within [`Amount::MIN`]..=[`Amount::MAX`].
    ///
    /// Takes `i64` because that is what JSON and SQL hand over; negatives are rejected here
    /// rather than wrapped by a cast.
    pub fn from_centavos(centavos: i64) -> Result<Self, DomainError> {
        u64::try_from(centavos)
            .ok()
            .filter(|c| (Self::MIN.0..=Self::MAX.0).contains(c))
            .map(Amount)
            .ok_or_else(|| DomainError::InvalidAmount {
                got: centavos.to_string(),
            })
    }

    /// An amount typed by a person in reais: `19,90`, `19.90`, `19`, `R$ 1.234,56` or
    /// `1,234.56`. With both separators the last one is the decimal mark; see below for one.
    /// At most two decimals: anything that could be read two ways is refused, not guessed.
    pub fn parse_reais(input: &str) -> Result<Self, DomainError> {
        let invalid = || DomainError::InvalidAmount {
            got: super::excerpt(input),
        };
        let text: String = input
            .trim()
            .trim_start_matches("R$")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if text.is_empty()
            || !text
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        {
            return Err(invalid());
        }
        let decimal_mark = match (text.rfind('.'), text.rfind(',')) {
            (Some(dot), Some(comma)) => Some(if dot > comma { '.' } else { ',' }),
            // A lone comma is the decimal mark, as Brazilians write it (so `19,999` is refused
            // rather than read as nineteen thousand); a lone dot is one when one or two
            // digits follow, and a thousands separator otherwise.
            (None, Some(_)) => (text.matches(',').count() == 1).then_some(','),
            (Some(dot), None) => {
                let after = text.len() - dot - 1;
                (text.matches('.').count() == 1 && (1..=2).contains(&after)).then_some('.')
            }
            (None, None) => None,
        };
        let (whole, cents) = match decimal_mark {
            Some(mark) => {
                let (w, c) = text.rsplit_once(mark).ok_or_else(invalid)?;
                if c.is_empty() || c.len() > 2 || c.contains(['.', ',']) {
                    return Err(invalid());
                }
                (w, format!("{c:0<2}"))
            }
            None => (text.as_str(), "00".to_owned()),
        };
        // What is left of the mark: digits, in groups of three when separated.
        let groups: Vec<&str> = whole.split(['.', ',']).collect();
        if groups[0].is_empty() && !whole.is_empty()
            || groups.len() > 1 && (groups[0].len() > 3 || groups[1..].iter().any(|g| g.len() != 3))
        {
            return Err(invalid());
        }
        let digits: String = groups.concat();
        let reais: i64 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| invalid())?
        };
        let cents: i64 = cents.parse().map_err(|_| invalid())?;
        let centavos = reais
            .checked_mul(100)
            .and_then(|r| r.checked_add(cents))
            .ok_or_else(invalid)?;
        Self::from_centavos(centavos)
    }

    /// The amount in centavos.
    pub fn centavos(self) -> u64 {
        self.0
    }

    /// The amount in reais with exactly two decimals and a dot, as the central-bank Pix API
    /// and BR Codes write it: `1234` centavos → `"12.34"`.
    pub fn to_decimal_string(self) -> String {
        format!("{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// For people and logs: `R$ 12.34`. Wire formats use [`Amount::centavos`] or
/// [`Amount::to_decimal_string`] explicitly.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "R$ {}", self.to_decimal_string())
    }
}

impl TryFrom<i64> for Amount {
    type Error = DomainError;

    fn try_from(centavos: i64) -> Result<Self, Self::Error> {
        Amount::from_centavos(centavos)
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AmountVisitor)
    }
}

/// Accepts any JSON number so that `10.50` (reais sent where centavos were expected, the usual
/// mistake) gets the amount message instead of serde's generic "invalid type".
struct AmountVisitor;

impl<'de> Visitor<'de> for AmountVisitor {
    type Value = Amount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer number of centavos")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Amount, E> {
        Amount::from_centavos(v).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Amount, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => Err(E::custom(DomainError::InvalidAmount { got: v.to_string() })),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Amount, E> {
        // `{:?}` keeps the decimal point (`1000.0`), so the message shows why it was refused.
        Err(E::custom(DomainError::InvalidAmount {
            got: format!("{v:?}"),
        }))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
        Err(E::custom(DomainError::InvalidAmount {
            got: format!("the string {:?}", super::excerpt(v)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reais_as_people_type_them() {
        let c = |s: &str| Amount::parse_reais(s).map(Amount::centavos);
        assert_eq!(c("19,90"), Ok(1990));
        assert_eq!(c("19.90"), Ok(1990));
        assert_eq!(c("19"), Ok(1900));
        assert_eq!(c("19,9"), Ok(1990));
        assert_eq!(c(" R$ 1.234,56 "), Ok(123_456));
        assert_eq!(c("1,234.56"), Ok(123_456));
        assert_eq!(
            c("1.234"),
            Ok(123_400),
            "a thousands separator, as in Brazil"
        );
        assert_eq!(c("1.234.567,00"), Ok(123_456_700));
        assert_eq!(c("0,01"), Ok(1));
        assert_eq!(c(",50"), Ok(50));
        for bad in [
            "",
            "abc",
            "19,999",
            "1.23.4",
            "12,34,56",
            "-5",
            "0",
            "0,00",
            "1e3",
            "19,",
            "10000000,01",
        ] {
            assert!(Amount::parse_reais(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn accepts_the_whole_range_and_nothing_outside_it() {
        assert_eq!(Amount::from_centavos(1).unwrap(), Amount::MIN);
        assert_eq!(Amount::from_centavos(1_000_000_000).unwrap(), Amount::MAX);
        assert_eq!(Amount::from_centavos(1234).unwrap().centavos(), 1234);
        for bad in [0, -1, 1_000_000_001, i64::MIN, i64::MAX] {
            assert_eq!(
                Amount::from_centavos(bad),
                Err(DomainError::InvalidAmount {
                    got: bad.to_string()
                })
            );
        }
    }

    #[test]
    fn error_message_states_the_range_it_enforces() {
        let err = Amount::from_centavos(0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "amount must be an integer number of centavos between 1 and 1000000000 \
             (R$ 10,000,000.00); got 0"
        );
        // The message spells the bounds out; keep it in step with the constants.
        assert!(err.to_string().contains(&format!(
            "between {} and {}",
            Amount::MIN.0,
            Amount::MAX.0
        )));
        assert!(err.to_string().contains("R$ 10,000,000.00"));
        assert_eq!(Amount::MAX.to_decimal_string(), "10000000.00");
    }

    #[test]
    fn decimal_string_always_has_two_decimals() {
        let dec = |c| Amount::from_centavos(c).unwrap().to_decimal_string();
        assert_eq!(dec(1), "0.01");
        assert_eq!(dec(10), "0.10");
        assert_eq!(dec(100), "1.00");
        assert_eq!(dec(1234), "12.34");
        assert_eq!(dec(1_000_000_000), "10000000.00");
    }

    #[test]
    fn displays_in_reais() {
        assert_eq!(Amount::from_centavos(1234).unwrap().to_string(), "R$ 12.34");
    }

    #[test]
    fn serialises_as_integer_centavos() {
        let amount = Amount::from_centavos(1050).unwrap();
        assert_eq!(serde_json::to_string(&amount).unwrap(), "1050");
        assert_eq!(serde_json::from_str::<Amount>("1050").unwrap(), amount);
    }

    #[test]
    fn deserialising_rejects_what_parsing_rejects_with_the_same_message() {
        let err = |json: &str| {
            serde_json::from_str::<Amount>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(err("0").starts_with(&Amount::from_centavos(0).unwrap_err().to_string()));
        assert!(err("-5").contains("; got -5"));
        assert!(err("18446744073709551615").contains("; got 18446744073709551615"));
        assert!(err("10.5").contains("; got 10.5"));
        assert!(err("1000.0").contains("; got 1000.0"));
        assert!(err("\"1000\"").contains("; got the string \"1000\""));
        assert!(err("null").contains("expected an integer number of centavos"));
    }

    #[test]
    fn orders_by_value() {
        assert!(Amount::MIN < Amount::MAX);
    }
}
