//! Azure OpenAI's Responses API: the OpenAI Responses codec
//! ([`crate::provider::openai::responses`]) with Azure's URLs, auth, retry header and
//! content-filter rule, for an Azure provider configured with `api = "responses"`.
//!
//! Bodies, replies, stream events and native passthrough are the Responses codec's: a
//! `/v1/responses` request goes to this provider as the client wrote it (built-in tools
//! included), with the deployment as its `model`. Paths (see the module above): v1
//! `{endpoint}/openai/v1/responses`, classic `{endpoint}/openai/responses?api-version=…`.

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;

use super::{build, classify, unless_silently_filtered, AzureConfig, FilterWatch, Upstream};
use crate::chat::{ChatRequest, Field, ProviderReply, Support};
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;
use crate::provider::codec::{Codec, HttpProvider, StreamEvents};
use crate::provider::http::{ConfigError, HttpFailure, Transport, UpstreamResponse};
use crate::provider::openai::responses::{self, ResponsesCodec, NATIVE_KIND};
use crate::provider::secret::Secret;
use crate::provider::sse::{Parsed, SseEvent};

/// An Azure OpenAI deployment spoken to through the Responses API.
pub type AzureResponses = HttpProvider<AzureResponsesCodec>;

impl AzureResponses {
    /// A provider from `config` (its `use_max_tokens` does not apply: the Responses API
    /// has one name, `max_output_tokens`), pooled on `transport`.
    ///
    /// # Errors
    /// An unusable endpoint, deployment name, api version, header or credential.
    pub fn new(config: AzureConfig, transport: &Transport) -> Result<Self, ConfigError> {
        build(
            config,
            Upstream::Responses,
            transport,
            |deployment, _, header| AzureResponsesCodec {
                inner: ResponsesCodec::new(deployment, header),
            },
        )
    }
}

/// The Responses API the Azure way.
#[derive(Debug)]
pub struct AzureResponsesCodec {
    inner: ResponsesCodec,
}

impl Codec for AzureResponsesCodec {
    const KIND: &'static str = "azure";
    const NATIVE: Option<&'static str> = Some(NATIVE_KIND);
    /// Whether the request went as its native body.
    type Call = bool;
    type Events = Events;

    /// Azure serves OpenAI's Responses API: the same fields.
    fn support(field: Field) -> Support {
        ResponsesCodec::support(field)
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<(Vec<u8>, bool), ProviderError> {
        self.inner.encode(req, stream)
    }

    fn parse_reply(&self, body: &[u8], native: bool) -> Result<ProviderReply, ProviderError> {
        unless_silently_filtered(self.inner.parse_reply(body, native)?)
    }

    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        self.inner.encode_embeddings(req)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        self.inner.parse_embeddings(body)
    }

    fn reported_latency(&self, response: &UpstreamResponse) -> Option<Duration> {
        self.inner.reported_latency(response)
    }

    fn events(&self, native: bool) -> Events {
        Events {
            inner: self.inner.events(native),
            watch: FilterWatch::default(),
        }
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify(failure, now)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        self.inner.authenticate(key, headers)
    }
}

/// A Responses stream read by the Responses codec, watching for a content-filter finish
/// before anything was said.
pub struct Events {
    inner: responses::Events,
    watch: FilterWatch,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

impl StreamEvents for Events {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let parsed = self.inner.parse_event(event)?;
        if let Parsed::Chunk(chunk) = &parsed {
            self.watch.check(chunk)?;
        }
        Ok(parsed)
    }
}
