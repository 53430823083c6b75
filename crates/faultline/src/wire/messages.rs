//! The Anthropic Messages API (`POST /v1/messages`) on the wire, as faultline speaks it: the
//! request fields read, the `message` object, the streamed events (`event:` + `data:`
//! frames) and Anthropic's error shape. Built like chat's: static pieces preserialized
//! once, the model encoded once per request, the canonical answer's frames ready-made.

use std::borrow::Cow;
use std::io::Write as _;
use std::sync::LazyLock;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::{canonical_index, json_str, Message};
use crate::answer::{self, PROMPT_TOKENS};

/// The request fields faultline reads.
#[derive(Debug, Deserialize)]
pub(crate) struct Request<'a> {
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, borrow)]
    pub messages: Vec<Message<'a>>,
}

impl Request<'_> {
    /// The assistant prefill: the last message's text when its role is `assistant`.
    pub(crate) fn prefill(&self) -> Option<String> {
        let last = self.messages.last().filter(|m| m.role == "assistant")?;
        Some(super::content_text(last.content.as_ref()))
    }
}

/// Everything before the model in a `message` object.
const MESSAGE_HEAD: &str = r#"{"id":"msg_faultline","type":"message","role":"assistant","model":"#;

/// `"usage":{...}` of a message of `output` tokens.
fn usage(out: &mut Vec<u8>, output: usize) {
    let _ = write!(
        out,
        r#""usage":{{"input_tokens":{PROMPT_TOKENS},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{output}}}"#
    );
}

/// A whole message's fields after the model, saying `text`.
fn message_tail(out: &mut Vec<u8>, text: &str, tokens: usize) {
    out.extend_from_slice(br#","content":[{"type":"text","text":"#);
    json_str(out, text);
    out.extend_from_slice(br#"}],"stop_reason":"end_turn","stop_sequence":null,"#);
    usage(out, tokens);
    out.push(b'}');
}

/// The tail of a message saying the whole canonical answer.
static CANONICAL_TAIL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    message_tail(&mut out, answer::CANONICAL_ANSWER, answer::token_count());
    out
});

/// A `message` body for `model` saying the `pieces` (one token each).
pub(crate) fn completion(model: &str, pieces: &[&str]) -> Bytes {
    let mut out = Vec::with_capacity(MESSAGE_HEAD.len() + model.len() + CANONICAL_TAIL.len() + 8);
    out.extend_from_slice(MESSAGE_HEAD.as_bytes());
    json_str(&mut out, model);
    if pieces.len() == answer::token_count() {
        out.extend_from_slice(&CANONICAL_TAIL);
    } else {
        message_tail(&mut out, &pieces.concat(), pieces.len());
    }
    Bytes::from(out)
}

/// Anthropic's overloaded error, as a plain body.
pub(crate) const ERROR_BODY: &[u8] =
    br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
/// The same error as a stream event.
pub(crate) const ERROR_EVENT: &[u8] = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
/// The frame that breaks a stream: a delta whose data is not JSON.
pub(crate) const MALFORMED_EVENT: &[u8] = b"event: content_block_delta\ndata: {not json\n\n";
/// `content_block_stop`.
pub(crate) const BLOCK_STOP_EVENT: &[u8] =
    b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
/// `message_stop`: the end of a stream.
pub(crate) const STOP_EVENT: &[u8] = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// After `message_start`'s message: the text block's start and a ping.
const OPEN_TAIL: &[u8] = b"}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n";

/// A `content_block_delta` up to its text.
const DELTA_HEAD: &[u8] = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":";

fn delta(out: &mut Vec<u8>, piece: &str) {
    out.extend_from_slice(DELTA_HEAD);
    json_str(out, piece);
    out.extend_from_slice(b"}}\n\n");
}

/// A delta frame, per canonical token.
static DELTAS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    answer::tokens()
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            delta(&mut out, t);
            out
        })
        .collect()
});

/// Builds the events of one streamed message.
pub(crate) struct Events {
    /// The `message_start` frame, model included.
    start: Vec<u8>,
}

impl Events {
    /// Events for a message from `model`.
    pub(crate) fn new(model: &str) -> Self {
        let mut start = Vec::with_capacity(256 + model.len());
        start.extend_from_slice(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":",
        );
        start.extend_from_slice(MESSAGE_HEAD.as_bytes());
        json_str(&mut start, model);
        start.extend_from_slice(br#","content":[],"stop_reason":null,"stop_sequence":null,"#);
        usage(&mut start, 1);
        start.push(b'}');
        Self { start }
    }

    /// The opening: `message_start`, `content_block_start` (text), `ping`.
    pub(crate) fn open(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start);
        out.extend_from_slice(OPEN_TAIL);
    }

    /// A `content_block_delta` (`text_delta`) carrying `piece`.
    pub(crate) fn token(out: &mut Vec<u8>, piece: &str) {
        match canonical_index(piece) {
            Some(i) => out.extend_from_slice(&DELTAS[i]),
            None => delta(out, piece),
        }
    }

