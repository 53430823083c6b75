//! The access log: one JSON line per request on stdout (`[telemetry] access_log`), for
//! platforms that collect a container's stdout.
//!
//! Owns [`AccessLog`], a request-log tap ([`LogTap`]). A line is the request log's entry
//! without the attempts' error messages (upstream text, which may quote the prompt); the
//! key appears by its name only, as in the request log. Lines go through a bounded
//! channel to one writer thread; a full channel drops the line and counts it
//! ([`AccessLog::dropped`]), so a stdout nobody reads never slows a request.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use crate::shutdown::Tasks;
use crate::telemetry::log::{LogEntry, LogTap};

/// Lines that may wait for the writer before new ones are dropped.
const CHANNEL_CAPACITY: usize = 4096;

/// Handle to the access log (shared by the request log's taps).
#[derive(Debug)]
pub struct AccessLog {
    tx: SyncSender<Arc<LogEntry>>,
    dropped: AtomicU64,
}

impl AccessLog {
    /// Start writing lines to stdout; `tasks` tracks the writer's end, so shutdown waits
    /// for the last lines.
    ///
    /// # Errors
    /// The writer thread cannot be started.
    pub fn stdout(tasks: &Tasks) -> std::io::Result<Arc<Self>> {
        Self::to_writer(std::io::stdout(), tasks)
    }

    /// Start writing lines to `out`.
    ///
    /// # Errors
    /// The writer thread cannot be started.
    pub fn to_writer<W: Write + Send + 'static>(
        out: W,
        tasks: &Tasks,
    ) -> std::io::Result<Arc<Self>> {
        let (tx, rx) = sync_channel(CHANNEL_CAPACITY);
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("switchyard-access".to_owned())
            .spawn(move || {
                write_lines(out, &rx);
                let _ = done_tx.send(());
            })?;
        tasks.spawn(async move {
            let _ = done_rx.await;
        });
        Ok(Arc::new(Self {
            tx,
            dropped: AtomicU64::new(0),
        }))
    }

    /// Lines not written because the writer was behind.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl LogTap for AccessLog {
    fn record(&self, entry: &Arc<LogEntry>) {
        if self.tx.try_send(Arc::clone(entry)).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The writer thread: a line per entry, flushed when the queue is empty, until every
/// handle is gone.
fn write_lines<W: Write>(out: W, rx: &Receiver<Arc<LogEntry>>) {
    let mut out = std::io::BufWriter::new(out);
    while let Ok(entry) = rx.recv() {
        let mut next = Some(entry);
        while let Some(entry) = next {
            if let Some(line) = line(&entry) {
                let _ = out.write_all(&line);
            }
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
    }
}

/// The entry as one JSON line, without the attempts' messages.
fn line(entry: &LogEntry) -> Option<Vec<u8>> {
    let mut value = serde_json::to_value(entry).ok()?;
    if let Some(attempts) = value.get_mut("attempts").and_then(|a| a.as_array_mut()) {
        for a in attempts {
            if let Some(a) = a.as_object_mut() {
                a.remove("message");
            }
        }
    }
    let mut line = serde_json::to_vec(&value).ok()?;
    line.push(b'\n');
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::testing::Buffer;
    use std::time::Duration;
    use switchyard::observe::{Attempt, Outcome};
    use switchyard::ErrorKind;

    #[tokio::test]
    async fn one_json_line_per_request_without_upstream_messages() {
        let buf = Buffer::default();
        let tasks = Tasks::new();
        let log = AccessLog::to_writer(buf.clone(), &tasks).unwrap();
        let entry = LogEntry {
            id: "req_1".to_owned(),
            time_ms: 1,
            api: "chat".into(),
            route: "fast".to_owned(),
            key: Some("team-a".to_owned()),
            stream: false,
            status: 200,
            provider: Some("b".to_owned()),
            model: Some("m".to_owned()),
            failed_over: true,
            attempts: vec![Attempt {
                provider: "a".to_owned(),
                model: "m".to_owned(),
                attempt: 1,
                outcome: Outcome::Failed {
                    kind: ErrorKind::Server,
                    message: "upstream said: <the user's prompt>".to_owned(),
                },
                status: Some(500),
                latency: Duration::from_millis(3),
                start: None,
                probe: false,
                reported: None,
            }],
            usage: None,
            cost_usd: Some(0.5),
            latency_ms: 4.0,
            ttft_ms: None,
            error: None,
            dropped: Vec::new(),
            cache: None,
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".to_owned()),
            span_id: None,
            parent_span_id: None,
            sampled: false,
            content: None,
        };
        log.record(&Arc::new(entry.clone()));
        log.record(&Arc::new(LogEntry {
            id: "req_2".to_owned(),
            ..entry
        }));
        drop(log);
        assert!(tasks.close(Duration::from_secs(5)).await);
        let text = buf.text();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["id"], "req_1");
        assert_eq!(lines[1]["id"], "req_2");
        assert_eq!(lines[0]["key"], "team-a");
        assert_eq!(lines[0]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(lines[0]["attempts"][0]["outcome"], "failed");
        assert_eq!(lines[0]["attempts"][0]["status"], 500);
        assert!(!text.contains("prompt"), "{text}");
    }
}
