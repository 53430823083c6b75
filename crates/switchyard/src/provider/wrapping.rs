//! A codec made of another vendor's codec, for a cloud that serves that vendor's API
//! (Azure's OpenAI, Vertex's Gemini and Claude).
//!
//! Owns [`WrappingCodec`] and the one [`Codec`] impl every wrapper gets from it: each item
//! is the wrapper's where it writes one, else the wrapped codec's. A wrapper writes only
//! what its cloud changes (its `KIND`, auth, error rules, a body field); its URLs are its
//! `new`'s, as any vendor's. The impl is generic, so a call through a wrapper is a direct
//! call to the wrapped codec: no boxing, no dynamic dispatch.
//!
//! A wrapper is used as a [`Codec`]. Its module implements this trait by path
//! (`impl wrapping::WrappingCodec for …`) rather than importing it: with both traits in
//! scope, every method call on a wrapper is ambiguous.

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;
use bytes::Bytes;

use super::codec::{Codec, Framing, StreamEvents};
use super::http::{ConfigError, Endpoint, HttpFailure, UpstreamResponse};
use super::secret::Secret;
use crate::chat::{ChatRequest, Field, FieldSet, ProviderReply, Support};
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;

/// What a wrapper's wrapped codec leaves for reading a reply: the wrapper's
/// [`Codec::Call`].
pub type InnerCall<W> = <<W as WrappingCodec>::Inner as Codec>::Call;

/// A [`Codec`] that is `Inner` with a few changes. Every item mirrors the [`Codec`] item
/// of the same name; every default is the wrapped codec's.
pub trait WrappingCodec: std::fmt::Debug + Send + Sync + 'static {
    /// The codec wrapped.
    type Inner: Codec;

    /// [`Codec::KIND`]: the cloud's own, never the wrapped vendor's.
    const KIND: &'static str;

    /// [`Codec::NATIVE`].
    const NATIVE: Option<&'static str> = <Self::Inner as Codec>::NATIVE;

    /// [`Codec::APPENDS_NATIVE_PREFILL`].
    const APPENDS_NATIVE_PREFILL: bool = <Self::Inner as Codec>::APPENDS_NATIVE_PREFILL;

    /// [`Codec::FRAMING`].
    const FRAMING: Framing = <Self::Inner as Codec>::FRAMING;

    /// [`Codec::ONE_ANSWER_PER_CALL`].
    const ONE_ANSWER_PER_CALL: bool = <Self::Inner as Codec>::ONE_ANSWER_PER_CALL;

    /// [`Codec::Events`]. Rust gives an associated type no default: a wrapper that reads
    /// streams as the wrapped codec does names the wrapped codec's type here and returns
    /// its reader from [`WrappingCodec::events`].
    type Events: StreamEvents;

    /// The wrapped codec.
    fn inner(&self) -> &Self::Inner;

    /// [`Codec::events`].
    fn events(&self, call: InnerCall<Self>) -> Self::Events;

    /// [`Codec::model`].
    fn model(&self) -> &str {
        self.inner().model()
    }

    /// [`Codec::default_max_tokens`].
    fn default_max_tokens(&self) -> Option<u32> {
        self.inner().default_max_tokens()
    }

    /// [`Codec::support`].
    fn support(field: Field) -> Support {
        <Self::Inner as Codec>::support(field)
    }

    /// [`Codec::model_support`]: the wrapped codec's (a wrapper that changes
    /// [`WrappingCodec::support`] writes this too).
    fn model_support(&self, field: Field) -> Support {
        self.inner().model_support(field)
    }

    /// [`Codec::cannot_honour`].
    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        self.inner().cannot_honour(req)
    }

    /// [`Codec::encode`].
    ///
    /// # Errors
    /// As [`Codec::encode`].
    fn encode(
        &self,
        req: &ChatRequest,
        stream: bool,
    ) -> Result<(Vec<u8>, InnerCall<Self>), ProviderError> {
        self.inner().encode(req, stream)
    }

    /// [`Codec::parse_reply`].
    ///
    /// # Errors
    /// As [`Codec::parse_reply`].
    fn parse_reply(
        &self,
        body: &[u8],
        call: InnerCall<Self>,
    ) -> Result<ProviderReply, ProviderError> {
        self.inner().parse_reply(body, call)
    }

    /// [`Codec::reported_latency`].
    fn reported_latency(&self, response: &UpstreamResponse) -> Option<Duration> {
        self.inner().reported_latency(response)
    }

    /// [`Codec::json_as_events`].
    fn json_as_events(&self, body: &Bytes) -> Option<Bytes> {
        self.inner().json_as_events(body)
    }

    /// [`Codec::encode_embeddings`].
    ///
    /// # Errors
    /// As [`Codec::encode_embeddings`].
    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        self.inner().encode_embeddings(req)
    }

    /// [`Codec::parse_embeddings`].
    ///
    /// # Errors
    /// As [`Codec::parse_embeddings`].
    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        self.inner().parse_embeddings(body)
    }

    /// [`Codec::embeddings_batches`].
    ///
    /// # Errors
    /// As [`Codec::embeddings_batches`].
    fn embeddings_batches(
        &self,
        req: &EmbeddingRequest,
    ) -> Result<Vec<std::ops::Range<usize>>, ProviderError> {
        self.inner().embeddings_batches(req)
    }

    /// [`Codec::classify`].
    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        <Self::Inner as Codec>::classify(failure, now)
    }

    /// [`Codec::count_tokens_url`].
    fn count_tokens_url(&self, call: &Endpoint) -> Option<String> {
        self.inner().count_tokens_url(call)
    }

    /// [`Codec::authenticate`].
    ///
    /// # Errors
    /// As [`Codec::authenticate`].
    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        self.inner().authenticate(key, headers)
    }
}

