//! [`BrCode`]: a Pix copy-and-paste code ("Pix copia e cola"), and [`crc16`], its checksum.
//!
//! A BR Code is an EMV merchant-presented QR payload: a run of fields, each a two-digit id, a
//! two-digit length and that many characters of value; some values (26, 62) are runs of
//! sub-fields in the same format. The last field, `63`, holds a CRC-16/CCITT-FALSE of everything
//! before its value. PSPs hand these codes to the gateway; parsing them here means a payer is
//! never shown a code their bank app would refuse.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize, Serializer};

use super::DomainError;

/// A structurally valid Pix BR Code with a correct CRC.
///
/// Required: `00` = `01` (first), `26` with sub-field `00` = `br.gov.bcb.pix` (any case) and a
/// Pix key (`01`, static codes) or a location URL (`25`, dynamic codes), `52`, `53` = `986`,
/// `58` = `BR`, `59` merchant name, `60` merchant city, `63` CRC (last). Optional and checked
/// when present: `01` = `11`/`12`, `54` amount, `62` with sub-field `05` txid. Other fields are
/// allowed and kept. Name and city lengths are not capped at the EMV's 25/15 characters, because
/// bank apps pay codes that exceed them and refusing a PSP's code would fail the charge.
///
/// Serialises as the code; deserialises through [`BrCode::parse`].
#[derive(Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct BrCode {
    raw: String,
    // Where each value sits in `raw`; `raw` is ASCII, so byte ranges are character ranges.
    key: Option<Range<usize>>,
    location: Option<Range<usize>>,
    merchant_name: Range<usize>,
    merchant_city: Range<usize>,
    txid: Option<Range<usize>>,
    amount_centavos: Option<u64>,
}

/// Longest code accepted. EMV allows more, but no Pix code comes near this, and the bound keeps
/// junk input cheap.
const MAX_LEN: usize = 512;
/// Field 00 (payload format indicator) with its only value, `01`.
const HEADER: &str = "000201";
/// Id and length of the CRC field, part of what the CRC covers.
const CRC_TAG: &str = "6304";
/// The globally unique identifier of the Pix arrangement, in field 26 sub-field 00.
const PIX_GUI: &str = "br.gov.bcb.pix";

/// CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR.
/// Check value: `crc16(b"123456789") == 0x29B1`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0xFFFF_u16, |crc, &byte| {
        (0..8).fold(crc ^ (u16::from(byte) << 8), |crc, _| {
            if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            }
        })
    })
}

impl BrCode {
    /// Parses and verifies a BR Code. Surrounding whitespace (a trailing newline from a copy) is
    /// trimmed; anything else must be exactly as issued.
    ///
    /// The CRC is checked before the structure, so a code altered anywhere before its CRC field
    /// is reported as altered, rather than as whatever structural error the change happens to
    /// cause.
    pub fn parse(input: &str) -> Result<Self, DomainError> {
        let raw = check_envelope(input)?;
        let top = Fields::parse(raw, 0..raw.len(), None)?;
        // The CRC field must be the last top-level field, not text swallowed by another field.
        if !top
            .list
            .last()
            .is_some_and(|f| f.id == "63" && f.end() == raw.len())
        {
            return Err(missing(None, "63"));
        }

        if let Some(f) = top.get("01") {
            top.check(
                f,
                matches!(f.value, "11" | "12"),
                "11 (static) or 12 (dynamic)",
            )?;
        }

        let account = top.template(top.require("26")?)?;
        let gui = account.require("00")?;
        account.check(gui, gui.value.eq_ignore_ascii_case(PIX_GUI), PIX_GUI)?;
        let key = account.get("01").map(Field::range);
        let location = account.get("25").map(Field::range);
        if key.is_none() && location.is_none() {
            return Err(DomainError::BrCodeMissingField {
                field: "field 26 sub-field 01 (Pix key) or 25 (location URL)".to_owned(),
            });
        }

        let mcc = top.require("52")?;
        let mcc_ok = mcc.value.len() == 4 && mcc.value.bytes().all(|b| b.is_ascii_digit());
        top.check(mcc, mcc_ok, "4 digits (0000 or a merchant category code)")?;

        let currency = top.require("53")?;
        top.check(currency, currency.value == "986", "986 (Brazilian real)")?;

        let amount_centavos = match top.get("54") {
            Some(f) => {
                let centavos = parse_amount(f.value);
                top.check(
                    f,
                    centavos.is_some(),
                    "a number of reais such as 10, 10.5 or 123.45",
                )?;
                centavos
            }
            None => None,
        };

        let country = top.require("58")?;
        top.check(country, country.value == "BR", "BR")?;

        let merchant_name = top.require("59")?.range();
        let merchant_city = top.require("60")?.range();

        let txid = match top.get("62") {
            Some(data) => top.template(data)?.get("05").map(Field::range),
            None => None,
        };

        Ok(BrCode {
            raw: raw.to_owned(),
            key,
            location,
            merchant_name,
            merchant_city,
            txid,
            amount_centavos,
        })
    }

