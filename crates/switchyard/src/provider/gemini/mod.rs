//! The Google Gemini adapter (the Gemini API: `generateContent` and
//! `streamGenerateContent?alt=sse` under `https://generativelanguage.googleapis.com/v1beta`).
//!
//! Owns the mapping between the shared shape and the Gemini API: [`GeminiConfig`],
//! [`Gemini::build_request`], [`parse_response`], [`StreamParser::parse_event`] (one
//! server-sent event), [`classify()`] (in `classify.rs`: the only place status codes and
//! error bodies are read), the serde types (private `wire` module) and the [`Provider`]
//! impl. Fixture tests live in `tests.rs`; the shared HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The transport is
//! [`super::http`]; SSE framing and the "complete at the finish signal" rule are
//! [`super::sse`] (a Gemini stream has no end marker: the chunk carrying `finishReason` is
//! the finish signal).
//!
//! The key goes only in the `x-goog-api-key` header (marked sensitive), never in a URL: a
//! `base_url` with a query string is refused, so `?key=` cannot sneak in.
//!
//! How the request is mapped (roles, images, tools, call ids, thought signatures, JSON
//! mode) is documented in the private `request` module.
//!
//! Response and usage: the first candidate's parts (`thought: true` summaries skipped);
//! `STOP` with calls is `ToolCalls` (Gemini says `STOP` either way). A prompt blocked
//! outright (`promptFeedback.blockReason`, no candidates) is a `ContentFiltered` error. A
//! 200 that is not a response, or whose candidate has neither content nor a reason other
//! than `STOP`, is `Malformed` (never an empty billable answer). `promptTokenCount` (cached
//! content included) plus `toolUsePromptTokenCount` is `input_tokens`;
//! `cachedContentTokenCount` is `cached_input_tokens`; `candidatesTokenCount +
//! thoughtsTokenCount` is `output_tokens` (Gemini reports thoughts apart; the shared shape
//! counts them in); `thoughtsTokenCount` is `reasoning_tokens`.

mod classify;
mod request;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value};

use std::time::Duration;

use ::http::HeaderMap;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::Value;
use url::Url;

use super::http::{
    self, redact, snippet, ConfigError, Endpoint, ErrorPolicy, HttpClient, HttpSettings, Transport,
    UpstreamResponse,
};
use super::secret::Secret;
use super::sse::{self, Parsed, SseEvent, SseStream};
use super::{reply_as_chunk, ChunkStream, Provider};
use crate::chat::{
    ChatChunk, ChatRequest, FinishReason, ProviderReply, ToolCall, ToolCallDelta, Usage,
};
use crate::clock::Clock;
use crate::error::{ErrorKind, ProviderError};

/// The Gemini API's base URL (`v1beta`, where function calling and JSON schema live).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The `thoughtSignature` Google documents for replayed calls whose real signature is not
/// available (history from another model or, here, from the shared shape).
pub const FOREIGN_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

/// How to reach one Gemini model.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    /// The model id (`gemini-2.5-flash`); `models/…` and `tunedModels/…` names are taken
    /// as they are.
    pub model: String,
    /// The API root including the version (`https://generativelanguage.googleapis.com/v1beta`);
    /// the adapter appends `/models/{model}:generateContent`, `…:streamGenerateContent?alt=sse`
    /// and `/models`. A trailing slash is fine; a query string is refused.
    pub base_url: String,
    /// The key, sent only as the `x-goog-api-key` header. Never read from the environment here.
    pub api_key: Option<Secret>,
    /// Extra headers sent on every call (a proxy's routing header). Applied last.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long to wait for usage before ending the stream
    /// without it (Gemini usually puts usage on the finish chunk itself).
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values.
    pub clock: Clock,
}

impl GeminiConfig {
    /// Defaults for `model` on the Gemini API, with no key yet.
    #[must_use]
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
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