impl<W: WrappingCodec> Codec for W {
    const KIND: &'static str = W::KIND;
    const NATIVE: Option<&'static str> = W::NATIVE;
    const APPENDS_NATIVE_PREFILL: bool = W::APPENDS_NATIVE_PREFILL;
    const FRAMING: Framing = W::FRAMING;
    const ONE_ANSWER_PER_CALL: bool = W::ONE_ANSWER_PER_CALL;
    type Call = InnerCall<W>;
    type Events = W::Events;

    fn model(&self) -> &str {
        WrappingCodec::model(self)
    }

    fn default_max_tokens(&self) -> Option<u32> {
        WrappingCodec::default_max_tokens(self)
    }

    fn support(field: Field) -> Support {
        <W as WrappingCodec>::support(field)
    }

    fn model_support(&self, field: Field) -> Support {
        WrappingCodec::model_support(self, field)
    }

    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        WrappingCodec::cannot_honour(self, req)
    }

    fn encode(
        &self,
        req: &ChatRequest,
        stream: bool,
    ) -> Result<(Vec<u8>, Self::Call), ProviderError> {
        WrappingCodec::encode(self, req, stream)
    }

    fn parse_reply(&self, body: &[u8], call: Self::Call) -> Result<ProviderReply, ProviderError> {
        WrappingCodec::parse_reply(self, body, call)
    }

    fn reported_latency(&self, response: &UpstreamResponse) -> Option<Duration> {
        WrappingCodec::reported_latency(self, response)
    }

    fn events(&self, call: Self::Call) -> Self::Events {
        WrappingCodec::events(self, call)
    }

    fn json_as_events(&self, body: &Bytes) -> Option<Bytes> {
        WrappingCodec::json_as_events(self, body)
    }

    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        WrappingCodec::encode_embeddings(self, req)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        WrappingCodec::parse_embeddings(self, body)
    }

    fn embeddings_batches(
        &self,
        req: &EmbeddingRequest,
    ) -> Result<Vec<std::ops::Range<usize>>, ProviderError> {
        WrappingCodec::embeddings_batches(self, req)
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        <W as WrappingCodec>::classify(failure, now)
    }

    fn count_tokens_url(&self, call: &Endpoint) -> Option<String> {
        WrappingCodec::count_tokens_url(self, call)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        WrappingCodec::authenticate(self, key, headers)
    }
}
