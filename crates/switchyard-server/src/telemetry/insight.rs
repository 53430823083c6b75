//! The dashboard's short memory: what happened recently, bounded in size and age.
//!
//! Owns [`Insight`], fed from two sides: as a gateway [`Observer`] it keeps the circuit
//! transitions of the last hour, per-provider counts (tries, skips, failovers) and a
//! sliding window of successful attempts' latency; as the request log's [`LogTap`] it keeps
//! the most recent requests with their attempt trails, each stream's time to first token,
//! and per-key request counts and spend. Percentiles are computed when read, never on the
//! request path. Every write is one short mutex-guarded push into a bounded ring: it never
//! blocks on I/O, never fails, and memory stays flat however long the process runs.
//!
//! Does not own the gateway's own books (health, ledger, budgets: the dashboard reads them
//! from the gateway) nor how any of it is served (`crate::http::dashboard`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use switchyard::breaker::{CircuitState, Transition};
use switchyard::chat::ChatResponse;
use switchyard::clock::{Clock, UnixMillis};
use switchyard::observe::{Attempt, Observer, Outcome};
use switchyard::{ErrorKind, GatewayError, Money};

use crate::telemetry::log::{LogEntry, LogTap};

/// Requests kept for the dashboard's list.
pub const RECENT_REQUESTS: usize = 200;
/// Circuit transitions kept at most (also bounded by [`TRANSITION_WINDOW_MS`]).
pub const TRANSITIONS_KEPT: usize = 1000;
/// How far back the transition timeline reaches.
pub const TRANSITION_WINDOW_MS: u64 = 60 * 60 * 1000;
/// How far back latency samples reach.
pub const SAMPLE_WINDOW_MS: u64 = 15 * 60 * 1000;
/// Latency samples kept per provider and series at most.
pub const SAMPLES_KEPT: usize = 2048;
/// Samples handed to the dashboard's charts per series (the newest).
pub const CHART_POINTS: usize = 120;

/// One circuit transition, as the timeline shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionRecord {
    /// The provider whose circuit changed.
    pub provider: String,
    /// Before.
    pub from: CircuitState,
    /// After.
    pub to: CircuitState,
    /// The failure kind that caused it (openings).
    pub cause: Option<ErrorKind>,
    /// When, ms since the Unix epoch.
    pub at_ms: UnixMillis,
}

/// What one provider did, counted since the process started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProviderCounts {
    /// Tries that reached the provider (retries included; skips not).
    pub attempts: u64,
    /// Tries it answered.
    pub successes: u64,
    /// Requests that moved on from it to another provider (it failed or was skipped).
    pub failovers_from: u64,
    /// Requests it answered after another provider failed or was skipped.
    pub failovers_to: u64,
    /// Times it was not called, by reason (`circuit_open`, `cooling`, ...).
    pub skipped: BTreeMap<&'static str, u64>,
}

/// A latency series over the sliding window, summarised when read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Samples in the window.
    pub samples: usize,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile (nearest rank), ms.
    pub p95_ms: Option<f64>,
    /// The newest samples as `[at_ms, ms]`, oldest first (for the chart).
    pub points: Vec<[f64; 2]>,
}

/// One provider's recent picture.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProviderInsight {
    /// Counts since start.
    pub counts: ProviderCounts,
    /// Successful attempts' latency over the window.
    pub latency: LatencyStats,
    /// Streams answered by this provider: time to first token over the window.
    pub ttft: LatencyStats,
}

/// One client key's traffic, counted since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyInsight {
    /// Requests made with the key.
    pub requests: u64,
    /// Exact spend of the priced ones.
    pub spent: Money,
    /// Answers whose cost is unknown.
    pub unpriced: u64,
}

/// A bounded series of `(at_ms, ms)` samples.
#[derive(Debug, Default)]
struct Samples {
    ring: VecDeque<(UnixMillis, f64)>,
}

impl Samples {
    fn push(&mut self, at_ms: UnixMillis, ms: f64) {
        while self
            .ring
            .front()
            .is_some_and(|&(t, _)| t.saturating_add(SAMPLE_WINDOW_MS) < at_ms)
            || self.ring.len() >= SAMPLES_KEPT
        {
            self.ring.pop_front();
        }
        self.ring.push_back((at_ms, ms));
    }

