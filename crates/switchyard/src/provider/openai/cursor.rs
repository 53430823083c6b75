//! The cursor the hand-written OpenAI readers share: the stream's chunk scan
//! (`stream/scan.rs`) and the reply scan (`reply/scan.rs`) each read their shape by hand
//! and leave anything unexpected to serde. This holds what both need: the position in the
//! bytes, whitespace, punctuation, keys without escapes, counts as serde reads them, and
//! any value checked and passed over (nesting up to [`MAX_DEPTH`]). Each reader adds its
//! own methods to [`Scan`] in its own file.

/// The deepest nesting a passed-over value may have; deeper is serde's to read.
pub(super) const MAX_DEPTH: u32 = 32;

/// Which of an object's known keys were read (serde refuses a duplicate).
#[derive(Default)]
pub(super) struct Seen(pub(super) u16);

impl Seen {
    pub(super) fn once(&mut self, key: u16) -> Option<()> {
        let bit = 1 << key;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

/// A cursor over JSON bytes.
pub(super) struct Scan<'a> {
    /// The bytes as text (a run between two ASCII bytes is borrowed from it unchecked).
    pub(super) text: &'a str,
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Scan<'a> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skip JSON whitespace.
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.i += 1)
    }

    /// The `:` after a key, and the whitespace around it.
    pub(super) fn colon(&mut self) -> Option<()> {
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// After a member: `true` past a `,` (another member follows), `false` before the end.
    pub(super) fn next(&mut self) -> Option<bool> {
        self.ws();
        Some(self.eat(b',').is_some())
    }

    pub(super) fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end) == Some(word)).then(|| self.i = end)
    }

    pub(super) fn null(&mut self) -> Option<()> {
        self.word(b"null")
    }

    /// `null` read (`true`), or not there (`false`, nothing read).
    pub(super) fn is_null(&mut self) -> Option<bool> {
        if self.peek() == Some(b'n') {
            self.null()?;
            return Some(true);
        }
        Some(false)
    }

    /// The end of a string's plain run from `self.i`.
    pub(super) fn plain_run(&self) -> usize {
        crate::json_text::plain_run(self.b, self.i)
    }

    /// A string with no escape, borrowed (a key).
    pub(super) fn raw_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let end = self.plain_run();
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        self.text.get(start..end)
    }

    /// The character of the `\uXXXX` at `self.i`; `None` for a surrogate (serde pairs
    /// them, or refuses one alone: its to say) or a bad digit.
    pub(super) fn hex4(&self) -> Option<char> {
        let hex = self.b.get(self.i + 2..self.i + 6)?;
        let mut n = 0u32;
        for &h in hex {
            n = n * 16 + char::from(h).to_digit(16)?;
        }
        char::from_u32(n) // `None` for a surrogate
    }

    /// An object, each member's key given to `member` with the cursor on its value.
    pub(super) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
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

    /// A details object (`null` as none): its one count `name` (perhaps absent or `null`),
    /// the rest passed over.
    pub(super) fn details(&mut self, name: &str) -> Option<Option<Option<u64>>> {
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

    /// A count as serde reads a `u64` (digits only, no sign, fraction or exponent), or
    /// `null`.
    pub(super) fn count(&mut self) -> Option<Option<u64>> {
        if self.peek() == Some(b'n') {
            self.null()?;
            return Some(None);
        }
        let from = self.i;
        self.number()?;
        let digits = self.b.get(from..self.i)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.text.get(from..self.i)?.parse().ok().map(Some)
    }

    /// `cost` as serde reads an `Option<f64>`: `null`, or a number read by serde_json
    /// itself (its rounding is its own).
    pub(super) fn cost(&mut self) -> Option<Option<f64>> {
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
    pub(super) fn skip(&mut self, depth: u32) -> Option<()> {
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
    pub(super) fn skip_seq(&mut self, depth: u32, close: u8, keyed: bool) -> Option<()> {
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
    pub(super) fn skip_str(&mut self) -> Option<()> {
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
    pub(super) fn number(&mut self) -> Option<()> {
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

    pub(super) fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }
}
