//! [`qr_png_base64`]: the QR code image of a BR Code, as PSP responses and checkout pages carry
//! it (`qrCodeImage`-style base64 PNG).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use qrcode::canvas::{Canvas, MaskPattern};
use qrcode::types::QrError;
use qrcode::{Color, EcLevel};

use super::DomainError;

/// Pixels per QR module: the image shown at its natural size (as many integrations do) is
/// large enough for phone cameras to read off a screen or a print.
const MODULE_PX: usize = 8;
/// Light modules around the symbol, the minimum the QR standard requires for scanning.
const QUIET_ZONE: usize = 4;

/// The eight mask patterns of a (non-micro) QR code.
const MASKS: [MaskPattern; 8] = [
    MaskPattern::Checkerboard,
    MaskPattern::HorizontalLines,
    MaskPattern::VerticalLines,
    MaskPattern::DiagonalLines,
    MaskPattern::LargeCheckerboard,
    MaskPattern::Fields,
    MaskPattern::Diamonds,
    MaskPattern::Meadow,
];

/// Renders `text` as a QR code (error correction level M, the usual choice for Pix) and returns
/// a black-on-white PNG in standard base64, without a `data:` prefix. Each module is 8 × 8
/// pixels and a 4-module quiet zone surrounds the symbol, so the image is `(modules + 8) × 8`
/// pixels square. One bit per pixel, and every pixel row of a module row repeats the one above,
/// which the PNG "up" filter turns into zeros: a Pix code's image is about 2.5 KB, where an 8-bit
/// image of the same size was 52 KB.
pub fn qr_png_base64(text: &str) -> Result<String, DomainError> {
    Ok(STANDARD.encode(render_png(&Symbol::encode(text)?)?))
}

/// A QR symbol's modules, row by row, `true` for dark.
struct Symbol {
    width: usize,
    dark: Vec<bool>,
    /// The mask chosen: the tests check that the choice varies.
    #[cfg_attr(not(test), allow(dead_code))]
    mask: MaskPattern,
}

impl Symbol {
    /// The smallest symbol holding `text` at level M, with the mask of lowest penalty.
    fn encode(text: &str) -> Result<Symbol, DomainError> {
        let qr_error = |e: QrError| match e {
            QrError::DataTooLong => DomainError::QrTooLong { len: text.len() },
            other => DomainError::QrImage {
                reason: other.to_string(),
            },
        };
        let bits = qrcode::bits::encode_auto(text.as_bytes(), EcLevel::M).map_err(qr_error)?;
        let version = bits.version();
        let (data, ec) = qrcode::ec::construct_codewords(&bits.into_bytes(), version, EcLevel::M)
            .map_err(qr_error)?;
        let mut canvas = Canvas::new(version, EcLevel::M);
        canvas.draw_all_functional_patterns();
        canvas.draw_data(&data, &ec);
        let width = version.width() as usize;
        // Every mask is tried, as the standard asks, but scored here: the `qrcode` crate's own
        // scoring took a quarter of the gateway's CPU per charge.
        let symbol = MASKS
            .iter()
            .map(|&mask| {
                let mut masked = canvas.clone();
                masked.apply_mask(mask);
                let dark = masked
                    .into_colors()
                    .into_iter()
                    .map(|c| c == Color::Dark)
                    .collect();
                Symbol { width, dark, mask }
            })
            .min_by_key(Symbol::penalty)
            .expect("eight masks");
        Ok(symbol)
    }

    fn is_dark(&self, x: usize, y: usize) -> bool {
        self.dark[y * self.width + x]
    }

    /// The mask-selection penalty of ISO/IEC 18004 (§7.8.3): runs of five or more modules of
    /// one colour, 2 × 2 blocks of one colour, finder-like 1:1:3:1:1 patterns beside four light
    /// modules (outside the symbol counts as light), and the dark share's distance from half.
    /// Eight masks are scored per charge, so symbols up to [`BIT_ROWS_MAX`] modules wide (every
    /// Pix code) are scored a whole row at a time ([`BitRows`]); wider ones module by module.
    fn penalty(&self) -> u32 {
        match BitRows::of(self) {
            Some(bits) => bits.penalty(),
            None => self.penalty_by_module(),
        }
    }

    /// [`Symbol::penalty`] module by module, rows and columns as contiguous slices (the
    /// columns from a transposed copy).
    fn penalty_by_module(&self) -> u32 {
        let w = self.width;
        let mut columns = vec![false; w * w];
        for (y, row) in self.dark.chunks_exact(w).enumerate() {
            for (x, &dark) in row.iter().enumerate() {
                columns[x * w + y] = dark;
            }
        }
        let mut score: u32 = self
            .dark
            .chunks_exact(w)
            .chain(columns.chunks_exact(w))
            .map(line_penalty)
            .sum();
        for (top, bottom) in self
            .dark
            .chunks_exact(w)
            .zip(self.dark.chunks_exact(w).skip(1))
        {
            for x in 0..w - 1 {
                let c = top[x];
                if c == top[x + 1] && c == bottom[x] && c == bottom[x + 1] {
                    score += 3;
                }
            }
        }
        let dark = self.dark.iter().filter(|&&d| d).count() as u32;
        score + dark_share_penalty(dark, (w * w) as u32)
    }
}

