//! The OpenAI Responses API (`POST /v1/responses`) on the wire, as faultline speaks it: the
//! request fields read, the `response` object, and the streamed events (`event:` + `data:`
//! frames, each with its `sequence_number`). Built like chat's: static pieces preserialized
//! once, the model encoded once per request, the canonical answer's frames ready-made.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::Write as _;
use std::sync::LazyLock;

use bytes::Bytes;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{canonical_index, json_str, Content};
use crate::answer::{self, PROMPT_TOKENS};

/// The `id` of every response's one output message.
const ITEM_ID: &str = "msg_faultline";

/// The request fields faultline reads.
#[derive(Debug, Deserialize)]
pub(crate) struct Request<'a> {
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, borrow)]
    pub input: Option<Input<'a>>,
}

/// `input`: a list of items, or anything else (a string) that has no prefill.
#[derive(Debug)]
pub(crate) enum Input<'a> {
    Items(Vec<Item<'a>>),
    Other,
}

/// By the JSON type, without buffering (`#[serde(untagged)]` would copy the whole input
/// before trying each variant: a third of the throughput, measured with wrk).
impl<'de: 'a, 'a> Deserialize<'de> for Input<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Input<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of input items")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Input::Items(items))
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Input::Other)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Input::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An input item: a message has a role and content; other items (`function_call`, …) have
/// neither, as far as faultline cares.
#[derive(Debug, Deserialize)]
pub(crate) struct Item<'a> {
    #[serde(default, borrow)]
    pub role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub content: Option<Content<'a>>,
}

impl Request<'_> {
    /// The assistant prefill: the last input item's text when it is an `assistant` message.
    pub(crate) fn prefill(&self) -> Option<String> {
        let Some(Input::Items(items)) = &self.input else {
            return None;
        };
        let last = items
            .last()
            .filter(|i| i.role.as_deref() == Some("assistant"))?;
        Some(super::content_text(last.content.as_ref()))
    }
}

/// Everything before the model in a `response` object.
const RESPONSE_HEAD: &str =
    r#"{"id":"resp_faultline","object":"response","created_at":1700000000,"model":"#;

/// The output message item, `status` and the text (a JSON string) given.
fn item(out: &mut Vec<u8>, status: &str, text_json: Option<&[u8]>) {
    out.extend_from_slice(br#"{"id":""#);
    out.extend_from_slice(ITEM_ID.as_bytes());
    out.extend_from_slice(br#"","type":"message","status":""#);
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(br#"","role":"assistant","content":["#);
    if let Some(text) = text_json {
        part(out, text);
    }
    out.extend_from_slice(b"]}");
}

/// An `output_text` content part saying `text_json`.
fn part(out: &mut Vec<u8>, text_json: &[u8]) {
    out.extend_from_slice(br#"{"type":"output_text","annotations":[],"logprobs":[],"text":"#);
    out.extend_from_slice(text_json);
    out.push(b'}');
}

/// The `error` of a failed response.
const FAILURE: &[u8] =
    br#"{"code":"server_error","message":"The server had an error while processing your request."}"#;

/// The `response` object's fields after the model. `output`: the message's text (a JSON
/// string) and its token count, for a completed response; `None` while in progress.
fn response_tail(out: &mut Vec<u8>, status: &str, output: Option<(&[u8], usize)>) {
    out.extend_from_slice(br#","status":""#);
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(br#"","background":false,"error":"#);
    out.extend_from_slice(if status == "failed" { FAILURE } else { b"null" });
    out.extend_from_slice(
        br#","incomplete_details":null,"instructions":null,"max_output_tokens":null,"output":["#,
    );
    if let Some((text, _)) = output {
        item(out, "completed", Some(text));
    }
    out.extend_from_slice(br#"],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":"#);
    match output {
        Some((_, tokens)) => {
            let _ = write!(
                out,
                r#"{{"input_tokens":{PROMPT_TOKENS},"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{tokens},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
                PROMPT_TOKENS + tokens as u64
            );
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","user":null,"metadata":{}}"#);
}

/// The canonical answer as a JSON string.
static CANONICAL_TEXT: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    json_str(&mut out, answer::CANONICAL_ANSWER);
    out
});

/// The tail of a completed response saying the whole canonical answer.
static CANONICAL_TAIL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    response_tail(
        &mut out,
        "completed",
        Some((&CANONICAL_TEXT, answer::token_count())),
    );
    out
});

/// The tail of a response in progress (no output, no usage yet).
static IN_PROGRESS_TAIL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    response_tail(&mut out, "in_progress", None);
    out
});

/// The text of `pieces` as a JSON string: ready-made for the whole canonical answer.
fn text_json(pieces: &[&str]) -> Cow<'static, [u8]> {
    if pieces.len() == answer::token_count() {
        Cow::Borrowed(CANONICAL_TEXT.as_slice())
    } else {
        let mut out = Vec::new();
        json_str(&mut out, &pieces.concat());
        Cow::Owned(out)
    }
}

/// A completed `response` body for `model` saying the `pieces` (one token each).
pub(crate) fn completion(model: &str, pieces: &[&str]) -> Bytes {
    let mut out = Vec::with_capacity(RESPONSE_HEAD.len() + model.len() + CANONICAL_TAIL.len() + 8);
    out.extend_from_slice(RESPONSE_HEAD.as_bytes());
    json_str(&mut out, model);
    if pieces.len() == answer::token_count() {
        out.extend_from_slice(&CANONICAL_TAIL);
    } else {
        response_tail(
            &mut out,
            "completed",
            Some((&text_json(pieces), pieces.len())),
        );
    }
    Bytes::from(out)
}

/// A failed `response` body (a 200 whose response says `status: failed`, with OpenAI's
/// `server_error`).
pub(crate) fn failed(model: &str) -> Bytes {
    let mut out = Vec::from(RESPONSE_HEAD);
    json_str(&mut out, model);
    response_tail(&mut out, "failed", None);
    Bytes::from(out)
}

/// `event: response.output_text.delta` up to the delta text.
const DELTA_HEAD: &[u8] = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_faultline\",\"output_index\":0,\"content_index\":0,\"delta\":";

/// A delta frame from the delta text to the sequence number.
fn delta_middle(out: &mut Vec<u8>, piece: &str) {
    json_str(out, piece);
    out.extend_from_slice(br#","logprobs":[],"sequence_number":"#);
}

/// The middle of the delta frame, per canonical token.
static DELTA_MIDDLES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    answer::tokens()
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            delta_middle(&mut out, t);
            out
        })
        .collect()
});

