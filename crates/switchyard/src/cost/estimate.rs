//! A request's worst case, for budget reservations: an upper bound on its input tokens
//! and what that bound plus the output it is allowed can cost.
//!
//! No tokenizer is consulted. A token is never shorter than one byte, so the UTF-8 length
//! of every text, tool call, tool definition and response schema bounds it from above;
//! fixed overheads cover the framing vendors add (per message, per tool, the tool-use
//! scaffolding). Images are bounded by their pixel count when the request carries them
//! inline in a format whose header is read here (PNG, JPEG, GIF, WebP, BMP), and by a
//! documented per-image allowance otherwise. A request a provider sends as the client's own
//! body (`chat::Native`) is bounded by that body's bytes as well
//! ([`estimate_sent_input_tokens`]): everything in it goes upstream, modelled or not. The allowances are assumptions about vendor
//! tokenizers: a call that reports more input than its bound is reported to observers as
//! an overrun (`gateway::run`), never silently absorbed.

use super::{Money, Price};
use crate::chat::{ChatRequest, ContentPart, ImageSource, Message, ResponseFormat};

/// Input tokens assumed per message for role and framing overhead.
pub const ESTIMATE_TOKENS_PER_MESSAGE: u64 = 8;
/// Input tokens assumed once when a request carries tools: the scaffolding vendors wrap
/// around tool definitions (Anthropic's tool-use system prompt alone is a few hundred).
pub const ESTIMATE_TOKENS_FOR_TOOL_USE: u64 = 1_024;
/// Input tokens assumed per tool definition and per tool call for their framing.
pub const ESTIMATE_TOKENS_PER_TOOL: u64 = 32;
/// Input tokens assumed for an image whose pixel size is unknown here (a URL the vendor
/// fetches, or inline bytes in a format whose header is not read): enough for a
/// 12-megapixel photo on the per-pixel tokenizers (about 1.2 tokens per 32×32 patch).
pub const ESTIMATE_TOKENS_PER_UNSIZED_IMAGE: u64 = 16_384;
/// The least input tokens assumed for an image of known size: covers the vendors that
/// bill a capped or fixed budget per image (tiles, patch caps, media resolutions).
pub const ESTIMATE_TOKENS_PER_IMAGE_MIN: u64 = 4_096;

/// An upper bound on the request's input tokens, for budget reservations (see the module
/// docs for what it assumes).
#[must_use]
pub fn estimate_input_tokens(req: &ChatRequest) -> u64 {
    let mut total = req
        .messages
        .iter()
        .map(message_tokens)
        .fold(0, u64::saturating_add);
    if !req.tools.is_empty() {
        total = total.saturating_add(ESTIMATE_TOKENS_FOR_TOOL_USE);
    }
    for tool in &req.tools {
        let description = tool.description.as_ref().map_or(0, String::len);
        let schema = json_len(&tool.parameters);
        total = total
            .saturating_add(ESTIMATE_TOKENS_PER_TOOL)
            .saturating_add(len(tool.name.len() + description))
            .saturating_add(schema);
    }
    if let Some(ResponseFormat::JsonSchema { name, schema, .. }) = &req.response_format {
        total = total
            .saturating_add(len(name.len()))
            .saturating_add(json_len(schema));
    }
    total
}

/// An upper bound on the request's input tokens as a provider that takes native bodies of
/// `native_kind` sends it. When the request carries a body of that kind, the provider
/// sends that body as is, with what the shared shape does not model (Responses items such
/// as `custom_tool_call_output` or `computer_call_output`, Anthropic blocks of types the
/// gateway does not know, a stored conversation spliced in): the bound is then the larger
/// of [`estimate_input_tokens`] and the body's bytes ([`Native::wire_len`], a token being
/// never shorter than a byte), with the images the shared shape holds counted as it
/// counts them (by pixels, or the unsized allowance) instead of by their encoded bytes.
/// Any other provider sends the shared shape: [`estimate_input_tokens`].
///
/// [`Native::wire_len`]: crate::chat::Native::wire_len
#[must_use]
pub fn estimate_sent_input_tokens(req: &ChatRequest, native_kind: Option<&str>) -> u64 {
    let shared = estimate_input_tokens(req);
    let Some(native) = native_kind.and_then(|kind| req.native_continuing(kind)) else {
        return shared;
    };
    // the body carries each image the shared shape was decoded from, as the same text
    let (mut image_bytes, mut image_bound) = (0u64, 0u64);
    for part in req.messages.iter().flat_map(|m| &m.content) {
        if let ContentPart::Image { source, .. } = part {
            let text = match source {
                ImageSource::Base64 { data, .. } => data,
                ImageSource::Url { url } => url,
            };
            image_bytes = image_bytes.saturating_add(len(text.len()));
            image_bound = image_bound.saturating_add(image_tokens(source));
        }
    }
    let body = len(native.wire_len())
        .saturating_sub(image_bytes)
        .saturating_add(image_bound);
    shared.max(body)
}

