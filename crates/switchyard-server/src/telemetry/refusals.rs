//! Unauthenticated refusals, logged in moderation: a flood of requests without a valid
//! client key (each a 401) must not write a request-log line and an access-log line apiece
//! (an audit's flood wrote ~26 MB/s). Per reason (`missing_key`, `invalid_key`) the first
//! refusal of each one-second window is logged in full, as any request is; the rest are
//! counted, and when the window is over one summary line on stderr says how many were not
//! logged. Every refusal is counted in `switchyard_unauthenticated_total{reason}`
//! (`crate::telemetry::metrics`), which the caller does.
//!
//! Owns [`Refusals`]: the window, its counts, and the task that closes windows nobody
//! else closes ([`Refusals::run`]). Time is tokio's (paused in tests).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a window lasts: one line per reason per window, plus one summary.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The windows of unauthenticated refusals.
#[derive(Debug, Default)]
pub struct Refusals {
    window: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    /// When the current window began; `None` until a refusal opens one.
    began: Option<Instant>,
    /// Per reason: refusals in this window, and whether the first was logged.
    counts: BTreeMap<&'static str, u64>,
}

impl Window {
    fn over(&self, now: Instant) -> bool {
        self.began.is_some_and(|b| now.duration_since(b) >= WINDOW)
    }

    /// The summary of the refusals that were not logged, if any, and a fresh window.
    fn close(&mut self) -> Option<String> {
        let unlogged: Vec<String> = (self.counts.iter())
            .filter(|(_, n)| **n > 1)
            .map(|(reason, n)| format!("{reason}={}", n - 1))
            .collect();
        let total: u64 = self.counts.values().map(|n| n.saturating_sub(1)).sum();
        *self = Window::default();
        (total > 0).then(|| {
            format!(
                "refused {total} more unauthenticated request(s) in the last {}s without a log line each ({}); the first of each reason was logged",
                WINDOW.as_secs(),
                unlogged.join(", ")
            )
        })
    }
}

impl Refusals {
    /// A refusal for `reason`: whether it gets its own log line (the first of its reason in
    /// the current window). A window that is over is closed first (its summary said).
    pub fn admit(&self, reason: &'static str) -> bool {
        let now = Instant::now();
        let mut window = self.lock();
        if window.over(now) {
            say(window.close());
        }
        window.began.get_or_insert(now);
        let n = window.counts.entry(reason).or_insert(0);
        *n += 1;
        *n == 1
    }

    /// Close the window if it is over; the summary said, if any (also returned).
    pub fn tick(&self) -> Option<String> {
        let mut window = self.lock();
        if !window.over(Instant::now()) {
            return None;
        }
        let summary = window.close();
        say(summary.clone());
        summary
    }

    /// Close windows every [`WINDOW`] until `stop`, then the last one.
    pub async fn run(self: std::sync::Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(WINDOW) => {
                    self.tick();
                }
            }
        }
        say(self.lock().close());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn say(summary: Option<String>) {
    if let Some(line) = summary {
        tracing::warn!(target: super::trace::SERVE, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_of_each_reason_per_second_is_logged_and_the_rest_summed() {
        let r = Refusals::default();
        assert!(r.admit("missing_key"));
        assert!(r.admit("invalid_key"));
        for _ in 0..999 {
            assert!(!r.admit("missing_key"));
        }
        assert!(!r.admit("invalid_key"));
        assert_eq!(r.tick(), None, "the window is not over");
        tokio::time::advance(WINDOW).await;
        let summary = r.tick().unwrap();
        assert!(summary.contains("refused 1000 more"), "{summary}");
        assert!(
            summary.contains("invalid_key=1, missing_key=999"),
            "{summary}"
        );
        assert_eq!(r.tick(), None, "said once");
        // the next window logs a first one again
        assert!(r.admit("missing_key"));
        assert!(!r.admit("missing_key"));
        tokio::time::advance(WINDOW).await;
        // a refusal after the window closes it (its summary said) and opens the next
        assert!(r.admit("missing_key"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_refusal_needs_no_summary() {
        let r = Refusals::default();
        assert!(r.admit("invalid_key"));
        tokio::time::advance(WINDOW).await;
        assert_eq!(r.tick(), None);
    }
}
