//! The dashboard's endpoints through `app()` with `oneshot`, over scripted providers:
//! admin-key gating, what each JSON endpoint reports after real traffic, and that no
//! secret ever appears in it.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ErrorKind, Gateway, Money, Price, ProviderSpec, Route};
use tower::ServiceExt as _;

use crate::access::keys::{hash_token, KeyStore};
use crate::config::KeyToml;
use crate::http::{app, AppState, Shared};
use crate::telemetry::insight::Insight;
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;

const ADMIN: &str = "sy-admin-token-7f3a";
const TEAM: &str = "sy-team-token-91c2";

fn keys() -> Vec<KeyToml> {
    vec![
        KeyToml {
            name: "ops".into(),
            sha256: hash_token(ADMIN),
            routes: vec![],
            admin: Some(true),
            ..KeyToml::default()
        },
        KeyToml {
            name: "team".into(),
            sha256: hash_token(TEAM),
            routes: vec!["*".into()],
            budget_usd: Some(1.0),
            budget_period: Some("day".into()),
            rpm: Some(600),
            ..KeyToml::default()
        },
    ]
}

/// primary (fails three times with 500s, then answers), backup, and an unpriced provider;
/// the insight wired as observer and log tap, as `serve` does.
fn state(keys: &[KeyToml]) -> AppState {
    let price = Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap();
    let primary = ScriptedProvider::new("primary-model").then_n(3, &Step::fail(ErrorKind::Server));
    let metrics = Arc::new(Metrics::new());
    let insight = Arc::new(Insight::new(Clock::system()));
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new("primary", Arc::new(primary))
                .price(price)
                .max_attempts(1),
        )
        .provider(ProviderSpec::new("backup", Arc::new(ScriptedProvider::new("b"))).price(price))
        .provider(ProviderSpec::new(
            "mystery",
            Arc::new(ScriptedProvider::new("mystery-model-without-a-price")),
        ))
        .route(Route::new("smart", &["primary", "backup"]).budget(Money::from_usd(10.0)))
        .route(Route::new("other", &["mystery"]).allow_unpriced(true))
        .observer(metrics.clone())
        .observer(insight.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    shared.max_body_bytes = 4096;
    AppState(Arc::new(shared))
}

