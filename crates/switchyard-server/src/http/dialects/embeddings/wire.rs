//! OpenAI's Embeddings JSON as clients send and expect it: the request (`input` as a
//! string, strings, a token array or token arrays; `model`, `encoding_format`,
//! `dimensions`, `user`) mapped to the shared [`EmbeddingRequest`], and the response body
//! (`object: "list"`, one `embedding` object per input, vectors as floats or as base64 of
//! their little-endian `f32` bytes, as OpenAI sends them). Other fields are ignored.

use serde::ser::{SerializeSeq as _, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard::embedding::{EmbeddingInput, EmbeddingRequest, MAX_DIMENSIONS, MAX_INPUTS};

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::dialects::json;
use crate::http::error::ApiError;

/// How the client wants its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// JSON numbers (the default).
    Float,
    /// Base64 of the little-endian `f32` bytes.
    Base64,
}

/// The request body, as read.
#[derive(Debug, Deserialize)]
pub struct WireRequest {
    /// The route.
    pub model: String,
    input: Value,
    encoding_format: Option<String>,
    dimensions: Option<Value>,
    user: Option<String>,
}

/// Parse a request body; a 400 names the field at fault.
///
/// # Errors
/// 400: not JSON, a missing or wrong-typed field.
pub fn parse(body: &[u8]) -> Result<WireRequest, ApiError> {
    json::parse(body, |path, message| json::invalid_field(path, &message))
}

fn bad(param: &str, msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), msg)
}

impl WireRequest {
    /// Refuse a `model` (taken out of the request as `model`) or `user` longer than the
    /// server keeps.
    ///
    /// # Errors
    /// 400 naming the field.
    pub fn check_lengths(&self, model: &str) -> Result<(), ApiError> {
        json::check_names(&[("model", Some(model)), ("user", self.user.as_deref())])
    }

    /// The shared shape and the encoding asked for.
    ///
    /// # Errors
    /// 400 naming the field: an `input` of another shape, empty, or with more than
    /// [`MAX_INPUTS`] items; an unknown `encoding_format`; `dimensions` not an integer from 1
    /// to [`MAX_DIMENSIONS`].
    pub fn into_request(self) -> Result<(EmbeddingRequest, Encoding), ApiError> {
        let encoding = match self.encoding_format.as_deref() {
            None | Some("float") => Encoding::Float,
            Some("base64") => Encoding::Base64,
            Some(other) => {
                return Err(bad(
                    "encoding_format",
                    format!(
                        "`encoding_format` must be \"float\" or \"base64\", not {:?}",
                        clip(other, ECHO_BYTES)
                    ),
                ))
            }
        };
        let dimensions = match self.dimensions {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..=MAX_DIMENSIONS).contains(n))
                    .ok_or_else(|| {
                        bad(
                            "dimensions",
                            format!("`dimensions` must be an integer from 1 to {MAX_DIMENSIONS}"),
                        )
                    })?,
            ),
        };
        let req = EmbeddingRequest {
            inputs: inputs(self.input)?,
            dimensions,
            user: self.user,
        };
        Ok((req, encoding))
    }
}

/// `input` in any of its four shapes, as a list of inputs.
fn inputs(input: Value) -> Result<Vec<EmbeddingInput>, ApiError> {
    const SHAPE: &str =
        "`input` must be a string, an array of strings, an array of token ids, or an array of token-id arrays";
    let items = match input {
        Value::String(s) => return Ok(vec![text(s, "input")?]),
        Value::Array(items) => items,
        _ => return Err(bad("input", SHAPE)),
    };
    if items.is_empty() {
        return Err(bad("input", "`input` must not be empty"));
    }
    if items.iter().all(Value::is_number) {
        return Ok(vec![EmbeddingInput::Tokens(tokens(&items, "input")?)]);
    }
    if items.len() > MAX_INPUTS {
        return Err(bad(
            "input",
            format!(
                "`input` has {} items; at most {MAX_INPUTS} are allowed",
                items.len()
            ),
        ));
    }
    let strings = items.first().is_some_and(Value::is_string);
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("input[{i}]");
            match item {
                Value::String(s) if strings => text(s, &at),
                Value::Array(ids) if !strings => tokens(&ids, &at).map(EmbeddingInput::Tokens),
                _ => Err(bad(
                    &at,
                    format!("{SHAPE} (one kind throughout); `{at}` is not like `input[0]`"),
                )),
            }
        })
        .collect()
}

fn text(s: String, at: &str) -> Result<EmbeddingInput, ApiError> {
    if s.is_empty() {
        return Err(bad(at, format!("`{at}` must not be an empty string")));
    }
    Ok(EmbeddingInput::Text(s))
}

fn tokens(ids: &[Value], at: &str) -> Result<Vec<u32>, ApiError> {
    if ids.is_empty() {
        return Err(bad(at, format!("`{at}` must not be an empty token array")));
    }
    ids.iter()
        .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| bad(at, format!("`{at}` must hold token ids (integers >= 0)")))
}

