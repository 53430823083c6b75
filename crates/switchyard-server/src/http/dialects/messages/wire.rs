//! Anthropic's Messages request JSON, as clients send it (the official SDK's
//! `MessageCreateParams`, betas included), and its mapping into switchyard's shared shape.
//!
//! Keys the dialect does not model are refused by their path (as Anthropic does), unless the
//! request carries `anthropic-beta`: then they are accepted and named, or kept for
//! Anthropic alone when they change the answer's contract ([`keys`]); so are blocks of
//! types it does not model ([`blocks`]), which only Anthropic is ever given. An Anthropic
//! provider gets the client's own body instead (`super` sets it as the native body). What
//! the shared shape cannot carry is either named in `x-switchyard-ignored` when another
//! vendor answers (advisory fields, and for now the output-changing ones the shape has no
//! room for: a tool result's `is_error`) or refused with a 400 naming the field in
//! Anthropic's terms (`messages.1.content.0.type`): server tools, `container`,
//! `mcp_servers`, document blocks (without a beta). The conversation itself is [`turns`] (system turns with
//! their per-turn settings included); mid-conversation tool changes are [`toolset`].

mod blocks;
mod keys;
mod toolset;
mod turns;

use blocks::{Block, SystemBlock, WireImageSource};

pub(super) use keys::Ignored;

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use switchyard::chat::{Message, ReasoningEffort, ResponseFormat, Tool, ToolChoice};
use switchyard::ChatRequest;

use crate::http::bounds::{clip, elide, longer_than, ECHO_BYTES, MAX_NAME_CHARS};
use crate::http::dialects::json::{self, PARSER_MESSAGE_BYTES};
use crate::http::error::ApiError;

/// The body of `POST /v1/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WireRequest {
    /// The route.
    pub model: String,
    max_tokens: u32,
    messages: Vec<WireMessage>,
    #[serde(default)]
    system: Option<StrOr<SystemBlock>>,
    /// Server-sent events.
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    top_k: Option<u32>,
    #[serde(default)]
    tools: Option<Vec<WireTool>>,
    #[serde(default)]
    tool_choice: Option<WireToolChoice>,
    #[serde(default)]
    thinking: Option<Thinking>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    output_config: Option<OutputConfig>,
    /// The structured-outputs beta's spelling of `output_config.format`.
    #[serde(default)]
    output_format: Option<JsonFormat>,
    #[serde(default)]
    context_management: Option<IgnoredAny>,
    #[serde(default)]
    service_tier: Option<String>,
    #[serde(default)]
    cache_control: Option<IgnoredAny>,
    #[serde(default)]
    inference_geo: Option<IgnoredAny>,
    #[serde(default)]
    speed: Option<IgnoredAny>,
    /// Prompt-cache diagnostics against a previous message (SDK 2.15): Anthropic's alone.
    #[serde(default)]
    diagnostics: Option<IgnoredAny>,
    #[serde(default)]
    container: Option<IgnoredAny>,
    #[serde(default)]
    mcp_servers: Option<IgnoredAny>,
    /// The message-threads beta's `thread` (`super::threads`).
    #[serde(default)]
    pub thread: Option<Thread>,
}

/// A request's `thread` (the message-threads beta).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum Thread {
    /// Keep this conversation, with its answer, under the answer's `id`. (A struct
    /// variant: a unit one would take keys it does not define.)
    Create {},
    /// Continue from the answer `previous_message_id` with only the new messages.
    Continue {
        /// The `id` of the thread's last answer.
        previous_message_id: String,
    },
}

