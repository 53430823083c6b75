//! The APIs on the wire, as faultline speaks them: the few request fields it reads, and
//! response bodies and SSE events built from preserialized pieces (only the model name
//! and, for continuations, the text are encoded per request). OpenAI Chat Completions is
//! here; the Responses API is in `wire/responses.rs`, Anthropic Messages in
//! `wire/messages.rs`; [`Api`] names them and [`Frames`] streams in any of them.

use std::borrow::Cow;
use std::sync::LazyLock;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::answer::{self, PROMPT_TOKENS};

pub(crate) mod messages;
pub(crate) mod responses;

/// The API a request came in on (and is answered in). JSON: `"chat"`, `"responses"`,
/// `"messages"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    #[default]
    Chat,
    /// The OpenAI Responses API, `POST /v1/responses`.
    Responses,
    /// Anthropic Messages, `POST /v1/messages`.
    Messages,
}

/// What faultline reads from a request, whatever its API.
pub(crate) struct Asked<'a> {
    pub model: Cow<'a, str>,
    pub stream: bool,
    /// Chat's `stream_options.include_usage`; always for the other APIs (their streams
    /// always end with usage).
    pub include_usage: bool,
    pub prefill: Option<String>,
}

/// Parse a request `body` of `api`.
pub(crate) fn parse(api: Api, body: &[u8]) -> Result<Asked<'_>, serde_json::Error> {
    Ok(match api {
        Api::Chat => {
            let r: ChatRequest = serde_json::from_slice(body)?;
            let prefill = r.prefill();
            let include_usage = r.include_usage();
            Asked {
                model: r.model,
                stream: r.stream,
                include_usage,
                prefill,
            }
        }
        Api::Responses => {
            let r: responses::Request = serde_json::from_slice(body)?;
            let prefill = r.prefill();
            Asked {
                model: r.model,
                stream: r.stream,
                include_usage: true,
                prefill,
            }
        }
        Api::Messages => {
            let r: messages::Request = serde_json::from_slice(body)?;
            let prefill = r.prefill();
            Asked {
                model: r.model,
                stream: r.stream,
                include_usage: true,
                prefill,
            }
        }
    })
}

/// A healthy plain body in `api` for `model` saying the `pieces`.
pub(crate) fn plain(api: Api, model: &str, pieces: &[&str]) -> Bytes {
    match api {
        Api::Chat => completion(model, pieces),
        Api::Responses => responses::completion(model, pieces),
        Api::Messages => messages::completion(model, pieces),
    }
}

/// The 200 body of an in-band error (`error_event` on a plain request): chat's error
/// object, a failed `response`, Anthropic's error.
pub(crate) fn plain_error(api: Api, model: &str) -> Bytes {
    match api {
        Api::Chat => Bytes::from_static(ERROR_BODY),
        Api::Responses => responses::failed(model),
        Api::Messages => Bytes::from_static(messages::ERROR_BODY),
    }
}

/// The streamed events of one response, in its API.
pub(crate) enum Frames {
    Chat(Events),
    Responses(responses::Events),
    Messages(messages::Events),
}

impl Frames {
    /// Frames for a response from `model` in `api`.
    pub(crate) fn new(api: Api, model: &str) -> Self {
        match api {
            Api::Chat => Self::Chat(Events::new(model)),
            Api::Responses => Self::Responses(responses::Events::new(model)),
            Api::Messages => Self::Messages(messages::Events::new(model)),
        }
    }

    /// What a stream opens with before any text: chat's role chunk; Responses'
    /// `response.created` … `response.content_part.added`; Messages' `message_start`,
    /// `content_block_start`, `ping`.
    pub(crate) fn open(&self, out: &mut Vec<u8>) {
        match self {
            Self::Chat(e) => e.role(out),
            Self::Responses(e) => e.open(out),
            Self::Messages(e) => e.open(out),
        }
    }

