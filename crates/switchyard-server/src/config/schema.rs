//! The TOML schema, field for field. Durations stay strings here so that validation can
//! report every bad one at once. A `[[keys]]` entry is client access's own type
//! (`crate::access::keys::KeyToml`), re-exported here.

use std::collections::BTreeMap;

use serde::Deserialize;
use switchyard::cost::usd_per_mtok_to_micros;
use switchyard::error::BreakerEffect;
use switchyard::Price;

pub use crate::access::keys::KeyToml;

/// A whole config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[server]`.
    #[serde(default)]
    pub server: ServerToml,
    /// `[[providers]]`.
    #[serde(default)]
    pub providers: Vec<ProviderToml>,
    /// `[[routes]]`.
    #[serde(default)]
    pub routes: Vec<RouteToml>,
    /// `[[keys]]`: client keys (without any, only loopback listening is allowed).
    #[serde(default)]
    pub keys: Vec<KeyToml>,
    /// `[state]`.
    pub state: Option<StateToml>,
    /// `[responses]`: stored Responses API answers.
    pub responses: Option<ResponsesToml>,
    /// `[threads]`: Anthropic message threads the gateway holds.
    pub threads: Option<super::threads::ThreadsToml>,
    /// `[telemetry]`: log format, access log, trace export.
    pub telemetry: Option<super::telemetry::TelemetryToml>,
    /// `[cache]`: where the routes' cached answers are kept.
    pub cache: Option<super::cache::CacheToml>,
    /// `[database]`: keys, teams and spend in PostgreSQL.
    pub database: Option<super::database::DatabaseToml>,
}

/// `[responses]`: how long stored Responses API answers live and how large one may be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponsesToml {
    /// How long a stored response can be continued or fetched (default `"7d"`).
    pub store_ttl: Option<String>,
    /// The largest stored response (answer plus conversation, as JSON; default 8 MiB).
    pub max_stored_bytes: Option<usize>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerToml {
    /// Address to listen on (default `127.0.0.1:4000`).
    pub listen: Option<String>,
    /// Path of the JSON-lines request log (off when absent).
    pub request_log: Option<String>,
    /// Largest request body accepted (default 4 MiB).
    pub max_body_bytes: Option<usize>,
    /// Most JSON values (objects, arrays, strings, numbers, literals) one request may
    /// expand to: its body's and a stored conversation's it continues together; an
    /// embeddings request's token ids are not counted (default 100,000). More get 413.
    pub max_request_items: Option<usize>,
    /// Deepest nesting of objects and arrays in a request body or a stored conversation
    /// (default 64, at most 128). Deeper gets 400.
    pub max_request_depth: Option<usize>,
    /// Most bytes of a request body and the stored conversation its
    /// `previous_response_id` or thread `continue` brings in, together (default 16 MiB, at
    /// least `max_body_bytes`). More gets 413.
    pub max_expanded_bytes: Option<usize>,
    /// What a committed stream keeps of what it delivered, for a rescue (default 4 MiB);
    /// past it the stream is served on but not rescued. `0` turns stream rescue off.
    pub rescue_buffer_bytes: Option<usize>,
    /// How long in-flight requests may take to finish after SIGTERM (default `"10s"`).
    pub shutdown_grace: Option<String>,
    /// Runtime worker threads (default: one per available core). `1` runs everything on
    /// one thread with tokio's single-threaded scheduler.
    pub workers: Option<usize>,
    /// Browser origins (`http://localhost:3000`) besides the gateway's own whose requests
    /// are served, with CORS (default: none).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Longest wait for a request's head (request line and headers), counted from the
    /// connection's accept or from the first byte after an idle keep-alive gap (default
    /// `"10s"`); past it the connection is closed.
    pub header_read_timeout: Option<String>,
    /// Longest wait for a request body once the server starts waiting for it (default
    /// `"30s"`); past it the request gets 408.
    pub body_read_timeout: Option<String>,
    /// Longest a keep-alive connection may sit between requests (default `"60s"`).
    pub idle_timeout: Option<String>,
    /// Longest a write may wait for the client to take bytes (default `"30s"`); past it the
    /// connection is closed and what its request holds (a stream's upstream call, its
    /// in-flight slot) is let go.
    pub write_timeout: Option<String>,
    /// Most open client connections (default: half the open-file limit less 64, at most
    /// 10,000). At the cap, the connection idle the longest is closed for a new one.
    pub max_connections: Option<usize>,
    /// Most requests served at once (default 1,024); more get 503 with `Retry-After`.
    /// `/healthz`, `/readyz` and `/metrics` are exempt.
    pub max_in_flight: Option<usize>,
    /// `"text"` (default) or `"json"`: the format of diagnostics on stderr (the command
    /// line's `--log-format` wins; `[telemetry] log_format` is the older name).
    pub log_format: Option<String>,
    /// Reload the config when its file changes (checked every second; default false).
    /// SIGHUP and `POST /admin/reload` reload it either way (docs/operations.md).
    pub watch_config: Option<bool>,
}

