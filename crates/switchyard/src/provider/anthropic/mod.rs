//! The Anthropic Messages API adapter (`POST {base}/v1/messages`).
//!
//! Owns the mapping between the shared shape and the Messages API: [`AnthropicConfig`] and
//! [`AnthropicCodec`] here (the body, [`Anthropic::build_request`]); the request mapping's
//! helpers in `request.rs`; replies in `reply.rs` ([`parse_response`]); stream events in
//! `stream.rs` ([`EventParser::parse_event`]); [`classify`] in `classify.rs` (the only place
//! status codes and error bodies are read); the serde types in the private `wire` module.
//! Fixture tests live in `tests/`; the shared HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The calls themselves
//! (headers, posting, the health check, scrubbing the key) are [`super::codec::HttpProvider`];
//! the transport (pooling, body limits, connect errors) is [`super::http`]; SSE framing and
//! the "complete at the finish signal" rule are [`super::sse`].
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
//! - Reasoning in history ([`crate::chat::Message::thinking`]): signed `thinking` and
//!   `redacted_thinking` blocks lead their assistant turn, as Anthropic returned them
//!   (Anthropic ignores them in earlier turns with thinking off, and requires them on a
//!   tool-loop turn with it on); unsigned reasoning (another vendor's) is left out, and so
//!   is all reasoning in a final assistant turn (a prefill: Anthropic refuses reasoning
//!   there with thinking off, and a prefill with it on). Reasoning alone is no turn.
//! - `max_tokens` is always sent: the caller's, else [`AnthropicConfig::default_max_tokens`].
//! - Tool-call arguments are sent as the parsed `input` object; arguments that are not a
//!   JSON object are a `BadRequest` here, never sent as garbage. Empty arguments are `{}`.
//! - Cache breakpoints ([`crate::chat::Message::cache`], [`crate::chat::Tool::cache_control`])
//!   are `cache_control` on the block of the part they mark (`ttl` kept), and on the tool
//!   they follow. A system prompt with one is sent as text blocks (one per part) instead of
//!   one string; an assistant message with one keeps a block per part. More than
//!   [`crate::chat::MAX_CACHE_BREAKPOINTS`] is a `BadRequest` (Anthropic's limit).
//! - JSON output: Anthropic has no JSON mode, and no instruction in the prompt stands in
//!   for one. A `json_schema` goes as structured outputs (`output_config.format`) on models
//!   that have them ([`AnthropicConfig::structured_outputs`]; by default
//!   [`has_structured_outputs`] of the model id). Otherwise, and for `json_object` always
//!   (structured outputs take no open object), the schema is the `input_schema` of a forced
//!   tool (`tool_choice: {"type": "tool"}`, named after the schema, or `json_response`),
//!   and the tool's input comes back as the answer's text, finish reason `stop`, no tool
//!   call shown (streamed: its `input_json_delta`s are text deltas). A forced tool leaves
//!   no room for the client's own tools or a forcing `tool_choice`, and Anthropic refuses
//!   one with thinking on: for such a request the codec cannot honour `response_format`
//!   with those fields (`Codec::cannot_honour`: the gateway drops thinking, a degradable
//!   field, or skips the provider), and encoding it anyway is a `BadRequest` naming them. A JSON stream is not rescued by continuation (the
//!   gateway restarts it instead).
//! - Images: base64 as a `base64` source, URLs as a `url` source, `data:` URLs decoded to
//!   `base64`. Images are accepted in user and tool messages only.
//!
//! Usage: Anthropic's `input_tokens` *excludes* cache reads and writes, so the shared
//! `input_tokens` is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`,
//! `cached_input_tokens` is `cache_read_input_tokens` and `cache_write_tokens` is
//! `cache_creation_input_tokens`, of which `cache_creation.ephemeral_1h_input_tokens` is
//! `cache_write_1h_tokens` (1-hour writes are priced apart from 5-minute ones).
//! `output_tokens` (thinking included) is as is; Anthropic reports no separate thinking
//! count, so `reasoning_tokens` stays 0 and thinking is billed as the output it is.

