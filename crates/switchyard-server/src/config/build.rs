//! From a validated config to a running [`Gateway`]: providers with their keys, routes
//! with their policies, defaults filled in, and warnings for what may not work.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::simulated::{SimulatedConfig, SimulatedProvider};
use switchyard::breaker::{BreakerConfig, Cooldown};
use switchyard::clock::Clock;
use switchyard::error::KindPolicy;
use switchyard::observe::Observer;
use switchyard::provider::http::{Transport, TransportConfig};
use switchyard::retry::RetryPolicy;
use switchyard::state::SharedState;
use switchyard::{ErrorKind, Gateway, Money, Provider, ProviderSpec, Route};

use super::providers;
use super::{duration, Config, ProviderToml, RouteToml};

/// Looks an environment variable up (injectable so tests need not touch the process env).
pub type KeyLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A gateway and what the operator should hear about it.
pub struct Built {
    /// The gateway.
    pub gateway: Gateway,
    /// Things that will not work as configured (missing keys, unpriced models under a
    /// budget, timeouts a route's deadline leaves no room for), and client keys anyone
    /// could guess. `check` prints them; `serve` writes them at start-up.
    pub warnings: Vec<String>,
}

/// What the running process plugs into the gateway.
#[derive(Default)]
pub struct Wiring {
    /// Observers besides the built-in ledger (metrics).
    pub observers: Vec<Arc<dyn Observer>>,
    /// The state store (default: in memory).
    pub store: Option<Arc<dyn SharedState>>,
    /// The clock (default: the system clock).
    pub clock: Option<Clock>,
    /// The ledger (default: a fresh one; a reload passes its predecessor's).
    pub ledger: Option<Arc<switchyard::observe::Ledger>>,
}

/// The env var whose value is `prov`'s key: the configured one, else the vendor's
/// conventional one **only** for the vendor's own endpoint. An ambient key is never sent
/// to a custom `base_url` it was not configured for.
#[must_use]
pub fn resolve_key(prov: &ProviderToml) -> Option<String> {
    if let Some(env) = &prov.api_key_env {
        return Some(env.clone());
    }
    if prov.base_url.is_some() {
        return None;
    }
    match prov.kind.as_str() {
        "openai" => Some("OPENAI_API_KEY".to_owned()),
        "anthropic" => Some("ANTHROPIC_API_KEY".to_owned()),
        "gemini" => Some("GEMINI_API_KEY".to_owned()),
        _ => None,
    }
}

/// Build the gateway for a validated config.
///
/// # Errors
/// A provider that cannot be constructed (e.g. an HTTP client that fails to start), or
/// the gateway's own checks.
pub fn build_gateway(
    config: &Config,
    env: KeyLookup<'_>,
    serving: bool,
    wiring: Wiring,
) -> Result<Built, String> {
    let mut warnings = Vec::new();
    let mut builder = Gateway::builder();
    let transport = Transport::new(TransportConfig::default());
    let clock = wiring.clock.unwrap_or_else(Clock::system);
    builder = builder.clock(clock);
    if let Some(bytes) = config.server.rescue_buffer_bytes {
        builder = builder.rescue_buffer_bytes(bytes);
    }
    if let Some(store) = wiring.store {
        builder = builder.state(store);
    }
    if let Some(ledger) = wiring.ledger {
        builder = builder.ledger(ledger);
    }
    for o in wiring.observers {
        builder = builder.observer(o);
    }
    for prov in &config.providers {
        let (provider, warning) = provider(prov, env, serving, &transport, clock)?;
        warnings.extend(warning);
        let mut spec = spec(prov, provider)?;
        if is_template(config, &prov.name) {
            spec = spec.models(models_of(prov, env, serving, &transport, clock));
        }
        builder = builder.provider(spec);
    }
    for r in &config.routes {
        let api = super::route_api(config, r).map_err(|e| format!("routes: {e}"))?;
        let route = route(r)?.model_slashes(super::wildcard_slashes(config, r));
        builder = builder.route(route.api(api));
    }
    let gateway = builder.build().map_err(|e| e.to_string())?;
    warnings.extend(crate::access::keys::weak_token_warnings(&config.keys));
    warnings.extend(budget_warnings(&gateway));
    warnings.extend(super::deadlines::warnings(config, &gateway));
    Ok(Built { gateway, warnings })
}

