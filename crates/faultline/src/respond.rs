//! From a request and its fault to the response: what is sent, when, and when it stops.
//!
//! A streamed response is planned up front as a list of [`Step`]s (send these bytes,
//! sleep, abort the connection, hang) and played by one small stream; consecutive sends
//! are coalesced, so a healthy unpaced stream is one write. Owns the OpenAI-shaped error
//! statuses too (in each API's error shape). Does not choose the fault (`record` does) nor own
//! connections (`server`); the bytes of each API are `wire`'s.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;

use crate::answer;
use crate::fault::Fault;
use crate::record::Recorder;
use crate::server::ConnCtl;
use crate::wire::{self, messages, Api, Frames};

/// What the handler knows about the request.
pub(crate) struct Ask<'a> {
    /// The API it came in on, and is answered in.
    pub api: Api,
    pub model: &'a str,
    pub stream: bool,
    pub include_usage: bool,
    pub prefill: Option<&'a str>,
}

/// Answer `ask` as `fault` says; `recorder` is finished when faultline is done (or dropped
/// with the connection when the client goes first).
pub(crate) async fn respond(
    ask: &Ask<'_>,
    fault: Fault,
    recorder: Recorder,
    conn: Option<Arc<ConnCtl>>,
) -> Response {
    let pieces = answer::continuation(ask.prefill);
    match fault {
        Fault::Reset => {
            recorder.finish();
            let Some(conn) = conn else {
                let message = "reset needs faultline's own listener";
                return error(ask.api, 500, message, "server_error", None, None);
            };
            conn.reset();
            std::future::pending().await
        }
        Fault::Hang => {
            let _recorder = recorder; // dropped with the connection: the client gave up
            std::future::pending().await
        }
        Fault::Status { .. }
        | Fault::ContextLength
        | Fault::ContentFilter
        | Fault::RejectPrefill
        | Fault::Down { .. } => {
            recorder.finish();
            failure(&fault, ask.api, ask.model)
        }
        _ if ask.stream => stream(ask, &fault, &pieces, recorder),
        _ => plain(ask, &fault, &pieces, recorder).await,
    }
}

/// A non-streaming response.
async fn plain(ask: &Ask<'_>, fault: &Fault, pieces: &[&str], recorder: Recorder) -> Response {
    match *fault {
        Fault::Slow {
            first_token_ms,
            token_ms,
        } => {
            let n = u64::try_from(pieces.len()).unwrap_or(u64::MAX);
            let wait = first_token_ms.saturating_add(token_ms.saturating_mul(n));
            tokio::time::sleep(Duration::from_millis(wait)).await;
            recorder.finish();
            json(StatusCode::OK, wire::plain(ask.api, ask.model, pieces))
        }
        Fault::Malformed { .. } => {
            recorder.finish();
            json(StatusCode::OK, Bytes::from_static(wire::MALFORMED_BODY))
        }
        Fault::ErrorEvent { .. } => {
            recorder.finish();
            json(StatusCode::OK, wire::plain_error(ask.api, ask.model))
        }
        Fault::Cut { after, .. } | Fault::Stall { after } => {
            let body = wire::plain(ask.api, ask.model, pieces);
            let part = body.len() * after.min(pieces.len()) / pieces.len().max(1);
            let part = part.clamp(1, body.len().saturating_sub(1));
            let end = if matches!(fault, Fault::Cut { .. }) {
                Step::Abort
            } else {
                Step::Hang
            };
            let steps = vec![Step::Send(body.slice(..part)), end];
            let mut resp = Response::new(Body::from_stream(play(steps, recorder)));
            let h = resp.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
            resp
        }
        _ => {
            recorder.finish();
            json(StatusCode::OK, wire::plain(ask.api, ask.model, pieces))
        }
    }
}

