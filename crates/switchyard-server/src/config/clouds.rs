//! The cloud kinds, `azure` (Azure OpenAI) and `vertex` (Google Vertex AI): their fields'
//! checks (`validate`, with paths) and building their providers from the environment
//! (`build`); which field belongs to which cloud kind (`bedrock`'s too: its own checks and
//! build are `bedrock/`). The other kinds are `providers.rs`.
//!
//! What is read from the environment, and what happens when it is missing:
//! - `azure`: the key (`api_key_env`) or an Entra token (`token_env`): unset is a warning
//!   (calls fail as auth errors), as for every kind; `token_file` is read when calls are
//!   made (and re-read when it changes), so a file not there yet is a warning.
//! - `vertex`: the service-account key file's path, from `credentials_env` (default
//!   `GOOGLE_APPLICATION_CREDENTIALS`): unset is a warning; set but naming a file that
//!   cannot be read or is not a service-account key is an error (`check` fails on it).

use std::path::Path;
use std::sync::Arc;

use switchyard::clock::Clock;
use switchyard::provider::azure::entra::{TokenFile, DEFAULT_RECHECK};
use switchyard::provider::azure::{Azure, AzureAuth, AzureConfig, AzureResponses};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::provider::token::TokenSource;
use switchyard::provider::vertex::auth::{
    ServiceAccount, ServiceAccountTokens, CLOUD_PLATFORM_SCOPE,
};
use switchyard::provider::vertex::{Vertex, VertexConfig};
use switchyard::Provider;

use super::{KeyLookup, Problems, ProviderToml};

/// The env var naming the service-account key file when `credentials_env` is not set.
pub const DEFAULT_CREDENTIALS_ENV: &str = "GOOGLE_APPLICATION_CREDENTIALS";

/// The fields of one kind only, and whether each is set.
fn cloud_fields(prov: &ProviderToml) -> [(&'static str, &'static str, bool); 16] {
    [
        ("endpoint", "azure", prov.endpoint.is_some()),
        ("deployment", "azure", prov.deployment.is_some()),
        ("api_version", "azure", prov.api_version.is_some()),
        ("token_env", "azure", prov.token_env.is_some()),
        ("token_file", "azure", prov.token_file.is_some()),
        ("project", "vertex", prov.project.is_some()),
        ("location", "vertex", prov.location.is_some()),
        ("publisher", "vertex", prov.publisher.is_some()),
        ("credentials_env", "vertex", prov.credentials_env.is_some()),
        ("region", "bedrock", prov.region.is_some()),
        ("credentials", "bedrock", prov.credentials.is_some()),
        ("profile", "bedrock", prov.profile.is_some()),
        (
            "access_key_id_env",
            "bedrock",
            prov.access_key_id_env.is_some(),
        ),
        (
            "secret_access_key_env",
            "bedrock",
            prov.secret_access_key_env.is_some(),
        ),
        (
            "session_token_env",
            "bedrock",
            prov.session_token_env.is_some(),
        ),
        ("control_url", "bedrock", prov.control_url.is_some()),
    ]
}