mod classify;
mod reply;
mod request;
mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value, parse_rfc3339, reset_wait};
pub use reply::parse_response;
pub use request::has_structured_outputs;
pub use stream::EventParser;

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;

use super::codec::{Codec, Connection, Endpoints, HttpProvider, StreamEvents};
use super::http::{self, ConfigError, Endpoint, HttpFailure, HttpSettings, Transport};
use super::secret::Secret;
use super::sse::{self, Parsed, SseEvent};
use crate::chat::{ChatRequest, Field, FieldSet, ProviderReply, Support, MAX_CACHE_BREAKPOINTS};
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
    /// (`output_config.format`) rather than a forced tool. `None` (the default): when
    /// [`has_structured_outputs`] says the model has them.
    pub structured_outputs: Option<bool>,
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
            structured_outputs: None,
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

/// A Claude model behind the Messages API: the shared HTTP provider running
/// [`AnthropicCodec`].
pub type Anthropic = HttpProvider<AnthropicCodec>;

impl Anthropic {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable `base_url`, header, version or key (empty, or not valid in a header).
    pub fn new(config: AnthropicConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let call = Endpoint::at(&config.base_url, "/v1/messages")?;
        let endpoints = Endpoints {
            stream: call.clone(),
            call,
            health: Endpoint::at(&config.base_url, "/v1/models")?,
        };
        let mut headers = Vec::with_capacity(config.headers.len() + 1);
        headers.push(("anthropic-version".to_owned(), config.anthropic_version));
        headers.extend(config.headers);
        let structured_outputs = config
            .structured_outputs
            .unwrap_or_else(|| has_structured_outputs(&config.model));
        let codec = AnthropicCodec {
            model: config.model,
            default_max_tokens: config.default_max_tokens,
            structured_outputs,
        };
        let connection = Connection {
            api_key: config.api_key,
            headers,
            http: config.http,
            usage_grace: config.usage_grace,
            clock: config.clock,
        };
        Self::assemble(codec, endpoints, connection, transport)
    }

    /// The JSON body of a Messages call for `req`.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed: tool-call arguments that are not
    /// a JSON object, a tool result without a call id, an image where Anthropic takes none,
    /// a malformed `data:` URL, or no user/assistant message at all.
    pub fn build_request(&self, req: &ChatRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.codec().encode(req, stream).map(|(body, _)| body)
    }
}

/// What reading a Messages reply needs from its request: the whitespace trimmed off a
/// final prefill (see the module docs), and the forced tool whose input is a JSON answer.
#[derive(Debug, Default)]
pub struct AnthropicCall {
    trimmed: String,
    json_tool: Option<String>,
}

/// The description of the forced tool that carries a JSON answer.
const JSON_TOOL_DESCRIPTION: &str = "The answer, as a JSON value in the requested format.";

/// The Messages API on the wire.
#[derive(Debug)]
pub struct AnthropicCodec {
    model: String,
    default_max_tokens: u32,
    structured_outputs: bool,
}

impl AnthropicCodec {
    /// The Messages API for `model`, for the clouds that serve it (`vertex/`).
    pub(crate) fn new(model: String, default_max_tokens: u32, structured_outputs: bool) -> Self {
        Self {
            model,
            default_max_tokens,
            structured_outputs,
        }
    }
}

impl Codec for AnthropicCodec {
    const KIND: &'static str = "anthropic";
    const NATIVE: Option<&'static str> = Some("anthropic");
    // Messages has no `n`: several answers are several calls (docs/fields.md)
    const ONE_ANSWER_PER_CALL: bool = true;
    type Call = AnthropicCall;
    type Events = EventParser;
    const APPENDS_NATIVE_PREFILL: bool = true;

    fn model(&self) -> &str {
        &self.model
    }

    fn default_max_tokens(&self) -> Option<u32> {
        Some(self.default_max_tokens)
    }

    fn support(field: Field) -> Support {
        request::support(field)
    }