/// The frame that breaks a stream: a delta whose data is not JSON.
const MALFORMED: &[u8] = b"event: response.output_text.delta\ndata: {not json\n\n";

/// Builds the events of one streamed response, numbering them.
pub(crate) struct Events {
    /// The model as a JSON string.
    model: Vec<u8>,
    /// The next event's `sequence_number`.
    seq: Cell<u64>,
}

impl Events {
    /// Events for a response from `model`.
    pub(crate) fn new(model: &str) -> Self {
        let mut json = Vec::with_capacity(model.len() + 2);
        json_str(&mut json, model);
        Self {
            model: json,
            seq: Cell::new(0),
        }
    }

    fn next_seq(&self) -> u64 {
        let n = self.seq.get();
        self.seq.set(n + 1);
        n
    }

    /// `event: NAME\ndata: {"type":"NAME",` — what every frame starts with.
    fn open_frame(out: &mut Vec<u8>, name: &str) {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\ndata: {\"type\":\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\",");
    }

    /// `"sequence_number":N}` and the frame's end.
    fn close_frame(&self, out: &mut Vec<u8>) {
        let _ = write!(out, "\"sequence_number\":{}}}\n\n", self.next_seq());
    }

    /// A frame carrying the whole `response` object (tail after the model given).
    fn response_frame(&self, out: &mut Vec<u8>, name: &str, tail: &[u8]) {
        Self::open_frame(out, name);
        out.extend_from_slice(b"\"response\":");
        out.extend_from_slice(RESPONSE_HEAD.as_bytes());
        out.extend_from_slice(&self.model);
        out.extend_from_slice(tail);
        out.push(b',');
        self.close_frame(out);
    }

