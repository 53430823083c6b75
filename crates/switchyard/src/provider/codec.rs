//! The one HTTP provider every vendor runs on, and the [`Codec`] a vendor implements.
//!
//! Owns [`HttpProvider`]: headers built once (key, vendor headers, extras, `Accept`), the
//! call (`post` → classify a non-2xx answer → parse the reply), the streamed call (an event
//! stream read under the shared completion rule of [`super::sse`]; a JSON or HTML answer to
//! a streamed call handled the same way for every vendor), the health check's free listing
//! request, the key scrubbed from every error it returns, and the model name a reply
//! reports bounded ([`super::bound_reported_model`]).
//!
//! A vendor is a [`Codec`] in its own folder (`openai/`, `anthropic/`, `gemini/`): its
//! request body, its reply and stream-event parsers, its error classifier and how it sends
//! its key. Codecs do no I/O. The transport is [`super::http`]. A vendor whose API has no
//! `n` ([`Codec::ONE_ANSWER_PER_CALL`]) serves a request for several answers by that many
//! calls, merged by [`super::fanout`]: done here, once for every vendor, so the gateway's
//! attempt loop sees one call (one attempt, one breaker verdict, one trail entry) and its
//! stream machinery (commit point, stall timeout, rescue rules) one stream.

use std::ops::Range;
use std::time::{Duration, SystemTime};

use ::http::HeaderMap;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt as _;

use super::eventstream::{self, EventStream};
use super::http::{
    self, redact, redact_all, snippet, ConfigError, Endpoint, ErrorPolicy, HttpClient, HttpFailure,
    HttpSettings, Transport, UpstreamResponse,
};
use super::secret::Secret;
use super::sign::{RequestSigner, Signable};
use super::sse::{self, Parsed, SseEvent, SseStream};
use super::token::TokenSource;
use super::{embeddings_unsupported, fanout, reply_as_chunk, ChunkStream, Provider};
use crate::chat::{ChatRequest, Field, FieldSet, ProviderReply, Support, Usage};
use crate::clock::Clock;
use crate::embedding::{EmbeddingProgress, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};

