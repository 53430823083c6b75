//! A Microsoft Entra ID access token kept in a file (Azure workload identity, or a sidecar
//! that renews the token): [`TokenFile`] hands out the file's token and re-reads the file
//! when it changes.
//!
//! A [`crate::provider::watched::Watched`] file (its costs and rules there): the file is
//! looked at again at most every `recheck` (default [`DEFAULT_RECHECK`]), so a renewed
//! token is sent at most `recheck` after it was written. A file that cannot be read for a
//! while (being replaced) keeps the last good token in use; only a file that was never
//! read, or holds nothing, fails the call (`Auth`). The token never appears in an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::secret::Secret;
use crate::provider::token::TokenSource;
use crate::provider::watched::{read_capped, Stamp, Watched};

/// How often, at most, the file is looked at again.
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(10);

/// The largest token file read (Entra tokens are a few kilobytes).
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// A token file, re-read when it changes ([`crate::provider::watched::Watched`]).
#[derive(Debug)]
pub struct TokenFile {
    file: Watched<Secret>,
}

impl TokenFile {
    /// The token in the file at `path`, looked at again at most every `recheck`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, recheck: Duration) -> Self {
        Self {
            file: Watched::new(path, recheck),
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file's token now, read afresh (what `switchyard check` does once).
    ///
    /// # Errors
    /// `Auth`: the file cannot be read, is too large, or is empty.
    pub fn read_now(&self) -> Result<Secret, ProviderError> {
        let (token, _) = read(self.path())?;
        Ok(token)
    }
}

/// The token in the file at `path`, trimmed, and the file's stamp.
fn read(path: &Path) -> Result<(Secret, Stamp), ProviderError> {
    let failed = |what: String| {
        ProviderError::new(
            ErrorKind::Auth,
            format!("Entra token file {}: {what}", path.display()),
        )
    };
    let (text, stamp) = read_capped(path, MAX_TOKEN_BYTES).map_err(failed)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(failed("empty".to_owned()));
    }
    Ok((Secret::new(token), stamp))
}

#[async_trait]
impl TokenSource for TokenFile {
    async fn token(&self) -> Result<Secret, ProviderError> {
        self.file.get(read, || {
            ProviderError::new(
                ErrorKind::Auth,
                format!("Entra token file {}: not read yet", self.path().display()),
            )
        })
    }

    fn current(&self) -> Option<Secret> {
        self.file.current()
    }
}
