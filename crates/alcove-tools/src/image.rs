//! Images for the model: a PNG, JPEG, GIF or WebP made to fit what the
//! model APIs take, and a line saying what was sent.
//!
//! The limits are the stricter provider's, so one image suits every wire:
//! Anthropic refuses an image over 5 MB of base64 and one over 2,000 px on
//! a side once a request holds more than 20 images (8,000 px otherwise),
//! and downscales anything past about 1,568 px itself; OpenAI takes 20 MB
//! and scales to 2,048 px. An image within both limits goes as it is (an
//! animated GIF stays animated); a larger one is scaled to fit
//! [`MAX_EDGE`] and re-encoded (PNG when it has transparency, else JPEG),
//! at lower JPEG qualities and sizes until it fits [`MAX_BASE64`].
//!
//! Decoding is bounded: a small file can declare a huge image (a 380 KB PNG
//! of 20000x20000 took 1 GB to decode). An image whose header declares
//! more than [`MAX_DECLARED_EDGE`] on a side or [`MAX_PIXELS`] in all is
//! refused from its header, before anything is decoded, and a decode never
//! allocates more than [`MAX_DECODE_BYTES`].

use std::io::Cursor;

use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader};

/// The longest side an image is sent with, in pixels.
pub const MAX_EDGE: u32 = 2000;
/// The most base64 bytes one image may take (Anthropic's 5 MB).
pub const MAX_BASE64: usize = 5 * 1024 * 1024;
/// The largest image file read at all.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// The longest side an image may declare: Anthropic refuses an image past
/// 8,000 px on a side whatever else it holds.
pub const MAX_DECLARED_EDGE: u32 = 8000;
/// The most pixels an image may declare (width × height): 8K UHD, 7680 ×
/// 4320. Decoded as 8-bit RGBA it takes 133 MB.
pub const MAX_PIXELS: u64 = 7680 * 4320;
/// The most memory one decode may allocate (the `image` crate's limit).
pub const MAX_DECODE_BYTES: u64 = 320 * 1024 * 1024;

/// An image ready for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes in standard base64.
    pub data: String,
}

/// An image made ready, and what to tell the model about it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The image to send.
    pub image: Image,
    /// `PNG, 2400x1600, 3.1 MB; sent resized to 2000x1333 (JPEG, 412 KB)`.
    pub description: String,
}

/// The media type of bytes that are one of the four formats, by content.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match image::guess_format(bytes).ok()? {
        ImageFormat::Png => Some("image/png"),
        ImageFormat::Jpeg => Some("image/jpeg"),
        ImageFormat::Gif => Some("image/gif"),
        ImageFormat::WebP => Some("image/webp"),
        _ => None,
    }
}

/// Makes `bytes` (a PNG, JPEG, GIF or WebP) fit the limits.
pub fn prepare(bytes: &[u8]) -> Result<Prepared, String> {
    let media_type = sniff(bytes).ok_or("not a PNG, JPEG, GIF or WebP image")?;
    let name = format_name(media_type);
    let reader = || {
        ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| format!("cannot read the {name} image: {e}"))
    };
    // The header only: nothing is decoded yet.
    let (width, height) = reader()?
        .into_dimensions()
        .map_err(|e| format!("cannot read the {name} image: {e}"))?;
    let original = format!("{name}, {width}x{height}, {}", size(bytes.len()));
    let pixels = u64::from(width) * u64::from(height);
    if width.max(height) > MAX_DECLARED_EDGE || pixels > MAX_PIXELS {
        return Err(format!(
            "{original}: the image declares {:.1} megapixels, more than the model APIs take \
             (at most {MAX_DECLARED_EDGE} px a side and {:.1} megapixels); it was not decoded. \
             Scale it down first (e.g. `convert in.png -resize 2000x2000 out.png`) and read that",
            pixels as f64 / 1e6,
            MAX_PIXELS as f64 / 1e6
        ));
    }
    let fits = width.max(height) <= MAX_EDGE && base64_len(bytes.len()) <= MAX_BASE64;
    if fits {
        return Ok(Prepared {
            image: Image {
                media_type: media_type.to_owned(),
                data: encode(bytes),
            },
            description: original,
        });
    }
    let mut reader = reader()?;
    reader.limits(decode_limits());
    let decoded = reader
        .decode()
        .map_err(|e| format!("cannot decode the {name} image: {e}"))?;
    let (bytes, media_type, shown) = shrink(&decoded)?;
    Ok(Prepared {
        description: format!(
            "{original}; sent resized to {}x{} ({}, {})",
            shown.width(),
            shown.height(),
            format_name(media_type),
            size(bytes.len())
        ),
        image: Image {
            media_type: media_type.to_owned(),
            data: encode(&bytes),
        },
    })
}

/// What one decode may take: the declared-size caps again (a format whose
/// dimensions the header check could not see still meets them) and the
/// memory ceiling.
fn decode_limits() -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DECLARED_EDGE);
    limits.max_image_height = Some(MAX_DECLARED_EDGE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    limits
}

