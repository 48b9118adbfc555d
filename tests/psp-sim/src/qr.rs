//! QR code PNG rendering for `imagemQrcode`: the `qrcode` crate gives the module matrix and a
//! minimal PNG writer (8-bit greyscale, stored/uncompressed deflate blocks) turns it into a real
//! PNG, which avoids pulling a whole image stack into the test tree.

use qrcode::{Color, QrCode};

const SCALE: usize = 4;
const QUIET_ZONE: usize = 4;

/// Renders `data` as a QR code PNG.
pub fn png(data: &str) -> anyhow::Result<Vec<u8>> {
    let code = QrCode::new(data.as_bytes())?;
    let width = code.width();
    let colors = code.to_colors();
    let side = (width + 2 * QUIET_ZONE) * SCALE;
    let mut raw = Vec::with_capacity(side * (side + 1));
    for y in 0..side {
        raw.push(0); // filter type: none
        for x in 0..side {
            let (mx, my) = (x / SCALE, y / SCALE);
            let dark = mx >= QUIET_ZONE
                && my >= QUIET_ZONE
                && mx < QUIET_ZONE + width
                && my < QUIET_ZONE + width
                && colors[(my - QUIET_ZONE) * width + (mx - QUIET_ZONE)] == Color::Dark;
            raw.push(if dark { 0 } else { 255 });
        }
    }
    Ok(encode_greyscale(side as u32, side as u32, &raw))
}

fn encode_greyscale(width: u32, height: u32, filtered_rows: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]); // depth 8, greyscale, deflate, filter 0, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_stored(filtered_rows));
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut blocks = data.chunks(65_535).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(block) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn renders_a_png_with_a_sane_header() {
        let png = png("00020101021226").unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        // Version 1 QR (21 modules) plus quiet zone, scaled.
        assert_eq!(width as usize, (21 + 2 * QUIET_ZONE) * SCALE);
        assert_eq!(&png[png.len() - 8..png.len() - 4], b"IEND");
    }
}
