//! Hot reload: SIGHUP, `POST /admin/reload` and the file watch (`[server] watch_config`)
//! re-read the config file and swap in what it asks for (docs/operations.md, "Reloading
//! the configuration").
//!
//! Owns the [`Reloader`]: it validates the file exactly as `switchyard check` does (the
//! same parse, the same pre-listen checks as for the address actually listened on, the
//! same gateway build), and refuses a bad file whole — nothing changes, a `warn` line, the
//! `switchyard_config_reloads_total{result="error"}` counter and the endpoint's 422 say
//! why. A good file becomes a new gateway and key table on the *same* state store,
//! observers, clock and ledger, swapped in at once (`crate::http::state::Live`): requests
//! in flight finish on the state they started with; breaker, budget and rate-limit state
//! is the store's, by name: a provider's circuit carries over when its parsed definition
//! is unchanged, a route's or key's books and rate windows whenever it is still there
//! under its name (a raised budget keeps what was spent; only the limit changes), and a
//! removed one's are forgotten (`diff.rs`; a fleet store keeps the fleet's). Keys still
//! there keep their in-flight counts, under their new caps. Listeners and open connections are untouched. What only a restart applies (the
//! listen address, workers, the edge's limits, `[state]`, the request log, `[telemetry]`,
//! the watch itself) keeps its start-up value and is named in the answer as
//! `restart_needed`; the rest applies. Health checks restart on the new gateway. Tested in
//! process in `cli/serve/reload_tests.rs` (with the state `serve` builds), end to end in
//! `tests/e2e/reload.rs`.

mod diff;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};
use switchyard::clock::Clock;
use switchyard::observe::Observer;
use switchyard::state::SharedState;
use tokio_util::sync::CancellationToken;

pub use diff::{restart_needed, Changes, Diff};

use crate::access::keys::KeyStore;
use crate::config::{self, Config, Wiring};
use crate::http::{Live, Reloadable, DEFAULT_MAX_BODY_BYTES};
use crate::shutdown::Tasks;
use crate::telemetry::trace::SERVE;

/// How often the file watch looks at the file.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Looks an environment variable up (a provider's key, as `serve` does).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What `serve` built its first gateway with, for the next ones.
pub struct Parts {
    /// The config file.
    pub path: PathBuf,
    /// The address actually listened on: a reloaded file is checked as for
    /// `check --listen <it>` (so a file without keys cannot open a public listener).
    pub listen: String,
    /// The config the process started with.
    pub started: Config,
    /// The started file's text (its hash is the first in force).
    pub started_text: String,
    /// The state store.
    pub store: Arc<dyn SharedState>,
    /// The gateway's observers besides its ledger (metrics, insight, event lines).
    pub observers: Vec<Arc<dyn Observer>>,
    /// The clock.
    pub clock: Clock,
    /// Environment lookups.
    pub env: Env,
    /// `[telemetry] metrics_token_env`'s token, as read at start.
    pub metrics_token: Option<String>,
    /// Health checks (`None`: none are started, as in tests).
    pub checks: Option<HealthChecks>,
}

/// Starts the health checks `config` asks for on `gateway`, on `tasks`, until the token
/// (`serve`'s `checks::start`); returns how many.
pub type StartChecks = fn(&Config, &switchyard::Gateway, &Tasks, CancellationToken) -> usize;

/// Where and how a reload restarts the health checks.
pub struct HealthChecks {
    /// Their tasks' tracker.
    pub tasks: Tasks,
    /// What starts them.
    pub start: StartChecks,
}

/// A reload that was applied.
#[derive(Debug, Clone, Serialize)]
pub struct Reloaded {
    /// The file.
    pub source: String,
    /// First 12 hex digits of the SHA-256 of the text now in force.
    pub hash: String,
    /// False when the file defines exactly what was in force (nothing swapped).
    pub applied: bool,
    /// What changed.
    #[serde(flatten)]
    pub diff: Diff,
    /// What the operator should hear about the new config (as `check` prints them).
    pub warnings: Vec<String>,
}

/// A reload that was refused: nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The file.
    pub source: String,
    /// Every problem, as `check` words it.
    pub problems: Vec<String>,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: reload refused, nothing changed: {}",
            self.source,
            self.problems.join("; ")
        )
    }
}

/// What is in force.
struct Current {
    config: Config,
    hash: [u8; 32],
    /// Cancels the health checks of the gateway in force.
    checks: CancellationToken,
}

