//! The configuration file: schema, loading, and validation.
//!
//! Owns the TOML contract with users (`[server]`, `[[providers]]`, `[[routes]]`,
//! `[[keys]]`, `[state]`, `[responses]`, `[threads]`, `[telemetry]`, names as in `switchyard.example.toml`) and turns a file into a checked [`Config`]:
//! unknown fields are refused, each with the field meant (`suggest.rs`: `timout` → did you
//! mean `timeout`?); everything else (durations, references, prices,
//! names) is checked here, and *every* problem is reported at once with its path, e.g.
//! `routes[1].providers[2]: no provider named "gtp"`. Secrets appear only as env-var names,
//! and what looks like one is masked in every problem. Timeouts a route's deadline leaves
//! no room for are warnings (`deadlines.rs`).
//! Building providers and the gateway from a valid config is `build`'s job.

mod apis;
mod bedrock;
mod build;
mod cache;
mod clouds;
pub mod database;
mod deadlines;
mod health;
mod preflight;
pub mod presets;
mod providers;
mod schema;
mod suggest;
pub mod telemetry;
mod threads;
mod warnings;

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

pub use apis::{route_api, serves};
pub use bedrock::credentials_source;
#[cfg(test)]
pub use build::resolve_key;
pub use build::{build_gateway, provider_spec, route_of, KeyLookup, Wiring};
pub use cache::{response_cache, CacheToml, RouteCacheToml};
pub use health::health_checks;
pub use preflight::{
    grace_period, listen_address, memory_store_bytes, preflight, redis_config, redis_policy,
};
pub use schema::{
    BreakerToml, Config, HealthCheckToml, KeyToml, ProviderToml, RetryToml, RouteToml,
};
pub use suggest::{looks_like_secret, mask_secrets};
pub use threads::{thread_limits, ThreadLimits, ThreadsToml};
pub use warnings::{warnings, STALE_PRICES_DAYS};

/// The config compiled into the binary: simulated providers, no keys needed.
pub const EMBEDDED_DEFAULT: &str = include_str!("../default.toml");

/// Why a config was refused: every problem, each with its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the config came from (a path, or "embedded default").
    pub source: String,
    /// `path: problem`, one per line.
    pub problems: Vec<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} problem(s)", self.source, self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Read and validate a config file.
///
/// # Errors
/// Unreadable file, TOML or schema errors, or validation problems (all of them).
pub fn load(path: &std::path::Path) -> Result<Config, ConfigError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        source: source.clone(),
        problems: vec![format!("cannot read: {e}")],
    })?;
    parse(&text, &source)
}

/// Parse and validate config text. `check` and `serve` both come here, so they refuse a
/// file in the same words.
///
/// # Errors
/// A TOML error; else every unknown field, each with the field meant
/// (`suggest::unknown_fields`); else a schema error (serde stops at the first); else every
/// validation problem. Whatever looks like a secret is masked in all of them.
pub fn parse(text: &str, source: &str) -> Result<Config, ConfigError> {
    let refuse = |problems: Vec<String>| ConfigError {
        source: source.to_owned(),
        problems: problems.iter().map(|p| suggest::mask_secrets(p)).collect(),
    };
    let toml_error =
        |e: toml::de::Error| refuse(vec![e.to_string().trim_end().replace('\n', "\n    ")]);
    let table: toml::Table = toml::from_str(text).map_err(toml_error)?;
    let unknown = suggest::unknown_fields(&table);
    if !unknown.is_empty() {
        return Err(refuse(unknown));
    }
    let mut config: Config = toml::from_str(text).map_err(toml_error)?;
    presets::apply(&mut config.providers);
    let problems = validate(&config);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(refuse(problems))
    }
}

/// Parse a duration like `"250ms"`, `"30s"`, `"5m"`.
///
/// # Errors
/// A message saying what was expected.
pub fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration like \"250ms\", \"30s\" or \"5m\" ({e})"))
}

