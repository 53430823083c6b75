//! A Microsoft Entra ID access token kept in a file (Azure workload identity, or a sidecar
//! that renews the token): [`TokenFile`] hands out the file's token and re-reads the file
//! when it changes.
//!
//! Costs: a call takes a lock and clones the token. At most once per `recheck` interval
//! (default [`DEFAULT_RECHECK`]) a call also looks at the file's modification time and
//! length (one `stat`), and reads the file only when either changed: no per-request I/O.
//! So a renewed token is sent at most `recheck` after it was written. A file that cannot
//! be read for a while (being replaced) keeps the last good token in use; only a file that
//! was never read, or holds nothing, fails the call (`Auth`). The token never appears in an
//! error.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::secret::Secret;
use crate::provider::token::TokenSource;

/// How often, at most, the file is looked at again.
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(10);

/// The largest token file read (Entra tokens are a few kilobytes).
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// A token file, re-read when it changes.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    recheck: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    token: Option<Secret>,
    /// The modification time and length the token was read at.
    stamp: Option<(SystemTime, u64)>,
    /// When the file was last looked at.
    checked: Option<Instant>,
}

impl TokenFile {
    /// The token in the file at `path`, looked at again at most every `recheck`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, recheck: Duration) -> Self {
        Self {
            path: path.into(),
            recheck,
            state: Mutex::new(State::default()),
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's token now, read afresh (what `switchyard check` does once).
    ///
    /// # Errors
    /// `Auth`: the file cannot be read, is too large, or is empty.
    pub fn read_now(&self) -> Result<Secret, ProviderError> {
        let (token, _) = self.read()?;
        Ok(token)
    }

    fn read(&self) -> Result<(Secret, (SystemTime, u64)), ProviderError> {
        let failed = |what: String| {
            ProviderError::new(
                ErrorKind::Auth,
                format!("Entra token file {}: {what}", self.path.display()),
            )
        };
        let meta = std::fs::metadata(&self.path).map_err(|e| failed(e.to_string()))?;
        if meta.len() > MAX_TOKEN_BYTES {
            return Err(failed(format!("larger than {MAX_TOKEN_BYTES} bytes")));
        }
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        let text = std::fs::read_to_string(&self.path).map_err(|e| failed(e.to_string()))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(failed("empty".to_owned()));
        }
        Ok((Secret::new(token), stamp))
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let meta = std::fs::metadata(&self.path).ok()?;
        Some((
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        ))
    }

    /// The token, looking at the file first when `recheck` has passed.
    fn get(&self) -> Result<Secret, ProviderError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let due = state
            .checked
            .is_none_or(|at| now.duration_since(at) >= self.recheck);
        if due {
            state.checked = Some(now);
            let changed = state.token.is_none() || self.stamp() != state.stamp;
            if changed {
                match self.read() {
                    Ok((token, stamp)) => {
                        state.token = Some(token);
                        state.stamp = Some(stamp);
                    }
                    // keep the last good token while the file is being replaced
                    Err(e) if state.token.is_none() => return Err(e),
                    Err(_) => {}
                }
            }
        }
        state.token.clone().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Auth,
                format!("Entra token file {}: not read yet", self.path.display()),
            )
        })
    }
}

#[async_trait]
impl TokenSource for TokenFile {
    async fn token(&self) -> Result<Secret, ProviderError> {
        self.get()
    }

    fn current(&self) -> Option<Secret> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .token
            .clone()
    }
}
