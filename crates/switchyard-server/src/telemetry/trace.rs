//! Diagnostics on stderr: the subscriber that shows the `tracing` events of the library
//! and its dependencies — e.g. the shared state's "Redis unavailable" and "resynced" lines
//! (`switchyard::state`'s Redis link).
//!
//! Owns the filter (`RUST_LOG`'s directives, [`DEFAULT_FILTER`] when unset) and installing
//! the process-wide subscriber. The filter always silences [`SILENCED`]: `aws-sigv4` traces
//! the canonical request it signs, session token included, so no `RUST_LOG` may show it;
//! and it always shows the server's own lines about its life (target [`SERVE`]: start-up,
//! config warnings, shutdown, alerts) at `info`, whatever `RUST_LOG` says, as when they were
//! printed directly. What happened to traffic (circuits, health verdicts, budgets,
//! failovers: target [`EVENTS`], `telemetry/events.rs`) is filtered like everything else.
//! Every line on stderr goes through this subscriber, so `--log-format json` makes each one
//! a JSON object. It does not own the request log or the stdout access log.
//!
//! Also owns the request span ([`request_span`]): its fields are formatted only when a
//! line inside it is shown ([`Deferred`]), not each time a request opens it.

use switchyard::propagate::to_hex;
use tracing::field::{display, Empty, Value};
use tracing::span::{Id, Record};
use tracing::{Dispatch, Event, Subscriber};
use tracing_subscriber::filter::Directive;
use tracing_subscriber::fmt::format::{DefaultFields, JsonFields};
use tracing_subscriber::fmt::{FormatFields, FormattedFields};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::{ExtensionsMut, LookupSpan, Registry, SpanData};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

/// Diagnostics on stderr: text lines or JSON objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `tracing`'s plain text lines.
    #[default]
    Text,
    /// One JSON object per line, with the request's span fields (`request_id`, `trace_id`).
    Json,
}

/// The level shown when `RUST_LOG` is unset or empty.
pub const DEFAULT_FILTER: &str = "info";

/// A target whose events are never shown, whatever `RUST_LOG` says: Bedrock's signer
/// (`aws-sigv4`) traces the canonical request, which holds the session token.
pub const SILENCED: &str = "aws_sigv4";

/// The target of the server's own lines about its life (start-up, config warnings,
/// shutdown, the request log's trouble, usage alerts): shown at `info` and above whatever
/// `RUST_LOG` says.
pub const SERVE: &str = "switchyard::serve";

/// The target of what happened to traffic: circuit transitions, health-check verdict
/// changes, exhausted budgets, failover summaries (`telemetry/events.rs`).
pub const EVENTS: &str = "switchyard::events";

/// The filter `rust_log` (the value of `RUST_LOG`, if set) asks for, and a warning when
/// it could not be used: directives that do not parse are replaced by [`DEFAULT_FILTER`].
/// Directives naming [`SILENCED`] are dropped, and it is turned off.
pub fn filter(rust_log: Option<&str>) -> (EnvFilter, Option<String>) {
    let kept: Option<String> = rust_log.map(|d| {
        d.split(',')
            .filter(|directive| !directive.contains(SILENCED))
            .collect::<Vec<_>>()
            .join(",")
    });
    let directives = kept.as_deref().map(str::trim).filter(|d| !d.is_empty());
    let (filter, warning) = match directives.map(EnvFilter::try_new) {
        None => (EnvFilter::new(DEFAULT_FILTER), None),
        Some(Ok(filter)) => (filter, None),
        Some(Err(e)) => (
            EnvFilter::new(DEFAULT_FILTER),
            Some(format!(
                "RUST_LOG {:?} is not a valid filter ({e}); logging at {DEFAULT_FILTER:?}",
                directives.unwrap_or_default()
            )),
        ),
    };
    let mut filter = filter;
    for directive in [format!("{SILENCED}=off"), format!("{SERVE}=info")] {
        if let Ok(d) = directive.parse::<Directive>() {
            filter = filter.add_directive(d); // constants that parse: never skipped
        }
    }
    (filter, warning)
}

/// Install the process-wide subscriber: `RUST_LOG`'s filter, `format` on stderr (stdout
/// carries command output: `check`, `report`, `keys new`; under `serve`, only the access
/// log). A `RUST_LOG` that could not be used is said in the installed format.
pub fn install(format: LogFormat) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, warning) = filter(rust_log.as_deref());
    let installed = subscriber(format, filter, std::io::stderr).try_init();
    if let Err(e) = installed {
        // no subscriber to say it through: the one line not in the chosen format
        eprintln!("switchyard: warning: diagnostics are not shown: {e}");
        return;
    }
    if let Some(warning) = warning {
        tracing::warn!(target: SERVE, "{warning}");
    }
}

