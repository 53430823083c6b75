//! `switchyard serve`: load the config, build the gateway, listen, and shut down cleanly.
//!
//! Owns startup (config or the embedded default, the loopback-without-keys refusal,
//! the config's warnings said once each at start — the list `switchyard check` prints —
//! the request log, the edge's limits, the lines that say what happened to traffic) and
//! the shutdown sequence: on SIGTERM /
//! Ctrl-C stop accepting, mark not-ready, close idle connections and let in-flight
//! requests finish within the grace period; at its end, end every open stream with an
//! error event (logged, status 503), close what is left, and wait briefly for the request
//! log to flush — the process exits within the grace period plus [`AFTER_GRACE`] and the
//! runtime's shutdown.
//!
//! Every line `serve` writes goes through the `tracing` subscriber on stderr (target
//! `switchyard::serve`, shown whatever `RUST_LOG` says), so `--log-format json` makes each
//! one JSON; stdout carries nothing but the access log.

mod checks;
#[cfg(test)]
mod reload_tests;
mod restore;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::http::app::FastPath;
use crate::http::edge::{Edge, Limits};
use crate::http::{app_live, AppState, Live, Shared, DEFAULT_MAX_BODY_BYTES};
use crate::reload;
use switchyard::clock::Clock;
use switchyard::state::{MemoryState, RedisConfig, RedisState, SharedState};

use crate::access::keys::KeyStore;
use crate::config::{self, Config, Wiring, EMBEDDED_DEFAULT};
use crate::shutdown::{self, Tasks};
use crate::telemetry::access::AccessLog;
use crate::telemetry::events::Events;
use crate::telemetry::insight::Insight;
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;
use crate::telemetry::otlp::{Traces, Upstream};
use crate::telemetry::trace::{LogFormat, SERVE};

/// After the grace period: the longest shutdown still takes (final stream events,
/// closing connections, flushing the request log).
pub const AFTER_GRACE: Duration = Duration::from_millis(900);
/// Of [`AFTER_GRACE`], how long connections get to deliver their final stream events
/// before they are closed.
const FINAL_EVENTS: Duration = Duration::from_millis(300);
/// Of [`AFTER_GRACE`], how long closed connections get to finish their tasks.
const CLOSE_WAIT: Duration = Duration::from_millis(200);
/// The least time the request log gets to flush, however late.
const MIN_FLUSH: Duration = Duration::from_millis(100);
/// How long the runtime waits for its blocking threads when the server has stopped.
const RUNTIME_SHUTDOWN: Duration = Duration::from_millis(100);

/// `switchyard serve` options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Config file (TOML). Without it, the embedded default: simulated providers, no keys.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override `[server] listen` (e.g. `127.0.0.1:0` for any free port).
    #[arg(long)]
    pub listen: Option<String>,
}

/// Load the config named by `path`, or the embedded default.
///
/// # Errors
/// Every problem in the file.
pub fn load(path: Option<&std::path::Path>) -> Result<(Config, String), String> {
    match path {
        Some(p) => Ok((
            config::load(p).map_err(|e| e.to_string())?,
            p.display().to_string(),
        )),
        None => Ok((
            config::parse(EMBEDDED_DEFAULT, "embedded default").map_err(|e| e.to_string())?,
            "embedded default (simulated providers)".to_owned(),
        )),
    }
}

/// Run the server until a shutdown signal.
///
/// # Errors
/// Bad config, a refused listen address, or a socket that cannot be bound.
pub fn run(args: &ServeArgs, log_format: Option<LogFormat>) -> Result<(), String> {
    let loaded = load(args.config.as_deref());
    let configured = loaded.as_ref().ok().map(|(config, _)| {
        crate::config::telemetry::log_format(
            config.server.log_format.as_deref(),
            config.telemetry.as_ref(),
        )
    });
    // installed before anything can fail: the error is said in the format asked for (the
    // flag's, when the config could not be read)
    crate::telemetry::trace::install(log_format.or(configured).unwrap_or_default());
    let (config, source) = loaded?;
    let rt =
        runtime(config.server.workers).map_err(|e| format!("cannot start the runtime: {e}"))?;
    let result = rt.block_on(serve(args, config, source));
    // a blocking write stuck in the kernel must not hold the exit past the grace period
    rt.shutdown_timeout(RUNTIME_SHUTDOWN);
    result
}

