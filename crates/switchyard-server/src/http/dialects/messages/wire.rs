//! Anthropic's Messages request JSON, as clients send it (the official SDK's
//! `MessageCreateParams`, betas included), and its mapping into switchyard's shared shape.
//!
//! Unknown top-level fields are refused by name (as Anthropic does); inside blocks, fields
//! the shape does not need are let through (the SDK adds them over time). An Anthropic
//! provider gets the client's own body instead (`super` sets it as the native body). What
//! the shared shape cannot carry is either named in `x-switchyard-ignored` when another
//! vendor answers (advisory fields, and for
//! now the output-changing ones the shape has no room for: a tool result's `is_error`,
//! `output_config.effort`) or refused with a 400 naming
//! the field in Anthropic's terms (`messages.1.content.0.type`): server tools,
//! `container`, `mcp_servers`, document blocks.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use switchyard::chat::{
    ContentPart, ImageSource, Message, ReasoningEffort, ResponseFormat, Tool, ToolCall, ToolChoice,
};
use switchyard::{ChatRequest, Role};

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
    system: Option<StrOr<TextBlock>>,
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

/// A `text` block of `system` or of a mid-conversation system block.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock {
    #[serde(rename = "type")]
    kind: String,
    text: String,
    #[serde(default)]
    cache_control: Option<IgnoredAny>,
    #[serde(default)]
    citations: Option<IgnoredAny>,
}

/// A turn: Anthropic's `MessageParam` has these two fields only, and refuses any other.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireMessage {
    role: String,
    content: StrOr<Block>,
}

