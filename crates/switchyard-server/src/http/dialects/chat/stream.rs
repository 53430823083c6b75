//! Chat Completions' stream: `chat.completion.chunk` events (a role chunk first, reasoning
//! pieces as `delta.reasoning_content`, refusal pieces as `delta.refusal`, each chunk's
//! `logprobs.content`, a finish chunk, a usage chunk when `stream_options.include_usage`
//! asked for one) ending in `data: [DONE]`; a stream that cannot finish ends with an
//! `error` event and no `[DONE]`. With `n` > 1, the later answers' pieces are choices of
//! their own `index` (a role on each one's first piece, its finish reason when it ends);
//! answer 0 finishes last. The upstream's `system_fingerprint` is on every chunk once
//! seen, and what OpenAI streams for its own contract fields (`audio`, `function_call`,
//! `annotations`) is in the deltas as it sent them.

use axum::body::Bytes;
use bytes::BytesMut;
use serde::Serialize;
use serde_json::json;
use switchyard::chat::FinishReason;
use switchyard::{ChatChunk, ChatResponse};

use super::wire::{WireFunctionCall, WireUsage};
use super::{completion_id, extras};
use crate::http::dialects::ctx::SortedTrail;
use crate::http::dialects::flow::{Ctx, Trail};
use crate::http::dialects::{data_frame, StreamEncoder};
use crate::http::error::ApiError;

/// Writes one stream's chunks.
pub(crate) struct ChunkEncoder {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    /// The upstream's `system_fingerprint`, once a chunk carried it.
    fingerprint: Option<String>,
    /// Later answers (`n` > 1) that have had their role chunk.
    opened: Vec<u32>,
    /// `data: ` and a text chunk's JSON up to its content (the stream's id, creation
    /// time, model and fingerprint), built again when the model or fingerprint changes.
    text_head: Vec<u8>,
    /// Where frames are written: each frame is split off it, and the room the client's
    /// writes gave back is reused.
    out: BytesMut,
}

/// What follows a text chunk's content (see [`ChunkEncoder::text_head`]).
const TEXT_TAIL: &[u8] = b"},\"finish_reason\":null,\"logprobs\":null}]}\n\n";

/// The end of [`ChunkEncoder::text_head`].
/// The stream's last event.
const DONE: &[u8] = b"data: [DONE]\n\n";

/// How [`ChunkEncoder::text_head`] ends.
const CONTENT_KEY: &[u8] = b"\"content\":";

/// The role chunk after its delta's opening brace.
const ROLE_TAIL: &[u8] =
    b"\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null,\"logprobs\":null}]}\n\n";

impl ChunkEncoder {
    pub(super) fn new(ctx: &Ctx, model: &str, include_usage: bool) -> Self {
        Self {
            id: completion_id(ctx),
            created: ctx.time_ms / 1000,
            model: model.to_owned(),
            include_usage,
            fingerprint: None,
            opened: Vec::new(),
            text_head: Vec::new(),
            // frames share it until it is full (then the next block is as large)
            out: BytesMut::with_capacity(4096),
        }
    }

    /// A chunk with text and nothing else, the stream's usual one: written at the end of
    /// `out` as [`Self::frame`] would write it, the part before the text kept from the last.
    fn text_frame(&mut self, text: &str, out: &mut BytesMut) {
        self.build_text_head();
        out.reserve(self.text_head.len() + text.len() + text.len() / 8 + 2 + TEXT_TAIL.len());
        out.extend_from_slice(&self.text_head);
        let mut w = bytes::BufMut::writer(&mut *out);
        let _ = serde_json::to_writer(&mut w, text);
        out.extend_from_slice(TEXT_TAIL);
    }

    /// `data: ` and a chunk's JSON up to choice 0's delta's members (`…"delta":{`), as
    /// [`Self::frame`] writes it: the text head without its `"content":`.
    fn delta_head(&mut self) -> &[u8] {
        self.build_text_head();
        let end = self.text_head.len() - CONTENT_KEY.len();
        &self.text_head[..end]
    }

