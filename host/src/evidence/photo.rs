//! A sale photo, checked by decoding it and stored as a fresh JPEG.
//!
//! Only JPEG, PNG and WebP are taken, recognised by their content (never by a file name or a
//! declared type). The photo is decoded under limits that refuse decompression bombs before
//! any pixel is allocated, turned upright by its EXIF orientation, scaled down to at most
//! [`MAX_STORED_SIDE`] pixels on its longest side, and encoded again as JPEG: what is stored
//! carries no EXIF (GPS position, camera serial), ICC or any other metadata of the original.
//!
//! Decoding and encoding are CPU work of up to a second: callers run [`reencode`] on a
//! blocking thread.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, RgbImage};

/// The longest side of a stored photo: plenty to read a receipt or recognise a shop front.
pub const MAX_STORED_SIDE: u32 = 2048;
/// Photos wider or taller than this are refused before decoding.
pub const MAX_SIDE: u32 = 12_000;
/// The decoded pixels of one photo may take at most this much memory (a 48-megapixel phone
/// photo takes 144 MB).
pub const MAX_DECODED_BYTES: u64 = 200 * 1024 * 1024;
/// JPEG quality of stored photos.
const QUALITY: u8 = 85;

/// A photo ready to be stored.
#[derive(Debug, Clone)]
pub struct Photo {
    /// JPEG, without metadata.
    pub jpeg: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

impl Photo {
    pub const CONTENT_TYPE: &'static str = "image/jpeg";
}

/// Why a file is not taken as a photo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhotoError {
    /// Not an image at all (a text file renamed `.jpg`, a PDF…).
    #[error("the file is not a JPEG, PNG or WebP image")]
    NotAnImage,
    /// An image, of a format we do not take (GIF, TIFF, HEIC…).
    #[error("{0} images are not taken: send a JPEG, PNG or WebP photo")]
    Unsupported(String),
    #[error(
        "the image has too many pixels: photos may have at most {MAX_SIDE} pixels a side and {max_megapixels} megapixels",
        max_megapixels = MAX_DECODED_BYTES / 3 / 1_000_000
    )]
    TooManyPixels,
    /// It starts like an image but cannot be decoded (truncated, damaged).
    #[error("the image cannot be read: {0}")]
    Damaged(String),
}

/// Checks that `bytes` is a JPEG, PNG or WebP image by decoding it, and re-encodes it.
pub fn reencode(bytes: &[u8]) -> Result<Photo, PhotoError> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| PhotoError::Damaged(e.to_string()))?;
    match reader.format() {
        Some(ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::WebP) => {}
        Some(other) => {
            return Err(PhotoError::Unsupported(
                other
                    .extensions_str()
                    .first()
                    .map_or_else(|| format!("{other:?}"), |e| e.to_uppercase()),
            ));
        }
        None => return Err(PhotoError::NotAnImage),
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    let mut reader = reader;
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(refusal)?;
    // The header's size, checked before a single pixel is decoded: a few kilobytes can claim
    // gigabytes of pixels.
    if decoder.total_bytes() > MAX_DECODED_BYTES {
        return Err(PhotoError::TooManyPixels);
    }
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).map_err(refusal)?;
    image.apply_orientation(orientation);
    if image.width().max(image.height()) > MAX_STORED_SIDE {
        image = image.resize(MAX_STORED_SIDE, MAX_STORED_SIDE, FilterType::Triangle);
    }
    let rgb = flatten(image);
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(&mut jpeg, QUALITY)
        .encode_image(&rgb)
        .map_err(|e| PhotoError::Damaged(e.to_string()))?;
    Ok(Photo {
        jpeg,
        width: rgb.width(),
        height: rgb.height(),
    })
}

/// An image's pixels as RGB, transparent parts laid on white (JPEG has no transparency, and
/// a receipt photographed as a PNG with an alpha channel should not turn black).
fn flatten(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.into_rgb8();
    }
    let rgba = image.into_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let over_white =
            |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
        image::Rgb([over_white(r), over_white(g), over_white(b)])
    })
}

