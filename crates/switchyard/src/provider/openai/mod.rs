//! The OpenAI Chat Completions adapter, for OpenAI and every server that speaks its API
//! (vLLM, Ollama, llama.cpp, OpenRouter, Together, Groq, Azure OpenAI's v1 endpoint).
//!
//! Owns the mapping between the shared shape and Chat Completions: [`OpenAiConfig`],
//! [`OpenAi::build_request`], [`parse_response`], [`parse_event`] (one server-sent event),
//! [`classify`] (in `classify.rs`: the only place status codes and error bodies are read),
//! the serde types (private `wire` module) and the [`Provider`] impl. Fixture tests live in
//! `tests.rs`; the shared HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The transport
//! (pooling, body limits, connect errors) is [`super::http`]; SSE framing and the "complete
//! at the finish signal" rule are [`super::sse`].
//!
//! Usage: `prompt_tokens` already counts cached tokens, so it is `input_tokens` as is;
//! `prompt_tokens_details.cached_tokens` is `cached_input_tokens`; `completion_tokens`
//! (reasoning included) is `output_tokens`; `completion_tokens_details.reasoning_tokens` is
//! `reasoning_tokens`. OpenRouter's `usage.cost` becomes `reported_cost` on non-streaming
//! replies.

mod classify;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value};

use std::borrow::Cow;
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
    ChatChunk, ChatRequest, ContentPart, FinishReason, ImageSource, Message, ProviderReply,
    ResponseFormat, Role, ToolCall, ToolCallDelta, ToolChoice, Usage,
};
use crate::clock::Clock;
use crate::cost::Money;
use crate::error::{ErrorKind, ProviderError};

/// The official API's base URL (the SDKs' default).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How to reach one OpenAI-compatible model.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The model id sent as `model`.
    pub model: String,
    /// The API root, as the official SDKs take it (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`, `https://openrouter.ai/api/v1`); the adapter appends
    /// `/chat/completions` and `/models`. A trailing slash is fine.
    pub base_url: String,
    /// The key, sent as `Authorization: Bearer …` (or in [`api_key_header`](Self::api_key_header)).
    /// `None` for local servers that need none. Never read from the environment here.
    pub api_key: Option<Secret>,
    /// Send the key as `{api_key_header}: {key}` instead of a bearer token (Azure: `api-key`).
    pub api_key_header: Option<String>,
    /// `OpenAI-Organization` header.
    pub organization: Option<String>,
    /// Send the output cap as `max_tokens` (older and compatible servers) instead of
    /// `max_completion_tokens` (OpenAI's current name, required by reasoning models).
    pub use_max_tokens: bool,
    /// Extra headers sent on every call (OpenRouter's `HTTP-Referer`, a proxy's routing
    /// header). Applied last, so they can replace the defaults.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long to wait for the usage chunk before ending the
    /// stream without it.
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values.
    pub clock: Clock,
}