    fn stats(&self, now: UnixMillis) -> LatencyStats {
        let since = now.saturating_sub(SAMPLE_WINDOW_MS);
        let live: Vec<(UnixMillis, f64)> = self
            .ring
            .iter()
            .copied()
            .filter(|&(t, _)| t >= since)
            .collect();
        let mut sorted: Vec<f64> = live.iter().map(|&(_, ms)| ms).collect();
        sorted.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)] // ms since the epoch fit an f64 exactly
        let points = live[live.len().saturating_sub(CHART_POINTS)..]
            .iter()
            .map(|&(t, ms)| [t as f64, round_ms(ms)])
            .collect();
        LatencyStats {
            samples: sorted.len(),
            p50_ms: percentile(&sorted, 50),
            p95_ms: percentile(&sorted, 95),
            points,
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: usize) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().map(round_ms)
}

/// Milliseconds to a tenth of a millisecond (enough for a dashboard).
fn round_ms(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

#[derive(Debug, Default)]
struct ProviderBook {
    counts: ProviderCounts,
    latency: Samples,
    ttft: Samples,
}

/// Counters keyed by configured names (providers, keys): bounded by the config.
#[derive(Debug, Default)]
struct Books {
    providers: HashMap<String, ProviderBook>,
    keys: HashMap<String, KeyInsight>,
}

/// The entry for `name`, made the first time it is seen (the only time a name is copied).
fn slot<'a, V: Default>(map: &'a mut HashMap<String, V>, name: &str) -> Option<&'a mut V> {
    if !map.contains_key(name) {
        map.insert(name.to_owned(), V::default());
    }
    map.get_mut(name)
}

/// Recent history for the dashboard. Share it as an `Arc`: it is both an observer and
/// the request log's tap.
#[derive(Debug)]
pub struct Insight {
    clock: Clock,
    /// When the history starts (the dashboard draws nothing before it).
    since_ms: UnixMillis,
    transitions: Mutex<VecDeque<TransitionRecord>>,
    requests: Mutex<VecDeque<Arc<LogEntry>>>,
    books: Mutex<Books>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Insight {
    /// Empty history; `clock` stamps samples and ages them out.
    #[must_use]
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            since_ms: clock.unix_ms(),
            transitions: Mutex::new(VecDeque::new()),
            requests: Mutex::new(VecDeque::with_capacity(RECENT_REQUESTS)),
            books: Mutex::new(Books::default()),
        }
    }

    /// Wall time now, by the clock the history is stamped with.
    #[must_use]
    pub fn now_ms(&self) -> UnixMillis {
        self.clock.unix_ms()
    }

    /// When this history began (process start, for `serve`).
    #[must_use]
    pub fn since_ms(&self) -> UnixMillis {
        self.since_ms
    }

    /// The transitions of the last hour, oldest first.
    #[must_use]
    pub fn transitions(&self) -> Vec<TransitionRecord> {
        let since = self.now_ms().saturating_sub(TRANSITION_WINDOW_MS);
        lock(&self.transitions)
            .iter()
            .filter(|t| t.at_ms >= since)
            .cloned()
            .collect()
    }

    /// Up to `limit` of the most recent requests, newest first.
    #[must_use]
    pub fn recent(&self, limit: usize) -> Vec<LogEntry> {
        lock(&self.requests)
            .iter()
            .rev()
            .take(limit)
            .map(|e| LogEntry::clone(e))
            .collect()
    }

    /// The most recent request with this id, if still kept.
    #[must_use]
    pub fn find(&self, id: &str) -> Option<LogEntry> {
        lock(&self.requests)
            .iter()
            .rev()
            .find(|e| e.id == id)
            .map(|e| LogEntry::clone(e))
    }

    /// Every provider seen so far: counts since start, latency and TTFT over the window.
    #[must_use]
    pub fn providers(&self) -> BTreeMap<String, ProviderInsight> {
        let now = self.now_ms();
        lock(&self.books)
            .providers
            .iter()
            .map(|(name, b)| {
                let view = ProviderInsight {
                    counts: b.counts.clone(),
                    latency: b.latency.stats(now),
                    ttft: b.ttft.stats(now),
                };
                (name.clone(), view)
            })
            .collect()
    }

    /// Every client key seen so far.
    #[must_use]
    pub fn keys(&self) -> BTreeMap<String, KeyInsight> {
        lock(&self.books)
            .keys
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Count a finished request's failover from and to providers.
    fn count_failovers(&self, attempts: &[Attempt], answered_by: Option<&str>) {
        let last = attempts.last().map(|a| a.provider.as_str());
        let moved_to = answered_by.or(last);
        let mut books = lock(&self.books);
        for (i, a) in attempts.iter().enumerate() {
            let first_time = attempts[..i].iter().all(|b| b.provider != a.provider);
            if first_time && Some(a.provider.as_str()) != moved_to {
                if let Some(book) = slot(&mut books.providers, &a.provider) {
                    book.counts.failovers_from += 1;
                }
            }
        }
        let Some(p) = answered_by else { return };
        if attempts.iter().any(|a| a.provider != p) {
            if let Some(book) = slot(&mut books.providers, p) {
                book.counts.failovers_to += 1;
            }
        }
    }
}

