//! What a simulated provider says: the tutorial's text, a tool call, or JSON for the
//! requested format, so clients that use tools and structured outputs (LangChain's
//! `bind_tools`, instructor, the Agents SDK, the SDKs' `.parse`) work on the embedded
//! default.
//!
//! With tools (and `tool_choice` not `none`) it calls one: the named tool for a named
//! choice; else the tool whose name's words the last user message mentions most (the
//! first on a tie). Under `auto` (or no choice), a turn that answers a tool result gets
//! text instead, so an agent's loop ends; `required` and a named choice always call. The
//! arguments are valid against the tool's `parameters` (`schema`). Without a call, a
//! `json_schema` format is answered with a value valid against its schema, `json_object`
//! with `{"answer": <the text>}`; otherwise the text is the tutorial's
//! (`[name] prompt…`), or after a tool result what the tool returned. Everything is drawn
//! from the request's fingerprint (`seeded`), never from the tutorial's generator: the
//! same request gets the same answer, and the tutorial's draws are untouched.
//!
//! Choice `i` > 0 of a request for several answers is drawn from the fingerprint mixed
//! with `i` (other arguments, another call id, other JSON), and its text ends
//! `" (choice i)"`: each choice is the same for the same request, and no two are equal.
//! Choice 0 is the one answer a request without `n` gets.

use serde_json::json;
use switchyard::chat::ResponseFormat;
use switchyard::chat::{ChatRequest, FinishReason, Message, Role, Tool, ToolCall, ToolChoice};
use switchyard::error::{ErrorKind, ProviderError};

use super::schema::{self, Generated};
use super::seeded::{fingerprint, for_choice, Seeded};

/// The characters of the last user message read to choose a tool.
const MATCH_CHARS: usize = 4096;
/// Tools considered when choosing one.
const MAX_TOOLS: usize = 128;
/// The characters of a tool's result quoted in the text after it.
const QUOTED_CHARS: usize = 60;

/// One simulated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The text (empty for a tool call).
    pub text: String,
    /// The tool calls (one, or none).
    pub tool_calls: Vec<ToolCall>,
    /// `tool_calls`, `stop`, or `length` when a bound on generated JSON cut it.
    pub finish: FinishReason,
}

/// The answer to `req` from the provider called `name`, whose plain text is `text`, as
/// its choice `choice` (0 for a request of one answer).
///
/// # Errors
/// `BadRequest` when `tool_choice` names a tool the request does not define.
pub fn answer(
    name: &str,
    req: &ChatRequest,
    text: String,
    choice: u32,
) -> Result<Answer, ProviderError> {
    let seed = for_choice(fingerprint(req), choice);
    if let Some(tool) = tool_to_call(req)? {
        return Ok(call(tool, seed));
    }
    let said = answered_tool(req).map_or(text, |t| after_tool(name, &t));
    let said = if choice == 0 {
        said
    } else {
        format!("{said} (choice {choice})")
    };
    Ok(match &req.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            json_text(schema::instance(schema, seed))
        }
        Some(ResponseFormat::JsonObject) => json_text(Generated {
            value: json!({ "answer": said }),
            cut: false,
        }),
        _ => Answer {
            text: said,
            tool_calls: Vec::new(),
            finish: FinishReason::Stop,
        },
    })
}

/// The tool this request makes the model call, if any.
fn tool_to_call(req: &ChatRequest) -> Result<Option<&Tool>, ProviderError> {
    if req.tools.is_empty() {
        return Ok(None);
    }
    match &req.tool_choice {
        Some(ToolChoice::None) => Ok(None),
        Some(ToolChoice::Tool(wanted)) => match req.tools.iter().find(|t| &t.name == wanted) {
            Some(t) => Ok(Some(t)),
            None => Err(ProviderError::new(
                ErrorKind::BadRequest,
                format!(
                    "tool_choice names the tool {:?}, which is not among the request's tools",
                    wanted.chars().take(64).collect::<String>()
                ),
            )),
        },
        Some(ToolChoice::Required) => Ok(Some(likeliest(req))),
        Some(ToolChoice::Auto) | None if answered_tool(req).is_some() => Ok(None),
        Some(ToolChoice::Auto) | None => Ok(Some(likeliest(req))),
    }
}

