//! The AWS shared credentials file (`~/.aws/credentials`, or the file
//! `AWS_SHARED_CREDENTIALS_FILE` names): an INI file of `[profile]` sections holding
//! `aws_access_key_id`, `aws_secret_access_key` and optionally `aws_session_token`.
//!
//! Owns [`credentials_of`], which finds one profile's credentials in the file's text. Read
//! like the AWS CLI reads it: `#` and `;` start comment lines; section names and keys are
//! trimmed; keys are matched case-insensitively; `key = value` (or `key=value`), the value
//! trimmed; a later duplicate key wins. Errors name the profile and the missing key, never a
//! value.
//!
//! Also owns [`ProfileFile`]: one profile of a credentials file, re-read when the file
//! changes, so temporary credentials that a tool rewrites (`aws sso`, `aws-vault`,
//! `granted` exporting to the file) are picked up without a restart: a
//! [`crate::provider::watched::Watched`] file, as the Entra token file (`azure/entra.rs`) is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::credentials::AwsCredentials;
use crate::provider::secret::Secret;
use crate::provider::watched::{read_capped, Stamp, Watched};

/// How often, at most, a [`ProfileFile`] looks at its file again.
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(10);

/// The largest credentials file read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Why a profile gave no credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// No `[name]` section.
    #[error("profile {0:?} is not in the credentials file")]
    NotFound(String),
    /// The section lacks a required key (or its value is empty).
    #[error("profile {profile:?} has no {key}")]
    Missing {
        /// The profile.
        profile: String,
        /// The key it lacks.
        key: &'static str,
    },
}

/// The credentials of profile `name` in the credentials file's `text`.
///
/// # Errors
/// [`ProfileError`] when the profile is absent or lacks a key id or secret key.
pub fn credentials_of(text: &str, name: &str) -> Result<AwsCredentials, ProfileError> {
    let mut found = false;
    let mut in_profile = false;
    let (mut id, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = section.trim() == name;
            found |= in_profile;
            continue;
        }
        if !in_profile {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().to_owned();
        match key.trim().to_ascii_lowercase().as_str() {
            "aws_access_key_id" => id = Some(value),
            "aws_secret_access_key" => secret = Some(value),
            "aws_session_token" => token = Some(value),
            _ => {}
        }
    }
    if !found {
        return Err(ProfileError::NotFound(name.to_owned()));
    }
    let missing = |key| ProfileError::Missing {
        profile: name.to_owned(),
        key,
    };
    let access_key_id = id
        .filter(|v| !v.is_empty())
        .ok_or_else(|| missing("aws_access_key_id"))?;
    let secret = secret
        .filter(|v| !v.is_empty())
        .ok_or_else(|| missing("aws_secret_access_key"))?;
    Ok(AwsCredentials {
        access_key_id,
        secret_access_key: Secret::new(secret),
        session_token: token.filter(|t| !t.is_empty()).map(Secret::new),
    })
}

/// One profile of a credentials file, re-read when the file changes
/// ([`crate::provider::watched::Watched`]).
#[derive(Debug)]
pub struct ProfileFile {
    file: Watched<AwsCredentials>,
    profile: String,
}

/// Why a profile file gave no credentials: the file, or the profile in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The file cannot be read (or is too large).
    #[error("credentials file {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file has no such profile, or it lacks a key.
    #[error("credentials file {path}: {error}")]
    Profile {
        /// The file.
        path: String,
        /// What is wrong with the profile.
        error: ProfileError,
    },
}

