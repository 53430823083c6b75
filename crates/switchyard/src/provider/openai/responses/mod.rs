//! The OpenAI Responses API as an upstream (`POST {base}/responses`), for OpenAI providers
//! configured with `api = "responses"`: models served only there (the codex models), and
//! the providers a Responses client's built-in tools can go to.
//!
//! Owns [`ResponsesCodec`] and [`OpenAiResponses`] (the shared HTTP provider running it);
//! the body in `request.rs` (the shared shape as `instructions`, `input` items, function
//! tools, `tool_choice`, `text.format`; `store: false`), replies in `reply.rs` (output items
//! to text, tool calls, finish reason and usage), stream events in `stream.rs`. Errors are
//! OpenAI's and classified by the Chat Completions adapter's [`super::classify`]; keys,
//! extra headers and embeddings (`{base}/embeddings`) are as for that adapter.
//!
//! A request whose native body is a Responses body (see [`NATIVE_KIND`] and
//! [`crate::chat::Native`]) is sent as the client wrote it, with this call's `model`,
//! `stream` and output cap: built-in tools, `include`, `reasoning` and every other field
//! reach the vendor. Its answer keeps the upstream's whole `response` object
//! ([`crate::chat::ProviderReply::native`]), and its stream the events of output items the
//! shared shape cannot carry (`web_search_call`, reasoning...) as native pieces
//! ([`crate::chat::ChatChunk::native`]), for the Responses dialect to hand back verbatim.
//!
//! Mapping, where the Responses API differs from the shared shape:
//! - Leading system messages are joined (blank lines) into `instructions`; later ones stay
//!   `system` input messages.
//! - An assistant turn is its text as a message item, then one `function_call` item per
//!   call; a tool result is a `function_call_output` item.
//! - Function tools are sent with `strict: false` (the Responses API's default is strict,
//!   which changes what schemas it accepts; the shared shape has no strictness).
//! - `stop` has no Responses equivalent: a request with stop sequences is a `BadRequest`.
//! - Usage: `input_tokens` (cached included), `input_tokens_details.cached_tokens`,
//!   `output_tokens` (reasoning included), `output_tokens_details.reasoning_tokens`.
//! - Finish: `incomplete` for `max_output_tokens` is `Length`, for `content_filter`
//!   `ContentFilter`; a completed answer with function calls is `ToolCalls`, else `Stop`.

mod reply;
mod request;
mod stream;
#[cfg(test)]
mod tests;

pub use reply::parse_response;
pub use request::input_items;
pub use stream::Events;

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;

use super::{embed, OpenAiConfig};
use crate::chat::{ChatRequest, Field, ProviderReply, Support};
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::codec::{Codec, HttpProvider};
use crate::provider::http::{self, ConfigError, HttpFailure, Transport, UpstreamResponse};
use crate::provider::secret::Secret;

/// The native-body kind of a Responses request (see [`crate::chat::Native`]).
pub const NATIVE_KIND: &str = "openai-responses";

/// An OpenAI provider speaking the Responses API: the shared HTTP provider running
/// [`ResponsesCodec`].
pub type OpenAiResponses = HttpProvider<ResponsesCodec>;

impl OpenAiResponses {
    /// A provider from `config` (its `use_max_tokens` does not apply: the Responses API
    /// has one name, `max_output_tokens`), pooled on `transport`.
    ///
    /// # Errors
    /// An unusable `base_url`, header, or key (empty, or not valid in a header).
    pub fn new(config: OpenAiConfig, transport: &Transport) -> Result<Self, ConfigError> {
        super::assemble(config, "/responses", transport, |model, api_key_header| {
            ResponsesCodec {
                model,
                api_key_header,
            }
        })
    }

    /// The JSON body of a Responses call for `req`.
    ///
    /// # Errors
    /// `BadRequest` when the request cannot be expressed (stop sequences, a tool result
    /// without a call id, a native body that is not an object).
    pub fn build_request(&self, req: &ChatRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.codec().encode(req, stream).map(|(body, _)| body)
    }
}

/// The Responses API on the wire.
#[derive(Debug)]
pub struct ResponsesCodec {
    model: String,
    /// Send the key in this header as is, instead of `Authorization: Bearer`.
    api_key_header: Option<String>,
}

impl ResponsesCodec {
    /// The codec for `model`, sending the key in `api_key_header` as is (`None`:
    /// `Authorization: Bearer`). For clouds that serve the Responses API (Azure).
    pub(crate) fn new(model: String, api_key_header: Option<String>) -> Self {
        Self {
            model,
            api_key_header,
        }
    }
}

impl Codec for ResponsesCodec {
    fn support(field: Field) -> Support {
        request::support(field)
    }

    const KIND: &'static str = "openai";
    const NATIVE: Option<&'static str> = Some(NATIVE_KIND);
    // the Responses API has no `n`: several answers are several calls (docs/fields.md)
    const ONE_ANSWER_PER_CALL: bool = true;
    /// Whether the request went as its native body (its answer is kept whole).
    type Call = bool;
    type Events = Events;

    fn model(&self) -> &str {
        &self.model
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<(Vec<u8>, bool), ProviderError> {
        if let Some(native) = req.native_for(NATIVE_KIND) {
            let body = native_body(&native.body, &self.model, req.max_tokens, stream)?;
            return Ok((body, true));
        }
        request::body(req, &self.model, stream).map(|body| (body, false))
    }

    fn parse_reply(&self, body: &[u8], native: bool) -> Result<ProviderReply, ProviderError> {
        parse_response(body, native)
    }

    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        embed::body(req, &self.model)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        embed::parse(body)
    }

    fn reported_latency(&self, response: &UpstreamResponse) -> Option<Duration> {
        super::reply::processing_time(response)
    }

    fn events(&self, native: bool) -> Events {
        Events::new(native)
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        super::classify(failure, now)
    }

    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        match &self.api_key_header {
            Some(name) => http::insert_secret_header(headers, name, "", key),
            None => http::insert_secret_header(headers, "authorization", "Bearer ", key),
        }
    }
}

/// The client's own Responses body with this call's `model`, `stream` and (when the
/// request has one) `max_output_tokens`; nothing else is touched (written byte for byte).
fn native_body(
    body: &crate::chat::RawBody,
    model: &str,
    max_tokens: Option<u32>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let encoding = |e: serde_json::Error| {
        ProviderError::new(ErrorKind::BadRequest, format!("encoding the request: {e}"))
    };
    let mut patch = crate::chat::Patch::default();
    patch.set_value("model", model).map_err(encoding)?;
    patch.set_value("stream", &stream).map_err(encoding)?;
    if let Some(n) = max_tokens {
        patch.set_value("max_output_tokens", &n).map_err(encoding)?;
    }
    Ok(body.to_bytes_with(&patch))
}
