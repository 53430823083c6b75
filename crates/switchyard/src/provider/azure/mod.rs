//! Azure OpenAI: Chat Completions and embeddings on an Azure resource, through the OpenAI
//! codec ([`super::openai`]) with Azure's URLs, auth, content filter and retry headers.
//!
//! Owns [`AzureConfig`] and [`OnAzure`] (a wrapper over an OpenAI codec, [`AzureCodec`] for
//! Chat Completions: bodies, replies, stream events and error bodies are OpenAI's); the
//! Entra ID token file is `entra.rs`.
//!
//! URLs, from the resource `endpoint` (`https://NAME.openai.azure.com`):
//! - `api_version = "v1"`: the v1 GA API, `{endpoint}/openai/v1/chat/completions` (and
//!   `/embeddings`, `/models` for the health check), no `api-version` query; the body's
//!   `model` is the deployment name. `api_version = "preview"` is the same path with
//!   `?api-version=preview` (Azure's preview features on v1).
//! - any other (dated) version: the classic deployments API,
//!   `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={version}`
//!   (and `…/embeddings`; the health check lists `{endpoint}/openai/models`), where
//!   `api-version` is required.
//!
//! Auth ([`AzureAuth`]): an `api-key` header, or a Microsoft Entra ID bearer token, given
//! as is or read from a token file that is re-read when it changes (`entra.rs`).
//!
//! Errors are OpenAI's classifier (which knows Azure's 400 `content_filter` with inner
//! `ResponsibleAIPolicyViolation`: `ContentFiltered`; `DeploymentNotFound`:
//! `ModelNotFound`), plus Azure's `x-ms-retry-after-ms` header as the wait when no
//! `retry-after-ms` is given (it is more precise than `retry-after`'s whole seconds). A 200
//! whose only choice stopped with `finish_reason: "content_filter"` before saying anything
//! (no text, no tool call) is a `ContentFiltered` error, plain or streamed: there is no
//! answer to return. A filter that cuts an answer short keeps the answer, with the
//! `content_filter` finish reason.
//!
//! Azure's Responses API is `responses.rs` ([`AzureResponses`], `api = "responses"` in
//! config): `{endpoint}/openai/v1/responses` on the v1 path, `{endpoint}/openai/responses?
//! api-version={version}` on the classic one (no deployment in the path: the body's `model`
//! names it), with the same auth, errors and content-filter rule.

pub mod entra;
mod responses;

pub use responses::{AzureResponses, AzureResponsesCodec};

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::codec::{Codec, Connection, Endpoints, HttpProvider, StreamEvents};
use super::http::{ConfigError, Endpoint, HttpFailure, HttpSettings, Transport};
use super::openai::{self, OpenAiCodec};
use super::secret::Secret;
use super::sse::{self, Parsed, SseEvent};
use super::wrapping;
use crate::chat::{FinishReason, ProviderReply};
use crate::clock::Clock;
use crate::error::{ErrorKind, ProviderError};

/// The `api_version` that selects the v1 GA path (no `api-version` query).
pub const V1: &str = "v1";

/// How an Azure provider proves who it is.
#[derive(Debug, Clone)]
pub enum AzureAuth {
    /// The resource's key, sent as `api-key`.
    ApiKey(Secret),
    /// A Microsoft Entra ID access token, sent as `Authorization: Bearer`.
    Token(Secret),
    /// A file holding a Microsoft Entra ID access token (workload identity, a sidecar
    /// that renews it), re-read when it changes: see [`entra::TokenFile`].
    TokenFile(Arc<entra::TokenFile>),
    /// Nothing (a proxy in front adds its own).
    None,
}

/// How to reach one Azure OpenAI deployment.
#[derive(Debug, Clone)]
pub struct AzureConfig {
    /// The resource URL, `https://NAME.openai.azure.com` (a trailing slash is fine).
    pub endpoint: String,
    /// The deployment name: in the classic path, and the body's `model` on both.
    pub deployment: String,
    /// `"v1"` (the v1 GA path), `"preview"` (v1 with `api-version=preview`), or a dated
    /// version such as `"2024-10-21"` (the classic deployments path).
    pub api_version: String,
    /// The credential.
    pub auth: AzureAuth,
    /// Send the output cap as `max_tokens` instead of `max_completion_tokens`.
    pub use_max_tokens: bool,
    /// Extra headers sent on every call. Applied last.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long to wait for the usage chunk.
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values.
    pub clock: Clock,
}