    /// [`Self::text_head`], built when it is not.
    fn build_text_head(&mut self) {
        if self.text_head.is_empty() {
            let head = &mut self.text_head;
            head.extend_from_slice(b"data: {\"id\":");
            let _ = serde_json::to_writer(&mut *head, &self.id);
            head.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
            head.extend_from_slice(self.created.to_string().as_bytes());
            head.extend_from_slice(b",\"model\":");
            let _ = serde_json::to_writer(&mut *head, &self.model);
            if let Some(f) = &self.fingerprint {
                head.extend_from_slice(b",\"system_fingerprint\":");
                let _ = serde_json::to_writer(&mut *head, f);
            }
            head.extend_from_slice(b",\"choices\":[{\"index\":0,\"delta\":{");
            head.extend_from_slice(CONTENT_KEY);
        }
    }

    /// The role chunk that opens the stream, as the serde body writes it.
    fn role_frame(&mut self) -> Bytes {
        let head = self.delta_head();
        let mut out = Vec::with_capacity(head.len() + ROLE_TAIL.len());
        out.extend_from_slice(head);
        out.extend_from_slice(ROLE_TAIL);
        Bytes::from(out)
    }

    /// The finish chunk (`finish` as the reason, the trail when given) at the end of
    /// `out`, as the serde body writes it.
    /// The trail is written by hand ([`Trail::write_json`]), as its `Serialize` writes it.
    fn finish_frame(&mut self, finish: &str, trail: Option<&Trail<'_>>, out: &mut Vec<u8>) {
        out.extend_from_slice(self.delta_head());
        out.extend_from_slice(b"},\"finish_reason\":");
        crate::json_out::str(out, finish);
        out.extend_from_slice(b",\"logprobs\":null}]");
        if let Some(trail) = trail {
            out.extend_from_slice(b",\"switchyard\":");
            trail.write_json(out);
        }
        out.extend_from_slice(b"}\n\n");
    }

