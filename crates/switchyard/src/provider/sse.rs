//! Server-sent events, parsed incrementally.
//!
//! Owns [`SseParser`], a push parser that follows the WHATWG EventSource rules
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html>, "Interpreting an event
//! stream"), and [`SseStream`], which turns a stream of body bytes into a stream of
//! [`SseEvent`]s (a [`Framed`] stream: the byte-reading loop another framing,
//! [`super::eventstream`], shares). Bytes may arrive split anywhere: inside a line, between `\r` and `\n`,
//! inside a UTF-8 character. The rules implemented:
//! - lines end with `\r\n`, `\n` or `\r`; a leading UTF-8 BOM is dropped;
//! - a blank line dispatches the event; several `data:` lines join with `\n`;
//! - `event:` names the event (default `message`); `id:` sets the last event id (kept across
//!   events; ignored if it contains NUL); `retry:` is kept when it is all ASCII digits;
//! - lines starting with `:` are comments (keep-alives); unknown fields are ignored;
//! - one space after the colon is removed; a line without a colon is a field with no value;
//! - an event whose data buffer is empty is not dispatched (so `event:`-only blocks and
//!   keep-alives produce nothing);
//! - at end of input an unterminated event is discarded.
//!
//! Invalid UTF-8 is decoded with replacement characters, as the spec requires.
//!
//! Also owns the one completion rule every SSE adapter shares ([`into_chunks`]): an adapter
//! turns each event into a [`Parsed`] and the stream ends at the vendor's *finish signal*,
//! not at `[DONE]` — after a finish it waits a short grace only for a trailing usage event.
//! Does not know any vendor's payloads: adapters interpret `data`.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;

use super::ChunkStream;
use crate::chat::{ChatChunk, Usage};
use crate::error::{ErrorKind, ProviderError};

