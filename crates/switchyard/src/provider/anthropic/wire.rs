//! The Messages API on the wire: the serde types of requests, responses, stream events and
//! usage, as Anthropic documents them. Requests borrow from the shared shape where they can;
//! responses are lenient about fields Anthropic adds over time (unknown content blocks,
//! deltas and events are kept as `Other` and ignored, per Anthropic's versioning policy).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/messages` body.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    /// Always sent: Anthropic requires it.
    pub max_tokens: u32,
    pub messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<System<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Structured outputs (`{"format": {"type": "json_schema", "schema": …}}`), on
    /// models that have them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

/// `system`: one string, or text blocks when some carry a cache breakpoint.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum System<'a> {
    Text(String),
    Blocks(Vec<Block<'a>>),
}

/// `cache_control`: a prompt-cache breakpoint on the block it is in.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

impl From<crate::chat::CacheControl> for CacheControl {
    fn from(c: crate::chat::CacheControl) -> Self {
        Self {
            kind: "ephemeral",
            ttl: c.ttl.map(crate::chat::CacheTtl::as_str),
        }
    }
}

/// One entry of `messages`: a role and its content blocks. Roles alternate.
#[derive(Debug, Serialize)]
pub(super) struct Turn<'a> {
    pub role: &'static str,
    pub content: Vec<Block<'a>>,
}

/// A content block of a request turn.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An assistant's earlier tool call; `input` is the parsed arguments object.
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    /// An earlier answer's reasoning, sent back as Anthropic returned it (first in its
    /// assistant turn).
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    /// An earlier answer's redacted reasoning, its data opaque.
    RedactedThinking { data: &'a str },
    /// A tool's answer, in a `user` turn.
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<ToolResultContent<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl<'a> Block<'a> {
    /// True for a `tool_result` block (they must lead their user turn).
    pub fn is_tool_result(&self) -> bool {
        matches!(self, Self::ToolResult { .. })
    }

    /// A text block without a cache breakpoint.
    pub fn text(text: Cow<'a, str>) -> Self {
        Self::Text {
            text,
            cache_control: None,
        }
    }

    /// True for a reasoning block (they must lead their assistant turn).
    pub fn is_thinking(&self) -> bool {
        matches!(self, Self::Thinking { .. } | Self::RedactedThinking { .. })
    }
}

/// Where an image comes from.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ImageSource<'a> {
    Base64 {
        media_type: Cow<'a, str>,
        data: Cow<'a, str>,
    },
    Url {
        url: &'a str,
    },
}

/// A tool result's content: plain text, or blocks when it carries images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolResultContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

/// One entry of `tools`.
#[derive(Debug, Serialize)]
pub(super) struct ToolDef<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    pub input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `tool_choice`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ToolChoice<'a> {
    Auto,
    Any,
    None,
    Tool { name: &'a str },
}

/// `tool_choice` with its `disable_parallel_tool_use` flag.
#[derive(Debug, Serialize)]
pub(super) struct ToolChoiceOut<'a> {
    #[serde(flatten)]
    pub choice: ToolChoice<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_parallel_tool_use: bool,
}

/// `thinking`: extended thinking with a token budget, or off.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Thinking {
    Enabled { budget_tokens: u32 },
    Disabled,
}

/// `metadata`.
#[derive(Debug, Serialize)]
pub(super) struct Metadata<'a> {
    pub user_id: &'a str,
}

/// A `message` object, or an error object returned with a 200.
#[derive(Debug, Deserialize)]
pub(super) struct Message {
    /// `message`; `error` for an error object. Absent means neither.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Absent means this is not a message (checked, never defaulted).
    #[serde(default)]
    pub content: Option<Vec<ContentBlock>>,
    /// The message's id (`msg_…`).
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// A content block of a response. Server-tool and future block types are `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

/// `usage`. `input_tokens` excludes cache reads and writes (unlike OpenAI's
/// `prompt_tokens`); every field may be absent or `null`. In a stream the counts are
/// cumulative: a later event's value replaces an earlier one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(super) struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    /// `cache_creation`: the cache writes split by TTL.
    #[serde(default)]
    pub cache_creation: Option<CacheCreation>,
}

/// `usage.cache_creation`: `cache_creation_input_tokens` split by the TTL written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(super) struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: Option<u64>,
}

impl Usage {
    /// `newer`'s counts where it has them, these otherwise.
    pub fn updated(self, newer: Usage) -> Usage {
        Usage {
            input_tokens: newer.input_tokens.or(self.input_tokens),
            output_tokens: newer.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: newer
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: newer
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
            cache_creation: match (self.cache_creation, newer.cache_creation) {
                (Some(old), Some(new)) => Some(CacheCreation {
                    ephemeral_5m_input_tokens: new
                        .ephemeral_5m_input_tokens
                        .or(old.ephemeral_5m_input_tokens),
                    ephemeral_1h_input_tokens: new
                        .ephemeral_1h_input_tokens
                        .or(old.ephemeral_1h_input_tokens),
                }),
                (old, new) => new.or(old),
            },
        }
    }
}

/// One server-sent event's data, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error,
    #[serde(other)]
    Other,
}

/// The `message` of `message_start` (content still empty).
#[derive(Debug, Deserialize)]
pub(super) struct StartMessage {
    /// The message's id (`msg_…`).
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// The `content_block` of `content_block_start`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

/// The `delta` of `content_block_delta`. Citation and future deltas are `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(rename = "thinking_delta")]
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    #[serde(rename = "signature_delta")]
    Signature {
        #[serde(default)]
        signature: String,
    },
    #[serde(other)]
    Other,
}

/// The `delta` of `message_delta`: top-level changes to the message.
#[derive(Debug, Deserialize)]
pub(super) struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
}
