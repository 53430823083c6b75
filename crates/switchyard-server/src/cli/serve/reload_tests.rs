//! Reloads in process (`crate::reload`): through `POST /admin/reload` on the router `serve`
//! runs, with the state `serve` builds, on simulated providers (their latency under paused
//! time).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::Money;
use tower::ServiceExt as _;

use crate::access::keys::hash_token;
use crate::http::{app_live, Live};
use crate::reload::{Parts, Reloader, WATCH_EVERY};
use crate::shutdown::Tasks;

const ADMIN: &str = "sy-test-admin";
const TEAM: &str = "sy-test-team";
const OTHER: &str = "sy-test-other";

/// A scratch directory holding `c.toml`, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sy-reload-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn config(&self) -> PathBuf {
        self.0.join("c.toml")
    }

    fn write(&self, text: &str) {
        std::fs::write(self.config(), text).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A simulated provider: `latency_ms` each call (really waited), failing at `failure_rate`.
fn provider(name: &str, latency_ms: u32, failure_rate: f64) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"simulated\"\nfailure_rate = {failure_rate:?}\n\
         latency_range_ms = [{latency_ms}, {latency_ms}]\ncost_per_1k_tokens = 0.002\nseed = 1\nlatency_scale = 1.0\n\n"
    )
}

fn route(name: &str, providers: &[&str], extra: &str) -> String {
    let list: Vec<String> = providers.iter().map(|p| format!("{p:?}")).collect();
    format!(
        "[[routes]]\nname = \"{name}\"\nproviders = [{}]\n{extra}\n\n",
        list.join(", ")
    )
}

fn key(name: &str, token: &str, extra: &str) -> String {
    format!(
        "[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\nroutes = [\"*\"]\n{extra}\n\n",
        hash_token(token)
    )
}

/// The state `serve` builds for the file in `dir`, behind its router, with a reloader, as
/// if listening on 127.0.0.1.
async fn start(dir: &Dir) -> (Live, Arc<Reloader>) {
    start_on(dir, "127.0.0.1:4000").await
}

/// [`start`], as if listening on `listen`.
async fn start_on(dir: &Dir, listen: &str) -> (Live, Arc<Reloader>) {
    let path = dir.config();
    let config = crate::config::load(&path).unwrap();
    let tasks = Tasks::new();
    let clock = Clock::system();
    let (state, wired) = super::build_state(&config, clock, &tasks).await.unwrap();
    state.ready.store(true, std::sync::atomic::Ordering::SeqCst);
    let live = Live::new(state);
    let parts = Parts {
        path: path.clone(),
        listen: listen.to_owned(),
        started_text: std::fs::read_to_string(&path).unwrap(),
        started: config,
        store: wired.store,
        observers: wired.observers,
        clock,
        env: Arc::new(|_: &str| None),
        metrics_token: wired.metrics_token,
        checks: None,
    };
    let reloader = Arc::new(Reloader::new(parts, live.clone()));
    let as_reload: Arc<dyn crate::http::Reload> = reloader.clone();
    (live.clone().with_reloader(as_reload), reloader)
}

async fn send(live: &Live, mut req: Request<Body>) -> Response {
    req.headers_mut().insert(
        "host",
        axum::http::HeaderValue::from_static("127.0.0.1:4000"),
    );
    app_live(live.clone()).oneshot(req).await.unwrap()
}

fn chat(model: &str, token: &str) -> Request<Body> {
    let body = json!({"model": model, "messages": [{"role": "user", "content": "hello"}]});
    Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn reload_request(token: &str) -> Request<Body> {
    Request::post("/admin/reload")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::empty())
        .unwrap()
}

async fn json_of(resp: Response) -> Value {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
}

