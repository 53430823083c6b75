//! OpenAI's Chat Completions JSON, as clients send and expect it, and its mapping to and
//! from switchyard's shared shape. Inbound, every field of OpenAI's request reference is
//! listed and carried by the shared shape (`docs/fields.md`): OpenAI's own fields
//! (`logit_bias`, `verbosity`, `prediction`, `store`, audio, web search, `functions`...)
//! as the client wrote them, within bounds, for vendors that take them. A field OpenAI
//! does not define is kept aside as a passthrough field, which only a route with
//! `passthrough_unknown = true` accepts (`super::Chat::prepare` refuses it otherwise).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard::chat::{
    CacheControl, CachePoint, CacheTtl, ContentPart, ImageSource, Message, ReasoningEffort,
    ResponseFormat, Tool, ToolCall, ToolChoice, Verbosity, MAX_CACHE_BREAKPOINTS,
};
use switchyard::{ChatRequest, Role, Usage};

use crate::http::bounds::{clip, longer_than, ECHO_BYTES};
use crate::http::dialects::json;
use crate::http::error::ApiError;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireRequest {
    /// The route.
    pub model: String,
    /// The conversation.
    pub messages: Vec<WireMessage>,
    /// Server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// `{"include_usage": true}`.
    pub stream_options: Option<StreamOptions>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    stop: Option<OneOrMany>,
    tools: Option<Vec<WireTool>>,
    tool_choice: Option<WireToolChoice>,
    response_format: Option<WireResponseFormat>,
    user: Option<String>,
    n: Option<u32>,
    seed: Option<i64>,
    presence_penalty: Option<f32>,
    frequency_penalty: Option<f32>,
    #[serde(default)]
    logprobs: Option<bool>,
    top_logprobs: Option<u8>,
    /// Not OpenAI's; the shared shape's (Anthropic and Gemini take it).
    top_k: Option<u32>,
    parallel_tool_calls: Option<bool>,
    service_tier: Option<String>,
    reasoning_effort: Option<String>,
    metadata: Option<serde_json::Map<String, Value>>,
    store: Option<bool>,
    prompt_cache_key: Option<String>,
    prompt_cache_retention: Option<String>,
    safety_identifier: Option<String>,
    logit_bias: Option<serde_json::Map<String, Value>>,
    verbosity: Option<String>,
    prediction: Option<Value>,
    audio: Option<Value>,
    modalities: Option<Vec<String>>,
    web_search_options: Option<Value>,
    functions: Option<Vec<Value>>,
    function_call: Option<Value>,
    /// Fields not listed above, kept aside by [`parse`] (never read by serde).
    #[serde(skip)]
    pub passthrough: serde_json::Map<String, Value>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a final chunk with usage.
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// One message.
#[derive(Debug, Deserialize)]
pub struct WireMessage {
    role: String,
    content: Option<WireContent>,
    tool_calls: Option<Vec<WireToolCall>>,
    tool_call_id: Option<String>,
    name: Option<String>,
    /// An earlier answer's reasoning text, as clients of OpenAI-compatible reasoning
    /// servers send it back: accepted (a string) and left out of every upstream request.
    /// It is plain text with no signature: no vendor could verify it as its own
    /// reasoning, and a model that takes it would read it as text (`docs/dialects.md`).
    #[allow(dead_code)]
    reasoning_content: Option<String>,
    /// A prompt-cache breakpoint on the whole message (LiteLLM's users write it here too):
    /// it marks the message's last content part.
    cache_control: Option<WireCacheControl>,
}

/// `cache_control` on a content part, a message or a tool, as LiteLLM's users write it
/// (Anthropic's own shape): `{"type": "ephemeral", "ttl": "5m" | "1h"}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireCacheControl {
    #[serde(rename = "type")]
    kind: String,
    ttl: Option<String>,
}

impl WireCacheControl {
    /// The shared shape's breakpoint; a 400 naming `at` for another type or TTL.
    fn checked(&self, at: &str) -> Result<CacheControl, ApiError> {
        if self.kind != "ephemeral" {
            return Err(bad(
                &format!("{at}.type"),
                format!(
                    "{:?} is not a cache_control type: only \"ephemeral\"",
                    clip(&self.kind, ECHO_BYTES)
                ),
            ));
        }
        let ttl = match self.ttl.as_deref() {
            None => None,
            Some("5m") => Some(CacheTtl::FiveMinutes),
            Some("1h") => Some(CacheTtl::OneHour),
            Some(other) => {
                return Err(bad(
                    &format!("{at}.ttl"),
                    format!("{:?} is not one of 5m, 1h", clip(other, ECHO_BYTES)),
                ))
            }
        };
        Ok(CacheControl { ttl })
    }
}