/// What a request may cost at most at `price`: [`estimate_input_tokens`] at the dearest
/// input-side rate plus `output_tokens` (the most it is allowed to generate) at the
/// output rate. Reserved before dispatch.
#[must_use]
pub fn estimate_cost(req: &ChatRequest, price: &Price, output_tokens: u64) -> Money {
    price.worst_case(estimate_input_tokens(req), output_tokens)
}

fn message_tokens(m: &Message) -> u64 {
    let mut total = ESTIMATE_TOKENS_PER_MESSAGE;
    for part in &m.content {
        total = total.saturating_add(match part {
            ContentPart::Text { text } => len(text.len()),
            ContentPart::Image { source, .. } => image_tokens(source),
        });
    }
    for call in &m.tool_calls {
        let bytes = call.id.len() + call.name.len() + call.arguments.len();
        total = total
            .saturating_add(ESTIMATE_TOKENS_PER_TOOL)
            .saturating_add(len(bytes));
    }
    let ids =
        m.tool_call_id.as_ref().map_or(0, String::len) + m.name.as_ref().map_or(0, String::len);
    total.saturating_add(len(ids))
}

fn len(bytes: usize) -> u64 {
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// The length of a JSON value's compact text, counted without building the string.
fn json_len(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(len(buf.len()));
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// An image's input-token bound: from its pixels when known, else the unsized allowance.
fn image_tokens(source: &ImageSource) -> u64 {
    let data = match source {
        ImageSource::Base64 { data, .. } => Some(data.as_str()),
        ImageSource::Url { url } => url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .map(|(_, data)| data),
    };
    match data.and_then(|d| image_size(&Base64(d.as_bytes()))) {
        Some((w, h)) => pixel_tokens(w, h),
        None => ESTIMATE_TOKENS_PER_UNSIZED_IMAGE,
    }
}

/// 1.5 tokens per 32×32 patch (the per-pixel tokenizers charge about 1.2), at least
/// [`ESTIMATE_TOKENS_PER_IMAGE_MIN`].
fn pixel_tokens(width: u32, height: u32) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    (pixels.saturating_mul(3) / 2048 + 1).max(ESTIMATE_TOKENS_PER_IMAGE_MIN)
}

/// Random access to the bytes that base64 text encodes, without decoding all of it.
struct Base64<'a>(&'a [u8]);

impl Base64<'_> {
    fn byte(&self, k: usize) -> Option<u8> {
        let start = k / 3 * 4;
        let quad = self.0.get(start..start + 4)?;
        let mut v: u32 = 0;
        for &c in quad {
            v = v << 6 | sextet(c)?;
        }
        Some(v.to_be_bytes()[1 + k % 3])
    }

    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        let mut out = [0; N];
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.byte(at + i)?;
        }
        Some(out)
    }

    fn be16(&self, at: usize) -> Option<u32> {
        self.bytes::<2>(at)
            .map(|b| u32::from(u16::from_be_bytes(b)))
    }

    fn le(&self, at: usize, n: usize) -> Option<u32> {
        (0..n)
            .rev()
            .try_fold(0, |v, i| Some(v << 8 | u32::from(self.byte(at + i)?)))
    }
}

fn sextet(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        b'=' => 0,
        _ => return None,
    };
    Some(u32::from(v))
}

/// (width, height) from the header of a PNG, GIF, WebP, BMP or JPEG; `None` for anything
/// else (or a header that does not read).
fn image_size(img: &Base64<'_>) -> Option<(u32, u32)> {
    let magic = img.bytes::<4>(0)?;
    match &magic {
        [0x89, b'P', b'N', b'G'] => {
            Some((img.le(16, 4)?.swap_bytes(), img.le(20, 4)?.swap_bytes()))
        }
        [b'G', b'I', b'F', b'8'] => Some((img.le(6, 2)?, img.le(8, 2)?)),
        [b'R', b'I', b'F', b'F'] => webp_size(img),
        [b'B', b'M', ..] => {
            let height = i32::from_le_bytes(img.le(22, 4)?.to_le_bytes()).unsigned_abs();
            Some((img.le(18, 4)?, height))
        }
        [0xFF, 0xD8, ..] => jpeg_size(img),
        _ => None,
    }
}

