//! The tutorial's per-provider table, with pandas' own arithmetic.
//!
//! Owns [`summarize`]: `groupby("provider").agg(count, mean, sum).round(3)` reproduced bit
//! for bit. pandas sorts the groups by key, sums each group in order of appearance with
//! Kahan compensation (its `group_sum` / `group_mean`; the mean is that sum over the count),
//! and `DataFrame.round(3)` is numpy's `rint(x * 1000) / 1000` — ties to even on the scaled
//! float, not Python's `round`. These are reports of `f64` values the tutorial prints; the
//! gateway's own money stays exact elsewhere.

use std::collections::BTreeMap;

use super::replay::Response;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryRow {
    /// The provider (the table's index).
    pub provider: String,
    /// Responses it served.
    pub requests_served: u64,
    /// Mean latency, rounded to 3 decimals as numpy does.
    pub avg_latency_ms: f64,
    /// Summed cost, rounded to 3 decimals as numpy does.
    pub total_cost_usd: f64,
}

/// A Kahan-compensated running sum, step for step as pandas' groupby kernels.
#[derive(Debug, Clone, Copy, Default)]
struct KahanSum {
    sum: f64,
    compensation: f64,
}

impl KahanSum {
    fn add(&mut self, val: f64) {
        let y = val - self.compensation;
        let t = self.sum + y;
        self.compensation = (t - self.sum) - y;
        if self.compensation.is_nan() {
            // pandas GH#50367: an infinite value must give ±inf, not NaN
            self.compensation = 0.0;
        }
        self.sum = t;
    }
}

#[derive(Debug, Default)]
struct Group {
    count: u64,
    latency: KahanSum,
    cost: KahanSum,
}

/// The table for `responses`, sorted by provider; providers that served nothing are absent.
#[must_use]
#[allow(clippy::cast_precision_loss)] // pandas divides by the count as a float too
pub fn summarize(responses: &[Response]) -> Vec<SummaryRow> {
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for r in responses {
        let g = groups.entry(r.provider.as_str()).or_default();
        g.count += 1;
        g.latency.add(r.latency_ms);
        g.cost.add(r.cost_usd);
    }
    groups
        .into_iter()
        .map(|(provider, g)| SummaryRow {
            provider: provider.to_owned(),
            requests_served: g.count,
            avg_latency_ms: numpy_round(g.latency.sum / g.count as f64, 3),
            total_cost_usd: numpy_round(g.cost.sum, 3),
        })
        .collect()
}

/// numpy's `round(x, decimals)` for `decimals >= 0`: `rint(x · 10^d) / 10^d`.
#[must_use]
pub fn numpy_round(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round_ties_even() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(provider: &str, latency_ms: f64, cost_usd: f64) -> Response {
        Response {
            text: String::new(),
            provider: provider.to_owned(),
            latency_ms,
            cost_usd,
        }
    }

    #[test]
    fn numpy_rounds_the_scaled_float_half_to_even() {
        assert_eq!(numpy_round(0.0125, 3), 0.012); // 12.5 exactly → even
        assert_eq!(numpy_round(0.0135, 3), 0.014);
        // Python's round(2.675, 2) is 2.67 (exact binary value); numpy scales first
        assert_eq!(numpy_round(2.675, 2), 2.68);
    }

    #[test]
    fn kahan_keeps_what_a_naive_sum_loses() {
        let mut k = KahanSum::default();
        let mut naive = 0.0;
        for _ in 0..10 {
            k.add(0.1);
            naive += 0.1;
        }
        assert_eq!(k.sum, 1.0);
        assert_ne!(naive, 1.0);
    }

    #[test]
    fn groups_sorted_by_provider_and_absent_when_empty() {
        let rows = summarize(&[
            resp("b", 1.0, 0.5),
            resp("a", 2.0, 0.25),
            resp("b", 2.0, 0.5),
        ]);
        let names: Vec<_> = rows.iter().map(|r| r.provider.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(rows[1].requests_served, 2);
        assert_eq!(rows[1].avg_latency_ms, 1.5);
        assert_eq!(rows[1].total_cost_usd, 1.0);
        assert!(summarize(&[]).is_empty());
    }
}
