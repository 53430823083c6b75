//! The Anthropic Messages API adapter (`POST {base}/v1/messages`).
//!
//! Owns the mapping between the shared shape and the Messages API: [`AnthropicConfig`],
//! [`Anthropic::build_request`], [`parse_response`], [`EventParser::parse_event`] (one
//! server-sent event), [`classify`] (in `classify.rs`: the only place status codes and
//! error bodies are read), the serde types (private `wire` module) and the [`Provider`]
//! impl. The request mapping's helpers are in `request.rs`. Fixture tests live in
//! `tests.rs`; the shared HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The transport
//! (pooling, body limits, connect errors) is [`super::http`]; SSE framing and the "complete
//! at the finish signal" rule are [`super::sse`].
//!
//! Request mapping, where Anthropic differs from the shared (OpenAI-like) shape:
//! - System messages, wherever they stand, are lifted out into the top-level `system`
//!   (joined with blank lines); Anthropic has no system turns.
//! - Turns must alternate `user` / `assistant`, so consecutive messages of one role are
//!   merged into one turn. Tool results become `tool_result` blocks of a `user` turn (they
//!   lead it: Anthropic wants them before any text); adjacent assistant text is joined
//!   without a separator, because two assistant messages in a row are a prefill followed by
//!   its continuation (stream rescue appends the text already sent to the caller's prefill).
//! - A final assistant message is a *prefill*: Claude continues from it. Anthropic rejects
//!   a prefill ending in whitespace ("final assistant content cannot end with trailing
//!   whitespace"), so the trailing whitespace of that last text block is trimmed (nothing
//!   else in the request is). Claude then usually starts its reply with that whitespace,
//!   which the caller already has (a rescued stream already sent it to the client): so the
//!   same characters at the very start of the reply are dropped once, and prefill + reply
//!   join exactly. Whitespace the reply starts with beyond what was trimmed is kept.
//! - `max_tokens` is always sent: the caller's, else [`AnthropicConfig::default_max_tokens`].
//! - Tool-call arguments are sent as the parsed `input` object; arguments that are not a
//!   JSON object are a `BadRequest` here, never sent as garbage. Empty arguments are `{}`.
//! - JSON output: Anthropic has no JSON mode. By default `json_object` / `json_schema` add
//!   an instruction to the system prompt (with the schema, for `json_schema`). That is
//!   best-effort, not a guarantee: the gateway does not validate the answer. With
//!   [`AnthropicConfig::structured_outputs`] a `json_schema` is sent as Anthropic's
//!   structured output (`output_config.format`), which only newer models accept. A forced
//!   tool was not used: it would turn the answer into a tool call, and a stream rescued by
//!   continuation could not append to it.
//! - Images: base64 as a `base64` source, URLs as a `url` source, `data:` URLs decoded to
//!   `base64`. Images are accepted in user and tool messages only.
//!
//! Usage: Anthropic's `input_tokens` *excludes* cache reads and writes, so the shared
//! `input_tokens` is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`,
//! `cached_input_tokens` is `cache_read_input_tokens` and `cache_write_tokens` is
//! `cache_creation_input_tokens`. `output_tokens` (thinking included) is as is.

mod classify;
mod request;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value, parse_rfc3339, reset_wait};

use std::time::Duration;

use ::http::HeaderMap;
use async_trait::async_trait;
use futures_util::StreamExt as _;
use serde_json::{json, Value};

use super::http::{
    self, redact, snippet, ConfigError, Endpoint, ErrorPolicy, HttpClient, HttpSettings, Transport,
    UpstreamResponse,
};
use super::secret::Secret;
use super::sse::{self, Parsed, SseEvent, SseStream};
use super::{reply_as_chunk, ChunkStream, Provider};
use crate::chat::{
    ChatChunk, ChatRequest, FinishReason, ProviderReply, ResponseFormat, ToolCall, ToolCallDelta,
    Usage,
};
use crate::clock::Clock;
use crate::error::{ErrorKind, ProviderError};

