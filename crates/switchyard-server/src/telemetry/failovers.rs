//! The failover summary: one log line per route and provider pair (`from → to`) at most
//! every [`WINDOW`], with counts, so a storm of failovers cannot flood the log.
//!
//! Owns [`Failovers`], the tally, and [`Summary`], one line of it. A request that moved
//! from one provider to another (tried or skipped first) counts once per pair of
//! consecutive providers in its trail (`a → b`, `b → c`), with the reason `a` was left
//! (its error kind, or why it was skipped); a request no provider answered ends with its
//! last provider `→ none`. The first failover of a pair in a window is its line at once;
//! the rest are counted and told by [`Failovers::flush`] when the window is over (the
//! server's events task calls it every second). The tally holds at most [`MAX_PAIRS`]
//! pairs: failovers of further pairs are counted together and told in one line per window.
//! The pure part (what to say, when) is here; `telemetry/events.rs` writes the lines.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use switchyard::observe::{Attempt, Outcome};
use tokio::time::Instant;

/// The least time between two lines about one pair.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Most pairs tallied at once (routes × providers of a config are far fewer; a wildcard
/// route's models are client-chosen).
pub const MAX_PAIRS: usize = 256;
/// Distinct reasons counted per pair (error kinds and skip reasons are fewer).
const MAX_REASONS: usize = 32;
/// The `to` of a request no provider answered.
pub const NONE: &str = "none";

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The route (empty for the line about pairs past [`MAX_PAIRS`]).
    pub route: String,
    /// The provider left.
    pub from: String,
    /// The provider the request went to next ([`NONE`]: nobody answered).
    pub to: String,
    /// Failovers told by this line.
    pub count: u64,
    /// How many for each reason, by label.
    pub reasons: BTreeMap<&'static str, u64>,
}

impl Summary {
    /// The reasons as `timeout=3,circuit_open=1`.
    #[must_use]
    pub fn reasons_text(&self) -> String {
        let parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(r, n)| format!("{r}={n}"))
            .collect();
        parts.join(",")
    }
}

/// One pair's tally.
#[derive(Debug)]
struct Tally {
    /// When its last line was said.
    said: Instant,
    /// Failovers since, not yet told.
    pending: u64,
    reasons: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Default)]
struct Books {
    pairs: HashMap<(String, String, String), Tally>,
    /// Failovers of pairs that found the tally full, since the last line about them.
    overflow: u64,
    /// When the last line about them was said.
    overflow_said: Option<Instant>,
}

/// The tally of failovers per route and provider pair (cheap to share behind an `Arc`).
#[derive(Debug, Default)]
pub struct Failovers {
    books: Mutex<Books>,
}

/// Why `a` was left: its error kind, skip reason, or `rescue`.
fn reason(a: &Attempt) -> &'static str {
    match &a.outcome {
        Outcome::Failed { kind, .. } => kind.label(),
        Outcome::Skipped { reason, .. } => reason.label(),
        Outcome::Rescue { .. } => "rescue",
        // a rescue that could not go on: its own reason, not the provider's failure
        Outcome::Diverged { .. } => "diverged",
        Outcome::Declined { .. } => "declined",
        Outcome::Success => "success",
    }
}

/// The pairs a trail moved through: consecutive distinct providers, each with the reason
/// the first was left, and (when `answered` is false) the last one `→ none`.
pub fn pairs(attempts: &[Attempt], answered: bool) -> Vec<(&str, &str, &'static str)> {
    let mut out = Vec::new();
    let Some(first) = attempts.first() else {
        return out;
    };
    let mut last = first;
    for a in &attempts[1..] {
        if a.provider != last.provider {
            out.push((last.provider.as_str(), a.provider.as_str(), reason(last)));
        }
        last = a;
    }
    if !answered && !out.is_empty() {
        out.push((last.provider.as_str(), NONE, reason(last)));
    }
    out
}

impl Failovers {
    /// An empty tally.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Count a failover on `route` from `from` to `to` for `why` at `now`: the line to say
    /// now, when it is the pair's first in a window.
    pub fn record(
        &self,
        route: &str,
        from: &str,
        to: &str,
        why: &'static str,
        now: Instant,
    ) -> Option<Summary> {
        let mut books = self.books.lock().ok()?;
        let key = (route.to_owned(), from.to_owned(), to.to_owned());
        if let Some(t) = books.pairs.get_mut(&key) {
            t.pending += 1;
            if t.reasons.len() < MAX_REASONS || t.reasons.contains_key(why) {
                *t.reasons.entry(why).or_default() += 1;
            }
            if now.saturating_duration_since(t.said) < WINDOW {
                return None;
            }
            // the window is over and the flush has not come yet: say it all now
            t.said = now;
            let (route, from, to) = key;
            return Some(Summary {
                route,
                from,
                to,
                count: std::mem::take(&mut t.pending),
                reasons: std::mem::take(&mut t.reasons),
            });
        }
        if books.pairs.len() >= MAX_PAIRS {
            books.overflow += 1;
            return None;
        }
        let tally = Tally {
            said: now,
            pending: 0,
            reasons: BTreeMap::new(),
        };
        books.pairs.insert(key.clone(), tally);
        Some(one(key, why))
    }

