//! Field fidelity: the request fields a vendor codec must carry, translate or refuse, and
//! how one vendor supports each ([`Field`], [`Support`], [`FieldSet`]).
//!
//! A vendor codec declares a [`Support`] per [`Field`]; the gateway skips a provider that
//! cannot honour a field the request uses (`ChatRequest::fields_used`), or clears the field
//! for it when the route says `unsupported_fields = "drop"`. `docs/fields.md` is the matrix
//! of those declarations. Does not know any vendor.

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
}

impl Field {
    /// Every field, in declaration order (the order of `docs/fields.md`).
    pub const ALL: [Field; 21] = [
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
        }
    }

    /// True for fields that only tune how one vendor serves a request: leaving one out
    /// changes neither the meaning of the answer nor its format. Only these may be
    /// declared [`Support::Ignored`].
    #[must_use]
    pub fn is_advisory(self) -> bool {
        matches!(
            self,
            Self::ServiceTier | Self::Metadata | Self::User | Self::CacheControl
        )
    }

    fn bit(self) -> u32 {
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
    /// The vendor cannot honour it: the provider is skipped for a request using it (or
    /// the field is cleared and named, on a route that drops unsupported fields).
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
pub struct FieldSet(u32);

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

    /// The fields, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(move |f| self.contains(*f))
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
        Some(match s {
            "none" => Self::None,
            "minimal" => Self::Minimal,
            "low" => Self::Low,
            "medium" => Self::Medium,
            "high" => Self::High,
            _ => return None,
        })
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
}