/// The official API's base URL; the adapter appends `/v1/messages` and `/v1/models`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent when the caller gives none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// How to reach one Claude model.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The model id sent as `model`.
    pub model: String,
    /// The API root without `/v1` (`https://api.anthropic.com`, or a proxy speaking the
    /// same API); the adapter appends `/v1/messages`. A trailing slash is fine.
    pub base_url: String,
    /// The key, sent as `x-api-key` (marked sensitive). `None` for a proxy that adds its
    /// own. Never read from the environment here.
    pub api_key: Option<Secret>,
    /// The `anthropic-version` header.
    pub anthropic_version: String,
    /// `max_tokens` when the request has none.
    pub default_max_tokens: u32,
    /// Send a `json_schema` response format as Anthropic structured outputs
    /// (`output_config.format`) instead of a system instruction. Only newer models accept
    /// it; off by default.
    pub structured_outputs: bool,
    /// Extra headers sent on every call (`anthropic-beta`, a proxy's routing header).
    /// Applied last, so they can replace the defaults.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long to wait for usage when the finish event carried
    /// none (Anthropic puts usage on the finish event, so this rarely applies).
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values and the rate-limit reset headers.
    pub clock: Clock,
}

impl AnthropicConfig {
    /// Defaults for `model` on the official API, with no key yet.
    #[must_use]
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            anthropic_version: DEFAULT_VERSION.to_owned(),
            default_max_tokens: DEFAULT_MAX_TOKENS,
            structured_outputs: false,
            headers: Vec::new(),
            http: HttpSettings::default(),
            usage_grace: sse::DEFAULT_USAGE_GRACE,
            clock: Clock::system(),
        }
    }

    /// Builder: the API root.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Builder: the key.
    #[must_use]
    pub fn api_key(mut self, key: Secret) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Builder: the `anthropic-version` header.
    #[must_use]
    pub fn anthropic_version(mut self, version: impl Into<String>) -> Self {
        self.anthropic_version = version.into();
        self
    }

    /// Builder: `max_tokens` when the request has none.
    #[must_use]
    pub fn default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }

    /// Builder: one extra header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A Claude model behind the Messages API.
#[derive(Debug)]
pub struct Anthropic {
    model: String,
    default_max_tokens: u32,
    structured_outputs: bool,
    api_key: Option<Secret>,
    /// Classifies non-2xx answers and scrubs the key from every error.
    errors: ErrorPolicy,
    http: HttpClient,
    messages_url: Endpoint,
    models_url: Endpoint,
    /// Headers of a JSON call (key, version, extras), built once.
    json_headers: HeaderMap,
    /// The same with `Accept: text/event-stream`.
    sse_headers: HeaderMap,
    usage_grace: Duration,
}