    /// The chunk object of `choices`: this stream's id, creation time, model and
    /// fingerprint, with `usage` and the `switchyard` trail when given.
    fn body<'a>(
        &'a self,
        choices: Vec<ChunkChoice<'a>>,
        usage: Option<&'a WireUsage>,
        trail: Option<&'a Trail<'a>>,
    ) -> ChunkBody<'a> {
        ChunkBody {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            system_fingerprint: self.fingerprint.as_deref(),
            choices,
            usage,
            switchyard: trail,
        }
    }

    /// A chunk of `choices`, with `usage` and the `switchyard` trail when given.
    fn frame(
        &self,
        choices: Vec<ChunkChoice<'_>>,
        usage: Option<&WireUsage>,
        trail: Option<&Trail<'_>>,
    ) -> Bytes {
        data_frame(&self.body(choices, usage, trail))
    }

    /// The pieces of later answers (`n` > 1), each a choice of its own index.
    fn others<'c>(&mut self, c: &'c ChatChunk) -> Vec<ChunkChoice<'c>> {
        c.choices
            .iter()
            .map(|o| {
                let first = !self.opened.contains(&o.index);
                if first {
                    self.opened.push(o.index);
                }
                ChunkChoice {
                    index: o.index,
                    delta: Delta {
                        role: first.then_some("assistant"),
                        content: (!o.text.is_empty() || first).then_some(o.text.as_str()),
                        refusal: (!o.refusal.is_empty()).then_some(o.refusal.as_str()),
                        reasoning_content: None,
                        tool_calls: tool_deltas(&o.tool_calls),
                    },
                    finish_reason: o.finish_reason.as_ref().map(FinishReason::as_openai),
                    logprobs: o.logprobs.clone().map(|l| json!({ "content": l })),
                }
            })
            .collect()
    }

    /// A chunk of choice 0 through the serde body: the oracle of the frames written
    /// directly ([`Self::text_frame`], [`Self::role_frame`], [`Self::finish_frame`]).
    #[cfg(test)]
    fn chunk_frame(
        &self,
        delta: Delta<'_>,
        finish: Option<&str>,
        usage: Option<&WireUsage>,
        trail: Option<&Trail<'_>>,
        logprobs: Option<serde_json::Value>,
    ) -> Bytes {
        let choice = ChunkChoice {
            index: 0,
            delta,
            finish_reason: finish,
            logprobs,
        };
        self.frame(vec![choice], usage, trail)
    }

    /// A chunk whose choices carry pieces of what OpenAI streams for its own contract
    /// fields (`audio`, `function_call`, `annotations`): each choice's delta gets its
    /// pieces as OpenAI sent them (a rare chunk: built through a JSON value).
    fn with_extras(&self, choices: Vec<ChunkChoice<'_>>, c: &ChatChunk) -> Bytes {
        let mut body = json!(self.body(choices, None, None));
        let list = body["choices"].as_array_mut().into_iter().flatten();
        for choice in list {
            let index = choice["index"].as_u64().and_then(|i| u32::try_from(i).ok());
            let pieces = index.and_then(|i| extras(c.native.as_deref(), i, "delta"));
            if let (Some(pieces), Some(delta)) = (pieces, choice["delta"].as_object_mut()) {
                delta.extend(pieces.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        data_frame(&body)
    }

    /// The final usage chunk; `usage` is null when the vendor reported none. Its keys (the
    /// trail's too) in sorted order, as the `serde_json::Value` it was once built as
    /// ([`Self::usage_frame_by_value`], still the way for a trail with a cache note)
    /// wrote them; the bytes are the same.
    #[cfg(test)]
    fn usage_frame(&self, resp: &ChatResponse) -> Bytes {
        let mut out = Vec::new();
        self.usage_into(resp, &mut out);
        Bytes::from(out)
    }

    /// The usage chunk (`usage_frame`'s bytes) at the end of `out`, written by hand
    /// (`crate::json_out`, the trail by [`SortedTrail::write_json`]): the bytes
    /// `UsageChunk`'s `Serialize` writes through `data_frame` (the tests' oracle).
    fn usage_into(&self, resp: &ChatResponse, out: &mut Vec<u8>) {
        use crate::json_out as j;
        let trail = Trail::of(resp);
        if trail.has_cache_note() {
            let usage = resp.usage.as_ref().map(WireUsage::from);
            out.extend_from_slice(&self.usage_frame_by_value(usage, &trail));
            return;
        }
        out.extend_from_slice(b"data: {\"choices\":[],\"created\":");
        j::u64(out, self.created);
        out.extend_from_slice(b",\"id\":");
        j::str(out, &self.id);
        out.extend_from_slice(b",\"model\":");
        j::str(out, &self.model);
        out.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"switchyard\":");
        SortedTrail {
            trail,
            stored: None,
        }
        .write_json(out);
        if let Some(f) = &self.fingerprint {
            out.extend_from_slice(b",\"system_fingerprint\":");
            j::str(out, f);
        }
        out.extend_from_slice(b",\"usage\":");
        match &resp.usage {
            Some(u) => {
                out.extend_from_slice(b"{\"completion_tokens\":");
                j::u64(out, u.output_tokens);
                out.extend_from_slice(b",\"completion_tokens_details\":{\"reasoning_tokens\":");
                j::u64(out, u.reasoning_tokens);
                out.extend_from_slice(b"},\"prompt_tokens\":");
                j::u64(out, u.input_tokens);
                out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
                j::u64(out, u.cached_input_tokens);
                out.extend_from_slice(b"},\"total_tokens\":");
                j::u64(out, u.total_tokens());
                out.push(b'}');
            }
            None => j::null(out),
        }
        out.extend_from_slice(b"}\n\n");
    }

    /// [`Self::usage_frame`] through a `serde_json::Value`.
    fn usage_frame_by_value(&self, usage: Option<WireUsage>, trail: &Trail<'_>) -> Bytes {
        let mut body = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
            "switchyard": trail,
        });
        if let Some(f) = &self.fingerprint {
            body["system_fingerprint"] = json!(f);
        }
        data_frame(&body)
    }
}