/// The problems of a remote provider's cloud fields (every kind: a cloud field on the
/// wrong kind is one).
pub(super) fn validate(prov: &ProviderToml, at: &str, p: &mut Problems) {
    for (field, kind, set) in cloud_fields(prov) {
        if set && prov.kind != kind {
            p.add(
                format!("{at}.{field}"),
                format!("applies to kind {kind:?} only"),
            );
        }
    }
    let required = |p: &mut Problems, field: &str, value: &Option<String>, example: &str| {
        if value.as_deref().is_none_or(|v| v.trim().is_empty()) {
            p.add(
                format!("{at}.{field}"),
                format!(
                    "is required for kind {:?} (e.g. {field} = {example:?})",
                    prov.kind
                ),
            );
        }
    };
    let env_name = |p: &mut Problems, field: &str, value: &Option<String>| {
        if let Some(why) = value.as_deref().and_then(super::env_name_problem) {
            p.add(format!("{at}.{field}"), why);
        }
    };
    match prov.kind.as_str() {
        "azure" => {
            required(
                p,
                "endpoint",
                &prov.endpoint,
                "https://NAME.openai.azure.com",
            );
            required(p, "deployment", &prov.deployment, "gpt-4o");
            required(p, "api_version", &prov.api_version, "v1");
            if let Some(url) = &prov.endpoint {
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    p.add(
                        format!("{at}.endpoint"),
                        format!("{url:?} must start with https:// (or http://)"),
                    );
                }
            }
            if prov.model.is_some() {
                p.add(
                    format!("{at}.model"),
                    "does not apply to kind \"azure\": the deployment is what is called (set price for a deployment whose name is not a model id)",
                );
            }
            if prov.base_url.is_some() {
                p.add(
                    format!("{at}.base_url"),
                    "does not apply to kind \"azure\": use endpoint",
                );
            }
            let ways = [
                prov.api_key_env.is_some(),
                prov.token_env.is_some(),
                prov.token_file.is_some(),
            ];
            match ways.iter().filter(|w| **w).count() {
                0 => p.add(
                    at,
                    "kind \"azure\" needs a credential: api_key_env (an api-key), token_env or token_file (a Microsoft Entra ID token)",
                ),
                1 => {}
                _ => p.add(
                    at,
                    "give one of api_key_env, token_env and token_file, not several",
                ),
            }
            env_name(p, "token_env", &prov.token_env);
            if prov
                .token_file
                .as_deref()
                .is_some_and(|f| f.trim().is_empty())
            {
                p.add(format!("{at}.token_file"), "must be a file path");
            }
        }
        "vertex" => {
            required(p, "project", &prov.project, "my-project");
            required(p, "location", &prov.location, "us-central1");
            if let Some(publisher) = &prov.publisher {
                if !matches!(publisher.as_str(), "google" | "anthropic") {
                    p.add(
                        format!("{at}.publisher"),
                        format!(
                            "{publisher:?} is not \"google\" (Gemini) or \"anthropic\" (Claude)"
                        ),
                    );
                }
            }
            if prov.api_key_env.is_some() {
                p.add(
                    format!("{at}.api_key_env"),
                    "does not apply to kind \"vertex\": it authenticates with a service account (credentials_env)",
                );
            }
            env_name(p, "credentials_env", &prov.credentials_env);
        }
        "bedrock" => super::bedrock::validate(prov, at, p),
        _ => {}
    }
}

