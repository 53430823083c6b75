//! The shared shape every provider speaks.
//!
//! Owns the vendor-neutral request ([`ChatRequest`]), the reply a provider returns
//! ([`ProviderReply`]), the completion the gateway hands back ([`ChatResponse`]), stream
//! chunks ([`ChatChunk`]) and token accounting ([`Usage`]). Does not know any vendor's wire
//! format: adapters map to and from these types.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::money::Money;
use crate::trail::Attempt;

mod fields;
pub mod raw;
pub use fields::{Class, Field, FieldSet, ReasoningEffort, Support, Verbosity};
pub use raw::{Patch, RawBody};

/// The most prompt-cache breakpoints one request may set: Anthropic's limit (its API
/// refuses a fifth), enforced by the dialects with a 400 naming the fifth.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// How long a prompt-cache entry lives (Anthropic's `cache_control.ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes (Anthropic's default).
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour (written at a higher price, `Usage::cache_write_1h_tokens`).
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The vendor's spelling (`5m`, `1h`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
        }
    }
}

/// A prompt-cache breakpoint (Anthropic's `cache_control: {"type": "ephemeral"}`): the
/// prompt up to and including the marked block is cached. Sent to Anthropic on the block
/// it marks; advisory for vendors that cache by themselves (`Field::CacheControl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// The entry's lifetime, when the client chose one (`None`: the vendor's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<CacheTtl>,
}

/// A breakpoint after one content part of a message ([`Message::cache`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachePoint {
    /// The position of the marked part in [`Message::content`].
    pub part: u32,
    /// The breakpoint.
    #[serde(flatten)]
    pub control: CacheControl,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// Instructions from the application's developer (OpenAI's `developer` role): native
    /// on OpenAI, sent as a system instruction elsewhere (a declared translation).
    Developer,
    /// The end user.
    User,
    /// The model (earlier turns, or a prefill to continue from).
    Assistant,
    /// The result of a tool call, answering an assistant's [`ToolCall`].
    Tool,
}

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// A URL the vendor fetches (or a `data:` URL).
    Url {
        /// The address.
        url: String,
    },
    /// Inline bytes, base64-encoded.
    Base64 {
        /// e.g. `image/png`.
        media_type: String,
        /// The base64 text, without a `data:` prefix.
        data: String,
    },
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image input.
    Image {
        /// Where the image is.
        source: ImageSource,
        /// OpenAI's `detail` hint (`low` / `high` / `auto`), passed where supported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// A tool call the model made (or, in history, made earlier).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The vendor's id for the call; tool results refer to it.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as JSON text, exactly as the model produced them.
    pub arguments: String,
}

/// A reasoning block a vendor returned with an answer: Anthropic's `thinking` and
/// `redacted_thinking` content blocks (signed, or opaque), or an OpenAI-compatible server's
/// `reasoning_content` (text only). Each inbound dialect surfaces it where it has a place
/// for it (`docs/dialects.md`); in history ([`Message::thinking`]) only the vendor that
/// signed it gets it back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    /// The reasoning text (empty for a redacted block).
    #[serde(default)]
    pub text: String,
    /// The vendor's signature over the text, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The opaque `data` of a redacted block; `Some` makes this block a redacted one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Text and image parts, in order.
    #[serde(default)]
    pub content: Vec<ContentPart>,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a `tool` message: the function's name (Gemini needs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For an assistant message: the reasoning blocks its answer came with, in order. Only
    /// the Anthropic codec sends them (signed or redacted blocks, first in the turn), so a
    /// tool loop continues on Anthropic with its thinking intact; every other vendor leaves
    /// them out (they are Anthropic's opaque reasoning, not content).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// Prompt-cache breakpoints on this message's content parts (Chat Completions'
    /// content-part `cache_control`), in part order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<CachePoint>,
}

