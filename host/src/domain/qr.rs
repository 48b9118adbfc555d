//! [`qr_png_base64`]: the QR code image of a BR Code, as PSP responses and checkout pages carry
//! it (`qrCodeImage`-style base64 PNG).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use qrcode::canvas::{Canvas, MaskPattern, Module};
use qrcode::types::QrError;
use qrcode::{Color, EcLevel, Version};

use super::DomainError;

mod zlib;

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

/// Every mask pattern repeats down the symbol every 12 rows (its rules take `y` modulo 2, 3, 4
/// or 6).
const MASK_PERIOD: usize = 12;

/// Whether `mask` inverts the module at column `x`, row `y` (ISO/IEC 18004, table 10).
fn inverts(mask: MaskPattern, x: usize, y: usize) -> bool {
    match mask {
        MaskPattern::Checkerboard => (x + y).is_multiple_of(2),
        MaskPattern::HorizontalLines => y.is_multiple_of(2),
        MaskPattern::VerticalLines => x.is_multiple_of(3),
        MaskPattern::DiagonalLines => (x + y).is_multiple_of(3),
        MaskPattern::LargeCheckerboard => (y / 2 + x / 3).is_multiple_of(2),
        MaskPattern::Fields => (x * y) % 2 + (x * y) % 3 == 0,
        MaskPattern::Diamonds => ((x * y) % 2 + (x * y) % 3).is_multiple_of(2),
        MaskPattern::Meadow => ((x + y) % 2 + (x * y) % 3).is_multiple_of(2),
    }
}

/// For each mask (by its number) and each line modulo [`MASK_PERIOD`], the modules it inverts
/// as a [`BitRows`] line [`BIT_ROWS_MAX`] modules long: in its rows, and in its columns (every
/// rule repeats across every 6 columns too).
struct MaskLines {
    rows: [[u128; MASK_PERIOD]; 8],
    columns: [[u128; MASK_PERIOD]; 8],
}

fn mask_lines() -> &'static MaskLines {
    static LINES: std::sync::OnceLock<MaskLines> = std::sync::OnceLock::new();
    LINES.get_or_init(|| {
        let line = |inverted: &dyn Fn(usize) -> bool| {
            (0..BIT_ROWS_MAX)
                .filter(|&i| inverted(i))
                .fold(0, |line, i| line | 1 << (i + QUIET_ZONE))
        };
        MaskLines {
            rows: MASKS.map(|mask| std::array::from_fn(|y| line(&|x| inverts(mask, x, y)))),
            columns: MASKS.map(|mask| std::array::from_fn(|x| line(&|y| inverts(mask, x, y)))),
        }
    })
}

/// A version's canvas at level M with its function patterns drawn, and which of its modules a
/// mask inverts (those the patterns left empty) as [`BitRows`] lines where it is at most
/// [`BIT_ROWS_MAX`] wide: the same for every code of the version, so made once.
struct Template {
    canvas: Canvas,
    maskable: Option<Maskable>,
}

/// The modules a mask inverts, as rows and as columns.
struct Maskable {
    rows: Vec<u128>,
    columns: Vec<u128>,
}

impl Template {
    fn new(version: Version) -> Template {
        let mut canvas = Canvas::new(version, EcLevel::M);
        canvas.draw_all_functional_patterns();
        let w = version.width() as usize;
        let maskable = (w <= BIT_ROWS_MAX).then(|| {
            let rows: Vec<u128> = (0..w)
                .map(|y| {
                    (0..w)
                        // At most 120 modules wide here: the coordinates fit an i16.
                        .filter(|&x| matches!(canvas.get(x as i16, y as i16), Module::Empty))
                        .fold(0, |row, x| row | 1 << (x + QUIET_ZONE))
                })
                .collect();
            Maskable {
                columns: transposed(&rows),
                rows,
            }
        });
        Template { canvas, maskable }
    }

