//! Chat Completions and Responses clients reaching a mock Anthropic (wiremock, checking
//! the body Anthropic would get): content-part and tool `cache_control` on the blocks they
//! mark, the breakpoint limit, and JSON output through structured outputs or a forced tool
//! read back into `content`, plain and streamed.

use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

/// A model without structured outputs (a forced tool carries JSON).
const OLD: &str = "claude-sonnet-4-20250514";
/// A model with them.
const NEW: &str = "claude-sonnet-4-5-20250929";

/// Route `smart`: an Anthropic provider of `model` (one attempt) then an OpenAI one, each
/// on a mock answering `anthropic` / a plain "ok".
async fn gateway(model: &str, anthropic: ResponseTemplate) -> (AppState, MockServer, MockServer) {
    let claude = MockServer::start().await;
    Mock::given(path("/v1/messages"))
        .respond_with(anthropic)
        .mount(&claude)
        .await;
    let gpt = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})))
        .mount(&gpt)
        .await;
    let transport = Transport::default();
    let anthropic = AnthropicConfig::new(model).base_url(claude.uri());
    let openai = OpenAiConfig::new("gpt-test").base_url(gpt.uri());
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new(
                "claude",
                Arc::new(Anthropic::new(anthropic, &transport).unwrap()),
            )
            .max_attempts(1),
        )
        .provider(ProviderSpec::new(
            "gpt",
            Arc::new(OpenAi::new(openai, &transport).unwrap()),
        ))
        .route(Route::new("smart", &["claude", "gpt"]))
        .route(Route::new("gpt", &["gpt"]))
        .route(Route::new("claude", &["claude"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.max_body_bytes = 1 << 20;
    (AppState(Arc::new(shared)), claude, gpt)
}

fn message(content: Value, stop: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": OLD,
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 30, "output_tokens": 12,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}))
}

fn ok() -> ResponseTemplate {
    message(json!([{"type": "text", "text": "Done."}]), "end_turn")
}

async fn sent(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap();
    serde_json::from_slice(&requests.last().expect("a request").body).unwrap()
}

fn cached_request() -> Value {
    json!({"model": "smart", "max_tokens": 100, "messages": [
        {"role": "system", "content": [
            {"type": "text", "text": "A long static prompt.",
             "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": "Today is Monday."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "<document>", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Summarise it."}]},
        {"role": "assistant", "content": "A summary.", "cache_control": {"type": "ephemeral"}},
        {"role": "user", "content": "Thanks."}],
      "tools": [{"type": "function", "function": {"name": "get_weather",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
                 "cache_control": {"type": "ephemeral"}}]})
}

#[tokio::test]
async fn content_part_and_tool_cache_control_reach_anthropic_on_their_blocks() {
    let (state, claude, _gpt) = gateway(OLD, ok()).await;
    let resp = call(&state, post(&cached_request())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "",
        "carried, not ignored"
    );
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        sent(&claude).await,
        json!({
            "model": OLD, "max_tokens": 100,
            "system": [
                {"type": "text", "text": "A long static prompt.",
                 "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                {"type": "text", "text": "Today is Monday."}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<document>", "cache_control": ephemeral},
                    {"type": "text", "text": "Summarise it."}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "A summary.", "cache_control": ephemeral}]},
                {"role": "user", "content": [{"type": "text", "text": "Thanks."}]}],
            "tools": [{"name": "get_weather",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
                       "cache_control": ephemeral}]
        })
    );
}

#[tokio::test]
async fn openai_caches_by_itself_so_cache_control_is_named_ignored_there() {
    let (state, _claude, gpt) = gateway(OLD, ok()).await;
    let mut body = cached_request();
    body["model"] = json!("gpt");
    let resp = call(&state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-ignored"), "cache_control");
    let v = json_body(resp).await;
    assert_eq!(v["switchyard"]["ignored"], json!(["cache_control"]));
    let sent = sent(&gpt).await;
    assert!(!sent.to_string().contains("cache_control"), "{sent}");
}

#[tokio::test]
async fn a_fifth_breakpoint_or_a_bad_one_is_a_400_naming_it() {
    let (state, claude, _gpt) = gateway(OLD, ok()).await;
    let part = json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}});
    let body = json!({"model": "smart", "messages": [
        {"role": "user", "content": [part, part, part]},
        {"role": "assistant", "content": [part, part]}]});
    let (status, err) = error_of(call(&state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        err["error"]["param"], "messages[1].content[1].cache_control",
        "{err}"
    );
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 4"));
    let body = json!({"model": "smart", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "2h"}}]}]});
    let (status, err) = error_of(call(&state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        err["error"]["param"],
        "messages[0].content[0].cache_control.ttl"
    );
    let body = json!({"model": "smart", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "x", "cache_control": {"type": "persistent"}}]}]});
    let (_, err) = error_of(call(&state, post(&body)).await).await;
    assert_eq!(
        err["error"]["param"],
        "messages[0].content[0].cache_control.type"
    );
    assert!(claude.received_requests().await.unwrap().is_empty());
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}},
           "required": ["city"], "additionalProperties": false})
}

fn json_request(stream: bool) -> Value {
    json!({"model": "smart", "max_tokens": 200, "stream": stream,
        "messages": [{"role": "user", "content": "I flew to Paris."}],
        "response_format": {"type": "json_schema",
            "json_schema": {"name": "place", "schema": schema(), "strict": true}}})
}

fn forced_tool_answer() -> ResponseTemplate {
    message(
        json!([{"type": "tool_use", "id": "toolu_1", "name": "place",
                "input": {"city": "Paris"}}]),
        "tool_use",
    )
}

