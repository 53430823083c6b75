//! Operations endpoints: `/healthz`, `/readyz`, `/admin/health`, `POST /admin/reload` and
//! `/metrics`.
//!
//! Owns what an operator or an orchestrator reads: liveness, readiness, the breakers and
//! books as JSON (behind an admin key when keys are configured), and the Prometheus
//! exposition (behind an admin key or the metrics token when keys are configured: it names
//! every key's spend; open on keyless loopback, like the probes). Does not own the numbers themselves
//! (the gateway's health and ledger, [`Metrics`](crate::telemetry::metrics::Metrics)) nor the
//! readiness flag's life cycle (`serve` sets and clears it).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use switchyard::cost::BudgetState;
use switchyard::health::CheckReport;

use crate::http::error::ApiError;
use crate::http::state::{AppState, Live};
use crate::telemetry::metrics::{Extras, CONTENT_TYPE};

/// `GET /healthz`: the process is up.
pub async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: 200 while serving, 503 while starting up or draining. With a database
/// it also says whether the database answers (`"database": "up"` or `"unreachable"`):
/// traffic never depends on it, so readiness does not either.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let ready = state.ready.load(Ordering::Acquire);
    let mut body = json!({ "ready": ready });
    if let Some(db) = &state.database {
        body["database"] = json!(if db.is_up() { "up" } else { "unreachable" });
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body))
}

/// `GET /admin/health`: every provider's breaker and stats with its last active health
/// check (`last_check`: null when it has none, or another replica holds its checker), the
/// ledger (health-check spend apart), route budgets and the request log's dropped and late
/// line counts. Money is in dollars, converted once from exact amounts.
///
/// # Errors
/// When client keys are configured: 401 without a valid key, 403 for a non-admin key.
pub async fn health(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.keys.authorize_admin(&headers)?;
    let checks = state.metrics.last_checks();
    let providers: Vec<Value> = state
        .gateway
        .health()
        .await
        .into_iter()
        .map(|h| {
            let mut v = json!(h);
            v["last_check"] = check_json(checks.get(&h.name));
            v
        })
        .collect();
    let ledger = state.gateway.ledger().summary();
    let mut budgets = BTreeMap::new();
    for route in state.gateway.routes() {
        if let Some(books) = state.gateway.budget(&route.name).await {
            budgets.insert(route.name.clone(), budget_json(&books));
        }
    }
    Ok(Json(json!({
        "providers": providers,
        "ledger": ledger,
        "budgets": budgets,
        "request_log_dropped": state.log.dropped(),
        "request_log_late": state.log.late(),
        "state": state.gateway.state().status(),
    })))
}

/// `POST /admin/reload`: re-read the config file and swap it in (the [`Live`] state's
/// reloader; the same as SIGHUP). 200 with what changed — providers, routes and keys added, removed,
/// changed and kept, other settings applied, fields that need a restart, the new config's
/// warnings; 422 with every problem when the file is refused (nothing changed); 409 when
/// the server runs the embedded default (no file to re-read).
///
/// # Errors
/// When client keys are configured: 401 without a valid key, 403 for a non-admin key.
pub async fn reload(
    State(live): State<Live>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    live.current().keys.authorize_admin(&headers)?;
    let Some(reloader) = live.reloader().cloned() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "nothing to reload: the server was started without --config (the embedded default)",
        )
        .code("no_config_file"));
    };
    Ok(match reloader.reload("POST /admin/reload") {
        Ok(done) => (StatusCode::OK, Json(done)).into_response(),
        Err(refused) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({
                "error": {
                    "message": refused.message,
                    "type": "invalid_request_error",
                    "param": null,
                    "code": "config_invalid",
                },
                "source": refused.source,
                "problems": refused.problems,
            })),
        )
            .into_response(),
    })
}

