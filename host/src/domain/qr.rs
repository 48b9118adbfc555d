//! [`qr_png_base64`]: the QR code image of a BR Code, as PSP responses and checkout pages carry
//! it (`qrCodeImage`-style base64 PNG).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use qrcode::types::QrError;
use qrcode::{Color, EcLevel, QrCode};

use super::DomainError;

/// Pixels per QR module: large enough for phone cameras to read off a screen or a print.
const MODULE_PX: usize = 8;
/// Light modules around the symbol, the minimum the QR standard requires for scanning.
const QUIET_ZONE: usize = 4;
const BLACK: u8 = 0;
const WHITE: u8 = 255;

/// Renders `text` as a QR code (error correction level M, the usual choice for Pix) and returns
/// a black-on-white, 8-bit grayscale PNG in standard base64, without a `data:` prefix. Each
/// module is 8 × 8 pixels and a 4-module quiet zone surrounds the symbol, so the image is
/// `(modules + 8) × 8` pixels square.
pub fn qr_png_base64(text: &str) -> Result<String, DomainError> {
    let code =
        QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M).map_err(|e| match e {
            QrError::DataTooLong => DomainError::QrTooLong { len: text.len() },
            other => DomainError::QrImage {
                reason: other.to_string(),
            },
        })?;
    Ok(STANDARD.encode(render_png(&code)?))
}

/// The PNG bytes of `code`.
fn render_png(code: &QrCode) -> Result<Vec<u8>, DomainError> {
    let modules = code.width();
    let colors = code.to_colors();
    let side_modules = modules + 2 * QUIET_ZONE;
    let side_px = side_modules * MODULE_PX;

    let mut pixels = Vec::with_capacity(side_px * side_px);
    for y in 0..side_modules {
        // One row of modules, widened to pixels, then repeated for the module's height.
        let row: Vec<u8> = (0..side_modules)
            .flat_map(|x| {
                let dark = (QUIET_ZONE..QUIET_ZONE + modules).contains(&x)
                    && (QUIET_ZONE..QUIET_ZONE + modules).contains(&y)
                    && colors[(y - QUIET_ZONE) * modules + (x - QUIET_ZONE)] == Color::Dark;
                std::iter::repeat_n(if dark { BLACK } else { WHITE }, MODULE_PX)
            })
            .collect();
        for _ in 0..MODULE_PX {
            pixels.extend_from_slice(&row);
        }
    }

    let png_error = |e: png::EncodingError| DomainError::QrImage {
        reason: e.to_string(),
    };
    // At most (177 + 8) × 8 = 1480 pixels for the largest QR version.
    let side = u32::try_from(side_px).map_err(|_| DomainError::QrImage {
        reason: format!("{side_px} pixels is too wide"),
    })?;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer.write_image_data(&pixels).map_err(png_error)?;
    writer.finish().map_err(png_error)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qrcode::Version;

    const BR_CODE: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";

    fn decode(b64: &str) -> Vec<u8> {
        STANDARD.decode(b64).expect("standard base64")
    }

    #[test]
    fn is_a_png_sized_from_the_symbol_version() {
        let png = decode(&qr_png_base64(BR_CODE).unwrap());
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");

        let code = QrCode::with_error_correction_level(BR_CODE, EcLevel::M).unwrap();
        let Version::Normal(version) = code.version() else {
            panic!("a Micro QR was chosen")
        };
        let modules = 17 + 4 * version as u32;
        assert_eq!(modules as usize, code.width());
        let expected = (modules + 8) * 8;
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (expected, expected));
        assert_eq!(png[24], 8, "bit depth");
        assert_eq!(png[25], 0, "colour type: grayscale");
    }

    #[test]
    fn pixels_are_black_modules_on_white_with_a_quiet_zone() {
        let png = decode(&qr_png_base64("pix").unwrap());
        let mut reader = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        let side = info.width as usize;
        let at = |x: usize, y: usize| pixels[y * side + x];

        assert!(pixels.iter().all(|&p| p == BLACK || p == WHITE));
        // The quiet zone (first and last 32 pixels on every side) is white.
        for i in 0..side {
            for q in 0..QUIET_ZONE * MODULE_PX {
                assert_eq!(at(i, q), WHITE);
                assert_eq!(at(q, i), WHITE);
                assert_eq!(at(i, side - 1 - q), WHITE);
                assert_eq!(at(side - 1 - q, i), WHITE);
            }
        }
        // The top-left finder pattern starts right after it: a dark module, 8 pixels square.
        let start = QUIET_ZONE * MODULE_PX;
        for d in 0..MODULE_PX {
            assert_eq!(at(start + d, start), BLACK);
            assert_eq!(at(start, start + d), BLACK);
        }
    }

    #[test]
    fn base64_is_standard_without_a_data_prefix() {
        let b64 = qr_png_base64(BR_CODE).unwrap();
        assert!(b64.starts_with("iVBORw0KGgo"), "PNG signature in base64");
        assert!(
            b64.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        );
    }

    #[test]
    fn text_beyond_qr_capacity_is_refused() {
        let text = "x".repeat(3000);
        assert_eq!(
            qr_png_base64(&text),
            Err(DomainError::QrTooLong { len: 3000 })
        );
    }
}
