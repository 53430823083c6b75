//! The demo's scenario file: schema, the tutorial's defaults, and validation.
//!
//! Owns [`Scenario`] (what `switchyard demo --scenario FILE.toml` reads), the tutorial's own
//! scenario ([`Scenario::tutorial`]), and every check on the values, each problem naming its
//! field. Does not run anything: `replay` turns a valid scenario into a gateway.

use std::path::Path;

use crate::simulated::{SimulatedConfig, SimulatedProvider};
use serde::Deserialize;

use super::DemoError;

/// A demo run: how many requests, what they ask, the gateway's policy, and the providers.
///
/// Missing keys take the tutorial's values; `providers` is required.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Requests sent through the gateway, one after another.
    #[serde(default = "defaults::requests")]
    pub requests: u64,
    /// Each request's `max_tokens` (the simulated providers bill it).
    #[serde(default = "defaults::max_tokens")]
    pub max_tokens: u32,
    /// Each request's prompt; `{i}` becomes the request's index.
    #[serde(default = "defaults::prompt")]
    pub prompt: String,
    /// Attempts per provider turn, first try included (the tutorial's name).
    #[serde(default = "defaults::retries_per_provider")]
    pub retries_per_provider: u32,
    /// Consecutive failed turns that open a provider's circuit.
    #[serde(default = "defaults::breaker_threshold")]
    pub breaker_threshold: u32,
    /// Requests an open circuit stays open after the one that opened it.
    #[serde(default = "defaults::breaker_cooldown_requests")]
    pub breaker_cooldown_requests: u64,
    /// The providers, in the order the gateway tries them.
    pub providers: Vec<ProviderScenario>,
}

/// One simulated provider of a scenario (the tutorial's `SimulatedProvider` arguments).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderScenario {
    /// Unique name: shown in texts, breaker key.
    pub name: String,
    /// Probability that a call fails ("<name> timed out").
    pub failure_rate: f64,
    /// `[lo, hi]`: a success's latency is drawn uniformly from this range, in ms.
    pub latency_range_ms: [f64; 2],
    /// Dollars per 1k `max_tokens`.
    pub cost_per_1k_tokens: f64,
    /// Seed of the provider's own `random.Random`.
    pub seed: u64,
}

/// The tutorial's values for keys a scenario leaves out.
mod defaults {
    pub fn requests() -> u64 {
        40
    }
    pub fn max_tokens() -> u32 {
        200
    }
    pub fn prompt() -> String {
        "request-{i}".to_owned()
    }
    pub fn retries_per_provider() -> u32 {
        2
    }
    pub fn breaker_threshold() -> u32 {
        3
    }
    pub fn breaker_cooldown_requests() -> u64 {
        5
    }
}

impl ProviderScenario {
    /// The library's configuration for this provider (reports latency without waiting).
    #[must_use]
    pub fn simulated_config(&self) -> SimulatedConfig {
        SimulatedConfig {
            name: self.name.clone(),
            failure_rate: self.failure_rate,
            latency_range_ms: (self.latency_range_ms[0], self.latency_range_ms[1]),
            cost_per_1k_tokens: self.cost_per_1k_tokens,
            seed: self.seed,
            sleep_scale: None,
        }
    }

    /// A fresh provider, its generator at the start of its seed.
    #[must_use]
    pub fn provider(&self) -> SimulatedProvider {
        SimulatedProvider::new(self.simulated_config())
    }

    /// Problems with this provider's values, each prefixed with `at` (its path).
    fn problems(&self, at: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.name.is_empty() {
            out.push(format!("{at}.name must not be empty"));
        }
        if !(0.0..=1.0).contains(&self.failure_rate) {
            out.push(format!(
                "{at}.failure_rate must be between 0 and 1, got {}",
                self.failure_rate
            ));
        }
        let [lo, hi] = self.latency_range_ms;
        if !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && hi <= MAX_LATENCY_MS) {
            out.push(format!(
                "{at}.latency_range_ms must lie within [0, {MAX_LATENCY_MS}] ms, got [{lo}, {hi}]"
            ));
        } else if lo > hi {
            out.push(format!(
                "{at}.latency_range_ms: lo {lo} is greater than hi {hi}"
            ));
        }
        if self.provider().price().is_err() {
            out.push(format!(
                "{at}.cost_per_1k_tokens = {}: the price per million tokens (1000 times it) must \
                 be a non-negative number with at most 6 decimal places",
                self.cost_per_1k_tokens
            ));
        }
        out
    }
}

/// The longest latency a simulated provider may report: one day, in ms.
const MAX_LATENCY_MS: f64 = 86_400_000.0;

impl Scenario {
    /// The tutorial's run: aurora (35% failures, 150–300 ms, $0.002/1k, seed 42) first,
    /// borealis (5%, 400–700 ms, $0.012/1k, seed 7) as the fallback, 40 requests.
    #[must_use]
    pub fn tutorial() -> Self {
        Self {
            requests: defaults::requests(),
            max_tokens: defaults::max_tokens(),
            prompt: defaults::prompt(),
            retries_per_provider: defaults::retries_per_provider(),
            breaker_threshold: defaults::breaker_threshold(),
            breaker_cooldown_requests: defaults::breaker_cooldown_requests(),
            providers: vec![tutorial_aurora(), tutorial_borealis()],
        }
    }