impl Message {
    /// A text message with the given role.
    #[must_use]
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![ContentPart::Text { text: text.into() }],
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            thinking: Vec::new(),
            cache: Vec::new(),
        }
    }

    /// A system message.
    #[must_use]
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// A user message.
    #[must_use]
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant message.
    #[must_use]
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// A tool result answering call `call_id` of function `name`.
    #[must_use]
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
            ..Self::text(Role::Tool, text)
        }
    }

    /// True for instructions: a `system` or `developer` message.
    #[must_use]
    pub fn is_instructions(&self) -> bool {
        matches!(self.role, Role::System | Role::Developer)
    }

    /// The cache breakpoint on content part `part`, if any.
    #[must_use]
    pub fn cache_at(&self, part: usize) -> Option<CacheControl> {
        self.cache
            .iter()
            .find(|c| usize::try_from(c.part).is_ok_and(|p| p == part))
            .map(|c| c.control)
    }

    /// The concatenated text parts.
    #[must_use]
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                ContentPart::Image { .. } => None,
            })
            .collect()
    }
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The function name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// A prompt-cache breakpoint after this tool's definition (the tool list up to it
    /// is cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// The requested output format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any valid JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema's name.
        name: String,
        /// The JSON Schema.
        schema: Value,
        /// Strict schema adherence, where the vendor supports it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
    },
}

/// A vendor-neutral chat request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Cap on output tokens; also what budget reservations are sized by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Tool-calling constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Output format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// An end-user id passed to vendors that accept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Sampling seed, for (best-effort) reproducible answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalty on tokens already present (-2 to 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    /// Penalty on tokens by their frequency so far (-2 to 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    /// Return the log probability of each output token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// With `logprobs`: how many most likely alternatives to return per token (0 to 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
    /// How many answers to generate (`None` or 1: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// Sample only from the `top_k` most likely tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// `Some(false)`: at most one tool call per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The vendor's processing tier (OpenAI's words: `auto`, `default`, `flex`, `priority`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// How hard a reasoning model thinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The client's key-value tags for the request (OpenAI's `metadata`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// Token ids made more or less likely (OpenAI's `logit_bias`: a token id, as text, to
    /// a bias from -100 to 100), as the client wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logit_bias: Option<serde_json::Map<String, Value>>,
    /// A shorter or longer answer (OpenAI's `verbosity`; the Responses API's
    /// `text.verbosity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
    /// Predicted output (OpenAI's `prediction` object, as the client wrote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Value>,
    /// Whether the vendor keeps the completion (OpenAI's `store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// A key grouping requests for the vendor's prompt cache (OpenAI's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// How long the vendor keeps a cached prefix (OpenAI's `in-memory` or `24h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<String>,
    /// An end-user id for the vendor's abuse detection (OpenAI's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// Spoken output settings (OpenAI's `audio`: voice and format), as the client wrote
    /// them. Its answer (`message.audio`) comes back in [`ProviderReply::native`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<Value>,
    /// Output modalities beyond text (OpenAI's `["text", "audio"]`); empty: text only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modalities: Vec<String>,
    /// OpenAI's `web_search_options` (its search models), as the client wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search_options: Option<Value>,
    /// The deprecated `functions` list, as the client wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<Value>,
    /// The deprecated `function_call` choice, as the client wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<Value>,
    /// Top-level fields the gateway does not model, sent verbatim to providers of the
    /// dialect they were written for (a route's `passthrough_unknown`; see
    /// [`Field::Passthrough`]). Never serialized.
    #[serde(skip)]
    pub passthrough: Option<Arc<serde_json::Map<String, Value>>>,
    /// The client's own body in one vendor's dialect, sent as is to providers of that kind
    /// (see [`Native`]); every other provider sends the shared shape above. Never
    /// serialized.
    #[serde(skip)]
    pub native: Option<Native>,
}

/// A request body in a vendor's own API, as the client sent it, for providers of that
/// vendor's kind: an Anthropic provider answering a `POST /v1/messages` request sends the
/// client's body (its betas, `cache_control`, `thinking`, thinking blocks in history...)
/// instead of rebuilding it from the shared shape, which cannot carry them.
///
/// The shared fields of the [`ChatRequest`] stay the truth for the gateway (budget
/// reservations, the input estimate, rescue): the adapter replaces the body's `model`,
/// `max_tokens` and `stream` with the call's. A stream rescue's continuation keeps the
/// body and sets [`Native::prefill`]: only a codec that appends it (Anthropic's) uses the
/// body then ([`ChatRequest::native_continuing`]); any other sends the shared shape, which
/// has the prefill as its last message ([`ChatRequest::native_for`] is `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Native {
    /// The provider kind the body is written for (`anthropic`).
    pub kind: &'static str,
    /// The body: a JSON object, each top-level field as the client wrote it ([`RawBody`]:
    /// about the body's size in memory, shared by every attempt; a codec writes it with
    /// the call's fields patched in, never expanding the rest).
    pub body: Arc<RawBody>,
    /// Headers forwarded with it (`anthropic-beta`), name and value.
    pub headers: Vec<(String, String)>,
    /// Only providers that take this body natively may answer: the body uses what the
    /// shared shape cannot carry and no other vendor can serve (a Responses request's
    /// built-in tools). Every other provider is skipped for the request (the trail says
    /// `needs_native`), and a broken stream is not continued in the shared shape.
    pub required: bool,
    /// What makes the body [`Native::required`], by the client's names (`max_tool_calls`,
    /// `tools[1].type`): a skipped provider's trail entry names them.
    pub required_by: Vec<String>,
    /// Text the gateway already streamed to the client, for a rescue's continuation: the
    /// codec appends it to the body as the assistant's prefill, so the vendor continues
    /// from it.
    pub prefill: Option<String>,
}

