//! What a request carries through its life in any dialect ([`Ctx`]) and what every
//! dialect's answer shares: the `x-switchyard-*` headers, the `switchyard` object
//! ([`Trail`]), the log line of an answered request, the key's token count. Used by the
//! shared flow (`super::flow`) and the stream writer (`super::sse`).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use switchyard::chat::{CacheNote, Field, FieldSet, Support};
use switchyard::{ChatResponse, Money};
use tokio::time::Instant;

use crate::access::limits;
use crate::http::bounds::{clip, MAX_NAME_CHARS};
use crate::http::request_id::{request_id, X_REQUEST_ID};
use crate::http::state::AppState;
use crate::telemetry::content;
use crate::telemetry::log::{CacheLog, LogEntry};
use crate::telemetry::otlp::RequestTrace;
use crate::telemetry::trace;
use switchyard::propagate::{to_hex, Upstream};

/// Longest client- or upstream-given name a log line (and the dashboard's ring) keeps, in
/// bytes: any name of [`MAX_NAME_CHARS`] characters fits.
const LOGGED_TEXT_BYTES: usize = 4 * MAX_NAME_CHARS;

// Headers named once (a name given to `HeaderName::from_static` at run time, or looked up
// as text, is parsed and checked against every standard header's name, per call).
const ANTHROPIC_BETA: HeaderName = HeaderName::from_static("anthropic-beta");
const PROVIDER: HeaderName = HeaderName::from_static("x-switchyard-provider");
const ATTEMPTS: HeaderName = HeaderName::from_static("x-switchyard-attempts");
const FAILED_OVER: HeaderName = HeaderName::from_static("x-switchyard-failed-over");
const COST_USD: HeaderName = HeaderName::from_static("x-switchyard-cost-usd");
const IGNORED: HeaderName = HeaderName::from_static("x-switchyard-ignored");
const DROPPED: HeaderName = HeaderName::from_static("x-switchyard-dropped");
const CACHE: HeaderName = HeaderName::from_static("x-switchyard-cache");

/// What a request carries through its life, for headers, the log and metrics.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The request id (`x-request-id`).
    pub id: String,
    /// The dialect's name in the log (`Dialect::API`).
    pub api: &'static str,
    /// The route as the client named it.
    pub route: String,
    /// The route as a metrics label: configured name or "unknown".
    pub route_label: String,
    /// The client key's name.
    pub key: Option<String>,
    /// The key's limits (tokens used are counted against its `tpm`).
    pub limits: Option<crate::access::limits::KeyLimits>,
    /// The request's place among its key's requests in flight: given back when the last
    /// clone of the context is dropped (a stream's writer holds one to the end).
    pub key_slot: Option<crate::access::in_flight::KeySlot>,
    /// Refused for want of a valid client key, and why (`missing_key`, `invalid_key`): its
    /// line is logged in moderation (`crate::telemetry::refusals`).
    pub unauthenticated: Option<&'static str>,
    /// Wall time the request arrived.
    pub time_ms: u64,
    /// Gateway-clock time the request arrived.
    pub started: Instant,
    /// A streamed request.
    pub stream: bool,
    /// A plain answer's log line, committed by [`serve`] once the guard is disarmed.
    pub line: Option<LogEntry>,
    /// Advisory fields the request used that were not carried (`x-switchyard-ignored`).
    pub ignored: Vec<String>,
    /// The client's `anthropic-beta` header (the Messages dialect forwards it with a
    /// native body).
    pub anthropic_beta: Option<String>,
    /// The provider kind the request's own body goes to natively (see
    /// `switchyard::chat::Native`): when a provider of this kind answers, every field was
    /// carried and `ignored` is not said.
    pub native_kind: Option<&'static str>,
    /// The fields of `docs/fields.md` the decoded request uses: what the answering
    /// provider ignored is said from these (`x-switchyard-ignored`).
    pub fields: FieldSet,
    /// The fields the answering provider was called without, as the gateway says
    /// (`ChatResponse::dropped`, `ChatStream::dropped`): `x-switchyard-dropped`. Set once
    /// the gateway answered.
    pub dropped: FieldSet,
    /// The trace the request belongs to (a client's `traceparent`, or ours when traces
    /// are exported).
    pub trace: Option<RequestTrace>,
    /// The request's messages as `gen_ai.input.messages` (and whether they were cut),
    /// when its spans carry content (`capture_content`): set just before the gateway
    /// call, else never built.
    pub input: Option<(Arc<str>, bool)>,
    /// What the body spent of the request's memory bounds, for a stored conversation it
    /// continues (`super::expansion`).
    pub spent: super::expansion::Spent,
    /// On a cached route: what its cache does for the request ([`CacheCtx`]). Boxed: every
    /// request moves its context several times, and most routes have no cache.
    pub cache: Option<Box<CacheCtx>>,
}