/// `[[providers]]`: one upstream.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderToml {
    /// Unique name: breaker and ledger key.
    pub name: String,
    /// `openai`, `anthropic`, `gemini`, `azure`, `vertex`, `bedrock` or `simulated` (`openai` when a
    /// `preset` is given).
    #[serde(default)]
    pub kind: String,
    /// An OpenAI-compatible vendor whose defaults fill the unset fields (`groq`,
    /// `together`, `fireworks`, `deepseek`, `mistral`, `xai`, `openrouter`, `ollama`,
    /// `vllm`; see config/presets.rs).
    pub preset: Option<String>,
    /// The vendor's model id.
    pub model: Option<String>,
    /// The APIs it serves: `["chat"]`, `["embeddings"]` or both (default: `["embeddings"]`
    /// for a model the price table lists as an embeddings model or, on `vertex`, one of
    /// Google's text embedding models, else `["chat"]`).
    pub serves: Option<Vec<String>>,
    /// The environment variable holding the key (never the key itself).
    pub api_key_env: Option<String>,
    /// Endpoint; for `openai`, any OpenAI-compatible server.
    pub base_url: Option<String>,
    /// Per-attempt timeout (default `"30s"`).
    pub timeout: Option<String>,
    /// A half-open probe's timeout, at most `timeout` (default: `timeout`). A probe is one
    /// attempt; a shorter limit fails a hanging provider's probe over sooner.
    pub probe_timeout: Option<String>,
    /// Streams: longest wait for the first token (default `"10s"`).
    pub first_token_timeout: Option<String>,
    /// Streams: longest gap between chunks (default `"15s"`).
    pub stall_timeout: Option<String>,
    /// TCP connect timeout (default `"5s"`).
    pub connect_timeout: Option<String>,
    /// Overrides the route's `retry.max_attempts`.
    pub max_attempts: Option<u32>,
    /// Overrides the shipped price table.
    pub price: Option<PriceToml>,
    /// The upstream accepts an assistant prefill (used to continue a broken stream).
    pub supports_prefill: Option<bool>,
    /// Whether the model takes reasoning controls (`reasoning_effort`, and Anthropic's
    /// `thinking` translated to it). Default: `false` for a model the shipped price table
    /// marks as not reasoning (gpt-4o, gpt-4.1, ...) and for a `bedrock` model that is not
    /// Claude, else `true`. A provider whose model does not reason answers a request
    /// asking for reasoning without it (named in `x-switchyard-dropped`), or is skipped
    /// for it on a route with `unsupported_fields = "strict"` (docs/fields.md).
    pub reasoning: Option<bool>,
    /// Extra HTTP headers sent with every call (no secrets: use `api_key_env`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `openai`: send `max_tokens` instead of `max_completion_tokens`.
    pub use_max_tokens: Option<bool>,
    /// `openai`: ask streams for usage with `stream_options` (default true).
    pub stream_usage: Option<bool>,
    /// `openai`: `"as_is"` (default) or `"alnum9"` (tool-call ids rewritten to nine
    /// alphanumerics, as Mistral requires).
    pub tool_call_ids: Option<String>,
    /// `openai` and `azure`: which OpenAI API the provider speaks upstream:
    /// `"chat_completions"` (the default: `POST {base_url}/chat/completions`) or
    /// `"responses"` (`POST {base_url}/responses`; Azure: `/openai/v1/responses`, or
    /// `/openai/responses?api-version=…` on the classic path; for models served only there;
    /// a `/v1/responses` request it answers goes as the client wrote it, built-in tools
    /// included). Not a route's `api` (chat or embeddings), nor `serves`.
    pub api: Option<String>,
    /// `anthropic`: `max_tokens` when the caller gives none.
    pub default_max_tokens: Option<u32>,
    /// `anthropic` (and `vertex` for Claude): send a `json_schema` response format as
    /// structured outputs (`output_config.format`; `true`) or as a forced tool whose input
    /// is the answer (`false`). Default: `anthropic`, structured outputs for Claude 4.5 and
    /// later, read from the model id; `vertex`, the forced tool (docs/fields.md).
    pub structured_outputs: Option<bool>,
    /// `azure`: the resource URL (`https://NAME.openai.azure.com`).
    pub endpoint: Option<String>,
    /// `azure`: the deployment name (sent as the model).
    pub deployment: Option<String>,
    /// `azure`: `"v1"` (the v1 path), `"preview"`, or a dated version (the classic
    /// deployments path with `?api-version=`).
    pub api_version: Option<String>,
    /// `azure`: the environment variable holding a Microsoft Entra ID token.
    pub token_env: Option<String>,
    /// `azure`: a file holding a Microsoft Entra ID token, re-read when it changes.
    pub token_file: Option<String>,
    /// `vertex`: the Google Cloud project id.
    pub project: Option<String>,
    /// `vertex`: a region (`us-central1`) or `global`.
    pub location: Option<String>,
    /// `vertex`: `google` or `anthropic` (default: `anthropic` for `claude-*` models).
    pub publisher: Option<String>,
    /// `vertex`: the environment variable holding the service-account key file's path
    /// (default `GOOGLE_APPLICATION_CREDENTIALS`).
    pub credentials_env: Option<String>,
    /// `bedrock`: the AWS region (`us-east-1`).
    pub region: Option<String>,
    /// `bedrock`: where the signing credentials come from: `env`, `profile`,
    /// `web_identity`, `container` or `imds` (default: the AWS SDKs' chain, in that order
    /// but with `web_identity` before `profile`).
    pub credentials: Option<String>,
    /// `bedrock`: a profile of the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
    /// else `~/.aws/credentials`) to sign with, instead of the environment's keys.
    pub profile: Option<String>,
    /// `bedrock`: the environment variable holding the access key id (default
    /// `AWS_ACCESS_KEY_ID`).
    pub access_key_id_env: Option<String>,
    /// `bedrock`: the environment variable holding the secret access key (default
    /// `AWS_SECRET_ACCESS_KEY`).
    pub secret_access_key_env: Option<String>,
    /// `bedrock`: the environment variable holding a session token (default
    /// `AWS_SESSION_TOKEN`; optional).
    pub session_token_env: Option<String>,
    /// `bedrock`: the control-plane root for the health check (default
    /// `https://bedrock.{region}.amazonaws.com`).
    pub control_url: Option<String>,
    /// Simulated: probability of failure per call.
    pub failure_rate: Option<f64>,
    /// Simulated: latency range in ms.
    pub latency_range_ms: Option<[f64; 2]>,
    /// Simulated: dollars per 1k `max_tokens`.
    pub cost_per_1k_tokens: Option<f64>,
    /// Simulated: seed of its generator.
    pub seed: Option<u64>,
    /// Simulated: really wait `latency × scale` (default 1.0 when serving).
    pub latency_scale: Option<f64>,
    /// Active health check (off unless set): `{ every, timeout, probe }`.
    pub health_check: Option<HealthCheckToml>,
}