/// Default wait, after the finish signal, for a trailing usage event (OpenAI sends usage in
/// a chunk after the one carrying `finish_reason`).
pub const DEFAULT_USAGE_GRACE: Duration = Duration::from_millis(250);

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, `message` when none was given (then not allocated: most events
    /// of most vendors have no name).
    pub event: Cow<'static, str>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id seen so far in the stream (it persists across events).
    pub id: Option<String>,
    /// A `retry:` value (milliseconds) given in this event's block.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event of type `message` with `data`.
    #[must_use]
    pub fn message(data: impl Into<String>) -> Self {
        Self {
            event: Cow::Borrowed("message"),
            data: data.into(),
            id: None,
            retry: None,
        }
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental event-stream parser: feed it bytes with [`push`](Self::push) as they
/// arrive, get back the events they complete; or read them one at a time where they are
/// assembled ([`advance`](Self::advance), then [`event`](Self::event)): no copy per event.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the line being read (no terminator yet). Lines are decoded whole, so a
    /// UTF-8 character split across pushes is reassembled before decoding.
    line: Vec<u8>,
    /// The previous push ended on `\r`: a `\n` starting the next push belongs to it.
    after_cr: bool,
    /// How many bytes of a leading BOM have been matched (held back, not in `line`).
    bom_seen: usize,
    /// The BOM check is over (matched or not).
    bom_done: bool,
    /// The event being assembled (its data lines each followed by `\n`), or once
    /// dispatched the event itself, until the next read starts the next one: its buffers
    /// are reused from one event to the next.
    current: SseEvent,
    /// `current` is a dispatched event (its data without the last `\n`).
    dispatched: bool,
    /// The `event:` name being assembled.
    name: String,
    retry: Option<u64>,
    /// The last event id; persists across events, as the spec says.
    last_id: Option<String>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            bom_seen: 0,
            bom_done: false,
            current: SseEvent::message(String::new()),
            dispatched: false,
            name: String::new(),
            retry: None,
            last_id: None,
        }
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes; returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        self.push_into(bytes, |e| events.push(e.clone()));
        events
    }

    /// [`push`](Self::push), handing each completed event to `out` (no list built).
    pub fn push_into(&mut self, mut bytes: &[u8], mut out: impl FnMut(&SseEvent)) {
        while self.advance(&mut bytes) {
            out(&self.current);
        }
    }

    /// Read `bytes` up to the end of the next complete event, moving `bytes` past what was
    /// read: true when that event is complete ([`event`](Self::event) holds it, until the
    /// next call); false when `bytes` ran out first (all of it taken in).
    pub fn advance(&mut self, bytes: &mut &[u8]) -> bool {
        if std::mem::take(&mut self.dispatched) {
            self.current.data.clear();
            self.current.event = Cow::Borrowed("message");
        }
        let mut rest = self.skip_bom(bytes);
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let dispatched = if self.line.is_empty() {
                // the whole line is in this piece: read it where it is
                self.process_line(&rest[..end])
            } else {
                self.line.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.line);
                let dispatched = self.process_line(&line);
                self.line = line;
                self.line.clear();
                dispatched
            };
            let terminator = rest[end];
            rest = &rest[end + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if dispatched {
                *bytes = rest;
                return true;
            }
        }
        self.line.extend_from_slice(rest);
        *bytes = &[];
        false
    }

    /// The event [`advance`](Self::advance) last completed.
    #[must_use]
    pub fn event(&self) -> &SseEvent {
        &self.current
    }

    /// Bytes held for an event not yet complete (the unterminated line plus the data
    /// gathered so far). Callers bound this to refuse a stream that never ends a line.
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        let data = if self.dispatched {
            0
        } else {
            self.current.data.len()
        };
        self.line.len() + data + self.name.len()
    }

    /// Drop a leading BOM, holding back a partial match until it is decided.
    fn skip_bom<'a>(&mut self, mut bytes: &'a [u8]) -> &'a [u8] {
        while !self.bom_done && !bytes.is_empty() {
            if bytes[0] == BOM[self.bom_seen] {
                self.bom_seen += 1;
                bytes = &bytes[1..];
                self.bom_done = self.bom_seen == BOM.len();
            } else {
                self.line.extend_from_slice(&BOM[..self.bom_seen]);
                self.bom_done = true;
            }
        }
        bytes
    }

    /// Apply one complete line; true when a blank line dispatched an event.
    fn process_line(&mut self, line: &[u8]) -> bool {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return false;
        }
        // the field name is ASCII: split on the raw bytes, decode only the value
        let (field, value) = match memchr::memchr(b':', line) {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                push_lossy(&mut self.current.data, value);
                self.current.data.push('\n');
            }
            b"event" => {
                self.name.clear();
                push_lossy(&mut self.name, value);
            }
            b"id" if !value.contains(&0) => {
                let mut id = String::new();
                push_lossy(&mut id, value);
                self.last_id = Some(id);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        false
    }

    /// End of an event block: the event is complete if it has data; the block's name and
    /// retry are reset either way.
    fn dispatch(&mut self) -> bool {
        let retry = self.retry.take();
        let name = std::mem::take(&mut self.name);
        if self.current.data.is_empty() {
            return false;
        }
        self.current.data.pop(); // the last `\n`
        self.current.event = if name.is_empty() {
            Cow::Borrowed("message")
        } else {
            Cow::Owned(name)
        };
        self.current.id = self.last_id.clone().filter(|id| !id.is_empty());
        self.current.retry = retry;
        self.dispatched = true;
        true
    }
}

