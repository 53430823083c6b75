//! What travels with every upstream call: out, the W3C trace context and the caller's
//! request id; back, the upstream's rate-limit headroom.
//!
//! Owns [`TraceContext`] (a parsed `traceparent`, the request's own span and the span id
//! each attempt gets), [`Upstream`], what a caller hands the gateway in
//! `CallOptions::upstream`, and [`Headroom`]. The attempt loop (`gateway/run/attempt.rs`)
//! scopes each call with that attempt's headers; the HTTP transport (`provider/http`) adds
//! them to the request it posts and notes the response's rate-limit headers, which the
//! attempt loop reports to observers (`Observer::on_headroom`). It exports nothing: spans are built by the caller from the trail
//! (each attempt's span id is [`TraceContext::attempt_span_id`] of its trail index).
//! Depends on nothing else in the crate.

/// A W3C trace context as the gateway continues it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace (never all zeros).
    pub trace_id: [u8; 16],
    /// The span upstream calls descend from: the request's own span, or (when the caller
    /// records no spans, [`TraceContext::own_spans`] false) the client's parent span,
    /// forwarded as it came.
    pub span_id: [u8; 8],
    /// The trace is sampled (flag `01`).
    pub sampled: bool,
    /// The caller records a span per attempt: each upstream call gets its attempt's span
    /// id as parent; otherwise every call carries `span_id` unchanged.
    pub own_spans: bool,
    /// The client's `tracestate`, forwarded as it came.
    pub tracestate: Option<String>,
}

/// A `traceparent` header's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The parent span id.
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parse a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`, lower case). A later
    /// version's longer value is read by its first four fields, as the W3C spec asks.
    /// `None` for anything invalid, including all-zero ids and version `ff`.
    #[must_use]
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let mut parts = value.splitn(5, '-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        let rest = parts.next();
        if version.len() != 2 || version == "ff" || (version == "00" && rest.is_some()) {
            return None;
        }
        let mut out = Self {
            trace_id: [0; 16],
            span_id: [0; 8],
            flags: 0,
        };
        let mut flag = [0u8; 1];
        let mut ver = [0u8; 1];
        if !(hex(version, &mut ver)
            && hex(trace, &mut out.trace_id)
            && hex(span, &mut out.span_id)
            && hex(flags, &mut flag))
        {
            return None;
        }
        out.flags = flag[0];
        if out.trace_id == [0; 16] || out.span_id == [0; 8] {
            return None;
        }
        Some(out)
    }
}

/// Decode lower-case hex of exactly `out.len() * 2` digits.
fn hex(s: &str, out: &mut [u8]) -> bool {
    let b = s.as_bytes();
    if b.len() != out.len() * 2 {
        return false;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (i, o) in out.iter_mut().enumerate() {
        match (digit(b[2 * i]), digit(b[2 * i + 1])) {
            (Some(h), Some(l)) => *o = h << 4 | l,
            _ => return false,
        }
    }
    true
}

/// Lower-case hex of `bytes`.
#[must_use]
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    write_hex(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

/// Write the lower-case hex of `bytes` into `out`, two digits a byte (as far as `out`
/// reaches: it should be twice as long as `bytes`).
pub fn write_hex(out: &mut [u8], bytes: &[u8]) {
    // by table into place, not `write!` or a push per digit: ids are written for every
    // traced request
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}

impl TraceContext {
    /// The span id of the attempt at `index` in the request's trail: derived from the
    /// request's span, so the caller that built the trail names the same spans the
    /// upstreams were told (never zero, distinct per index).
    #[must_use]
    pub fn attempt_span_id(&self, index: usize) -> [u8; 8] {
        let seed = u64::from_be_bytes(self.span_id) ^ (index as u64 + 1).wrapping_mul(GOLDEN);
        let id = splitmix(seed);
        (if id == 0 { 1 } else { id }).to_be_bytes()
    }

    /// The `traceparent` the upstream call of the attempt at trail `index` carries.
    #[must_use]
    pub fn traceparent(&self, index: usize) -> String {
        let span = if self.own_spans {
            self.attempt_span_id(index)
        } else {
            self.span_id
        };
        // written in place (one allocation, no formatting): one per upstream call
        let mut out = [b'-'; TRACEPARENT_LEN];
        out[..2].copy_from_slice(b"00");
        write_hex(&mut out[3..35], &self.trace_id);
        write_hex(&mut out[36..52], &span);
        out[53..].copy_from_slice(if self.sampled { b"01" } else { b"00" });
        std::str::from_utf8(&out)
            .map(str::to_owned)
            .unwrap_or_default()
    }
}

/// A version-00 `traceparent`'s length: `00-` 32 hex `-` 16 hex `-` 2 hex.
const TRACEPARENT_LEN: usize = 55;

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser: a bijection that spreads neighbouring inputs.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What every upstream call of one request carries (given in `CallOptions::upstream`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upstream {
    /// Sent as `x-request-id` (the caller bounds and sanitises it).
    pub request_id: Option<String>,
    /// Sent as `traceparent` (per attempt) and `tracestate`.
    pub trace: Option<TraceContext>,
}

impl Upstream {
    /// True when there is nothing to send.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.request_id.is_none() && self.trace.is_none()
    }

    /// The headers of the attempt at trail `index`.
    #[must_use]
    pub fn headers(&self, index: usize) -> Outbound {
        Outbound {
            request_id: self.request_id.clone(),
            traceparent: self.trace.as_ref().map(|t| t.traceparent(index)),
            tracestate: self.trace.as_ref().and_then(|t| t.tracestate.clone()),
        }
    }
}

const X_REQUEST_ID: http::HeaderName = http::HeaderName::from_static("x-request-id");
const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

/// The headers of one upstream call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outbound {
    /// `x-request-id`.
    pub request_id: Option<String>,
    /// `traceparent`.
    pub traceparent: Option<String>,
    /// `tracestate`.
    pub tracestate: Option<String>,
}

impl Outbound {
    /// Each header as (name, value).
    pub fn each(&self, mut f: impl FnMut(&http::HeaderName, &str)) {
        if let Some(v) = &self.request_id {
            f(&X_REQUEST_ID, v);
        }
        if let Some(v) = &self.traceparent {
            f(&TRACEPARENT, v);
        }
        if let Some(v) = &self.tracestate {
            f(&TRACESTATE, v);
        }
    }
}

/// What an upstream's response said is left of its rate limits (OpenAI's
/// `x-ratelimit-remaining-requests` / `-tokens`; Anthropic's
/// `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Headroom {
    /// Requests left in the window.
    pub requests: Option<u64>,
    /// Tokens left in the window.
    pub tokens: Option<u64>,
    /// Input tokens left (Anthropic).
    pub input_tokens: Option<u64>,
    /// Output tokens left (Anthropic).
    pub output_tokens: Option<u64>,
}