    /// The template of `version`, made on first use (Pix codes use a handful of versions);
    /// `None` for a version other than the normal 1 to 40 (`encode_auto` chooses no other).
    fn of(version: Version) -> Option<&'static Template> {
        static TEMPLATES: [std::sync::OnceLock<Template>; 40] =
            [const { std::sync::OnceLock::new() }; 40];
        let Version::Normal(v @ 1..=40) = version else {
            return None;
        };
        Some(TEMPLATES[v as usize - 1].get_or_init(|| Template::new(version)))
    }
}

/// The 15 bits of format information for level M and `mask` (ISO/IEC 18004, 7.9): the level
/// (`00` for M) and the mask number, a BCH(15, 5) remainder, XORed with `101010000010010`.
fn format_information(mask: MaskPattern) -> u32 {
    const GENERATOR: u32 = 0b101_0011_0111;
    let data = mask as u32; // level M's two bits are 00
    let mut remainder = data << 10;
    for bit in (10..15).rev() {
        if remainder >> bit & 1 == 1 {
            remainder ^= GENERATOR << (bit - 10);
        }
    }
    ((data << 10) | remainder) ^ 0b101_0100_0001_0010
}

/// Where the format information goes, (x, y) with negative coordinates from the far edge, its
/// most significant bit first: around the top-left finder pattern, and split between the
/// bottom-left and top-right ones.
const FORMAT_MAIN: [(i16, i16); 15] = [
    (0, 8),
    (1, 8),
    (2, 8),
    (3, 8),
    (4, 8),
    (5, 8),
    (7, 8),
    (8, 8),
    (8, 7),
    (8, 5),
    (8, 4),
    (8, 3),
    (8, 2),
    (8, 1),
    (8, 0),
];
const FORMAT_SIDE: [(i16, i16); 15] = [
    (8, -1),
    (8, -2),
    (8, -3),
    (8, -4),
    (8, -5),
    (8, -6),
    (8, -7),
    (-8, 8),
    (-7, 8),
    (-6, 8),
    (-5, 8),
    (-4, 8),
    (-3, 8),
    (-2, 8),
    (-1, 8),
];

/// Renders `text` as a QR code (error correction level M, the usual choice for Pix) and returns
/// a black-on-white PNG in standard base64, without a `data:` prefix. Each module is 8 × 8
/// pixels and a 4-module quiet zone surrounds the symbol, so the image is `(modules + 8) × 8`
/// pixels square. One bit per pixel, and every pixel row of a module row repeats the one above,
/// which the image data sends as a copy ([`zlib`]): a Pix code's image is about 1 KB, where
/// a general compressor at its fastest made 2.5 KB and an 8-bit image 52 KB.
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
        let template = Template::of(version).ok_or_else(|| DomainError::QrImage {
            reason: format!("QR version {version:?} is not a normal version"),
        })?;
        let mut canvas = template.canvas.clone();
        canvas.draw_data(&data, &ec);
        // Every mask is tried, as the standard asks, and scored here: the `qrcode` crate's own
        // scoring took a quarter of the gateway's CPU per charge. Masking as bit rows instead
        // of a copy of the crate's canvas per mask halved what remained (179 → 78 µs a code,
        // `cargo bench -p pixgw --bench qr`). Every Pix code fits [`Unmasked`]'s bit rows;
        // wider symbols go the canvas's way.
        let width = version.width() as usize;
        let symbol = match template.maskable.as_ref() {
            Some(maskable) => {
                let unmasked = Unmasked::of(canvas, maskable);
                let (mask, rows) = MASKS
                    .iter()
                    .map(|&mask| (mask, unmasked.masked(mask)))
                    .min_by_key(|(_, rows)| rows.penalty())
                    .expect("eight masks");
                rows.into_symbol(mask)
            }
            None => MASKS
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
                .expect("eight masks"),
        };
        Ok(symbol)
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

    /// The penalty counts bits: x86-64's baseline has no population count instruction, and
    /// emulating it was a fifth of a QR image's time, so where the CPU has one it is used.
    fn penalty(&self) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the instruction, checked just above.
            return unsafe { self.penalty_with_popcnt() };
        }
        self.score()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn penalty_with_popcnt(&self) -> u32 {
        self.score()
    }

    /// Inlined into each [`BitRows::penalty`] variant, so each is compiled for its CPU: plain
    /// loops, since an iterator adapter's `fold` would be a function of its own, compiled
    /// without the instruction.
    #[inline(always)]
    fn score(&self) -> u32 {
        let w = self.width;
        let modules = ((1u128 << w) - 1) << QUIET_ZONE;
        let mut score = 0;
        for lines in [&self.rows, &self.columns] {
            for &line in lines {
                score += bit_line_penalty(line, w);
            }
        }
        // A block's top-left module at x: both rows agree at x and x + 1, and the top row's
        // two modules agree.
        let block_corners = ((1u128 << (w - 1)) - 1) << QUIET_ZONE;
        for pair in self.rows.windows(2) {
            let (top, bottom) = (pair[0], pair[1]);
            let same_below = !(top ^ bottom) & modules;
            let blocks = same_below & (same_below >> 1) & !(top ^ (top >> 1)) & block_corners;
            score += 3 * blocks.count_ones();
        }
        let mut dark = 0;
        for row in &self.rows {
            dark += row.count_ones();
        }
        score + dark_share_penalty(dark, (w * w) as u32)
    }
}

