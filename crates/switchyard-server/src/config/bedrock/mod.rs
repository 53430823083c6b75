//! The `bedrock` kind (AWS Bedrock): its fields' checks (`validate`, with paths), which
//! credentials a provider signs with (`credentials`: what `switchyard check` shows) and
//! building its provider from the environment (`build`).
//!
//! Credentials:
//! - `api_key_env`: a Bedrock API key, sent as a bearer token (no signature);
//! - `credentials = "…"` names the source; without it, the AWS SDKs' default chain picks the
//!   first that is set up: `env`, `web_identity`, `profile`, `container`, `imds`.
//! - `env`: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and the optional `AWS_SESSION_TOKEN`
//!   (each name overridable: `access_key_id_env`, …), read at start; naming a variable
//!   keeps a provider on these (no fallback). One key without the other is an error.
//! - `web_identity` (EKS IAM roles for service accounts, GitHub Actions OIDC, …):
//!   `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` (and the optional
//!   `AWS_ROLE_SESSION_NAME`) exchanged at STS (`AWS_ENDPOINT_URL_STS`, else
//!   `https://sts.{region}.amazonaws.com`); the token file must be readable at start and the
//!   role ARN shaped like one.
//! - `profile`: the profile `profile` names (else `AWS_PROFILE`, else `default`) in the
//!   shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `$HOME/.aws/credentials`),
//!   read at start and re-read when the file changes; a file that cannot be read, a
//!   profile not in it, or one without both keys is an error when the profile is asked for
//!   (in the default chain, such a profile is passed over).
//! - `container` (ECS task roles, EKS Pod Identity): `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
//!   (on `http://169.254.170.2`), else `AWS_CONTAINER_CREDENTIALS_FULL_URI` (https, or http
//!   to a loopback, ECS or EKS address only), with the `Authorization` token from the file
//!   `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` names, else `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
//! - `imds`: EC2 instance metadata, IMDSv2 (`AWS_EC2_METADATA_SERVICE_ENDPOINT`, else
//!   `http://169.254.169.254`); off when `AWS_EC2_METADATA_DISABLED` is `true`. The default
//!   chain ends here with a warning (off EC2, calls fail as auth errors); with IMDS off, the
//!   provider signs nothing and warns.
//!
//! The last three are fetched on the first call and refreshed before they expire
//! (`switchyard::provider::bedrock::platform`).

use std::path::PathBuf;
use std::sync::Arc;

use switchyard::clock::Clock;
use switchyard::provider::bedrock::platform::container::{
    full_uri_allowed, ContainerAuth, ContainerEndpoint,
};
use switchyard::provider::bedrock::platform::imds::{self, InstanceMetadata};
use switchyard::provider::bedrock::platform::web_identity::{self, WebIdentity};
use switchyard::provider::bedrock::platform::{
    read_token_file, source_client, PlatformCredentials, LOCAL_CONNECT_TIMEOUT,
};
use switchyard::provider::bedrock::profile::{FileError, ProfileFile, DEFAULT_RECHECK};
use switchyard::provider::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use switchyard::provider::http::{Transport, DEFAULT_CONNECT_TIMEOUT};
use switchyard::provider::secret::Secret;
use switchyard::Provider;

use super::{KeyLookup, Problems, ProviderToml};

/// The environment variables the keys are read from by default.
pub const DEFAULT_ACCESS_KEY_ID_ENV: &str = "AWS_ACCESS_KEY_ID";
/// See [`DEFAULT_ACCESS_KEY_ID_ENV`].
pub const DEFAULT_SECRET_ACCESS_KEY_ENV: &str = "AWS_SECRET_ACCESS_KEY";
/// See [`DEFAULT_ACCESS_KEY_ID_ENV`].
pub const DEFAULT_SESSION_TOKEN_ENV: &str = "AWS_SESSION_TOKEN";

/// The values of `credentials`, in the default chain's order but for `profile` (after
/// `web_identity` there).
pub const SOURCES: [&str; 5] = ["env", "profile", "web_identity", "container", "imds"];

/// Whether a `bedrock` provider's model takes `reasoning_effort` when its entry does not
/// say: only Claude models do on Bedrock (as `thinking`), so any other model is `false`
/// (skipped for, or called without, a request asking for reasoning) instead of the price
/// table's default of yes. `None` for other kinds and for Claude (the table decides).
pub(super) fn default_reasoning(prov: &ProviderToml) -> Option<bool> {
    let model = prov.model.as_deref()?;
    (prov.kind == "bedrock" && !model.contains("anthropic.claude")).then_some(false)
}