/// What a route's budget cannot count as configured: unpriced providers (skipped), and
/// priced ones whose output limit is unknown (sent the route's `default_max_tokens`).
fn budget_warnings(gateway: &Gateway) -> Vec<String> {
    let mut warnings = Vec::new();
    for r in gateway.routes() {
        if r.budget.is_none() {
            continue;
        }
        // a wildcard template is priced per resolved model, not by its own
        let skip = usize::from(r.wildcard.is_some());
        for name in r.providers.iter().skip(skip) {
            if gateway.price_of(name).is_none() {
                if !r.allow_unpriced {
                    warnings.push(format!(
                        "route {:?}: provider {name:?} has no known price and will be skipped under the budget (set a price or allow_unpriced)",
                        r.name
                    ));
                }
            } else if gateway.max_output_tokens_of(name).is_none() {
                warnings.push(format!(
                    "route {:?}: provider {name:?}'s model has no known output limit; requests without max_tokens are sent max_tokens = {} (the route's default_max_tokens; set price.max_output_tokens to reserve the model's real limit)",
                    r.name, r.default_max_tokens
                ));
            }
        }
    }
    warnings
}

/// Whether provider `name` is the template of a wildcard route (the first provider of a
/// route whose name ends in `/*`).
fn is_template(config: &Config, name: &str) -> bool {
    (config.routes.iter())
        .any(|r| r.name.ends_with("/*") && r.providers.first().is_some_and(|p| p == name))
}

/// How a wildcard template builds itself for another model: its entry with the model (an
/// Azure provider's deployment, a simulated one's name) replaced, built as at start. The
/// environment variables it reads are looked up now, once.
fn models_of(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    serving: bool,
    transport: &Transport,
    clock: Clock,
) -> switchyard::gateway::ModelFactory {
    let vars = [
        resolve_key(prov),
        prov.token_env.clone(),
        Some(
            (prov.credentials_env.as_deref())
                .unwrap_or(super::clouds::DEFAULT_CREDENTIALS_ENV)
                .to_owned(),
        ),
    ];
    let snapshot: HashMap<String, String> = (vars.into_iter().flatten())
        .filter_map(|var| env(&var).map(|value| (var, value)))
        .collect();
    let (template, transport) = (prov.clone(), transport.clone());
    Arc::new(move |model: &str| {
        let mut entry = template.clone();
        match entry.kind.as_str() {
            "azure" => entry.deployment = Some(model.to_owned()),
            "simulated" => model.clone_into(&mut entry.name),
            _ => entry.model = Some(model.to_owned()),
        }
        let lookup = |var: &str| snapshot.get(var).cloned();
        provider(&entry, &lookup, serving, &transport, clock).map(|(p, _warning)| p)
    })
}

