//! Amounts: integer centavos inside, PSP spellings on the wire.
//!
//! Exact integer arithmetic only; floats never touch an amount. [`decimal_string`] and
//! [`parse_decimal`] handle the central bank's `"10.00"`; [`json_number`] and
//! [`from_json_number`] handle PSPs that send reais as JSON numbers (`10.5`).

use std::fmt;

/// An amount that is not a well-formed, representable number of reais.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoneyError(pub String);

impl fmt::Display for MoneyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a valid amount: {}", self.0)
    }
}

impl std::error::Error for MoneyError {}

/// `1050` → `"10.50"`: reais with exactly two decimals, as the central-bank API wants.
pub fn decimal_string(centavos: u64) -> String {
    format!("{}.{:02}", centavos / 100, centavos % 100)
}

/// `"10.50"`, `"10.5"` or `"10"` → `1050`. Rejects signs, exponents, spaces, empty parts and
/// more than two decimals (a sub-centavo amount is not money we can settle).
pub fn parse_decimal(text: &str) -> Result<u64, MoneyError> {
    let bad = || MoneyError(format!("{text:?}"));
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) if !f.is_empty() && f.len() <= 2 => (w, f),
        Some(_) => return Err(bad()),
        None => (text, ""),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(fraction.is_empty() || digits(fraction)) {
        return Err(bad());
    }
    let reais: u64 = whole.parse().map_err(|_| bad())?;
    let cents: u64 = format!("{fraction:0<2}").parse().map_err(|_| bad())?;
    reais
        .checked_mul(100)
        .and_then(|c| c.checked_add(cents))
        .ok_or_else(bad)
}

/// `1050` → the JSON number `10.5` (exact below 2^53 centavos, far beyond any real charge).
pub fn json_number(centavos: u64) -> serde_json::Number {
    if centavos.is_multiple_of(100) {
        return serde_json::Number::from(centavos / 100);
    }
    // The shortest decimal that round-trips is exactly the two-decimal text, so the JSON
    // written is `10.5`, never `10.499999…`.
    let value: f64 = decimal_string(centavos)
        .parse()
        .expect("a formatted decimal parses");
    serde_json::Number::from_f64(value).expect("finite")
}

/// The JSON number `10.5` (or a numeric string) → `1050`, exactly.
pub fn from_json_number(value: &serde_json::Value) -> Result<u64, MoneyError> {
    match value {
        serde_json::Value::Number(n) => parse_decimal(&n.to_string()),
        serde_json::Value::String(s) => parse_decimal(s),
        other => Err(MoneyError(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        for centavos in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            1050,
            123_456,
            999_999_999_999,
            u64::MAX,
        ] {
            assert_eq!(parse_decimal(&decimal_string(centavos)), Ok(centavos));
            if centavos < 1 << 53 {
                // JSON numbers are f64 at most PSPs: exact only below 2^53.
                let json = json!(json_number(centavos));
                assert_eq!(from_json_number(&json), Ok(centavos), "{centavos}");
            }
        }
        assert_eq!(decimal_string(1), "0.01");
        assert_eq!(decimal_string(1000), "10.00");
        assert_eq!(json!(json_number(1050)).to_string(), "10.5");
        assert_eq!(json!(json_number(1000)).to_string(), "10");
        assert_eq!(json!(json_number(1999)).to_string(), "19.99");
    }

    #[test]
    fn lenient_spellings() {
        assert_eq!(parse_decimal("10.5"), Ok(1050));
        assert_eq!(parse_decimal("10"), Ok(1000));
        assert_eq!(parse_decimal("007.07"), Ok(707));
        assert_eq!(from_json_number(&json!(0.1)), Ok(10));
        assert_eq!(from_json_number(&json!(19.99)), Ok(1999));
        assert_eq!(from_json_number(&json!("3.30")), Ok(330));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            ".",
            "10.",
            ".50",
            "10.001",
            "-1.00",
            "+1.00",
            "1e3",
            " 1.00",
            "1.00 ",
            "1,00",
            "1.0a",
            "18446744073709551616.00",
        ] {
            assert!(parse_decimal(bad).is_err(), "{bad:?}");
        }
        assert!(parse_decimal("184467440737095516.16").is_err(), "overflow");
        assert!(from_json_number(&json!(1e-7)).is_err());
        assert!(from_json_number(&json!(10.123)).is_err());
        assert!(from_json_number(&json!(-1)).is_err());
        assert!(from_json_number(&json!(null)).is_err());
    }
}
