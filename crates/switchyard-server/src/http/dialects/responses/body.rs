//! The `response` object: what a plain answer returns, what a stream's `response.created`
//! and `response.completed` events carry, and what `GET /v1/responses/{id}` gives back.
//! Written by typed structs borrowing from the answer, with every field the official SDK's
//! `Response` type requires. Every object's keys are in sorted order: the response was once
//! built as a `serde_json::Value` tree (whose maps sort their keys), and the bytes a client
//! gets did not change when it stopped being one.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde_json::{Map, Value};
use switchyard::chat::{FinishReason, Thinking};
use switchyard::{ChatResponse, Usage};

use super::sealed;
use crate::http::dialects::ctx::SortedTrail;
use crate::http::dialects::flow::Trail;

/// What every event and body of one response shares: its id, its time and the request's
/// settings it echoes.
#[derive(Debug)]
pub(crate) struct Base {
    /// `resp_<random>`.
    pub id: String,
    /// Unix seconds the request arrived.
    pub created_at: u64,
    pub echo: Echo,
    /// Set once the answer is kept in the state backend (`store`).
    pub stored: AtomicBool,
}

/// The request's settings, echoed in the response as OpenAI does.
#[derive(Debug, Default)]
pub(crate) struct Echo {
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    /// The tool choice as sent (`None`: echoed as `"auto"`).
    pub tool_choice: Option<Value>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_output_tokens: Option<u32>,
    pub parallel_tool_calls: bool,
    pub metadata: Map<String, Value>,
    pub previous_response_id: Option<String>,
    pub text: EchoText,
    pub reasoning: EchoReasoning,
    pub store: bool,
    pub user: Option<String>,
    /// `top_logprobs` as the client sent it (0 when unset, as OpenAI echoes it).
    pub top_logprobs: u32,
    /// `reasoning.summary` asked for one: reasoning items carry the reasoning text as
    /// their summary.
    pub reasoning_summary: bool,
    /// Reasoning items carry `encrypted_content` (the sealed format): the client asked
    /// for it (`include`), or the response is stored (its items may come back as input).
    pub sealed_reasoning: bool,
}

/// `text` as echoed: the output format.
#[derive(Debug, Default, Serialize)]
pub(crate) struct EchoText {
    pub format: EchoFormat,
}

/// `text.format` as echoed.
#[derive(Debug, Default)]
pub(crate) enum EchoFormat {
    #[default]
    Text,
    JsonObject,
    /// The `json_schema` format's object.
    JsonSchema(Value),
}

impl Serialize for EchoFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Kind {
            #[serde(rename = "type")]
            kind: &'static str,
        }
        match self {
            EchoFormat::Text => Kind { kind: "text" }.serialize(s),
            EchoFormat::JsonObject => Kind {
                kind: "json_object",
            }
            .serialize(s),
            EchoFormat::JsonSchema(v) => v.serialize(s),
        }
    }
}

/// `reasoning` as echoed.
#[derive(Debug, Default, Serialize)]
pub(crate) struct EchoReasoning {
    pub effort: Option<String>,
    pub summary: Option<String>,
}

impl Base {
    /// `msg_<id>`: the answer's message item.
    pub(crate) fn message_id(&self) -> String {
        let suffix = self.suffix();
        let mut id = String::with_capacity(4 + suffix.len());
        id.push_str("msg_");
        id.push_str(suffix);
        id
    }

    /// `fc_<id>_<n>`: the answer's `n`th function call item.
    pub(crate) fn call_id(&self, n: usize) -> String {
        format!("fc_{}_{n}", self.suffix())
    }

    /// `rs_<id>_<n>`: the answer's `n`th reasoning item.
    pub(crate) fn reasoning_id(&self, n: usize) -> String {
        format!("rs_{}_{n}", self.suffix())
    }

