//! `[telemetry]`: the log format, the stdout access log and OTLP trace export — the schema,
//! its validation, and the settings the server runs with (`crate::telemetry`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Problems;
pub use crate::telemetry::otlp::OtlpSettings;
pub use crate::telemetry::trace::LogFormat;

/// Spans waiting for export by default; past it spans are dropped and counted.
pub const DEFAULT_OTLP_QUEUE: usize = 2048;
/// Most spans a queue may be configured to hold.
const MAX_OTLP_QUEUE: usize = 1 << 20;

/// `[telemetry]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryToml {
    /// The older name of `[server] log_format`, still accepted (setting both differently
    /// is an error).
    pub log_format: Option<String>,
    /// One JSON line per request on stdout (the request log's fields, without error
    /// messages), for platforms that collect stdout (default false).
    pub access_log: Option<bool>,
    /// Where OTLP/HTTP traces go: a collector's base URL (`http://collector:4318`, to
    /// which `/v1/traces` is added) or its full traces URL. Unset: the
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` environment
    /// variables; none of them: no spans are built or exported.
    pub otlp_endpoint: Option<String>,
    /// Headers sent with each export: header name → the environment variable holding its
    /// value (never the value itself).
    #[serde(default)]
    pub otlp_headers: BTreeMap<String, String>,
    /// `service.name` of the exported spans (default `"switchyard"`).
    pub service_name: Option<String>,
    /// Share of new traces sampled, 0 to 1 (default 1). A client's `traceparent`
    /// decides for its own trace.
    pub sampling_ratio: Option<f64>,
    /// Spans waiting for export (default 2,048); past it spans are dropped and counted.
    pub otlp_queue: Option<usize>,
    /// Export prompt and completion content on the request span (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`, each cut to 64 KiB) (default false: content never leaves
    /// the gateway).
    pub capture_content: Option<bool>,
    /// The environment variable holding a token that may read `/metrics` (a Prometheus
    /// scraper's `Authorization: Bearer`). With `[[keys]]`, `/metrics` otherwise needs an
    /// admin key; without keys it is open on loopback unless this is set.
    pub metrics_token_env: Option<String>,
}

/// The configured log format: `server` (`[server] log_format`), else `[telemetry]
/// log_format`, else text (unknown names and a conflict were refused by
/// [`validate_log_format`]).
#[must_use]
pub fn log_format(server: Option<&str>, telemetry: Option<&TelemetryToml>) -> LogFormat {
    let older = telemetry.and_then(|t| t.log_format.as_deref());
    match server.or(older) {
        Some("json") => LogFormat::Json,
        _ => LogFormat::Text,
    }
}

/// `[server] log_format` and its older name `[telemetry] log_format`: each `"text"` or
/// `"json"`, and not both set to different formats.
pub(super) fn validate_log_format(
    server: Option<&str>,
    telemetry: Option<&TelemetryToml>,
    p: &mut Problems,
) {
    let older = telemetry.and_then(|t| t.log_format.as_deref());
    for (path, value) in [
        ("server.log_format", server),
        ("telemetry.log_format", older),
    ] {
        if let Some(f) = value.filter(|f| !matches!(*f, "text" | "json")) {
            p.add(path, format!("{f:?} is not \"text\" or \"json\""));
        }
    }
    if let (Some(s), Some(t)) = (server, older) {
        if s != t {
            p.add(
                "server.log_format",
                format!(
                    "{s:?} conflicts with telemetry.log_format {t:?}; set only server.log_format \
                     (telemetry.log_format is its older name)"
                ),
            );
        }
    }
}

