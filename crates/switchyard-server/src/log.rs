//! The request log: one JSON line per request, written off the request path.
//!
//! Owns [`LogEntry`] (the line's schema, which `switchyard report` reads back) and
//! [`RequestLog`], a bounded channel drained by one tracked writer task that writes in
//! batches (at most every 100 ms, or at 64 KiB). A full channel
//! drops the line and counts it — logging never slows or fails a request. When the last
//! handle is dropped (after the server has drained) the writer flushes what it has and ends.
//! An optional [`LogTap`] sees every entry as it is written (the dashboard's recent
//! requests), whether or not a file is configured.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use switchyard::observe::Attempt;
use switchyard::Usage;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;

use crate::shutdown::Tasks;

/// Lines that may wait for the writer before new ones are dropped.
const CHANNEL_CAPACITY: usize = 8192;

/// One request, as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The request id (also the `x-request-id` header).
    pub id: String,
    /// Wall time the request arrived, ms since the Unix epoch.
    pub time_ms: u64,
    /// The route (`model` the client sent).
    pub route: String,
    /// The client key's name, when keys are configured.
    pub key: Option<String>,
    /// Was it a streamed request.
    pub stream: bool,
    /// HTTP status returned (499: the client went away).
    pub status: u16,
    /// The provider that answered.
    pub provider: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// Another provider was tried or skipped first.
    pub failed_over: bool,
    /// Every try and skip.
    pub attempts: Vec<Attempt>,
    /// Token usage of the answer.
    pub usage: Option<Usage>,
    /// Exact cost in dollars; absent when unknown (never 0 for unknown).
    pub cost_usd: Option<f64>,
    /// Time inside the gateway, ms.
    pub latency_ms: f64,
    /// Time to first token for streams, ms.
    pub ttft_ms: Option<f64>,
    /// Error label for failures (`all_failed`, `budget_exceeded`, ...).
    pub error: Option<String>,
}

/// Sees each finished request's entry; must be quick and must never block or fail.
pub trait LogTap: Send + Sync {
    /// One request finished (shared with the file writer: keep the `Arc`, not a copy).
    fn record(&self, entry: &Arc<LogEntry>);
}

/// Handle to the request log (cheap to clone).
#[derive(Clone, Default)]
pub struct RequestLog {
    tx: Option<mpsc::Sender<Arc<LogEntry>>>,
    dropped: Arc<AtomicU64>,
    /// Told of every entry before it is queued for the file.
    tap: Option<Arc<dyn LogTap>>,
}

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog")
            .field("file", &self.tx.is_some())
            .field("dropped", &self.dropped())
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl RequestLog {
    /// A log that writes nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Open (append to) `path` and start the writer task.
    ///
    /// # Errors
    /// When the file cannot be opened.
    pub async fn open(path: &Path, tasks: &Tasks) -> std::io::Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await?;
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        tasks.spawn(write_lines(file, rx));
        Ok(Self {
            tx: Some(tx),
            dropped: Arc::new(AtomicU64::new(0)),
            tap: None,
        })
    }

    /// Builder: tell `tap` of every entry.
    #[must_use]
    pub fn with_tap(mut self, tap: Arc<dyn LogTap>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Queue a line; drops (and counts) it if the writer is behind.
    pub fn write(&self, entry: LogEntry) {
        let entry = Arc::new(entry);
        if let Some(tap) = &self.tap {
            tap.record(&entry);
        }
        if let Some(tx) = &self.tx {
            if tx.try_send(entry).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lines dropped because the writer was behind.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// How long a line may wait before it is written (lines are written in batches).
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
/// A batch this large is written at once, without waiting for the tick.
const BATCH_BYTES: usize = 64 * 1024;
/// Entries taken from the channel per wake-up.
const RECV_BATCH: usize = 256;

/// Serialize lines into one buffer and write it when it is large or every
/// [`FLUSH_EVERY`] — one write (one blocking-pool hop) per batch, not per line. The last
/// batch is written when the channel closes (shutdown).
async fn write_lines(mut file: tokio::fs::File, mut rx: mpsc::Receiver<Arc<LogEntry>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(2 * BATCH_BYTES);
    let mut entries = Vec::with_capacity(RECV_BATCH);
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            n = rx.recv_many(&mut entries, RECV_BATCH) => {
                if n == 0 {
                    break; // every sender is gone: shutting down
                }
                for entry in entries.drain(..) {
                    if serde_json::to_writer(&mut buf, &*entry).is_ok() {
                        buf.push(b'\n');
                    }
                }
                if buf.len() >= BATCH_BYTES && write_out(&mut file, &mut buf).await.is_err() {
                    return;
                }
            }
            _ = tick.tick() => {
                if write_out(&mut file, &mut buf).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = write_out(&mut file, &mut buf).await;
    let _ = file.flush().await;
}

async fn write_out(file: &mut tokio::fs::File, buf: &mut Vec<u8>) -> std::io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    file.write_all(buf).await?;
    buf.clear();
    Ok(())
}

/// Read a request log back (for `report`), skipping nothing silently.
///
/// # Errors
/// An unreadable file, or a line that is not a log entry (with its line number).
pub fn read(path: &Path) -> Result<Vec<LogEntry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: not a request-log line: {e}", path.display(), i + 1))
        })
        .collect()
}
