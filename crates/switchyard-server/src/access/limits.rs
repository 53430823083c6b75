//! Per-key limits: budgets per period and requests / tokens per minute.
//!
//! Owns how a client key's `[[keys]]` limits become state-store operations: a budget is a
//! [`Budget`] scope the gateway reserves against (`key:<name>` for a lifetime budget,
//! `key:<name>:day:YYYY-MM-DD` or `key:<name>:month:YYYY-MM` for calendar periods, UTC);
//! `rpm` counts one unit per request before dispatch; `tpm` refuses once the minute's
//! tokens are used up and counts the tokens a call actually used after it. The arithmetic
//! (GCRA) and atomicity are the library's; the store may be shared by a fleet.

use switchyard::clock::UnixMillis;
use switchyard::gateway::{Budget, CallOptions};
use switchyard::state::SharedState;
use switchyard::{Money, Usage};

use crate::access::error::AccessError;

/// A budget's calendar period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Period {
    /// Never resets.
    #[default]
    Total,
    /// Resets at 00:00 UTC.
    Day,
    /// Resets on the 1st, 00:00 UTC.
    Month,
}

impl Period {
    /// From config text.
    #[must_use]
    pub fn parse(text: &str) -> Option<Period> {
        match text {
            "total" => Some(Period::Total),
            "day" | "daily" => Some(Period::Day),
            "month" | "monthly" => Some(Period::Month),
            _ => None,
        }
    }
}

/// One key's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyLimits {
    /// Spend limit and its period.
    pub budget: Option<(Money, Period)>,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Tokens per minute.
    pub tpm: Option<u64>,
    /// The limits of the team the key belongs to (database keys only), shared by every key
    /// of the team: their own budget scope and rate buckets (`team:<id>...`).
    pub team: Option<TeamLimits>,
}

/// A team's limits, applied across its keys (`crate::database`'s teams).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TeamLimits {
    /// The team's id: names its budget scope and rate buckets.
    pub id: i64,
    /// Spend limit and its period.
    pub budget: Option<(Money, Period)>,
    /// Requests per minute, all its keys together.
    pub rpm: Option<u64>,
    /// Tokens per minute, all its keys together.
    pub tpm: Option<u64>,
}

/// The budget scope of key `name` for the period containing `now`.
#[must_use]
pub fn key_scope(name: &str, period: Period, now: UnixMillis) -> String {
    let (y, m, d) = civil_date(now);
    match period {
        Period::Total => format!("key:{name}"),
        Period::Day => format!("key:{name}:day:{y:04}-{m:02}-{d:02}"),
        Period::Month => format!("key:{name}:month:{y:04}-{m:02}"),
    }
}

/// The budget scope of team `id` for the period containing `now`.
#[must_use]
pub fn team_scope(id: i64, period: Period, now: UnixMillis) -> String {
    let (y, m, d) = civil_date(now);
    match period {
        Period::Total => format!("team:{id}"),
        Period::Day => format!("team:{id}:day:{y:04}-{m:02}-{d:02}"),
        Period::Month => format!("team:{id}:month:{y:04}-{m:02}"),
    }
}

fn rpm_bucket(name: &str) -> String {
    format!("key:{name}:rpm")
}

fn tpm_bucket(name: &str) -> String {
    format!("key:{name}:tpm")
}

/// Check a key's rate limits and return the budgets its request spends against
/// ([`admit_rates`], then [`budgets`]).
///
/// # Errors
/// 429 with `Retry-After` when over `rpm` or `tpm`.
pub async fn admit(
    store: &dyn SharedState,
    name: &str,
    limits: &KeyLimits,
    now: UnixMillis,
) -> Result<CallOptions, AccessError> {
    admit_rates(store, name, limits, now).await?;
    Ok(budgets(name, limits, now))
}

/// Check a key's rate limits, counting the request against `rpm`: what can be checked
/// before the request's body is read.
///
/// # Errors
/// 429 with `Retry-After` when over `rpm` or `tpm`.
pub async fn admit_rates(
    store: &dyn SharedState,
    name: &str,
    limits: &KeyLimits,
    now: UnixMillis,
) -> Result<(), AccessError> {
    if let Some(tpm) = limits.tpm {
        if let Err(wait) = store.rate(&tpm_bucket(name), tpm, 0, now).await {
            return Err(AccessError::rate_limited(
                format!("key {name:?} used its {tpm} tokens per minute"),
                wait,
            ));
        }
    }
    if let Some(rpm) = limits.rpm {
        if let Err(wait) = store.rate(&rpm_bucket(name), rpm, 1, now).await {
            return Err(AccessError::rate_limited(
                format!("key {name:?} is limited to {rpm} requests per minute"),
                wait,
            ));
        }
    }
    if let Some(team) = &limits.team {
        admit_team_rates(store, team, now).await?;
    }
    Ok(())
}

/// A team's `tpm` and `rpm`, shared by its keys.
async fn admit_team_rates(
    store: &dyn SharedState,
    team: &TeamLimits,
    now: UnixMillis,
) -> Result<(), AccessError> {
    let id = team.id;
    if let Some(tpm) = team.tpm {
        if let Err(wait) = store.rate(&format!("team:{id}:tpm"), tpm, 0, now).await {
            return Err(AccessError::rate_limited(
                format!("the key's team used its {tpm} tokens per minute"),
                wait,
            ));
        }
    }
    if let Some(rpm) = team.rpm {
        if let Err(wait) = store.rate(&format!("team:{id}:rpm"), rpm, 1, now).await {
            return Err(AccessError::rate_limited(
                format!("the key's team is limited to {rpm} requests per minute"),
                wait,
            ));
        }
    }
    Ok(())
}