impl OpenAiConfig {
    /// Defaults for `model` on the official API, with no key yet.
    #[must_use]
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            api_key_header: None,
            organization: None,
            use_max_tokens: false,
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

/// An OpenAI-compatible provider.
#[derive(Debug)]
pub struct OpenAi {
    model: String,
    use_max_tokens: bool,
    api_key: Option<Secret>,
    /// Classifies non-2xx answers and scrubs the key from every error.
    errors: ErrorPolicy,
    http: HttpClient,
    chat_url: Endpoint,
    models_url: Endpoint,
    /// Headers of a JSON call (auth, organization, extras), built once.
    json_headers: HeaderMap,
    /// The same with `Accept: text/event-stream`.
    sse_headers: HeaderMap,
    usage_grace: Duration,
}

impl OpenAi {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable `base_url`, header, or key (empty, or not valid in a header).
    pub fn new(config: OpenAiConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let chat_url = Endpoint::at(&config.base_url, "/chat/completions")?;
        let models_url = Endpoint::at(&config.base_url, "/models")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            if key.is_empty() {
                return Err(ConfigError("api_key is empty".to_owned()));
            }
            match &config.api_key_header {
                Some(name) => http::insert_secret_header(&mut headers, name, "", key)?,
                None => http::insert_secret_header(&mut headers, "authorization", "Bearer ", key)?,
            }
        }
        if let Some(org) = &config.organization {
            http::insert_header(&mut headers, "openai-organization", org)?;
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
            use_max_tokens: config.use_max_tokens,
            errors: ErrorPolicy {
                classify,
                key: config.api_key.clone(),
                clock: config.clock,
            },
            api_key: config.api_key,
            chat_url,
            models_url,
            json_headers,
            sse_headers,
            usage_grace: config.usage_grace,
        })
    }

    /// The JSON body of a Chat Completions call for `req`.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed (a tool result without a call id).
    pub fn build_request(&self, req: &ChatRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        let messages = req
            .messages
            .iter()
            .map(wire_message)
            .collect::<Result<Vec<_>, _>>()?;
        let tools = req
            .tools
            .iter()
            .map(|t| wire::ToolDef {
                kind: "function",
                function: wire::FunctionDef {
                    name: &t.name,
                    description: t.description.as_deref(),
                    parameters: &t.parameters,
                },
            })
            .collect();
        let body = wire::Request {
            model: &self.model,
            messages,
            max_completion_tokens: req.max_tokens.filter(|_| !self.use_max_tokens),
            max_tokens: req.max_tokens.filter(|_| self.use_max_tokens),
            temperature: req.temperature,
            top_p: req.top_p,
            stop: &req.stop,
            tools,
            tool_choice: req.tool_choice.as_ref().map(wire_tool_choice),
            response_format: req.response_format.as_ref().map(wire_response_format),
            user: req.user.as_deref(),
            stream,
            stream_options: stream.then_some(wire::StreamOptions {
                include_usage: true,
            }),
        };
        super::encode_body(&body)
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
        let sent = self.http.post_json(&self.chat_url, headers, body).await;
        self.errors.checked(sent).await
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let body = self.build_request(req, false)?;
        let response = self.post(body, false).await?;
        let latency = processing_time(&response);
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        let mut reply = parse_response(&bytes).map_err(|e| self.redact(e))?;
        reply.reported_latency = latency;
        Ok(reply)
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let body = self.build_request(req, true)?;
        let response = self.post(body, true).await?;
        match response.media_type().as_deref() {
            // A server that ignored `stream: true` (or put an error in a 200 body).
            Some("application/json") => {
                let bytes = response.body().await.map_err(|e| self.redact(e))?;
                let reply = parse_response(&bytes).map_err(|e| self.redact(e))?;
                return Ok(Box::pin(futures_util::stream::iter([Ok(reply_as_chunk(
                    reply,
                ))])));
            }
            Some("text/html") => {
                let bytes = response.body().await.unwrap_or_default();
                return Err(self.redact(
                    ProviderError::new(
                        ErrorKind::Malformed,
                        format!("expected an event stream, got HTML: {}", snippet(&bytes)),
                    )
                    .with_status(200),
                ));
            }
            _ => {}
        }
        let limit = response.max_body_bytes();
        let events = SseStream::new(response.into_byte_stream(), limit);
        let chunks = sse::into_chunks(events, self.usage_grace, parse_event);
        let key = self.api_key.clone();
        Ok(Box::pin(chunks.map(move |item| {
            item.map_err(|e| redact(key.as_ref(), e))
        })))
    }

    /// `GET {base_url}/models`: free, and proves the key and the endpoint.
    async fn check_health(&self) -> Result<(), ProviderError> {
        let sent = self.http.get(&self.models_url, &self.json_headers).await;
        let response = self.errors.checked(sent).await?;
        response.body().await.map_err(|e| self.redact(e))?;
        Ok(())
    }
}

/// Parse a 200 response body. A body that is not a chat completion (HTML from a proxy,
/// empty, no `choices`) is `Malformed`; an error object is classified.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let completion: wire::Completion = serde_json::from_slice(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a chat completion, got {what}"))
    })?;
    if completion.error.is_some() || completion.object.as_deref() == Some("error") {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let choices = completion
        .choices
        .ok_or_else(|| malformed("chat completion without `choices`"))?;
    let choice = choices
        .into_iter()
        .min_by_key(|c| c.index)
        .ok_or_else(|| malformed("chat completion with no choices"))?;
    let message = choice.message;
    let mut text = match message.content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => return Err(malformed(format!("unexpected message content: {other}"))),
    };
    if text.is_empty() {
        text = message.refusal.unwrap_or_default();
    }
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: match c.function.arguments {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
            },
        })
        .collect();
    Ok(ProviderReply {
        text,
        tool_calls,
        finish_reason: choice.finish_reason.as_deref().map(finish_reason),
        model: completion.model,
        usage: completion.usage.map(usage).transpose()?,
        reported_cost: completion.usage.and_then(|u| u.cost).and_then(money),
        reported_latency: None,
    })
}

