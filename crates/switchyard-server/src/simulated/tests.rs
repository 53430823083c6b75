//! The simulated provider: the tutorial's draws, tool calls and streams, and `n` answers
//! by as many calls.

use switchyard::chat::FinishReason;

use super::*;

fn aurora() -> SimulatedProvider {
    SimulatedProvider::new(SimulatedConfig {
        name: "aurora".into(),
        failure_rate: 0.35,
        latency_range_ms: (150.0, 300.0),
        cost_per_1k_tokens: 0.002,
        seed: 42,
        sleep_scale: None,
    })
}

/// The tutorial's three-call preview.
#[tokio::test]
async fn preview_matches_the_tutorial() {
    let p = aurora();
    let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.");
    let first = p.send(&req).await.unwrap();
    assert_eq!(first.text, "[aurora] Summarize the Q3 shipping repo...");
    assert_eq!(first.reported_latency, Some(Duration::from_micros(153_800)));
    assert_eq!(first.reported_cost, Some(Money::from_usd(0.0004)));
    for _ in 0..2 {
        let err = p.send(&req).await.unwrap_err();
        assert_eq!(err.message, "aurora timed out");
    }
}

fn steady() -> SimulatedProvider {
    SimulatedProvider::new(SimulatedConfig {
        failure_rate: 0.0,
        ..aurora().core.cfg.clone()
    })
}

fn with_tool(prompt: &str) -> ChatRequest {
    let mut req = ChatRequest::from_prompt(prompt);
    req.tools = vec![switchyard::chat::Tool {
        name: "get_weather".into(),
        description: None,
        parameters: serde_json::json!({"type": "object", "properties": {
            "city": {"type": "string", "minLength": 40}}, "required": ["city"]}),
        cache_control: None,
    }];
    req
}

async fn collect(p: &SimulatedProvider, req: &ChatRequest) -> Vec<ChatChunk> {
    let stream = p.stream(req).await.unwrap();
    stream.map(Result::unwrap).collect().await
}

/// A streamed call is the plain call in pieces: the id and name first, the arguments
/// across several chunks, the finish and usage on the last.
#[tokio::test]
async fn a_streamed_tool_call_is_the_plain_one_in_pieces() {
    let p = steady();
    let req = with_tool("Weather in Paris?");
    let plain = p.send(&req).await.unwrap();
    assert_eq!(plain.finish_reason, Some(FinishReason::ToolCalls));
    let call = &plain.tool_calls[0];
    let chunks = collect(&p, &req).await;
    assert!(chunks.len() >= 3, "{chunks:?}");
    let deltas: Vec<&ToolCallDelta> = chunks.iter().flat_map(|c| &c.tool_calls).collect();
    assert_eq!(deltas[0].id.as_deref(), Some(call.id.as_str()));
    assert_eq!(deltas[0].name.as_deref(), Some("get_weather"));
    assert!(deltas[1..].iter().all(|d| d.id.is_none() && d.index == 0));
    let joined: String = deltas.iter().map(|d| d.arguments.as_str()).collect();
    assert_eq!(joined, call.arguments);
    let last = chunks.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::ToolCalls));
    assert!(last.usage.is_some());
    assert!(chunks.iter().all(|c| c.text.is_empty()));
}

#[tokio::test]
async fn a_plain_stream_is_the_tutorials_text_word_by_word() {
    let chunks = collect(
        &steady(),
        &ChatRequest::from_prompt("Hello there, switchyard"),
    )
    .await;
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["[aurora] ", "Hello ", "there, ", "switchyard..."]);
    assert!(chunks[..3]
        .iter()
        .all(|c| c.finish_reason.is_none() && c.usage.is_none()));
    assert_eq!(chunks[3].finish_reason, Some(FinishReason::Stop));
}

/// A request the provider refuses draws nothing: the next request meets the same
/// outcome it would have met without it.
#[tokio::test]
async fn a_refused_request_costs_no_draw() {
    let (p, q) = (aurora(), aurora());
    let mut bad = with_tool("x");
    bad.tool_choice = Some(switchyard::chat::ToolChoice::Tool("nope".into()));
    assert_eq!(p.send(&bad).await.unwrap_err().kind, ErrorKind::BadRequest);
    assert!(p.stream(&bad).await.is_err());
    let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.");
    let (a, b) = (p.send(&req).await.unwrap(), q.send(&req).await.unwrap());
    assert_eq!(a.reported_latency, b.reported_latency);
}

#[test]
fn pieces_concatenate_back() {
    let words = split_keeping_spaces("[a] one two...");
    assert_eq!(words.concat(), "[a] one two...");
    assert_eq!(words.len(), 3);
    let args = "{\"city\": \"Zürich ünd Genève, a long way\"}";
    let parts = pieces(args);
    assert!(parts.len() > 1 && parts.len() <= 4, "{parts:?}");
    assert_eq!(parts.concat(), args);
    assert_eq!(pieces(""), [""]);
}

