//! Providers: the one trait the gateway calls, the HTTP provider vendors run on, and the
//! in-process ones.
//!
//! Owns [`Provider`] (async, object-safe: the gateway holds `Arc<dyn Provider>`), the chunk
//! stream type, [`codec::HttpProvider`] (the one HTTP provider; each vendor folder —
//! `openai/`, `anthropic/`, `gemini/` — is a [`codec::Codec`] it drives; a cloud serving
//! another vendor's API — `azure/`, `vertex/` — a [`wrapping::WrappingCodec`]), the scripted
//! provider used by pipeline tests, `n` answers from vendors without `n` as that many calls
//! ([`fanout`]), and a credential file re-read when it changes
//! ([`watched::Watched`]). Vendor codecs translate and classify; they never
//! retry, route or log. (The tutorial's simulated provider is the server's:
//! `switchyard-server/src/simulated/`.)

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub mod codec;
mod error_body;
pub mod eventstream;
pub mod fanout;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod scripted;
pub mod secret;
pub mod sign;
pub mod sse;
pub mod token;
pub mod vertex;
pub mod watched;
pub mod wrapping;

use std::pin::Pin;

use async_trait::async_trait;
use futures_util::Stream;

use crate::chat::{ChatChunk, ChatRequest, Field, FieldSet, ProviderReply, Support};
use crate::embedding::{EmbeddingProgress, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};

/// A stream of chunks from one upstream call. It ends after the chunk carrying the
/// vendor's finish signal; an `Err` item ends it early.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<ChatChunk, ProviderError>> + Send>>;

/// One upstream: an adapter kind bound to a model, an endpoint and a credential.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The adapter kind (`openai`, `anthropic`, `gemini`, `scripted`; the server's `simulated`).
    fn kind(&self) -> &'static str;

    /// The model id this provider calls.
    fn model(&self) -> &str;

    /// The host and port its calls go to (a call span's `server.address` and
    /// `server.port`); `None` (the default) for a provider with no upstream of its own.
    fn upstream(&self) -> Option<(&str, u16)> {
        None
    }

    /// The API whose native bodies (see [`crate::chat::Native`]) this provider sends as the
    /// client wrote them: `anthropic` for Anthropic providers, `openai-responses` for OpenAI
    /// providers that speak the Responses API; `None` (the default) for none.
    fn native_kind(&self) -> Option<&'static str> {
        None
    }

    /// The output cap this adapter sends when the request sets no `max_tokens` (Anthropic
    /// requires one); `None` when it then sends none. Budget reservations size a request
    /// without `max_tokens` by it.
    fn default_max_tokens(&self) -> Option<u32> {
        None
    }

    /// How this provider carries `field` (see [`Support`]): the gateway drops a
    /// degradable field the provider cannot honour and skips it for a contract one. The default, for in-process providers
    /// that answer from a script or a simulation rather than a model, takes every field.
    fn support(&self, _field: Field) -> Support {
        Support::Native
    }

    /// Fields of `req` this provider cannot honour in combination with the rest of the
    /// request, though it takes each alone: every field of the clash (Anthropic: a JSON
    /// response format that needs a forced tool, with the client's own tools or thinking;
    /// thinking whose smallest budget does not fit `max_tokens`). The gateway sends the
    /// request without the clash's degradable fields when that resolves it, else skips
    /// the provider (`docs/fields.md`). The default: none.
    fn cannot_honour(&self, _req: &ChatRequest) -> FieldSet {
        FieldSet::EMPTY
    }

    /// How many upstream calls serving `req` takes: `n` for a provider whose vendor has no
    /// `n` and serves `n` > 1 answers by that many calls ([`fanout`]), each billed for the
    /// whole prompt; 1 otherwise (a vendor that takes `n` reads the prompt once for every
    /// answer). Budget reservations and the cost of a reply are sized by it. The default:
    /// 1.
    fn calls_for(&self, _req: &ChatRequest) -> u32 {
        1
    }

    /// One non-streaming call. Errors come back classified.
    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError>;

    /// One streaming call: `Ok` once the upstream accepted the request (headers in);
    /// failures after that arrive as `Err` items.
    ///
    /// The default makes one non-streaming call and yields it as a single chunk.
    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let reply = self.send(req).await?;
        Ok(Box::pin(futures_util::stream::iter([Ok(reply_as_chunk(
            reply,
        ))])))
    }

    /// One embeddings call: a vector per input, in input order. Errors come back
    /// classified.
    ///
    /// The default serves none: a `ModelNotFound` error (a provider misconfigured into an
    /// embeddings route, which the route fails over and an operator must fix).
    async fn embed(&self, _req: &EmbeddingRequest) -> Result<EmbeddingReply, ProviderError> {
        Err(embeddings_unsupported(self.kind()))
    }

    /// [`Provider::embed`] within a provider's turn: `progress` holds what its earlier
    /// attempts produced and takes what this one produces (the vectors, and the usage of
    /// every call answered even when the attempt fails), so that a retry sends only the
    /// inputs not yet embedded and a failed turn still knows what it spent. The default
    /// makes one call for everything, as [`Provider::embed`].
    async fn embed_resuming(
        &self,
        req: &EmbeddingRequest,
        _progress: &mut EmbeddingProgress,
    ) -> Result<EmbeddingReply, ProviderError> {
        self.embed(req).await
    }

    /// An active health check against a free endpoint (never a billable completion).
    /// The default has nothing to check.
    async fn check_health(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    /// The input tokens of an Anthropic Messages request, counted by the vendor
    /// (`POST /v1/messages/count_tokens`): `body` is the client's count request (its
    /// `model` is replaced by this provider's), `betas` its `anthropic-beta` header. The
    /// default cannot count (a `BadRequest`): only Anthropic providers can.
    async fn count_tokens(
        &self,
        _body: &serde_json::Value,
        _betas: Option<&str>,
    ) -> Result<u64, ProviderError> {
        Err(ProviderError::new(
            crate::ErrorKind::BadRequest,
            format!("{} providers do not count tokens", self.kind()),
        ))
    }
}