impl TelemetryToml {
    /// The metrics token, read from the variable `metrics_token_env` names in `env`.
    ///
    /// # Errors
    /// The variable is unset or empty.
    pub fn metrics_token(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, String> {
        let Some(var) = &self.metrics_token_env else {
            return Ok(None);
        };
        match env(var).filter(|t| !t.trim().is_empty()) {
            Some(token) => Ok(Some(token)),
            None => Err(format!(
                "telemetry.metrics_token_env: environment variable {var} is not set"
            )),
        }
    }

    /// The export settings, when traces are exported: the endpoint from the config or
    /// `env`'s standard OTLP variables; header values read from `env`.
    ///
    /// # Errors
    /// A header whose environment variable is unset.
    pub fn otlp(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpSettings>, String> {
        let endpoint = match &self.otlp_endpoint {
            Some(e) => traces_url(e),
            None => match env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").filter(|e| !e.is_empty()) {
                Some(full) => full,
                None => match env("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|e| !e.is_empty()) {
                    Some(base) => traces_url(&base),
                    None => return Ok(None),
                },
            },
        };
        let mut headers = Vec::with_capacity(self.otlp_headers.len());
        for (name, var) in &self.otlp_headers {
            let value = env(var).ok_or_else(|| {
                format!("telemetry.otlp_headers.{name}: environment variable {var} is not set")
            })?;
            headers.push((name.clone(), value));
        }
        Ok(Some(OtlpSettings {
            endpoint,
            headers,
            service_name: self
                .service_name
                .clone()
                .unwrap_or_else(|| "switchyard".to_owned()),
            sampling_ratio: self.sampling_ratio.unwrap_or(1.0),
            queue: self.otlp_queue.unwrap_or(DEFAULT_OTLP_QUEUE),
            capture_content: self.capture_content.unwrap_or(false),
        }))
    }
}

/// A collector's base URL with `/v1/traces` added, unless it already names that path.
fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// Every problem in `[telemetry]`.
pub(super) fn validate(t: Option<&TelemetryToml>, p: &mut Problems) {
    let Some(t) = t else { return };
    if let Some(e) = &t.otlp_endpoint {
        let uri = e.parse::<axum::http::Uri>().ok();
        let http = uri.as_ref().is_some_and(|u| {
            matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some()
        });
        if !http {
            p.add(
                "telemetry.otlp_endpoint",
                format!("{e:?} is not an http(s) URL"),
            );
        }
    }
    for (name, var) in &t.otlp_headers {
        if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            p.add(
                format!("telemetry.otlp_headers.{name}"),
                "not a valid header name",
            );
        }
        if var.is_empty() || var.contains('=') {
            p.add(
                format!("telemetry.otlp_headers.{name}"),
                "must name an environment variable (the value itself never goes in the config)",
            );
        }
    }
    if let Some(problem) = t
        .metrics_token_env
        .as_deref()
        .and_then(super::env_name_problem)
    {
        p.add("telemetry.metrics_token_env", problem);
    }
    if let Some(r) = t.sampling_ratio {
        if !(0.0..=1.0).contains(&r) {
            p.add(
                "telemetry.sampling_ratio",
                format!("{r} is not between 0 and 1"),
            );
        }
    }
    if t.service_name.as_deref().is_some_and(str::is_empty) {
        p.add("telemetry.service_name", "must not be empty");
    }
    if let Some(q) = t.otlp_queue {
        if q == 0 || q > MAX_OTLP_QUEUE {
            p.add(
                "telemetry.otlp_queue",
                format!("{q} is not between 1 and {MAX_OTLP_QUEUE}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (TelemetryToml, Vec<String>) {
        let t: TelemetryToml = toml::from_str(text).unwrap();
        let mut p = Problems::default();
        validate(Some(&t), &mut p);
        (t, p.0)
    }

    #[test]
    fn bad_values_are_named() {
        let (_, problems) = parsed(
            r#"
            otlp_endpoint = "collector:4318"
            sampling_ratio = 1.5
            service_name = ""
            otlp_queue = 0
            otlp_headers = { "bad header" = "X", "x-key" = "sk-literal=1" }
            "#,
        );
        let all = problems.join("\n");
        for path in [
            "telemetry.otlp_endpoint",
            "telemetry.sampling_ratio",
            "telemetry.service_name",
            "telemetry.otlp_queue",
            "telemetry.otlp_headers.bad header",
            "telemetry.otlp_headers.x-key",
        ] {
            assert!(all.contains(path), "{path} missing from {all}");
        }
    }

    #[test]
    fn endpoint_from_config_or_the_standard_env_vars_headers_from_env() {
        let (t, problems) = parsed(
            r#"
            otlp_endpoint = "http://collector:4318/"
            otlp_headers = { "x-honeycomb-team" = "HC_KEY" }
            "#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let env = |v: &str| (v == "HC_KEY").then(|| "secret".to_owned());
        let s = t.otlp(&env).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(
            s.headers,
            vec![("x-honeycomb-team".to_owned(), "secret".to_owned())]
        );
        assert_eq!(
            (s.service_name.as_str(), s.sampling_ratio),
            ("switchyard", 1.0)
        );
        let err = t.otlp(&|_| None).unwrap_err();
        assert!(err.contains("HC_KEY is not set"), "{err}");

        let none = TelemetryToml::default();
        assert_eq!(none.otlp(&|_| None).unwrap(), None);
        let base =
            |v: &str| (v == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "https://c:4318".to_owned());
        assert_eq!(
            none.otlp(&base).unwrap().unwrap().endpoint,
            "https://c:4318/v1/traces"
        );
        let full = |v: &str| {
            (v == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "https://c/custom".to_owned())
        };
        assert_eq!(
            none.otlp(&full).unwrap().unwrap().endpoint,
            "https://c/custom"
        );
    }
}
