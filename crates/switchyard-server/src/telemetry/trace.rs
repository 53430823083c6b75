//! Diagnostics on stderr: the subscriber that shows the `tracing` events of the library
//! and its dependencies — e.g. the shared state's "Redis unavailable" and "resynced" lines
//! (`switchyard::state`'s Redis link).
//!
//! Owns the filter (`RUST_LOG`'s directives, [`DEFAULT_FILTER`] when unset) and installing
//! the process-wide subscriber. The filter always silences [`SILENCED`]: `aws-sigv4` traces
//! the canonical request it signs, session token included, so no `RUST_LOG` may show it. It does not own the server's own stderr lines (startup,
//! warnings, alerts), which are printed directly, nor the request log.

use tracing_subscriber::filter::Directive;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::EnvFilter;

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
                "switchyard: warning: RUST_LOG {:?} is not a valid filter ({e}); logging at {DEFAULT_FILTER:?}",
                directives.unwrap_or_default()
            )),
        ),
    };
    let filter = match format!("{SILENCED}=off").parse::<Directive>() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter, // a constant that parses: unreachable
    };
    (filter, warning)
}

/// Install the process-wide subscriber: `RUST_LOG`'s filter, `format` on stderr (stdout
/// carries command output: `check`, `report`, `keys new`, the listening line, and the
/// access log).
pub fn install(format: LogFormat) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, warning) = filter(rust_log.as_deref());
    if let Some(warning) = warning {
        eprintln!("{warning}");
    }
    let installed = subscriber(format, filter, std::io::stderr).try_init();
    if let Err(e) = installed {
        eprintln!("switchyard: warning: diagnostics are not shown: {e}");
    }
}

/// The subscriber [`install`] installs, writing to `writer`: text lines, or one JSON object
/// per line with the fields of the span it happened in (a request's `request_id` and
/// `trace_id`, `crate::http::dialects::ctx::Ctx::span`).
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(filter.max_level_hint(), Some(LevelFilter::ERROR));
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

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
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
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
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