/// Append `bytes` to `out` as UTF-8, invalid sequences replaced (one check: valid text,
/// nearly all of it, is copied as it is).
fn push_lossy(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// A framing: body bytes into events, as the bytes arrive. What [`Framed`] needs of one:
/// [`SseFrames`] (server-sent events), [`super::eventstream::AwsFrames`].
pub trait Deframe {
    /// Take the next piece of the body, whose events [`advance`](Self::advance) then reads.
    ///
    /// # Errors
    /// `Malformed` for bytes that cannot be events, or an event past the size cap: the
    /// stream yields the events read before it, then this error, and ends.
    fn feed(&mut self, piece: Bytes) -> Result<(), ProviderError>;

    /// Read on to the next complete event: true when [`event`](Self::event) holds it
    /// (until the next call), false when the pieces fed so far hold no more.
    fn advance(&mut self) -> bool;

    /// The event [`advance`](Self::advance) last completed.
    fn event(&self) -> &SseEvent;
}

/// A stream of [`SseEvent`]s read from a stream of body bytes by the framing `D`.
///
/// Transport errors pass through and end the stream; so does the framing's error, after
/// the events it let through. Read by [`into_chunks`] with [`Framed::poll_event`] (each
/// event borrowed where the framing assembled it); as a [`Stream`] each event is a copy.
pub struct Framed<S, D> {
    bytes: Option<S>,
    deframe: D,
    /// The framing's error, yielded after the events before it.
    failed: Option<ProviderError>,
}

impl<S, D> Framed<S, D> {
    /// Read `bytes` with `deframe`.
    pub(crate) fn with(bytes: S, deframe: D) -> Self {
        Self {
            bytes: Some(bytes),
            deframe,
            failed: None,
        }
    }
}

impl<S, D> Framed<S, D>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
    D: Deframe,
{
    /// The next event, borrowed from the framing until the next call.
    pub fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<&SseEvent, ProviderError>>> {
        loop {
            if self.deframe.advance() {
                return Poll::Ready(Some(Ok(self.deframe.event())));
            }
            if let Some(e) = self.failed.take() {
                return Poll::Ready(Some(Err(e)));
            }
            let Some(bytes) = self.bytes.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(bytes).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => self.bytes = None,
                Poll::Ready(Some(Err(e))) => {
                    self.bytes = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(piece))) => {
                    if let Err(e) = self.deframe.feed(piece) {
                        self.bytes = None;
                        self.failed = Some(e);
                    }
                }
            }
        }
    }
}

impl<S, D> Stream for Framed<S, D>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
    D: Deframe + Unpin,
{
    type Item = Result<SseEvent, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .poll_event(cx)
            .map(|next| next.map(|event| event.cloned()))
    }
}

/// A stream of [`SseEvent`]s read from a stream of server-sent-event body bytes.
///
/// Transport errors pass through and end the stream. An event that grows past
/// `max_event_bytes` without completing ends the stream with `Malformed` (a server that
/// never ends a line must not grow memory without bound). At the end of the bytes, an
/// unterminated event is discarded, per the spec.
pub type SseStream<S> = Framed<S, SseFrames>;

impl<S> SseStream<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
{
    /// Parse `bytes` into events, refusing any single event larger than `max_event_bytes`.
    #[must_use]
    pub fn new(bytes: S, max_event_bytes: usize) -> Self {
        Self::with(
            bytes,
            SseFrames {
                parser: SseParser::new(),
                max_event_bytes,
                piece: Bytes::new(),
                read: 0,
                whole: VecDeque::new(),
                popped: None,
            },
        )
    }
}

/// The server-sent-events framing of [`SseStream`]: [`SseParser`] under a size cap.
///
/// A piece that cannot take the buffered event past the cap (nearly all of them) is read
/// an event at a time where it lies, each event read in the parser's buffers; one that
/// could is read whole at once, as before, so that its events go with it when it does.
#[derive(Debug)]
pub struct SseFrames {
    parser: SseParser,
    max_event_bytes: usize,
    /// The piece being read, and how much of it has been.
    piece: Bytes,
    read: usize,
    /// The events of a piece read whole, not yet handed out.
    whole: VecDeque<SseEvent>,
    /// The last of them handed out.
    popped: Option<SseEvent>,
}

impl Deframe for SseFrames {
    fn feed(&mut self, piece: Bytes) -> Result<(), ProviderError> {
        if self.parser.buffered_len().saturating_add(piece.len()) <= self.max_event_bytes {
            // what the parser holds grows by less than the piece: it cannot pass the cap
            self.piece = piece;
            self.read = 0;
            return Ok(());
        }
        let whole = &mut self.whole;
        self.parser
            .push_into(&piece, |e| whole.push_back(e.clone()));
        if self.parser.buffered_len() > self.max_event_bytes {
            // the events this piece completed go with it
            self.whole.clear();
            return Err(ProviderError::new(
                ErrorKind::Malformed,
                format!(
                    "server-sent event larger than {} bytes",
                    self.max_event_bytes
                ),
            ));
        }
        Ok(())
    }

    fn advance(&mut self) -> bool {
        if !self.whole.is_empty() {
            self.popped = self.whole.pop_front();
            return true;
        }
        self.popped = None;
        let Some(mut rest) = self.piece.get(self.read..) else {
            return false;
        };
        if rest.is_empty() {
            return false;
        }
        let before = rest.len();
        let done = self.parser.advance(&mut rest);
        self.read += before - rest.len();
        done
    }