async fn status_of(live: &Live, model: &str, token: &str) -> StatusCode {
    send(live, chat(model, token)).await.status()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_bad_file_changes_nothing_and_the_answer_says_why() {
    let dir = Dir::new("bad");
    let good = format!(
        "{}{}{}{}",
        provider("a", 1, 0.0),
        route("r", &["a"], ""),
        key("admin", ADMIN, "admin = true"),
        key("team", TEAM, "")
    );
    dir.write(&good);
    let (live, _) = start(&dir).await;
    let before = live.current();
    assert_eq!(status_of(&live, "r", TEAM).await, StatusCode::OK);

    // a misspelt field and a route to a provider that does not exist: every problem named
    dir.write(&format!(
        "{}{}{}",
        provider("a", 1, 0.0).replace("failure_rate", "failure_rat"),
        route("r", &["a", "gone"], ""),
        key("admin", ADMIN, "admin = true"),
    ));
    let resp = send(&live, reload_request(ADMIN)).await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = json_of(resp).await;
    assert_eq!(body["error"]["code"], "config_invalid", "{body}");
    let problems = body["problems"].to_string();
    assert!(problems.contains("failure_rat"), "{body}");
    assert!(problems.contains("failure_rate"), "did you mean: {body}");

    // validated as `check` validates: a route naming no provider
    dir.write(&format!(
        "{}{}{}",
        provider("a", 1, 0.0),
        route("r", &["a", "gone"], ""),
        key("admin", ADMIN, "admin = true"),
    ));
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert!(
        body["problems"][0]
            .as_str()
            .unwrap()
            .contains("routes[0].providers[1]: no provider named \"gone\""),
        "{body}"
    );
    assert!(
        Arc::ptr_eq(&before.0, &live.current().0),
        "nothing was swapped"
    );
    // the removed key still works: nothing changed
    assert_eq!(status_of(&live, "r", TEAM).await, StatusCode::OK);

    // only admin keys reload; without a key, 401
    let resp = send(&live, reload_request(TEAM)).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = send(
        &live,
        Request::post("/admin/reload")
            .header("content-type", "application/json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);

    let metrics = render(&live);
    assert!(
        metrics.contains("switchyard_config_reloads_total{result=\"error\"} 2"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("switchyard_config_reloads_total{result=\"ok\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_good_file_adds_a_route_and_provider_and_removes_a_key_for_the_next_request() {
    let dir = Dir::new("good");
    let admin = key("admin", ADMIN, "admin = true");
    dir.write(&format!(
        "{}{}{admin}{}{}",
        provider("a", 1, 0.0),
        route("r", &["a"], ""),
        key("team", TEAM, ""),
        key("other", OTHER, ""),
    ));
    let (live, _) = start(&dir).await;
    assert_eq!(status_of(&live, "r", TEAM).await, StatusCode::OK);
    assert_eq!(status_of(&live, "new", TEAM).await, StatusCode::NOT_FOUND);

    dir.write(&format!(
        "{}{}{}{}{admin}{}",
        provider("a", 1, 0.0),
        provider("b", 1, 0.0),
        route("r", &["a"], ""),
        route("new", &["b"], ""),
        key("other", OTHER, ""),
    ));
    let resp = send(&live, reload_request(ADMIN)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_of(resp).await;
    assert_eq!(body["applied"], true, "{body}");
    assert_eq!(names(&body["providers"]["added"]), ["b"], "{body}");
    assert_eq!(names(&body["providers"]["kept"]), ["a"], "{body}");
    assert_eq!(names(&body["routes"]["added"]), ["new"], "{body}");
    assert_eq!(names(&body["routes"]["kept"]), ["r"], "{body}");
    assert_eq!(names(&body["keys"]["removed"]), ["team"], "{body}");
    assert_eq!(names(&body["keys"]["kept"]), ["admin", "other"], "{body}");
    assert_eq!(body["restart_needed"], json!([]), "{body}");

    assert_eq!(status_of(&live, "new", OTHER).await, StatusCode::OK);
    assert_eq!(status_of(&live, "r", OTHER).await, StatusCode::OK);
    assert_eq!(status_of(&live, "r", TEAM).await, StatusCode::UNAUTHORIZED);
    // the per-key series name the new route (not `other`)
    let metrics = render(&live);
    assert!(
        metrics
            .contains("switchyard_key_requests_total{route=\"new\",key=\"other\",provider=\"b\""),
        "{metrics}"
    );

    // the same file again: nothing to swap, and the answer says so
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert_eq!(body["applied"], false, "{body}");

    // a field only a restart applies is named, and the rest applies
    let text = std::fs::read_to_string(dir.config()).unwrap();
    dir.write(&format!(
        "[server]\nlisten = \"127.0.0.1:4999\"\nworkers = 2\n{text}{}",
        route("third", &["a"], "")
    ));
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert_eq!(
        body["restart_needed"],
        json!(["server.listen", "server.workers"]),
        "{body}"
    );
    assert_eq!(names(&body["routes"]["added"]), ["third"], "{body}");
    assert_eq!(status_of(&live, "third", OTHER).await, StatusCode::OK);
}

/// A file is checked as for the address the server listens on, whatever the file says: a
/// public listener cannot lose its last key by a reload (keyless mode is loopback only).
#[tokio::test]
async fn a_public_listener_cannot_be_reloaded_into_keyless_mode() {
    let dir = Dir::new("public");
    let routes = format!("{}{}", provider("a", 1, 0.0), route("r", &["a"], ""));
    dir.write(&format!(
        "[server]\nlisten = \"0.0.0.0:4000\"\n{routes}{}",
        key("admin", ADMIN, "admin = true")
    ));
    let (live, _) = start_on(&dir, "0.0.0.0:4000").await;
    // the file now says loopback, and has no keys: the process still listens publicly
    dir.write(&format!("[server]\nlisten = \"127.0.0.1:4000\"\n{routes}"));
    let resp = send(&live, reload_request(ADMIN)).await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = json_of(resp).await;
    assert!(
        body["problems"][0]
            .as_str()
            .unwrap()
            .starts_with("refusing to listen on 0.0.0.0:4000 without client keys"),
        "{body}"
    );
    assert_eq!(status_of(&live, "r", ADMIN).await, StatusCode::OK);
}

/// A request in flight when the swap happens finishes on the config it started with: its
/// route is gone from the new file, yet it is answered; the next request to it is not.
#[tokio::test(start_paused = true)]
async fn a_request_in_flight_finishes_on_the_config_it_started_with() {
    let dir = Dir::new("inflight");
    let admin = key("admin", ADMIN, "admin = true");
    dir.write(&format!(
        "{}{}{}{admin}",
        provider("slow", 5_000, 0.0),
        route("r", &["slow"], ""),
        route("keep", &["slow"], ""),
    ));
    let (live, _) = start(&dir).await;
    let swap = async {
        // the call is under way (the provider waits 5 s; this wakes at 1 s)
        tokio::time::sleep(Duration::from_secs(1)).await;
        dir.write(&format!(
            "{}{}{admin}",
            provider("slow", 5_000, 0.0),
            route("keep", &["slow"], ""),
        ));
        let body = json_of(send(&live, reload_request(ADMIN)).await).await;
        assert_eq!(names(&body["routes"]["removed"]), ["r"], "{body}");
        assert_eq!(status_of(&live, "r", ADMIN).await, StatusCode::NOT_FOUND);
    };
    let (resp, ()) = tokio::join!(send(&live, chat("r", ADMIN)), swap);
    assert_eq!(resp.status(), StatusCode::OK);
    let answer = json_of(resp).await;
    assert!(
        answer["choices"][0]["message"]["content"].is_string(),
        "{answer}"
    );
}

/// The file watch reloads a changed file, and refuses a bad one once, not at every look.
#[tokio::test(start_paused = true)]
async fn the_file_watch_reloads_a_changed_file_and_refuses_a_bad_one_once() {
    let dir = Dir::new("watch");
    let admin = key("admin", ADMIN, "admin = true");
    dir.write(&format!(
        "{}{}{admin}",
        provider("a", 1, 0.0),
        route("r", &["a"], "")
    ));
    let (live, reloader) = start(&dir).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let tasks = Tasks::new();
    tasks.spawn(Arc::clone(&reloader).watch(WATCH_EVERY, stop.clone()));
    dir.write(&format!(
        "{}{}{}{admin}",
        provider("a", 1, 0.0),
        route("r", &["a"], ""),
        route("added", &["a"], "")
    ));
    tokio::time::sleep(WATCH_EVERY * 3).await;
    assert_eq!(status_of(&live, "added", ADMIN).await, StatusCode::OK);
    dir.write("[[routes]]\nname = \"r\"\nproviders = []\n");
    tokio::time::sleep(WATCH_EVERY * 5).await;
    assert_eq!(status_of(&live, "added", ADMIN).await, StatusCode::OK);
    let metrics = render(&live);
    assert!(
        metrics.contains("switchyard_config_reloads_total{result=\"ok\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("switchyard_config_reloads_total{result=\"error\"} 1"),
        "refused once: {metrics}"
    );
    stop.cancel();
    assert!(tasks.wait(Duration::from_secs(5)).await);
}

fn render(live: &Live) -> String {
    let state = live.current();
    state.metrics.render_with(
        &[],
        0,
        &state.gateway.state().status(),
        &crate::telemetry::metrics::Extras::default(),
    )
}

/// Breaker state carries over for what did not change and starts afresh for what did: an
/// open circuit stays open for an unchanged provider and closes for a changed one. A
/// route's and a key's spend and a key's rate window carry over whenever it is still there,
/// changed or not: only its limits change.
#[tokio::test]
async fn breakers_carry_over_when_unchanged_and_spend_and_windows_whenever_still_there() {
    let dir = Dir::new("carry");
    let admin = key("admin", ADMIN, "admin = true");
    let breaker =
        "breaker = { failure_threshold = 1, cooldown = \"60s\" }\nretry = { max_attempts = 1 }";
    let before = format!(
        "{}{}{}{}{}{}{admin}{}{}",
        provider("down-kept", 1, 1.0),
        provider("down-changed", 1, 1.0),
        provider("up", 1, 0.0),
        route("r-kept", &["down-kept"], breaker),
        route("r-changed", &["down-changed"], breaker),
        route("spend", &["up"], "budget_usd = 10.0"),
        key("team", TEAM, "budget_usd = 5.0\nrpm = 1"),
        key("other", OTHER, "budget_usd = 5.0\nrpm = 2"),
    );
    dir.write(&before);
    let (live, _) = start(&dir).await;
    // open both circuits
    for r in ["r-kept", "r-changed"] {
        assert_ne!(status_of(&live, r, ADMIN).await, StatusCode::OK);
    }
    let states = live.current().gateway.health_states().await;
    assert_eq!(states["down-kept"], "open", "{states:?}");
    assert_eq!(states["down-changed"], "open", "{states:?}");
    // spend and windows: one request per key (team's rpm of 1 used up), route spend
    let store = Arc::clone(live.current().gateway.state());
    let usd = Money::from_usd;
    for scope in ["route:spend", "key:team", "key:other"] {
        let id = store
            .reserve(scope, usd(100.0), usd(1.0), Duration::from_secs(60))
            .await
            .unwrap();
        store.settle(scope, id, usd(1.0), usd(1.0)).await;
    }
    assert_eq!(status_of(&live, "spend", TEAM).await, StatusCode::OK);
    assert_eq!(status_of(&live, "spend", OTHER).await, StatusCode::OK);
    assert_eq!(
        status_of(&live, "spend", TEAM).await,
        StatusCode::TOO_MANY_REQUESTS
    );

    // change one provider, route `spend`'s deadline and key `other`'s rpm (2 to 1); keep
    // everything else
    let after = before
        .replace(
            &provider("down-changed", 1, 1.0),
            &provider("down-changed", 2, 1.0),
        )
        .replace("budget_usd = 10.0", "budget_usd = 10.0\ndeadline = \"50s\"")
        .replace(
            &key("other", OTHER, "budget_usd = 5.0\nrpm = 2"),
            &key("other", OTHER, "budget_usd = 5.0\nrpm = 1"),
        );
    dir.write(&after);
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert_eq!(
        names(&body["providers"]["changed"]),
        ["down-changed"],
        "{body}"
    );
    assert_eq!(names(&body["routes"]["changed"]), ["spend"], "{body}");
    assert_eq!(names(&body["keys"]["changed"]), ["other"], "{body}");

    let states = live.current().gateway.health_states().await;
    assert_eq!(states["down-kept"], "open", "kept: {states:?}");
    assert_eq!(states["down-changed"], "closed", "changed: {states:?}");
    for scope in ["key:team", "key:other", "route:spend"] {
        assert!(
            store.budget(scope, usd(100.0)).await.spent >= usd(1.0),
            "{scope} keeps its spend"
        );
    }
    // the kept key's rpm window is still used up; so is the changed key's, whose request
    // before the reload counts against its new rpm of 1
    assert_eq!(
        status_of(&live, "spend", TEAM).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        status_of(&live, "spend", OTHER).await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// An admin raises a key's and a route's exhausted budget and reloads: what was spent stays
/// spent and the new limit applies (the next request is answered); lowering it again
/// refuses again. A removed key's books go.
#[tokio::test]
async fn a_raised_budget_keeps_what_was_spent_and_applies_the_new_limit() {
    let dir = Dir::new("raise");
    let config = |key_budget: f64, route_budget: f64, with_other: bool| {
        let other = if with_other {
            key("other", OTHER, "budget_usd = 5.0")
        } else {
            String::new()
        };
        format!(
            "{}{}{}{}{}{other}",
            provider("up", 1, 0.0),
            route("open", &["up"], ""),
            route("paid", &["up"], &format!("budget_usd = {route_budget:?}")),
            key("admin", ADMIN, "admin = true"),
            key("team", TEAM, &format!("budget_usd = {key_budget:?}")),
        )
    };
    dir.write(&config(1.0, 1.0, true));
    let (live, _) = start(&dir).await;
    let store = Arc::clone(live.current().gateway.state());
    let usd = Money::from_usd;
    for scope in ["key:team", "route:paid", "key:other"] {
        let id = store
            .reserve(scope, usd(100.0), usd(1.0), Duration::from_secs(60))
            .await
            .unwrap();
        store.settle(scope, id, usd(1.0), usd(1.0)).await;
    }
    let spent = |scope: &'static str| {
        let store = Arc::clone(&store);
        async move { store.budget(scope, usd(100.0)).await.spent }
    };
    // both budgets are used up
    assert_eq!(
        status_of(&live, "open", TEAM).await,
        StatusCode::PAYMENT_REQUIRED
    );
    assert_eq!(
        status_of(&live, "paid", ADMIN).await,
        StatusCode::PAYMENT_REQUIRED
    );

    // raised: the next requests are answered, and count on top of what was spent
    dir.write(&config(20.0, 20.0, true));
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert_eq!(names(&body["keys"]["changed"]), ["team"], "{body}");
    assert_eq!(names(&body["routes"]["changed"]), ["paid"], "{body}");
    assert_eq!(status_of(&live, "open", TEAM).await, StatusCode::OK);
    assert_eq!(status_of(&live, "paid", ADMIN).await, StatusCode::OK);
    assert!(spent("key:team").await > usd(1.0), "kept, and added to");
    assert!(spent("route:paid").await > usd(1.0), "kept, and added to");

    // lowered again (and key `other` removed): refused again; the removed key's books go
    dir.write(&config(1.0, 1.0, false));
    let body = json_of(send(&live, reload_request(ADMIN)).await).await;
    assert_eq!(names(&body["keys"]["removed"]), ["other"], "{body}");
    assert_eq!(
        status_of(&live, "open", TEAM).await,
        StatusCode::PAYMENT_REQUIRED
    );
    assert_eq!(
        status_of(&live, "paid", ADMIN).await,
        StatusCode::PAYMENT_REQUIRED
    );
    assert_eq!(spent("key:other").await, Money::ZERO, "removed: forgotten");
}
