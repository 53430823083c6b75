//! The OpenAI Chat Completions adapter, for OpenAI and every server that speaks its API
//! (vLLM, Ollama, llama.cpp, OpenRouter, Together, Groq, Azure OpenAI's v1 endpoint).
//!
//! Owns the mapping between the shared shape and Chat Completions: [`OpenAiConfig`] and
//! [`OpenAiCodec`] here; the body in `request.rs` ([`OpenAi::build_request`]); replies in
//! `reply.rs` ([`parse_response`]); stream events in `stream.rs` ([`parse_event`]);
//! [`classify`] in `classify.rs` (the only place status codes and error bodies are read);
//! the serde types in the private `wire` module. Fixture tests live in `tests/`; the shared
//! HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The calls themselves
//! (headers, posting, the health check, scrubbing the key) are [`super::codec::HttpProvider`];
//! the transport (pooling, body limits, connect errors) is [`super::http`]; SSE framing and
//! the "complete at the finish signal" rule are [`super::sse`].
//!
//! Embeddings (`{base}/embeddings`) are `embed.rs`. Providers that speak the Responses
//! API upstream instead (`api = "responses"` in the server's config) are [`responses`].
//!
//! Usage: `prompt_tokens` already counts cached tokens, so it is `input_tokens` as is;
//! `prompt_tokens_details.cached_tokens` is `cached_input_tokens`; `completion_tokens`
//! (reasoning included) is `output_tokens`; `completion_tokens_details.reasoning_tokens` is
//! `reasoning_tokens`. OpenRouter's `usage.cost` becomes `reported_cost` on non-streaming
//! replies.

mod classify;
mod cursor;
pub mod embed;
mod reply;
mod request;
pub mod responses;
mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value};
pub use reply::parse_response;
pub use stream::{parse_event, Events};

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;

use super::codec::{Codec, Connection, Endpoints, HttpProvider};
use super::http::{
    self, ConfigError, Endpoint, HttpFailure, HttpSettings, Transport, UpstreamResponse,
};
use super::secret::Secret;
use super::sse;
use crate::chat::{ChatRequest, Field, ProviderReply, Support};
use crate::clock::Clock;
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;

/// The official API's base URL (the SDKs' default).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How to reach one OpenAI-compatible model.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The model id sent as `model`.
    pub model: String,
    /// The API root, as the official SDKs take it (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`, `https://openrouter.ai/api/v1`); the adapter appends
    /// `/chat/completions`, `/embeddings` and `/models`. A trailing slash is fine.
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
    /// Ask a stream for its usage with `stream_options: {"include_usage": true}` (the
    /// default). Off for servers that refuse the field and report usage unasked.
    pub stream_usage: bool,
    /// How tool-call ids are written in history (Mistral accepts only 9 alphanumerics).
    pub tool_call_ids: ToolCallIds,
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
            stream_usage: true,
            tool_call_ids: ToolCallIds::AsIs,
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

/// An OpenAI-compatible provider: the shared HTTP provider running [`OpenAiCodec`].
pub type OpenAi = HttpProvider<OpenAiCodec>;

impl OpenAi {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable `base_url`, header, or key (empty, or not valid in a header).
    pub fn new(config: OpenAiConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let quirks = Quirks {
            use_max_tokens: config.use_max_tokens,
            stream_usage: config.stream_usage,
            tool_call_ids: config.tool_call_ids,
        };
        assemble(
            config,
            "/chat/completions",
            transport,
            |model, api_key_header| OpenAiCodec {
                model,
                quirks,
                api_key_header,
            },
        )
    }

    /// The JSON body of a Chat Completions call for `req`.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed (a tool result without a call id).
    pub fn build_request(&self, req: &ChatRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.codec().encode(req, stream).map(|(body, _)| body)
    }
}