fn webp_size(img: &Base64<'_>) -> Option<(u32, u32)> {
    if &img.bytes::<4>(8)? != b"WEBP" {
        return None;
    }
    match &img.bytes::<4>(12)? {
        b"VP8 " => Some((img.le(26, 2)? & 0x3FFF, img.le(28, 2)? & 0x3FFF)),
        b"VP8L" => {
            let bits = img.le(21, 4)?;
            Some((1 + (bits & 0x3FFF), 1 + (bits >> 14 & 0x3FFF)))
        }
        b"VP8X" => Some((1 + img.le(24, 3)?, 1 + img.le(27, 3)?)),
        _ => None,
    }
}

/// Walk the JPEG's segments to the first start-of-frame marker.
fn jpeg_size(img: &Base64<'_>) -> Option<(u32, u32)> {
    let mut at = 2;
    for _ in 0..1_000 {
        if img.byte(at)? != 0xFF {
            return None;
        }
        let marker = img.byte(at + 1)?;
        match marker {
            0xFF => at += 1, // fill byte
            0x01 | 0xD0..=0xD8 => at += 2,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some((img.be16(at + 7)?, img.be16(at + 5)?));
            }
            _ => at += 2 + usize::try_from(img.be16(at + 2)?).ok()?,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Message, Tool, ToolCall};

    fn b64(bytes: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(A[(v >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut v = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
        v.extend_from_slice(b"IHDR");
        v.extend_from_slice(&width.to_be_bytes());
        v.extend_from_slice(&height.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v
    }

    fn jpeg(width: u16, height: u16) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10];
        v.extend_from_slice(&[0; 14]); // an APP1 segment to skip
        v.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
        v.extend_from_slice(&height.to_be_bytes());
        v.extend_from_slice(&width.to_be_bytes());
        v.extend_from_slice(&[0; 12]);
        v
    }

    fn size_of(bytes: &[u8]) -> Option<(u32, u32)> {
        let text = b64(bytes);
        image_size(&Base64(text.as_bytes()))
    }

    #[test]
    fn image_headers_give_their_pixel_size() {
        assert_eq!(size_of(&png(4032, 3024)), Some((4032, 3024)));
        assert_eq!(size_of(&jpeg(9000, 6000)), Some((9000, 6000)));
        let gif = [b"GIF89a".as_slice(), &[0x20, 0x03, 0x58, 0x02, 0, 0]].concat();
        assert_eq!(size_of(&gif), Some((800, 600)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        vp8x.extend_from_slice(&[0x7F, 0x07, 0x00, 0x37, 0x04, 0x00]); // 1920 x 1080, minus one
        assert_eq!(size_of(&vp8x), Some((1920, 1080)));
        assert_eq!(size_of(b"not an image at all"), None);
        assert_eq!(image_size(&Base64(b"iVBOR!!!")), None, "not base64");
    }

    #[test]
    fn images_are_bounded_by_pixels_with_a_floor_and_unsized_ones_by_the_allowance() {
        let image = |data: String| ContentPart::Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data,
            },
            detail: None,
        };
        let mut req = ChatRequest::from_prompt("");
        req.messages[0].content = vec![image(b64(&png(9000, 6000)))];
        // 54 MP at 1.5 tokens per 1024 pixels; a per-pixel tokenizer charges ~63,000
        assert_eq!(
            estimate_input_tokens(&req),
            ESTIMATE_TOKENS_PER_MESSAGE + 54_000_000 * 3 / 2048 + 1
        );
        req.messages[0].content = vec![image(b64(&png(64, 64)))];
        assert_eq!(
            estimate_input_tokens(&req),
            ESTIMATE_TOKENS_PER_MESSAGE + ESTIMATE_TOKENS_PER_IMAGE_MIN
        );
        req.messages[0].content = vec![ContentPart::Image {
            source: ImageSource::Url {
                url: "https://example.com/cat.png".into(),
            },
            detail: None,
        }];
        assert_eq!(
            estimate_input_tokens(&req),
            ESTIMATE_TOKENS_PER_MESSAGE + ESTIMATE_TOKENS_PER_UNSIZED_IMAGE
        );
        req.messages[0].content = vec![ContentPart::Image {
            source: ImageSource::Url {
                url: format!("data:image/png;base64,{}", b64(&png(4000, 4000))),
            },
            detail: None,
        }];
        assert_eq!(
            estimate_input_tokens(&req),
            ESTIMATE_TOKENS_PER_MESSAGE + 16_000_000 * 3 / 2048 + 1
        );
    }

    #[test]
    fn tools_tool_calls_and_schemas_count_with_their_framing() {
        let mut req = ChatRequest::from_prompt("hi");
        let base = estimate_input_tokens(&req);
        req.tools.push(Tool {
            name: "get".into(),
            description: Some("fetch".into()),
            parameters: serde_json::json!({"type": "object"}),
            cache_control: None,
        });
        let schema = r#"{"type":"object"}"#.len() as u64;
        assert_eq!(
            estimate_input_tokens(&req),
            base + ESTIMATE_TOKENS_FOR_TOOL_USE + ESTIMATE_TOKENS_PER_TOOL + 3 + 5 + schema
        );
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "get".into(),
            arguments: "{}".into(),
        });
        req.messages.push(call);
        req.messages.push(Message::tool_result("c1", "get", "42"));
        req.response_format = Some(ResponseFormat::JsonSchema {
            name: "out".into(),
            schema: serde_json::json!({"type": "object"}),
            strict: None,
        });
        let with_tools =
            base + ESTIMATE_TOKENS_FOR_TOOL_USE + ESTIMATE_TOKENS_PER_TOOL + 8 + schema;
        let call_msg = ESTIMATE_TOKENS_PER_MESSAGE + ESTIMATE_TOKENS_PER_TOOL + 2 + 3 + 2;
        let result_msg = ESTIMATE_TOKENS_PER_MESSAGE + 2 + 2 + 3;
        assert_eq!(
            estimate_input_tokens(&req),
            with_tools + call_msg + result_msg + 3 + schema
        );
    }

    /// Issue 24 item 4: a Responses item the shared shape does not model goes upstream in
    /// the native body, and a provider that sends that body is bounded by its bytes.
    #[test]
    fn a_native_body_bounds_the_input_by_its_bytes_for_a_provider_that_sends_it() {
        use crate::chat::Native;
        let big = "x".repeat(300_000);
        let body = serde_json::json!({"model": "m", "input": [
            {"type": "custom_tool_call_output", "call_id": "c", "output": big}]});
        let mut req = ChatRequest::from_prompt("hi");
        let shared = estimate_input_tokens(&req);
        req.native = Some(Native::new("openai-responses", body));
        let wire = len(req.native.as_ref().unwrap().wire_len());
        assert!(wire > 300_000, "{wire}");
        assert_eq!(
            estimate_sent_input_tokens(&req, Some("openai-responses")),
            wire
        );
        // a provider that sends the shared shape, or natives of another kind, sends none of it
        assert_eq!(estimate_sent_input_tokens(&req, None), shared);
        assert_eq!(estimate_sent_input_tokens(&req, Some("anthropic")), shared);
        // a continuation's prefill is appended to the body
        req.native.as_mut().unwrap().prefill = Some("y".repeat(1000));
        assert_eq!(
            estimate_sent_input_tokens(&req, Some("openai-responses")),
            wire + 1000
        );
        // a small body never lowers the shared bound
        req.native = Some(Native::new("openai-responses", serde_json::json!({})));
        assert_eq!(
            estimate_sent_input_tokens(&req, Some("openai-responses")),
            shared
        );
    }

    /// Images in a native body count as the shared shape counts them, not by their encoded
    /// bytes: a screenshot in a Messages history does not reserve a token per byte.
    #[test]
    fn images_in_a_native_body_count_by_pixels_not_bytes() {
        use crate::chat::Native;
        let data = b64(&png(64, 64)) + &"A".repeat(400_000);
        let mut req = ChatRequest::from_prompt("");
        req.messages[0].content = vec![ContentPart::Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data: data.clone(),
            },
            detail: None,
        }];
        let shared = estimate_input_tokens(&req);
        assert_eq!(
            shared,
            ESTIMATE_TOKENS_PER_MESSAGE + ESTIMATE_TOKENS_PER_IMAGE_MIN
        );
        let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "unknown_block", "text": "z".repeat(10_000)}]}]});
        req.native = Some(Native::new("anthropic", body));
        let wire = len(req.native.as_ref().unwrap().wire_len());
        let bound = estimate_sent_input_tokens(&req, Some("anthropic"));
        assert_eq!(
            bound,
            wire - len(data.len()) + ESTIMATE_TOKENS_PER_IMAGE_MIN
        );
        assert!(bound > 10_000 && bound < 20_000, "{bound}");
    }

    #[test]
    fn worst_case_prices_input_at_the_dearest_input_rate() {
        // a cache write ($3.75) costs more than plain input ($3): the bound uses it
        let p = Price::from_usd_per_mtok(3.0, 15.0, Some(0.3), Some(3.75)).unwrap();
        let req = ChatRequest::from_prompt("hi");
        let input = 2 + ESTIMATE_TOKENS_PER_MESSAGE;
        let expect = i64::try_from(input).unwrap() * 3_750_000 + 100 * 15_000_000;
        assert_eq!(estimate_cost(&req, &p, 100), Money::from_picos(expect));
    }
}