/// One vector on the wire, in the encoding the client asked for.
pub struct Vector<'a> {
    /// The values.
    pub values: &'a [f32],
    /// How to write them.
    pub encoding: Encoding,
}

impl Serialize for Vector<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.encoding {
            Encoding::Base64 => s.serialize_str(&base64_f32_le(self.values)),
            Encoding::Float => {
                let mut seq = s.serialize_seq(Some(self.values.len()))?;
                for v in self.values {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
        }
    }
}

/// Standard base64 (with padding) of the values' little-endian bytes: what OpenAI sends
/// for `encoding_format: "base64"` and its SDKs decode with `numpy.frombuffer(…, float32)`.
#[must_use]
pub fn base64_f32_le(values: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> Result<(EmbeddingRequest, Encoding), ApiError> {
        let wire = parse(body.as_bytes())?;
        wire.check_lengths(&wire.model)?;
        wire.into_request()
    }

    #[test]
    fn base64_matches_known_encodings() {
        assert_eq!(base64_f32_le(&[]), "");
        // 1.0f32 = 00 00 80 3f
        assert_eq!(base64_f32_le(&[1.0]), "AACAPw==");
        // 1.0, -2.0 = 00 00 80 3f 00 00 00 c0
        assert_eq!(base64_f32_le(&[1.0, -2.0]), "AACAPwAAAMA=");
        // three floats: 12 bytes, no padding
        assert_eq!(base64_f32_le(&[0.0, 0.0, 0.0]), "AAAAAAAAAAAAAAAA");
    }

    #[test]
    fn every_input_shape_is_read() {
        use EmbeddingInput::{Text, Tokens};
        let one = |s: &str| {
            parsed(&format!(r#"{{"model":"m","input":{s}}}"#))
                .unwrap()
                .0
                .inputs
        };
        assert_eq!(one(r#""hi""#), [Text("hi".into())]);
        assert_eq!(one(r#"["a","b"]"#), [Text("a".into()), Text("b".into())]);
        assert_eq!(one("[1,2,3]"), [Tokens(vec![1, 2, 3])]);
        assert_eq!(one("[[1],[2,3]]"), [Tokens(vec![1]), Tokens(vec![2, 3])]);
    }

    #[test]
    fn options_are_read() {
        let (req, enc) = parsed(
            r#"{"model":"m","input":"x","encoding_format":"base64","dimensions":256,"user":"u"}"#,
        )
        .unwrap();
        assert_eq!(enc, Encoding::Base64);
        assert_eq!(req.dimensions, Some(256));
        assert_eq!(req.user.as_deref(), Some("u"));
        let (_, enc) = parsed(r#"{"model":"m","input":"x","encoding_format":"float"}"#).unwrap();
        assert_eq!(enc, Encoding::Float);
    }

    #[test]
    fn bad_fields_are_named() {
        let many = format!(
            r#"{{"model":"m","input":[{}]}}"#,
            vec![r#""x""#; MAX_INPUTS + 1].join(",")
        );
        for (body, param) in [
            (r#"{"input":"x"}"#.to_owned(), None),
            (r#"{"model":"m"}"#.to_owned(), None),
            (r#"{"model":"m","input":5}"#.to_owned(), Some("input")),
            (r#"{"model":"m","input":[]}"#.to_owned(), Some("input")),
            (r#"{"model":"m","input":""}"#.to_owned(), Some("input")),
            (
                r#"{"model":"m","input":["a",[1]]}"#.to_owned(),
                Some("input[1]"),
            ),
            (
                r#"{"model":"m","input":[[1],[]]}"#.to_owned(),
                Some("input[1]"),
            ),
            (r#"{"model":"m","input":[1,-2]}"#.to_owned(), Some("input")),
            (
                r#"{"model":"m","input":"x","encoding_format":"int8"}"#.to_owned(),
                Some("encoding_format"),
            ),
            (
                r#"{"model":"m","input":"x","dimensions":0}"#.to_owned(),
                Some("dimensions"),
            ),
            (
                r#"{"model":"m","input":"x","dimensions":8193}"#.to_owned(),
                Some("dimensions"),
            ),
            (
                r#"{"model":"m","input":"x","dimensions":4294967296}"#.to_owned(),
                Some("dimensions"),
            ),
            (
                r#"{"model":"m","input":"x","dimensions":"8"}"#.to_owned(),
                Some("dimensions"),
            ),
            (
                r#"{"model":"m","input":"x","user":7}"#.to_owned(),
                Some("user"),
            ),
            (many, Some("input")),
        ] {
            let err = parsed(&body).unwrap_err();
            assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST, "{body}");
            if let Some(p) = param {
                assert_eq!(err.body()["error"]["param"], p, "{body}");
            }
        }
        let err = parsed(r#"{"model":"m"}"#).unwrap_err();
        assert!(err.message.contains("input"), "{}", err.message);
    }
}