/// A message's `content`: a string, or an array of parts. (Read by hand rather than as an
/// untagged enum: no buffering of the value, and an error that says what was expected.)
#[derive(Debug)]
enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

impl<'de> Deserialize<'de> for WireContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Content;
        impl<'de> serde::de::Visitor<'de> for Content {
            type Value = WireContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<WireContent, E> {
                Ok(WireContent::Text(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<WireContent, E> {
                Ok(WireContent::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<WireContent, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(WireContent::Parts)
            }
        }
        d.deserialize_any(Content)
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart {
    Text {
        text: String,
        cache_control: Option<WireCacheControl>,
    },
    ImageUrl {
        image_url: WireImage,
        cache_control: Option<WireCacheControl>,
    },
}

#[derive(Debug, Deserialize)]
struct WireImage {
    url: String,
    detail: Option<String>,
}

/// A tool call, in and out.
#[derive(Debug, Deserialize, Serialize)]
pub struct WireToolCall {
    /// Call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// Name and arguments.
    pub function: WireFunctionCall,
}

fn function_type() -> String {
    "function".to_owned()
}

/// `function` of a tool call.
#[derive(Debug, Deserialize, Serialize)]
pub struct WireFunctionCall {
    /// Function name.
    pub name: String,
    /// JSON arguments text.
    pub arguments: String,
}

#[derive(Debug, Deserialize)]
struct WireTool {
    #[serde(rename = "type")]
    kind: String,
    function: WireFunction,
    /// A prompt-cache breakpoint after this tool (LiteLLM's convention: beside
    /// `function`).
    cache_control: Option<WireCacheControl>,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum WireToolChoice {
    Mode(String),
    Named { function: NamedFunction },
}

#[derive(Debug, Deserialize)]
struct NamedFunction {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: WireJsonSchema },
}

#[derive(Debug, Deserialize)]
struct WireJsonSchema {
    name: String,
    schema: Option<Value>,
    strict: Option<bool>,
}

/// The most answers one request may ask for (OpenAI's bound on `n`).
const MAX_N: u32 = 128;

/// OpenAI's bounds on `metadata`: pairs, key and value lengths (characters).
const METADATA_PAIRS: usize = 16;
const METADATA_KEY_CHARS: usize = 64;
const METADATA_VALUE_CHARS: usize = 512;

/// `metadata` within OpenAI's bounds: at most 16 pairs of string values, keys of at most 64
/// characters and values of at most 512.
fn check_metadata(m: &serde_json::Map<String, Value>) -> Result<(), ApiError> {
    if m.len() > METADATA_PAIRS {
        return Err(bad(
            "metadata",
            format!("`metadata` takes at most {METADATA_PAIRS} pairs"),
        ));
    }
    for (k, v) in m {
        let Some(text) = v.as_str() else {
            return Err(bad("metadata", "`metadata` values must be strings"));
        };
        if longer_than(k, METADATA_KEY_CHARS) || longer_than(text, METADATA_VALUE_CHARS) {
            return Err(bad(
                "metadata",
                format!(
                    "`metadata` keys take at most {METADATA_KEY_CHARS} characters, values \
                     {METADATA_VALUE_CHARS}"
                ),
            ));
        }
    }
    Ok(())
}

/// Parse a body, naming the field at fault.
///
/// A body that parses pays for no path tracking; one that does not is parsed again with
/// it, to name the field.
///
/// # Errors
/// 400 with `param` set to the JSON path of the bad field.
pub fn parse(body: &[u8]) -> Result<WireRequest, ApiError> {
    json::parse(body, |path, message| json::invalid_field(path, &message))
        .or_else(|e| with_passthrough(body).ok_or(e))
}

/// A body with top-level fields the request type does not list: those fields kept aside
/// (for `passthrough_unknown`, or to be refused by name), the rest parsed. `None` when
/// that does not make it parse (the first error stands).
#[cold]
fn with_passthrough(body: &[u8]) -> Option<WireRequest> {
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let known: serde_json::Map<String, Value> = KNOWN
        .iter()
        .filter_map(|k| fields.remove_entry(*k))
        .collect();
    let mut wire: WireRequest = serde_json::from_value(Value::Object(known)).ok()?;
    wire.passthrough = fields;
    Some(wire)
}

/// The top-level fields [`WireRequest`] reads.
const KNOWN: [&str; 36] = [
    "model",
    "messages",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "tools",
    "tool_choice",
    "response_format",
    "user",
    "n",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "top_logprobs",
    "top_k",
    "parallel_tool_calls",
    "service_tier",
    "reasoning_effort",
    "metadata",
    "store",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "logit_bias",
    "verbosity",
    "prediction",
    "audio",
    "modalities",
    "web_search_options",
    "functions",
    "function_call",
];

fn bad(param: &str, msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), msg)
}

impl WireRequest {
    /// Refuse identifiers longer than `MAX_NAME_CHARS` (`crate::http::bounds`): the route name `model` (taken out
    /// of the request already, so passed in) and `user`. They are names, not content; the
    /// route name is logged, kept for the dashboard and quoted in errors.
    ///
    /// # Errors
    /// 400 naming the field.
    pub fn check_lengths(&self, model: &str) -> Result<(), ApiError> {
        json::check_names(&[
            ("model", Some(model)),
            ("user", self.user.as_deref()),
            ("service_tier", self.service_tier.as_deref()),
            ("prompt_cache_key", self.prompt_cache_key.as_deref()),
            ("safety_identifier", self.safety_identifier.as_deref()),
        ])?;
        if let Some(m) = &self.metadata {
            check_metadata(m)?;
        }
        Ok(())
    }

    /// OpenAI's own fields, checked and bounded (`super::openai_fields`), onto `req`.
    fn openai_into(&mut self, req: &mut ChatRequest) -> Result<(), ApiError> {
        use super::openai_fields as check;
        if let Some(bias) = self.logit_bias.take() {
            check::logit_bias(&bias)?;
            req.logit_bias = Some(bias);
        }
        req.verbosity = (self.verbosity.as_deref())
            .map(|w| json::one_of("verbosity", w, &Verbosity::ALL, Verbosity::as_str))
            .transpose()?;
        if let Some(p) = self.prediction.take() {
            check::prediction(&p)?;
            req.prediction = Some(p);
        }
        req.store = self.store;
        req.prompt_cache_key = self.prompt_cache_key.take();
        if let Some(r) = self.prompt_cache_retention.take() {
            json::one_of("prompt_cache_retention", &r, &["in-memory", "24h"], |w| w)?;
            req.prompt_cache_retention = Some(r);
        }
        req.safety_identifier = self.safety_identifier.take();
        req.modalities = check::modalities(self.modalities.take())?;
        if let Some(a) = self.audio.take() {
            check::object("audio", &a, check::SETTINGS_BYTES)?;
            req.audio = Some(a);
        }
        if let Some(w) = self.web_search_options.take() {
            check::object("web_search_options", &w, check::SETTINGS_BYTES)?;
            req.web_search_options = Some(w);
        }
        if let Some(f) = self.functions.take() {
            req.functions = Some(check::functions(f)?);
        }
        if let Some(c) = self.function_call.take() {
            check::function_call(&c)?;
            req.function_call = Some(c);
        }
        Ok(())
    }

    /// The sampling and output fields, range-checked, onto `req`.
    fn sampling_into(&mut self, req: &mut ChatRequest) -> Result<(), ApiError> {
        let penalty = |v: Option<f32>, name: &str| match v {
            Some(p) if !(-2.0..=2.0).contains(&p) => {
                Err(bad(name, format!("`{name}` must be between -2 and 2")))
            }
            _ => Ok(v),
        };
        req.presence_penalty = penalty(self.presence_penalty, "presence_penalty")?;
        req.frequency_penalty = penalty(self.frequency_penalty, "frequency_penalty")?;
        req.logprobs = self.logprobs == Some(true);
        if let Some(n) = self.top_logprobs {
            if n > 20 {
                return Err(bad(
                    "top_logprobs",
                    "`top_logprobs` must be between 0 and 20",
                ));
            }
            if !req.logprobs {
                return Err(bad(
                    "top_logprobs",
                    "`top_logprobs` needs `logprobs` set to true",
                ));
            }
        }
        req.top_logprobs = self.top_logprobs;
        match self.n {
            Some(0) => return Err(bad("n", "`n` must be at least 1")),
            Some(n) if n > MAX_N => {
                return Err(bad("n", format!("`n` must be at most {MAX_N}")));
            }
            _ => {}
        }
        req.n = self.n.filter(|&n| n > 1);
        req.seed = self.seed;
        req.top_k = self.top_k;
        req.parallel_tool_calls = self.parallel_tool_calls;
        req.service_tier = self.service_tier.take();
        req.reasoning_effort = (self.reasoning_effort.as_deref())
            .map(|w| {
                let all = &ReasoningEffort::ALL;
                json::one_of("reasoning_effort", w, all, ReasoningEffort::as_str)
            })
            .transpose()?;
        req.metadata = self.metadata.take();
        self.openai_into(req)?;
        if !self.passthrough.is_empty() {
            req.passthrough = Some(std::sync::Arc::new(std::mem::take(&mut self.passthrough)));
        }
        Ok(())
    }

    /// The shared shape, checking what serde cannot; the conversation's text is moved, not
    /// copied.
    ///
    /// # Errors
    /// 400 naming the field.
    pub fn into_chat(mut self) -> Result<ChatRequest, ApiError> {
        if self.messages.is_empty() {
            return Err(bad(
                "messages",
                "`messages` must contain at least one message",
            ));
        }
        if self.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
            return Err(bad("temperature", "`temperature` must be between 0 and 2"));
        }
        if self.top_p.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
            return Err(bad("top_p", "`top_p` must be between 0 and 1"));
        }
        let max_tokens = self.max_completion_tokens.or(self.max_tokens);
        if max_tokens == Some(0) {
            return Err(bad("max_tokens", "`max_tokens` must be at least 1"));
        }
        self.check_breakpoints()?;
        let tools = self.tools()?;
        let tool_choice = self.tool_choice()?;
        let mut req = ChatRequest::default();
        self.sampling_into(&mut req)?;
        let messages = self
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| m.into_message(i))
            .collect::<Result<_, _>>()?;
        Ok(ChatRequest {
            messages,
            max_tokens,
            temperature: self.temperature,
            top_p: self.top_p,
            stop: match self.stop {
                None => Vec::new(),
                Some(OneOrMany::One(s)) => vec![s],
                Some(OneOrMany::Many(v)) => v,
            },
            tools,
            tool_choice,
            response_format: self.response_format.map(|f| match f {
                WireResponseFormat::Text => ResponseFormat::Text,
                WireResponseFormat::JsonObject => ResponseFormat::JsonObject,
                WireResponseFormat::JsonSchema { json_schema } => ResponseFormat::JsonSchema {
                    name: json_schema.name,
                    schema: json_schema
                        .schema
                        .unwrap_or(Value::Object(Default::default())),
                    strict: json_schema.strict,
                },
            }),
            user: self.user,
            ..req
        })
    }

    /// At most [`MAX_CACHE_BREAKPOINTS`] `cache_control` marks (Anthropic's limit, which
    /// it refuses past): a 400 naming the first one too many.
    fn check_breakpoints(&self) -> Result<(), ApiError> {
        let mut marks = Vec::new();
        for (i, m) in self.messages.iter().enumerate() {
            if let Some(WireContent::Parts(parts)) = &m.content {
                for (j, p) in parts.iter().enumerate() {
                    let (WirePart::Text { cache_control, .. }
                    | WirePart::ImageUrl { cache_control, .. }) = p;
                    if cache_control.is_some() {
                        marks.push(format!("messages[{i}].content[{j}].cache_control"));
                    }
                }
            }
            if m.cache_control.is_some() {
                marks.push(format!("messages[{i}].cache_control"));
            }
        }
        let tools = self.tools.iter().flatten().enumerate();
        for (i, _) in tools.filter(|(_, t)| t.cache_control.is_some()) {
            marks.push(format!("tools[{i}].cache_control"));
        }
        match marks.get(MAX_CACHE_BREAKPOINTS) {
            Some(extra) => Err(bad(
                extra,
                format!(
                    "{} cache_control breakpoints: at most {MAX_CACHE_BREAKPOINTS} per request \
                     (Anthropic's limit)",
                    marks.len()
                ),
            )),
            None => Ok(()),
        }
    }

    fn tools(&self) -> Result<Vec<Tool>, ApiError> {
        let Some(tools) = &self.tools else {
            return Ok(Vec::new());
        };
        tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if t.kind != "function" {
                    return Err(bad(
                        &format!("tools[{i}].type"),
                        "only `function` tools are supported",
                    ));
                }
                let cache_control = t
                    .cache_control
                    .as_ref()
                    .map(|c| c.checked(&format!("tools[{i}].cache_control")))
                    .transpose()?;
                Ok(Tool {
                    name: t.function.name.clone(),
                    description: t.function.description.clone(),
                    parameters: t
                        .function
                        .parameters
                        .clone()
                        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
                    cache_control,
                })
            })
            .collect()
    }

    fn tool_choice(&self) -> Result<Option<ToolChoice>, ApiError> {
        Ok(match &self.tool_choice {
            None => None,
            Some(WireToolChoice::Mode(m)) => Some(match m.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                other => {
                    return Err(bad(
                        "tool_choice",
                        format!(
                            "{:?} is not one of auto, none, required, or a named function",
                            clip(other, ECHO_BYTES)
                        ),
                    ))
                }
            }),
            Some(WireToolChoice::Named { function }) => {
                Some(ToolChoice::Tool(function.name.clone()))
            }
        })
    }
}

