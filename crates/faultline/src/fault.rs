//! What can go wrong: [`Fault`] (one request's misbehaviour) and [`Script`] (a model's
//! queue of faults, then a default).
//!
//! Both are plain data with a JSON form (the control API and the binary's `--script` take
//! them). Does not apply them: `respond` does.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How faultline treats one request. JSON: `{"kind": "<snake_case variant>", ...fields}`.
///
/// Token counts (`after`) count the content tokens of *this* response (a continuation
/// after a prefill has fewer than 60).
///
/// Every fault applies to the three APIs alike, in each API's own format: errors in its
/// error shape (OpenAI's for chat and Responses, Anthropic's `{"type": "error", ...}` for
/// Messages), in-band errors as its error event. Where the docs below name chat's events,
/// Responses' and Messages' counterparts are: the role chunk = the opening events
/// (`response.created` … `response.content_part.added`; `message_start`,
/// `content_block_start`, `ping`); the finish chunk = `response.output_text.done` …
/// `response.output_item.done` / `content_block_stop`; the usage chunk =
/// `response.completed` / `message_delta`; `[DONE]` = (none) / `message_stop`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Healthy: the canonical answer (continued from a prefill that is a prefix of it).
    #[default]
    Ok,
    /// Healthy but slow. Streams send their headers and role chunk at once, then wait
    /// `first_token_ms` before the first token and `token_ms` between tokens; a plain
    /// request waits `first_token_ms + token_ms × tokens` before its whole response.
    Slow {
        /// Delay before the first token (or the response).
        #[serde(default)]
        first_token_ms: u64,
        /// Delay between tokens.
        #[serde(default)]
        token_ms: u64,
    },
    /// An HTTP error with an OpenAI-shaped body `{"error": {message, type, param, code}}`
    /// (Messages: Anthropic's, its `error.type` from the status; `code` unused).
    Status {
        /// The status code.
        status: u16,
        /// A `Retry-After` header, verbatim (`"2"`, or an HTTP-date).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
        /// A `retry-after-ms` header.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
        /// `error.code` (default: OpenAI's usual code for the status, if any).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// `error.message` (default: OpenAI's usual wording for the status).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Read the request, then reset the TCP connection (RST, no response bytes).
    Reset,
    /// Read the request and never answer; the connection stays open until the client
    /// gives up.
    Hang,
    /// Streams: send `after` tokens, then end the body without a finish reason or
    /// `[DONE]` (cleanly, or with `abort` by dropping the connection mid-body). Plain
    /// requests: send part of the body, then drop the connection.
    Cut {
        /// Tokens sent before the cut.
        after: usize,
        /// Drop the connection instead of ending the body cleanly.
        #[serde(default)]
        abort: bool,
    },
    /// Streams: send `after` tokens, then nothing more, keeping the connection open until
    /// the client gives up. Plain requests: send part of the body, then the same.
    Stall {
        /// Tokens sent before the stall.
        after: usize,
    },
    /// Streams: after `after` tokens an event that is not JSON (`data: {not json`), then
    /// the rest of the answer as usual. Plain requests: a 200 whose body is not JSON.
    Malformed {
        /// Tokens sent before the broken event.
        after: usize,
    },
    /// Streams: after `after` tokens an in-band error event (`data: {"error": {...}}`,
    /// OpenAI's `server_error`; Responses: `event: error`, `server_error`; Messages:
    /// `event: error`, `overloaded_error`), then the body ends. Plain requests: a 200 whose
    /// body is that error object (Responses: a `response` with `status: failed`).
    ErrorEvent {
        /// Tokens sent before the error event (0: the first event is the error).
        after: usize,
    },
    /// Streams: the whole answer, the finish chunk and the usage chunk, then no `[DONE]`:
    /// the connection stays open until the client hangs up. Plain requests: healthy.
    NoDone,
    /// Streams: the whole answer and the finish chunk, then nothing — no usage chunk even
    /// when asked for, no `[DONE]` — holding the connection until the client hangs up.
    /// Plain requests: healthy.
    FinishOnly,
    /// Streams: the role chunk, then content chunks of `chunk_bytes` bytes each as fast as
    /// the client reads them, never ending (a runaway upstream, for memory benchmarks).
    /// Plain requests: healthy.
    Flood {
        /// Bytes of content per chunk.
        chunk_bytes: usize,
    },
    /// 400 `context_length_exceeded`, OpenAI's wording.
    ContextLength,
    /// 400 `content_filter`: refused by the safety system.
    ContentFilter,
    /// A model that does not take assistant prefill: 400 when the last message has role
    /// `assistant`, healthy otherwise.
    RejectPrefill,
    /// Down (this `status`, 503 by default) until `for_ms` after the script was installed,
    /// healthy after.
    Down {
        /// How long the outage lasts, from the script's installation.
        for_ms: u64,
        /// The status returned while down.
        #[serde(default = "service_unavailable")]
        status: u16,
    },
}