/// Re-reads the config file and swaps in what it asks for (see the module docs).
pub struct Reloader {
    parts: Parts,
    live: Live,
    /// Held for a whole reload: one at a time.
    current: Mutex<Current>,
}

impl Reloader {
    /// A reloader swapping into `live`, which runs what `parts.started` defines.
    #[must_use]
    pub fn new(parts: Parts, live: Live) -> Self {
        let hash: [u8; 32] = Sha256::digest(parts.started_text.as_bytes()).into();
        let state = live.current();
        state
            .metrics
            .config_loaded(hash48(&hash), unix_seconds(&parts.clock));
        let current = Current {
            config: parts.started.clone(),
            hash,
            checks: CancellationToken::new(),
        };
        Self {
            parts,
            live,
            current: Mutex::new(current),
        }
    }

    /// Start the health checks of the config in force (again after each reload).
    pub fn start_checks(&self) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        self.restart_checks(&mut current);
    }

    fn restart_checks(&self, current: &mut Current) {
        current.checks.cancel();
        let Some(checks) = &self.parts.checks else {
            return;
        };
        current.checks = checks.tasks.stopping().child_token();
        let gateway = self.live.current().gateway.clone();
        (checks.start)(
            &current.config,
            &gateway,
            &checks.tasks,
            current.checks.clone(),
        );
    }

    /// Re-read the file; `trigger` says what asked (for the log line).
    ///
    /// # Errors
    /// Every problem `check` would report; nothing changed.
    pub fn reload(&self, trigger: &str) -> Result<Reloaded, Refused> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let metrics = Arc::clone(&self.live.current().metrics);
        let source = self.parts.path.display().to_string();
        match self.try_reload(&mut current, &source) {
            Ok(done) => {
                metrics.config_reloaded(hash48(&current.hash), unix_seconds(&self.parts.clock));
                tracing::info!(target: SERVE, "{}", applied_line(trigger, &done));
                for w in &done.warnings {
                    tracing::warn!(target: SERVE, "config: {w}");
                }
                for w in &done.diff.restart_needed {
                    tracing::warn!(
                        target: SERVE,
                        "config reload: {w} differs from the running value and needs a restart"
                    );
                }
                Ok(done)
            }
            Err(problems) => {
                metrics.config_refused();
                let refused = Refused { source, problems };
                tracing::warn!(target: SERVE, "config reload ({trigger}): {refused}");
                Err(refused)
            }
        }
    }

    fn try_reload(&self, current: &mut Current, source: &str) -> Result<Reloaded, Vec<String>> {
        let text = std::fs::read_to_string(&self.parts.path)
            .map_err(|e| vec![format!("cannot read: {e}")])?;
        let config = config::parse(&text, source).map_err(|e| e.problems)?;
        let refused = config::preflight(&config, Some(&self.parts.listen));
        if !refused.is_empty() {
            return Err(refused);
        }
        let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let diff = Diff::of(&self.parts.started, &current.config, &config);
        if !diff.applies_anything() {
            current.hash = hash;
            current.config = config;
            return Ok(Reloaded {
                source: source.to_owned(),
                hash: hex::encode(&hash[..6]),
                applied: false,
                diff,
                warnings: Vec::new(),
            });
        }
        let old = self.live.current();
        let wiring = Wiring {
            observers: self.parts.observers.clone(),
            store: Some(Arc::clone(&self.parts.store)),
            clock: Some(self.parts.clock),
            ledger: Some(old.gateway.shared_ledger()),
        };
        let env = |name: &str| (self.parts.env)(name);
        let built = config::build_gateway(&config, &env, true, wiring).map_err(|e| vec![e])?;
        let mut warnings = built.warnings;
        warnings.extend(config::warnings(
            &config,
            &built.gateway,
            self.parts.clock.system_time(),
        ));
        let max_in_flight = (self.parts.started.server.max_in_flight)
            .unwrap_or(crate::http::edge::DEFAULT_MAX_IN_FLIGHT);
        let keys = KeyStore::with_in_flight_default(&config.keys, max_in_flight)
            .with_metrics_token(self.parts.metrics_token.as_deref())
            .carrying_in_flight(&old.keys, &diff.remaining_keys())
            .with_dynamic_of(&old.keys);
        let next = old.reloaded(Reloadable {
            gateway: built.gateway,
            keys,
            max_body_bytes: (config.server.max_body_bytes).unwrap_or(DEFAULT_MAX_BODY_BYTES),
            expansion: config::expansion_limits(&config),
            allowed_origins: crate::http::origins::AllowedOrigins::new(
                &config.server.allowed_origins,
            ),
            stored_responses: config::stored_responses(&config),
            threads: config::thread_limits(&config),
            cache: config::response_cache(&config),
        });
        // what the changed and removed definitions leave behind goes just before the swap
        let forget = diff.forget();
        if !forget.is_empty() {
            self.parts.store.forget(&forget);
        }
        (old.metrics).set_usage_labels(config::usage_labels(&config));
        self.live.swap(crate::http::AppState(Arc::new(next)));
        current.config = config;
        current.hash = hash;
        self.restart_checks(current);
        Ok(Reloaded {
            source: source.to_owned(),
            hash: hex::encode(&hash[..6]),
            applied: true,
            diff,
            warnings,
        })
    }

    fn in_force_hash(&self) -> [u8; 32] {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hash
    }

    /// SHA-256 of the file's text now (`None`: unreadable), for the watch.
    fn file_hash(&self) -> Option<[u8; 32]> {
        let text = std::fs::read(&self.parts.path).ok()?;
        Some(Sha256::digest(&text).into())
    }

    /// Reload on every SIGHUP until `stop`.
    pub async fn on_sighup(self: Arc<Self>, stop: CancellationToken) {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut hup) = signal(SignalKind::hangup()) else {
                tracing::warn!(target: SERVE, "cannot listen for SIGHUP: reload with POST /admin/reload");
                return;
            };
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    got = hup.recv() => if got.is_none() { return },
                }
                let _ = self.reload("SIGHUP");
            }
        }
        #[cfg(not(unix))]
        stop.cancelled().await;
    }

    /// Reload whenever the file's text changes (looked at every `every`) until `stop`; a
    /// file that stays bad is refused once, not every time it is looked at.
    pub async fn watch(self: Arc<Self>, every: Duration, stop: CancellationToken) {
        // what is in force counts as seen: a file changed before the first look reloads
        let mut seen = Some(self.in_force_hash());
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let now = self.file_hash();
            if now.is_none() || now == seen {
                continue;
            }
            seen = now;
            if now != Some(self.in_force_hash()) {
                let _ = self.reload("file watch");
            }
        }
    }
}

