//! Wildcard routes: the client's model forwarded to a template provider, each model its
//! own breaker, price and ledger row; fallbacks as on any route; refused models never
//! reach a provider.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard::breaker::SkipReason;
use switchyard::gateway::StreamEvent;
use switchyard::observe::Outcome;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::provider::Provider;
use switchyard::{ChatRequest, ErrorKind, Gateway, GatewayError, Money, ProviderSpec, Route};

use super::{breaker, priced, route as main_route, state_of};

/// A template whose models are scripted providers: those scripted as given, any other a
/// fresh one answering "ok from {model}". Records every model it built.
struct Template {
    scripts: Mutex<HashMap<String, Arc<ScriptedProvider>>>,
    built: Mutex<Vec<String>>,
}

impl Template {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(HashMap::new()),
            built: Mutex::new(Vec::new()),
        })
    }

    fn script(self: &Arc<Self>, model: &str, p: ScriptedProvider) -> Arc<ScriptedProvider> {
        let p = Arc::new(p);
        self.scripts.lock().unwrap().insert(model.into(), p.clone());
        p
    }

    fn built(&self) -> Vec<String> {
        self.built.lock().unwrap().clone()
    }

    fn spec(self: &Arc<Self>) -> ProviderSpec {
        let me = Arc::clone(self);
        let own = Arc::new(ScriptedProvider::new("template-own-model"));
        ProviderSpec::new("tmpl", own).models(Arc::new(move |model: &str| {
            me.built.lock().unwrap().push(model.to_owned());
            let scripted = me.scripts.lock().unwrap().get(model).cloned();
            let p: Arc<dyn Provider> =
                scripted.unwrap_or_else(|| Arc::new(ScriptedProvider::new(model)));
            Ok(p)
        }))
    }
}

fn wildcard(providers: &[&str], models: &[&str]) -> Route {
    let base = main_route(providers);
    Route::wildcard("tmpl/*", providers, models)
        .unwrap()
        .retry(base.retry)
        .breaker(breaker(1, 30))
}

fn gateway(t: &Arc<Template>, r: Route) -> Gateway {
    let backup = Arc::new(ScriptedProvider::new("backup-model"));
    Gateway::builder()
        .provider(t.spec().max_attempts(1))
        .provider(priced("backup", &backup))
        .route(r)
        .seed(1)
        .build()
        .unwrap()
}

fn hi() -> ChatRequest {
    ChatRequest::from_prompt("hi")
}

#[tokio::test(start_paused = true)]
async fn the_client_model_reaches_the_template_and_is_reported() {
    let t = Template::new();
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["gpt-4.1*", "o4-mini"]));
    let resp = gw.chat("tmpl/gpt-4.1-mini", &hi()).await.unwrap();
    assert_eq!(resp.text, "ok from gpt-4.1-mini");
    assert_eq!(resp.provider, "tmpl/gpt-4.1-mini");
    assert_eq!(resp.model, "gpt-4.1-mini");
    assert!(!resp.failed_over);
    gw.chat("tmpl/gpt-4.1-mini", &hi()).await.unwrap();
    gw.chat("tmpl/o4-mini", &hi()).await.unwrap();
    assert_eq!(
        t.built(),
        ["gpt-4.1-mini", "o4-mini"],
        "built once per model"
    );
    let ledger = gw.ledger().summary();
    assert_eq!(ledger["tmpl/gpt-4.1-mini"].calls, 2);
    assert_eq!(ledger["tmpl/o4-mini"].calls, 1);
    assert!(!ledger.contains_key("tmpl"));
    // the route itself is found by the client's name, for admission and keys
    assert_eq!(gw.route("tmpl/o4-mini").unwrap().name, "tmpl/*");
}