/// One `[[providers]]` entry built as `build_gateway` builds it: the adapter with its key
/// (looked up through `env`) and its per-provider settings, and a warning when a key is
/// missing. For embedders that assemble a gateway themselves (the Python package:
/// `python/src/lib.rs`), mixing config-built providers with their own.
///
/// # Errors
/// As [`build_gateway`], for this entry.
pub fn provider_spec(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<(ProviderSpec, Option<String>), String> {
    let (provider, warning) = provider(prov, env, false, transport, clock)?;
    Ok((spec(prov, provider)?, warning))
}

/// One `[[routes]]` entry as `build_gateway` builds it (its `api` and wildcard slashes
/// aside): order, deadline, retry, breaker, budget and per-kind policies.
///
/// # Errors
/// A bad duration or an unknown kind in `policy`.
pub fn route_of(r: &RouteToml) -> Result<Route, String> {
    route(r)
}

fn provider(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    serving: bool,
    transport: &Transport,
    clock: Clock,
) -> Result<(Arc<dyn Provider>, Option<String>), String> {
    if prov.kind == "simulated" {
        let (lo, hi) = prov
            .latency_range_ms
            .map_or((150.0, 300.0), |[a, b]| (a, b));
        let scale = prov.latency_scale.unwrap_or(1.0);
        let sim = SimulatedProvider::new(SimulatedConfig {
            name: prov.name.clone(),
            failure_rate: prov.failure_rate.unwrap_or(0.0),
            latency_range_ms: (lo, hi),
            cost_per_1k_tokens: prov.cost_per_1k_tokens.unwrap_or(0.0),
            seed: prov.seed.unwrap_or(0),
            sleep_scale: serving.then_some(scale),
        });
        return Ok((Arc::new(sim), None));
    }
    if matches!(prov.kind.as_str(), "azure" | "vertex") {
        return super::clouds::build(prov, env, transport, clock);
    }
    if prov.kind == "bedrock" {
        return super::bedrock::build(prov, env, transport, clock);
    }
    let mut warning = None;
    let key = match resolve_key(prov) {
        Some(var) => match env(&var) {
            Some(v) if !v.is_empty() => Some(switchyard::provider::secret::Secret::new(v)),
            _ => {
                warning = Some(format!(
                    "provider {:?}: environment variable {var} is not set; calls will fail with auth errors",
                    prov.name
                ));
                None
            }
        },
        None => None,
    };
    let built = providers::remote(prov, key, transport, clock)?;
    Ok((built, warning))
}

fn spec(prov: &ProviderToml, provider: Arc<dyn Provider>) -> Result<ProviderSpec, String> {
    let price = match (&prov.price, prov.kind.as_str()) {
        (Some(p), _) => Some(p.to_price().map_err(|e| e.to_string())?),
        (None, "simulated") => {
            let c = prov.cost_per_1k_tokens.unwrap_or(0.0);
            Some(
                switchyard::Price::from_usd_per_mtok(0.0, c * 1000.0, None, None)
                    .map_err(|e| e.to_string())?,
            )
        }
        (None, _) => None,
    };
    let d = |v: &Option<String>, default: u64| -> Result<Duration, String> {
        v.as_deref()
            .map_or(Ok(Duration::from_secs(default)), duration)
    };
    let mut spec = ProviderSpec::new(&prov.name, provider)
        .timeout(d(&prov.timeout, 30)?)
        .stream_timeouts(
            d(&prov.first_token_timeout, 10)?,
            d(&prov.stall_timeout, 15)?,
        )
        .supports_prefill(prov.supports_prefill.unwrap_or(false));
    spec.max_attempts = prov.max_attempts;
    spec.probe_timeout = prov.probe_timeout.as_deref().map(duration).transpose()?;
    spec.price = price;
    spec.max_output_tokens = prov.price.and_then(|p| p.max_output_tokens);
    spec.reasoning = prov
        .reasoning
        .or_else(|| super::bedrock::default_reasoning(prov));
    Ok(spec)
}

fn route(r: &RouteToml) -> Result<Route, String> {
    let names: Vec<&str> = r.providers.iter().map(String::as_str).collect();
    let models: Vec<&str> = r.models.iter().flatten().map(String::as_str).collect();
    let base = Route::wildcard(&r.name, &names, &models)
        .map(|w| {
            w.max_models(
                r.max_models
                    .unwrap_or(switchyard::route::DEFAULT_MAX_MODELS),
            )
        })
        .unwrap_or_else(|| Route::new(&r.name, &names));
    let mut route = base
        .order(r.order.unwrap_or_default())
        .deadline(opt(r.deadline.as_deref(), Duration::from_secs(60))?)
        .retry(retry(r)?)
        .breaker(breaker(r)?)
        .allow_unpriced(r.allow_unpriced.unwrap_or(false))
        .unsupported_fields(r.unsupported_fields.unwrap_or_default())
        .passthrough_unknown(r.passthrough_unknown.unwrap_or(false))
        .default_max_tokens(
            r.default_max_tokens
                .unwrap_or(switchyard::route::DEFAULT_MAX_TOKENS),
        );
    if let Some(b) = r.budget_usd {
        route = route.budget(Money::from_usd(b));
    }
    for (label, p) in &r.policy {
        let kind = ErrorKind::from_label(label).ok_or_else(|| format!("unknown kind {label}"))?;
        let d = kind.default_policy();
        route = route.policy(
            kind,
            KindPolicy {
                retry: p.retry.unwrap_or(d.retry),
                breaker: p.breaker.unwrap_or(d.breaker),
                fail_over: p.fail_over.unwrap_or(d.fail_over),
            },
        );
    }
    Ok(route)
}

fn opt(v: Option<&str>, default: Duration) -> Result<Duration, String> {
    v.map_or(Ok(default), duration)
}

fn retry(r: &RouteToml) -> Result<RetryPolicy, String> {
    let d = RetryPolicy::default();
    let Some(t) = &r.retry else { return Ok(d) };
    Ok(RetryPolicy {
        max_attempts: t.max_attempts.unwrap_or(d.max_attempts),
        base_delay: opt(t.base_delay.as_deref(), d.base_delay)?,
        max_delay: opt(t.max_delay.as_deref(), d.max_delay)?,
        max_retry_after: opt(t.max_retry_after.as_deref(), d.max_retry_after)?,
    })
}

fn breaker(r: &RouteToml) -> Result<BreakerConfig, String> {
    let d = BreakerConfig::default();
    let Cooldown { base, max } = d.cooldown;
    let Some(t) = &r.breaker else { return Ok(d) };
    let base = opt(t.cooldown.as_deref(), base)?;
    Ok(BreakerConfig {
        failure_threshold: t.failure_threshold.unwrap_or(d.failure_threshold),
        cooldown: Cooldown {
            base,
            // an unset max never shortens a configured cooldown
            max: opt(t.max_cooldown.as_deref(), max.max(base))?,
        },
    })
}