/// A streamed response: the plan of events for `fault`, played.
///
/// The phases map onto each API's events (see [`Frames`]): the opening, one event per
/// token, the finish, the usage, the end marker. `finish_only` stops after the finish,
/// `no_done` before the end marker (for Responses, which has none: after
/// `response.completed`), both then holding the connection.
fn stream(ask: &Ask<'_>, fault: &Fault, pieces: &[&str], recorder: Recorder) -> Response {
    let events = Frames::new(ask.api, ask.model);
    let mut plan = Plan::default();
    plan.add(|out| events.open(out));
    if let Fault::Flood { chunk_bytes } = *fault {
        let text: String = "flood ".chars().cycle().take(chunk_bytes.max(1)).collect();
        let mut chunk = Vec::with_capacity(chunk_bytes + 256);
        events.token(&mut chunk, &text);
        return sse(plan.end(Step::Repeat(Bytes::from(chunk))), recorder);
    }
    let (first, gap) = match *fault {
        Fault::Slow {
            first_token_ms,
            token_ms,
        } => (first_token_ms, token_ms),
        _ => (0, 0),
    };
    plan.sleep(first);
    let upto = match *fault {
        Fault::Cut { after, .. }
        | Fault::Stall { after }
        | Fault::Malformed { after }
        | Fault::ErrorEvent { after } => after.min(pieces.len()),
        _ => pieces.len(),
    };
    let tokens = |plan: &mut Plan, from: usize, to: usize| {
        for (i, piece) in pieces.iter().enumerate().take(to).skip(from) {
            if i > 0 {
                plan.sleep(gap);
            }
            plan.add(|out| events.token(out, piece));
        }
    };
    tokens(&mut plan, 0, upto);
    match *fault {
        Fault::Cut { abort: true, .. } => return sse(plan.end(Step::Abort), recorder),
        Fault::Cut { abort: false, .. } => return sse(plan.end(None), recorder),
        Fault::Stall { .. } => return sse(plan.end(Step::Hang), recorder),
        Fault::ErrorEvent { .. } => {
            plan.add(|out| events.error(out));
            return sse(plan.end(None), recorder);
        }
        Fault::Malformed { .. } => {
            plan.add(|out| events.malformed(out));
            tokens(&mut plan, upto, pieces.len());
        }
        _ => {}
    }
    plan.add(|out| events.finish(out, pieces));
    if matches!(fault, Fault::FinishOnly) {
        return sse(plan.end(Step::Hang), recorder);
    }
    if ask.include_usage {
        plan.add(|out| events.usage(out, pieces));
    }
    if matches!(fault, Fault::NoDone) {
        return sse(plan.end(Step::Hang), recorder);
    }
    plan.add(|out| events.done(out));
    sse(plan.end(None), recorder)
}

/// One thing a streamed body does next.
#[derive(Debug)]
enum Step {
    /// Write these bytes (one body frame).
    Send(Bytes),
    /// Wait.
    Sleep(Duration),
    /// Drop the connection mid-body.
    Abort,
    /// Send nothing more, ever; the connection stays open until the client closes it.
    Hang,
    /// Send these bytes again and again, as fast as they are taken, until the client
    /// closes the connection.
    Repeat(Bytes),
}

/// Steps under construction; adjacent sends share one buffer.
#[derive(Default)]
struct Plan {
    steps: Vec<Step>,
    buf: Vec<u8>,
}

impl Plan {
    fn add(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.buf);
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.steps
                .push(Step::Send(Bytes::from(std::mem::take(&mut self.buf))));
        }
    }

    fn sleep(&mut self, ms: u64) {
        if ms > 0 {
            self.flush();
            self.steps.push(Step::Sleep(Duration::from_millis(ms)));
        }
    }

    /// The steps, ending with `last` (`None`: the body simply ends).
    fn end(mut self, last: impl Into<Option<Step>>) -> Vec<Step> {
        self.flush();
        self.steps.extend(last.into());
        self.steps
    }
}

/// Play `steps` as a body; the recorder is finished at the end (or at an abort), and
/// dropped with the body if the connection goes first.
fn play(
    steps: Vec<Step>,
    recorder: Recorder,
) -> impl Stream<Item = Result<Bytes, io::Error>> + Send {
    let state = (steps.into_iter(), Some(recorder));
    futures_util::stream::unfold(state, |(mut steps, mut recorder)| async move {
        loop {
            match steps.next() {
                Some(Step::Send(bytes)) => return Some((Ok(bytes), (steps, recorder))),
                Some(Step::Sleep(d)) => tokio::time::sleep(d).await,
                Some(Step::Abort) => {
                    // let hyper flush what was sent before the error drops the connection
                    tokio::task::yield_now().await;
                    if let Some(r) = recorder.take() {
                        r.finish();
                    }
                    let err = io::Error::new(io::ErrorKind::ConnectionAborted, "faultline: cut");
                    return Some((Err(err), (steps, recorder)));
                }
                Some(Step::Hang) => std::future::pending::<()>().await,
                Some(Step::Repeat(bytes)) => {
                    let mut again = vec![Step::Repeat(bytes.clone())].into_iter();
                    std::mem::swap(&mut steps, &mut again);
                    return Some((Ok(bytes), (steps, recorder)));
                }
                None => {
                    if let Some(r) = recorder.take() {
                        r.finish();
                    }
                    return None;
                }
            }
        }
    })
}