/// A decoder's refusal, in the terms of [`PhotoError`].
fn refusal(error: ImageError) -> PhotoError {
    match error {
        ImageError::Limits(_) => PhotoError::TooManyPixels,
        ImageError::Unsupported(e) => PhotoError::Unsupported(e.to_string()),
        other => PhotoError::Damaged(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    fn gradient(width: u32, height: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }))
    }

    /// Whether a JPEG holds an APP1 segment (where EXIF and XMP live).
    pub(crate) fn has_app1(jpeg: &[u8]) -> bool {
        let mut at = 2;
        while at + 4 <= jpeg.len() && jpeg[at] == 0xFF {
            let marker = jpeg[at + 1];
            if marker == 0xDA {
                break;
            }
            if marker == 0xE1 {
                return true;
            }
            let len = u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
            at += 2 + len;
        }
        false
    }

    /// A JPEG with an EXIF segment holding `orientation` (and nothing else), spliced in after
    /// the start-of-image marker as cameras write it.
    fn with_exif(jpeg: &[u8], orientation: u16) -> Vec<u8> {
        let mut tiff = Vec::new();
        tiff.extend_from_slice(b"MM\0\x2a\0\0\0\x08");
        tiff.extend_from_slice(&1u16.to_be_bytes()); // one entry
        tiff.extend_from_slice(&0x0112u16.to_be_bytes()); // Orientation
        tiff.extend_from_slice(&3u16.to_be_bytes()); // SHORT
        tiff.extend_from_slice(&1u32.to_be_bytes());
        tiff.extend_from_slice(&orientation.to_be_bytes());
        tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        let mut app1 = b"Exif\0\0".to_vec();
        app1.extend_from_slice(&tiff);
        let mut out = jpeg[..2].to_vec();
        out.extend_from_slice(&[0xFF, 0xE1]);
        out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
        out.extend_from_slice(&app1);
        out.extend_from_slice(&jpeg[2..]);
        out
    }

    #[test]
    fn jpeg_png_and_webp_are_taken_and_stored_as_jpeg() {
        let image = gradient(64, 48);
        for format in [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::WebP] {
            let photo = reencode(&encoded(&image, format)).unwrap();
            assert_eq!((photo.width, photo.height), (64, 48), "{format:?}");
            assert_eq!(image::guess_format(&photo.jpeg).unwrap(), ImageFormat::Jpeg);
        }
    }

    #[test]
    fn metadata_is_dropped_and_the_photo_turned_upright() {
        let original = encoded(&gradient(80, 40), ImageFormat::Jpeg);
        // 6: the camera was turned a quarter: shown upright, the photo is 40 wide, 80 tall.
        let camera = with_exif(&original, 6);
        assert!(has_app1(&camera));
        let photo = reencode(&camera).unwrap();
        assert!(!has_app1(&photo.jpeg), "EXIF must not be stored");
        assert_eq!((photo.width, photo.height), (40, 80));
    }

    #[test]
    fn large_photos_are_scaled_to_the_longest_side() {
        let photo = reencode(&encoded(&gradient(3000, 1500), ImageFormat::Png)).unwrap();
        assert_eq!((photo.width, photo.height), (MAX_STORED_SIDE, 1024));
    }

    #[test]
    fn transparency_becomes_white() {
        let clear = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            8,
            8,
            image::Rgba([0, 0, 0, 0]),
        ));
        let photo = reencode(&encoded(&clear, ImageFormat::Png)).unwrap();
        let back = image::load_from_memory(&photo.jpeg).unwrap().into_rgb8();
        assert!(back.get_pixel(4, 4).0.iter().all(|c| *c > 245));
    }

    #[test]
    fn what_is_not_a_photo_is_refused() {
        assert_eq!(
            reencode(b"Nota fiscal 123\nTotal R$ 19,90\n").unwrap_err(),
            PhotoError::NotAnImage
        );
        assert_eq!(reencode(b"").unwrap_err(), PhotoError::NotAnImage);
        assert!(matches!(
            reencode(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap_err(),
            PhotoError::Unsupported(_)
        ));
        // A JPEG cut in half.
        let jpeg = encoded(&gradient(64, 64), ImageFormat::Jpeg);
        assert!(matches!(
            reencode(&jpeg[..jpeg.len() / 2]).unwrap_err(),
            PhotoError::Damaged(_)
        ));
    }

    /// A PNG's signature, header and the start of its pixel data: all a decoder reads before
    /// it knows the image's size. (The pixels themselves would be gigabytes.)
    fn png_header(width: u32, height: u32, color: u8, depth: u8) -> Vec<u8> {
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = 0xFFFF_FFFFu32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 == 1 {
                        (crc >> 1) ^ 0xEDB8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        }
        let chunk = |out: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let mut body = kind.to_vec();
            body.extend_from_slice(data);
            out.extend_from_slice(&body);
            out.extend_from_slice(&crc32(&body).to_be_bytes());
        };
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&width.to_be_bytes());
        ihdr.extend_from_slice(&height.to_be_bytes());
        ihdr.extend_from_slice(&[depth, color, 0, 0, 0]);
        chunk(&mut png, b"IHDR", &ihdr);
        // The start of a zlib stream: a decoder checking the size never reads further.
        chunk(
            &mut png,
            b"IDAT",
            &[0x78, 0x9C, 0xED, 0xC1, 0x01, 0x0D, 0x00, 0x00],
        );
        png
    }

    /// A PNG of a few dozen bytes that claims 100,000 × 100,000 pixels is refused from its
    /// header, before anything is allocated for its pixels.
    #[test]
    fn decompression_bombs_are_refused_from_the_header() {
        assert_eq!(
            reencode(&png_header(100_000, 100_000, 0, 8)).unwrap_err(),
            PhotoError::TooManyPixels
        );
        // Within each side's limit, too many bytes of pixels all the same (RGBA, 16 bits).
        assert_eq!(
            reencode(&png_header(11_000, 11_000, 6, 16)).unwrap_err(),
            PhotoError::TooManyPixels
        );
        // Sanity: the same header at a modest size is taken as far as its (missing) pixels.
        assert!(matches!(
            reencode(&png_header(100, 100, 0, 8)).unwrap_err(),
            PhotoError::Damaged(_)
        ));
    }
}