    /// `"item_id":…,"output_index":0,"content_index":0,`
    fn content_ids(out: &mut Vec<u8>) {
        out.extend_from_slice(br#""item_id":"msg_faultline","output_index":0,"content_index":0,"#);
    }

    /// The opening: `response.created`, `response.in_progress`,
    /// `response.output_item.added`, `response.content_part.added`.
    pub(crate) fn open(&self, out: &mut Vec<u8>) {
        self.response_frame(out, "response.created", &IN_PROGRESS_TAIL);
        self.response_frame(out, "response.in_progress", &IN_PROGRESS_TAIL);
        Self::open_frame(out, "response.output_item.added");
        out.extend_from_slice(br#""output_index":0,"item":"#);
        item(out, "in_progress", None);
        out.push(b',');
        self.close_frame(out);
        Self::open_frame(out, "response.content_part.added");
        Self::content_ids(out);
        out.extend_from_slice(br#""part":"#);
        part(out, b"\"\"");
        out.push(b',');
        self.close_frame(out);
    }

    /// A `response.output_text.delta` carrying `piece`.
    pub(crate) fn token(&self, out: &mut Vec<u8>, piece: &str) {
        out.extend_from_slice(DELTA_HEAD);
        match canonical_index(piece) {
            Some(i) => out.extend_from_slice(&DELTA_MIDDLES[i]),
            None => delta_middle(out, piece),
        }
        let _ = write!(out, "{}}}\n\n", self.next_seq());
    }

    /// A delta frame that is not JSON.
    pub(crate) fn malformed(&self, out: &mut Vec<u8>) {
        self.next_seq();
        out.extend_from_slice(MALFORMED);
    }

    /// An `error` event (OpenAI's `server_error`), as sent when a stream fails.
    pub(crate) fn error(&self, out: &mut Vec<u8>) {
        Self::open_frame(out, "error");
        out.extend_from_slice(br#""code":"server_error","message":"The server had an error while processing your request.","param":null,"#);
        self.close_frame(out);
    }

    /// The text is done: `response.output_text.done`, `response.content_part.done`,
    /// `response.output_item.done`, each with the whole text of `pieces`.
    pub(crate) fn finish(&self, out: &mut Vec<u8>, pieces: &[&str]) {
        let text = text_json(pieces);
        Self::open_frame(out, "response.output_text.done");
        Self::content_ids(out);
        out.extend_from_slice(br#""text":"#);
        out.extend_from_slice(&text);
        out.extend_from_slice(br#","logprobs":[],"#);
        self.close_frame(out);
        Self::open_frame(out, "response.content_part.done");
        Self::content_ids(out);
        out.extend_from_slice(br#""part":"#);
        part(out, &text);
        out.push(b',');
        self.close_frame(out);
        Self::open_frame(out, "response.output_item.done");
        out.extend_from_slice(br#""output_index":0,"item":"#);
        item(out, "completed", Some(&text));
        out.push(b',');
        self.close_frame(out);
    }

    /// `response.completed`: the whole response, with its usage.
    pub(crate) fn completed(&self, out: &mut Vec<u8>, pieces: &[&str]) {
        if pieces.len() == answer::token_count() {
            self.response_frame(out, "response.completed", &CANONICAL_TAIL);
        } else {
            let mut tail = Vec::new();
            response_tail(
                &mut tail,
                "completed",
                Some((&text_json(pieces), pieces.len())),
            );
            self.response_frame(out, "response.completed", &tail);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// (event name, data) of each frame.
    fn frames(bytes: &[u8]) -> Vec<(String, Value)> {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| {
                let (event, data) = f.split_once('\n').unwrap();
                let name = event.strip_prefix("event: ").unwrap().to_owned();
                (
                    name,
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn bodies_are_response_objects() {
        let body: Value = serde_json::from_slice(&completion("m\"x", answer::tokens())).unwrap();
        assert_eq!(body["object"], "response");
        assert_eq!(body["model"], "m\"x");
        assert_eq!(body["status"], "completed");
        assert_eq!(body["output"][0]["type"], "message");
        assert_eq!(body["output"][0]["content"][0]["type"], "output_text");
        assert_eq!(
            body["output"][0]["content"][0]["text"],
            answer::CANONICAL_ANSWER
        );
        assert_eq!(body["usage"]["input_tokens"], PROMPT_TOKENS);
        assert_eq!(body["usage"]["output_tokens"], 60);
        assert_eq!(body["usage"]["total_tokens"], PROMPT_TOKENS + 60);
        assert_eq!(body["usage"]["input_tokens_details"]["cached_tokens"], 0);
        assert_eq!(
            body["usage"]["output_tokens_details"]["reasoning_tokens"],
            0
        );
        let short = answer::continuation(Some(answer::prefix(58)));
        let body: Value = serde_json::from_slice(&completion("m", &short)).unwrap();
        assert_eq!(body["output"][0]["content"][0]["text"], " and why.");
        assert_eq!(body["usage"]["output_tokens"], 2);
        let body: Value = serde_json::from_slice(&failed("m")).unwrap();
        assert_eq!(body["status"], "failed");
        assert_eq!(body["error"]["code"], "server_error");
    }

    #[test]
    fn events_are_numbered_response_events() {
        let e = Events::new("gpt");
        let pieces = [answer::tokens()[0], "way"];
        let mut out = Vec::new();
        e.open(&mut out);
        e.token(&mut out, pieces[0]);
        e.token(&mut out, pieces[1]);
        e.finish(&mut out, &pieces);
        e.completed(&mut out, &pieces);
        let frames = frames(&out);
        let names: Vec<&str> = frames.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, (name, data)) in frames.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], i);
        }
        assert_eq!(frames[0].1["response"]["status"], "in_progress");
        assert_eq!(frames[0].1["response"]["model"], "gpt");
        assert_eq!(frames[4].1["delta"], "A");
        assert_eq!(frames[5].1["delta"], "way");
        assert_eq!(frames[6].1["text"], "Away");
        assert_eq!(frames[8].1["item"]["content"][0]["text"], "Away");
        let done = &frames[9].1["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["output"][0]["content"][0]["text"], "Away");
        assert_eq!(done["usage"]["output_tokens"], 2);
    }

    #[test]
    fn requests_and_prefills() {
        let r: Request = serde_json::from_str(
            r#"{"model":"p","stream":true,"input":[
                {"role":"user","content":"hi"},
                {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"A gate"}]}]}"#,
        )
        .unwrap();
        assert!(r.stream);
        assert_eq!(r.prefill().as_deref(), Some("A gate"));
        let r: Request = serde_json::from_str(r#"{"model":"p","input":"hi"}"#).unwrap();
        assert!(!r.stream && r.prefill().is_none());
    }
}