/// What a cached route's cache does for one request.
#[derive(Debug, Clone)]
pub(crate) struct CacheCtx {
    /// The entry the answer is stored under when it may be (a streamed answer's writer
    /// stores it once complete: `super::sse`); `None` once nothing is to be stored.
    pub plan: Option<Arc<crate::cache::Plan>>,
    /// What the cache did (`x-switchyard-cache`, the log line).
    pub note: CacheNote,
}

impl Ctx {
    /// A request that has just arrived.
    pub(crate) fn new(state: &AppState, api: &'static str, headers: &HeaderMap) -> Self {
        let clock = *state.gateway.clock();
        state.metrics.request_started();
        Self {
            id: request_id(headers),
            api,
            route: String::new(),
            route_label: "unknown".to_owned(),
            key: None,
            limits: None,
            key_slot: None,
            unauthenticated: None,
            time_ms: clock.unix_ms(),
            started: clock.now(),
            stream: false,
            line: None,
            ignored: Vec::new(),
            anthropic_beta: headers
                .get(ANTHROPIC_BETA)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            native_kind: None,
            fields: FieldSet::EMPTY,
            dropped: FieldSet::EMPTY,
            trace: RequestTrace::of(headers, state.traces.as_deref()),
            input: None,
            spent: super::expansion::Spent::default(),
            cache: None,
        }
    }

    /// What the request's upstream calls carry: its id, its trace context.
    pub(crate) fn upstream(&self) -> Upstream {
        Upstream {
            request_id: Some(self.id.clone()),
            trace: self.trace.as_ref().map(|t| t.context.clone()),
        }
    }