/// A content block of a request turn: each kind with the fields Anthropic's reference
/// gives it, and no other (Anthropic refuses any other key in a block, and so do we, by
/// its path: a key we did not model would otherwise vanish when another vendor answers).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Block {
    Text {
        text: String,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        /// Citations an earlier answer made (kept for Anthropic in the client's body).
        #[serde(default)]
        citations: Option<IgnoredAny>,
    },
    Image {
        source: WireImageSource,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(default)]
        transformations: Option<IgnoredAny>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        /// Who made the call (programmatic tool calling) and the toolset it came from:
        /// Anthropic's own bookkeeping, named when another vendor answers.
        #[serde(default)]
        caller: Option<IgnoredAny>,
        #[serde(default)]
        toolset_name: Option<IgnoredAny>,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<StrOr<Block>>,
        #[serde(default)]
        is_error: bool,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
        #[serde(default)]
        toolset_name: Option<IgnoredAny>,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    MidConvSystem {
        content: Vec<TextBlock>,
        #[serde(default)]
        cache_control: Option<IgnoredAny>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
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

/// How many distinct unknown tool settings are named one by one; past it, `tools.*`.
const TOOL_SETTINGS_NAMED: usize = 8;

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
    effort: Option<IgnoredAny>,
    #[serde(default)]
    format: Option<JsonFormat>,
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

/// Fields the request used that the shared shape does not carry (`x-switchyard-ignored`),
/// each named once.
#[derive(Debug, Default)]
pub(super) struct Ignored(Vec<String>);

impl Ignored {
    fn add(&mut self, name: &str) {
        if !self.0.iter().any(|n| n == name) {
            self.0.push(name.to_owned());
        }
    }

    fn add_if(&mut self, used: bool, name: &str) {
        if used {
            self.add(name);
        }
    }

    /// The names, in the order first seen.
    pub(super) fn into_names(self) -> Vec<String> {
        self.0
    }
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
        self.note_ignored(ignored);
        let format = self.response_format();
        let user = self.user(ignored);
        let tools = tools(self.tools, ignored)?;
        let (tool_choice, serial) = self.tool_choice.map(tool_choice).unzip();
        let mut turns = Turns {
            out: Vec::with_capacity(self.messages.len() + 3),
            names: HashMap::new(),
            ignored,
        };
        if let Some(system) = self.system {
            system_messages(system, "system", &mut turns.out, turns.ignored)?;
        }
        for (i, m) in self.messages.into_iter().enumerate() {
            turns.push(i, m)?;
        }
        Ok(ChatRequest {
            messages: turns.out,
            max_tokens: Some(self.max_tokens),
            temperature: self.temperature,
            top_p: self.top_p,
            stop: self.stop_sequences.unwrap_or_default(),
            tools,
            tool_choice,
            response_format: format,
            user,
            top_k: self.top_k,
            parallel_tool_calls: serial.filter(|s| *s).map(|_| false),
            reasoning_effort: effort_of(self.thinking.as_ref()),
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

    /// The top-level fields the shared shape does not carry.
    fn note_ignored(&self, ignored: &mut Ignored) {
        ignored.add_if(self.cache_control.is_some(), "cache_control");
        ignored.add_if(self.context_management.is_some(), "context_management");
        ignored.add_if(self.inference_geo.is_some(), "inference_geo");
        ignored.add_if(self.speed.is_some(), "speed");
        let effort = self
            .output_config
            .as_ref()
            .is_some_and(|c| c.effort.is_some());
        ignored.add_if(effort, "output_config.effort");
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

    fn check_scalars(&self) -> Result<(), ApiError> {
        if longer_than(&self.model, MAX_NAME_CHARS) {
            return Err(bad(
                "model",
                format!("longer than {MAX_NAME_CHARS} characters"),
            ));
        }
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
    system: StrOr<TextBlock>,
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

fn system_blocks(
    blocks: Vec<TextBlock>,
    at: &str,
    out: &mut Vec<Message>,
    ignored: &mut Ignored,
) -> Result<(), ApiError> {
    for (j, b) in blocks.into_iter().enumerate() {
        if b.kind != "text" {
            return Err(bad(
                &format!("{at}.{j}.type"),
                format!(
                    "{:?}: only text blocks are allowed here",
                    clip(&b.kind, ECHO_BYTES)
                ),
            ));
        }
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
        .map(|(i, t)| {
            if let Some(kind) = t.kind.as_deref().filter(|k| *k != "custom") {
                return Err(bad(
                    &format!("tools.{i}.type"),
                    format!(
                        "server tool {:?} is not supported by this gateway; only custom tools (name, description, input_schema) are",
                        clip(kind, ECHO_BYTES)
                    ),
                ));
            }
            let name = t.name.ok_or_else(|| bad(&format!("tools.{i}.name"), "Field required"))?;
            let schema = t
                .input_schema
                .ok_or_else(|| bad(&format!("tools.{i}.input_schema"), "Field required"))?;
            if !schema.is_object() {
                return Err(bad(&format!("tools.{i}.input_schema"), "must be a JSON Schema object"));
            }
            ignored.add_if(t.cache_control.is_some(), "cache_control");
            for key in t.other.keys() {
                // a name, as a header can carry it; anything else (or too many) is `tools.*`
                let plain = key.len() <= 64
                    && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                let named = ignored.0.iter().filter(|n| n.starts_with("tools.")).count();
                if plain && named < TOOL_SETTINGS_NAMED {
                    ignored.add(&format!("tools.{key}"));
                } else {
                    ignored.add("tools.*");
                }
            }
            Ok(Tool {
                name,
                description: t.description,
                parameters: schema,
                cache_control: None,
            })
        })
        .collect()
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

/// Anthropic's `service_tier` in OpenAI's words (the shared shape's): `auto` is `auto`,
/// `standard_only` is `default`; another word is kept as sent.
fn service_tier(tier: String) -> String {
    match tier.as_str() {
        "standard_only" => "default".to_owned(),
        _ => tier,
    }
}

/// Tool-use ids and the names of their tools (a tool result in the shared shape names its
/// function: Gemini needs it).
type Names = HashMap<String, String>;

/// The conversation being built, turn by turn.
struct Turns<'i> {
    out: Vec<Message>,
    names: Names,
    ignored: &'i mut Ignored,
}

impl Turns<'_> {
    /// A turn as shared-shape messages: a system turn as system messages; a user turn's
    /// tool results as tool messages (first), its other blocks as one user message; an
    /// assistant turn's text and tool calls as one assistant message; a mid-conversation
    /// system block as a system message where it stands.
    fn push(&mut self, i: usize, m: WireMessage) -> Result<(), ApiError> {
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => Role::System,
            other => {
                return Err(bad(
                    &format!("messages.{i}.role"),
                    format!(
                        "{:?} is not one of user, assistant, system",
                        clip(other, ECHO_BYTES)
                    ),
                ))
            }
        };
        let blocks = match m.content {
            StrOr::Str(text) => {
                self.out.push(Message::text(role, text));
                return Ok(());
            }
            StrOr::List(blocks) => blocks,
        };
        let mut turn = empty(role);
        for (j, block) in blocks.into_iter().enumerate() {
            self.block(&mut turn, block, &format!("messages.{i}.content.{j}"))?;
        }
        self.flush(&mut turn);
        Ok(())
    }

    /// One block into `turn` (or, for tool results and system blocks, before it).
    fn block(&mut self, turn: &mut Message, block: Block, at: &str) -> Result<(), ApiError> {
        let role = turn.role;
        let misplaced = |what: &str| {
            let name = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::System | Role::Developer | Role::Tool => "system",
            };
            Err(bad(
                at,
                format!("{what} blocks are not allowed in {name} turns"),
            ))
        };
        match block {
            Block::Text {
                text,
                cache_control,
                citations,
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored.add_if(citations.is_some(), "citations");
                turn.content.push(ContentPart::Text { text });
            }
            Block::Image { .. } if role == Role::Assistant => return misplaced("image"),
            Block::Image {
                source,
                cache_control,
                transformations,
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored
                    .add_if(transformations.is_some(), "image.transformations");
                turn.content.push(image(source));
            }
            Block::ToolUse { .. } if role != Role::Assistant => return misplaced("tool_use"),
            Block::ToolUse {
                id,
                name,
                input,
                cache_control,
                caller,
                toolset_name,
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored.add_if(caller.is_some(), "tool_use.caller");
                self.ignored
                    .add_if(toolset_name.is_some(), "tool_use.toolset_name");
                self.names.insert(id.clone(), name.clone());
                let arguments = if input.is_null() {
                    "{}".to_owned()
                } else {
                    input.to_string()
                };
                turn.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            Block::ToolResult { .. } if role != Role::User => return misplaced("tool_result"),
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                cache_control,
                toolset_name,
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored
                    .add_if(toolset_name.is_some(), "tool_result.toolset_name");
                self.ignored.add_if(is_error, "tool_result.is_error");
                let result = tool_message(tool_use_id, content, &self.names, at)?;
                self.out.push(result);
            }
            Block::Thinking { .. } | Block::RedactedThinking { .. } if role != Role::Assistant => {
                return misplaced("thinking");
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                // carried for Anthropic providers; another vendor leaves it out
                self.ignored.add("thinking");
                turn.thinking.push(switchyard::chat::Thinking {
                    text: thinking,
                    signature: Some(signature),
                    redacted: None,
                });
            }
            Block::RedactedThinking { data } => {
                self.ignored.add("thinking");
                turn.thinking.push(switchyard::chat::Thinking {
                    redacted: Some(data),
                    ..switchyard::chat::Thinking::default()
                });
            }
            Block::MidConvSystem {
                content,
                cache_control,
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.flush(turn);
                system_blocks(
                    content,
                    &format!("{at}.content"),
                    &mut self.out,
                    self.ignored,
                )?;
            }
        }
        Ok(())
    }

    /// Push `turn` if it has anything, leaving an empty one of the same role.
    fn flush(&mut self, turn: &mut Message) {
        if turn.content.is_empty() && turn.tool_calls.is_empty() {
            return;
        }
        let next = empty(turn.role);
        self.out.push(std::mem::replace(turn, next));
    }
}

/// A message of `role` with nothing in it yet.
fn empty(role: Role) -> Message {
    let mut m = Message::text(role, "");
    m.content.clear();
    m
}

fn tool_message(
    id: String,
    content: Option<StrOr<Block>>,
    names: &Names,
    at: &str,
) -> Result<Message, ApiError> {
    let parts = match content {
        None => Vec::new(),
        Some(StrOr::Str(text)) => vec![ContentPart::Text { text }],
        Some(StrOr::List(blocks)) => blocks
            .into_iter()
            .enumerate()
            .map(|(k, b)| match b {
                Block::Text { text, .. } => Ok(ContentPart::Text { text }),
                Block::Image { source, .. } => Ok(image(source)),
                _ => Err(bad(
                    &format!("{at}.content.{k}.type"),
                    "a tool result holds text and image blocks only",
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let mut m = Message::tool_result(id.clone(), names.get(&id).cloned().unwrap_or_default(), "");
    m.content = parts;
    Ok(m)
}

fn image(source: WireImageSource) -> ContentPart {
    let source = match source {
        WireImageSource::Base64 { media_type, data } => ImageSource::Base64 { media_type, data },
        WireImageSource::Url { url } => ImageSource::Url { url },
    };
    ContentPart::Image {
        source,
        detail: None,
    }
}
