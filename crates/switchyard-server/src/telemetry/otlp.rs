//! Traces over OTLP/HTTP (protobuf): each finished request's span tree, built from its
//! request-log entry after the request is over.
//!
//! Owns the trace a request belongs to ([`RequestTrace`]: the client's W3C `traceparent`
//! continued, or a new trace, and the sampling decision), and [`Traces`], the request
//! log's tap that queues sampled entries on a bounded channel for one tracked export
//! task. The task turns each entry into spans — the request's (SERVER kind), one per
//! upstream call (CLIENT kind: tries, stream rescues; skips are events on the request's
//! span) — and posts them with `opentelemetry-otlp`'s HTTP exporter over the workspace's
//! reqwest. Attempt span ids are [`switchyard::propagate::TraceContext::attempt_span_id`]
//! of their trail index: the ids the upstreams were sent in `traceparent`. Nothing here
//! runs on a request's path but the queueing: a full queue or a failed export drops the
//! spans and counts them ([`Traces::dropped`]). With no endpoint configured none of this
//! exists and requests carry no trace work beyond forwarding a client's `traceparent`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName};
use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use opentelemetry_sdk::Resource;
use switchyard::observe::{Attempt, Outcome};
use switchyard::propagate::{TraceContext, TraceParent};
use tokio::sync::mpsc;

use crate::shutdown::Tasks;
use crate::telemetry::content::genai_finish_reason;
use crate::telemetry::log::{LogEntry, LogTap};

/// Most requests' spans one export carries.
const MAX_BATCH: usize = 256;
/// The longest one export may take before it is given up (its spans counted as dropped).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `tracestate` forwarded (the W3C limit is 512 characters).
const MAX_TRACESTATE: usize = 512;

/// Where and how traces are exported.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    /// The full traces URL (`.../v1/traces`).
    pub endpoint: String,
    /// Header name and value (from the environment).
    pub headers: Vec<(String, String)>,
    /// `service.name`.
    pub service_name: String,
    /// Share of new traces sampled.
    pub sampling_ratio: f64,
    /// Spans waiting for export.
    pub queue: usize,
    /// Prompt and completion content go on the request span.
    pub capture_content: bool,
}

/// The W3C trace context's headers (constants: a name looked up as text is parsed on every
/// lookup, and `traceparent` is looked up for every request).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The trace a request belongs to: what its upstream calls carry and its log line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTrace {
    /// The trace context handed to the gateway (`CallOptions::upstream`).
    pub context: TraceContext,
    /// The client's span the request continues, if it sent a `traceparent`.
    pub parent: Option<[u8; 8]>,
}

impl RequestTrace {
    /// The trace of a request with `headers`: with `traces` (export on), a span of our own
    /// in the client's trace or a new one, sampled as the client's flag says or by the
    /// ratio; without it, the client's `traceparent` forwarded unchanged (or nothing).
    #[must_use]
    pub fn of(headers: &HeaderMap, traces: Option<&Traces>) -> Option<Self> {
        let parent = headers
            .get(TRACEPARENT)
            .and_then(|v| v.to_str().ok())
            .and_then(TraceParent::parse);
        let tracestate = parent.and_then(|_| tracestate(headers));
        let Some(traces) = traces else {
            let p = parent?;
            return Some(Self {
                context: TraceContext {
                    trace_id: p.trace_id,
                    span_id: p.span_id,
                    sampled: p.flags & 1 == 1,
                    own_spans: false,
                    tracestate,
                },
                parent: None,
            });
        };
        let trace_id = parent.map_or_else(new_trace_id, |p| p.trace_id);
        let sampled = match parent {
            Some(p) => p.flags & 1 == 1,
            None => traces.samples(&trace_id),
        };
        Some(Self {
            context: TraceContext {
                trace_id,
                span_id: new_span_id(),
                sampled,
                own_spans: true,
                tracestate,
            },
            parent: parent.map(|p| p.span_id),
        })
    }
}

/// The client's `tracestate`, when it is printable ASCII of at most [`MAX_TRACESTATE`].
fn tracestate(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(TRACESTATE)?.to_str().ok()?;
    let ok =
        !v.is_empty() && v.len() <= MAX_TRACESTATE && v.bytes().all(|b| (0x20..0x7f).contains(&b));
    ok.then(|| v.to_owned())
}