impl Native {
    /// A body for providers of `kind` (a [`RawBody`], or a `Value` object for tests).
    #[must_use]
    pub fn new(kind: &'static str, body: impl Into<RawBody>) -> Self {
        Self {
            kind,
            body: Arc::new(body.into()),
            headers: Vec::new(),
            required: false,
            required_by: Vec::new(),
            prefill: None,
        }
    }

    /// Builder: only providers that take this body natively may answer (see
    /// [`Native::required`]).
    #[must_use]
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Builder: only providers that take this body natively may answer, because of
    /// `fields` (named by the client's names; none: not required).
    #[must_use]
    pub fn required_by(mut self, fields: Vec<String>) -> Self {
        self.required = !fields.is_empty();
        self.required_by = fields;
        self
    }

    /// Builder: one forwarded header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The bytes the body sends upstream: its compact JSON and the [`Native::prefill`] a
    /// codec appends. Budget reservations bound the input of a natively sent request by
    /// it (`cost::estimate_sent_input_tokens`): what the shared shape does not model
    /// still goes upstream.
    #[must_use]
    pub fn wire_len(&self) -> usize {
        self.body
            .wire_len()
            .saturating_add(self.prefill.as_ref().map_or(0, String::len))
    }
}

impl ChatRequest {
    /// A request of one user message.
    #[must_use]
    pub fn from_prompt(prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::user(prompt)],
            ..Self::default()
        }
    }

    /// Builder: set `max_tokens`.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The fields of [`Field`] this request uses. Near-free for a request that uses none
    /// (a few compares, no allocation).
    #[must_use]
    pub fn fields_used(&self) -> FieldSet {
        let mut set = FieldSet::EMPTY;
        set.insert_if(self.temperature.is_some(), Field::Temperature);
        set.insert_if(self.top_p.is_some(), Field::TopP);
        set.insert_if(!self.stop.is_empty(), Field::Stop);
        set.insert_if(!self.tools.is_empty(), Field::Tools);
        set.insert_if(self.tool_choice.is_some(), Field::ToolChoice);
        set.insert_if(self.response_format.is_some(), Field::ResponseFormat);
        set.insert_if(self.seed.is_some(), Field::Seed);
        set.insert_if(self.presence_penalty.is_some(), Field::PresencePenalty);
        set.insert_if(self.frequency_penalty.is_some(), Field::FrequencyPenalty);
        set.insert_if(self.logprobs, Field::Logprobs);
        set.insert_if(self.top_logprobs.is_some(), Field::TopLogprobs);
        set.insert_if(self.n.is_some_and(|n| n > 1), Field::N);
        set.insert_if(self.top_k.is_some(), Field::TopK);
        set.insert_if(
            self.parallel_tool_calls == Some(false),
            Field::ParallelToolCalls,
        );
        set.insert_if(self.service_tier.is_some(), Field::ServiceTier);
        set.insert_if(self.reasoning_effort.is_some(), Field::ReasoningEffort);
        set.insert_if(self.metadata.is_some(), Field::Metadata);
        set.insert_if(self.user.is_some(), Field::User);
        set.insert_if(self.passthrough.is_some(), Field::Passthrough);
        set.insert_if(self.cache_breakpoints() > 0, Field::CacheControl);
        let developer = self.messages.iter().any(|m| m.role == Role::Developer);
        set.insert_if(developer, Field::DeveloperRole);
        set.insert_if(self.logit_bias.is_some(), Field::LogitBias);
        set.insert_if(self.verbosity.is_some(), Field::Verbosity);
        set.insert_if(self.prediction.is_some(), Field::Prediction);
        set.insert_if(self.store.is_some(), Field::Store);
        set.insert_if(self.prompt_cache_key.is_some(), Field::PromptCacheKey);
        set.insert_if(
            self.prompt_cache_retention.is_some(),
            Field::PromptCacheRetention,
        );
        set.insert_if(self.safety_identifier.is_some(), Field::SafetyIdentifier);
        set.insert_if(self.audio.is_some(), Field::Audio);
        set.insert_if(!self.modalities.is_empty(), Field::Modalities);
        set.insert_if(self.web_search_options.is_some(), Field::WebSearchOptions);
        set.insert_if(
            self.functions.is_some() || self.function_call.is_some(),
            Field::Functions,
        );
        set
    }

    /// How many prompt-cache breakpoints the request sets (messages' parts and tools).
    #[must_use]
    pub fn cache_breakpoints(&self) -> usize {
        let tools = self.tools.iter().filter(|t| t.cache_control.is_some());
        self.messages.iter().map(|m| m.cache.len()).sum::<usize>() + tools.count()
    }

    /// True when a cache breakpoint marks an empty text part: no vendor caches after
    /// nothing (Anthropic and Bedrock refuse it), so a codec cannot honour
    /// `cache_control` for such a request.
    #[must_use]
    pub fn marks_empty_part(&self) -> bool {
        self.messages.iter().any(|m| {
            m.cache.iter().any(|c| {
                let part = usize::try_from(c.part).ok().and_then(|i| m.content.get(i));
                matches!(part, Some(ContentPart::Text { text }) if text.is_empty())
            })
        })
    }

    /// The same request without `fields` (what a provider cannot honour, dropped). A
    /// developer message becomes a system message.
    #[must_use]
    pub fn without(&self, fields: FieldSet) -> ChatRequest {
        let mut r = self.clone();
        for f in fields.iter() {
            r.clear(f);
        }
        r
    }

    fn clear(&mut self, field: Field) {
        match field {
            Field::Temperature => self.temperature = None,
            Field::TopP => self.top_p = None,
            Field::Stop => self.stop.clear(),
            Field::Tools => self.tools.clear(),
            Field::ToolChoice => self.tool_choice = None,
            Field::ResponseFormat => self.response_format = None,
            Field::Seed => self.seed = None,
            Field::PresencePenalty => self.presence_penalty = None,
            Field::FrequencyPenalty => self.frequency_penalty = None,
            Field::Logprobs => self.logprobs = false,
            Field::TopLogprobs => self.top_logprobs = None,
            Field::N => self.n = None,
            Field::TopK => self.top_k = None,
            Field::ParallelToolCalls => self.parallel_tool_calls = None,
            Field::ServiceTier => self.service_tier = None,
            Field::ReasoningEffort => self.reasoning_effort = None,
            Field::Metadata => self.metadata = None,
            Field::User => self.user = None,
            Field::Passthrough => self.passthrough = None,
            Field::CacheControl => {
                self.messages.iter_mut().for_each(|m| m.cache.clear());
                self.tools.iter_mut().for_each(|t| t.cache_control = None);
            }
            Field::DeveloperRole => {
                for m in &mut self.messages {
                    if m.role == Role::Developer {
                        m.role = Role::System;
                    }
                }
            }
            Field::LogitBias => self.logit_bias = None,
            Field::Verbosity => self.verbosity = None,
            Field::Prediction => self.prediction = None,
            Field::Store => self.store = None,
            Field::PromptCacheKey => self.prompt_cache_key = None,
            Field::PromptCacheRetention => self.prompt_cache_retention = None,
            Field::SafetyIdentifier => self.safety_identifier = None,
            Field::Audio => self.audio = None,
            Field::Modalities => self.modalities.clear(),
            Field::WebSearchOptions => self.web_search_options = None,
            Field::Functions => {
                self.functions = None;
                self.function_call = None;
            }
        }
    }

    /// The native body, when it is written for providers of `kind` and carries no
    /// [`Native::prefill`] (a codec that cannot append one sends the shared shape).
    #[must_use]
    pub fn native_for(&self, kind: &str) -> Option<&Native> {
        self.native_continuing(kind).filter(|n| n.prefill.is_none())
    }

    /// The native body for providers of `kind`, prefill or not: for a codec that appends
    /// [`Native::prefill`] itself.
    #[must_use]
    pub fn native_continuing(&self, kind: &str) -> Option<&Native> {
        self.native.as_ref().filter(|n| n.kind == kind)
    }

    /// The text of the first user message (what simple providers echo).
    #[must_use]
    pub fn prompt_text(&self) -> String {
        self.messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(Message::joined_text)
            .unwrap_or_default()
    }
}