impl Anthropic {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable `base_url`, header, version or key (empty, or not valid in a header).
    pub fn new(config: AnthropicConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let messages_url = Endpoint::at(&config.base_url, "/v1/messages")?;
        let models_url = Endpoint::at(&config.base_url, "/v1/models")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            if key.is_empty() {
                return Err(ConfigError("api_key is empty".to_owned()));
            }
            http::insert_secret_header(&mut headers, "x-api-key", "", key)?;
        }
        http::insert_header(&mut headers, "anthropic-version", &config.anthropic_version)?;
        for (name, value) in &config.headers {
            http::insert_header(&mut headers, name, value)?;
        }
        let mut json_headers = headers.clone();
        http::insert_header(&mut json_headers, "accept", "application/json")?;
        let mut sse_headers = headers;
        http::insert_header(&mut sse_headers, "accept", "text/event-stream")?;
        Ok(Self {
            http: transport.client(config.http)?,
            model: config.model,
            default_max_tokens: config.default_max_tokens,
            structured_outputs: config.structured_outputs,
            errors: ErrorPolicy {
                classify,
                key: config.api_key.clone(),
                clock: config.clock,
            },
            api_key: config.api_key,
            messages_url,
            models_url,
            json_headers,
            sse_headers,
            usage_grace: config.usage_grace,
        })
    }

    /// The JSON body of a Messages call for `req`.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed: tool-call arguments that are not
    /// a JSON object, a tool result without a call id, an image where Anthropic takes none,
    /// a malformed `data:` URL, or no user/assistant message at all.
    pub fn build_request(&self, req: &ChatRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.encode(req, stream).map(|(body, _)| body)
    }

    /// The body, and the whitespace trimmed off a final prefill (see the module docs).
    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<(Vec<u8>, String), ProviderError> {
        let (messages, trimmed) = request::wire_turns(&req.messages)?;
        if messages.is_empty() {
            return Err(bad_request("the request has no user or assistant messages"));
        }
        let native_schema = self.structured_outputs
            && matches!(req.response_format, Some(ResponseFormat::JsonSchema { .. }));
        let body = wire::Request {
            model: &self.model,
            max_tokens: req.max_tokens.unwrap_or(self.default_max_tokens),
            messages,
            system: request::system_prompt(req, native_schema)?,
            temperature: req.temperature,
            top_p: req.top_p,
            stop_sequences: &req.stop,
            tools: req
                .tools
                .iter()
                .map(|t| wire::ToolDef {
                    name: &t.name,
                    description: t.description.as_deref(),
                    input_schema: &t.parameters,
                })
                .collect(),
            tool_choice: request::wire_tool_choice(req),
            metadata: req
                .user
                .as_deref()
                .map(|user_id| wire::Metadata { user_id }),
            output_config: request::native_output_config(req).filter(|_| native_schema),
            stream,
        };
        let body = super::encode_body(&body)?;
        Ok((body, trimmed))
    }

    /// Scrub the key out of an error's text.
    fn redact(&self, error: ProviderError) -> ProviderError {
        self.errors.redact(error)
    }

    async fn post(&self, body: Vec<u8>, stream: bool) -> Result<UpstreamResponse, ProviderError> {
        let headers = if stream {
            &self.sse_headers
        } else {
            &self.json_headers
        };
        let sent = self.http.post_json(&self.messages_url, headers, body).await;
        self.errors.checked(sent).await
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn default_max_tokens(&self) -> Option<u32> {
        Some(self.default_max_tokens)
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let (body, trimmed) = self.encode(req, false)?;
        let response = self.post(body, false).await?;
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        let mut reply = parse_response(&bytes).map_err(|e| self.redact(e))?;
        Seam::new(trimmed).apply(&mut reply.text);
        Ok(reply)
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let (body, trimmed) = self.encode(req, true)?;
        let response = self.post(body, true).await?;
        match response.media_type().as_deref() {
            // A proxy that ignored `stream: true` (or an error object in a 200 body).
            Some("application/json") => {
                let bytes = response.body().await.map_err(|e| self.redact(e))?;
                let mut reply = parse_response(&bytes).map_err(|e| self.redact(e))?;
                Seam::new(trimmed).apply(&mut reply.text);
                return Ok(Box::pin(futures_util::stream::iter([Ok(reply_as_chunk(
                    reply,
                ))])));
            }
            Some("text/html") => {
                let bytes = response.body().await.unwrap_or_default();
                return Err(self.redact(
                    malformed(format!(
                        "expected an event stream, got HTML: {}",
                        snippet(&bytes)
                    ))
                    .with_status(200),
                ));
            }
            _ => {}
        }
        let limit = response.max_body_bytes();
        let events = SseStream::new(response.into_byte_stream(), limit);
        let mut parser = EventParser::after_prefill(trimmed);
        let chunks = sse::into_chunks(events, self.usage_grace, move |e| parser.parse_event(e));
        let key = self.api_key.clone();
        Ok(Box::pin(chunks.map(move |item| {
            item.map_err(|e| redact(key.as_ref(), e))
        })))
    }

    /// `GET {base_url}/v1/models`: free, and proves the key and the endpoint.
    async fn check_health(&self) -> Result<(), ProviderError> {
        let sent = self.http.get(&self.models_url, &self.json_headers).await;
        let response = self.errors.checked(sent).await?;
        response.body().await.map_err(|e| self.redact(e))?;
        Ok(())
    }
}

/// Parse a 200 response body. A body that is not a `message` (HTML from a proxy, empty, no
/// `content`, another `type`) is `Malformed`; an `error` object is classified.
///
/// Text blocks are concatenated; `tool_use` blocks become tool calls (arguments = the JSON
/// text of `input`); thinking and other blocks are not part of the answer.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let message: wire::Message = serde_json::from_slice(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a message, got {what}"))
    })?;
    match message.kind.as_deref() {
        Some("message") => {}
        Some("error") => {
            let value = serde_json::from_slice(body).unwrap_or(Value::Null);
            return Err(classify_value(&value));
        }
        other => {
            return Err(malformed(format!(
                "expected an object of type \"message\", got {other:?}"
            )))
        }
    }
    let content = message
        .content
        .ok_or_else(|| malformed("message without `content`"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            wire::ContentBlock::Text { text: t } => text.push_str(&t),
            wire::ContentBlock::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments_text(&input),
            }),
            wire::ContentBlock::Other => {}
        }
    }
    Ok(ProviderReply {
        text,
        tool_calls,
        finish_reason: message.stop_reason.as_deref().map(finish_reason),
        model: message.model,
        usage: message.usage.map(normalized_usage).transpose()?,
        reported_cost: None,
        reported_latency: None,
    })
}