/// One vendor's API: what goes on the wire and how its answers read. No I/O.
pub trait Codec: std::fmt::Debug + Send + Sync + 'static {
    /// The adapter kind (`openai`, `anthropic`, `gemini`).
    const KIND: &'static str;

    /// The API whose native bodies this codec sends as written (see
    /// [`Provider::native_kind`]); `None` for none.
    const NATIVE: Option<&'static str> = None;

    /// What encoding a request leaves for reading its reply (Anthropic: the whitespace
    /// trimmed off a prefill); `()` for vendors that need nothing.
    type Call: Send + 'static;

    /// Reads one stream's events, in order; a fresh one per stream.
    type Events: StreamEvents;

    /// True when `encode` appends a rescue's [`crate::chat::Native::prefill`] to a native
    /// body of this kind (so the body, and its forwarded headers, still go on a
    /// continuation); otherwise such a request goes in the shared shape.
    const APPENDS_NATIVE_PREFILL: bool = false;

    /// How this vendor frames a streamed answer: server-sent events (every vendor but
    /// one), or AWS's binary event stream (Bedrock's ConverseStream, read by
    /// [`super::eventstream`] into the same events).
    const FRAMING: Framing = Framing::Sse;

    /// True for a vendor whose API answers once per call (no `n`: Anthropic's Messages,
    /// Bedrock's Converse, OpenAI's Responses): the provider serves a request for `n` > 1
    /// answers by `n` calls of one answer each ([`super::fanout`]), and the codec declares
    /// `n` translated. `encode` then never sees `n` > 1.
    const ONE_ANSWER_PER_CALL: bool = false;

    /// The model id this codec sends.
    fn model(&self) -> &str;

    /// The output cap sent when a request sets none (see [`Provider::default_max_tokens`]).
    fn default_max_tokens(&self) -> Option<u32> {
        None
    }

    /// How this vendor carries `field` (the vendor's row of `docs/fields.md`). `encode`
    /// sends every field declared native or translated, and none declared otherwise.
    fn support(field: Field) -> Support;

    /// How this codec's model carries `field`: the vendor's declaration
    /// ([`Codec::support`]) unless the model takes less of it (Bedrock: prompt-cache
    /// breakpoints only on the models that cache). What [`Provider::support`] answers.
    fn model_support(&self, field: Field) -> Support {
        Self::support(field)
    }

    /// Fields of `req` this vendor cannot honour in combination, though it takes each
    /// alone (see [`Provider::cannot_honour`]); `encode` refuses such a request. The
    /// default: none.
    fn cannot_honour(&self, _req: &ChatRequest) -> FieldSet {
        FieldSet::EMPTY
    }

    /// The request body for `req`, and what reading its reply needs.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed in this vendor's API.
    fn encode(
        &self,
        req: &ChatRequest,
        stream: bool,
    ) -> Result<(Vec<u8>, Self::Call), ProviderError>;

    /// A 2xx body as a reply (an error object inside it classified).
    ///
    /// # Errors
    /// `Malformed` for a body that is not a reply; the classified error of an error object.
    fn parse_reply(&self, body: &[u8], call: Self::Call) -> Result<ProviderReply, ProviderError>;

    /// The vendor's own processing time, from a reply's headers.
    fn reported_latency(&self, _response: &UpstreamResponse) -> Option<Duration> {
        None
    }

    /// The reader of one stream's events.
    fn events(&self, call: Self::Call) -> Self::Events;

    /// A streamed call answered with JSON: the same answer as server-sent events when the
    /// JSON is the vendor's non-SSE stream format; `None` to read it as one reply.
    fn json_as_events(&self, _body: &Bytes) -> Option<Bytes> {
        None
    }

    /// The body of an embeddings call for `req`. The default: this vendor serves none.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed in this vendor's API;
    /// `ModelNotFound` when the vendor serves no embeddings.
    fn encode_embeddings(&self, _req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        Err(embeddings_unsupported(Self::KIND))
    }

    /// A 2xx body of an embeddings call as vectors (an error object inside it classified).
    ///
    /// # Errors
    /// `Malformed` for a body that is not the vendor's embeddings reply.
    fn parse_embeddings(&self, _body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        Err(embeddings_unsupported(Self::KIND))
    }

    /// The inputs each embeddings call takes, as consecutive ranges covering `req`'s
    /// (Bedrock's Titan: one input a call; Vertex AI: its model's instance and token
    /// limits). More than one range: that many calls inside the one attempt, a few at once
    /// ([`EMBEDDING_CALLS_AT_ONCE`]), their vectors joined in order and their usage summed;
    /// any call failing fails the attempt, and the calls answered are kept for its retry
    /// ([`Provider::embed_resuming`]) and counted as spent. The default: one call.
    ///
    /// # Errors
    /// `BadRequest` for a request no call could carry (token-id inputs to a vendor that
    /// embeds text only, `dimensions` the model lacks): refused before any call is sent.
    fn embeddings_batches(
        &self,
        req: &EmbeddingRequest,
    ) -> Result<Vec<Range<usize>>, ProviderError> {
        Ok(std::iter::once(0..req.inputs.len()).collect())
    }

    /// Input tokens of an embeddings call that the vendor reports in the answer's headers
    /// rather than its body (Bedrock's `X-Amzn-Bedrock-Input-Token-Count`), used when the
    /// body reports none. The default: none.
    fn embeddings_usage(&self, _response: &UpstreamResponse) -> Option<Usage> {
        None
    }

    /// A non-2xx answer as an error (the only place status codes are read).
    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError;

    /// Where this vendor counts a Messages request's input tokens, given its call
    /// endpoint; `None` (the default) when it cannot.
    fn count_tokens_url(&self, _call: &Endpoint) -> Option<String> {
        None
    }

    /// Put `key` into `headers` the way this vendor takes it (marked sensitive).
    ///
    /// # Errors
    /// A key or header name that is not valid in a header.
    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError>;
}

/// A vendor's reader of one stream's server-sent events.
pub trait StreamEvents: Send + 'static {
    /// One event as a chunk, the end marker, or nothing.
    ///
    /// # Errors
    /// `Malformed` for an event that is not the vendor's; an error event classified.
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError>;
}