/// The provider kinds the server can build.
pub const KINDS: [&str; 7] = [
    "openai",
    "anthropic",
    "gemini",
    "azure",
    "vertex",
    "bedrock",
    "simulated",
];

/// Every problem in `config`, with paths.
#[must_use]
pub fn validate(config: &Config) -> Vec<String> {
    let mut p = Problems::default();
    validate_server(config, &mut p);
    let names = validate_providers(config, &mut p);
    let routes = validate_routes(config, &names, &mut p);
    apis::validate(config, &mut p);
    validate_keys(config, &routes, &mut p);
    validate_state(config, &mut p);
    validate_responses(config, &mut p);
    cache::validate(config, &mut p);
    threads::validate(config.threads.as_ref(), &mut p);
    database::validate(config, &mut p);
    telemetry::validate(config.telemetry.as_ref(), &mut p);
    telemetry::validate_log_format(
        config.server.log_format.as_deref(),
        config.telemetry.as_ref(),
        &mut p,
    );
    p.0
}

fn validate_responses(config: &Config, p: &mut Problems) {
    let Some(r) = &config.responses else {
        return;
    };
    p.duration("responses.store_ttl", r.store_ttl.as_deref());
    if r.max_stored_bytes == Some(0) {
        p.add("responses.max_stored_bytes", "must be greater than zero");
    }
}

/// Limits on stored Responses API answers (`[responses]`;
/// `crate::http::dialects::responses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredResponses {
    /// How long a stored response can be continued or fetched (default 7 days).
    pub ttl: std::time::Duration,
    /// The largest record kept (response, conversation and key as JSON; default 8 MiB): a
    /// larger one is answered but not kept, and the answer says so.
    pub max_bytes: usize,
}

impl Default for StoredResponses {
    fn default() -> Self {
        Self {
            ttl: std::time::Duration::from_secs(7 * 24 * 3600),
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// `[responses]` as the server uses it (defaults for what is unset or invalid; `validate`
/// reports the invalid).
#[must_use]
pub fn stored_responses(config: &Config) -> StoredResponses {
    let mut out = StoredResponses::default();
    if let Some(r) = &config.responses {
        if let Some(ttl) = r.store_ttl.as_deref().and_then(|t| duration(t).ok()) {
            out.ttl = ttl;
        }
        if let Some(bytes) = r.max_stored_bytes.filter(|b| *b > 0) {
            out.max_bytes = bytes;
        }
    }
    out
}

/// Why `value` cannot be the name of an environment variable holding a secret (an
/// `*_env` setting): empty, an assignment, or the secret itself (never shown).
fn env_name_problem(value: &str) -> Option<&'static str> {
    if suggest::looks_like_secret(value) {
        Some("looks like a secret itself (not shown): put it in an environment variable and give that variable's NAME here")
    } else if value.trim().is_empty() || value.contains('=') {
        Some("must be the NAME of an environment variable (never the secret itself)")
    } else {
        None
    }
}

#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, path: impl fmt::Display, msg: impl fmt::Display) {
        self.0.push(format!("{path}: {msg}"));
    }

    fn duration(&mut self, path: impl fmt::Display, value: Option<&str>) -> Option<Duration> {
        let text = value?;
        match duration(text) {
            Ok(d) if d.is_zero() => {
                self.add(path, "must be greater than zero");
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.add(path, e);
                None
            }
        }
    }
}