impl ProfileFile {
    /// Profile `profile` of the file at `path`, looked at again at most every `recheck`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, profile: impl Into<String>, recheck: Duration) -> Self {
        Self {
            file: Watched::new(path, recheck),
            profile: profile.into(),
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The profile's credentials, read afresh now (and kept for the calls to come).
    ///
    /// # Errors
    /// The file cannot be read, or the profile is not in it or lacks a key.
    pub fn read_now(&self) -> Result<AwsCredentials, FileError> {
        self.file.read_now(|path| self.read(path))
    }

    fn read(&self, path: &Path) -> Result<(AwsCredentials, Stamp), FileError> {
        let shown = || path.display().to_string();
        let (text, stamp) =
            read_capped(path, MAX_FILE_BYTES).map_err(|reason| FileError::Unreadable {
                path: shown(),
                reason,
            })?;
        let credentials =
            credentials_of(&text, &self.profile).map_err(|error| FileError::Profile {
                path: shown(),
                error,
            })?;
        Ok((credentials, stamp))
    }

    /// The credentials to sign with, looking at the file first when `recheck` has passed.
    ///
    /// # Errors
    /// The file was never read successfully.
    pub fn get(&self) -> Result<AwsCredentials, FileError> {
        self.file.get(
            |path| self.read(path),
            || FileError::Unreadable {
                path: self.path().display().to_string(),
                reason: "not read yet".to_owned(),
            },
        )
    }

    /// The secrets of the credentials in use and of those before them.
    #[must_use]
    pub fn secrets(&self) -> Vec<Secret> {
        let mut out = Vec::new();
        for c in self.file.current_and_previous() {
            out.push(c.secret_access_key);
            out.extend(c.session_token);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const FILE: &str = "\
# a comment
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret

[work]
; another comment
AWS_ACCESS_KEY_ID=ASIAWORK
aws_secret_access_key= work/secret+key=
aws_session_token =   token-value
region = eu-west-1

[broken]
aws_access_key_id = AKIDBROKEN
";

    #[test]
    fn reads_the_named_profile_only() {
        let work = credentials_of(FILE, "work").unwrap();
        assert_eq!(work.access_key_id, "ASIAWORK");
        assert_eq!(work.secret_access_key.expose(), "work/secret+key=");
        assert_eq!(
            work.session_token.as_ref().map(Secret::expose),
            Some("token-value")
        );
        let default = credentials_of(FILE, "default").unwrap();
        assert_eq!(default.access_key_id, "AKIDDEFAULT");
        assert_eq!(default.secret_access_key.expose(), "default-secret");
        assert!(default.session_token.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_profile_file_is_reread_when_it_changes_and_kept_while_it_is_gone() {
        let dir = std::env::temp_dir().join(format!("sy-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials");
        let write = |id: &str, secret: &str| {
            std::fs::write(
                &path,
                format!("[p]\naws_access_key_id = {id}\naws_secret_access_key = {secret}\n"),
            )
            .unwrap();
        };
        write("AKIDONE", "first-secret");
        let file = ProfileFile::new(&path, "p", DEFAULT_RECHECK);
        assert_eq!(file.read_now().unwrap().access_key_id, "AKIDONE");
        write("AKIDTWO", "second-secret-longer");
        // not looked at again before `recheck`
        assert_eq!(file.get().unwrap().access_key_id, "AKIDONE");
        tokio::time::advance(DEFAULT_RECHECK).await;
        let now = file.get().unwrap();
        assert_eq!(now.access_key_id, "AKIDTWO");
        assert_eq!(now.secret_access_key.expose(), "second-secret-longer");
        let secrets: Vec<String> = file
            .secrets()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        assert_eq!(secrets, ["second-secret-longer", "first-secret"]);
        // being replaced: the last good credentials stay in use
        std::fs::remove_file(&path).unwrap();
        tokio::time::advance(DEFAULT_RECHECK).await;
        assert_eq!(file.get().unwrap().access_key_id, "AKIDTWO");
        // never readable: an error naming the file, no value
        let gone = ProfileFile::new(dir.join("nope"), "p", DEFAULT_RECHECK);
        let err = gone.get().unwrap_err().to_string();
        assert!(err.starts_with("credentials file "), "{err}");
    }

    #[test]
    fn a_missing_profile_or_key_is_named_without_values() {
        assert_eq!(
            credentials_of(FILE, "nope").unwrap_err(),
            ProfileError::NotFound("nope".into())
        );
        let err = credentials_of(FILE, "broken").unwrap_err();
        assert_eq!(
            err.to_string(),
            "profile \"broken\" has no aws_secret_access_key"
        );
        assert!(!err.to_string().contains("AKIDBROKEN"));
    }
}
