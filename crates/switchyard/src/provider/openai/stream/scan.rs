//! The pass-through read of a stream's usual chunks: one choice (index 0) whose delta is
//! only `content` (and perhaps `role`), perhaps a finish reason, no log probabilities —
//! the role, content and finish chunks — and the usage chunk (`"choices": []` and a
//! `usage` of the fields OpenAI's usage has). Every other chunk of a stream is the
//! minority (tool calls, reasoning, refusals, `n` > 1, OpenAI's own extras, errors, Groq's
//! usage), and is read by serde as before.
//!
//! [`text_chunk`] walks the event's JSON bytes once, borrowing the model and fingerprint
//! and copying the content into its `String` (its escapes decoded), and reads nothing it
//! does not need: what serde would ignore (`created`, `service_tier`, `obfuscation`, a
//! role, any field the gateway does not model) is only checked to be well-formed JSON. It
//! answers `None` — "read this one with serde" — for anything it is not sure of: a shape
//! other than the above, a field serde would reject (a duplicate, a wrong type), an escape
//! in a key or in a borrowed string, a `\u` escape in the content, nesting deeper than
//! `MAX_DEPTH` (`../cursor.rs`), or bytes that are not JSON. So a chunk it reads is the chunk serde reads,
//! and one it does not is read (or refused) exactly as before.

use super::super::cursor::{Scan, Seen};
use super::super::wire;

/// What the gateway needs of a content, finish or usage chunk.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct TextChunk<'a> {
    /// The chunk's `model`, when it has one (not `null`).
    pub model: Option<&'a str>,
    /// Its `system_fingerprint`, when it has one.
    pub fingerprint: Option<&'a str>,
    /// Choice 0's `delta.content`, decoded (empty when `null` or absent).
    pub text: String,
    /// Choice 0's `finish_reason`, when it has one (not `null`).
    pub finish: Option<&'a str>,
    /// The chunk's `id`, when it has one (read from the head too when the chunk repeats
    /// it: a finish chunk keeps it).
    pub id: Option<&'a str>,
    /// The chunk's `usage`, when it has one, as `reply::usage` makes it of serde's read.
    pub usage: Option<crate::chat::Usage>,
}

/// The head of the last chunk the scan read (its bytes up to its `"choices"` key), and
/// which known keys it held. A stream's chunks repeat it byte for byte (the id, `object`,
/// `created`, the model, the fingerprint): a chunk that starts with it is read from its
/// `"choices"` on, as the scan would have read it whole, with what the head stated (the
/// model and fingerprint) not stated again. Whoever keeps one clears it when a chunk is
/// read otherwise (see `stream.rs`: what the head stated is then no longer the latest).
///
/// Each chunk the scan reads (whole, or from its choices on) also leaves what lies between
/// its head and its content's string (`"choices":[{"index":0,"delta":{"content":`) and
/// what follows that string: a chunk that repeats both around its own content is that
/// content and nothing else the scan would read, and states nothing the chunk they came
/// from did not (what it stated is the latest: any chunk read otherwise since would have
/// left its own, or cleared the head). The first chunk with the same middle but another
/// end turns this off until a chunk is read whole again (a stream whose chunks all end
/// differently, as OpenAI's `obfuscation` makes them, is not read twice each).
#[derive(Debug, Default)]
pub(super) struct Head {
    bytes: Vec<u8>,
    seen: u16,
    /// Where the `id` string's contents lie in `bytes`, when the head holds one.
    id: Option<(usize, usize)>,
    /// Between the head and the content's string; empty: no such shortcut.
    mid: Vec<u8>,
    /// After the content's string, to the end.
    tail: Vec<u8>,
    /// The middle and end are not kept (see above).
    off: bool,
}

impl Head {
    /// Forget the head (the next chunk is read whole).
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.id = None;
        self.mid.clear();
        self.tail.clear();
        self.off = false;
    }
}

/// Read `data` (an event's data, trimmed) as a content chunk; `None` when it is not one
/// the scan is sure of (see the module docs). With `head`, a chunk that starts with the
/// last one's head is read from there (its model and fingerprint then `None`: stated
/// before), and a chunk read whole leaves its head there.
///
/// The text is read into the thread's spare buffer ([`crate::chat::spare_text`]), handed
/// back when the chunk is not one the scan reads.
pub(super) fn text_chunk<'a>(data: &'a str, head: Option<&mut Head>) -> Option<TextChunk<'a>> {
    let mut out = TextChunk {
        model: None,
        fingerprint: None,
        text: crate::chat::spare_text(),
        finish: None,
        id: None,
        usage: None,
    };
    if read_chunk(data, head, &mut out).is_some() {
        return Some(out);
    }
    crate::chat::recycle_text(out.text);
    None
}