/// 10 for each full 5 % the dark modules' share is away from half.
fn dark_share_penalty(dark: u32, total: u32) -> u32 {
    10 * ((20 * dark).abs_diff(10 * total) / total)
}

/// The widest symbol [`BitRows`] holds: its modules and four light ones on each side fit in
/// 128 bits (version 25; a Pix code is at most about version 15).
const BIT_ROWS_MAX: usize = 128 - 2 * QUIET_ZONE;

/// A symbol's rows and columns as bits: module `i` of a line at bit `i + 4`, with the four
/// light modules of the quiet zone on each side as zero bits. Each penalty rule is then a few
/// shifts and a population count per line.
struct BitRows {
    width: usize,
    rows: Vec<u128>,
    columns: Vec<u128>,
}

impl BitRows {
    fn of(symbol: &Symbol) -> Option<BitRows> {
        let w = symbol.width;
        if w > BIT_ROWS_MAX {
            return None;
        }
        let (mut rows, mut columns) = (vec![0u128; w], vec![0u128; w]);
        for (y, row) in symbol.dark.chunks_exact(w).enumerate() {
            for (x, _) in row.iter().enumerate().filter(|(_, dark)| **dark) {
                rows[y] |= 1 << (x + QUIET_ZONE);
                columns[x] |= 1 << (y + QUIET_ZONE);
            }
        }
        Some(BitRows {
            width: w,
            rows,
            columns,
        })
    }

    fn penalty(&self) -> u32 {
        let w = self.width;
        let modules = ((1u128 << w) - 1) << QUIET_ZONE;
        let mut score: u32 = self
            .rows
            .iter()
            .chain(&self.columns)
            .map(|&line| bit_line_penalty(line, w))
            .sum();
        // A block's top-left module at x: both rows agree at x and x + 1, and the top row's
        // two modules agree.
        let block_corners = ((1u128 << (w - 1)) - 1) << QUIET_ZONE;
        for pair in self.rows.windows(2) {
            let (top, bottom) = (pair[0], pair[1]);
            let same_below = !(top ^ bottom) & modules;
            let blocks = same_below & (same_below >> 1) & !(top ^ (top >> 1)) & block_corners;
            score += 3 * blocks.count_ones();
        }
        let dark = self.rows.iter().map(|r| r.count_ones()).sum();
        score + dark_share_penalty(dark, (w * w) as u32)
    }
}

/// [`line_penalty`] of a line held as [`BitRows`] holds it.
fn bit_line_penalty(line: u128, w: usize) -> u32 {
    let modules = ((1u128 << w) - 1) << QUIET_ZONE;
    let mut score = 0;
    // Runs: a run of n ≥ 5 holds n - 4 windows of five and scores n - 2, so each window of five
    // scores 1 and each run's first window 2 more.
    for same in [line & modules, !line & modules] {
        let fives = same & (same >> 1) & (same >> 2) & (same >> 3) & (same >> 4);
        let firsts = fives & !(fives << 1);
        score += fives.count_ones() + 2 * firsts.count_ones();
    }
    // Finder-like windows of eleven modules over the line with its quiet zone, starting at bit
    // s for s in 0..=w - 3 (the last eleven bits of the padded line), the line's order being
    // the bits' order.
    const FINDER_THEN_LIGHT: [bool; 11] = [
        true, false, true, true, true, false, true, false, false, false, false,
    ];
    const LIGHT_THEN_FINDER: [bool; 11] = [
        false, false, false, false, true, false, true, true, true, false, true,
    ];
    let starts = (1u128 << (w - 2)) - 1;
    for pattern in [FINDER_THEN_LIGHT, LIGHT_THEN_FINDER] {
        let matches = pattern.iter().enumerate().fold(starts, |m, (k, &dark)| {
            m & if dark { line >> k } else { !line >> k }
        });
        score += 40 * matches.count_ones();
    }
    score
}

/// The run and finder-pattern penalties of one row or column.
fn line_penalty(line: &[bool]) -> u32 {
    // Dark, light, dark × 3, light, dark, then four light modules; and the same reversed.
    const FINDER_THEN_LIGHT: u16 = 0b101_1101_0000;
    const LIGHT_THEN_FINDER: u16 = 0b000_0101_1101;
    let mut score = 0;
    // Runs: 3 for five modules of one colour, 1 more for each module past five.
    let mut start = 0;
    for i in 1..=line.len() {
        if i == line.len() || line[i] != line[start] {
            let run = (i - start) as u32;
            if run >= 5 {
                score += run - 2;
            }
            start = i;
        }
    }
    // The last eleven modules, the newest in bit 0, over the line with four light modules
    // (quiet zone) on each side: the window is full from the line's seventh module on.
    let mut window = 0u16;
    let padded = line.iter().copied().chain([false; 4]);
    for (i, dark) in padded.enumerate() {
        window = ((window << 1) | u16::from(dark)) & 0x7ff;
        if i >= 6 && (window == FINDER_THEN_LIGHT || window == LIGHT_THEN_FINDER) {
            score += 40;
        }
    }
    score
}