/// A string, or a list of `T` (message content, `system`, a tool result's content). Read
/// by hand rather than as an untagged enum: no buffering, and an error saying what was
/// expected.
#[derive(Debug)]
pub(super) enum StrOr<T> {
    Str(String),
    List(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for StrOr<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = StrOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<StrOr<T>, E> {
                Ok(StrOr::Str(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<StrOr<T>, E> {
                Ok(StrOr::Str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<StrOr<T>, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(StrOr::List)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A turn: `role` and `content` (Anthropic's `MessageParam`), and on a system turn
/// (SDK 2.15's `BetaSystemMessageParam`) `clear_at` and the per-turn `output_config`,
/// where `content` may be left out. Read by hand: any other key is recorded for the beta
/// rule ([`keys`]) without buffering the turn's content.
#[derive(Debug)]
struct WireMessage {
    role: String,
    content: Option<StrOr<Block>>,
    /// How long a system turn's text stays in front of the model.
    clear_at: Option<String>,
    output_config: Option<TurnOutput>,
    other: keys::UnknownKeys,
}

impl<'de> Deserialize<'de> for WireMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Turn;
        impl<'de> Visitor<'de> for Turn {
            type Value = WireMessage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireMessage, A::Error> {
                let mut role = None;
                let mut turn = WireMessage {
                    role: String::new(),
                    content: None,
                    clear_at: None,
                    output_config: None,
                    other: keys::UnknownKeys::default(),
                };
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "role" => role = Some(map.next_value()?),
                        "content" => turn.content = Some(map.next_value()?),
                        "clear_at" => turn.clear_at = map.next_value()?,
                        "output_config" => turn.output_config = map.next_value()?,
                        other => {
                            map.next_value::<IgnoredAny>()?;
                            turn.other.push(other);
                        }
                    }
                }
                turn.role = role.ok_or_else(|| A::Error::missing_field("role"))?;
                Ok(turn)
            }
        }
        d.deserialize_map(Turn)
    }
}

/// A system turn's `output_config`: settings for the turn it precedes (`format` stays
/// top-level only).
#[derive(Debug, Deserialize)]
struct TurnOutput {
    #[serde(default)]
    effort: Option<String>,
    #[serde(flatten)]
    other: keys::UnknownKeys,
}

/// One entry of `tools`: a custom (client) tool. Server tools have a dated `type`.
#[derive(Debug, Deserialize)]
struct WireTool {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    cache_control: Option<IgnoredAny>,
    /// Newer tool settings the shared shape has no room for (`strict`, `defer_loading`,
    /// `input_examples`, ...): sent to Anthropic in the client's body, named in
    /// `x-switchyard-ignored` (`tools.strict`) when another vendor answers.
    #[serde(flatten)]
    other: serde_json::Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireToolChoice {
    Auto {
        #[serde(default)]
        disable_parallel_tool_use: bool,
    },
    Any {
        #[serde(default)]
        disable_parallel_tool_use: bool,
    },
    Tool {
        name: String,
        #[serde(default)]
        disable_parallel_tool_use: bool,
    },
    None,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking {
    Enabled { budget_tokens: u32 },
    Adaptive,
    Disabled,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct OutputConfig {
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    format: Option<JsonFormat>,
    /// Keys not modelled (`task_budget`, ...: the beta rule, [`keys`]).
    #[serde(flatten)]
    other: keys::UnknownKeys,
}

/// `{"type": "json_schema", "schema": {...}}`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum JsonFormat {
    JsonSchema { schema: Value },
}

/// Parse a body, naming the field at fault in Anthropic's terms (`messages.1.content.0.type`);
/// top-level fields Anthropic does not define are set aside and returned by name (a route
/// may pass them through: `Messages::prepare`).
///
/// A body that parses pays for no path tracking; one that does not is parsed again with
/// it, to name the field.
///
/// # Errors
/// 400 naming the field.
pub(super) fn parse(body: &[u8]) -> Result<(WireRequest, Vec<String>), ApiError> {
    json::parse_setting_aside(body, |path, message| {
        let (param, text) = refine(anthropic_path(&path), &message);
        let text = elide(&text, PARSER_MESSAGE_BYTES);
        let msg = match &param {
            Some(p) => format!("{}: {text}", clip(p, ECHO_BYTES)),
            None => format!("invalid request body: {text}"),
        };
        ApiError::bad_request(param, msg)
    })
}

/// serde's `messages[1].content[0]` as Anthropic writes it: `messages.1.content.0`.
fn anthropic_path(serde_path: &str) -> String {
    serde_path.replace('[', ".").replace(']', "")
}

/// Name the field a serde error is about: an unknown or missing field at the root is the
/// field itself; an unknown block `type` is the block's `type`.
fn refine(path: String, text: &str) -> (Option<String>, String) {
    let quoted = |prefix: &str| {
        text.strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned)
    };
    let at = |field: String| {
        if path == "." {
            field
        } else if path == field || path.ends_with(&format!(".{field}")) {
            path.clone()
        } else {
            format!("{path}.{field}")
        }
    };
    if let Some(field) = quoted("unknown field `") {
        return (Some(at(field)), "Extra inputs are not permitted".to_owned());
    }
    if let Some(field) = quoted("missing field `") {
        return (Some(at(field)), "Field required".to_owned());
    }
    if text.starts_with("unknown variant") {
        return (Some(at("type".to_owned())), text.to_owned());
    }
    ((path != ".").then_some(path), text.to_owned())
}

/// Anthropic's 400 for fields it does not define: the first named, all listed.
pub(super) fn extra_inputs(first: &str, list: &str) -> ApiError {
    ApiError::bad_request(
        Some(first.to_owned()),
        format!("{list}: Extra inputs are not permitted"),
    )
}

fn bad(param: &str, msg: impl fmt::Display) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), format!("{param}: {msg}"))
}

impl WireRequest {
    /// The shared shape, checking what serde cannot; the conversation's text is moved, not
    /// copied. Fields not carried go into `ignored`.
    ///
    /// # Errors
    /// 400 naming the field.
    pub(super) fn into_chat(mut self, ignored: &mut Ignored) -> Result<ChatRequest, ApiError> {
        self.check_scalars()?;
        self.refuse_server_features()?;
        self.note_ignored(ignored)?;
        let format = self.response_format();
        let user = self.user(ignored);
        let tools = tools(self.tools.take(), ignored)?;
        let (tool_choice, serial) = self.tool_choice.take().map(tool_choice).unzip();
        let system = self.system.take();
        let conversation =
            turns::conversation(system, std::mem::take(&mut self.messages), ignored)?;
        let reasoning_effort = self.effort(conversation.effort, ignored);
        Ok(ChatRequest {
            messages: conversation.messages,
            max_tokens: Some(self.max_tokens),
            temperature: self.temperature,
            top_p: self.top_p,
            stop: self.stop_sequences.unwrap_or_default(),
            tools: toolset::apply(tools, conversation.tool_changes),
            tool_choice,
            response_format: format,
            user,
            top_k: self.top_k,
            parallel_tool_calls: serial.filter(|s| *s).map(|_| false),
            reasoning_effort,
            service_tier: self.service_tier.map(service_tier),
            ..ChatRequest::default()
        })
    }

    /// `container` and `mcp_servers` need Anthropic's servers: refused, never dropped.
    fn refuse_server_features(&self) -> Result<(), ApiError> {
        if self.container.is_some() {
            return Err(bad(
                "container",
                "containers (code execution) are not supported by this gateway",
            ));
        }
        if self.mcp_servers.is_some() {
            return Err(bad(
                "mcp_servers",
                "MCP servers are not supported by this gateway",
            ));
        }
        Ok(())
    }

    /// The top-level fields the shared shape does not carry, and `output_config`'s keys
    /// the dialect does not model.
    fn note_ignored(&self, ignored: &mut Ignored) -> Result<(), ApiError> {
        ignored.add_if(self.cache_control.is_some(), "cache_control");
        ignored.add_if(self.context_management.is_some(), "context_management");
        ignored.add_if(self.inference_geo.is_some(), "inference_geo");
        ignored.add_if(self.speed.is_some(), "speed");
        ignored.add_if(self.diagnostics.is_some(), "diagnostics");
        if let Some(config) = &self.output_config {
            ignored.unknown(&config.other, "output_config", "output_config")?;
        }
        Ok(())
    }

    /// The reasoning effort asked for: the effort a system turn set for this answer, else
    /// `output_config.effort`, else what `thinking` says (`effort_of`). An effort the
    /// shared shape has no word for, or one given with thinking disabled (where it tunes
    /// only how Anthropic writes), is named instead.
    fn effort(&self, turn: Option<String>, ignored: &mut Ignored) -> Option<ReasoningEffort> {
        let thinking = effort_of(self.thinking.as_ref());
        let (word, name) = match (turn, self.output_config.as_ref()) {
            (Some(word), _) => (word, "messages.output_config.effort"),
            (
                None,
                Some(OutputConfig {
                    effort: Some(word), ..
                }),
            ) => (word.clone(), "output_config.effort"),
            (None, _) => return thinking,
        };
        let off = matches!(self.thinking, Some(Thinking::Disabled));
        match effort_word(&word).filter(|_| !off) {
            Some(effort) => Some(effort),
            None => {
                ignored.add(name);
                thinking
            }
        }
    }

    /// `output_config.format` (or the beta's `output_format`) as the shared JSON schema format.
    fn response_format(&mut self) -> Option<ResponseFormat> {
        let config = self.output_config.as_mut().and_then(|c| c.format.take());
        config
            .or_else(|| self.output_format.take())
            .map(json_format)
    }

    /// `metadata.user_id` as the shared `user`; one too long to keep is ignored, not refused.
    fn user(&mut self, ignored: &mut Ignored) -> Option<String> {
        let user = self.metadata.take().and_then(|m| m.user_id)?;
        if longer_than(&user, MAX_NAME_CHARS) {
            ignored.add("metadata.user_id");
            return None;
        }
        Some(user)
    }

    /// The route name in `model`, taken out of the request once it is known to be a name:
    /// one longer than `MAX_NAME_CHARS` is refused before anything looks it up or quotes it.
    ///
    /// # Errors
    /// 400 naming `model`.
    pub(super) fn take_model(&mut self) -> Result<String, ApiError> {
        if longer_than(&self.model, MAX_NAME_CHARS) {
            return Err(bad(
                "model",
                format!("longer than {MAX_NAME_CHARS} characters"),
            ));
        }
        Ok(std::mem::take(&mut self.model))
    }

    fn check_scalars(&self) -> Result<(), ApiError> {
        if self.max_tokens == 0 {
            return Err(bad("max_tokens", "must be at least 1"));
        }
        // a thread's `continue` sends only what is new: nothing, to resume a paused turn
        let continues = matches!(self.thread, Some(Thread::Continue { .. }));
        if self.messages.is_empty() && !continues {
            return Err(bad("messages", "at least one message is required"));
        }
        if self.temperature.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
            return Err(bad("temperature", "must be between 0 and 1"));
        }
        if self.top_p.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
            return Err(bad("top_p", "must be between 0 and 1"));
        }
        if let Some(tier) = self.service_tier.as_deref() {
            if tier != "auto" && tier != "standard_only" {
                return Err(bad("service_tier", "must be one of auto, standard_only"));
            }
        }
        if let Some(Thinking::Enabled { budget_tokens }) = &self.thinking {
            if *budget_tokens < 1024 {
                return Err(bad(
                    "thinking.enabled.budget_tokens",
                    "must be at least 1024",
                ));
            }
        }
        Ok(())
    }
}