    fn event(&self) -> &SseEvent {
        self.popped.as_ref().unwrap_or(self.parser.event())
    }
}

/// What an adapter made of one event.
// Nearly every event is a chunk: boxing it would allocate per event (see StreamEvent).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A piece of the completion. One carrying `finish_reason` is the vendor's finish
    /// signal; `usage`, when present, is the usage so far (the latest one wins).
    Chunk(ChatChunk),
    /// The vendor's end-of-stream marker (`[DONE]`, `message_stop`).
    Done,
    /// Nothing for the caller (pings, role-only deltas, events of no interest).
    Skip,
}

/// The chunks of a streamed completion, read from `events` (an [`SseStream`], or another
/// framing's events: [`super::eventstream::EventStream`]) with the adapter's `parse`.
///
/// The rule, for every vendor:
/// - chunks with text or tool calls are yielded as they come; usage is taken off them and
///   only the latest usage is reported, on the final chunk (so nobody sums it twice);
/// - the chunk carrying the finish signal is held back: it is yielded, with the usage,
///   when a usage-bearing chunk arrives (at once if the finish chunk itself carried usage),
///   at `Done`, at the end of the body, after `grace`, or when anything else happens after
///   the finish (an error after the finish cannot undo a complete answer). Then the stream
///   ends: a missing `[DONE]` is never waited for;
/// - before the finish signal: a `parse` error or transport error is yielded and ends the
///   stream; `Done` or the end of the body yields `Malformed` ("stream closed before the
///   finish signal"): a cut answer is never dressed as a complete one.
pub fn into_chunks<S, D, F>(events: Framed<S, D>, grace: Duration, parse: F) -> ChunkStream
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin + Send + 'static,
    D: Deframe + Send + 'static,
    F: FnMut(&SseEvent) -> Result<Parsed, ProviderError> + Send + 'static,
{
    into_chunks_scrubbed(events, grace, parse, |e| e)
}

/// [`into_chunks`], each error passed through `scrub` and each chunk's reported model
/// bounded ([`super::bound_reported_model`]) on the way out: what the shared HTTP
/// provider does to every chunk, done here rather than by one more stream layer.
pub(crate) fn into_chunks_scrubbed<S, D, F, X>(
    events: Framed<S, D>,
    grace: Duration,
    parse: F,
    scrub: X,
) -> ChunkStream
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin + Send + 'static,
    D: Deframe + Send + 'static,
    F: FnMut(&SseEvent) -> Result<Parsed, ProviderError> + Send + 'static,
    X: FnMut(ProviderError) -> ProviderError + Send + Unpin + 'static,
{
    let driver = Driver {
        events,
        parse,
        grace,
        held: None,
        usage: None,
        ended: false,
        stated: Stated::default(),
        scrub,
    };
    // polled by hand, not an `unfold` of an async step: each chunk is moved once out of
    // it, not through a future's state and the unfold's (boxed: the state stays put)
    Box::pin(Chunks(Box::new(driver)))
}

/// The stream [`into_chunks`] returns.
struct Chunks<E, F, X>(Box<Driver<E, F, X>>);

/// The state of [`into_chunks`].
struct Driver<E, F, X> {
    events: E,
    parse: F,
    /// What an error is passed through on its way out.
    scrub: X,
    grace: Duration,
    /// The finish chunk waiting for usage, and the timer that stops the wait.
    held: Option<(ChatChunk, Pin<Box<tokio::time::Sleep>>)>,
    /// The latest usage seen.
    usage: Option<Usage>,
    ended: bool,
    /// What a chunk passed over (no content) stated.
    stated: Stated,
}

/// The model and `system_fingerprint` a chunk with nothing to pass on stated, for the
/// next chunk that is passed on: an adapter may state them only where they change (the
/// OpenAI stream's role chunk), and whoever reads the stream keeps the latest.
#[derive(Default)]
struct Stated {
    model: Option<String>,
    fingerprint: Option<String>,
}

impl Stated {
    /// Keep what `chunk` (about to be dropped) stated.
    fn keep(&mut self, chunk: &mut ChatChunk) {
        if chunk.model.is_some() {
            self.model = chunk.model.take();
        }
        if chunk.system_fingerprint.is_some() {
            self.fingerprint = chunk.system_fingerprint.take();
        }
    }