/// Reads one streamed message, event by event. Stateful: it remembers the model and input
/// usage from `message_start` (merged into the finish chunk's usage) and which content
/// blocks are tool calls (a block's `index` counts every block; a tool call's counts only
/// tool calls).
#[derive(Debug, Default)]
pub struct EventParser {
    model: Option<String>,
    /// Usage so far (cumulative counts; later events replace earlier ones).
    usage: Option<wire::Usage>,
    tools: Vec<ToolBlock>,
    /// Whitespace trimmed off the prefill, dropped from the start of the text.
    seam: Seam,
}

/// A `tool_use` content block of the stream.
#[derive(Debug)]
struct ToolBlock {
    /// The content block's index.
    block: u32,
    /// Its position among the tool calls.
    call: u32,
    /// Some non-empty argument text was emitted.
    has_arguments: bool,
}

impl EventParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser for the reply to a request whose prefill lost `trimmed` (trailing
    /// whitespace): the same characters at the start of the text are dropped once.
    fn after_prefill(trimmed: String) -> Self {
        Self {
            seam: Seam::new(trimmed),
            ..Self::default()
        }
    }

    /// Parse one server-sent event.
    ///
    /// `message_delta` carries the finish signal (`stop_reason`) with the usage, merged
    /// with the input usage of `message_start`; `message_stop` is [`Parsed::Done`]; text
    /// and tool-argument deltas are chunks; `ping`, thinking deltas and unknown events are
    /// skipped; an `error` event is classified like an HTTP error. Data that is not JSON of
    /// a known shape is `Malformed`.
    ///
    /// # Errors
    /// As above.
    pub fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let mut parsed = self.parse(event)?;
        if let Parsed::Chunk(chunk) = &mut parsed {
            self.seam.apply(&mut chunk.text);
        }
        Ok(parsed)
    }

    fn parse(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let data = event.data.trim();
        if event.event == "error" {
            return Err(classify_value(&error_value(data)));
        }
        let parsed: wire::Event = serde_json::from_str(data).map_err(|e| {
            malformed(format!(
                "stream event {:?} is not valid ({e}): {}",
                event.event,
                snippet(data.as_bytes())
            ))
        })?;
        match parsed {
            wire::Event::MessageStart { message } => {
                self.model = message.model;
                self.absorb(message.usage)?;
                Ok(Parsed::Skip)
            }
            wire::Event::ContentBlockStart {
                index,
                content_block,
            } => Ok(self.block_start(index, content_block)),
            wire::Event::ContentBlockDelta { index, delta } => self.block_delta(index, delta),
            wire::Event::ContentBlockStop { index } => Ok(self.block_stop(index)),
            wire::Event::MessageDelta { delta, usage } => {
                self.absorb(usage)?;
                Ok(Parsed::Chunk(ChatChunk {
                    finish_reason: delta.stop_reason.as_deref().map(finish_reason),
                    usage: self.usage.map(normalized_usage).transpose()?,
                    model: self.model.clone(),
                    ..ChatChunk::default()
                }))
            }
            wire::Event::MessageStop => Ok(Parsed::Done),
            wire::Event::Ping | wire::Event::Other => Ok(Parsed::Skip),
            wire::Event::Error => Err(classify_value(&error_value(data))),
        }
    }

    /// Merge newer counts in; absurd ones fail the stream at once (`message_start`
    /// arrives before any content, so that still fails over).
    fn absorb(&mut self, usage: Option<wire::Usage>) -> Result<(), ProviderError> {
        if let Some(newer) = usage {
            let merged = self.usage.unwrap_or_default().updated(newer);
            normalized_usage(merged)?;
            self.usage = Some(merged);
        }
        Ok(())
    }

    fn block_start(&mut self, index: u32, block: wire::StartBlock) -> Parsed {
        match block {
            wire::StartBlock::Text { text } if !text.is_empty() => text_chunk(text),
            wire::StartBlock::ToolUse { id, name, input } => {
                let call = u32::try_from(self.tools.len()).unwrap_or(u32::MAX);
                // The start carries `input: {}`; the arguments follow as deltas. A proxy
                // that sends the whole input here sends no deltas.
                let arguments = match &input {
                    Value::Object(map) if !map.is_empty() => input.to_string(),
                    _ => String::new(),
                };
                self.tools.push(ToolBlock {
                    block: index,
                    call,
                    has_arguments: !arguments.is_empty(),
                });
                tool_chunk(ToolCallDelta {
                    index: call,
                    id: Some(id),
                    name: Some(name),
                    arguments,
                })
            }
            wire::StartBlock::Text { .. } | wire::StartBlock::Other => Parsed::Skip,
        }
    }

    fn block_delta(&mut self, index: u32, delta: wire::Delta) -> Result<Parsed, ProviderError> {
        match delta {
            wire::Delta::Text { text } => Ok(text_chunk(text)),
            wire::Delta::InputJson { partial_json } => {
                let tool = self
                    .tools
                    .iter_mut()
                    .find(|t| t.block == index)
                    .ok_or_else(|| {
                        malformed(format!(
                            "input_json_delta for content block {index}, which is not a tool_use block"
                        ))
                    })?;
                if partial_json.is_empty() {
                    return Ok(Parsed::Skip);
                }
                tool.has_arguments = true;
                Ok(tool_chunk(ToolCallDelta {
                    index: tool.call,
                    arguments: partial_json,
                    ..ToolCallDelta::default()
                }))
            }
            wire::Delta::Other => Ok(Parsed::Skip),
        }
    }

    /// A tool call that ended without arguments gets `{}`, as a non-streamed one would.
    fn block_stop(&mut self, index: u32) -> Parsed {
        match self.tools.iter_mut().find(|t| t.block == index) {
            Some(tool) if !tool.has_arguments => {
                tool.has_arguments = true;
                tool_chunk(ToolCallDelta {
                    index: tool.call,
                    arguments: "{}".to_owned(),
                    ..ToolCallDelta::default()
                })
            }
            _ => Parsed::Skip,
        }
    }
}

