//! [`qr_png_base64`]: the QR code image of a BR Code, as PSP responses and checkout pages carry
//! it (`qrCodeImage`-style base64 PNG).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use qrcode::types::QrError;
use qrcode::{Color, EcLevel, QrCode};

use super::DomainError;

/// Pixels per QR module: the image shown at its natural size (as many integrations do) is
/// large enough for phone cameras to read off a screen or a print.
const MODULE_PX: usize = 8;
/// Light modules around the symbol, the minimum the QR standard requires for scanning.
const QUIET_ZONE: usize = 4;

/// Renders `text` as a QR code (error correction level M, the usual choice for Pix) and returns
/// a black-on-white PNG in standard base64, without a `data:` prefix. Each module is 8 × 8
/// pixels and a 4-module quiet zone surrounds the symbol, so the image is `(modules + 8) × 8`
/// pixels square. One bit per pixel, and every pixel row of a module row repeats the one above,
/// which the PNG "up" filter turns into zeros: a Pix code's image is about 1 KB, where an 8-bit
/// image of the same size was 52 KB.
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

/// The PNG bytes of `code`: 1-bit grayscale, 0 black and 1 white.
fn render_png(code: &QrCode) -> Result<Vec<u8>, DomainError> {
    let modules = code.width();
    let colors = code.to_colors();
    let side_modules = modules + 2 * QUIET_ZONE;
    let side_px = side_modules * MODULE_PX;
    let row_bytes = side_px.div_ceil(8);

    let mut pixels = Vec::with_capacity(row_bytes * side_px);
    for y in 0..side_modules {
        // One row of modules, widened to pixels and packed 8 to a byte (most significant bit
        // first, white set), then repeated for the module's height.
        let mut row = vec![0u8; row_bytes];
        for x_px in 0..side_px {
            let x = x_px / MODULE_PX;
            let dark = (QUIET_ZONE..QUIET_ZONE + modules).contains(&x)
                && (QUIET_ZONE..QUIET_ZONE + modules).contains(&y)
                && colors[(y - QUIET_ZONE) * modules + (x - QUIET_ZONE)] == Color::Dark;
            if !dark {
                row[x_px / 8] |= 0x80 >> (x_px % 8);
            }
        }
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
    encoder.set_depth(png::BitDepth::One);
    // Balanced: `High` took a few percent of the gateway's CPU per charge for a few bytes.
    encoder.set_compression(png::Compression::Balanced);
    encoder.set_filter(png::Filter::Up);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer.write_image_data(&pixels).map_err(png_error)?;
    writer.finish().map_err(png_error)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qrcode::Version;

    const BLACK: u8 = 0;
    const WHITE: u8 = 255;

    const BR_CODE: &str = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D";

    fn decode(b64: &str) -> Vec<u8> {
        STANDARD.decode(b64).expect("standard base64")
    }

    /// The image's pixels as 8-bit gray, and its side.
    fn pixels(b64: &str) -> (Vec<u8>, usize) {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(decode(b64)));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!(info.width, info.height);
        pixels.truncate(info.buffer_size());
        (pixels, info.width as usize)
    }

    fn read_qr(pixels: &[u8], side: usize) -> Option<String> {
        let mut image =
            rqrr::PreparedImage::prepare_from_greyscale(side, side, |x, y| pixels[y * side + x]);
        image
            .detect_grids()
            .into_iter()
            .find_map(|grid| grid.decode().ok().map(|(_, text)| text))
    }

    /// A Pix code as long as PSPs make them (a 77-character location URL).
    const DYNAMIC_BR_CODE: &str = "00020101021226930014br.gov.bcb.pix2571qrcodes-pix.gerencianet.com.br/v2/cobv/9d36b84fc70b478fb95c12729b90ca255204000053039865406123.455802BR5905EFISA6008SAOPAULO62070503***63047D5B";

    #[test]
    fn is_compact_and_reads_back_at_full_size_and_from_afar() {
        for text in [BR_CODE, DYNAMIC_BR_CODE] {
            let b64 = qr_png_base64(text).unwrap();
            let bytes = decode(&b64).len();
            assert!(
                bytes <= 3 * 1024,
                "{bytes} bytes for {} characters",
                text.len()
            );
            let (pixels, side) = pixels(&b64);
            assert_eq!(read_qr(&pixels, side).as_deref(), Some(text));
            // Seen from afar: every 4 × 4 block averaged into one pixel, 2 pixels a module,
            // gray edges included.
            let small = side / 4;
            let far: Vec<u8> = (0..small * small)
                .map(|i| {
                    let (x, y) = (i % small * 4, i / small * 4);
                    let sum: u32 = (0..16)
                        .map(|j| u32::from(pixels[(y + j / 4) * side + x + j % 4]))
                        .sum();
                    (sum / 16) as u8
                })
                .collect();
            assert_eq!(read_qr(&far, small).as_deref(), Some(text));
        }
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
        assert_eq!(png[24], 1, "bit depth");
        assert_eq!(png[25], 0, "colour type: grayscale");
    }

    #[test]
    fn pixels_are_black_modules_on_white_with_a_quiet_zone() {
        let (pixels, side) = pixels(&qr_png_base64("pix").unwrap());
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
