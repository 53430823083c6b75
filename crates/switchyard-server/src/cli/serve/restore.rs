//! Spend that survives restarts with the memory backend: on start, the request log's
//! costs are replayed into the budgets they counted against — each route's, and each
//! key's for the current period. (The Redis backend keeps spend in Redis instead.)

use switchyard::gateway::budget_scope;
use switchyard::state::MemoryState;
use switchyard::Money;

use crate::access::keys::limits_of;
use crate::access::limits::key_scope;
use crate::config::Config;

/// What was restored, for the startup message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Log lines whose cost counted toward some budget.
    pub entries: usize,
    /// Total restored across scopes.
    pub spend: Money,
}

/// The fields of a request-log line that spend depends on; the rest of the line is
/// skipped unparsed.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Spend {
    /// Wall time the request arrived, ms since the Unix epoch.
    pub time_ms: u64,
    /// The route it counted against.
    pub route: String,
    /// The client key's name, when keys are configured.
    #[serde(default)]
    pub key: Option<String>,
    /// Exact cost in dollars, when known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Replay the request log at `path` into `store`'s budgets as of `now`, one line at a time
/// ([`crate::telemetry::log::for_each_line`]: memory stays flat however long the log is). Lines that
/// do not parse (a line cut short by a crash) are skipped and counted rather than refusing
/// to start; a missing file is empty.
///
/// # Errors
/// When the file exists but cannot be read.
pub fn replay_file(
    config: &Config,
    path: &std::path::Path,
    store: &MemoryState,
    now: u64,
) -> std::io::Result<(Restored, usize)> {
    let mut restored = Restored::default();
    match crate::telemetry::log::for_each_line::<Spend>(path, |spend| {
        replay_one(config, &spend, store, now, &mut restored);
    }) {
        Ok(unreadable) => Ok((restored, unreadable.count)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Restored::default(), 0)),
        Err(e) => Err(e),
    }
}

fn replay_one(config: &Config, e: &Spend, store: &MemoryState, now: u64, restored: &mut Restored) {
    let Some(cost) = e.cost_usd.map(Money::from_usd) else {
        return;
    };
    let mut counted = false;
    if config
        .routes
        .iter()
        .any(|r| r.name == e.route && r.budget_usd.is_some())
    {
        store.restore_spend(&budget_scope(&e.route), cost);
        counted = true;
    }
    let key = e
        .key
        .as_ref()
        .and_then(|k| config.keys.iter().find(|c| &c.name == k));
    if let Some(k) = key {
        if let Some((_, period)) = limits_of(k).budget {
            // only the current period's spend still counts
            let scope = key_scope(&k.name, period, e.time_ms);
            if scope == key_scope(&k.name, period, now) {
                store.restore_spend(&scope, cost);
                counted = true;
            }
        }
    }
    if counted {
        restored.entries += 1;
        restored.spend += cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::state::SharedState;

    fn entry(route: &str, key: Option<&str>, time_ms: u64, cost: Option<f64>) -> Spend {
        Spend {
            time_ms,
            route: route.into(),
            key: key.map(Into::into),
            cost_usd: cost,
        }
    }

    fn config() -> Config {
        crate::config::parse(
            r#"
            [[providers]]
            name = "s"
            kind = "simulated"
            [[routes]]
            name = "paid"
            providers = ["s"]
            budget_usd = 1.0
            [[routes]]
            name = "free"
            providers = ["s"]
            [[keys]]
            name = "team"
            sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
            routes = ["*"]
            budget_usd = 2.0
            budget_period = "day"
            "#,
            "test",
        )
        .unwrap()
    }

    #[tokio::test]
    async fn route_and_current_period_key_spend_come_back() {
        let config = config();
        let today = 1_795_969_375_000; // 2026-11-29
        let yesterday = today - 86_400_000;
        let entries = [
            entry("paid", None, today, Some(0.25)),
            entry("paid", Some("team"), yesterday, Some(0.5)),
            entry("free", Some("team"), today, Some(0.125)),
            entry("free", None, today, Some(9.0)),
            entry("paid", None, today, None),
        ];
        let store = MemoryState::new();
        let mut r = Restored::default();
        for e in &entries {
            replay_one(&config, e, &store, today, &mut r);
        }
        assert_eq!(r.entries, 3);
        let route = store.budget("route:paid", Money::from_usd(1.0)).await;
        assert_eq!(route.spent, Money::from_usd(0.75));
        let key = store
            .budget("key:team:day:2026-11-29", Money::from_usd(2.0))
            .await;
        assert_eq!(
            key.spent,
            Money::from_usd(0.125),
            "yesterday's spend is not today's"
        );
    }

    /// A whole request-log line as the log writes it.
    fn line(route: &str, cost: Option<f64>, time_ms: u64) -> String {
        let entry = crate::telemetry::log::LogEntry {
            id: "req-1".into(),
            time_ms,
            api: "chat".into(),
            route: route.into(),
            key: Some("team".into()),
            stream: true,
            status: 200,
            provider: Some("p".into()),
            model: Some("m".into()),
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: cost,
            latency_ms: 1.5,
            ttft_ms: Some(0.5),
            error: None,
            dropped: Vec::new(),
            cache: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            sampled: false,
            content: None,
        };
        serde_json::to_string(&entry).unwrap()
    }

    #[tokio::test]
    async fn the_log_file_is_replayed_line_by_line_skipping_broken_lines() {
        let today = 1_795_969_375_000;
        let dir = std::env::temp_dir().join(format!("switchyard-restore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("requests.jsonl");
        let cut = line("paid", Some(4.0), today);
        let text = format!(
            "{}\n\n{}\n{}\n{}",
            line("paid", Some(0.25), today),
            line("free", Some(0.125), today),
            line("paid", None, today),
            &cut[..cut.len() / 2], // the crash cut the last line short
        );
        std::fs::write(&path, text).unwrap();
        let store = MemoryState::new();
        let (r, skipped) = replay_file(&config(), &path, &store, today).unwrap();
        assert_eq!(skipped, 1);
        assert_eq!(
            r.entries, 2,
            "the paid line counts for the route and the key, the free one for the key"
        );
        assert_eq!(r.spend, Money::from_usd(0.375));
        let route = store.budget("route:paid", Money::from_usd(1.0)).await;
        assert_eq!(route.spent, Money::from_usd(0.25));
        let key = store
            .budget("key:team:day:2026-11-29", Money::from_usd(2.0))
            .await;
        assert_eq!(key.spent, Money::from_usd(0.375));

        let missing = replay_file(&config(), &dir.join("absent.jsonl"), &store, today).unwrap();
        assert_eq!(missing, (Restored::default(), 0));
        // a log that is there but cannot be read is an error, not an empty log
        let unreadable = replay_file(&config(), &dir, &store, today);
        assert!(unreadable.is_err(), "{unreadable:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