    /// The `tracing` span the request's diagnostics are logged in (lines carry its
    /// `request_id` and `trace_id`: `crate::telemetry::trace::request_span`).
    pub(crate) fn span(&self) -> tracing::Span {
        trace::request_span(&self.id, self.trace.as_ref().map(|t| t.context.trace_id))
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// What the route's cache did for the request, on a cached route.
    pub(crate) fn cache_note(&self) -> Option<CacheNote> {
        self.cache.as_ref().map(|c| c.note)
    }

    /// The entry the answer is to be stored under, when it may be stored.
    pub(crate) fn cache_plan(&self) -> Option<&Arc<crate::cache::Plan>> {
        self.cache.as_ref().and_then(|c| c.plan.as_ref())
    }

    /// The log line for a finished request. The route is the client's text (a refused
    /// over-long one included): cut to [`LOGGED_TEXT_BYTES`], which no accepted name reaches.
    pub(crate) fn entry(&self, status: u16) -> LogEntry {
        LogEntry {
            id: self.id.clone(),
            time_ms: self.time_ms,
            api: std::borrow::Cow::Borrowed(self.api),
            route: clip(&self.route, LOGGED_TEXT_BYTES).into_owned(),
            key: self.key.clone(),
            stream: self.stream,
            status,
            provider: None,
            model: None,
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: None,
            latency_ms: self.elapsed().as_secs_f64() * 1000.0,
            ttft_ms: None,
            error: None,
            trace_id: self.trace.as_ref().map(|t| to_hex(&t.context.trace_id)),
            span_id: self
                .trace
                .as_ref()
                .filter(|t| t.context.own_spans)
                .map(|t| to_hex(&t.context.span_id)),
            parent_span_id: self
                .trace
                .as_ref()
                .and_then(|t| t.parent)
                .map(|p| to_hex(&p)),
            sampled: self
                .trace
                .as_ref()
                .is_some_and(|t| t.context.sampled && t.context.own_spans),
            content: self
                .input
                .as_ref()
                .map(|i| Arc::new(content::input_only(i))),
            dropped: Vec::new(),
            cache: self.cache_note().map(cache_log),
        }
    }

    /// Keep `req`'s messages for the request span, when the spans of this request are
    /// exported with content (`[telemetry] capture_content`); otherwise nothing is built.
    pub(crate) fn capture(&mut self, state: &AppState, req: &switchyard::ChatRequest) {
        let on = state.traces.as_ref().is_some_and(|t| t.captures_content());
        let sampled =
            (self.trace.as_ref()).is_some_and(|t| t.context.sampled && t.context.own_spans);
        if on && sampled {
            self.input = Some(content::input_messages(req));
        }
    }
}

/// Count a finished call's tokens against its key's `tpm`.
pub(crate) async fn record_tokens(state: &AppState, ctx: &Ctx, usage: Option<&switchyard::Usage>) {
    if let (Some(key), Some(l), Some(usage)) = (&ctx.key, &ctx.limits, usage) {
        let now = state.gateway.clock().unix_ms();
        limits::record(state.gateway.state().as_ref(), key, l, usage, now).await;
    }
}

/// The log line for a request that got an answer (or a partial one).
pub(crate) fn completion_entry(
    ctx: &Ctx,
    resp: &ChatResponse,
    status: u16,
    ttft: Option<Duration>,
) -> LogEntry {
    let mut entry = ctx.entry(status);
    entry.provider = Some(resp.provider.clone());
    // the upstream's word, not ours: bounded like the client's
    entry.model = Some(clip(&resp.model, LOGGED_TEXT_BYTES).into_owned());
    entry.failed_over = resp.failed_over;
    entry.attempts.clone_from(&resp.attempts);
    entry.usage = resp.usage;
    entry.cost_usd = resp.cost.map(Money::to_usd);
    entry.ttft_ms = ttft.map(|d| d.as_secs_f64() * 1000.0);
    entry.dropped = (resp.dropped.names().into_iter())
        .map(str::to_owned)
        .collect();
    if let Some(input) = &ctx.input {
        entry.content = Some(Arc::new(content::with_output(input, resp)));
    }
    entry.cache = resp.cache.or(ctx.cache_note()).map(cache_log);
    entry
}

/// Keep `resp` for `plan` when it may be kept (a plain answer's flow, a stream's writer).
pub(crate) async fn cache_put(state: &AppState, plan: &crate::cache::Plan, resp: &ChatResponse) {
    let now = state.gateway.clock().unix_ms();
    let store = state.gateway.state().as_ref();
    state.cache.put(store, plan, resp, now).await;
}

/// A cache note as the log line says it.
fn cache_log(note: CacheNote) -> Box<CacheLog> {
    Box::new(CacheLog {
        status: std::borrow::Cow::Borrowed(note.status.as_str()),
        saved_usd: note.saved_usd.map(Money::to_usd),
        age_s: note.age_s,
    })
}

/// `x-switchyard-cache` (and `age` for an answer served from the cache), on a cached
/// route's answers.
pub(crate) fn cache_headers(headers: &mut HeaderMap, note: Option<CacheNote>) {
    let Some(note) = note else { return };
    headers.insert(CACHE, HeaderValue::from_static(note.status.as_str()));
    if let Some(age) = note.age_s {
        set(headers, axum::http::header::AGE, &age.to_string());
    }
}

/// The `x-switchyard-*` and `x-request-id` headers. `x-switchyard-ignored` names the
/// fields that were not carried: none when `provider` is of the kind the request's native
/// body was written for (it got the body as the client sent it).
pub(crate) fn who_answered(
    headers: &mut HeaderMap,
    state: &AppState,
    ctx: &Ctx,
    provider: &str,
    attempts: usize,
    failed_over: bool,
    cost: Option<Option<Money>>,
) {
    headers.reserve(5);
    set(headers, X_REQUEST_ID, &ctx.id);
    set(headers, PROVIDER, provider);
    // a request's attempts are nearly always one digit: a static value, no allocation
    const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    let value = DIGITS.get(attempts).map_or_else(
        || HeaderValue::from(attempts),
        |d| HeaderValue::from_static(d),
    );
    headers.insert(ATTEMPTS, value);
    headers.insert(
        FAILED_OVER,
        HeaderValue::from_static(if failed_over { "true" } else { "false" }),
    );
    if let Some(cost) = cost {
        set(
            headers,
            COST_USD,
            &cost.map_or_else(|| "unknown".to_owned(), usd),
        );
    }
    let ignored = ignored_by(state, ctx, provider);
    let mut names: Vec<&str> = Vec::new();
    if !answered_natively(state, ctx, provider) {
        names.extend(ctx.ignored.iter().map(String::as_str));
    }
    for name in ignored.iter().map(Field::name) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if !names.is_empty() {
        set(headers, IGNORED, &names.join(", "));
    }
    if !ctx.dropped.is_empty() {
        set(headers, DROPPED, &ctx.dropped.names().join(", "));
    }
    cache_headers(headers, ctx.cache_note());
}

/// The request's fields `provider` ignored: advisory ones it has no place for.
fn ignored_by(state: &AppState, ctx: &Ctx, provider: &str) -> FieldSet {
    if ctx.fields.is_empty() {
        return FieldSet::EMPTY;
    }
    if state.gateway.reasoning_of(provider).is_none() {
        // no such provider (a registered one, or a model a wildcard route resolved)
        return FieldSet::EMPTY;
    }
    let support = |f| {
        state
            .gateway
            .support_of(provider, f)
            .unwrap_or(Support::Unsupported)
    };
    ctx.fields.with(support, Support::Ignored)
}

/// Whether `provider` takes the request's native body as written.
pub(crate) fn answered_natively(state: &AppState, ctx: &Ctx, provider: &str) -> bool {
    let Some(kind) = ctx.native_kind else {
        return false;
    };
    state.gateway.native_kind_of(provider) == Some(Some(kind))
}

/// Set header `name` to `value` (left unset when `value` is not a valid header value).
pub(crate) fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

/// Exact dollars as a plain decimal (`0.000123`).
pub(crate) fn usd(m: Money) -> String {
    m.decimal().to_string()
}

/// The `switchyard` object in response bodies (where the dialect has room for one).
#[derive(Debug, Serialize)]
pub(crate) struct Trail<'a> {
    provider: &'a str,
    failed_over: bool,
    cost_usd: Option<f64>,
    attempts: &'a [switchyard::observe::Attempt],
    /// The route's `default_max_tokens`, when the gateway sent it because the request set
    /// no `max_tokens` and the model's output limit is unknown (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens_applied: Option<u32>,
    /// Advisory fields the answering provider has no place for (not sent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ignored: Vec<&'static str>,
    /// Fields the answering provider was called without: it cannot honour them, and the
    /// route lets them go (degradable ones, by default).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dropped: Vec<&'static str>,
    /// What the route's response cache did (`hit`, `miss`, `stale`, `bypass`; absent on a
    /// route without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<switchyard::chat::CacheNote>,
}