/// Why the model stopped, normalised across vendors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end or a stop sequence.
    Stop,
    /// Hit `max_tokens`.
    Length,
    /// Stopped to call tools.
    ToolCalls,
    /// Stopped by a content filter / safety system.
    ContentFilter,
    /// A vendor reason with no common equivalent (kept verbatim).
    Other(String),
}

impl FinishReason {
    /// OpenAI's spelling of a reason it has a word for (`Other` is `"other"`: use
    /// [`FinishReason::as_openai`] for the vendor's own word).
    #[must_use]
    pub fn as_openai_static(&self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Other(_) => "other",
        }
    }

    /// OpenAI's spelling of the reason.
    #[must_use]
    pub fn as_openai(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Other(s) => s,
        }
    }
}

/// Token accounting, normalised across vendors.
///
/// `input_tokens` is the *whole* prompt, including the cached and cache-written part
/// (OpenAI's convention); adapters for vendors that report those separately (Anthropic) add
/// them in, so the ledger neither double- nor under-counts. `output_tokens` includes
/// reasoning tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All prompt tokens, cached or not.
    pub input_tokens: u64,
    /// All generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the vendor's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those written to the vendor's prompt cache (every TTL).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of `cache_write_tokens`, those written for one hour (Anthropic's `ttl: "1h"`); the
    /// rest are 5-minute writes (or the vendor's only kind) and are priced apart.
    #[serde(default)]
    pub cache_write_1h_tokens: u64,
    /// Of `output_tokens`, those spent on hidden reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input tokens billed at the plain input price.
    #[must_use]
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cached_input_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Field-wise sum, saturating (a sum never wraps to a small number).
    #[must_use]
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(other.cached_input_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
            cache_write_1h_tokens: self
                .cache_write_1h_tokens
                .saturating_add(other.cache_write_1h_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(other.reasoning_tokens),
        }
    }

    /// Input plus output tokens, saturating.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The most tokens one call may report in any field before its usage is absurd.
    ///
    /// No model reads or writes anywhere near this many tokens in one call (the largest
    /// context windows are a few million), so a count above it is a broken or hostile
    /// upstream, not a big request: adapters treat such a reply as malformed.
    pub const MAX_PLAUSIBLE_TOKENS: u64 = 100_000_000;

    /// `Ok` when every field is at most [`Usage::MAX_PLAUSIBLE_TOKENS`].
    ///
    /// # Errors
    /// The first field above the bound.
    pub fn check_plausible(&self) -> Result<(), ImplausibleUsage> {
        let fields = [
            ("input", self.input_tokens),
            ("output", self.output_tokens),
            ("cached input", self.cached_input_tokens),
            ("cache write", self.cache_write_tokens),
            ("1-hour cache write", self.cache_write_1h_tokens),
            ("reasoning", self.reasoning_tokens),
        ];
        match fields
            .into_iter()
            .find(|(_, n)| *n > Self::MAX_PLAUSIBLE_TOKENS)
        {
            Some((field, tokens)) => Err(ImplausibleUsage { field, tokens }),
            None => Ok(()),
        }
    }
}

