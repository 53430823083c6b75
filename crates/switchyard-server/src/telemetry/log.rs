//! The request log: one JSON line per request, in the file before the request's answer is
//! complete.
//!
//! Owns [`LogEntry`] (the line's schema, which `switchyard report` reads back, see
//! [`read`]) and [`RequestLog`]. Lines go through a bounded channel to one writer thread
//! that takes everything queued, writes it with a single `write(2)` and then acknowledges
//! every line of that write (group commit: under load one syscall carries many lines, so
//! throughput holds). The hand-off is kept cheap: the writer runs as `SCHED_BATCH` on Linux
//! (queueing a line wakes it without preempting the worker, which goes on serving and
//! queueing until it parks), and a write's acknowledgements go to one task on the runtime
//! that tells every waiter there (one wake-up of the runtime per write, not one per line).
//! [`RequestLog::commit`] waits for that acknowledgement — the chat
//! handler awaits it before its response (or a stream's last event) goes out, so a line
//! the client has seen answered survives `kill -9` (it is in the kernel, though not
//! necessarily on disk: no fsync). [`RequestLog::write`] queues without waiting, for
//! paths that have nobody to answer (the client went away).
//!
//! Logging never fails a request and never holds it for long: a full channel drops the line
//! and counts it ([`RequestLog::dropped`]), a failed write counts its lines as dropped, and a
//! wait longer than [`ACK_WAIT`] gives up waiting (the line is still written; counted in
//! [`RequestLog::late`]). When the last handle is dropped (after the server has drained) the
//! writer writes what is queued and ends; a tracked task lets shutdown wait for that.
//! Optional [`LogTap`]s (the dashboard, the access log, trace export) see every entry synchronously as it is queued (the dashboard's
//! recent requests), whether or not a file is configured.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use switchyard::observe::Attempt;
use switchyard::Usage;
use tokio::sync::{mpsc, oneshot};

use crate::shutdown::Tasks;
use crate::telemetry::refusals::Refusals;

/// Lines that may wait for the writer before new ones are dropped.
const CHANNEL_CAPACITY: usize = 8192;
/// Most lines one `write(2)` carries (everything queued, up to this).
const MAX_BATCH: usize = 1024;
/// The write buffer is shrunk back to this after an unusually large batch.
const BUFFER_BYTES: usize = 256 * 1024;
/// The longest a request waits for its line to be written before answering anyway. Far
/// above a page-cache write (microseconds); reached only when the disk or the machine is in
/// trouble, and then the request is answered rather than held. (Under a paused test clock
/// tokio jumps to this deadline whenever the runtime is idle: a test that needs the line in
/// the file before the answer runs on real time.)
pub const ACK_WAIT: Duration = Duration::from_secs(1);

/// One request, as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The request id (also the `x-request-id` header).
    pub id: String,
    /// Wall time the request arrived, ms since the Unix epoch.
    pub time_ms: u64,
    /// The inbound API (`chat`, `responses`, `messages`, `embeddings`); lines written
    /// before there was more than one read as `chat`.
    #[serde(default = "chat_api")]
    pub api: std::borrow::Cow<'static, str>,
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
    /// Request fields the answering provider was called without (`docs/fields.md`):
    /// the `x-switchyard-dropped` header's names. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// What the route's response cache did (`docs/cache.md`); absent on a route without
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Box<CacheLog>>,
    /// The W3C trace id (hex): the client's, or the trace started for the request when
    /// traces are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The request's own span id (hex), when traces are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The client's span the request continued (hex), when traces are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// The trace is sampled: its spans are exported (`crate::telemetry::otlp`).
    #[serde(skip)]
    pub sampled: bool,
    /// The prompt and completion, carried to the span builder only when traces are
    /// exported with `capture_content = true` and this request is sampled; never
    /// serialized (not in the log line, the access log or the dashboard).
    #[serde(skip)]
    pub content: Option<Arc<crate::telemetry::content::Content>>,
}