    /// Read, parse and validate a scenario file.
    ///
    /// # Errors
    /// The file cannot be read, is not valid TOML for this schema (unknown keys included),
    /// or has bad values (every problem listed, each naming its field).
    pub fn load(path: &Path) -> Result<Self, DemoError> {
        let text = std::fs::read_to_string(path).map_err(|source| DemoError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|e| e.in_file(path))
    }

    /// Parse and validate scenario text.
    ///
    /// # Errors
    /// As [`Scenario::load`], without the file.
    pub fn parse(text: &str) -> Result<Self, DemoError> {
        let scenario: Self =
            toml::from_str(text).map_err(|e| DemoError::Parse(e.to_string().trim().to_owned()))?;
        let problems = scenario.problems();
        if problems.is_empty() {
            Ok(scenario)
        } else {
            Err(DemoError::Invalid(problems))
        }
    }

    /// Every problem with the values, each naming its field.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.retries_per_provider == 0 {
            out.push("retries_per_provider must be at least 1".to_owned());
        }
        if self.breaker_threshold == 0 {
            out.push("breaker_threshold must be at least 1".to_owned());
        }
        if self.providers.is_empty() {
            out.push("providers: at least one [[providers]] entry is required".to_owned());
        }
        for (i, p) in self.providers.iter().enumerate() {
            let at = format!("providers[{i}]");
            if self.providers[..i].iter().any(|q| q.name == p.name) {
                out.push(format!("{at}.name: provider {:?} is defined twice", p.name));
            }
            out.extend(p.problems(&at));
        }
        out
    }

    /// The prompt of request `index`.
    #[must_use]
    pub fn prompt_for(&self, index: u64) -> String {
        self.prompt.replace("{i}", &index.to_string())
    }
}

/// The tutorial's primary: cheap, fast, flaky.
#[must_use]
pub fn tutorial_aurora() -> ProviderScenario {
    ProviderScenario {
        name: "aurora".to_owned(),
        failure_rate: 0.35,
        latency_range_ms: [150.0, 300.0],
        cost_per_1k_tokens: 0.002,
        seed: 42,
    }
}

/// The tutorial's fallback: slower, dearer, reliable.
fn tutorial_borealis() -> ProviderScenario {
    ProviderScenario {
        name: "borealis".to_owned(),
        failure_rate: 0.05,
        latency_range_ms: [400.0, 700.0],
        cost_per_1k_tokens: 0.012,
        seed: 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROVIDER: &str = "[[providers]]\nname = \"a\"\nfailure_rate = 0.1\n\
                            latency_range_ms = [1, 2]\ncost_per_1k_tokens = 0.002\nseed = 1\n";

    #[test]
    fn missing_keys_take_the_tutorials_values() {
        let s = Scenario::parse(PROVIDER).unwrap();
        let t = Scenario::tutorial();
        assert_eq!(
            (s.requests, s.max_tokens, s.prompt.as_str()),
            (t.requests, t.max_tokens, t.prompt.as_str())
        );
        assert_eq!(
            (
                s.retries_per_provider,
                s.breaker_threshold,
                s.breaker_cooldown_requests
            ),
            (2, 3, 5)
        );
        assert_eq!(s.providers[0].latency_range_ms, [1.0, 2.0]);
        assert_eq!(s.prompt_for(7), "request-7");
    }

    #[test]
    fn the_tutorial_scenario_is_valid() {
        assert!(Scenario::tutorial().problems().is_empty());
    }

    #[test]
    fn bad_values_are_all_reported_by_field() {
        let text = format!(
            "retries_per_provider = 0\nbreaker_threshold = 0\n{PROVIDER}{}",
            PROVIDER
                .replace("[1, 2]", "[5, 2]")
                .replace("0.002", "0.0000000001")
                .replace("0.1", "1.5")
        );
        let DemoError::Invalid(problems) = Scenario::parse(&text).unwrap_err() else {
            panic!("expected invalid values");
        };
        let all = problems.join("\n");
        for field in [
            "retries_per_provider",
            "breaker_threshold",
            "providers[1].name",
            "providers[1].failure_rate",
            "providers[1].latency_range_ms",
            "providers[1].cost_per_1k_tokens",
        ] {
            assert!(all.contains(field), "{field} missing from:\n{all}");
        }
    }

    #[test]
    fn unknown_keys_and_missing_providers_are_rejected() {
        let err = Scenario::parse(&format!("retries = 2\n{PROVIDER}")).unwrap_err();
        assert!(err.to_string().contains("retries"), "{err}");
        let err = Scenario::parse("requests = 3\n").unwrap_err();
        assert!(err.to_string().contains("providers"), "{err}");
    }
}