fn new_trace_id() -> [u8; 16] {
    fastrand::u128(1..).to_be_bytes()
}

fn new_span_id() -> [u8; 8] {
    fastrand::u64(1..).to_be_bytes()
}

/// What a call span says of a configured provider: its `gen_ai.provider.name` and where its
/// calls go (`server.address`, `server.port`). Known once, at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upstream {
    /// The provider's `kind` (`openai`, `anthropic`, ...).
    pub kind: String,
    /// Host and port of its calls; `None` for a provider with no upstream (simulated).
    pub address: Option<(String, u16)>,
}

/// What the export loses, shared by the tap and the export task.
#[derive(Debug, Default)]
struct Counters {
    /// Spans not exported: the queue was full, or the collector refused or was away.
    dropped: AtomicU64,
    /// Spans the collector accepted.
    exported: AtomicU64,
}

/// The request log's tap that exports sampled requests' spans (cheap to share).
pub struct Traces {
    tx: mpsc::Sender<Arc<LogEntry>>,
    counters: Arc<Counters>,
    /// Share of new traces sampled.
    ratio: f64,
    /// Requests' content goes on their spans (`[telemetry] capture_content`).
    capture_content: bool,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces")
            .field("ratio", &self.ratio)
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Traces {
    /// Start exporting to `settings`' endpoint; `providers` maps provider names to their
    /// kind and address (for `gen_ai.provider.name`, `server.address`, `server.port`). The
    /// export task is tracked by `tasks` and ends once every handle is dropped and the queue
    /// is sent.
    ///
    /// # Errors
    /// The exporter cannot be built (a bad endpoint or header).
    pub fn start(
        settings: &OtlpSettings,
        providers: HashMap<String, Upstream>,
        tasks: &Tasks,
    ) -> Result<Arc<Self>, String> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("OTLP exporter: {e}"))?;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(settings.headers.iter().cloned().collect())
            .build()
            .map_err(|e| format!("OTLP exporter for {}: {e}", settings.endpoint))?;
        let resource = Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .build();
        exporter.set_resource(&resource);
        let (tx, rx) = mpsc::channel(settings.queue);
        let counters = Arc::new(Counters::default());
        let task = Export {
            exporter,
            providers,
            scope: InstrumentationScope::builder("switchyard")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            counters: Arc::clone(&counters),
        };
        tasks.spawn(task.run(rx));
        Ok(Arc::new(Self {
            tx,
            counters,
            ratio: settings.sampling_ratio,
            capture_content: settings.capture_content,
        }))
    }

    /// Is a new trace with this id sampled: its low 8 bytes below the ratio's share of
    /// the range (the same decision for the same trace on every replica).
    fn samples(&self, trace_id: &[u8; 16]) -> bool {
        let mut low = [0u8; 8];
        low.copy_from_slice(&trace_id[8..]);
        // the ratio's share of the range; `as` saturates at the ends
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let bound = (self.ratio * u64::MAX as f64) as u64;
        self.ratio >= 1.0 || u64::from_be_bytes(low) < bound
    }

    /// Do requests' spans carry their prompt and completion (`capture_content`).
    #[must_use]
    pub fn captures_content(&self) -> bool {
        self.capture_content
    }

    /// Spans not exported: the queue was full, or the collector failed or was away.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Spans the collector accepted.
    #[must_use]
    pub fn exported(&self) -> u64 {
        self.counters.exported.load(Ordering::Relaxed)
    }
}

impl LogTap for Traces {
    fn record(&self, entry: &Arc<LogEntry>) {
        if !entry.sampled || entry.span_id.is_none() {
            return;
        }
        if self.tx.try_send(Arc::clone(entry)).is_err() {
            let spans = 1 + entry.attempts.iter().filter(|a| a.was_called()).count();
            self.counters
                .dropped
                .fetch_add(spans as u64, Ordering::Relaxed);
        }
    }
}

/// The export task's state.
struct Export {
    exporter: opentelemetry_otlp::SpanExporter,
    providers: HashMap<String, Upstream>,
    scope: InstrumentationScope,
    counters: Arc<Counters>,
}

