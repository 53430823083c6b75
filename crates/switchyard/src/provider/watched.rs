//! A small credential file that another process rewrites (an Entra token file, an AWS
//! shared-credentials profile): [`Watched`] keeps the value read from it and reads it again
//! only when it changed; [`read_capped`] reads such a file with a size cap.
//!
//! Costs: a call takes a lock and clones the value. At most once per `recheck` interval a
//! call also looks at the file's modification time and length (one `stat`), and reads the
//! file only when either moved: no per-request I/O. A file that cannot be read for a while
//! (being replaced) keeps the last good value in use; only a file never read successfully
//! fails. The value before the last change is kept too, for scrubbing an error that a call
//! made with it may still echo.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// A file's modification time and length: what tells a changed file.
pub type Stamp = (SystemTime, u64);

/// The text of the file at `path` (at most `cap` bytes, read through the opened handle so a
/// file growing meanwhile is still cut) and its [`Stamp`].
///
/// # Errors
/// Why it cannot be read, or that it is larger than `cap`.
pub fn read_capped(path: &Path, cap: u64) -> Result<(String, Stamp), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(cap + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > cap {
        return Err(format!("larger than {cap} bytes"));
    }
    Ok((text, stamp_of(&meta)))
}

fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    (
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    )
}

/// The value of a file, re-read when the file changes.
#[derive(Debug)]
pub struct Watched<T> {
    path: PathBuf,
    recheck: Duration,
    state: Mutex<State<T>>,
}

#[derive(Debug)]
struct State<T> {
    value: Option<T>,
    /// The value in use before the last change.
    previous: Option<T>,
    /// The stamp the value was read at.
    stamp: Option<Stamp>,
    /// When the file was last looked at.
    checked: Option<Instant>,
}

impl<T: Clone> Watched<T> {
    /// The file at `path`, looked at again at most every `recheck`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, recheck: Duration) -> Self {
        Self {
            path: path.into(),
            recheck,
            state: Mutex::new(State {
                value: None,
                previous: None,
                stamp: None,
                checked: None,
            }),
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value `read` gives now, kept for the calls to come.
    ///
    /// # Errors
    /// `read`'s.
    pub fn read_now<E>(&self, read: impl Fn(&Path) -> Result<(T, Stamp), E>) -> Result<T, E> {
        let (value, stamp) = read(&self.path)?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.keep(value.clone(), stamp);
        state.checked = Some(Instant::now());
        Ok(value)
    }

    /// The value in use, through `read` first when `recheck` has passed and the file
    /// changed (or was never read).
    ///
    /// # Errors
    /// `read`'s, when the file was never read successfully; `unread()` when it was not
    /// looked at yet and holds nothing.
    pub fn get<E>(
        &self,
        read: impl Fn(&Path) -> Result<(T, Stamp), E>,
        unread: impl FnOnce() -> E,
    ) -> Result<T, E> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let due = state
            .checked
            .is_none_or(|at| now.duration_since(at) >= self.recheck);
        if due {
            state.checked = Some(now);
            let stamp = std::fs::metadata(&self.path).ok().map(|m| stamp_of(&m));
            if state.value.is_none() || stamp != state.stamp {
                match read(&self.path) {
                    Ok((value, stamp)) => state.keep(value, stamp),
                    // keep the last good value while the file is being replaced
                    Err(e) if state.value.is_none() => return Err(e),
                    Err(_) => {}
                }
            }
        }
        state.value.clone().ok_or_else(unread)
    }

    /// The value in use, without looking at the file.
    #[must_use]
    pub fn current(&self) -> Option<T> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .value
            .clone()
    }

    /// The value in use and the one before it (either may be missing).
    #[must_use]
    pub fn current_and_previous(&self) -> Vec<T> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.value.iter().chain(&state.previous).cloned().collect()
    }
}

impl<T> State<T> {
    fn keep(&mut self, value: T, stamp: Stamp) {
        self.previous = self.value.replace(value);
        self.stamp = Some(stamp);
    }
}