impl BitRows {
    fn into_symbol(self, mask: MaskPattern) -> Symbol {
        let w = self.width;
        let mut dark = Vec::with_capacity(w * w);
        for row in &self.rows {
            dark.extend((0..w).map(|x| row >> (x + QUIET_ZONE) & 1 == 1));
        }
        Symbol {
            width: w,
            dark,
            mask,
        }
    }
}

/// The columns of a symbol whose rows are `rows` (module `i` of a line at bit `i + 4`, as
/// [`BitRows`] holds lines).
fn transposed(rows: &[u128]) -> Vec<u128> {
    let width = rows.len();
    // Row y at index y + QUIET_ZONE, so that column x comes out at index x + QUIET_ZONE with
    // row y at bit y + QUIET_ZONE.
    let mut matrix = [0u128; 128];
    matrix[QUIET_ZONE..QUIET_ZONE + width].copy_from_slice(rows);
    transpose(&mut matrix);
    matrix[QUIET_ZONE..QUIET_ZONE + width].to_vec()
}

/// Transposes a 128 × 128 bit matrix in place (bit c of row r goes to bit r of row c): seven
/// rounds, each swapping the off-diagonal blocks of every block of side 2j (Hacker's Delight,
/// 7-3).
fn transpose(matrix: &mut [u128; 128]) {
    let mut j = 64;
    // The bits whose index has bit j clear.
    let mut low: u128 = u128::MAX >> 64;
    while j != 0 {
        for k in (0..128).filter(|k| k & j == 0) {
            let t = ((matrix[k] >> j) ^ matrix[k + j]) & low;
            matrix[k] ^= t << j;
            matrix[k + j] ^= t;
        }
        j >>= 1;
        low ^= low << j;
    }
}

/// A drawn symbol before masking, as [`BitRows`] lines: its colours, and which modules a mask
/// inverts (data and error correction; not the function patterns). Masking is then one XOR a
/// row and one a column, and the format information (which names the mask) fifteen bits set
/// twice in each: the symbol is transposed once, not once per mask.
struct Unmasked {
    width: usize,
    rows: Vec<u128>,
    columns: Vec<u128>,
    maskable: &'static Maskable,
}