/// The subscriber [`install`] installs, writing to `writer`: text lines, or one JSON object
/// per line with the fields of the span it happened in (a request's `request_id` and
/// `trace_id`, [`request_span`]).
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    // the deferred fields are recorded before the fmt layer (outside it) writes a line
    let registry = tracing_subscriber::registry().with(filter);
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Text => Box::new(
            registry
                .with(Deferred::new(add_fields::<DefaultFields>))
                .with(layer),
        ),
        LogFormat::Json => Box::new(
            registry
                .with(Deferred::new(add_fields::<JsonFields>))
                .with(layer.json().with_current_span(true).with_span_list(false)),
        ),
    }
}

/// The span a request's diagnostics are logged in: `request`, with `request_id` and
/// `trace_id` (lower-case hex; absent when the request has no trace: no exporter and no
/// client `traceparent` — `otlp::RequestTrace::of`). Under [`subscriber`]
/// the fields are kept aside and formatted only when a line inside the span is shown
/// (formatting them for every request cost more than any other part of the span:
/// BENCHMARKS.md, "Stop 22"); under any other subscriber they are recorded at once.
pub fn request_span(request_id: &str, trace_id: Option<[u8; 16]>) -> tracing::Span {
    let span = tracing::info_span!("request", request_id = Empty, trace_id = Empty);
    if span.is_disabled() {
        return span;
    }
    let mut fields = Some(RequestFields {
        request_id: request_id.to_owned(),
        trace_id,
    });
    span.with_subscriber(|(id, dispatch)| defer(dispatch, id, &mut fields));
    if let Some(fields) = fields {
        span.record("request_id", display(&fields.request_id));
        if let Some(hex) = fields.trace_hex() {
            span.record("trace_id", hex.as_str());
        }
    }
    span
}

/// A request span's field values, until a line inside the span is shown.
struct RequestFields {
    request_id: String,
    trace_id: Option<[u8; 16]>,
}

impl RequestFields {
    fn trace_hex(&self) -> Option<String> {
        self.trace_id.as_ref().map(|t| to_hex(t))
    }
}

/// Keep `fields` (taking them) on span `id`, when `dispatch` has a [`Deferred`] layer
/// that will record them.
fn defer(dispatch: &Dispatch, id: &Id, fields: &mut Option<RequestFields>) {
    if dispatch.downcast_ref::<Deferred>().is_none() {
        return;
    }
    let Some(data) = dispatch
        .downcast_ref::<Registry>()
        .and_then(|r| r.span_data(id))
    else {
        return;
    };
    if let Some(fields) = fields.take() {
        data.extensions_mut().insert(fields);
    }
}

/// Records a request span's kept-aside fields ([`request_span`]) on the fmt layer's
/// formatted fields when the first line inside the span reaches the layer: lines show
/// exactly the fields they showed when the span formatted them on opening.
pub struct Deferred {
    /// Appends a record to the fmt layer's formatted fields (of its field formatter).
    add: fn(&mut ExtensionsMut<'_>, &Record<'_>),
}

impl Deferred {
    fn new(add: fn(&mut ExtensionsMut<'_>, &Record<'_>)) -> Self {
        Self { add }
    }
}

/// Append `record` to the span's fields as formatted by `N` (the fmt layer's formatter).
fn add_fields<N>(extensions: &mut ExtensionsMut<'_>, record: &Record<'_>)
where
    N: for<'w> FormatFields<'w> + Default + 'static,
{
    if let Some(formatted) = extensions.get_mut::<FormattedFields<N>>() {
        // as the fmt layer's own `on_record` (a failure leaves the fields as they were)
        let _ = N::default().add_fields(formatted, record);
    }
}

