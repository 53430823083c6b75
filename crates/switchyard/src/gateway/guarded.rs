//! A call that is not a chat or embeddings request (Anthropic's token count) made under the
//! provider's breaker, as the attempt loop makes its calls: an open circuit (or a cooling
//! Retry-After) skips the provider, a half-open one makes the call its single probe, the
//! call is bounded by the provider's timeout, and its outcome counts for the breaker by the
//! route's policy, like any attempt's. It does not retry, fail over, reserve budget or
//! record an attempt: the caller owns those.

use std::future::Future;

use super::hold::Guard;
use super::Gateway;
use crate::breaker::{Admission, Applied, Op};
use crate::error::{ErrorKind, ProviderError};
use crate::route::Route;
use crate::state::Cleanup;
use crate::trail::SkipReason;

/// What became of a call made through [`Gateway::call_through_breaker`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guarded<T> {
    /// The breaker kept the call from the provider (its circuit is open, another call holds
    /// the half-open probe, or it is cooling off a Retry-After).
    Skipped(SkipReason),
    /// The call was made; its result, counted by the breaker.
    Called(Result<T, ProviderError>),
}

impl Gateway {
    /// Make `call` to provider `provider` of `route` under its breaker (see the module
    /// docs). A provider the gateway does not know is called without one.
    pub async fn call_through_breaker<T>(
        &self,
        route: &Route,
        provider: &str,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Guarded<T> {
        let Some(spec) = self
            .inner
            .by_name
            .get(provider)
            .map(|&i| &self.inner.slots[i].spec)
        else {
            return Guarded::Called(call.await);
        };
        let limit = spec.timeout;
        let admitted = self.apply(route, provider, Op::Admit { lease_for: limit });
        let lease = match admitted.await.admission {
            Admission::Reject(reason) => return Guarded::Skipped(reason),
            Admission::Admit => None,
            Admission::Probe { lease } => Some(lease),
        };
        // a caller dropped mid-call gives the probe lease back
        let mut probe = lease.map(|lease| {
            let release = Cleanup::ReleaseProbe {
                provider: provider.to_owned(),
                lease,
            };
            Guard::new(&self.inner.state, release)
        });
        let result = match tokio::time::timeout(limit, call).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::new(
                ErrorKind::Timeout,
                format!("no answer within {limit:?}"),
            )),
        };
        if let Some(p) = probe.as_mut() {
            p.disarm();
        }
        match &result {
            Ok(_) => {
                self.apply(route, provider, Op::Succeeded { lease }).await;
            }
            Err(e) => {
                // as the attempt loop tells it: the attempt (opening at once, cooling for
                // a Retry-After), then the turn (counting towards the threshold)
                let effect = route.policy_for(e.kind).breaker;
                let (kind, retry_after) = (e.kind, e.retry_after);
                let attempt = Op::AttemptFailed {
                    kind,
                    effect,
                    retry_after,
                    lease,
                };
                self.apply(route, provider, attempt).await;
                let turn = Op::TurnFailed {
                    kind,
                    effect,
                    lease,
                };
                self.apply(route, provider, turn).await;
            }
        }
        Guarded::Called(result)
    }

    /// Apply `op` to `provider`'s breaker under `route`'s settings, telling observers of a
    /// transition.
    async fn apply(&self, route: &Route, provider: &str, op: Op) -> Applied {
        let now = self.inner.clock.unix_ms();
        let state = &self.inner.state;
        let applied = state.breaker_op(provider, &route.breaker, now, op).await;
        if let Some(t) = &applied.transition {
            for o in &self.inner.observers {
                o.on_transition(provider, t);
            }
        }
        applied
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::provider::scripted::ScriptedProvider;
    use crate::ProviderSpec;

    fn gateway() -> Gateway {
        let p = Arc::new(ScriptedProvider::new("m"));
        Gateway::builder()
            .provider(ProviderSpec::new("claude", p).timeout(std::time::Duration::from_secs(5)))
            .route(Route::new("smart", &["claude"]))
            .build()
            .unwrap()
    }

    fn auth() -> ProviderError {
        ProviderError::new(ErrorKind::Auth, "bad key")
    }

    #[tokio::test(start_paused = true)]
    async fn failures_open_the_circuit_and_an_open_circuit_skips() {
        let gw = gateway();
        let route = gw.route("smart").unwrap().clone();
        let failed = gw
            .call_through_breaker(&route, "claude", async { Err::<u64, _>(auth()) })
            .await;
        assert_eq!(failed, Guarded::Called(Err(auth())));
        let health = gw.health().await;
        assert_eq!(health[0].state, "auth_failed", "an auth failure opens it");
        let skipped = gw
            .call_through_breaker(&route, "claude", async { Ok::<u64, ProviderError>(1) })
            .await;
        assert_eq!(skipped, Guarded::Skipped(SkipReason::CircuitOpen));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_call_times_out_and_counts_towards_the_threshold() {
        let gw = gateway();
        let route = gw.route("smart").unwrap().clone();
        let hung = gw
            .call_through_breaker(&route, "claude", std::future::pending::<Result<u64, _>>())
            .await;
        let Guarded::Called(Err(e)) = hung else {
            panic!("{hung:?}")
        };
        assert_eq!(e.kind, ErrorKind::Timeout);
        let ok = gw
            .call_through_breaker(&route, "claude", async { Ok::<u64, ProviderError>(7) })
            .await;
        assert_eq!(ok, Guarded::Called(Ok(7)), "one timeout does not open it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_mistake_does_not_count() {
        let gw = gateway();
        let route = gw.route("smart").unwrap().clone();
        for _ in 0..10 {
            let bad = ProviderError::new(ErrorKind::BadRequest, "messages: required");
            gw.call_through_breaker(&route, "claude", async { Err::<u64, _>(bad) })
                .await;
        }
        assert_eq!(gw.health().await[0].state, "closed");
    }
}
