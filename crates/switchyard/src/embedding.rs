//! The shared shape of embeddings: what a caller asks to embed, what one provider returns,
//! and what the gateway answers (the vectors with who answered, the cost and the trail).
//!
//! Part of the vocabulary: depends on `chat` (its [`Usage`]), `money` and `trail` only.
//! Vendors' wire formats are their codecs' (`provider/<vendor>/embed.rs`); the attempt
//! loop that produces an [`EmbeddingResponse`] is the gateway's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::chat::Usage;
use crate::money::Money;
use crate::trail::Attempt;

/// The most inputs one request may carry (OpenAI's own limit per embeddings request).
pub const MAX_INPUTS: usize = 2048;

/// The most `dimensions` a request may ask for: above every current model's (3,072 for
/// OpenAI's and Gemini's largest), so that a request cannot make a provider that builds
/// vectors itself (simulated, scripted) allocate without bound.
pub const MAX_DIMENSIONS: u32 = 8192;

/// One thing to embed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EmbeddingInput {
    /// Text.
    Text(String),
    /// Token ids of the model's tokenizer (OpenAI accepts these; other vendors do not).
    Tokens(Vec<u32>),
}

impl EmbeddingInput {
    /// An upper bound on this input's tokens: a token id is one token; a text token is
    /// never shorter than one byte (the same bound as `cost::estimate_input_tokens`).
    #[must_use]
    pub fn token_bound(&self) -> u64 {
        let n = match self {
            Self::Text(t) => t.len(),
            Self::Tokens(t) => t.len(),
        };
        u64::try_from(n).unwrap_or(u64::MAX)
    }
}

/// What a caller asks to embed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingRequest {
    /// The inputs, in order; the reply has one vector per input, in the same order.
    pub inputs: Vec<EmbeddingInput>,
    /// Truncate each vector to this many dimensions (models that support it).
    pub dimensions: Option<u32>,
    /// An end-user id passed to vendors that take one.
    pub user: Option<String>,
}

impl EmbeddingRequest {
    /// A request to embed `texts`.
    #[must_use]
    pub fn texts<S: AsRef<str>>(texts: &[S]) -> Self {
        Self {
            inputs: texts
                .iter()
                .map(|t| EmbeddingInput::Text(t.as_ref().to_owned()))
                .collect(),
            ..Self::default()
        }
    }

    /// Builder: the output dimensions.
    #[must_use]
    pub fn dimensions(mut self, n: u32) -> Self {
        self.dimensions = Some(n);
        self
    }

    /// An upper bound on the request's input tokens, for budget reservations.
    #[must_use]
    pub fn input_token_bound(&self) -> u64 {
        self.inputs
            .iter()
            .map(EmbeddingInput::token_bound)
            .fold(0, u64::saturating_add)
    }
}

/// One provider's answer to an embeddings call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EmbeddingReply {
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// The model the vendor says answered (`None`: the configured one).
    pub model: Option<String>,
    /// Input tokens as the vendor reported them (`None`: the vendor reports none).
    pub usage: Option<Usage>,
}

/// The gateway's answer to an embeddings request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmbeddingResponse {
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// The provider (configured name) that answered.
    pub provider: String,
    /// The model that answered.
    pub model: String,
    /// Another provider was tried or skipped before this one.
    pub failed_over: bool,
    /// Usage as reported (`None`: the vendor reports none).
    pub usage: Option<Usage>,
    /// Exact cost; `None` when the price or the usage is unknown.
    pub cost: Option<Money>,
    /// Every try and skip, in order.
    pub attempts: Vec<Attempt>,
    /// Time inside the gateway.
    pub latency: Duration,
}

/// What one provider's embeddings calls for a request have produced so far, kept across
/// the attempts of its turn: the vectors of the inputs already embedded (by the range of
/// inputs each call carried), so a retry sends only what is missing, and the usage of every
/// call that was answered (each one billed, used or not), so a turn that fails still knows
/// what it spent.
#[derive(Debug, Clone, Default)]
pub struct EmbeddingProgress {
    /// Vectors by the first input of the call that produced them: (end of its range, one
    /// vector per input).
    done: std::collections::BTreeMap<usize, (usize, Vec<Vec<f32>>)>,
    /// Usage summed over the answered calls.
    usage: Usage,
    /// Some answered call reported no usage.
    unreported: bool,
    /// The token bound of the inputs the answered calls carried.
    bound: u64,
    /// Answered calls.
    calls: u32,
    /// The model the first answered call named.
    model: Option<String>,
}

impl EmbeddingProgress {
    /// Whether the inputs `range` are embedded already.
    #[must_use]
    pub fn has(&self, range: &std::ops::Range<usize>) -> bool {
        self.done
            .get(&range.start)
            .is_some_and(|(end, _)| *end == range.end)
    }

    /// An answered call for the inputs `range` of `req`: its usage counted (it was billed),
    /// its vectors kept when there is one per input. False when they are not (the call is
    /// then to be made again).
    pub fn record(
        &mut self,
        req: &EmbeddingRequest,
        range: std::ops::Range<usize>,
        reply: EmbeddingReply,
    ) -> bool {
        self.calls = self.calls.saturating_add(1);
        let inputs = req.inputs.get(range.clone()).unwrap_or_default();
        let bound = inputs.iter().map(EmbeddingInput::token_bound);
        self.bound = bound.fold(self.bound, u64::saturating_add);
        match reply.usage {
            Some(u) => self.usage = self.usage.plus(u),
            None => self.unreported = true,
        }
        if self.model.is_none() {
            self.model = reply.model;
        }
        if reply.vectors.len() != range.len() {
            return false;
        }
        self.done.insert(range.start, (range.end, reply.vectors));
        true
    }

    /// The whole answer once every one of `ranges` is embedded (taking the vectors): in
    /// input order, usage summed over every answered call (`None` if one reported none).
    pub fn finish(&mut self, ranges: &[std::ops::Range<usize>]) -> Option<EmbeddingReply> {
        if !ranges.iter().all(|r| self.has(r)) {
            return None;
        }
        let mut vectors = Vec::new();
        for r in ranges {
            vectors.extend(
                self.done
                    .remove(&r.start)
                    .map(|(_, v)| v)
                    .unwrap_or_default(),
            );
        }
        Some(EmbeddingReply {
            vectors,
            model: self.model.clone(),
            usage: self.usage(),
        })
    }

    /// Calls answered so far.
    #[must_use]
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Usage summed over the answered calls; `None` when there were none, or one of them
    /// reported none.
    #[must_use]
    pub fn usage(&self) -> Option<Usage> {
        (self.calls > 0 && !self.unreported).then_some(self.usage)
    }

    /// An upper bound on the answered calls' input tokens (their inputs' token bounds), for
    /// pricing calls that reported no usage.
    #[must_use]
    pub fn input_bound(&self) -> u64 {
        self.bound
    }
}
