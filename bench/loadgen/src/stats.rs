//! Samples and their summary.
//!
//! Owns [`Samples`] (every measured exchange, in microseconds) and [`Report`], the JSON
//! that `bench/run` reads. Percentiles are exact (nearest rank over the sorted samples).

use std::time::Duration;

use serde::Serialize;
use tokio::time::{error::Elapsed, Instant};

use crate::conn::Outcome;

/// Everything one or more workers measured.
#[derive(Debug, Default)]
pub struct Samples {
    /// Successful exchanges: from when the request was due (or sent) to the last byte.
    latency_us: Vec<u64>,
    /// Successful exchanges: from the send to the last byte.
    service_us: Vec<u64>,
    /// Streams: from when the request was due (or sent) to the first token.
    ttft_us: Vec<u64>,
    /// Transport errors and timeouts.
    errors: u64,
    /// Responses that were not 200.
    non_200: u64,
    /// Streams that ended without `[DONE]` or without a token.
    incomplete: u64,
    /// Paced: requests that waited for their connection.
    late: u64,
    /// The first error's text, to say what went wrong.
    first_error: Option<String>,
}

impl Samples {
    /// Record one exchange sent at `sent` that had waited `wait` for its connection.
    pub fn record(
        &mut self,
        outcome: Result<Result<Outcome, String>, Elapsed>,
        wait: Duration,
        sent: Instant,
        done: Instant,
    ) {
        self.late += u64::from(!wait.is_zero());
        let outcome = match outcome {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return self.error(e),
            Err(_) => return self.error("timed out".to_owned()),
        };
        if outcome.status != 200 {
            self.non_200 += 1;
            return;
        }
        if !outcome.complete {
            self.incomplete += 1;
            return;
        }
        self.latency_us.push(micros(wait + (done - sent)));
        self.service_us.push(micros(done - sent));
        if let Some(t) = outcome.first_token {
            self.ttft_us
                .push(micros(wait + t.saturating_duration_since(sent)));
        }
    }

    fn error(&mut self, text: String) {
        self.errors += 1;
        self.first_error.get_or_insert(text);
    }

    /// Add another worker's samples.
    pub fn merge(&mut self, other: Samples) {
        self.latency_us.extend(other.latency_us);
        self.service_us.extend(other.service_us);
        self.ttft_us.extend(other.ttft_us);
        self.errors += other.errors;
        self.non_200 += other.non_200;
        self.incomplete += other.incomplete;
        self.late += other.late;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// The summary of a run that measured for `measured`.
    pub fn report(
        mut self,
        url: &str,
        connections: usize,
        rate: Option<f64>,
        stream: bool,
        measured: Duration,
    ) -> Report {
        let ok = self.latency_us.len() as u64;
        Report {
            url: url.to_owned(),
            connections,
            rate,
            stream,
            duration_s: measured.as_secs_f64(),
            ok,
            errors: self.errors,
            non_200: self.non_200,
            incomplete: self.incomplete,
            late: self.late,
            rps: ok as f64 / measured.as_secs_f64().max(1e-9),
            latency_us: Summary::of(&mut self.latency_us),
            service_us: Summary::of(&mut self.service_us),
            ttft_us: stream.then(|| Summary::of(&mut self.ttft_us)),
            first_error: self.first_error,
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// What `loadgen` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The target.
    pub url: String,
    /// Keep-alive connections used.
    pub connections: usize,
    /// Paced rate (requests/s); absent for closed loop.
    pub rate: Option<f64>,
    /// Streamed requests.
    pub stream: bool,
    /// Measured time (after the warm-up).
    pub duration_s: f64,
    /// Successful exchanges.
    pub ok: u64,
    /// Transport errors and timeouts.
    pub errors: u64,
    /// Responses that were not 200.
    pub non_200: u64,
    /// Streams without `[DONE]` or a token.
    pub incomplete: u64,
    /// Paced requests that waited for a busy connection (the target fell behind).
    pub late: u64,
    /// Successful exchanges per second.
    pub rps: f64,
    /// Due (or sent) to last byte.
    pub latency_us: Summary,
    /// Sent to last byte.
    pub service_us: Summary,
    /// Streams: due (or sent) to first token.
    pub ttft_us: Option<Summary>,
    /// The first error seen.
    pub first_error: Option<String>,
}

/// Percentiles of one measure, microseconds.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// Samples.
    pub count: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Summary {
    /// Sort `v` and summarise it.
    fn of(v: &mut [u64]) -> Self {
        if v.is_empty() {
            return Self::default();
        }
        v.sort_unstable();
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Self {
            count: v.len(),
            mean: v.iter().sum::<u64>() as f64 / v.len() as f64,
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            p999: rank(0.999),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=1000).rev().collect();
        let s = Summary::of(&mut v);
        assert_eq!(
            (s.p50, s.p90, s.p99, s.p999, s.max),
            (500, 900, 990, 999, 1000)
        );
        assert_eq!(Summary::of(&mut []).count, 0);
    }
}