/// The tool whose name's words (of three letters or more) the last user message
/// mentions most; the first on a tie.
fn likeliest(req: &ChatRequest) -> &Tool {
    let said: String = (req.messages.iter().rev())
        .find(|m| m.role == Role::User)
        .map(Message::joined_text)
        .unwrap_or_default()
        .chars()
        .take(MATCH_CHARS)
        .collect::<String>()
        .to_lowercase();
    let score = |t: &Tool| {
        (t.name.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.len() >= 3 && said.contains(&w.to_lowercase()))
            .count()
    };
    let mut best = &req.tools[0];
    let mut best_score = score(best);
    for t in req.tools.iter().take(MAX_TOOLS).skip(1) {
        let s = score(t);
        if s > best_score {
            (best, best_score) = (t, s);
        }
    }
    best
}

/// A call of `tool` with arguments valid against its parameters (an object: a schema
/// that allows none gets `{}`).
fn call(tool: &Tool, seed: u64) -> Answer {
    let mut rng = Seeded::new(seed ^ name_hash(&tool.name));
    let Generated { value, cut } = schema::instance(&tool.parameters, rng.next_u64());
    let arguments = if value.is_object() {
        value.to_string()
    } else {
        "{}".to_owned()
    };
    let id = format!("call_{:016x}{:08x}", rng.next_u64(), rng.next_u64() >> 32);
    Answer {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id,
            name: tool.name.clone(),
            arguments,
        }],
        finish: if cut {
            FinishReason::Length
        } else {
            FinishReason::ToolCalls
        },
    }
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// JSON as the answer's text.
fn json_text(g: Generated) -> Answer {
    Answer {
        text: g.value.to_string(),
        tool_calls: Vec::new(),
        finish: if g.cut {
            FinishReason::Length
        } else {
            FinishReason::Stop
        },
    }
}

/// A tool's result this turn answers: (tool name, its output), when a tool result
/// follows the last assistant message.
fn answered_tool(req: &ChatRequest) -> Option<(String, String)> {
    let since = (req.messages.iter().rposition(|m| m.role == Role::Assistant)).map_or(0, |i| i + 1);
    let result = req.messages[since..]
        .iter()
        .find(|m| m.role == Role::Tool)?;
    let name = result.name.clone().or_else(|| {
        let id = result.tool_call_id.as_deref()?;
        (req.messages.iter().rev())
            .flat_map(|m| &m.tool_calls)
            .find(|c| c.id == id)
            .map(|c| c.name.clone())
    });
    Some((
        name.unwrap_or_else(|| "the tool".to_owned()),
        result.joined_text(),
    ))
}