impl LogEntry {
    /// The line's JSON, written by hand (`crate::json_out`) byte for byte as its
    /// `Serialize` writes it (the tests compare).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out as j;
        out.extend_from_slice(b"{\"id\":");
        j::str(out, &self.id);
        out.extend_from_slice(b",\"time_ms\":");
        j::u64(out, self.time_ms);
        out.extend_from_slice(b",\"api\":");
        j::str(out, &self.api);
        out.extend_from_slice(b",\"route\":");
        j::str(out, &self.route);
        out.extend_from_slice(b",\"key\":");
        j::opt_str(out, self.key.as_deref());
        out.extend_from_slice(b",\"stream\":");
        j::bool(out, self.stream);
        out.extend_from_slice(b",\"status\":");
        j::u64(out, u64::from(self.status));
        out.extend_from_slice(b",\"provider\":");
        j::opt_str(out, self.provider.as_deref());
        out.extend_from_slice(b",\"model\":");
        j::opt_str(out, self.model.as_deref());
        out.extend_from_slice(b",\"failed_over\":");
        j::bool(out, self.failed_over);
        out.extend_from_slice(b",\"attempts\":");
        j::attempts(out, &self.attempts);
        out.extend_from_slice(b",\"usage\":");
        match &self.usage {
            Some(u) => {
                out.extend_from_slice(b"{\"input_tokens\":");
                j::u64(out, u.input_tokens);
                out.extend_from_slice(b",\"output_tokens\":");
                j::u64(out, u.output_tokens);
                out.extend_from_slice(b",\"cached_input_tokens\":");
                j::u64(out, u.cached_input_tokens);
                out.extend_from_slice(b",\"cache_write_tokens\":");
                j::u64(out, u.cache_write_tokens);
                out.extend_from_slice(b",\"cache_write_1h_tokens\":");
                j::u64(out, u.cache_write_1h_tokens);
                out.extend_from_slice(b",\"reasoning_tokens\":");
                j::u64(out, u.reasoning_tokens);
                out.push(b'}');
            }
            None => j::null(out),
        }
        out.extend_from_slice(b",\"cost_usd\":");
        j::opt_f64(out, self.cost_usd);
        out.extend_from_slice(b",\"latency_ms\":");
        j::f64(out, self.latency_ms);
        out.extend_from_slice(b",\"ttft_ms\":");
        j::opt_f64(out, self.ttft_ms);
        out.extend_from_slice(b",\"error\":");
        j::opt_str(out, self.error.as_deref());
        if !self.dropped.is_empty() {
            out.extend_from_slice(b",\"dropped\":");
            j::strs(out, &self.dropped);
        }
        if let Some(c) = &self.cache {
            out.extend_from_slice(b",\"cache\":{\"status\":");
            j::str(out, &c.status);
            if let Some(saved) = c.saved_usd {
                out.extend_from_slice(b",\"saved_usd\":");
                j::f64(out, saved);
            }
            if let Some(age) = c.age_s {
                out.extend_from_slice(b",\"age_s\":");
                j::u64(out, age);
            }
            out.push(b'}');
        }
        for (key, id) in [
            (&b",\"trace_id\":"[..], &self.trace_id),
            (b",\"span_id\":", &self.span_id),
            (b",\"parent_span_id\":", &self.parent_span_id),
        ] {
            if let Some(id) = id {
                out.extend_from_slice(key);
                j::str(out, id);
            }
        }
        out.push(b'}');
    }
}

/// A cached route's line: what its cache did and, for an answer served from it, what the
/// stored answer cost when it was made (what this one saved; absent when unpriced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLog {
    /// `hit`, `miss`, `stale` or `bypass`.
    pub status: std::borrow::Cow<'static, str>,
    /// Dollars the served entry cost when it was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_usd: Option<f64>,
    /// Seconds since the served entry was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
}

fn chat_api() -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed("chat")
}

/// Sees each finished request's entry; must be quick and must never block or fail.
pub trait LogTap: Send + Sync {
    /// One request finished (shared with the file writer: keep the `Arc`, not a copy).
    fn record(&self, entry: &Arc<LogEntry>);
}

/// A line on its way to the file, and whoever waits for it to get there.
struct Queued {
    entry: Arc<LogEntry>,
    /// Told once the line is written; dropped unsent when it could not be.
    ack: Option<oneshot::Sender<()>>,
}

/// What went wrong on the way to the file, shared by the handles and the writer.
#[derive(Debug, Default)]
struct Counters {
    /// Lines not written: the channel was full, or the write failed.
    dropped: AtomicU64,
    /// Lines whose request was answered before they were written ([`ACK_WAIT`]).
    late: AtomicU64,
    /// `write(2)` calls made (tests check that lines share them).
    writes: AtomicU64,
}

