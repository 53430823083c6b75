//! What `serve` checks after the config is valid and before it listens, shared with `check`
//! so that `check` fails on exactly what `serve` would refuse, with the same messages: the
//! listen address (never public without client keys), the shutdown grace, the Redis
//! settings, and the request log (readable for the spend replay, openable for appending).
//!
//! Binding the socket is not checked: that is listening (and a running server would make
//! the check fail for the wrong reason).

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use switchyard::state::{RedisConfig, KV_MEMORY_BYTES};

use super::{duration, Config};

/// The listen address when neither the config nor `--listen` gives one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:4000";

/// Where `serve` listens: `--listen` (`cli`), else `[server] listen`, else
/// `DEFAULT_LISTEN`.
///
/// # Errors
/// Not an address, or a non-loopback address without `[[keys]]`.
pub fn listen_address(config: &Config, cli: Option<&str>) -> Result<SocketAddr, String> {
    let text = cli
        .or(config.server.listen.as_deref())
        .unwrap_or(DEFAULT_LISTEN);
    let addr: SocketAddr = text
        .parse()
        .map_err(|_| format!("{text:?} is not an address like 127.0.0.1:4000"))?;
    if !addr.ip().is_loopback() && config.keys.is_empty() {
        return Err(format!(
            "refusing to listen on {addr} without client keys: add [[keys]] (see `switchyard keys new NAME`) or listen on 127.0.0.1"
        ));
    }
    Ok(addr)
}

/// `[server] shutdown_grace` (default 10 s).
///
/// # Errors
/// Not a duration.
pub fn grace_period(config: &Config) -> Result<Duration, String> {
    config
        .server
        .shutdown_grace
        .as_deref()
        .map_or(Ok(Duration::from_secs(10)), duration)
}

/// The smallest `[state] memory_store_bytes` accepted.
pub const MIN_MEMORY_STORE_BYTES: usize = 1024 * 1024;

/// `[state] memory_store_bytes`: what stored conversations may cost this process's memory
/// (default [`KV_MEMORY_BYTES`]; a value `validate` refuses counts as unset).
#[must_use]
pub fn memory_store_bytes(config: &Config) -> usize {
    (config.state.as_ref())
        .and_then(|s| s.memory_store_bytes)
        .filter(|b| *b >= MIN_MEMORY_STORE_BYTES)
        .unwrap_or(KV_MEMORY_BYTES)
}

/// The Redis settings, when `[state] backend = "redis"`.
///
/// # Errors
/// A timeout that is not a duration.
pub fn redis_config(config: &Config) -> Result<Option<RedisConfig>, String> {
    let Some(state) = config
        .state
        .as_ref()
        .filter(|s| s.backend.as_deref() == Some("redis"))
    else {
        return Ok(None);
    };
    let mut cfg = RedisConfig::new(state.url.clone().unwrap_or_default());
    if let Some(prefix) = &state.prefix {
        cfg.prefix.clone_from(prefix);
    }
    if let Some(t) = &state.timeout {
        cfg.op_timeout = duration(t)?;
    }
    cfg.local_store_bytes = memory_store_bytes(config);
    cfg.store_url.clone_from(&state.store_url);
    Ok(Some(cfg))
}

/// How long `serve` and `check` wait to read the budget Redis's eviction policy.
pub const POLICY_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// What `serve` and `check` say of the eviction policy of the Redis that keeps budgets
/// (`[state] url`): `Err` for one that can evict budget books (they refuse to start), a
/// warning when it evicts other state or cannot be read, `None` when it is `noeviction` or
/// the backend is memory.
///
/// # Errors
/// An `allkeys-*` policy, or a `[state]` `serve` refuses anyway.
pub async fn redis_policy(config: &Config) -> Result<Option<String>, String> {
    let Some(redis) = redis_config(config)? else {
        return Ok(None);
    };
    switchyard::state::eviction_policy(&redis.url, POLICY_CHECK_TIMEOUT)
        .await
        .verdict(&redis.redacted_url())
}

/// Everything `serve` would refuse before listening, given `--listen` `cli`, in the words
/// `serve` uses (one message per problem; empty when it would start).
#[must_use]
pub fn preflight(config: &Config, cli: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(e) = listen_address(config, cli) {
        problems.push(e);
    }
    if let Err(e) = grace_period(config) {
        problems.push(e);
    }
    if let Err(e) = redis_config(config) {
        problems.push(e);
    }
    if let Some(path) = &config.server.request_log {
        let replays = redis_config(config).is_ok_and(|r| r.is_none());
        problems.extend(request_log(path, replays));
    }
    if let Some(t) = &config.telemetry {
        // the export headers' environment variables must be set
        if let Err(e) = t.otlp(&|name| std::env::var(name).ok()) {
            problems.push(e);
        }
        // so must the metrics token's
        if let Err(e) = t.metrics_token(&|name| std::env::var(name).ok()) {
            problems.push(e);
        }
    }
    problems
}