    /// Fields this request cannot have together here (see the module docs): a JSON
    /// response format this model would carry through a forced tool, with the client's
    /// own tools, a forcing `tool_choice` or thinking; `reasoning_effort` when
    /// `max_tokens` leaves no room for Anthropic's smallest thinking budget; and
    /// `cache_control` on an empty text part (Anthropic caches no empty block). The
    /// gateway drops a degradable one (thinking, breakpoints) or tries the route's next
    /// provider. A native body is the client's own: Anthropic judges it.
    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        if req.native_continuing(Self::KIND).is_some() {
            return FieldSet::EMPTY;
        }
        let mut set = request::json_clash(req, self.structured_outputs);
        let max_tokens = req.max_tokens.unwrap_or(self.default_max_tokens);
        set.insert_if(
            !request::thinking_fits(req.reasoning_effort, max_tokens),
            Field::ReasoningEffort,
        );
        set.insert_if(req.marks_empty_part(), Field::CacheControl);
        set
    }

    /// The body, and what reading its reply needs (see the module docs). A request with an
    /// Anthropic native body sends that body (see `native_body`), with a rescue's prefill
    /// appended when it has one.
    fn encode(
        &self,
        req: &ChatRequest,
        stream: bool,
    ) -> Result<(Vec<u8>, AnthropicCall), ProviderError> {
        if let Some(native) = req.native_continuing(Self::KIND) {
            let max_tokens = req.max_tokens.unwrap_or(self.default_max_tokens);
            let (body, trimmed) = native_body(native, &self.model, max_tokens, stream)?;
            let call = AnthropicCall {
                trimmed,
                json_tool: None,
            };
            return Ok((body, call));
        }
        let (messages, trimmed) = request::wire_turns(&req.messages)?;
        if messages.is_empty() {
            return Err(bad_request("the request has no user or assistant messages"));
        }
        if req.cache_breakpoints() > MAX_CACHE_BREAKPOINTS {
            return Err(bad_request(format!(
                "{} cache_control breakpoints: Anthropic takes at most {MAX_CACHE_BREAKPOINTS}",
                req.cache_breakpoints()
            )));
        }
        let json = request::json_output(req, self.structured_outputs)?;
        let json_tool = json
            .as_ref()
            .and_then(request::JsonOutput::tool_name)
            .map(str::to_owned);
        let output_config = json.as_ref().and_then(request::JsonOutput::output_config);
        let mut tools: Vec<wire::ToolDef<'_>> = req
            .tools
            .iter()
            .map(|t| wire::ToolDef {
                name: &t.name,
                description: t.description.as_deref(),
                input_schema: std::borrow::Cow::Borrowed(&t.parameters),
                cache_control: t.cache_control.map(wire::CacheControl::from),
            })
            .collect();
        let mut tool_choice = request::wire_tool_choice(req);
        if let Some(request::JsonOutput::Tool { name, schema }) = json {
            tools.push(wire::ToolDef {
                name,
                description: Some(JSON_TOOL_DESCRIPTION),
                input_schema: schema,
                cache_control: None,
            });
            tool_choice = Some(wire::ToolChoiceOut {
                choice: wire::ToolChoice::Tool { name },
                disable_parallel_tool_use: true,
            });
        }
        let max_tokens = req.max_tokens.unwrap_or(self.default_max_tokens);
        let body = wire::Request {
            model: &self.model,
            max_tokens,
            messages,
            system: request::system_prompt(req)?,
            temperature: req.temperature,
            top_p: req.top_p,
            stop_sequences: &req.stop,
            tools,
            top_k: req.top_k,
            tool_choice,
            metadata: req
                .user
                .as_deref()
                .map(|user_id| wire::Metadata { user_id }),
            service_tier: request::service_tier(req.service_tier.as_deref()),
            thinking: request::thinking(req.reasoning_effort, max_tokens)?,
            output_config,
            stream,
        };
        let body = crate::provider::encode_body(&body)?;
        Ok((body, AnthropicCall { trimmed, json_tool }))
    }

    fn parse_reply(
        &self,
        body: &[u8],
        call: AnthropicCall,
    ) -> Result<ProviderReply, ProviderError> {
        let mut reply = parse_response(body)?;
        if let Some(tool) = &call.json_tool {
            reply::tool_as_answer(&mut reply, tool);
        }
        reply::Seam::new(call.trimmed).apply(&mut reply.text);
        Ok(reply)
    }

    fn events(&self, call: AnthropicCall) -> EventParser {
        EventParser::for_call(call.trimmed, call.json_tool)
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify(failure, now)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        http::insert_secret_header(headers, "x-api-key", "", key)
    }

    /// `{base}/v1/messages/count_tokens`, beside the call endpoint.
    fn count_tokens_url(&self, call: &Endpoint) -> Option<String> {
        Some(format!(
            "{}/count_tokens",
            call.as_str().trim_end_matches('/')
        ))
    }
}