impl Observer for Insight {
    fn on_attempt(&self, _route: &str, attempt: &Attempt) {
        let now = self.now_ms();
        let mut books = lock(&self.books);
        let Some(book) = slot(&mut books.providers, &attempt.provider) else {
            return;
        };
        match &attempt.outcome {
            Outcome::Skipped { reason, .. } => {
                *book.counts.skipped.entry(reason.label()).or_default() += 1;
            }
            Outcome::Success => {
                book.counts.attempts += 1;
                book.counts.successes += 1;
                book.latency
                    .push(now, attempt.latency.as_secs_f64() * 1000.0);
            }
            // a declined continuation is a try (the rescue's failure, not the provider's);
            // a divergence ends the rescue call its `Rescue` entry counted
            Outcome::Failed { .. } | Outcome::Rescue { .. } | Outcome::Declined { .. } => {
                book.counts.attempts += 1;
            }
            Outcome::Diverged { .. } => {}
        }
    }

    fn on_transition(&self, provider: &str, t: &Transition) {
        let record = TransitionRecord {
            provider: provider.to_owned(),
            from: t.from,
            to: t.to,
            cause: t.cause,
            at_ms: t.at_ms,
        };
        let since = t.at_ms.saturating_sub(TRANSITION_WINDOW_MS);
        let mut ring = lock(&self.transitions);
        while ring.front().is_some_and(|f| f.at_ms < since) || ring.len() >= TRANSITIONS_KEPT {
            ring.pop_front();
        }
        // An open → half-open step is reported late (when a probe is admitted) but stamped
        // when the cooldown ran out: keep the ring in time order.
        let at = ring.partition_point(|r| r.at_ms <= record.at_ms);
        ring.insert(at, record);
    }

    fn on_embedded(
        &self,
        _route: &str,
        result: Result<&switchyard::embedding::EmbeddingResponse, &GatewayError>,
    ) {
        match result {
            Ok(resp) => self.count_failovers(&resp.attempts, Some(&resp.provider)),
            Err(err) => self.count_failovers(err.attempts(), None),
        }
    }

    fn on_complete(&self, _route: &str, result: Result<&ChatResponse, &GatewayError>) {
        match result {
            Ok(resp) => self.count_failovers(&resp.attempts, Some(&resp.provider)),
            Err(err) => self.count_failovers(err.attempts(), None),
        }
    }
}