/// The provider of a valid `azure` or `vertex` entry, and a warning when its credential
/// is missing from the environment.
///
/// # Errors
/// The provider cannot be built (a malformed value the schema could not catch), or a
/// Vertex key file that cannot be read or is not a service-account key.
pub(super) fn build(
    prov: &ProviderToml,
    env: KeyLookup<'_>,
    transport: &Transport,
    clock: Clock,
) -> Result<(Arc<dyn Provider>, Option<String>), String> {
    let http = super::providers::http_settings(prov)?;
    let name = &prov.name;
    let at = |e: &dyn std::fmt::Display| format!("provider {name:?}: {e}");
    let unset = |var: &str| {
        format!("provider {name:?}: environment variable {var} is not set; calls will fail with auth errors")
    };
    let from_env = |var: &str| env(var).filter(|v| !v.is_empty());
    let mut warning = None;
    if prov.kind == "azure" {
        let auth = if let Some(var) = &prov.api_key_env {
            from_env(var).map_or_else(
                || {
                    warning = Some(unset(var));
                    AzureAuth::None
                },
                |k| AzureAuth::ApiKey(Secret::new(k)),
            )
        } else if let Some(var) = &prov.token_env {
            from_env(var).map_or_else(
                || {
                    warning = Some(unset(var));
                    AzureAuth::None
                },
                |t| AzureAuth::Token(Secret::new(t)),
            )
        } else if let Some(path) = &prov.token_file {
            let file = TokenFile::new(path, DEFAULT_RECHECK);
            if let Err(e) = file.read_now() {
                warning = Some(format!("provider {name:?}: token_file: {}; calls will fail with auth errors until it can be read", e.message));
            }
            AzureAuth::TokenFile(Arc::new(file))
        } else {
            AzureAuth::None
        };
        let config = AzureConfig {
            auth,
            use_max_tokens: prov.use_max_tokens.unwrap_or(false),
            headers: super::providers::headers(prov),
            http,
            clock,
            ..AzureConfig::new(
                prov.endpoint.clone().unwrap_or_default(),
                prov.deployment.clone().unwrap_or_default(),
                prov.api_version.clone().unwrap_or_default(),
            )
        };
        if prov.api.as_deref() == Some("responses") {
            let provider = AzureResponses::new(config, transport).map_err(|e| at(&e))?;
            return Ok((Arc::new(provider), warning));
        }
        let provider = Azure::new(config, transport).map_err(|e| at(&e))?;
        return Ok((Arc::new(provider), warning));
    }
    let var = prov
        .credentials_env
        .as_deref()
        .unwrap_or(DEFAULT_CREDENTIALS_ENV);
    let credentials = match from_env(var) {
        None => {
            warning = Some(unset(var));
            None
        }
        Some(file) => {
            let account = ServiceAccount::from_file(Path::new(&file)).map_err(|e| {
                format!("provider {name:?}: credentials_env {var}: service-account key file {e}")
            })?;
            let http_client = transport.client(http).map_err(|e| at(&e))?;
            let tokens =
                ServiceAccountTokens::new(account, CLOUD_PLATFORM_SCOPE, http_client, clock);
            Some(Arc::new(tokens) as Arc<dyn TokenSource>)
        }
    };
    let mut config = VertexConfig {
        publisher: prov.publisher.clone(),
        base_url: prov.base_url.clone(),
        credentials,
        headers: super::providers::headers(prov),
        http,
        clock,
        ..VertexConfig::new(
            prov.project.clone().unwrap_or_default(),
            prov.location.clone().unwrap_or_default(),
            prov.model.clone().unwrap_or_default(),
        )
    };
    if let Some(n) = prov.default_max_tokens {
        config.default_max_tokens = n;
    }
    config.structured_outputs = prov.structured_outputs.unwrap_or(false);
    let provider = Vertex::provider(config, transport).map_err(|e| at(&e))?;
    Ok((provider, warning))
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
    fn azure_fields_are_checked_with_paths() {
        let p = problems("[[providers]]\nname = \"c\"\nkind = \"azure\"\n");
        assert_eq!(
            p,
            [
                "providers[0].endpoint: is required for kind \"azure\" (e.g. endpoint = \"https://NAME.openai.azure.com\")",
                "providers[0].deployment: is required for kind \"azure\" (e.g. deployment = \"gpt-4o\")",
                "providers[0].api_version: is required for kind \"azure\" (e.g. api_version = \"v1\")",
                "providers[0]: kind \"azure\" needs a credential: api_key_env (an api-key), token_env or token_file (a Microsoft Entra ID token)",
            ]
        );
        let p = problems(
            "[[providers]]\nname = \"c\"\nkind = \"azure\"\nendpoint = \"res.openai.azure.com\"\ndeployment = \"d\"\napi_version = \"v1\"\napi_key_env = \"K\"\ntoken_file = \"/t\"\nproject = \"p\"\nmodel = \"gpt-4o\"\n",
        );
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(
            p.contains(&"providers[0].project: applies to kind \"vertex\" only".to_owned()),
            "{p:?}"
        );
        assert!(
            p.iter().any(|e| e.starts_with(
                "providers[0].endpoint: \"res.openai.azure.com\" must start with https://"
            )),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|e| e.starts_with("providers[0].model: does not apply")),
            "{p:?}"
        );
        assert!(
            p.contains(
                &"providers[0]: give one of api_key_env, token_env and token_file, not several"
                    .to_owned()
            ),
            "{p:?}"
        );
    }

    #[test]
    fn vertex_fields_are_checked_with_paths() {
        let p = problems("[[providers]]\nname = \"c\"\nkind = \"vertex\"\nmodel = \"gemini-2.5-flash\"\npublisher = \"meta\"\napi_key_env = \"K\"\ncredentials_env = \"A=b\"\ndeployment = \"d\"\n");
        assert_eq!(
            p,
            [
                "providers[0].deployment: applies to kind \"azure\" only",
                "providers[0].project: is required for kind \"vertex\" (e.g. project = \"my-project\")",
                "providers[0].location: is required for kind \"vertex\" (e.g. location = \"us-central1\")",
                "providers[0].publisher: \"meta\" is not \"google\" (Gemini) or \"anthropic\" (Claude)",
                "providers[0].api_key_env: does not apply to kind \"vertex\": it authenticates with a service account (credentials_env)",
                "providers[0].credentials_env: must be the NAME of an environment variable (never the secret itself)",
            ]
        );
    }

    const VERTEX: &str = "[[providers]]\nname = \"c\"\nkind = \"vertex\"\nproject = \"acme\"\nlocation = \"global\"\nmodel = \"claude-sonnet-4@20250514\"\ncredentials_env = \"SA_FILE\"\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n";

    /// The build's warnings and each provider's (kind, model).
    struct Built {
        warnings: Vec<String>,
        providers: Vec<(&'static str, String)>,
    }

    fn build(text: &str, env: &HashMap<&str, String>) -> Result<Built, String> {
        let config = parse(text, "test.toml").unwrap();
        let built = build_gateway(&config, &|k| env.get(k).cloned(), false, Wiring::default())?;
        let providers = built
            .gateway
            .providers()
            .iter()
            .map(|p| (p.provider.kind(), p.provider.model().to_owned()))
            .collect();
        Ok(Built {
            warnings: built.warnings,
            providers,
        })
    }

    fn temp(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("sy-clouds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    /// `check`'s view: a missing variable warns, a key file that cannot be read or is not
    /// a service-account key fails (naming the variable, never the key), a good one builds.
    #[test]
    fn vertex_credentials_are_resolved_and_validated() {
        let built = build(VERTEX, &HashMap::new()).unwrap();
        assert_eq!(
            built.warnings,
            ["provider \"c\": environment variable SA_FILE is not set; calls will fail with auth errors"]
        );
        let missing = HashMap::from([("SA_FILE", "/nonexistent/sa.json".to_owned())]);
        let e = build(VERTEX, &missing).err().unwrap();
        assert!(e.starts_with("provider \"c\": credentials_env SA_FILE: service-account key file /nonexistent/sa.json: "), "{e}");
        let pem =
            include_str!("../../../switchyard/tests/fixtures/vertex/TEST-ONLY-private-key.pem");
        let malformed = temp(
            "bad.json",
            &serde_json::json!({"type": "service_account", "private_key": pem}).to_string(),
        );
        let e = build(VERTEX, &HashMap::from([("SA_FILE", malformed)]))
            .err()
            .unwrap();
        assert!(e.ends_with("the key file has no \"client_email\""), "{e}");
        assert!(!e.contains("PRIVATE KEY"), "{e}");
        let good = temp("sa.json", &serde_json::json!({"type": "service_account", "private_key": pem,
            "client_email": "g@acme.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token"}).to_string());
        let built = build(VERTEX, &HashMap::from([("SA_FILE", good)])).unwrap();
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        assert_eq!(
            built.providers,
            [("vertex", "claude-sonnet-4@20250514".to_owned())]
        );
    }

    #[test]
    fn azure_credentials_are_resolved() {
        let text = "[[providers]]\nname = \"c\"\nkind = \"azure\"\nendpoint = \"https://res.openai.azure.com\"\ndeployment = \"gpt-4o-prod\"\napi_version = \"2024-10-21\"\napi_key_env = \"AZ_KEY\"\n[[routes]]\nname = \"r\"\nproviders = [\"c\"]\n";
        let built = build(text, &HashMap::new()).unwrap();
        assert_eq!(
            built.warnings,
            ["provider \"c\": environment variable AZ_KEY is not set; calls will fail with auth errors"]
        );
        let built = build(text, &HashMap::from([("AZ_KEY", "k".to_owned())])).unwrap();
        assert!(built.warnings.is_empty());
        assert_eq!(built.providers, [("azure", "gpt-4o-prod".to_owned())]);
        let file = text.replace(
            "api_key_env = \"AZ_KEY\"",
            "token_file = \"/nonexistent/token\"",
        );
        let built = build(&file, &HashMap::new()).unwrap();
        assert!(
            built.warnings[0]
                .starts_with("provider \"c\": token_file: Entra token file /nonexistent/token: "),
            "{:?}",
            built.warnings
        );
    }
}
