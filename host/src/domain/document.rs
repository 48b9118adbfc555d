//! [`Document`]: a payer's Brazilian tax id, a CPF (person) or a CNPJ (company), check digits
//! verified. The alphanumeric CNPJ (in force from July 2026) is accepted alongside the numeric one.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::{DomainError, excerpt};

/// Which kind of tax id a [`Document`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentKind {
    /// Cadastro de Pessoas Físicas: 11 digits, for people.
    Cpf,
    /// Cadastro Nacional da Pessoa Jurídica: 12 digits or capital letters, then 2 digits.
    Cnpj,
}

impl DocumentKind {
    /// `"cpf"` or `"cnpj"`, as PSP APIs spell the type field.
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Cpf => "cpf",
            DocumentKind::Cnpj => "cnpj",
        }
    }
}

impl fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A CPF or CNPJ with valid check digits, stored without punctuation and with letters in
/// capitals: `52998224725`, `11222333000181`, `12ABC34501DE35`.
///
/// Serialises as that normalised string; deserialises through [`Document::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct Document {
    kind: DocumentKind,
    value: String,
}

/// Characters people write between the groups of a CPF or CNPJ (`529.982.247-25`,
/// `11.222.333/0001-81`); dropped before checking.
const PUNCTUATION: [char; 4] = ['.', '-', '/', ' '];

const CPF_LEN: usize = 11;
const CNPJ_LEN: usize = 14;

// Weights of the mod-11 check digits. A CPF's run 10..2 and 11..2; a CNPJ's restart at 9.
const CPF_WEIGHTS_1: [u32; 9] = [10, 9, 8, 7, 6, 5, 4, 3, 2];
const CPF_WEIGHTS_2: [u32; 10] = [11, 10, 9, 8, 7, 6, 5, 4, 3, 2];
const CNPJ_WEIGHTS_1: [u32; 12] = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
const CNPJ_WEIGHTS_2: [u32; 13] = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];

impl Document {
    /// Parses a CPF (11 digits) or CNPJ (14 characters), with or without the usual punctuation
    /// (`.`, `-`, `/`, spaces). CNPJ letters may be lowercase; they are stored in capitals.
    /// Rejects wrong check digits and the repeated-digit sequences (`000.000.000-00`, ...) that
    /// pass the check-digit arithmetic but are never issued.
    pub fn parse(input: &str) -> Result<Self, DomainError> {
        let mut value = String::with_capacity(CNPJ_LEN);
        for ch in input.chars().filter(|c| !PUNCTUATION.contains(c)) {
            if !ch.is_ascii_alphanumeric() {
                return Err(DomainError::DocumentCharacter {
                    got: excerpt(input),
                    ch,
                });
            }
            value.push(ch.to_ascii_uppercase());
        }

        let kind = match value.len() {
            CPF_LEN if value.bytes().all(|b| b.is_ascii_digit()) => DocumentKind::Cpf,
            CPF_LEN => {
                return Err(DomainError::CpfNotNumeric {
                    got: excerpt(input),
                });
            }
            CNPJ_LEN if value.bytes().skip(12).all(|b| b.is_ascii_digit()) => DocumentKind::Cnpj,
            CNPJ_LEN => {
                return Err(DomainError::CnpjCheckDigitsNotNumeric {
                    got: excerpt(input),
                });
            }
            len => {
                return Err(DomainError::DocumentLength {
                    got: excerpt(input),
                    len,
                });
            }
        };

        // Only digits can reach here repeated throughout: a CNPJ's last two are digits.
        let first = value.as_bytes()[0];
        if value.bytes().all(|b| b == first) {
            return Err(DomainError::DocumentRepeatedDigits {
                got: excerpt(input),
            });
        }

        let (weights_1, weights_2): (&[u32], &[u32]) = match kind {
            DocumentKind::Cpf => (&CPF_WEIGHTS_1, &CPF_WEIGHTS_2),
            DocumentKind::Cnpj => (&CNPJ_WEIGHTS_1, &CNPJ_WEIGHTS_2),
        };
        if !check_digits_match(&value, weights_1, weights_2) {
            return Err(DomainError::DocumentCheckDigits {
                got: excerpt(input),
            });
        }
        Ok(Document { kind, value })
    }

    /// Whether this is a CPF or a CNPJ.
    pub fn kind(&self) -> DocumentKind {
        self.kind
    }

    /// The normalised document: no punctuation, letters in capitals.
    pub fn as_str(&self) -> &str {
        &self.value
    }