/// The error of a provider asked for embeddings it does not serve.
#[must_use]
pub fn embeddings_unsupported(kind: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::ModelNotFound,
        format!("{kind} providers do not serve embeddings"),
    )
}

/// A vendor request body as JSON, written into a buffer sized for a typical request (not
/// grown from serde_json's default of 128 bytes).
///
/// # Errors
/// `BadRequest` when the body cannot be encoded.
pub(crate) fn encode_body<T: serde::Serialize>(body: &T) -> Result<Vec<u8>, ProviderError> {
    let mut buf = Vec::with_capacity(1024);
    serde_json::to_writer(&mut buf, body).map_err(|e| {
        ProviderError::new(ErrorKind::BadRequest, format!("encoding the request: {e}"))
    })?;
    Ok(buf)
}

/// The most bytes kept of a model name an upstream reports (a reply's, a chunk's, an
/// embeddings answer's). Real ids are well under 100 bytes; a longer one is cut to this
/// with a `…[+N bytes]` marker where the HTTP provider parses replies
/// ([`codec::HttpProvider`]), so a broken or hostile upstream cannot make every answer,
/// trail entry and log line carry megabytes (the name appears in each).
pub const MAX_REPORTED_MODEL_BYTES: usize = 256;

/// Cut `model`, as an upstream reported it, to [`MAX_REPORTED_MODEL_BYTES`] (at a character
/// boundary), marking how much was cut; a new allocation, so the long one is freed.
pub fn bound_reported_model(model: &mut Option<String>) {
    let Some(m) = model
        .as_mut()
        .filter(|m| m.len() > MAX_REPORTED_MODEL_BYTES)
    else {
        return;
    };
    let mut keep = MAX_REPORTED_MODEL_BYTES;
    while !m.is_char_boundary(keep) {
        keep -= 1;
    }
    *m = format!("{}…[+{} bytes]", &m[..keep], m.len() - keep);
}

/// A whole reply as the single chunk of a stream.
#[must_use]
pub fn reply_as_chunk(reply: ProviderReply) -> ChatChunk {
    use crate::chat::ToolCallDelta;
    let tool_calls = reply
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCallDelta {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            id: Some(c.id),
            name: Some(c.name),
            arguments: c.arguments,
        })
        .collect();
    let thinking = reply
        .thinking
        .into_iter()
        .enumerate()
        .map(|(i, t)| crate::chat::ThinkingDelta {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            text: t.text,
            signature: t.signature,
            redacted: t.redacted,
        })
        .collect();
    let content = |l: Option<serde_json::Value>| {
        l.and_then(|mut l| l.get_mut("content").map(serde_json::Value::take))
    };
    let choices = (reply.alternatives.into_iter().enumerate())
        .map(|(i, c)| crate::chat::ChoiceDelta {
            index: u32::try_from(i + 1).unwrap_or(u32::MAX),
            text: c.text,
            refusal: c.refusal,
            tool_calls: (c.tool_calls.into_iter().enumerate())
                .map(|(n, t)| crate::chat::ToolCallDelta {
                    index: u32::try_from(n).unwrap_or(u32::MAX),
                    id: Some(t.id),
                    name: Some(t.name),
                    arguments: t.arguments,
                })
                .collect(),
            logprobs: content(c.logprobs),
            finish_reason: c.finish_reason.or(Some(crate::chat::FinishReason::Stop)),
        })
        .collect();
    ChatChunk {
        id: reply.id,
        text: reply.text,
        refusal: reply.refusal,
        system_fingerprint: reply.system_fingerprint,
        choices,
        tool_calls,
        thinking,
        finish_reason: reply
            .finish_reason
            .or(Some(crate::chat::FinishReason::Stop)),
        usage: reply.usage,
        model: reply.model,
        logprobs: content(reply.logprobs),
        native: reply.native,
    }
}