impl WireMessage {
    fn into_message(self, i: usize) -> Result<Message, ApiError> {
        let role = match self.role.as_str() {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(bad(
                    &format!("messages[{i}].role"),
                    format!(
                        "{:?} is not one of system, developer, user, assistant, tool",
                        clip(other, ECHO_BYTES)
                    ),
                ))
            }
        };
        let mut cache = Vec::new();
        let content = match self.content {
            None => Vec::new(),
            Some(WireContent::Text(text)) => vec![ContentPart::Text { text }],
            Some(WireContent::Parts(parts)) => {
                let mut content = Vec::with_capacity(parts.len());
                for (j, p) in parts.into_iter().enumerate() {
                    let (p, mark) = part(p);
                    if let Some(mark) = mark {
                        let at = format!("messages[{i}].content[{j}].cache_control");
                        cache.push(cache_point(j, mark.checked(&at)?));
                    }
                    content.push(p);
                }
                content
            }
        };
        if let Some(mark) = &self.cache_control {
            let at = format!("messages[{i}].cache_control");
            let control = mark.checked(&at)?;
            let Some(last) = content.len().checked_sub(1) else {
                return Err(bad(&at, "cache_control on a message without content"));
            };
            if cache
                .last()
                .is_none_or(|c: &CachePoint| c.part as usize != last)
            {
                cache.push(cache_point(last, control));
            }
        }
        if role == Role::Tool && self.tool_call_id.is_none() {
            return Err(bad(
                &format!("messages[{i}].tool_call_id"),
                "a tool message needs `tool_call_id`",
            ));
        }
        if content.is_empty() && self.tool_calls.as_ref().is_none_or(Vec::is_empty) {
            return Err(bad(
                &format!("messages[{i}].content"),
                "a message needs content or tool calls",
            ));
        }
        Ok(Message {
            role,
            content,
            tool_calls: self
                .tool_calls
                .into_iter()
                .flatten()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                })
                .collect(),
            tool_call_id: self.tool_call_id,
            name: self.name,
            thinking: Vec::new(),
            cache,
        })
    }
}