    /// A reasoning item for one reasoning block: its text as the summary when one was
    /// asked for (a redacted block has none to show), the block sealed in
    /// `encrypted_content` when that was asked for or the response is stored.
    pub(crate) fn reasoning_item<'a>(
        &self,
        id: impl Into<Cow<'a, str>>,
        block: &'a Thinking,
        status: &'a str,
    ) -> Item<'a> {
        let summary = if self.echo.reasoning_summary && !block.text.is_empty() {
            vec![SummaryPart::of(&block.text)]
        } else {
            Vec::new()
        };
        Item::Reasoning(ReasoningItem {
            encrypted_content: (self.echo.sealed_reasoning)
                .then(|| sealed::seal(std::slice::from_ref(block))),
            id: id.into(),
            status,
            summary,
            kind: "reasoning",
        })
    }

    fn suffix(&self) -> &str {
        self.id.trim_start_matches("resp_")
    }

    /// The response object with the given status and output (no usage, no `switchyard`).
    pub(crate) fn response<'a>(
        &'a self,
        model: &'a str,
        status: &'a str,
        output: Vec<Item<'a>>,
    ) -> ResponseObject<'a> {
        let e = &self.echo;
        ResponseObject {
            background: false,
            completed_at: None,
            created_at: self.created_at,
            error: None,
            id: &self.id,
            incomplete_details: None,
            instructions: e.instructions.as_deref(),
            max_output_tokens: e.max_output_tokens,
            max_tool_calls: (),
            metadata: &e.metadata,
            model,
            object: "response",
            output,
            parallel_tool_calls: e.parallel_tool_calls,
            previous_response_id: e.previous_response_id.as_deref(),
            reasoning: &e.reasoning,
            service_tier: "default",
            status,
            store: e.store,
            switchyard: None,
            // as a `Value` holds an f32: widened (0.7 is written 0.699999988079071)
            temperature: e.temperature.map(f64::from),
            text: &e.text,
            tool_choice: e.tool_choice.as_ref(),
            tools: &e.tools,
            top_logprobs: e.top_logprobs,
            top_p: e.top_p.map(f64::from),
            truncation: "disabled",
            usage: None,
            user: e.user.as_deref(),
        }
    }

    /// A finished answer: `completed`, or `incomplete` with the reason when the model
    /// stopped at the token limit or a content filter; usage and the `switchyard` object.
    pub(crate) fn finished<'a>(
        &'a self,
        resp: &'a ChatResponse,
        output: Vec<Item<'a>>,
    ) -> ResponseObject<'a> {
        let (status, reason) = outcome(resp);
        let mut body = self.response(&resp.model, status, output);
        body.completed_at = Some(match reason {
            Some(_) => None,
            None => Some(self.created_at + resp.latency.as_secs()),
        });
        body.incomplete_details = reason.map(|reason| Incomplete { reason });
        body.usage = resp.usage.as_ref().map(ResponseUsage::of);
        body.switchyard = Some(self.trail(resp));
        body
    }

    /// The `switchyard` object: who answered, the attempts, the cost, whether it was kept.
    pub(crate) fn trail<'a>(&self, resp: &'a ChatResponse) -> SortedTrail<'a> {
        SortedTrail {
            trail: Trail::of(resp),
            stored: Some(self.stored.load(Ordering::Acquire)),
        }
    }

    /// The output items of a whole answer: one reasoning item per reasoning block, its
    /// text as one message (when there is text, or nothing else; with the text's
    /// `logprobs`, and a `refusal` part when the model refused), then one item per
    /// function call.
    pub(crate) fn output<'a>(&self, resp: &'a ChatResponse) -> Vec<Item<'a>> {
        let status = item_status(resp);
        let mut items = Vec::with_capacity(1 + resp.thinking.len() + resp.tool_calls.len());
        for (n, block) in resp.thinking.iter().enumerate() {
            items.push(self.reasoning_item(self.reasoning_id(n), block, "completed"));
        }
        let refused = !resp.refusal.is_empty();
        if !resp.text.is_empty() || (resp.tool_calls.is_empty() && !refused) {
            let logprobs = (resp.logprobs.as_ref().and_then(|l| l.get("content")))
                .map_or(Logprobs::List(&[]), Logprobs::Value);
            let mut parts = Vec::with_capacity(1 + usize::from(refused));
            parts.push(Part::text(&resp.text, logprobs));
            if refused {
                parts.push(Part::refusal(&resp.refusal));
            }
            items.push(Item::message(self.message_id(), parts, status));
        } else if refused {
            let parts = vec![Part::refusal(&resp.refusal)];
            items.push(Item::message(self.message_id(), parts, status));
        }
        for (n, call) in resp.tool_calls.iter().enumerate() {
            items.push(Item::call(
                self.call_id(n),
                &call.id,
                &call.name,
                &call.arguments,
                "completed",
            ));
        }
        items
    }
}

/// The response object (see [`Base::response`], [`Base::finished`]); keys in sorted order.
#[derive(Serialize)]
pub(crate) struct ResponseObject<'a> {
    background: bool,
    /// Absent while in progress; `null` when incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<Option<u64>>,
    created_at: u64,
    pub error: Option<Failure>,
    id: &'a str,
    incomplete_details: Option<Incomplete>,
    instructions: Option<&'a str>,
    max_output_tokens: Option<u32>,
    /// `null`.
    max_tool_calls: (),
    metadata: &'a Map<String, Value>,
    model: &'a str,
    object: &'static str,
    output: Vec<Item<'a>>,
    parallel_tool_calls: bool,
    previous_response_id: Option<&'a str>,
    reasoning: &'a EchoReasoning,
    service_tier: &'static str,
    pub status: &'a str,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    switchyard: Option<SortedTrail<'a>>,
    temperature: Option<f64>,
    text: &'a EchoText,
    #[serde(serialize_with = "auto_unless_given")]
    tool_choice: Option<&'a Value>,
    tools: &'a [Value],
    top_logprobs: u32,
    top_p: Option<f64>,
    truncation: &'static str,
    usage: Option<ResponseUsage>,
    user: Option<&'a str>,
}

