//! A provider that follows a script, for pipeline tests.
//!
//! Owns [`ScriptedProvider`]: each call takes the next [`Step`] (reply, fail, wait then
//! act, hang, or stream a list of [`StreamStep`]s); when the script runs out it repeats its
//! `otherwise` step. It records when each call started (tokio time, so paused tests can
//! assert on conduct) and how many calls are still in flight. Its listing health check
//! follows a script of its own (same [`Step`]s; a reply passes), counted apart from calls.
//! Embeddings calls take steps from the same script: a reply (of any kind) answers with
//! [`scripted_vector`]s and one input token per input byte. Built [`fanning_out`], it
//! stands in for a vendor without `n`: a request for `n` > 1 answers is `n` calls (each
//! its own step) merged by [`super::fanout`], as the HTTP providers of such vendors do.
//!
//! [`fanning_out`]: ScriptedProvider::fanning_out

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use tokio::time::Instant;

use super::{fanout, ChunkStream, Provider};
use crate::chat::{
    ChatChunk, ChatRequest, Field, FieldSet, FinishReason, ProviderReply, Support, Usage,
};
use crate::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};

/// What one call does.
#[allow(clippy::large_enum_variant)] // a test script: written once, read once
#[derive(Debug, Clone)]
pub enum Step {
    /// Answer at once.
    Reply(ProviderReply),
    /// Fail at once.
    Fail(ProviderError),
    /// Wait, then do the inner step.
    After(Duration, Box<Step>),
    /// Never answer (until cancelled).
    Hang,
    /// Answer a stream call with these steps (a `send` gets the concatenated text).
    Stream(Vec<StreamStep>),
}

/// One step of a scripted stream.
#[allow(clippy::large_enum_variant)] // a test script: written once, read once
#[derive(Debug, Clone)]
pub enum StreamStep {
    /// Yield a chunk.
    Chunk(ChatChunk),
    /// Wait.
    Wait(Duration),
    /// Yield an error (ends the stream).
    Fail(ProviderError),
    /// Stop yielding without ending the stream.
    Hang,
    /// End the stream here (no finish signal unless a chunk carried one).
    End,
}

impl Step {
    /// A text reply with 10 input and `text.len()` output tokens, finish `stop`.
    #[must_use]
    pub fn text(text: &str) -> Step {
        Step::Reply(ProviderReply {
            text: text.to_owned(),
            finish_reason: Some(FinishReason::Stop),
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: text.len() as u64,
                ..Usage::default()
            }),
            ..ProviderReply::default()
        })
    }

    /// A failure of `kind`.
    #[must_use]
    pub fn fail(kind: ErrorKind) -> Step {
        Step::Fail(ProviderError::new(kind, format!("scripted {kind}")))
    }

    /// A 429 with a Retry-After.
    #[must_use]
    pub fn rate_limited(retry_after: Duration) -> Step {
        Step::Fail(
            ProviderError::new(ErrorKind::RateLimited, "scripted rate limit")
                .with_status(429)
                .with_retry_after(Some(retry_after)),
        )
    }

    /// Wait, then do `self`.
    #[must_use]
    pub fn after(self, wait: Duration) -> Step {
        Step::After(wait, Box::new(self))
    }

    /// A stream of `words` (each a chunk), the last carrying finish `stop` and usage.
    #[must_use]
    pub fn stream_words(words: &[&str]) -> Step {
        let last = words.len().saturating_sub(1);
        Step::Stream(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    StreamStep::Chunk(ChatChunk {
                        text: (*w).to_owned(),
                        finish_reason: (i == last).then_some(FinishReason::Stop),
                        usage: (i == last).then_some(Usage {
                            input_tokens: 10,
                            output_tokens: words.len() as u64,
                            ..Usage::default()
                        }),
                        ..ChatChunk::default()
                    })
                })
                .collect(),
        )
    }
}

/// A provider driven by a script.
#[derive(Debug)]
pub struct ScriptedProvider {
    model: String,
    /// The script and the record of calls, shared with a fanned-out stream's later calls.
    calls: Arc<Calls>,
    otherwise: Step,
    /// Serves `n` > 1 answers by `n` calls ([`ScriptedProvider::fanning_out`]).
    fans_out: bool,
    embed_requests: Mutex<Vec<EmbeddingRequest>>,
    /// The health check's script, its step once that runs out, and when each check started.
    health: Mutex<VecDeque<Step>>,
    health_otherwise: Step,
    health_checks: Mutex<Vec<Instant>>,
    /// Its field declarations (`Provider::support`); `None` takes every field.
    support: Option<fn(Field) -> Support>,
    /// The fields it claims it cannot honour together (see [`Provider::cannot_honour`]).
    clashes: Option<fn(&ChatRequest) -> FieldSet>,
    /// The native-body kind it claims to take (see [`Provider::native_kind`]).
    native_kind: Option<&'static str>,
}

