//! The Messages dialect and what today's clients send with betas (issue 23): system turns
//! inside `messages` with their per-turn settings (`clear_at`, `output_config.effort`),
//! mid-conversation tool changes, and keys the dialect does not model — refused by their
//! path without an `anthropic-beta` header, and with one sent natively to Anthropic,
//! named for other vendors, or kept for Anthropic alone when they change the answer; and
//! blocks of types the dialect does not model, refused without a beta and with one kept
//! for Anthropic alone (mock Anthropic and OpenAI upstreams behind the real codecs).

use switchyard::chat::{Message, ReasoningEffort};
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use switchyard::Role;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

fn post_messages(body: &Value, betas: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/messages?beta=true")
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01");
    if let Some(betas) = betas {
        req = req.header("anthropic-beta", betas);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

const PER_TURN: &str = "claude-code-20250219,per-turn-control-2026-07-01,effort-2025-11-24";

/// Anthropic (down) then a plain vendor, with room for Claude Code-sized bodies.
fn down_then_plain() -> Fixture {
    let mut f = fixture(
        ScriptedProvider::new("claude")
            .taking_native("anthropic")
            .otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("gpt").otherwise(Step::text("Paris.")),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    Arc::get_mut(&mut f.state.0).unwrap().max_body_bytes = 1 << 20;
    f
}

/// An Anthropic provider that answers, then a plain one.
fn anthropic_then_plain() -> Fixture {
    let mut f = fixture(
        ScriptedProvider::new("claude").taking_native("anthropic"),
        ScriptedProvider::new("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    Arc::get_mut(&mut f.state.0).unwrap().max_body_bytes = 1 << 20;
    f
}

fn request(messages: Value) -> Value {
    json!({"model": "smart", "max_tokens": 256, "messages": messages})
}

fn ignored(resp: &Response) -> Vec<String> {
    header(resp, "x-switchyard-ignored")
        .split(", ")
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

fn system_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::joined_text)
        .collect()
}

async fn refusal(resp: Response) -> (StatusCode, String) {
    let status = resp.status();
    let body = json_body(resp).await;
    assert_eq!(body["type"], "error", "{body}");
    (
        status,
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

/// Claude Code 2.1.332's session start, as captured: the per-turn beta, and a system turn
/// after the first user turn carrying `output_config.effort` and a cached text block. It is
/// accepted (not `messages.1.output_config: Extra inputs are not permitted`), goes to
/// Anthropic as written, and fails over with the turn's text in place and its effort as
/// the answer's reasoning effort.
#[tokio::test]
async fn claude_codes_session_start_with_a_per_turn_system_turn_fails_over() {
    let f = down_then_plain();
    let mut body = request(json!([
        {"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]},
        {"role": "system", "output_config": {"effort": "low"},
         "content": [{"type": "text", "text": "<system-reminder>env</system-reminder>",
                      "cache_control": {"type": "ephemeral"}}]}
    ]));
    body["thinking"] = json!({"type": "adaptive", "display": "omitted"});
    body["output_config"] = json!({"effort": "high"});
    body["stream"] = json!(true);
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    let names = ignored(&resp);
    assert!(names.contains(&"cache_control".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("effort")),
        "effort was carried: {names:?}"
    );
    assert!(text_body(resp).await.contains("message_stop"));
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert_eq!(
        native.body.to_value()["messages"][1]["output_config"],
        json!({"effort": "low"}),
        "Anthropic got the turn as written"
    );
    assert!(!native.required);
    let sent = &f.backup.requests()[0];
    assert_eq!(sent.messages[1].role, Role::System);
    assert_eq!(
        sent.messages[1].joined_text(),
        "<system-reminder>env</system-reminder>"
    );
    assert_eq!(
        sent.reasoning_effort,
        Some(ReasoningEffort::Low),
        "the turn's effort wins over output_config.effort and thinking"
    );
}

/// The effort in force is the last system turn's after the last assistant turn; an earlier
/// one governed an earlier answer. `xhigh` and `max` are `high`; a word the shared shape
/// has none for, or an effort with thinking disabled, is named and the effort left to
/// `thinking`.
#[tokio::test]
async fn the_per_turn_effort_in_force_is_the_answers_reasoning_effort() {
    let effort_of = |messages: Value, thinking: Option<Value>| async move {
        let f = down_then_plain();
        let mut body = request(messages);
        if let Some(t) = thinking {
            body["thinking"] = t;
        }
        let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
        assert_eq!(resp.status(), StatusCode::OK);
        (f.backup.requests()[0].reasoning_effort, ignored(&resp))
    };
    let turn = |effort: &str| json!({"role": "system", "output_config": {"effort": effort}});
    let user = json!({"role": "user", "content": "hi"});
    let assistant = json!({"role": "assistant", "content": "hello"});

    let (effort, _) = effort_of(
        json!([turn("low"), user, assistant, user, turn("max")]),
        None,
    )
    .await;
    assert_eq!(effort, Some(ReasoningEffort::High));
    let (effort, names) = effort_of(json!([user, turn("low"), assistant, user]), None).await;
    assert_eq!(effort, None, "the low effort was for the earlier answer");
    assert!(!names.iter().any(|n| n.contains("effort")), "{names:?}");
    let adaptive = Some(json!({"type": "adaptive"}));
    let (effort, names) = effort_of(json!([user, turn("turbo")]), adaptive).await;
    assert_eq!(effort, Some(ReasoningEffort::Medium), "thinking's");
    assert!(names.contains(&"messages.output_config.effort".to_owned()));
    let disabled = Some(json!({"type": "disabled"}));
    let (effort, names) = effort_of(json!([user, turn("high")]), disabled).await;
    assert_eq!(effort, None);
    assert!(names.contains(&"messages.output_config.effort".to_owned()));
}

/// A system turn may carry `output_config` alone (it adds no message) but not nothing;
/// `clear_at: "next_user_message"` leaves its text out once a later user turn exists, as
/// Anthropic does; a `clear_at` word of a later beta keeps the text and is named.
#[tokio::test]
async fn system_turns_clear_their_text_as_anthropic_does() {
    let f = down_then_plain();
    let body = request(json!([
        {"role": "system", "content": "first reminder", "clear_at": "next_user_message"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "kept", "clear_at": "never"},
        {"role": "system", "output_config": {}},
        {"role": "system", "content": [{"type": "text", "text": "later"}], "clear_at": "soon"},
        {"role": "system", "content": "last reminder", "clear_at": "next_user_message"}
    ]));
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(ignored(&resp).contains(&"messages.clear_at".to_owned()));
    let sent = &f.backup.requests()[0];
    assert_eq!(
        system_texts(&sent.messages),
        ["kept", "later", "last reminder"]
    );

    let empty = request(json!([{"role": "user", "content": "hi"}, {"role": "system"}]));
    let (status, message) =
        refusal(call(&f.state, post_messages(&empty, Some(PER_TURN))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message,
        "messages.1: a system message needs content or output_config"
    );
    let no_content = request(json!([{"role": "user"}]));
    let (_, message) = refusal(call(&f.state, post_messages(&no_content, None)).await).await;
    assert_eq!(message, "messages.0.content: Field required");
}

/// Tool additions and removals become the tool set in force at the end (what the model
/// may call in its answer); Anthropic gets the blocks as written.
#[tokio::test]
async fn mid_conversation_tool_changes_are_the_tool_set_in_force() {
    let f = down_then_plain();
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let mut body = request(json!([
        {"role": "user", "content": "look around"},
        {"role": "system", "content": [
            {"type": "text", "text": "Tools changed."},
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Write"}},
            {"type": "tool_addition", "tool": {"type": "tool_definition",
             "definition": {"name": "Grep", "description": "search", "input_schema": schema}}}
        ]}
    ]));
    body["tools"] = json!([
        {"name": "Read", "input_schema": schema},
        {"name": "Write", "input_schema": schema}
    ]);
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = &f.backup.requests()[0];
    let tools: Vec<&str> = sent.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["Read", "Grep"]);
    assert_eq!(system_texts(&sent.messages), ["Tools changed."]);
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert_eq!(
        native.body.to_value()["messages"][1]["content"][1]["type"],
        "tool_removal"
    );

    let mcp = request(
        json!([{"role": "system", "content": [{"type": "tool_addition",
        "tool": {"type": "mcp_toolset_reference", "server_name": "github"}}]}]),
    );
    let (status, message) =
        refusal(call(&f.state, post_messages(&mcp, Some(PER_TURN))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message,
        "messages.0.content.0.tool.type: MCP tools are not supported by this gateway"
    );
}

/// A body with keys the dialect does not model in a turn, a block, a tool result's block,
/// a system block and both `output_config`s, and an unknown top-level hint.
fn unmodelled() -> Value {
    let mut body = request(json!([
        {"role": "user", "frob": 1, "content": [
            {"type": "text", "text": "hi", "sparkle": true},
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "ok", "glow": 1}]}]},
        {"role": "system", "content": "now", "output_config": {"effort": "low", "timing": {"now": "12:00"}}}
    ]));
    body["system"] = json!([{"type": "text", "text": "be brief", "colour": "red"}]);
    body["output_config"] = json!({"task_budget": {"total": 1000}});
    body["fallbacks"] = json!("default");
    body
}

/// Without a beta, each unknown key is Anthropic's 400 by its path, whatever the route.
#[tokio::test]
async fn without_a_beta_unmodelled_keys_are_refused_by_their_path() {
    let f = down_then_plain();
    let mut body = unmodelled();
    let mut paths = Vec::new();
    for _ in 0..8 {
        let resp = call(&f.state, post_messages(&body, None)).await;
        if resp.status() == StatusCode::OK {
            break;
        }
        let (status, message) = refusal(resp).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let path = message
            .strip_suffix(": Extra inputs are not permitted")
            .unwrap_or_else(|| panic!("{message}"))
            .to_owned();
        remove_path(&mut body, &path);
        paths.push(path);
    }
    assert_eq!(
        paths,
        [
            "output_config.task_budget",
            "system.0.colour",
            "messages.0.frob",
            "messages.0.content.0.sparkle",
            "messages.0.content.1.content.0.glow",
            "messages.1.output_config.timing",
            "fallbacks",
        ]
    );
    assert_eq!(f.primary.calls(), 1, "once every key was gone");
    // per-turn settings belong to system turns
    let misplaced = request(json!([{"role": "user", "content": "hi", "clear_at": "never"}]));
    let (_, message) = refusal(call(&f.state, post_messages(&misplaced, None)).await).await;
    assert_eq!(
        message,
        "messages.0.clear_at: Extra inputs are not permitted"
    );
}

fn remove_path(body: &mut Value, path: &str) {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    let mut at = body;
    for step in parent.split('.').filter(|s| !s.is_empty()) {
        at = match step.parse::<usize>() {
            Ok(i) => &mut at[i],
            Err(_) => &mut at[step],
        };
    }
    at.as_object_mut().unwrap().remove(key);
}

/// With a beta, the same body is accepted: Anthropic gets it as written (and names
/// nothing), another vendor gets the request without the keys and names each one.
#[tokio::test]
async fn with_a_beta_unmodelled_keys_go_to_anthropic_and_are_named_for_others() {
    let f = anthropic_then_plain();
    let resp = call(&f.state, post_messages(&unmodelled(), Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert_eq!(native.body.to_value()["messages"][0]["frob"], 1);
    assert_eq!(native.body.to_value()["fallbacks"], "default");
    assert_eq!(
        native.headers,
        [("anthropic-beta".to_owned(), PER_TURN.to_owned())]
    );
    assert!(!native.required, "hints let every vendor answer");

    let f = down_then_plain();
    let resp = call(&f.state, post_messages(&unmodelled(), Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    let names = ignored(&resp);
    for name in [
        "fallbacks",
        "output_config.task_budget",
        "system.colour",
        "messages.frob",
        "text.sparkle",
        "text.glow",
        "messages.output_config.timing",
        "anthropic-beta",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    let sent = &f.backup.requests()[0];
    assert_eq!(sent.reasoning_effort, Some(ReasoningEffort::Low));
    assert_eq!(system_texts(&sent.messages), ["be brief", "now"]);
}

/// A top-level field known to change what the answer is (`compaction`) goes to Anthropic
/// alone: the other vendor is skipped (`needs_native`), and a route without an Anthropic
/// provider is a 400 saying so. So is a tool change of a kind a later beta adds.
#[tokio::test]
async fn with_a_beta_a_contract_field_is_served_by_anthropic_alone() {
    let mut body = request(json!([{"role": "user", "content": "summarise us"}]));
    body["compaction"] = json!({"instructions": "keep the decisions"});
    let f = anthropic_then_plain();
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(f.primary.requests()[0].native.as_ref().unwrap().required);

    let f = down_then_plain();
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_ne!(resp.status(), StatusCode::OK);
    assert_eq!(f.backup.calls(), 0, "no stand-in for a compaction");
    let attempts = json_body(resp).await["error"]["attempts"].clone();
    let skipped = attempts
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provider"] == "backup");
    assert_eq!(
        skipped.unwrap()["outcome"],
        "skipped:needs_native(compaction)",
        "{attempts}"
    );

    let f = fixture(
        ScriptedProvider::new("gpt"),
        ScriptedProvider::new("gpt2"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let (status, message) =
        refusal(call(&f.state, post_messages(&body, Some(PER_TURN))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        message.starts_with("compaction: only an Anthropic provider can serve this"),
        "{message}"
    );

    let later = request(
        json!([{"role": "system", "content": [{"type": "tool_addition",
        "tool": {"type": "tool_pattern", "glob": "Read*"}}]}]),
    );
    let f = down_then_plain();
    let resp = call(&f.state, post_messages(&later, Some(PER_TURN))).await;
    assert_ne!(resp.status(), StatusCode::OK);
    assert_eq!(f.backup.calls(), 0);
}

/// Hostile keys: thousands of them, long ones, ones that would break a header. The 400
/// quotes a cut path; the names a vendor's answer echoes are few and plain.
#[tokio::test]
async fn unmodelled_keys_are_bounded_and_cut() {
    let mut block = serde_json::Map::new();
    block.insert("type".into(), json!("text"));
    block.insert("text".into(), json!("hi"));
    for i in 0..5000 {
        block.insert(format!("k{i:05}"), json!(i));
    }
    block.insert(format!("{}\r\nx-evil: 1", "z".repeat(10_000)), json!(1));
    let body = request(json!([{"role": "user", "content": [Value::Object(block)]}]));

    let f = down_then_plain();
    let (status, message) = refusal(call(&f.state, post_messages(&body, None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message,
        "messages.0.content.0.k00000: Extra inputs are not permitted"
    );
    let mut long = request(json!([{"role": "user", "content": "hi"}]));
    long["messages"][0]["q".repeat(10_000)] = json!(1);
    let (_, message) = refusal(call(&f.state, post_messages(&long, None)).await).await;
    assert!(message.len() < 200, "{message}");

    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let header = header(&resp, "x-switchyard-ignored").to_owned();
    assert!(header.len() < 200, "{header}");
    assert!(
        !header.contains("evil") && !header.contains('\n'),
        "{header}"
    );
    assert!(
        header.contains("text.k00000") && header.contains("text.*"),
        "{header}"
    );
}

/// `diagnostics` (SDK 2.15's plain `create` sends it, no beta needed) is accepted: sent to
/// Anthropic as written, named when another vendor answers.
#[tokio::test]
async fn diagnostics_is_accepted_without_a_beta_and_named_for_other_vendors() {
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["diagnostics"] = json!({"previous_message_id": null});
    let f = down_then_plain();
    let resp = call(&f.state, post_messages(&body, None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(ignored(&resp), ["diagnostics"]);
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert_eq!(
        native.body.to_value()["diagnostics"],
        json!({"previous_message_id": null})
    );
}

/// Routes over an Anthropic and an OpenAI provider, each on a mock upstream (the real
/// codecs): `anthropic_first` [claude, gpt], `openai_first` [gpt, claude], `openai`
/// [gpt]. Both answer.
async fn mocked_vendors() -> (AppState, MockServer, MockServer) {
    let claude = MockServer::start().await;
    Mock::given(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Seen."}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 30, "output_tokens": 2}})))
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
    let anthropic = AnthropicConfig::new("claude-sonnet-4-5-20250929").base_url(claude.uri());
    let openai = OpenAiConfig::new("gpt-test").base_url(gpt.uri());
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new(
            "claude",
            Arc::new(Anthropic::new(anthropic, &transport).unwrap()),
        ))
        .provider(ProviderSpec::new(
            "gpt",
            Arc::new(OpenAi::new(openai, &transport).unwrap()),
        ))
        .route(Route::new("anthropic_first", &["claude", "gpt"]))
        .route(Route::new("openai_first", &["gpt", "claude"]))
        .route(Route::new("openai", &["gpt"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    (AppState(Arc::new(shared)), claude, gpt)
}

/// A block of a type a later beta adds, as a client writes it.
fn hologram() -> Value {
    json!({"type": "hologram", "frames": [{"t": 0, "text": "hi"}], "cache_control": {"type": "ephemeral"}})
}

/// A conversation with blocks of types the dialect does not model: in a user turn, in
/// `system`, and in a tool result.
fn with_unknown_blocks(route: &str) -> Value {
    json!({"model": route, "max_tokens": 64,
    "system": [{"type": "text", "text": "be brief"}, {"type": "shimmer", "level": 3}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, hologram()]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": [{"type": "text", "text": "seen"}, {"type": "sparkle_map"}]}]}
    ]})
}

async fn received(server: &MockServer) -> Vec<wiremock::Request> {
    server.received_requests().await.unwrap()
}

const UNKNOWN_PATHS: [&str; 3] = [
    "system.1.type",
    "messages.0.content.1.type",
    "messages.2.content.0.content.1.type",
];

/// Under a beta, a block of a type the dialect does not model is accepted and reaches
/// Anthropic as the client wrote it, with the client's betas.
#[tokio::test]
async fn with_a_beta_an_unknown_block_type_reaches_anthropic_as_written() {
    let (state, claude, gpt) = mocked_vendors().await;
    let body = with_unknown_blocks("anthropic_first");
    let resp = call(&state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    assert_eq!(json_body(resp).await["content"][0]["text"], "Seen.");
    let got = received(&claude).await;
    assert_eq!(got.len(), 1);
    let sent: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(sent["messages"][0]["content"][1], hologram());
    assert_eq!(sent["system"][1], json!({"type": "shimmer", "level": 3}));
    assert_eq!(
        sent["messages"][2]["content"][0]["content"][1],
        json!({"type": "sparkle_map"})
    );
    assert_eq!(got[0].headers["anthropic-beta"], PER_TURN);
    assert!(received(&gpt).await.is_empty());
}

/// On a route that lists OpenAI first, OpenAI is skipped for such a request (it could only
/// be given the conversation without the blocks), the trail naming why, and Anthropic
/// answers.
#[tokio::test]
async fn with_a_beta_an_unknown_block_type_skips_other_vendors_naming_it() {
    let (state, claude, gpt) = mocked_vendors().await;
    let body = with_unknown_blocks("openai_first");
    let resp = call(&state, post_messages(&body, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    let v = json_body(resp).await;
    let first = &v["switchyard"]["attempts"][0];
    assert_eq!(first["provider"], "gpt", "{v}");
    assert_eq!(
        (&first["outcome"], &first["reason"], &first["fields"]),
        (
            &json!("skipped"),
            &json!("needs_native"),
            &json!(UNKNOWN_PATHS)
        ),
        "{v}"
    );
    assert!(received(&gpt).await.is_empty(), "OpenAI was never called");
    assert_eq!(received(&claude).await.len(), 1);

    // streamed the same
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let resp = call(&state, post_messages(&streamed, Some(PER_TURN))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    assert!(received(&gpt).await.is_empty());
}

/// A route with no Anthropic provider cannot serve it: a 400 naming the blocks' paths and
/// why, before any call.
#[tokio::test]
async fn with_a_beta_an_unknown_block_type_on_an_openai_only_route_is_a_400() {
    let (state, claude, gpt) = mocked_vendors().await;
    let mut body = request(json!([{"role": "user", "content": [hologram()]}]));
    body["model"] = json!("openai");
    let (status, message) = refusal(call(&state, post_messages(&body, Some(PER_TURN))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message,
        "messages.0.content.0.type: only an Anthropic provider can serve this (its type is one \
         this gateway does not model, and no other vendor can be given it without changing \
         what the model sees), and route \"openai\" has none"
    );
    assert!(received(&gpt).await.is_empty() && received(&claude).await.is_empty());
}

/// Without a beta, each such block is the 400 it was, naming its path: an unknown variant
/// in a turn or a tool result, a block `system` does not hold.
#[tokio::test]
async fn without_a_beta_an_unknown_block_type_is_refused_by_its_path() {
    let (state, claude, gpt) = mocked_vendors().await;
    let mut body = with_unknown_blocks("anthropic_first");
    let (status, message) = refusal(call(&state, post_messages(&body, None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message,
        "system.1.type: \"shimmer\": only text blocks are allowed here"
    );
    body["system"] = json!("be brief");
    let (_, message) = refusal(call(&state, post_messages(&body, None)).await).await;
    assert_eq!(
        message,
        "messages.0.content.1.type: unknown variant `hologram`, expected one of `text`, \
         `image`, `tool_use`, `tool_result`, `thinking`, `redacted_thinking`, \
         `mid_conv_system`, `tool_addition`, `tool_removal`"
    );
    body["messages"][0]["content"] = json!("what is this?");
    let (_, message) = refusal(call(&state, post_messages(&body, None)).await).await;
    assert!(
        message.starts_with(
            "messages.2.content.0.content.1.type: unknown variant `sparkle_map`, expected"
        ),
        "{message}"
    );
    // a block of a known type still gets the parser's word for what is wrong with it
    body["messages"][2]["content"][0]["content"] = json!([{"type": "text"}]);
    let (_, message) = refusal(call(&state, post_messages(&body, None)).await).await;
    assert!(
        message.starts_with("messages.2.content.0.") && message.ends_with("text: Field required"),
        "{message}"
    );
    assert!(received(&gpt).await.is_empty() && received(&claude).await.is_empty());
}

/// Hostile blocks: thousands of unknown ones, a type name too long to echo and one that
/// would break a header. Nothing of them is kept but their types' paths, few and cut; the
/// 400s quote a cut type at most.
#[tokio::test]
async fn unknown_block_types_are_bounded_and_cut() {
    let evil = format!("{}\r\nx-evil: 1", "z".repeat(10_000));
    let mut blocks: Vec<Value> = (0..5000)
        .map(|i| json!({"type": format!("kind{i}"), "data": "x".repeat(64)}))
        .collect();
    blocks.insert(0, json!({"type": evil, "text": "hi"}));
    let mut body = request(json!([{"role": "user", "content": blocks}]));
    body["model"] = json!("openai");
    let mut f = down_then_plain();
    Arc::get_mut(&mut f.state.0).unwrap().max_body_bytes = 1 << 22;

    let (status, message) = refusal(call(&f.state, post_messages(&body, None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.len() < 600, "{message}");
    assert!(
        !message.contains("evil") && !message.contains('\n'),
        "{message}"
    );

    body["model"] = json!("smart");
    let resp = call(&f.state, post_messages(&body, Some(PER_TURN))).await;
    assert_ne!(resp.status(), StatusCode::OK, "Anthropic is down");
    let v = json_body(resp).await;
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert!(native.required);
    assert_eq!(native.required_by.len(), 8, "{:?}", native.required_by);
    assert_eq!(native.required_by[0], "messages.0.content.0.type");
    assert_eq!(f.backup.calls(), 0);
    // in the shared shape each stands in as its JSON (the input estimate counts it)
    let parts = &f.primary.requests()[0].messages[0].content;
    assert_eq!(parts.len(), 5001);
    assert_eq!(
        parts[1],
        switchyard::chat::ContentPart::Text {
            text: json!({"type": "kind0", "data": "x".repeat(64)}).to_string()
        }
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.len() < 2000, "{message}");
    assert!(!message.contains("evil"), "{message}");
}

/// A thread whose first turn held a block of a type the dialect does not model: every
/// `continue` carries it in the history, so it stays Anthropic's alone (another vendor
/// would get the conversation without it).
#[tokio::test]
async fn a_thread_with_an_unknown_block_in_its_history_stays_with_anthropic() {
    let f = fixture(
        ScriptedProvider::new("claude")
            .taking_native("anthropic")
            .then(Step::text("Seen."))
            .otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let threads = "message-threads-2026-08-12";
    let mut first = request(json!([{"role": "user", "content": [hologram()]}]));
    first["thread"] = json!({"type": "create"});
    let resp = call(&f.state, post_messages(&first, Some(threads))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let id = json_body(resp).await["id"].as_str().unwrap().to_owned();

    let mut next = request(json!([{"role": "user", "content": "and now?"}]));
    next["thread"] = json!({"type": "continue", "previous_message_id": id});
    let resp = call(&f.state, post_messages(&next, Some(threads))).await;
    assert_ne!(resp.status(), StatusCode::OK, "Anthropic is down now");
    assert_eq!(f.backup.calls(), 0);
    let attempts = json_body(resp).await["error"]["attempts"].clone();
    assert_eq!(
        attempts[1]["outcome"], "skipped:needs_native(messages.0.content.0.type)",
        "{attempts}"
    );
    let native = f.primary.requests()[1].native.clone().unwrap();
    let mut kept = hologram();
    kept.as_object_mut().unwrap().remove("cache_control"); // a thread keeps no breakpoints
    assert_eq!(native.body.to_value()["messages"][0]["content"][0], kept);
}