/// Handle to the request log (cheap to clone).
#[derive(Clone, Default)]
pub struct RequestLog {
    tx: Option<mpsc::Sender<Queued>>,
    counters: Arc<Counters>,
    /// Told of every entry before it is queued for the file.
    taps: Vec<Arc<dyn LogTap>>,
    /// Unauthenticated refusals: the first of each reason per second is logged.
    refusals: Arc<Refusals>,
}

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog")
            .field("file", &self.tx.is_some())
            .field("dropped", &self.dropped())
            .field("late", &self.late())
            .field("taps", &self.taps.len())
            .finish()
    }
}

impl RequestLog {
    /// A log that writes nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Open (append to, creating it if need be) `path` and start the writer thread; `tasks`
    /// tracks its end, so shutdown can wait for the last lines.
    ///
    /// # Errors
    /// When the file cannot be opened or the thread cannot be started.
    pub async fn open(path: &Path, tasks: &Tasks) -> std::io::Result<Self> {
        let file = open_for_append(path)?;
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let counters = Arc::new(Counters::default());
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let writer_counters = Arc::clone(&counters);
        // Bounded by the lines in flight (the line channel's capacity): one entry per write.
        let (acks_tx, mut acks_rx) = mpsc::unbounded_channel::<Vec<oneshot::Sender<()>>>();
        std::thread::Builder::new()
            .name("switchyard-log".to_owned())
            .spawn(move || {
                batch_policy();
                write_lines(file, rx, acks_tx, &writer_counters);
                let _ = done_tx.send(());
            })?;
        tasks.spawn(async move {
            let _ = done_rx.await;
        });
        // The writer's acknowledgements, sent from the runtime: waking the waiting tasks from
        // here is local to a worker, where the writer thread's own wakes would each wake the
        // runtime (and a woken worker preempts the writer before it has told the rest).
        tasks.spawn(async move {
            while let Some(acks) = acks_rx.recv().await {
                for ack in acks {
                    let _ = ack.send(());
                }
            }
        });
        Ok(Self {
            tx: Some(tx),
            counters,
            taps: Vec::new(),
            refusals: Arc::default(),
        })
    }

    /// Builder: tell `tap` of every entry too (taps are told in the order they are added).
    #[must_use]
    pub fn with_tap(mut self, tap: Arc<dyn LogTap>) -> Self {
        self.taps.push(tap);
        self
    }

    /// Queue a line without waiting for it to be written: for requests with nobody left to
    /// answer (the client went away). Drops (and counts) it if the writer is behind.
    pub fn write(&self, entry: LogEntry) {
        let _ = self.queue(entry, false);
    }