fn json_format(f: JsonFormat) -> ResponseFormat {
    let JsonFormat::JsonSchema { schema } = f;
    ResponseFormat::JsonSchema {
        name: "output".to_owned(),
        schema,
        strict: Some(true),
    }
}

/// Each system block a system message of its own (so that no vendor runs them together).
fn system_messages(
    system: StrOr<SystemBlock>,
    at: &str,
    out: &mut Vec<Message>,
    ignored: &mut Ignored,
) -> Result<(), ApiError> {
    match system {
        StrOr::Str(text) => out.push(Message::system(text)),
        StrOr::List(blocks) => system_blocks(blocks, at, out, ignored)?,
    }
    Ok(())
}

/// The blocks of `system` (at `system`) or of a `mid_conv_system` block (at its
/// `content`), each a system message: text, or (under a beta) a block of a type a later
/// beta allows there, which only Anthropic is given (`keys`), its JSON standing in.
fn system_blocks(
    blocks: Vec<SystemBlock>,
    at: &str,
    out: &mut Vec<Message>,
    ignored: &mut Ignored,
) -> Result<(), ApiError> {
    let scope = if at == "system" { "system" } else { "text" };
    for (j, b) in blocks.into_iter().enumerate() {
        let at = format!("{at}.{j}");
        let b = match b {
            SystemBlock::Text(b) => b,
            SystemBlock::Unmodelled(other) => {
                ignored.unknown_block(&at, || {
                    bad(
                        &format!("{at}.type"),
                        format!("{:?}: only text blocks are allowed here", other.kind),
                    )
                })?;
                out.push(Message::system(other.json));
                continue;
            }
        };
        ignored.unknown(&b.other, &at, scope)?;
        ignored.add_if(b.cache_control.is_some(), "cache_control");
        ignored.add_if(b.citations.is_some(), "citations");
        out.push(Message::system(b.text));
    }
    Ok(())
}

