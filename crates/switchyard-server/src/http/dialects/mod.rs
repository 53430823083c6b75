//! Inbound dialects: the client-facing APIs the gateway speaks, one folder each.
//!
//! A dialect is a codec ([`Dialect`]): it decodes its API's request into the library's
//! shared chat shape and encodes the gateway's answer — a reply, a stream (through a
//! [`StreamEncoder`]), an error — back into its API's wire format. Everything else a request
//! goes through is written once, in [`flow`]: the client key, the body limit, the route and
//! the key's right to it, the key's limits, the gateway call, the `x-switchyard-*` headers,
//! metrics and the request-log line (which names the dialect); [`sse`] runs a committed
//! stream's life (shutdown, a client that goes away, the log line before the last event).
//!
//! Today: OpenAI's Chat Completions ([`chat`]) and Responses ([`responses`]), Anthropic's
//! Messages ([`messages`]). How to add one: `docs/architecture.md`. OpenAI's Embeddings
//! ([`embeddings`]) is not a chat dialect (it maps to the library's embedding shape, not the
//! chat shape) but goes through the same [`flow`] steps.

pub mod chat;
pub(crate) mod ctx;
pub mod embeddings;
pub mod expansion;
pub(crate) mod flow;
pub(crate) mod json;
pub(crate) mod kept;
pub mod messages;
pub(crate) mod passthrough;
pub mod responses;
pub(crate) mod sse;
pub(crate) mod surcharges;

use std::future::Future;

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use switchyard::{ChatChunk, ChatRequest, ChatResponse};

use crate::http::error::ApiError;
use crate::http::state::AppState;
pub(crate) use ctx::Ctx;

/// What a dialect's decoder hands the shared flow. (The route, streaming and ignored
/// fields go into the request's [`Ctx`] as soon as the decoder knows them, so that a
/// request refused later is still logged with its route.)
#[derive(Debug)]
pub(crate) struct Decoded<E> {
    /// The request in the shared shape.
    pub request: ChatRequest,
    /// What the dialect keeps for encoding the answer (stream options, ids, ...).
    pub extra: E,
    /// Top-level fields the API does not define, for [`passthrough::admit`] (Responses,
    /// Messages; Chat Completions carries its own in `ChatRequest::passthrough`).
    pub unknown: Vec<String>,
}

/// One inbound API.
pub(crate) trait Dialect: Send + Sync + 'static {
    /// The API's name in the request log (`chat`, ...).
    const API: &'static str;
    /// What the decoder keeps for the encoders.
    type Extra: Send + Sync + 'static;
    /// Writes a committed stream's events.
    type Encoder: StreamEncoder;

    /// The body into the shared shape, or a 400 naming the field in the API's own terms.
    /// Client strings are bounded here (`crate::http::bounds`). Sets `ctx.route` (the
    /// client's `model`), `ctx.stream` and `ctx.ignored` (fields the request used that tune
    /// how one vendor serves it, that the shared shape does not carry and that change
    /// neither the answer's meaning nor its format: never silent, they are named in
    /// `x-switchyard-ignored`).
    ///
    /// # Errors
    /// The field at fault and why.
    fn decode(body: &Bytes, ctx: &mut Ctx) -> Result<Decoded<Self::Extra>, ApiError>;

    /// Anything the request needs from state once the caller may use the route (a stored
    /// conversation, ...). The default needs nothing.
    fn prepare(
        _state: &AppState,
        _ctx: &Ctx,
        _decoded: &mut Decoded<Self::Extra>,
    ) -> impl Future<Output = Result<(), ApiError>> + Send {
        async { Ok(()) }
    }

    /// A plain answer's JSON body.
    fn reply(ctx: &Ctx, extra: &Self::Extra, resp: &ChatResponse) -> Vec<u8>;

    /// Runs once an answer (plain or streamed) is complete, before the client sees its end.
    /// The default does nothing.
    fn finished(
        _state: &AppState,
        _ctx: &Ctx,
        _extra: &Self::Extra,
        _resp: &ChatResponse,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The stream encoder for a request whose stream has committed; `model` is the
    /// answering upstream's model as known at commit.
    fn encoder(ctx: &Ctx, extra: &Self::Extra, model: &str) -> Self::Encoder;

    /// An error in the API's own shape and statuses. The default is OpenAI's.
    fn error(err: ApiError) -> Response {
        err.into_response()
    }
}

/// A committed stream's events in one dialect. Each method returns whole SSE frames
/// (possibly several, possibly none).
pub(crate) trait StreamEncoder: Send + 'static {
    /// What goes out before the first content (a role chunk, `message_start`, ...).
    fn start(&mut self) -> Bytes;
    /// One content chunk (text, tool-call pieces; a finish reason alone writes nothing:
    /// `done` always follows it).
    fn chunk(&mut self, chunk: &ChatChunk) -> Bytes;
    /// [`chunk`](Self::chunk), written at the end of `out` (where a stream's ready chunks
    /// are batched).
    fn chunk_into(&mut self, chunk: &ChatChunk, out: &mut bytes::BytesMut) {
        out.extend_from_slice(&self.chunk(chunk));
    }
    /// The end of a finished answer (finish reason, usage, the `switchyard` trail where
    /// the API has room for it, the terminator).
    fn done(&mut self, resp: &ChatResponse) -> Bytes;
    /// The end of a stream that broke and could not be rescued, or that the server's
    /// shutdown cut: an error event, never the API's success terminator.
    fn failed(&mut self, err: &ApiError) -> Bytes;
}

/// `data: <json>\n\n`.
pub(crate) fn data_frame<T: serde::Serialize>(value: &T) -> Bytes {
    frame(None, value)
}

/// `event: <name>\ndata: <json>\n\n` (or just the data line without a name).
pub(crate) fn frame<T: serde::Serialize>(event: Option<&str>, value: &T) -> Bytes {
    let mut out = Vec::with_capacity(512);
    if let Some(name) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut out, value).is_err() {
        out.extend_from_slice(b"{}");
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}
