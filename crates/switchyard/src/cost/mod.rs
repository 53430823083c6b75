//! Money, prices and budget arithmetic.
//!
//! Owns per-model prices
//! ([`Price`], integer micro-dollars per million tokens, so `tokens × price` is exact), the
//! shipped price table (`prices.json`, exact-id lookup, no prefix guessing, with each
//! model's output limit), a request's worst case for reservations (`estimate`), and the
//! pure reservation arithmetic ([`BudgetState`]). Where budget state is stored (memory,
//! Redis) is `state`'s business; the exact money type ([`Money`], integer pico-dollars)
//! is `money`'s, re-exported here.

mod estimate;

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::chat::Usage;
pub use crate::money::{Decimal, Money};

pub use estimate::{
    estimate_cost, estimate_input_tokens, estimate_sent_input_tokens, ESTIMATE_TOKENS_FOR_TOOL_USE,
    ESTIMATE_TOKENS_PER_IMAGE_MIN, ESTIMATE_TOKENS_PER_MESSAGE, ESTIMATE_TOKENS_PER_TOOL,
    ESTIMATE_TOKENS_PER_UNSIZED_IMAGE,
};

/// A price in integer micro-dollars per million tokens.
///
/// `None` cached/cache-write prices fall back to the input price, and a `None` 1-hour
/// cache-write price to the cache-write price (see [`Price::cost`]). A [`LongContext`]
/// tier, when present, replaces every rate for a call whose input is above its threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    /// Plain input tokens.
    pub input_micros_per_mtok: u64,
    /// Output tokens (reasoning included).
    pub output_micros_per_mtok: u64,
    /// Input tokens read from the prompt cache.
    pub cached_input_micros_per_mtok: Option<u64>,
    /// Input tokens written to the prompt cache: Anthropic's 5-minute writes, or the
    /// vendor's only cache-write price (OpenAI's 30-minute writes).
    pub cache_write_micros_per_mtok: Option<u64>,
    /// Input tokens written to the prompt cache for one hour (Anthropic's `ttl: "1h"`).
    #[serde(default)]
    pub cache_write_1h_micros_per_mtok: Option<u64>,
    /// Dearer rates for calls with a long prompt.
    #[serde(default)]
    pub long_context: Option<LongContext>,
}

/// The rates of a call whose input tokens (cached and cache-written included) are
/// **above** `above_input_tokens`: every token of such a call, output included, is priced
/// here (Gemini's "prompts > 200k tokens", Anthropic's and OpenAI's long-context tiers).
/// `None` rates fall back as in [`Price`], to this tier's input price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LongContext {
    /// The tier applies above this many input tokens (a call of exactly this many is
    /// priced at the base rates).
    pub above_input_tokens: u64,
    /// Plain input tokens.
    pub input_micros_per_mtok: u64,
    /// Output tokens (reasoning included).
    pub output_micros_per_mtok: u64,
    /// Cache reads.
    pub cached_input_micros_per_mtok: Option<u64>,
    /// Cache writes (5-minute, or the vendor's only kind).
    pub cache_write_micros_per_mtok: Option<u64>,
    /// 1-hour cache writes.
    pub cache_write_1h_micros_per_mtok: Option<u64>,
}

/// One tier's rates with every fallback resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rates {
    input: u64,
    output: u64,
    cached: u64,
    write: u64,
    write_1h: u64,
}

impl Rates {
    fn new(
        input: u64,
        output: u64,
        cached: Option<u64>,
        write: Option<u64>,
        write_1h: Option<u64>,
    ) -> Self {
        let write = write.unwrap_or(input);
        Self {
            input,
            output,
            cached: cached.unwrap_or(input),
            write,
            write_1h: write_1h.unwrap_or(write),
        }
    }

    /// The dearer of each rate.
    fn max(self, other: Rates) -> Rates {
        Rates {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cached: self.cached.max(other.cached),
            write: self.write.max(other.write),
            write_1h: self.write_1h.max(other.write_1h),
        }
    }

    /// The dearest rate an input token can be billed at (plain, cache read or either
    /// cache write: the vendor decides which applies).
    fn dearest_input(self) -> u64 {
        self.input
            .max(self.cached)
            .max(self.write)
            .max(self.write_1h)
    }
}

impl LongContext {
    fn rates(&self) -> Rates {
        Rates::new(
            self.input_micros_per_mtok,
            self.output_micros_per_mtok,
            self.cached_input_micros_per_mtok,
            self.cache_write_micros_per_mtok,
            self.cache_write_1h_micros_per_mtok,
        )
    }
}