/// A [`Trail`] with `stored` (whether the answer was kept; the Responses dialect's) and
/// every key, its attempts' too, in sorted order: the Responses dialect's `switchyard`
/// object, and the Chat Completions stream's usage chunk's (without `stored`; see
/// `chat/stream.rs`). Those objects were once `serde_json::Value` trees, whose maps sort
/// their keys; they are written directly now, in the same order, so their bytes did not
/// change.
pub(crate) struct SortedTrail<'a> {
    pub trail: Trail<'a>,
    pub stored: Option<bool>,
}

impl Serialize for SortedTrail<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Trail {
            provider,
            failed_over,
            cost_usd,
            attempts,
            max_tokens_applied,
            ignored,
            dropped,
            cache,
        } = &self.trail;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("attempts", &SortedAttempts(attempts))?;
        if let Some(cache) = cache {
            m.serialize_entry("cache", cache)?;
        }
        m.serialize_entry("cost_usd", cost_usd)?;
        if !dropped.is_empty() {
            m.serialize_entry("dropped", dropped)?;
        }
        m.serialize_entry("failed_over", failed_over)?;
        if !ignored.is_empty() {
            m.serialize_entry("ignored", ignored)?;
        }
        if let Some(n) = max_tokens_applied {
            m.serialize_entry("max_tokens_applied", n)?;
        }
        m.serialize_entry("provider", provider)?;
        if let Some(stored) = self.stored {
            m.serialize_entry("stored", &stored)?;
        }
        m.end()
    }
}

impl SortedTrail<'_> {
    /// The same bytes its `Serialize` writes through `serde_json`, written by hand (the
    /// Responses answer, `responses::body::ResponseObject::write_json`).
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        let t = &self.trail;
        out.extend_from_slice(b"{\"attempts\":[");
        for (i, a) in t.attempts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            sorted_attempt_json(out, a);
        }
        out.push(b']');
        if let Some(note) = &t.cache {
            out.extend_from_slice(b",\"cache\":");
            cache_note_json(out, note);
        }
        out.extend_from_slice(b",\"cost_usd\":");
        j::opt_f64(out, t.cost_usd);
        if !t.dropped.is_empty() {
            out.extend_from_slice(b",\"dropped\":");
            j::strs(out, &t.dropped);
        }
        out.extend_from_slice(b",\"failed_over\":");
        j::bool(out, t.failed_over);
        if !t.ignored.is_empty() {
            out.extend_from_slice(b",\"ignored\":");
            j::strs(out, &t.ignored);
        }
        if let Some(n) = t.max_tokens_applied {
            out.extend_from_slice(b",\"max_tokens_applied\":");
            j::u64(out, u64::from(n));
        }
        out.extend_from_slice(b",\"provider\":");
        j::str(out, t.provider);
        if let Some(stored) = self.stored {
            out.extend_from_slice(b",\"stored\":");
            j::bool(out, stored);
        }
        out.push(b'}');
    }
}