impl Headroom {
    /// The headroom `headers` state; `None` when they state none.
    #[must_use]
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        // one pass over the response's headers (a handful) rather than a lookup per name:
        // this runs on every upstream response
        let mut seen = [None::<u64>; 6];
        for (name, value) in headers {
            let name = name.as_str();
            if !(name.starts_with("x-ratelimit-") || name.starts_with("anthropic-ratelimit-")) {
                continue;
            }
            let slot = match name {
                "x-ratelimit-remaining-requests" => 0,
                "anthropic-ratelimit-requests-remaining" => 1,
                "x-ratelimit-remaining-tokens" => 2,
                "anthropic-ratelimit-tokens-remaining" => 3,
                "anthropic-ratelimit-input-tokens-remaining" => 4,
                "anthropic-ratelimit-output-tokens-remaining" => 5,
                _ => continue,
            };
            if seen[slot].is_none() {
                seen[slot] = value
                    .to_str()
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok());
            }
        }
        let h = Self {
            requests: seen[0].or(seen[1]),
            tokens: seen[2].or(seen[3]),
            input_tokens: seen[4],
            output_tokens: seen[5],
        };
        (h != Self::default()).then_some(h)
    }

    /// Each stated limit as (`requests` | `tokens` | `input_tokens` | `output_tokens`, left).
    #[must_use]
    pub fn each(&self) -> Vec<(&'static str, u64)> {
        [
            ("requests", self.requests),
            ("tokens", self.tokens),
            ("input_tokens", self.input_tokens),
            ("output_tokens", self.output_tokens),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// The upstream call in flight on a task: its headers out, what came back.
struct InFlight {
    out: Outbound,
    headroom: std::cell::Cell<Option<Headroom>>,
    /// The HTTP status of the response (the last, for a call that took several).
    status: std::cell::Cell<Option<u16>>,
}

/// What a scoped call's response said beside its body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Returned {
    /// The rate-limit headroom it stated, if any.
    pub headroom: Option<Headroom>,
    /// Its HTTP status, when it reached an HTTP upstream.
    pub status: Option<u16>,
}

tokio::task_local! {
    /// The upstream call in flight on this task (set by the attempt loop).
    static CALL: InFlight;
}

/// Run `fut` with `headers` as the in-flight call's outbound headers; with what its
/// response said beside the body (headroom, status).
pub(crate) async fn scoped<F: std::future::Future>(
    headers: Outbound,
    fut: F,
) -> (F::Output, Returned) {
    let call = InFlight {
        out: headers,
        headroom: std::cell::Cell::new(None),
        status: std::cell::Cell::new(None),
    };
    CALL.scope(call, async {
        let out = fut.await;
        let returned = CALL.with(|c| Returned {
            headroom: c.headroom.get(),
            status: c.status.get(),
        });
        (out, returned)
    })
    .await
}

/// Call `f` with each outbound header of the call in flight on this task, if any.
pub(crate) fn with_outbound(f: impl FnMut(&http::HeaderName, &str)) {
    let _ = CALL.try_with(|c| c.out.each(f));
}

/// Note a response's `status` and the rate-limit headroom its `headers` state, for the
/// call in flight.
pub(crate) fn note_response(status: u16, headers: &http::HeaderMap) {
    let _ = CALL.try_with(|c| {
        c.status.set(Some(status));
        if let Some(h) = Headroom::from_headers(headers) {
            c.headroom.set(Some(h));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_the_w3c_example_and_refuses_what_the_spec_refuses() {
        let p = TraceParent::parse(VALID).unwrap();
        assert_eq!(to_hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(to_hex(&p.span_id), "00f067aa0ba902b7");
        assert_eq!(p.flags, 1);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
        // a future version may append fields
        assert!(TraceParent::parse(&format!("01{}-later", &VALID[2..])).is_some());
    }

    #[test]
    fn headroom_is_read_from_openai_and_anthropic_headers() {
        let mut h = http::HeaderMap::new();
        assert_eq!(Headroom::from_headers(&h), None);
        h.insert("x-ratelimit-remaining-requests", "59".parse().unwrap());
        h.insert("x-ratelimit-remaining-tokens", "149984".parse().unwrap());
        let got = Headroom::from_headers(&h).unwrap();
        assert_eq!(got.each(), vec![("requests", 59), ("tokens", 149_984)]);
        let mut a = http::HeaderMap::new();
        a.insert(
            "anthropic-ratelimit-requests-remaining",
            "49".parse().unwrap(),
        );
        a.insert(
            "anthropic-ratelimit-input-tokens-remaining",
            "30000".parse().unwrap(),
        );
        a.insert(
            "anthropic-ratelimit-output-tokens-remaining",
            "8000".parse().unwrap(),
        );
        a.insert(
            "anthropic-ratelimit-tokens-remaining",
            "not a number".parse().unwrap(),
        );
        let got = Headroom::from_headers(&a).unwrap();
        assert_eq!(
            got.each(),
            vec![
                ("requests", 49),
                ("input_tokens", 30_000),
                ("output_tokens", 8000)
            ]
        );
    }

    #[test]
    fn attempts_get_distinct_child_spans_of_the_request() {
        let p = TraceParent::parse(VALID).unwrap();
        let ctx = TraceContext {
            trace_id: p.trace_id,
            span_id: [7; 8],
            sampled: true,
            own_spans: true,
            tracestate: None,
        };
        let ids: std::collections::HashSet<_> = (0..64).map(|i| ctx.attempt_span_id(i)).collect();
        assert_eq!(ids.len(), 64);
        assert!(!ids.contains(&[7; 8]));
        let header = ctx.traceparent(3);
        let back = TraceParent::parse(&header).unwrap();
        assert_eq!(back.trace_id, p.trace_id);
        assert_eq!(back.span_id, ctx.attempt_span_id(3));
        assert_eq!(back.flags, 1);
        assert_eq!(header.len(), TRACEPARENT_LEN);
        assert_eq!(
            header,
            format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
                to_hex(&ctx.attempt_span_id(3))
            )
        );
        // a caller without spans forwards the client's parent unchanged
        let passthrough = TraceContext {
            own_spans: false,
            sampled: false,
            ..ctx
        };
        assert_eq!(
            passthrough.traceparent(3),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0707070707070707-00"
        );
    }
}
