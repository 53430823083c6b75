//! An AWS credential: what SigV4 signs with ([`super::sigv4`]), wherever it came from (the
//! environment, a profile of the shared credentials file: [`super::profile`]).

use crate::provider::secret::Secret;

/// An AWS credential.
#[derive(Clone)]
pub struct AwsCredentials {
    /// The access key id (`AKIA…`, `ASIA…`): not secret, it names the key.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: Secret,
    /// The session token of temporary credentials.
    pub session_token: Option<Secret>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"[redacted]")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}
