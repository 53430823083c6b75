//! AWS's binary event stream (`application/vnd.amazon.eventstream`), read as events.
//!
//! Owns [`EventStream`] (a [`Framed`] stream of [`AwsFrames`]), which turns a stream of body bytes into the same [`SseEvent`]s a
//! server-sent-events body gives, so a vendor whose streams use this framing (Bedrock's
//! ConverseStream) runs under the shared completion rule of [`super::sse::into_chunks`].
//! Frames are decoded by `aws-smithy-eventstream` ([`read_message_from`]), which checks the
//! prelude's and the message's CRC-32; a frame that fails either is `Malformed`.
//!
//! A frame (total length u32, headers length u32, prelude CRC, headers, payload, message
//! CRC) becomes, by its `:message-type` header:
//! - `event`: an event named by `:event-type` (`contentBlockDelta`), its payload as `data`;
//! - `exception`: an event named `exception:{:exception-type}` (`exception:throttlingException`),
//!   its payload (a JSON object with `message`) as `data`;
//! - `error`: an event named `error:{:error-code}`, the `:error-message` header as `data`.
//!
//! AWS's event names never contain `:`, so these cannot collide. A frame longer than the
//! provider's body cap is refused from its prelude, before it is buffered.

use std::collections::VecDeque;

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

use super::sse::{Deframe, Framed, SseEvent};
use crate::error::{ErrorKind, ProviderError};

/// The media type of an AWS event stream.
pub const MEDIA_TYPE: &str = "application/vnd.amazon.eventstream";

/// The smallest frame: a 12-byte prelude and a 4-byte message CRC.
const MIN_FRAME: usize = 16;

/// Events read from a stream of event-stream bytes.
///
/// Transport errors pass through and end the stream; so does a frame that is not valid
/// (bad CRC, bad length, a payload that is not UTF-8), after the events decoded before it.
/// Bytes left over at the end of the body (a cut frame) are dropped: the completion rule
/// then sees a stream that ended.
pub type EventStream<S> = Framed<S, AwsFrames>;

impl<S> EventStream<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
{
    /// Read `bytes` as frames, refusing any frame longer than `max_frame_bytes`.
    #[must_use]
    pub fn new(bytes: S, max_frame_bytes: usize) -> Self {
        Self::with(
            bytes,
            AwsFrames {
                buffer: BytesMut::new(),
                max_frame_bytes,
                ready: VecDeque::new(),
                current: SseEvent::message(String::new()),
            },
        )
    }
}

/// The framing of [`EventStream`]: whole frames cut from the bytes and decoded.
#[derive(Debug)]
pub struct AwsFrames {
    buffer: BytesMut,
    max_frame_bytes: usize,
    /// Events decoded, not yet handed out.
    ready: VecDeque<SseEvent>,
    /// The last one handed out.
    current: SseEvent,
}

impl Deframe for AwsFrames {
    fn feed(&mut self, piece: Bytes) -> Result<(), ProviderError> {
        self.buffer.extend_from_slice(&piece);
        let mut ready = std::mem::take(&mut self.ready);
        let drained = self.drain(&mut ready);
        self.ready = ready;
        if drained.is_err() {
            self.buffer.clear();
        }
        drained
    }

    fn advance(&mut self) -> bool {
        match self.ready.pop_front() {
            Some(event) => {
                self.current = event;
                true
            }
            None => false,
        }
    }

    fn event(&self) -> &SseEvent {
        &self.current
    }
}

impl AwsFrames {
    /// Decode every whole frame in the buffer into `ready`.
    fn drain(&mut self, ready: &mut VecDeque<SseEvent>) -> Result<(), ProviderError> {
        while self.buffer.len() >= 4 {
            let mut prelude = [0u8; 4];
            prelude.copy_from_slice(&self.buffer[..4]);
            let total = u32::from_be_bytes(prelude) as usize;
            if total < MIN_FRAME {
                return Err(malformed(format!(
                    "event-stream frame length {total} is shorter than a frame"
                )));
            }
            if total > self.max_frame_bytes {
                return Err(malformed(format!(
                    "event-stream frame larger than {} bytes",
                    self.max_frame_bytes
                )));
            }
            if self.buffer.len() < total {
                return Ok(());
            }
            let frame = self.buffer.split_to(total).freeze();
            let message = read_message_from(frame)
                .map_err(|e| malformed(format!("invalid event-stream frame: {e}")))?;
            ready.push_back(as_event(&message)?);
        }
        Ok(())
    }
}

/// A string header of `message`.
fn header<'m>(message: &'m Message, name: &str) -> Option<&'m str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// One decoded frame as an event (the naming is in the module docs).
fn as_event(message: &Message) -> Result<SseEvent, ProviderError> {
    let payload = || {
        std::str::from_utf8(message.payload())
            .map(str::to_owned)
            .map_err(|_| malformed("event-stream payload is not UTF-8"))
    };
    let kind = header(message, ":message-type").unwrap_or("event");
    let (event, data) = match kind {
        "event" => {
            let name = header(message, ":event-type")
                .ok_or_else(|| malformed("event-stream event without :event-type"))?;
            (name.to_owned(), payload()?)
        }
        "exception" => {
            let name = header(message, ":exception-type").unwrap_or("unknown");
            (format!("exception:{name}"), payload()?)
        }
        "error" => {
            let code = header(message, ":error-code").unwrap_or("unknown");
            let text = header(message, ":error-message").unwrap_or_default();
            (format!("error:{code}"), text.to_owned())
        }
        other => {
            return Err(malformed(format!(
                "event-stream frame of unknown :message-type {other:?}"
            )))
        }
    };
    Ok(SseEvent {
        event: event.into(),
        data,
        id: None,
        retry: None,
    })
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}

#[cfg(test)]
mod tests;
