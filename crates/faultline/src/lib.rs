//! faultline: a fault-injecting, OpenAI-compatible upstream for switchyard's conformance
//! tests and benchmarks. Dev-only; never published.
//!
//! It answers Chat Completions (plain, and streamed as SSE with the usage chunk and
//! `[DONE]`), the OpenAI Responses API and Anthropic Messages (each plain and streamed in
//! its own event sequence, errors in its own shape) deterministically — always [`CANONICAL_ANSWER`], 60 word tokens, one SSE chunk
//! each — and misbehaves on cue: each request takes the next [`Fault`] of its model's
//! [`Script`]. Every request is recorded as an [`Attempt`] (arrival time, fault, prefill,
//! how it ended), so tests can assert on a gateway's conduct, not just its answers.
//!
//! Crate map:
//! - `answer`: the canonical answer, its tokens, continuation after a prefill;
//! - `fault`: [`Fault`] and [`Script`], plain data with a JSON form;
//! - `record`: scripts and attempts per model, and the guard that records how a request ended;
//! - `wire`: the request fields read, preserialized response bodies and SSE events, per
//!   [`Api`] (chat in `wire.rs`, `wire/responses.rs`, `wire/messages.rs`);
//! - `respond`: a fault applied to a request, as a response;
//! - `server`: the listener and connections, the routes, the control API, the [`Handle`].
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use faultline::{Fault, Script, Server};
//!
//! let upstream = Server::new()
//!     .script("primary", Script::once(Fault::rate_limited(2)))
//!     .start()
//!     .await?;
//! // point an OpenAI client at upstream.base_url(), then:
//! let tries = upstream.attempts("primary");
//! # let _ = tries;
//! upstream.script("fallback", Fault::cut(40)); // every request to "fallback" is cut
//! # Ok(())
//! # }
//! ```
//!
//! The same over HTTP (the `faultline` binary): `POST /control/script` with
//! `{"model": "primary", "faults": [{"kind": "status", "status": 429, "retry_after": "2"}]}`,
//! `GET /control/attempts?model=primary`, `POST /control/reset`.

mod answer;
mod fault;
mod record;
mod respond;
mod server;
mod wire;

pub use answer::{continuation, prefix, token_count, tokens, CANONICAL_ANSWER, PROMPT_TOKENS};
pub use fault::{Fault, Script};
pub use record::{Attempt, Outcome};
pub use server::{Handle, ModelScript, Server, DEFAULT_RECORD_LIMIT};
pub use wire::Api;
