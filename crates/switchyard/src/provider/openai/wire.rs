//! Chat Completions on the wire: the serde types of requests, responses, stream chunks and
//! usage, as OpenAI documents them. Requests borrow from the shared shape (no copies of
//! message text); responses are lenient where OpenAI-compatible servers differ (`null`
//! lists, numeric error codes, arguments sent as objects).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /chat/completions` body.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub stop: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logit_bias: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<&'a Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub modalities: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search_options: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<&'a Value>,
    /// A route's `passthrough_unknown` fields, verbatim.
    #[serde(flatten)]
    pub passthrough: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

/// `stream_options`: ask for the final usage chunk.
#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub include_usage: bool,
}

/// One entry of `messages`.
#[derive(Debug, Serialize)]
pub(super) struct Message<'a> {
    pub role: &'static str,
    /// `null` only for an assistant message that just calls tools.
    pub content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<Cow<'a, str>>,
}

/// A string for plain text (what every compatible server takes), parts otherwise.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A content part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

/// `image_url`: an https URL or a `data:` URL.
#[derive(Debug, Serialize)]
pub(super) struct ImageUrl<'a> {
    pub url: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
}

/// An assistant's earlier tool call, sent back in history.
#[derive(Debug, Serialize)]
pub(super) struct ToolCallOut<'a> {
    pub id: Cow<'a, str>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCallOut<'a>,
}

/// The function half of a tool call.
#[derive(Debug, Serialize)]
pub(super) struct FunctionCallOut<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

/// One entry of `tools`.
#[derive(Debug, Serialize)]
pub(super) struct ToolDef<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionDef<'a>,
}

/// A function declaration.
#[derive(Debug, Serialize)]
pub(super) struct FunctionDef<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    pub parameters: &'a Value,
}

/// A `chat.completion` object, or an error object some servers return with a 200. Read in
/// one pass: its strings borrow from the body where they have no escapes (copied once, into
/// the reply), the message's content is read straight into its text ([`MessageText`]).
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Deserialize)]
pub(super) struct Completion<'a> {
    /// The completion's id (`chatcmpl-…`).
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    /// Absent means this is not a completion (checked, never defaulted).
    #[serde(borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub system_fingerprint: Option<Cow<'a, str>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub error: Option<Value>,
    /// vLLM's older top-level error shape: `{"object": "error", "message": ...}`.
    #[serde(default, borrow)]
    pub object: Option<Cow<'a, str>>,
}

/// One choice of a completion.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(borrow)]
    pub message: ResponseMessage<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
    /// `{"content": [...]}` for a request with `logprobs`.
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// The assistant message of a choice.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Deserialize)]
pub(super) struct ResponseMessage<'a> {
    /// A string, `null`, or (some servers) a list of text parts.
    #[serde(default)]
    pub content: Option<MessageText>,
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ResponseToolCall>>,
    /// The reasoning text OpenAI-compatible reasoning servers return (DeepSeek, vLLM).
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// The same under the name newer servers use (vLLM, OpenRouter).
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    /// Spoken output (see [`Extras`]).
    #[serde(default)]
    pub audio: Option<Value>,
    /// Web search citations (see [`Extras`]).
    #[serde(default)]
    pub annotations: Option<Value>,
    /// The deprecated function call (see [`Extras`]).
    #[serde(default)]
    pub function_call: Option<Value>,
}

/// A message's `content` read into its text: a string as it is, `null` as none, a list of
/// parts as their `text`s joined (parts without one skipped); anything else is kept
/// (`Err`) for the reply's error message, as the JSON it was.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug)]
pub(super) struct MessageText(pub Result<String, Value>);

impl<'de> Deserialize<'de> for MessageText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MessageTextVisitor)
    }
}

struct MessageTextVisitor;