    /// The code, as the payer pastes it into their bank app.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The amount in field 54, in centavos; `None` when the payer chooses the amount.
    pub fn amount_centavos(&self) -> Option<u64> {
        self.amount_centavos
    }

    /// Field 62 sub-field 05, verbatim; `***` is the conventional "no txid" of static codes.
    pub fn txid(&self) -> Option<&str> {
        self.txid.clone().map(|r| &self.raw[r])
    }

    /// The location URL (without scheme) of a dynamic code: field 26 sub-field 25.
    pub fn location(&self) -> Option<&str> {
        self.location.clone().map(|r| &self.raw[r])
    }

    /// The Pix key of a static code: field 26 sub-field 01.
    pub fn key(&self) -> Option<&str> {
        self.key.clone().map(|r| &self.raw[r])
    }

    /// Field 59.
    pub fn merchant_name(&self) -> &str {
        &self.raw[self.merchant_name.clone()]
    }

    /// Field 60.
    pub fn merchant_city(&self) -> &str {
        &self.raw[self.merchant_city.clone()]
    }
}

/// The checks on the code as a whole, before its fields are read: not empty, printable ASCII, at
/// most 512 characters, a correct CRC, and the `000201` header. Returns the trimmed code.
fn check_envelope(input: &str) -> Result<&str, DomainError> {
    let raw = input.trim_matches(|c: char| c.is_ascii_whitespace());
    if raw.is_empty() {
        return Err(DomainError::BrCodeEmpty);
    }
    if let Some((offset, ch)) = raw.char_indices().find(|&(_, c)| !(' '..='~').contains(&c)) {
        return Err(DomainError::BrCodeCharacter { offset, ch });
    }
    // From here `raw` is printable ASCII: every index is a character boundary.
    if raw.len() > MAX_LEN {
        return Err(DomainError::BrCodeTooLong { len: raw.len() });
    }
    check_crc(raw)?;
    if !raw.starts_with(HEADER) {
        let got = &raw[..raw.len().min(HEADER.len())];
        return Err(DomainError::BrCodeHeader {
            got: got.to_owned(),
        });
    }
    Ok(raw)
}

/// Checks that `raw` (ASCII) ends with `6304` and four hex digits equal to the CRC of everything
/// before them.
fn check_crc(raw: &str) -> Result<(), DomainError> {
    let (content, stated) = raw.split_at(raw.len().saturating_sub(4));
    let well_formed = content.ends_with(CRC_TAG)
        && stated.len() == 4
        && stated.bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed {
        let tail = &raw[raw.len().saturating_sub(8)..];
        return Err(DomainError::BrCodeNoCrc {
            tail: tail.to_owned(),
        });
    }
    let computed = format!("{:04X}", crc16(content.as_bytes()));
    if !stated.eq_ignore_ascii_case(&computed) {
        return Err(DomainError::BrCodeCrcMismatch {
            stated: stated.to_owned(),
            computed,
        });
    }
    Ok(())
}

/// One TLV field of the code.
struct Field<'a> {
    id: &'a str,
    value: &'a str,
    /// Where `value` starts in the whole code.
    offset: usize,
}