fn asking(n: u32, req: ChatRequest) -> ChatRequest {
    ChatRequest {
        n: Some(n),
        max_tokens: Some(50),
        ..req
    }
}

/// `n` answers are `n` calls: choice 0 is the one-answer reply, each later choice its
/// own, usage and cost the sum; the same request gets the same choices again.
#[tokio::test]
async fn n_answers_are_n_calls_merged_with_usage_summed() {
    let req = asking(3, ChatRequest::from_prompt("Hello there, switchyard"));
    let p = steady();
    assert_eq!(p.calls_for(&req), 3);
    let got = p.send(&req).await.unwrap();
    let one = steady().send(&fanout::single(&req)).await.unwrap();
    assert_eq!(got.text, one.text);
    let texts: Vec<&str> = got.alternatives.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "[aurora] Hello there, switchyard... (choice 1)",
            "[aurora] Hello there, switchyard... (choice 2)"
        ]
    );
    assert!(got
        .alternatives
        .iter()
        .all(|c| c.finish_reason == Some(FinishReason::Stop)));
    let usage = got.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (9, 150));
    // three draws' costs, each round(50 / 1000 × 0.002, 5)
    assert_eq!(got.reported_cost, Some(Money::from_usd(0.0003)));
    let again = steady().send(&req).await.unwrap();
    assert_eq!(again.alternatives, got.alternatives);
    assert_eq!(steady().calls_for(&fanout::single(&req)), 1);
}

/// Each choice's tool call is its own (arguments and id seeded by the request and the
/// choice), each valid against the tool's schema.
#[tokio::test]
async fn each_choice_calls_the_tool_with_its_own_arguments() {
    let req = asking(3, with_tool("Weather in Paris?"));
    let got = steady().send(&req).await.unwrap();
    let mut calls = vec![got.tool_calls[0].clone()];
    calls.extend(got.alternatives.iter().map(|c| c.tool_calls[0].clone()));
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(call.name, "get_weather");
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        let city = args["city"].as_str().unwrap();
        assert!(city.chars().count() >= 40, "choice {i}: {args}");
        assert!(calls[..i]
            .iter()
            .all(|c| c.id != call.id && c.arguments != call.arguments));
    }
    assert_eq!(got.finish_reason, Some(FinishReason::ToolCalls));
}

/// Streamed, choice 0 comes in the chunks' own fields and choice `i` as deltas of index
/// `i`; each joins into the plain answer's choice, and the last chunk carries the finish
/// and the summed usage.
#[tokio::test]
async fn n_answers_stream_one_choice_per_index() {
    let req = asking(2, ChatRequest::from_prompt("Hello there, switchyard"));
    let plain = steady().send(&req).await.unwrap();
    let chunks = collect(&steady(), &req).await;
    let first: String = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(first, plain.text);
    let deltas: Vec<&switchyard::chat::ChoiceDelta> =
        chunks.iter().flat_map(|c| &c.choices).collect();
    assert!(deltas.iter().all(|d| d.index == 1), "{deltas:?}");
    assert!(deltas.len() > 1, "choice 1 comes in pieces: {deltas:?}");
    let second: String = deltas.iter().map(|d| d.text.as_str()).collect();
    assert_eq!(second, plain.alternatives[0].text);
    let last = chunks.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(last.usage.map(|u| u.output_tokens), Some(100));
    let finished = chunks.iter().filter(|c| c.finish_reason.is_some()).count();
    assert_eq!(finished, 1, "one finish ends the stream");
}

/// Every answer draws from the tutorial's generator: a request for `n` answers spends `n`
/// draws (the provider after it is where a fresh one is after `n` calls), and one failing
/// draw fails the whole answer.
#[tokio::test]
async fn each_answer_draws_and_one_failure_fails_them_all() {
    let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.");
    // aurora (seed 42) answers its first call and times out on the next two
    let p = aurora();
    let err = p.send(&asking(2, req.clone())).await.unwrap_err();
    assert_eq!(err.message, "aurora timed out");
    let q = aurora();
    for _ in 0..2 {
        let _ = q.send(&req).await;
    }
    let outcome = |r: Result<ProviderReply, ProviderError>| r.map(|r| r.reported_latency).ok();
    let (mut after_p, mut after_q) = (Vec::new(), Vec::new());
    for _ in 0..8 {
        after_p.push(outcome(p.send(&req).await));
        after_q.push(outcome(q.send(&req).await));
    }
    assert_eq!(after_p, after_q);
    assert!(after_p.iter().any(Option::is_some), "{after_p:?}");
    // streamed the same: the second call's failure refuses the stream
    assert!(aurora().stream(&asking(2, req)).await.is_err());
}
