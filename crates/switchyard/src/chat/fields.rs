//! Field fidelity: the request fields a vendor codec must carry, translate or refuse, how
//! one vendor supports each ([`Field`], [`Support`], [`FieldSet`]), and what leaving one
//! out costs the client ([`Class`]).
//!
//! A vendor codec declares a [`Support`] per [`Field`]; each field has one [`Class`]
//! ([`Field::class`]). For a provider that cannot honour a field the request uses
//! (`ChatRequest::fields_used`), the gateway clears a *degradable* field and names it as
//! dropped, and skips the provider for a *contract* field (a route's `unsupported_fields`
//! changes that: `docs/fields.md`). `docs/fields.md` is the matrix of those declarations.
//! Does not know any vendor.

use std::fmt;

/// A request field whose carriage differs between vendors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Field {
    /// `temperature`.
    Temperature,
    /// `top_p`.
    TopP,
    /// `stop` sequences.
    Stop,
    /// Function tools.
    Tools,
    /// `tool_choice`.
    ToolChoice,
    /// `response_format` (JSON object, JSON schema).
    ResponseFormat,
    /// `seed`.
    Seed,
    /// `presence_penalty`.
    PresencePenalty,
    /// `frequency_penalty`.
    FrequencyPenalty,
    /// `logprobs: true`.
    Logprobs,
    /// `top_logprobs`.
    TopLogprobs,
    /// `n` above 1.
    N,
    /// `top_k`.
    TopK,
    /// `parallel_tool_calls: false` (true is every vendor's default, so not a use).
    ParallelToolCalls,
    /// `service_tier`.
    ServiceTier,
    /// `reasoning_effort`.
    ReasoningEffort,
    /// `metadata` (key-value tags).
    Metadata,
    /// `user` (an end-user id).
    User,
    /// A message of the `developer` role.
    DeveloperRole,
    /// Fields the gateway does not model, passed verbatim (a route's `passthrough_unknown`).
    Passthrough,
    /// Prompt-cache breakpoints (`cache_control` on content parts and tools): what to
    /// cache, for a vendor whose caching is explicit (Anthropic); advisory elsewhere.
    CacheControl,
    /// `logit_bias`: token ids made more or less likely (OpenAI's).
    LogitBias,
    /// `verbosity` (Chat Completions) / `text.verbosity` (Responses): a shorter or longer
    /// answer.
    Verbosity,
    /// `prediction`: predicted output content, to answer faster (OpenAI's).
    Prediction,
    /// `store`: the vendor keeps the completion for its own evals and distillation.
    Store,
    /// `prompt_cache_key`: a key grouping requests for the vendor's prompt cache.
    PromptCacheKey,
    /// `prompt_cache_retention`: how long the vendor keeps a cached prefix.
    PromptCacheRetention,
    /// `safety_identifier`: an end-user id for the vendor's abuse detection.
    SafetyIdentifier,
    /// `audio`: spoken output (voice and format), with `modalities` asking for it.
    Audio,
    /// `modalities` other than `["text"]` (audio output).
    Modalities,
    /// `web_search_options`: OpenAI's search models search the web before answering.
    WebSearchOptions,
    /// The deprecated `functions` / `function_call` (answered with `function_call`).
    Functions,
}

/// What leaving a field out costs a client that asked for it: the test is whether the
/// client still gets a valid, useful answer without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// A hint about how to produce the answer (sampling, effort, caching, tags): an answer
    /// without it is still the answer asked for. A provider that cannot honour it gets the
    /// request without it, and the answer names it as dropped.
    Degradable,
    /// The answer's shape or meaning depends on it (tools, formats, log probabilities,
    /// several answers, audio): a provider that cannot honour it is skipped.
    Contract,
}

impl Class {
    /// The word `docs/fields.md` uses.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Degradable => "degradable",
            Self::Contract => "contract",
        }
    }
}