impl Unmasked {
    /// `canvas` drawn on its version's [`Template`], whose `maskable` lines are given (at most
    /// [`BIT_ROWS_MAX`] wide). The data modules were empty on the template, so they are the
    /// maskable ones (and `Empty` modules left, remainder bits, are masked as light data).
    fn of(canvas: Canvas, maskable: &'static Maskable) -> Unmasked {
        let w = maskable.rows.len();
        let rows: Vec<u128> = canvas
            .into_colors()
            .chunks_exact(w)
            .map(|row| {
                let mut bits = 0u128;
                for (x, &color) in row.iter().enumerate() {
                    bits |= u128::from(color == Color::Dark) << (x + QUIET_ZONE);
                }
                bits
            })
            .collect();
        Unmasked {
            width: w,
            columns: transposed(&rows),
            rows,
            maskable,
        }
    }

    /// The symbol under `mask`, format information included, as the standard (and
    /// `Canvas::apply_mask`) draws it.
    fn masked(&self, mask: MaskPattern) -> BitRows {
        let w = self.width;
        let lines = mask_lines();
        let masked = |dark: &[u128], inverted: &[u128; MASK_PERIOD], maskable: &[u128]| {
            (0..w)
                .map(|i| dark[i] ^ (inverted[i % MASK_PERIOD] & maskable[i]))
                .collect::<Vec<u128>>()
        };
        let mut rows = masked(&self.rows, &lines.rows[mask as usize], &self.maskable.rows);
        let mut columns = masked(
            &self.columns,
            &lines.columns[mask as usize],
            &self.maskable.columns,
        );
        // The format modules are function modules, drawn light before masking: set the dark
        // ones. Bit 14 (the most significant) goes first in both copies.
        let format = format_information(mask);
        let wrap = |c: i16| {
            if c < 0 {
                w - c.unsigned_abs() as usize
            } else {
                c as usize
            }
        };
        for copy in [FORMAT_MAIN, FORMAT_SIDE] {
            for (i, &(x, y)) in copy.iter().enumerate() {
                if format >> (14 - i) & 1 == 1 {
                    let (x, y) = (wrap(x), wrap(y));
                    rows[y] |= 1 << (x + QUIET_ZONE);
                    columns[x] |= 1 << (y + QUIET_ZONE);
                }
            }
        }
        BitRows {
            width: w,
            rows,
            columns,
        }
    }
}

