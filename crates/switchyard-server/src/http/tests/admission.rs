//! What a key is refused before its body is read (a key with no route, over its rate, at
//! its cap of requests in flight), so a slow body never holds a slot the request would
//! lose anyway; and the per-key cap of requests in flight (`[[keys]] max_in_flight`),
//! released when a request (or a stream) ends. Through `app()` with `oneshot`, with
//! bodies that never arrive.

use futures_util::poll;

use super::*;

/// A body that never arrives: its reader waits for ever.
fn hanging_body() -> Body {
    Body::from_stream(futures_util::stream::pending::<
        Result<Vec<u8>, std::io::Error>,
    >())
}

fn hanging(token: &str) -> Request<Body> {
    Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(hanging_body())
        .unwrap()
}

fn key(name: &str, routes: &[&str]) -> KeyToml {
    KeyToml {
        name: name.into(),
        sha256: hash_token(&format!("sy-{name}")),
        routes: routes.iter().map(|r| (*r).to_owned()).collect(),
        ..KeyToml::default()
    }
}

fn keys() -> Vec<KeyToml> {
    vec![
        key("lost", &[]),
        KeyToml {
            rpm: Some(1),
            ..key("slow", &["*"])
        },
        KeyToml {
            max_in_flight: Some(2),
            ..key("busy", &["*"])
        },
        key("good", &["*"]),
    ]
}

fn fixture_with(keys: &[KeyToml]) -> Fixture {
    fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        keys,
        Route::new("smart", &["primary", "backup"]),
    )
}

/// `req`'s answer, which must come without the body being read (paused time: a handler
/// waiting for the body would wait for ever, and the timeout fires).
async fn answered_before_the_body(state: &AppState, req: Request<Body>) -> (StatusCode, Value) {
    let resp = tokio::time::timeout(Duration::from_secs(60), call(state, req))
        .await
        .expect("answered without the body");
    let status = resp.status();
    (status, json_body(resp).await)
}

#[tokio::test(start_paused = true)]
async fn a_key_that_would_be_refused_is_refused_before_its_body() {
    let f = fixture_with(&keys());
    let (status, body) = answered_before_the_body(&f.state, hanging("sy-lost")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["error"]["message"],
        "key \"lost\" may not use any route"
    );

    // the first request of an rpm-1 key is admitted (and waits for its body); the next is
    // a 429 at once
    let first = call(&f.state, hanging("sy-slow"));
    tokio::pin!(first);
    assert!(poll!(&mut first).is_pending(), "admitted: reading its body");
    let (status, body) = answered_before_the_body(&f.state, hanging("sy-slow")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");

    let (status, _) = answered_before_the_body(&f.state, hanging("sy-nobody")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

async fn refused_at_once(state: &AppState, req: Request<Body>) -> Response {
    tokio::time::timeout(Duration::from_secs(60), call(state, req))
        .await
        .expect("answered at once")
}

fn streamed(token: &str) -> Request<Body> {
    let mut body = chat("smart");
    body["stream"] = json!(true);
    Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_key_holds_at_most_its_requests_in_flight() {
    let f = fixture_with(&keys());
    let mut one = Box::pin(call(&f.state, hanging("sy-busy")));
    let mut two = Box::pin(call(&f.state, hanging("sy-busy")));
    assert!(poll!(&mut one).is_pending());
    assert!(poll!(&mut two).is_pending());
    let resp = refused_at_once(&f.state, keyed_request("sy-busy")).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&resp, "retry-after"), "1");
    let message = json_body(resp).await["error"]["message"].clone();
    assert!(
        message.as_str().unwrap().contains("max_in_flight"),
        "{message}"
    );
    // another key is not held up
    assert_eq!(
        call(&f.state, keyed_request("sy-good")).await.status(),
        StatusCode::OK
    );
    // a request that ends (here: its client went away) gives its place back
    drop(one);
    assert_eq!(
        call(&f.state, keyed_request("sy-busy")).await.status(),
        StatusCode::OK
    );
    drop(two);

    // a stream holds its place until its body is done with
    let a = call(&f.state, streamed("sy-busy")).await;
    let b = call(&f.state, streamed("sy-busy")).await;
    assert_eq!((a.status(), b.status()), (StatusCode::OK, StatusCode::OK));
    let resp = refused_at_once(&f.state, keyed_request("sy-busy")).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let text = text_body(a).await;
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert_eq!(
        call(&f.state, keyed_request("sy-busy")).await.status(),
        StatusCode::OK
    );
    drop(b);
}

#[test]
fn a_key_without_max_in_flight_takes_a_quarter_of_the_server() {
    assert_eq!(
        crate::access::keys::DEFAULT_MAX_IN_FLIGHT,
        crate::http::edge::DEFAULT_MAX_IN_FLIGHT,
        "access's copy of the server's default"
    );
    let store = KeyStore::with_in_flight_default(&[key("k", &["*"])], 64);
    let headers: axum::http::HeaderMap = [(
        axum::http::header::AUTHORIZATION,
        "Bearer sy-k".parse().unwrap(),
    )]
    .into_iter()
    .collect();
    let caller = store.authenticate(&headers).unwrap().unwrap();
    assert_eq!(caller.in_flight.cap(), 16);
}

/// A flood of requests without a valid key: each is a 401 and counted, but the request log
/// (and its taps: the access log, the dashboard) gets the first of each reason per second.
#[tokio::test(start_paused = true)]
async fn a_flood_of_unauthenticated_requests_is_logged_once_per_reason_per_second() {
    use crate::telemetry::insight::Insight;
    let f = fixture_with(&keys());
    let Ok(mut shared) = Arc::try_unwrap(f.state.0) else {
        panic!("the state is shared");
    };
    let insight = Arc::new(Insight::new(switchyard::clock::Clock::system()));
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    let state = AppState(Arc::new(shared));
    for _ in 0..50 {
        let resp = call(&state, post(&chat("smart"))).await;
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    for _ in 0..30 {
        let resp = call(&state, keyed_request("sy-nobody")).await;
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    let logged = state.insight.recent(100);
    assert_eq!(logged.len(), 2, "the first of each reason");
    assert!(logged.iter().all(|e| e.status == 401));
    let metrics = (state.metrics).render(&[], 0, &state.gateway.state().status());
    assert!(
        metrics.contains("switchyard_unauthenticated_total{reason=\"missing_key\"} 50"),
        "{metrics}"
    );
    assert!(
        metrics.contains("switchyard_unauthenticated_total{reason=\"invalid_key\"} 30"),
        "{metrics}"
    );
    // the next second logs a first one again
    tokio::time::advance(crate::telemetry::refusals::WINDOW).await;
    call(&state, post(&chat("smart"))).await;
    assert_eq!(state.insight.recent(100).len(), 3);
    // a key's own requests are logged each time
    for _ in 0..3 {
        call(&state, keyed_request("sy-good")).await;
    }
    assert_eq!(state.insight.recent(100).len(), 6);
}
