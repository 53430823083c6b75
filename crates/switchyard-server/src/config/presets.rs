//! Presets for OpenAI-compatible vendors: `preset = "groq"` on a provider fills in what
//! that vendor needs — its `base_url`, the env var its key is conventionally in, and the
//! quirks where it differs from OpenAI — so an entry needs only a name and a model.
//! Anything the entry sets itself wins. The facts per vendor (and where they come from)
//! are in docs/presets.md; each quirk is tested against the upstream body
//! (config/tests.rs).

use super::ProviderToml;

/// One vendor's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The `preset` value.
    pub name: &'static str,
    /// The API root.
    pub base_url: &'static str,
    /// The env var holding the key; `None` for local servers that need none.
    pub key_env: Option<&'static str>,
    /// Send `max_tokens` (the server does not take `max_completion_tokens`).
    pub use_max_tokens: bool,
    /// Send `stream_options.include_usage` (the server accepts it).
    pub stream_usage: bool,
    /// Tool-call ids must be nine alphanumerics (`tool_call_ids = "alnum9"`).
    pub alnum9_tool_call_ids: bool,
}

const fn preset(
    name: &'static str,
    base_url: &'static str,
    key_env: Option<&'static str>,
) -> Preset {
    Preset {
        name,
        base_url,
        key_env,
        use_max_tokens: true,
        stream_usage: true,
        alnum9_tool_call_ids: false,
    }
}

/// Every preset, by name.
pub const PRESETS: [Preset; 9] = [
    // Groq takes `max_completion_tokens`; a stream's usage also arrives under `x_groq.usage`
    // (read by the OpenAI codec whatever the preset).
    Preset {
        use_max_tokens: false,
        ..preset(
            "groq",
            "https://api.groq.com/openai/v1",
            Some("GROQ_API_KEY"),
        )
    },
    preset(
        "together",
        "https://api.together.xyz/v1",
        Some("TOGETHER_API_KEY"),
    ),
    preset(
        "fireworks",
        "https://api.fireworks.ai/inference/v1",
        Some("FIREWORKS_API_KEY"),
    ),
    // DeepSeek's reasoner streams `reasoning_content`, which the codec surfaces as thinking.
    preset(
        "deepseek",
        "https://api.deepseek.com",
        Some("DEEPSEEK_API_KEY"),
    ),
    // Mistral reports a stream's usage on its last chunk unasked, and refuses any tool-call
    // id that is not nine alphanumerics (ids from other vendors in history are rewritten).
    Preset {
        stream_usage: false,
        alnum9_tool_call_ids: true,
        ..preset(
            "mistral",
            "https://api.mistral.ai/v1",
            Some("MISTRAL_API_KEY"),
        )
    },
    preset("xai", "https://api.x.ai/v1", Some("XAI_API_KEY")),
    preset(
        "openrouter",
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_API_KEY"),
    ),
    preset("ollama", "http://localhost:11434/v1", None),
    preset("vllm", "http://localhost:8000/v1", None),
];

/// The preset called `name`.
#[must_use]
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Fill each provider's unset fields from its preset (unknown presets are left for
/// validation to report). A provider with a preset and no `kind` is an `openai` one.
pub fn apply(providers: &mut [ProviderToml]) {
    for prov in providers {
        let Some(p) = prov.preset.as_deref().and_then(find) else {
            continue;
        };
        if prov.kind.is_empty() {
            "openai".clone_into(&mut prov.kind);
        }
        if prov.kind != "openai" {
            continue;
        }
        prov.base_url.get_or_insert_with(|| p.base_url.to_owned());
        if prov.api_key_env.is_none() {
            prov.api_key_env = p.key_env.map(str::to_owned);
        }
        prov.use_max_tokens.get_or_insert(p.use_max_tokens);
        prov.stream_usage.get_or_insert(p.stream_usage);
        if p.alnum9_tool_call_ids && prov.tool_call_ids.is_none() {
            prov.tool_call_ids = Some("alnum9".to_owned());
        }
    }
}

/// The names, for error messages.
#[must_use]
pub fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}