/// `GET /metrics`: the Prometheus text exposition. It names every key with its spend and
/// remaining budget, so with keys configured it needs an admin key or the metrics token
/// (`[telemetry] metrics_token_env`); keyless (loopback) it is open unless a metrics token
/// is configured.
///
/// # Errors
/// 401 without a valid token or key, 403 for a key that is not an admin key.
pub async fn metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    state.keys.authorize_metrics(&headers)?;
    let health = state.gateway.health().await;
    let store = state.gateway.state().status();
    let extras = Extras {
        budgets: budgets_left(&state).await,
        spans_dropped: state.traces.as_ref().map_or(0, |t| t.dropped()),
        spans_exported: state.traces.as_ref().map_or(0, |t| t.exported()),
        access_dropped: state.access.as_ref().map_or(0, |a| a.dropped()),
        database_up: state.database.as_ref().map(|d| d.is_up()),
    };
    let body = state
        .metrics
        .render_with(&health, state.log.dropped(), &store, &extras);
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], body))
}

/// Dollars left in every route's and key's budget (the key's current period).
async fn budgets_left(state: &AppState) -> Vec<(&'static str, String, f64)> {
    let mut out = Vec::new();
    for route in state.gateway.routes() {
        if let Some(books) = state.gateway.budget(&route.name).await {
            out.push(("route", route.name.clone(), books.remaining().to_usd()));
        }
    }
    let now = state.gateway.clock().unix_ms();
    for (name, limits, _) in state.keys.list() {
        if let Some((limit, period)) = limits.budget {
            let scope = crate::access::limits::key_scope(name, period, now);
            let books = state.gateway.state().budget(&scope, limit).await;
            out.push(("key", name.to_owned(), books.remaining().to_usd()));
        }
    }
    out
}

/// A provider's last health check: when, what, the result (`ok` or the error kind), the
/// upstream status and message of a failure, latency and (completion) cost in dollars.
pub(crate) fn check_json(report: Option<&CheckReport>) -> Value {
    let Some(r) = report else {
        return Value::Null;
    };
    json!({
        "at_ms": r.at_ms,
        "probe": r.probe.label(),
        "ok": r.ok(),
        "result": r.result_label(),
        "status": r.status,
        "message": r.message,
        "latency_ms": r.latency.as_secs_f64() * 1000.0,
        "cost_usd": r.cost.map(switchyard::Money::to_usd),
    })
}