/// The client's own Messages body with this call's `model`, `max_tokens` and `stream`,
/// and the whitespace trimmed off a prefill. Nothing else is touched (`cache_control`,
/// `thinking`, thinking blocks in history and every beta field go as the client wrote
/// them, byte for byte), with two exceptions that turn thinking off ([`thinking_off`]): a
/// rescue's continuation, whose prefill is appended ([`append_prefill`]; Anthropic takes no
/// prefill with thinking on), and a tool turn without its thinking
/// ([`drop_orphan_thinking`]). No prefill of the client's is trimmed: the client wrote the
/// body for Anthropic, and Anthropic's answer to it is the client's to read. Only the
/// fields these read are parsed (`thinking`, the last turns of `messages`); the body is
/// written from the shared one with the changes patched in ([`crate::chat::Patch`]).
fn native_body(
    native: &crate::chat::Native,
    model: &str,
    max_tokens: u32,
    stream: bool,
) -> Result<(Vec<u8>, String), ProviderError> {
    let body = native.body.as_ref();
    let mut patch = crate::chat::Patch::default();
    let encoding = |e: serde_json::Error| bad_request(format!("encoding the request: {e}"));
    patch.set_value("model", model).map_err(encoding)?;
    patch
        .set_value("max_tokens", &max_tokens)
        .map_err(encoding)?;
    patch.set_value("stream", &stream).map_err(encoding)?;
    let trimmed = match &native.prefill {
        Some(prefill) => {
            thinking_off(body, &mut patch);
            append_prefill(body, &mut patch, prefill)?
        }
        None => {
            drop_orphan_thinking(body, &mut patch);
            String::new()
        }
    };
    Ok((body.to_bytes_with(&patch), trimmed))
}

/// A message's role and content, read without copying its content.
#[derive(serde::Deserialize)]
struct Turn<'a> {
    #[serde(borrow, default)]
    role: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<&'a serde_json::value::RawValue>,
}

/// A content block's type alone.
#[derive(serde::Deserialize)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: std::borrow::Cow<'a, str>,
}

/// The native `messages`, each as written.
fn turns(body: &crate::chat::RawBody) -> Option<Vec<&serde_json::value::RawValue>> {
    crate::chat::raw::array_items(body.get("messages")?).ok()
}