impl crate::http::Reload for Reloader {
    fn reload(&self, trigger: &str) -> Result<serde_json::Value, crate::http::ReloadRefused> {
        match Reloader::reload(self, trigger) {
            Ok(done) => Ok(serde_json::to_value(&done).unwrap_or_default()),
            Err(refused) => Err(crate::http::ReloadRefused {
                message: refused.to_string(),
                source: refused.source,
                problems: refused.problems,
            }),
        }
    }
}

/// The `info` line of an applied reload.
fn applied_line(trigger: &str, done: &Reloaded) -> String {
    if !done.applied {
        return format!(
            "config reload ({trigger}): {} defines what is in force already; nothing changed",
            done.source
        );
    }
    let d = &done.diff;
    let part = |what: &str, c: &Changes| {
        let mut out = Vec::new();
        for (verb, names) in [
            ("added", &c.added),
            ("removed", &c.removed),
            ("changed", &c.changed),
        ] {
            if !names.is_empty() {
                out.push(format!("{verb} {}", names.join(", ")));
            }
        }
        (!out.is_empty()).then(|| format!("{what} {}", out.join("; ")))
    };
    let mut parts: Vec<String> = [
        part("providers", &d.providers),
        part("routes", &d.routes),
        part("keys", &d.keys),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !d.settings.is_empty() {
        parts.push(format!("settings {}", d.settings.join(", ")));
    }
    format!(
        "config reloaded ({trigger}) from {} ({}): {}",
        done.source,
        done.hash,
        parts.join("; ")
    )
}

/// The first 48 bits of a hash (exact in a Prometheus float).
fn hash48(hash: &[u8; 32]) -> u64 {
    hash[..6].iter().fold(0, |n, b| (n << 8) | u64::from(*b))
}

fn unix_seconds(clock: &Clock) -> f64 {
    clock
        .system_time()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Serving the embedded default (no file): SIGHUP reloads nothing, and says so (rather
/// than end the process, SIGHUP's default), until `stop`.
pub async fn sighup_without_file(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return;
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                got = hup.recv() => if got.is_none() { return },
            }
            tracing::warn!(
                target: SERVE,
                "SIGHUP: serving the embedded default (no --config), nothing to reload"
            );
        }
    }
    #[cfg(not(unix))]
    stop.cancelled().await;
}