impl Field {
    /// Every field, in declaration order (the order of `docs/fields.md`).
    pub const ALL: [Field; 32] = [
        Self::Temperature,
        Self::TopP,
        Self::Stop,
        Self::Tools,
        Self::ToolChoice,
        Self::ResponseFormat,
        Self::Seed,
        Self::PresencePenalty,
        Self::FrequencyPenalty,
        Self::Logprobs,
        Self::TopLogprobs,
        Self::N,
        Self::TopK,
        Self::ParallelToolCalls,
        Self::ServiceTier,
        Self::ReasoningEffort,
        Self::Metadata,
        Self::User,
        Self::DeveloperRole,
        Self::Passthrough,
        Self::CacheControl,
        Self::LogitBias,
        Self::Verbosity,
        Self::Prediction,
        Self::Store,
        Self::PromptCacheKey,
        Self::PromptCacheRetention,
        Self::SafetyIdentifier,
        Self::Audio,
        Self::Modalities,
        Self::WebSearchOptions,
        Self::Functions,
    ];

    /// The field's name in OpenAI's Chat Completions terms (what errors and headers say).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Temperature => "temperature",
            Self::TopP => "top_p",
            Self::Stop => "stop",
            Self::Tools => "tools",
            Self::ToolChoice => "tool_choice",
            Self::ResponseFormat => "response_format",
            Self::Seed => "seed",
            Self::PresencePenalty => "presence_penalty",
            Self::FrequencyPenalty => "frequency_penalty",
            Self::Logprobs => "logprobs",
            Self::TopLogprobs => "top_logprobs",
            Self::N => "n",
            Self::TopK => "top_k",
            Self::ParallelToolCalls => "parallel_tool_calls",
            Self::ServiceTier => "service_tier",
            Self::ReasoningEffort => "reasoning_effort",
            Self::Metadata => "metadata",
            Self::User => "user",
            Self::DeveloperRole => "developer_role",
            Self::Passthrough => "passthrough",
            Self::CacheControl => "cache_control",
            Self::LogitBias => "logit_bias",
            Self::Verbosity => "verbosity",
            Self::Prediction => "prediction",
            Self::Store => "store",
            Self::PromptCacheKey => "prompt_cache_key",
            Self::PromptCacheRetention => "prompt_cache_retention",
            Self::SafetyIdentifier => "safety_identifier",
            Self::Audio => "audio",
            Self::Modalities => "modalities",
            Self::WebSearchOptions => "web_search_options",
            Self::Functions => "functions",
        }
    }

    /// The field's [`Class`], by the test "does a client that asked for it still get a
    /// valid, useful answer without it?" (`docs/fields.md`, "Classes", says why for the
    /// borderline ones):
    /// - sampling and effort hints, caching, tags and ids are degradable; so are
    ///   `parallel_tool_calls: false` (the client reads a list of tool calls either way)
    ///   and a `developer` message (dropped, it becomes a system message: the instruction
    ///   stays);
    /// - `stop` is a contract: a client that stops the model at a delimiter parses what
    ///   comes before it, and text past it is not the answer it asked for;
    /// - `passthrough` is a contract: the gateway does not know what an unmodelled field
    ///   does, so it cannot say an answer without it is still the one asked for.
    #[must_use]
    pub fn class(self) -> Class {
        match self {
            Self::Stop
            | Self::Tools
            | Self::ToolChoice
            | Self::ResponseFormat
            | Self::Logprobs
            | Self::TopLogprobs
            | Self::N
            | Self::Passthrough
            | Self::Audio
            | Self::Modalities
            | Self::WebSearchOptions
            | Self::Functions => Class::Contract,
            Self::Temperature
            | Self::TopP
            | Self::Seed
            | Self::PresencePenalty
            | Self::FrequencyPenalty
            | Self::TopK
            | Self::ParallelToolCalls
            | Self::ServiceTier
            | Self::ReasoningEffort
            | Self::Metadata
            | Self::User
            | Self::DeveloperRole
            | Self::CacheControl
            | Self::LogitBias
            | Self::Verbosity
            | Self::Prediction
            | Self::Store
            | Self::PromptCacheKey
            | Self::PromptCacheRetention
            | Self::SafetyIdentifier => Class::Degradable,
        }
    }

    /// True for a [`Class::Degradable`] field.
    #[must_use]
    pub fn is_degradable(self) -> bool {
        self.class() == Class::Degradable
    }

    /// True for fields that only tune how one vendor serves a request: leaving one out
    /// changes neither the meaning of the answer nor its format. Only these may be
    /// declared [`Support::Ignored`].
    #[must_use]
    pub fn is_advisory(self) -> bool {
        matches!(
            self,
            Self::ServiceTier
                | Self::Metadata
                | Self::User
                | Self::CacheControl
                | Self::Store
                | Self::PromptCacheKey
                | Self::PromptCacheRetention
                | Self::SafetyIdentifier
        )
    }

    fn bit(self) -> u64 {
        1 << (self as u8)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one vendor carries a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Sent under the vendor's own name for the same thing.
    Native,
    /// Sent as the vendor's equivalent (a documented mapping).
    Translated,
    /// An advisory field the vendor has no place for: not sent, and named in
    /// `x-switchyard-ignored`; the provider is not skipped.
    Ignored,
    /// The vendor cannot honour it: a degradable field is cleared for the provider and
    /// named as dropped; for a contract one the provider is skipped (see [`Class`]).
    Unsupported,
}