impl LogTap for Insight {
    fn record(&self, entry: &Arc<LogEntry>) {
        // the ring keeps no prompt or completion: a copy without them (only when the
        // request carried content for its span, `capture_content`)
        let kept = if entry.content.is_some() {
            Arc::new(LogEntry {
                content: None,
                ..LogEntry::clone(entry)
            })
        } else {
            Arc::clone(entry)
        };
        let evicted = {
            let mut ring = lock(&self.requests);
            let evicted = (ring.len() >= RECENT_REQUESTS)
                .then(|| ring.pop_front())
                .flatten();
            ring.push_back(kept);
            evicted
        };
        drop(evicted); // freed outside the lock
        let ttft = entry.ttft_ms.zip(entry.provider.as_deref());
        if ttft.is_none() && entry.key.is_none() {
            return;
        }
        let now = self.now_ms();
        let mut books = lock(&self.books);
        if let (Some((ms, provider)), 200) = (ttft, entry.status) {
            if let Some(book) = slot(&mut books.providers, provider) {
                book.ttft.push(now, ms);
            }
        }
        if let Some(key) = &entry.key {
            if let Some(k) = slot(&mut books.keys, key) {
                k.requests += 1;
                match (entry.cost_usd, entry.provider.is_some()) {
                    (Some(usd), _) => k.spent += Money::from_usd(usd),
                    (None, true) => k.unpriced += 1,
                    (None, false) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchyard::breaker::{SkipReason, Trigger};

    use super::*;

    fn attempt(provider: &str, outcome: Outcome, ms: u64) -> Attempt {
        Attempt {
            provider: provider.into(),
            model: "m".into(),
            attempt: 1,
            outcome,
            status: None,
            latency: Duration::from_millis(ms),
            start: None,
            probe: false,
            reported: None,
        }
    }

    fn timeout() -> Outcome {
        Outcome::Failed {
            kind: ErrorKind::Timeout,
            message: "timed out".into(),
        }
    }

    fn entry(id: &str) -> LogEntry {
        LogEntry {
            id: id.into(),
            time_ms: 0,
            api: "chat".into(),
            route: "r".into(),
            key: None,
            stream: false,
            status: 200,
            provider: Some("a".into()),
            model: None,
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: Some(0.25),
            latency_ms: 1.0,
            ttft_ms: None,
            error: None,
            dropped: Vec::new(),
            cache: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            sampled: false,
            content: None,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50), Some(50.0));
        assert_eq!(percentile(&v, 95), Some(95.0));
        assert_eq!(percentile(&[7.0], 95), Some(7.0));
        assert_eq!(percentile(&[], 50), None);
    }

    #[tokio::test(start_paused = true)]
    async fn latency_samples_slide_out_of_the_window() {
        let insight = Insight::new(Clock::anchored_at(1_000_000_000));
        for ms in [100, 200, 300] {
            insight.on_attempt("r", &attempt("a", Outcome::Success, ms));
        }
        insight.on_attempt("r", &attempt("a", timeout(), 999));
        let a = &insight.providers()["a"];
        assert_eq!((a.latency.samples, a.latency.p50_ms), (3, Some(200.0)));
        assert_eq!(a.latency.p95_ms, Some(300.0));
        assert_eq!((a.counts.attempts, a.counts.successes), (4, 3));
        tokio::time::advance(Duration::from_millis(SAMPLE_WINDOW_MS + 1)).await;
        let a = &insight.providers()["a"];
        assert_eq!((a.latency.samples, a.latency.p50_ms), (0, None));
        assert!(a.latency.points.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn rings_stay_bounded() {
        let insight = Insight::new(Clock::anchored_at(1_000_000_000));
        for i in 0..(RECENT_REQUESTS + 50) {
            insight.record(&Arc::new(entry(&format!("req_{i}"))));
            insight.on_attempt("r", &attempt("a", Outcome::Success, 5));
        }
        let recent = insight.recent(usize::MAX);
        assert_eq!(recent.len(), RECENT_REQUESTS);
        assert_eq!(recent[0].id, format!("req_{}", RECENT_REQUESTS + 49));
        assert!(insight.find("req_0").is_none());
        assert!(insight.find("req_249").is_some());
        let a = &insight.providers()["a"];
        assert_eq!(a.latency.points.len(), CHART_POINTS);
        let t = Transition {
            cause: Some(ErrorKind::Timeout),
            ..Transition::new(
                CircuitState::Closed,
                CircuitState::Open,
                insight.now_ms(),
                Trigger::Failures,
            )
        };
        for _ in 0..(TRANSITIONS_KEPT + 10) {
            insight.on_transition("a", &t);
        }
        assert_eq!(insight.transitions().len(), TRANSITIONS_KEPT);
        tokio::time::advance(Duration::from_millis(TRANSITION_WINDOW_MS + 1)).await;
        assert!(insight.transitions().is_empty(), "older than an hour");
    }

    #[tokio::test]
    async fn failovers_are_counted_from_and_to() {
        let insight = Insight::new(Clock::system());
        let trail = [
            attempt("a", timeout(), 5),
            attempt("a", timeout(), 5),
            attempt("b", Outcome::Success, 5),
        ];
        let resp = ChatResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
            finish_reason: None,
            provider: "b".into(),
            model: "m".into(),
            failed_over: true,
            usage: Some(switchyard::Usage::default()),
            cost: None,
            attempts: trail.to_vec(),
            latency: Duration::ZERO,
            provider_latency: None,
            max_tokens_applied: None,
            ..ChatResponse::default()
        };
        insight.on_complete("r", Ok(&resp));
        let skipped = Attempt::skipped("a", "m", SkipReason::CircuitOpen);
        insight.on_attempt("r", &skipped);
        let p = insight.providers();
        assert_eq!(
            (p["a"].counts.failovers_from, p["a"].counts.failovers_to),
            (1, 0)
        );
        assert_eq!(
            (p["b"].counts.failovers_from, p["b"].counts.failovers_to),
            (0, 1)
        );
        assert_eq!(p["a"].counts.skipped["circuit_open"], 1);
    }

    #[test]
    fn the_tap_keeps_ttft_and_key_spend() {
        let insight = Insight::new(Clock::system());
        let mut e = entry("req_1");
        e.key = Some("team".into());
        e.ttft_ms = Some(42.0);
        insight.record(&Arc::new(e.clone()));
        e.cost_usd = None;
        insight.record(&Arc::new(e));
        let k = insight.keys()["team"];
        assert_eq!(
            (k.requests, k.spent, k.unpriced),
            (2, Money::from_usd(0.25), 1)
        );
        assert_eq!(insight.providers()["a"].ttft.p50_ms, Some(42.0));
    }
}
