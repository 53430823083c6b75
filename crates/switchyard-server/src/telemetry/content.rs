//! Prompt and completion content for the request span, only with `[telemetry]
//! capture_content = true`: the GenAI conventions' `gen_ai.input.messages` and
//! `gen_ai.output.messages`, as JSON strings of at most [`MAX_CONTENT_BYTES`] each.
//!
//! Owns [`Content`] and the conversion from the shared chat shape to the conventions'
//! message schema (a role and its parts: `text`, `tool_call`, `tool_call_response`; an
//! image is a part with its type only, never its bytes or URL). It does not decide when
//! content is captured: the chat flow builds it only for a sampled request of a server
//! that exports with capture on (`crate::http::dialects`), and carries it next to the
//! request-log entry — never into the log line, the access log or the dashboard.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::chat::{ContentPart, Message};
use switchyard::{ChatRequest, ChatResponse};

/// The most bytes each of `gen_ai.input.messages` and `gen_ai.output.messages` holds.
/// Whole messages are kept while they fit; the first that does not has its text cut to
/// fit (ending with `…`), and later ones are left out.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// What a request sent and got, as the span's attributes hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// `gen_ai.input.messages`: the request's messages, in order.
    pub input: Arc<str>,
    /// `gen_ai.output.messages`: the answer, when there was one.
    pub output: Option<String>,
    /// Either was cut to [`MAX_CONTENT_BYTES`].
    pub truncated: bool,
}

/// The messages a request sent (its system prompt first), capped; true when cut.
#[must_use]
pub fn input_messages(req: &ChatRequest) -> (Arc<str>, bool) {
    let messages: Vec<Value> = req.messages.iter().map(message).collect();
    let (json, cut) = capped(messages, MAX_CONTENT_BYTES);
    (Arc::from(json), cut)
}

/// A finish reason (OpenAI's word, or the vendor's own) in the GenAI conventions' words:
/// `stop`, `length`, `content_filter`, `tool_call` (OpenAI's `tool_calls`), `error`; a
/// vendor's reason they have no word for, as the vendor said it.
#[must_use]
pub fn genai_finish_reason(reason: &str) -> &str {
    match reason {
        "tool_calls" => "tool_call",
        other => other,
    }
}

/// The content of `resp` as one output message, with the request's captured `input`.
#[must_use]
pub fn with_output(input: &(Arc<str>, bool), resp: &ChatResponse) -> Content {
    let mut parts = Vec::with_capacity(1 + resp.tool_calls.len());
    if !resp.text.is_empty() {
        parts.push(json!({"type": "text", "content": resp.text}));
    }
    parts.extend(resp.tool_calls.iter().map(|c| {
        json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments(&c.arguments)})
    }));
    let mut out = json!({"role": "assistant", "parts": parts});
    if let Some(reason) = &resp.finish_reason {
        let reason = genai_finish_reason(reason.as_openai());
        out["finish_reason"] = Value::from(reason);
    }
    let (output, cut) = capped(vec![out], MAX_CONTENT_BYTES);
    Content {
        input: Arc::clone(&input.0),
        output: Some(output),
        truncated: input.1 || cut,
    }
}

/// The captured input of a request that got no answer.
#[must_use]
pub fn input_only(input: &(Arc<str>, bool)) -> Content {
    Content {
        input: Arc::clone(&input.0),
        output: None,
        truncated: input.1,
    }
}

/// One message in the conventions' schema.
fn message(m: &Message) -> Value {
    let mut parts: Vec<Value> = Vec::with_capacity(m.content.len() + m.tool_calls.len());
    let tool_result = m.tool_call_id.as_ref();
    for p in &m.content {
        parts.push(match (p, tool_result) {
            (ContentPart::Text { text }, Some(id)) => {
                json!({"type": "tool_call_response", "id": id, "result": text})
            }
            (ContentPart::Text { text }, None) => json!({"type": "text", "content": text}),
            (ContentPart::Image { .. }, _) => json!({"type": "image"}),
        });
    }
    parts.extend(m.tool_calls.iter().map(|c| {
        json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments(&c.arguments)})
    }));
    let role = serde_json::to_value(m.role).unwrap_or(Value::Null);
    json!({"role": role, "parts": parts})
}

