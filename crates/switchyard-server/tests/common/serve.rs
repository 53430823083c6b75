//! `switchyard` as a child process, and scratch directories.
//!
//! [`Launch::spawn`] starts the binary with output captured on reader threads; the caller
//! waits for its "listening on" line (on stderr, as every line `serve` says) with [`Launch::wait`] (async: the test's runtime keeps
//! serving in-process upstreams meanwhile) or [`Launch::wait_blocking`]. A [`Process`] is
//! killed on drop and shows its output when the test is failing.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::time::Instant;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(30);
/// How often the waits look again.
const POLL: Duration = Duration::from_millis(10);

/// Proxy settings a child must not inherit: they would send 127.0.0.1 traffic elsewhere.
pub const PROXY_ENV: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Ambient vendor keys a child must not inherit. With [`PROXY_ENV`] and every
/// `SWITCHYARD_*` variable, these are scrubbed from `switchyard` children; tests set what
/// they mean on the child.
const VENDOR_KEYS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    // Bedrock's credentials (and where a profile would come from)
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
];

// ---------------------------------------------------------------- scratch directories

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    /// Its path.
    pub path: PathBuf,
}

impl Scratch {
    /// A new, empty directory whose name says which suite and test made it.
    pub fn new(suite: &str, tag: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!(
            "switchyard-{suite}-{}-{n}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self { path }
    }

    /// The path of `name` inside it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write `text` to `name` inside it.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.file(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------- child processes

/// A `switchyard ARGS` command run in `dir` with the scrubbed environment plus `envs`.
pub fn command(args: &[&str], envs: &[(&str, &str)], dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for var in PROXY_ENV.iter().chain(VENDOR_KEYS) {
        cmd.env_remove(var);
    }
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("SWITCHYARD_") {
            cmd.env_remove(var);
        }
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// What a child printed, captured by reader threads.
#[derive(Debug, Clone, Default)]
struct Captured {
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Captured {
    /// stdout, then stderr.
    fn both(&self) -> String {
        format!(
            "{}{}",
            self.stdout.lock().unwrap(),
            self.stderr.lock().unwrap()
        )
    }
}

/// A server that exited instead of listening.
#[derive(Debug)]
pub struct Exited {
    /// Its exit status.
    pub status: ExitStatus,
    /// What it printed to stdout.
    pub stdout: String,
    /// What it printed to stderr.
    pub stderr: String,
}

/// A started `switchyard serve` that has not yet said where it listens.
pub struct Launch {
    label: String,
    child: Child,
    captured: Captured,
    readers: Vec<JoinHandle<()>>,
    listening: mpsc::Receiver<String>,
}

impl Launch {
    /// Spawn `cmd` (from [`command`]) with its output captured; `label` names it in
    /// messages ("switchyard", "replica A").
    pub fn spawn(label: &str, mut cmd: Command) -> Self {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {label}: {e}"));
        let captured = Captured::default();
        let (tx, listening) = mpsc::channel();
        let out_reader = read_lines(child.stdout.take().unwrap(), &captured.stdout, None);
        let err = child.stderr.take().unwrap();
        let err_reader = read_lines(err, &captured.stderr, Some(tx));
        Self {
            label: label.to_owned(),
            child,
            captured,
            readers: vec![out_reader, err_reader],
            listening,
        }
    }

    /// Wait (bounded by [`WAIT`], polling on the test's runtime) for the listening line.
    pub async fn wait(mut self) -> Result<Process, Exited> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(outcome) = self.look(deadline) {
                return self.finish(outcome);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// [`Launch::wait`] for callers outside an async context.
    pub fn wait_blocking(mut self) -> Result<Process, Exited> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(outcome) = self.look(deadline) {
                return self.finish(outcome);
            }
            std::thread::sleep(POLL);
        }
    }

    /// One look: the listening URL, the exit status, or neither yet (panics past
    /// `deadline`).
    fn look(&mut self, deadline: Instant) -> Option<Result<String, ExitStatus>> {
        if let Ok(base) = self.listening.try_recv() {
            return Some(Ok(base));
        }
        if let Some(status) = self.child.try_wait().unwrap() {
            // The pipes close with the process: the readers finish, and a listening line
            // printed just before it exited is still delivered.
            for r in self.readers.drain(..) {
                let _ = r.join();
            }
            return Some(self.listening.try_recv().map_err(|_| status));
        }
        if Instant::now() >= deadline {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "{} did not print its listening line within {WAIT:?}:\n{}",
                self.label,
                self.captured.both()
            );
        }
        None
    }

    fn finish(self, outcome: Result<String, ExitStatus>) -> Result<Process, Exited> {
        match outcome {
            Ok(base) => Ok(Process {
                label: self.label,
                child: self.child,
                base,
                captured: self.captured,
                readers: self.readers,
            }),
            Err(status) => Err(Exited {
                status,
                stdout: self.captured.stdout.lock().unwrap().clone(),
                stderr: self.captured.stderr.lock().unwrap().clone(),
            }),
        }
    }
}

/// Read `pipe` line by line into `into` (lossy UTF-8); with `listening`, announce the
/// listening line's URL there once it is recorded.
fn read_lines(
    pipe: impl std::io::Read + Send + 'static,
    into: &Arc<Mutex<String>>,
    listening: Option<mpsc::Sender<String>>,
) -> JoinHandle<()> {
    let into = Arc::clone(into);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut raw = Vec::new();
        while reader.read_until(b'\n', &mut raw).is_ok_and(|n| n > 0) {
            let line = String::from_utf8_lossy(&raw).into_owned();
            raw.clear();
            // Record the line before announcing it: whoever reads the output as soon as
            // the server is up must find its listening line there.
            into.lock().unwrap().push_str(&line);
            if let (Some(tx), Some(url)) = (&listening, listening_url(&line)) {
                let _ = tx.send(url);
            }
        }
    })
}

/// The URL of the "switchyard listening on URL (...)" line on stderr: a text line or a
/// JSON one (the words are its message).
fn listening_url(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("switchyard listening on ")?;
    let url = rest.split_whitespace().next()?;
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "tests listen on 127.0.0.1 only, got {line:?}"
    );
    Some(url.to_owned())
}

/// A listening `switchyard serve`. Killed on drop; a failing test shows its output.
pub struct Process {
    label: String,
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    captured: Captured,
    readers: Vec<JoinHandle<()>>,
}

impl Process {
    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Everything the process wrote so far: stdout, then stderr.
    pub fn output(&self) -> String {
        self.captured.both()
    }

    /// What the process wrote to stdout so far.
    pub fn stdout(&self) -> String {
        self.captured.stdout.lock().unwrap().clone()
    }

    /// What the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.captured.stderr.lock().unwrap().clone()
    }

    /// Send SIGHUP (reload the config) without waiting for anything.
    pub fn hangup(&self) {
        let sent = Command::new("kill")
            .arg("-HUP")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -HUP {} failed", self.label);
    }

    /// Send SIGTERM and wait (bounded) for the process to exit; the reader threads are
    /// joined, so [`Process::output`] is complete afterwards.
    pub async fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {} failed", self.label);
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within {WAIT:?} of SIGTERM:\n{}",
                self.label,
                self.output()
            );
            tokio::time::sleep(POLL).await;
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        status
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- {} output\n{}", self.label, self.output());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