/// A content part, and its `cache_control` if it has one.
fn part(p: WirePart) -> (ContentPart, Option<WireCacheControl>) {
    match p {
        WirePart::Text {
            text,
            cache_control,
        } => (ContentPart::Text { text }, cache_control),
        WirePart::ImageUrl {
            image_url,
            cache_control,
        } => (
            ContentPart::Image {
                source: image_source(image_url.url),
                detail: image_url.detail,
            },
            cache_control,
        ),
    }
}

fn cache_point(part: usize, control: CacheControl) -> CachePoint {
    CachePoint {
        part: u32::try_from(part).unwrap_or(u32::MAX),
        control,
    }
}

/// `data:<media>;base64,<data>` URLs become inline images (every vendor takes those);
/// anything else stays a URL. (Responses' `input_image` reads its `image_url` the same way.)
pub(crate) fn image_source(mut url: String) -> ImageSource {
    let media = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .map(|(media, _)| media.to_owned());
    if let Some(media_type) = media {
        // the data stays in the URL's buffer (images can be megabytes)
        url.drain(.."data:".len() + media_type.len() + ";base64,".len());
        return ImageSource::Base64 {
            media_type,
            data: url,
        };
    }
    ImageSource::Url { url }
}

/// OpenAI's usage object. `total_tokens` saturates: it never wraps below its parts.
#[derive(Debug, Serialize)]
pub struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: CachedTokens,
    completion_tokens_details: ReasoningTokens,
}