    /// The document with its conventional punctuation, for receipts and screens:
    /// `529.982.247-25`, `11.222.333/0001-81`.
    pub fn formatted(&self) -> String {
        let v = &self.value;
        match self.kind {
            DocumentKind::Cpf => format!("{}.{}.{}-{}", &v[0..3], &v[3..6], &v[6..9], &v[9..11]),
            DocumentKind::Cnpj => format!(
                "{}.{}.{}/{}-{}",
                &v[0..2],
                &v[2..5],
                &v[5..8],
                &v[8..12],
                &v[12..14]
            ),
        }
    }
}

/// Whether the last two characters of `value` (ASCII, digits at the end) are the check digits of
/// the ones before, under the given weights.
///
/// One rule serves both documents: each character counts as its ASCII code minus 48 (so `0`-`9`
/// are 0-9 and the CNPJ's `A`-`Z` are 17-42), the weighted sum is taken mod 11, and the check
/// digit is 0 when the remainder is below 2, else 11 minus the remainder. The second check digit
/// covers the first.
fn check_digits_match(value: &str, weights_1: &[u32], weights_2: &[u32]) -> bool {
    let values: Vec<u32> = value.bytes().map(|b| u32::from(b) - 48).collect();
    let body = &values[..weights_1.len()];
    let dv1 = check_digit(body, weights_1);
    let dv2 = check_digit(&[body, &[dv1]].concat(), weights_2);
    values[weights_1.len()..] == [dv1, dv2]
}

/// The mod-11 check digit of `values` under `weights` (same length).
fn check_digit(values: &[u32], weights: &[u32]) -> u32 {
    let sum: u32 = values.iter().zip(weights).map(|(v, w)| v * w).sum();
    match sum % 11 {
        r if r < 2 => 0,
        r => 11 - r,
    }
}

impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

impl TryFrom<String> for Document {
    type Error = DomainError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Document::parse(&value)
    }
}

impl Serialize for Document {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test-only generator: appends check digits computed with this module's rule, to
    /// cross-check the hard-coded examples and to exercise many documents.
    fn with_check_digits(body: &str, w1: &[u32], w2: &[u32]) -> String {
        let values: Vec<u32> = body.bytes().map(|b| u32::from(b) - 48).collect();
        let dv1 = check_digit(&values, w1);
        let dv2 = check_digit(&[values.as_slice(), &[dv1]].concat(), w2);
        format!("{body}{dv1}{dv2}")
    }

    #[test]
    fn accepts_a_real_cpf_with_or_without_punctuation() {
        for input in ["529.982.247-25", "52998224725", " 529 982 247 25 "] {
            let doc = Document::parse(input).unwrap();
            assert_eq!(doc.kind(), DocumentKind::Cpf);
            assert_eq!(doc.as_str(), "52998224725");
            assert_eq!(doc.formatted(), "529.982.247-25");
        }
    }

    #[test]
    fn accepts_a_real_numeric_cnpj() {
        for input in ["11.222.333/0001-81", "11222333000181"] {
            let doc = Document::parse(input).unwrap();
            assert_eq!(doc.kind(), DocumentKind::Cnpj);
            assert_eq!(doc.as_str(), "11222333000181");
            assert_eq!(doc.formatted(), "11.222.333/0001-81");
        }
    }

    #[test]
    fn accepts_the_receita_federal_alphanumeric_cnpj_example_in_any_case() {
        for input in ["12.ABC.345/01DE-35", "12ABC34501DE35", "12.abc.345/01de-35"] {
            let doc = Document::parse(input).unwrap();
            assert_eq!(doc.kind(), DocumentKind::Cnpj);
            assert_eq!(doc.as_str(), "12ABC34501DE35");
            assert_eq!(doc.formatted(), "12.ABC.345/01DE-35");
        }
    }

    #[test]
    fn hard_coded_examples_agree_with_the_generator() {
        assert_eq!(
            with_check_digits("529982247", &CPF_WEIGHTS_1, &CPF_WEIGHTS_2),
            "52998224725"
        );
        assert_eq!(
            with_check_digits("112223330001", &CNPJ_WEIGHTS_1, &CNPJ_WEIGHTS_2),
            "11222333000181"
        );
        assert_eq!(
            with_check_digits("12ABC34501DE", &CNPJ_WEIGHTS_1, &CNPJ_WEIGHTS_2),
            "12ABC34501DE35"
        );
    }