    /// Queue a line and wait until it is written to the file (handed to the kernel), at most
    /// [`ACK_WAIT`]. Returns at once when there is no file, or when the line was dropped
    /// (the writer is behind, or the write failed: counted in [`RequestLog::dropped`]).
    pub async fn commit(&self, entry: LogEntry) {
        let Some(ack) = self.queue(entry, true) else {
            return;
        };
        // `Ok(Err(_))`: the writer could not write it and has counted it as dropped.
        if tokio::time::timeout(ACK_WAIT, ack).await.is_err() {
            self.counters.late.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The line of a request refused for want of a valid client key, for `reason`
    /// (`missing_key`, `invalid_key`): committed as [`RequestLog::commit`] does when it is the
    /// first of its reason this second, else only counted for the summary
    /// (`crate::telemetry::refusals`), so a flood of bad keys cannot fill the log (or the
    /// access log, a tap). Returns whether the line was logged.
    pub async fn commit_refusal(&self, entry: LogEntry, reason: &'static str) -> bool {
        if !self.refusals.admit(reason) {
            return false;
        }
        self.commit(entry).await;
        true
    }

    /// The windows of unauthenticated refusals (their task: [`Refusals::run`]).
    #[must_use]
    pub fn refusals(&self) -> &Arc<Refusals> {
        &self.refusals
    }

    /// Tell the tap, queue for the file; the receiver hears when it is written.
    fn queue(&self, entry: LogEntry, wait: bool) -> Option<oneshot::Receiver<()>> {
        let entry = Arc::new(entry);
        for tap in &self.taps {
            tap.record(&entry);
        }
        let tx = self.tx.as_ref()?;
        let (ack, written) = if wait {
            let (ack, written) = oneshot::channel();
            (Some(ack), Some(written))
        } else {
            (None, None)
        };
        if tx.try_send(Queued { entry, ack }).is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        written
    }

    /// Lines not written: the writer was behind, or the file refused them.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Lines written only after their request had been answered (the write took longer
    /// than [`ACK_WAIT`]).
    #[must_use]
    pub fn late(&self) -> u64 {
        self.counters.late.load(Ordering::Relaxed)
    }
}

/// Open `path` for appending as the request log does, creating it if need be.
///
/// # Errors
/// A missing directory, no permission, a directory in the way.
pub fn open_for_append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// Make the calling (writer) thread `SCHED_BATCH`: a thread of that policy never preempts
/// the one that wakes it, so a worker that queues a line keeps its core until it parks (its
/// other requests queue their lines meanwhile and share the next write) or its slice ends;
/// it still gets its fair share of the CPU (unlike `SCHED_IDLE`), and an idle core runs it at
/// once. A failure (a system that refuses the policy) leaves the thread as it was.
#[cfg(target_os = "linux")]
fn batch_policy() {
    use thread_priority::{
        NormalThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue, ThreadSchedulePolicy,
    };
    // the crate maps 0..=99 onto nice 19..=-20: 49 is nice 0, the default
    let Ok(nice_0) = ThreadPriorityValue::try_from(49u8) else {
        return;
    };
    let _ = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Crossplatform(nice_0),
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
    );
}

#[cfg(not(target_os = "linux"))]
fn batch_policy() {}

/// The writer thread: block for a line, take whatever else is queued, write it all with one
/// call, acknowledge every line in it — until every handle is gone (shutdown), when what is
/// queued has been written.
fn write_lines(
    file: std::fs::File,
    mut rx: mpsc::Receiver<Queued>,
    acker: mpsc::UnboundedSender<Vec<oneshot::Sender<()>>>,
    counters: &Counters,
) {
    let mut writer = Writer {
        file,
        acker,
        batch: Vec::with_capacity(MAX_BATCH),
        buf: Vec::with_capacity(BUFFER_BYTES),
        failing: false,
    };
    while rx.blocking_recv_many(&mut writer.batch, MAX_BATCH) > 0 {
        writer.serialize();
        writer.write_out(counters);
    }
}

/// The writer thread's state between batches.
struct Writer {
    file: std::fs::File,
    /// The task that tells the waiters of a write (all of them in one wake-up of the runtime).
    acker: mpsc::UnboundedSender<Vec<oneshot::Sender<()>>>,
    /// The lines of the next write.
    batch: Vec<Queued>,
    /// Their JSON, one line each.
    buf: Vec<u8>,
    /// The last write failed (said once, and once more when writes succeed again).
    failing: bool,
}

impl Writer {
    /// Write the batch's lines into the buffer (in memory: it cannot fail).
    fn serialize(&mut self) {
        let buf = &mut self.buf;
        for q in &self.batch {
            q.entry.write_json(buf);
            buf.push(b'\n');
        }
    }

    /// One `write(2)` for the whole buffer, then every waiter is told. Lines lost to a failed
    /// write are counted as dropped *before* their waiters hear "not written" (from the
    /// dropped acknowledgement), so a waiter that wakes already sees its line counted.
    fn write_out(&mut self, counters: &Counters) {
        counters.writes.fetch_add(1, Ordering::Relaxed);
        let result = self.file.write_all(&self.buf);
        self.buf.clear();
        self.buf.shrink_to(BUFFER_BYTES);
        match result {
            Ok(()) => {
                if std::mem::take(&mut self.failing) {
                    tracing::info!(target: super::trace::SERVE, "request log: writes succeed again");
                }
                let acks: Vec<_> = self.batch.drain(..).filter_map(|q| q.ack).collect();
                if !acks.is_empty() {
                    // fails only when the runtime is gone, and with it whoever waited
                    let _ = self.acker.send(acks);
                }
            }
            Err(e) => {
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!(target: super::trace::SERVE, "request log write failed ({e}); its lines are dropped and counted until writes succeed again");
                }
                let lost = self.batch.len() as u64;
                counters.dropped.fetch_add(lost, Ordering::Relaxed);
                self.batch.clear();
            }
        }
    }
}

/// Lines of a log that did not parse, for the reader to say so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// How many (blank lines are not counted).
    pub count: usize,
    /// The 1-based number of the first one.
    pub first_line: Option<usize>,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} unreadable line(s) skipped", self.count)?;
        if let Some(first) = self.first_line {
            write!(f, " (first at line {first})")?;
        }
        Ok(())
    }
}