impl StreamEncoder for ChunkEncoder {
    fn start(&mut self) -> Bytes {
        self.role_frame()
    }

    fn chunk(&mut self, c: &ChatChunk) -> Bytes {
        let mut out = std::mem::take(&mut self.out);
        self.chunk_into(c, &mut out);
        let frame = out.split().freeze();
        self.out = out;
        frame
    }

    /// A content chunk; answer 0's finish reason goes in its own chunk, as OpenAI sends
    /// it (a later answer's finish is on its piece).
    fn chunk_into(&mut self, c: &ChatChunk, out: &mut BytesMut) {
        if let Some(m) = c.model.as_ref().filter(|m| **m != self.model) {
            self.model.clone_from(m);
            self.text_head.clear();
        }
        if let Some(f) =
            (c.system_fingerprint.as_ref()).filter(|f| self.fingerprint.as_ref() != Some(*f))
        {
            self.fingerprint = Some(f.clone());
            self.text_head.clear();
        }
        if !c.text.is_empty()
            && c.refusal.is_empty()
            && c.tool_calls.is_empty()
            && c.thinking.is_empty()
            && c.choices.is_empty()
            && c.native.is_none()
            && c.logprobs.is_none()
        {
            self.text_frame(&c.text, out);
            return;
        }
        let reasoning: String = c.thinking.iter().map(|t| t.text.as_str()).collect();
        let mut choices = Vec::with_capacity(1 + c.choices.len());
        // a finish reason is written by `done`, which always follows it; a reasoning
        // block's signature or redacted data has no place in a chat completion
        let own = extras(c.native.as_deref(), 0, "delta").is_some();
        if !c.text.is_empty()
            || !c.refusal.is_empty()
            || !c.tool_calls.is_empty()
            || !reasoning.is_empty()
            || own
        {
            choices.push(ChunkChoice {
                index: 0,
                delta: Delta {
                    role: None,
                    content: (!c.text.is_empty()).then_some(c.text.as_str()),
                    refusal: (!c.refusal.is_empty()).then_some(c.refusal.as_str()),
                    reasoning_content: (!reasoning.is_empty()).then_some(reasoning.as_str()),
                    tool_calls: tool_deltas(&c.tool_calls),
                },
                finish_reason: None,
                logprobs: c.logprobs.clone().map(|l| json!({ "content": l })),
            });
        }
        choices.extend(self.others(c));
        if choices.is_empty() {
            return;
        }
        let frame = if c.native.is_some() {
            self.with_extras(choices, c)
        } else {
            self.frame(choices, None, None)
        };
        out.extend_from_slice(&frame);
    }

    /// The finish chunk, the usage chunk (if asked for), `[DONE]`.
    fn done(&mut self, resp: &ChatResponse) -> Bytes {
        let finish = resp
            .finish_reason
            .as_ref()
            .map_or("stop", FinishReason::as_openai);
        let mut out = Vec::with_capacity(1024);
        if self.include_usage {
            self.finish_frame(finish, None, &mut out);
            self.usage_into(resp, &mut out);
        } else {
            self.finish_frame(finish, Some(&Trail::of(resp)), &mut out);
        }
        out.extend_from_slice(DONE);
        Bytes::from(out)
    }

    fn failed(&mut self, err: &ApiError) -> Bytes {
        data_frame(&err.body())
    }
}