fn validate_server(config: &Config, p: &mut Problems) {
    let s = &config.server;
    if let Some(listen) = &s.listen {
        if listen.parse::<std::net::SocketAddr>().is_err() {
            p.add(
                "server.listen",
                format!("{listen:?} is not an address like \"127.0.0.1:4000\""),
            );
        }
    }
    p.duration("server.shutdown_grace", s.shutdown_grace.as_deref());
    for (i, origin) in s.allowed_origins.iter().enumerate() {
        if let Some(why) = origin_problem(origin) {
            p.add(format!("server.allowed_origins[{i}]"), why);
        }
    }
    if s.max_body_bytes == Some(0) {
        p.add("server.max_body_bytes", "must be greater than zero");
    }
    expansion_problems(s, p);
    p.duration(
        "server.header_read_timeout",
        s.header_read_timeout.as_deref(),
    );
    p.duration("server.body_read_timeout", s.body_read_timeout.as_deref());
    p.duration("server.idle_timeout", s.idle_timeout.as_deref());
    p.duration("server.write_timeout", s.write_timeout.as_deref());
    if s.max_connections == Some(0) {
        p.add("server.max_connections", "must be greater than zero");
    }
    if s.max_in_flight == Some(0) {
        p.add("server.max_in_flight", "must be greater than zero");
    }
    if let Some(n) = s.workers {
        if n == 0 || n > MAX_WORKERS {
            p.add(
                "server.workers",
                format!("{n} is out of range: between 1 and {MAX_WORKERS} threads"),
            );
        }
    }
}

/// The most runtime worker threads `[server] workers` accepts.
pub const MAX_WORKERS: usize = 1024;

fn validate_providers(config: &Config, p: &mut Problems) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, prov) in config.providers.iter().enumerate() {
        let at = format!("providers[{i}]");
        if prov.name.trim().is_empty() {
            p.add(format!("{at}.name"), "must not be empty");
        } else if !names.insert(prov.name.clone()) {
            p.add(
                format!("{at}.name"),
                format!("provider {:?} is defined twice", prov.name),
            );
        }
        if let Some(name) = &prov.preset {
            if presets::find(name).is_none() {
                p.add(
                    format!("{at}.preset"),
                    format!("{name:?} is not one of {}", presets::names()),
                );
            } else if prov.kind != "openai" {
                p.add(
                    format!("{at}.preset"),
                    format!(
                        "presets are OpenAI-compatible vendors; kind {:?} takes none",
                        prov.kind
                    ),
                );
            }
        }
        if prov.kind.is_empty() {
            p.add(
                format!("{at}.kind"),
                format!("is required: one of {} (or set a preset)", KINDS.join(", ")),
            );
            continue;
        }
        if !KINDS.contains(&prov.kind.as_str()) {
            p.add(
                format!("{at}.kind"),
                format!("{:?} is not one of {}", prov.kind, KINDS.join(", ")),
            );
            continue;
        }
        for (field, value) in [
            ("timeout", &prov.timeout),
            ("first_token_timeout", &prov.first_token_timeout),
            ("stall_timeout", &prov.stall_timeout),
            ("connect_timeout", &prov.connect_timeout),
        ] {
            p.duration(format!("{at}.{field}"), value.as_deref());
        }
        validate_probe_timeout(prov, &at, p);
        if prov.max_attempts == Some(0) {
            p.add(format!("{at}.max_attempts"), "must be at least 1");
        }
        if let Some(price) = &prov.price {
            if let Err(e) = price.to_price() {
                p.add(format!("{at}.price"), e);
            }
            let limit = price.max_output_tokens.map(u64::from);
            if limit.is_some_and(|n| n == 0 || n > switchyard::Usage::MAX_PLAUSIBLE_TOKENS) {
                p.add(
                    format!("{at}.price.max_output_tokens"),
                    "must be between 1 and 100000000",
                );
            }
        }
        if let Some(why) = prov.api_key_env.as_deref().and_then(env_name_problem) {
            p.add(format!("{at}.api_key_env"), why);
        }
        if let Some(check) = &prov.health_check {
            health::validate(check, &format!("{at}.health_check"), p);
        }
        if prov.kind == "simulated" {
            validate_simulated(prov, &at, p);
        } else {
            validate_remote(prov, &at, p);
        }
    }
    names
}