/// The budgets a request of key `name` spends against, as the gateway's call options.
#[must_use]
pub fn budgets(name: &str, limits: &KeyLimits, now: UnixMillis) -> CallOptions {
    let team = limits.team.and_then(|t| {
        let (limit, period) = t.budget?;
        Some(Budget {
            scope: team_scope(t.id, period, now),
            limit,
        })
    });
    let budgets = limits
        .budget
        .map(|(limit, period)| Budget {
            scope: key_scope(name, period, now),
            limit,
        })
        .into_iter()
        .chain(team)
        .collect();
    CallOptions {
        budgets,
        ..CallOptions::default()
    }
}

/// Count the tokens a call used against the key's `tpm`. The count saturates: huge
/// reported usage fills the minute, it never wraps around to a small number.
pub async fn record(
    store: &dyn SharedState,
    name: &str,
    limits: &KeyLimits,
    usage: &Usage,
    now: UnixMillis,
) {
    if let Some(tpm) = limits.tpm {
        let tokens = usage.total_tokens();
        if tokens > 0 {
            store.rate_add(&tpm_bucket(name), tpm, tokens, now).await;
        }
    }
    if let Some(team) = &limits.team {
        let tokens = usage.total_tokens();
        if let (Some(tpm), true) = (team.tpm, tokens > 0) {
            let bucket = format!("team:{}:tpm", team.id);
            store.rate_add(&bucket, tpm, tokens, now).await;
        }
    }
}

/// (year, month, day) of a Unix-ms instant, UTC (Howard Hinnant's civil-from-days).
#[must_use]
#[allow(
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation
)]
pub fn civil_date(ms: UnixMillis) -> (i64, u32, u32) {
    let days = (ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::state::MemoryState;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(1_795_969_375_000), (2026, 11, 29));
        assert_eq!(civil_date(951_782_400_000), (2000, 2, 29));
        assert_eq!(
            key_scope("team", Period::Month, 1_795_969_375_000),
            "key:team:month:2026-11"
        );
        assert_eq!(
            key_scope("team", Period::Day, 1_795_969_375_000),
            "key:team:day:2026-11-29"
        );
        assert_eq!(key_scope("team", Period::Total, 0), "key:team");
    }

    #[tokio::test]
    async fn rpm_then_429_with_the_wait() {
        let store = MemoryState::new();
        let limits = KeyLimits {
            rpm: Some(2),
            ..KeyLimits::default()
        };
        let now = 1_795_969_375_000;
        assert!(admit(&store, "k", &limits, now).await.is_ok());
        assert!(admit(&store, "k", &limits, now).await.is_ok());
        let e = admit(&store, "k", &limits, now).await.unwrap_err();
        assert_eq!(e.status, 429);
        assert_eq!(e.retry_after, Some(30));
    }

    #[tokio::test]
    async fn tpm_counts_used_tokens_after_the_call() {
        let store = MemoryState::new();
        let limits = KeyLimits {
            tpm: Some(1000),
            ..KeyLimits::default()
        };
        let now = 1_795_969_375_000;
        assert!(admit(&store, "k", &limits, now).await.is_ok());
        let usage = Usage {
            input_tokens: 600,
            output_tokens: 500,
            ..Usage::default()
        };
        record(&store, "k", &limits, &usage, now).await;
        assert_eq!(
            admit(&store, "k", &limits, now).await.unwrap_err().status,
            429
        );
    }

    #[tokio::test]
    async fn huge_usage_fills_the_minute_instead_of_wrapping_to_zero() {
        let store = MemoryState::new();
        let limits = KeyLimits {
            tpm: Some(1000),
            ..KeyLimits::default()
        };
        let now = 1_795_969_375_000;
        // 2^63 + 2^63 wrapped to 0 tokens: counted nothing, and the key stayed open
        let usage = Usage {
            input_tokens: 1 << 63,
            output_tokens: 1 << 63,
            ..Usage::default()
        };
        record(&store, "k", &limits, &usage, now).await;
        let e = admit(&store, "k", &limits, now).await.unwrap_err();
        assert_eq!(e.status, 429);
    }

    #[tokio::test]
    async fn a_team_adds_its_budget_scope_and_shares_its_rate_across_keys() {
        let store = MemoryState::new();
        let team = TeamLimits {
            id: 7,
            budget: Some((Money::from_usd(9.0), Period::Month)),
            rpm: Some(2),
            tpm: None,
        };
        let limits = KeyLimits {
            team: Some(team),
            ..KeyLimits::default()
        };
        let now = 1_795_969_375_000;
        let opts = admit(&store, "a", &limits, now).await.unwrap();
        assert_eq!(opts.budgets[0].scope, "team:7:month:2026-11");
        assert!(admit(&store, "b", &limits, now).await.is_ok());
        let e = admit(&store, "c", &limits, now).await.unwrap_err();
        assert_eq!(e.status, 429, "the team's rpm counts every key of it");
    }

    #[tokio::test]
    async fn budgets_become_scopes_for_the_gateway() {
        let store = MemoryState::new();
        let limits = KeyLimits {
            budget: Some((Money::from_usd(5.0), Period::Day)),
            ..KeyLimits::default()
        };
        let opts = admit(&store, "k", &limits, 1_795_969_375_000)
            .await
            .unwrap();
        assert_eq!(
            opts.budgets,
            [Budget {
                scope: "key:k:day:2026-11-29".into(),
                limit: Money::from_usd(5.0)
            }]
        );
    }
}