impl Export {
    /// Take what is queued, export it, count the outcome — until every handle is gone.
    async fn run(self, mut rx: mpsc::Receiver<Arc<LogEntry>>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut failing = false;
        while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
            let spans: Vec<SpanData> = batch
                .drain(..)
                .flat_map(|e| spans(&e, &self.providers, &self.scope))
                .collect();
            let n = spans.len() as u64;
            match self.exporter.export(spans).await {
                Ok(()) => {
                    self.counters.exported.fetch_add(n, Ordering::Relaxed);
                    if std::mem::take(&mut failing) {
                        tracing::info!("OTLP export succeeds again");
                    }
                }
                Err(e) => {
                    self.counters.dropped.fetch_add(n, Ordering::Relaxed);
                    if !std::mem::replace(&mut failing, true) {
                        tracing::warn!(error = %e, "OTLP export failed; spans are dropped and counted until it succeeds again");
                    }
                }
            }
        }
    }
}

/// Hex of `N` bytes back into bytes (the log line's ids).
fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if s.len() != 2 * N {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// `gen_ai.provider.name` for a provider `kind` (the GenAI conventions' names).
fn genai_provider(kind: &str) -> &str {
    match kind {
        "gemini" => "gcp.gemini",
        "vertex" => "gcp.vertex_ai",
        "azure" => "azure.ai.openai",
        other => other,
    }
}

/// `gen_ai.operation.name` for an inbound API.
fn operation(api: &str) -> &'static str {
    if api == "embeddings" {
        "embeddings"
    } else {
        "chat"
    }
}

/// The spans of one finished request: its own, then one per upstream call.
fn spans(
    e: &LogEntry,
    providers: &HashMap<String, Upstream>,
    scope: &InstrumentationScope,
) -> Vec<SpanData> {
    let (Some(trace_id), Some(span_id)) = (
        e.trace_id.as_deref().and_then(unhex::<16>),
        e.span_id.as_deref().and_then(unhex::<8>),
    ) else {
        return Vec::new();
    };
    let b = Builder {
        ctx: TraceContext {
            trace_id,
            span_id,
            sampled: true,
            own_spans: true,
            tracestate: None,
        },
        start: UNIX_EPOCH + Duration::from_millis(e.time_ms),
        op: operation(&e.api),
        providers,
        scope,
    };
    let mut out = vec![b.root(e)];
    b.calls(e, &mut out);
    out
}

/// What every span of one request shares.
struct Builder<'a> {
    /// The request's trace and span.
    ctx: TraceContext,
    /// When the request arrived.
    start: SystemTime,
    op: &'static str,
    providers: &'a HashMap<String, Upstream>,
    scope: &'a InstrumentationScope,
}