/// The problems of a `bedrock` entry.
pub(super) fn validate(prov: &ProviderToml, at: &str, p: &mut Problems) {
    match prov.region.as_deref().map(str::trim) {
        None | Some("") => p.add(
            format!("{at}.region"),
            "is required for kind \"bedrock\" (e.g. region = \"us-east-1\")",
        ),
        Some(region)
            if !region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') =>
        {
            p.add(
                format!("{at}.region"),
                format!("{region:?} is not an AWS region (like \"us-east-1\")"),
            );
        }
        Some(_) => {}
    }
    if let Some(url) = &prov.control_url {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            p.add(
                format!("{at}.control_url"),
                format!("{url:?} must start with https:// (or http://)"),
            );
        }
    }
    // (`api_key_env` is checked for every kind)
    for (field, value) in env_fields(prov) {
        if let Some(why) = value.as_deref().and_then(super::env_name_problem) {
            p.add(format!("{at}.{field}"), why);
        }
    }
    if prov.profile.as_deref().is_some_and(|n| n.trim().is_empty()) {
        p.add(format!("{at}.profile"), "must name a profile");
    }
    match prov.credentials.as_deref() {
        Some(source) => validate_source(prov, source, at, p),
        None => {
            let env_keys = env_fields(prov).iter().any(|(_, v)| v.is_some());
            let ways = [prov.api_key_env.is_some(), prov.profile.is_some(), env_keys];
            if ways.iter().filter(|w| **w).count() > 1 {
                p.add(
                    at,
                    "give one way to authenticate: api_key_env (a Bedrock API key), profile, or the *_env key names",
                );
            }
        }
    }
}

/// The `*_env` key-name fields and their values.
fn env_fields(prov: &ProviderToml) -> [(&'static str, &Option<String>); 3] {
    [
        ("access_key_id_env", &prov.access_key_id_env),
        ("secret_access_key_env", &prov.secret_access_key_env),
        ("session_token_env", &prov.session_token_env),
    ]
}

/// The problems of `credentials = source`: an unknown source, and fields of another.
fn validate_source(prov: &ProviderToml, source: &str, at: &str, p: &mut Problems) {
    if !SOURCES.contains(&source) {
        p.add(
            format!("{at}.credentials"),
            format!("{source:?} is not one of {}", SOURCES.join(", ")),
        );
        return;
    }
    if prov.api_key_env.is_some() {
        p.add(
            format!("{at}.credentials"),
            "give one way to authenticate: api_key_env (a Bedrock API key, unsigned) or credentials",
        );
    }
    if prov.profile.is_some() && source != "profile" {
        p.add(
            format!("{at}.profile"),
            "applies to credentials = \"profile\" only",
        );
    }
    for (field, value) in env_fields(prov) {
        if value.is_some() && source != "env" {
            p.add(
                format!("{at}.{field}"),
                "applies to credentials = \"env\" only",
            );
        }
    }
}

/// What a provider signs with.
enum Choice {
    /// A Bedrock API key from `var` (`None`: not set).
    ApiKey(String, Option<Secret>),
    /// Keys from the environment.
    Env(AwsCredentials, String),
    /// A profile of the shared credentials file.
    Profile(Arc<ProfileFile>, String),
    /// Issued by the platform.
    Platform(Arc<PlatformCredentials>),
    /// Instance metadata as the default chain's last resort (worth a warning: off EC2
    /// every call fails).
    LastResort(Arc<PlatformCredentials>),
    /// Nothing; the warning says why.
    Nothing(String),
}

impl Choice {
    fn describe(&self) -> String {
        match self {
            Self::ApiKey(var, Some(_)) => format!("a Bedrock API key from {var} (unsigned)"),
            Self::ApiKey(var, None) => format!("a Bedrock API key from {var} (not set)"),
            Self::Env(c, vars) => format!("environment keys {vars} ({})", c.access_key_id),
            Self::Profile(file, profile) => format!(
                "profile {profile:?} of {} (re-read when it changes)",
                file.path().display()
            ),
            Self::Platform(p) | Self::LastResort(p) => {
                format!("{} (refreshed before expiry)", p.describe())
            }
            Self::Nothing(_) => "none (requests go unsigned)".to_owned(),
        }
    }
}

/// The environment, as the sources read it.
struct Env<'a> {
    lookup: KeyLookup<'a>,
}