/// How a vendor's streamed answers are framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events (`text/event-stream`).
    Sse,
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`).
    AwsEventStream,
}

impl Framing {
    /// The `Accept` header of a streamed call.
    #[must_use]
    pub fn accept(self) -> &'static str {
        match self {
            Self::Sse => "text/event-stream",
            Self::AwsEventStream => eventstream::MEDIA_TYPE,
        }
    }
}

/// Where a vendor's calls go.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The non-streaming call.
    pub call: Endpoint,
    /// The streaming call (the same as `call` for vendors that switch by a body field).
    pub stream: Endpoint,
    /// The free listing request of the health check.
    pub health: Endpoint,
}

/// How many of one request's embeddings calls are in flight at once, when the codec takes
/// fewer inputs per call than the request has (see [`Codec::embeddings_batches`]).
pub const EMBEDDING_CALLS_AT_ONCE: usize = 4;

/// What every vendor's configuration holds besides its codec.
#[derive(Debug)]
pub struct Connection {
    /// The key, sent by [`Codec::authenticate`]; `None` sends none.
    pub api_key: Option<Secret>,
    /// Headers sent on every call after the key, in order (later ones replace earlier).
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap.
    pub http: HttpSettings,
    /// After the finish signal, how long a stream waits for its usage.
    pub usage_grace: Duration,
    /// Wall time for HTTP-date `Retry-After` values.
    pub clock: Clock,
}

/// One upstream: a vendor codec bound to a model, endpoints and a credential.
#[derive(Debug)]
pub struct HttpProvider<C> {
    /// Shared, so a fanned-out stream's calls can be opened by a clone of the provider
    /// (see [`HttpProvider::stream`]).
    codec: std::sync::Arc<C>,
    api_key: Option<Secret>,
    /// Classifies non-2xx answers and scrubs the key from every error.
    errors: ErrorPolicy,
    http: HttpClient,
    endpoints: Endpoints,
    /// Headers of a JSON call (key, vendor headers, extras), built once.
    json_headers: HeaderMap,
    /// The same with `Accept: text/event-stream`.
    sse_headers: HeaderMap,
    usage_grace: Duration,
    /// Where embeddings calls go; `None`: this provider serves none.
    embeddings: Option<Endpoint>,
    /// A bearer token fetched per call (Azure Entra ID, Vertex AI), sent as
    /// `Authorization: Bearer …` after the configured headers and scrubbed from every
    /// error like the key; `None` for vendors whose key is fixed.
    bearer: Option<std::sync::Arc<dyn TokenSource>>,
    /// Signs each request over its method, URL, headers and body (AWS SigV4), after every
    /// other header is in; its secrets are scrubbed from every error like the key.
    signer: Option<std::sync::Arc<dyn RequestSigner>>,
}

impl<C> Clone for HttpProvider<C> {
    /// The same provider (the codec and credential sources shared, headers copied): what
    /// a fanned-out stream opens its later calls with.
    fn clone(&self) -> Self {
        Self {
            codec: std::sync::Arc::clone(&self.codec),
            api_key: self.api_key.clone(),
            errors: self.errors.clone(),
            http: self.http.clone(),
            endpoints: self.endpoints.clone(),
            json_headers: self.json_headers.clone(),
            sse_headers: self.sse_headers.clone(),
            usage_grace: self.usage_grace,
            embeddings: self.embeddings.clone(),
            bearer: self.bearer.clone(),
            signer: self.signer.clone(),
        }
    }
}

impl<C: Codec> HttpProvider<C> {
    /// A provider for `codec` at `endpoints`, pooled on `transport`.
    ///
    /// # Errors
    /// An empty key, or a key or header not valid in a header.
    pub fn assemble(
        codec: C,
        endpoints: Endpoints,
        connection: Connection,
        transport: &Transport,
    ) -> Result<Self, ConfigError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &connection.api_key {
            if key.is_empty() {
                return Err(ConfigError("api_key is empty".to_owned()));
            }
            codec.authenticate(key, &mut headers)?;
        }
        for (name, value) in &connection.headers {
            http::insert_header(&mut headers, name, value)?;
        }
        let mut json_headers = headers.clone();
        http::insert_header(&mut json_headers, "accept", "application/json")?;
        let mut sse_headers = headers;
        http::insert_header(&mut sse_headers, "accept", C::FRAMING.accept())?;
        Ok(Self {
            http: transport.client(connection.http)?,
            errors: ErrorPolicy {
                classify: C::classify,
                key: connection.api_key.clone(),
                clock: connection.clock,
            },
            codec: std::sync::Arc::new(codec),
            api_key: connection.api_key,
            endpoints,
            json_headers,
            sse_headers,
            usage_grace: connection.usage_grace,
            embeddings: None,
            bearer: None,
            signer: None,
        })
    }

    /// Builder: send a bearer token from `source` on every call (`Authorization: Bearer`,
    /// replacing any configured one), fetched when the call is made, so a token that
    /// rotates is picked up without rebuilding the provider. A failure to get one fails
    /// the call with the source's error.
    #[must_use]
    pub fn with_bearer(mut self, source: std::sync::Arc<dyn TokenSource>) -> Self {
        self.bearer = Some(source);
        self
    }

    /// Builder: sign every request with `signer` (see [`RequestSigner`]), just before it
    /// is sent; a failure to sign fails the call with the signer's error.
    #[must_use]
    pub fn with_signer(mut self, signer: std::sync::Arc<dyn RequestSigner>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// `headers` made ready to send `body` to `url`: the bearer token in (when this
    /// provider has a source), then the signature (when it has a signer).
    async fn ready<'h>(
        &self,
        method: &str,
        url: &Endpoint,
        headers: std::borrow::Cow<'h, HeaderMap>,
        body: &[u8],
    ) -> Result<std::borrow::Cow<'h, HeaderMap>, ProviderError> {
        let headers = self.authorized(headers).await?;
        let Some(signer) = &self.signer else {
            return Ok(headers);
        };
        let mut headers = headers.into_owned();
        signer
            .sign(Signable { method, url, body }, &mut headers)
            .await
            .map_err(|e| self.redact(e))?;
        Ok(std::borrow::Cow::Owned(headers))
    }

    /// `headers` with the current bearer token in them, when this provider has a source.
    async fn authorized<'h>(
        &self,
        headers: std::borrow::Cow<'h, HeaderMap>,
    ) -> Result<std::borrow::Cow<'h, HeaderMap>, ProviderError> {
        let Some(source) = &self.bearer else {
            return Ok(headers);
        };
        let token = source.token().await.map_err(|e| self.redact(e))?;
        let mut headers = headers.into_owned();
        http::insert_secret_header(&mut headers, "authorization", "Bearer ", &token).map_err(
            |e| {
                self.redact(ProviderError::new(
                    ErrorKind::Auth,
                    format!("bearer token: {}", e.0),
                ))
            },
        )?;
        Ok(std::borrow::Cow::Owned(headers))
    }

    /// Builder: serve embeddings at `endpoint` (through the codec's
    /// [`Codec::encode_embeddings`] and [`Codec::parse_embeddings`]).
    #[must_use]
    pub fn with_embeddings(mut self, endpoint: Endpoint) -> Self {
        self.embeddings = Some(endpoint);
        self
    }

    /// Where embeddings calls go, if this provider serves them.
    #[must_use]
    pub fn embeddings_endpoint(&self) -> Option<&Endpoint> {
        self.embeddings.as_ref()
    }

    /// The vendor codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// Where this provider's calls go.
    #[cfg(test)]
    pub(crate) fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The headers of a JSON call.
    #[cfg(test)]
    pub(crate) fn json_headers(&self) -> &HeaderMap {
        &self.json_headers
    }

    /// Scrub the key (the current bearer token, the signer's secrets) out of an error.
    fn redact(&self, error: ProviderError) -> ProviderError {
        scrub_all(
            self.api_key.as_ref(),
            self.bearer.as_ref(),
            self.signer.as_ref(),
            error,
        )
    }

    /// A request's result checked by the vendor's rules, every error scrubbed.
    async fn checked(
        &self,
        sent: Result<UpstreamResponse, ProviderError>,
    ) -> Result<UpstreamResponse, ProviderError> {
        self.errors.checked(sent).await.map_err(|e| self.redact(e))
    }

    /// Post `body`, with the headers a native body of this vendor's kind forwards (after
    /// the configured ones; one of the same name replaces the configured value).
    async fn post(
        &self,
        req: &ChatRequest,
        body: Vec<u8>,
        stream: bool,
    ) -> Result<UpstreamResponse, ProviderError> {
        let (url, headers) = if stream {
            (&self.endpoints.stream, &self.sse_headers)
        } else {
            (&self.endpoints.call, &self.json_headers)
        };
        let native = C::NATIVE.and_then(|kind| {
            if C::APPENDS_NATIVE_PREFILL {
                req.native_continuing(kind)
            } else {
                req.native_for(kind)
            }
        });
        let forwarded = native.map(|n| n.headers.as_slice());
        let headers = match forwarded {
            Some(extra) if !extra.is_empty() => {
                let mut headers = headers.clone();
                for (name, value) in extra {
                    http::insert_header(&mut headers, name, value).map_err(|e| {
                        ProviderError::new(ErrorKind::BadRequest, format!("{name}: {}", e.0))
                    })?;
                }
                std::borrow::Cow::Owned(headers)
            }
            _ => std::borrow::Cow::Borrowed(headers),
        };
        let headers = self.ready("POST", url, headers, &body).await?;
        let sent = self.http.post_json(url, &headers, body).await;
        self.checked(sent).await
    }

    /// A streamed call answered with JSON: the vendor's non-SSE stream format, or one reply
    /// (a server that ignored the stream flag, or an error object in a 200 body).
    fn json_as_stream(&self, bytes: &Bytes, call: C::Call) -> Result<ChunkStream, ProviderError> {
        if let Some(events) = self.codec.json_as_events(bytes) {
            let bytes = futures_util::stream::iter([Ok(events)]);
            return Ok(self.chunks(SseStream::new(bytes, usize::MAX), call));
        }
        let mut reply = self
            .codec
            .parse_reply(bytes, call)
            .map_err(|e| self.redact(e))?;
        super::bound_reported_model(&mut reply.model);
        Ok(Box::pin(futures_util::stream::iter([Ok(reply_as_chunk(
            reply,
        ))])))
    }

    /// Events to chunks under the shared completion rule, errors scrubbed.
    fn chunks<S, D>(&self, events: sse::Framed<S, D>, call: C::Call) -> ChunkStream
    where
        S: futures_util::Stream<Item = Result<Bytes, ProviderError>> + Unpin + Send + 'static,
        D: sse::Deframe + Send + 'static,
    {
        let mut parser = self.codec.events(call);
        let key = self.api_key.clone();
        let bearer = self.bearer.clone();
        let signer = self.signer.clone();
        sse::into_chunks_scrubbed(
            events,
            self.usage_grace,
            move |e| parser.parse_event(e),
            move |e| scrub_all(key.as_ref(), bearer.as_ref(), signer.as_ref(), e),
        )
    }
}

impl<C: Codec> HttpProvider<C> {
    /// One embeddings call for `req`: its body posted to `url`, the answer parsed, usage
    /// from the headers when the body reports none.
    async fn embed_call(
        &self,
        url: &Endpoint,
        req: &EmbeddingRequest,
    ) -> Result<EmbeddingReply, ProviderError> {
        let body = self.codec.encode_embeddings(req)?;
        let headers = self
            .ready(
                "POST",
                url,
                std::borrow::Cow::Borrowed(&self.json_headers),
                &body,
            )
            .await?;
        let sent = self.http.post_json(url, &headers, body).await;
        let response = self.checked(sent).await?;
        let reported = self.codec.embeddings_usage(&response);
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        let mut reply = self
            .codec
            .parse_embeddings(&bytes)
            .map_err(|e| self.redact(e))?;
        reply.usage = reply.usage.or(reported);
        Ok(reply)
    }
}

/// `error` with every credential a provider holds scrubbed out — the key, the bearer token
/// last handed out, the signer's secrets — before it is cut to length ([`redact_all`]).
fn scrub_all(
    key: Option<&Secret>,
    bearer: Option<&std::sync::Arc<dyn TokenSource>>,
    signer: Option<&std::sync::Arc<dyn RequestSigner>>,
    error: ProviderError,
) -> ProviderError {
    if bearer.is_none() && signer.is_none() {
        return redact(key, error);
    }
    let keys: Vec<Secret> = key
        .cloned()
        .into_iter()
        .chain(bearer.and_then(|b| b.current()))
        .chain(signer.map(|s| s.secrets()).unwrap_or_default())
        .collect();
    redact_all(&keys, error)
}

#[async_trait]
impl<C: Codec> Provider for HttpProvider<C> {
    fn kind(&self) -> &'static str {
        C::KIND
    }

    fn upstream(&self) -> Option<(&str, u16)> {
        self.endpoints.call.host_port()
    }

    fn model(&self) -> &str {
        self.codec.model()
    }

    fn native_kind(&self) -> Option<&'static str> {
        C::NATIVE
    }

    fn default_max_tokens(&self) -> Option<u32> {
        self.codec.default_max_tokens()
    }

    fn support(&self, field: Field) -> Support {
        self.codec.model_support(field)
    }

    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        self.codec.cannot_honour(req)
    }

    fn calls_for(&self, req: &ChatRequest) -> u32 {
        self.fanned_out(req).unwrap_or(1)
    }

    /// One call; `n` > 1 answers from a vendor without `n` are that many calls, merged
    /// ([`fanout::send`]).
    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let Some(n) = self.fanned_out(req) else {
            return self.send_one(req).await;
        };
        let one = &fanout::single(req);
        fanout::send(n, move || self.send_one(one)).await
    }

    /// One streamed call; `n` > 1 answers from a vendor without `n` are that many streamed
    /// calls, merged ([`fanout::stream`]), opened by a clone of this provider (the merged
    /// stream outlives this borrow).
    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let Some(n) = self.fanned_out(req) else {
            return self.stream_one(req).await;
        };
        let this = std::sync::Arc::new(self.clone());
        let one = std::sync::Arc::new(fanout::single(req));
        let open: fanout::Open = std::sync::Arc::new(move || {
            let (this, one) = (std::sync::Arc::clone(&this), std::sync::Arc::clone(&one));
            Box::pin(async move { this.stream_one(&one).await })
        });
        fanout::stream(n, open).await
    }

    async fn embed(&self, req: &EmbeddingRequest) -> Result<EmbeddingReply, ProviderError> {
        self.embed_resuming(req, &mut EmbeddingProgress::default())
            .await
    }

    /// The codec's batches not yet in `progress`, a few at once (see [`Self::embed_all`]).
    async fn embed_resuming(
        &self,
        req: &EmbeddingRequest,
        progress: &mut EmbeddingProgress,
    ) -> Result<EmbeddingReply, ProviderError> {
        let mut reply = self.embed_all(req, progress).await?;
        super::bound_reported_model(&mut reply.model);
        Ok(reply)
    }

    async fn count_tokens(
        &self,
        body: &serde_json::Value,
        betas: Option<&str>,
    ) -> Result<u64, ProviderError> {
        self.count(body, betas).await
    }

    async fn check_health(&self) -> Result<(), ProviderError> {
        self.list().await
    }
}

impl<C: Codec> HttpProvider<C> {
    /// The answers a request needs as that many calls: `Some(n)` for `n` > 1 on a vendor
    /// without `n`; `None` when one call serves it.
    fn fanned_out(&self, req: &ChatRequest) -> Option<u32> {
        fanout::answers(req).filter(|_| C::ONE_ANSWER_PER_CALL)
    }

    /// One non-streaming call.
    async fn send_one(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let (body, call) = self.codec.encode(req, false)?;
        let response = self.post(req, body, false).await?;
        let latency = self.codec.reported_latency(&response);
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        let mut reply = self
            .codec
            .parse_reply(&bytes, call)
            .map_err(|e| self.redact(e))?;
        if latency.is_some() {
            reply.reported_latency = latency;
        }
        super::bound_reported_model(&mut reply.model);
        Ok(reply)
    }

    /// One streaming call.
    async fn stream_one(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let (body, call) = self.codec.encode(req, true)?;
        let response = self.post(req, body, true).await?;
        match response.media_type().as_deref() {
            Some("application/json") => {
                let bytes = response.body().await.map_err(|e| self.redact(e))?;
                return self.json_as_stream(&bytes, call);
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
        let bytes = response.into_byte_stream();
        Ok(match C::FRAMING {
            Framing::Sse => self.chunks(SseStream::new(bytes, limit), call),
            Framing::AwsEventStream => self.chunks(EventStream::new(bytes, limit), call),
        })
    }

    /// An embeddings request: one call, or the codec's batches not yet in `progress`, a
    /// few at once. Each answered call is recorded in `progress` as it lands (its vectors,
    /// and its usage: it is billed). The first failure stops new calls from starting; the
    /// ones in flight finish and are kept (they are billed too), and the attempt fails with
    /// that first error, leaving the rest to a retry.
    async fn embed_all(
        &self,
        req: &EmbeddingRequest,
        progress: &mut EmbeddingProgress,
    ) -> Result<EmbeddingReply, ProviderError> {
        let Some(url) = &self.embeddings else {
            return Err(embeddings_unsupported(C::KIND));
        };
        let batches = self.codec.embeddings_batches(req)?;
        if batches.len() <= 1 {
            return self.embed_call(url, req).await;
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let calls: Vec<_> = (batches.iter())
            .filter(|range| !progress.has(range))
            .map(|range| {
                let part = EmbeddingRequest {
                    inputs: req.inputs[range.clone()].to_vec(),
                    dimensions: req.dimensions,
                    user: req.user.clone(),
                };
                let stop = &stop;
                async move {
                    if stop.load(std::sync::atomic::Ordering::Acquire) {
                        return (range.clone(), None); // not sent: left to a retry
                    }
                    let reply = self.embed_call(url, &part).await;
                    if reply.is_err() {
                        stop.store(true, std::sync::atomic::Ordering::Release);
                    }
                    (range.clone(), Some(reply))
                }
            })
            .collect();
        let mut replies =
            futures_util::stream::iter(calls).buffer_unordered(EMBEDDING_CALLS_AT_ONCE);
        let mut failed = None;
        while let Some((range, reply)) = replies.next().await {
            match reply {
                Some(Ok(reply)) => {
                    let (asked, got) = (range.len(), reply.vectors.len());
                    if !progress.record(req, range, reply) {
                        stop.store(true, std::sync::atomic::Ordering::Release);
                        failed.get_or_insert(ProviderError::new(
                            ErrorKind::Malformed,
                            format!("{got} vectors for {asked} inputs in one embeddings call"),
                        ));
                    }
                }
                Some(Err(e)) => {
                    failed.get_or_insert(e);
                }
                None => {}
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        progress.finish(&batches).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Malformed,
                "embeddings calls left inputs unembedded",
            )
        })
    }

    /// `POST {count_tokens_url}` with the client's body (this provider's model in it) and
    /// its betas; the answer's `input_tokens`. Errors classified and scrubbed as any call's.
    async fn count(
        &self,
        body: &serde_json::Value,
        betas: Option<&str>,
    ) -> Result<u64, ProviderError> {
        let unsupported = || {
            ProviderError::new(
                ErrorKind::BadRequest,
                format!("{} providers do not count tokens", C::KIND),
            )
        };
        let url = self
            .codec
            .count_tokens_url(&self.endpoints.call)
            .ok_or_else(unsupported)?;
        let url = url::Url::parse(&url)
            .ok()
            .and_then(|u| Endpoint::new(u).ok())
            .ok_or_else(unsupported)?;
        let mut body = body.clone();
        body["model"] = serde_json::Value::String(self.codec.model().to_owned());
        let mut headers = self.json_headers.clone();
        if let Some(betas) = betas {
            http::insert_header(&mut headers, "anthropic-beta", betas).map_err(|e| {
                ProviderError::new(ErrorKind::BadRequest, format!("anthropic-beta: {}", e.0))
            })?;
        }
        let body = crate::provider::encode_body(&body)?;
        let headers = self
            .ready("POST", &url, std::borrow::Cow::Owned(headers), &body)
            .await?;
        let sent = self.http.post_json(&url, &headers, body).await;
        let response = self.checked(sent).await?;
        let bytes = response.body().await.map_err(|e| self.redact(e))?;
        let count: Option<u64> = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("input_tokens").and_then(serde_json::Value::as_u64));
        count.ok_or_else(|| {
            self.redact(ProviderError::new(
                ErrorKind::Malformed,
                format!(
                    "count_tokens answered without input_tokens: {}",
                    snippet(&bytes)
                ),
            ))
        })
    }

    /// The vendor's free listing request: proves the key and the endpoint.
    async fn list(&self) -> Result<(), ProviderError> {
        let headers = self
            .ready(
                "GET",
                &self.endpoints.health,
                std::borrow::Cow::Borrowed(&self.json_headers),
                &[],
            )
            .await?;
        let sent = self.http.get(&self.endpoints.health, &headers).await;
        let response = self.checked(sent).await?;
        response.body().await.map_err(|e| self.redact(e))?;
        Ok(())
    }
}
