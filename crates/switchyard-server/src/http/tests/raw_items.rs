//! Issue 24 item 4: what the shared shape does not model still goes upstream in a native
//! body (Responses items such as `custom_tool_call_output`, keys and blocks under an
//! Anthropic beta), so a budget's reservation counts it: a large one is refused before
//! dispatch on a budgeted route or key, and the same request is sent where no budget
//! applies.

use super::*;

/// $0.01 at $1 per million input tokens: 10,000 tokens.
const CAP_USD: f64 = 0.01;
/// Well past the cap when counted, a few hundred tokens' worth when not.
const BIG: usize = 200_000;

/// A route "smart" over one provider taking native bodies of `kind` and budgeted at
/// `budget` (none: unbudgeted), a route "other" over a plain one, and a key capped at
/// [`CAP_USD`] ("sy-capped") beside one without a budget ("sy-open"); bodies up to 1 MiB.
fn native_route(kind: &'static str, budget: Option<f64>) -> Fixture {
    let keys = [
        KeyToml {
            budget_usd: Some(CAP_USD),
            ..key("capped", "sy-capped")
        },
        key("open", "sy-open"),
    ];
    let mut route = Route::new("smart", &["primary"]);
    if let Some(usd) = budget {
        route = route.budget(Money::from_usd(usd));
    }
    let mut f = fixture(
        ScriptedProvider::new("native").taking_native(kind),
        ScriptedProvider::new("plain"),
        &keys,
        route,
    );
    Arc::get_mut(&mut f.state.0).unwrap().max_body_bytes = 1 << 20;
    f
}

fn responses_request(output: &str) -> Value {
    json!({"model": "smart", "max_output_tokens": 100, "input": [
        {"type": "custom_tool_call", "call_id": "c1", "name": "grep", "input": "TODO"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": output},
        {"role": "user", "content": "summarise"}]})
}

fn post_keyed(path: &str, body: &Value, token: &str, beta: Option<&str>) -> Request<Body> {
    let mut req = Request::post(path)
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("authorization", format!("Bearer {token}"));
    if let Some(b) = beta {
        req = req.header("anthropic-beta", b);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

#[tokio::test]
async fn a_large_custom_tool_call_output_is_refused_on_a_budgeted_route_before_dispatch() {
    let kind = switchyard::provider::openai::responses::NATIVE_KIND;
    let f = native_route(kind, Some(CAP_USD));
    let body = responses_request(&"x".repeat(BIG));
    let resp = call(
        &f.state,
        post_keyed("/v1/responses", &body, "sy-open", None),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED);
    assert_eq!(json_body(resp).await["error"]["code"], "budget_exceeded");
    assert_eq!(f.primary.calls(), 0, "refused before dispatch");

    // a small one fits the budget and is sent
    let body = responses_request("found 3");
    let resp = call(
        &f.state,
        post_keyed("/v1/responses", &body, "sy-open", None),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(f.primary.calls(), 1);
}

#[tokio::test]
async fn a_large_custom_tool_call_output_is_refused_on_a_capped_key_and_sent_without_one() {
    let kind = switchyard::provider::openai::responses::NATIVE_KIND;
    let f = native_route(kind, None);
    let body = responses_request(&"x".repeat(BIG));
    let resp = call(
        &f.state,
        post_keyed("/v1/responses", &body, "sy-capped", None),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED);
    assert_eq!(f.primary.calls(), 0, "refused before dispatch");
    // no budget applies: sent as it is
    let resp = call(
        &f.state,
        post_keyed("/v1/responses", &body, "sy-open", None),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = f.primary.requests()[0].native.clone().unwrap();
    assert_eq!(
        sent.body.to_value()["input"][1]["output"]
            .as_str()
            .map(str::len),
        Some(BIG)
    );
}

/// Under a beta, a key the dialect does not model inside a known block, and a block of a
/// type it does not model, go to Anthropic as written: both are counted.
#[tokio::test]
async fn what_a_beta_sends_to_anthropic_natively_is_counted() {
    let beta = Some("future-feature-2026-01-01");
    let f = native_route("anthropic", Some(CAP_USD));
    let big = "x".repeat(BIG);
    let in_a_key = json!({"model": "smart", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi", "future_context": big}]}]});
    let in_a_block = json!({"model": "smart", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "hologram", "frames": big}]}]});
    for body in [in_a_key, in_a_block] {
        let resp = call(&f.state, post_keyed("/v1/messages", &body, "sy-open", beta)).await;
        assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED);
        assert_eq!(json_body(resp).await["error"]["type"], "billing_error");
    }
    assert_eq!(f.primary.calls(), 0, "refused before dispatch");
    let small = json!({"model": "smart", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi", "future_context": "ctx"}]}]});
    let resp = call(
        &f.state,
        post_keyed("/v1/messages", &small, "sy-open", beta),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(f.primary.calls(), 1);
}