/// A tool call's arguments: the JSON value the model wrote, or its text when it is not JSON.
fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// `messages` as a JSON array of at most `cap` bytes: whole messages while they fit, the
/// first that does not with its texts cut until it does (or left out), nothing after it.
fn capped(messages: Vec<Value>, cap: usize) -> (String, bool) {
    let mut out = String::from("[");
    let mut cut = false;
    for mut m in messages {
        // room for a comma and the closing bracket
        let room = cap.saturating_sub(out.len() + 2);
        let mut text = m.to_string();
        if text.len() > room {
            cut = true;
            shrink(&mut m, text.len() - room);
            text = m.to_string();
            if text.len() > room {
                break;
            }
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&text);
        if cut {
            break;
        }
    }
    out.push(']');
    (out, cut)
}

/// Cut the text strings of `m`'s parts, last first, until `excess` bytes are gone (each
/// byte cut shortens the JSON by at least one byte; the `…` marker costs three).
fn shrink(m: &mut Value, excess: usize) {
    let Some(parts) = m.get_mut("parts").and_then(Value::as_array_mut) else {
        return;
    };
    let mut left = excess;
    for part in parts.iter_mut().rev() {
        for key in ["content", "result"] {
            let Some(Value::String(s)) = part.get_mut(key) else {
                continue;
            };
            if left == 0 || s.is_empty() {
                continue;
            }
            let goal = s.len().saturating_sub(left + '…'.len_utf8());
            let mut at = goal;
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            left = left.saturating_sub((s.len() - at).saturating_sub('…'.len_utf8()));
            s.truncate(at);
            s.push('…');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::chat::Role;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    #[test]
    fn messages_follow_the_genai_schema() {
        let mut req = request(vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "Capital of France?"),
        ]);
        let mut tool = Message::text(Role::Tool, "sunny");
        tool.tool_call_id = Some("call_1".to_owned());
        req.messages.push(tool);
        let (input, cut) = input_messages(&req);
        assert!(!cut);
        let v: Value = serde_json::from_str(&input).unwrap();
        assert_eq!(
            v[0],
            json!({"role": "system", "parts": [{"type": "text", "content": "be brief"}]})
        );
        assert_eq!(v[1]["parts"][0]["content"], "Capital of France?");
        assert_eq!(
            v[2]["parts"][0],
            json!({"type": "tool_call_response", "id": "call_1", "result": "sunny"})
        );
    }

    #[test]
    fn each_is_cut_to_the_cap_and_stays_json() {
        let long = "é".repeat(MAX_CONTENT_BYTES); // two bytes a char: cuts land mid-char
        let req = request(vec![
            Message::text(Role::User, "first"),
            Message::text(Role::User, long.clone()),
            Message::text(Role::User, "never reached"),
        ]);
        let (input, cut) = input_messages(&req);
        assert!(cut);
        assert!(input.len() <= MAX_CONTENT_BYTES, "{}", input.len());
        assert!(input.len() > MAX_CONTENT_BYTES - 16, "filled up to the cap");
        let v: Value = serde_json::from_str(&input).unwrap();
        let messages = v.as_array().unwrap();
        assert_eq!(
            messages.len(),
            2,
            "the first whole, the second cut, the third left out"
        );
        let text = messages[1]["parts"][0]["content"].as_str().unwrap();
        assert!(text.ends_with('…') && text.starts_with("éé"));

        // a JSON-heavy text (every quote escaped) still fits
        let quotes = "\"".repeat(MAX_CONTENT_BYTES);
        let (input, _) = input_messages(&request(vec![Message::text(Role::User, quotes)]));
        assert!(input.len() <= MAX_CONTENT_BYTES);
        serde_json::from_str::<Value>(&input).unwrap();
    }
}
