//! BR Code (Pix "copia e cola") encoding: EMV MPM TLV fields plus the CRC-16/CCITT-FALSE trailer.
//!
//! The simulator only emits *dynamic* codes (`01`=`12`, merchant account `26` carrying the
//! location URL in `25`), which is what the central-bank Pix API returns in `pixCopiaECola`.

/// CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection, no final xor.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// One TLV field. Lengths are counted in characters, as the EMV spec does.
fn tlv(id: &str, value: &str) -> String {
    let len = value.chars().count();
    debug_assert!(len <= 99, "BR Code field {id} too long");
    format!("{id}{len:02}{value}")
}

/// Appends `6304` and the CRC computed over everything before it (including `6304`).
pub fn with_crc(payload_without_crc: &str) -> String {
    let mut s = format!("{payload_without_crc}6304");
    let crc = crc16(s.as_bytes());
    s.push_str(&format!("{crc:04X}"));
    s
}

/// What a dynamic Pix charge needs on its BR Code.
pub struct Dynamic<'a> {
    /// Location URL without scheme, e.g. `pix.example.com/qr/v2/...`.
    pub location: &'a str,
    /// Amount as the central bank writes it, e.g. `"10.00"`.
    pub amount: &'a str,
    pub merchant_name: &'a str,
    pub merchant_city: &'a str,
}

impl Dynamic<'_> {
    pub fn encode(&self) -> String {
        let account = tlv("00", "br.gov.bcb.pix") + &tlv("25", self.location);
        let name: String = self.merchant_name.chars().take(25).collect();
        let city: String = self.merchant_city.chars().take(15).collect();
        let body = [
            tlv("00", "01"),
            tlv("01", "12"),
            tlv("26", &account),
            tlv("52", "0000"),
            tlv("53", "986"),
            tlv("54", self.amount),
            tlv("58", "BR"),
            tlv("59", &name),
            tlv("60", &city),
            tlv("62", &tlv("05", "***")),
        ]
        .concat();
        with_crc(&body)
    }
}

/// Splits a BR Code into its top-level `(id, value)` fields, or `None` if the TLV is malformed.
pub fn parse_fields(code: &str) -> Option<Vec<(String, String)>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 4 > chars.len() {
            return None;
        }
        let id: String = chars[i..i + 2].iter().collect();
        let len: usize = chars[i + 2..i + 4]
            .iter()
            .collect::<String>()
            .parse()
            .ok()?;
        if i + 4 + len > chars.len() {
            return None;
        }
        out.push((id, chars[i + 4..i + 4 + len].iter().collect()));
        i += 4 + len;
    }
    Some(out)
}

/// True when the code's trailing `6304XXXX` matches the CRC of everything before it.
pub fn crc_is_valid(code: &str) -> bool {
    if code.len() < 8 || !code.is_char_boundary(code.len() - 4) {
        return false;
    }
    let (head, crc) = code.split_at(code.len() - 4);
    head.ends_with("6304") && format!("{:04X}", crc16(head.as_bytes())) == crc
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATIC_EXAMPLE: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";
    const DYNAMIC_EXAMPLE: &str = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB";

    #[test]
    fn crc_check_value() {
        assert_eq!(format!("{:04X}", crc16(b"123456789")), "29B1");
    }

    #[test]
    fn crc_of_the_psps_md_examples() {
        for example in [STATIC_EXAMPLE, DYNAMIC_EXAMPLE] {
            let head = &example[..example.len() - 4];
            assert_eq!(with_crc(&head[..head.len() - 4]), example);
            assert!(crc_is_valid(example));
        }
        assert!(!crc_is_valid(&STATIC_EXAMPLE.replace("Fulano", "Beltra")));
    }

    #[test]
    fn dynamic_code_has_the_expected_fields() {
        let code = Dynamic {
            location: "pix.example.com/qr/v2/abc",
            amount: "10.00",
            merchant_name: "PIXGW TESTE",
            merchant_city: "SAO PAULO",
        }
        .encode();
        assert!(crc_is_valid(&code));
        let fields = parse_fields(&code).unwrap();
        let get = |id: &str| fields.iter().find(|(k, _)| k == id).map(|(_, v)| v.clone());
        assert_eq!(get("00").as_deref(), Some("01"));
        assert_eq!(get("01").as_deref(), Some("12"));
        assert_eq!(
            get("26").as_deref(),
            Some("0014br.gov.bcb.pix2525pix.example.com/qr/v2/abc")
        );
        assert_eq!(get("53").as_deref(), Some("986"));
        assert_eq!(get("54").as_deref(), Some("10.00"));
        assert_eq!(get("58").as_deref(), Some("BR"));
        assert_eq!(get("62").as_deref(), Some("0503***"));
        assert_eq!(fields.last().unwrap().0, "63");
    }
}
