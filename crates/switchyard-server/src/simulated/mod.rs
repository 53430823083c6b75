//! The tutorial's simulated provider: seeded failures, latencies and costs, no network.
//!
//! Owns a provider that behaves exactly like the tutorial's (docs/tutorial.md): each
//! call draws `random()`; below `failure_rate` it fails with "`<name>` timed out"; otherwise
//! latency = `round(uniform(lo, hi), 1)` ms, cost = `round(max_tokens / 1000 ·
//! cost_per_1k, 5)` and text = `"[" + name + "] " + prompt[:30] + "..."`. By default it reports
//! that latency without waiting (the demo); with `sleep_scale` set it really waits that long
//! times the scale (the server's embedded default, so it feels like a gateway).
//!
//! Beyond the tutorial, a request with `tools` gets a tool call whose arguments are valid
//! against the tool's schema, and one with a JSON `response_format` (or the Responses
//! API's `text.format`) gets JSON valid against its schema ([`answer`]): the embedded
//! default serves tool-calling and structured-output clients. Those answers are drawn from
//! the request itself, never from the tutorial's generator, so the tutorial's sequence of
//! outcomes is the same whatever the requests carry.
//!
//! A request for `n` > 1 answers is served the way a vendor without `n` serves it
//! (`switchyard::provider::fanout`): `n` calls of one answer each, merged into `n` choices
//! (plain or streamed), usage and cost summed. Call `i` is choice `i`: it draws from the
//! tutorial's generator like any call (so one failing fails the answer, as a real fan-out
//! does), and its answer is seeded by the request and `i` ([`answer`]), so the choices
//! differ while each stays the same for the same request. Choice 0 is exactly the
//! one-answer reply, and a request without `n` draws as the tutorial does.
//!
//! Embeddings (not in the tutorial) draw the same way (a failure, else a latency) and
//! answer with [`simulated_vector`]s: unit vectors hashed from the input, so equal inputs
//! get equal vectors; `dimensions` (default [`DEFAULT_DIMENSIONS`]) sets their length.
//!
//! Sits below both of its users: `config` builds one for every `kind = "simulated"` entry
//! (the embedded default), and `cli::demo` replays the tutorial on them. Its generator
//! (`pyrandom`) is CPython's; the library knows nothing of either.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use switchyard::chat::{ChatChunk, ChatRequest, ProviderReply, ToolCallDelta, Usage};
use switchyard::cost::{usd_per_mtok_to_micros, Money, Price, PriceError};
use switchyard::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use switchyard::error::{ErrorKind, ProviderError};
use switchyard::provider::{fanout, ChunkStream, Provider};

pub mod answer;
pub mod pyrandom;
pub mod schema;
pub mod seeded;

use answer::Answer;
use pyrandom::{py_round, PyRandom};

/// The length of a simulated embedding when the request sets no `dimensions`.
pub const DEFAULT_DIMENSIONS: u32 = 8;
/// The most dimensions a simulated embedding has (the largest real models' 3,072); more is
/// a bad request, as a real model answers.
pub const MAX_SIMULATED_DIMENSIONS: u32 = 3072;

/// The tutorial's `LLMRequest.max_tokens` default.
pub const DEFAULT_MAX_TOKENS: u32 = 200;

/// The knobs of one simulated provider.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedConfig {
    /// Name, shown in the text and in failures.
    pub name: String,
    /// Probability of a failure per call.
    pub failure_rate: f64,
    /// Latency range in ms, `[lo, hi]`.
    pub latency_range_ms: (f64, f64),
    /// Dollars per 1k `max_tokens`.
    pub cost_per_1k_tokens: f64,
    /// Seed of the provider's own generator.
    pub seed: u64,
    /// When set, calls really wait `latency × scale` (and streams pace their words).
    pub sleep_scale: Option<f64>,
}

/// A seeded stand-in for a vendor, bit-identical to the tutorial's.
#[derive(Debug)]
pub struct SimulatedProvider {
    /// Shared with the later calls of a fanned-out stream, which outlive a borrow of the
    /// provider.
    core: Arc<Core>,
}

/// The knobs and the generator every call of one provider draws from.
#[derive(Debug)]
struct Core {
    cfg: SimulatedConfig,
    rng: Mutex<PyRandom>,
}

/// One draw's result, before any waiting.
enum Draw {
    Fail,
    Answer { latency_ms: f64, cost_usd: f64 },
}

impl SimulatedProvider {
    /// A provider with a fresh generator seeded from `cfg.seed`.
    #[must_use]
    pub fn new(cfg: SimulatedConfig) -> Self {
        let rng = Mutex::new(PyRandom::new(cfg.seed));
        Self {
            core: Arc::new(Core { cfg, rng }),
        }
    }