impl Field<'_> {
    fn end(&self) -> usize {
        self.offset + self.value.len()
    }

    fn range(&self) -> Range<usize> {
        self.offset..self.end()
    }
}

/// A run of fields: the top level of a code, or the sub-fields of one of its templates.
struct Fields<'a> {
    raw: &'a str,
    /// The enclosing field's id for sub-fields, so errors can say `field 26 sub-field 25`.
    parent: Option<&'a str>,
    list: Vec<Field<'a>>,
}

impl<'a> Fields<'a> {
    /// Splits `raw[span]` into fields. Offsets in errors count from the start of the code.
    fn parse(
        raw: &'a str,
        span: Range<usize>,
        parent: Option<&'a str>,
    ) -> Result<Self, DomainError> {
        let mut fields = Fields {
            raw,
            parent,
            list: Vec::new(),
        };
        let mut offset = span.start;
        while offset < span.end {
            let remaining = span.end - offset;
            if remaining < 4 {
                return Err(DomainError::BrCodeTruncated { offset, remaining });
            }
            let head = &raw[offset..offset + 4];
            if !head.bytes().all(|b| b.is_ascii_digit()) {
                return Err(DomainError::BrCodeFieldHeader {
                    offset,
                    got: head.to_owned(),
                });
            }
            let (id, len) = head.split_at(2);
            // Two ASCII digits: always parses.
            let len: usize = len.parse().unwrap_or_default();
            let start = offset + 4;
            if len > span.end - start {
                return Err(DomainError::BrCodeOverrun {
                    field: describe(parent, id),
                    offset,
                    len,
                    remaining: span.end - start,
                });
            }
            let field = Field {
                id,
                value: &raw[start..start + len],
                offset: start,
            };
            if len == 0 {
                return Err(fields.invalid(&field, "1 to 99 characters long"));
            }
            if fields.get(id).is_some() {
                return Err(DomainError::BrCodeDuplicateField {
                    field: describe(parent, id),
                    offset,
                });
            }
            fields.list.push(field);
            offset = start + len;
        }
        Ok(fields)
    }

    fn get(&self, id: &str) -> Option<&Field<'a>> {
        self.list.iter().find(|f| f.id == id)
    }

    fn require(&self, id: &str) -> Result<&Field<'a>, DomainError> {
        self.get(id).ok_or_else(|| missing(self.parent, id))
    }

    /// The sub-fields of template field `field` (26, 62).
    fn template(&self, field: &Field<'a>) -> Result<Fields<'a>, DomainError> {
        Fields::parse(self.raw, field.range(), Some(field.id))
    }

    /// `Ok` if `valid`, else an error saying `field` must be `expected`.
    fn check(
        &self,
        field: &Field<'a>,
        valid: bool,
        expected: &'static str,
    ) -> Result<(), DomainError> {
        if valid {
            Ok(())
        } else {
            Err(self.invalid(field, expected))
        }
    }

    fn invalid(&self, field: &Field<'a>, expected: &'static str) -> DomainError {
        DomainError::BrCodeFieldValue {
            field: describe(self.parent, field.id),
            expected,
            got: field.value.to_owned(),
        }
    }
}

/// How errors name a field: `field 59 (merchant name)`, `field 26 sub-field 25 (location URL)`.
fn describe(parent: Option<&str>, id: &str) -> String {
    let name = match (parent, id) {
        (None, "00") => "payload format indicator",
        (None, "01") => "point of initiation method",
        (None, "26") => "merchant account information",
        (None, "52") => "merchant category code",
        (None, "53") => "transaction currency",
        (None, "54") => "transaction amount",
        (None, "58") => "country code",
        (None, "59") => "merchant name",
        (None, "60") => "merchant city",
        (None, "62") => "additional data",
        (None, "63") => "CRC",
        (Some("26"), "00") => "GUI",
        (Some("26"), "01") => "Pix key",
        (Some("26"), "25") => "location URL",
        (Some("62"), "05") => "txid",
        _ => "",
    };
    let place = match parent {
        Some(parent) => format!("field {parent} sub-field {id}"),
        None => format!("field {id}"),
    };
    if name.is_empty() {
        place
    } else {
        format!("{place} ({name})")
    }
}

