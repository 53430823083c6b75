//! Spend that survives restarts with the memory backend: on start, the request log's
//! costs are replayed into the budgets they counted against — each route's, and each
//! key's for the current period. (The Redis backend keeps spend in Redis instead.)

use switchyard::gateway::budget_scope;
use switchyard::state::MemoryState;
use switchyard::Money;

use crate::config::Config;
use crate::keys::limits_of;
use crate::limits::key_scope;
use crate::log::LogEntry;

/// What was restored, for the startup message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Log lines whose cost counted toward some budget.
    pub entries: usize,
    /// Total restored across scopes.
    pub spend: Money,
}

/// Read a request log for replay: lines that do not parse (a line cut short by a crash)
/// are skipped and counted rather than refusing to start. A missing file is empty.
#[must_use]
pub fn read_tolerant(path: &std::path::Path) -> (Vec<LogEntry>, usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), 0);
    };
    let mut skipped = 0;
    let entries = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let e = serde_json::from_str(l).ok();
            skipped += usize::from(e.is_none());
            e
        })
        .collect();
    (entries, skipped)
}

/// Replay `entries` into `store`'s budgets as of `now`.
pub fn replay(config: &Config, entries: &[LogEntry], store: &MemoryState, now: u64) -> Restored {
    let mut restored = Restored::default();
    for e in entries {
        let Some(cost) = e.cost_usd.map(Money::from_usd) else {
            continue;
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
    restored
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::state::SharedState;

    fn entry(route: &str, key: Option<&str>, time_ms: u64, cost: Option<f64>) -> LogEntry {
        LogEntry {
            id: "r".into(),
            time_ms,
            route: route.into(),
            key: key.map(Into::into),
            stream: false,
            status: 200,
            provider: Some("p".into()),
            model: None,
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: cost,
            latency_ms: 1.0,
            ttft_ms: None,
            error: None,
        }
    }

    #[tokio::test]
    async fn route_and_current_period_key_spend_come_back() {
        let config = crate::config::parse(
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
        .unwrap();
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
        let r = replay(&config, &entries, &store, today);
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
}
