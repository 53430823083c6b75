//! The AWS shared credentials file (`~/.aws/credentials`, or the file
//! `AWS_SHARED_CREDENTIALS_FILE` names): an INI file of `[profile]` sections holding
//! `aws_access_key_id`, `aws_secret_access_key` and optionally `aws_session_token`.
//!
//! Owns [`credentials_of`], which finds one profile's credentials in the file's text. Read
//! like the AWS CLI reads it: `#` and `;` start comment lines; section names and keys are
//! trimmed; keys are matched case-insensitively; `key = value` (or `key=value`), the value
//! trimmed; a later duplicate key wins. Errors name the profile and the missing key, never a
//! value. The library reads no files itself: the server reads the file and passes its text.

use super::sigv4::AwsCredentials;
use crate::provider::secret::Secret;

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