fn tools(tools: Option<Vec<WireTool>>, ignored: &mut Ignored) -> Result<Vec<Tool>, ApiError> {
    let Some(tools) = tools else {
        return Ok(Vec::new());
    };
    tools
        .into_iter()
        .enumerate()
        .map(|(i, t)| tool(t, &format!("tools.{i}"), ignored))
        .collect()
}

/// One custom tool (a `tools` entry at `at`, or a definition a tool change carries).
fn tool(t: WireTool, at: &str, ignored: &mut Ignored) -> Result<Tool, ApiError> {
    if let Some(kind) = t.kind.as_deref().filter(|k| *k != "custom") {
        return Err(bad(
            &format!("{at}.type"),
            format!(
                "server tool {:?} is not supported by this gateway; only custom tools (name, description, input_schema) are",
                clip(kind, ECHO_BYTES)
            ),
        ));
    }
    let name = t
        .name
        .ok_or_else(|| bad(&format!("{at}.name"), "Field required"))?;
    let schema = t
        .input_schema
        .ok_or_else(|| bad(&format!("{at}.input_schema"), "Field required"))?;
    if !schema.is_object() {
        return Err(bad(
            &format!("{at}.input_schema"),
            "must be a JSON Schema object",
        ));
    }
    ignored.add_if(t.cache_control.is_some(), "cache_control");
    // newer settings Anthropic takes natively (accepted without a beta: the SDK types
    // them); named, as a header can carry them, when another vendor answers
    for key in t.other.keys() {
        ignored.add_key("tools", key);
    }
    Ok(Tool {
        name,
        description: t.description,
        parameters: schema,
        cache_control: None,
    })
}