/// Append a rescue's prefill (the text already sent) to the native `messages`, as the
/// shared shape's encoding does (see the module docs): joined to a final assistant turn's
/// last text (the client's own prefill, whose reasoning blocks go: Anthropic refuses them
/// in a final turn with thinking off), else as a new assistant turn; its trailing
/// whitespace trimmed off and returned. Only the final turn is read and rewritten.
fn append_prefill(
    body: &crate::chat::RawBody,
    patch: &mut crate::chat::Patch,
    prefill: &str,
) -> Result<String, ProviderError> {
    use serde_json::{json, Value};
    let keep = prefill.trim_end();
    let trimmed = prefill[keep.len()..].to_owned();
    let Some(mut messages) = turns(body) else {
        return Err(bad_request("a native Messages body without `messages`"));
    };
    let last = (messages.last())
        .and_then(|m| serde_json::from_str::<Turn<'_>>(m.get()).ok())
        .is_some_and(|t| t.role == "assistant");
    let encoding = |e: serde_json::Error| bad_request(format!("encoding the request: {e}"));
    if !last {
        if !keep.is_empty() {
            let turn = json!({"role": "assistant", "content": [{"type": "text", "text": keep}]});
            let turn = serde_json::value::to_raw_value(&turn).map_err(encoding)?;
            messages.push(&turn);
            patch.set("messages", crate::chat::raw::array_of(messages));
        }
        return Ok(trimmed);
    }
    let Some(final_turn) = messages.pop() else {
        return Ok(trimmed);
    };
    let mut turn: Value = serde_json::from_str(final_turn.get()).map_err(encoding)?;
    if let Some(text) = turn["content"].as_str() {
        turn["content"] = json!([{"type": "text", "text": text}]);
    }
    let Some(blocks) = turn["content"].as_array_mut() else {
        return Err(bad_request(
            "a final assistant turn whose content is not blocks",
        ));
    };
    blocks.retain(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking");
    match blocks.last_mut() {
        Some(b) if b["type"] == "text" && b["text"].is_string() => {
            let joined = format!("{}{keep}", b["text"].as_str().unwrap_or_default());
            b["text"] = joined.into();
        }
        _ if keep.is_empty() => {}
        _ => blocks.push(json!({"type": "text", "text": keep})),
    }
    let turn = serde_json::value::to_raw_value(&turn).map_err(encoding)?;
    messages.push(&turn);
    patch.set("messages", crate::chat::raw::array_of(messages));
    Ok(trimmed)
}

/// With thinking on, Anthropic refuses (400) a conversation whose last assistant turn
/// calls a tool without starting with its thinking block. Messages clients get thinking
/// blocks back and send them again (`docs/dialects.md`), and the shared shape carries them
/// ([`crate::chat::Message::thinking`]), so this applies only to a native body whose last
/// tool turn lacks them: a client that drops them itself, or a turn another vendor
/// answered (it had no thinking blocks to send back). For such a request thinking is
/// turned off ([`thinking_off`]). It cannot help a model that thinks by default with no
/// `thinking` field: nothing is there to remove.
fn drop_orphan_thinking(body: &crate::chat::RawBody, patch: &mut crate::chat::Patch) {
    let on = body
        .get_as::<serde_json::Value>("thinking")
        .is_some_and(|t| t.get("type").and_then(serde_json::Value::as_str) != Some("disabled"));
    if !on {
        return;
    }
    let Some(messages) = turns(body) else {
        return;
    };
    let last_assistant = (messages.iter().rev())
        .filter_map(|m| serde_json::from_str::<Turn<'_>>(m.get()).ok())
        .find(|t| t.role == "assistant");
    let blocks = (last_assistant.and_then(|t| t.content))
        .and_then(|c| serde_json::from_str::<Vec<Block<'_>>>(c.get()).ok());
    let Some(blocks) = blocks else {
        return;
    };
    let calls_a_tool = blocks.iter().any(|b| b.kind == "tool_use");
    let starts_thinking = blocks
        .first()
        .is_some_and(|b| b.kind == "thinking" || b.kind == "redacted_thinking");
    if calls_a_tool && !starts_thinking {
        thinking_off(body, patch);
    }
}

/// Thinking off for this request: `thinking` removed, and `context_management`'s
/// `clear_thinking_*` edits, which need it.
fn thinking_off(body: &crate::chat::RawBody, patch: &mut crate::chat::Patch) {
    patch.remove("thinking");
    let Some(mut management) = body.get_as::<serde_json::Value>("context_management") else {
        return;
    };
    let Some(edits) = management
        .get_mut("edits")
        .and_then(serde_json::Value::as_array_mut)
    else {
        return;
    };
    edits.retain(|e| {
        !e["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("clear_thinking"))
    });
    if edits.is_empty() {
        patch.remove("context_management");
    } else if let Ok(raw) = serde_json::value::to_raw_value(&management) {
        patch.set("context_management", raw);
    }
}

impl StreamEvents for EventParser {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        EventParser::parse_event(self, event)
    }
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}