fn validate_simulated(prov: &ProviderToml, at: &str, p: &mut Problems) {
    let rate = prov.failure_rate.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&rate) {
        p.add(format!("{at}.failure_rate"), "must be between 0 and 1");
    }
    if let Some([lo, hi]) = prov.latency_range_ms {
        if !(lo >= 0.0 && lo <= hi) {
            p.add(
                format!("{at}.latency_range_ms"),
                "must be [lo, hi] with 0 <= lo <= hi",
            );
        }
    }
    if let Some(c) = prov.cost_per_1k_tokens {
        if switchyard::cost::usd_per_mtok_to_micros(c * 1000.0).is_err() {
            p.add(
                format!("{at}.cost_per_1k_tokens"),
                "must be >= 0 with at most 9 decimal places",
            );
        }
    }
    if let Some(s) = prov.latency_scale {
        if !(s >= 0.0 && s.is_finite()) {
            p.add(format!("{at}.latency_scale"), "must be a number >= 0");
        }
    }
    for (field, set) in [
        ("model", prov.model.is_some()),
        ("api_key_env", prov.api_key_env.is_some()),
        ("base_url", prov.base_url.is_some()),
        ("api", prov.api.is_some()),
    ] {
        if set {
            p.add(
                format!("{at}.{field}"),
                "does not apply to simulated providers",
            );
        }
    }
}

/// The values of a provider's `api` (which OpenAI API it speaks upstream).
pub const OPENAI_APIS: [&str; 2] = ["chat_completions", "responses"];

fn validate_remote(prov: &ProviderToml, at: &str, p: &mut Problems) {
    clouds::validate(prov, at, p);
    if let Some(ids) = &prov.tool_call_ids {
        if !matches!(ids.as_str(), "as_is" | "alnum9") {
            p.add(
                format!("{at}.tool_call_ids"),
                format!("{ids:?} is not one of as_is, alnum9"),
            );
        }
    }
    if prov.kind != "openai" {
        for (field, set) in [
            ("stream_usage", prov.stream_usage.is_some()),
            ("tool_call_ids", prov.tool_call_ids.is_some()),
        ] {
            if set {
                p.add(
                    format!("{at}.{field}"),
                    "applies to kind \"openai\" providers only",
                );
            }
        }
    }
    if prov.structured_outputs.is_some() && !matches!(prov.kind.as_str(), "anthropic" | "vertex") {
        p.add(
            format!("{at}.structured_outputs"),
            "applies to kind \"anthropic\" and \"vertex\" (Claude) providers only",
        );
    }
    if let Some(api) = &prov.api {
        if !matches!(prov.kind.as_str(), "openai" | "azure") {
            p.add(
                format!("{at}.api"),
                format!(
                    "applies to openai and azure providers only (which OpenAI API they speak), not {:?}",
                    prov.kind
                ),
            );
        } else if !OPENAI_APIS.contains(&api.as_str()) {
            p.add(
                format!("{at}.api"),
                format!("{api:?} is not one of {}", OPENAI_APIS.join(", ")),
            );
        } else if api == "responses" && prov.use_max_tokens.is_some() {
            p.add(
                format!("{at}.use_max_tokens"),
                "does not apply with api = \"responses\" (its output cap is max_output_tokens)",
            );
        }
    }
    match &prov.model {
        _ if prov.kind == "azure" => {}
        Some(m) if !m.trim().is_empty() => {}
        _ => p.add(
            format!("{at}.model"),
            format!("is required for kind {:?}", prov.kind),
        ),
    }
    if let Some(url) = &prov.base_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            p.add(
                format!("{at}.base_url"),
                format!("{url:?} must start with http:// or https://"),
            );
        }
    }
    for (field, set) in [
        ("failure_rate", prov.failure_rate.is_some()),
        ("latency_range_ms", prov.latency_range_ms.is_some()),
        ("cost_per_1k_tokens", prov.cost_per_1k_tokens.is_some()),
        ("seed", prov.seed.is_some()),
        ("latency_scale", prov.latency_scale.is_some()),
    ] {
        if set {
            p.add(
                format!("{at}.{field}"),
                "applies to simulated providers only",
            );
        }
    }
}