/// Parse one server-sent event of a streamed completion.
///
/// `[DONE]` is [`Parsed::Done`]; a chunk is [`Parsed::Chunk`] (choice 0's text and
/// tool-call deltas, its `finish_reason`, and `usage` when present — the final usage chunk
/// has `choices: []`); an error object (`{"error": …}`, vLLM's `{"object": "error"}`, an
/// `event: error`) is classified like an HTTP error. Anything else that is not a chunk
/// is `Malformed`.
///
/// # Errors
/// As above.
pub fn parse_event(event: &SseEvent) -> Result<Parsed, ProviderError> {
    let data = event.data.trim();
    if data == "[DONE]" {
        return Ok(Parsed::Done);
    }
    let chunk: wire::Chunk = serde_json::from_str(data).map_err(|e| {
        malformed(format!(
            "stream chunk is not valid JSON ({e}): {}",
            snippet(data.as_bytes())
        ))
    })?;
    if chunk.error.is_some() || chunk.object.as_deref() == Some("error") || event.event == "error" {
        return Err(classify_value(
            &serde_json::from_str(data).unwrap_or(Value::Null),
        ));
    }
    let mut out = ChatChunk {
        model: chunk.model,
        usage: chunk.usage.map(usage).transpose()?,
        ..ChatChunk::default()
    };
    let choice = chunk
        .choices
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.index == 0);
    if let Some(choice) = choice {
        out.finish_reason = choice.finish_reason.as_deref().map(finish_reason);
        if let Some(delta) = choice.delta {
            out.text = delta.content.or(delta.refusal).unwrap_or_default();
            out.tool_calls = delta
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    let function = t.function.unwrap_or(wire::DeltaFunction {
                        name: None,
                        arguments: None,
                    });
                    ToolCallDelta {
                        index: t.index,
                        id: t.id,
                        name: function.name,
                        arguments: function.arguments.unwrap_or_default(),
                    }
                })
                .collect();
        }
    }
    Ok(Parsed::Chunk(out))
}

/// One shared-shape message as a Chat Completions message.
fn wire_message(m: &Message) -> Result<wire::Message<'_>, ProviderError> {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let tool_call_id = match m.role {
        Role::Tool => Some(m.tool_call_id.as_deref().ok_or_else(|| {
            ProviderError::new(ErrorKind::BadRequest, "tool message without tool_call_id")
        })?),
        _ => None,
    };
    let tool_calls: Vec<_> = m
        .tool_calls
        .iter()
        .map(|c| wire::ToolCallOut {
            id: &c.id,
            kind: "function",
            function: wire::FunctionCallOut {
                name: &c.name,
                arguments: &c.arguments,
            },
        })
        .collect();
    let content = if m.role == Role::Assistant && m.content.is_empty() && !tool_calls.is_empty() {
        None
    } else {
        Some(wire_content(m))
    };
    Ok(wire::Message {
        role,
        content,
        tool_calls,
        tool_call_id,
    })
}

/// Plain text as a string (every compatible server takes it); parts when there are images
/// or several text parts. Only user messages carry images.
fn wire_content(m: &Message) -> wire::Content<'_> {
    let has_image = m
        .content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image || m.role != Role::User {
        return match m.content.as_slice() {
            [ContentPart::Text { text }] => wire::Content::Text(Cow::Borrowed(text)),
            _ => wire::Content::Text(Cow::Owned(m.joined_text())),
        };
    }
    let parts = m
        .content
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => wire::Part::Text { text },
            ContentPart::Image { source, detail } => wire::Part::ImageUrl {
                image_url: wire::ImageUrl {
                    url: match source {
                        ImageSource::Url { url } => Cow::Borrowed(url),
                        ImageSource::Base64 { media_type, data } => {
                            Cow::Owned(format!("data:{media_type};base64,{data}"))
                        }
                    },
                    detail: detail.as_deref(),
                },
            },
        })
        .collect();
    wire::Content::Parts(parts)
}

fn wire_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn wire_response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut spec = json!({"name": name, "schema": schema});
            if let Some(strict) = strict {
                spec["strict"] = json!(strict);
            }
            json!({"type": "json_schema", "json_schema": spec})
        }
    }
}

/// OpenAI's finish reasons, normalised (`function_call` is the legacy `tool_calls`).
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The shared usage; an absurd count (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the
/// reply `Malformed`, so the call fails over instead of being billed or counted.
fn usage(u: wire::Usage) -> Result<Usage, ProviderError> {
    let usage = Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
        cached_input_tokens: u
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_write_tokens: 0,
        reasoning_tokens: u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}

fn money(usd: f64) -> Option<Money> {
    (usd.is_finite() && usd >= 0.0).then(|| Money::from_usd(usd))
}

/// `openai-processing-ms`: the vendor's own time for the call.
fn processing_time(response: &UpstreamResponse) -> Option<Duration> {
    let ms: f64 = response
        .header("openai-processing-ms")?
        .trim()
        .parse()
        .ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}