impl ResponseObject<'_> {
    /// The same bytes as its `Serialize` through `serde_json`, written by hand (the plain
    /// answer's body; see crates/switchyard-server/src/json_out.rs). Keys in the same
    /// sorted order; what the gateway does not model (metadata, tools, a tool choice, a
    /// JSON schema, log probabilities, a native provider's items) through `serde_json`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        out.extend_from_slice(b"{\"background\":");
        j::bool(out, self.background);
        if let Some(completed_at) = self.completed_at {
            out.extend_from_slice(b",\"completed_at\":");
            match completed_at {
                Some(n) => j::u64(out, n),
                None => j::null(out),
            }
        }
        out.extend_from_slice(b",\"created_at\":");
        j::u64(out, self.created_at);
        out.extend_from_slice(b",\"error\":");
        match &self.error {
            Some(f) => {
                out.extend_from_slice(b"{\"code\":");
                ours(out, f.code);
                out.extend_from_slice(b",\"message\":");
                j::value(out, &f.message);
                out.push(b'}');
            }
            None => j::null(out),
        }
        out.extend_from_slice(b",\"id\":");
        ours(out, self.id);
        out.extend_from_slice(b",\"incomplete_details\":");
        match &self.incomplete_details {
            Some(i) => {
                out.extend_from_slice(b"{\"reason\":");
                ours(out, i.reason);
                out.push(b'}');
            }
            None => j::null(out),
        }
        out.extend_from_slice(b",\"instructions\":");
        j::opt_str(out, self.instructions);
        out.extend_from_slice(b",\"max_output_tokens\":");
        match self.max_output_tokens {
            Some(n) => j::u64(out, u64::from(n)),
            None => j::null(out),
        }
        out.extend_from_slice(b",\"max_tool_calls\":null,\"metadata\":");
        if self.metadata.is_empty() {
            out.extend_from_slice(b"{}");
        } else {
            j::value(out, self.metadata);
        }
        out.extend_from_slice(b",\"model\":");
        j::str(out, self.model);
        out.extend_from_slice(b",\"object\":");
        ours(out, self.object);
        out.extend_from_slice(b",\"output\":[");
        for (i, item) in self.output.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item.write_json(out);
        }
        out.extend_from_slice(b"],\"parallel_tool_calls\":");
        j::bool(out, self.parallel_tool_calls);
        out.extend_from_slice(b",\"previous_response_id\":");
        j::opt_str(out, self.previous_response_id);
        out.extend_from_slice(b",\"reasoning\":{\"effort\":");
        j::opt_str(out, self.reasoning.effort.as_deref());
        out.extend_from_slice(b",\"summary\":");
        j::opt_str(out, self.reasoning.summary.as_deref());
        out.extend_from_slice(b"},\"service_tier\":");
        ours(out, self.service_tier);
        out.extend_from_slice(b",\"status\":");
        ours(out, self.status);
        out.extend_from_slice(b",\"store\":");
        j::bool(out, self.store);
        if let Some(trail) = &self.switchyard {
            out.extend_from_slice(b",\"switchyard\":");
            trail.write_json(out);
        }
        out.extend_from_slice(b",\"temperature\":");
        j::opt_f64(out, self.temperature);
        out.extend_from_slice(b",\"text\":{\"format\":");
        match &self.text.format {
            EchoFormat::Text => out.extend_from_slice(b"{\"type\":\"text\"}"),
            EchoFormat::JsonObject => out.extend_from_slice(b"{\"type\":\"json_object\"}"),
            EchoFormat::JsonSchema(v) => j::value(out, v),
        }
        out.extend_from_slice(b"},\"tool_choice\":");
        match self.tool_choice {
            Some(v) => j::value(out, v),
            None => out.extend_from_slice(b"\"auto\""),
        }
        out.extend_from_slice(b",\"tools\":");
        if self.tools.is_empty() {
            out.extend_from_slice(b"[]");
        } else {
            j::value(out, self.tools);
        }
        out.extend_from_slice(b",\"top_logprobs\":");
        j::u64(out, u64::from(self.top_logprobs));
        out.extend_from_slice(b",\"top_p\":");
        j::opt_f64(out, self.top_p);
        out.extend_from_slice(b",\"truncation\":");
        ours(out, self.truncation);
        out.extend_from_slice(b",\"usage\":");
        match &self.usage {
            Some(u) => {
                out.extend_from_slice(b"{\"input_tokens\":");
                j::u64(out, u.input_tokens);
                out.extend_from_slice(b",\"input_tokens_details\":{\"cache_write_tokens\":");
                j::u64(out, u.input_tokens_details.cache_write_tokens);
                out.extend_from_slice(b",\"cached_tokens\":");
                j::u64(out, u.input_tokens_details.cached_tokens);
                out.extend_from_slice(b"},\"output_tokens\":");
                j::u64(out, u.output_tokens);
                out.extend_from_slice(b",\"output_tokens_details\":{\"reasoning_tokens\":");
                j::u64(out, u.output_tokens_details.reasoning_tokens);
                out.extend_from_slice(b"},\"total_tokens\":");
                j::u64(out, u.total_tokens);
                out.push(b'}');
            }
            None => j::null(out),
        }
        out.extend_from_slice(b",\"user\":");
        j::opt_str(out, self.user);
        out.push(b'}');
    }
}

