//! Anthropic's message threads on the wire (`thread` on `POST /v1/messages`): `create`
//! then `continue` expanded into the whole conversation for any provider (a failover
//! mid-thread included, and an Anthropic provider getting it without `thread` or the
//! beta), plain and streamed; every error code in Anthropic's shape with
//! `error.details.error_code`; key scoping; the per-thread bound; what is not kept (a cut
//! stream, a refusal).

use switchyard::chat::FinishReason;
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::http::Transport;
use switchyard::{ChatChunk, ProviderReply, Role};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use switchyard::provider::scripted::StreamStep;
use switchyard::ChatRequest;

const BETA: &str = "message-threads-2026-08-12";

/// Route `smart` = [primary, backup] (primary tried once), keys as given, threads at most
/// `max_thread_bytes`.
fn threads(
    primary: ScriptedProvider,
    backup: ScriptedProvider,
    keys: &[KeyToml],
    max_thread_bytes: usize,
) -> Fixture {
    let (primary, backup) = (Arc::new(primary), Arc::new(backup));
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).max_attempts(1))
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(Route::new("smart", &["primary", "backup"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    shared.max_body_bytes = 1 << 20;
    shared.threads.max_bytes = max_thread_bytes;
    Fixture {
        state: AppState(Arc::new(shared)),
        primary,
        backup,
    }
}

fn plain() -> Fixture {
    threads(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    )
}

fn post_thread(body: &Value, token: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/messages?beta=true")
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", BETA);
    if let Some(t) = token {
        req = req.header("x-api-key", t);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

fn create(text: &str) -> Value {
    json!({"model": "smart", "max_tokens": 64, "system": "Be brief.",
           "thread": {"type": "create"},
           "messages": [{"role": "user", "content": text}]})
}

fn next(previous: &str, text: &str) -> Value {
    json!({"model": "smart", "max_tokens": 64,
           "thread": {"type": "continue", "previous_message_id": previous},
           "messages": [{"role": "user", "content": text}]})
}

async fn turn(f: &Fixture, body: &Value) -> Value {
    let resp = call(&f.state, post_thread(body, None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    json_body(resp).await
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// The texts of the messages a provider was sent, as `role: text`.
fn seen(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| format!("{:?}: {}", m.role, m.joined_text()))
        .collect()
}

/// The status, `error.type` and `error.details.error_code` of an error answer.
async fn refusal(resp: Response) -> (u16, String, String, Value) {
    let status = resp.status().as_u16();
    let body = json_body(resp).await;
    assert_eq!(body["type"], "error", "{body}");
    let e = &body["error"];
    (
        status,
        e["type"].as_str().unwrap_or_default().to_owned(),
        e["details"]["error_code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body.clone(),
    )
}

#[tokio::test]
async fn a_continue_is_the_whole_conversation_to_the_provider() {
    let f = plain();
    let first = turn(&f, &create("my name is Ada")).await;
    let id = id_of(&first);
    assert!(
        id.starts_with("msg_") && id.len() == 52,
        "an id of the gateway's: {id}"
    );
    assert_eq!(first["content"][0]["text"], "ok from p");
    let second = turn(&f, &next(&id, "what is my name?")).await;
    let sent = &f.primary.requests()[1];
    assert_eq!(
        seen(sent),
        [
            "System: Be brief.",
            "User: my name is Ada",
            "Assistant: ok from p",
            "User: what is my name?"
        ]
    );
    assert!(sent.max_tokens == Some(64));
    // the thread goes on from each new answer
    let id2 = id_of(&second);
    assert_ne!(id2, id);
    assert_eq!(id2[..36], id[..36], "the same thread");
    turn(&f, &next(&id2, "and again?")).await;
    assert_eq!(f.primary.requests()[2].messages.len(), 6);
}

#[tokio::test]
async fn a_thread_fails_over_mid_thread_with_its_whole_history() {
    let f = threads(
        ScriptedProvider::new("p")
            .then(Step::text("Noted, Ada."))
            .otherwise(Step::fail(ErrorKind::Overloaded)),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    );
    let first = turn(&f, &create("my name is Ada")).await;
    let resp = call(
        &f.state,
        post_thread(&next(&id_of(&first), "my name?"), None),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    assert_eq!(
        seen(&f.backup.requests()[0]),
        [
            "System: Be brief.",
            "User: my name is Ada",
            "Assistant: Noted, Ada.",
            "User: my name?"
        ]
    );
}

#[tokio::test]
async fn a_tool_loop_continues_with_its_tool_result_alone() {
    let call_weather = ProviderReply {
        tool_calls: vec![switchyard::chat::ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        ..ProviderReply::default()
    };
    let f = threads(
        ScriptedProvider::new("p")
            .then(Step::Reply(call_weather))
            .then(Step::text("Sunny.")),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    );
    let mut body = create("weather in Paris?");
    body["tools"] = json!([{"name": "get_weather", "description": "weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let first = turn(&f, &body).await;
    assert_eq!(first["stop_reason"], "tool_use");
    let result = json!({"model": "smart", "max_tokens": 64,
        "thread": {"type": "continue", "previous_message_id": id_of(&first)},
        "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]}]});
    let done = turn(&f, &result).await;
    assert_eq!(done["content"][0]["text"], "Sunny.");
    let sent = &f.primary.requests()[1];
    assert_eq!(sent.tools.len(), 1, "the thread's tools");
    assert_eq!(sent.tools[0].name, "get_weather");
    let tool = sent.messages.last().unwrap();
    assert_eq!(tool.role, Role::Tool);
    assert_eq!(
        tool.name.as_deref(),
        Some("get_weather"),
        "named from the thread's call"
    );
    assert_eq!(sent.messages[2].tool_calls[0].id, "call_1");
}

#[tokio::test]
async fn a_paused_turn_resumes_from_an_empty_continue() {
    let f = plain();
    let first = turn(&f, &create("write a long story")).await;
    let mut resume = next(&id_of(&first), "");
    resume["messages"] = json!([]);
    turn(&f, &resume).await;
    assert_eq!(
        seen(&f.primary.requests()[1]),
        [
            "System: Be brief.",
            "User: write a long story",
            "Assistant: ok from p"
        ]
    );
    // without `thread`, an empty conversation is still refused
    let empty = json!({"model": "smart", "max_tokens": 64, "messages": []});
    let resp = call(&f.state, post_thread(&empty, None)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn each_answer_is_continued_once() {
    let f = plain();
    let id = id_of(&turn(&f, &create("hi")).await);
    turn(&f, &next(&id, "one")).await;
    let resp = call(&f.state, post_thread(&next(&id, "two"), None)).await;
    let (status, kind, code, body) = refusal(resp).await;
    assert_eq!(
        (status, kind.as_str(), code.as_str()),
        (400, "invalid_request_error", "thread_already_continued"),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("thread.previous_message_id: "),
        "{message}"
    );
    assert_eq!(f.primary.calls(), 2, "refused before any provider");
}

#[tokio::test]
async fn unknown_expired_and_foreign_ids_are_thread_not_found() {
    let f = plain();
    for id in [
        "msg_0123456789abcdef0123456789abcdef0123456789abcdef",
        "msg_req_42",
        &"x".repeat(100_000),
    ] {
        let resp = call(&f.state, post_thread(&next(id, "hi"), None)).await;
        let (status, kind, code, body) = refusal(resp).await;
        assert_eq!(
            (status, kind.as_str(), code.as_str()),
            (404, "not_found_error", "thread_not_found"),
            "{body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.len() < 1000, "the id is not echoed whole");
    }
    assert_eq!(f.primary.calls(), 0);
}

#[tokio::test]
async fn a_thread_is_only_its_keys() {
    let f = threads(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[key("alice", "sy-alice"), key("bob", "sy-bob")],
        1 << 20,
    );
    let resp = call(&f.state, post_thread(&create("secret"), Some("sy-alice"))).await;
    let id = id_of(&json_body(resp).await);
    let resp = call(&f.state, post_thread(&next(&id, "tell me"), Some("sy-bob"))).await;
    let (status, _, code, _) = refusal(resp).await;
    assert_eq!((status, code.as_str()), (404, "thread_not_found"));
    let resp = call(&f.state, post_thread(&next(&id, "go on"), Some("sy-alice"))).await;
    assert_eq!(
        resp.status(),
        StatusCode::OK,
        "bob's try took nothing from it"
    );
    assert_eq!(f.primary.calls(), 2);
}

#[tokio::test]
async fn a_continue_may_not_repeat_system_or_tools() {
    let f = plain();
    let id = id_of(&turn(&f, &create("hi")).await);
    for (field, value) in [
        ("system", json!("Be long.")),
        (
            "tools",
            json!([{"name": "f", "input_schema": {"type": "object"}}]),
        ),
    ] {
        let mut body = next(&id, "more");
        body[field] = value;
        let resp = call(&f.state, post_thread(&body, None)).await;
        let (status, kind, code, body) = refusal(resp).await;
        assert_eq!(
            (status, kind.as_str(), code.as_str()),
            (400, "invalid_request_error", "")
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}: ")), "{message}");
    }
    // the refusals left the thread as it was
    turn(&f, &next(&id, "more")).await;
}

#[tokio::test]
async fn malformed_threads_are_400_naming_the_field() {
    let f = plain();
    for (thread, param) in [
        (json!({"type": "resume"}), "thread.type"),
        (json!({"type": "continue"}), "thread.previous_message_id"),
        (json!({"type": "create", "id": "x"}), "thread.id"),
        (json!("create"), "thread"),
    ] {
        let mut body = create("hi");
        body["thread"] = thread;
        let resp = call(&f.state, post_thread(&body, None)).await;
        let (status, _, _, body) = refusal(resp).await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{param}: ")), "{message}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_second_continue_while_the_first_runs_is_in_flight() {
    let f = threads(
        ScriptedProvider::new("p")
            .then(Step::text("first"))
            .then(Step::text("slow").after(Duration::from_secs(5))),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    );
    let id = id_of(&turn(&f, &create("hi")).await);
    let slow = call(&f.state, post_thread(&next(&id, "a"), None));
    let racing = async {
        // the first continue is waiting on its provider by now
        tokio::time::sleep(Duration::from_secs(1)).await;
        call(&f.state, post_thread(&next(&id, "b"), None)).await
    };
    let (slow, racing) = tokio::join!(slow, racing);
    assert_eq!(slow.status(), StatusCode::OK);
    let (status, kind, code, _) = refusal(racing).await;
    assert_eq!(
        (status, kind.as_str(), code.as_str()),
        (400, "invalid_request_error", "thread_continue_in_flight")
    );
    // once the first is done, its answer is the one to continue from
    let resp = call(&f.state, post_thread(&next(&id, "c"), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_already_continued");
}

#[tokio::test]
async fn a_failed_continue_gives_its_answer_back_to_be_continued_again() {
    let f = threads(
        ScriptedProvider::new("p")
            .then(Step::text("first"))
            .then(Step::fail(ErrorKind::Server))
            .then(Step::text("second")),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        1 << 20,
    );
    let id = id_of(&turn(&f, &create("hi")).await);
    let failed = call(&f.state, post_thread(&next(&id, "go"), None)).await;
    assert_eq!(failed.status().as_u16(), 529, "every provider failed");
    let again = turn(&f, &next(&id, "go")).await;
    assert_eq!(again["content"][0]["text"], "second");
}

#[tokio::test]
async fn a_thread_cannot_grow_past_its_bound() {
    let f = threads(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[],
        1000,
    );
    let id = id_of(&turn(&f, &create("hi")).await);
    let resp = call(&f.state, post_thread(&next(&id, &"x".repeat(2000)), None)).await;
    let (status, kind, code, body) = refusal(resp).await;
    assert_eq!(
        (status, kind.as_str(), code.as_str()),
        (400, "invalid_request_error", "thread_unsupported_request")
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_thread_bytes (1000)"), "{message}");
    let resp = call(&f.state, post_thread(&create(&"y".repeat(2000)), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_unsupported_request");
    assert_eq!(f.primary.calls(), 1, "refused before any provider");
    // the refused turn took nothing: the thread goes on within its bound
    turn(&f, &next(&id, "short")).await;
}

#[tokio::test]
async fn a_thread_growing_past_its_bound_with_an_answer_is_not_kept() {
    let long = "z".repeat(900);
    let f = threads(
        ScriptedProvider::new("p").otherwise(Step::text(&long)),
        ScriptedProvider::new("b"),
        &[],
        1000,
    );
    let id = id_of(&turn(&f, &create("hi")).await);
    let resp = call(&f.state, post_thread(&next(&id, "more"), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_not_found");
}

#[tokio::test]
async fn streamed_turns_create_and_continue_a_thread() {
    let f = threads(
        ScriptedProvider::new("p")
            .then(Step::stream_words(&["Hi ", "Ada."]))
            .then(Step::stream_words(&["You ", "are ", "Ada."])),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    );
    let mut body = create("my name is Ada");
    body["stream"] = json!(true);
    let text = text_body(call(&f.state, post_thread(&body, None)).await).await;
    let events = events_of(&text);
    let id = events[0]["message"]["id"].as_str().unwrap().to_owned();
    assert_eq!(events.last().unwrap()["type"], "message_stop");
    let mut body = next(&id, "my name?");
    body["stream"] = json!(true);
    let text = text_body(call(&f.state, post_thread(&body, None)).await).await;
    let events = events_of(&text);
    assert_eq!(events.last().unwrap()["type"], "message_stop", "{text}");
    assert_eq!(
        seen(&f.primary.requests()[1]),
        [
            "System: Be brief.",
            "User: my name is Ada",
            "Assistant: Hi Ada.",
            "User: my name?"
        ]
    );
    let id2 = events[0]["message"]["id"].as_str().unwrap();
    turn(&f, &next(id2, "thanks")).await;
    assert_eq!(f.primary.requests()[2].messages.len(), 6);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_keeps_nothing() {
    let cut = Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Hel".into(),
            ..ChatChunk::default()
        }),
        StreamStep::End,
    ]);
    let f = threads(
        ScriptedProvider::new("p")
            .then(cut.clone())
            .then(Step::text("first"))
            .then(cut)
            .then(Step::text("whole")),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        1 << 20,
    );
    // a `create` cut: no thread
    let mut body = create("hi");
    body["stream"] = json!(true);
    let cut_create = events_of(&text_body(call(&f.state, post_thread(&body, None)).await).await);
    assert_eq!(cut_create.last().unwrap()["type"], "error");
    let created = cut_create[0]["message"]["id"].as_str().unwrap().to_owned();
    let resp = call(&f.state, post_thread(&next(&created, "more"), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_not_found");
    // a `continue` cut: the thread stays where it was, its answer free to continue
    let id = id_of(&turn(&f, &create("hi")).await);
    let mut body = next(&id, "go");
    body["stream"] = json!(true);
    let cut_next = events_of(&text_body(call(&f.state, post_thread(&body, None)).await).await);
    assert_eq!(cut_next.last().unwrap()["type"], "error");
    let cut_id = cut_next[0]["message"]["id"].as_str().unwrap().to_owned();
    let resp = call(&f.state, post_thread(&next(&cut_id, "more"), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_not_found");
    let again = turn(&f, &next(&id, "go")).await;
    assert_eq!(again["content"][0]["text"], "whole");
}

#[tokio::test]
async fn a_refused_turn_is_not_kept() {
    let refused = ProviderReply {
        refusal: "I can't help with that.".into(),
        finish_reason: Some(FinishReason::ContentFilter),
        ..ProviderReply::default()
    };
    let f = threads(
        ScriptedProvider::new("p").then(Step::Reply(refused)),
        ScriptedProvider::new("b"),
        &[],
        1 << 20,
    );
    let first = turn(&f, &create("something bad")).await;
    assert_eq!(first["stop_reason"], "refusal");
    let resp = call(&f.state, post_thread(&next(&id_of(&first), "please"), None)).await;
    assert_eq!(refusal(resp).await.2, "thread_not_found");
}

#[tokio::test]
async fn a_request_without_thread_keeps_its_request_id_answer() {
    let f = plain();
    let mut body = create("hi");
    body.as_object_mut().unwrap().remove("thread");
    let resp = call(&f.state, post_thread(&body, None)).await;
    let request_id = header(&resp, "x-request-id")
        .trim_start_matches("req_")
        .to_owned();
    assert_eq!(id_of(&json_body(resp).await), format!("msg_{request_id}"));
}

/// `data` of every SSE event.
fn events_of(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Route `smart`: an Anthropic provider on a mock.
async fn claude_route(answer: ResponseTemplate) -> (AppState, MockServer) {
    let claude = MockServer::start().await;
    Mock::given(path("/v1/messages"))
        .respond_with(answer)
        .mount(&claude)
        .await;
    let transport = Transport::default();
    let config = AnthropicConfig::new("claude-sonnet-4-5-20250929").base_url(claude.uri());
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new(
            "claude",
            Arc::new(Anthropic::new(config, &transport).unwrap()),
        ))
        .route(Route::new("smart", &["claude"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.max_body_bytes = 1 << 20;
    (AppState(Arc::new(shared)), claude)
}

#[tokio::test]
async fn an_anthropic_provider_gets_the_whole_body_without_thread_or_the_beta() {
    let (state, claude) = claude_route(ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_vendor", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Hello Ada."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 3}})))
    .await;
    let with_betas = |body: &Value| {
        let mut req = post_thread(body, None);
        req.headers_mut().insert(
            "anthropic-beta",
            format!("{BETA},context-1m-2025-08-07").parse().unwrap(),
        );
        req
    };
    let mut first = create("my name is Ada");
    first["messages"][0]["content"] = json!([{"type": "text", "text": "my name is Ada",
        "cache_control": {"type": "ephemeral"}}]);
    let resp = call(&state, with_betas(&first)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let id = id_of(&json_body(resp).await);
    assert_ne!(
        id, "msg_vendor",
        "the id the thread continues from is the gateway's"
    );
    let resp = call(&state, with_betas(&next(&id, "my name?"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let calls = claude.received_requests().await.unwrap();
    assert_eq!(calls.len(), 2);
    for c in &calls {
        assert_eq!(c.headers["anthropic-beta"], "context-1m-2025-08-07");
        let body: Value = serde_json::from_slice(&c.body).unwrap();
        assert!(body.get("thread").is_none(), "{body}");
        assert_eq!(body["system"], "Be brief.");
    }
    let body: Value = serde_json::from_slice(&calls[1].body).unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "my name is Ada"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello Ada."}]},
            {"role": "user", "content": "my name?"}
        ]),
        "the whole conversation, earlier turns' cache breakpoints left out"
    );
    // the beta alone: no header at all
    let resp = call(&state, post_thread(&create("hi"), None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let calls = claude.received_requests().await.unwrap();
    assert!(calls[2].headers.get("anthropic-beta").is_none());
    assert!(header(&resp, "x-switchyard-ignored").is_empty());
}