fn validate_routes(
    config: &Config,
    providers: &HashSet<String>,
    p: &mut Problems,
) -> HashSet<String> {
    let mut names = HashSet::new();
    if config.routes.is_empty() {
        p.add("routes", "at least one [[routes]] entry is required");
    }
    for (i, r) in config.routes.iter().enumerate() {
        let at = format!("routes[{i}]");
        if r.name.trim().is_empty() {
            p.add(format!("{at}.name"), "must not be empty");
        } else if !names.insert(r.name.clone()) {
            p.add(
                format!("{at}.name"),
                format!("route {:?} is defined twice", r.name),
            );
        }
        if r.providers.is_empty() {
            p.add(format!("{at}.providers"), "must list at least one provider");
        }
        for (j, name) in r.providers.iter().enumerate() {
            if !providers.contains(name) {
                p.add(
                    format!("{at}.providers[{j}]"),
                    format!("no provider named {name:?}"),
                );
            }
        }
        validate_wildcard(config, r, &at, p);
        p.duration(format!("{at}.deadline"), r.deadline.as_deref());
        validate_retry(r.retry.as_ref(), &at, p);
        validate_breaker(r.breaker.as_ref(), &at, p);
        if let Some(b) = r.budget_usd {
            if !(b.is_finite() && b >= 0.0) {
                p.add(format!("{at}.budget_usd"), "must be a number >= 0");
            }
        }
        if r.default_max_tokens == Some(0) {
            p.add(format!("{at}.default_max_tokens"), "must be at least 1");
        }
        for kind in r.policy.keys() {
            if switchyard::ErrorKind::from_label(kind).is_none() {
                p.add(format!("{at}.policy.{kind}"), "is not an error kind (timeout, connection, server, overloaded, malformed, rate_limited, quota_exhausted, auth, model_not_found, context_length, content_filtered, bad_request)");
            }
        }
    }
    names
}

/// A wildcard route (a name ending in `/*`) needs an allow-list of well-formed patterns
/// and a template that is not also a wildcard-shaped name; other routes take neither
/// `models` nor `max_models`.
fn validate_wildcard(config: &Config, r: &RouteToml, at: &str, p: &mut Problems) {
    let Some(prefix) = r.name.strip_suffix("/*") else {
        if r.models.is_some() {
            p.add(
                format!("{at}.models"),
                "applies to wildcard routes only (a name ending in \"/*\")",
            );
        }
        if r.max_models.is_some() {
            p.add(
                format!("{at}.max_models"),
                "applies to wildcard routes only (a name ending in \"/*\")",
            );
        }
        return;
    };
    if prefix.is_empty() || prefix.contains('*') {
        p.add(
            format!("{at}.name"),
            "a wildcard route is a prefix followed by \"/*\" (e.g. \"openai/*\")",
        );
    }
    let slashes = wildcard_slashes(config, r);
    match &r.models {
        None => p.add(format!("{at}.models"), "a wildcard route needs an allow-list (e.g. models = [\"gpt-4.1*\"], or [\"*\"] for any)"),
        Some(m) if m.is_empty() => p.add(format!("{at}.models"), "must list at least one pattern"),
        Some(m) => {
            for (j, pattern) in m.iter().enumerate() {
                if switchyard::route::valid_pattern(pattern, slashes) {
                    continue;
                }
                let why = if slashes {
                    "is not a model id (letters, digits, . _ : @ + -, segments joined by single /), optionally ending in *"
                } else if switchyard::route::valid_pattern(pattern, true) {
                    "holds a /, which this route's template cannot take (its kind puts the model into a URL path: only openai, anthropic and bedrock templates take models with /)"
                } else {
                    "is not a model id (letters, digits, . _ : @ + -), optionally ending in *"
                };
                p.add(format!("{at}.models[{j}]"), format!("{pattern:?} {why}"));
            }
        }
    }
    if r.max_models == Some(0) {
        p.add(format!("{at}.max_models"), "must be at least 1");
    }
    let Some(template) = r.providers.first() else {
        return;
    };
    if template.contains('/') {
        p.add(
            format!("{at}.providers[0]"),
            format!("a wildcard template's name may not contain '/' ({template:?})"),
        );
    }
    let own = format!("{template}/");
    for (i, prov) in config.providers.iter().enumerate() {
        if prov.name.starts_with(&own) {
            p.add(
                format!("providers[{i}].name"),
                format!(
                    "{:?} would share names with the models of wildcard template {template:?} ({})",
                    prov.name, r.name
                ),
            );
        }
    }
}