/// `health_check = { every = "15s", timeout = "5s", probe = "listing" }` on a provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckToml {
    /// Time between checks (default `"15s"`; at least 1 s).
    pub every: Option<String>,
    /// The longest one check may take (default `"5s"`; less than `every`).
    pub timeout: Option<String>,
    /// `listing` (free; the default) or `completion` (one output token, billed).
    pub probe: Option<String>,
}

/// A price override, dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceToml {
    /// Input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Cached input tokens (defaults to the input price).
    pub cached_input_per_mtok: Option<f64>,
    /// Cache writes: 5-minute ones at Anthropic, the only kind elsewhere (defaults to the
    /// input price).
    pub cache_write_per_mtok: Option<f64>,
    /// 1-hour cache writes (Anthropic; defaults to the cache-write price).
    pub cache_write_1h_per_mtok: Option<f64>,
    /// Dearer rates for calls whose input is above a threshold.
    pub long_context: Option<LongContextToml>,
    /// The model's output limit (overrides the price table's): what a request without
    /// `max_tokens` reserves against a budget.
    pub max_output_tokens: Option<u32>,
}

impl PriceToml {
    /// The exact price.
    ///
    /// # Errors
    /// A value that is negative or has more than 6 decimal places.
    pub fn to_price(self) -> Result<Price, switchyard::cost::PriceError> {
        let mut price = Price::from_usd_per_mtok(
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
        )?;
        price.cache_write_1h_micros_per_mtok = micros(self.cache_write_1h_per_mtok)?;
        price.long_context = self
            .long_context
            .map(LongContextToml::to_tier)
            .transpose()?;
        Ok(price)
    }
}