/// Whitespace trimmed off a prefill, still to be dropped from the start of the reply.
#[derive(Debug, Default)]
struct Seam {
    pending: String,
}

impl Seam {
    fn new(trimmed: String) -> Self {
        Self { pending: trimmed }
    }

    /// Drop from the start of `text` the characters it shares with what is pending. Text
    /// arrives in pieces: a piece consumed whole leaves the rest pending; any other text
    /// ends the seam.
    fn apply(&mut self, text: &mut String) {
        if self.pending.is_empty() || text.is_empty() {
            return;
        }
        let common: usize = self
            .pending
            .chars()
            .zip(text.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        text.drain(..common);
        if text.is_empty() {
            self.pending.drain(..common);
        } else {
            self.pending.clear();
        }
    }
}

fn text_chunk(text: String) -> Parsed {
    Parsed::Chunk(ChatChunk {
        text,
        ..ChatChunk::default()
    })
}

fn tool_chunk(delta: ToolCallDelta) -> Parsed {
    Parsed::Chunk(ChatChunk {
        tool_calls: vec![delta],
        ..ChatChunk::default()
    })
}

/// An error event's data as JSON; text that is not JSON becomes its message.
fn error_value(data: &str) -> Value {
    serde_json::from_str(data)
        .unwrap_or_else(|_| json!({"error": {"message": snippet(data.as_bytes())}}))
}

/// A tool call's `input` as arguments text (`{}` when absent).
fn arguments_text(input: &Value) -> String {
    match input {
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// Anthropic's stop reasons, normalised. `model_context_window_exceeded` is a truncation
/// (documented as "treat the response as truncated"); `pause_turn` and unknown reasons are
/// kept verbatim.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Anthropic's usage in the shared convention (see the module docs); an absurd count
/// (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the reply `Malformed`.
fn normalized_usage(u: wire::Usage) -> Result<Usage, ProviderError> {
    let cache_read = u.cache_read_input_tokens.unwrap_or(0);
    let cache_write = u.cache_creation_input_tokens.unwrap_or(0);
    let usage = Usage {
        input_tokens: u
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cache_read)
            .saturating_add(cache_write),
        output_tokens: u.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        cache_write_tokens: cache_write,
        reasoning_tokens: 0,
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}
