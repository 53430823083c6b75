//! The usual Chat Completions answer read by hand: one choice (index 0) whose message is
//! text (or `null`), perhaps a `refusal`, a finish reason, no log probabilities, and the
//! usage with its details. That is nearly every answer; the rest (tool calls, reasoning,
//! OpenAI's own extras, several choices, log probabilities, errors) is read by serde as
//! before (`reply.rs`).
//!
//! [`completion`] walks the body once and builds the [`wire::Completion`] serde would
//! build from it: strings without escapes borrowed, the content copied once into its text
//! (its escapes decoded), the counts read as serde reads a `u64`, a `cost` read by
//! serde_json itself. What serde ignores (`object`, `created`, `service_tier`, the role,
//! `total_tokens`, any field the gateway does not model) is only checked to be well-formed
//! JSON. It answers `None` — "read this one with serde" — for anything it is not sure of:
//! a shape other than the above, a field serde would refuse (a duplicate, a wrong type, a
//! count that is negative, fractional or too large), an escape in a key, a surrogate
//! escape, nesting deeper than `MAX_DEPTH` (`../cursor.rs`), or bytes that are not JSON. So an answer it
//! reads is the answer serde reads, and one it does not is read (or refused) exactly as
//! before. In the spirit of the stream's chunk scan (`provider/openai/stream/scan.rs`).

use std::borrow::Cow;

use serde_json::Value;

use super::super::cursor::{Scan, Seen};
use super::super::wire;

/// `body` read as the [`wire::Completion`] serde reads from it, when it is the usual
/// answer (see the module docs); `None`: serde's to read.
pub(in super::super) fn completion(body: &[u8]) -> Option<wire::Completion<'_>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut s = Scan {
        text,
        b: body,
        i: 0,
    };
    let mut out = wire::Completion {
        id: None,
        choices: None,
        model: None,
        system_fingerprint: None,
        usage: None,
        error: None,
        object: None,
    };
    let mut seen = Seen::default();
    s.ws();
    s.eat(b'{')?;
    loop {
        s.ws();
        let key = s.raw_str()?;
        s.colon()?;
        match key {
            "id" => {
                seen.once(0)?;
                out.id = s.cow_or_null()?;
            }
            "model" => {
                seen.once(1)?;
                out.model = s.cow_or_null()?;
            }
            "system_fingerprint" => {
                seen.once(2)?;
                out.system_fingerprint = s.cow_or_null()?;
            }
            "object" => {
                seen.once(3)?;
                out.object = s.cow_or_null()?;
                // vLLM's error object says `"object": "error"`: serde's to read
                if out.object.as_deref() == Some("error") {
                    return None;
                }
            }
            "choices" => {
                seen.once(4)?;
                out.choices = Some(vec![s.choices()?]);
            }
            "usage" => {
                seen.once(5)?;
                out.usage = s.usage()?;
            }
            "error" => return None,
            _ => s.skip(0)?,
        }
        if !s.next()? {
            break;
        }
    }
    s.eat(b'}')?;
    s.ws();
    (s.i == s.b.len() && out.choices.is_some()).then_some(out)
}

impl<'a> Scan<'a> {
    /// A string as serde reads it into a `Cow`: borrowed without escapes, decoded with;
    /// `null` as none.
    fn cow_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.is_null()? {
            return Some(None);
        }
        self.eat(b'"')?;
        let start = self.i;
        let end = self.plain_run();
        if self.b.get(end) == Some(&b'"') {
            self.i = end + 1;
            return self.text.get(start..end).map(|s| Some(Cow::Borrowed(s)));
        }
        let mut owned = String::new();
        self.i = start - 1;
        self.decoded_str(&mut owned)?;
        Some(Some(Cow::Owned(owned)))
    }

    /// A string appended to `out`, its escapes decoded (a surrogate's: serde's).
    fn decoded_str(&mut self, out: &mut String) -> Option<()> {
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
                        b'u' => {
                            let c = self.hex4()?;
                            out.push(c);
                            self.i += 6;
                            continue;
                        }
                        _ => return None,
                    };
                    out.push(c);
                    self.i += 2;
                }
                _ => return None, // a control character: serde refuses it
            }
        }
    }

    /// `"choices": [ {one choice} ]`: index 0 (or none), a message, a finish reason,
    /// log probabilities `null`.
    fn choices(&mut self) -> Option<wire::Choice<'a>> {
        self.eat(b'[')?;
        self.ws();
        self.eat(b'{')?;
        let mut message = None;
        let mut finish_reason = None;
        let mut seen = Seen::default();
        loop {
            self.ws();
            let key = self.raw_str()?;
            self.colon()?;
            match key {
                "index" => {
                    seen.once(0)?;
                    // `0` and then the member's end (`01`, `0.0`, `0e0`: not one)
                    self.eat(b'0')?;
                }
                "message" => {
                    seen.once(1)?;
                    message = Some(self.message()?);
                }
                "finish_reason" => {
                    seen.once(2)?;
                    finish_reason = self.cow_or_null()?;
                }
                "logprobs" => {
                    seen.once(3)?;
                    self.null()?;
                }
                _ => self.skip(1)?,
            }
            if !self.next()? {
                break;
            }
        }
        self.eat(b'}')?;
        self.ws();
        self.eat(b']')?;
        Some(wire::Choice {
            index: 0,
            message: message?,
            finish_reason,
            logprobs: None,
        })
    }

    /// A message of text (a string or `null`), perhaps a refusal and empty `annotations`;
    /// the other fields serde reads only as `null`.
    fn message(&mut self) -> Option<wire::ResponseMessage<'a>> {
        let mut m = wire::ResponseMessage {
            content: None,
            refusal: None,
            tool_calls: None,
            reasoning_content: None,
            reasoning: None,
            audio: None,
            annotations: None,
            function_call: None,
        };
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(m);
        }
        let mut seen = Seen::default();
        loop {
            self.ws();
            let key = self.raw_str()?;
            self.colon()?;
            match key {
                "content" => {
                    seen.once(0)?;
                    if !self.is_null()? {
                        let mut text = String::new();
                        self.decoded_str(&mut text)?;
                        m.content = Some(wire::MessageText(Ok(text)));
                    }
                }
                "refusal" => {
                    seen.once(1)?;
                    m.refusal = self.cow_or_null()?;
                }
                "annotations" => {
                    seen.once(2)?;
                    if !self.is_null()? {
                        self.eat(b'[')?;
                        self.ws();
                        self.eat(b']')?;
                        m.annotations = Some(Value::Array(Vec::new()));
                    }
                }
                // what else the gateway models: serde's to read, unless `null`
                "tool_calls" | "reasoning_content" | "reasoning" | "audio" | "function_call" => {
                    seen.once(match key {
                        "tool_calls" => 3,
                        "reasoning_content" => 4,
                        "reasoning" => 5,
                        "audio" => 6,
                        _ => 7,
                    })?;
                    self.null()?;
                }
                _ => self.skip(2)?,
            }
            if !self.next()? {
                break;
            }
        }
        self.eat(b'}')?;
        Some(m)
    }

    /// `usage`: `null`, or its counts and details.
    fn usage(&mut self) -> Option<Option<wire::Usage>> {
        if self.is_null()? {
            return Some(None);
        }
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
                    u.cost = s.cost()?;
                }
                _ => s.skip(2)?,
            }
            Some(())
        })?;
        Some(Some(u))
    }
}