/// A price given in dollars could not be represented exactly.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("price {value} is not a non-negative number with at most 6 decimal places")]
pub struct PriceError {
    /// The offending value.
    pub value: f64,
}

/// Dollars per MTok → exact micro-dollars per MTok.
///
/// # Errors
/// When the value is negative, not finite, or has more than 6 decimal places.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn usd_per_mtok_to_micros(value: f64) -> Result<u64, PriceError> {
    let scaled = value * 1e6;
    if !scaled.is_finite() || !(0.0..=1e15).contains(&scaled) {
        return Err(PriceError { value });
    }
    let rounded = scaled.round();
    // only float noise may separate the value from whole micro-dollars
    if (scaled - rounded).abs() > scaled.max(1.0) * 8.0 * f64::EPSILON {
        return Err(PriceError { value });
    }
    Ok(rounded as u64)
}

impl Price {
    /// A price from dollars per million tokens (no 1-hour cache-write rate, no
    /// long-context tier: set those fields after).
    ///
    /// # Errors
    /// When any value is not representable (see [`usd_per_mtok_to_micros`]).
    pub fn from_usd_per_mtok(
        input: f64,
        output: f64,
        cached_input: Option<f64>,
        cache_write: Option<f64>,
    ) -> Result<Self, PriceError> {
        Ok(Self {
            input_micros_per_mtok: usd_per_mtok_to_micros(input)?,
            output_micros_per_mtok: usd_per_mtok_to_micros(output)?,
            cached_input_micros_per_mtok: cached_input.map(usd_per_mtok_to_micros).transpose()?,
            cache_write_micros_per_mtok: cache_write.map(usd_per_mtok_to_micros).transpose()?,
            cache_write_1h_micros_per_mtok: None,
            long_context: None,
        })
    }

    fn base(&self) -> Rates {
        Rates::new(
            self.input_micros_per_mtok,
            self.output_micros_per_mtok,
            self.cached_input_micros_per_mtok,
            self.cache_write_micros_per_mtok,
            self.cache_write_1h_micros_per_mtok,
        )
    }

    /// The tier a call with `input_tokens` input tokens is billed in: the long-context
    /// tier's when the input is above its threshold, else the base rates.
    fn rates_for(&self, input_tokens: u64) -> Rates {
        match &self.long_context {
            Some(lc) if input_tokens > lc.above_input_tokens => lc.rates(),
            _ => self.base(),
        }
    }

    /// The exact cost of `usage` at this price: the tier from its input tokens (cached and
    /// cache-written included), then uncached input, cache reads, 5-minute and 1-hour cache
    /// writes and output (reasoning included) each at their rate.
    #[must_use]
    pub fn cost(&self, usage: &Usage) -> Money {
        self.cost_of_calls(usage, 1)
    }

    /// The exact cost of `usage` summed over `calls` calls of one prompt (the calls of a
    /// request whose `n` answers a vendor without `n` gives one per call): each call is
    /// billed in the tier of its own input, the sum's input over `calls` (the calls send
    /// the same prompt, so each reports the same input), never in the tier of the sum.
    /// Within a tier the cost is linear, so this is the sum of the calls' costs. `calls`
    /// of 0 counts as 1.
    #[must_use]
    pub fn cost_of_calls(&self, usage: &Usage, calls: u32) -> Money {
        let r = self.rates_for(usage.input_tokens / u64::from(calls.max(1)));
        let write_1h = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
        let write_5m = usage.cache_write_tokens - write_1h;
        let picos = mul(usage.uncached_input_tokens(), r.input)
            + mul(usage.cached_input_tokens, r.cached)
            + mul(write_5m, r.write)
            + mul(write_1h, r.write_1h)
            + mul(usage.output_tokens, r.output);
        Money::from_picos(i64::try_from(picos).unwrap_or(i64::MAX))
    }

    /// The most `input_tokens` and `output_tokens` can cost: every input token at the
    /// dearest input-side rate (plain, cache read or either cache write, since the vendor
    /// decides which applies), every output token at the output rate. When `input_tokens`
    /// is above the long-context threshold, each rate is the dearer of the two tiers.
    #[must_use]
    pub fn worst_case(&self, input_tokens: u64, output_tokens: u64) -> Money {
        self.worst_case_of_calls(1, input_tokens, output_tokens)
    }