impl Env<'_> {
    /// A variable's value, when set and not empty.
    fn get(&self, var: &str) -> Option<String> {
        (self.lookup)(var).filter(|v| !v.trim().is_empty())
    }
}

/// Which credentials `prov` signs with, read and checked now (no request is made).
///
/// # Errors
/// A source that is asked for (or set up in the environment) but unusable: a missing or
/// unreadable file, a malformed role ARN or URL, a full URI to a host not allowed. The
/// messages name the provider, the field or variable, and never a secret.
fn choose(
    prov: &ProviderToml,
    lookup: KeyLookup<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<Choice, String> {
    let name = &prov.name;
    let env = Env { lookup };
    if let Some(var) = &prov.api_key_env {
        return Ok(Choice::ApiKey(var.clone(), env.get(var).map(Secret::new)));
    }
    let region = prov.region.as_deref().unwrap_or_default().trim();
    let at = |source: &str| format!("provider {name:?} (credentials = \"{source}\")");
    let explicit = prov.credentials.as_deref();
    let source = explicit.or(prov.profile.as_ref().map(|_| "profile"));
    match source {
        Some("env") => from_env_keys(prov, &env).map(|c| c.unwrap_or_else(|| no_keys(prov, None))),
        Some("profile") => {
            let profile = profile_name(prov, &env);
            let file = from_profile(name, &profile, &env)?;
            Ok(Choice::Profile(file, profile))
        }
        Some("web_identity") => web_identity_of(&env, region, transport, clock)
            .map_err(|e| format!("{}: {e}", at("web_identity")))?
            .ok_or_else(|| format!("{}: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN must both be set (EKS sets them for a service account with an IAM role)", at("web_identity"))),
        Some("container") => container_of(&env, transport, clock)
            .map_err(|e| format!("{}: {e}", at("container")))?
            .ok_or_else(|| format!("{}: neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set (ECS and EKS Pod Identity set one)", at("container"))),
        Some(_) => match imds_of(&env, transport, clock).map_err(|e| format!("{}: {e}", at("imds")))? {
            Some(choice) => Ok(choice),
            None => Err(format!("{}: AWS_EC2_METADATA_DISABLED is true", at("imds"))),
        },
        None => default_chain(prov, &env, region, transport, clock),
    }
}

/// The AWS SDKs' default chain: environment keys, web identity, the shared credentials
/// file's profile, the container endpoint, instance metadata.
fn default_chain(
    prov: &ProviderToml,
    env: &Env<'_>,
    region: &str,
    transport: &Transport,
    clock: Clock,
) -> Result<Choice, String> {
    let name = &prov.name;
    let fail = |e: String| format!("provider {name:?}: {e}");
    if let Some(choice) = from_env_keys(prov, env)? {
        return Ok(choice);
    }
    if env_keys_named(prov) {
        return Ok(no_keys(prov, None));
    }
    if let Some(choice) = web_identity_of(env, region, transport, clock).map_err(fail)? {
        return Ok(choice);
    }
    let profile = profile_name(prov, env);
    if let Ok(file) = from_profile(name, &profile, env) {
        return Ok(Choice::Profile(file, profile));
    }
    if let Some(choice) = container_of(env, transport, clock).map_err(fail)? {
        return Ok(choice);
    }
    match imds_of(env, transport, clock).map_err(fail)? {
        Some(Choice::Platform(imds)) => Ok(Choice::LastResort(imds)),
        Some(choice) => Ok(choice),
        None => Ok(no_keys(prov, Some(&profile))),
    }
}

/// The profile asked for: `profile`, else `AWS_PROFILE`, else `default`.
fn profile_name(prov: &ProviderToml, env: &Env<'_>) -> String {
    prov.profile
        .clone()
        .or_else(|| env.get("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_owned())
}

/// The key variables' names: (id, secret, token).
fn key_vars(prov: &ProviderToml) -> (&str, &str, &str) {
    (
        prov.access_key_id_env
            .as_deref()
            .unwrap_or(DEFAULT_ACCESS_KEY_ID_ENV),
        prov.secret_access_key_env
            .as_deref()
            .unwrap_or(DEFAULT_SECRET_ACCESS_KEY_ENV),
        prov.session_token_env
            .as_deref()
            .unwrap_or(DEFAULT_SESSION_TOKEN_ENV),
    )
}

/// Keys from the environment, `None` when neither is set.
fn from_env_keys(prov: &ProviderToml, env: &Env<'_>) -> Result<Option<Choice>, String> {
    let (id_var, secret_var, token_var) = key_vars(prov);
    match (env.get(id_var), env.get(secret_var)) {
        (Some(id), Some(secret)) => Ok(Some(Choice::Env(
            AwsCredentials {
                access_key_id: id,
                secret_access_key: Secret::new(secret),
                session_token: env.get(token_var).map(Secret::new),
            },
            format!("{id_var} / {secret_var}"),
        ))),
        (None, None) => Ok(None),
        _ => Err(format!("provider {:?}: only one of {id_var} and {secret_var} is set: set both (or neither, to use a profile)", prov.name)),
    }
}

/// No credentials: the warning, naming what was looked for.
fn no_keys(prov: &ProviderToml, profile: Option<&str>) -> Choice {
    let (id_var, secret_var, _) = key_vars(prov);
    let name = &prov.name;
    let rest = match profile {
        Some(profile) => format!(" (and no web identity, profile {profile:?} in the shared credentials file, or container endpoint; instance metadata is off)"),
        None => String::new(),
    };
    Choice::Nothing(format!("provider {name:?}: no AWS credentials: environment variables {id_var} and {secret_var} are not set{rest}; calls will fail with auth errors"))
}

/// The web identity the environment sets up, `None` when it sets up none.
fn web_identity_of(
    env: &Env<'_>,
    region: &str,
    transport: &Transport,
    clock: Clock,
) -> Result<Option<Choice>, String> {
    let (Some(file), Some(role)) = (
        env.get("AWS_WEB_IDENTITY_TOKEN_FILE"),
        env.get("AWS_ROLE_ARN"),
    ) else {
        return Ok(None);
    };
    let file = PathBuf::from(file.trim());
    read_token_file(&file, "AWS_WEB_IDENTITY_TOKEN_FILE").map_err(|e| e.message)?;
    let endpoint = env
        .get("AWS_ENDPOINT_URL_STS")
        .unwrap_or_else(|| web_identity::regional_endpoint(region));
    let http = source_client(transport, DEFAULT_CONNECT_TIMEOUT).map_err(|e| e.0)?;
    let issuer = WebIdentity::new(
        file,
        role.trim(),
        env.get("AWS_ROLE_SESSION_NAME"),
        &endpoint,
        http,
        clock,
    )
    .map_err(|e| format!("AWS_ROLE_ARN / AWS_ROLE_SESSION_NAME / AWS_ENDPOINT_URL_STS: {e}"))?;
    Ok(Some(Choice::Platform(Arc::new(PlatformCredentials::new(
        issuer, clock,
    )))))
}

/// The container endpoint the environment sets up, `None` when it sets up none.
fn container_of(
    env: &Env<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<Option<Choice>, String> {
    let relative = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    let full = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if relative.is_none() && full.is_none() {
        return Ok(None);
    }
    let auth = if let Some(file) = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        let file = PathBuf::from(file.trim());
        read_token_file(&file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").map_err(|e| e.message)?;
        ContainerAuth::File(file)
    } else if let Some(token) = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN") {
        ContainerAuth::Token(Secret::new(token.trim()))
    } else {
        ContainerAuth::None
    };
    let http = source_client(transport, LOCAL_CONNECT_TIMEOUT).map_err(|e| e.0)?;
    let issuer = match (relative, full) {
        (Some(relative), _) => ContainerEndpoint::relative(relative.trim(), auth, http)
            .map_err(|e| format!("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: {e}"))?,
        (None, Some(full)) => {
            if let Some(why) = full_uri_allowed(&full) {
                return Err(format!("AWS_CONTAINER_CREDENTIALS_FULL_URI {why}"));
            }
            ContainerEndpoint::full(&full, auth, http)
                .map_err(|e| format!("AWS_CONTAINER_CREDENTIALS_FULL_URI: {e}"))?
        }
        (None, None) => return Ok(None),
    };
    Ok(Some(Choice::Platform(Arc::new(PlatformCredentials::new(
        issuer, clock,
    )))))
}

/// Instance metadata, `None` when `AWS_EC2_METADATA_DISABLED` is `true`.
fn imds_of(env: &Env<'_>, transport: &Transport, clock: Clock) -> Result<Option<Choice>, String> {
    let disabled = env
        .get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if disabled {
        return Ok(None);
    }
    let endpoint = env
        .get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or_else(|| imds::DEFAULT_ENDPOINT.to_owned());
    let http = source_client(transport, LOCAL_CONNECT_TIMEOUT).map_err(|e| e.0)?;
    let issuer = InstanceMetadata::new(&endpoint, http)
        .map_err(|e| format!("AWS_EC2_METADATA_SERVICE_ENDPOINT: {e}"))?;
    Ok(Some(Choice::Platform(Arc::new(PlatformCredentials::new(
        issuer, clock,
    )))))
}

/// Which credentials a valid `bedrock` entry signs with, in words (`switchyard check`).
///
/// # Errors
/// As `build`.
pub fn credentials_source(prov: &ProviderToml, env: KeyLookup<'_>) -> Result<String, String> {
    let transport = Transport::default();
    choose(prov, env, &transport, Clock::system()).map(|c| c.describe())
}

/// The provider of a valid `bedrock` entry, and a warning when it has no credentials (or
/// falls back to instance metadata).
///
/// # Errors
/// A credentials source that is asked for or set up but unusable (see `choose`), or a
/// provider that cannot be built.
pub(super) fn build(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<(Arc<dyn Provider>, Option<String>), String> {
    let name = &prov.name;
    let mut config = BedrockConfig::new(
        prov.region.clone().unwrap_or_default(),
        prov.model.clone().unwrap_or_default(),
    );
    let mut warning = None;
    match choose(prov, env, transport, clock)? {
        Choice::ApiKey(var, key) => {
            if key.is_none() {
                warning = Some(format!("provider {name:?}: environment variable {var} is not set; calls will fail with auth errors"));
            }
            config.api_key = key;
        }
        Choice::Env(credentials, _) => config.credentials = Some(credentials),
        Choice::Profile(file, _) => config.profile_file = Some(file),
        Choice::Platform(platform) => config.platform = Some(platform),
        Choice::LastResort(imds) => {
            let (id_var, secret_var, _) = key_vars(prov);
            warning = Some(format!("provider {name:?}: no AWS credentials: environment variables {id_var} and {secret_var} are not set, and no web identity, shared credentials profile or container endpoint is set up; signing with {} (off EC2 calls fail with auth errors; AWS_EC2_METADATA_DISABLED=true turns this off, credentials = \"imds\" says it is meant)", imds.describe()));
            config.platform = Some(imds);
        }
        Choice::Nothing(why) => warning = Some(why),
    }
    config.base_url.clone_from(&prov.base_url);
    config.control_url.clone_from(&prov.control_url);
    config.headers = super::providers::headers(prov);
    config.http = super::providers::http_settings(prov)?;
    config.clock = clock;
    let provider =
        Bedrock::new(config, transport).map_err(|e| format!("provider {name:?}: {e}"))?;
    Ok((Arc::new(provider), warning))
}

/// The entry names its own key variables: no silent fallback to another source then.
fn env_keys_named(prov: &ProviderToml) -> bool {
    prov.access_key_id_env.is_some() || prov.secret_access_key_env.is_some()
}

/// `profile` of the shared credentials file, read now (its errors name the file and the
/// profile, never a value) and re-read by the provider when the file changes.
fn from_profile(name: &str, profile: &str, env: &Env<'_>) -> Result<Arc<ProfileFile>, String> {
    let path = env
        .get("AWS_SHARED_CREDENTIALS_FILE")
        .or_else(|| env.get("HOME").map(|home| format!("{home}/.aws/credentials")))
        .ok_or_else(|| {
            format!("provider {name:?}: profile {profile:?}: no credentials file (neither AWS_SHARED_CREDENTIALS_FILE nor HOME is set)")
        })?;
    let file = ProfileFile::new(path, profile, DEFAULT_RECHECK);
    file.read_now().map_err(|e| match e {
        FileError::Unreadable { .. } => format!("provider {name:?}: profile {profile:?}: {e}"),
        FileError::Profile { .. } => format!("provider {name:?}: {e}"),
    })?;
    Ok(Arc::new(file))
}

#[cfg(test)]
mod tests;