/// A reported usage above [`Usage::MAX_PLAUSIBLE_TOKENS`] in some field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "usage reports {tokens} {field} tokens, more than the {max} one call can use",
    max = Usage::MAX_PLAUSIBLE_TOKENS
)]
pub struct ImplausibleUsage {
    /// Which count (`input`, `output`, `cached input`, `cache write`, `1-hour cache
    /// write`, `reasoning`).
    pub field: &'static str,
    /// The count reported.
    pub tokens: u64,
}

/// What a provider returns for one successful non-streaming call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderReply {
    /// The upstream's id of this answer (`chatcmpl-…`, `msg_…`, `resp_…`, Gemini's
    /// `responseId`), when it gave one: the call's span names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The generated text (empty when the model only called tools).
    pub text: String,
    /// The model's refusal message, where the vendor gives one apart from the text
    /// (OpenAI's `message.refusal`, a Responses `refusal` part); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub refusal: String,
    /// The vendor's fingerprint of the backend configuration that answered (OpenAI's
    /// `system_fingerprint`), passed through to dialects that have a place for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// Tool calls the model made.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning blocks the vendor returned, in order (Anthropic only, so far).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// Why it stopped.
    pub finish_reason: Option<FinishReason>,
    /// The model id the vendor says answered (may be a dated snapshot of the configured one).
    pub model: Option<String>,
    /// Token usage, when the vendor reported it.
    pub usage: Option<Usage>,
    /// A cost the provider itself billed, authoritative over the price table when present.
    pub reported_cost: Option<Money>,
    /// Latency the provider reports for itself (simulated providers; processing-time headers).
    pub reported_latency: Option<Duration>,
    /// Log probabilities of the answer's tokens (a request with `logprobs`), in OpenAI's
    /// `choices[].logprobs` shape (`{"content": [{"token", "logprob", "bytes",
    /// "top_logprobs"}]}`); vendors with another shape are translated into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// The answers after the first, for a request with `n` > 1 (the first is the fields
    /// above), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Choice>,
    /// The upstream's whole answer in the request's native API, when the provider sent the
    /// request's native body (an OpenAI Responses `response` object): what the shared
    /// fields cannot carry (a built-in tool's output items, encrypted reasoning) reaches a
    /// client of that API from here. The shared fields above are filled as well. Never
    /// serialized.
    #[serde(skip)]
    pub native: Option<Arc<Value>>,
}