    /// Give `chunk` (about to be passed on) what was kept, unless it states its own.
    fn restate(&mut self, chunk: &mut ChatChunk) {
        if let Some(model) = self.model.take() {
            chunk.model.get_or_insert(model);
        }
        if let Some(fingerprint) = self.fingerprint.take() {
            chunk.system_fingerprint.get_or_insert(fingerprint);
        }
    }
}

impl<S, D, F, X> Stream for Chunks<Framed<S, D>, F, X>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
    D: Deframe,
    F: FnMut(&SseEvent) -> Result<Parsed, ProviderError>,
    X: FnMut(ProviderError) -> ProviderError + Unpin,
{
    type Item = Result<ChatChunk, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // what the driver returns is returned as it is (a chunk is moved once, into it)
        self.get_mut().0.poll_chunk(cx)
    }
}

impl<S, D, F, X> Driver<Framed<S, D>, F, X>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
    D: Deframe,
    F: FnMut(&SseEvent) -> Result<Parsed, ProviderError>,
    X: FnMut(ProviderError) -> ProviderError,
{
    /// The next chunk, its reported model bounded ([`super::bound_reported_model`]), or
    /// the next error, scrubbed.
    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<ChatChunk, ProviderError>>> {
        let d = self;
        loop {
            if d.ended {
                return Poll::Ready(None);
            }
            if let Some((_, timer)) = &mut d.held {
                // the next event, or none once the grace is over
                let parsed = match d.events.poll_event(cx) {
                    Poll::Ready(Some(Ok(event))) => (d.parse)(event),
                    Poll::Ready(_) => Ok(Parsed::Done),
                    Poll::Pending => match timer.as_mut().poll(cx) {
                        Poll::Ready(()) => Ok(Parsed::Done),
                        Poll::Pending => return Poll::Pending,
                    },
                };
                match parsed {
                    Ok(Parsed::Skip) => continue,
                    Ok(Parsed::Chunk(c)) if c.usage.is_none() => continue,
                    Ok(Parsed::Chunk(c)) => d.usage = c.usage,
                    Ok(Parsed::Done) | Err(_) => {}
                }
                let mut last = d.finish();
                super::bound_reported_model(&mut last.model);
                return Poll::Ready(Some(Ok(last)));
            }
            let mut parsed = match d.events.poll_event(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => Ok(Parsed::Done),
                Poll::Ready(Some(Err(e))) => Err(e),
                Poll::Ready(Some(Ok(event))) => (d.parse)(event),
            };
            // the chunk changed where the adapter left it, then moved out once
            if let Ok(Parsed::Chunk(chunk)) = &mut parsed {
                if !d.take_chunk(chunk) {
                    continue;
                }
                super::bound_reported_model(&mut chunk.model);
            }
            let e = match parsed {
                Ok(Parsed::Chunk(chunk)) => return Poll::Ready(Some(Ok(chunk))),
                Ok(Parsed::Skip) => continue,
                Ok(Parsed::Done) => ProviderError::new(
                    ErrorKind::Malformed,
                    "stream closed before the finish signal",
                ),
                Err(e) => e,
            };
            d.ended = true;
            return Poll::Ready(Some(Err((d.scrub)(e))));
        }
    }
}

impl<E, F, X> Driver<E, F, X> {
    /// Handle a chunk before the finish, changed where it lies: true when it is to be
    /// yielded now (false: dropped, what it stated kept for the next).
    fn take_chunk(&mut self, chunk: &mut ChatChunk) -> bool {
        let had_usage = chunk.usage.is_some();
        if let Some(usage) = chunk.usage.take() {
            self.usage = Some(usage);
        }
        let Some(finish_reason) = chunk.finish_reason.take() else {
            if !chunk.has_content() {
                self.stated.keep(chunk);
                chunk.recycle_text();
                return false;
            }
            self.stated.restate(chunk);
            return true;
        };
        self.stated.restate(chunk);
        let finish = ChatChunk {
            finish_reason: Some(finish_reason),
            id: chunk.id.take(),
            model: chunk.model.clone(),
            system_fingerprint: chunk.system_fingerprint.clone(),
            native: chunk.native.take(),
            ..ChatChunk::default()
        };
        let until = tokio::time::Instant::now() + self.grace;
        self.held = Some((finish, Box::pin(tokio::time::sleep_until(until))));
        if had_usage {
            // The finish chunk is complete: content, finish and usage in one.
            let mut last = self.finish();
            last.text = std::mem::take(&mut chunk.text);
            last.tool_calls = std::mem::take(&mut chunk.tool_calls);
            last.thinking = std::mem::take(&mut chunk.thinking);
            *chunk = last;
            return true;
        }
        chunk.has_content()
    }

