//! Pipeline tests: the real gateway over scripted providers, under paused tokio time.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    missing_docs
)]

mod blame;
mod budget;
mod deadline;
mod embed;
mod errors;
mod fanout;
mod fields;
mod health;
mod native;
mod probe;
mod rate_limits;
mod reasoning;
mod recovery;
mod reported;
mod rescue_buffer;
mod seeds;
mod sentence;
mod size_timeouts;
mod stream;
mod wildcard;
mod worst_case;

use std::sync::Arc;
use std::time::Duration;

use switchyard::breaker::{BreakerConfig, Cooldown};
use switchyard::provider::scripted::ScriptedProvider;
use switchyard::retry::RetryPolicy;
use switchyard::{Gateway, Price, ProviderSpec, Route};

/// A provider with a price, so budgets can count it.
pub fn priced(name: &str, p: &Arc<ScriptedProvider>) -> ProviderSpec {
    ProviderSpec::new(name, p.clone())
        .price(Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap())
}

/// `spec` with the stream timeouts the stream tests run under: 10 s to the first token,
/// 5 s between tokens.
pub fn stream_timeouts(spec: ProviderSpec) -> ProviderSpec {
    spec.stream_timeouts(Duration::from_secs(10), Duration::from_secs(5))
}

/// A route over `providers` with no backoff jitter surprises: 2 attempts, 100 ms base.
pub fn route(providers: &[&str]) -> Route {
    Route::new("main", providers)
        .retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(5),
        })
        .breaker(breaker(3, 30))
}

/// A time-based breaker.
pub fn breaker(threshold: u32, cooldown_secs: u64) -> BreakerConfig {
    BreakerConfig {
        failure_threshold: threshold,
        cooldown: Cooldown {
            base: Duration::from_secs(cooldown_secs),
            max: Duration::from_secs(cooldown_secs * 8),
        },
    }
}

/// A primary + backup gateway over the given route settings.
pub fn two(primary: &Arc<ScriptedProvider>, backup: &Arc<ScriptedProvider>, r: Route) -> Gateway {
    Gateway::builder()
        .provider(priced("primary", primary))
        .provider(priced("backup", backup))
        .route(r)
        .seed(1)
        .build()
        .unwrap()
}

/// Health state label of a provider.
pub async fn state_of(gw: &Gateway, name: &str) -> String {
    gw.health_states().await.remove(name).unwrap()
}