/// One more answer of a request with `n` > 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The generated text.
    pub text: String,
    /// Its refusal message (see [`ProviderReply::refusal`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub refusal: String,
    /// Tool calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: Option<FinishReason>,
    /// Its log probabilities (see [`ProviderReply::logprobs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
}

/// A completion handed back by the gateway: the answer plus who gave it and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatResponse {
    /// The generated text.
    pub text: String,
    /// The model's refusal message (see [`ProviderReply::refusal`]); empty when none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub refusal: String,
    /// The upstream's `system_fingerprint` (see [`ProviderReply::system_fingerprint`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// Tool calls the model made.
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning blocks the vendor returned, in order (see [`Thinking`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// Why it stopped.
    pub finish_reason: Option<FinishReason>,
    /// The provider (configured name) that answered.
    pub provider: String,
    /// The model that answered.
    pub model: String,
    /// True when an earlier provider in the route was tried, skipped or failed first.
    pub failed_over: bool,
    /// Token usage; `None` when the vendor reported none (never invented as zeros).
    pub usage: Option<Usage>,
    /// Exact cost; `None` when the model has no known price.
    pub cost: Option<Money>,
    /// Every try and every skip, in order.
    pub attempts: Vec<Attempt>,
    /// End-to-end time inside the gateway.
    pub latency: Duration,
    /// The answering provider's self-reported latency, if any.
    pub provider_latency: Option<Duration>,
    /// The `max_tokens` the gateway set on the request (the route's `default_max_tokens`)
    /// because the client set none and the model's output limit is unknown; `None` when
    /// the request went upstream as the client sent it.
    pub max_tokens_applied: Option<u32>,
    /// Log probabilities of the answer's tokens (see [`ProviderReply::logprobs`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// The answers after the first (a request with `n` > 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Choice>,
    /// Advisory fields the request used that the answering provider has no place for (not
    /// sent; `x-switchyard-ignored`).
    #[serde(skip_serializing_if = "no_fields", serialize_with = "field_names")]
    pub ignored: FieldSet,
    /// Fields the answering provider cannot honour, cleared on a route that drops them
    /// (`x-switchyard-dropped`).
    #[serde(skip_serializing_if = "no_fields", serialize_with = "field_names")]
    pub dropped: FieldSet,
    /// The upstream's whole answer in the request's native API (see
    /// [`ProviderReply::native`]); for a stream, the one its finish chunk carried.
    #[serde(skip)]
    pub native: Option<Arc<Value>>,
    /// What a response cache in front of the gateway did for this answer (the server's
    /// per-route cache: `docs/cache.md`); `None` where no cache is configured.
    #[serde(skip)]
    pub cache: Option<CacheNote>,
}

/// What a response cache did for one answer: served it (`Hit`, `Stale`), stored or looked
/// for it (`Miss`), or stood aside (`Bypass`, with the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheNote {
    /// `hit`, `miss`, `stale` or `bypass`.
    pub status: CacheStatus,
    /// Seconds since the served entry was stored (`Hit`, `Stale`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
    /// What the served entry cost when it was answered: what this answer saved. `None` on
    /// a miss or bypass, and when the entry's price was unknown.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "usd_opt")]
    pub saved_usd: Option<Money>,
    /// Why the cache stood aside (`Bypass`): `no-store`, `temperature`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

fn usd_opt<S: serde::Serializer>(m: &Option<Money>, s: S) -> Result<S::Ok, S::Error> {
    match m {
        Some(m) => s.serialize_f64(m.to_usd()),
        None => s.serialize_none(),
    }
}

/// See [`CacheNote::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheStatus {
    /// A fresh stored answer; nothing was called upstream.
    Hit,
    /// No usable entry: the gateway answered (and the answer was stored if it could be).
    Miss,
    /// Every provider failed and an entry within `stale_if_error` answered instead.
    Stale,
    /// The request is not cacheable or the client said `no-store`.
    Bypass,
}