impl ScriptedProvider {
    /// A provider for `model` that, unscripted, answers `"ok from <model>"`.
    #[must_use]
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            calls: Arc::default(),
            otherwise: Step::text(&format!("ok from {model}")),
            fans_out: false,
            embed_requests: Mutex::new(Vec::new()),
            health: Mutex::new(VecDeque::new()),
            health_otherwise: Step::text("ok"),
            health_checks: Mutex::new(Vec::new()),
            support: None,
            clashes: None,
            native_kind: None,
        }
    }

    /// Builder: declare fields as `support` does (a vendor codec's table, e.g.
    /// `<AnthropicCodec as Codec>::support`), to stand in for that vendor.
    #[must_use]
    pub fn declaring(mut self, support: fn(Field) -> Support) -> Self {
        self.support = Some(support);
        self
    }

    /// Builder: stand in for a vendor without `n`: a request for `n` > 1 answers is `n`
    /// calls for one answer each (each takes its own step, in script order as they start),
    /// at most [`fanout::CALLS_AT_ONCE`] at once, merged into one answer or stream.
    #[must_use]
    pub fn fanning_out(mut self) -> Self {
        self.fans_out = true;
        self
    }

    /// Builder: claim it cannot honour the fields `clashes` names together, for one
    /// request (a vendor codec's `cannot_honour`, to stand in for it).
    #[must_use]
    pub fn clashing(mut self, clashes: fn(&ChatRequest) -> FieldSet) -> Self {
        self.clashes = Some(clashes);
        self
    }

    /// Builder: claim to take native bodies of `kind` (the scripted answers are the same).
    #[must_use]
    pub fn taking_native(mut self, kind: &'static str) -> Self {
        self.native_kind = Some(kind);
        self
    }

    /// Builder: append a step to the health check's script (a reply passes).
    #[must_use]
    pub fn then_health(self, step: Step) -> Self {
        self.push_health(step);
        self
    }

    /// Builder: what the health check does once its script runs out (default: pass).
    #[must_use]
    pub fn health_otherwise(mut self, step: Step) -> Self {
        self.health_otherwise = step;
        self
    }

    /// Append a step to a live provider's health-check script.
    pub fn push_health(&self, step: Step) {
        if let Ok(mut s) = self.health.lock() {
            s.push_back(step);
        }
    }

    /// When each health check started.
    #[must_use]
    pub fn health_check_times(&self) -> Vec<Instant> {
        self.health_checks
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Builder: append a step.
    #[must_use]
    pub fn then(self, step: Step) -> Self {
        self.push(step);
        self
    }

    /// Builder: append `n` copies of a step.
    #[must_use]
    pub fn then_n(self, n: usize, step: &Step) -> Self {
        for _ in 0..n {
            self.push(step.clone());
        }
        self
    }

    /// Builder: what to do once the script runs out.
    #[must_use]
    pub fn otherwise(mut self, step: Step) -> Self {
        self.otherwise = step;
        self
    }

    /// Append a step to a live provider.
    pub fn push(&self, step: Step) {
        if let Ok(mut s) = self.calls.script.lock() {
            s.push_back(step);
        }
    }

    /// How many calls were made.
    #[must_use]
    pub fn calls(&self) -> usize {
        self.calls.started.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// When each call started.
    #[must_use]
    pub fn call_times(&self) -> Vec<Instant> {
        (self.calls.started.lock())
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Calls started and not yet finished or cancelled.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.calls.in_flight.load(Ordering::SeqCst)
    }

    /// The requests received, in order (a fanned-out request: each call's).
    #[must_use]
    pub fn requests(&self) -> Vec<ChatRequest> {
        (self.calls.requests.lock())
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The embeddings requests received, in order.
    #[must_use]
    pub fn embed_requests(&self) -> Vec<EmbeddingRequest> {
        self.embed_requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The answers a request needs as that many calls (see [`Self::fanning_out`]).
    fn fanned_out(&self, req: &ChatRequest) -> Option<u32> {
        fanout::answers(req).filter(|_| self.fans_out)
    }

    /// One call's step, recorded.
    fn next_step(&self, req: &ChatRequest) -> (Step, InFlight) {
        self.calls.next(Some(req), &self.otherwise)
    }

    /// One non-streaming call.
    async fn send_one(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let (step, _guard) = self.next_step(req);
        match settle(step).await? {
            Ok(reply) => Ok(reply),
            Err(steps) => collect_stream(steps),
        }
    }
}

/// The script and the record of the calls made from it.
#[derive(Debug, Default)]
struct Calls {
    script: Mutex<VecDeque<Step>>,
    /// When each call started.
    started: Mutex<Vec<Instant>>,
    in_flight: Arc<AtomicUsize>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Calls {
    /// Start a call (of `req`, when it is a chat call): its step (`otherwise` once the
    /// script is out), and the guard counting it in flight.
    fn next(&self, req: Option<&ChatRequest>, otherwise: &Step) -> (Step, InFlight) {
        if let (Some(req), Ok(mut r)) = (req, self.requests.lock()) {
            r.push(req.clone());
        }
        if let Ok(mut c) = self.started.lock() {
            c.push(Instant::now());
        }
        let step = (self.script.lock().ok())
            .and_then(|mut s| s.pop_front())
            .unwrap_or_else(|| otherwise.clone());
        (step, InFlight::enter(&self.in_flight))
    }
}

/// Counts a call as in flight until dropped (finished or cancelled).
#[derive(Debug)]
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(counter))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A streamed call playing `step` (a reply is one chunk), counted in flight by `guard`
/// until the stream ends or is dropped.
async fn play(step: Step, guard: InFlight) -> Result<ChunkStream, ProviderError> {
    let steps = match settle(step).await? {
        Ok(reply) => vec![StreamStep::Chunk(super::reply_as_chunk(reply))],
        Err(steps) => steps,
    };
    let stream = futures_util::stream::unfold(
        (steps.into_iter(), guard, false),
        |(mut steps, guard, done)| async move {
            if done {
                return None;
            }
            loop {
                match steps.next()? {
                    StreamStep::Chunk(c) => return Some((Ok(c), (steps, guard, false))),
                    StreamStep::Wait(d) => tokio::time::sleep(d).await,
                    StreamStep::Fail(e) => return Some((Err(e), (steps, guard, true))),
                    StreamStep::Hang => std::future::pending::<()>().await,
                    StreamStep::End => return None,
                }
            }
        },
    );
    Ok(stream.boxed())
}

/// Run a step up to the point where a reply, an error or a stream script is known.
async fn settle(mut step: Step) -> Result<Result<ProviderReply, Vec<StreamStep>>, ProviderError> {
    loop {
        match step {
            Step::Reply(r) => return Ok(Ok(r)),
            Step::Fail(e) => return Err(e),
            Step::After(wait, inner) => {
                tokio::time::sleep(wait).await;
                step = *inner;
            }
            Step::Hang => std::future::pending::<()>().await,
            Step::Stream(steps) => return Ok(Err(steps)),
        }
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn native_kind(&self) -> Option<&'static str> {
        self.native_kind
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn support(&self, field: Field) -> Support {
        self.support.map_or(Support::Native, |s| s(field))
    }

    fn calls_for(&self, req: &ChatRequest) -> u32 {
        self.fanned_out(req).unwrap_or(1)
    }

    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        self.clashes.map_or(FieldSet::EMPTY, |c| c(req))
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let Some(n) = self.fanned_out(req) else {
            return self.send_one(req).await;
        };
        let one = &fanout::single(req);
        fanout::send(n, move || self.send_one(one)).await
    }

    async fn stream(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let Some(n) = self.fanned_out(req) else {
            let (step, guard) = self.next_step(req);
            return play(step, guard).await;
        };
        let (calls, otherwise) = (Arc::clone(&self.calls), self.otherwise.clone());
        let one = fanout::single(req);
        let open: fanout::Open = Arc::new(move || {
            let (step, guard) = calls.next(Some(&one), &otherwise);
            Box::pin(play(step, guard))
        });
        fanout::stream(n, open).await
    }

    async fn embed(&self, req: &EmbeddingRequest) -> Result<EmbeddingReply, ProviderError> {
        if let Ok(mut r) = self.embed_requests.lock() {
            r.push(req.clone());
        }
        let (step, _guard) = self.calls.next(None, &self.otherwise);
        let _reply = settle(step).await?;
        let dims = req.dimensions.unwrap_or(3) as usize;
        Ok(EmbeddingReply {
            vectors: (req.inputs.iter())
                .map(|i| scripted_vector(&self.model, i, dims))
                .collect(),
            model: None,
            usage: Some(Usage {
                input_tokens: req.input_token_bound(),
                ..Usage::default()
            }),
        })
    }

    async fn check_health(&self) -> Result<(), ProviderError> {
        if let Ok(mut c) = self.health_checks.lock() {
            c.push(Instant::now());
        }
        let step = self
            .health
            .lock()
            .ok()
            .and_then(|mut s| s.pop_front())
            .unwrap_or_else(|| self.health_otherwise.clone());
        settle(step).await.map(|_| ())
    }
}

/// The vector a scripted provider for `model` gives `input`: `dims` values, the first the
/// input's length, the rest the model name's length plus the position (so tests can tell
/// which provider answered which input).
#[must_use]
#[allow(clippy::cast_precision_loss)] // small test numbers
pub fn scripted_vector(model: &str, input: &EmbeddingInput, dims: usize) -> Vec<f32> {
    (0..dims)
        .map(|k| match k {
            0 => input.token_bound() as f32,
            _ => (model.len() + k) as f32,
        })
        .collect()
}

/// A `send` of a stream script: the concatenation, or the first error.
fn collect_stream(steps: Vec<StreamStep>) -> Result<ProviderReply, ProviderError> {
    let mut reply = ProviderReply::default();
    for step in steps {
        match step {
            StreamStep::Chunk(c) => {
                reply.text.push_str(&c.text);
                reply.finish_reason = c.finish_reason.or(reply.finish_reason);
                reply.usage = c.usage.or(reply.usage);
            }
            StreamStep::Fail(e) => return Err(e),
            StreamStep::Wait(_) | StreamStep::Hang | StreamStep::End => {}
        }
    }
    Ok(reply)
}
