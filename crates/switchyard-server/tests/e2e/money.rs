//! Money through the proxy: requests without `max_tokens` reserve the model's output
//! limit, so a budget holds against an upstream that writes that much; a model of unknown
//! limit gets the route's `default_max_tokens` (sent upstream, shown in the `switchyard`
//! object); an upstream that writes past it is alerted and counted; absurd usage fails
//! over instead of being counted.

use serde_json::{json, Value};
use wiremock::ResponseTemplate;

use crate::support::{
    chat_body, eventually, key_env, metric, openai_provider, route, sse_data, stream_body, Scratch,
    Server, FAST_RETRY, UPSTREAM_MODEL,
};
use crate::upstream::{calls, completion, ok_completion, upstream};

/// $1,000 per million tokens in and out: a token costs a tenth of a cent.
const DEAR: &str = "price = { input_per_mtok = 1000.0, output_per_mtok = 1000.0 }";

/// A completion reporting 10 prompt and `output` completion tokens.
fn writes(output: u64) -> ResponseTemplate {
    let mut body = completion("…");
    body["usage"] = json!({"prompt_tokens": 10, "completion_tokens": output,
        "total_tokens": 10 + output});
    body["choices"][0]["finish_reason"] = json!("length");
    ResponseTemplate::new(200).set_body_json(body)
}

/// A chat request without `max_tokens`, as most clients send it.
fn uncapped(model: &str) -> Value {
    let mut body = chat_body(model, "hello");
    body.as_object_mut().unwrap().remove("max_tokens");
    body
}

/// A provider of a model the price table does not know, priced by config.
fn unknown_model(name: &str, uri: &str) -> String {
    openai_provider(name, uri, DEAR).replace("gpt-4o-mini", "house-model-7b")
}

/// The reported overspend: 12 requests without `max_tokens`, an upstream writing 16,384
/// tokens (gpt-4o-mini's output limit), a $50 budget. Each reserved 4,096 output tokens,
/// all 12 ran, and $196.73 was spent; now each reserves the model's limit.
#[tokio::test]
async fn concurrent_requests_without_max_tokens_stay_within_the_budget() {
    let up = upstream(writes(16_384)).await;
    let config = format!(
        "{}{}",
        openai_provider("gpt", &up.uri(), DEAR),
        route("main", &["gpt"], "budget_usd = 50.0")
    );
    let server = Server::start(Scratch::new("e2e", "overspend"), &config, &key_env());
    let body = uncapped("main");
    let replies = futures_util::future::join_all((0..12).map(|_| server.chat(&body))).await;
    let answered = replies.iter().filter(|r| r.status == 200).count();
    let refused = replies.iter().filter(|r| r.status == 402).count();
    assert_eq!(answered + refused, 12, "{replies:?}");
    assert!((1..=3).contains(&answered), "answered {answered}");
    let metrics = server.get("/metrics", &[]).await;
    let spent = metric(
        &metrics.text,
        "switchyard_cost_usd_total",
        &[("provider", "gpt")],
    );
    let spent = spent.unwrap_or_else(|| panic!("no cost sample:\n{}", metrics.text));
    assert!(spent <= 50.0, "spent ${spent} of $50");
    assert!((spent - answered as f64 * 16.394).abs() < 1e-6, "{spent}");
    assert_eq!(
        calls(&up).await.len(),
        answered,
        "refusals happen before dispatch"
    );
}