fn service_unavailable() -> u16 {
    503
}

impl Fault {
    /// An HTTP error with the default body for `status`.
    #[must_use]
    pub fn status(status: u16) -> Self {
        Self::Status {
            status,
            retry_after: None,
            retry_after_ms: None,
            code: None,
            message: None,
        }
    }

    /// A 429 with `Retry-After: <secs>`.
    #[must_use]
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Status {
            status: 429,
            retry_after: Some(retry_after_secs.to_string()),
            retry_after_ms: None,
            code: None,
            message: None,
        }
    }

    /// Healthy, with the first token after `delay`.
    #[must_use]
    pub fn slow_first_token(delay: Duration) -> Self {
        Self::Slow {
            first_token_ms: millis(delay),
            token_ms: 0,
        }
    }

    /// Healthy, one token every `gap`.
    #[must_use]
    pub fn paced(gap: Duration) -> Self {
        Self::Slow {
            first_token_ms: 0,
            token_ms: millis(gap),
        }
    }

    /// A stream cut cleanly after `after` tokens.
    #[must_use]
    pub fn cut(after: usize) -> Self {
        Self::Cut {
            after,
            abort: false,
        }
    }

    /// Down with a 503 for `outage` after the script is installed.
    #[must_use]
    pub fn down_for(outage: Duration) -> Self {
        Self::Down {
            for_ms: millis(outage),
            status: service_unavailable(),
        }
    }
}

/// Whole milliseconds of `d`, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A model's behaviour: `faults` are consumed one per request, in order; once they are
/// used up every request gets `then`. JSON: `{"faults": [...], "then": {...}}` (both
/// optional; `then` defaults to `{"kind": "ok"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// One per request, first to last.
    #[serde(default)]
    pub faults: VecDeque<Fault>,
    /// Every request after the queue is empty.
    #[serde(default)]
    pub then: Fault,
}

impl Script {
    /// Every request gets `fault`.
    #[must_use]
    pub fn always(fault: Fault) -> Self {
        Self {
            faults: VecDeque::new(),
            then: fault,
        }
    }

    /// The next request gets `fault`; later ones are healthy.
    #[must_use]
    pub fn once(fault: Fault) -> Self {
        Self::queue([fault], Fault::Ok)
    }

    /// `faults` in order, then `then` forever.
    #[must_use]
    pub fn queue(faults: impl IntoIterator<Item = Fault>, then: Fault) -> Self {
        Self {
            faults: faults.into_iter().collect(),
            then,
        }
    }

    /// The fault for the next request (consuming the queue).
    pub(crate) fn next_fault(&mut self) -> Fault {
        self.faults.pop_front().unwrap_or_else(|| self.then.clone())
    }
}

impl From<Fault> for Script {
    fn from(fault: Fault) -> Self {
        Self::always(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms() {
        let f: Fault =
            serde_json::from_str(r#"{"kind":"status","status":429,"retry_after":"2"}"#).unwrap();
        assert_eq!(f, Fault::rate_limited(2));
        let f: Fault = serde_json::from_str(r#"{"kind":"down","for_ms":3000}"#).unwrap();
        assert_eq!(f, Fault::down_for(Duration::from_secs(3)));
        let f: Fault = serde_json::from_str(r#"{"kind":"cut","after":40}"#).unwrap();
        assert_eq!(f, Fault::cut(40));
        let f: Fault = serde_json::from_str(r#"{"kind":"flood","chunk_bytes":60000}"#).unwrap();
        assert_eq!(f, Fault::Flood { chunk_bytes: 60000 });
        assert!(serde_json::from_str::<Fault>(r#"{"kind":"cut","afterr":40}"#).is_err());
        let s: Script =
            serde_json::from_str(r#"{"faults":[{"kind":"reset"}],"then":{"kind":"hang"}}"#)
                .unwrap();
        assert_eq!(s, Script::queue([Fault::Reset], Fault::Hang));
        let s: Script = serde_json::from_str("{}").unwrap();
        assert_eq!(s, Script::always(Fault::Ok));
        assert_eq!(
            serde_json::to_string(&Fault::Slow {
                first_token_ms: 5,
                token_ms: 0
            })
            .unwrap(),
            r#"{"kind":"slow","first_token_ms":5,"token_ms":0}"#
        );
    }

    #[test]
    fn a_queue_then_its_default() {
        let mut s = Script::queue([Fault::Reset, Fault::Hang], Fault::NoDone);
        assert_eq!(s.next_fault(), Fault::Reset);
        assert_eq!(s.next_fault(), Fault::Hang);
        assert_eq!(s.next_fault(), Fault::NoDone);
        assert_eq!(s.next_fault(), Fault::NoDone);
    }
}
