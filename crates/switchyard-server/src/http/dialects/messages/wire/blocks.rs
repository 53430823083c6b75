//! The content blocks of a Messages request: a turn's ([`Block`]), those of `system` and of a
//! mid-conversation system block ([`SystemBlock`]), as Anthropic's reference gives each
//! type. A block of a type the dialect does not model is set apart whole ([`Unmodelled`]),
//! so the beta rule (`keys`, `docs/dialects.md`) can decide it: a 400 naming its path, or
//! a request only Anthropic serves.

use serde::de::{Error as _, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::keys::UnknownKeys;
use super::StrOr;
use crate::http::bounds::{clip, ECHO_BYTES};

/// What [`Block::other`] is for a block whose keys are not kept.
static NO_KEYS: UnknownKeys = UnknownKeys::none();

/// A block of a type the dialect does not model (one a later beta adds). Only Anthropic is
/// given a request that holds one (in the client's body, as written): its JSON stands in
/// for it in the shared shape, as text, so that what the gateway reckons of the request
/// (the input estimate that budgets reserve, captured content) counts it; no vendor reads
/// the stand-in.
#[derive(Debug)]
pub(in crate::http::dialects::messages) struct Unmodelled {
    /// Its `type`, cut to [`ECHO_BYTES`] (a 400 quotes it).
    pub kind: String,
    /// Its compact JSON.
    pub json: String,
}

impl Unmodelled {
    /// `value` set apart when its `type` is a string not among `known`; else `value` back.
    fn sort(value: Value, known: &[&str]) -> Result<Self, Value> {
        match value.get("type").and_then(Value::as_str) {
            Some(kind) if !known.contains(&kind) => Ok(Self {
                kind: clip(kind, ECHO_BYTES).into_owned(),
                json: value.to_string(),
            }),
            _ => Err(value),
        }
    }
}

/// Anthropic's 400 for a block type without a beta, as serde words it for a tagged enum:
/// the type (as [`Unmodelled::kind`] holds it, cut) and the types modelled.
pub(in crate::http::dialects::messages) fn unknown_variant(kind: &str) -> String {
    let known: Vec<String> = TYPES.iter().map(|t| format!("`{t}`")).collect();
    format!(
        "unknown variant `{kind}`, expected one of {}",
        known.join(", ")
    )
}

/// A `text` block of `system` or of a mid-conversation system block.
#[derive(Debug, Deserialize)]
pub(in crate::http::dialects::messages) struct TextBlock {
    /// `"text"` ([`SystemBlock`] sets the others apart): read, so it is no unknown key.
    #[serde(rename = "type")]
    _kind: IgnoredAny,
    pub text: String,
    #[serde(default)]
    pub cache_control: Option<IgnoredAny>,
    #[serde(default)]
    pub citations: Option<IgnoredAny>,
    /// Keys not modelled (the beta rule: `keys`).
    #[serde(flatten)]
    pub other: UnknownKeys,
}

/// A block of `system` or of a mid-conversation system block: text (the only type
/// Anthropic's reference allows there), or one of another type (`super::system_blocks`
/// decides it).
#[derive(Debug)]
pub(in crate::http::dialects::messages) enum SystemBlock {
    Text(TextBlock),
    Unmodelled(Unmodelled),
}

impl<'de> Deserialize<'de> for SystemBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Unmodelled::sort(Value::deserialize(d)?, &["text"]) {
            Ok(other) => Ok(Self::Unmodelled(other)),
            Err(value) => TextBlock::deserialize(value)
                .map(Self::Text)
                .map_err(D::Error::custom),
        }
    }
}

/// A content block of a request turn: each kind with the fields Anthropic's reference
/// gives it; any other key is recorded (`other`) and refused by its path unless a beta
/// lets it through (`keys`): a key we did not model never vanishes unsaid when another
/// vendor answers. A block of a type not listed here is [`Block::Unknown`].
#[derive(Debug, Deserialize)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
pub(in crate::http::dialects::messages) enum Block {
    Text {
        text: String,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        /// Citations an earlier answer made (kept for Anthropic in the client's body).
        #[serde(default)]
        citations: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    Image {
        source: WireImageSource,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(default)]
        transformations: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        /// Who made the call (programmatic tool calling) and the toolset it came from:
        /// Anthropic's own bookkeeping, named when another vendor answers.
        #[serde(default)]
        caller: Option<IgnoredAny>,
        #[serde(default)]
        toolset_name: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<StrOr<Block>>,
        #[serde(default)]
        is_error: bool,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(default)]
        toolset_name: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    Thinking {
        thinking: String,
        signature: String,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    RedactedThinking {
        data: String,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    MidConvSystem {
        content: Vec<SystemBlock>,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    /// A tool offered from here on (SDK 2.15, mid-conversation tool changes): `tool` is a
    /// reference or a definition ([`toolset`]).
    ToolAddition {
        tool: Value,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    /// A tool withdrawn from here on.
    ToolRemoval {
        tool: Value,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(flatten)]
        other: UnknownKeys,
    },
    /// A block of a type the dialect does not model: refused without a beta; with one,
    /// only Anthropic is given it (`keys::Ignored::unknown_block`).
    #[serde(skip)]
    Unknown(Unmodelled),
}

/// The block types [`Block`] models, as Anthropic writes them (its variants but
/// `Unknown`).
pub(in crate::http::dialects::messages) const TYPES: &[&str] = &[
    "text",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "mid_conv_system",
    "tool_addition",
    "tool_removal",
];

impl<'de> Deserialize<'de> for Block {
    /// A block of a modelled type as its variant (serde's errors for it unchanged), any
    /// other as [`Block::Unknown`]. Held as a JSON value in between, as a tagged enum
    /// holds its fields until it has read the tag.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Unmodelled::sort(Value::deserialize(d)?, TYPES) {
            Ok(other) => Ok(Block::Unknown(other)),
            Err(value) => Block::deserialize(value).map_err(D::Error::custom),
        }
    }
}

impl Block {
    /// The block's `type`, as Anthropic writes it (`unknown` for any it does not model).
    pub(in crate::http::dialects::messages) fn kind(&self) -> &'static str {
        match self {
            Block::Text { .. } => "text",
            Block::Image { .. } => "image",
            Block::ToolUse { .. } => "tool_use",
            Block::ToolResult { .. } => "tool_result",
            Block::Thinking { .. } => "thinking",
            Block::RedactedThinking { .. } => "redacted_thinking",
            Block::MidConvSystem { .. } => "mid_conv_system",
            Block::ToolAddition { .. } => "tool_addition",
            Block::ToolRemoval { .. } => "tool_removal",
            Block::Unknown(_) => "unknown",
        }
    }