/// [`line_penalty`] of a line held as [`BitRows`] holds it.
#[inline(always)]
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
    // Finder-like windows of eleven modules over the line with its quiet zone: the core (dark,
    // light, three dark, light, dark) then four light, or four light then the core. Bit s of a
    // match set is a window starting at bit s, for s in 0..=w - 3 (the last eleven bits of the
    // padded line), the line's order being the bits' order.
    let light = !line;
    let core =
        line & (light >> 1) & (line >> 2) & (line >> 3) & (line >> 4) & (light >> 5) & (line >> 6);
    let four_light = light & (light >> 1) & (light >> 2) & (light >> 3);
    let starts = (1u128 << (w - 2)) - 1;
    let finder_then_light = core & (four_light >> 7) & starts;
    let light_then_finder = four_light & (core >> 4) & starts;
    score += 40 * (finder_then_light.count_ones() + light_then_finder.count_ones());
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

    // A module is 8 pixels wide, one byte of 1-bit pixels (white set): a row of modules is a
    // scanline of bytes after its filter byte (0, none), repeated for the module's height.
    const _: () = assert!(MODULE_PX == 8);
    let mut light = vec![0xffu8; 1 + side_modules];
    light[0] = 0;
    let symbol_rows = symbol.dark.chunks_exact(modules).map(|dark| {
        let mut row = light.clone();
        for (pixels, &dark) in row[1 + QUIET_ZONE..][..modules].iter_mut().zip(dark) {
            *pixels = if dark { 0x00 } else { 0xff };
        }
        row
    });
    let rows: Vec<Vec<u8>> = std::iter::repeat_n(light.clone(), QUIET_ZONE)
        .chain(symbol_rows)
        .chain(std::iter::repeat_n(light.clone(), QUIET_ZONE))
        .collect();
    let image_data = zlib::compress_rows(
        rows.iter()
            .flat_map(|row| std::iter::repeat_n(row.as_slice(), MODULE_PX)),
    );

    let png_error = |e: png::EncodingError| DomainError::QrImage {
        reason: e.to_string(),
    };
    // At most (177 + 8) × 8 = 1480 pixels for the largest QR version.
    let side = u32::try_from(side_px).map_err(|_| DomainError::QrImage {
        reason: format!("{side_px} pixels is too wide"),
    })?;
    let mut out = Vec::with_capacity(image_data.len() + 64);
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer
        .write_chunk(png::chunk::IDAT, &image_data)
        .map_err(png_error)?;
    writer.finish().map_err(png_error)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qrcode::QrCode;

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
            assert!(bytes <= 1024, "{bytes} bytes for {} characters", text.len());
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
                // The CPU's bit count and the portable one agree.
                let rows = BitRows::of(&symbol).unwrap();
                assert_eq!(rows.score(), rows.penalty(), "{end} {mask:?}");
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

    /// Masking as bit rows draws what the `qrcode` crate's canvas draws, module for module
    /// (format information included), for every mask of every version the rows hold.
    #[test]
    fn bit_masking_is_the_canvas_masking() {
        let mut last = 0;
        for v in 1.. {
            let version = Version::Normal(v);
            let width = version.width() as usize;
            if width > BIT_ROWS_MAX {
                break;
            }
            let mut bits = qrcode::bits::Bits::new(version);
            bits.push_byte_data(&DYNAMIC_BR_CODE.as_bytes()[..10 + v as usize])
                .unwrap();
            bits.push_terminator(EcLevel::M).unwrap();
            let (data, ec) =
                qrcode::ec::construct_codewords(&bits.into_bytes(), version, EcLevel::M).unwrap();
            let mut canvas = Canvas::new(version, EcLevel::M);
            canvas.draw_all_functional_patterns();
            canvas.draw_data(&data, &ec);
            let maskable = Template::of(version).unwrap().maskable.as_ref().unwrap();
            let unmasked = Unmasked::of(canvas.clone(), maskable);
            for mask in MASKS {
                let mut masked = canvas.clone();
                masked.apply_mask(mask);
                let expected: Vec<bool> = masked
                    .into_colors()
                    .into_iter()
                    .map(|c| c == Color::Dark)
                    .collect();
                let ours = unmasked.masked(mask);
                let columns = ours.columns.clone();
                let symbol = ours.into_symbol(mask);
                assert!(symbol.dark == expected, "version {v}, {mask:?}");
                // The columns are the rows transposed.
                let transposed = BitRows::of(&symbol).unwrap();
                assert_eq!(columns, transposed.columns, "version {v}, {mask:?}");
            }
            last = v;
        }
        assert_eq!(last, 25, "the widest version the bit rows hold");
    }

    /// Symbols wider than the bit rows hold are masked and scored on the canvas: one reads
    /// back.
    #[test]
    fn a_symbol_wider_than_the_bit_rows_reads_back() {
        let text: String = DYNAMIC_BR_CODE.chars().cycle().take(1_200).collect();
        let symbol = Symbol::encode(&text).unwrap();
        assert!(symbol.width > BIT_ROWS_MAX, "{} modules", symbol.width);
        assert!(
            Template::of(Version::Normal(40))
                .unwrap()
                .maskable
                .is_none()
        );
        assert!(Template::of(Version::Micro(1)).is_none());
        let (pixels, side) = pixels(&qr_png_base64(&text).unwrap());
        assert_eq!(side, (symbol.width + 2 * QUIET_ZONE) * MODULE_PX);
        assert_eq!(read_qr(&pixels, side).as_deref(), Some(text.as_str()));
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