impl Support {
    /// The word `docs/fields.md` uses.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Translated => "translated",
            Self::Ignored => "ignored",
            Self::Unsupported => "unsupported",
        }
    }
}

/// A set of [`Field`]s, as bits (copying and testing one is free).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldSet(u64);

impl FieldSet {
    /// No field.
    pub const EMPTY: FieldSet = FieldSet(0);

    /// Add `field`.
    pub fn insert(&mut self, field: Field) {
        self.0 |= field.bit();
    }

    /// Add `field` when `used`.
    pub fn insert_if(&mut self, used: bool, field: Field) {
        if used {
            self.insert(field);
        }
    }

    /// True when `field` is in the set.
    #[must_use]
    pub fn contains(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }

    /// True when the set has no field.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The fields, in declaration order: only the set bits are visited (a field's bit is
    /// its place in [`Field::ALL`]), so an empty set costs one test (every request asks
    /// it of its dropped and ignored fields).
    pub fn iter(self) -> impl Iterator<Item = Field> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let at = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Field::ALL.get(at).copied()
        })
    }

    /// The fields in both sets.
    #[must_use]
    pub fn and(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & other.0)
    }

    /// The fields of this set not in `other`.
    #[must_use]
    pub fn minus(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & !other.0)
    }

    /// The fields of either set.
    #[must_use]
    pub fn union(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 | other.0)
    }

    /// The set's [`Class::Degradable`] fields.
    #[must_use]
    pub fn degradable(self) -> FieldSet {
        self.iter().filter(|f| f.is_degradable()).collect()
    }

    /// The fields for which `support` says `want`.
    #[must_use]
    pub fn with(self, support: impl Fn(Field) -> Support, want: Support) -> FieldSet {
        let mut out = FieldSet::EMPTY;
        for f in self.iter() {
            out.insert_if(support(f) == want, f);
        }
        out
    }

    /// The names, in declaration order.
    #[must_use]
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Field::name).collect()
    }
}

impl FromIterator<Field> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Field>>(iter: I) -> Self {
        let mut set = FieldSet::EMPTY;
        for f in iter {
            set.insert(f);
        }
        set
    }
}

/// How hard a request asks a reasoning model to think (OpenAI's `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No reasoning (OpenAI's `none`).
    None,
    /// The least reasoning that still reasons.
    Minimal,
    /// Little.
    Low,
    /// The default of most reasoning models.
    Medium,
    /// Much.
    High,
}

impl ReasoningEffort {
    /// Every effort, least first.
    pub const ALL: [Self; 5] = [
        Self::None,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
    ];

    /// OpenAI's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// OpenAI's spelling read back; `None` for another word.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// How long an answer a model gives (OpenAI's `verbosity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Short.
    Low,
    /// The default.
    Medium,
    /// Long.
    High,
}

