//! Google Vertex AI: Gemini models through the Gemini codec ([`super::gemini`]) and
//! Anthropic's Claude models through the Anthropic codec ([`super::anthropic`]), on a
//! project's regional or global endpoint, with a service account's OAuth2 token.
//!
//! Owns [`VertexConfig`], [`Vertex::provider`] (which builds the one of the two providers the
//! model needs) and the two wrapper codecs; the service-account token exchange is `auth.rs`;
//! embeddings' `:predict` shape and per-call limits are `embed.rs`.
//!
//! URLs: the API root is `https://{location}-aiplatform.googleapis.com/v1`, or
//! `https://aiplatform.googleapis.com/v1` for `location = "global"`; under it the model is
//! `projects/{project}/locations/{location}/publishers/{publisher}/models/{model}`.
//! - Gemini (`publisher = "google"`): `…:generateContent` and
//!   `…:streamGenerateContent?alt=sse`, bodies and answers exactly the Gemini API's.
//! - Claude (`publisher = "anthropic"`, the default for a model named `claude-*`):
//!   `…:rawPredict` and `…:streamRawPredict`, with the Messages API's body minus `model`
//!   (the URL names it) plus `anthropic_version: "vertex-2023-10-16"` (a body field here,
//!   not a header). Answers and stream events are the Messages API's. A native Messages
//!   body (`docs/dialects.md`) is sent the same way. Errors are classified by Google's
//!   rules when the body is Google's (`{"error": {"status": …}}`: auth, quota), else
//!   by Anthropic's.
//! - Embeddings (Google's models only): `…:predict`, the Text Embeddings API's body, a
//!   request split into calls within the model's per-call limits (`embed.rs`).
//! - The health check GETs the publisher model (`{root}/publishers/{publisher}/models/{model}`):
//!   free, and it proves the token.
//!
//! Auth: `Authorization: Bearer` with a token from a [`TokenSource`] (normally
//! [`auth::ServiceAccountTokens`]); the library reads no environment: the server resolves
//! the key file's path from the env var its config names.
//!
//! Not served: embeddings on Claude (Anthropic has none: those providers have no
//! embeddings endpoint) and token counting.

pub mod auth;
pub mod embed;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ::http::HeaderMap;
use serde_json::Value;

use super::anthropic::{self, AnthropicCall, AnthropicCodec, EventParser};
use super::codec::{Codec, Connection, Endpoints, HttpProvider};
use super::gemini::{self, GeminiCodec, StreamParser};
use super::http::{ConfigError, Endpoint, HttpFailure, HttpSettings, Transport};
use super::secret::Secret;
use super::sse;
use super::token::TokenSource;
use super::wrapping;
use crate::chat::ChatRequest;
use crate::clock::Clock;
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};
use crate::Provider;

/// The `anthropic_version` Claude on Vertex takes in the body.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// How to reach one model on Vertex AI.
#[derive(Debug, Clone)]
pub struct VertexConfig {
    /// The Google Cloud project id.
    pub project: String,
    /// A region (`us-central1`, `europe-west4`) or `global`.
    pub location: String,
    /// The model id (`gemini-2.5-flash`, `claude-sonnet-4@20250514`).
    pub model: String,
    /// `google` or `anthropic`; `None`: `anthropic` for a `claude-*` model, else `google`.
    pub publisher: Option<String>,
    /// The API root including `/v1`, replacing the one `location` implies (a private
    /// endpoint, a test's mock). Query parameters are kept.
    pub base_url: Option<String>,
    /// Where the bearer token comes from; `None` sends none (a proxy adds its own).
    pub credentials: Option<Arc<dyn TokenSource>>,
    /// Claude: `max_tokens` when the request has none.
    pub default_max_tokens: u32,
    /// Claude: send a `json_schema` response format as structured outputs
    /// (`output_config.format`) rather than a forced tool. Off by default: Vertex AI turns
    /// structured outputs on per organisation policy, and not for every Claude model.
    pub structured_outputs: bool,
    /// Extra headers sent on every call. Applied last.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long to wait for usage.
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values.
    pub clock: Clock,
}

