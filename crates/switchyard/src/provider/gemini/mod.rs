//! The Google Gemini adapter (the Gemini API: `generateContent` and
//! `streamGenerateContent?alt=sse` under `https://generativelanguage.googleapis.com/v1beta`).
//!
//! Owns the mapping between the shared shape and the Gemini API: [`GeminiConfig`] and
//! [`GeminiCodec`] here; the body in `request.rs` ([`Gemini::build_request`]); replies in
//! `reply.rs` ([`parse_response`]); stream events in `stream.rs`
//! ([`StreamParser::parse_event`]); [`classify()`] in `classify.rs` (the only place status
//! codes and error bodies are read); the serde types in the private `wire` module. Fixture
//! tests live in `tests/`; the shared HTTP suite in `tests/adapters/`.
//!
//! Does not retry, route, log or time out a call: the gateway does. The calls themselves
//! are [`super::codec::HttpProvider`]; the transport is [`super::http`]; SSE framing and the "complete at the finish signal" rule are
//! [`super::sse`] (a Gemini stream has no end marker: the chunk carrying `finishReason` is
//! the finish signal).
//!
//! The key goes only in the `x-goog-api-key` header (marked sensitive), never in a URL: a
//! `base_url` whose query has a `key` parameter is refused, so `?key=` cannot sneak in
//! (other query parameters are kept, after the path).
//!
//! Embeddings go to `…:batchEmbedContents` (`embed.rs`).
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
pub mod embed;
mod reply;
mod request;
mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use classify::{classify, classify_value};
pub use reply::parse_response;
pub use stream::StreamParser;

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;
use bytes::Bytes;
use serde_json::Value;
use url::Url;

use super::codec::{Codec, Connection, Endpoints, HttpProvider, StreamEvents};
use super::http::{self, ConfigError, Endpoint, HttpFailure, HttpSettings, Transport};
use super::secret::Secret;
use super::sse::{self, Parsed, SseEvent};
use crate::chat::{ChatRequest, Field, ProviderReply, Support};
use crate::clock::Clock;
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
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

/// A Gemini API provider: the shared HTTP provider running [`GeminiCodec`].
pub type Gemini = HttpProvider<GeminiCodec>;

impl Gemini {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable model id, `base_url` (or one with `key=` in its query), header, or key
    /// (empty, or not valid in a header).
    pub fn new(config: GeminiConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let resource = model_resource(&config.model)?;
        let generate_url = endpoint(&config.base_url, &format!("/{resource}:generateContent"))?;
        // Without `alt=sse` Google streams one JSON array.
        let stream_url = endpoint(
            &config.base_url,
            &format!("/{resource}:streamGenerateContent?alt=sse"),
        )?;
        let endpoints = Endpoints {
            call: Endpoint::new(generate_url)?,
            stream: Endpoint::new(stream_url)?,
            // `models.get` of the configured model.
            health: Endpoint::new(endpoint(&config.base_url, &format!("/{resource}"))?)?,
        };
        let connection = Connection {
            api_key: config.api_key,
            headers: config.headers,
            http: config.http,
            usage_grace: config.usage_grace,
            clock: config.clock,
        };
        let embeddings = Endpoint::new(endpoint(
            &config.base_url,
            &format!("/{resource}:batchEmbedContents"),
        )?)?;
        let codec = GeminiCodec {
            model: config.model,
            resource,
        };
        Ok(Self::assemble(codec, endpoints, connection, transport)?.with_embeddings(embeddings))
    }

    /// The JSON body of a `generateContent` call for `req` (streaming uses the same body).
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed: nothing but system text, a
    /// replayed call whose arguments are not a JSON object, a tool result whose function
    /// name cannot be found, a `data:` URL that is not base64.
    pub fn build_request(&self, req: &ChatRequest) -> Result<Vec<u8>, ProviderError> {
        self.codec().encode(req, false).map(|(body, _)| body)
    }
}

/// The Gemini API on the wire.
#[derive(Debug)]
pub struct GeminiCodec {
    model: String,
    /// `models/{model}`: what each embeddings request names.
    resource: String,
}

impl GeminiCodec {
    /// The Gemini API for `model`, for the clouds that serve it (`vertex/`): `resource`
    /// is what an embeddings request names.
    pub(crate) fn new(model: String, resource: String) -> Self {
        Self { model, resource }
    }
}

impl Codec for GeminiCodec {
    const KIND: &'static str = "gemini";
    /// How many candidates the request asks for (`n`; a stream waits for each).
    type Call = u32;
    type Events = StreamParser;

    fn model(&self) -> &str {
        &self.model
    }

    fn support(field: Field) -> Support {
        request::support(field)
    }

    fn encode(&self, req: &ChatRequest, _stream: bool) -> Result<(Vec<u8>, u32), ProviderError> {
        let body = request::body(req, &self.model)?;
        let candidates = req.n.unwrap_or(1).max(1);
        crate::provider::encode_body(&body).map(|body| (body, candidates))
    }

    fn parse_reply(&self, body: &[u8], _candidates: u32) -> Result<ProviderReply, ProviderError> {
        parse_response(body)
    }

    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        embed::body(req, &self.resource)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        embed::parse(body)
    }

    fn events(&self, candidates: u32) -> StreamParser {
        StreamParser::with_candidates(candidates)
    }

    /// Google's non-SSE stream format (one JSON array of chunks, as when `alt=sse` is
    /// dropped by a proxy), as events; anything else is read as one response.
    fn json_as_events(&self, body: &Bytes) -> Option<Bytes> {
        let items = serde_json::from_slice::<Vec<Value>>(body).ok()?;
        let events: String = items.iter().map(|i| format!("data: {i}\n\n")).collect();
        Some(Bytes::from(events))
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify(failure, now)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        http::insert_secret_header(headers, "x-goog-api-key", "", key)
    }
}

impl StreamEvents for StreamParser {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        StreamParser::parse_event(self, event)
    }
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

/// [`http::endpoint`], refusing a base URL whose query carries a `key` (a key must never
/// travel in a URL, where logs and proxies keep it); other query parameters are kept.
fn endpoint(base_url: &str, path: &str) -> Result<Url, ConfigError> {
    let url = http::endpoint(base_url, path)?;
    if url
        .query_pairs()
        .any(|(name, _)| name.eq_ignore_ascii_case("key"))
    {
        return Err(ConfigError(
            "base_url must not carry the key in its query (`key=`); the key goes in api_key"
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