impl CacheStatus {
    /// The word `x-switchyard-cache` carries.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hit => "hit",
            Self::Miss => "miss",
            Self::Stale => "stale",
            Self::Bypass => "bypass",
        }
    }
}

fn no_fields(set: &FieldSet) -> bool {
    set.is_empty()
}

fn field_names<S: serde::Serializer>(set: &FieldSet, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(set.iter().map(Field::name))
}

/// An incremental tool-call fragment of a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Which tool call (position in the message) this fragment extends.
    pub index: u32,
    /// The call id, on the first fragment.
    pub id: Option<String>,
    /// The function name, on the first fragment.
    pub name: Option<String>,
    /// A piece of the JSON arguments text.
    pub arguments: String,
}

/// A piece of a streamed reasoning block (see [`Thinking`]): the block's first piece opens
/// it, later ones with the same `index` extend it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingDelta {
    /// Which reasoning block (position among the answer's reasoning blocks).
    pub index: u32,
    /// A piece of the reasoning text (may be empty).
    #[serde(default)]
    pub text: String,
    /// The block's signature (Anthropic sends it whole, just before the block ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The opaque data of a redacted block, whole (such a block has no other piece).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// One piece of a streamed completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatChunk {
    /// The upstream's id of the answer (see [`ProviderReply::id`]), on one chunk of the
    /// stream at least (codecs set it once, where the vendor first or last states it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Text delta (may be empty).
    pub text: String,
    /// A piece of the model's refusal message (see [`ProviderReply::refusal`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub refusal: String,
    /// The upstream's `system_fingerprint`, on the chunks that state it (as `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// Pieces of the answers after the first, for a streamed request with `n` > 1 (the
    /// fields above are the first answer's). The stream's finish signal (`finish_reason`)
    /// comes once every answer has finished; each later answer's own finish is on its
    /// piece.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<ChoiceDelta>,
    /// Tool-call deltas.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallDelta>,
    /// Reasoning-block pieces (Anthropic, for a client that speaks Messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<ThinkingDelta>,
    /// Set on the chunk that carries the vendor's finish signal.
    pub finish_reason: Option<FinishReason>,
    /// Usage, usually on the final chunk.
    pub usage: Option<Usage>,
    /// The model id reported by the vendor: on the chunks where it is stated, which may
    /// be only where it changes (the OpenAI codec's); readers keep the latest.
    pub model: Option<String>,
    /// Log probabilities of this chunk's tokens: entries of OpenAI's `logprobs.content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// A piece in the request's native API that the shared fields cannot carry, from a
    /// provider that sent the request's native body: an event of an output item of a kind
    /// the shared shape has none of (an OpenAI Responses `web_search_call`, a reasoning
    /// item); on the finish chunk, the upstream's whole answer (see
    /// [`ProviderReply::native`]). Only the dialect that wrote the native body reads it.
    /// Never serialized.
    #[serde(skip)]
    pub native: Option<Arc<Value>>,
}

impl ChatChunk {
    /// True when this chunk carries content the client would see (text, a tool call, a
    /// reasoning piece or a native piece).
    #[must_use]
    pub fn has_content(&self) -> bool {
        !self.text.is_empty()
            || !self.refusal.is_empty()
            || !self.tool_calls.is_empty()
            || !self.thinking.is_empty()
            || !self.choices.is_empty()
            || self.native.is_some()
    }

    /// Done with this chunk's text (it has been written out): its buffer, emptied, is
    /// kept for the next chunk read on this thread ([`spare_text`]), so a stream's usual
    /// chunk allocates no `String` for its text. `text` is empty afterwards.
    pub fn recycle_text(&mut self) {
        recycle_text(std::mem::take(&mut self.text));
    }
}

