//! The tutorial's simulated provider: seeded failures, latencies and costs, no network.
//!
//! Owns a provider that behaves exactly like the tutorial's (docs/tutorial.md): each
//! call draws `random()`; below `failure_rate` it fails with "`<name>` timed out"; otherwise
//! latency = `round(uniform(lo, hi), 1)` ms, cost = `round(max_tokens / 1000 ·
//! cost_per_1k, 5)` and text = `"[" + name + "] " + prompt[:30] + "..."`. By default it reports
//! that latency without waiting (the demo); with `sleep_scale` set it really waits that long
//! times the scale (the server's embedded default, so it feels like a gateway).
//!
//! Embeddings (not in the tutorial) draw the same way (a failure, else a latency) and
//! answer with [`simulated_vector`]s: unit vectors hashed from the input, so equal inputs
//! get equal vectors; `dimensions` (default [`DEFAULT_DIMENSIONS`]) sets their length.
//!
//! Sits below both of its users: `config` builds one for every `kind = "simulated"` entry
//! (the embedded default), and `cli::demo` replays the tutorial on them. Its generator
//! (`pyrandom`) is CPython's; the library knows nothing of either.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use switchyard::chat::{ChatChunk, ChatRequest, FinishReason, ProviderReply, Usage};
use switchyard::cost::{usd_per_mtok_to_micros, Money, Price, PriceError};
use switchyard::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use switchyard::error::{ErrorKind, ProviderError};
use switchyard::provider::{ChunkStream, Provider};

pub mod pyrandom;

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
        Self { cfg, rng }
    }

    /// Its price: `cost_per_1k_tokens` per 1k output tokens, input free (the tutorial
    /// bills `max_tokens` only).
    ///
    /// # Errors
    /// When `cost_per_1k_tokens × 1000` has more than 6 decimal places.
    pub fn price(&self) -> Result<Price, PriceError> {
        Ok(Price {
            input_micros_per_mtok: 0,
            output_micros_per_mtok: usd_per_mtok_to_micros(self.cfg.cost_per_1k_tokens * 1000.0)?,
            cached_input_micros_per_mtok: None,
            cache_write_micros_per_mtok: None,
            ..Price::default()
        })
    }

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

    fn reply(&self, req: &ChatRequest, latency_ms: f64, cost_usd: f64) -> ProviderReply {
        let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let prompt_words = req.prompt_text().split_whitespace().count() as u64;
        ProviderReply {
            text: self.text_for(req),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
            finish_reason: Some(FinishReason::Stop),
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
        &self.cfg.name
    }

    /// The simulated provider bills `max_tokens`, [`DEFAULT_MAX_TOKENS`] when unset.
    fn default_max_tokens(&self) -> Option<u32> {
        Some(DEFAULT_MAX_TOKENS)
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        match self.draw(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)) {
            Draw::Fail => Err(self.timed_out()),
            Draw::Answer {
                latency_ms,
                cost_usd,
            } => {
                if let Some(wait) = self.scaled(latency_ms) {
                    tokio::time::sleep(wait).await;
                }
                Ok(self.reply(req, latency_ms, cost_usd))
            }
        }
    }

    async fn embed(&self, req: &EmbeddingRequest) -> Result<EmbeddingReply, ProviderError> {
        let Draw::Answer { latency_ms, .. } = self.draw(0) else {
            return Err(self.timed_out());
        };
        if let Some(wait) = self.scaled(latency_ms) {
            tokio::time::sleep(wait).await;
        }
        let dims = req.dimensions.unwrap_or(DEFAULT_DIMENSIONS);
        if dims > MAX_SIMULATED_DIMENSIONS {
            return Err(ProviderError::new(
                ErrorKind::BadRequest,
                format!(
                    "{} embeds at most {MAX_SIMULATED_DIMENSIONS} dimensions",
                    self.cfg.name
                ),
            ));
        }
        Ok(EmbeddingReply {
            vectors: (req.inputs.iter())
                .map(|i| simulated_vector(i, dims))
                .collect(),
            model: Some(self.cfg.name.clone()),
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
        let Draw::Answer {
            latency_ms,
            cost_usd,
        } = self.draw(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
        else {
            return Err(self.timed_out());
        };
        let reply = self.reply(req, latency_ms, cost_usd);
        let words: Vec<String> = split_keeping_spaces(&reply.text);
        let pause = self
            .scaled(latency_ms)
            .map(|total| total / u32::try_from(words.len().max(1)).unwrap_or(1));
        let last = words.len().saturating_sub(1);
        let chunks = words.into_iter().enumerate().map(move |(i, text)| {
            let done = i == last;
            ChatChunk {
                text,
                finish_reason: done.then_some(FinishReason::Stop),
                usage: if done { reply.usage } else { None },
                model: reply.model.clone(),
                ..ChatChunk::default()
            }
        });
        let stream = futures_util::stream::iter(chunks).then(move |chunk| async move {
            if let Some(p) = pause {
                tokio::time::sleep(p).await;
            }
            Ok(chunk)
        });
        Ok(Box::pin(stream))
    }
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
mod tests {
    use super::*;

    fn aurora() -> SimulatedProvider {
        SimulatedProvider::new(SimulatedConfig {
            name: "aurora".into(),
            failure_rate: 0.35,
            latency_range_ms: (150.0, 300.0),
            cost_per_1k_tokens: 0.002,
            seed: 42,
            sleep_scale: None,
        })
    }

    /// The tutorial's three-call preview.
    #[tokio::test]
    async fn preview_matches_the_tutorial() {
        let p = aurora();
        let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.");
        let first = p.send(&req).await.unwrap();
        assert_eq!(first.text, "[aurora] Summarize the Q3 shipping repo...");
        assert_eq!(first.reported_latency, Some(Duration::from_micros(153_800)));
        assert_eq!(first.reported_cost, Some(Money::from_usd(0.0004)));
        for _ in 0..2 {
            let err = p.send(&req).await.unwrap_err();
            assert_eq!(err.message, "aurora timed out");
        }
    }

    #[test]
    fn pieces_concatenate_back() {
        let words = split_keeping_spaces("[a] one two...");
        assert_eq!(words.concat(), "[a] one two...");
        assert_eq!(words.len(), 3);
    }
}
