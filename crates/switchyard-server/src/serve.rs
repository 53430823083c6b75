//! `switchyard serve`: load the config, build the gateway, listen, and shut down cleanly.
//!
//! Owns startup (config or the embedded default, the loopback-without-keys refusal,
//! warnings, the request log, `TCP_NODELAY`) and the shutdown sequence: on SIGTERM / Ctrl-C
//! stop accepting, mark not-ready, give in-flight requests the grace period, then wait for
//! the request log to flush.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

use crate::app::{app, AppState, Shared, DEFAULT_MAX_BODY_BYTES};
use switchyard::clock::Clock;
use switchyard::state::{MemoryState, RedisConfig, RedisState, SharedState};

use crate::config::{self, Config, Wiring, EMBEDDED_DEFAULT};
use crate::insight::Insight;
use crate::keys::KeyStore;
use crate::log::RequestLog;
use crate::metrics::Metrics;
use crate::restore;
use crate::shutdown::{self, Tasks};

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
pub fn run(args: &ServeArgs) -> Result<(), String> {
    let (config, source) = load(args.config.as_deref())?;
    runtime(config.server.workers)
        .map_err(|e| format!("cannot start the runtime: {e}"))?
        .block_on(serve(args, config, source))
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
    let metrics = Arc::new(Metrics::new());
    let env = |name: &str| std::env::var(name).ok();
    let clock = Clock::system();
    let store = state_store(&config, clock, &tasks).await?;
    let insight = Arc::new(Insight::new(clock));
    let wiring = Wiring {
        observers: vec![metrics.clone(), insight.clone()],
        store: Some(store),
        clock: Some(clock),
    };
    let built = config::build_gateway(&config, &env, true, wiring)?;
    for w in &built.warnings {
        eprintln!("switchyard: warning: {w}");
    }
    let log = match &config.server.request_log {
        Some(path) => RequestLog::open(path.as_ref(), &tasks)
            .await
            .map_err(|e| format!("request log {path}: {e}"))?,
        None => RequestLog::disabled(),
    }
    .with_tap(insight.clone());
    let state = AppState(Arc::new(Shared {
        gateway: built.gateway,
        keys: KeyStore::new(&config.keys),
        metrics,
        log,
        insight,
        max_body_bytes: config
            .server
            .max_body_bytes
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        ready: AtomicBool::new(false),
        allowed_origins: crate::guard::AllowedOrigins::new(&config.server.allowed_origins),
    }));
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let routes: Vec<&str> = state
        .gateway
        .routes()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    println!(
        "switchyard listening on http://{local} ({source}; routes: {}; {workers} worker thread{})",
        routes.join(", "),
        if workers == 1 { "" } else { "s" }
    );
    crate::checks::start(&config, &state.gateway, &tasks);
    state.ready.store(true, Ordering::SeqCst);
    let grace = grace_period(&config)?;
    drain(listener, state, grace).await;
    if !tasks.close(grace).await {
        eprintln!("switchyard: warning: background tasks did not finish within {grace:?}");
    }
    Ok(())
}

/// Serve until the signal, then give in-flight requests `grace` to finish.
async fn drain(
    listener: impl axum::serve::Listener<Addr = SocketAddr>,
    state: AppState,
    grace: Duration,
) {
    let stopping = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&stopping);
    let ready_state = state.clone();
    // One router for every connection: served as a `Router` itself, axum rebuilds its route
    // table for each new connection (`with_state` per accept: allocations and a few KB held
    // per open connection); `into_make_service` builds it once and hands out clones of it.
    let make_service = app(state).into_make_service();
    let server = axum::serve(listener, make_service).with_graceful_shutdown(async move {
        shutdown::signal().await;
        ready_state.ready.store(false, Ordering::SeqCst);
        eprintln!("switchyard: shutting down; in-flight requests have {grace:?}");
        notify.notify_one();
    });
    tokio::select! {
        r = server => {
            if let Err(e) = r {
                eprintln!("switchyard: server error: {e}");
            }
        }
        () = async { stopping.notified().await; tokio::time::sleep(grace).await } => {
            eprintln!("switchyard: grace period over; dropping remaining connections");
        }
    }
}

/// The state store `[state]` asks for. The memory backend gets back the spend its
/// request log recorded, so budgets survive restarts.
async fn state_store(
    config: &Config,
    clock: Clock,
    tasks: &Tasks,
) -> Result<Arc<dyn SharedState>, String> {
    if let Some(redis) = redis_config(config)? {
        let store = RedisState::connect(redis, clock).await;
        tasks.spawn(store.background(tasks.stopping()));
        let status = store.status();
        if !status.connected {
            eprintln!(
                "switchyard: warning: Redis is not answering ({}); serving on local state until it does",
                status.last_error.unwrap_or_default()
            );
        }
        return Ok(Arc::new(store));
    }
    let memory = Arc::new(MemoryState::new());
    if let Some(path) = &config.server.request_log {
        let (r, skipped) = restore::replay_file(config, path.as_ref(), &memory, clock.unix_ms())
            .map_err(|e| format!("reading the request log {path} to restore spend: {e}"))?;
        if r.entries > 0 || skipped > 0 {
            eprintln!(
                "switchyard: restored {} of spend from {} request-log line(s) in {path}{}",
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