fn sse(steps: Vec<Step>, recorder: Recorder) -> Response {
    let mut resp = Response::new(Body::from_stream(play(steps, recorder)));
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

fn json(status: StatusCode, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// The error response of a failing fault, in `api`'s error shape.
fn failure(fault: &Fault, api: Api, model: &str) -> Response {
    match fault {
        Fault::Status {
            status,
            retry_after,
            retry_after_ms,
            code,
            message,
        } => {
            let mut resp = if api == Api::Messages {
                let (default_message, kind) = messages::status_defaults(*status, model);
                let message = message.as_deref().unwrap_or(&default_message);
                json(http_status(*status), messages::error_body(message, kind))
            } else {
                let (default_message, kind, default_code) = status_defaults(*status, model);
                error(
                    api,
                    *status,
                    message.as_deref().unwrap_or(&default_message),
                    kind,
                    None,
                    code.as_deref().or(default_code),
                )
            };
            let h = resp.headers_mut();
            if let Some(v) = retry_after.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                h.insert(HeaderName::from_static("retry-after"), v);
            }
            if let Some(ms) = retry_after_ms {
                h.insert(HeaderName::from_static("retry-after-ms"), HeaderValue::from(*ms));
            }
            resp
        }
        Fault::ContextLength if api == Api::Messages => error(
            api,
            400,
            "prompt is too long: 131072 tokens > 128000 maximum",
            "invalid_request_error",
            None,
            None,
        ),
        Fault::ContextLength => error(
            api,
            400,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            Some("messages"),
            Some("context_length_exceeded"),
        ),
        Fault::ContentFilter => error(
            api,
            400,
            "The response was filtered due to the prompt triggering faultline's content management policy.",
            "invalid_request_error",
            Some("prompt"),
            Some("content_filter"),
        ),
        Fault::RejectPrefill => error(
            api,
            400,
            "This model does not support assistant message prefill: the final message must have role 'user'.",
            "invalid_request_error",
            Some("messages"),
            None,
        ),
        Fault::Down { status, .. } => failure(&Fault::status(*status), api, model),
        _ => error(api, 500, "not a failing fault", "server_error", None, None),
    }
}

/// OpenAI's usual message, `type` and `code` for a status.
fn status_defaults(status: u16, model: &str) -> (String, &'static str, Option<&'static str>) {
    let (message, kind, code) = match status {
        400 => (
            "Invalid value for 'temperature': expected a number between 0 and 2.",
            "invalid_request_error",
            Some("invalid_value"),
        ),
        401 => (
            "Incorrect API key provided.",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        403 => (
            "You are not allowed to sample from this model.",
            "invalid_request_error",
            None,
        ),
        404 => {
            return (
                format!("The model `{model}` does not exist or you do not have access to it."),
                "invalid_request_error",
                Some("model_not_found"),
            )
        }
        429 => (
            "Rate limit reached for requests. Please slow down.",
            "requests",
            Some("rate_limit_exceeded"),
        ),
        500 => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        503 => (
            "The server is overloaded or not ready yet.",
            "server_error",
            None,
        ),
        s if (400..500).contains(&s) => {
            ("The request was rejected.", "invalid_request_error", None)
        }
        _ => ("The upstream failed.", "server_error", None),
    };
    (message.to_owned(), kind, code)
}

/// An error response in `api`'s shape: OpenAI's `{"error": {message, type, param, code}}`
/// (the Responses API names the `input` where chat names the `messages`), or Anthropic's
/// `{"type": "error", "error": {type, message}}` with the type its status implies.
pub(crate) fn error(
    api: Api,
    status: u16,
    message: &str,
    kind: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Response {
    let body = match api {
        Api::Chat => wire::error_body(message, kind, param, code),
        Api::Responses => {
            let param = param.map(|p| if p == "messages" { "input" } else { p });
            wire::error_body(message, kind, param, code)
        }
        Api::Messages => messages::error_body(message, messages::status_defaults(status, "").1),
    };
    json(http_status(status), body)
}

fn http_status(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