/// `[name] tool returned: output` (the output cut to [`QUOTED_CHARS`]).
fn after_tool(name: &str, (tool, output): &(String, String)) -> String {
    let mut quoted: String = output.chars().take(QUOTED_CHARS).collect();
    if output.chars().nth(QUOTED_CHARS).is_some() {
        quoted.push_str("...");
    }
    format!("[{name}] {tool} returned: {quoted}")
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn tool(name: &str, parameters: Value) -> Tool {
        Tool {
            name: name.into(),
            description: None,
            parameters,
            cache_control: None,
        }
    }

    fn weather_and_time(prompt: &str) -> ChatRequest {
        let mut req = ChatRequest::from_prompt(prompt);
        req.tools = vec![
            tool(
                "get_time",
                json!({"type": "object", "properties": {
                "zone": {"type": "string"}}, "required": ["zone"]}),
            ),
            tool(
                "get_weather",
                json!({"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1,
                "maximum": 7}}, "required": ["city", "days"], "additionalProperties": false}),
            ),
        ];
        req
    }

    fn text(req: &ChatRequest) -> String {
        format!("[p] {}...", req.prompt_text())
    }

    fn answer_of(req: &ChatRequest) -> Answer {
        answer("p", req, text(req), 0).unwrap()
    }

    #[test]
    fn a_request_with_tools_gets_a_call_of_the_tool_it_mentions() {
        let req = weather_and_time("What is the weather in Paris?");
        let a = answer_of(&req);
        assert_eq!(a.finish, FinishReason::ToolCalls);
        assert!(a.text.is_empty());
        let call = &a.tool_calls[0];
        assert_eq!(call.name, "get_weather");
        assert!(call.id.starts_with("call_"), "{}", call.id);
        let args: Value = serde_json::from_str(&call.arguments).unwrap();
        assert!(args["city"].is_string(), "{args}");
        let days = args["days"].as_i64().unwrap();
        assert!((1..=7).contains(&days), "{args}");
        assert_eq!(args.as_object().unwrap().len(), 2, "{args}");
        // nothing mentioned: the first tool
        assert_eq!(
            answer_of(&weather_and_time("hi")).tool_calls[0].name,
            "get_time"
        );
    }

    #[test]
    fn the_same_request_gets_the_same_call_and_another_request_another() {
        let req = weather_and_time("What is the weather in Paris?");
        assert_eq!(answer_of(&req), answer_of(&req.clone()));
        let other = weather_and_time("What is the weather in Lyon?");
        assert_ne!(answer_of(&req).tool_calls, answer_of(&other).tool_calls);
    }

    #[test]
    fn tool_choice_is_respected() {
        let mut req = weather_and_time("What is the weather in Paris?");
        req.tool_choice = Some(ToolChoice::None);
        let a = answer_of(&req);
        assert!(a.tool_calls.is_empty());
        assert_eq!(a.text, "[p] What is the weather in Paris?...");
        assert_eq!(a.finish, FinishReason::Stop);
        req.tool_choice = Some(ToolChoice::Tool("get_time".into()));
        assert_eq!(answer_of(&req).tool_calls[0].name, "get_time");
        req.tool_choice = Some(ToolChoice::Tool("launch".into()));
        let err = answer("p", &req, String::new(), 0).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.contains("\"launch\""), "{}", err.message);
    }

    fn after_a_call(choice: Option<ToolChoice>) -> ChatRequest {
        let mut req = weather_and_time("What is the weather in Paris?");
        let first = answer_of(&req).tool_calls.remove(0);
        let id = first.id.clone();
        req.messages.push(Message {
            tool_calls: vec![first],
            ..Message::assistant("")
        });
        req.messages.push(Message {
            name: None,
            ..Message::tool_result(id, "ignored", "sunny in Paris")
        });
        req.tool_choice = choice;
        req
    }

    #[test]
    fn a_tool_result_under_auto_is_answered_with_text_so_the_loop_ends() {
        for choice in [None, Some(ToolChoice::Auto)] {
            let a = answer_of(&after_a_call(choice));
            assert!(a.tool_calls.is_empty());
            assert_eq!(a.text, "[p] get_weather returned: sunny in Paris");
            assert_eq!(a.finish, FinishReason::Stop);
        }
        // a forced choice is the client's: it gets a call again
        let forced = answer_of(&after_a_call(Some(ToolChoice::Required)));
        assert_eq!(forced.tool_calls.len(), 1);
        // a long result is quoted in part
        let mut req = after_a_call(None);
        let last = req.messages.len() - 1;
        req.messages[last] = Message::tool_result("c", "lookup", "x".repeat(500));
        let a = answer_of(&req);
        assert_eq!(
            a.text,
            format!("[p] lookup returned: {}...", "x".repeat(60))
        );
    }

    #[test]
    fn formats_are_answered_with_json() {
        let mut req = ChatRequest::from_prompt("Extract the event.");
        req.response_format = Some(ResponseFormat::JsonSchema {
            name: "Event".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"},
                "attendees": {"type": "array", "items": {"type": "string"}}},
                "required": ["name", "attendees"], "additionalProperties": false}),
            strict: Some(true),
        });
        let a = answer_of(&req);
        let v: Value = serde_json::from_str(&a.text).unwrap();
        assert!(v["name"].is_string() && v["attendees"].is_array(), "{v}");
        assert_eq!(a.finish, FinishReason::Stop);
        req.response_format = Some(ResponseFormat::JsonObject);
        let v: Value = serde_json::from_str(&answer_of(&req).text).unwrap();
        assert_eq!(v, json!({"answer": "[p] Extract the event...."}));
        // after a tool result, the format still holds
        let mut req = after_a_call(None);
        req.response_format = Some(ResponseFormat::JsonObject);
        let v: Value = serde_json::from_str(&answer_of(&req).text).unwrap();
        assert_eq!(v["answer"], "[p] get_weather returned: sunny in Paris");
    }

    #[test]
    fn plain_requests_keep_the_tutorials_text() {
        let req = ChatRequest::from_prompt("Summarize the Q3 shipping report.");
        let a = answer("aurora", &req, "[aurora] Summarize...".into(), 0).unwrap();
        assert_eq!(a.text, "[aurora] Summarize...");
        assert!(a.tool_calls.is_empty());
        assert_eq!(a.finish, FinishReason::Stop);
        let mut text_format = req.clone();
        text_format.response_format = Some(ResponseFormat::Text);
        assert_eq!(
            answer("aurora", &text_format, "t".into(), 0).unwrap().text,
            "t"
        );
    }

    #[test]
    fn arguments_past_the_bounds_end_with_length() {
        let mut req = ChatRequest::from_prompt("go");
        req.tools = vec![tool(
            "big",
            json!({"type": "object", "properties": {
            "s": {"type": "array", "minItems": 64, "items": {"type": "string", "minLength": 4096}}},
            "required": ["s"]}),
        )];
        let a = answer_of(&req);
        assert_eq!(a.finish, FinishReason::Length);
        assert!(a.tool_calls[0].arguments.len() < 2 * schema::MAX_BYTES);
    }

    /// Later choices differ from choice 0 and from each other, and each is the same for
    /// the same request; choice 0 is the one-answer answer.
    #[test]
    fn each_choice_is_its_own_and_reproducible() {
        let plain = ChatRequest::from_prompt("hi");
        let texts: Vec<String> = (0..3)
            .map(|i| answer("p", &plain, text(&plain), i).unwrap().text)
            .collect();
        assert_eq!(
            texts,
            ["[p] hi...", "[p] hi... (choice 1)", "[p] hi... (choice 2)"]
        );
        let mut req = ChatRequest::from_prompt("Extract the event.");
        req.response_format = Some(ResponseFormat::JsonSchema {
            name: "Event".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"},
                "size": {"type": "integer"}}, "required": ["name", "size"]}),
            strict: None,
        });
        let at = |req: &ChatRequest, i| answer("p", req, text(req), i).unwrap();
        let of = |i| at(&req, i);
        assert_eq!(of(0), answer_of(&req));
        assert_eq!(of(1), of(1));
        assert!(of(0) != of(1) && of(1) != of(2) && of(0) != of(2));
        let v: Value = serde_json::from_str(&of(2).text).unwrap();
        assert!(v["name"].is_string() && v["size"].is_i64(), "{v}");
        req.response_format = Some(ResponseFormat::JsonObject);
        let v: Value = serde_json::from_str(&at(&req, 1).text).unwrap();
        assert_eq!(v["answer"], "[p] Extract the event.... (choice 1)");
    }
}