#[tokio::test(start_paused = true)]
async fn one_models_open_breaker_leaves_its_siblings_closed() {
    let t = Template::new();
    t.script(
        "gpt-a",
        ScriptedProvider::new("gpt-a")
            .then(Step::text("first"))
            .otherwise(Step::fail(ErrorKind::Server)),
    );
    let b = t.script("gpt-b", ScriptedProvider::new("gpt-b"));
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["gpt-*"]));

    // A answers once (it is kept), then fails over to the backup; with a threshold of 1
    // its circuit opens
    assert_eq!(gw.chat("tmpl/gpt-a", &hi()).await.unwrap().text, "first");
    let resp = gw.chat("tmpl/gpt-a", &hi()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert!(resp.failed_over);
    assert_eq!(state_of(&gw, "tmpl/gpt-a").await, "open");

    // B, on the same template, is untouched
    let resp = gw.chat("tmpl/gpt-b", &hi()).await.unwrap();
    assert_eq!(resp.provider, "tmpl/gpt-b");
    assert_eq!(state_of(&gw, "tmpl/gpt-b").await, "closed");
    assert_eq!(b.calls(), 1);

    // A's next request skips its open circuit, and says so
    let resp = gw.chat("tmpl/gpt-a", &hi()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    let first = &resp.attempts[0];
    assert_eq!(first.provider, "tmpl/gpt-a");
    assert!(matches!(
        first.outcome,
        Outcome::Skipped {
            reason: SkipReason::CircuitOpen,
            ..
        }
    ));
    let ledger = gw.ledger().summary();
    assert_eq!(ledger["tmpl/gpt-a"].failures[&ErrorKind::Server], 1);
    assert!(ledger["tmpl/gpt-b"].failures.is_empty());
}

/// Issue 24 item 9: eight requests for models that do not exist used to fill
/// `max_models` for good. A model takes a place only once it has answered; until then it
/// is a trial reported as `tmpl/*`, with no breaker and no ledger row of its own.
#[tokio::test(start_paused = true)]
async fn models_that_never_answer_take_no_place() {
    let t = Template::new();
    for i in 0..8 {
        let m = format!("gpt-4.1-bogus{i}");
        t.script(
            &m,
            ScriptedProvider::new(&m).otherwise(Step::fail(ErrorKind::ModelNotFound)),
        );
    }
    let r = wildcard(&["tmpl"], &["*"]).max_models(2);
    let gw = gateway(&t, r);
    for i in 0..8 {
        let err = gw
            .chat(&format!("tmpl/gpt-4.1-bogus{i}"), &hi())
            .await
            .unwrap_err();
        let attempts = err.attempts();
        assert_eq!(attempts.len(), 1, "{err:?}");
        assert_eq!(attempts[0].provider, "tmpl/*");
        assert_eq!(attempts[0].model, format!("gpt-4.1-bogus{i}"));
    }
    // every client's real models still find a place
    for m in ["gpt-4.1-mini", "o4-mini"] {
        let resp = gw.chat(&format!("tmpl/{m}"), &hi()).await.unwrap();
        assert_eq!(resp.provider, format!("tmpl/{m}"));
    }
    let names: Vec<String> = gw.health().await.into_iter().map(|h| h.name).collect();
    assert_eq!(
        names,
        ["tmpl", "backup", "tmpl/gpt-4.1-mini", "tmpl/o4-mini"]
    );
    let ledger = gw.ledger().summary();
    assert_eq!(ledger["tmpl/*"].failures[&ErrorKind::ModelNotFound], 8);
    assert!(!ledger.keys().any(|k| k.contains("bogus")), "{ledger:?}");
    // a bogus model asked again is tried again (nothing remembered of it), and refused
    // once the route is full of models that answered
    assert!(matches!(
        gw.chat("tmpl/gpt-4.1-bogus0", &hi()).await,
        Err(GatewayError::ModelRefused { .. })
    ));
}

/// A kept model unused for `MODEL_IDLE` gives its place to a new one; one in use or used
/// lately does not.
#[tokio::test(start_paused = true)]
async fn an_idle_model_gives_its_place_up() {
    use switchyard::gateway::MODEL_IDLE;
    let t = Template::new();
    let gw = gateway(&t, wildcard(&["tmpl"], &["*"]).max_models(1));
    gw.chat("tmpl/m1", &hi()).await.unwrap();
    tokio::time::advance(MODEL_IDLE - Duration::from_secs(1)).await;
    let err = gw.chat("tmpl/m2", &hi()).await.unwrap_err();
    assert!(err.to_string().contains("max_models"), "{err}");
    assert!(err.to_string().contains("15 minutes"), "{err}");
    gw.chat("tmpl/m1", &hi()).await.unwrap(); // used again: idle from now
    tokio::time::advance(MODEL_IDLE).await;
    let resp = gw.chat("tmpl/m2", &hi()).await.unwrap();
    assert_eq!(resp.provider, "tmpl/m2");
    let names: Vec<String> = gw.health().await.into_iter().map(|h| h.name).collect();
    assert_eq!(names, ["tmpl", "backup", "tmpl/m2"]);
    assert!(
        gw.chat("tmpl/m1", &hi()).await.is_err(),
        "m2 holds the place now"
    );
    assert_eq!(t.built(), ["m1", "m2"]);
}

/// A trial that fails, then answers on a retry, is reported as that model throughout.
#[tokio::test(start_paused = true)]
async fn a_trial_answering_on_a_retry_is_reported_under_its_name() {
    let t = Template::new();
    t.script(
        "gpt-r",
        ScriptedProvider::new("gpt-r").then(Step::fail(ErrorKind::Server)),
    );
    let gw = Gateway::builder()
        .provider(t.spec().max_attempts(2))
        .route(wildcard(&["tmpl"], &["*"]))
        .seed(1)
        .build()
        .unwrap();
    let resp = gw.chat("tmpl/gpt-r", &hi()).await.unwrap();
    assert_eq!(resp.provider, "tmpl/gpt-r");
    assert!(!resp.failed_over, "{:?}", resp.attempts);
    let names: Vec<&str> = resp.attempts.iter().map(|a| a.provider.as_str()).collect();
    assert_eq!(names, ["tmpl/gpt-r", "tmpl/gpt-r"]);
}

#[tokio::test(start_paused = true)]
async fn a_stream_reaches_the_template_too() {
    let t = Template::new();
    t.script(
        "gpt-s",
        ScriptedProvider::new("gpt-s").then(Step::stream_words(&["a", "b"])),
    );
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["gpt-s"]));
    let mut stream = gw.stream("tmpl/gpt-s", hi()).await.unwrap();
    assert_eq!(stream.provider, "tmpl/gpt-s");
    assert_eq!(stream.model, "gpt-s");
    let mut done = None;
    while let Some(ev) = futures_util::StreamExt::next(&mut stream).await {
        if let StreamEvent::Done(resp) = ev {
            done = Some(resp);
        }
    }
    assert_eq!(done.unwrap().text, "ab");
}

