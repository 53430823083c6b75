//! A provider's `health_check` table: validated with its path, then turned into the
//! library's [`HealthCheck`] for the checkers `serve` starts (`crate::cli::serve::checks`).

use std::time::Duration;

use switchyard::health::{HealthCheck, Probe};

use super::{Config, HealthCheckToml, Problems};

/// The shortest period between checks.
const MIN_EVERY: Duration = Duration::from_secs(1);

/// Check one `health_check` table; problems go under `at` (`providers[0].health_check`).
pub(super) fn validate(check: &HealthCheckToml, at: &str, p: &mut Problems) {
    let every = p.duration(format!("{at}.every"), check.every.as_deref());
    let timeout = p.duration(format!("{at}.timeout"), check.timeout.as_deref());
    if every.is_some_and(|e| e < MIN_EVERY) {
        p.add(format!("{at}.every"), "must be at least 1s");
    }
    let defaults = HealthCheck::default();
    let (every, timeout) = (
        every.unwrap_or(defaults.every),
        timeout.unwrap_or(defaults.timeout),
    );
    if timeout >= every {
        p.add(
            format!("{at}.timeout"),
            format!("must be shorter than every ({every:?}): a check ends before the next starts"),
        );
    }
    if let Some(probe) = &check.probe {
        if probe_of(probe).is_none() {
            p.add(
                format!("{at}.probe"),
                format!(
                    "{probe:?} is not \"listing\" (free model listing) or \"completion\" (one billed output token)"
                ),
            );
        }
    }
}

fn probe_of(text: &str) -> Option<Probe> {
    match text {
        "listing" => Some(Probe::Listing),
        "completion" => Some(Probe::Completion),
        _ => None,
    }
}

/// Every provider's health check, by provider name, for a validated config (defaults
/// filled in: every 15 s, timeout 5 s, `listing`).
#[must_use]
pub fn health_checks(config: &Config) -> Vec<(String, HealthCheck)> {
    let defaults = HealthCheck::default();
    let d = |v: Option<&str>, default| v.and_then(|t| super::duration(t).ok()).unwrap_or(default);
    config
        .providers
        .iter()
        .filter_map(|prov| {
            let c = prov.health_check.as_ref()?;
            let check = HealthCheck {
                every: d(c.every.as_deref(), defaults.every),
                timeout: d(c.timeout.as_deref(), defaults.timeout),
                probe: c
                    .probe
                    .as_deref()
                    .and_then(probe_of)
                    .unwrap_or(defaults.probe),
            };
            Some((prov.name.clone(), check))
        })
        .collect()
}
