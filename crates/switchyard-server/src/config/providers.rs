//! Building vendor adapters from `[[providers]]` entries.
//!
//! Owns the mapping from a provider's TOML to the library's adapter configs. The key (if
//! any) was resolved by `config::build` from the env var the entry names, and goes to this
//! provider only. One [`Transport`] (connection pool) serves every provider.

use std::sync::Arc;

use switchyard::clock::Clock;
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::gemini::{Gemini, GeminiConfig};
use switchyard::provider::http::{HttpSettings, Transport, DEFAULT_CONNECT_TIMEOUT};
use switchyard::provider::openai::responses::OpenAiResponses;
use switchyard::provider::openai::{OpenAi, OpenAiConfig, ToolCallIds};
use switchyard::provider::secret::Secret;
use switchyard::Provider;

use super::{duration, ProviderToml};

/// An HTTP adapter for a validated, non-simulated provider entry.
///
/// # Errors
/// When the adapter cannot be constructed (bad base URL or header).
pub fn remote(
    prov: &ProviderToml,
    key: Option<Secret>,
    transport: &Transport,
    clock: Clock,
) -> Result<Arc<dyn Provider>, String> {
    let http = http_settings(prov)?;
    let model = prov.model.clone().unwrap_or_default();
    let at = |e: &dyn std::fmt::Display| format!("provider {:?}: {e}", prov.name);
    match prov.kind.as_str() {
        "openai" => {
            let mut cfg = OpenAiConfig::new(model);
            if let Some(url) = &prov.base_url {
                cfg = cfg.base_url(url.clone());
            }
            cfg.api_key = key;
            cfg.use_max_tokens = prov.use_max_tokens.unwrap_or(false);
            cfg.stream_usage = prov.stream_usage.unwrap_or(true);
            if prov.tool_call_ids.as_deref() == Some("alnum9") {
                cfg.tool_call_ids = ToolCallIds::Alnum9;
            }
            cfg.headers = headers(prov);
            cfg.http = http;
            cfg.clock = clock;
            if prov.api.as_deref() == Some("responses") {
                let p = OpenAiResponses::new(cfg, transport).map_err(|e| at(&e))?;
                return Ok(Arc::new(p));
            }
            Ok(Arc::new(OpenAi::new(cfg, transport).map_err(|e| at(&e))?))
        }
        "anthropic" => {
            let mut cfg = AnthropicConfig::new(model);
            if let Some(url) = &prov.base_url {
                cfg = cfg.base_url(url.clone());
            }
            if let Some(n) = prov.default_max_tokens {
                cfg = cfg.default_max_tokens(n);
            }
            cfg.structured_outputs = prov.structured_outputs;
            cfg.api_key = key;
            cfg.headers = headers(prov);
            cfg.http = http;
            cfg.clock = clock;
            Ok(Arc::new(
                Anthropic::new(cfg, transport).map_err(|e| at(&e))?,
            ))
        }
        "gemini" => {
            let mut cfg = GeminiConfig::new(model);
            if let Some(url) = &prov.base_url {
                cfg = cfg.base_url(url.clone());
            }
            cfg.api_key = key;
            cfg.headers = headers(prov);
            cfg.http = http;
            cfg.clock = clock;
            Ok(Arc::new(Gemini::new(cfg, transport).map_err(|e| at(&e))?))
        }
        other => Err(format!(
            "provider {:?}: kind {other:?} has no HTTP adapter",
            prov.name
        )),
    }
}

/// The provider's HTTP settings: its `connect_timeout` (the default when unset).
pub(super) fn http_settings(prov: &ProviderToml) -> Result<HttpSettings, String> {
    Ok(HttpSettings {
        connect_timeout: prov
            .connect_timeout
            .as_deref()
            .map_or(Ok(DEFAULT_CONNECT_TIMEOUT), duration)?,
        ..HttpSettings::default()
    })
}

/// The provider's extra headers, in order.
pub(super) fn headers(prov: &ProviderToml) -> Vec<(String, String)> {
    prov.headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
