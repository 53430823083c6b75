//! Telemetry: what the server tells its operators about the traffic it carried.
//!
//! Owns the Prometheus metrics (the health checks' among them), the request log (one JSON
//! line per request), the lines that say what happened to traffic (circuit transitions,
//! health verdicts, exhausted budgets, the failover summary), the dashboard's short memory
//! of recent requests and transitions, the
//! dashboard's static files, the subscriber that shows `tracing` diagnostics on stderr
//! (text or JSON), the stdout access log, and trace export over OTLP (with prompt and
//! completion content only when asked for).
//! Each is a side output: it observes requests, never steers them. The routes that serve
//! these live in `crate::http`.

pub mod access;
pub mod content;
pub mod dashboard;
pub mod events;
pub mod failovers;
pub mod insight;
pub mod log;
pub mod metrics;
pub mod otlp;
pub mod refusals;
pub mod trace;

/// What the telemetry tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::{Arc, Mutex};

    /// A writer the test reads back: every clone writes to the same bytes.
    #[derive(Clone, Default)]
    pub(crate) struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Buffer {
        /// What was written so far, as text.
        pub(crate) fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