/// `price.long_context`: every rate of a call whose input tokens (cached and cache-written
/// included) are above `above_input_tokens`, dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContextToml {
    /// The threshold: a call of exactly this many input tokens keeps the base rates.
    pub above_input_tokens: u64,
    /// Input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Cached input tokens (defaults to this tier's input price).
    pub cached_input_per_mtok: Option<f64>,
    /// Cache writes (defaults to this tier's input price).
    pub cache_write_per_mtok: Option<f64>,
    /// 1-hour cache writes (defaults to this tier's cache-write price).
    pub cache_write_1h_per_mtok: Option<f64>,
}

impl LongContextToml {
    fn to_tier(self) -> Result<switchyard::cost::LongContext, switchyard::cost::PriceError> {
        Ok(switchyard::cost::LongContext {
            above_input_tokens: self.above_input_tokens,
            input_micros_per_mtok: usd_per_mtok_to_micros(self.input_per_mtok)?,
            output_micros_per_mtok: usd_per_mtok_to_micros(self.output_per_mtok)?,
            cached_input_micros_per_mtok: micros(self.cached_input_per_mtok)?,
            cache_write_micros_per_mtok: micros(self.cache_write_per_mtok)?,
            cache_write_1h_micros_per_mtok: micros(self.cache_write_1h_per_mtok)?,
        })
    }
}

fn micros(usd: Option<f64>) -> Result<Option<u64>, switchyard::cost::PriceError> {
    usd.map(usd_per_mtok_to_micros).transpose()
}