    /// The held finish chunk with the latest usage; the stream ends after it.
    fn finish(&mut self) -> ChatChunk {
        self.ended = true;
        let mut last = self.held.take().map(|(c, _)| c).unwrap_or_default();
        last.usage = self.usage;
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::FinishReason;
    use futures_util::StreamExt as _;

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        SseParser::new().push(input)
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn one_event_per_blank_line() {
        let events = parse_all(b"data: one\n\ndata: two\n\n");
        assert_eq!(data(&events), ["one", "two"]);
        assert_eq!(events[0].event, "message");
    }

    #[test]
    fn every_line_ending_works_and_mixes() {
        for input in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\rdata: b\r\r",
            b"data: a\r\n\ndata: b\n\r\n",
        ] {
            assert_eq!(data(&parse_all(input)), ["a", "b"], "{input:?}");
        }
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        let events = parse_all(b"data: {\"a\":\ndata: 1}\n\n");
        assert_eq!(data(&events), ["{\"a\":\n1}"]);
        let events = parse_all(b"data\ndata\n\n");
        assert_eq!(data(&events), ["\n"]);
    }

    #[test]
    fn comments_keep_alives_and_empty_events_produce_nothing() {
        let input = b": keep-alive\n\n:OPENROUTER PROCESSING\n\nevent: ping\n\n\n\ndata: x\n\n";
        let events = parse_all(input);
        assert_eq!(data(&events), ["x"]);
        assert_eq!(
            events[0].event, "message",
            "event type resets after a block"
        );
    }