impl VertexConfig {
    /// Defaults for `model` in `project` at `location`, with no credentials yet.
    #[must_use]
    pub fn new(
        project: impl Into<String>,
        location: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            project: project.into(),
            location: location.into(),
            model: model.into(),
            publisher: None,
            base_url: None,
            credentials: None,
            default_max_tokens: anthropic::DEFAULT_MAX_TOKENS,
            structured_outputs: false,
            headers: Vec::new(),
            http: HttpSettings::default(),
            usage_grace: sse::DEFAULT_USAGE_GRACE,
            clock: Clock::system(),
        }
    }

    /// The publisher serving the model: the configured one, else `anthropic` for a
    /// `claude-*` model and `google` for the rest.
    #[must_use]
    pub fn publisher(&self) -> &str {
        match self.publisher.as_deref() {
            Some(p) => p,
            None if self.model.starts_with("claude-") => "anthropic",
            None => "google",
        }
    }

    /// The API root: the configured `base_url`, else the location's host with `/v1`.
    #[must_use]
    pub fn root(&self) -> String {
        match &self.base_url {
            Some(url) => url.clone(),
            None if self.location == "global" => "https://aiplatform.googleapis.com/v1".to_owned(),
            None => format!("https://{}-aiplatform.googleapis.com/v1", self.location),
        }
    }
}

/// A Gemini model on Vertex AI.
pub type VertexGemini = HttpProvider<GeminiOnVertex>;

/// A Claude model on Vertex AI.
pub type VertexClaude = HttpProvider<ClaudeOnVertex>;

/// Vertex AI providers.
#[derive(Debug)]
pub struct Vertex;

impl Vertex {
    /// The provider for `config`'s model (Gemini or Claude, by publisher), pooled on
    /// `transport`.
    ///
    /// # Errors
    /// A missing or malformed project, location or model id, an unknown publisher, or an
    /// unusable `base_url` or header.
    pub fn provider(
        config: VertexConfig,
        transport: &Transport,
    ) -> Result<Arc<dyn Provider>, ConfigError> {
        let ident = |what: &str, value: &str, extra: &[char]| {
            let ok = !value.is_empty()
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || extra.contains(&c));
            if ok {
                Ok(())
            } else {
                Err(ConfigError(format!(
                    "{what} {value:?} is not a valid {what} id"
                )))
            }
        };
        ident("project", &config.project, &[])?;
        ident("location", &config.location, &[])?;
        ident("model", &config.model, &['.', '_', '@'])?;
        let publisher = config.publisher().to_owned();
        let root = config.root();
        let root = root.trim_end_matches('/');
        let model_path = format!(
            "/projects/{}/locations/{}/publishers/{publisher}/models/{}",
            config.project, config.location, config.model
        );
        let health = Endpoint::at(
            root,
            &format!("/publishers/{publisher}/models/{}", config.model),
        )?;
        let connection = Connection {
            api_key: None,
            headers: config.headers,
            http: config.http,
            usage_grace: config.usage_grace,
            clock: config.clock,
        };
        match publisher.as_str() {
            "google" => {
                let endpoints = Endpoints {
                    call: Endpoint::at(root, &format!("{model_path}:generateContent"))?,
                    stream: Endpoint::at(
                        root,
                        &format!("{model_path}:streamGenerateContent?alt=sse"),
                    )?,
                    health,
                };
                let limits = embed::Limits::of(&config.model);
                let codec = GeminiOnVertex {
                    inner: GeminiCodec::new(
                        config.model.clone(),
                        format!("models/{}", config.model),
                    ),
                    limits,
                };
                let predict = Endpoint::at(root, &format!("{model_path}:predict"))?;
                let provider =
                    on_vertex(codec, endpoints, connection, config.credentials, transport)?
                        .with_embeddings(predict);
                Ok(Arc::new(provider))
            }
            "anthropic" => {
                let endpoints = Endpoints {
                    call: Endpoint::at(root, &format!("{model_path}:rawPredict"))?,
                    stream: Endpoint::at(root, &format!("{model_path}:streamRawPredict"))?,
                    health,
                };
                let codec = ClaudeOnVertex {
                    inner: AnthropicCodec::new(
                        config.model.clone(),
                        config.default_max_tokens,
                        config.structured_outputs,
                    ),
                };
                let provider =
                    on_vertex(codec, endpoints, connection, config.credentials, transport)?;
                Ok(Arc::new(provider))
            }
            other => Err(ConfigError(format!(
                "publisher {other:?} is not served: \"google\" (Gemini) or \"anthropic\" (Claude)"
            ))),
        }
    }
}