    /// Builder: one extra header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A Gemini API provider.
#[derive(Debug)]
pub struct Gemini {
    model: String,
    api_key: Option<Secret>,
    /// Classifies non-2xx answers and scrubs the key from every error.
    errors: ErrorPolicy,
    http: HttpClient,
    generate_url: Endpoint,
    /// `…:streamGenerateContent?alt=sse` (without `alt=sse` Google streams one JSON array).
    stream_url: Endpoint,
    /// `models.get` of the configured model: the health check.
    models_url: Endpoint,
    /// Headers of a JSON call (key, extras), built once.
    json_headers: HeaderMap,
    /// The same with `Accept: text/event-stream`.
    sse_headers: HeaderMap,
    usage_grace: Duration,
}

impl Gemini {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable model id, `base_url` (or one with a query string), header, or key
    /// (empty, or not valid in a header).
    pub fn new(config: GeminiConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let resource = model_resource(&config.model)?;
        let generate_url = endpoint(&config.base_url, &format!("/{resource}:generateContent"))?;
        let mut stream_url = endpoint(
            &config.base_url,
            &format!("/{resource}:streamGenerateContent"),
        )?;
        stream_url.set_query(Some("alt=sse"));
        let generate_url = Endpoint::new(generate_url)?;
        let stream_url = Endpoint::new(stream_url)?;
        let models_url = Endpoint::new(endpoint(&config.base_url, &format!("/{resource}"))?)?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            if key.is_empty() {
                return Err(ConfigError("api_key is empty".to_owned()));
            }
            http::insert_secret_header(&mut headers, "x-goog-api-key", "", key)?;
        }
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
            errors: ErrorPolicy {
                classify,
                key: config.api_key.clone(),
                clock: config.clock,
            },
            api_key: config.api_key,
            generate_url,
            stream_url,
            models_url,
            json_headers,
            sse_headers,
            usage_grace: config.usage_grace,
        })
    }

    /// The JSON body of a `generateContent` call for `req` (streaming uses the same body).
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed: nothing but system text, a
    /// replayed call whose arguments are not a JSON object, a tool result whose function
    /// name cannot be found, a `data:` URL that is not base64.
    pub fn build_request(&self, req: &ChatRequest) -> Result<Vec<u8>, ProviderError> {
        let body = request::body(req)?;
        super::encode_body(&body)
    }

    /// Scrub the key out of an error's text.
    fn redact(&self, error: ProviderError) -> ProviderError {
        self.errors.redact(error)
    }

    async fn post(&self, body: Vec<u8>, stream: bool) -> Result<UpstreamResponse, ProviderError> {
        let (url, headers) = if stream {
            (&self.stream_url, &self.sse_headers)
        } else {
            (&self.generate_url, &self.json_headers)
        };
        let sent = self.http.post_json(url, headers, body).await;
        self.errors.checked(sent).await
    }

    /// A stream call answered with JSON instead of events: Google's non-SSE stream format
    /// (one JSON array of chunks, as when `alt=sse` is dropped by a proxy) or a single
    /// response. Both go through the same rules as a stream.
    fn json_as_stream(&self, bytes: &Bytes) -> Result<ChunkStream, ProviderError> {
        let Ok(items) = serde_json::from_slice::<Vec<Value>>(bytes) else {
            let reply = parse_response(bytes).map_err(|e| self.redact(e))?;
            return Ok(Box::pin(futures_util::stream::iter([Ok(reply_as_chunk(
                reply,
            ))])));
        };
        let events: String = items.iter().map(|i| format!("data: {i}\n\n")).collect();
        let bytes = futures_util::stream::iter([Ok(Bytes::from(events))]);
        Ok(self.chunks(SseStream::new(bytes, usize::MAX)))
    }

    /// Events to chunks under the shared completion rule, errors scrubbed.
    fn chunks<S>(&self, events: SseStream<S>) -> ChunkStream
    where
        S: futures_util::Stream<Item = Result<Bytes, ProviderError>> + Unpin + Send + 'static,
    {
        let mut parser = StreamParser::new();
        let chunks = sse::into_chunks(events, self.usage_grace, move |e| parser.parse_event(e));
        let key = self.api_key.clone();
        Box::pin(chunks.map(move |item| item.map_err(|e| redact(key.as_ref(), e))))
    }
}