/// The runtime `[server] workers` asks for: by default one worker thread per available core;
/// `workers = 1` is tokio's single-threaded scheduler (on one core it spent less CPU per
/// request than one multi-threaded worker at 16 and more concurrent requests, the same at
/// one, and cut the p99 at 256 from ~58 to 15–18 ms, at ~3 MB more peak RSS: BENCHMARKS.md,
/// `bench/ab workers`).
fn runtime(workers: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match workers {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build()
}

async fn serve(args: &ServeArgs, config: Config, source: String) -> Result<(), String> {
    let listen = listen_address(&config, args.listen.as_deref())?;
    let tasks = Tasks::new();
    let clock = Clock::system();
    let (state, wired) = build_state(&config, clock, &tasks).await?;
    let limits = Limits::from_config(&config)?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let routes: Vec<&str> = state
        .gateway
        .routes()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    tracing::info!(
        target: SERVE,
        "switchyard listening on http://{local} ({source}; routes: {}; up to {} connections; {workers} worker thread{})",
        routes.join(", "),
        limits.max_connections,
        if workers == 1 { "" } else { "s" },
    );
    let mut live = Live::new(state.clone());
    match &args.config {
        Some(path) => {
            let parts = reload::Parts {
                path: path.clone(),
                listen: local.to_string(),
                started_text: std::fs::read_to_string(path).unwrap_or_default(),
                started: config.clone(),
                store: wired.store,
                observers: wired.observers,
                clock,
                env: Arc::new(|name: &str| std::env::var(name).ok()),
                metrics_token: wired.metrics_token,
                checks: Some(reload::HealthChecks {
                    tasks: tasks.clone(),
                    start: checks::start,
                }),
            };
            let reloader = Arc::new(reload::Reloader::new(parts, live.clone()));
            reloader.start_checks();
            tasks.spawn(Arc::clone(&reloader).on_sighup(tasks.stopping()));
            if config.server.watch_config == Some(true) {
                tracing::info!(
                    target: SERVE,
                    "watching {} for changes (every {:?})",
                    path.display(),
                    reload::WATCH_EVERY
                );
                tasks.spawn(Arc::clone(&reloader).watch(reload::WATCH_EVERY, tasks.stopping()));
            }
            live = live.with_reloader(reloader);
        }
        None => {
            checks::start(&config, &state.gateway, &tasks, tasks.stopping());
            tasks.spawn(reload::sighup_without_file(tasks.stopping()));
        }
    }
    state.ready.store(true, Ordering::SeqCst);
    // from here the router (and a reloader) hold the state: held here too, its request log's
    // writer would outlive the router and every shutdown would wait out its whole grace
    drop(state);
    let grace = grace_period(&config)?;
    let stop_by = serve_until_signal(listener, live, limits, grace).await;
    let flush = stop_by
        .saturating_duration_since(Instant::now())
        .max(MIN_FLUSH);
    if !tasks.close(flush).await {
        tracing::warn!(
            target: SERVE,
            "background tasks (the request log) did not finish in time"
        );
    }
    Ok(())
}

/// What `build_state` wired the gateway with, for the gateways a reload builds.
pub struct Wired {
    /// The state store.
    pub store: Arc<dyn SharedState>,
    /// The gateway's observers besides its ledger.
    pub observers: Vec<Arc<dyn switchyard::observe::Observer>>,
    /// `[telemetry] metrics_token_env`'s token.
    pub metrics_token: Option<String>,
}

/// The handlers' state `config` asks for, as `serve` builds it before listening: the
/// state store (Redis, or memory with the request log's spend restored), the gateway with
/// metrics, insight and the event lines observing it, the request log (its writer on
/// `tasks`), the keys. The config's warnings are said once each (`warn`, stderr). Not
/// ready (`/readyz`) until the caller says so; drive it
/// with `crate::http::app`, in process or behind the edge.
pub async fn build_state(
    config: &Config,
    clock: Clock,
    tasks: &Tasks,
) -> Result<(AppState, Wired), String> {
    let metrics = Arc::new(Metrics::with_usage_labels(config::usage_labels(config)));
    let env = |name: &str| std::env::var(name).ok();
    let store = state_store(config, clock, tasks).await?;
    let insight = Arc::new(Insight::new(clock));
    let events = Arc::new(Events::new(clock));
    tasks.spawn(Arc::clone(&events).run(tasks.stopping()));
    let observers: Vec<Arc<dyn switchyard::observe::Observer>> =
        vec![metrics.clone(), insight.clone(), events];
    let wiring = Wiring {
        observers: observers.clone(),
        store: Some(Arc::clone(&store)),
        clock: Some(clock),
        ledger: None,
    };
    let built = config::build_gateway(config, &env, true, wiring)?;
    let extra = config::warnings(config, &built.gateway, clock.system_time());
    for w in built.warnings.iter().chain(&extra) {
        tracing::warn!(target: SERVE, "config: {w}");
    }
    let mut log = match &config.server.request_log {
        Some(path) => RequestLog::open(path.as_ref(), tasks)
            .await
            .map_err(|e| format!("request log {path}: {e}"))?,
        None => RequestLog::disabled(),
    }
    .with_tap(insight.clone())
    .with_tap(metrics.clone());
    let telemetry = config.telemetry.clone().unwrap_or_default();
    let metrics_token = telemetry.metrics_token(&env)?;
    tasks.spawn(Arc::clone(log.refusals()).run(tasks.stopping()));
    let access = if telemetry.access_log == Some(true) {
        let access = AccessLog::stdout(tasks).map_err(|e| format!("access log: {e}"))?;
        log = log.with_tap(access.clone());
        Some(access)
    } else {
        None
    };
    let traces = match telemetry.otlp(&env)? {
        Some(settings) => {
            let providers = upstreams(config, &built.gateway);
            let traces = Traces::start(&settings, providers, tasks)?;
            log = log.with_tap(traces.clone());
            Some(traces)
        }
        None => None,
    };
    let max_in_flight =
        (config.server.max_in_flight).unwrap_or(crate::http::edge::DEFAULT_MAX_IN_FLIGHT);
    let mut keys = KeyStore::with_in_flight_default(&config.keys, max_in_flight)
        .with_metrics_token(metrics_token.as_deref());
    let database = database(config, &env, clock, max_in_flight, tasks).await?;
    if let Some(db) = &database {
        keys = keys.with_dynamic(Arc::clone(db.keys()));
    }
    let state = AppState(Arc::new(Shared {
        gateway: built.gateway,
        keys,
        metrics,
        log,
        insight,
        max_body_bytes: config
            .server
            .max_body_bytes
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        expansion: crate::config::expansion_limits(config),
        ready: Arc::new(AtomicBool::new(false)),
        allowed_origins: crate::http::origins::AllowedOrigins::new(&config.server.allowed_origins),
        grace_over: CancellationToken::new(),
        stored_responses: crate::config::stored_responses(config),
        threads: crate::config::thread_limits(config),
        traces,
        access,
        cache: crate::config::response_cache(config),
        database,
    }));
    let wired = Wired {
        store,
        observers,
        metrics_token,
    };
    Ok((state, wired))
}

/// The database `[database]` asks for: migrated now when it answers (when it does not, the
/// gateway starts anyway on its configured keys and the sync task keeps trying), its key
/// sync and spend writer started on `tasks`.
async fn database(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
    clock: Clock,
    max_in_flight: usize,
    tasks: &Tasks,
) -> Result<Option<Arc<crate::database::Database>>, String> {
    let Some(settings) = config::database::settings(config, env)? else {
        return Ok(None);
    };
    let keys = Arc::new(crate::access::dynamic::DynamicKeys::new(
        clock,
        max_in_flight,
    ));
    let db = crate::database::Database::new(&settings, keys, clock)?;
    match db.migrate().await {
        Ok(n) => tracing::info!(
            target: SERVE,
            "database: connected{}",
            if n > 0 { format!(", {n} migration(s) applied") } else { String::new() }
        ),
        Err(e) => tracing::warn!(
            target: SERVE,
            "database: {e}; serving the configured keys until it answers"
        ),
    }
    let log = config.server.request_log.as_ref().map(PathBuf::from);
    db.start(tasks, log);
    Ok(Some(db))
}

/// Each configured provider's kind and upstream address, as its calls' spans name them.
fn upstreams(config: &Config, gateway: &switchyard::Gateway) -> HashMap<String, Upstream> {
    let address = |name: &str| {
        let spec = gateway.providers().into_iter().find(|p| p.name == name)?;
        let (host, port) = spec.provider.upstream()?;
        Some((host.to_owned(), port))
    };
    (config.providers.iter())
        .map(|p| {
            let kind = if p.kind.is_empty() { "openai" } else { &p.kind };
            let upstream = Upstream {
                kind: kind.to_owned(),
                address: address(&p.name),
            };
            (p.name.clone(), upstream)
        })
        .collect()
}

/// Serve until the signal, then shut down: not ready, idle connections closed, in-flight
/// requests given `grace`; then open streams are ended and the rest closed. Returns when
/// the whole shutdown must be over. Dropping the last router with the connections lets
/// the request log's writer finish.
async fn serve_until_signal(
    listener: TcpListener,
    live: Live,
    limits: Limits,
    grace: Duration,
) -> Instant {
    // One router for every connection, built once: each request gets a clone of it (a
    // reference count), never a rebuilt route table; a reload swaps the state under it.
    // The model APIs' requests that need nothing of the router but their handler skip it
    // (`crate::http::app::FastPath`): the same handlers over the same live state.
    let edge = Edge::with_fast_path(limits, app_live(live.clone()), FastPath::new(live.clone()));
    let conns = Tasks::new();
    edge.accept_until(listener, &conns, shutdown::signal())
        .await;
    let deadline = Instant::now() + grace;
    // every state a reload swaps in shares the readiness flag and the grace signal
    let state = live.current();
    state.ready.store(false, Ordering::SeqCst);
    tracing::info!(
        target: SERVE,
        "shutting down; in-flight requests have {grace:?}"
    );
    edge.drain();
    if conns.wait(grace).await {
        return deadline + AFTER_GRACE;
    }
    tracing::warn!(
        target: SERVE,
        "grace period over; ending {} open connection(s): streams get an error event",
        edge.open_connections()
    );
    state.grace_over.cancel();
    if !conns.wait(FINAL_EVENTS).await {
        edge.close_all();
        if !conns.wait(CLOSE_WAIT).await {
            tracing::warn!(target: SERVE, "some connections did not close in time");
        }
    }
    deadline + AFTER_GRACE
}

/// The state store `[state]` asks for. The memory backend gets back the spend its
/// request log recorded, so budgets survive restarts.
async fn state_store(
    config: &Config,
    clock: Clock,
    tasks: &Tasks,
) -> Result<Arc<dyn SharedState>, String> {
    if let Some(redis) = redis_config(config)? {
        // budgets evicted are budgets reset: refuse an allkeys-* policy, say the rest
        if let Some(warning) = config::redis_policy(config).await? {
            tracing::warn!(target: SERVE, "{warning}");
        }
        let store = RedisState::connect(redis, clock).await;
        tasks.spawn(store.background(tasks.stopping()));
        let status = store.status();
        if !status.connected {
            tracing::warn!(
                target: SERVE,
                "Redis is not answering ({}); serving on local state until it does",
                status.last_error.unwrap_or_default()
            );
        }
        return Ok(Arc::new(store));
    }
    let memory = Arc::new(MemoryState::with_kv_limit(config::memory_store_bytes(
        config,
    )));
    if let Some(path) = &config.server.request_log {
        let (r, skipped) = restore::replay_file(config, path.as_ref(), &memory, clock.unix_ms())
            .map_err(|e| format!("reading the request log {path} to restore spend: {e}"))?;
        if r.entries > 0 || skipped > 0 {
            tracing::info!(
                target: SERVE,
                "restored {} of spend from {} request-log line(s) in {path}{}",
                r.spend,
                r.entries,
                if skipped > 0 {
                    format!(" ({skipped} unreadable line(s) skipped)")
                } else {
                    String::new()
                }
            );
        }
    }
    Ok(memory)
}

/// The Redis settings, when `[state] backend = "redis"` (shared with `check`).
fn redis_config(config: &Config) -> Result<Option<RedisConfig>, String> {
    config::redis_config(config)
}

/// Where to listen; refused when public without keys (shared with `check`).
fn listen_address(config: &Config, cli: Option<&str>) -> Result<SocketAddr, String> {
    config::listen_address(config, cli)
}

fn grace_period(config: &Config) -> Result<Duration, String> {
    config::grace_period(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_non_loopback_without_keys() {
        let (config, _) = load(None).unwrap();
        let e = listen_address(&config, Some("0.0.0.0:4000")).unwrap_err();
        assert!(e.contains("without client keys"), "{e}");
        assert!(listen_address(&config, Some("127.0.0.1:0")).is_ok());
        assert!(listen_address(&config, Some("[::1]:4000")).is_ok());
    }
}