    /// `message_delta`: the stop reason and the usage of `tokens` output tokens.
    pub(crate) fn message_delta(out: &mut Vec<u8>, tokens: usize) {
        let _ = write!(
            out,
            "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{tokens}}}}}\n\n"
        );
    }
}

/// Anthropic's error `type` and usual message for a status.
pub(crate) fn status_defaults(status: u16, model: &str) -> (Cow<'static, str>, &'static str) {
    let (message, kind) = match status {
        400 => ("max_tokens: Field required", "invalid_request_error"),
        401 => ("invalid x-api-key", "authentication_error"),
        403 => (
            "Your API key does not have permission to use the specified resource.",
            "permission_error",
        ),
        404 => return (Cow::Owned(format!("model: {model}")), "not_found_error"),
        413 => (
            "Request exceeds the maximum allowed number of bytes.",
            "request_too_large",
        ),
        429 => (
            "This request would exceed the rate limit for your organization. Please slow down.",
            "rate_limit_error",
        ),
        504 => ("Request timed out.", "timeout_error"),
        503 | 529 => ("Overloaded", "overloaded_error"),
        s if (400..500).contains(&s) => ("The request was rejected.", "invalid_request_error"),
        _ => ("Internal server error", "api_error"),
    };
    (Cow::Borrowed(message), kind)
}

/// An Anthropic-shaped error body.
pub(crate) fn error_body(message: &str, kind: &str) -> Bytes {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn bodies_are_messages() {
        let body: Value = serde_json::from_slice(&completion("c\"x", answer::tokens())).unwrap();
        assert_eq!(body["type"], "message");
        assert_eq!(body["role"], "assistant");
        assert_eq!(body["model"], "c\"x");
        assert_eq!(body["content"][0]["type"], "text");
        assert_eq!(body["content"][0]["text"], answer::CANONICAL_ANSWER);
        assert_eq!(body["stop_reason"], "end_turn");
        assert_eq!(body["usage"]["input_tokens"], PROMPT_TOKENS);
        assert_eq!(body["usage"]["output_tokens"], 60);
        let short = answer::continuation(Some(answer::prefix(58)));
        let body: Value = serde_json::from_slice(&completion("c", &short)).unwrap();
        assert_eq!(body["content"][0]["text"], " and why.");
        assert_eq!(body["usage"]["output_tokens"], 2);
        let err: Value = serde_json::from_slice(ERROR_BODY).unwrap();
        assert_eq!(err["error"]["type"], "overloaded_error");
        let (message, kind) = status_defaults(404, "claude-x");
        let err: Value = serde_json::from_slice(&error_body(&message, kind)).unwrap();
        assert_eq!(
            err,
            json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}})
        );
    }

    #[test]
    fn events_are_anthropic_events() {
        let e = Events::new("claude");
        let mut out = Vec::new();
        e.open(&mut out);
        Events::token(&mut out, answer::tokens()[1]);
        Events::token(&mut out, "way");
        out.extend_from_slice(BLOCK_STOP_EVENT);
        Events::message_delta(&mut out, 2);
        out.extend_from_slice(STOP_EVENT);
        let text = String::from_utf8(out).unwrap();
        let frames: Vec<(String, Value)> = text
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| {
                let (event, data) = f.split_once('\n').unwrap();
                let data: Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                (event.strip_prefix("event: ").unwrap().to_owned(), data)
            })
            .collect();
        let names: Vec<&str> = frames.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        assert!(frames.iter().all(|(n, d)| d["type"] == n.as_str()));
        assert_eq!(frames[0].1["message"]["model"], "claude");
        assert_eq!(frames[0].1["message"]["content"], json!([]));
        assert_eq!(
            frames[0].1["message"]["usage"]["input_tokens"],
            PROMPT_TOKENS
        );
        assert_eq!(
            frames[3].1["delta"],
            json!({"type": "text_delta", "text": " gateway"})
        );
        assert_eq!(frames[4].1["delta"]["text"], "way");
        assert_eq!(frames[6].1["delta"]["stop_reason"], "end_turn");
        assert_eq!(frames[6].1["usage"]["output_tokens"], 2);
    }

    #[test]
    fn requests_and_prefills() {
        let r: Request = serde_json::from_str(
            r#"{"model":"c","max_tokens":64,"stream":true,"system":[{"type":"text","text":"s"}],
                "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},
                            {"role":"assistant","content":"A gate"}]}"#,
        )
        .unwrap();
        assert!(r.stream);
        assert_eq!(r.prefill().as_deref(), Some("A gate"));
        let r: Request =
            serde_json::from_str(r#"{"model":"c","messages":[{"role":"user","content":"hi"}]}"#)
                .unwrap();
        assert!(!r.stream && r.prefill().is_none());
    }
}
