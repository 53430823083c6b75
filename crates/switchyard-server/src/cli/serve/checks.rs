//! The health checkers `serve` runs: one loop per provider with a `health_check`.
//!
//! Owns starting them on the [`Tasks`] tracker, under one holder id per process (the fleet
//! lease's holder: one checker per provider across replicas sharing a state store; the same
//! after a reload restarts them, so the new checker renews the old one's lease at once). The
//! loop, the lease and what a check does are the library's (`switchyard::health`,
//! `Gateway::check_provider`); results reach metrics, the ledger and `/admin/health`
//! through the gateway's observers. Each loop stops when `stop` is cancelled — when
//! shutdown begins, or when a reload replaces the gateway (`crate::reload`) — abandoning a
//! check in flight, so checks never delay shutdown.

use switchyard::Gateway;
use tokio_util::sync::CancellationToken;

use crate::config::{self, Config};
use crate::shutdown::Tasks;

/// Start a checker for every provider `config` gives a `health_check`, each until `stop`
/// (a child of `tasks.stopping()`); returns how many.
pub fn start(config: &Config, gateway: &Gateway, tasks: &Tasks, stop: CancellationToken) -> usize {
    let checks = config::health_checks(config);
    let holder = holder().to_owned();
    for (name, check) in &checks {
        let stop = stop.clone();
        tasks.spawn(switchyard::health::run(
            gateway.clone(),
            name.clone(),
            *check,
            holder.clone(),
            async move { stop.cancelled().await },
        ));
        tracing::info!(
            target: crate::telemetry::trace::SERVE,
            "health check of {name:?}: {} every {:?} (timeout {:?})",
            check.probe.label(),
            check.every,
            check.timeout
        );
    }
    checks.len()
}

/// This process's holder id for the checkers' leases (made once).
fn holder() -> &'static str {
    static HOLDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOLDER.get_or_init(|| format!("{:016x}", fastrand::u64(..)))
}