fn tool_choice(c: WireToolChoice) -> (ToolChoice, bool) {
    let (choice, serial) = match c {
        WireToolChoice::Auto {
            disable_parallel_tool_use,
        } => (ToolChoice::Auto, disable_parallel_tool_use),
        WireToolChoice::Any {
            disable_parallel_tool_use,
        } => (ToolChoice::Required, disable_parallel_tool_use),
        WireToolChoice::Tool {
            name,
            disable_parallel_tool_use,
        } => (ToolChoice::Tool(name), disable_parallel_tool_use),
        WireToolChoice::None => (ToolChoice::None, false),
    };
    (choice, serial)
}

/// `thinking` as a reasoning effort (docs/fields.md): a budget up to 1024 tokens is
/// `minimal`, up to 4096 `low`, up to 16384 `medium`, above `high`; `adaptive` (the model
/// decides) is `medium`; `disabled` (Anthropic's default) sets none.
fn effort_of(thinking: Option<&Thinking>) -> Option<ReasoningEffort> {
    Some(match thinking? {
        Thinking::Enabled { budget_tokens } => match budget_tokens {
            0..=1024 => ReasoningEffort::Minimal,
            1025..=4096 => ReasoningEffort::Low,
            4097..=16384 => ReasoningEffort::Medium,
            _ => ReasoningEffort::High,
        },
        Thinking::Adaptive => ReasoningEffort::Medium,
        Thinking::Disabled => return None,
    })
}

/// Anthropic's effort words in the shared shape's: `low`, `medium`, `high`; `xhigh` and
/// `max` are `high` (the most the shared shape says); another word has no equivalent.
fn effort_word(word: &str) -> Option<ReasoningEffort> {
    match word {
        "low" => Some(ReasoningEffort::Low),
        "medium" => Some(ReasoningEffort::Medium),
        "high" | "xhigh" | "max" => Some(ReasoningEffort::High),
        _ => None,
    }
}

/// Anthropic's `service_tier` in OpenAI's words (the shared shape's): `auto` is `auto`,
/// `standard_only` is `default`; another word is kept as sent.
fn service_tier(tier: String) -> String {
    match tier.as_str() {
        "standard_only" => "default".to_owned(),
        _ => tier,
    }
}