    /// The most `calls` calls of `input_tokens` and `output_tokens` each can cost:
    /// `calls` times [`Price::worst_case`] (saturating). A request whose `n` answers a
    /// vendor without `n` serves by `n` calls reserves this, each call reading the whole
    /// prompt.
    #[must_use]
    pub fn worst_case_of_calls(&self, calls: u32, input_tokens: u64, output_tokens: u64) -> Money {
        let r = match &self.long_context {
            Some(lc) if input_tokens > lc.above_input_tokens => self.base().max(lc.rates()),
            _ => self.base(),
        };
        let one = mul(input_tokens, r.dearest_input()) + mul(output_tokens, r.output);
        let picos = one.saturating_mul(u128::from(calls));
        Money::from_picos(i64::try_from(picos).unwrap_or(i64::MAX))
    }

    /// The cost of a nominal call of 1k input and 1k output tokens (for `cheapest` routing).
    #[must_use]
    pub fn nominal_cost(&self) -> Money {
        self.cost(&Usage {
            input_tokens: 1000,
            output_tokens: 1000,
            ..Usage::default()
        })
    }

    /// The rates `vendor` bills for a chat model that this price leaves out (so those
    /// tokens fall back to a dearer or cheaper rate than the vendor charges): a cached-input
    /// rate for OpenAI, Anthropic and Gemini; 5-minute and 1-hour cache-write rates for
    /// Anthropic; the same in a long-context tier. Empty for other vendors.
    #[must_use]
    pub fn missing_rates(&self, vendor: &str) -> Vec<&'static str> {
        let (cached, writes) = match vendor {
            "openai" | "gemini" => (true, false),
            "anthropic" => (true, true),
            _ => return Vec::new(),
        };
        let base = (
            self.cached_input_micros_per_mtok,
            self.cache_write_micros_per_mtok,
            self.cache_write_1h_micros_per_mtok,
        );
        let long = self.long_context.map(|lc| {
            (
                lc.cached_input_micros_per_mtok,
                lc.cache_write_micros_per_mtok,
                lc.cache_write_1h_micros_per_mtok,
            )
        });
        let tiers = [
            (
                ["cached input", "cache write", "1-hour cache write"],
                Some(base),
            ),
            (
                [
                    "long-context cached input",
                    "long-context cache write",
                    "long-context 1-hour cache write",
                ],
                long,
            ),
        ];
        let mut missing = Vec::new();
        for (names, rates) in tiers {
            let Some((c, w, h)) = rates else { continue };
            if cached && c.is_none() {
                missing.push(names[0]);
            }
            if writes && w.is_none() {
                missing.push(names[1]);
            }
            if writes && h.is_none() {
                missing.push(names[2]);
            }
        }
        missing
    }
}

fn mul(tokens: u64, micros_per_mtok: u64) -> u128 {
    u128::from(tokens) * u128::from(micros_per_mtok)
}

/// One row of the price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceEntry {
    /// The exact model id.
    pub id: String,
    /// `openai`, `anthropic`, `gemini`, ...
    pub vendor: String,
    /// The price.
    pub price: Price,
    /// The most output tokens (reasoning included) one call of the model can produce, as
    /// the vendor publishes it: what a request without `max_tokens` may cost at most.
    pub max_output_tokens: Option<u32>,
    /// Where the numbers came from.
    pub source: String,
    /// Caveats (tiers and the like).
    pub note: Option<String>,
    /// The model is an embeddings model (`"api": "embeddings"` in the file): a provider
    /// of it serves embeddings unless configured otherwise.
    pub embeddings: bool,
    /// Whether the model takes reasoning controls (`"reasoning": false` in the file for a
    /// model the vendor documents as not reasoning; `None`: not stated, taken as yes).
    pub reasoning: Option<bool>,
}

/// Model prices by exact id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    /// The date the prices were read.
    pub as_of: String,
    entries: HashMap<String, PriceEntry>,
}