/// How tool-call ids in a request's history are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolCallIds {
    /// As they came (OpenAI and most compatible servers take any string).
    #[default]
    AsIs,
    /// Exactly nine of `[A-Za-z0-9]` (Mistral refuses any other id with a 400): an id that
    /// is not already so becomes a stable hash of itself, the same for a call and for the
    /// result that answers it.
    Alnum9,
}

/// What a compatible server needs written differently from OpenAI.
#[derive(Debug, Clone, Copy)]
pub(super) struct Quirks {
    /// `max_tokens` instead of `max_completion_tokens`.
    pub use_max_tokens: bool,
    /// Send `stream_options.include_usage`.
    pub stream_usage: bool,
    /// Tool-call id spelling.
    pub tool_call_ids: ToolCallIds,
}

/// An OpenAI provider of either API from `config`: `path` (`/chat/completions`,
/// `/responses`) for calls and streams, `/models` for health, `/embeddings`; the codec made
/// by `codec` from the model and the key header.
pub(super) fn assemble<C: Codec>(
    config: OpenAiConfig,
    path: &str,
    transport: &Transport,
    codec: impl FnOnce(String, Option<String>) -> C,
) -> Result<HttpProvider<C>, ConfigError> {
    let call = Endpoint::at(&config.base_url, path)?;
    let endpoints = Endpoints {
        stream: call.clone(),
        call,
        health: Endpoint::at(&config.base_url, "/models")?,
    };
    let mut headers = Vec::with_capacity(config.headers.len() + 1);
    if let Some(org) = config.organization {
        headers.push(("openai-organization".to_owned(), org));
    }
    headers.extend(config.headers);
    let embeddings = Endpoint::at(&config.base_url, "/embeddings")?;
    let codec = codec(config.model, config.api_key_header);
    let connection = Connection {
        api_key: config.api_key,
        headers,
        http: config.http,
        usage_grace: config.usage_grace,
        clock: config.clock,
    };
    Ok(
        HttpProvider::assemble(codec, endpoints, connection, transport)?
            .with_embeddings(embeddings),
    )
}

/// Chat Completions on the wire.
#[derive(Debug)]
pub struct OpenAiCodec {
    model: String,
    quirks: Quirks,
    /// Send the key in this header as is, instead of `Authorization: Bearer`.
    api_key_header: Option<String>,
}

impl OpenAiCodec {
    /// Chat Completions for `model`, for the cloud vendors that speak it (`azure/`): the
    /// output cap as `max_tokens` when `use_max_tokens`, the key in `api_key_header` (as
    /// is) instead of a bearer token when set.
    pub(crate) fn new(model: String, use_max_tokens: bool, api_key_header: Option<String>) -> Self {
        Self {
            model,
            quirks: Quirks {
                use_max_tokens,
                stream_usage: true,
                tool_call_ids: ToolCallIds::AsIs,
            },
            api_key_header,
        }
    }
}

impl Codec for OpenAiCodec {
    const KIND: &'static str = "openai";
    /// How many answers the request asks for (`n`; a stream waits for each to finish).
    type Call = u32;
    type Events = Events;

    fn model(&self) -> &str {
        &self.model
    }

    fn support(field: Field) -> Support {
        request::support(field)
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<(Vec<u8>, u32), ProviderError> {
        let choices = req.n.unwrap_or(1).max(1);
        request::body(req, &self.model, self.quirks, stream).map(|body| (body, choices))
    }

    fn parse_reply(&self, body: &[u8], _choices: u32) -> Result<ProviderReply, ProviderError> {
        parse_response(body)
    }

    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        embed::body(req, &self.model)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        embed::parse(body)
    }

    fn reported_latency(&self, response: &UpstreamResponse) -> Option<Duration> {
        reply::processing_time(response)
    }

    fn events(&self, choices: u32) -> Events {
        Events::new(choices)
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify(failure, now)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        match &self.api_key_header {
            Some(name) => http::insert_secret_header(headers, name, "", key),
            None => http::insert_secret_header(headers, "authorization", "Bearer ", key),
        }
    }
}
