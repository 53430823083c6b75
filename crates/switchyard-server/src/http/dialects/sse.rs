//! A committed stream's life, the same in every dialect: headers once the gateway has
//! committed, the dialect's encoder for every event, and an honest end. When a committed
//! stream breaks and cannot be rescued, or is still open when the server's shutdown grace
//! period ends, it ends with the dialect's error event and never its success terminator, so
//! no client mistakes a truncated answer for a finished one. A client that goes away drops
//! the body, which drops the gateway stream and cancels the upstream call; the partial usage
//! is still logged (status 499; 503 when the shutdown ended it). A client that stops
//! reading stops the writer too (it runs only as fast as its bytes are taken), so the
//! response carries the stream's deadline to the edge ([`Delivery`]), which closes the
//! connection when the write timeout or that deadline passes with writes waiting; the body
//! is then dropped the same way, and logged 499 with `error: "client_stopped_reading"`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use futures_util::StreamExt as _;
use switchyard::chat::{ChoiceDelta, ThinkingDelta, ToolCallDelta};
use switchyard::gateway::{CancelSlot, ChatStream, StreamEvent};
use switchyard::{ChatChunk, ChatResponse};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::ctx::{completion_entry, record_tokens, who_answered, Ctx};
use super::{Dialect, StreamEncoder};
use crate::http::edge::Delivery;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// Turn a committed gateway stream into the HTTP response.
pub(crate) fn respond<D: Dialect>(
    state: AppState,
    mut ctx: Ctx,
    stream: ChatStream,
    extra: D::Extra,
) -> Response {
    ctx.dropped = stream.dropped;
    let ttft = ctx.started.elapsed();
    state.metrics.ttft(&ctx.route_label, ttft);
    let mut headers = axum::http::HeaderMap::new();
    who_answered(
        &mut headers,
        &state,
        &ctx,
        &stream.provider,
        // the trail up to the commit point lacks the try that committed the stream
        stream.attempts.len() + 1,
        stream.failed_over,
        None,
    );
    let encoder = D::encoder(&ctx, &extra, &stream.model);
    let delivery = Delivery::until(stream.deadline);
    let writer = Writer::<D> {
        cancel: stream.cancel_slot(),
        delivery: delivery.clone(),
        stream: Some(stream),
        encoder,
        extra,
        ttft,
        started: false,
        logged: false,
        out: BytesMut::new(),
        held: None,
        exhausted: false,
        grace_over: Box::pin(state.grace_over.child_token().cancelled_owned()),
        ctx,
        state,
    };
    let body = Body::from_stream(writer.into_stream());
    let mut resp = (StatusCode::OK, body).into_response();
    resp.extensions_mut().insert(delivery);
    resp.headers_mut().extend(headers);
    let h = resp.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// A stored answer (from the route's cache) as the dialect's stream: the events a live
/// stream of it would have — its opening, its content, its end with usage and the trail —
/// in one body. The caller has its log line (committed before the body goes out).
pub(crate) fn replay<D: Dialect>(
    state: &AppState,
    ctx: &Ctx,
    extra: &D::Extra,
    resp: &ChatResponse,
) -> Response {
    let mut encoder = D::encoder(ctx, extra, &resp.model);
    let mut body = Vec::with_capacity(resp.text.len() * 2 + 1024);
    body.extend_from_slice(&encoder.start());
    for chunk in replay_chunks(resp) {
        body.extend_from_slice(&encoder.chunk(&chunk));
    }
    body.extend_from_slice(&encoder.done(resp));
    let elapsed = ctx.started.elapsed();
    state.metrics.ttft(&ctx.route_label, elapsed);
    state.metrics.request(&ctx.route_label, 200, true, elapsed);
    let mut resp_out = (StatusCode::OK, Body::from(body)).into_response();
    let h = resp_out.headers_mut();
    who_answered(
        h,
        state,
        ctx,
        &resp.provider,
        resp.attempts.len(),
        resp.failed_over,
        Some(resp.cost),
    );
    h.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    resp_out
}

/// The content chunks of a whole answer, one per part: reasoning blocks, the text (with
/// its log probabilities), a refusal, each tool call whole, each further answer of `n`.
fn replay_chunks(resp: &ChatResponse) -> Vec<ChatChunk> {
    let mut out = Vec::new();
    let head = || ChatChunk {
        model: Some(resp.model.clone()),
        system_fingerprint: resp.system_fingerprint.clone(),
        ..ChatChunk::default()
    };
    for (i, t) in resp.thinking.iter().enumerate() {
        out.push(ChatChunk {
            thinking: vec![ThinkingDelta {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                text: t.text.clone(),
                signature: t.signature.clone(),
                redacted: t.redacted.clone(),
            }],
            ..head()
        });
    }
    if !resp.text.is_empty() {
        out.push(ChatChunk {
            text: resp.text.clone(),
            logprobs: logprob_entries(resp.logprobs.as_ref()),
            ..head()
        });
    }
    if !resp.refusal.is_empty() {
        out.push(ChatChunk {
            refusal: resp.refusal.clone(),
            ..head()
        });
    }
    for (i, call) in resp.tool_calls.iter().enumerate() {
        out.push(ChatChunk {
            tool_calls: vec![call_delta(i, call)],
            ..head()
        });
    }
    for (k, choice) in resp.alternatives.iter().enumerate() {
        out.push(ChatChunk {
            choices: vec![ChoiceDelta {
                index: u32::try_from(k + 1).unwrap_or(u32::MAX),
                text: choice.text.clone(),
                refusal: choice.refusal.clone(),
                tool_calls: (choice.tool_calls.iter().enumerate())
                    .map(|(i, c)| call_delta(i, c))
                    .collect(),
                logprobs: logprob_entries(choice.logprobs.as_ref()),
                finish_reason: choice.finish_reason.clone(),
            }],
            ..head()
        });
    }
    if out.is_empty() {
        out.push(head());
    }
    out
}

fn call_delta(i: usize, call: &switchyard::chat::ToolCall) -> ToolCallDelta {
    ToolCallDelta {
        index: u32::try_from(i).unwrap_or(u32::MAX),
        id: Some(call.id.clone()),
        name: Some(call.name.clone()),
        arguments: call.arguments.clone(),
    }
}

/// A whole answer's log probabilities (`{"content": [...]}`) as a chunk carries them
/// (the entries).
fn logprob_entries(logprobs: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let value = logprobs?;
    match value.get("content") {
        Some(entries) => Some(entries.clone()),
        None => value.is_array().then(|| value.clone()),
    }
}

/// Writes events for one stream and logs how it ended (also when dropped early).
struct Writer<D: Dialect> {
    state: AppState,
    ctx: Ctx,
    stream: Option<ChatStream>,
    cancel: CancelSlot,
    /// What the edge says of the client: whether it stopped reading.
    delivery: Delivery,
    encoder: D::Encoder,
    extra: D::Extra,
    ttft: std::time::Duration,
    /// Set once the encoder's opening frames are out.
    started: bool,
    /// Set once the request's log line is written.
    logged: bool,
    /// Where frames are batched: the chunks ready when the body is polled are written
    /// into one piece (up to [`BATCH_BYTES`]), split off for hyper; the room hyper's writes
    /// give back is reused.
    out: BytesMut,
    /// The stream's last event, read while a batch was being written: handled once the
    /// batch is out.
    held: Option<StreamEvent>,
    /// The gateway stream ended without a last event (the body ends after the batch).
    exhausted: bool,
    /// Resolves when the server's shutdown grace period is over (a child of
    /// `Shared::grace_over`, so waiting on it touches no lock other streams share).
    grace_over: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// Chunks written into one piece for hyper, while more are ready, up to about this many
/// bytes (a piece is handed over once it reaches it).
const BATCH_BYTES: usize = 16 * 1024;

/// What [`Writer::poll_frames`] came to.
// An event is moved once per stream end; boxing would allocate per chunk (see StreamEvent).
#[allow(clippy::large_enum_variant)]
enum Wrote {
    Bytes(Bytes),
    End,
    Pending,
    /// The stream's last event (done or failed): written after work that awaits.
    Last(StreamEvent),
}

impl<D: Dialect> Writer<D> {
    fn into_stream(self) -> Frames<D> {
        Frames {
            writer: Some(Box::new(self)),
            work: None,
        }
    }

    /// The frames ready now, polled by hand: the opening once, then every chunk the
    /// gateway stream has ready, batched; its last event handed back (it awaits).
    fn poll_frames(&mut self, cx: &mut Context<'_>) -> Wrote {
        if let Some(last) = self.held.take() {
            return Wrote::Last(last);
        }
        if !self.started {
            self.started = true;
            let start = self.encoder.start();
            self.out.extend_from_slice(&start);
        }
        if let Some(stream) = self.stream.as_mut().filter(|_| !self.exhausted) {
            if self.grace_over.as_mut().poll(cx).is_ready() {
                let end = self.end_for_shutdown();
                self.out.extend_from_slice(&end);
                return Wrote::Bytes(self.out.split().freeze());
            }
            loop {
                let mut next = stream.poll_next_unpin(cx);
                // a chunk is written where it lies, not moved out first
                if let Poll::Ready(Some(StreamEvent::Chunk(c))) = &mut next {
                    self.encoder.chunk_into(c, &mut self.out);
                    // written: its text's buffer serves the next chunk read
                    c.recycle_text();
                    if self.out.len() >= BATCH_BYTES {
                        break;
                    }
                    continue;
                }
                match next {
                    Poll::Ready(Some(StreamEvent::Chunk(_))) => {}
                    Poll::Ready(Some(last)) => {
                        if self.out.is_empty() {
                            return Wrote::Last(last);
                        }
                        self.held = Some(last);
                        break;
                    }
                    Poll::Ready(None) => {
                        self.exhausted = true;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
        }
        if !self.out.is_empty() {
            return Wrote::Bytes(self.out.split().freeze());
        }
        if self.stream.is_none() || self.exhausted {
            return Wrote::End;
        }
        Wrote::Pending
    }

    /// The stream's last event: the answer stored, recorded and logged (the log line in
    /// the file before the event goes out), or the failure logged.
    async fn last(&mut self, event: StreamEvent) -> Bytes {
        match event {
            StreamEvent::Chunk(c) => self.encoder.chunk(&c),
            StreamEvent::Done(mut resp) => {
                self.stream = None;
                if let Some(plan) = self.ctx.cache_plan() {
                    // boxed: a rare step, kept out of this future's state
                    Box::pin(super::ctx::cache_put(&self.state, plan, &resp)).await;
                }
                resp.cache = self.ctx.cache_note();
                if let Some(note) = resp.cache {
                    (self.state.metrics).cache(&self.ctx.route_label, note.status.as_str(), None);
                }
                record_tokens(&self.state, &self.ctx, resp.usage.as_ref()).await;
                D::finished(&self.state, &self.ctx, &self.extra, &resp).await;
                let last = self.encoder.done(&resp);
                self.logged = true;
                let elapsed = self.ctx.started.elapsed();
                self.state
                    .metrics
                    .request(&self.ctx.route_label, 200, true, elapsed);
                if resp.failed_over {
                    self.state.metrics.failover(&self.ctx.route_label);
                }
                // the last event goes out only once the line is in the file
                let entry = completion_entry(&self.ctx, &resp, 200, Some(self.ttft));
                self.state.log.commit(entry).await;
                last
            }
            StreamEvent::Failed(err) => {
                self.stream = None;
                let mut entry = self.ctx.entry(200);
                entry.attempts = err.attempts().to_vec();
                entry.error = Some(format!("stream_failed:{}", err.label()));
                entry.ttft_ms = Some(self.ttft.as_secs_f64() * 1000.0);
                self.logged = true;
                self.state.metrics.request(
                    &self.ctx.route_label,
                    200,
                    true,
                    self.ctx.started.elapsed(),
                );
                // the error event goes out only once the line is in the file
                self.state.log.commit(entry).await;
                self.encoder.failed(&ApiError::from(*err))
            }
        }
    }

    /// The grace period is over: drop the gateway stream (cancelling the upstream call),
    /// log what was delivered and used (status 503), and end with an error event.
    fn end_for_shutdown(&mut self) -> Bytes {
        drop(self.stream.take());
        self.logged = true;
        let mut entry = match self.cancel.take() {
            Some(partial) => completion_entry(&self.ctx, &partial, 503, Some(self.ttft)),
            None => self.ctx.entry(503),
        };
        entry.error = Some("server_shutting_down".to_owned());
        self.state.log.write(entry);
        self.state
            .metrics
            .request(&self.ctx.route_label, 503, true, self.ctx.started.elapsed());
        self.encoder.failed(&crate::http::edge::shutting_down())
    }
}

/// The body of a committed stream: the [`Writer`] polled by hand, its state in a box that
/// stays put; only its last event's work runs as a future (holding the writer until it is
/// done). Dropped midway, it drops the writer either way (see `Drop for Writer`).
struct Frames<D: Dialect> {
    writer: Option<Box<Writer<D>>>,
    work: Option<LastWork<D>>,
}

/// The work of a stream's last event: it hands the writer back with the last bytes.
type LastWork<D> = Pin<Box<dyn Future<Output = (Box<Writer<D>>, Bytes)> + Send>>;

impl<D: Dialect> futures_util::Stream for Frames<D> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(work) = &mut this.work {
                let (writer, bytes) = std::task::ready!(work.as_mut().poll(cx));
                this.work = None;
                this.writer = Some(writer);
                return Poll::Ready(Some(Ok(bytes)));
            }
            let Some(writer) = this.writer.as_mut() else {
                return Poll::Ready(None);
            };
            match writer.poll_frames(cx) {
                Wrote::Bytes(bytes) => return Poll::Ready(Some(Ok(bytes))),
                Wrote::End => return Poll::Ready(None),
                Wrote::Pending => return Poll::Pending,
                Wrote::Last(event) => {
                    if let Some(mut writer) = this.writer.take() {
                        this.work = Some(Box::pin(async move {
                            let bytes = writer.last(event).await;
                            (writer, bytes)
                        }));
                    }
                }
            }
        }
    }
}

impl<D: Dialect> Drop for Writer<D> {
    /// The client went away before the end, or stopped reading and was let go by the edge:
    /// drop the gateway stream (cancelling the upstream call) and log what was delivered
    /// and used, without waiting for the write.
    fn drop(&mut self) {
        if self.logged {
            return;
        }
        drop(self.stream.take());
        let Some(partial) = self.cancel.take() else {
            return;
        };
        let mut entry = completion_entry(&self.ctx, &partial, 499, Some(self.ttft));
        if self.delivery.client_stopped_reading() {
            entry.error = Some("client_stopped_reading".to_owned());
        }
        self.state.log.write(entry);
        self.state
            .metrics
            .request(&self.ctx.route_label, 499, true, self.ctx.started.elapsed());
    }
}