#[async_trait]
impl Provider for Gemini {
    fn kind(&self) -> &'static str {
        "gemini"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let body = self.build_request(req)?;
        let response = self.post(body, false).await?;
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        parse_response(&bytes).map_err(|e| self.redact(e))
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let body = self.build_request(req)?;
        let response = self.post(body, true).await?;
        match response.media_type().as_deref() {
            Some("application/json") => {
                let bytes = response.body().await.map_err(|e| self.redact(e))?;
                return self.json_as_stream(&bytes);
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
        Ok(self.chunks(SseStream::new(response.into_byte_stream(), limit)))
    }

    /// `models.get` for the configured model (`GET {base_url}/models/{model}`): free, and
    /// proves the key, the endpoint and the model (a missing one is a 404, `ModelNotFound`).
    async fn check_health(&self) -> Result<(), ProviderError> {
        let sent = self.http.get(&self.models_url, &self.json_headers).await;
        let response = self.errors.checked(sent).await?;
        response.body().await.map_err(|e| self.redact(e))?;
        Ok(())
    }
}

/// Parse a 200 response body. A body that is not a `GenerateContentResponse` (HTML from a
/// proxy, empty, no candidates and no block reason, a candidate with nothing in it) is
/// `Malformed`; a blocked prompt is `ContentFiltered`; an error object is classified.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let response: wire::Response = from_object(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a GenerateContentResponse, got {what}"))
    })?;
    if response.error.is_some() {
        let value = serde_json::from_slice(body).unwrap_or(Value::Null);
        return Err(classify_value(&value));
    }
    refuse_blocked_prompt(&response)?;
    let candidate = response
        .candidates
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| malformed("response with no candidates and no block reason"))?;
    let (text, tool_calls) = reply_content(candidate.content);
    let finish = candidate
        .finish_reason
        .as_deref()
        .map(|r| finish_reason(r, !tool_calls.is_empty()));
    if text.is_empty() && tool_calls.is_empty() && matches!(finish, None | Some(FinishReason::Stop))
    {
        return Err(malformed(format!(
            "candidate with no content (finishReason {})",
            candidate.finish_reason.as_deref().unwrap_or("absent")
        )));
    }
    Ok(ProviderReply {
        text,
        tool_calls,
        finish_reason: finish,
        model: response.model_version,
        usage: response.usage_metadata.map(usage).transpose()?,
        reported_cost: None,
        reported_latency: None,
    })
}

/// Reads the events of one streamed call. It numbers function calls across the whole
/// stream (each arrives whole, as one [`ToolCallDelta`] with id, name and all arguments)
/// and remembers that one was made, because the finish chunk says `STOP` either way.
#[derive(Debug, Default)]
pub struct StreamParser {
    calls: u32,
}

impl StreamParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse one server-sent event: each `data:` is a whole `GenerateContentResponse`
    /// chunk. A chunk with `finishReason` is the finish signal; `usageMetadata` is the
    /// usage so far; an error object (or an `event: error`) is classified like an HTTP
    /// error; a blocked prompt is `ContentFiltered`; anything that is not a chunk is
    /// `Malformed`. Empty events are skipped.
    ///
    /// # Errors
    /// As above.
    pub fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Parsed::Skip);
        }
        let response: wire::Response = from_object(data.as_bytes()).map_err(|e| {
            malformed(format!(
                "stream chunk is not a GenerateContentResponse ({e}): {}",
                snippet(data.as_bytes())
            ))
        })?;
        if response.error.is_some() || event.event == "error" {
            let value = serde_json::from_str(data).unwrap_or(Value::Null);
            return Err(classify_value(&value));
        }
        refuse_blocked_prompt(&response)?;
        let mut chunk = ChatChunk {
            usage: response.usage_metadata.map(usage).transpose()?,
            model: response.model_version,
            ..ChatChunk::default()
        };
        if let Some(candidate) = response.candidates.and_then(|c| c.into_iter().next()) {
            let mut calls = Vec::new();
            chunk.text = read_parts(candidate.content, |call| {
                calls.push(ToolCallDelta {
                    index: self.calls,
                    id: Some(call_id(call.id, self.calls)),
                    name: Some(call.name),
                    arguments: arguments_text(call.args),
                });
                self.calls = self.calls.saturating_add(1);
            });
            chunk.tool_calls = calls;
            chunk.finish_reason = candidate
                .finish_reason
                .as_deref()
                .map(|r| finish_reason(r, self.calls > 0));
        }
        Ok(Parsed::Chunk(chunk))
    }
}

