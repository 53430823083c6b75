//! Fields billed above list price (`crate::http::dialects::surcharges`): refused by name on
//! a request that spends against a budget (the route's or its key's), in each dialect's
//! error shape and before any provider is called; passed as before without a budget.

use super::*;

fn budgeted(keys: &[KeyToml]) -> Fixture {
    fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        keys,
        Route::new("smart", &["primary", "backup"]).budget(Money::from_usd(5.0)),
    )
}

fn request(path: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn priority_processing_is_refused_on_a_budgeted_route_and_sent_elsewhere() {
    let f = budgeted(&[]);
    let mut body = chat("smart");
    body["service_tier"] = json!("priority");
    let resp = call(&f.state, request("/v1/chat/completions", &body)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let err = json_body(resp).await;
    assert_eq!(err["error"]["param"], "service_tier");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("service_tier: \"priority\" is billed above the model's list price"),
        "{message}"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
    // a tier at or below list price passes
    body["service_tier"] = json!("flex");
    let resp = call(&f.state, request("/v1/chat/completions", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    // a route without a budget sends it
    body["model"] = json!("other");
    body["service_tier"] = json!("priority");
    let resp = call(&f.state, request("/v1/chat/completions", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        f.backup.requests().last().unwrap().service_tier.as_deref(),
        Some("priority")
    );
}

#[tokio::test]
async fn fast_mode_and_an_inference_geography_are_refused_in_anthropics_shape() {
    let f = budgeted(&[]);
    let hello = json!({"model": "smart", "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]});
    for (field, value) in [("speed", json!("fast")), ("inference_geo", json!("us"))] {
        let mut body = hello.clone();
        body[field] = value;
        let resp = call(&f.state, request("/v1/messages", &body)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{field}");
        let err = json_body(resp).await;
        assert_eq!(err["type"], "error");
        assert_eq!(err["error"]["type"], "invalid_request_error");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}: ")), "{message}");
        assert!(message.contains("budget"), "{message}");
    }
    let mut body = hello.clone();
    body["speed"] = json!("standard");
    body["inference_geo"] = json!("global");
    let resp = call(&f.state, request("/v1/messages", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(f.primary.calls(), 1, "only the list-price request was sent");
}

#[tokio::test]
async fn a_keys_budget_counts_as_a_budget() {
    let keys = [KeyToml {
        name: "capped".into(),
        sha256: hash_token("sy-capped"),
        routes: vec!["*".into()],
        budget_usd: Some(1.0),
        ..KeyToml::default()
    }];
    let f = budgeted(&keys);
    let mut body = chat("other");
    body["service_tier"] = json!("fast");
    let mut req = request("/v1/chat/completions", &body);
    req.headers_mut()
        .insert("authorization", "Bearer sy-capped".parse().unwrap());
    let resp = call(&f.state, req).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["param"], "service_tier");
    assert_eq!(f.backup.calls(), 0);
}

#[tokio::test]
async fn a_built_in_tool_with_a_fee_is_refused_by_its_place() {
    let f = budgeted(&[]);
    let body = json!({"model": "smart", "input": "news?",
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}},
                  {"type": "web_search"}]});
    let resp = call(&f.state, request("/v1/responses", &body)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let err = json_body(resp).await;
    assert_eq!(err["error"]["param"], "tools[1].type", "{err}");
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}