/// [`text_chunk`] into `out`.
fn read_chunk<'a>(data: &'a str, head: Option<&mut Head>, out: &mut TextChunk<'a>) -> Option<()> {
    let mut s = Scan {
        text: data,
        b: data.as_bytes(),
        i: 0,
    };
    let mut seen = Seen::default();
    let mut choices = false;
    let mut head = head;
    let resumed = match head.as_deref_mut() {
        Some(h) if !h.bytes.is_empty() && s.b.starts_with(&h.bytes) => {
            let at = h.bytes.len();
            if !h.mid.is_empty() && s.b[at..].starts_with(&h.mid) {
                s.i = at + h.mid.len();
                if s.content_into(&mut out.text).is_some() && s.b.get(s.i..) == Some(&h.tail[..]) {
                    return Some(());
                }
                out.text.clear();
                h.mid.clear(); // off until a chunk is read whole again
                h.off = true;
            }
            s.i = at;
            seen = Seen(h.seen);
            out.id = h.id.and_then(|(from, to)| data.get(from..to));
            true
        }
        _ => {
            s.ws();
            s.eat(b'{')?;
            false
        }
    };
    // where choice 0's content string starts and ends
    let mut span = None;
    // where the `"choices"` key starts, and the keys seen before it
    let mut head_end = None;
    // where the id's contents lie
    let mut id_span = None;
    loop {
        s.ws();
        let key_at = s.i;
        let key = s.raw_str()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            "id" => {
                seen.once(0)?;
                let from = s.i + 1;
                out.id = s.str_or_null()?;
                id_span = out.id.map(|_| (from, s.i - 1));
            }
            "object" => {
                seen.once(1)?;
                // vLLM's error object says `"object": "error"`: serde's to read
                if s.str_or_null()? == Some("error") {
                    return None;
                }
            }
            "model" => {
                seen.once(2)?;
                out.model = s.str_or_null()?;
            }
            "system_fingerprint" => {
                seen.once(3)?;
                out.fingerprint = s.str_or_null()?;
            }
            "choices" => {
                head_end = Some((key_at, seen.0));
                seen.once(4)?;
                s.chunk_choices(&mut out.text, &mut span, &mut out.finish)?;
                choices = true;
            }
            "usage" => {
                seen.once(6)?;
                if s.peek() == Some(b'n') {
                    s.null()?;
                } else {
                    out.usage = Some(s.chunk_usage()?);
                }
            }
            // an error or Groq's extension: only their absence is this scan's
            "x_groq" | "error" => {
                seen.once(5)?;
                s.null()?;
            }
            _ => s.skip(0)?,
        }
        s.ws();
        if s.eat(b',').is_none() {
            break;
        }
    }
    s.eat(b'}')?;
    s.ws();
    if !choices || s.i != s.b.len() {
        return None;
    }
    if out.finish.is_some() {
        // a finish chunk's end is no content chunk's: no shortcut from it
        span = None;
    }
    if let (Some(h), Some((end, bits))) = (head, head_end) {
        if !resumed {
            h.bytes.clear();
            h.bytes.extend_from_slice(&s.b[..end]);
            h.seen = bits;
            h.id = id_span.filter(|&(_, to)| to <= end);
            h.off = false;
        }
        h.mid.clear();
        h.tail.clear();
        if let Some((from, to)) = span.filter(|&(from, _)| from > end && !h.off) {
            h.mid.extend_from_slice(&s.b[end..from]);
            h.tail.extend_from_slice(&s.b[to..]);
        }
    }
    Some(())
}