/// One attempt as [`SortedAttempt`] writes it (its keys sorted), by hand.
fn sorted_attempt_json(out: &mut Vec<u8>, a: &switchyard::observe::Attempt) {
    use crate::json_out as j;
    let ms = |d: &std::time::Duration| d.as_secs_f64() * 1000.0;
    let OutcomeFields {
        tag,
        at,
        fields,
        kind,
        message,
        method,
        reason,
        sent,
    } = OutcomeFields::of(&a.outcome);
    out.push(b'{');
    if let Some(at) = at {
        out.extend_from_slice(b"\"at\":");
        j::u64(out, *at);
        out.push(b',');
    }
    out.extend_from_slice(b"\"attempt\":");
    j::u64(out, u64::from(a.attempt));
    if let Some(fields) = fields {
        out.extend_from_slice(b",\"fields\":");
        j::strs(out, fields);
    }
    if let Some(kind) = kind {
        out.extend_from_slice(b",\"kind\":");
        j::str(out, kind.label());
    }
    out.extend_from_slice(b",\"latency_ms\":");
    j::f64(out, ms(&a.latency));
    if let Some(message) = message {
        out.extend_from_slice(b",\"message\":");
        j::str(out, message);
    }
    if let Some(method) = method {
        out.extend_from_slice(b",\"method\":");
        j::str(out, method);
    }
    out.extend_from_slice(b",\"model\":");
    j::str(out, &a.model);
    out.extend_from_slice(b",\"outcome\":");
    j::str(out, tag);
    if a.probe {
        out.extend_from_slice(b",\"probe\":true");
    }
    out.extend_from_slice(b",\"provider\":");
    j::str(out, &a.provider);
    if let Some(reason) = reason {
        out.extend_from_slice(b",\"reason\":");
        j::str(out, reason.label());
    }
    if let Some(sent) = sent {
        out.extend_from_slice(b",\"sent\":");
        j::u64(out, *sent);
    }
    if let Some(start) = &a.start {
        out.extend_from_slice(b",\"start_ms\":");
        j::f64(out, ms(start));
    }
    if let Some(status) = a.status {
        out.extend_from_slice(b",\"status\":");
        j::u64(out, u64::from(status));
    }
    out.push(b'}');
}

/// An attempt's outcome flattened into the keys its sorted form writes (the tag, and each
/// variant's own fields), for [`sorted_attempt_json`] and [`SortedAttempt`] alike.
struct OutcomeFields<'a> {
    tag: &'static str,
    at: Option<&'a u64>,
    fields: Option<&'a Vec<String>>,
    kind: Option<&'a switchyard::ErrorKind>,
    message: Option<&'a String>,
    method: Option<&'a String>,
    reason: Option<&'a switchyard::breaker::SkipReason>,
    sent: Option<&'a u64>,
}

impl<'a> OutcomeFields<'a> {
    fn of(outcome: &'a switchyard::observe::Outcome) -> Self {
        use switchyard::observe::Outcome;
        let mut f = OutcomeFields {
            tag: "",
            at: None,
            fields: None,
            kind: None,
            message: None,
            method: None,
            reason: None,
            sent: None,
        };
        f.tag = match outcome {
            Outcome::Success => "success",
            Outcome::Failed { kind, message } => {
                (f.kind, f.message) = (Some(kind), Some(message));
                "failed"
            }
            Outcome::Skipped { reason, fields } => {
                f.reason = Some(reason);
                f.fields = Some(fields).filter(|f| !f.is_empty());
                "skipped"
            }
            Outcome::Rescue { method } => {
                f.method = Some(method);
                "rescue"
            }
            Outcome::Diverged { at, sent } => {
                (f.at, f.sent) = (Some(at), Some(sent));
                "diverged"
            }
            Outcome::Declined { kind, message } => {
                (f.kind, f.message) = (Some(kind), Some(message));
                "declined"
            }
        };
        f
    }
}