impl Builder<'_> {
    /// A configured provider, or the template a wildcard route's `template/model` was
    /// made from.
    fn provider(&self, name: &str) -> Option<&Upstream> {
        (self.providers.get(name)).or_else(|| {
            let (template, _) = name.split_once('/')?;
            self.providers.get(template)
        })
    }

    /// `gen_ai.provider.name` of a configured provider.
    fn kind_of(&self, provider: &str) -> String {
        (self.provider(provider))
            .map_or("unknown", |p| genai_provider(&p.kind))
            .to_owned()
    }

    fn span(&self, id: [u8; 8], kind: SpanKind, name: String, start: SystemTime) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(self.ctx.trace_id),
                SpanId::from_bytes(id),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::from_bytes(self.ctx.span_id),
            parent_span_is_remote: false,
            span_kind: kind,
            name: Cow::Owned(name),
            start_time: start,
            end_time: start,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        }
    }

    /// The request's span: the client's span as parent, the stream commit as an event.
    fn root(&self, e: &LogEntry) -> SpanData {
        let name = format!("{} {}", self.op, e.route);
        let mut root = self.span(self.ctx.span_id, SpanKind::Server, name, self.start);
        root.end_time = self.start + Duration::from_secs_f64(e.latency_ms.max(0.0) / 1000.0);
        root.parent_span_id = (e.parent_span_id.as_deref())
            .and_then(unhex::<8>)
            .map_or(SpanId::INVALID, SpanId::from_bytes);
        root.parent_span_is_remote = root.parent_span_id != SpanId::INVALID;
        root.attributes = request_attributes(e, self.op, &|p| self.kind_of(p));
        // the HTTP conventions: a server span's status is left unset for a 4xx answer (the
        // client's mistake, or a client that went away: 499), an error for the rest
        if let Some(error) = e.error.as_ref().filter(|_| !(400..500).contains(&e.status)) {
            root.status = Status::error(error.clone());
        }
        if let Some(ttft) = e.ttft_ms {
            let at = self.start + Duration::from_secs_f64(ttft.max(0.0) / 1000.0);
            let commit = Event::new("switchyard.stream.commit", at, Vec::new(), 0);
            root.events.events.push(commit);
        }
        root
    }

    /// Where `a`'s provider sends its calls (`server.address`, `server.port`), when it
    /// has an upstream.
    fn upstream_attributes(&self, a: &Attempt, out: &mut Vec<KeyValue>) {
        let Some((host, port)) = self.provider(&a.provider).and_then(|p| p.address.as_ref()) else {
            return;
        };
        out.push(KeyValue::new("server.address", host.clone()));
        out.push(KeyValue::new("server.port", i64::from(*port)));
    }

    /// A span per upstream call after `out`'s request span; skips become its events.
    fn calls(&self, e: &LogEntry, out: &mut Vec<SpanData>) {
        let mut previous: Option<(usize, &Attempt)> = None;
        for (i, a) in e.attempts.iter().enumerate() {
            let at = self.start + a.start.unwrap_or_default();
            if !a.was_called() {
                let mut what = vec![
                    KeyValue::new("switchyard.provider", a.provider.clone()),
                    KeyValue::new("switchyard.outcome", a.outcome.label()),
                ];
                if let Some(state) = a.breaker_state() {
                    what.push(KeyValue::new("switchyard.breaker.state", state));
                }
                out[0]
                    .events
                    .events
                    .push(Event::new("switchyard.skip", at, what, 0));
                continue;
            }
            // a rescued stream's finish (or its divergence) is the end of its rescue call,
            // not another call
            if let (Outcome::Success | Outcome::Diverged { .. }, Some((j, p))) =
                (&a.outcome, previous)
            {
                if matches!(p.outcome, Outcome::Rescue { .. }) && p.provider == a.provider {
                    out[j].end_time = at + a.latency;
                    let span = &mut out[j].attributes;
                    if let Outcome::Diverged { at, .. } = a.outcome {
                        let at = i64::try_from(at).unwrap_or(i64::MAX);
                        span.push(KeyValue::new("switchyard.rescue.diverged_at", at));
                    }
                    if let Some(status) = a.reported.as_ref().and_then(|r| r.status) {
                        span.push(KeyValue::new(
                            "http.response.status_code",
                            i64::from(status),
                        ));
                    }
                    answer_attributes(a, span);
                    continue;
                }
            }
            let name = format!("{} {}", self.op, a.model);
            let mut s = self.span(self.ctx.attempt_span_id(i), SpanKind::Client, name, at);
            s.end_time = at + a.latency;
            s.attributes = attempt_attributes(a, self.op, &|p| self.kind_of(p));
            self.upstream_attributes(a, &mut s.attributes);
            if let Outcome::Failed { kind, .. } = &a.outcome {
                s.status = Status::error(kind.to_string());
            }
            out.push(s);
            previous = Some((out.len() - 1, a));
        }
    }
}