impl<'a> Scan<'a> {
    /// A string with no escape, or `null`.
    fn str_or_null(&mut self) -> Option<Option<&'a str>> {
        if self.peek() == Some(b'n') {
            self.null()?;
            return Some(None);
        }
        self.raw_str().map(Some)
    }

    /// A string appended to `out`, its escapes decoded (not `\u`: serde's).
    fn content_into(&mut self, out: &mut String) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let start = self.i;
            let end = self.plain_run();
            out.push_str(self.text.get(start..end)?);
            self.i = end;
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {
                    let c = match *self.b.get(self.i + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => return None,
                    };
                    out.push(c);
                    self.i += 2;
                }
                _ => return None, // a control character: serde refuses it
            }
        }
    }

    /// `"choices": [ {one choice 0 with content only} ]` (or none, `[]`), its content
    /// appended to `text`, its finish reason (without escapes) in `finish`. `span`: where
    /// the content's string starts and ends, when it is one.
    fn chunk_choices(
        &mut self,
        text: &mut String,
        span: &mut Option<(usize, usize)>,
        finish: &mut Option<&'a str>,
    ) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        self.eat(b'{')?;
        let mut seen = Seen::default();
        loop {
            self.ws();
            let key = self.raw_str()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match key {
                "index" => {
                    seen.once(0)?;
                    self.eat(b'0')?;
                    if self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                        return None;
                    }
                }
                "delta" => {
                    seen.once(1)?;
                    self.delta(text, span)?;
                }
                "logprobs" => {
                    seen.once(2)?;
                    self.null()?;
                }
                "finish_reason" => {
                    seen.once(3)?;
                    *finish = self.str_or_null()?;
                }
                _ => self.skip(1)?,
            }
            self.ws();
            if self.eat(b',').is_none() {
                break;
            }
        }
        self.eat(b'}')?;
        self.ws();
        self.eat(b']')
    }

    /// A delta of `content` (and perhaps a `role` or fields nobody models), the content
    /// appended to `text`.
    fn delta(&mut self, text: &mut String, span: &mut Option<(usize, usize)>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut content = false;
        loop {
            self.ws();
            let key = self.raw_str()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match key {
                "content" => {
                    if std::mem::replace(&mut content, true) {
                        return None;
                    }
                    if self.peek() == Some(b'n') {
                        self.null()?;
                    } else {
                        let from = self.i;
                        self.content_into(text)?;
                        *span = Some((from, self.i));
                    }
                }
                // what the shared shape models besides the content: serde's to read
                "refusal" | "tool_calls" | "reasoning_content" | "reasoning" | "audio"
                | "annotations" | "function_call" => return None,
                _ => self.skip(2)?,
            }
            self.ws();
            if self.eat(b',').is_none() {
                break;
            }
        }
        self.eat(b'}')
    }

    /// A `usage` object as serde reads `wire::Usage` (its counts whole numbers or `null`,
    /// its details objects or `null`, `cost` a plain number or `null`, any other member
    /// passed over), made the shared usage by `reply::usage`; `None` for anything else
    /// (a duplicate, another type, an implausible count: serde's to read or refuse).
    fn chunk_usage(&mut self) -> Option<crate::chat::Usage> {
        let mut u = wire::Usage::default();
        let mut seen = Seen::default();
        self.object(|s, key| {
            match key {
                "prompt_tokens" => {
                    seen.once(0)?;
                    u.prompt_tokens = s.count()?;
                }
                "completion_tokens" => {
                    seen.once(1)?;
                    u.completion_tokens = s.count()?;
                }
                "prompt_tokens_details" => {
                    seen.once(2)?;
                    u.prompt_tokens_details = s
                        .details("cached_tokens")?
                        .map(|n| wire::PromptDetails { cached_tokens: n });
                }
                "completion_tokens_details" => {
                    seen.once(3)?;
                    u.completion_tokens_details =
                        s.details("reasoning_tokens")?
                            .map(|n| wire::CompletionDetails {
                                reasoning_tokens: n,
                            });
                }
                "cost" => {
                    seen.once(4)?;
                    if s.peek() == Some(b'n') {
                        s.null()?;
                    } else {
                        // a plain number only (an exponent may be out of f64's range)
                        let from = s.i;
                        s.number()?;
                        let n = s.b.get(from..s.i)?;
                        if n.len() > 24 || n.iter().any(|c| matches!(c, b'e' | b'E')) {
                            return None;
                        }
                        u.cost = s.text.get(from..s.i)?.parse().ok();
                        u.cost?;
                    }
                }
                _ => s.skip(2)?,
            }
            Some(())
        })?;
        super::super::reply::usage(u).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_usual_chunk() {
        let c = text_chunk(
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hi \"x\"\n"},"logprobs":null,"finish_reason":null}],"obfuscation":"ab","service_tier":{"a":[1,-2.5e3,true,null,"\u00e9"]}}"#,
            None,
        )
        .unwrap();
        assert_eq!(c.model, Some("m"));
        assert_eq!(c.fingerprint, Some("fp"));
        assert_eq!(c.text, "Hi \"x\"\n");
    }

    /// A chunk that repeats the last one's head is read from its choices on: the same
    /// text, the head's model not stated again, a key the head held refused again after
    /// the choices (a duplicate: serde's); one whose head differs is read whole.
    #[test]
    fn a_repeated_head_is_read_from_its_choices_on() {
        let mut head = Head::default();
        let a = r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}"#;
        let c = text_chunk(a, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (Some("m"), "a"));
        let b = r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"b"}}],"x":1}"#;
        let c = text_chunk(b, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (None, "b"));
        let dup =
            r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"b"}}],"model":"m"}"#;
        assert_eq!(text_chunk(dup, Some(&mut head)), None);
        let other = r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"c"}}]}"#;
        let c = text_chunk(other, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (Some("m"), "c"));
        // the same around the content too: only the content read
        let same = r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"\"d\n"}}]}"#;
        let c = text_chunk(same, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (None, "\"d\n"));
        for bad in [
            r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"\u00e9"}}]}"#,
            r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"x"}}]"#,
            r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"x}}]}"#,
        ] {
            assert_eq!(text_chunk(bad, Some(&mut head)), None, "{bad}");
        }
        // another tail: read from the choices on, and the shortcut off
        let more =
            r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"e"}}],"model":"n"}"#;
        assert_eq!(text_chunk(more, Some(&mut head)), None, "a duplicate");
        let more =
            r#"{"id":"d","model":"m","choices":[{"index":0,"delta":{"content":"e"}}],"o":"x"}"#;
        let c = text_chunk(more, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (None, "e"));
        assert!(head.mid.is_empty());
        // a stream's role chunk, then its content chunks: the second content chunk on
        // takes the shortcut (its middle is the first content chunk's)
        let mut head = Head::default();
        let role = r#"{"id":"e","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(text_chunk(role, Some(&mut head)).unwrap().model, Some("m"));
        let one = r#"{"id":"e","model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}"#;
        assert_eq!(text_chunk(one, Some(&mut head)).unwrap().text, "a");
        assert_eq!(head.mid, br#""choices":[{"index":0,"delta":{"content":"#);
        let two = r#"{"id":"e","model":"m","choices":[{"index":0,"delta":{"content":"b"}}]}"#;
        let c = text_chunk(two, Some(&mut head)).unwrap();
        assert_eq!((c.model, c.text.as_str()), (None, "b"));
    }

    /// The text is read into the thread's spare buffer, and a chunk the scan leaves to
    /// serde hands it back (emptied) even when it had read some of its content.
    #[test]
    fn the_text_is_read_into_the_spare_buffer() {
        crate::chat::recycle_text(String::with_capacity(100));
        let c = text_chunk(
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            None,
        )
        .unwrap();
        assert_eq!((c.text.as_str(), c.text.capacity()), ("Hi", 100));
        crate::chat::recycle_text(c.text);
        let left =
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"st\u006fp"}]}"#;
        assert_eq!(text_chunk(left, None), None);
        let spare = crate::chat::spare_text();
        assert_eq!((spare.len(), spare.capacity()), (0, 100));
    }

    #[test]
    fn leaves_everything_else_to_serde() {
        for data in [
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"\u0073top"}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":7}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"a","finish_reason":"b"}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"\u00e9"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"model":"a","model":"b","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1.0}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":-1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":99999999999999999999}}"#,
            r#"{"choices":[],"usage":{"cost":1e3}}"#,
            r#"{"choices":[],"usage":[1,2]}"#,
            r#"{"choices":[],"usage":{"prompt_\u0074okens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}"#,
            r#"{"choices":[],"usage":null,"usage":null}"#,
            r#"{"choices":[],"x_groq":{"usage":{"prompt_tokens":1}}}"#,
            r#"{"object":"error","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"id":7,"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"x":01}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"x":"\q"}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]} x"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],}"#,
            r#"{"choices":{}}"#,
            r#"{"id":"a"}"#,
            "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\u{1}\"}}]}",
        ] {
            assert_eq!(text_chunk(data, None), None, "{data}");
        }
    }

    /// Whatever the scan reads, it reads as serde does: the same chunk, and the same
    /// model and fingerprint stated (once, where they change), for chunks it takes and
    /// chunks it leaves, in one stream.
    #[test]
    fn a_scanned_chunk_is_the_chunk_serde_reads() {
        use crate::provider::openai::stream::{read, read_serde, Seen};
        use crate::provider::sse::SseEvent;
        let stream = [
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]}"#,
            // the same head again: read from its choices on, the model not stated again
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"again"},"logprobs":null,"finish_reason":null}]}"#,
            // another model, read by serde: the head is forgotten, and the model stated
            // again when the first head comes back
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m9","choices":[{"index":0,"delta":{"content":"\u00e9"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"back"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"\u00e9"},"logprobs":null,"finish_reason":null}]}"#,
            r#" { "id" : null , "model" : "m" , "choices" : [ { "delta" : { "content" : "lo\\ \/ \b\f\r\t" } } ] , "created" : -0.5E+2 } "#,
            r#"{"model":"m2","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":null}}],"usage":null}"#,
            r#"{"model":"m2","system_fingerprint":"fp","choices":[{"index":0,"delta":{}}],"extra":[[],{},[{"a":"\u0041"}]]}"#,
            r#"{"model":"m2","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"é ✓ 😀"},"custom":{"x":1}}]}"#,
            r#"{"model":"m3","choices":[{"index":0,"delta":{"content":"\u00e9"}}]}"#,
            r#"{"model":"m3","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            r#"{"model":"m3","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        ];
        let (mut fast, mut slow) = (Seen::default(), Seen::default());
        let mut taken = 0;
        for data in stream {
            let event = SseEvent::message(data);
            let trimmed = event.data.trim();
            taken += usize::from(text_chunk(trimmed, None).is_some());
            let a = read(&event, &mut fast).unwrap();
            let b = read_serde(&event, trimmed, &mut slow).unwrap();
            assert_eq!(a, b, "{data}");
        }
        assert_eq!(taken, 10, "the scan takes the usual chunks");
    }

    /// Finish and usage chunks of many shapes — every finish reason, ids before, after or
    /// without the head, deltas with and without content, usage objects of every field,
    /// their details, extras, `null`s, and of the types and sizes serde refuses — read in
    /// a stream, alone and after a content chunk of the same head (the head's shortcut),
    /// and followed by a content chunk: each is read (or refused) as serde reads it, and
    /// the scan takes those of the usual shapes.
    #[test]
    fn finish_and_usage_chunks_are_read_as_serde_reads_them() {
        use crate::provider::openai::stream::{read, read_serde, Seen};
        use crate::provider::sse::SseEvent;
        let heads = [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","#,
            r#"{"id":null,"model":"m","system_fingerprint":"fp","#,
            r#"{"model":"m","#,
            r#"{ "id" : "c\"2" , "model" : "m" , "#,
        ];
        let ends = [
            "}",
            r#","id":"late"}"#,
            r#","obfuscation":"x"}"#,
            r#","usage":null}"#,
        ];
        let mut choices: Vec<String> = Vec::new();
        for finish in [
            "null",
            r#""stop""#,
            r#""length""#,
            r#""tool_calls""#,
            r#""function_call""#,
            r#""content_filter""#,
            r#""vendor's own""#,
            r#""""#,
            r#""st\u006fp""#,
            "1",
        ] {
            for delta in [
                r#""delta":{},"#,
                r#""delta":{"content":"bye"},"#,
                r#""delta":{"role":"assistant","content":""},"#,
                "",
            ] {
                choices.push(format!(
                    r#""choices":[{{"index":0,{delta}"logprobs":null,"finish_reason":{finish}}}]"#
                ));
            }
        }
        choices.push(r#""choices":[{"finish_reason":"stop","index":0}]"#.to_owned());
        for usage in [
            "null",
            "{}",
            r#"{"prompt_tokens":12,"completion_tokens":60,"total_tokens":72}"#,
            r#"{"completion_tokens":60,"prompt_tokens":12,"total_tokens":72}"#,
            r#"{"prompt_tokens":12,"completion_tokens":60,"total_tokens":72,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":5,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#,
            r#"{"prompt_tokens":null,"completion_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":{}}"#,
            r#"{"prompt_tokens":1,"cost":0.00012,"is_byok":false,"cost_details":{"a":[1,{"b":null}]}}"#,
            r#"{"prompt_tokens":1,"cost":null}"#,
            r#"{"prompt_tokens":1,"cost":12}"#,
            r#"{"prompt_tokens":1,"cost":1e-3}"#,
            r#"{"prompt_tokens":1,"cost":-0.5}"#,
            r#"{"prompt_tokens":1,"cost":"0.5"}"#,
            r#"{ "prompt_tokens" : 0 , "completion_tokens" : 18446744073709551615 }"#,
            r#"{"prompt_tokens":18446744073709551616}"#,
            r#"{"prompt_tokens":1000000000000}"#,
            r#"{"prompt_tokens":1.5}"#,
            r#"{"prompt_tokens":1e2}"#,
            r#"{"prompt_tokens":-0}"#,
            r#"{"prompt_tokens":01}"#,
            r#"{"prompt_tokens":"1"}"#,
            r#"{"prompt_tokens":1,"prompt_tokens":2}"#,
            r#"{"prompt_tokens_details":{"cached_tokens":1.5}}"#,
            r#"{"prompt_tokens_details":[1]}"#,
            r#"{"prompt_tokens_details":{"cached_tokens":2},"prompt_tokens_details":null}"#,
            r#"{"completion_tokens_details":{"reasoning_tokens":2,"reasoning_tokens":2}}"#,
            r#"{"total_tokens":{"deep":[[[[]]]]}}"#,
            r#"{"prompt_tokens":1,}"#,
            "[]",
            "7",
        ] {
            for choice in [
                r#""choices":[]"#,
                r#""choices":[{"index":0,"delta":{},"finish_reason":"stop"}]"#,
            ] {
                choices.push(format!(r#"{choice},"usage":{usage}"#));
            }
        }
        let next = r#""choices":[{"index":0,"delta":{"content":"more"},"logprobs":null,"finish_reason":null}]}"#;
        let (mut cases, mut taken) = (0, 0);
        for head in heads {
            for end in ends {
                for choice in &choices {
                    let data = format!("{head}{choice}{end}");
                    let before = format!(
                        r#"{head}"choices":[{{"index":0,"delta":{{"content":"a"}},"logprobs":null,"finish_reason":null}}]}}"#
                    );
                    let after = format!("{head}{next}");
                    for stream in [
                        vec![data.as_str(), after.as_str()],
                        vec![
                            before.as_str(),
                            before.as_str(),
                            data.as_str(),
                            after.as_str(),
                        ],
                    ] {
                        let (mut fast, mut slow) = (Seen::default(), Seen::default());
                        for data in stream {
                            let event = SseEvent::message(data);
                            let trimmed = event.data.trim();
                            let a = read(&event, &mut fast);
                            let b = read_serde(&event, trimmed, &mut slow);
                            if b.is_err() {
                                // refused: what was seen no longer matters to the test
                                slow = Seen::default();
                                fast = Seen::default();
                            }
                            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{data}");
                            cases += 1;
                            taken += usize::from(text_chunk(trimmed, None).is_some());
                        }
                    }
                }
            }
        }
        assert!(cases > 3000, "{cases} chunks");
        assert!(taken > cases / 2, "{taken} of {cases} chunks scanned");
    }

    /// The data's trim is `str::trim`'s, whitespace of any kind at either end.
    #[test]
    fn data_is_trimmed_as_str_trim_does() {
        use crate::provider::openai::stream::trimmed;
        for data in [
            "",
            " ",
            "x",
            "{}",
            " {} ",
            "{}\n",
            "\t[DONE]",
            "[DONE]\u{a0}",
            "\u{3000}{}",
            "{}\u{2029}",
            "é",
            "{é}",
            "\u{85}x\u{85}",
        ] {
            assert_eq!(trimmed(data), data.trim(), "{data:?}");
        }
    }

    /// With `n` = 2, a scanned piece of answer 0 is answer 0's text, and the finish
    /// signal still waits for both answers.
    #[test]
    fn a_scanned_piece_of_two_choices_is_answer_zeros() {
        use crate::chat::FinishReason;
        use crate::provider::codec::StreamEvents as _;
        use crate::provider::openai::stream::Events;
        use crate::provider::sse::{Parsed, SseEvent};
        let mut events = Events::new(2);
        let mut next = |data: &str| match events.parse_event(&SseEvent::message(data)) {
            Ok(Parsed::Chunk(c)) => c,
            other => panic!("{other:?}"),
        };
        let zero = r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
        assert!(text_chunk(zero, None).is_some());
        let a = next(zero);
        assert_eq!(a.text, "Hi");
        assert!(a.choices.is_empty() && a.finish_reason.is_none());
        let b =
            next(r#"{"choices":[{"index":1,"delta":{"content":"Yo"},"finish_reason":"stop"}]}"#);
        assert_eq!((b.choices[0].index, b.choices[0].text.as_str()), (1, "Yo"));
        assert_eq!(b.finish_reason, None, "answer 0 is still going");
        let c = next(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#);
        assert_eq!(c.finish_reason, Some(FinishReason::Length));
    }
}