impl Item<'_> {
    /// As its `Serialize` writes it (see [`ResponseObject::write_json`]).
    fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        match self {
            Item::Reasoning(r) => {
                out.push(b'{');
                if let Some(sealed) = &r.encrypted_content {
                    out.extend_from_slice(b"\"encrypted_content\":");
                    j::str(out, sealed);
                    out.push(b',');
                }
                out.extend_from_slice(b"\"id\":");
                ours(out, &r.id);
                out.extend_from_slice(b",\"status\":");
                ours(out, r.status);
                out.extend_from_slice(b",\"summary\":[");
                for (i, part) in r.summary.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"text\":");
                    j::str(out, part.text);
                    out.extend_from_slice(b",\"type\":");
                    ours(out, part.kind);
                    out.push(b'}');
                }
                out.extend_from_slice(b"],\"type\":");
                ours(out, r.kind);
                out.push(b'}');
            }
            Item::Message(m) => {
                out.extend_from_slice(b"{\"content\":[");
                for (i, part) in m.content.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    part.write_json(out);
                }
                out.extend_from_slice(b"],\"id\":");
                ours(out, &m.id);
                out.extend_from_slice(b",\"role\":");
                ours(out, m.role);
                out.extend_from_slice(b",\"status\":");
                ours(out, m.status);
                out.extend_from_slice(b",\"type\":");
                ours(out, m.kind);
                out.push(b'}');
            }
            Item::Call(c) => {
                out.extend_from_slice(b"{\"arguments\":");
                j::str(out, c.arguments);
                out.extend_from_slice(b",\"call_id\":");
                j::str(out, c.call_id);
                out.extend_from_slice(b",\"id\":");
                ours(out, &c.id);
                out.extend_from_slice(b",\"name\":");
                j::str(out, c.name);
                out.extend_from_slice(b",\"status\":");
                ours(out, c.status);
                out.extend_from_slice(b",\"type\":");
                ours(out, c.kind);
                out.push(b'}');
            }
            Item::Native(v) => j::value(out, *v),
        }
    }
}

impl Part<'_> {
    /// As its `Serialize` writes it.
    fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        match self {
            Part::Text {
                annotations: [],
                logprobs,
                text,
                kind,
            } => {
                out.extend_from_slice(b"{\"annotations\":[],\"logprobs\":");
                match logprobs {
                    Logprobs::Value(v) => j::value(out, *v),
                    Logprobs::List([]) => out.extend_from_slice(b"[]"),
                    Logprobs::List(list) => j::value(out, *list),
                }
                out.extend_from_slice(b",\"text\":");
                j::str(out, text);
                out.extend_from_slice(b",\"type\":");
                ours(out, kind);
                out.push(b'}');
            }
            Part::Refusal { refusal, kind } => {
                out.extend_from_slice(b"{\"refusal\":");
                j::str(out, refusal);
                out.extend_from_slice(b",\"type\":");
                ours(out, kind);
                out.push(b'}');
            }
        }
    }
}

