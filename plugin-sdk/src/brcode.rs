//! Pix BR Codes ("Pix copia e cola") built by an adapter, for a PSP whose answer names the
//! charge's location but leaves the code out.
//!
//! The format is the central bank's *Manual de Padrões para Iniciação do Pix* (BR Code, EMV
//! merchant-presented QR): fields of a two-digit id, a two-digit length and the value; `26`
//! holds the Pix arrangement's GUI and, for a dynamic code, the location URL without scheme
//! (sub-field `25`); `63` is a CRC-16/CCITT-FALSE over everything before its value. The host
//! parses every code it is given (`host/src/domain/brcode.rs`), this one included.

/// A dynamic, single-use code for the payload at `location` (a URL, scheme optional).
///
/// `amount` is reais as the central-bank API writes them (`"10.50"`). The payer's bank reads
/// the charge (receiver, amount, txid) from the location's signed payload; fields 59 and 60 are
/// mandatory in the EMV layout but only informative for a dynamic code, so the caller may pass
/// neutral values when it does not know the receiver's name and city. Values longer than the
/// EMV limits (name 25, city 15) are cut.
pub fn dynamic(location: &str, amount: &str, merchant_name: &str, merchant_city: &str) -> String {
    let location = location
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let account = field("00", "br.gov.bcb.pix") + &field("25", location);
    let mut code = String::from("000201");
    code += &field("01", "12");
    code += &field("26", &account);
    code += &field("52", "0000");
    code += &field("53", "986");
    if !amount.is_empty() {
        code += &field("54", amount);
    }
    code += &field("58", "BR");
    code += &field("59", &ascii_prefix(merchant_name, 25));
    code += &field("60", &ascii_prefix(merchant_city, 15));
    // A dynamic code's txid lives in the payload: `***` by the manual's convention.
    code += &field("62", &field("05", "***"));
    code += "6304";
    let crc = crc16(code.as_bytes());
    format!("{code}{crc:04X}")
}

/// CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR.
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

fn field(id: &str, value: &str) -> String {
    format!("{id}{:02}{value}", value.len())
}

/// At most `max` characters of `text` in printable ASCII (a BR Code is ASCII): Portuguese
/// accented letters lose their accent, anything else non-ASCII is left out.
fn ascii_prefix(text: &str, max: usize) -> String {
    text.chars()
        .filter_map(|c| match c {
            'á' | 'à' | 'â' | 'ã' | 'ä' => Some('a'),
            'Á' | 'À' | 'Â' | 'Ã' | 'Ä' => Some('A'),
            'é' | 'ê' | 'è' => Some('e'),
            'É' | 'Ê' | 'È' => Some('E'),
            'í' | 'ì' => Some('i'),
            'Í' | 'Ì' => Some('I'),
            'ó' | 'ô' | 'õ' | 'ò' | 'ö' => Some('o'),
            'Ó' | 'Ô' | 'Õ' | 'Ò' | 'Ö' => Some('O'),
            'ú' | 'ù' | 'ü' => Some('u'),
            'Ú' | 'Ù' | 'Ü' => Some('U'),
            'ç' => Some('c'),
            'Ç' => Some('C'),
            c if c.is_ascii() && !c.is_ascii_control() => Some(c),
            _ => None,
        })
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_ccitt_false_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29B1);
    }

    /// A dynamic code in the manual's layout (the host's test vector), rebuilt field by field.
    #[test]
    fn rebuilds_a_known_dynamic_code() {
        let code = dynamic(
            "https://pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a99",
            "",
            "EMPRESA",
            "SAO PAULO",
        );
        // That code writes the GUI in upper case; the rest is identical.
        let manual = "00020101021226770014BR.GOV.BCB.PIX2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304EEAB";
        let ours = "00020101021226770014br.gov.bcb.pix2555pix.example.com/qr/93598be0-1bd0-4997-8318-81776a1d8a995204000053039865802BR5907EMPRESA6009SAO PAULO62070503***6304";
        assert_eq!(&code[..code.len() - 4], ours);
        assert_eq!(
            &manual[..manual.len() - 4].to_lowercase(),
            &ours.to_lowercase()
        );
        let (body, crc) = code.split_at(code.len() - 4);
        assert_eq!(crc, format!("{:04X}", crc16(body.as_bytes())));
    }

    #[test]
    fn amount_and_limits() {
        let code = dynamic(
            "qr.psp.example/v2/ab",
            "10.50",
            "RECEBEDOR DE UM NOME LONGO DEMAIS",
            "SÃO JOSÉ DOS CAMPOS",
        );
        assert!(code.contains("540510.50"), "{code}");
        assert!(code.contains("5925RECEBEDOR DE UM NOME LONG"), "{code}");
        assert!(code.contains("6015SAO JOSE DOS CA"), "{code}");
        assert!(
            code.contains("26420014br.gov.bcb.pix2520qr.psp.example/v2/ab"),
            "{code}"
        );
    }
}