    /// One token's event carrying `piece`.
    pub(crate) fn token(&self, out: &mut Vec<u8>, piece: &str) {
        match self {
            Self::Chat(e) => e.token(out, piece),
            Self::Responses(e) => e.token(out, piece),
            Self::Messages(_) => messages::Events::token(out, piece),
        }
    }

    /// An event whose data is not JSON.
    pub(crate) fn malformed(&self, out: &mut Vec<u8>) {
        match self {
            Self::Chat(_) => out.extend_from_slice(MALFORMED_EVENT),
            Self::Responses(e) => e.malformed(out),
            Self::Messages(_) => out.extend_from_slice(messages::MALFORMED_EVENT),
        }
    }

    /// The API's in-band error event.
    pub(crate) fn error(&self, out: &mut Vec<u8>) {
        match self {
            Self::Chat(_) => out.extend_from_slice(ERROR_EVENT),
            Self::Responses(e) => e.error(out),
            Self::Messages(_) => out.extend_from_slice(messages::ERROR_EVENT),
        }
    }

    /// The text is complete: chat's finish chunk; Responses' `output_text.done`,
    /// `content_part.done`, `output_item.done`; Messages' `content_block_stop`.
    pub(crate) fn finish(&self, out: &mut Vec<u8>, pieces: &[&str]) {
        match self {
            Self::Chat(e) => e.finish(out),
            Self::Responses(e) => e.finish(out, pieces),
            Self::Messages(_) => out.extend_from_slice(messages::BLOCK_STOP_EVENT),
        }
    }

    /// The usage: chat's usage chunk; Responses' `response.completed`; Messages'
    /// `message_delta` (stop reason and usage).
    pub(crate) fn usage(&self, out: &mut Vec<u8>, pieces: &[&str]) {
        match self {
            Self::Chat(e) => e.usage(out, pieces.len()),
            Self::Responses(e) => e.completed(out, pieces),
            Self::Messages(_) => messages::Events::message_delta(out, pieces.len()),
        }
    }

    /// The end marker: chat's `[DONE]`, Messages' `message_stop` (Responses has none:
    /// `response.completed` is last).
    pub(crate) fn done(&self, out: &mut Vec<u8>) {
        match self {
            Self::Chat(_) => out.extend_from_slice(DONE_EVENT),
            Self::Responses(_) => {}
            Self::Messages(_) => out.extend_from_slice(messages::STOP_EVENT),
        }
    }
}

/// The `id` of every completion.
const ID: &str = "chatcmpl-faultline";
/// The `created` of every completion (fixed: answers are deterministic).
const CREATED: u64 = 1_700_000_000;

/// The request fields faultline reads.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest<'a> {
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default, borrow)]
    pub messages: Vec<Message<'a>>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// One message: its role and text.
#[derive(Debug, Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(borrow)]
    pub role: Cow<'a, str>,
    #[serde(default, borrow)]
    pub content: Option<Content<'a>>,
}

/// A string, or a list of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<Part<'a>>),
}

/// A content part (only text parts carry text).
#[derive(Debug, Deserialize)]
pub(crate) struct Part<'a> {
    #[serde(default, borrow)]
    pub text: Option<Cow<'a, str>>,
}

impl ChatRequest<'_> {
    /// The assistant prefill: the last message's text when its role is `assistant`.
    pub(crate) fn prefill(&self) -> Option<String> {
        let last = self.messages.last().filter(|m| m.role == "assistant")?;
        Some(content_text(last.content.as_ref()))
    }

    /// `stream_options.include_usage`.
    pub(crate) fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage)
    }
}

/// The text of a message's content (its text parts, concatenated).
fn content_text(content: Option<&Content<'_>>) -> String {
    match content {
        None => String::new(),
        Some(Content::Text(t)) => t.to_string(),
        Some(Content::Parts(parts)) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
    }
}

