//! Which API each provider and route serves (`serves` on a provider, `api` on a route).
//!
//! A provider serves chat unless it says otherwise, or unless its model is an embeddings
//! model in the shipped price table (`"api": "embeddings"` there) or, on `vertex`, one of
//! Google's text embedding models by name (`text-embedding-005`, billed per character,
//! has no per-token price), which then serves embeddings. A route serves one API: its
//! `api`, else the one its providers share (chat when they share both). A route whose
//! providers share none, or a provider that does not serve its route's API, is a config
//! error naming both; so is `embeddings` on a vendor without an embeddings API
//! (Anthropic, and Claude on Vertex AI).

use switchyard::provider::vertex;
use switchyard::{Api, PriceTable};

use super::{Config, Problems, ProviderToml, RouteToml};

/// The API names a config may use.
const NAMES: &str = "chat, embeddings";

fn parse(name: &str) -> Option<Api> {
    match name {
        "chat" => Some(Api::Chat),
        "embeddings" => Some(Api::Embeddings),
        _ => None,
    }
}

/// What `prov` serves: its `serves` (unknown names dropped: validation reports them), else
/// the default for its model.
#[must_use]
pub fn serves(prov: &ProviderToml) -> Vec<Api> {
    match &prov.serves {
        Some(names) => names.iter().filter_map(|n| parse(n)).collect(),
        None => {
            let model = prov.model.as_deref().unwrap_or_default();
            let embeddings = PriceTable::builtin()
                .lookup(model)
                .is_some_and(|e| e.embeddings)
                || (prov.kind == "vertex" && vertex::embed::is_embeddings_model(model));
            vec![if embeddings {
                Api::Embeddings
            } else {
                Api::Chat
            }]
        }
    }
}

/// A `vertex` provider of Claude: publisher `anthropic`, or none and a `claude-*` model
/// (the library's default, `VertexConfig::publisher`).
fn vertex_claude(prov: &ProviderToml) -> bool {
    let claude = prov
        .model
        .as_deref()
        .is_some_and(|m| m.starts_with("claude-"));
    prov.kind == "vertex"
        && match prov.publisher.as_deref() {
            Some(publisher) => publisher == "anthropic",
            None => claude,
        }
}

/// The API route `r` serves.
///
/// # Errors
/// An unknown `api`, or providers that share no API (what is wrong, for the route).
pub fn route_api(config: &Config, r: &RouteToml) -> Result<Api, String> {
    if let Some(name) = &r.api {
        return parse(name).ok_or_else(|| format!("{name:?} is not one of {NAMES}"));
    }
    let providers: Vec<(&str, Vec<Api>)> = (r.providers.iter())
        .filter_map(|n| config.providers.iter().find(|p| &p.name == n))
        .map(|p| (p.name.as_str(), serves(p)))
        .collect();
    let shared = |api: Api| providers.iter().all(|(_, s)| s.contains(&api));
    if shared(Api::Chat) {
        return Ok(Api::Chat);
    }
    if shared(Api::Embeddings) {
        return Ok(Api::Embeddings);
    }
    let list = |api: Api| {
        let names: Vec<String> = (providers.iter())
            .filter(|(_, s)| s == &[api])
            .map(|(n, _)| format!("{n:?}"))
            .collect();
        names.join(", ")
    };
    Err(format!(
        "route {:?} mixes APIs: {} serve chat, {} serve embeddings; a route serves one API",
        r.name,
        list(Api::Chat),
        list(Api::Embeddings)
    ))
}

