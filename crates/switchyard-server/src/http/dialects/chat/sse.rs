//! The streamed response: OpenAI `chat.completion.chunk` events ending in `data: [DONE]`,
//! or — when a committed stream breaks and cannot be rescued, or is still open when the
//! server's shutdown grace period ends — an `error` event and no `[DONE]`, so no client
//! mistakes a truncated answer for a finished one. A client that goes away drops the body,
//! which drops the gateway stream and cancels the upstream call; the partial usage is
//! still logged (status 499; 503 when the shutdown ended it).

use std::convert::Infallible;
use std::pin::Pin;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::Serialize;
use serde_json::json;
use switchyard::gateway::{CancelSlot, ChatStream, StreamEvent};
use switchyard::{ChatChunk, ChatResponse};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::wire::{WireFunctionCall, WireUsage};
use super::{
    completion_entry, completion_id, error_event, log_completion, who_answered, Ctx, Trail,
};
use crate::http::state::AppState;

/// Turn a committed gateway stream into the HTTP response.
pub(super) fn respond(
    state: AppState,
    ctx: Ctx,
    stream: ChatStream,
    include_usage: bool,
) -> Response {
    let ttft = ctx.started.elapsed();
    state.metrics.ttft(&ctx.route_label, ttft);
    let mut headers = axum::http::HeaderMap::new();
    who_answered(
        &mut headers,
        &ctx,
        &stream.provider,
        // the trail up to the commit point lacks the try that committed the stream
        stream.attempts.len() + 1,
        stream.failed_over,
        None,
    );
    let body =
        Body::from_stream(Writer::new(state, ctx, stream, include_usage, ttft).into_stream());
    let mut resp = (StatusCode::OK, body).into_response();
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

/// Writes events for one stream and logs how it ended (also when dropped early).
struct Writer {
    state: AppState,
    ctx: Ctx,
    stream: Option<ChatStream>,
    cancel: CancelSlot,
    include_usage: bool,
    ttft: std::time::Duration,
    id: String,
    model: String,
    started_role: bool,
    /// Set once the request's log line is written.
    logged: bool,
    /// Resolves when the server's shutdown grace period is over (a child of
    /// `Shared::grace_over`, so waiting on it touches no lock other streams share).
    grace_over: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// What the writer does next.
enum Next {
    Event(StreamEvent),
    GraceOver,
}

impl Writer {
    fn new(
        state: AppState,
        ctx: Ctx,
        stream: ChatStream,
        include_usage: bool,
        ttft: std::time::Duration,
    ) -> Self {
        Self {
            id: completion_id(&ctx),
            model: stream.model.clone(),
            cancel: stream.cancel_slot(),
            stream: Some(stream),
            ctx,
            include_usage,
            ttft,
            started_role: false,
            logged: false,
            grace_over: Box::pin(state.grace_over.child_token().cancelled_owned()),
            state,
        }
    }

    fn into_stream(self) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send {
        // boxed: the state moves through every poll, and a pointer is cheaper to move
        futures_util::stream::unfold(Box::new(self), |mut w| async move {
            let bytes = w.next_bytes().await?;
            Some((Ok(bytes), w))
        })
    }

    async fn next_bytes(&mut self) -> Option<Bytes> {
        if !self.started_role {
            self.started_role = true;
            let delta = Delta {
                role: Some("assistant"),
                content: Some(""),
                tool_calls: Vec::new(),
            };
            return Some(self.chunk(delta, None, None, None));
        }
        let stream = self.stream.as_mut()?;
        let next = tokio::select! {
            biased;
            () = self.grace_over.as_mut() => Next::GraceOver,
            event = stream.next() => Next::Event(event?),
        };
        let event = match next {
            Next::Event(event) => event,
            Next::GraceOver => return Some(self.end_for_shutdown()),
        };
        Some(match event {
            StreamEvent::Chunk(c) => self.content(&c),
            StreamEvent::Done(resp) => {
                super::record_tokens(&self.state, &self.ctx, resp.usage.as_ref()).await;
                let last = self.done(&resp);
                // `[DONE]` goes out only once the line is in the file
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
                event_bytes(&error_event(&err))
            }
        })
    }

    /// The grace period is over: drop the gateway stream (cancelling the upstream call),
    /// log what was delivered and used (status 503), and end with an error event.
    fn end_for_shutdown(&mut self) -> Bytes {
        drop(self.stream.take());
        self.logged = true;
        let mut entry = match self.cancel.take() {
            Some(partial) => super::completion_entry(&self.ctx, &partial, 503, Some(self.ttft)),
            None => self.ctx.entry(503),
        };
        entry.error = Some("server_shutting_down".to_owned());
        self.state.log.write(entry);
        self.state
            .metrics
            .request(&self.ctx.route_label, 503, true, self.ctx.started.elapsed());
        event_bytes(&crate::http::edge::shutting_down().body())
    }

    /// A content chunk; a finish reason goes in its own chunk, as OpenAI sends it.
    fn content(&mut self, c: &ChatChunk) -> Bytes {
        if let Some(m) = &c.model {
            self.model.clone_from(m);
        }
        if !c.has_content() {
            // a finish reason is written by `done`, which always follows it
            return Bytes::new();
        }
        let delta = Delta {
            role: None,
            content: (!c.text.is_empty()).then_some(c.text.as_str()),
            tool_calls: c
                .tool_calls
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
                .collect(),
        };
        self.chunk(delta, None, None, None)
    }

    /// The finish chunk, the usage chunk (if asked for), `[DONE]`; count (the caller logs).
    fn done(&mut self, resp: &ChatResponse) -> Bytes {
        self.stream = None;
        let finish = resp
            .finish_reason
            .as_ref()
            .map_or("stop", switchyard::chat::FinishReason::as_openai);
        let trail = Trail::of(resp);
        let mut out = Vec::new();
        let empty = Delta {
            role: None,
            content: None,
            tool_calls: Vec::new(),
        };
        if self.include_usage {
            out.extend_from_slice(&self.chunk(empty, Some(finish), None, None));
            out.extend_from_slice(
                &self.usage_chunk(resp.usage.as_ref().map(WireUsage::from), &trail),
            );
        } else {
            out.extend_from_slice(&self.chunk(empty, Some(finish), None, Some(&trail)));
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        self.logged = true;
        self.state
            .metrics
            .request(&self.ctx.route_label, 200, true, self.ctx.started.elapsed());
        if resp.failed_over {
            self.state.metrics.failover(&self.ctx.route_label);
        }
        Bytes::from(out)
    }

    fn chunk(
        &self,
        delta: Delta<'_>,
        finish: Option<&str>,
        usage: Option<&WireUsage>,
        trail: Option<&Trail<'_>>,
    ) -> Bytes {
        let body = ChunkBody {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.ctx.time_ms / 1000,
            model: &self.model,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish,
                logprobs: None,
            }],
            usage,
            switchyard: trail,
        };
        event_bytes(&body)
    }

    /// The final usage chunk; `usage` is null when the vendor reported none.
    fn usage_chunk(&self, usage: Option<WireUsage>, trail: &Trail<'_>) -> Bytes {
        event_bytes(&json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.ctx.time_ms / 1000,
            "model": self.model,
            "choices": [],
            "usage": usage,
            "switchyard": trail,
        }))
    }
}

impl Drop for Writer {
    /// The client went away before the end: drop the gateway stream (cancelling the
    /// upstream call) and log what was delivered and used.
    fn drop(&mut self) {
        if self.logged {
            return;
        }
        drop(self.stream.take());
        let Some(partial) = self.cancel.take() else {
            return;
        };
        log_completion(&self.state, &self.ctx, &partial, 499, Some(self.ttft));
        self.state
            .metrics
            .request(&self.ctx.route_label, 499, true, self.ctx.started.elapsed());
    }
}

fn event_bytes<T: Serialize>(value: &T) -> Bytes {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut out, value).is_err() {
        out.extend_from_slice(b"{}");
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

#[derive(Serialize)]
struct ChunkBody<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
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
    logprobs: Option<()>,
}

#[derive(Serialize)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
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