/// Whether wildcard route `r`'s models may hold `/`: its template's kind sends the model
/// in the request body (OpenAI, Anthropic, OpenAI-compatible servers) or percent-encodes it
/// (Bedrock), never raw into a URL path (Gemini, Vertex AI, Azure deployments).
pub(crate) fn wildcard_slashes(config: &Config, r: &RouteToml) -> bool {
    let template = r.providers.first();
    config
        .providers
        .iter()
        .find(|p| Some(&p.name) == template)
        .is_some_and(|p| matches!(p.kind.as_str(), "openai" | "anthropic" | "bedrock"))
}

fn validate_retry(retry: Option<&RetryToml>, at: &str, p: &mut Problems) {
    let Some(r) = retry else { return };
    if r.max_attempts == Some(0) {
        p.add(format!("{at}.retry.max_attempts"), "must be at least 1");
    }
    let base = r.base_delay.as_deref().map(duration);
    if let Some(Err(e)) = &base {
        p.add(format!("{at}.retry.base_delay"), e);
    }
    let max = r.max_delay.as_deref().map(duration);
    if let Some(Err(e)) = &max {
        p.add(format!("{at}.retry.max_delay"), e);
    }
    if let (Some(Ok(b)), Some(Ok(m))) = (&base, &max) {
        if b > m {
            p.add(
                format!("{at}.retry.base_delay"),
                "must not exceed max_delay",
            );
        }
    }
    if let Some(Err(e)) = r.max_retry_after.as_deref().map(duration) {
        p.add(format!("{at}.retry.max_retry_after"), e);
    }
}

/// A probe's timeout may only shorten the provider's (a probe is one attempt).
fn validate_probe_timeout(prov: &ProviderToml, at: &str, p: &mut Problems) {
    let path = format!("{at}.probe_timeout");
    let Some(probe) = p.duration(&path, prov.probe_timeout.as_deref()) else {
        return;
    };
    let timeout = (prov.timeout.as_deref())
        .and_then(|t| duration(t).ok())
        .unwrap_or(Duration::from_secs(30));
    if probe > timeout {
        p.add(
            path,
            format!("must not exceed timeout ({}s)", timeout.as_secs_f64()),
        );
    }
}

fn validate_breaker(breaker: Option<&BreakerToml>, at: &str, p: &mut Problems) {
    let Some(b) = breaker else { return };
    if b.failure_threshold == Some(0) {
        p.add(
            format!("{at}.breaker.failure_threshold"),
            "must be at least 1",
        );
    }
    let cool = p.duration(format!("{at}.breaker.cooldown"), b.cooldown.as_deref());
    let max = p.duration(
        format!("{at}.breaker.max_cooldown"),
        b.max_cooldown.as_deref(),
    );
    if let (Some(c), Some(m)) = (cool, max) {
        if c > m {
            p.add(
                format!("{at}.breaker.cooldown"),
                "must not exceed max_cooldown",
            );
        }
    }
}