/// Tool-call deltas in OpenAI's shape (`type` on the first fragment, with the id).
fn tool_deltas(calls: &[switchyard::chat::ToolCallDelta]) -> Vec<ToolDelta<'_>> {
    calls
        .iter()
        .map(|t| ToolDelta {
            index: t.index,
            id: t.id.as_deref(),
            kind: t.id.as_ref().map(|_| "function"),
            function: WireFunctionCall {
                name: t.name.clone().unwrap_or_default(),
                arguments: t.arguments.clone(),
            },
        })
        .collect()
}

/// The usage chunk, its keys sorted (see `ChunkEncoder::usage_frame`): the oracle of
/// [`ChunkEncoder::usage_into`].
#[cfg(test)]
struct UsageChunk<'a> {
    id: &'a str,
    created: u64,
    model: &'a str,
    fingerprint: Option<&'a str>,
    usage: Option<&'a switchyard::Usage>,
    trail: SortedTrail<'a>,
}

#[cfg(test)]
impl Serialize for UsageChunk<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("choices", &[0u8; 0])?;
        m.serialize_entry("created", &self.created)?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("model", self.model)?;
        m.serialize_entry("object", "chat.completion.chunk")?;
        m.serialize_entry("switchyard", &self.trail)?;
        if let Some(f) = self.fingerprint {
            m.serialize_entry("system_fingerprint", f)?;
        }
        m.serialize_entry("usage", &self.usage.map(SortedUsage))?;
        m.end()
    }
}

/// [`WireUsage`] of a usage, its keys sorted.
#[cfg(test)]
struct SortedUsage<'a>(&'a switchyard::Usage);

#[cfg(test)]
impl Serialize for SortedUsage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("completion_tokens", &u.output_tokens)?;
        let reasoning = One("reasoning_tokens", u.reasoning_tokens);
        m.serialize_entry("completion_tokens_details", &reasoning)?;
        m.serialize_entry("prompt_tokens", &u.input_tokens)?;
        let cached = One("cached_tokens", u.cached_input_tokens);
        m.serialize_entry("prompt_tokens_details", &cached)?;
        m.serialize_entry("total_tokens", &u.total_tokens())?;
        m.end()
    }
}

/// An object of one key.
#[cfg(test)]
struct One(&'static str, u64);

#[cfg(test)]
impl Serialize for One {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.0, &self.1)?;
        m.end()
    }
}

#[derive(Serialize)]
struct ChunkBody<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_fingerprint: Option<&'a str>,
    choices: Vec<ChunkChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a WireUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    switchyard: Option<&'a Trail<'a>>,
}

#[derive(Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    finish_reason: Option<&'a str>,
    /// `{"content": [...]}` for a request with `logprobs`.
    logprobs: Option<serde_json::Value>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    /// A piece of the model's refusal message.
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<&'a str>,
    /// A piece of reasoning text, as OpenAI-compatible reasoning servers stream it.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolDelta<'a>>,
}

