//! AWS's binary event stream (`application/vnd.amazon.eventstream`), read as events.
//!
//! Owns [`EventStream`], which turns a stream of body bytes into the same [`SseEvent`]s a
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
use std::pin::Pin;
use std::task::{Context, Poll};

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

use super::sse::SseEvent;
use crate::error::{ErrorKind, ProviderError};

/// The media type of an AWS event stream.
pub const MEDIA_TYPE: &str = "application/vnd.amazon.eventstream";

/// The smallest frame: a 12-byte prelude and a 4-byte message CRC.
const MIN_FRAME: usize = 16;

/// Events read from a stream of event-stream bytes.
///
/// Transport errors pass through and end the stream; so does a frame that is not valid
/// (bad CRC, bad length, a payload that is not UTF-8). Bytes left over at the end of the
/// body (a cut frame) are dropped: the completion rule then sees a stream that ended.
pub struct EventStream<S> {
    bytes: Option<S>,
    buffer: BytesMut,
    ready: VecDeque<SseEvent>,
    max_frame_bytes: usize,
    /// A bad frame's error, yielded after the events before it.
    failed: Option<ProviderError>,
}

impl<S> EventStream<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
{
    /// Read `bytes` as frames, refusing any frame longer than `max_frame_bytes`.
    #[must_use]
    pub fn new(bytes: S, max_frame_bytes: usize) -> Self {
        Self {
            bytes: Some(bytes),
            buffer: BytesMut::new(),
            ready: VecDeque::new(),
            max_frame_bytes,
            failed: None,
        }
    }

    /// Decode every whole frame in the buffer.
    fn drain(&mut self) -> Result<(), ProviderError> {
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
            self.ready.push_back(as_event(&message)?);
        }
        Ok(())
    }
}

impl<S> Stream for EventStream<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Unpin,
{
    type Item = Result<SseEvent, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(e) = this.failed.take() {
                return Poll::Ready(Some(Err(e)));
            }
            let Some(bytes) = this.bytes.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(bytes).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.bytes = None,
                Poll::Ready(Some(Err(e))) => {
                    this.bytes = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    this.buffer.extend_from_slice(&chunk);
                    if let Err(e) = this.drain() {
                        // the events decoded before the bad frame go first
                        this.bytes = None;
                        this.buffer.clear();
                        this.failed = Some(e);
                    }
                }
            }
        }
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
        event,
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