#[tokio::test(start_paused = true)]
async fn models_off_the_allow_list_are_refused_naming_the_patterns() {
    let t = Template::new();
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["gpt-4.1*", "o4-mini"]));
    let err = gw.chat("tmpl/gpt-4o", &hi()).await.unwrap_err();
    let GatewayError::ModelRefused {
        route,
        model,
        malformed,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (route.as_str(), model.as_str(), *malformed),
        ("tmpl/*", "gpt-4o", false)
    );
    assert!(err.to_string().contains("gpt-4.1*, o4-mini"), "{err}");
    assert!(gw.route("tmpl/gpt-4o").is_err());
    assert!(t.built().is_empty());
    assert!(matches!(
        gw.chat("other/gpt-4.1", &hi()).await,
        Err(GatewayError::UnknownRoute { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn hostile_model_names_are_malformed_and_never_built() {
    let t = Template::new();
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["*"]));
    for bad in [
        "tmpl/../../v1/files",
        "tmpl/a/b",
        "tmpl/a?key=x",
        "tmpl/a#x",
        "tmpl/a%2F..",
        "tmpl/",
        "tmpl/*",
        &format!("tmpl/{}", "a".repeat(129)),
    ] {
        let err = gw.chat(bad, &hi()).await.unwrap_err();
        assert!(
            matches!(
                err,
                GatewayError::ModelRefused {
                    malformed: true,
                    ..
                }
            ),
            "{bad:?}: {err:?}"
        );
    }
    assert!(t.built().is_empty());
}

#[tokio::test(start_paused = true)]
async fn distinct_models_past_max_models_are_refused() {
    let t = Template::new();
    let gw = gateway(&t, wildcard(&["tmpl", "backup"], &["*"]).max_models(2));
    gw.chat("tmpl/m1", &hi()).await.unwrap();
    gw.chat("tmpl/m2", &hi()).await.unwrap();
    let err = gw.chat("tmpl/m3", &hi()).await.unwrap_err();
    assert!(
        matches!(
            err,
            GatewayError::ModelRefused {
                malformed: false,
                ..
            }
        ),
        "{err:?}"
    );
    // the ones already resolved keep working
    gw.chat("tmpl/m1", &hi()).await.unwrap();
    assert_eq!(t.built(), ["m1", "m2"]);
}

#[tokio::test(start_paused = true)]
async fn prices_follow_the_resolved_model_and_unpriced_ones_are_skipped_under_a_budget() {
    let t = Template::new();
    let r = wildcard(&["tmpl", "backup"], &["*"]).budget(Money::from_usd(10.0));
    let gw = gateway(&t, r);
    // gpt-4o-mini is in the shipped table: priced, served by the template
    let resp = gw.chat("tmpl/gpt-4o-mini", &hi()).await.unwrap();
    assert_eq!(resp.provider, "tmpl/gpt-4o-mini");
    assert!(resp.cost.is_some());
    assert!(gw.price_of("tmpl/gpt-4o-mini").is_some());
    // a model the table does not know is unpriced: skipped under the budget
    let resp = gw.chat("tmpl/no-such-model", &hi()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert!(matches!(
        resp.attempts[0].outcome,
        Outcome::Skipped {
            reason: SkipReason::Unpriced,
            ..
        }
    ));
    assert!(gw.price_of("tmpl/no-such-model").is_none());
}

#[test]
fn a_template_must_be_able_to_build_other_models() {
    let plain = Arc::new(ScriptedProvider::new("m"));
    let err = Gateway::builder()
        .provider(ProviderSpec::new("tmpl", plain.clone()))
        .provider(ProviderSpec::new("tmpl/m", plain))
        .route(Route::wildcard("tmpl/*", &["tmpl"], &[]).unwrap())
        .build()
        .unwrap_err();
    let all = err.problems.join("\n");
    assert!(all.contains("cannot call other models"), "{all}");
    assert!(all.contains("needs an allow-list"), "{all}");
    assert!(all.contains("\"tmpl/m\" would share names"), "{all}");
}

#[tokio::test(start_paused = true)]
async fn an_embeddings_wildcard_route_embeds_with_the_clients_model() {
    let t = Template::new();
    let r = wildcard(&["tmpl", "backup"], &["text-embedding-*"]).api(switchyard::Api::Embeddings);
    let gw = gateway(&t, r);
    let req = switchyard::EmbeddingRequest::texts(&["a", "b"]);
    let resp = gw.embed("tmpl/text-embedding-3-small", &req).await.unwrap();
    assert_eq!(resp.provider, "tmpl/text-embedding-3-small");
    assert_eq!(resp.vectors.len(), 2);
    assert_eq!(t.built(), ["text-embedding-3-small"]);
    assert!(matches!(
        gw.embed("tmpl/gpt-4o", &req).await,
        Err(GatewayError::ModelRefused { .. })
    ));
}