#[derive(Debug, Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

#[derive(Debug, Serialize)]
struct ReasoningTokens {
    reasoning_tokens: u64,
}

impl From<&Usage> for WireUsage {
    fn from(u: &Usage) -> Self {
        Self {
            prompt_tokens: u.input_tokens,
            completion_tokens: u.output_tokens,
            total_tokens: u.total_tokens(),
            prompt_tokens_details: CachedTokens {
                cached_tokens: u.cached_input_tokens,
            },
            completion_tokens_details: ReasoningTokens {
                reasoning_tokens: u.reasoning_tokens,
            },
        }
    }
}

/// Tool calls in OpenAI's response shape.
#[must_use]
pub fn wire_tool_calls(calls: &[ToolCall]) -> Vec<WireToolCall> {
    calls
        .iter()
        .map(|c| WireToolCall {
            id: c.id.clone(),
            kind: function_type(),
            function: WireFunctionCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Result<ChatRequest, ApiError> {
        parse(body.as_bytes())?.into_chat()
    }

    #[test]
    fn maps_the_openai_request() {
        let r = req(r#"{"model":"smart","messages":[
            {"role":"developer","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"what is this?"},
              {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR","detail":"low"}}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"42"}],
            "max_tokens":50,"max_completion_tokens":60,"stop":"END","temperature":0.2,
            "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
            "tool_choice":{"type":"function","function":{"name":"f"}},
            "response_format":{"type":"json_object"},"user":"u1","seed":7}"#)
        .unwrap();
        assert_eq!(r.messages[0].role, Role::Developer);
        assert_eq!(r.seed, Some(7));
        assert_eq!(r.max_tokens, Some(60), "max_completion_tokens wins");
        assert_eq!(r.stop, ["END"]);
        assert!(
            matches!(&r.messages[1].content[1], ContentPart::Image { source: ImageSource::Base64 { media_type, .. }, .. } if media_type == "image/png")
        );
        assert_eq!(r.messages[2].tool_calls[0].name, "f");
        assert_eq!(r.messages[3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(r.tool_choice, Some(ToolChoice::Tool("f".into())));
        assert_eq!(r.response_format, Some(ResponseFormat::JsonObject));
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (
                r#"{"model":"m","messages":[{"role":"wizard","content":"x"}]}"#,
                "messages[0].role",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":5}]}"#,
                "messages[0].content",
            ),
            (r#"{"model":"m","messages":[]}"#, "messages"),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":9}"#,
                "temperature",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"lots"}"#,
                "max_tokens",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"n":0}"#,
                "n",
            ),
            (
                r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}],"n":0}"#,
                "n",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":3}"#,
                "top_logprobs",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"presence_penalty":3}"#,
                "presence_penalty",
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"max"}"#,
                "reasoning_effort",
            ),
            (r#"{"messages":[{"role":"user","content":"x"}]}"#, "model"),
        ];
        for (body, param) in cases {
            let e = req(body).unwrap_err();
            assert_eq!(e.status, 400, "{body}");
            let got = e.param.clone().unwrap_or_default();
            assert!(
                got == param || (param == "model" && e.message.contains("model")),
                "{body}: {got:?} / {}",
                e.message
            );
        }
        let e = req("{not json").unwrap_err();
        assert!(e.message.contains("not valid JSON"));
    }

    #[test]
    fn every_sampling_and_output_field_is_carried() {
        let r = req(r#"{"model":"m","messages":[{"role":"user","content":"x"}],
            "seed":-3,"presence_penalty":0.5,"frequency_penalty":-1.5,"logprobs":true,
            "top_logprobs":4,"n":2,"top_k":40,"parallel_tool_calls":false,
            "service_tier":"flex","reasoning_effort":"high","metadata":{"team":"a"},
            "store":true,"prompt_cache_key":"k","modalities":["text"],
            "logit_bias":{"50256":-100},"verbosity":"low","safety_identifier":"s",
            "prediction":{"type":"content","content":"draft"}}"#)
        .unwrap();
        assert_eq!(r.seed, Some(-3));
        assert_eq!(
            (r.presence_penalty, r.frequency_penalty),
            (Some(0.5), Some(-1.5))
        );
        assert!(r.logprobs);
        assert_eq!((r.top_logprobs, r.n, r.top_k), (Some(4), Some(2), Some(40)));
        assert_eq!(r.parallel_tool_calls, Some(false));
        assert_eq!(r.service_tier.as_deref(), Some("flex"));
        assert_eq!(r.reasoning_effort, Some(ReasoningEffort::High));
        assert_eq!(r.metadata.unwrap()["team"], "a");
        assert!(r.passthrough.is_none(), "every one is OpenAI's own");
        assert!(
            r.modalities.is_empty(),
            "text output is what every vendor gives"
        );
        assert_eq!(r.store, Some(true));
        assert_eq!(r.prompt_cache_key.as_deref(), Some("k"));
        assert_eq!(r.safety_identifier.as_deref(), Some("s"));
        assert_eq!(r.logit_bias.unwrap()["50256"], -100);
        assert_eq!(r.verbosity, Some(Verbosity::Low));
        assert_eq!(r.prediction.unwrap()["content"], "draft");
    }

    #[test]
    fn unknown_and_unmodelled_fields_are_kept_aside_by_name() {
        let r = req(r#"{"model":"m","messages":[{"role":"user","content":"x"}],
            "seed":1,"web_search_options":{},"frobnicate":2}"#)
        .unwrap();
        let rest = r.passthrough.expect("kept aside");
        assert_eq!(rest.len(), 1);
        assert_eq!(rest["frobnicate"], 2);
        assert_eq!(r.web_search_options, Some(serde_json::json!({})));
        assert_eq!(r.seed, Some(1), "known fields still read");
        let e = req(r#"{"model":"m","messages":[{"role":"user","content":5}],"frobnicate":2}"#)
            .unwrap_err();
        assert_eq!(e.status, 400, "a bad known field is still refused");
    }

    #[test]
    fn a_body_with_anything_after_its_object_is_not_json() {
        let e = req(r#"{"model":"m","messages":[{"role":"user","content":"x"}]} {"#).unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.param, None);
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
        assert!(
            req("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n ")
                .is_ok()
        );
    }

    #[test]
    fn content_that_is_neither_text_nor_parts_says_what_was_expected() {
        let e = req(r#"{"model":"m","messages":[{"role":"user","content":{"text":"x"}}]}"#)
            .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content"));
        assert!(
            e.message.contains("a string or an array of content parts"),
            "{}",
            e.message
        );
        let e = req(r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}"#)
            .unwrap_err();
        assert_eq!(
            e.param.as_deref(),
            Some("messages[0].content[0]"),
            "{}",
            e.message
        );
    }

    #[test]
    fn total_tokens_saturates_instead_of_wrapping() {
        let u = Usage {
            input_tokens: u64::MAX,
            output_tokens: 5,
            ..Usage::default()
        };
        let wire = serde_json::to_value(WireUsage::from(&u)).unwrap();
        assert_eq!(wire["total_tokens"], u64::MAX, "not 4");
        assert_eq!(wire["prompt_tokens"], u64::MAX);
    }

    #[test]
    fn inline_images_keep_their_data_and_urls_stay_urls() {
        let r = req(r#"{"model":"m","messages":[{"role":"user","content":[
            {"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
            {"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}"#)
        .unwrap();
        let [ContentPart::Image { source: first, .. }, ContentPart::Image { source: second, .. }] =
            r.messages[0].content.as_slice()
        else {
            panic!("two images: {:?}", r.messages[0].content)
        };
        assert!(
            matches!(first, ImageSource::Base64 { media_type, data } if media_type == "image/jpeg" && data == "/9j/4AAQ"),
            "{first:?}"
        );
        assert!(
            matches!(second, ImageSource::Url { url } if url == "https://example.com/cat.png"),
            "{second:?}"
        );
    }
}