    /// The lines whose window is over at `now`: each pair with failovers not yet told, and
    /// the pairs past the tally's bound. Pairs with nothing pending for a window are
    /// forgotten (the tally holds only pairs failing over now).
    pub fn flush(&self, now: Instant) -> Vec<Summary> {
        let Ok(mut books) = self.books.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        books.pairs.retain(|(route, from, to), t| {
            if now.saturating_duration_since(t.said) < WINDOW {
                return true;
            }
            if t.pending == 0 {
                return false;
            }
            out.push(Summary {
                route: route.clone(),
                from: from.clone(),
                to: to.clone(),
                count: std::mem::take(&mut t.pending),
                reasons: std::mem::take(&mut t.reasons),
            });
            t.said = now;
            true
        });
        let overflow_due =
            (books.overflow_said).is_none_or(|said| now.saturating_duration_since(said) >= WINDOW);
        if books.overflow > 0 && overflow_due {
            out.push(Summary {
                route: String::new(),
                from: String::new(),
                to: String::new(),
                count: std::mem::take(&mut books.overflow),
                reasons: BTreeMap::new(),
            });
            books.overflow_said = Some(now);
        }
        out.sort_by(|a, b| (&a.route, &a.from, &a.to).cmp(&(&b.route, &b.from, &b.to)));
        out
    }
}

/// The line for a pair's first failover in a window.
fn one((route, from, to): (String, String, String), why: &'static str) -> Summary {
    Summary {
        route,
        from,
        to,
        count: 1,
        reasons: BTreeMap::from([(why, 1)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::breaker::SkipReason;
    use switchyard::ErrorKind;

    fn tried(provider: &str, outcome: Outcome) -> Attempt {
        Attempt {
            provider: provider.to_owned(),
            model: "m".to_owned(),
            attempt: 1,
            outcome,
            status: None,
            latency: Duration::ZERO,
            start: None,
            probe: false,
            reported: None,
        }
    }

    fn failed(provider: &str, kind: ErrorKind) -> Attempt {
        let message = String::new();
        tried(provider, Outcome::Failed { kind, message })
    }

    #[test]
    fn a_trail_moves_through_consecutive_distinct_providers() {
        let skipped = Attempt::skipped("b", "m", SkipReason::CircuitOpen);
        let trail = [
            failed("a", ErrorKind::Timeout),
            failed("a", ErrorKind::Server),
            skipped,
            tried("c", Outcome::Success),
        ];
        assert_eq!(
            pairs(&trail, true),
            [("a", "b", "server"), ("b", "c", "circuit_open")]
        );
        // nobody answered: the last provider goes to none
        let trail = [
            failed("a", ErrorKind::Timeout),
            failed("b", ErrorKind::Server),
        ];
        assert_eq!(
            pairs(&trail, false),
            [("a", "b", "timeout"), ("b", NONE, "server")]
        );
        // one provider alone is no failover, answered or not
        assert!(pairs(&[failed("a", ErrorKind::Timeout)], false).is_empty());
        assert!(pairs(&[tried("a", Outcome::Success)], true).is_empty());
    }

    /// A storm of failovers of one pair is one line at once, then at most one line per
    /// window with the counts; a quiet pair is forgotten.
    #[tokio::test(start_paused = true)]
    async fn a_storm_is_one_line_then_one_per_window_with_counts() {
        let f = Failovers::new();
        let t0 = Instant::now();
        let first = f.record("main", "a", "b", "timeout", t0).unwrap();
        assert_eq!(
            (first.count, first.reasons_text()),
            (1, "timeout=1".to_owned())
        );
        // 1,000 more within the window: no line, counted
        for i in 0..1000u64 {
            let why = if i % 4 == 0 {
                "circuit_open"
            } else {
                "timeout"
            };
            let at = t0 + Duration::from_millis(i * 9);
            assert_eq!(f.record("main", "a", "b", why, at), None);
        }
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(f.flush(Instant::now()).is_empty(), "the window is not over");
        tokio::time::advance(Duration::from_secs(1)).await;
        let lines = f.flush(Instant::now());
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].count, 1000);
        assert_eq!(lines[0].reasons_text(), "circuit_open=250,timeout=750");
        assert!(f.flush(Instant::now()).is_empty(), "told once");
        // inside the next window the pair's failovers wait for its end again
        assert_eq!(f.record("main", "a", "b", "timeout", Instant::now()), None);
        tokio::time::advance(WINDOW).await;
        assert_eq!(f.flush(Instant::now())[0].count, 1);
        // a window without failovers forgets the pair; the next is told at once
        tokio::time::advance(WINDOW).await;
        assert!(f.flush(Instant::now()).is_empty());
        assert_eq!(f.books.lock().unwrap().pairs.len(), 0);
        assert!(f
            .record("main", "a", "b", "timeout", Instant::now())
            .is_some());
        // another pair is its own line
        assert!(f
            .record("main", "b", "c", "timeout", Instant::now())
            .is_some());
    }

    /// Past the bound, failovers of new pairs are counted together, told at most once
    /// per window: the tally cannot grow with client-chosen names.
    #[tokio::test(start_paused = true)]
    async fn the_tally_is_bounded() {
        let f = Failovers::new();
        let now = Instant::now();
        for i in 0..MAX_PAIRS + 500 {
            let to = format!("wild/model-{i}");
            let said = f.record("wild", "a", &to, "timeout", now);
            assert_eq!(said.is_some(), i < MAX_PAIRS, "{i}");
        }
        assert_eq!(f.books.lock().unwrap().pairs.len(), MAX_PAIRS);
        tokio::time::advance(WINDOW).await;
        let lines = f.flush(Instant::now());
        let others = lines.iter().find(|l| l.route.is_empty()).unwrap();
        assert_eq!(others.count, 500);
        // the pairs told at once had nothing pending: forgotten, room again
        assert_eq!(f.books.lock().unwrap().pairs.len(), 0);
        assert!(f
            .record("wild", "a", "wild/new", "timeout", Instant::now())
            .is_some());
    }
}