/// Attempts as [`Attempt`]'s own `Serialize` writes them, with each one's keys sorted.
struct SortedAttempts<'a>(&'a [switchyard::observe::Attempt]);

impl Serialize for SortedAttempts<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(SortedAttempt))
    }
}

struct SortedAttempt<'a>(&'a switchyard::observe::Attempt);

impl Serialize for SortedAttempt<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use switchyard::observe::Attempt;
        let Attempt {
            provider,
            model,
            attempt,
            outcome,
            status,
            latency,
            start,
            probe,
            reported: _,
        } = self.0;
        let ms = |d: &std::time::Duration| d.as_secs_f64() * 1000.0;
        let OutcomeFields {
            tag,
            at,
            fields,
            kind,
            message,
            method,
            reason,
            sent,
        } = OutcomeFields::of(outcome);
        let mut m = s.serialize_map(None)?;
        if let Some(at) = at {
            m.serialize_entry("at", at)?;
        }
        m.serialize_entry("attempt", attempt)?;
        if let Some(fields) = fields {
            m.serialize_entry("fields", fields)?;
        }
        if let Some(kind) = kind {
            m.serialize_entry("kind", kind)?;
        }
        m.serialize_entry("latency_ms", &ms(latency))?;
        if let Some(message) = message {
            m.serialize_entry("message", message)?;
        }
        if let Some(method) = method {
            m.serialize_entry("method", method)?;
        }
        m.serialize_entry("model", model)?;
        m.serialize_entry("outcome", tag)?;
        if *probe {
            m.serialize_entry("probe", probe)?;
        }
        m.serialize_entry("provider", provider)?;
        if let Some(reason) = reason {
            m.serialize_entry("reason", reason)?;
        }
        if let Some(sent) = sent {
            m.serialize_entry("sent", sent)?;
        }
        if let Some(start) = start {
            m.serialize_entry("start_ms", &ms(start))?;
        }
        if let Some(status) = status {
            m.serialize_entry("status", status)?;
        }
        m.end()
    }
}

impl<'a> Trail<'a> {
    /// Whether the route's response cache left a note (written unsorted by
    /// [`SortedTrail`]: its own field order).
    pub(crate) fn has_cache_note(&self) -> bool {
        self.cache.is_some()
    }

    /// Write the trail as its `Serialize` does (`crate::json_out`; the tests compare).
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        out.extend_from_slice(b"{\"provider\":");
        j::str(out, self.provider);
        out.extend_from_slice(b",\"failed_over\":");
        j::bool(out, self.failed_over);
        out.extend_from_slice(b",\"cost_usd\":");
        j::opt_f64(out, self.cost_usd);
        out.extend_from_slice(b",\"attempts\":");
        j::attempts(out, self.attempts);
        if let Some(n) = self.max_tokens_applied {
            out.extend_from_slice(b",\"max_tokens_applied\":");
            j::u64(out, u64::from(n));
        }
        if !self.ignored.is_empty() {
            out.extend_from_slice(b",\"ignored\":");
            j::strs(out, &self.ignored);
        }
        if !self.dropped.is_empty() {
            out.extend_from_slice(b",\"dropped\":");
            j::strs(out, &self.dropped);
        }
        if let Some(note) = &self.cache {
            out.extend_from_slice(b",\"cache\":");
            cache_note_json(out, note);
        }
        out.push(b'}');
    }

    pub(crate) fn of(resp: &'a ChatResponse) -> Self {
        Self {
            provider: &resp.provider,
            failed_over: resp.failed_over,
            cost_usd: resp.cost.map(Money::to_usd),
            attempts: &resp.attempts,
            max_tokens_applied: resp.max_tokens_applied,
            ignored: resp.ignored.names(),
            dropped: resp.dropped.names(),
            cache: resp.cache,
        }
    }
}

/// A cache note as its `Serialize` writes it.
fn cache_note_json(out: &mut Vec<u8>, note: &CacheNote) {
    use crate::json_out as j;
    out.extend_from_slice(b"{\"status\":");
    j::str(out, note.status.as_str());
    if let Some(age) = note.age_s {
        out.extend_from_slice(b",\"age_s\":");
        j::u64(out, age);
    }
    if let Some(saved) = note.saved_usd {
        out.extend_from_slice(b",\"saved_usd\":");
        j::f64(out, saved.to_usd());
    }
    if let Some(reason) = note.reason {
        out.extend_from_slice(b",\"reason\":");
        j::str(out, reason);
    }
    out.push(b'}');
}