    /// The keys the block had that are not modelled (none kept for an unknown block).
    pub(in crate::http::dialects::messages) fn other(&self) -> &UnknownKeys {
        match self {
            Block::Text { other, .. }
            | Block::Image { other, .. }
            | Block::ToolUse { other, .. }
            | Block::ToolResult { other, .. }
            | Block::Thinking { other, .. }
            | Block::RedactedThinking { other, .. }
            | Block::MidConvSystem { other, .. }
            | Block::ToolAddition { other, .. }
            | Block::ToolRemoval { other, .. } => other,
            Block::Unknown(_) => &NO_KEYS,
        }
    }
}

/// An image block's `source`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(in crate::http::dialects::messages) enum WireImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One block of each modelled type: [`TYPES`] is exactly the variants' types.
    #[test]
    fn the_modelled_types_are_the_variants() {
        let blocks = json!([
            {"type": "text", "text": "x"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            {"type": "tool_result", "tool_use_id": "t"},
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "redacted_thinking", "data": "d"},
            {"type": "mid_conv_system", "content": [{"type": "text", "text": "x"}]},
            {"type": "tool_addition", "tool": {}},
            {"type": "tool_removal", "tool": {}}
        ]);
        let parsed: Vec<Block> = serde_json::from_value(blocks).unwrap();
        let kinds: Vec<&str> = parsed.iter().map(Block::kind).collect();
        assert_eq!(kinds, TYPES);
    }

    /// A block of another type is set apart whole, wherever it stands (a tool result's
    /// content, a mid-conversation system block's); a block without a string `type`, or
    /// of a modelled type with a fault, is serde's error as before.
    #[test]
    fn other_types_are_set_apart_and_faults_stay_errors() {
        let block: Block =
            serde_json::from_value(json!({"type": "hologram", "frames": [1, 2]})).unwrap();
        let Block::Unknown(other) = block else {
            panic!("{block:?}")
        };
        assert_eq!(other.kind, "hologram");
        assert_eq!(other.json, r#"{"frames":[1,2],"type":"hologram"}"#);
        let nested: Block = serde_json::from_value(json!({"type": "tool_result",
            "tool_use_id": "t", "content": [{"type": "sparkle"}]}))
        .unwrap();
        let Block::ToolResult {
            content: Some(StrOr::List(inner)),
            ..
        } = nested
        else {
            panic!("{nested:?}")
        };
        assert!(matches!(&inner[0], Block::Unknown(u) if u.kind == "sparkle"));
        let system: Block = serde_json::from_value(json!({"type": "mid_conv_system",
            "content": [{"type": "text", "text": "x"}, {"type": "image"}]}))
        .unwrap();
        let Block::MidConvSystem { content, .. } = system else {
            panic!("{system:?}")
        };
        assert!(matches!(&content[0], SystemBlock::Text(t) if t.text == "x"));
        assert!(matches!(&content[1], SystemBlock::Unmodelled(u) if u.kind == "image"));

        let long = "k".repeat(1000);
        let Ok(Block::Unknown(u)) = serde_json::from_value(json!({"type": long})) else {
            panic!()
        };
        assert_eq!(u.kind, format!("{}…[+936 bytes]", "k".repeat(ECHO_BYTES)));
        for (bad, says) in [
            (json!({"text": "x"}), "missing field `type`"),
            (json!({"type": 5}), "invalid type"),
            (json!({"type": "text"}), "missing field `text`"),
            (
                json!({"type": "image", "source": {"type": "file"}}),
                "unknown variant `file`",
            ),
        ] {
            let err = serde_json::from_value::<Block>(bad.clone()).unwrap_err();
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
        let err = serde_json::from_value::<SystemBlock>(json!({"type": "text"})).unwrap_err();
        assert!(err.to_string().contains("missing field `text`"), "{err}");
    }
}