/// `s` as a JSON string literal (quoted, escaped).
fn json_str(out: &mut Vec<u8>, s: &str) {
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

/// `"usage":{...}` for a response of `completion` tokens.
fn usage(out: &mut Vec<u8>, completion: usize) {
    let value = json!({
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": completion,
        "total_tokens": PROMPT_TOKENS + completion as u64,
    });
    out.extend_from_slice(b"\"usage\":");
    if serde_json::to_writer(&mut *out, &value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Everything after the model in a plain completion of the whole canonical answer.
static CANONICAL_TAIL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    completion_tail(&mut out, answer::CANONICAL_ANSWER, answer::token_count());
    out
});

fn completion_tail(out: &mut Vec<u8>, text: &str, tokens: usize) {
    out.extend_from_slice(br#","choices":[{"index":0,"message":{"role":"assistant","content":"#);
    json_str(out, text);
    out.extend_from_slice(br#","refusal":null},"logprobs":null,"finish_reason":"stop"}],"#);
    usage(out, tokens);
    out.push(b'}');
}

/// A `chat.completion` body for `model` saying the `pieces` (one token each).
pub(crate) fn completion(model: &str, pieces: &[&str]) -> Bytes {
    let head = format!(r#"{{"id":"{ID}","object":"chat.completion","created":{CREATED},"model":"#);
    let mut out = Vec::with_capacity(head.len() + model.len() + CANONICAL_TAIL.len() + 8);
    out.extend_from_slice(head.as_bytes());
    json_str(&mut out, model);
    if pieces.len() == answer::token_count() {
        out.extend_from_slice(&CANONICAL_TAIL);
    } else {
        completion_tail(&mut out, &pieces.concat(), pieces.len());
    }
    Bytes::from(out)
}

/// Builds the SSE events of one streamed response (the model is encoded once).
pub(crate) struct Events {
    /// `data: {"id":…,"model":"…","choices":` — what every chunk starts with.
    head: Vec<u8>,
}

/// A token chunk's JSON after the head, per canonical token.
static TOKEN_TAILS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    answer::tokens()
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            token_tail(&mut out, t);
            out
        })
        .collect()
});

/// The index of `piece` among the canonical tokens, when it is one of those slices
/// (pieces are slices of [`answer::CANONICAL_ANSWER`], found by address).
fn canonical_index(piece: &str) -> Option<usize> {
    let tokens = answer::tokens();
    // The tokens' own start, not `CANONICAL_ANSWER.as_ptr()`: a `const` string may have a
    // different address at each use, so only the copy the tokens were cut from will do.
    let base = tokens.first()?.as_ptr() as usize;
    let offset = (piece.as_ptr() as usize).checked_sub(base)?;
    let i = tokens
        .binary_search_by_key(&offset, |t| t.as_ptr() as usize - base)
        .ok()?;
    (tokens[i].len() == piece.len()).then_some(i)
}