/// The request span's attributes (GenAI conventions, then switchyard's own).
fn request_attributes(
    e: &LogEntry,
    op: &'static str,
    kind_of: &dyn Fn(&str) -> String,
) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", op),
        KeyValue::new("gen_ai.request.model", e.route.clone()),
        KeyValue::new("gen_ai.request.stream", e.stream),
        KeyValue::new("http.response.status_code", i64::from(e.status)),
        KeyValue::new("switchyard.request_id", e.id.clone()),
        KeyValue::new("switchyard.api", e.api.to_string()),
        KeyValue::new("switchyard.route", e.route.clone()),
        KeyValue::new("switchyard.failed_over", e.failed_over),
    ];
    if let Some(p) = &e.provider {
        a.push(KeyValue::new("gen_ai.provider.name", kind_of(p)));
        a.push(KeyValue::new("switchyard.provider", p.clone()));
    }
    if let Some(m) = &e.model {
        a.push(KeyValue::new("gen_ai.response.model", m.clone()));
    }
    let answered = (e.attempts.iter().rev())
        .find(|at| at.outcome == Outcome::Success)
        .and_then(|at| at.reported.as_ref()?.finish.as_deref());
    if let Some(finish) = answered {
        a.push(finish_reasons(finish));
    }
    if let Some(u) = &e.usage {
        a.push(KeyValue::new(
            "gen_ai.usage.input_tokens",
            saturating_i64(u.input_tokens),
        ));
        a.push(KeyValue::new(
            "gen_ai.usage.output_tokens",
            saturating_i64(u.output_tokens),
        ));
    }
    if let Some(cost) = e.cost_usd {
        a.push(KeyValue::new("switchyard.cost_usd", cost));
    }
    if let Some(ttft) = e.ttft_ms {
        a.push(KeyValue::new(
            "gen_ai.response.time_to_first_chunk",
            ttft / 1000.0,
        ));
    }
    if let Some(key) = &e.key {
        a.push(KeyValue::new("switchyard.key", key.clone()));
    }
    if let Some(error) = &e.error {
        a.push(KeyValue::new("error.type", error.clone()));
    }
    if !e.dropped.is_empty() {
        a.push(KeyValue::new("switchyard.dropped", e.dropped.join(",")));
    }
    if let Some(cache) = &e.cache {
        a.push(KeyValue::new("switchyard.cache", cache.status.to_string()));
        if let Some(saved) = cache.saved_usd {
            a.push(KeyValue::new("switchyard.cache.saved_usd", saved));
        }
    }
    if let Some(rung) = e.attempts.iter().find_map(|a| match &a.outcome {
        Outcome::Rescue { method } => Some(method.clone()),
        _ => None,
    }) {
        a.push(KeyValue::new("switchyard.rescue.rung", rung));
    }
    if let Some(c) = &e.content {
        a.push(KeyValue::new("gen_ai.input.messages", c.input.to_string()));
        if let Some(output) = &c.output {
            a.push(KeyValue::new("gen_ai.output.messages", output.clone()));
        }
        if c.truncated {
            a.push(KeyValue::new("switchyard.content.truncated", true));
        }
    }
    a
}

/// An upstream call's attributes.
fn attempt_attributes(
    at: &Attempt,
    op: &'static str,
    kind_of: &dyn Fn(&str) -> String,
) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", op),
        KeyValue::new("gen_ai.provider.name", kind_of(&at.provider)),
        KeyValue::new("gen_ai.request.model", at.model.clone()),
        KeyValue::new("switchyard.provider", at.provider.clone()),
        KeyValue::new("switchyard.attempt", i64::from(at.attempt)),
        KeyValue::new("switchyard.outcome", at.outcome.label()),
    ];
    // a failure's status is on the trail; an answer's is what the call reported
    let reported_status = at.reported.as_ref().and_then(|r| r.status);
    if let Some(status) = at.status.or(reported_status) {
        a.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    answer_attributes(at, &mut a);
    match &at.outcome {
        Outcome::Failed { kind, .. } => a.push(KeyValue::new("error.type", kind.to_string())),
        Outcome::Rescue { method } => {
            a.push(KeyValue::new("switchyard.rescue.rung", method.clone()));
        }
        Outcome::Declined { kind, .. } => {
            a.push(KeyValue::new(
                "switchyard.rescue.declined",
                kind.to_string(),
            ));
        }
        Outcome::Success | Outcome::Skipped { .. } | Outcome::Diverged { .. } => {}
    }
    if let Some(state) = at.breaker_state() {
        a.push(KeyValue::new("switchyard.breaker.state", state));
    }
    a
}