    #[test]
    fn accepts_generated_documents_and_rejects_every_other_check_digit_pair() {
        for body in ["123456789", "000000001", "987654321", "390533447"] {
            let valid = with_check_digits(body, &CPF_WEIGHTS_1, &CPF_WEIGHTS_2);
            assert_eq!(Document::parse(&valid).unwrap().as_str(), valid);
            for dv in 0..100 {
                let candidate = format!("{body}{dv:02}");
                if candidate != valid {
                    assert_eq!(
                        Document::parse(&candidate),
                        Err(DomainError::DocumentCheckDigits {
                            got: candidate.clone()
                        })
                    );
                }
            }
        }
        for body in [
            "ZZZZZZZZZZZZ",
            "A00000000001",
            "123456780001",
            "9Y8X7W6V5U4T",
        ] {
            let valid = with_check_digits(body, &CNPJ_WEIGHTS_1, &CNPJ_WEIGHTS_2);
            assert_eq!(Document::parse(&valid).unwrap().kind(), DocumentKind::Cnpj);
            let wrong = format!(
                "{body}{:02}",
                (valid[12..].parse::<u32>().unwrap() + 1) % 100
            );
            assert!(matches!(
                Document::parse(&wrong),
                Err(DomainError::DocumentCheckDigits { .. })
            ));
        }
    }

    #[test]
    fn rejects_wrong_check_digits_quoting_the_input() {
        let err = Document::parse("529.982.247-26").unwrap_err();
        assert_eq!(
            err,
            DomainError::DocumentCheckDigits {
                got: "529.982.247-26".into()
            }
        );
        assert!(
            err.to_string()
                .contains("the check digits of \"529.982.247-26\" do not match")
        );
        assert_eq!(
            Document::parse("12.ABC.345/01DE-53").unwrap_err(),
            DomainError::DocumentCheckDigits {
                got: "12.ABC.345/01DE-53".into()
            }
        );
    }

    #[test]
    fn rejects_every_repeated_digit_sequence() {
        for d in '0'..='9' {
            let cpf: String = std::iter::repeat_n(d, 11).collect();
            assert_eq!(
                Document::parse(&cpf),
                Err(DomainError::DocumentRepeatedDigits { got: cpf.clone() })
            );
            let cnpj: String = std::iter::repeat_n(d, 14).collect();
            assert_eq!(
                Document::parse(&cnpj),
                Err(DomainError::DocumentRepeatedDigits { got: cnpj.clone() })
            );
        }
        assert!(Document::parse("000.000.000-00").is_err());
    }

    #[test]
    fn rejects_wrong_lengths_saying_how_many_characters_remained() {
        assert_eq!(
            Document::parse("529.982.247-2"),
            Err(DomainError::DocumentLength {
                got: "529.982.247-2".into(),
                len: 10
            })
        );
        assert_eq!(
            Document::parse(""),
            Err(DomainError::DocumentLength {
                got: "".into(),
                len: 0
            })
        );
        assert_eq!(
            Document::parse("123456789012"),
            Err(DomainError::DocumentLength {
                got: "123456789012".into(),
                len: 12
            })
        );
    }

    #[test]
    fn rejects_letters_where_only_digits_may_be() {
        assert_eq!(
            Document::parse("529.982.247-2A"),
            Err(DomainError::CpfNotNumeric {
                got: "529.982.247-2A".into()
            })
        );
        assert_eq!(
            Document::parse("12.ABC.345/01DE-3X"),
            Err(DomainError::CnpjCheckDigitsNotNumeric {
                got: "12.ABC.345/01DE-3X".into()
            })
        );
    }

    #[test]
    fn rejects_foreign_characters_naming_them() {
        let err = Document::parse("529_982_247_25").unwrap_err();
        assert_eq!(
            err,
            DomainError::DocumentCharacter {
                got: "529_982_247_25".into(),
                ch: '_'
            }
        );
        assert!(
            err.to_string()
                .contains("contains '_', which is not a digit")
        );
        assert!(matches!(
            Document::parse("12.ÁBC.345/01DE-35"),
            Err(DomainError::DocumentCharacter { ch: 'Á', .. })
        ));
    }

    #[test]
    fn serde_round_trips_the_normalised_form_and_refuses_invalid_input() {
        let doc: Document = serde_json::from_str("\"12.abc.345/01de-35\"").unwrap();
        assert_eq!(serde_json::to_string(&doc).unwrap(), "\"12ABC34501DE35\"");
        let err = serde_json::from_str::<Document>("\"111.111.111-11\"").unwrap_err();
        assert!(err.to_string().contains("repeats a single digit"));
        assert_eq!(
            serde_json::to_string(&DocumentKind::Cnpj).unwrap(),
            "\"cnpj\""
        );
    }

    #[test]
    fn displays_the_normalised_form() {
        assert_eq!(
            Document::parse("529.982.247-25").unwrap().to_string(),
            "52998224725"
        );
        assert_eq!(DocumentKind::Cpf.to_string(), "cpf");
    }
}