/// A response object. serde would also read a struct from a JSON array; Gemini's
/// responses are objects, so anything else is refused before it is read.
fn from_object(bytes: &[u8]) -> Result<wire::Response, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err("not a JSON object".to_owned());
    }
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// `promptFeedback.blockReason` with no candidates: the prompt was refused.
fn refuse_blocked_prompt(response: &wire::Response) -> Result<(), ProviderError> {
    let has_candidates = response.candidates.as_ref().is_some_and(|c| !c.is_empty());
    let Some(feedback) = response
        .prompt_feedback
        .as_ref()
        .filter(|_| !has_candidates)
    else {
        return Ok(());
    };
    let Some(reason) = &feedback.block_reason else {
        return Ok(());
    };
    let detail = feedback
        .block_reason_message
        .as_deref()
        .map_or(String::new(), |m| format!(": {m}"));
    Err(ProviderError::new(
        ErrorKind::ContentFiltered,
        format!("the prompt was blocked by Gemini (blockReason {reason}){detail}"),
    )
    .with_vendor_code(reason.clone()))
}

/// The answer text of a candidate's parts (thought summaries skipped); each function
/// call goes to `on_call`, in order.
fn read_parts(
    content: Option<wire::CandidateContent>,
    mut on_call: impl FnMut(wire::ResponseFunctionCall),
) -> String {
    let mut text = String::new();
    let parts = content.and_then(|c| c.parts).unwrap_or_default();
    for part in parts {
        if let Some(call) = part.function_call {
            on_call(call);
        } else if part.thought != Some(true) {
            text.push_str(part.text.as_deref().unwrap_or_default());
        }
    }
    text
}

/// A whole candidate's text and calls, the calls numbered from 0.
fn reply_content(content: Option<wire::CandidateContent>) -> (String, Vec<ToolCall>) {
    let mut calls = Vec::new();
    let text = read_parts(content, |call| {
        let index = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        calls.push(ToolCall {
            id: call_id(call.id, index),
            name: call.name,
            arguments: arguments_text(call.args),
        });
    });
    (text, calls)
}

/// Gemini's id for a call, else `call_<index>`.
fn call_id(id: Option<String>, index: u32) -> String {
    id.filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{index}"))
}

/// A call's `args` as JSON text (`{}` when there are none).
fn arguments_text(args: Option<Value>) -> String {
    match args {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(args) => args.to_string(),
    }
}

/// Gemini's finish reasons, normalised. `STOP` after function calls is `ToolCalls`.
fn finish_reason(reason: &str, called: bool) -> FinishReason {
    match reason {
        "STOP" if called => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The shared usage; an absurd count (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the
/// reply `Malformed`, so the call fails over instead of being billed or counted.
fn usage(u: wire::UsageMetadata) -> Result<Usage, ProviderError> {
    let thoughts = u.thoughts_token_count.unwrap_or(0);
    let usage = Usage {
        input_tokens: u
            .prompt_token_count
            .unwrap_or(0)
            .saturating_add(u.tool_use_prompt_token_count.unwrap_or(0)),
        output_tokens: u
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(thoughts),
        cached_input_tokens: u.cached_content_token_count.unwrap_or(0),
        cache_write_tokens: 0,
        reasoning_tokens: thoughts,
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}

/// `models/{model}` (or a full `models/…` / `tunedModels/…` name as given).
fn model_resource(model: &str) -> Result<String, ConfigError> {
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match model.split_once('/') {
        None if valid(model) => Ok(format!("models/{model}")),
        Some(("models" | "tunedModels", name)) if valid(name) => Ok(model.to_owned()),
        _ => Err(ConfigError(format!(
            "model {model:?} is not a Gemini model id (letters, digits, `-`, `_`, `.`)"
        ))),
    }
}

/// [`http::endpoint`], refusing a base URL that carries a query (a key must never travel
/// in a URL) or a fragment.
fn endpoint(base_url: &str, path: &str) -> Result<Url, ConfigError> {
    let url = http::endpoint(base_url, path)?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError(
            "base_url must not carry a query string or fragment; the key goes in api_key"
                .to_owned(),
        ));
    }
    Ok(url)
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}