    /// Its price: `cost_per_1k_tokens` per 1k output tokens, input free (the tutorial
    /// bills `max_tokens` only).
    ///
    /// # Errors
    /// When `cost_per_1k_tokens × 1000` has more than 6 decimal places.
    pub fn price(&self) -> Result<Price, PriceError> {
        Ok(Price {
            input_micros_per_mtok: 0,
            output_micros_per_mtok: usd_per_mtok_to_micros(
                self.core.cfg.cost_per_1k_tokens * 1000.0,
            )?,
            cached_input_micros_per_mtok: None,
            cache_write_micros_per_mtok: None,
            ..Price::default()
        })
    }
}

impl Core {
    fn draw(&self, max_tokens: u32) -> Draw {
        let Ok(mut rng) = self.rng.lock() else {
            return Draw::Fail;
        };
        if rng.random() < self.cfg.failure_rate {
            return Draw::Fail;
        }
        let (lo, hi) = self.cfg.latency_range_ms;
        let latency_ms = py_round(rng.uniform(lo, hi), 1);
        let cost_usd = py_round(
            (f64::from(max_tokens) / 1000.0) * self.cfg.cost_per_1k_tokens,
            5,
        );
        Draw::Answer {
            latency_ms,
            cost_usd,
        }
    }

    fn text_for(&self, req: &ChatRequest) -> String {
        let prompt: String = req.prompt_text().chars().take(30).collect();
        format!("[{}] {prompt}...", self.cfg.name)
    }

    fn scaled(&self, latency_ms: f64) -> Option<Duration> {
        let scale = self.cfg.sleep_scale?;
        let secs = latency_ms * scale / 1000.0;
        (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs))
    }

    fn timed_out(&self) -> ProviderError {
        ProviderError::new(ErrorKind::Timeout, format!("{} timed out", self.cfg.name))
    }

    /// What this provider answers `req` as its choice `choice` (see [`answer`]): decided
    /// before the draw, so a request it must refuse costs no draw.
    fn answer(&self, req: &ChatRequest, choice: u32) -> Result<Answer, ProviderError> {
        answer::answer(&self.cfg.name, req, self.text_for(req), choice)
    }

    /// One call for one answer (choice `choice`), up to the wait: the answer, then the
    /// draw, both now (so the calls of a fan-out draw in choice order), and how long the
    /// call takes.
    fn call(
        &self,
        req: &ChatRequest,
        choice: u32,
    ) -> Result<(ProviderReply, Option<Duration>), ProviderError> {
        let answer = self.answer(req, choice)?;
        match self.draw(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)) {
            Draw::Fail => Err(self.timed_out()),
            Draw::Answer {
                latency_ms,
                cost_usd,
            } => Ok((
                self.reply(req, answer, latency_ms, cost_usd),
                self.scaled(latency_ms),
            )),
        }
    }

    /// One call answering choice `choice`, waited out.
    fn send_one(
        &self,
        req: &ChatRequest,
        choice: u32,
    ) -> impl std::future::Future<Output = Result<ProviderReply, ProviderError>> {
        let called = self.call(req, choice);
        async move {
            let (reply, wait) = called?;
            if let Some(wait) = wait {
                tokio::time::sleep(wait).await;
            }
            Ok(reply)
        }
    }

    /// One streamed call answering choice `choice`: the reply in [`chunks`], the call's
    /// wait spread over them.
    fn stream_one(&self, req: &ChatRequest, choice: u32) -> Result<ChunkStream, ProviderError> {
        let (reply, wait) = self.call(req, choice)?;
        let chunks = chunks(reply);
        let pause = wait.map(|total| total / u32::try_from(chunks.len().max(1)).unwrap_or(1));
        let stream = futures_util::stream::iter(chunks).then(move |chunk| async move {
            if let Some(p) = pause {
                tokio::time::sleep(p).await;
            }
            Ok(chunk)
        });
        Ok(Box::pin(stream))
    }

    fn reply(
        &self,
        req: &ChatRequest,
        answer: Answer,
        latency_ms: f64,
        cost_usd: f64,
    ) -> ProviderReply {
        let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let prompt_words = req.prompt_text().split_whitespace().count() as u64;
        ProviderReply {
            text: answer.text,
            tool_calls: answer.tool_calls,
            thinking: Vec::new(),
            finish_reason: Some(answer.finish),
            model: Some(self.cfg.name.clone()),
            usage: Some(Usage {
                input_tokens: prompt_words,
                output_tokens: u64::from(max_tokens),
                ..Usage::default()
            }),
            reported_cost: Some(Money::from_usd(cost_usd)),
            reported_latency: Some(Duration::from_secs_f64(latency_ms / 1000.0)),
            ..ProviderReply::default()
        }
    }
}

#[async_trait]
impl Provider for SimulatedProvider {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn model(&self) -> &str {
        &self.core.cfg.name
    }