/// A budget's books in dollars.
pub(crate) fn budget_json(b: &BudgetState) -> Value {
    json!({
        "limit_usd": b.limit.to_usd(),
        "spent_usd": b.spent.to_usd(),
        "reserved_usd": b.reserved.to_usd(),
        "remaining_usd": b.remaining().to_usd(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::to_bytes;
    use switchyard::provider::scripted::ScriptedProvider;
    use switchyard::{Gateway, Money, ProviderSpec, Route};

    use super::*;
    use crate::access::keys::{hash_token, KeyStore};
    use crate::config::KeyToml;
    use crate::http::state::Shared;
    use crate::telemetry::metrics::Metrics;

    fn state(keys: KeyStore, ready: bool) -> AppState {
        state_with(keys, ready, ScriptedProvider::new("gpt-4o-mini"))
    }

    fn state_with(keys: KeyStore, ready: bool, aurora: ScriptedProvider) -> AppState {
        let metrics = Arc::new(Metrics::new());
        let gateway = Gateway::builder()
            .provider(ProviderSpec::new("aurora", Arc::new(aurora)))
            .route(Route::new("smart", &["aurora"]).budget(Money::from_usd(2.5)))
            .route(Route::new("open", &["aurora"]))
            .observer(metrics.clone())
            .build()
            .unwrap();
        let shared = Shared::for_tests(gateway, keys, metrics);
        shared
            .ready
            .store(ready, std::sync::atomic::Ordering::SeqCst);
        AppState(Arc::new(shared))
    }

    fn keyed() -> KeyStore {
        KeyStore::new(&[
            KeyToml {
                name: "ops".into(),
                sha256: hash_token("sy-ops"),
                routes: vec!["*".into()],
                admin: Some(true),
                ..KeyToml::default()
            },
            KeyToml {
                name: "team".into(),
                sha256: hash_token("sy-team"),
                routes: vec!["*".into()],
                ..KeyToml::default()
            },
        ])
    }

    async fn body(resp: axum::response::Response) -> (StatusCode, String) {
        let status = resp.status();
        let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn healthz_is_ok_and_readyz_follows_the_flag() {
        assert_eq!(healthz().await, "ok");
        let (status, text) = body(
            readyz(State(state(KeyStore::default(), true)))
                .await
                .into_response(),
        )
        .await;
        assert_eq!(
            (status, text.as_str()),
            (StatusCode::OK, r#"{"ready":true}"#)
        );
        let (status, text) = body(
            readyz(State(state(KeyStore::default(), false)))
                .await
                .into_response(),
        )
        .await;
        assert_eq!(
            (status, text.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, r#"{"ready":false}"#)
        );
    }

    #[tokio::test]
    async fn health_reports_providers_ledger_and_budgets() {
        let s = state(KeyStore::default(), true);
        s.gateway.complete("hello").await.unwrap();
        let Json(v) = health(State(s), HeaderMap::new()).await.unwrap();
        assert_eq!(v["providers"][0]["name"], "aurora");
        assert_eq!(v["providers"][0]["state"], "closed");
        assert_eq!(v["ledger"]["aurora"]["calls"], 1);
        let smart = &v["budgets"]["smart"];
        assert_eq!(smart["limit_usd"], 2.5);
        let spent = smart["spent_usd"].as_f64().unwrap();
        assert!(spent > 0.0, "the scripted call is priced (gpt-4o-mini)");
        assert_eq!(smart["reserved_usd"], 0.0);
        let remaining = Money::from_usd(2.5) - Money::from_usd(spent);
        let got = Money::from_usd(smart["remaining_usd"].as_f64().unwrap());
        assert_eq!(got, remaining);
        assert!(v["budgets"].get("open").is_none(), "no budget, no entry");
        assert_eq!(v["request_log_dropped"], 0);
    }

    #[tokio::test]
    async fn health_needs_an_admin_key_when_keys_are_configured() {
        let err = health(State(state(keyed(), true)), HeaderMap::new())
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::UNAUTHORIZED);
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer sy-team".parse().unwrap());
        let err = health(State(state(keyed(), true)), headers)
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN);
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer sy-ops".parse().unwrap());
        assert!(health(State(state(keyed(), true)), headers).await.is_ok());
    }

    #[tokio::test]
    async fn metrics_render_with_the_prometheus_content_type() {
        let s = state(KeyStore::default(), true);
        s.gateway.complete("hello").await.unwrap();
        let resp = metrics(State(s), HeaderMap::new()).await.into_response();
        let ct = resp.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
        let (status, text) = body(resp).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            text.contains(
                r#"switchyard_attempts_total{provider="aurora",outcome="success",kind=""} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"switchyard_breaker_state{provider="aurora"} 0"#),
            "{text}"
        );
    }

    #[tokio::test]
    async fn health_and_metrics_show_the_last_check_its_result_and_latency() {
        use switchyard::health::{HealthCheck, Probe};
        use switchyard::provider::scripted::Step;
        use switchyard::ErrorKind;
        let aurora = ScriptedProvider::new("gpt-4o-mini")
            .then_health(Step::text("ok"))
            .then_health(Step::fail(ErrorKind::Auth));
        let s = state_with(KeyStore::default(), true, aurora);
        let Json(v) = health(State(s.clone()), HeaderMap::new()).await.unwrap();
        assert_eq!(v["providers"][0]["last_check"], Value::Null, "none yet");
        let listing = HealthCheck {
            probe: Probe::Listing,
            ..HealthCheck::default()
        };
        s.gateway.check_provider("aurora", &listing).await.unwrap();
        s.gateway.check_provider("aurora", &listing).await.unwrap();
        let Json(v) = health(State(s.clone()), HeaderMap::new()).await.unwrap();
        let last = &v["providers"][0]["last_check"];
        assert_eq!(last["probe"], "listing");
        assert_eq!(
            (&last["ok"], &last["result"]),
            (&json!(false), &json!("auth"))
        );
        assert!(last["latency_ms"].as_f64().is_some(), "{last}");
        assert!(last["at_ms"].as_u64().is_some(), "{last}");
        assert_eq!(v["providers"][0]["state"], "auth_failed");
        assert_eq!(v["ledger"]["aurora"]["health_checks"], 2);
        let (_, text) = body(metrics(State(s), HeaderMap::new()).await.into_response()).await;
        for line in [
            r#"switchyard_health_checks_total{provider="aurora",result="ok"} 1"#,
            r#"switchyard_health_checks_total{provider="aurora",result="auth"} 1"#,
            r#"switchyard_health_check_latency_seconds_count{provider="aurora"} 2"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