thread_local! {
    /// One spare text buffer per thread: the last written chunk's (see [`spare_text`]).
    static SPARE_TEXT: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// A spare buffer larger than this is freed, not kept (a chunk's text is a token or a
/// few: the spare stays small).
const SPARE_TEXT_MAX: usize = 4096;

/// An empty `String` to read a chunk's text into: the buffer the last chunk written on
/// this thread handed back ([`ChatChunk::recycle_text`]), or a new one. A stream is read
/// and written in one task, its chunks one after another: in steady state each chunk's
/// text reuses the one before it's, instead of an allocation and a free per chunk.
#[must_use]
pub fn spare_text() -> String {
    SPARE_TEXT.with(std::cell::Cell::take)
}

/// Hand `text`'s buffer back for the next [`spare_text`] on this thread (emptied; one
/// kept, of at most a few KiB: anything else is freed).
pub fn recycle_text(mut text: String) {
    if text.capacity() == 0 || text.capacity() > SPARE_TEXT_MAX {
        return;
    }
    text.clear();
    SPARE_TEXT.with(|spare| spare.set(text));
}

/// A piece of one answer after the first, in a streamed request with `n` > 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChoiceDelta {
    /// Which answer (1 for the second; the first is the chunk's own fields).
    pub index: u32,
    /// Text delta.
    #[serde(default)]
    pub text: String,
    /// A piece of its refusal message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub refusal: String,
    /// Tool-call deltas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
    /// Log probabilities of this piece's tokens (entries of `logprobs.content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// Set when this answer finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A written chunk's text buffer is the next chunk's, emptied; one too large, or none
    /// handed back, is not (a new `String`).
    #[test]
    fn a_recycled_text_buffer_serves_the_next_chunk() {
        drop(spare_text());
        let mut chunk = ChatChunk {
            text: String::with_capacity(64),
            ..ChatChunk::default()
        };
        chunk.text.push_str("Hello");
        let at = chunk.text.as_ptr();
        chunk.recycle_text();
        assert!(chunk.text.is_empty() && chunk.text.capacity() == 0);
        let next = spare_text();
        assert_eq!((next.as_ptr(), next.len(), next.capacity()), (at, 0, 64));
        assert_eq!(spare_text().capacity(), 0, "one spare, taken");
        recycle_text(String::with_capacity(SPARE_TEXT_MAX + 1));
        assert_eq!(spare_text().capacity(), 0, "too large to keep");
    }

    #[test]
    fn uncached_input_excludes_cache_reads_and_writes() {
        let u = Usage {
            input_tokens: 1000,
            output_tokens: 10,
            cached_input_tokens: 600,
            cache_write_tokens: 100,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        assert_eq!(u.uncached_input_tokens(), 300);
    }

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: 1 << 63,
            cached_input_tokens: u64::MAX,
            cache_write_tokens: 1 << 63,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 1 << 63,
        };
        let sum = huge.plus(huge);
        assert_eq!(sum.input_tokens, u64::MAX);
        assert_eq!(
            sum.output_tokens,
            u64::MAX,
            "2^63 + 2^63 must not wrap to 0"
        );
        assert_eq!(sum.cache_write_tokens, u64::MAX);
        assert_eq!(huge.total_tokens(), u64::MAX, "not 2^63 - 1 (a wrap)");
    }

    #[test]
    fn usage_above_the_absurdity_bound_is_implausible() {
        let fine = Usage {
            input_tokens: Usage::MAX_PLAUSIBLE_TOKENS,
            output_tokens: 128_000,
            ..Usage::default()
        };
        assert_eq!(fine.check_plausible(), Ok(()));
        let absurd = Usage {
            output_tokens: Usage::MAX_PLAUSIBLE_TOKENS + 1,
            ..fine
        };
        let err = absurd.check_plausible().unwrap_err();
        assert_eq!(err.field, "output");
        assert!(err.to_string().contains("100000001 output tokens"), "{err}");
        let wrapped = Usage {
            reasoning_tokens: u64::MAX,
            ..Usage::default()
        };
        assert_eq!(wrapped.check_plausible().unwrap_err().field, "reasoning");
    }

    #[test]
    fn prompt_text_is_first_user_message() {
        let mut req = ChatRequest::from_prompt("hello");
        req.messages.insert(0, Message::system("be brief"));
        assert_eq!(req.prompt_text(), "hello");
    }
}