/// The shipped table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    /// Not valid JSON of the expected shape.
    #[error("prices.json: {0}")]
    Json(#[from] serde_json::Error),
    /// A price is not representable exactly.
    #[error("prices.json: model {id}: {source}")]
    Price {
        /// The model.
        id: String,
        /// Why.
        source: PriceError,
    },
    /// The same id twice.
    #[error("prices.json: model {0} listed twice")]
    Duplicate(String),
    /// An output limit that is zero, absurd, or has no source; an unknown `api`.
    #[error("prices.json: model {id}: {reason}")]
    Limit {
        /// The model.
        id: String,
        /// Why.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFile {
    as_of: String,
    #[allow(dead_code)] // documented in the file; always USD
    currency: String,
    #[allow(dead_code)]
    unit: String,
    models: Vec<PricesFileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFileEntry {
    id: String,
    vendor: String,
    /// `"embeddings"` for an embeddings model; absent for chat models.
    api: Option<String>,
    input_per_mtok: f64,
    output_per_mtok: f64,
    cached_input_per_mtok: Option<f64>,
    cache_write_per_mtok: Option<f64>,
    /// 1-hour cache writes (Anthropic).
    cache_write_1h_per_mtok: Option<f64>,
    /// Rates above a prompt-size threshold.
    long_context: Option<LongContextFileEntry>,
    max_output_tokens: Option<u32>,
    /// `false` for a model that does not take reasoning controls.
    reasoning: Option<bool>,
    source: String,
    /// Where `max_output_tokens` came from (required with it).
    max_output_tokens_source: Option<String>,
    note: Option<String>,
}

/// `long_context` in `prices.json`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LongContextFileEntry {
    above_input_tokens: u64,
    input_per_mtok: f64,
    output_per_mtok: f64,
    cached_input_per_mtok: Option<f64>,
    cache_write_per_mtok: Option<f64>,
    cache_write_1h_per_mtok: Option<f64>,
}

impl LongContextFileEntry {
    fn to_tier(&self) -> Result<LongContext, PriceError> {
        let opt = |v: Option<f64>| v.map(usd_per_mtok_to_micros).transpose();
        Ok(LongContext {
            above_input_tokens: self.above_input_tokens,
            input_micros_per_mtok: usd_per_mtok_to_micros(self.input_per_mtok)?,
            output_micros_per_mtok: usd_per_mtok_to_micros(self.output_per_mtok)?,
            cached_input_micros_per_mtok: opt(self.cached_input_per_mtok)?,
            cache_write_micros_per_mtok: opt(self.cache_write_per_mtok)?,
            cache_write_1h_micros_per_mtok: opt(self.cache_write_1h_per_mtok)?,
        })
    }
}

impl PricesFileEntry {
    /// The exact price, with its 1-hour cache-write rate and long-context tier.
    fn price(&self) -> Result<Price, PriceError> {
        let mut price = Price::from_usd_per_mtok(
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
        )?;
        price.cache_write_1h_micros_per_mtok = self
            .cache_write_1h_per_mtok
            .map(usd_per_mtok_to_micros)
            .transpose()?;
        price.long_context = self
            .long_context
            .as_ref()
            .map(LongContextFileEntry::to_tier)
            .transpose()?;
        Ok(price)
    }

    /// The output limit, checked: positive, plausible, and sourced.
    fn output_limit(&self) -> Result<Option<u32>, PriceTableError> {
        let Some(limit) = self.max_output_tokens else {
            return Ok(None);
        };
        let reason = if limit == 0 {
            "max_output_tokens must be at least 1"
        } else if u64::from(limit) > Usage::MAX_PLAUSIBLE_TOKENS {
            "max_output_tokens is above any model's output limit"
        } else if self
            .max_output_tokens_source
            .as_deref()
            .is_none_or(str::is_empty)
        {
            "max_output_tokens needs a max_output_tokens_source"
        } else {
            return Ok(Some(limit));
        };
        Err(PriceTableError::Limit {
            id: self.id.clone(),
            reason: reason.to_owned(),
        })
    }
}

static BUILTIN: OnceLock<PriceTable> = OnceLock::new();

impl PriceTable {
    /// The table shipped with this version of the library (`prices.json`).
    #[must_use]
    pub fn builtin() -> &'static PriceTable {
        BUILTIN.get_or_init(|| {
            // The embedded file is checked by a unit test; an unreadable one is a build bug.
            Self::from_json(include_str!("../prices.json")).unwrap_or_default()
        })
    }

    /// Parse a table in `prices.json`'s format.
    ///
    /// # Errors
    /// On malformed JSON, an unrepresentable price or a duplicate id.
    pub fn from_json(text: &str) -> Result<Self, PriceTableError> {
        let file: PricesFile = serde_json::from_str(text)?;
        let mut entries = HashMap::with_capacity(file.models.len());
        for m in file.models {
            let price = m.price().map_err(|source| PriceTableError::Price {
                id: m.id.clone(),
                source,
            })?;
            if let Some(api) = m.api.as_deref().filter(|a| *a != "embeddings") {
                return Err(PriceTableError::Limit {
                    id: m.id.clone(),
                    reason: format!("api {api:?} is not \"embeddings\" (chat models omit it)"),
                });
            }
            let entry = PriceEntry {
                max_output_tokens: m.output_limit()?,
                id: m.id.clone(),
                vendor: m.vendor,
                price,
                source: m.source,
                note: m.note,
                embeddings: m.api.as_deref() == Some("embeddings"),
                reasoning: m.reasoning,
            };
            if entries.insert(m.id.clone(), entry).is_some() {
                return Err(PriceTableError::Duplicate(m.id));
            }
        }
        Ok(Self {
            as_of: file.as_of,
            entries,
        })
    }

    /// The price of exactly this model id, if listed.
    #[must_use]
    pub fn lookup(&self, model: &str) -> Option<&PriceEntry> {
        self.entries.get(model)
    }

    /// Every entry, sorted by id.
    #[must_use]
    pub fn entries(&self) -> Vec<&PriceEntry> {
        let mut v: Vec<_> = self.entries.values().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }
}