/// Why `origin` cannot be an `allowed_origins` entry, if it cannot: an origin is a scheme
/// (`http` or `https`), a host and an optional port, like `http://localhost:3000`.
#[must_use]
pub fn origin_problem(origin: &str) -> Option<String> {
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let ok = authority.is_some_and(|a| {
        let a = a.strip_suffix('/').unwrap_or(a);
        !a.is_empty() && !a.contains(['/', '?', '#', '@', '*', ' '])
    });
    (!ok).then(|| {
        format!(
            "{origin:?} is not an origin like \"http://localhost:3000\" (http or https, a host and an optional port; no path, no wildcard)"
        )
    })
}

fn validate_keys(config: &Config, routes: &HashSet<String>, p: &mut Problems) {
    let mut names = HashSet::new();
    let mut hashes = HashSet::new();
    for (i, k) in config.keys.iter().enumerate() {
        let at = format!("keys[{i}]");
        if let Err(e) = crate::access::keys::check_name(&k.name) {
            p.add(format!("{at}.name"), e);
        } else if !names.insert(k.name.clone()) {
            p.add(
                format!("{at}.name"),
                format!("key {:?} is defined twice", k.name),
            );
        }
        let hex = k.sha256.to_ascii_lowercase();
        if hex.len() != 64 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            p.add(
                format!("{at}.sha256"),
                "must be 64 hex characters (run `switchyard keys new NAME`)",
            );
        } else if !hashes.insert(hex) {
            p.add(
                format!("{at}.sha256"),
                "the same token hash is used by two keys",
            );
        }
        for (j, r) in k.routes.iter().enumerate() {
            if r != "*" && !routes.contains(r) {
                p.add(format!("{at}.routes[{j}]"), format!("no route named {r:?}"));
            }
        }
        validate_key_limits(k, &at, p);
    }
}

fn validate_key_limits(k: &KeyToml, at: &str, p: &mut Problems) {
    if let Some(b) = k.budget_usd {
        if !(b.is_finite() && b >= 0.0) {
            p.add(format!("{at}.budget_usd"), "must be a number >= 0");
        }
    }
    if let Some(period) = &k.budget_period {
        if crate::access::limits::Period::parse(period).is_none() {
            p.add(
                format!("{at}.budget_period"),
                format!("{period:?} is not one of total, day, month"),
            );
        } else if k.budget_usd.is_none() {
            p.add(
                format!("{at}.budget_period"),
                "has no effect without budget_usd",
            );
        }
    }
    if k.max_in_flight == Some(0) {
        p.add(
            format!("{at}.max_in_flight"),
            "must be at least 1 (omit it for a quarter of [server] max_in_flight)",
        );
    }
    for (field, v) in [("rpm", k.rpm), ("tpm", k.tpm)] {
        if v == Some(0) {
            p.add(
                format!("{at}.{field}"),
                "must be at least 1 (omit it for no limit)",
            );
        }
    }
}

/// A Redis URL at `field` (`required`: must be there): `redis://` or `rediss://`, and
/// readable as written (checked without parsing; the message shows it masked).
fn redis_url(p: &mut Problems, field: &str, url: Option<&str>, required: bool) {
    let Some(url) = url else {
        if required {
            p.add(
                field,
                "is required for backend \"redis\" and must start with redis://",
            );
        }
        return;
    };
    if !url.starts_with("redis://") && !url.starts_with("rediss://") {
        p.add(field, "must start with redis:// (or rediss://)");
        return;
    }
    if let Err(problem) = switchyard::state::RedisConfig::new(url.to_owned()).check_url() {
        p.add(field, problem);
    }
}

