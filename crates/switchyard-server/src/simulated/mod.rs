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

use switchyard::chat::{ChatChunk, ChatRequest, ProviderReply, ToolCallDelta, Usage};
use switchyard::cost::{usd_per_mtok_to_micros, Money, Price, PriceError};
use switchyard::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use switchyard::error::{ErrorKind, ProviderError};
use switchyard::provider::{ChunkStream, Provider};

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

    /// What this provider answers `req` (see [`answer`]): decided before the draw, so a
    /// request it must refuse costs no draw.
    fn answer(&self, req: &ChatRequest) -> Result<Answer, ProviderError> {
        answer::answer(&self.cfg.name, req, self.text_for(req))
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
        &self.cfg.name
    }

    /// The simulated provider bills `max_tokens`, [`DEFAULT_MAX_TOKENS`] when unset.
    fn default_max_tokens(&self) -> Option<u32> {
        Some(DEFAULT_MAX_TOKENS)
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let answer = self.answer(req)?;
        match self.draw(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)) {
            Draw::Fail => Err(self.timed_out()),
            Draw::Answer {
                latency_ms,
                cost_usd,
            } => {
                if let Some(wait) = self.scaled(latency_ms) {
                    tokio::time::sleep(wait).await;
                }
                Ok(self.reply(req, answer, latency_ms, cost_usd))
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
        let answer = self.answer(req)?;
        let Draw::Answer {
            latency_ms,
            cost_usd,
        } = self.draw(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
        else {
            return Err(self.timed_out());
        };
        let chunks = chunks(self.reply(req, answer, latency_ms, cost_usd));
        let pause = self
            .scaled(latency_ms)
            .map(|total| total / u32::try_from(chunks.len().max(1)).unwrap_or(1));
        let stream = futures_util::stream::iter(chunks).then(move |chunk| async move {
            if let Some(p) = pause {
                tokio::time::sleep(p).await;
            }
            Ok(chunk)
        });
        Ok(Box::pin(stream))
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
mod tests {
    use switchyard::chat::FinishReason;

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

    fn steady() -> SimulatedProvider {
        SimulatedProvider::new(SimulatedConfig {
            failure_rate: 0.0,
            ..aurora().cfg
        })
    }

    fn with_tool(prompt: &str) -> ChatRequest {
        let mut req = ChatRequest::from_prompt(prompt);
        req.tools = vec![switchyard::chat::Tool {
            name: "get_weather".into(),
            description: None,
            parameters: serde_json::json!({"type": "object", "properties": {
                "city": {"type": "string", "minLength": 40}}, "required": ["city"]}),
            cache_control: None,
        }];
        req
    }

    async fn collect(p: &SimulatedProvider, req: &ChatRequest) -> Vec<ChatChunk> {
        let stream = p.stream(req).await.unwrap();
        stream.map(Result::unwrap).collect().await
    }

    /// A streamed call is the plain call in pieces: the id and name first, the arguments
    /// across several chunks, the finish and usage on the last.
    #[tokio::test]
    async fn a_streamed_tool_call_is_the_plain_one_in_pieces() {
        let p = steady();
        let req = with_tool("Weather in Paris?");
        let plain = p.send(&req).await.unwrap();
        assert_eq!(plain.finish_reason, Some(FinishReason::ToolCalls));
        let call = &plain.tool_calls[0];
        let chunks = collect(&p, &req).await;
        assert!(chunks.len() >= 3, "{chunks:?}");
        let deltas: Vec<&ToolCallDelta> = chunks.iter().flat_map(|c| &c.tool_calls).collect();
        assert_eq!(deltas[0].id.as_deref(), Some(call.id.as_str()));
        assert_eq!(deltas[0].name.as_deref(), Some("get_weather"));
        assert!(deltas[1..].iter().all(|d| d.id.is_none() && d.index == 0));
        let joined: String = deltas.iter().map(|d| d.arguments.as_str()).collect();
        assert_eq!(joined, call.arguments);
        let last = chunks.last().unwrap();
        assert_eq!(last.finish_reason, Some(FinishReason::ToolCalls));
        assert!(last.usage.is_some());
        assert!(chunks.iter().all(|c| c.text.is_empty()));
    }

    #[tokio::test]
    async fn a_plain_stream_is_the_tutorials_text_word_by_word() {
        let chunks = collect(
            &steady(),
            &ChatRequest::from_prompt("Hello there, switchyard"),
        )
        .await;
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["[aurora] ", "Hello ", "there, ", "switchyard..."]);
        assert!(chunks[..3]
            .iter()
            .all(|c| c.finish_reason.is_none() && c.usage.is_none()));
        assert_eq!(chunks[3].finish_reason, Some(FinishReason::Stop));
    }

    /// A request the provider refuses draws nothing: the next request meets the same
    /// outcome it would have met without it.
    #[tokio::test]
    async fn a_refused_request_costs_no_draw() {
        let (p, q) = (aurora(), aurora());
        let mut bad = with_tool("x");
        bad.tool_choice = Some(switchyard::chat::ToolChoice::Tool("nope".into()));
        assert_eq!(p.send(&bad).await.unwrap_err().kind, ErrorKind::BadRequest);
        assert!(p.stream(&bad).await.is_err());
        let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.");
        let (a, b) = (p.send(&req).await.unwrap(), q.send(&req).await.unwrap());
        assert_eq!(a.reported_latency, b.reported_latency);
    }

    #[test]
    fn pieces_concatenate_back() {
        let words = split_keeping_spaces("[a] one two...");
        assert_eq!(words.concat(), "[a] one two...");
        assert_eq!(words.len(), 3);
        let args = "{\"city\": \"Zürich ünd Genève, a long way\"}";
        let parts = pieces(args);
        assert!(parts.len() > 1 && parts.len() <= 4, "{parts:?}");
        assert_eq!(parts.concat(), args);
        assert_eq!(pieces(""), [""]);
    }
}