fn token_tail(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(br#"[{"index":0,"delta":{"content":"#);
    json_str(out, text);
    out.extend_from_slice(b"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}

/// The event that breaks a stream.
pub(crate) const MALFORMED_EVENT: &[u8] = b"data: {not json\n\n";
/// The end of a stream.
pub(crate) const DONE_EVENT: &[u8] = b"data: [DONE]\n\n";
/// An in-band error, as OpenAI sends one mid-stream.
pub(crate) const ERROR_EVENT: &[u8] = b"data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";
/// The same error object as a plain body.
pub(crate) const ERROR_BODY: &[u8] = b"{\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
/// A plain body that is not JSON.
pub(crate) const MALFORMED_BODY: &[u8] = b"{not json";

impl Events {
    /// Events for a response from `model`.
    pub(crate) fn new(model: &str) -> Self {
        let mut head = format!(
            r#"data: {{"id":"{ID}","object":"chat.completion.chunk","created":{CREATED},"model":"#
        )
        .into_bytes();
        json_str(&mut head, model);
        head.extend_from_slice(br#","choices":"#);
        Self { head }
    }

    /// The first chunk: the assistant role, no content.
    pub(crate) fn role(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(
            b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    }

    /// A content chunk carrying `piece`.
    pub(crate) fn token(&self, out: &mut Vec<u8>, piece: &str) {
        out.extend_from_slice(&self.head);
        match canonical_index(piece) {
            Some(i) => out.extend_from_slice(&TOKEN_TAILS[i]),
            None => token_tail(out, piece),
        }
    }

    /// The finish chunk (`finish_reason: "stop"`, empty delta).
    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(
            b"[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n",
        );
    }

    /// The usage chunk (`choices: []`) of a response of `tokens` tokens.
    pub(crate) fn usage(&self, out: &mut Vec<u8>, tokens: usize) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(b"[],");
        usage(out, tokens);
        out.extend_from_slice(b"}\n\n");
    }
}

/// An OpenAI-shaped error body.
pub(crate) fn error_body(
    message: &str,
    kind: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Bytes {
    let body = json!({
        "error": {"message": message, "type": kind, "param": param, "code": code}
    });
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

/// `GET /v1/models`.
pub(crate) fn model_list(models: &[String]) -> Bytes {
    let data: Vec<_> = models
        .iter()
        .map(|m| json!({"id": m, "object": "model", "created": CREATED, "owned_by": "faultline"}))
        .collect();
    Bytes::from(serde_json::to_vec(&json!({"object": "list", "data": data})).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn bodies_are_openai_shaped() {
        let body: Value = serde_json::from_slice(&completion("m\"x", answer::tokens())).unwrap();
        assert_eq!(body["model"], "m\"x");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            answer::CANONICAL_ANSWER
        );
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(body["usage"]["completion_tokens"], 60);
        assert_eq!(body["usage"]["total_tokens"], 60 + PROMPT_TOKENS);
        let short = answer::continuation(Some(answer::prefix(58)));
        let body: Value = serde_json::from_slice(&completion("m", &short)).unwrap();
        assert_eq!(body["usage"]["completion_tokens"], 2);
        assert_eq!(body["choices"][0]["message"]["content"], " and why.");
    }

    #[test]
    fn events_are_openai_chunks() {
        let e = Events::new("gpt");
        let mut out = Vec::new();
        e.role(&mut out);
        e.token(&mut out, answer::tokens()[1]);
        e.token(&mut out, "way");
        e.finish(&mut out);
        e.usage(&mut out, 3);
        let text = String::from_utf8(out).unwrap();
        let events: Vec<Value> = text
            .split("\n\n")
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::from_str(s.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        assert_eq!(events.len(), 5);
        assert!(events.iter().all(|e| e["model"] == "gpt"));
        assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(events[1]["choices"][0]["delta"]["content"], " gateway");
        assert_eq!(events[2]["choices"][0]["delta"]["content"], "way");
        assert_eq!(events[3]["choices"][0]["finish_reason"], "stop");
        assert_eq!(events[4]["choices"], serde_json::json!([]));
        assert_eq!(events[4]["usage"]["completion_tokens"], 3);
    }

    #[test]
    fn requests_and_prefills() {
        let r: ChatRequest = serde_json::from_str(
            r#"{"model":"p","stream":true,"stream_options":{"include_usage":true},
                "messages":[{"role":"user","content":"hi"},
                            {"role":"assistant","content":[{"type":"text","text":"A "},{"type":"text","text":"gate"}]}],
                "max_tokens":5}"#,
        )
        .unwrap();
        assert!(r.stream && r.include_usage());
        assert_eq!(r.prefill().as_deref(), Some("A gate"));
        let r: ChatRequest =
            serde_json::from_str(r#"{"model":"p","messages":[{"role":"user","content":"hi"}]}"#)
                .unwrap();
        assert!(!r.stream && r.prefill().is_none());
    }
}