impl Verbosity {
    /// Every verbosity, shortest first.
    pub const ALL: [Self; 3] = [Self::Low, Self::Medium, Self::High];

    /// OpenAI's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// OpenAI's spelling read back; `None` for another word.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_its_own_bit_and_name() {
        let all: FieldSet = Field::ALL.into_iter().collect();
        assert_eq!(all.iter().count(), Field::ALL.len());
        let names: std::collections::HashSet<_> = Field::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), Field::ALL.len());
        let mut one = FieldSet::EMPTY;
        one.insert(Field::Seed);
        assert_eq!(one.names(), ["seed"]);
        assert!(!one.contains(Field::TopK));
    }

    #[test]
    fn output_changing_fields_are_never_advisory() {
        for f in [
            Field::Seed,
            Field::Logprobs,
            Field::N,
            Field::TopK,
            Field::ReasoningEffort,
            Field::Tools,
            Field::ResponseFormat,
            Field::DeveloperRole,
        ] {
            assert!(!f.is_advisory(), "{f}");
        }
    }

    #[test]
    fn every_advisory_field_is_degradable() {
        for f in Field::ALL.into_iter().filter(|f| f.is_advisory()) {
            assert_eq!(f.class(), Class::Degradable, "{f}");
        }
    }

    #[test]
    fn what_shapes_the_answer_is_a_contract_and_hints_degrade() {
        for f in [
            Field::Tools,
            Field::ToolChoice,
            Field::ResponseFormat,
            Field::N,
            Field::Logprobs,
            Field::TopLogprobs,
            Field::Audio,
            Field::Modalities,
            Field::Stop,
            Field::Passthrough,
        ] {
            assert_eq!(f.class(), Class::Contract, "{f}");
        }
        for f in [
            Field::Seed,
            Field::PresencePenalty,
            Field::FrequencyPenalty,
            Field::TopK,
            Field::LogitBias,
            Field::ReasoningEffort,
            Field::ServiceTier,
            Field::Verbosity,
            Field::CacheControl,
            Field::Prediction,
            Field::ParallelToolCalls,
            Field::User,
            Field::Metadata,
            Field::Store,
        ] {
            assert_eq!(f.class(), Class::Degradable, "{f}");
        }
        let mut set = FieldSet::EMPTY;
        set.insert(Field::Seed);
        set.insert(Field::Logprobs);
        assert_eq!(set.degradable().names(), ["seed"]);
        assert_eq!(set.minus(set.degradable()).names(), ["logprobs"]);
    }

    /// `as_str`, `parse` and serde spell each word alike, and nothing else parses.
    #[test]
    fn efforts_and_verbosities_read_back_as_spelled() {
        for e in ReasoningEffort::ALL {
            assert_eq!(ReasoningEffort::parse(e.as_str()), Some(e));
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
        for v in Verbosity::ALL {
            assert_eq!(Verbosity::parse(v.as_str()), Some(v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        for other in ["", "Low", "max", "xhigh", " low"] {
            assert_eq!(ReasoningEffort::parse(other), None, "{other:?}");
            assert_eq!(Verbosity::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_last_field_still_has_a_bit() {
        let last = Field::ALL[Field::ALL.len() - 1];
        let mut set = FieldSet::EMPTY;
        set.insert(last);
        assert!(set.contains(last) && !set.contains(Field::Temperature));
    }

    #[test]
    fn a_fields_bit_is_its_place_in_all_and_iter_keeps_that_order() {
        for (at, f) in Field::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, at, "{f}");
        }
        let set: FieldSet = [Field::Functions, Field::Temperature, Field::Seed, Field::N]
            .into_iter()
            .collect();
        let seen: Vec<Field> = set.iter().collect();
        assert_eq!(
            seen,
            [Field::Temperature, Field::Seed, Field::N, Field::Functions]
        );
        let every: FieldSet = Field::ALL.into_iter().collect();
        assert!(every.iter().eq(Field::ALL));
        assert_eq!(FieldSet::EMPTY.iter().count(), 0);
        assert!(FieldSet::EMPTY.names().is_empty());
    }
}