#[tokio::test]
async fn json_schema_without_structured_outputs_is_a_forced_tool_read_back_as_content() {
    let (state, claude, _gpt) = gateway(OLD, forced_tool_answer()).await;
    let resp = call(&state, post(&json_request(false))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    let choice = &v["choices"][0];
    assert_eq!(choice["message"]["content"], r#"{"city":"Paris"}"#, "{v}");
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"].get("tool_calls").is_none(), "{v}");
    assert_eq!(
        sent(&claude).await,
        json!({
            "model": OLD, "max_tokens": 200,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "I flew to Paris."}]}],
            "tools": [{"name": "place",
                       "description": "The answer, as a JSON value in the requested format.",
                       "input_schema": schema()}],
            "tool_choice": {"type": "tool", "name": "place", "disable_parallel_tool_use": true}
        }),
        "no system instruction, no output_config"
    );
}

#[tokio::test]
async fn json_schema_with_structured_outputs_is_output_config() {
    let (state, claude, _gpt) = gateway(
        NEW,
        message(
            json!([{"type": "text", "text": "{\"city\":\"Paris\"}"}]),
            "end_turn",
        ),
    )
    .await;
    let resp = call(&state, post(&json_request(false))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    assert_eq!(v["choices"][0]["message"]["content"], r#"{"city":"Paris"}"#);
    assert_eq!(
        sent(&claude).await,
        json!({
            "model": NEW, "max_tokens": 200,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "I flew to Paris."}]}],
            "output_config": {"format": {"type": "json_schema", "schema": schema()}}
        })
    );
}

fn forced_tool_stream() -> ResponseTemplate {
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1",
            "type": "message", "role": "assistant", "model": OLD, "content": [],
            "stop_reason": null, "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "place", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 12}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

#[tokio::test]
async fn streamed_the_forced_tools_input_arrives_as_content_deltas() {
    let (state, claude, _gpt) = gateway(OLD, forced_tool_stream()).await;
    let resp = call(&state, post(&json_request(true))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let text = text_body(resp).await;
    let chunks: Vec<Value> = events(&text)
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, r#"{"city": "Paris"}"#, "{text}");
    assert!(!text.contains("tool_calls"), "{text}");
    let finish: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["stop"]);
    assert_eq!(sent(&claude).await["tool_choice"]["name"], "place");
}

/// A forced tool leaves no room for the client's own tools: such a Claude cannot honour
/// the format for this request, so it is skipped (the trail says so) and the next
/// provider answers; a route with no other is a 400 naming the field and the provider.
#[tokio::test]
async fn json_with_the_clients_tools_skips_a_forced_tool_model() {
    let (state, claude, gpt) = gateway(OLD, ok()).await;
    let mut body = json!({"model": "smart", "messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_object"},
        "tools": [{"type": "function", "function": {"name": "f"}}]});
    let resp = call(&state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "gpt");
    let v = json_body(resp).await;
    let first = &v["switchyard"]["attempts"][0];
    assert_eq!(
        (&first["outcome"], &first["reason"], &first["fields"]),
        (
            &json!("skipped"),
            &json!("cannot_honour"),
            &json!(["tools", "response_format"])
        ),
        "{v}"
    );
    let sent = sent(&gpt).await;
    assert_eq!(sent["response_format"], json!({"type": "json_object"}));
    assert_eq!(sent["tools"][0]["function"]["name"], "f");

    body["model"] = json!("claude");
    let (status, err) = error_of(call(&state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "tools", "{err}");
    assert_eq!(err["error"]["code"], "unsupported_field");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("claude skipped: cannot honour tools, response_format"),
        "{message}"
    );
    assert!(claude.received_requests().await.unwrap().is_empty());
}

/// Thinking whose smallest budget does not fit `max_tokens` is dropped, not refused:
/// Anthropic answers without it (it would refuse `budget_tokens` at or above
/// `max_tokens`, and under 1024), and the answer says so. On a strict route the provider
/// is skipped instead.
#[tokio::test]
async fn thinking_that_does_not_fit_max_tokens_is_dropped_for_anthropic() {
    let (state, claude, gpt) = gateway(OLD, ok()).await;
    let body = json!({"model": "smart", "max_tokens": 64, "reasoning_effort": "low",
        "messages": [{"role": "user", "content": "x"}]});
    let resp = call(&state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    assert_eq!(header(&resp, "x-switchyard-dropped"), "reasoning_effort");
    let sent = sent(&claude).await;
    assert!(sent.get("thinking").is_none(), "{sent}");
    assert_eq!(sent["max_tokens"], 64);
    assert!(gpt.received_requests().await.unwrap().is_empty());

    // the same request, streamed: the header is there before the first event
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let resp = call(&state, post(&streamed)).await;
    assert_eq!(header(&resp, "x-switchyard-dropped"), "reasoning_effort");
}

#[tokio::test]
async fn responses_text_format_takes_the_same_path() {
    let (state, claude, _gpt) = gateway(OLD, forced_tool_answer()).await;
    let body = json!({"model": "smart", "input": "I flew to Paris.", "max_output_tokens": 200,
        "text": {"format": {"type": "json_schema", "name": "place", "schema": schema(),
                            "strict": true}}});
    let req = Request::post("/v1/responses")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    let output = v["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "one message, no function call: {v}");
    assert_eq!(output[0]["content"][0]["text"], r#"{"city":"Paris"}"#);
    assert_eq!(sent(&claude).await["tool_choice"]["name"], "place");
}

async fn error_of(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    (status, json_body(resp).await)
}