/// A budget's books: limit, settled spend and outstanding reservations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BudgetState {
    /// The most that may be spent.
    pub limit: Money,
    /// Settled spend.
    pub spent: Money,
    /// Reserved by requests in flight.
    pub reserved: Money,
}

impl BudgetState {
    /// A fresh budget.
    #[must_use]
    pub fn new(limit: Money) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Reserve `amount` if spend plus reservations plus it stays within the limit.
    pub fn try_reserve(&mut self, amount: Money) -> bool {
        if self.spent + self.reserved + amount > self.limit {
            return false;
        }
        self.reserved += amount;
        true
    }

    /// Replace a reservation by the real cost.
    pub fn settle(&mut self, reserved: Money, actual: Money) {
        self.reserved = self.reserved.saturating_sub(reserved);
        self.spent += actual;
    }

    /// Give a reservation back (the call failed: nothing is billed).
    pub fn release(&mut self, reserved: Money) {
        self.reserved = self.reserved.saturating_sub(reserved);
    }

    /// What is left after spend and reservations.
    #[must_use]
    pub fn remaining(&self) -> Money {
        self.limit.saturating_sub(self.spent + self.reserved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_exact_per_token() {
        let p = Price::from_usd_per_mtok(3.0, 15.0, Some(0.3), Some(3.75)).unwrap();
        let u = Usage {
            input_tokens: 1_000,
            output_tokens: 100,
            cached_input_tokens: 400,
            cache_write_tokens: 100,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        // 500×3 + 400×0.3 + 100×3.75 + 100×15 micro-dollars per MTok-token = pico-dollars
        let expect = 500 * 3_000_000 + 400 * 300_000 + 100 * 3_750_000 + 100 * 15_000_000;
        assert_eq!(p.cost(&u), Money::from_picos(expect));
        assert_eq!(p.cost(&u).to_string(), "$0.003495");
    }

    #[test]
    fn sums_of_small_costs_do_not_drift() {
        let p = Price::from_usd_per_mtok(0.1, 0.1, None, None).unwrap();
        let one = p.cost(&Usage {
            input_tokens: 1,
            ..Usage::default()
        });
        let total: Money = std::iter::repeat_n(one, 10_000_000).sum();
        assert_eq!(total, Money::from_usd(1.0));
    }

    #[test]
    fn prices_with_too_many_decimals_are_rejected() {
        assert_eq!(usd_per_mtok_to_micros(0.075), Ok(75_000));
        assert!(usd_per_mtok_to_micros(0.000_000_1).is_err());
        assert!(usd_per_mtok_to_micros(1_000.000_000_1).is_err());
        assert_eq!(usd_per_mtok_to_micros(12_000.0), Ok(12_000_000_000));
        assert!(usd_per_mtok_to_micros(-1.0).is_err());
    }

    #[test]
    fn builtin_table_loads_and_has_exact_ids_only() {
        let table = PriceTable::from_json(include_str!("../prices.json")).unwrap();
        assert!(!table.as_of.is_empty());
        assert!(table.entries().len() >= 20);
        assert!(table.lookup("gpt-4o-mini").is_some());
        // no prefix guessing: a made-up suffix is unknown
        assert!(table.lookup("gpt-4o-mini-my-finetune").is_none());
    }

    #[test]
    fn embeddings_models_are_marked_and_priced_for_input_only() {
        let table = PriceTable::from_json(include_str!("../prices.json")).unwrap();
        for (id, micros) in [
            ("text-embedding-3-small", 20_000),
            ("text-embedding-3-large", 130_000),
            ("text-embedding-ada-002", 100_000),
            ("gemini-embedding-001", 150_000),
        ] {
            let e = table.lookup(id).unwrap();
            assert!(e.embeddings, "{id}");
            assert_eq!(e.price.input_micros_per_mtok, micros, "{id}");
            assert_eq!(e.price.output_micros_per_mtok, 0, "{id}");
        }
        assert!(!table.lookup("gpt-4o-mini").unwrap().embeddings);
        let bad = r#"{"as_of":"x","currency":"USD","unit":"u","models":[{"id":"m","vendor":"v","api":"embedding","input_per_mtok":1.0,"output_per_mtok":0.0,"source":"s"}]}"#;
        let err = PriceTable::from_json(bad).unwrap_err().to_string();
        assert!(err.contains(r#"api "embedding""#), "{err}");
    }

    #[test]
    fn budget_refuses_once_spend_plus_reservations_would_pass_it() {
        let mut b = BudgetState::new(Money::from_usd(1.0));
        assert!(b.try_reserve(Money::from_usd(0.6)));
        assert!(!b.try_reserve(Money::from_usd(0.5)));
        b.settle(Money::from_usd(0.6), Money::from_usd(0.2));
        assert!(b.try_reserve(Money::from_usd(0.5)));
        b.release(Money::from_usd(0.5));
        assert_eq!(b.remaining(), Money::from_usd(0.8));
    }

    #[test]
    fn estimate_bounds_input_by_bytes_and_output_by_what_is_allowed() {
        let req = crate::chat::ChatRequest::from_prompt("héllo");
        assert_eq!(estimate_input_tokens(&req), 6 + ESTIMATE_TOKENS_PER_MESSAGE);
        let p = Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap();
        assert_eq!(
            estimate_cost(&req, &p, 10),
            Money::from_picos((14 * 1_000_000) + 10 * 2_000_000)
        );
    }

    #[test]
    fn every_shipped_model_has_a_sourced_output_limit() {
        let table = PriceTable::from_json(include_str!("../prices.json")).unwrap();
        // embeddings models produce no output tokens: nothing to limit
        for e in table.entries().into_iter().filter(|e| !e.embeddings) {
            let limit = e
                .max_output_tokens
                .unwrap_or_else(|| panic!("{}: no limit", e.id));
            assert!((1_000..=1_000_000).contains(&limit), "{}: {limit}", e.id);
        }
        let limit = |id: &str| table.lookup(id).and_then(|e| e.max_output_tokens);
        assert_eq!(limit("gpt-4o-mini"), Some(16_384));
        assert_eq!(limit("claude-haiku-4-5"), Some(64_000));
        assert_eq!(limit("gemini-2.5-flash"), Some(65_536));
    }

    #[test]
    fn the_shipped_table_marks_the_models_that_do_not_reason() {
        let table = PriceTable::from_json(include_str!("../prices.json")).unwrap();
        let reasoning = |id: &str| table.lookup(id).unwrap().reasoning;
        for id in [
            "gpt-4o",
            "gpt-4o-mini-2024-07-18",
            "gpt-4.1",
            "gpt-4.1-mini",
        ] {
            assert_eq!(reasoning(id), Some(false), "{id}");
        }
        // unstated: taken as reasoning, as before the flag existed
        for id in ["gpt-5", "o3", "claude-sonnet-4-5", "gemini-2.5-flash"] {
            assert_eq!(reasoning(id), None, "{id}");
        }
    }

    #[test]
    fn an_output_limit_must_be_positive_plausible_and_sourced() {
        let entry = |limit: &str, source: &str| {
            format!(
                r#"{{"as_of":"x","currency":"USD","unit":"per 1M tokens","models":[{{"id":"m","vendor":"v","input_per_mtok":1.0,"output_per_mtok":2.0,"max_output_tokens":{limit},"source":"s"{source},"note":null}}]}}"#
            )
        };
        let ok = PriceTable::from_json(&entry("8192", r#","max_output_tokens_source":"u""#));
        assert_eq!(
            ok.unwrap().lookup("m").unwrap().max_output_tokens,
            Some(8192)
        );
        for (limit, source, why) in [
            ("0", r#","max_output_tokens_source":"u""#, "at least 1"),
            (
                "4000000000",
                r#","max_output_tokens_source":"u""#,
                "above any model",
            ),
            ("8192", "", "needs a max_output_tokens_source"),
        ] {
            let err = PriceTable::from_json(&entry(limit, source)).unwrap_err();
            assert!(err.to_string().contains(why), "{limit}: {err}");
        }
    }

    fn usage(input: u64, cached: u64, write: u64, write_1h: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
            cache_write_tokens: write,
            cache_write_1h_tokens: write_1h,
            reasoning_tokens: 0,
        }
    }

    fn shipped(id: &str) -> Price {
        PriceTable::builtin().lookup(id).unwrap().price
    }

    /// Claude Haiku 5.5 as shipped: $0.10 in, $0.50 out, $0.01 cache reads, $0.125 / $0.20
    /// 5-minute / 1-hour writes; above 100K prompt tokens $0.50, $2.50, $0.05, $0.625, $1.
    #[test]
    fn ledger_prices_cache_reads_and_both_cache_writes_at_their_rates() {
        let p = shipped("claude-haiku-5-5");
        // 20k plain × 0.10 + 20k read × 0.01 + 6k 5m × 0.125 + 4k 1h × 0.20 + 3k out × 0.50
        // = 0.002 + 0.0002 + 0.00075 + 0.0008 + 0.0015
        let u = usage(50_000, 20_000, 10_000, 4_000, 3_000);
        assert_eq!(p.cost(&u).to_string(), "$0.00525");
        // all writes 1-hour: 10k × 0.20 instead of 6k × 0.125 + 4k × 0.20
        let u = usage(50_000, 20_000, 10_000, 10_000, 3_000);
        assert_eq!(p.cost(&u).to_string(), "$0.0057");
        // a 1-hour count above the write total is capped at it (never billed twice)
        let u = usage(50_000, 20_000, 10_000, 99_000, 3_000);
        assert_eq!(p.cost(&u).to_string(), "$0.0057");
    }

    #[test]
    fn ledger_picks_the_long_context_tier_above_the_threshold_only() {
        let p = shipped("claude-haiku-5-5");
        // below: 99,999 × 0.10 + 1k × 0.50
        assert_eq!(
            p.cost(&usage(99_999, 0, 0, 0, 1_000)).to_string(),
            "$0.0104999"
        );
        // at: 100k × 0.10 + 1k × 0.50
        assert_eq!(
            p.cost(&usage(100_000, 0, 0, 0, 1_000)).to_string(),
            "$0.0105"
        );
        // above: 100,001 × 0.50 + 1k × 2.50, every token at the long rates
        assert_eq!(
            p.cost(&usage(100_001, 0, 0, 0, 1_000)).to_string(),
            "$0.0525005"
        );
        // above, with cache traffic: 30k × 0.50 + 100k × 0.05 + 15k × 0.625 + 5k × 1
        // + 10k × 2.50 = 0.015 + 0.005 + 0.009375 + 0.005 + 0.025
        let u = usage(150_000, 100_000, 20_000, 5_000, 10_000);
        assert_eq!(p.cost(&u).to_string(), "$0.059375");
        // cache reads and writes count toward the threshold (the whole prompt)
        let u = usage(100_001, 100_001, 0, 0, 0);
        assert_eq!(p.cost(&u).to_string(), "$0.00500005");
    }

    /// The calls of a fanned-out request each send the whole prompt: their summed usage is
    /// billed in the tier of one call's input, never in the tier of the sum.
    #[test]
    fn summed_calls_are_billed_in_the_tier_of_one_call() {
        let p = shipped("claude-haiku-5-5");
        let one = usage(60_000, 0, 0, 0, 1_000);
        let two = one.plus(one); // 120k input: above the 100k threshold as a sum
        assert_eq!(p.cost_of_calls(&two, 2), p.cost(&one) + p.cost(&one));
        assert!(
            p.cost(&two) > p.cost_of_calls(&two, 2),
            "one call of 120k is long"
        );
        assert_eq!(
            p.cost_of_calls(&one, 0),
            p.cost(&one),
            "0 calls counts as 1"
        );
        // reservations: n times one call's worst case, saturating
        assert_eq!(
            p.worst_case_of_calls(3, 60_000, 1_000),
            Money::from_picos(3 * (60_000 * 200_000 + 1_000 * 500_000))
        );
        assert_eq!(
            p.worst_case_of_calls(u32::MAX, u64::MAX / 4, u64::MAX / 4),
            Money::from_picos(i64::MAX)
        );
    }

    /// Reasoning tokens are already inside `output_tokens`: they change nothing in the sum.
    #[test]
    fn reasoning_tokens_are_billed_once_as_output() {
        let p = shipped("gemini-2.5-pro");
        let mut u = usage(1_000, 0, 0, 0, 2_000);
        let plain = p.cost(&u);
        u.reasoning_tokens = 1_500;
        assert_eq!(p.cost(&u), plain);
        // 1k × 1.25 + 2k × 10
        assert_eq!(plain.to_string(), "$0.02125");
    }

    #[test]
    fn reservations_use_the_dearest_rate_of_every_tier_that_may_apply() {
        let p = shipped("claude-haiku-5-5");
        // at or below the threshold the bound cannot reach the long tier: the 1h write
        // rate ($0.20) is the dearest input rate, output at $0.50
        assert_eq!(
            p.worst_case(100_000, 1_000),
            Money::from_picos(100_000 * 200_000 + 1_000 * 500_000)
        );
        // above it: the long tier's 1h write ($1) and output ($2.50)
        assert_eq!(
            p.worst_case(100_001, 1_000),
            Money::from_picos(100_001 * 1_000_000 + 1_000 * 2_500_000)
        );
        // a tier cheaper than the base (never shipped) cannot lower the bound
        let mut odd = Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap();
        odd.long_context = Some(LongContext {
            above_input_tokens: 10,
            input_micros_per_mtok: 500_000,
            output_micros_per_mtok: 3_000_000,
            ..LongContext::default()
        });
        assert_eq!(
            odd.worst_case(11, 1),
            Money::from_picos(11 * 1_000_000 + 3_000_000)
        );
    }

    #[test]
    fn fallbacks_inside_a_tier_use_that_tier_s_rates() {
        let mut p = Price::from_usd_per_mtok(1.0, 2.0, Some(0.1), Some(1.25)).unwrap();
        // no 1h rate: 1-hour writes at the cache-write rate
        assert_eq!(
            p.cost(&usage(100, 0, 100, 100, 0)),
            Money::from_picos(100 * 1_250_000)
        );
        p.long_context = Some(LongContext {
            above_input_tokens: 50,
            input_micros_per_mtok: 3_000_000,
            output_micros_per_mtok: 4_000_000,
            ..LongContext::default()
        });
        // the tier has no cached or write rates: its own input rate, not the base's
        assert_eq!(
            p.cost(&usage(100, 40, 60, 10, 0)),
            Money::from_picos(100 * 3_000_000)
        );
    }

    #[test]
    fn every_shipped_chat_model_has_the_rates_its_vendor_bills() {
        let table = PriceTable::from_json(include_str!("../prices.json")).unwrap();
        for e in table.entries().into_iter().filter(|e| !e.embeddings) {
            let missing = e.price.missing_rates(&e.vendor);
            assert!(missing.is_empty(), "{}: no {missing:?}", e.id);
        }
        // and the check notices what is left out
        let mut p = Price::from_usd_per_mtok(3.0, 15.0, None, Some(3.75)).unwrap();
        assert_eq!(
            p.missing_rates("anthropic"),
            ["cached input", "1-hour cache write"]
        );
        assert_eq!(p.missing_rates("gemini"), ["cached input"]);
        assert_eq!(p.missing_rates("openai"), ["cached input"]);
        assert!(p.missing_rates("mistral").is_empty());
        p.cached_input_micros_per_mtok = Some(300_000);
        p.long_context = Some(LongContext::default());
        assert_eq!(p.missing_rates("gemini"), ["long-context cached input"]);
    }

    #[test]
    fn the_file_reads_one_hour_writes_and_long_context_tiers() {
        let file = |extra: &str| {
            format!(
                r#"{{"as_of":"x","currency":"USD","unit":"u","models":[{{"id":"m","vendor":"gemini","input_per_mtok":1.25,"output_per_mtok":10.0,"cached_input_per_mtok":0.125{extra},"source":"s"}}]}}"#
            )
        };
        let t = PriceTable::from_json(&file(
            r#","cache_write_1h_per_mtok":2.5,"long_context":{"above_input_tokens":200000,"input_per_mtok":2.5,"output_per_mtok":15.0,"cached_input_per_mtok":0.25}"#,
        ))
        .unwrap();
        let p = t.lookup("m").unwrap().price;
        assert_eq!(p.cache_write_1h_micros_per_mtok, Some(2_500_000));
        assert_eq!(
            p.long_context,
            Some(LongContext {
                above_input_tokens: 200_000,
                input_micros_per_mtok: 2_500_000,
                output_micros_per_mtok: 15_000_000,
                cached_input_micros_per_mtok: Some(250_000),
                cache_write_micros_per_mtok: None,
                cache_write_1h_micros_per_mtok: None,
            })
        );
        let typo =
            file(r#","long_context":{"above_tokens":1,"input_per_mtok":1,"output_per_mtok":1}"#);
        assert!(PriceTable::from_json(&typo).is_err());
        let inexact = file(
            r#","long_context":{"above_input_tokens":1,"input_per_mtok":0.0000001,"output_per_mtok":1}"#,
        );
        let err = PriceTable::from_json(&inexact).unwrap_err().to_string();
        assert!(err.contains("model m"), "{err}");
    }
}
