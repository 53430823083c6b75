//! The `bedrock` kind (AWS Bedrock): its fields' checks (`validate`, with paths) and
//! building its provider from the environment (`build`).
//!
//! Credentials, in this order:
//! - `api_key_env`: a Bedrock API key, sent as a bearer token (no signature);
//! - `profile`: that profile's keys in the shared credentials file
//!   (`AWS_SHARED_CREDENTIALS_FILE`, else `$HOME/.aws/credentials`), read at start and
//!   re-read when the file changes (at most every 10 s: temporary credentials a tool
//!   rewrites are picked up); at start, a file that cannot be read, a profile not in it, or
//!   one without both keys is an error (`check` fails on it, naming the file and profile,
//!   never a value);
//! - else the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and the optional
//!   `AWS_SESSION_TOKEN` (each name overridable: `access_key_id_env`, …); when neither key
//!   is set, the profile `AWS_PROFILE` names (else `default`) is taken from the credentials
//!   file if it is there, as the AWS CLI does; else a warning (calls fail as auth errors).
//!
//! Keys from the environment are read when the provider is built: temporary ones (a
//! session token) that expire need a restart with fresh ones, or a profile.

use std::sync::Arc;

use switchyard::clock::Clock;
use switchyard::provider::bedrock::profile::{FileError, ProfileFile, DEFAULT_RECHECK};
use switchyard::provider::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use switchyard::provider::http::{HttpSettings, Transport, DEFAULT_CONNECT_TIMEOUT};
use switchyard::provider::secret::Secret;
use switchyard::Provider;

use super::{duration, KeyLookup, Problems, ProviderToml};

/// The environment variables the keys are read from by default.
pub const DEFAULT_ACCESS_KEY_ID_ENV: &str = "AWS_ACCESS_KEY_ID";
/// See [`DEFAULT_ACCESS_KEY_ID_ENV`].
pub const DEFAULT_SECRET_ACCESS_KEY_ENV: &str = "AWS_SECRET_ACCESS_KEY";
/// See [`DEFAULT_ACCESS_KEY_ID_ENV`].
pub const DEFAULT_SESSION_TOKEN_ENV: &str = "AWS_SESSION_TOKEN";

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
    let env_names = [
        ("access_key_id_env", &prov.access_key_id_env),
        ("secret_access_key_env", &prov.secret_access_key_env),
        ("session_token_env", &prov.session_token_env),
    ];
    for (field, value) in env_names {
        if let Some(env) = value {
            if env.trim().is_empty() || env.contains('=') {
                p.add(
                    format!("{at}.{field}"),
                    "must be the NAME of an environment variable (never the secret itself)",
                );
            }
        }
    }
    if prov.profile.as_deref().is_some_and(|n| n.trim().is_empty()) {
        p.add(format!("{at}.profile"), "must name a profile");
    }
    let env_keys = prov.access_key_id_env.is_some()
        || prov.secret_access_key_env.is_some()
        || prov.session_token_env.is_some();
    let ways = [prov.api_key_env.is_some(), prov.profile.is_some(), env_keys];
    if ways.iter().filter(|w| **w).count() > 1 {
        p.add(
            at,
            "give one way to authenticate: api_key_env (a Bedrock API key), profile, or the *_env key names",
        );
    }
}