/// Base64 `data` decoded and made to fit (an MCP server's image).
pub fn prepare_base64(data: &str) -> Result<Prepared, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image is not valid base64: {e}"))?;
    prepare(&bytes)
}

/// Scales and re-encodes until the image fits: each round a smaller edge
/// or a lower JPEG quality.
fn shrink(decoded: &DynamicImage) -> Result<(Vec<u8>, &'static str, DynamicImage), String> {
    let alpha = decoded.color().has_alpha();
    let mut edge = MAX_EDGE.min(decoded.width().max(decoded.height()));
    for round in 0..8 {
        let scaled = if decoded.width().max(decoded.height()) > edge {
            decoded.resize(edge, edge, image::imageops::FilterType::Triangle)
        } else {
            decoded.clone()
        };
        let (bytes, media_type) = if alpha && round < 2 {
            (encode_as(&scaled, ImageFormat::Png)?, "image/png")
        } else {
            let quality = [85, 75, 60, 50][round.min(3)];
            (jpeg(&scaled, quality)?, "image/jpeg")
        };
        if base64_len(bytes.len()) <= MAX_BASE64 {
            return Ok((bytes, media_type, scaled));
        }
        if round >= 1 {
            edge = edge * 3 / 4;
        }
    }
    Err("the image is too large to send even when scaled down".to_owned())
}

fn encode_as(image: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, String> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, format)
        .map_err(|e| format!("cannot encode the image: {e}"))?;
    Ok(out.into_inner())
}

fn jpeg(image: &DynamicImage, quality: u8) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&rgb)
        .map_err(|e| format!("cannot encode the image: {e}"))?;
    Ok(out)
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

fn format_name(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "PNG",
        "image/jpeg" => "JPEG",
        "image/gif" => "GIF",
        _ => "WebP",
    }
}

/// `412 KB`, `3.1 MB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
        let mut seed = 7u32;
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            if noisy {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                image::Rgb([(seed >> 24) as u8, (seed >> 16) as u8, (seed >> 8) as u8])
            } else {
                image::Rgb([(x % 256) as u8, (y % 256) as u8, 99])
            }
        });
        encode_as(&DynamicImage::ImageRgb8(image), ImageFormat::Png).unwrap()
    }

    #[test]
    fn a_small_image_goes_as_it_is() {
        let bytes = png(40, 30, false);
        let prepared = prepare(&bytes).unwrap();
        assert_eq!(prepared.image.media_type, "image/png");
        assert_eq!(prepared.image.data, encode(&bytes));
        assert!(
            prepared.description.starts_with("PNG, 40x30, "),
            "{}",
            prepared.description
        );
    }

    #[test]
    fn a_large_image_is_scaled_and_fits() {
        let prepared = prepare(&png(3000, 1500, false)).unwrap();
        assert!(
            prepared.description.contains("sent resized to 2000x1000"),
            "{}",
            prepared.description
        );
        assert!(prepared.image.data.len() <= MAX_BASE64);
        let noisy = png(1400, 1400, true);
        assert!(base64_len(noisy.len()) > MAX_BASE64);
        let prepared = prepare(&noisy).unwrap();
        assert!(prepared.image.data.len() <= MAX_BASE64);
        assert_eq!(prepared.image.media_type, "image/jpeg");
    }

    /// A PNG declaring `width`x`height` with an empty image stream:
    /// decoding it would fail, so a refusal can only come from the header.
    fn declared_png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = b"IHDR".to_vec();
        ihdr.extend_from_slice(&width.to_be_bytes());
        ihdr.extend_from_slice(&height.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        bytes.extend_from_slice(&13u32.to_be_bytes());
        bytes.extend_from_slice(&ihdr);
        bytes.extend_from_slice(&crc32(&ihdr).to_be_bytes());
        for kind in [b"IDAT", b"IEND"] {
            bytes.extend_from_slice(&0u32.to_be_bytes());
            bytes.extend_from_slice(kind);
            bytes.extend_from_slice(&crc32(kind).to_be_bytes());
        }
        bytes
    }

    #[test]
    fn an_image_declaring_too_many_pixels_is_refused_from_its_header() {
        let reason = prepare(&declared_png(20_000, 20_000)).unwrap_err();
        assert!(
            reason.starts_with("PNG, 20000x20000, ") && reason.contains("was not decoded"),
            "{reason}"
        );
        // Within a side's limit, past the total.
        let reason = prepare(&declared_png(7000, 6000)).unwrap_err();
        assert!(reason.contains("42.0 megapixels"), "{reason}");
        // Within both: decoded (and here found to hold no pixels).
        let reason = prepare(&declared_png(3000, 3000)).unwrap_err();
        assert!(reason.starts_with("cannot decode"), "{reason}");
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn what_is_not_an_image_says_so() {
        assert!(prepare(b"hello").is_err());
        assert_eq!(sniff(b"GIF89a\x01\x00\x01\x00"), Some("image/gif"));
        assert!(prepare_base64("%%%").is_err());
    }
}