#[derive(Serialize)]
struct ToolDelta<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: WireFunctionCall,
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::Usage;

    impl ChunkEncoder {
        fn for_test(id: &str, include_usage: bool) -> Self {
            Self {
                id: id.to_owned(),
                created: 1_764_410_400,
                model: "m".to_owned(),
                include_usage,
                fingerprint: None,
                opened: Vec::new(),
                text_head: Vec::new(),
                out: BytesMut::with_capacity(64),
            }
        }
    }

    /// A text chunk written from the cached head is, byte for byte, the chunk the serde
    /// body writes: escapes, a model and fingerprint that change, a frame larger than the
    /// buffer.
    #[test]
    fn a_text_chunk_is_written_as_the_serde_body_would_be() {
        let mut e = ChunkEncoder {
            id: "chatcmpl-\"q\"".to_owned(),
            created: 1_764_410_400,
            model: "m".to_owned(),
            include_usage: false,
            fingerprint: None,
            opened: Vec::new(),
            text_head: Vec::new(),
            out: BytesMut::with_capacity(64),
        };
        let long = "é\"\\\n\u{1}x".repeat(2000);
        let cases = [
            ("Hi", None, None),
            ("é \"q\" \\ \n\t\u{1}", Some("m2"), Some("fp_1")),
            ("again", Some("m2"), None),
            (long.as_str(), None, Some("fp_\"2\"")),
            ("end", None, None),
        ];
        for (text, model, fingerprint) in cases {
            let c = ChatChunk {
                text: text.to_owned(),
                model: model.map(str::to_owned),
                system_fingerprint: fingerprint.map(str::to_owned),
                ..ChatChunk::default()
            };
            let written = e.chunk(&c);
            let delta = Delta {
                content: Some(text),
                ..Delta::default()
            };
            let expected = e.chunk_frame(delta, None, None, None, None);
            assert_eq!(written, expected, "{text:.40}");
        }
    }

    /// The role and finish chunks written directly are, byte for byte, the chunks the
    /// serde body writes: before and after the model and fingerprint change, a reason of
    /// the vendor's own that needs escapes, with and without the trail.
    #[test]
    fn the_role_and_finish_chunks_are_written_as_the_serde_body_would_be() {
        let mut e = ChunkEncoder::for_test("chatcmpl-\"r\"", false);
        let resp = ChatResponse {
            provider: "p\"1".to_owned(),
            failed_over: true,
            cost: Some(switchyard::Money::from_usd(0.000_5)),
            ..ChatResponse::default()
        };
        let trail = Trail::of(&resp);
        for (model, fingerprint) in [(None, None), (Some("m2"), Some("fp_\"1\"")), (None, None)] {
            e.chunk(&ChatChunk {
                text: "x".to_owned(),
                model: model.map(str::to_owned),
                system_fingerprint: fingerprint.map(str::to_owned),
                ..ChatChunk::default()
            });
            let role = Delta {
                role: Some("assistant"),
                content: Some(""),
                ..Delta::default()
            };
            assert_eq!(e.start(), e.chunk_frame(role, None, None, None, None));
            for finish in ["stop", "length", "a \"vendor's\" \n reason"] {
                for trail in [None, Some(&trail)] {
                    let mut written = b"before".to_vec();
                    e.finish_frame(finish, trail, &mut written);
                    let expected = e.chunk_frame(Delta::default(), Some(finish), None, trail, None);
                    assert_eq!(&written[..6], b"before");
                    assert_eq!(
                        String::from_utf8_lossy(&written[6..]),
                        String::from_utf8_lossy(&expected)
                    );
                }
            }
        }
        // `done`: the finish chunk, the trail on it or a usage chunk after it, `[DONE]`
        let done = e.done(&resp);
        let finish = e.chunk_frame(Delta::default(), Some("stop"), None, Some(&trail), None);
        assert_eq!(done, [&finish[..], b"data: [DONE]\n\n"].concat());
        e.include_usage = true;
        let done = e.done(&resp);
        let finish = e.chunk_frame(Delta::default(), Some("stop"), None, None, None);
        let usage = e.usage_frame(&resp);
        assert_eq!(
            done,
            [&finish[..], &usage[..], b"data: [DONE]\n\n"].concat()
        );
    }

    /// The usage chunk written directly is, byte for byte, the one its `Value` wrote: with
    /// and without usage and fingerprint, attempts of every outcome, a cost, fields
    /// ignored and dropped.
    #[test]
    fn the_usage_chunk_is_written_as_its_value_was() {
        use std::time::Duration;
        use switchyard::observe::{Attempt, Outcome};
        use switchyard::ErrorKind;
        let attempt = |outcome| Attempt {
            provider: "p\"1".to_owned(),
            model: "m".to_owned(),
            attempt: 2,
            outcome,
            status: Some(503),
            latency: Duration::from_micros(1_234_567),
            start: None,
            probe: false,
            reported: None,
        };
        let attempts = vec![
            attempt(Outcome::Failed {
                kind: ErrorKind::Server,
                message: "boom".to_owned(),
            }),
            attempt(Outcome::Rescue {
                method: "restart".to_owned(),
            }),
            attempt(Outcome::Diverged { at: 3, sent: 9 }),
            attempt(Outcome::Success),
        ];
        let mut e = ChunkEncoder {
            id: "chatcmpl-1".to_owned(),
            created: 1_764_410_400,
            model: "m".to_owned(),
            include_usage: true,
            fingerprint: None,
            opened: Vec::new(),
            text_head: Vec::new(),
            out: BytesMut::new(),
        };
        for (usage, fingerprint) in [
            (None, None),
            (
                Some(Usage {
                    input_tokens: 12,
                    output_tokens: 34,
                    cached_input_tokens: 5,
                    reasoning_tokens: 6,
                    ..Usage::default()
                }),
                Some("fp_\"x\""),
            ),
        ] {
            e.fingerprint = fingerprint.map(str::to_owned);
            let resp = ChatResponse {
                provider: "primary".to_owned(),
                failed_over: true,
                attempts: attempts.clone(),
                usage,
                cost: Some(switchyard::Money::from_usd(0.000_123)),
                max_tokens_applied: Some(256),
                ..ChatResponse::default()
            };
            let by_value =
                e.usage_frame_by_value(resp.usage.as_ref().map(WireUsage::from), &Trail::of(&resp));
            assert_eq!(e.usage_frame(&resp), by_value);
        }
    }

    /// The usage chunk written by hand is, byte for byte, the one [`UsageChunk`] writes
    /// through serde (and its `Value` before it): answers of every kind (no usage, every
    /// attempt's outcome, ignored and dropped fields, cache notes, awkward strings in the
    /// provider and models), with the stream's own id, model and fingerprint awkward too,
    /// appended after what `out` held.
    #[test]
    fn the_usage_chunk_written_by_hand_is_the_serde_one() {
        use crate::json_out::tests::{answers, awkward_strings, every_attempt};
        let mut e = ChunkEncoder::for_test("chatcmpl-1", true);
        let mut list = answers();
        for mut resp in answers() {
            resp.attempts = every_attempt();
            resp.max_tokens_applied = Some(4096);
            resp.usage = Some(Usage {
                input_tokens: u64::MAX,
                output_tokens: 7,
                cached_input_tokens: 3,
                reasoning_tokens: 2,
                ..Usage::default()
            });
            list.push(resp);
        }
        let mut checked = 0;
        for (i, resp) in list.iter().enumerate() {
            let strings = awkward_strings();
            let s = &strings[i % strings.len()];
            e.id = format!("chatcmpl-{s}");
            e.model.clone_from(s);
            e.fingerprint = (i % 3 != 0).then(|| s.clone());
            let trail = Trail::of(resp);
            let by_value = e.usage_frame_by_value(resp.usage.as_ref().map(WireUsage::from), &trail);
            let mut written = b"before".to_vec();
            e.usage_into(resp, &mut written);
            assert_eq!(&written[..6], b"before");
            assert_eq!(
                String::from_utf8_lossy(&written[6..]),
                String::from_utf8_lossy(&by_value),
                "answer {i}"
            );
            if !trail.has_cache_note() {
                checked += 1;
                let serde = data_frame(&UsageChunk {
                    id: &e.id,
                    created: e.created,
                    model: &e.model,
                    fingerprint: e.fingerprint.as_deref(),
                    usage: resp.usage.as_ref(),
                    trail: SortedTrail {
                        trail: Trail::of(resp),
                        stored: None,
                    },
                });
                assert_eq!(&written[6..], &serde[..], "answer {i}");
            }
        }
        assert!(checked > 20, "{checked} answers without a cache note");
    }
}