/// The PNG bytes of `symbol`: 1-bit grayscale, 0 black and 1 white.
fn render_png(symbol: &Symbol) -> Result<Vec<u8>, DomainError> {
    let modules = symbol.width;
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
                && symbol.is_dark(x - QUIET_ZONE, y - QUIET_ZONE);
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
    // Fast (fdeflate): zlib-style levels allocate and zero a few hundred KB of tables per image,
    // which was a tenth of the gateway's CPU per charge; the image grows by a few hundred bytes.
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::Filter::Up);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer.write_image_data(&pixels).map_err(png_error)?;
    writer.finish().map_err(png_error)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qrcode::{QrCode, Version};

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

    #[test]
    fn penalties_follow_the_standard() {
        // Both ways of scoring a line, which must agree.
        let line = |modules: &str| {
            let dark: Vec<bool> = modules.bytes().map(|b| b == b'1').collect();
            let bits = (0..dark.len())
                .filter(|&i| dark[i])
                .fold(0u128, |bits, i| bits | 1 << (i + QUIET_ZONE));
            let score = line_penalty(&dark);
            assert_eq!(bit_line_penalty(bits, dark.len()), score, "{modules}");
            score
        };
        // One run of 21: 3 for five, 1 for each module past five.
        assert_eq!(line(&"0".repeat(21)), 19);
        assert_eq!(line("0000"), 0);
        // A finder-like pattern with light on both sides (the quiet zone counts) scores twice.
        assert_eq!(line("10111010000"), 80);
        assert_eq!(line("01011101"), 80);
        // Too little light before it and after it: no finder penalty, and a run of three.
        assert_eq!(line("1110111011101110111"), 0);

        // All dark: runs in 21 rows and 21 columns, 400 blocks, and all dark instead of half.
        let dark = Symbol {
            width: 21,
            dark: vec![true; 21 * 21],
            mask: MaskPattern::Checkerboard,
        };
        assert_eq!(dark.penalty(), 42 * 19 + 400 * 3 + 100);
        // A checkerboard: no runs, no blocks, no finder patterns, half dark.
        let checkerboard = Symbol {
            width: 21,
            dark: (0..21 * 21).map(|i| (i % 21 + i / 21) % 2 == 0).collect(),
            mask: MaskPattern::Checkerboard,
        };
        assert_eq!(checkerboard.penalty(), 0);
    }

    /// Whole-row scoring is the module-by-module rule, on real symbols under every mask and on
    /// random ones of every width it takes.
    #[test]
    fn row_scoring_agrees_with_module_scoring() {
        for end in (10..DYNAMIC_BR_CODE.len()).step_by(7) {
            let bits =
                qrcode::bits::encode_auto(&DYNAMIC_BR_CODE.as_bytes()[..end], EcLevel::M).unwrap();
            let version = bits.version();
            let (data, ec) =
                qrcode::ec::construct_codewords(&bits.into_bytes(), version, EcLevel::M).unwrap();
            let mut canvas = Canvas::new(version, EcLevel::M);
            canvas.draw_all_functional_patterns();
            canvas.draw_data(&data, &ec);
            for mask in MASKS {
                let mut masked = canvas.clone();
                masked.apply_mask(mask);
                let symbol = Symbol {
                    width: version.width() as usize,
                    dark: masked
                        .into_colors()
                        .into_iter()
                        .map(|c| c == Color::Dark)
                        .collect(),
                    mask,
                };
                assert_eq!(
                    symbol.penalty(),
                    symbol.penalty_by_module(),
                    "{end} {mask:?}"
                );
            }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for width in [21, 45, 57, 101, BIT_ROWS_MAX] {
            for density in [2, 4, 8] {
                let dark = (0..width * width)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed.is_multiple_of(density)
                    })
                    .collect();
                let symbol = Symbol {
                    width,
                    dark,
                    mask: MaskPattern::Checkerboard,
                };
                assert_eq!(symbol.penalty(), symbol.penalty_by_module(), "{width}");
            }
        }
    }

    #[test]
    fn every_mask_chosen_reads_back() {
        // Texts of many lengths land on different masks; each must read back, format
        // information included.
        let mut masks = std::collections::BTreeSet::new();
        for end in (10..DYNAMIC_BR_CODE.len()).step_by(3) {
            let text = &DYNAMIC_BR_CODE[..end];
            masks.insert(Symbol::encode(text).unwrap().mask as u8);
            let (pixels, side) = pixels(&qr_png_base64(text).unwrap());
            assert_eq!(read_qr(&pixels, side).as_deref(), Some(text));
        }
        assert!(masks.len() >= 4, "masks chosen: {masks:?}");
    }
}