impl<S> Layer<S> for Deferred
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        for span in scope {
            let mut extensions = span.extensions_mut();
            let Some(fields) = extensions.remove::<RequestFields>() else {
                continue;
            };
            let set = span.metadata().fields();
            let (Some(request_id), Some(trace_id)) =
                (set.field("request_id"), set.field("trace_id"))
            else {
                continue;
            };
            let id = display(&fields.request_id);
            let hex = fields.trace_hex();
            let trace = hex.as_deref();
            // without a trace the field stays unrecorded: absent, never an empty string
            let values = [
                (&request_id, Some(&id as &dyn Value)),
                (&trace_id, trace.as_ref().map(|t| t as &dyn Value)),
            ];
            (self.add)(&mut extensions, &Record::new(&set.value_set(&values)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::testing::Buffer;
    use tracing_subscriber::filter::LevelFilter;

    #[test]
    fn unset_or_empty_means_info() {
        for rust_log in [None, Some(""), Some("  ")] {
            let (filter, warning) = filter(rust_log);
            assert_eq!(
                filter.max_level_hint(),
                Some(LevelFilter::INFO),
                "{rust_log:?}"
            );
            assert_eq!(warning, None);
        }
    }

    #[test]
    fn rust_log_sets_the_level() {
        let (filter, warning) = filter(Some("warn,switchyard=debug"));
        assert_eq!(filter.max_level_hint(), Some(LevelFilter::DEBUG));
        assert_eq!(warning, None);
        let (filter, _) = super::filter(Some("error"));
        let subscriber = tracing_subscriber::fmt().with_env_filter(filter).finish();
        tracing::subscriber::with_default(subscriber, || {
            assert!(!tracing::enabled!(target: EVENTS, tracing::Level::WARN));
            assert!(!tracing::enabled!(target: "switchyard::state", tracing::Level::WARN));
            assert!(tracing::enabled!(target: EVENTS, tracing::Level::ERROR));
        });
    }

    /// The server's own lines about its life were printed directly before they went
    /// through the subscriber; no `RUST_LOG` hides them (nor shows their debug lines).
    #[test]
    fn the_servers_own_lines_are_shown_whatever_rust_log_says() {
        for rust_log in [
            None,
            Some("error"),
            Some("off"),
            Some("switchyard::serve=off"),
        ] {
            let (filter, _) = filter(rust_log);
            let subscriber = tracing_subscriber::fmt().with_env_filter(filter).finish();
            tracing::subscriber::with_default(subscriber, || {
                assert!(
                    tracing::enabled!(target: SERVE, tracing::Level::INFO),
                    "{rust_log:?}"
                );
                assert!(!tracing::enabled!(target: SERVE, tracing::Level::DEBUG));
            });
        }
    }

    #[test]
    fn the_sigv4_signer_is_never_shown_whatever_rust_log_asks() {
        for rust_log in [
            None,
            Some("trace"),
            Some("aws_sigv4=trace"),
            Some("trace,aws_sigv4::http_request=trace"),
        ] {
            let (filter, _) = filter(rust_log);
            let subscriber = tracing_subscriber::fmt().with_env_filter(filter).finish();
            tracing::subscriber::with_default(subscriber, || {
                assert!(
                    !tracing::enabled!(
                        target: "aws_sigv4::http_request::sign",
                        tracing::Level::ERROR
                    ),
                    "{rust_log:?}"
                );
            });
        }
        let (filter, _) = filter(Some("trace,aws_sigv4=trace"));
        let subscriber = tracing_subscriber::fmt().with_env_filter(filter).finish();
        tracing::subscriber::with_default(subscriber, || {
            assert!(tracing::enabled!(
                target: "switchyard::state",
                tracing::Level::TRACE
            ));
        });
    }

    #[test]
    fn an_invalid_filter_is_reported_and_replaced_by_info() {
        let (filter, warning) = filter(Some("switchyard=loud"));
        assert_eq!(filter.max_level_hint(), Some(LevelFilter::INFO));
        let warning = warning.unwrap();
        assert!(
            warning.contains("RUST_LOG \"switchyard=loud\""),
            "{warning}"
        );
        assert!(warning.contains("logging at \"info\""), "{warning}");
    }

    /// `text`'s lines with their timestamps cut off.
    fn untimed(text: &str) -> Vec<String> {
        text.lines()
            .map(|l| {
                l.split_once(' ')
                    .map_or(l, |(_, rest)| rest)
                    .trim_start()
                    .to_owned()
            })
            .collect()
    }

    /// Lines logged by `log` under `sub`.
    fn logged(
        sub: Box<dyn tracing::Subscriber + Send + Sync>,
        buf: &Buffer,
        log: impl FnOnce(),
    ) -> String {
        tracing::subscriber::with_default(sub, log);
        buf.text()
    }

    const TRACE: [u8; 16] = [
        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47,
        0x36,
    ];

    /// What a request logs: a line shown, one filtered out, a line in a child span, another.
    fn a_request(request_span: impl Fn() -> tracing::Span) {
        let span = request_span();
        let _in = span.enter();
        tracing::debug!("not shown at info");
        tracing::warn!(provider = "claude", "redis unavailable");
        let child = tracing::info_span!("call", attempt = 1);
        child.in_scope(|| tracing::error!("upstream refused"));
        tracing::info!("resynced");
    }

    #[test]
    fn text_lines_in_a_request_show_its_fields_as_when_formatted_on_opening() {
        for trace in [Some(TRACE), None] {
            let buf = Buffer::default();
            let out = buf.clone();
            let sub = subscriber(LogFormat::Text, EnvFilter::new("info"), move || out.clone());
            let deferred = logged(sub, &buf, || a_request(|| request_span("req_abc", trace)));
            // the span as it was: fields formatted when it opens, under fmt's own subscriber
            let buf = Buffer::default();
            let out = buf.clone();
            let eager = tracing_subscriber::fmt()
                .with_env_filter(EnvFilter::new("info"))
                .with_writer(move || out.clone())
                .finish();
            let hex = trace.map(|t| to_hex(&t));
            let eager = logged(Box::new(eager), &buf, || {
                a_request(|| {
                    tracing::info_span!(
                        "request",
                        request_id = %"req_abc",
                        trace_id = hex.as_deref()
                    )
                });
            });
            assert_eq!(untimed(&deferred), untimed(&eager), "{deferred}");
            assert_eq!(untimed(&deferred).len(), 3, "{deferred}");
            let shown = match &hex {
                Some(hex) => format!("request{{request_id=req_abc trace_id=\"{hex}\"}}"),
                None => "request{request_id=req_abc}".to_owned(),
            };
            for line in deferred.lines() {
                assert!(line.contains(&shown), "{line}");
            }
        }
    }

    #[test]
    fn json_lines_in_a_request_carry_its_fields() {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Json, EnvFilter::new("info"), move || out.clone());
        let text = logged(sub, &buf, || {
            a_request(|| request_span("req_abc", Some(TRACE)))
        });
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1]["span"]["name"], "call", "{text}");
        for line in [&lines[0], &lines[2]] {
            assert_eq!(
                line["span"],
                serde_json::json!({
                    "name": "request",
                    "request_id": "req_abc",
                    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                }),
                "{text}"
            );
        }
        // without a trace: no trace id at all (never an empty string)
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Json, EnvFilter::new("info"), move || out.clone());
        let text = logged(sub, &buf, || a_request(|| request_span("req_abc", None)));
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            first["span"],
            serde_json::json!({"name": "request", "request_id": "req_abc"}),
            "{text}"
        );
    }

    /// Whether span `span` still holds its fields aside, and its fields as the fmt layer
    /// formatted them.
    fn held(span: &tracing::Span) -> (bool, String) {
        span.with_subscriber(|(id, dispatch)| {
            let data = dispatch
                .downcast_ref::<Registry>()
                .and_then(|r| r.span_data(id))
                .unwrap();
            let extensions = data.extensions();
            let formatted = extensions.get::<FormattedFields<DefaultFields>>().unwrap();
            (
                extensions.get::<RequestFields>().is_some(),
                formatted.fields.clone(),
            )
        })
        .unwrap()
    }

    #[test]
    fn the_fields_are_formatted_only_once_a_line_inside_the_span_is_shown() {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Text, EnvFilter::new("info"), move || out.clone());
        tracing::subscriber::with_default(sub, || {
            let span = request_span("req_abc", Some(TRACE));
            assert_eq!(held(&span), (true, String::new()));
            span.in_scope(|| tracing::debug!("not shown at info"));
            assert_eq!(held(&span), (true, String::new()), "a line not shown");
            span.in_scope(|| tracing::warn!("shown"));
            let shown = "request_id=req_abc trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\"";
            assert_eq!(held(&span), (false, shown.to_owned()));
            span.in_scope(|| tracing::warn!("again"));
            assert_eq!(held(&span), (false, shown.to_owned()), "recorded once");
        });
        assert_eq!(buf.text().lines().count(), 2);
    }

    #[test]
    fn another_subscriber_gets_the_fields_at_once() {
        let buf = Buffer::default();
        let out = buf.clone();
        let other = tracing_subscriber::fmt()
            .json()
            .with_current_span(true)
            .with_writer(move || out.clone())
            .finish();
        let text = logged(Box::new(other), &buf, || {
            a_request(|| request_span("req_abc", Some(TRACE)))
        });
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["span"]["request_id"], "req_abc");
        assert_eq!(
            first["span"]["trace_id"],
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
    }

    #[test]
    fn a_filtered_out_request_span_is_disabled() {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Json, EnvFilter::new("warn"), move || out.clone());
        tracing::subscriber::with_default(sub, || {
            assert!(request_span("req_abc", None).is_disabled());
        });
    }

    #[test]
    fn json_lines_parse_and_carry_the_request_span() {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Json, EnvFilter::new("info"), move || out.clone());
        tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!(
                "request",
                request_id = "req_abc",
                trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
            );
            let _in = span.enter();
            tracing::warn!(provider = "claude", "redis unavailable");
            tracing::debug!("not shown at info");
        });
        let text = buf.text();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line = &lines[0];
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["fields"]["message"], "redis unavailable");
        assert_eq!(line["fields"]["provider"], "claude");
        assert_eq!(line["span"]["request_id"], "req_abc");
        assert_eq!(line["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(line["timestamp"].is_string());
    }
}