fn validate_state(config: &Config, p: &mut Problems) {
    let Some(s) = &config.state else { return };
    match s.backend.as_deref().unwrap_or("memory") {
        "redis" => {
            redis_url(p, "state.url", s.url.as_deref(), true);
            redis_url(p, "state.store_url", s.store_url.as_deref(), false);
        }
        "memory" if s.store_url.is_some() => p.add(
            "state.store_url",
            "applies to backend \"redis\" only (the memory backend keeps stored conversations in memory)",
        ),
        "memory" => {}
        other => p.add(
            "state.backend",
            format!("{other:?} is not one of memory, redis"),
        ),
    }
    p.duration("state.timeout", s.timeout.as_deref());
    if s.memory_store_bytes
        .is_some_and(|b| b < preflight::MIN_MEMORY_STORE_BYTES)
    {
        p.add(
            "state.memory_store_bytes",
            format!(
                "must be at least {} (1 MiB)",
                preflight::MIN_MEMORY_STORE_BYTES
            ),
        );
    }
}

/// The names `/metrics` may use as route, key and model labels: the config's (at start, and
/// after each reload).
pub fn usage_labels(config: &Config) -> crate::telemetry::metrics::UsageLabels {
    crate::telemetry::metrics::UsageLabels {
        routes: config.routes.iter().map(|r| r.name.clone()).collect(),
        keys: config.keys.iter().map(|k| k.name.clone()).collect(),
        models: config
            .providers
            .iter()
            .map(|p| (p.name.clone(), p.model.clone().unwrap_or_default()))
            .collect(),
    }
}

/// Default largest request body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default most JSON values one request may expand to (body and stored conversation).
pub const DEFAULT_MAX_ITEMS: usize = 100_000;
/// Default deepest nesting of objects and arrays.
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// Default most bytes of body and stored conversation together.
pub const DEFAULT_MAX_EXPANDED_BYTES: usize = 16 * 1024 * 1024;
/// The deepest nesting a bound may allow: the JSON parser refuses deeper anyway.
pub const DEPTH_CEILING: usize = 128;

/// What one request may make the process hold (`[server] max_request_items`,
/// `max_request_depth`, `max_expanded_bytes`), held by `crate::http::dialects::expansion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpansionLimits {
    /// Most JSON values.
    pub max_items: usize,
    /// Deepest nesting.
    pub max_depth: usize,
    /// Most bytes of body and stored conversation.
    pub max_expanded_bytes: usize,
}

impl Default for ExpansionLimits {
    fn default() -> Self {
        Self {
            max_items: DEFAULT_MAX_ITEMS,
            max_depth: DEFAULT_MAX_DEPTH,
            max_expanded_bytes: DEFAULT_MAX_EXPANDED_BYTES,
        }
    }
}

/// `[server] max_request_items`, `max_request_depth`, `max_expanded_bytes`: each at least
/// one; the depth at most what the JSON parser takes; the expanded bytes at least a body.
fn expansion_problems(s: &schema::ServerToml, p: &mut Problems) {
    if s.max_request_items == Some(0) {
        p.add("server.max_request_items", "must be greater than zero");
    }
    if let Some(d) = s.max_request_depth {
        if d == 0 || d > DEPTH_CEILING {
            p.add(
                "server.max_request_depth",
                format!("{d} is out of range: between 1 and {DEPTH_CEILING}"),
            );
        }
    }
    let body = s.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    if let Some(b) = s.max_expanded_bytes.filter(|b| *b < body) {
        p.add(
            "server.max_expanded_bytes",
            format!("{b} is less than max_body_bytes ({body}): a whole body must fit"),
        );
    }
}

/// The memory bounds of one request, as configured (`[server]`).
#[must_use]
pub fn expansion_limits(config: &Config) -> ExpansionLimits {
    let defaults = ExpansionLimits::default();
    let s = &config.server;
    ExpansionLimits {
        max_items: s.max_request_items.unwrap_or(defaults.max_items),
        max_depth: s.max_request_depth.unwrap_or(defaults.max_depth),
        max_expanded_bytes: s.max_expanded_bytes.unwrap_or(defaults.max_expanded_bytes),
    }
}

#[cfg(test)]
mod tests;