fn missing(parent: Option<&str>, id: &str) -> DomainError {
    DomainError::BrCodeMissingField {
        field: describe(parent, id),
    }
}

/// Centavos in a field-54 amount: digits, optionally a dot and one or two decimals (`10`,
/// `10.5`, `10.50`). `None` for anything else, or for a value beyond `u64` centavos.
fn parse_amount(s: &str) -> Option<u64> {
    let (reais, decimals) = s.split_once('.').unwrap_or((s, "0"));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(reais) || !digits(decimals) || decimals.len() > 2 {
        return None;
    }
    let cents: u64 = format!("{decimals:0<2}").parse().ok()?;
    reais
        .parse::<u64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(cents)
}

impl fmt::Display for BrCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl fmt::Debug for BrCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BrCode").field(&self.raw).finish()
    }
}

impl TryFrom<String> for BrCode {
    type Error = DomainError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        BrCode::parse(&value)
    }
}

impl Serialize for BrCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The static example of the central bank's BR Code manual (*Manual de Padrões para
    /// Iniciação do Pix*, bcb.gov.br) and a dynamic code in the manual's layout, each with its CRC.
    const STATIC: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";
    const DYNAMIC: &str = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB";

    /// One field: id, two-digit length, value.
    fn tlv(id: &str, value: &str) -> String {
        format!("{id}{:02}{value}", value.len())
    }

    /// `body` followed by the CRC field computed over it, as an issuer would write it.
    fn with_crc(body: &str) -> String {
        let content = format!("{body}{CRC_TAG}");
        format!("{content}{:04X}", crc16(content.as_bytes()))
    }

    /// A dynamic code with an amount and a txid, every field given, in order.
    fn dynamic_with(amount: Option<&str>) -> String {
        let account = tlv("00", "br.gov.bcb.pix") + &tlv("25", "psp.example.com/v2/cobv/9d36b84f");
        let mut body = format!(
            "{HEADER}{}{}{}{}",
            tlv("01", "12"),
            tlv("26", &account),
            tlv("52", "0000"),
            tlv("53", "986")
        );
        if let Some(amount) = amount {
            body += &tlv("54", amount);
        }
        body += &(tlv("58", "BR") + &tlv("59", "LOJA EXEMPLO") + &tlv("60", "RECIFE"));
        body += &tlv("62", &tlv("05", "Pgw7Xk2QmZ9aB3cD4eF5gH6iJ7kL8mN"));
        with_crc(&body)
    }

    #[test]
    fn crc16_matches_the_ccitt_false_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29B1);
        assert_eq!(crc16(b""), 0xFFFF);
    }

    #[test]
    fn the_manuals_static_example_parses() {
        let code = BrCode::parse(STATIC).unwrap();
        assert_eq!(code.as_str(), STATIC);
        assert_eq!(code.key(), Some("123e4567-e12b-12d1-a456-426655440000"));
        assert_eq!(code.location(), None);
        assert_eq!(code.merchant_name(), "Fulano de Tal");
        assert_eq!(code.merchant_city(), "BRASILIA");
        assert_eq!(code.txid(), Some("***"));
        assert_eq!(code.amount_centavos(), None);
    }

    #[test]
    fn a_dynamic_example_parses() {
        let code = BrCode::parse(DYNAMIC).unwrap();
        assert_eq!(code.key(), None);
        assert_eq!(
            code.location(),
            Some("pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a99")
        );
        assert_eq!(code.merchant_name(), "EMPRESA");
        assert_eq!(code.merchant_city(), "SAO PAULO");
        assert_eq!(code.txid(), Some("***"));
        assert_eq!(code.amount_centavos(), None);
    }

    #[test]
    fn examples_carry_the_crc_our_function_computes() {
        for code in [STATIC, DYNAMIC] {
            let (content, crc) = code.split_at(code.len() - 4);
            assert_eq!(format!("{:04X}", crc16(content.as_bytes())), crc);
        }
    }

    #[test]
    fn amount_and_txid_are_read() {
        let code = BrCode::parse(&dynamic_with(Some("123.45"))).unwrap();
        assert_eq!(code.amount_centavos(), Some(12345));
        assert_eq!(code.txid(), Some("Pgw7Xk2QmZ9aB3cD4eF5gH6iJ7kL8mN"));
        assert_eq!(code.location(), Some("psp.example.com/v2/cobv/9d36b84f"));
        assert_eq!(code.merchant_name(), "LOJA EXEMPLO");
    }

    #[test]
    fn amounts_may_have_zero_one_or_two_decimals() {
        for (amount, centavos) in [
            ("10", 1000),
            ("10.5", 1050),
            ("10.50", 1050),
            ("0.01", 1),
            ("10000000.00", 1_000_000_000),
        ] {
            let code = BrCode::parse(&dynamic_with(Some(amount))).unwrap();
            assert_eq!(code.amount_centavos(), Some(centavos), "{amount}");
        }
    }

    #[test]
    fn malformed_amounts_are_refused_naming_the_field() {
        for amount in [
            "10.",
            ".50",
            "10.505",
            "10,50",
            "-1",
            "1e3",
            "R$10",
            "99999999999999999999",
        ] {
            assert_eq!(
                BrCode::parse(&dynamic_with(Some(amount))),
                Err(DomainError::BrCodeFieldValue {
                    field: "field 54 (transaction amount)".into(),
                    expected: "a number of reais such as 10, 10.5 or 123.45",
                    got: amount.into(),
                }),
                "{amount}"
            );
        }
    }

    #[test]
    fn lowercase_crc_digits_are_accepted() {
        let lower = STATIC.replace("63041D3D", "63041d3d");
        assert_eq!(BrCode::parse(&lower).unwrap().as_str(), lower);
    }

    #[test]
    fn surrounding_whitespace_is_trimmed() {
        assert_eq!(
            BrCode::parse(&format!("  {STATIC}\r\n")).unwrap().as_str(),
            STATIC
        );
    }

    #[test]
    fn a_wrong_crc_names_both_values() {
        let bad = STATIC.replace("63041D3D", "6304ABCD");
        let err = BrCode::parse(&bad).unwrap_err();
        assert_eq!(
            err,
            DomainError::BrCodeCrcMismatch {
                stated: "ABCD".into(),
                computed: "1D3D".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "the BR Code's CRC is ABCD but its content gives 1D3D; the code was changed or copied \
             incompletely, so copy it again from its source"
        );
    }

    #[test]
    fn corrupting_any_character_fails() {
        for original in [STATIC, DYNAMIC] {
            let stated = &original[original.len() - 4..];
            for i in 0..original.len() {
                let mut bytes = original.as_bytes().to_vec();
                bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
                let corrupted = String::from_utf8(bytes).unwrap();
                let result = BrCode::parse(&corrupted);
                if i < original.len() - 8 {
                    // Anything the CRC covers, except its own tag: reported as a CRC mismatch.
                    let computed = format!(
                        "{:04X}",
                        crc16(&corrupted.as_bytes()[..corrupted.len() - 4])
                    );
                    assert_eq!(
                        result,
                        Err(DomainError::BrCodeCrcMismatch {
                            stated: stated.into(),
                            computed
                        }),
                        "byte {i}"
                    );
                } else {
                    assert!(result.is_err(), "byte {i} of the CRC field");
                }
            }
        }
    }

    #[test]
    fn a_missing_or_cut_crc_field_is_reported_as_such() {
        let cut = &STATIC[..STATIC.len() - 2];
        assert_eq!(
            BrCode::parse(cut),
            Err(DomainError::BrCodeNoCrc {
                tail: "**63041D".into()
            })
        );
        assert!(
            BrCode::parse(cut)
                .unwrap_err()
                .to_string()
                .contains("it may have been cut off")
        );
        assert!(matches!(
            BrCode::parse("6304"),
            Err(DomainError::BrCodeNoCrc { .. })
        ));
        assert!(matches!(
            BrCode::parse(&STATIC.replace("63041D3D", "6304XYZW")),
            Err(DomainError::BrCodeNoCrc { .. })
        ));
    }

    #[test]
    fn a_truncated_field_header_fails_with_its_offset() {
        // Field 99 claims 8 characters and swallows `6304` and half the CRC, leaving 2 behind.
        let code = with_crc(&format!("{HEADER}9908ab"));
        assert_eq!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeTruncated {
                offset: code.len() - 2,
                remaining: 2
            })
        );
        assert!(
            BrCode::parse(&code)
                .unwrap_err()
                .to_string()
                .starts_with(&format!(
                    "the BR Code is cut short at offset {}: 2 character(s) remain",
                    code.len() - 2
                ))
        );
    }

    #[test]
    fn a_length_running_past_the_end_fails_naming_the_field() {
        let code = with_crc(&format!("{HEADER}5950ABC"));
        let err = BrCode::parse(&code).unwrap_err();
        assert_eq!(
            err,
            DomainError::BrCodeOverrun {
                field: "field 59 (merchant name)".into(),
                offset: 6,
                len: 50,
                remaining: 11
            }
        );
        assert_eq!(
            err.to_string(),
            "in the BR Code, field 59 (merchant name) at offset 6 declares 50 characters but only \
             11 remain"
        );
        // Inside a template too: field 26 ends before its sub-field does.
        let code = with_crc(&format!(
            "{HEADER}{}",
            tlv("26", "0014br.gov.bcb.pix0140short")
        ));
        assert!(matches!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeOverrun { ref field, .. }) if field == "field 26 sub-field 01 (Pix key)"
        ));
    }

    #[test]
    fn non_ascii_fails_naming_the_character_and_offset() {
        let code = STATIC.replace("BRASILIA", "BRASÍLIA");
        let offset = STATIC.find("BRASILIA").unwrap() + 4;
        let err = BrCode::parse(&code).unwrap_err();
        assert_eq!(err, DomainError::BrCodeCharacter { offset, ch: 'Í' });
        assert_eq!(
            err.to_string(),
            format!(
                "the BR Code must contain only printable ASCII characters; it has 'Í' at offset \
                 {offset}; copy the code again without changing it"
            )
        );
        assert!(matches!(
            BrCode::parse(&STATIC.replace("Fulano de", "Fulano\tde")),
            Err(DomainError::BrCodeCharacter { ch: '\t', .. })
        ));
    }

    #[test]
    fn empty_and_oversized_codes_fail() {
        assert_eq!(BrCode::parse(""), Err(DomainError::BrCodeEmpty));
        assert_eq!(BrCode::parse(" \n"), Err(DomainError::BrCodeEmpty));
        let long = with_crc(&format!("{HEADER}{}", tlv("99", &"x".repeat(99)).repeat(6)));
        assert_eq!(
            BrCode::parse(&long),
            Err(DomainError::BrCodeTooLong { len: long.len() })
        );
    }

    #[test]
    fn must_start_with_the_payload_format_indicator() {
        let code = with_crc(&format!("000202{}", &STATIC[6..STATIC.len() - 8]));
        assert_eq!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeHeader {
                got: "000202".into()
            })
        );
    }

    #[test]
    fn each_required_field_is_required() {
        // Rebuild the static example without one field at a time.
        let account = tlv(
            "26",
            &(tlv("00", "br.gov.bcb.pix") + &tlv("01", "fulano@example.com")),
        );
        let parts = [
            ("26", account.clone()),
            ("52", tlv("52", "0000")),
            ("53", tlv("53", "986")),
            ("58", tlv("58", "BR")),
            ("59", tlv("59", "Fulano de Tal")),
            ("60", tlv("60", "BRASILIA")),
        ];
        let all: String = parts.iter().map(|(_, f)| f.as_str()).collect();
        assert_eq!(
            BrCode::parse(&with_crc(&format!("{HEADER}{all}")))
                .unwrap()
                .key(),
            Some("fulano@example.com")
        );
        for (id, _) in &parts {
            let without: String = parts
                .iter()
                .filter(|(i, _)| i != id)
                .map(|(_, f)| f.as_str())
                .collect();
            assert_eq!(
                BrCode::parse(&with_crc(&format!("{HEADER}{without}"))),
                Err(missing(None, id)),
                "without {id}"
            );
        }
        assert_eq!(
            missing(None, "59").to_string(),
            "the BR Code has no field 59 (merchant name); a Pix BR Code needs fields 00, 26 (with \
             the Pix key or location), 52, 53, 58, 59, 60 and 63 (CRC, last)"
        );
    }

    #[test]
    fn field_26_must_be_pix_with_a_key_or_location() {
        let rest = tlv("52", "0000")
            + &tlv("53", "986")
            + &tlv("58", "BR")
            + &tlv("59", "X")
            + &tlv("60", "Y");
        let code = |account: String| with_crc(&format!("{HEADER}{}{rest}", tlv("26", &account)));

        assert_eq!(
            BrCode::parse(&code(tlv("00", "br.gov.bcb.pox") + &tlv("01", "k"))),
            Err(DomainError::BrCodeFieldValue {
                field: "field 26 sub-field 00 (GUI)".into(),
                expected: "br.gov.bcb.pix",
                got: "br.gov.bcb.pox".into(),
            })
        );
        assert_eq!(
            BrCode::parse(&code(tlv("01", "k"))),
            Err(missing(Some("26"), "00"))
        );
        assert_eq!(
            BrCode::parse(&code(
                tlv("00", "BR.gov.BCB.pix") + &tlv("02", "description")
            )),
            Err(DomainError::BrCodeMissingField {
                field: "field 26 sub-field 01 (Pix key) or 25 (location URL)".into()
            })
        );
    }

    #[test]
    fn fixed_values_are_enforced() {
        let cases = [
            (
                STATIC.replace("5303986", "5303840"),
                "field 53 (transaction currency)",
                "986 (Brazilian real)",
                "840",
            ),
            (
                STATIC.replace("5802BR", "5802US"),
                "field 58 (country code)",
                "BR",
                "US",
            ),
            (
                STATIC.replace("52040000", "5204ABCD"),
                "field 52 (merchant category code)",
                "4 digits (0000 or a merchant category code)",
                "ABCD",
            ),
            (
                DYNAMIC.replace("010212", "010213"),
                "field 01 (point of initiation method)",
                "11 (static) or 12 (dynamic)",
                "13",
            ),
        ];
        for (body, field, expected, got) in cases {
            let code = with_crc(&body[..body.len() - 8]);
            assert_eq!(
                BrCode::parse(&code),
                Err(DomainError::BrCodeFieldValue {
                    field: field.into(),
                    expected,
                    got: got.into()
                })
            );
        }
    }

    #[test]
    fn structural_errors_are_named() {
        let code = with_crc(&format!("{HEADER}5802BR5802BR"));
        assert_eq!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeDuplicateField {
                field: "field 58 (country code)".into(),
                offset: 12
            })
        );
        let code = with_crc(&format!("{HEADER}58xxBR"));
        assert_eq!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeFieldHeader {
                offset: 6,
                got: "58xx".into()
            })
        );
        let code = with_crc(&format!("{HEADER}5900"));
        assert!(matches!(
            BrCode::parse(&code),
            Err(DomainError::BrCodeFieldValue { ref field, got, .. }) if field == "field 59 (merchant name)" && got.is_empty()
        ));
    }

    #[test]
    fn serde_goes_through_parse() {
        let code = BrCode::parse(STATIC).unwrap();
        let json = serde_json::to_string(&code).unwrap();
        assert_eq!(json, format!("\"{STATIC}\""));
        assert_eq!(serde_json::from_str::<BrCode>(&json).unwrap(), code);
        let tampered = json.replace("Fulano", "Ciclano");
        let err = serde_json::from_str::<BrCode>(&tampered).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the BR Code's CRC is 1D3D but its content gives ")
        );
    }
}