    /// The simulated provider bills `max_tokens`, [`DEFAULT_MAX_TOKENS`] when unset.
    fn default_max_tokens(&self) -> Option<u32> {
        Some(DEFAULT_MAX_TOKENS)
    }

    /// `n` calls for `n` > 1 answers, each billing the whole prompt.
    fn calls_for(&self, req: &ChatRequest) -> u32 {
        fanout::answers(req).unwrap_or(1)
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let Some(n) = fanout::answers(req) else {
            return self.core.send_one(req, 0).await;
        };
        let one = &fanout::single(req);
        // the fan-out makes its calls in choice order: call `i` is choice `i`
        let next = AtomicU32::new(0);
        fanout::send(n, || {
            self.core
                .send_one(one, next.fetch_add(1, Ordering::Relaxed))
        })
        .await
    }

    async fn embed(&self, req: &EmbeddingRequest) -> Result<EmbeddingReply, ProviderError> {
        let core = &self.core;
        let Draw::Answer { latency_ms, .. } = core.draw(0) else {
            return Err(core.timed_out());
        };
        if let Some(wait) = core.scaled(latency_ms) {
            tokio::time::sleep(wait).await;
        }
        let dims = req.dimensions.unwrap_or(DEFAULT_DIMENSIONS);
        if dims > MAX_SIMULATED_DIMENSIONS {
            return Err(ProviderError::new(
                ErrorKind::BadRequest,
                format!(
                    "{} embeds at most {MAX_SIMULATED_DIMENSIONS} dimensions",
                    core.cfg.name
                ),
            ));
        }
        Ok(EmbeddingReply {
            vectors: (req.inputs.iter())
                .map(|i| simulated_vector(i, dims))
                .collect(),
            model: Some(core.cfg.name.clone()),
            usage: Some(Usage {
                input_tokens: req.input_token_bound(),
                ..Usage::default()
            }),
        })
    }

    /// Always passes, without drawing from the generator (so checks never change the
    /// tutorial's sequence of outcomes).
    async fn check_health(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let Some(n) = fanout::answers(req) else {
            return self.core.stream_one(req, 0);
        };
        let (core, one) = (Arc::clone(&self.core), fanout::single(req));
        // the fan-out opens its calls in choice order: call `i` is choice `i`
        let next = AtomicU32::new(0);
        let open: fanout::Open = Arc::new(move || {
            let opened = core.stream_one(&one, next.fetch_add(1, Ordering::Relaxed));
            Box::pin(std::future::ready(opened))
        });
        fanout::stream(n, open).await
    }
}

/// A reply as stream chunks: its text word by word, then each tool call in a few pieces
/// of its arguments (the first piece with the call's id and name); the last chunk carries
/// the finish reason and the usage.
fn chunks(reply: ProviderReply) -> Vec<ChatChunk> {
    let piece = |text: String| ChatChunk {
        text,
        model: reply.model.clone(),
        ..ChatChunk::default()
    };
    let mut chunks: Vec<ChatChunk> = split_keeping_spaces(&reply.text)
        .into_iter()
        .map(piece)
        .collect();
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        for (n, arguments) in pieces(&call.arguments).into_iter().enumerate() {
            chunks.push(ChatChunk {
                tool_calls: vec![ToolCallDelta {
                    index,
                    id: (n == 0).then(|| call.id.clone()),
                    name: (n == 0).then(|| call.name.clone()),
                    arguments,
                }],
                ..piece(String::new())
            });
        }
    }
    if chunks.is_empty() {
        chunks.push(piece(String::new()));
    }
    if let Some(last) = chunks.last_mut() {
        last.finish_reason = reply.finish_reason;
        last.usage = reply.usage;
    }
    chunks
}

/// A tool call's arguments in at most four pieces, cut on character boundaries.
fn pieces(arguments: &str) -> Vec<String> {
    let size = arguments.len().div_ceil(4).max(16);
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in arguments.chars() {
        cur.push(c);
        if cur.len() >= size {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

use futures_util::StreamExt as _;

/// A unit vector of `dims` values hashed (FNV-1a) from `input`: equal inputs, equal vectors.
#[must_use]
#[allow(clippy::cast_precision_loss)] // a hash folded into [-1, 1]
pub fn simulated_vector(input: &EmbeddingInput, dims: u32) -> Vec<f32> {
    let bytes: Vec<u8> = match input {
        EmbeddingInput::Text(t) => t.as_bytes().to_vec(),
        EmbeddingInput::Tokens(ids) => ids.iter().flat_map(|i| i.to_le_bytes()).collect(),
    };
    let raw: Vec<f32> = (0..dims)
        .map(|k| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(k);
            for b in &bytes {
                h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
            (h % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let norm = raw.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm == 0.0 {
        return raw;
    }
    raw.into_iter().map(|v| v / norm).collect()
}

/// Split text into words, each keeping its trailing space, so the pieces concatenate back.
fn split_keeping_spaces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests;