    #[test]
    fn event_names_id_and_retry() {
        let events = parse_all(b"event: error\nid: 7\nretry: 1500\ndata: {}\n\ndata: next\n\n");
        assert_eq!(events[0].event, "error");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry, Some(1500));
        assert_eq!(events[1].event, "message");
        assert_eq!(events[1].id.as_deref(), Some("7"), "the last id persists");
        assert_eq!(events[1].retry, None);
        let bad = parse_all(b"retry: 1.5\nid: a\0b\ndata: x\n\n");
        assert_eq!((bad[0].retry, bad[0].id.clone()), (None, None));
    }

    #[test]
    fn field_syntax_details() {
        // only one leading space is removed; no space is fine; unknown fields ignored
        let events = parse_all(b"data:  two spaces\ndata:none\nfoo: bar\ndata: a:b\n\n");
        assert_eq!(events[0].data, " two spaces\nnone\na:b");
        // `data:` with an empty value still dispatches an (empty) event
        assert_eq!(data(&parse_all(b"data:\n\n")), [""]);
    }

    #[test]
    fn bom_is_dropped_only_at_the_start() {
        assert_eq!(data(&parse_all(b"\xEF\xBB\xBFdata: a\n\n")), ["a"]);
        let mut p = SseParser::new();
        assert!(p.push(b"\xEF").is_empty());
        assert!(p.push(b"\xBB").is_empty());
        assert_eq!(data(&p.push(b"\xBFdata: a\n\n")), ["a"]);
        // a partial BOM that turns out not to be one is kept as (invalid) text
        let events = parse_all(b"\xEFdata: a\n\n");
        assert!(events.is_empty(), "the field name is not `data`");
    }

    #[test]
    fn utf8_split_inside_a_character_is_reassembled() {
        let text = "data: héllo → 世界\n\n".as_bytes();
        for cut in 0..text.len() {
            let mut p = SseParser::new();
            let mut events = p.push(&text[..cut]);
            events.extend(p.push(&text[cut..]));
            assert_eq!(data(&events), ["héllo → 世界"], "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(data(&parse_all(b"data: a\xFFb\n\n")), ["a\u{FFFD}b"]);
    }

    #[test]
    fn cr_at_the_end_of_a_push_is_not_doubled() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: a\r").is_empty());
        assert!(p.push(b"\n").is_empty(), "the \\n belongs to the \\r");
        assert_eq!(data(&p.push(b"\r\n")), ["a"]);
    }

    #[test]
    fn unterminated_event_is_not_dispatched() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: partial\n").is_empty());
        assert!(p.buffered_len() > 0);
    }

    /// The same input split at every byte offset (and into single bytes) parses the same.
    #[test]
    fn every_split_gives_the_same_events() {
        let input = "\u{FEFF}: hi\r\nevent: delta\r\ndata: {\"t\":\"é\"}\r\n\r\n\
                     data: a\rdata: b\r\rid: 3\ndata: 世\n\n:ka\n\ndata: [DONE]\n\n"
            .as_bytes();
        let whole = parse_all(input);
        assert_eq!(data(&whole), ["{\"t\":\"é\"}", "a\nb", "世", "[DONE]"]);
        assert_eq!(whole[0].event, "delta");
        for cut in 0..=input.len() {
            let mut p = SseParser::new();
            let mut events = p.push(&input[..cut]);
            events.extend(p.push(&input[cut..]));
            assert_eq!(events, whole, "split at {cut}");
        }
        for (a, b) in [(1, 5), (7, 8), (20, 40), (33, 34)] {
            let mut p = SseParser::new();
            let mut events = p.push(&input[..a]);
            events.extend(p.push(&input[a..b]));
            events.extend(p.push(&input[b..]));
            assert_eq!(events, whole, "split at {a} and {b}");
        }
        let mut p = SseParser::new();
        let bytewise: Vec<_> = input.iter().flat_map(|b| p.push(&[*b])).collect();
        assert_eq!(bytewise, whole);
    }

    fn byte_stream(parts: &[&'static [u8]]) -> impl Stream<Item = Result<Bytes, ProviderError>> {
        let items: Vec<_> = parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        futures_util::stream::iter(items)
    }

    #[tokio::test]
    async fn stream_adapter_yields_events_across_chunks() {
        let bytes = byte_stream(&[b"data: he", b"llo\n", b"\ndata: x\n\ndata: cut"]);
        let events: Vec<_> = SseStream::new(bytes, 1024).collect().await;
        let events: Vec<_> = events.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            data(&events),
            ["hello", "x"],
            "the unterminated event is dropped"
        );
    }

    #[tokio::test]
    async fn stream_adapter_passes_errors_and_bounds_events() {
        let items = vec![
            Ok(Bytes::from_static(b"data: a\n\n")),
            Err(ProviderError::new(ErrorKind::Connection, "reset")),
            Ok(Bytes::from_static(b"data: never\n\n")),
        ];
        let out: Vec<_> = SseStream::new(futures_util::stream::iter(items), 64)
            .collect()
            .await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].as_ref().unwrap_err().kind, ErrorKind::Connection);

        let huge: &'static [u8] = Box::leak(vec![b'x'; 100].into_boxed_slice());
        let out: Vec<_> = SseStream::new(byte_stream(&[b"data: ", huge]), 64)
            .collect()
            .await;
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ref().unwrap_err().kind, ErrorKind::Malformed);
    }

    /// A toy vendor: `t:text`, `f` (finish), `fu:N` (finish with usage), `u:N` (usage
    /// only), `m:model` (a model and fingerprint stated, no content), `p` (ping), `e`
    /// (error), `[DONE]`.
    fn toy(event: &SseEvent) -> Result<Parsed, ProviderError> {
        let usage = |n: &str| {
            Some(Usage {
                output_tokens: n.parse().unwrap(),
                ..Usage::default()
            })
        };
        let chunk = match event.data.split_once(':') {
            Some(("t", text)) => ChatChunk {
                text: text.to_owned(),
                ..ChatChunk::default()
            },
            Some(("u", n)) => ChatChunk {
                usage: usage(n),
                ..ChatChunk::default()
            },
            Some(("m", model)) => ChatChunk {
                model: Some(model.to_owned()),
                system_fingerprint: Some(format!("fp-{model}")),
                ..ChatChunk::default()
            },
            Some(("fu", n)) => ChatChunk {
                finish_reason: Some(FinishReason::Stop),
                usage: usage(n),
                ..ChatChunk::default()
            },
            _ => match event.data.as_str() {
                "f" => ChatChunk {
                    finish_reason: Some(FinishReason::Stop),
                    ..ChatChunk::default()
                },
                "p" => return Ok(Parsed::Skip),
                "[DONE]" => return Ok(Parsed::Done),
                _ => return Err(ProviderError::new(ErrorKind::Server, "boom")),
            },
        };
        Ok(Parsed::Chunk(chunk))
    }

    /// The chunks of `events`, after which the body stays open (`hang`) or ends.
    async fn run(events: &[&str], hang: bool) -> Vec<Result<ChatChunk, ProviderError>> {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        let first = futures_util::stream::iter([Ok(Bytes::from(body))]);
        let bytes: Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>> = if hang {
            Box::pin(first.chain(futures_util::stream::pending()))
        } else {
            Box::pin(first)
        };
        into_chunks(SseStream::new(bytes, 1024), DEFAULT_USAGE_GRACE, toy)
            .collect()
            .await
    }

    fn texts(out: &[Result<ChatChunk, ProviderError>]) -> Vec<String> {
        out.iter()
            .map(|r| match r {
                Ok(c) => format!(
                    "{}{}{}",
                    c.text,
                    if c.finish_reason.is_some() {
                        "|finish"
                    } else {
                        ""
                    },
                    c.usage
                        .map_or(String::new(), |u| format!("|usage={}", u.output_tokens))
                ),
                Err(e) => format!("err:{}", e.kind),
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn usage_after_finish_is_folded_into_the_last_chunk() {
        let out = run(&["p", "t:Hel", "t:lo", "f", "u:7", "[DONE]"], false).await;
        assert_eq!(texts(&out), ["Hel", "lo", "|finish|usage=7"]);
        // and the stream ends at the usage chunk, not at a [DONE] that never comes
        let out = run(&["t:Hi", "f", "p", "u:7"], true).await;
        assert_eq!(texts(&out), ["Hi", "|finish|usage=7"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_done_or_usage_is_not_waited_for() {
        let start = tokio::time::Instant::now();
        let out = run(&["t:Hi", "f"], true).await;
        assert_eq!(texts(&out), ["Hi", "|finish"]);
        assert_eq!(start.elapsed(), DEFAULT_USAGE_GRACE);
        let out = run(&["t:Hi", "fu:3"], true).await;
        assert_eq!(
            texts(&out),
            ["Hi", "|finish|usage=3"],
            "usage on the finish: no wait"
        );
        assert_eq!(start.elapsed(), DEFAULT_USAGE_GRACE);
    }

    #[tokio::test(start_paused = true)]
    async fn the_end_before_a_finish_is_malformed() {
        assert_eq!(texts(&run(&["t:Hi"], false).await), ["Hi", "err:malformed"]);
        assert_eq!(
            texts(&run(&["t:Hi", "[DONE]", "t:more"], false).await),
            ["Hi", "err:malformed"]
        );
        assert_eq!(texts(&run(&["e", "t:never"], false).await), ["err:server"]);
    }

    /// A model stated on a chunk with nothing to pass on (OpenAI's role chunk) reaches the
    /// reader on the next chunk that is passed on, unless that one states its own.
    #[tokio::test(start_paused = true)]
    async fn a_model_stated_on_a_skipped_chunk_is_carried_to_the_next() {
        let out = run(&["m:a", "t:Hi", "t:there", "m:b", "m:c", "f", "u:1"], false).await;
        let stated: Vec<_> = (out.iter().map(|r| r.as_ref().unwrap()))
            .map(|c| (c.model.as_deref(), c.system_fingerprint.as_deref()))
            .collect();
        assert_eq!(
            stated,
            [
                (Some("a"), Some("fp-a")),
                (None, None),
                (Some("c"), Some("fp-c"))
            ]
        );
        assert_eq!(texts(&out), ["Hi", "there", "|finish|usage=1"]);
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_finish_nothing_can_fail_the_stream() {
        let out = run(&["t:Hi", "u:2", "f", "e"], false).await;
        assert_eq!(
            texts(&out),
            ["Hi", "|finish|usage=2"],
            "the earlier usage is kept"
        );
        let out = run(&["t:Hi", "f", "t:late"], false).await;
        assert_eq!(texts(&out), ["Hi", "|finish"]);
    }
}