fn get(path: &str, token: Option<&str>) -> Request<Body> {
    let mut req = Request::get(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    req.body(Body::empty()).unwrap()
}

fn chat(model: &str, stream: bool) -> Request<Body> {
    let body = json!({
        "model": model,
        "stream": stream,
        "messages": [{"role": "user", "content": "hello"}],
    });
    Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {TEAM}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Status and full body (reading it to the end finishes streams, which logs them).
async fn call(state: &AppState, mut req: Request<Body>) -> (StatusCode, String) {
    req.headers_mut()
        .entry("host")
        .or_insert(axum::http::HeaderValue::from_static("127.0.0.1:4000"));
    let resp: Response = app(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn admin_json(state: &AppState, path: &str) -> Value {
    let (status, text) = call(state, get(path, Some(ADMIN))).await;
    assert_eq!(status, StatusCode::OK, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Four requests on `smart` (three fail over from primary and open its circuit, the fourth
/// skips it), one stream on `smart`, one call to the unpriced provider.
async fn traffic(state: &AppState) {
    for _ in 0..4 {
        assert_eq!(call(state, chat("smart", false)).await.0, StatusCode::OK);
    }
    let (status, text) = call(state, chat("smart", true)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert_eq!(call(state, chat("other", false)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn admin_endpoints_need_an_admin_key_when_keys_are_configured() {
    let s = state(&keys());
    let paths = [
        "/admin/overview",
        "/admin/transitions",
        "/admin/requests",
        "/admin/requests/req_1",
        "/admin/health",
        "/metrics",
    ];
    for path in paths {
        let (status, body) = call(&s, get(path, None)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
        let (status, _) = call(&s, get(path, Some("sy-wrong"))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        let (status, body) = call(&s, get(path, Some(TEAM))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(body.contains("admin_key_required"), "{body}");
        let (status, _) = call(&s, get(path, Some(ADMIN))).await;
        let want = if path.ends_with("req_1") {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::OK
        };
        assert_eq!(status, want, "{path}");
    }
    for open in ["/healthz", "/readyz", "/", "/dashboard/dashboard.js"] {
        assert_eq!(call(&s, get(open, None)).await.0, StatusCode::OK, "{open}");
    }
}

#[tokio::test]
async fn without_keys_the_admin_endpoints_are_open() {
    let s = state(&[]);
    for path in [
        "/admin/overview",
        "/admin/transitions",
        "/admin/requests",
        "/metrics",
    ] {
        assert_eq!(call(&s, get(path, None)).await.0, StatusCode::OK, "{path}");
    }
}

/// A Prometheus scraper's token for `/metrics` (`[telemetry] metrics_token_env`).
const SCRAPER: &str = "sy-metrics-scraper-4b8e";

fn with_metrics_token(state: AppState, token: &str) -> AppState {
    let Ok(mut shared) = Arc::try_unwrap(state.0) else {
        panic!("the state is shared");
    };
    shared.keys = shared.keys.with_metrics_token(Some(token));
    AppState(Arc::new(shared))
}

#[tokio::test]
async fn metrics_names_every_keys_spend_so_keys_mode_guards_it() {
    let s = state(&keys());
    traffic(&s).await;
    let (status, body) = call(&s, get("/metrics", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(!body.contains("team"), "{body}");
    let (status, body) = call(&s, get("/metrics", Some(TEAM))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("admin_key_required"), "{body}");
    let (status, body) = call(&s, get("/metrics", Some(ADMIN))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("scope=\"key\",name=\"team\""),
        "the admin sees the keys: {body}"
    );

    // a scraper's token reads it too, and only it besides admin keys
    let s = with_metrics_token(s, SCRAPER);
    let (status, body) = call(&s, get("/metrics", Some(SCRAPER))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("scope=\"key\",name=\"team\""), "{body}");
    assert_eq!(
        call(&s, get("/metrics", Some(ADMIN))).await.0,
        StatusCode::OK
    );
    assert_eq!(
        call(&s, get("/metrics", Some("sy-metrics-scraper-4b8f")))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&s, get("/metrics", Some(TEAM))).await.0,
        StatusCode::FORBIDDEN
    );
    // the scraper's token is no client key and no admin key
    let (status, _) = call(&s, get("/admin/health", Some(SCRAPER))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let mut req = chat("smart", false);
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {SCRAPER}").parse().unwrap(),
    );
    assert_eq!(call(&s, req).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn keyless_metrics_stay_open_unless_a_metrics_token_is_set() {
    let s = with_metrics_token(state(&[]), SCRAPER);
    let (status, body) = call(&s, get("/metrics", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("metrics_token_env"), "{body}");
    assert_eq!(
        call(&s, get("/metrics", Some("wrong"))).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&s, get("/metrics", Some(SCRAPER))).await.0,
        StatusCode::OK
    );
    // the rest of keyless mode is unchanged
    assert_eq!(call(&s, get("/admin/health", None)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn the_page_and_its_files_are_served_with_their_types() {
    let s = state(&keys());
    let cases = [
        ("/", "text/html"),
        ("/dashboard/dashboard.css", "text/css"),
        ("/dashboard/dashboard.js", "text/javascript"),
        ("/dashboard/database.js", "text/javascript"),
        ("/dashboard/icon.svg", "image/svg+xml"),
    ];
    for (path, ct) in cases {
        let resp = app(s.clone()).oneshot(get(path, None)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        let h = resp.headers();
        assert!(
            h["content-type"].to_str().unwrap().starts_with(ct),
            "{path}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff");
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"));
    }
    let (status, page) = call(&s, get("/", None)).await;
    assert_eq!(status, StatusCode::OK);
    for script in ["/dashboard/database.js", "/dashboard/dashboard.js"] {
        assert!(page.contains(script), "{script}");
    }
    assert!(page.contains("data-testid"));
    let (status, body) = call(&s, get("/dashboard/secrets.txt", None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn overview_shows_circuits_failovers_errors_latency_and_spend() {
    let s = state(&keys());
    traffic(&s).await;
    let v = admin_json(&s, "/admin/overview").await;
    assert_eq!(v["fleet"]["backend"], "memory");
    assert_eq!(v["fleet"]["connected"], true);
    assert_eq!(v["routes"][0]["name"], "smart");
    assert_eq!(v["routes"][0]["providers"], json!(["primary", "backup"]));
    assert_eq!(v["routes"][0]["budget"]["limit_usd"], 10.0);
    assert!(v["routes"][0]["budget"]["spent_usd"].as_f64().unwrap() > 0.0);
    assert!(v["routes"][1]["budget"].is_null());

    let p = &v["providers"][0];
    assert_eq!(p["name"], "primary");
    assert_eq!(p["circuit"]["state"], "open");
    assert_eq!(p["circuit"]["opened_by"], "server");
    assert!(p["circuit"]["open_until_ms"].as_u64().unwrap() > v["now_ms"].as_u64().unwrap());
    assert_eq!(p["errors"], json!({"server": 3}));
    assert_eq!(
        (p["attempts"].as_u64(), p["requests"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(p["failovers_from"], 5, "3 failures and 2 skips moved on");
    assert_eq!(p["skipped"]["circuit_open"], 2);

    let b = &v["providers"][1];
    assert_eq!(b["name"], "backup");
    assert_eq!(
        (b["requests"].as_u64(), b["failovers_to"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(b["latency"]["samples"], 5);
    assert!(b["latency"]["p50_ms"].is_number() && b["latency"]["p95_ms"].is_number());
    assert_eq!(b["latency"]["points"].as_array().unwrap().len(), 5);
    assert_eq!(b["ttft"]["samples"], 1, "one stream answered");
    assert!(b["spend_usd"].as_f64().unwrap() > 0.0);

    let m = &v["providers"][2];
    assert_eq!(
        (m["priced"].as_bool(), m["unpriced_calls"].as_u64()),
        (Some(false), Some(1))
    );
    assert_eq!(v["totals"]["unpriced_calls"], 1);

    let team = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "team")
        .unwrap();
    assert_eq!(team["budget"]["limit_usd"], 1.0);
    assert_eq!(team["budget"]["period"], "day");
    assert!(team["budget"]["spent_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(
        (team["requests"].as_u64(), team["unpriced_calls"].as_u64()),
        (Some(6), Some(1))
    );
    assert_eq!(
        (team["admin"].as_bool(), team["rpm"].as_u64()),
        (Some(false), Some(600))
    );
    assert_eq!(v["keys"][0]["admin"], true);
}

#[tokio::test]
async fn transitions_show_the_circuit_opening_with_its_cause() {
    let s = state(&keys());
    traffic(&s).await;
    let v = admin_json(&s, "/admin/transitions").await;
    assert_eq!(v["window_ms"], 3_600_000);
    let t = v["transitions"].as_array().unwrap();
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0]["provider"], "primary");
    assert_eq!(
        (t[0]["from"].as_str(), t[0]["to"].as_str()),
        (Some("closed"), Some("open"))
    );
    assert_eq!(t[0]["cause"], "server");
    assert!(t[0]["at_ms"].as_u64().unwrap() <= v["now_ms"].as_u64().unwrap());
    let now = &v["providers"][0];
    assert_eq!(
        (now["name"].as_str(), now["state"].as_str()),
        (Some("primary"), Some("open"))
    );
    // an open circuit turns half-open by the clock at the end of its cooldown
    assert!(now["open_until_ms"].as_u64().unwrap() > t[0]["at_ms"].as_u64().unwrap());
}

#[tokio::test]
async fn recent_requests_come_newest_first_each_with_every_attempt() {
    let s = state(&keys());
    traffic(&s).await;
    let v = admin_json(&s, "/admin/requests").await;
    let list = v["requests"].as_array().unwrap();
    assert_eq!(list.len(), 6);
    assert_eq!(list[0]["route"], "other", "newest first");
    assert_eq!(list[1]["stream"], true);
    assert!(list[1]["ttft_ms"].is_number());
    let oldest = &list[5];
    assert_eq!(
        (oldest["provider"].as_str(), oldest["failed_over"].as_bool()),
        (Some("backup"), Some(true))
    );
    assert_eq!(oldest["key"], "team");

    let id = oldest["id"].as_str().unwrap();
    let one = admin_json(&s, &format!("/admin/requests/{id}")).await;
    let attempts = one["request"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["provider"], "primary");
    assert_eq!(
        (
            attempts[0]["outcome"].as_str(),
            attempts[0]["kind"].as_str()
        ),
        (Some("failed"), Some("server"))
    );
    assert_eq!(attempts[1]["outcome"], "success");

    let two = admin_json(&s, "/admin/requests?limit=2").await;
    assert_eq!(two["requests"].as_array().unwrap().len(), 2);
    let (status, _) = call(&s, get("/admin/requests?limit=lots", Some(ADMIN))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = call(&s, get("/admin/requests/req_nope", Some(ADMIN))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("request_not_found"), "{body}");
}

#[tokio::test]
async fn nothing_returned_reveals_a_secret() {
    let s = state(&keys());
    traffic(&s).await;
    let mut everything = String::new();
    for path in [
        "/admin/overview",
        "/admin/transitions",
        "/admin/requests",
        "/admin/health",
        "/metrics",
    ] {
        let (status, body) = call(&s, get(path, Some(ADMIN))).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        everything.push_str(&body);
    }
    for secret in [
        ADMIN.to_owned(),
        TEAM.to_owned(),
        hash_token(ADMIN),
        hash_token(TEAM),
    ] {
        assert!(!everything.contains(&secret), "a secret leaked");
    }
    assert!(!everything.contains("sha256"), "no hash field at all");
}
