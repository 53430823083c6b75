//! switchyard: an LLM gateway that keeps answering when a model provider fails.
//!
//! Crate map (each module opens with what it owns). Modules depend on each other in one
//! direction only (docs/design.md, "Layers"; `tests/module_graph.rs` checks it); the
//! vocabulary at the bottom depends on nothing above it:
//! - [`clock`] — the one time source.
//! - [`money`] — exact money ([`Money`], integer pico-dollars).
//! - [`fault`] — a failed upstream call classified: the error taxonomy (kind, blame,
//!   retry / breaker / failover policy) and `ProviderError`.
//! - [`trail`] — the attempt trail: each try and skip of a request and what it came to.
//! - [`chat`] — the shared shape: requests, replies, completions, chunks, usage.
//! - [`embedding`] — the shape of embeddings: inputs, vectors, the gateway's answer.
//! - [`error`] — the gateway's error (`GatewayError`); re-exports [`fault`].
//!
//! Policies, state, providers and the gateway above them:
//! - [`breaker`] — Closed / Open / HalfOpen as pure transitions taking `now`.
//! - [`retry`] — backoff, Retry-After, the retry decision.
//! - [`route`] — routes and the pure candidate ordering.
//! - [`ratelimit`] — per-minute rate limits (GCRA), as pure arithmetic.
//! - [`cost`] — prices and output limits (`prices.json`), a request's worst case, budget
//!   arithmetic.
//! - [`health`] — active health checks: settings, the verdict rule, the checker loop.
//! - [`state`] — where breaker, budget and rate-limit state lives (memory; Redis).
//! - [`provider`] — the `Provider` trait; the HTTP transport, SSE parser and `Secret`; the
//!   OpenAI, Anthropic and Gemini adapters; the scripted provider of tests.
//! - [`observe`] — usage overruns, exhausted budgets (told once each), observers, the ledger.
//! - [`propagate`] — what every upstream call carries: W3C trace context, the request id.
//! - [`gateway`] — the only place that knows the step order; health snapshots.
//! - [`blocking`] — a blocking wrapper for callers without a runtime.
//!
//! ```
//! use std::sync::Arc;
//! use switchyard::provider::scripted::{ScriptedProvider, Step};
//! use switchyard::{ErrorKind, Gateway, ProviderSpec, Route};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let primary = Arc::new(ScriptedProvider::new("primary-model").then(Step::fail(ErrorKind::Overloaded)));
//! let backup = Arc::new(ScriptedProvider::new("backup-model"));
//! let gateway = Gateway::builder()
//!     .provider(ProviderSpec::new("primary", primary).max_attempts(1))
//!     .provider(ProviderSpec::new("backup", backup))
//!     .route(Route::new("default", &["primary", "backup"]))
//!     .build()?;
//!
//! let reply = gateway.complete("Explain RAG in one sentence.").await?;
//! assert_eq!(reply.provider, "backup");
//! assert!(reply.failed_over);
//! assert_eq!(reply.attempts[0].outcome.label(), "failed:overloaded");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

pub mod blocking;
pub mod breaker;
pub mod chat;
pub mod clock;
pub mod cost;
pub mod embedding;
pub mod error;
pub mod fault;
pub mod gateway;
pub mod health;
pub mod json_text;
pub mod money;
pub mod observe;
pub mod propagate;
pub mod provider;
pub mod ratelimit;
pub mod retry;
pub mod route;
pub mod state;
pub mod trail;

/// The README's library example, compiled and run as a doc test.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use chat::{ChatChunk, ChatRequest, ChatResponse, Message, ProviderReply, Role, Usage};
pub use cost::{Money, Price, PriceTable};
pub use embedding::{EmbeddingInput, EmbeddingRequest, EmbeddingResponse};
pub use error::{ErrorKind, GatewayError, KindPolicy, ProviderError};
pub use gateway::{Gateway, GatewayBuilder, ProviderHealth, ProviderSpec};
pub use provider::Provider;
pub use route::{Api, Order, Route};
