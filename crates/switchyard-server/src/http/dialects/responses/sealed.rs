//! The sealed reasoning format: how a reasoning block (an Anthropic `thinking` block with
//! its signature, or a `redacted_thinking` block's data) travels in a Responses reasoning
//! item's `encrypted_content`, so a stateless client (Codex: `store: false`, `include:
//! ["reasoning.encrypted_content"]`) sends it back with its next turn and the turn
//! continues on Anthropic with its thinking intact.
//!
//! The format is `swy1:` followed by the unpadded base64url of a compact JSON object,
//! `{"blocks": [...]}`, each block `{"thinking": text, "signature": sig}` (a signed block),
//! `{"redacted": data}` (a redacted one) or `{"thinking": text}` (reasoning another vendor
//! returned unsigned). It is opaque to clients, not secret: the text is the reasoning the
//! client was already shown, and a redacted block's data is Anthropic's own ciphertext.
//! Integrity is Anthropic's: it refuses a block whose text no longer matches its
//! signature. Decoding is bounded ([`MAX_DECODED_BYTES`]) and strict (unknown fields, a
//! block both redacted and signed, bad base64 or JSON are refused); content that does not
//! start with the prefix is another server's (OpenAI's own encrypted reasoning) and is
//! not ours to read.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use switchyard::chat::Thinking;

/// What marks our format (and its version).
pub(super) const PREFIX: &str = "swy1:";

/// The most JSON one sealed item may decode to: a generous bound on one answer's
/// reasoning (Anthropic's thinking budgets are tens of thousands of tokens).
pub(super) const MAX_DECODED_BYTES: usize = 1 << 20;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    blocks: Vec<Block>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Block {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redacted: Option<String>,
}

/// `blocks` in the sealed format.
pub(super) fn seal(blocks: &[Thinking]) -> String {
    let sealed = Sealed {
        blocks: blocks
            .iter()
            .map(|t| Block {
                thinking: t.text.clone(),
                signature: t.signature.clone(),
                redacted: t.redacted.clone(),
            })
            .collect(),
    };
    let json = serde_json::to_vec(&sealed).unwrap_or_default();
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
}

/// Why sealed content could not be opened (the caller names the field).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unsealed {
    /// Longer than [`MAX_DECODED_BYTES`] once decoded.
    #[error("sealed reasoning is larger than {MAX_DECODED_BYTES} bytes")]
    TooLarge,
    /// Not our format's base64, JSON or block shape.
    #[error("sealed reasoning is malformed ({0}): send the item back as it was returned")]
    Malformed(&'static str),
}

/// The blocks in `content`: `Ok(None)` when it is not in our format (another server's),
/// an error when it is ours but cannot be read.
pub(super) fn open(content: &str) -> Result<Option<Vec<Thinking>>, Unsealed> {
    let Some(encoded) = content.strip_prefix(PREFIX) else {
        return Ok(None);
    };
    if base64::decoded_len_estimate(encoded.len()) > MAX_DECODED_BYTES + 3 {
        return Err(Unsealed::TooLarge);
    }
    let json = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| Unsealed::Malformed("not base64url"))?;
    if json.len() > MAX_DECODED_BYTES {
        return Err(Unsealed::TooLarge);
    }
    let sealed: Sealed =
        serde_json::from_slice(&json).map_err(|_| Unsealed::Malformed("not its JSON"))?;
    sealed
        .blocks
        .into_iter()
        .map(|b| match b {
            Block {
                redacted: Some(_),
                signature: Some(_),
                ..
            } => Err(Unsealed::Malformed("a block both redacted and signed")),
            Block {
                redacted: Some(_),
                ref thinking,
                ..
            } if !thinking.is_empty() => Err(Unsealed::Malformed("a redacted block with text")),
            Block {
                thinking,
                signature,
                redacted,
            } => Ok(Thinking {
                text: thinking,
                signature,
                redacted,
            }),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> Vec<Thinking> {
        vec![
            Thinking {
                text: "Look it up. ünïcode".into(),
                signature: Some("EqQBCgIYAhIM".into()),
                redacted: None,
            },
            Thinking {
                redacted: Some("ZW5jcnlwdGVk".into()),
                ..Thinking::default()
            },
            Thinking {
                text: "unsigned".into(),
                ..Thinking::default()
            },
        ]
    }

    #[test]
    fn blocks_round_trip_through_the_sealed_format() {
        let sealed = seal(&blocks());
        assert!(sealed.starts_with("swy1:"), "{sealed}");
        assert!(!sealed.contains("Look it up"), "opaque to the eye");
        assert_eq!(open(&sealed), Ok(Some(blocks())));
    }

    #[test]
    fn content_in_another_format_is_not_ours() {
        assert_eq!(open("gAAAAABoX2v0_openai_ciphertext"), Ok(None));
        assert_eq!(open(""), Ok(None));
    }

    #[test]
    fn tampered_content_is_refused() {
        let sealed = seal(&blocks());
        let cut = &sealed[..sealed.len() - 7];
        assert!(
            matches!(open(cut), Err(Unsealed::Malformed(_))),
            "truncated"
        );
        assert!(matches!(
            open(&format!("{sealed}!")),
            Err(Unsealed::Malformed("not base64url"))
        ));
        let json =
            |v: serde_json::Value| format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(v.to_string()));
        for bad in [
            serde_json::json!({"blocks": [{"thinking": "x", "extra": 1}]}),
            serde_json::json!({"blocks": [{"redacted": "d", "signature": "s"}]}),
            serde_json::json!({"blocks": [{"redacted": "d", "thinking": "t"}]}),
            serde_json::json!({"v": 2}),
            serde_json::json!([1, 2]),
        ] {
            assert!(
                matches!(open(&json(bad.clone())), Err(Unsealed::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn oversized_content_is_refused_before_it_is_decoded() {
        let huge = Thinking {
            text: "a".repeat(MAX_DECODED_BYTES),
            signature: Some("s".into()),
            redacted: None,
        };
        assert_eq!(open(&seal(&[huge])), Err(Unsealed::TooLarge));
        let long = format!("{PREFIX}{}", "A".repeat(MAX_DECODED_BYTES * 2));
        assert_eq!(open(&long), Err(Unsealed::TooLarge));
    }
}