impl<'de> serde::de::Visitor<'de> for MessageTextVisitor {
    type Value = MessageText;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_str<E>(self, s: &str) -> Result<MessageText, E> {
        Ok(MessageText(Ok(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<MessageText, E> {
        Ok(MessageText(Ok(s)))
    }

    fn visit_unit<E>(self) -> Result<MessageText, E> {
        Ok(MessageText(Ok(String::new())))
    }

    fn visit_none<E>(self) -> Result<MessageText, E> {
        Ok(MessageText(Ok(String::new())))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<MessageText, A::Error> {
        let mut text = String::new();
        while let Some(part) = seq.next_element::<Value>()? {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
        Ok(MessageText(Ok(text)))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<MessageText, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            .map(|v| MessageText(Err(v)))
    }

    fn visit_bool<E>(self, v: bool) -> Result<MessageText, E> {
        Ok(MessageText(Err(Value::Bool(v))))
    }

    fn visit_i64<E>(self, v: i64) -> Result<MessageText, E> {
        Ok(MessageText(Err(Value::from(v))))
    }

    fn visit_u64<E>(self, v: u64) -> Result<MessageText, E> {
        Ok(MessageText(Err(Value::from(v))))
    }

    fn visit_f64<E>(self, v: f64) -> Result<MessageText, E> {
        Ok(MessageText(Err(Value::from(v))))
    }
}

/// What OpenAI answers to its own contract fields, which the shared shape does not model:
/// spoken output (`audio`, for `audio` / `modalities`), web search citations
/// (`annotations`, for `web_search_options`), and the deprecated `function_call`. Kept as
/// the vendor sent them, for the Chat Completions dialect to pass on
/// (`ProviderReply::native`, `ChatChunk::native`): the pieces that say something
/// (`annotations` only when not empty), as an object; `None` when none does.
pub(super) fn extras(
    audio: Option<Value>,
    annotations: Option<Value>,
    function_call: Option<Value>,
) -> Option<serde_json::Map<String, Value>> {
    if audio.is_none() && annotations.is_none() && function_call.is_none() {
        return None; // (every answer but OpenAI's own: no map built)
    }
    let mut out = serde_json::Map::new();
    if let Some(a) = audio.filter(|a| !a.is_null()) {
        out.insert("audio".into(), a);
    }
    if let Some(a) = annotations.filter(|a| a.as_array().is_some_and(|l| !l.is_empty())) {
        out.insert("annotations".into(), a);
    }
    if let Some(f) = function_call.filter(|f| !f.is_null()) {
        out.insert("function_call".into(), f);
    }
    (!out.is_empty()).then_some(out)
}

/// A tool call in a response.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Deserialize)]
pub(super) struct ResponseToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: ResponseFunction,
}

/// The function half of a response tool call.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Deserialize)]
pub(super) struct ResponseFunction {
    pub name: String,
    /// JSON text per the spec; some servers send an object.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// A `chat.completion.chunk` object (or an error event). Its strings borrow from the
/// event where they have no escapes (the content is copied once, into the chunk).
#[derive(Debug, Deserialize)]
pub(super) struct Chunk<'a> {
    /// The completion's id, the same on every chunk: borrowed from the event (kept only
    /// from the chunk that finishes the stream).
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    /// Empty (or `null`, or absent) on the final usage chunk.
    #[serde(default, borrow)]
    pub choices: Option<Vec<StreamChoice<'a>>>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub system_fingerprint: Option<Cow<'a, str>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Groq's extension: the final chunk's usage under `x_groq.usage`.
    #[serde(default)]
    pub x_groq: Option<XGroq>,
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default, borrow)]
    pub object: Option<Cow<'a, str>>,
}

/// Groq's `x_groq` object on a chunk.
#[derive(Debug, Deserialize)]
pub(super) struct XGroq {
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One choice of a chunk.
#[derive(Debug, Deserialize)]
pub(super) struct StreamChoice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// What a chunk adds.
#[derive(Debug, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    #[serde(default)]
    pub tool_calls: Option<Vec<DeltaToolCall>>,
    /// A piece of reasoning text (see [`ResponseMessage::reasoning_content`]).
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// The same under its newer name.
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    /// Spoken output (see [`Extras`]).
    #[serde(default)]
    pub audio: Option<Value>,
    /// Web search citations (see [`Extras`]).
    #[serde(default)]
    pub annotations: Option<Value>,
    /// The deprecated function call (see [`Extras`]).
    #[serde(default)]
    pub function_call: Option<Value>,
}

/// A tool-call fragment: `id` and `name` on the first, `arguments` pieces after.
#[derive(Debug, Deserialize)]
pub(super) struct DeltaToolCall {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<DeltaFunction>,
}

/// The function half of a tool-call fragment.
#[derive(Debug, Deserialize)]
pub(super) struct DeltaFunction {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// `usage`. `prompt_tokens` already includes cached tokens; `completion_tokens` already
/// includes reasoning tokens. `cost` is OpenRouter's billed amount in USD.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
    #[serde(default)]
    pub cost: Option<f64>,
}

/// `usage.prompt_tokens_details`.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[cfg_attr(test, derive(PartialEq))]
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}