impl AzureConfig {
    /// Defaults for `deployment` at `endpoint` on `api_version`, with no credential yet.
    #[must_use]
    pub fn new(
        endpoint: impl Into<String>,
        deployment: impl Into<String>,
        api_version: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            deployment: deployment.into(),
            api_version: api_version.into(),
            auth: AzureAuth::None,
            use_max_tokens: false,
            headers: Vec::new(),
            http: HttpSettings::default(),
            usage_grace: sse::DEFAULT_USAGE_GRACE,
            clock: Clock::system(),
        }
    }

    /// Whether this config calls the v1 path (else the classic deployments path).
    #[must_use]
    pub fn is_v1(&self) -> bool {
        matches!(self.api_version.trim(), V1 | "preview")
    }
}

/// An Azure OpenAI deployment: the shared HTTP provider running [`AzureCodec`].
pub type Azure = HttpProvider<AzureCodec>;

impl Azure {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// An unusable endpoint, deployment name, api version, header or credential.
    pub fn new(config: AzureConfig, transport: &Transport) -> Result<Self, ConfigError> {
        build(
            config,
            Upstream::ChatCompletions,
            transport,
            |deployment, use_max, header| OnAzure {
                inner: OpenAiCodec::new(deployment, use_max, header),
            },
        )
    }
}

/// Which OpenAI API an Azure provider speaks upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upstream {
    ChatCompletions,
    Responses,
}

/// An Azure provider of `upstream`'s API from `config`: its URLs, its credential, and the
/// codec `codec` makes of (deployment, `use_max_tokens`, the key's header or `None` for a
/// bearer token).
fn build<C: Codec>(
    config: AzureConfig,
    upstream: Upstream,
    transport: &Transport,
    codec: impl FnOnce(String, bool, Option<String>) -> C,
) -> Result<HttpProvider<C>, ConfigError> {
    let deployment = config.deployment.trim();
    let valid_name = !deployment.is_empty()
        && deployment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid_name {
        return Err(ConfigError(format!(
            "deployment {deployment:?} is not a deployment name (letters, digits, `-`, `_`, `.`)"
        )));
    }
    let version = config.api_version.trim();
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(ConfigError(format!(
            "api_version {version:?} is not \"v1\", \"preview\" or a dated version like \"2024-10-21\""
        )));
    }
    let base = config.endpoint.trim().trim_end_matches('/');
    if base.contains('?') {
        return Err(ConfigError(format!(
            "endpoint {base:?}: give the resource URL without a query; api_version sets api-version"
        )));
    }
    let at = |path: &str| -> Result<Endpoint, ConfigError> { Endpoint::at(base, path) };
    let (call, embeddings, health) = if config.is_v1() {
        let query = if version == V1 {
            String::new()
        } else {
            format!("?api-version={version}")
        };
        let call = match upstream {
            Upstream::ChatCompletions => "chat/completions",
            Upstream::Responses => "responses",
        };
        (
            at(&format!("/openai/v1/{call}{query}"))?,
            at(&format!("/openai/v1/embeddings{query}"))?,
            at(&format!("/openai/v1/models{query}"))?,
        )
    } else {
        let query = format!("?api-version={version}");
        let call = match upstream {
            Upstream::ChatCompletions => {
                format!("/openai/deployments/{deployment}/chat/completions{query}")
            }
            // the classic Responses API has no deployments segment: `model` names it
            Upstream::Responses => format!("/openai/responses{query}"),
        };
        (
            at(&call)?,
            at(&format!(
                "/openai/deployments/{deployment}/embeddings{query}"
            ))?,
            at(&format!("/openai/models{query}"))?,
        )
    };
    let endpoints = Endpoints {
        stream: call.clone(),
        call,
        health,
    };
    let (api_key, bearer, file) = match config.auth {
        AzureAuth::ApiKey(key) => (Some(key), false, None),
        AzureAuth::Token(token) => (Some(token), true, None),
        AzureAuth::TokenFile(file) => (None, true, Some(file)),
        AzureAuth::None => (None, false, None),
    };
    let codec = codec(
        deployment.to_owned(),
        config.use_max_tokens,
        (!bearer).then(|| "api-key".to_owned()),
    );
    let connection = Connection {
        api_key,
        headers: config.headers,
        http: config.http,
        usage_grace: config.usage_grace,
        clock: config.clock,
    };
    let provider = HttpProvider::assemble(codec, endpoints, connection, transport)?
        .with_embeddings(embeddings);
    Ok(match file {
        Some(file) => provider.with_bearer(file),
        None => provider,
    })
}

