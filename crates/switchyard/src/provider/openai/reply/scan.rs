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
//! escape, nesting deeper than [`MAX_DEPTH`], or bytes that are not JSON. So an answer it
//! reads is the answer serde reads, and one it does not is read (or refused) exactly as
//! before. In the spirit of the stream's chunk scan (`provider/openai/stream/scan.rs`).

use std::borrow::Cow;

use serde_json::Value;

use super::super::wire;

/// The deepest nesting of a skipped value the scan follows (deeper: serde reads it).
const MAX_DEPTH: u32 = 32;

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

/// Which of an object's known keys were read (serde refuses a duplicate).
#[derive(Default)]
struct Seen(u16);

impl Seen {
    fn once(&mut self, key: u16) -> Option<()> {
        let bit = 1 << key;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

/// A cursor over JSON bytes.
struct Scan<'a> {
    /// The bytes as text (a run between two ASCII bytes is borrowed from it unchecked).
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skip JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.i += 1)
    }

    /// The `:` after a key, and the whitespace around it.
    fn colon(&mut self) -> Option<()> {
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// After a member: `true` past a `,` (another member follows), `false` before the end.
    fn next(&mut self) -> Option<bool> {
        self.ws();
        Some(self.eat(b',').is_some())
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end) == Some(word)).then(|| self.i = end)
    }

    fn null(&mut self) -> Option<()> {
        self.word(b"null")
    }

    /// `null` read (`true`), or not there (`false`, nothing read).
    fn is_null(&mut self) -> Option<bool> {
        if self.peek() == Some(b'n') {
            self.null()?;
            return Some(true);
        }
        Some(false)
    }

    /// The end of a string's plain run from `self.i`.
    fn plain_run(&self) -> usize {
        crate::json_text::plain_run(self.b, self.i)
    }

    /// A string with no escape, borrowed (a key).
    fn raw_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let end = self.plain_run();
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        self.text.get(start..end)
    }

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

    /// The character of the `\uXXXX` at `self.i`; `None` for a surrogate (serde pairs
    /// them, or refuses one alone: its to say) or a bad digit.
    fn hex4(&self) -> Option<char> {
        let hex = self.b.get(self.i + 2..self.i + 6)?;
        let mut n = 0u32;
        for &h in hex {
            n = n * 16 + char::from(h).to_digit(16)?;
        }
        char::from_u32(n) // `None` for a surrogate
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

    /// A details object (`null` as none): its one count `name` (perhaps absent or `null`),
    /// the rest passed over.
    fn details(&mut self, name: &str) -> Option<Option<Option<u64>>> {
        if self.is_null()? {
            return Some(None);
        }
        let mut n = None;
        let mut seen = false;
        self.object(|s, key| {
            if key == name {
                if std::mem::replace(&mut seen, true) {
                    return None;
                }
                n = s.count()?;
                Some(())
            } else {
                s.skip(3)
            }
        })?;
        Some(Some(n))
    }

    /// An object, each member's key given to `member` with the cursor on its value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.raw_str()?;
            self.colon()?;
            member(self, key)?;
            if !self.next()? {
                break;
            }
        }
        self.eat(b'}')
    }

    /// A count as serde reads an `Option<u64>`: `null`, or digits that fit (a sign, a
    /// fraction or an exponent: serde's to read, or refuse).
    fn count(&mut self) -> Option<Option<u64>> {
        if self.is_null()? {
            return Some(None);
        }
        let start = self.i;
        let mut n = 0u64;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        if len == 0 || (len > 1 && self.b[start] == b'0') {
            return None;
        }
        match self.peek() {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(Some(n)),
        }
    }

    /// `cost` as serde reads an `Option<f64>`: `null`, or a number read by serde_json
    /// itself (its rounding is its own).
    fn cost(&mut self) -> Option<Option<f64>> {
        if self.is_null()? {
            return Some(None);
        }
        let start = self.i;
        self.number()?;
        serde_json::from_str(&self.text[start..self.i])
            .ok()
            .map(Some)
    }

    /// Any JSON value, checked and passed over.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_str(),
            b'{' => self.skip_seq(depth, b'}', true),
            b'[' => self.skip_seq(depth, b']', false),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.null(),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object (`keyed`) or an array, its members checked.
    fn skip_seq(&mut self, depth: u32, close: u8, keyed: bool) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            self.ws();
            if keyed {
                self.skip_str()?;
                self.colon()?;
            }
            self.skip(depth + 1)?;
            if !self.next()? {
                break;
            }
        }
        self.eat(close)
    }

    /// A string, its escapes checked.
    fn skip_str(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.i = self.plain_run();
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => match *self.b.get(self.i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                    b'u' => {
                        self.hex4()?;
                        self.i += 6;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// A number, as JSON writes one.
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        // `01`, `1x`: not a number serde reads
        match self.peek() {
            Some(c) if c.is_ascii_alphanumeric() || c == b'.' => None,
            _ => Some(()),
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }
}