/// Every problem with `serves` and `api`, with paths.
pub(super) fn validate(config: &Config, p: &mut Problems) {
    for (i, prov) in config.providers.iter().enumerate() {
        let at = format!("providers[{i}].serves");
        let Some(names) = &prov.serves else { continue };
        if names.is_empty() {
            p.add(&at, format!("must name at least one of {NAMES}"));
        }
        for (j, name) in names.iter().enumerate() {
            match parse(name) {
                None => p.add(
                    format!("{at}[{j}]"),
                    format!("{name:?} is not one of {NAMES}"),
                ),
                Some(Api::Embeddings) if prov.kind == "anthropic" => p.add(
                    format!("{at}[{j}]"),
                    "anthropic providers do not serve embeddings (Anthropic has no embeddings API)",
                ),
                Some(Api::Embeddings) if vertex_claude(prov) => p.add(
                    format!("{at}[{j}]"),
                    "vertex serves embeddings on Google's models only (publisher \"google\"); Claude has no embeddings API",
                ),
                Some(_) => {}
            }
        }
    }
    for (i, prov) in config.providers.iter().enumerate() {
        let completion =
            (prov.health_check.as_ref()).is_some_and(|h| h.probe.as_deref() == Some("completion"));
        if completion && !serves(prov).contains(&Api::Chat) {
            p.add(
                format!("providers[{i}].health_check.probe"),
                "a completion check needs a provider that serves chat; use \"listing\"",
            );
        }
    }
    for (i, r) in config.routes.iter().enumerate() {
        let at = format!("routes[{i}]");
        let api = match route_api(config, r) {
            Ok(api) => api,
            Err(e) if r.api.is_some() => {
                p.add(format!("{at}.api"), e);
                continue;
            }
            Err(e) => {
                p.add(at, e);
                continue;
            }
        };
        for (j, name) in r.providers.iter().enumerate() {
            let Some(prov) = config.providers.iter().find(|p| &p.name == name) else {
                continue;
            };
            if !serves(prov).contains(&api) {
                p.add(
                    format!("{at}.providers[{j}]"),
                    format!(
                        "provider {name:?} does not serve {} (route {:?} does); add it to the provider's serves",
                        api.label(),
                        r.name
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build_gateway, parse, Wiring};
    use switchyard::Api;

    const PROVIDERS: &str = r#"
        [[providers]]
        name = "gpt"
        kind = "openai"
        model = "gpt-4o-mini"

        [[providers]]
        name = "small"
        kind = "openai"
        model = "text-embedding-3-small"

        [[providers]]
        name = "local"
        kind = "openai"
        model = "nomic-embed-text"
        base_url = "http://127.0.0.1:11434/v1"
    "#;

    fn problems(routes: &str, extra: &str) -> Vec<String> {
        match parse(&format!("{PROVIDERS}{extra}{routes}"), "t.toml") {
            Ok(_) => Vec::new(),
            Err(e) => e.problems,
        }
    }

    #[test]
    fn a_route_serves_what_its_providers_serve() {
        let text = format!(
            "{PROVIDERS}{}",
            r#"
            [[routes]]
            name = "chat"
            providers = ["gpt"]

            [[routes]]
            name = "vectors"
            providers = ["small"]
        "#
        );
        let config = parse(&text, "t.toml").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        assert_eq!(built.gateway.route("chat").unwrap().api, Api::Chat);
        assert_eq!(built.gateway.route("vectors").unwrap().api, Api::Embeddings);
    }

    #[tokio::test]
    async fn the_embedded_default_serves_embeddings_without_keys() {
        let config = parse(super::super::EMBEDDED_DEFAULT, "embedded default").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        let gw = built.gateway;
        assert_eq!(gw.route("embeddings").unwrap().api, Api::Embeddings);
        assert_eq!(gw.route("default").unwrap().api, Api::Chat);
        let req = switchyard::EmbeddingRequest::texts(&["a", "b", "a"]);
        let resp = gw.embed("embeddings", &req).await.unwrap();
        assert_eq!(resp.vectors.len(), 3);
        assert_eq!(
            resp.vectors[0], resp.vectors[2],
            "equal inputs, equal vectors"
        );
        assert_ne!(resp.vectors[0], resp.vectors[1]);
        assert_eq!(resp.vectors[0].len(), 8);
        let wide = switchyard::EmbeddingRequest::texts(&["a"]).dimensions(4096);
        let err = gw.embed("embeddings", &wide).await.unwrap_err();
        assert!(err.to_string().contains("at most 3072 dimensions"), "{err}");
    }

    #[test]
    fn a_route_mixing_apis_is_refused_by_name() {
        let p = problems(
            r#"
            [[routes]]
            name = "mixed"
            providers = ["gpt", "small"]
        "#,
            "",
        );
        assert_eq!(
            p,
            [
                r#"routes[0]: route "mixed" mixes APIs: "gpt" serve chat, "small" serve embeddings; a route serves one API"#
            ]
        );
    }

    #[test]
    fn an_unknown_embeddings_model_needs_serves() {
        // not in the price table: chat by default, so an embeddings route names it
        let p = problems(
            r#"
            [[routes]]
            name = "vectors"
            api = "embeddings"
            providers = ["small", "local"]
        "#,
            "",
        );
        assert_eq!(
            p,
            [
                r#"routes[0].providers[1]: provider "local" does not serve embeddings (route "vectors" does); add it to the provider's serves"#
            ]
        );
        let p = problems(
            r#"
            [[routes]]
            name = "vectors"
            api = "embeddings"
            providers = ["small", "both"]
        "#,
            r#"
            [[providers]]
            name = "both"
            kind = "openai"
            model = "nomic-embed-text"
            base_url = "http://127.0.0.1:11434/v1"
            serves = ["chat", "embeddings"]
        "#,
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn vertex_embeddings_models_serve_embeddings_and_claude_on_vertex_does_not() {
        let vertex = r#"
            [[providers]]
            name = "v-gemini"
            kind = "vertex"
            project = "acme"
            location = "us-central1"
            model = "gemini-embedding-001"

            [[providers]]
            name = "v-text"
            kind = "vertex"
            project = "acme"
            location = "global"
            model = "text-embedding-005"

            [[providers]]
            name = "v-chat"
            kind = "vertex"
            project = "acme"
            location = "us-central1"
            model = "gemini-2.5-flash"
        "#;
        let text = format!(
            "{PROVIDERS}{vertex}{}",
            r#"
            [[routes]]
            name = "vectors"
            providers = ["v-gemini", "v-text", "small"]

            [[routes]]
            name = "chat"
            providers = ["v-chat"]
        "#
        );
        let config = parse(&text, "t.toml").unwrap();
        let built = build_gateway(&config, &|_| None, false, Wiring::default()).unwrap();
        assert_eq!(built.gateway.route("vectors").unwrap().api, Api::Embeddings);
        assert_eq!(built.gateway.route("chat").unwrap().api, Api::Chat);

        let p = problems(
            r#"
            [[routes]]
            name = "r"
            providers = ["gpt"]
        "#,
            r#"
            [[providers]]
            name = "v-claude"
            kind = "vertex"
            project = "acme"
            location = "us-east5"
            model = "claude-sonnet-4@20250514"
            serves = ["embeddings"]

            [[providers]]
            name = "v-google"
            kind = "vertex"
            project = "acme"
            location = "us-east5"
            model = "gemini-2.5-flash"
            serves = ["chat", "embeddings"]
        "#,
        );
        assert_eq!(
            p,
            [
                r#"providers[3].serves[0]: vertex serves embeddings on Google's models only (publisher "google"); Claude has no embeddings API"#
            ]
        );
    }

    #[test]
    fn bad_names_and_anthropic_embeddings_are_refused() {
        let p = problems(
            r#"
            [[routes]]
            name = "r"
            api = "vectors"
            providers = ["gpt"]
        "#,
            r#"
            [[providers]]
            name = "claude"
            kind = "anthropic"
            model = "claude-sonnet-4-5"
            serves = ["embeddings", "images"]

            [[providers]]
            name = "none"
            kind = "openai"
            model = "m"
            base_url = "http://127.0.0.1:1/v1"
            serves = []
        "#,
        );
        let p2 = problems(
            "",
            r#"
            [[providers]]
            name = "vectors-checked"
            kind = "openai"
            model = "text-embedding-3-large"
            health_check = { probe = "completion" }

            [[routes]]
            name = "r"
            providers = ["gpt"]
        "#,
        );
        assert_eq!(
            p2,
            [
                r#"providers[3].health_check.probe: a completion check needs a provider that serves chat; use "listing""#
            ]
        );
        let want = [
            "providers[3].serves[0]: anthropic providers do not serve embeddings (Anthropic has no embeddings API)",
            r#"providers[3].serves[1]: "images" is not one of chat, embeddings"#,
            "providers[4].serves: must name at least one of chat, embeddings",
            r#"routes[0].api: "vectors" is not one of chat, embeddings"#,
        ];
        for w in want {
            assert!(p.iter().any(|l| l == w), "missing {w:?} in {p:#?}");
        }
    }
}