/// An OpenAI API the Azure way: the OpenAI codec `C` with Azure's auth header, content
/// filter and retry header; bodies, replies, stream events and native passthrough are
/// `C`'s.
#[derive(Debug)]
pub struct OnAzure<C> {
    inner: C,
}

/// Chat Completions the Azure way.
pub type AzureCodec = OnAzure<OpenAiCodec>;

impl<C: Codec> wrapping::WrappingCodec for OnAzure<C> {
    type Inner = C;
    const KIND: &'static str = "azure";
    type Events = Events<C::Events>;

    fn inner(&self) -> &C {
        &self.inner
    }

    fn parse_reply(&self, body: &[u8], call: C::Call) -> Result<ProviderReply, ProviderError> {
        unless_silently_filtered(self.inner.parse_reply(body, call)?)
    }

    fn events(&self, call: C::Call) -> Self::Events {
        Events::new(self.inner.events(call))
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify(failure, now)
    }
}

/// OpenAI's classifier, with `x-ms-retry-after-ms` as the wait when the answer has no
/// `retry-after-ms` (it is finer than `retry-after`, which Azure sends beside it).
#[must_use]
pub fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
    let mut error = openai::classify(failure, now);
    if failure.header("retry-after-ms").is_none() {
        if let Some(wait) = failure
            .header("x-ms-retry-after-ms")
            .and_then(crate::retry::parse_retry_after_ms)
        {
            error.retry_after = Some(wait);
        }
    }
    error
}

/// The error of an answer the content filter withheld entirely.
fn filtered() -> ProviderError {
    let mut error = ProviderError::new(
        ErrorKind::ContentFiltered,
        "Azure's content filter withheld the answer (finish_reason \"content_filter\")",
    );
    error.status = Some(200);
    error.vendor_code = Some("content_filter".to_owned());
    error
}

/// A stream read by the wrapped codec's reader `E` (OpenAI's tracks the answers of an
/// `n` > 1 stream), watching for a content-filter finish before anything was said.
pub struct Events<E> {
    inner: E,
    watch: FilterWatch,
}

impl<E> Events<E> {
    fn new(inner: E) -> Self {
        Self {
            inner,
            watch: FilterWatch::default(),
        }
    }
}

impl<E> std::fmt::Debug for Events<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

impl<E: StreamEvents> StreamEvents for Events<E> {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let parsed = self.inner.parse_event(event)?;
        if let Parsed::Chunk(chunk) = &parsed {
            self.watch.check(chunk)?;
        }
        Ok(parsed)
    }
}

/// `reply`, unless it is Azure's silent filter: a content-filter finish with nothing said
/// (no text, refusal or tool call), which is an error (a refusal is something said).
fn unless_silently_filtered(reply: ProviderReply) -> Result<ProviderReply, ProviderError> {
    let silent = reply.text.is_empty() && reply.refusal.is_empty() && reply.tool_calls.is_empty();
    if silent && reply.finish_reason == Some(FinishReason::ContentFilter) {
        return Err(filtered());
    }
    Ok(reply)
}

/// The same rule for a stream, chunk by chunk: a content-filter finish before anything
/// was said is an error.
#[derive(Debug, Default)]
struct FilterWatch {
    /// Some text, a refusal or a tool call came already.
    said: bool,
}

impl FilterWatch {
    fn check(&mut self, chunk: &crate::chat::ChatChunk) -> Result<(), ProviderError> {
        self.said |=
            !chunk.text.is_empty() || !chunk.refusal.is_empty() || !chunk.tool_calls.is_empty();
        if !self.said && chunk.finish_reason == Some(FinishReason::ContentFilter) {
            return Err(filtered());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