/// A string of the gateway's own as a JSON string, copied as is: a constant (a status, a
/// type, a role) or an id it made (`resp_`, `msg_`, `fc_`, `rs_` and hex digits), none of
/// whose bytes needs escaping: the escaper's bytes (serde_json's) without its look, which
/// costs as much as the copy for a few bytes.
fn ours(out: &mut Vec<u8>, s: &str) {
    debug_assert!(
        (s.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_'),
        "{s:?} is not the gateway's own"
    );
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// The tool choice as sent, `"auto"` when none was.
#[allow(clippy::ref_option)] // serde's `serialize_with` passes the field by reference
fn auto_unless_given<S: serde::Serializer>(v: &Option<&Value>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.serialize_str("auto"),
    }
}

/// A failed stream's `error`.
#[derive(Serialize)]
pub(crate) struct Failure {
    pub code: &'static str,
    pub message: Value,
}

/// `incomplete_details`.
#[derive(Serialize)]
struct Incomplete {
    reason: &'static str,
}

/// An output item: ours, or one a provider answering natively returned, as it did.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Item<'a> {
    Reasoning(ReasoningItem<'a>),
    Message(MessageItem<'a>),
    Call(CallItem<'a>),
    Native(&'a Value),
}

impl<'a> Item<'a> {
    /// An assistant message item with these content parts (`output_text`, `refusal`).
    pub(crate) fn message(
        id: impl Into<Cow<'a, str>>,
        content: Vec<Part<'a>>,
        status: &'a str,
    ) -> Self {
        Item::Message(MessageItem {
            content,
            id: id.into(),
            role: "assistant",
            status,
            kind: "message",
        })
    }

    /// A `function_call` item.
    pub(crate) fn call(
        id: impl Into<Cow<'a, str>>,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
        status: &'a str,
    ) -> Self {
        Item::Call(CallItem {
            arguments,
            call_id,
            id: id.into(),
            name,
            status,
            kind: "function_call",
        })
    }
}

#[derive(Serialize)]
pub(crate) struct ReasoningItem<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    encrypted_content: Option<String>,
    id: Cow<'a, str>,
    status: &'a str,
    summary: Vec<SummaryPart<'a>>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
pub(crate) struct MessageItem<'a> {
    content: Vec<Part<'a>>,
    id: Cow<'a, str>,
    role: &'static str,
    status: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
pub(crate) struct CallItem<'a> {
    arguments: &'a str,
    call_id: &'a str,
    id: Cow<'a, str>,
    name: &'a str,
    status: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// A message's content part.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Part<'a> {
    /// `output_text`.
    Text {
        annotations: [(); 0],
        logprobs: Logprobs<'a>,
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    /// `refusal`: the model's refusal message.
    Refusal {
        refusal: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

impl<'a> Part<'a> {
    /// An `output_text` content part.
    pub(crate) fn text(text: &'a str, logprobs: Logprobs<'a>) -> Self {
        Part::Text {
            annotations: [],
            logprobs,
            text,
            kind: "output_text",
        }
    }

    /// A `refusal` content part.
    pub(crate) fn refusal(refusal: &'a str) -> Self {
        Part::Refusal {
            refusal,
            kind: "refusal",
        }
    }
}

/// An `output_text` part's `logprobs`: the vendor's entries as it sent them, or a list.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Logprobs<'a> {
    Value(&'a Value),
    List(&'a [Value]),
}

/// A reasoning item's `summary_text` part.
#[derive(Serialize)]
pub(crate) struct SummaryPart<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> SummaryPart<'a> {
    pub(crate) fn of(text: &'a str) -> Self {
        Self {
            text,
            kind: "summary_text",
        }
    }
}

/// The response's status and, when incomplete, why.
pub(crate) fn outcome(resp: &ChatResponse) -> (&'static str, Option<&'static str>) {
    match resp.finish_reason {
        Some(FinishReason::Length) => ("incomplete", Some("max_output_tokens")),
        Some(FinishReason::ContentFilter) => ("incomplete", Some("content_filter")),
        _ => ("completed", None),
    }
}

/// A message item's status for this answer.
pub(crate) fn item_status(resp: &ChatResponse) -> &'static str {
    match outcome(resp) {
        ("incomplete", _) => "incomplete",
        _ => "completed",
    }
}

/// OpenAI's Responses usage object (`total_tokens` saturates).
#[derive(Serialize)]
pub(crate) struct ResponseUsage {
    input_tokens: u64,
    input_tokens_details: InputDetails,
    output_tokens: u64,
    output_tokens_details: OutputDetails,
    total_tokens: u64,
}

#[derive(Serialize)]
struct InputDetails {
    cache_write_tokens: u64,
    cached_tokens: u64,
}

#[derive(Serialize)]
struct OutputDetails {
    reasoning_tokens: u64,
}

impl ResponseUsage {
    pub(crate) fn of(u: &Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            input_tokens_details: InputDetails {
                cache_write_tokens: u.cache_write_tokens,
                cached_tokens: u.cached_input_tokens,
            },
            output_tokens: u.output_tokens,
            output_tokens_details: OutputDetails {
                reasoning_tokens: u.reasoning_tokens,
            },
            total_tokens: u.total_tokens(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use switchyard::chat::{Field, ToolCall};
    use switchyard::observe::{Attempt, Outcome};
    use switchyard::trail::SkipReason;
    use switchyard::{ErrorKind, Money};

    use super::*;

    /// What `ours` writes is what the escaper writes, for the strings it is given: every
    /// id `Base` makes and every status, type and role the answer holds.
    #[test]
    fn the_gateways_own_strings_need_no_escaping() {
        let base = Base {
            id: super::super::response_id(),
            created_at: 0,
            echo: Echo::default(),
            stored: AtomicBool::new(false),
        };
        let words = [
            "response",
            "default",
            "disabled",
            "completed",
            "incomplete",
            "in_progress",
            "max_output_tokens",
            "content_filter",
            "message",
            "assistant",
            "output_text",
            "refusal",
            "reasoning",
            "function_call",
            "summary_text",
        ];
        let ids = [
            base.id.clone(),
            base.message_id(),
            base.call_id(12),
            base.reasoning_id(3),
        ];
        for s in ids.iter().map(String::as_str).chain(words) {
            let (mut written, mut escaper) = (Vec::new(), Vec::new());
            ours(&mut written, s);
            crate::json_out::str(&mut escaper, s);
            assert_eq!(written, escaper, "{s:?}");
        }
    }

    /// The response object as it was built before it was written directly: a `Value`
    /// tree (kept here, verbatim but for names, as the reference the typed writer must
    /// match byte for byte).
    mod value_built {
        use serde_json::{json, Value};
        use switchyard::chat::Thinking;
        use switchyard::{ChatResponse, Usage};

        use super::super::{item_status, outcome, sealed, Base, EchoFormat, Ordering, Trail};

        pub fn reasoning_item(base: &Base, id: &str, block: &Thinking, status: &str) -> Value {
            let summary = if base.echo.reasoning_summary && !block.text.is_empty() {
                json!([summary_part(&block.text)])
            } else {
                json!([])
            };
            let mut item =
                json!({"id": id, "type": "reasoning", "summary": summary, "status": status});
            if base.echo.sealed_reasoning {
                item["encrypted_content"] = json!(sealed::seal(std::slice::from_ref(block)));
            }
            item
        }

        pub fn response(base: &Base, model: &str, status: &str, output: Vec<Value>) -> Value {
            let e = &base.echo;
            json!({
                "id": base.id,
                "object": "response",
                "created_at": base.created_at,
                "status": status,
                "background": false,
                "error": null,
                "incomplete_details": null,
                "instructions": e.instructions,
                "max_output_tokens": e.max_output_tokens,
                "max_tool_calls": null,
                "model": model,
                "output": output,
                "parallel_tool_calls": e.parallel_tool_calls,
                "previous_response_id": e.previous_response_id,
                "reasoning": {"effort": e.reasoning.effort, "summary": e.reasoning.summary},
                "service_tier": "default",
                "store": e.store,
                "temperature": e.temperature,
                "text": {"format": match &e.text.format {
                    EchoFormat::Text => json!({"type": "text"}),
                    EchoFormat::JsonObject => json!({"type": "json_object"}),
                    EchoFormat::JsonSchema(v) => v.clone(),
                }},
                "tool_choice": e.tool_choice.clone().unwrap_or_else(|| json!("auto")),
                "tools": e.tools,
                "top_logprobs": e.top_logprobs,
                "top_p": e.top_p,
                "truncation": "disabled",
                "usage": null,
                "user": e.user,
                "metadata": e.metadata,
            })
        }

        pub fn finished(base: &Base, resp: &ChatResponse, output: Vec<Value>) -> Value {
            let (status, reason) = outcome(resp);
            let mut body = response(base, &resp.model, status, output);
            body["completed_at"] = json!(base.created_at + resp.latency.as_secs());
            if let Some(reason) = reason {
                body["incomplete_details"] = json!({ "reason": reason });
                body["completed_at"] = Value::Null;
            }
            body["usage"] = resp.usage.as_ref().map_or(Value::Null, usage);
            let mut trail = serde_json::to_value(Trail::of(resp)).unwrap_or_else(|_| json!({}));
            trail["stored"] = json!(base.stored.load(Ordering::Acquire));
            body["switchyard"] = trail;
            body
        }

        pub fn output(base: &Base, resp: &ChatResponse) -> Vec<Value> {
            let status = item_status(resp);
            let mut items = Vec::new();
            for (n, block) in resp.thinking.iter().enumerate() {
                items.push(reasoning_item(
                    base,
                    &base.reasoning_id(n),
                    block,
                    "completed",
                ));
            }
            let refused = !resp.refusal.is_empty();
            if !resp.text.is_empty() || (resp.tool_calls.is_empty() && !refused) {
                let mut part = text_part(&resp.text);
                if let Some(entries) = resp.logprobs.as_ref().and_then(|l| l.get("content")) {
                    part["logprobs"] = entries.clone();
                }
                let mut parts = vec![part];
                if refused {
                    parts.push(refusal_part(&resp.refusal));
                }
                items.push(message_item(&base.message_id(), parts, status));
            } else if refused {
                let parts = vec![refusal_part(&resp.refusal)];
                items.push(message_item(&base.message_id(), parts, status));
            }
            for (n, call) in resp.tool_calls.iter().enumerate() {
                items.push(call_item(
                    &base.call_id(n),
                    &call.id,
                    &call.name,
                    &call.arguments,
                    "completed",
                ));
            }
            items
        }

        pub fn message_item(id: &str, parts: Vec<Value>, status: &str) -> Value {
            json!({"id": id, "type": "message", "role": "assistant", "status": status,
                   "content": parts})
        }

        pub fn refusal_part(refusal: &str) -> Value {
            json!({"type": "refusal", "refusal": refusal})
        }

        pub fn summary_part(text: &str) -> Value {
            json!({"type": "summary_text", "text": text})
        }

        pub fn text_part(text: &str) -> Value {
            json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
        }

        pub fn call_item(
            id: &str,
            call_id: &str,
            name: &str,
            arguments: &str,
            status: &str,
        ) -> Value {
            json!({"id": id, "type": "function_call", "call_id": call_id, "name": name,
                   "arguments": arguments, "status": status})
        }

        pub fn usage(u: &Usage) -> Value {
            json!({
                "input_tokens": u.input_tokens,
                "input_tokens_details": {
                    "cached_tokens": u.cached_input_tokens,
                    "cache_write_tokens": u.cache_write_tokens,
                },
                "output_tokens": u.output_tokens,
                "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
                "total_tokens": u.total_tokens(),
            })
        }
    }

    /// Every setting a response echoes, set.
    fn full_base() -> Base {
        Base {
            id: "resp_0123456789abcdef".into(),
            created_at: 1_767_000_000,
            echo: Echo {
                instructions: Some("Be \"terse\".\n".into()),
                tools: vec![
                    json!({"type": "function", "name": "get", "description": null,
                           "parameters": {"type": "object"}, "strict": true}),
                    json!({"type": "web_search"}),
                ],
                tool_choice: Some(json!({"type": "function", "name": "get"})),
                temperature: Some(0.7),
                top_p: Some(0.9),
                max_output_tokens: Some(100),
                parallel_tool_calls: false,
                metadata: json!({"b": "2", "a": "1"}).as_object().cloned().unwrap(),
                previous_response_id: Some("resp_prev".into()),
                text: EchoText {
                    format: EchoFormat::JsonSchema(json!({"type": "json_schema", "name": "n",
                        "schema": {"type": "object"}, "strict": null, "description": null})),
                },
                reasoning: EchoReasoning {
                    effort: Some("high".into()),
                    summary: Some("auto".into()),
                },
                store: true,
                user: Some("ünïcode user".into()),
                top_logprobs: 3,
                reasoning_summary: true,
                sealed_reasoning: true,
            },
            stored: AtomicBool::new(true),
        }
    }

    fn attempt(outcome: Outcome) -> Attempt {
        Attempt {
            provider: "primary".into(),
            model: "gpt-x".into(),
            attempt: 1,
            outcome,
            status: None,
            latency: Duration::from_micros(12_345),
            start: None,
            probe: false,
            reported: None,
        }
    }

    /// An answer with text, log probabilities, a refusal, tool calls, reasoning (signed and
    /// redacted), usage, a cost and a trail with an attempt of every outcome.
    fn full_answer() -> ChatResponse {
        let mut attempts = vec![
            Attempt {
                status: Some(503),
                start: Some(Duration::from_micros(1_500)),
                probe: true,
                ..attempt(Outcome::Failed {
                    kind: ErrorKind::Server,
                    message: "upstream said \"no\"".into(),
                })
            },
            attempt(Outcome::Skipped {
                reason: SkipReason::CannotHonour,
                fields: vec!["seed".into(), "logprobs".into()],
            }),
            attempt(Outcome::Skipped {
                reason: SkipReason::CircuitOpen,
                fields: Vec::new(),
            }),
            attempt(Outcome::Rescue {
                method: "continuation".into(),
            }),
            attempt(Outcome::Diverged { at: 12, sent: 40 }),
            attempt(Outcome::Declined {
                kind: ErrorKind::BadRequest,
                message: "prefill refused".into(),
            }),
        ];
        attempts.push(Attempt {
            status: Some(200),
            start: Some(Duration::from_millis(20)),
            ..attempt(Outcome::Success)
        });
        ChatResponse {
            text: "Gateways route \"requests\".\n ünïcode ✓".into(),
            refusal: "I can't say more.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "get".into(),
                    arguments: r#"{"q": "x"}"#.into(),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "put".into(),
                    arguments: String::new(),
                },
            ],
            thinking: vec![
                Thinking {
                    text: "Think first.".into(),
                    signature: Some("sig".into()),
                    redacted: None,
                },
                Thinking {
                    redacted: Some("ZGF0YQ".into()),
                    ..Thinking::default()
                },
            ],
            finish_reason: Some(FinishReason::ToolCalls),
            provider: "primary".into(),
            model: "gpt-x-2026".into(),
            failed_over: true,
            usage: Some(Usage {
                input_tokens: 120,
                output_tokens: 45,
                cached_input_tokens: 20,
                cache_write_tokens: 10,
                cache_write_1h_tokens: 5,
                reasoning_tokens: 7,
            }),
            cost: Some(Money::from_usd(0.000_123_4)),
            attempts,
            latency: Duration::from_millis(2_600),
            max_tokens_applied: Some(4096),
            logprobs: Some(json!({"content": [{"token": "G", "logprob": -0.25,
                "bytes": [71], "top_logprobs": []}]})),
            ignored: [Field::Stop, Field::Temperature].into_iter().collect(),
            dropped: [Field::TopP].into_iter().collect(),
            ..ChatResponse::default()
        }
    }

    fn same(typed: &ResponseObject<'_>, reference: &Value) {
        let bytes = serde_json::to_string(typed).unwrap();
        assert_eq!(bytes, serde_json::to_string(reference).unwrap());
        assert_eq!(
            &serde_json::to_value(typed).unwrap(),
            reference,
            "as stored"
        );
    }

    #[test]
    fn the_typed_response_is_the_value_built_one_byte_for_byte() {
        let base = full_base();
        let resp = full_answer();
        let typed = base.finished(&resp, base.output(&resp));
        let reference = value_built::finished(&base, &resp, value_built::output(&base, &resp));
        same(&typed, &reference);
        assert_eq!(reference["output"].as_array().map(Vec::len), Some(5));
        assert_eq!(reference["switchyard"]["attempts"][0]["probe"], true);

        // incomplete, no usage, no cost, nothing stored, settings left at their defaults,
        // the answer only tool calls (no message item)
        let plain = Base {
            echo: Echo {
                parallel_tool_calls: true,
                ..Echo::default()
            },
            stored: AtomicBool::new(false),
            ..full_base()
        };
        let cut = ChatResponse {
            text: String::new(),
            refusal: String::new(),
            thinking: Vec::new(),
            finish_reason: Some(FinishReason::Length),
            usage: None,
            cost: None,
            logprobs: None,
            max_tokens_applied: None,
            ignored: Default::default(),
            dropped: Default::default(),
            failed_over: false,
            ..full_answer()
        };
        let typed = plain.finished(&cut, plain.output(&cut));
        let reference = value_built::finished(&plain, &cut, value_built::output(&plain, &cut));
        same(&typed, &reference);
        assert_eq!(
            reference["incomplete_details"]["reason"],
            "max_output_tokens"
        );

        // a refusal alone, filtered; an empty answer (one empty text part)
        for (refusal, finish) in [
            ("No.", FinishReason::ContentFilter),
            ("", FinishReason::Stop),
        ] {
            let r = ChatResponse {
                refusal: refusal.into(),
                tool_calls: Vec::new(),
                finish_reason: Some(finish),
                ..cut.clone()
            };
            let typed = plain.finished(&r, plain.output(&r));
            same(
                &typed,
                &value_built::finished(&plain, &r, value_built::output(&plain, &r)),
            );
        }

        // in progress (a stream's first events), and a native provider's own items
        let typed = base.response("m", "in_progress", Vec::new());
        same(
            &typed,
            &value_built::response(&base, "m", "in_progress", Vec::new()),
        );
        let json_object = Base {
            echo: Echo {
                text: EchoText {
                    format: EchoFormat::JsonObject,
                },
                ..Echo::default()
            },
            ..full_base()
        };
        let typed = json_object.response("m", "in_progress", Vec::new());
        let reference = value_built::response(&json_object, "m", "in_progress", Vec::new());
        same(&typed, &reference);
        let native = vec![json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})];
        let typed = base.finished(&resp, native.iter().map(Item::Native).collect());
        same(&typed, &value_built::finished(&base, &resp, native.clone()));
    }

    /// The hand-written body is the serde one, byte for byte.
    fn written(typed: &ResponseObject<'_>) {
        let mut out = Vec::new();
        typed.write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(typed).unwrap()
        );
    }

    #[test]
    fn the_written_response_is_the_serialised_one() {
        let base = full_base();
        let resp = full_answer();
        written(&base.finished(&resp, base.output(&resp)));
        written(&base.response("m", "in_progress", Vec::new()));
        let native = [
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
            json!({"weird": [1, 2.5, null, "\u{1}"]}),
        ];
        written(&base.finished(&resp, native.iter().map(Item::Native).collect()));
        let plain = Base {
            echo: Echo {
                parallel_tool_calls: true,
                ..Echo::default()
            },
            stored: AtomicBool::new(false),
            ..full_base()
        };
        let formats = [
            EchoFormat::Text,
            EchoFormat::JsonObject,
            EchoFormat::JsonSchema(json!({"type": "json_schema", "name": "n",
                "schema": {"type": "object"}, "strict": true, "description": null})),
        ];
        let mut awkward = crate::json_out::tests::awkward_strings();
        awkward.push(String::new());
        let odd = Base {
            echo: Echo {
                instructions: Some(awkward[1].clone()),
                tools: vec![json!({"type": "function", "name": "f", "parameters": {}})],
                tool_choice: Some(json!({"type": "function", "name": "f"})),
                temperature: Some(0.7),
                top_p: Some(f32::NAN),
                max_output_tokens: Some(u32::MAX),
                metadata: [("k\n".to_owned(), json!("v\""))].into_iter().collect(),
                previous_response_id: Some("resp_prev".into()),
                reasoning: EchoReasoning {
                    effort: Some("high".into()),
                    summary: Some("auto".into()),
                },
                store: true,
                user: Some("u\u{7f}".into()),
                top_logprobs: 3,
                reasoning_summary: true,
                sealed_reasoning: false,
                ..Echo::default()
            },
            ..full_base()
        };
        for format in formats {
            for b in [&plain, &odd] {
                let b = Base {
                    id: b.id.clone(),
                    created_at: b.created_at,
                    echo: Echo {
                        text: EchoText {
                            format: match &format {
                                EchoFormat::Text => EchoFormat::Text,
                                EchoFormat::JsonObject => EchoFormat::JsonObject,
                                EchoFormat::JsonSchema(v) => EchoFormat::JsonSchema(v.clone()),
                            },
                        },
                        tools: b.echo.tools.clone(),
                        tool_choice: b.echo.tool_choice.clone(),
                        metadata: b.echo.metadata.clone(),
                        instructions: b.echo.instructions.clone(),
                        previous_response_id: b.echo.previous_response_id.clone(),
                        reasoning: EchoReasoning {
                            effort: b.echo.reasoning.effort.clone(),
                            summary: b.echo.reasoning.summary.clone(),
                        },
                        user: b.echo.user.clone(),
                        ..b.echo
                    },
                    stored: AtomicBool::new(b.stored.load(Ordering::Relaxed)),
                };
                written(&b.response("m", "in_progress", Vec::new()));
                for answer in crate::json_out::tests::answers() {
                    written(&b.finished(&answer, b.output(&answer)));
                }
                for text in &awkward {
                    let r = ChatResponse {
                        text: text.clone(),
                        refusal: text.clone(),
                        model: text.clone(),
                        provider: text.clone(),
                        ..full_answer()
                    };
                    written(&b.finished(&r, b.output(&r)));
                }
            }
        }
    }
}