/// The provider of a valid `bedrock` entry, and a warning when it has no credentials.
///
/// # Errors
/// A credentials file that cannot be read, a profile not in it or without both keys, or
/// a provider that cannot be built.
pub(super) fn build(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<(Arc<dyn Provider>, Option<String>), String> {
    let name = &prov.name;
    let from_env = |var: &str| env(var).filter(|v| !v.is_empty());
    let mut config = BedrockConfig::new(
        prov.region.clone().unwrap_or_default(),
        prov.model.clone().unwrap_or_default(),
    );
    let mut warning = None;
    if let Some(var) = &prov.api_key_env {
        match from_env(var) {
            Some(key) => config.api_key = Some(Secret::new(key)),
            None => {
                warning = Some(format!("provider {name:?}: environment variable {var} is not set; calls will fail with auth errors"));
            }
        }
    } else if let Some(profile) = &prov.profile {
        config.profile_file = Some(from_profile(name, profile, env)?);
    } else {
        let id_var = prov
            .access_key_id_env
            .as_deref()
            .unwrap_or(DEFAULT_ACCESS_KEY_ID_ENV);
        let secret_var = prov
            .secret_access_key_env
            .as_deref()
            .unwrap_or(DEFAULT_SECRET_ACCESS_KEY_ENV);
        let token_var = prov
            .session_token_env
            .as_deref()
            .unwrap_or(DEFAULT_SESSION_TOKEN_ENV);
        match (from_env(id_var), from_env(secret_var)) {
            (Some(id), Some(secret)) => {
                config.credentials = Some(AwsCredentials {
                    access_key_id: id,
                    secret_access_key: Secret::new(secret),
                    session_token: from_env(token_var).map(Secret::new),
                });
            }
            (None, None) => {
                // as the AWS CLI: the profile AWS_PROFILE names, else `default`, when the
                // credentials file is there and has it
                let profile = from_env("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
                match from_profile(name, &profile, env) {
                    Ok(file) if !env_keys_named(prov) => {
                        config.profile_file = Some(file);
                    }
                    _ => {
                        warning = Some(format!("provider {name:?}: no AWS credentials: environment variables {id_var} and {secret_var} are not set (and no profile {profile:?} in the shared credentials file); calls will fail with auth errors"));
                    }
                }
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(format!("provider {name:?}: only one of {id_var} and {secret_var} is set: set both (or neither, to use a profile)"));
            }
        }
    }
    config.base_url.clone_from(&prov.base_url);
    config.control_url.clone_from(&prov.control_url);
    config.headers = super::providers::headers(prov);
    config.http = HttpSettings {
        connect_timeout: prov
            .connect_timeout
            .as_deref()
            .map_or(Ok(DEFAULT_CONNECT_TIMEOUT), duration)?,
        ..HttpSettings::default()
    };
    config.clock = clock;
    let provider =
        Bedrock::new(config, transport).map_err(|e| format!("provider {name:?}: {e}"))?;
    Ok((Arc::new(provider), warning))
}

/// The entry names its own key variables: no silent fallback to a profile then.
fn env_keys_named(prov: &ProviderToml) -> bool {
    prov.access_key_id_env.is_some() || prov.secret_access_key_env.is_some()
}

/// `profile` of the shared credentials file, read now (its errors name the file and the
/// profile, never a value) and re-read by the provider when the file changes.
fn from_profile(name: &str, profile: &str, env: KeyLookup<'_>) -> Result<Arc<ProfileFile>, String> {
    let path = env("AWS_SHARED_CREDENTIALS_FILE")
        .filter(|p| !p.is_empty())
        .or_else(|| env("HOME").map(|home| format!("{home}/.aws/credentials")))
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
mod tests {
    use std::collections::HashMap;

    use super::super::{build_gateway, parse, Wiring};

    fn problems(providers: &str) -> Vec<String> {
        let text = format!("{providers}\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n");
        match parse(&text, "test.toml") {
            Ok(_) => Vec::new(),
            Err(e) => e.problems,
        }
    }

    #[test]
    fn bedrock_fields_are_checked_with_paths() {
        let p = problems(
            "[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nmodel = \"amazon.nova-pro-v1:0\"\n",
        );
        assert_eq!(
            p,
            ["providers[0].region: is required for kind \"bedrock\" (e.g. region = \"us-east-1\")"]
        );
        let p = problems("[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"US East\"\nprofile = \"work\"\napi_key_env = \"K=v\"\ncontrol_url = \"bedrock.local\"\nproject = \"p\"\n");
        assert_eq!(
            p,
            [
                "providers[0].api_key_env: must be the NAME of an environment variable (never the key itself)",
                "providers[0].project: applies to kind \"vertex\" only",
                "providers[0].region: \"US East\" is not an AWS region (like \"us-east-1\")",
                "providers[0].control_url: \"bedrock.local\" must start with https:// (or http://)",
                "providers[0]: give one way to authenticate: api_key_env (a Bedrock API key), profile, or the *_env key names",
                "providers[0].model: is required for kind \"bedrock\"",
            ]
        );
        let p = problems("[[providers]]\nname = \"c\"\nkind = \"openai\"\nmodel = \"m\"\nregion = \"us-east-1\"\n");
        assert_eq!(p, ["providers[0].region: applies to kind \"bedrock\" only"]);
    }

    const BEDROCK: &str = "[[providers]]\nname = \"c\"\nkind = \"bedrock\"\nregion = \"eu-central-1\"\nmodel = \"eu.anthropic.claude-sonnet-4-5-20250929-v1:0\"\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n";

    fn build(text: &str, env: &HashMap<&str, String>) -> Result<Vec<String>, String> {
        let config = parse(text, "test.toml").unwrap();
        let built = build_gateway(&config, &|k| env.get(k).cloned(), false, Wiring::default())?;
        let kinds: Vec<_> = built
            .gateway
            .providers()
            .iter()
            .map(|p| (p.provider.kind(), p.provider.model().to_owned()))
            .collect();
        assert_eq!(
            kinds,
            [(
                "bedrock",
                "eu.anthropic.claude-sonnet-4-5-20250929-v1:0".to_owned()
            )]
        );
        Ok(built.warnings)
    }

    fn temp(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("sy-bedrock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    const FILE: &str = "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret-value\n\n[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = work-secret-value\n";

    #[test]
    fn only_claude_models_on_bedrock_take_reasoning_by_default() {
        let text = |kind: &str, model: &str, extra: &str| {
            format!("[[providers]]\nname = \"c\"\nkind = \"{kind}\"\nregion = \"us-east-1\"\nmodel = \"{model}\"\n{extra}\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n")
        };
        let reasoning = |t: String| {
            let config = parse(&t, "test.toml").unwrap();
            let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
            built.gateway.reasoning_of("c").unwrap()
        };
        assert!(!reasoning(text("bedrock", "my-imported-llama", "")));
        assert!(reasoning(text(
            "bedrock",
            "my-imported-llama",
            "reasoning = true"
        )));
        assert!(reasoning(text(
            "bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ""
        )));
    }

    #[test]
    fn credentials_come_from_the_environment_or_a_profile() {
        // nothing at all: a warning naming the variables
        let warnings = build(BEDROCK, &HashMap::new()).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"),
            "{warnings:?}"
        );
        // the environment's keys
        let env = HashMap::from([
            ("AWS_ACCESS_KEY_ID", "AKID".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "s".to_owned()),
        ]);
        assert!(build(BEDROCK, &env).unwrap().is_empty());
        // half of them is an error
        let half = HashMap::from([("AWS_ACCESS_KEY_ID", "AKID".to_owned())]);
        let e = build(BEDROCK, &half).unwrap_err();
        assert!(
            e.contains("only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            "{e}"
        );
        // no keys: the default profile of the credentials file, as the AWS CLI
        let file = temp("credentials", FILE);
        let env = HashMap::from([("AWS_SHARED_CREDENTIALS_FILE", file.clone())]);
        assert!(build(BEDROCK, &env).unwrap().is_empty());
        // a named profile
        let named = BEDROCK.replace("model =", "profile = \"work\"\nmodel =");
        assert!(build(&named, &env).unwrap().is_empty());
        // a profile not in the file, or a file that is not there: errors, no secrets
        let other = BEDROCK.replace("model =", "profile = \"prod\"\nmodel =");
        let e = build(&other, &env).unwrap_err();
        assert_eq!(
            e,
            format!("provider \"c\": credentials file {file}: profile \"prod\" is not in the credentials file")
        );
        let gone = HashMap::from([("HOME", "/nonexistent-home".to_owned())]);
        let e = build(&named, &gone).unwrap_err();
        assert!(
            e.starts_with("provider \"c\": profile \"work\": credentials file /nonexistent-home/.aws/credentials: "),
            "{e}"
        );
        assert!(!e.contains("secret-value"));
        // a Bedrock API key
        let keyed = BEDROCK.replace("model =", "api_key_env = \"BEDROCK_KEY\"\nmodel =");
        let warnings = build(&keyed, &HashMap::new()).unwrap();
        assert!(
            warnings[0].contains("BEDROCK_KEY is not set"),
            "{warnings:?}"
        );
        let env = HashMap::from([("BEDROCK_KEY", "k".to_owned())]);
        assert!(build(&keyed, &env).unwrap().is_empty());
    }
}