/// Call `each` with every line of the log at `path` that parses as a `T`, one line at a
/// time (memory stays flat however long the log is); lines that do not parse — a line cut
/// short by `kill -9`, garbage, bytes that are not UTF-8 — are skipped and counted.
///
/// # Errors
/// When the file cannot be opened or read.
pub fn for_each_line<T: DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(T),
) -> std::io::Result<Unreadable> {
    let file = std::fs::File::open(path)?;
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
    let mut line = Vec::with_capacity(4096);
    let mut unreadable = Unreadable::default();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(unreadable);
        }
        number += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<T>(&line) {
            Ok(value) => each(value),
            Err(_) => {
                unreadable.count += 1;
                unreadable.first_line.get_or_insert(number);
            }
        }
    }
}

/// A request log read back (for `report`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogRead {
    /// Every line that parsed, in order.
    pub entries: Vec<LogEntry>,
    /// The lines that did not.
    pub unreadable: Unreadable,
}

/// Read a request log back (for `report`): the entries, and the lines skipped as unreadable.
///
/// # Errors
/// A file that cannot be opened or read (named in the message).
pub fn read(path: &Path) -> Result<LogRead, String> {
    let mut entries = Vec::new();
    let unreadable =
        for_each_line(path, |e| entries.push(e)).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(LogRead {
        entries,
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn entry(id: usize) -> LogEntry {
        LogEntry {
            id: format!("req-{id}"),
            time_ms: 1_700_000_000_000,
            api: "chat".into(),
            route: "smart".to_owned(),
            key: None,
            stream: false,
            status: 200,
            provider: Some("p".to_owned()),
            model: Some("m".to_owned()),
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: Some(0.001),
            latency_ms: 1.0,
            ttft_ms: None,
            error: None,
            dropped: Vec::new(),
            cache: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            sampled: false,
            content: None,
        }
    }

    /// The hand-written line is byte for byte what `Serialize` writes, for lines with every
    /// optional field present and absent, escapes and unicode in every string.
    #[test]
    fn the_written_line_is_the_serialised_one() {
        use crate::json_out::tests::{awkward_strings, every_attempt};
        let mut lines = vec![entry(1)];
        for text in awkward_strings() {
            lines.push(LogEntry {
                id: text.clone(),
                time_ms: u64::MAX,
                api: text.clone().into(),
                route: text.clone(),
                key: Some(text.clone()),
                stream: true,
                status: 499,
                provider: Some(text.clone()),
                model: Some(text.clone()),
                failed_over: true,
                attempts: every_attempt(),
                usage: Some(Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    cached_input_tokens: 3,
                    cache_write_tokens: 4,
                    cache_write_1h_tokens: 5,
                    reasoning_tokens: u64::MAX,
                }),
                cost_usd: None,
                latency_ms: 0.123_456_789,
                ttft_ms: Some(12.5),
                error: Some(text.clone()),
                dropped: vec![text.clone(), "seed".to_owned()],
                cache: Some(Box::new(CacheLog {
                    status: text.clone().into(),
                    saved_usd: Some(1e-9),
                    age_s: Some(7),
                })),
                trace_id: Some(text.clone()),
                span_id: Some(text.clone()),
                parent_span_id: Some(text.clone()),
                sampled: true,
                content: None,
            });
        }
        for (i, (saved, age)) in [(None, None), (Some(0.25), None), (None, Some(0))]
            .into_iter()
            .enumerate()
        {
            let mut e = entry(i);
            e.cost_usd = Some(f64::NAN);
            e.latency_ms = f64::INFINITY;
            e.cache = Some(Box::new(CacheLog {
                status: "hit".into(),
                saved_usd: saved,
                age_s: age,
            }));
            e.span_id = Some("00f067aa0ba902b7".to_owned());
            lines.push(e);
        }
        for line in &lines {
            let mut ours = Vec::new();
            line.write_json(&mut ours);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(line).unwrap()
            );
        }
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("switchyard-log-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ids(path: &Path) -> Vec<String> {
        let mut ids = Vec::new();
        let unreadable = for_each_line::<LogEntry>(path, |e| ids.push(e.id)).unwrap();
        assert_eq!(unreadable, Unreadable::default());
        ids
    }

    /// No sleeping, no polling: the file is read the moment `commit` returns.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_committed_line_is_in_the_file_when_commit_returns() {
        let dir = scratch("commit");
        let path = dir.join("requests.jsonl");
        let tasks = Tasks::new();
        let log = RequestLog::open(&path, &tasks).await.unwrap();
        for i in 0..50 {
            log.commit(entry(i)).await;
            let ids = ids(&path);
            assert_eq!(
                ids.len(),
                i + 1,
                "line {i} is written before commit returns"
            );
            assert_eq!(ids[i], format!("req-{i}"));
        }
        assert_eq!((log.dropped(), log.late()), (0, 0));
        drop(log);
        assert!(
            tasks.close(Duration::from_secs(10)).await,
            "the writer ends"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Many requests waiting at once share writes (group commit), and every one of them is
    /// in the file when its wait ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_commits_share_writes() {
        let dir = scratch("group");
        let path = dir.join("requests.jsonl");
        let tasks = Tasks::new();
        let log = RequestLog::open(&path, &tasks).await.unwrap();
        let n = 2000;
        futures_util::future::join_all((0..n).map(|i| log.commit(entry(i)))).await;
        let mut written = ids(&path);
        written.sort();
        let mut expected: Vec<String> = (0..n).map(|i| format!("req-{i}")).collect();
        expected.sort();
        assert_eq!(written, expected);
        let writes = log.counters.writes.load(Ordering::Relaxed);
        assert!(writes < n as u64 / 2, "{writes} writes for {n} lines");
        assert_eq!((log.dropped(), log.late()), (0, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Lines queued without waiting (the client went away) are written by the time the
    /// writer has ended at shutdown.
    #[tokio::test]
    async fn queued_lines_are_written_before_the_writer_ends() {
        let dir = scratch("drain");
        let path = dir.join("requests.jsonl");
        let tasks = Tasks::new();
        let log = RequestLog::open(&path, &tasks).await.unwrap();
        for i in 0..100 {
            log.write(entry(i));
        }
        drop(log);
        assert!(
            tasks.close(Duration::from_secs(10)).await,
            "the writer ends"
        );
        assert_eq!(ids(&path).len(), 100);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file that refuses writes (a full disk: `/dev/full`) never holds a request: the
    /// wait ends at once and the line is counted as dropped, not as written.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_failed_write_answers_at_once_and_counts_the_line_as_dropped() {
        let tasks = Tasks::new();
        let log = RequestLog::open(Path::new("/dev/full"), &tasks)
            .await
            .unwrap();
        log.commit(entry(1)).await;
        log.commit(entry(2)).await;
        assert_eq!((log.dropped(), log.late()), (2, 0));
    }

    /// A writer stuck in `write(2)` (a pipe nobody drains: a hung disk) holds a request for
    /// [`ACK_WAIT`] at most; the request is answered and the line counted as late.
    #[cfg(target_os = "linux")]
    #[tokio::test(start_paused = true)]
    async fn a_stuck_writer_holds_a_request_for_ack_wait_at_most() {
        use std::os::unix::fs::OpenOptionsExt as _;
        const O_NONBLOCK: i32 = 0o4000;
        let dir = scratch("stuck");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let nonblocking = |read: bool| {
            std::fs::OpenOptions::new()
                .read(read)
                .write(!read)
                .custom_flags(O_NONBLOCK)
                .open(&fifo)
                .unwrap()
        };
        let reader = nonblocking(true);
        let mut filler = nonblocking(false);
        // fill the pipe: the log's first write will block until someone reads
        let chunk = [b'x'; 4096];
        while filler.write(&chunk).is_ok() {}
        let tasks = Tasks::new();
        let log = RequestLog::open(&fifo, &tasks).await.unwrap();
        let started = tokio::time::Instant::now();
        log.commit(entry(1)).await;
        assert_eq!(started.elapsed(), ACK_WAIT);
        assert_eq!((log.late(), log.dropped()), (1, 0));
        drop((log, reader, filler)); // the writer's write fails (no reader) and it ends
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Many tasks committing at once, each several lines in turn: every line lands once, and
    /// each task's lines in the order it committed them — on both runtime flavours `serve`
    /// uses (`[server] workers = 1` is the current-thread one).
    fn many_tasks_commit(runtime: &tokio::runtime::Runtime, tag: &str) {
        let dir = scratch(tag);
        let path = dir.join("requests.jsonl");
        let tasks = Tasks::new();
        let (tasks_n, lines_n) = (64, 20);
        let log = runtime.block_on(async {
            let log = RequestLog::open(&path, &tasks).await.unwrap();
            let committers = Tasks::new();
            for t in 0..tasks_n {
                let log = log.clone();
                committers.spawn(async move {
                    for l in 0..lines_n {
                        log.commit(entry(t * 1000 + l)).await;
                    }
                });
            }
            assert!(
                committers.wait(Duration::from_secs(60)).await,
                "every commit returns"
            );
            log
        });
        let written = ids(&path);
        assert_eq!(written.len(), tasks_n * lines_n, "each line once");
        for t in 0..tasks_n {
            let mine: Vec<&String> = written
                .iter()
                .filter(|id| id.strip_prefix("req-").unwrap().parse::<usize>().unwrap() / 1000 == t)
                .collect();
            let expected: Vec<String> = (0..lines_n)
                .map(|l| format!("req-{}", t * 1000 + l))
                .collect();
            assert_eq!(
                mine,
                expected.iter().collect::<Vec<_>>(),
                "task {t}'s lines in order"
            );
        }
        assert_eq!((log.dropped(), log.late()), (0, 0));
        drop(log);
        assert!(
            runtime.block_on(tasks.close(Duration::from_secs(10))),
            "the writer ends"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_commits_land_once_in_order_per_task_on_a_current_thread_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        many_tasks_commit(&rt, "order-current");
    }

    #[test]
    fn concurrent_commits_land_once_in_order_per_task_on_a_multi_thread_runtime() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        many_tasks_commit(&rt, "order-multi");
    }

    /// The writer thread runs as `SCHED_BATCH` (policy 3 in `/proc/.../stat`), so waking it
    /// never preempts the worker that queued a line.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_writer_thread_is_sched_batch() {
        let dir = scratch("policy");
        let tasks = Tasks::new();
        let log = RequestLog::open(&dir.join("requests.jsonl"), &tasks)
            .await
            .unwrap();
        log.commit(entry(1)).await; // the writer has set its policy before it wrote
        let mut policies = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let task = task.unwrap().path();
            let Ok(comm) = std::fs::read_to_string(task.join("comm")) else {
                continue;
            };
            if comm.trim() == "switchyard-log" {
                let stat = std::fs::read_to_string(task.join("stat")).unwrap();
                // fields after the command's closing parenthesis; `policy` is field 41
                let fields: Vec<&str> = stat
                    .rsplit_once(')')
                    .unwrap()
                    .1
                    .split_whitespace()
                    .collect();
                policies.push(fields[41 - 3].to_owned());
            }
        }
        assert!(
            policies.contains(&"3".to_owned()),
            "writer policies: {policies:?}"
        );
        drop(log);
        assert!(tasks.close(Duration::from_secs(10)).await);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl LogTap for Seen {
        fn record(&self, entry: &Arc<LogEntry>) {
            self.0.lock().unwrap().push(entry.id.clone());
        }
    }

    #[tokio::test]
    async fn without_a_file_the_tap_still_sees_every_entry_and_nothing_waits() {
        let seen = Arc::new(Seen::default());
        let log = RequestLog::disabled().with_tap(seen.clone());
        log.commit(entry(1)).await;
        log.write(entry(2));
        assert_eq!(*seen.0.lock().unwrap(), ["req-1", "req-2"]);
        assert_eq!((log.dropped(), log.late()), (0, 0));
    }

    #[test]
    fn unreadable_lines_are_counted_with_the_first_ones_number() {
        let dir = scratch("read");
        let path = dir.join("requests.jsonl");
        let good = serde_json::to_string(&entry(1)).unwrap();
        let mut bytes = format!("{good}\n\n{{\"id\": 3\n{good}\n").into_bytes();
        bytes.extend_from_slice(b"\xff\xfe not utf-8\n");
        bytes.extend_from_slice(&good.as_bytes()[..good.len() / 2]);
        std::fs::write(&path, bytes).unwrap();
        let read = read(&path).unwrap();
        assert_eq!(read.entries, [entry(1), entry(1)]);
        assert_eq!(
            read.unreadable,
            Unreadable {
                count: 3,
                first_line: Some(3)
            }
        );
        assert_eq!(
            read.unreadable.to_string(),
            "3 unreadable line(s) skipped (first at line 3)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