/// The provider running `codec` at `endpoints`, with bearer tokens from `credentials`.
fn on_vertex<C: Codec>(
    codec: C,
    endpoints: Endpoints,
    connection: Connection,
    credentials: Option<Arc<dyn TokenSource>>,
    transport: &Transport,
) -> Result<HttpProvider<C>, ConfigError> {
    let provider = HttpProvider::assemble(codec, endpoints, connection, transport)?;
    Ok(match credentials {
        Some(source) => provider.with_bearer(source),
        None => provider,
    })
}

/// The Gemini API on Vertex: the Gemini codec, authenticated by bearer token only;
/// embeddings in the Text Embeddings API's `:predict` shape (`embed.rs`).
#[derive(Debug)]
pub struct GeminiOnVertex {
    inner: GeminiCodec,
    /// What one `:predict` call may carry for this model.
    limits: embed::Limits,
}

impl wrapping::WrappingCodec for GeminiOnVertex {
    type Inner = GeminiCodec;
    const KIND: &'static str = "vertex";
    type Events = StreamParser;

    fn inner(&self) -> &GeminiCodec {
        &self.inner
    }

    fn events(&self, candidates: u32) -> StreamParser {
        self.inner.events(candidates)
    }

    /// `:predict`'s instances, where the Gemini API's is `batchEmbedContents`' requests.
    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        embed::body(req, self.limits)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        embed::parse(body)
    }

    /// Calls within the model's instance and token limits; token-id inputs refused first.
    fn embeddings_batches(
        &self,
        req: &EmbeddingRequest,
    ) -> Result<Vec<std::ops::Range<usize>>, ProviderError> {
        embed::refuse_tokens(req)?;
        Ok(self.limits.batches(req))
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        no_key(key, headers)
    }
}

/// The Messages API on Vertex: Anthropic's codec with the body Vertex wants.
#[derive(Debug)]
pub struct ClaudeOnVertex {
    inner: AnthropicCodec,
}

impl wrapping::WrappingCodec for ClaudeOnVertex {
    type Inner = AnthropicCodec;
    const KIND: &'static str = "vertex";
    /// None, where Anthropic's is `anthropic`: a request whose native Messages body must go
    /// as written is not routed here, and the headers a native body forwards
    /// (`anthropic-beta`) are not sent.
    const NATIVE: Option<&'static str> = None;
    type Events = EventParser;

    fn inner(&self) -> &AnthropicCodec {
        &self.inner
    }

    /// Anthropic's body without `model` and with `anthropic_version`.
    fn encode(
        &self,
        req: &ChatRequest,
        stream: bool,
    ) -> Result<(Vec<u8>, AnthropicCall), ProviderError> {
        let (body, call) = self.inner.encode(req, stream)?;
        let mut body: Value = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::new(ErrorKind::BadRequest, format!("encoding the request: {e}"))
        })?;
        let Value::Object(fields) = &mut body else {
            return Err(ProviderError::new(
                ErrorKind::BadRequest,
                "encoding the request: not a JSON object",
            ));
        };
        fields.remove("model");
        fields.insert("anthropic_version".to_owned(), ANTHROPIC_VERSION.into());
        Ok((crate::provider::encode_body(&body)?, call))
    }

    fn events(&self, call: AnthropicCall) -> EventParser {
        self.inner.events(call)
    }

    /// Google's rules for Google's error bodies (auth, quota, a missing model), else
    /// Anthropic's.
    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        let google = serde_json::from_slice::<Value>(&failure.body)
            .ok()
            .is_some_and(|v| v.pointer("/error/status").is_some_and(Value::is_string));
        if google {
            gemini::classify(failure, now)
        } else {
            anthropic::classify(failure, now)
        }
    }

    /// None, where Anthropic's is `…/count_tokens` beside the call endpoint: no route of
    /// Vertex's (token counting is not served).
    fn count_tokens_url(&self, _call: &Endpoint) -> Option<String> {
        None
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        no_key(key, headers)
    }
}

/// Vertex takes no key: the bearer token is the provider's (`with_bearer`).
fn no_key(_key: &Secret, _headers: &mut HeaderMap) -> Result<(), ConfigError> {
    Err(ConfigError(
        "Vertex AI takes a service account's token, not an API key".to_owned(),
    ))
}