/// What an answered call said of its answer: `gen_ai.response.id`,
/// `gen_ai.response.finish_reasons` (the conventions' words) and its own
/// `gen_ai.usage.input_tokens` / `output_tokens`.
fn answer_attributes(at: &Attempt, out: &mut Vec<KeyValue>) {
    let Some(r) = &at.reported else { return };
    if let Some(id) = &r.id {
        out.push(KeyValue::new("gen_ai.response.id", id.to_string()));
    }
    if let Some(finish) = &r.finish {
        out.push(finish_reasons(finish));
    }
    if let Some((input, output)) = r.tokens {
        out.push(KeyValue::new(
            "gen_ai.usage.input_tokens",
            saturating_i64(input),
        ));
        out.push(KeyValue::new(
            "gen_ai.usage.output_tokens",
            saturating_i64(output),
        ));
    }
}

/// `gen_ai.response.finish_reasons`: a string array of one reason (the first answer's).
fn finish_reasons(finish: &str) -> KeyValue {
    let reason = opentelemetry::StringValue::from(genai_finish_reason(finish).to_owned());
    KeyValue::new(
        "gen_ai.response.finish_reasons",
        opentelemetry::Value::Array(opentelemetry::Array::String(vec![reason])),
    )
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use switchyard::propagate::to_hex;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn without_export_a_clients_traceparent_is_forwarded_as_it_came() {
        assert_eq!(RequestTrace::of(&HeaderMap::new(), None), None);
        let t = RequestTrace::of(
            &headers(&[("traceparent", PARENT), ("tracestate", "k=v")]),
            None,
        )
        .unwrap();
        assert_eq!(t.context.traceparent(0), PARENT);
        assert_eq!(t.context.tracestate.as_deref(), Some("k=v"));
        assert_eq!(t.parent, None);
        // garbage is not forwarded
        assert_eq!(
            RequestTrace::of(&headers(&[("traceparent", "00-xyz")]), None),
            None
        );
    }

    #[test]
    fn ratios_sample_by_trace_id() {
        let (tx, _rx) = mpsc::channel(1);
        let traces = |ratio| Traces {
            tx: tx.clone(),
            counters: Arc::default(),
            ratio,
            capture_content: false,
        };
        let low = [0u8; 16];
        let mut high = [0xffu8; 16];
        high[0] = 1;
        assert!(traces(1.0).samples(&high));
        assert!(!traces(0.0).samples(&low));
        assert!(!traces(0.0).samples(&high));
        assert!(traces(0.5).samples(&low));
        assert!(!traces(0.5).samples(&high));
        // a client's sampled flag wins over the ratio
        let t = RequestTrace::of(&headers(&[("traceparent", PARENT)]), Some(&traces(0.0))).unwrap();
        assert!(t.context.sampled && t.context.own_spans);
        assert_eq!(to_hex(&t.parent.unwrap()), "00f067aa0ba902b7");
        assert_eq!(
            to_hex(&t.context.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
    }

    fn attempt(provider: &str, outcome: Outcome, probe: bool) -> Attempt {
        Attempt {
            provider: provider.to_owned(),
            model: "m".to_owned(),
            attempt: u32::from(!matches!(outcome, Outcome::Skipped { .. })),
            outcome,
            status: None,
            latency: Duration::from_millis(5),
            start: Some(Duration::from_millis(1)),
            probe,
            reported: None,
        }
    }

    /// A logged request as the request log holds it, sampled, with `attempts`.
    fn entry(attempts: Vec<Attempt>) -> LogEntry {
        LogEntry {
            id: "req-1".to_owned(),
            time_ms: 1_700_000_000_000,
            api: "chat".into(),
            route: "smart".to_owned(),
            key: None,
            stream: true,
            status: 200,
            provider: Some("backup".to_owned()),
            model: Some("m".to_owned()),
            failed_over: true,
            attempts,
            usage: None,
            cost_usd: None,
            latency_ms: 20.0,
            ttft_ms: None,
            error: None,
            dropped: Vec::new(),
            cache: None,
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".to_owned()),
            span_id: Some("00f067aa0ba902b7".to_owned()),
            parent_span_id: None,
            sampled: true,
            content: None,
        }
    }

    fn value<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a opentelemetry::Value> {
        attrs
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    /// A half-open probe that failed, a skip at an open circuit, a stream broken on a
    /// closed circuit and rescued by a restart: each span says the breaker state it met,
    /// the rescue its rung.
    #[test]
    fn attempt_spans_carry_the_breaker_state_met_and_the_rescue_rung() {
        let failed = || Outcome::Failed {
            kind: switchyard::ErrorKind::Timeout,
            message: String::new(),
        };
        let skipped = Outcome::Skipped {
            reason: switchyard::breaker::SkipReason::CircuitOpen,
            fields: Vec::new(),
        };
        let restart = Outcome::Rescue {
            method: "restart".to_owned(),
        };
        let e = entry(vec![
            attempt("primary", failed(), true),
            attempt("other", skipped, false),
            attempt("backup", failed(), false),
            attempt("spare", restart, false),
            attempt("spare", Outcome::Success, false),
        ]);
        let scope = InstrumentationScope::builder("test").build();
        let spans = spans(&e, &HashMap::new(), &scope);
        assert_eq!(spans.len(), 4, "the request, two failed calls, the rescue");
        let state = |i: usize| value(&spans[i].attributes, "switchyard.breaker.state");
        assert_eq!(state(1), Some(&"half_open".into()), "the probe");
        assert_eq!(state(2), Some(&"closed".into()));
        assert_eq!(state(3), Some(&"closed".into()));
        let rung = |i: usize| value(&spans[i].attributes, "switchyard.rescue.rung");
        assert_eq!(rung(3), Some(&"restart".into()));
        assert_eq!(rung(1), None);
        assert_eq!(rung(0), Some(&"restart".into()), "the request says it too");
        let skip = &spans[0].events.events[0];
        assert_eq!(skip.name, "switchyard.skip");
        assert_eq!(
            value(&skip.attributes, "switchyard.breaker.state"),
            Some(&"open".into())
        );
    }

    /// A restart that diverged ends its rescue call: one span, not an error, saying where
    /// it parted from the text sent; the cut call before it is the error.
    #[test]
    fn a_diverged_restart_ends_its_rescue_span_without_an_error() {
        let cut = Outcome::Failed {
            kind: switchyard::ErrorKind::Malformed,
            message: String::new(),
        };
        let restart = Outcome::Rescue {
            method: "restart".to_owned(),
        };
        let e = entry(vec![
            attempt("primary", cut, false),
            attempt("backup", restart, false),
            attempt("backup", Outcome::Diverged { at: 10, sent: 16 }, false),
        ]);
        let scope = InstrumentationScope::builder("test").build();
        let spans = spans(&e, &HashMap::new(), &scope);
        assert_eq!(spans.len(), 3, "the request, the cut call, the rescue");
        assert_eq!(spans[1].status, Status::error("malformed"));
        assert_eq!(spans[2].status, Status::Unset);
        let at = value(&spans[2].attributes, "switchyard.rescue.diverged_at");
        assert_eq!(at, Some(&10_i64.into()));
    }

    /// Fields the answering provider was called without are on the request span.
    #[test]
    fn the_request_span_names_the_dropped_fields() {
        let scope = InstrumentationScope::builder("test").build();
        let mut e = entry(vec![attempt("backup", Outcome::Success, false)]);
        let plain = spans(&e, &HashMap::new(), &scope);
        assert_eq!(value(&plain[0].attributes, "switchyard.dropped"), None);
        e.dropped = vec!["seed".to_owned(), "presence_penalty".to_owned()];
        let spans = spans(&e, &HashMap::new(), &scope);
        assert_eq!(
            value(&spans[0].attributes, "switchyard.dropped"),
            Some(&"seed,presence_penalty".into())
        );
    }

    /// A cached route's request span says what its cache did and what a hit saved.
    #[test]
    fn the_request_span_says_what_the_cache_did() {
        let scope = InstrumentationScope::builder("test").build();
        let mut e = entry(Vec::new());
        assert_eq!(
            value(
                &spans(&e, &HashMap::new(), &scope)[0].attributes,
                "switchyard.cache"
            ),
            None
        );
        e.cache = Some(Box::new(crate::telemetry::log::CacheLog {
            status: "hit".into(),
            saved_usd: Some(0.25),
            age_s: Some(3),
        }));
        let spans = spans(&e, &HashMap::new(), &scope);
        assert_eq!(
            value(&spans[0].attributes, "switchyard.cache"),
            Some(&"hit".into())
        );
        assert_eq!(
            value(&spans[0].attributes, "switchyard.cache.saved_usd"),
            Some(&0.25.into())
        );
    }

    /// An answered call's span says where it went, its status, the upstream's id, why it
    /// stopped (the conventions' word) and its own usage; the request's span says the finish
    /// too. A wildcard model's call is placed by its template's address.
    #[test]
    fn a_call_span_carries_its_upstream_status_id_finish_and_usage() {
        let mut answered = attempt("backup", Outcome::Success, false);
        answered.reported = Some(switchyard::observe::Reported {
            id: Some("chatcmpl-42".into()),
            finish: Some("tool_calls".into()),
            tokens: Some((120, 7)),
            status: Some(200),
            spent: None,
        });
        let failed = Outcome::Failed {
            kind: switchyard::ErrorKind::Server,
            message: String::new(),
        };
        let mut broke = attempt("wild/m-1", failed, false);
        broke.status = Some(503);
        let e = entry(vec![broke, answered]);
        let providers = HashMap::from([
            (
                "backup".to_owned(),
                Upstream {
                    kind: "openai".into(),
                    address: Some(("api.openai.com".into(), 443)),
                },
            ),
            (
                "wild".to_owned(),
                Upstream {
                    kind: "anthropic".into(),
                    address: Some(("127.0.0.1".into(), 8080)),
                },
            ),
        ]);
        let scope = InstrumentationScope::builder("test").build();
        let spans = spans(&e, &providers, &scope);
        let attr = |i: usize, k: &str| value(&spans[i].attributes, k).cloned();
        let reasons =
            opentelemetry::Value::Array(opentelemetry::Array::String(vec!["tool_call".into()]));
        assert_eq!(attr(2, "server.address"), Some("api.openai.com".into()));
        assert_eq!(attr(2, "server.port"), Some(443.into()));
        assert_eq!(attr(2, "http.response.status_code"), Some(200.into()));
        assert_eq!(attr(2, "gen_ai.response.id"), Some("chatcmpl-42".into()));
        assert_eq!(
            attr(2, "gen_ai.response.finish_reasons"),
            Some(reasons.clone())
        );
        assert_eq!(attr(2, "gen_ai.usage.input_tokens"), Some(120.into()));
        assert_eq!(attr(2, "gen_ai.usage.output_tokens"), Some(7.into()));
        // the failed call: its own status and its template's address, no answer
        assert_eq!(attr(1, "server.address"), Some("127.0.0.1".into()));
        assert_eq!(attr(1, "gen_ai.provider.name"), Some("anthropic".into()));
        assert_eq!(attr(1, "http.response.status_code"), Some(503.into()));
        assert_eq!(attr(1, "gen_ai.response.id"), None);
        assert_eq!(attr(1, "gen_ai.usage.input_tokens"), None);
        assert_eq!(attr(0, "gen_ai.response.finish_reasons"), Some(reasons));
    }

    /// The HTTP conventions: a server span is an error for a 5xx answer, not for a 4xx one
    /// (the client's mistake, or a client gone: 499); a call that failed is an error.
    #[test]
    fn a_4xx_request_span_is_not_an_error() {
        let scope = InstrumentationScope::builder("test").build();
        let status_of = |status: u16| {
            let mut e = entry(vec![attempt("backup", Outcome::Success, false)]);
            e.status = status;
            e.error = (status >= 400).then(|| "some_error".to_owned());
            spans(&e, &HashMap::new(), &scope)[0].status.clone()
        };
        for status in [200, 400, 404, 429, 499] {
            assert_eq!(status_of(status), Status::Unset, "{status}");
        }
        for status in [500, 502, 504] {
            assert_eq!(status_of(status), Status::error("some_error"), "{status}");
        }
    }

    /// The probe mark is logged only when set: a normal request's line does not grow.
    #[test]
    fn the_probe_mark_is_logged_only_on_a_probe() {
        let plain = serde_json::to_value(attempt("p", Outcome::Success, false)).unwrap();
        assert!(plain.get("probe").is_none(), "{plain}");
        let probe = serde_json::to_string(&attempt("p", Outcome::Success, true)).unwrap();
        assert!(probe.contains(r#""probe":true"#), "{probe}");
        let back: Attempt = serde_json::from_str(&probe).unwrap();
        assert!(back.probe);
    }
}