/// `[[routes]]`: what clients ask for as `model`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteToml {
    /// The name clients send. A name ending in `/*` (`"openai/*"`) makes a wildcard route:
    /// a client's `openai/gpt-4.1-mini` calls the first provider (the template) with the
    /// model `gpt-4.1-mini`, when `models` allows it.
    pub name: String,
    /// Provider names, in order (on a wildcard route the first is the template; the rest
    /// are fallbacks called with their own models).
    pub providers: Vec<String>,
    /// Wildcard routes: the models clients may name, each an exact id or a prefix ending
    /// in `*` (`["gpt-4.1*", "o4-mini"]`; `["*"]` allows any well-formed id). Required on
    /// wildcard routes, refused on others.
    pub models: Option<Vec<String>>,
    /// Wildcard routes: the most distinct models the template is called with (default 64;
    /// each holds a breaker, a ledger row and metric series).
    pub max_models: Option<usize>,
    /// `chat` or `embeddings` (default: the API its providers serve; chat when they serve
    /// both).
    pub api: Option<String>,
    /// `ordered`, `cheapest` or `fastest`.
    pub order: Option<switchyard::Order>,
    /// End-to-end deadline (default `"60s"`).
    pub deadline: Option<String>,
    /// Retry settings.
    pub retry: Option<RetryToml>,
    /// Breaker settings.
    pub breaker: Option<BreakerToml>,
    /// Spend limit in dollars.
    pub budget_usd: Option<f64>,
    /// Call unpriced providers under the budget anyway.
    pub allow_unpriced: Option<bool>,
    /// `max_tokens` set on a budgeted request that has none when the model's output limit
    /// is unknown (default 4096).
    pub default_max_tokens: Option<u32>,
    /// Per-error-kind overrides, e.g. `policy.content_filtered = { fail_over = true }`.
    #[serde(default)]
    pub policy: BTreeMap<String, PolicyToml>,
    /// A request field a provider cannot honour (`docs/fields.md`): `"degrade"` (default:
    /// a degradable field is dropped for it, named in `x-switchyard-dropped`; a contract
    /// field skips it), `"strict"` (any field skips it; `"skip"` is read as this) or
    /// `"drop"` (any field is dropped for it, contract ones too).
    pub unsupported_fields: Option<switchyard::route::UnsupportedFields>,
    /// Send fields the dialect does not model verbatim to same-dialect providers
    /// (`docs/fields.md`; default false: they are refused with a 400 naming them).
    pub passthrough_unknown: Option<bool>,
    /// Serve answers again for the same request, and stale ones through an outage
    /// (`docs/cache.md`; off when absent).
    pub cache: Option<super::cache::RouteCacheToml>,
}

/// `retry = { ... }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryToml {
    /// Attempts per provider turn (default 2).
    pub max_attempts: Option<u32>,
    /// Backoff base (default `"250ms"`).
    pub base_delay: Option<String>,
    /// Backoff cap (default `"4s"`).
    pub max_delay: Option<String>,
    /// Longest Retry-After worth waiting for (default `"5s"`).
    pub max_retry_after: Option<String>,
}

/// `breaker = { ... }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerToml {
    /// Consecutive failed turns that open the circuit (default 3).
    pub failure_threshold: Option<u32>,
    /// First cooldown (default `"30s"`).
    pub cooldown: Option<String>,
    /// Longest cooldown (default `"5m"`).
    pub max_cooldown: Option<String>,
}

/// One kind's policy override; unset fields keep the default (docs/design.md, the error table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyToml {
    /// Retry on the same provider.
    pub retry: Option<bool>,
    /// `ignore`, `count_failure`, `open_now` or `cool_for_retry_after`.
    pub breaker: Option<BreakerEffect>,
    /// Move on to the next provider.
    pub fail_over: Option<bool>,
}

/// `[state]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateToml {
    /// `memory` (default) or `redis`.
    pub backend: Option<String>,
    /// `redis://host:port` for the redis backend.
    pub url: Option<String>,
    /// Longest any request waits on Redis before using local state (default `"50ms"`).
    pub timeout: Option<String>,
    /// Key prefix in Redis, so fleets can share one server (default `"switchyard"`).
    pub prefix: Option<String>,
    /// What stored conversations (stored responses, message threads) may cost this
    /// process's memory, in bytes (default 256 MiB): the memory backend's bound, and what a
    /// Redis backend keeps locally while Redis is away.
    pub memory_store_bytes: Option<usize>,
    /// A Redis of their own for stored conversations (redis backend only; default: `url`,
    /// on a connection of their own).
    pub store_url: Option<String>,
}