/// The request log at `path`: with the memory backend (`replays`) `serve` first reads it to
/// restore spend (a missing file is empty), then opens it for appending, creating it. The
/// first that fails is the problem. A file created here to find out is removed again.
fn request_log(path: &str, replays: bool) -> Option<String> {
    let p = Path::new(path);
    if replays {
        let readable = std::fs::File::open(p).and_then(|mut f| f.read(&mut [0u8; 1]));
        match readable {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Some(format!(
                    "reading the request log {path} to restore spend: {e}"
                ));
            }
            _ => {}
        }
    }
    let existed = p.symlink_metadata().is_ok();
    match crate::telemetry::log::open_for_append(p) {
        Err(e) => Some(format!("request log {path}: {e}")),
        Ok(file) => {
            drop(file);
            if !existed {
                let _ = std::fs::remove_file(p);
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(server: &str, keys: bool) -> Config {
        let keys = if keys {
            "[[keys]]\nname = \"team\"\nsha256 = \"3b5d7c8e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c\"\nroutes = [\"*\"]\n"
        } else {
            ""
        };
        let text = format!(
            "[server]\n{server}\n[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n{keys}"
        );
        super::super::parse(&text, "test").unwrap()
    }

    #[test]
    fn a_public_address_needs_keys() {
        let open = config("listen = \"0.0.0.0:4000\"", false);
        let e = listen_address(&open, None).unwrap_err();
        assert!(
            e.starts_with("refusing to listen on 0.0.0.0:4000 without client keys"),
            "{e}"
        );
        assert_eq!(preflight(&open, None), [e]);
        assert!(
            preflight(&open, Some("127.0.0.1:0")).is_empty(),
            "--listen wins"
        );
        assert!(preflight(&config("listen = \"0.0.0.0:4000\"", true), None).is_empty());
        assert_eq!(
            listen_address(&config("", false), None)
                .unwrap()
                .to_string(),
            DEFAULT_LISTEN
        );
    }

    #[test]
    fn an_export_header_needs_its_environment_variable() {
        let mut cfg = config("", false);
        cfg.telemetry = Some(
            toml::from_str(
                "otlp_endpoint = \"http://127.0.0.1:4318\"\n\
             otlp_headers = { \"x-token\" = \"SWITCHYARD_TEST_UNSET_COLLECTOR_TOKEN\" }\n",
            )
            .unwrap(),
        );
        assert_eq!(
            preflight(&cfg, None),
            ["telemetry.otlp_headers.x-token: environment variable SWITCHYARD_TEST_UNSET_COLLECTOR_TOKEN is not set"]
        );
    }

    #[test]
    fn the_metrics_token_needs_its_environment_variable() {
        let mut cfg = config("", false);
        cfg.telemetry = Some(
            toml::from_str("metrics_token_env = \"SWITCHYARD_TEST_UNSET_METRICS_TOKEN\"\n")
                .unwrap(),
        );
        assert_eq!(
            preflight(&cfg, None),
            ["telemetry.metrics_token_env: environment variable SWITCHYARD_TEST_UNSET_METRICS_TOKEN is not set"]
        );
    }

    #[test]
    fn the_request_log_must_be_writable_and_checking_it_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("switchyard-preflight-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("no-such-dir/requests.jsonl");
        let cfg = config(
            &format!("request_log = {:?}", missing.to_str().unwrap()),
            false,
        );
        let p = preflight(&cfg, None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(&format!("request log {}: ", missing.display())),
            "{p:?}"
        );

        let fresh = dir.join("requests.jsonl");
        let cfg = config(
            &format!("request_log = {:?}", fresh.to_str().unwrap()),
            false,
        );
        assert!(preflight(&cfg, None).is_empty());
        assert!(!fresh.exists(), "check creates no log file");
        std::fs::write(&fresh, "{}\n").unwrap();
        assert!(preflight(&cfg, None).is_empty());
        assert_eq!(
            std::fs::read_to_string(&fresh).unwrap(),
            "{}\n",
            "an existing log is kept as it was"
        );

        // a directory where the log should be: the spend replay is what fails first
        let cfg = config(&format!("request_log = {:?}", dir.to_str().unwrap()), false);
        let p = preflight(&cfg, None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("reading the request log "), "{p:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