/// A model whose output limit is unknown gets the route's `default_max_tokens`: it goes
/// upstream as the request's cap and the client sees it, plain and streamed.
#[tokio::test]
async fn an_unknown_limit_gets_the_routes_default_sent_and_shown() {
    let up = upstream(writes(200)).await;
    let config = format!(
        "{}{}",
        unknown_model("house", &up.uri()),
        route(
            "main",
            &["house"],
            "budget_usd = 10.0\ndefault_max_tokens = 256"
        )
    );
    let server = Server::start(Scratch::new("e2e", "default-max"), &config, &key_env());

    let reply = server.chat(&uncapped("main")).await;
    reply.expect_status(200);
    assert_eq!(reply.json()["switchyard"]["max_tokens_applied"], 256);
    let sent: Value = serde_json::from_slice(&calls(&up).await[0].body).unwrap();
    assert_eq!(sent["max_completion_tokens"], 256, "{sent}");

    let mut streamed = stream_body("main", "hello");
    streamed.as_object_mut().unwrap().remove("max_tokens");
    let reply = server.chat(&streamed).await;
    reply.expect_status(200);
    let last = sse_data(&reply.text)
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .rfind(|e| e.get("switchyard").is_some_and(|s| !s.is_null()))
        .unwrap_or_else(|| panic!("no switchyard object in {}", reply.text));
    assert_eq!(last["switchyard"]["max_tokens_applied"], 256, "{last}");

    // a client's own max_tokens goes as it is, and nothing is reported as applied
    let reply = server.chat(&chat_body("main", "hello")).await;
    reply.expect_status(200);
    assert!(reply.json()["switchyard"]
        .get("max_tokens_applied")
        .is_none());
}

/// An upstream that writes past the `max_tokens` it was sent: billed in full, counted in
/// `switchyard_usage_overruns_total`, and alerted on stderr.
#[tokio::test]
async fn an_upstream_that_overruns_max_tokens_is_alerted_counted_and_billed() {
    let up = upstream(writes(16_384)).await;
    let config = format!(
        "{}{}",
        unknown_model("house", &up.uri()),
        route(
            "main",
            &["house"],
            "budget_usd = 50.0\ndefault_max_tokens = 1000"
        )
    );
    let server = Server::start(Scratch::new("e2e", "overrun"), &config, &key_env());
    let reply = server.chat(&uncapped("main")).await;
    reply.expect_status(200);
    let cost = reply.json()["switchyard"]["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - 16.394).abs() < 1e-9,
        "billed at the real cost: {cost}"
    );
    let metrics = server.get("/metrics", &[]).await;
    let overruns = metric(
        &metrics.text,
        "switchyard_usage_overruns_total",
        &[("provider", "house")],
    );
    assert_eq!(overruns, Some(1.0), "{}", metrics.text);
    // the model is the one the upstream says answered
    let alert = format!(
        "alert: provider \"house\" (model {UPSTREAM_MODEL:?}, route \"main\") reported 16384 output tokens, 1000 allowed;"
    );
    eventually("the overrun alert on stderr", || {
        server.output().contains(&alert)
    })
    .await;
}

/// An upstream reporting 2^64-1 prompt tokens is malformed: the call fails over, and the
/// absurd count reaches no total.
#[tokio::test]
async fn absurd_usage_fails_over_and_is_never_counted() {
    let mut absurd = completion("…");
    absurd["usage"] = json!({"prompt_tokens": u64::MAX, "completion_tokens": 5, "total_tokens": 4});
    let primary = upstream(ResponseTemplate::new(200).set_body_json(absurd)).await;
    let fallback = upstream(ok_completion("fine")).await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("main", &["primary", "fallback"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "absurd-usage"), &config, &key_env());
    let reply = server.chat(&chat_body("main", "hello")).await;
    reply.expect_status(200);
    let body = reply.json();
    assert_eq!(body["switchyard"]["provider"], "fallback");
    let first = &body["switchyard"]["attempts"][0];
    assert_eq!(
        (&first["provider"], &first["kind"]),
        (&json!("primary"), &json!("malformed"))
    );
    assert_eq!(body["usage"]["total_tokens"], 37);
    let metrics = server.get("/metrics", &[]).await;
    let input = |p: &str| {
        metric(
            &metrics.text,
            "switchyard_tokens_total",
            &[("provider", p), ("direction", "input")],
        )
    };
    assert_eq!(input("fallback"), Some(25.0));
    assert!(input("primary").unwrap_or(0.0) < 1.0, "{}", metrics.text);
}
