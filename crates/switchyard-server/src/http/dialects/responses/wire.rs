//! The Responses API request as clients send it, and its mapping to the shared shape.
//!
//! Top-level fields are checked by name: one OpenAI does not define is a 400 naming it (as
//! OpenAI answers); one it defines that the shared shape cannot carry is either advisory
//! (named in `x-switchyard-ignored`) or refused by name. `input` items, tools and the tool
//! choice are read by hand from JSON values, so a bad one is named by its path
//! (`input[2].call_id`, `tools[0].type`).

use serde::Deserialize;
use serde_json::{Map, Value};
use switchyard::chat::{ContentPart, Message, ResponseFormat, Tool, ToolCall, ToolChoice};
use switchyard::Role;

use super::sealed;
use crate::http::bounds::{clip, longer_than, ECHO_BYTES};
use crate::http::dialects::chat::wire::image_source;
use crate::http::dialects::json;
use crate::http::error::ApiError;

/// How much of a parser's message (which may quote the client's value) a 400 carries.
/// OpenAI's bounds on `metadata`: pairs, key and value lengths (characters).
const METADATA_PAIRS: usize = 16;
const METADATA_KEY_CHARS: usize = 64;
const METADATA_VALUE_CHARS: usize = 512;

/// The request body. Every field OpenAI defines is listed, so that any other is refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WireRequest {
    pub model: String,
    pub input: Option<WireInput>,
    pub instructions: Option<String>,
    #[serde(default)]
    pub stream: Option<bool>,
    pub store: Option<bool>,
    pub previous_response_id: Option<String>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub text: Option<WireText>,
    pub reasoning: Option<WireReasoning>,
    pub metadata: Option<Map<String, Value>>,
    pub user: Option<String>,
    pub include: Option<Vec<String>>,
    pub prompt_cache_key: Option<String>,
    pub prompt_cache_retention: Option<Value>,
    pub prompt_cache_options: Option<Value>,
    pub safety_identifier: Option<String>,
    pub service_tier: Option<String>,
    pub stream_options: Option<Value>,
    pub client_metadata: Option<Value>,
    pub truncation: Option<String>,
    pub background: Option<bool>,
    pub max_tool_calls: Option<u32>,
    pub top_logprobs: Option<u32>,
    pub conversation: Option<Value>,
    pub prompt: Option<Value>,
    pub moderation: Option<Value>,
    pub context_management: Option<Value>,
}

/// `input`: a string (one user message) or a list of items. (Read by hand rather than as
/// an untagged enum: no buffering of the value, and an error that says what was expected.)
#[derive(Debug)]
pub(super) enum WireInput {
    Text(String),
    Items(Vec<WireItem>),
}

/// One `input` item: a plain message read straight into its parts, or anything else as
/// the `serde_json::Value` it always was (read by [`Conversation::item`] by hand).
#[derive(Debug, PartialEq)]
pub(super) enum WireItem {
    /// An object with a string `role` that names a role, a string `content`, at most a
    /// `type` of `"message"` or `null` besides, and no key twice: what
    /// [`Conversation::item`] reads from its `Value` into exactly this message, with no
    /// unmodelled key to note. (The common item: a chat turn.)
    Message {
        role: Role,
        text: String,
    },
    Value(Value),
}

impl<'de> Deserialize<'de> for WireItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ItemVisitor)
    }
}

/// Reads an input item as `serde_json::Value`'s own visitor does (the same calls on the
/// deserializer, so the same errors), keeping a plain message's role and text instead of
/// building its map.
struct ItemVisitor;

/// What of a plain message has been read (see [`WireItem::Message`]).
#[derive(Default)]
struct Plain {
    kind: Option<Value>,
    role: Option<Value>,
    content: Option<Value>,
}

impl Plain {
    /// Keep `value` under `key` when it is one a plain message may hold, not yet seen;
    /// else give it back.
    fn keep(&mut self, key: &str, value: Value) -> Result<(), Value> {
        let (slot, fits) = match key {
            "type" => (
                &mut self.kind,
                matches!(&value, Value::Null) || value == "message",
            ),
            "role" => (&mut self.role, value.as_str().and_then(role_of).is_some()),
            "content" => (&mut self.content, value.is_string()),
            _ => return Err(value),
        };
        if !fits || slot.is_some() {
            return Err(value);
        }
        *slot = Some(value);
        Ok(())
    }

    /// What was kept, as the object it came from (in any order: the map sorts its keys).
    fn into_map(self) -> Map<String, Value> {
        let mut map = Map::new();
        for (key, value) in [
            ("type", self.kind),
            ("role", self.role),
            ("content", self.content),
        ] {
            if let Some(value) = value {
                map.insert(key.to_owned(), value);
            }
        }
        map
    }
}

/// A message's role by its name.
fn role_of(name: &str) -> Option<Role> {
    Some(match name {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "developer" => Role::Developer,
        _ => return None,
    })
}

/// A map key, borrowed from the body when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The key serde_json's `Value` reads, as the first of a map, as a raw value written as a
/// string (its `raw_value` feature; serde_json's src/raw.rs, `TOKEN`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// That raw value's string, read as serde_json's `BoxedFromString` reads it.
struct RawValueString;

impl<'de> serde::de::DeserializeSeed<'de> for RawValueString {
    type Value = String;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for RawValueString {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("raw value")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }
}

impl<'de> serde::de::Visitor<'de> for ItemVisitor {
    type Value = WireItem;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::Bool(b)))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::from(n)))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::from(n)))
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<WireItem, E> {
        Ok(WireItem::Value(
            serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::String(s.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::String(s)))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<WireItem, E> {
        Ok(WireItem::Value(Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<WireItem, A::Error> {
        Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(WireItem::Value)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WireItem, A::Error> {
        let mut plain = Plain::default();
        let mut first = true;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if std::mem::take(&mut first) && key == RAW_VALUE_TOKEN {
                let raw = map.next_value_seed(RawValueString)?;
                let value = serde_json::from_str(&raw).map_err(serde::de::Error::custom)?;
                return Ok(WireItem::Value(value));
            }
            let value: Value = map.next_value()?;
            if let Err(value) = plain.keep(&key, value) {
                // not a plain message: the rest read as `Value` reads a map
                let mut obj = plain.into_map();
                obj.insert(key.into_owned(), value);
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    obj.insert(key, value);
                }
                return Ok(WireItem::Value(Value::Object(obj)));
            }
        }
        let role = plain
            .role
            .as_ref()
            .and_then(Value::as_str)
            .and_then(role_of);
        match (role, plain.content.take()) {
            (Some(role), Some(Value::String(text))) => Ok(WireItem::Message { role, text }),
            (_, content) => {
                plain.content = content;
                Ok(WireItem::Value(Value::Object(plain.into_map())))
            }
        }
    }
}

impl<'de> Deserialize<'de> for WireInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Input;
        impl<'de> serde::de::Visitor<'de> for Input {
            type Value = WireInput;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of input items")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<WireInput, E> {
                Ok(WireInput::Text(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<WireInput, E> {
                Ok(WireInput::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<WireInput, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(WireInput::Items)
            }
        }
        d.deserialize_any(Input)
    }
}

/// `text`: the output format (and verbosity).
#[derive(Debug, Deserialize)]
pub(super) struct WireText {
    pub format: Option<WireFormat>,
    pub verbosity: Option<String>,
}

/// `text.format`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireFormat {
    Text,
    JsonObject,
    JsonSchema {
        name: String,
        schema: Option<Value>,
        strict: Option<bool>,
        description: Option<String>,
    },
}

/// `reasoning`.
#[derive(Debug, Deserialize)]
pub(super) struct WireReasoning {
    pub effort: Option<String>,
    pub summary: Option<String>,
    pub generate_summary: Option<String>,
}

/// Parse a body, naming the field at fault; top-level fields OpenAI does not define are
/// set aside and returned by name (a route may pass them through: `prepare`).
///
/// # Errors
/// 400 with `param` set to the JSON path of the bad field.
pub(super) fn parse(body: &[u8]) -> Result<(WireRequest, Vec<String>), ApiError> {
    json::parse_setting_aside(body, |path, message| {
        if let Some(field) = unknown_field(&message) {
            let param = if path == "." || path == field {
                field.to_owned()
            } else {
                path
            };
            return unknown_parameter(&param);
        }
        json::invalid_field(path, &message)
    })
}

/// OpenAI's 400 for a field it does not define.
pub(super) fn unknown_parameter(param: &str) -> ApiError {
    bad(
        param,
        format!("Unknown parameter: '{}'.", clip(param, ECHO_BYTES)),
    )
}

/// The name in serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

pub(super) fn bad(param: &str, msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), msg)
}

/// The input items as the shared shape's messages, oldest first.
#[derive(Debug, Default)]
pub(super) struct Conversation {
    pub messages: Vec<Message>,
    /// Tool results whose call is not in the input: (message index, input item index).
    /// Their function names come from the stored conversation, or they are refused.
    pub unanswered: Vec<(usize, usize)>,
    /// Reasoning items left out: not in our sealed format (another server's, OpenAI's
    /// own encrypted reasoning) or without `encrypted_content`.
    pub foreign_reasoning: bool,
    /// Items only a provider taking the body natively can read (a built-in tool's call
    /// from an earlier turn): (path, what), for the 400 when none can.
    pub native_only: Vec<(String, String)>,
    /// Keys of input items and content parts the shared shape does not model, named
    /// `input.{type}.{key}` (a few, then `input.*`): in the client's body for providers
    /// that take it natively, named in `x-switchyard-ignored` when another vendor answers.
    pub unmodelled: Unmodelled,
}

/// The keys of input items and content parts each type is known to have (OpenAI's
/// reference; `id` and `status` are echoes of an earlier response that change nothing).
fn known_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "message" => &["type", "role", "content", "id", "status"],
        "function_call" => &["type", "id", "call_id", "name", "arguments", "status"],
        "function_call_output" => &["type", "id", "call_id", "output", "status"],
        "reasoning" => &[
            "type",
            "id",
            "summary",
            "encrypted_content",
            "content",
            "status",
        ],
        "input_text" | "text" => &["type", "text"],
        "output_text" => &["type", "text", "annotations", "logprobs"],
        "refusal" => &["type", "refusal"],
        "input_image" => &["type", "image_url", "file_id", "detail"],
        _ => return None,
    })
}

/// How many distinct unmodelled keys are named one by one; past it, `input.*`.
const UNMODELLED_NAMED: usize = 8;

/// Unmodelled keys seen in `input` (see [`Conversation::unmodelled`]).
#[derive(Debug, Default)]
pub(super) struct Unmodelled(std::collections::BTreeSet<String>);

impl Unmodelled {
    /// Note `obj`'s keys that a `kind` item or part does not have, and a non-empty
    /// `annotations` list (an earlier answer's citations, which no other vendor takes).
    fn note(&mut self, kind: &str, obj: &Map<String, Value>) {
        let Some(known) = known_keys(kind) else {
            return;
        };
        let annotated = obj
            .get("annotations")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let unknown = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k));
        for key in unknown.chain(annotated.then_some("annotations")) {
            if self.0.len() >= UNMODELLED_NAMED {
                self.0.insert("input.*".to_owned());
                return;
            }
            let plain = key.len() <= 64
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            let name = if plain {
                format!("input.{kind}.{key}")
            } else {
                "input.*".to_owned()
            };
            self.0.insert(name);
        }
    }

    /// The names noted, in order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// `input` into messages.
///
/// # Errors
/// 400 naming the item and field at fault.
pub(super) fn conversation(input: WireInput) -> Result<Conversation, ApiError> {
    let mut conv = Conversation::default();
    match input {
        WireInput::Text(text) => conv.messages.push(Message::user(text)),
        WireInput::Items(items) => {
            for (i, item) in items.into_iter().enumerate() {
                match item {
                    WireItem::Message { role, text } => {
                        conv.push_message(Message {
                            role,
                            content: vec![ContentPart::Text { text }],
                            tool_calls: Vec::new(),
                            tool_call_id: None,
                            name: None,
                            thinking: Vec::new(),
                            cache: Vec::new(),
                        });
                    }
                    WireItem::Value(item) => conv.item(i, item)?,
                }
            }
        }
    }
    conv.drop_lone_reasoning();
    if conv.messages.is_empty() {
        return Err(bad("input", "`input` must contain at least one item"));
    }
    Ok(conv)
}

impl Conversation {
    fn item(&mut self, i: usize, item: Value) -> Result<(), ApiError> {
        let path = format!("input[{i}]");
        let Value::Object(mut obj) = item else {
            return Err(bad(&path, "an input item must be an object"));
        };
        let kind = match obj.get("type") {
            None | Some(Value::Null) => "message".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(bad(&format!("{path}.type"), "`type` must be a string")),
        };
        self.unmodelled.note(&kind, &obj);
        match kind.as_str() {
            "message" => {
                let m = message(&path, &mut obj, &mut self.unmodelled)?;
                self.push_message(m);
            }
            "function_call" => self.call(&path, &mut obj)?,
            "function_call_output" => {
                self.drop_lone_reasoning();
                self.output(i, &path, &mut obj)?;
            }
            "reasoning" => self.reasoning(&path, &obj)?,
            other => self.native_only.push((
                format!("{path}.type"),
                format!(
                    "input items of type {:?} (only message, function_call, \
                     function_call_output and reasoning items go to every vendor)",
                    clip(other, ECHO_BYTES)
                ),
            )),
        }
        Ok(())
    }
}

impl Conversation {
    /// A `message` item's message: the content of the answer whose reasoning came just
    /// before, or the next message.
    fn push_message(&mut self, m: Message) {
        match self.messages.last_mut() {
            Some(last) if m.role == Role::Assistant && holds_reasoning(last) => {
                last.content = m.content;
            }
            _ => {
                self.drop_lone_reasoning();
                self.messages.push(m);
            }
        }
    }

    /// A `reasoning` item: its sealed blocks (see `super::sealed`) open the assistant's
    /// next turn (the message or function calls that follow join it); one in another
    /// format is left out.
    fn reasoning(&mut self, path: &str, obj: &Map<String, Value>) -> Result<(), ApiError> {
        let at = || format!("{path}.encrypted_content");
        let blocks = match obj.get("encrypted_content") {
            None | Some(Value::Null) => None,
            Some(Value::String(content)) => {
                sealed::open(content).map_err(|e| bad(&at(), format!("{}: {e}", at())))?
            }
            Some(_) => return Err(bad(&at(), "`encrypted_content` must be a string")),
        };
        let Some(blocks) = blocks else {
            self.foreign_reasoning = true;
            return Ok(());
        };
        match self.messages.last_mut() {
            Some(last) if holds_reasoning(last) => last.thinking.extend(blocks),
            _ => self.messages.push(Message {
                role: Role::Assistant,
                content: Vec::new(),
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
                thinking: blocks,
                cache: Vec::new(),
            }),
        }
        Ok(())
    }

    /// Reasoning that no answer followed is left out (no vendor takes it alone).
    fn drop_lone_reasoning(&mut self) {
        if self.messages.last().is_some_and(holds_reasoning) {
            self.messages.pop();
        }
    }

    /// A `function_call` item: a call on the assistant's turn (a new turn if the last
    /// message is not the assistant's).
    fn call(&mut self, path: &str, obj: &mut Map<String, Value>) -> Result<(), ApiError> {
        let call = ToolCall {
            id: take_str(obj, path, "call_id")?,
            name: take_str(obj, path, "name")?,
            arguments: take_str(obj, path, "arguments")?,
        };
        match self.messages.last_mut() {
            Some(m) if m.role == Role::Assistant => m.tool_calls.push(call),
            _ => self.messages.push(Message {
                role: Role::Assistant,
                content: Vec::new(),
                tool_calls: vec![call],
                tool_call_id: None,
                name: None,
                thinking: Vec::new(),
                cache: Vec::new(),
            }),
        }
        Ok(())
    }

    /// A `function_call_output` item (input item `i`): a tool message, named after the
    /// call it answers when that call is in the input.
    fn output(
        &mut self,
        i: usize,
        path: &str,
        obj: &mut Map<String, Value>,
    ) -> Result<(), ApiError> {
        let call_id = take_str(obj, path, "call_id")?;
        let content = match obj.remove("output") {
            Some(Value::String(text)) => vec![ContentPart::Text { text }],
            Some(Value::Array(parts)) => {
                parts_of(&format!("{path}.output"), parts, &mut self.unmodelled)?
            }
            _ => {
                return Err(bad(
                    &format!("{path}.output"),
                    "`output` must be a string or an array of content parts",
                ))
            }
        };
        let name = function_name(&self.messages, &call_id);
        if name.is_none() {
            self.unanswered.push((self.messages.len(), i));
        }
        self.messages.push(Message {
            role: Role::Tool,
            content,
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id),
            name,
            thinking: Vec::new(),
            cache: Vec::new(),
        });
        Ok(())
    }
}

/// An assistant message opened by reasoning items, still waiting for its answer.
fn holds_reasoning(m: &Message) -> bool {
    m.role == Role::Assistant
        && m.content.is_empty()
        && m.tool_calls.is_empty()
        && !m.thinking.is_empty()
}

/// The name of the function whose call `call_id` is, searching the latest messages first.
pub(super) fn function_name(messages: &[Message], call_id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == call_id)
        .map(|c| c.name.clone())
}

fn message(
    path: &str,
    obj: &mut Map<String, Value>,
    unmodelled: &mut Unmodelled,
) -> Result<Message, ApiError> {
    let role = match obj.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => Role::System,
        Some("developer") => Role::Developer,
        Some(other) => {
            return Err(bad(
                &format!("{path}.role"),
                format!(
                    "{:?} is not one of user, assistant, system, developer",
                    clip(other, ECHO_BYTES)
                ),
            ))
        }
        None => return Err(bad(&format!("{path}.role"), "a message needs a `role`")),
    };
    let content = match obj.remove("content") {
        Some(Value::String(text)) => vec![ContentPart::Text { text }],
        Some(Value::Array(parts)) => parts_of(&format!("{path}.content"), parts, unmodelled)?,
        _ => {
            return Err(bad(
                &format!("{path}.content"),
                "`content` must be a string or an array of content parts",
            ))
        }
    };
    Ok(Message {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
        thinking: Vec::new(),
        cache: Vec::new(),
    })
}

fn parts_of(
    path: &str,
    parts: Vec<Value>,
    unmodelled: &mut Unmodelled,
) -> Result<Vec<ContentPart>, ApiError> {
    parts
        .into_iter()
        .enumerate()
        .map(|(j, p)| part(&format!("{path}[{j}]"), p, unmodelled))
        .collect()
}

fn part(path: &str, p: Value, unmodelled: &mut Unmodelled) -> Result<ContentPart, ApiError> {
    let Value::Object(mut obj) = p else {
        return Err(bad(path, "a content part must be an object"));
    };
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    unmodelled.note(&kind, &obj);
    match kind.as_str() {
        "input_text" | "output_text" | "text" => Ok(ContentPart::Text {
            text: take_str(&mut obj, path, "text")?,
        }),
        "refusal" => Ok(ContentPart::Text {
            text: take_str(&mut obj, path, "refusal")?,
        }),
        "input_image" => {
            if obj.get("file_id").is_some_and(|v| !v.is_null()) {
                return Err(bad(
                    &format!("{path}.file_id"),
                    "images by `file_id` are not supported: send `image_url`",
                ));
            }
            let url = take_str(&mut obj, path, "image_url")?;
            let detail = obj
                .remove("detail")
                .and_then(|d| d.as_str().map(str::to_owned));
            Ok(ContentPart::Image {
                source: image_source(url),
                detail,
            })
        }
        other => Err(bad(
            &format!("{path}.type"),
            format!(
                "content parts of type {:?} are not supported (input_text, input_image, \
                 output_text are)",
                clip(other, ECHO_BYTES)
            ),
        )),
    }
}

/// A required string field, moved out of the object.
fn take_str(obj: &mut Map<String, Value>, path: &str, field: &str) -> Result<String, ApiError> {
    match obj.remove(field) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(bad(
            &format!("{path}.{field}"),
            format!("`{field}` must be a string"),
        )),
    }
}

/// `tools`: function tools in the shared shape; a built-in tool (any other type) is
/// noted in `built_in` (its path and what it is), for providers that take the body
/// natively.
///
/// # Errors
/// 400 naming the tool.
pub(super) fn tools(
    tools: &[Value],
    strict_used: &mut bool,
    built_in: &mut Vec<(String, String)>,
) -> Result<Vec<Tool>, ApiError> {
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        let path = format!("tools[{i}]");
        let Some(obj) = t.as_object() else {
            return Err(bad(&path, "a tool must be an object"));
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("function") => out.push(function_tool(&path, obj, strict_used)?),
            Some(other) => built_in.push((
                format!("{path}.type"),
                format!("built-in tool {:?}", clip(other, ECHO_BYTES)),
            )),
            None => return Err(bad(&format!("{path}.type"), "a tool needs a `type`")),
        }
    }
    Ok(out)
}

/// One `function` tool at `path`.
fn function_tool(
    path: &str,
    obj: &Map<String, Value>,
    strict_used: &mut bool,
) -> Result<Tool, ApiError> {
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(bad(
                &format!("{path}.name"),
                "a function tool needs a `name`",
            ))
        }
    };
    let description = match obj.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(bad(
                &format!("{path}.description"),
                "`description` must be a string",
            ))
        }
    };
    let parameters = match obj.get("parameters") {
        None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(bad(
                &format!("{path}.parameters"),
                "`parameters` must be a JSON Schema object",
            ))
        }
    };
    if obj.get("strict").and_then(Value::as_bool) == Some(true) {
        *strict_used = true;
    }
    Ok(Tool {
        name,
        description,
        parameters,
        cache_control: None,
    })
}

/// `tool_choice`: a mode or `{"type": "function", "name": ...}`.
///
/// # Errors
/// 400 naming `tool_choice`.
pub(super) fn tool_choice(choice: &Value) -> Result<ToolChoice, ApiError> {
    match choice {
        Value::String(mode) => match mode.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            other => Err(bad(
                "tool_choice",
                format!(
                    "{:?} is not one of auto, none, required, or a named function",
                    clip(other, ECHO_BYTES)
                ),
            )),
        },
        Value::Object(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("function") => match obj.get("name").and_then(Value::as_str) {
                Some(name) => Ok(ToolChoice::Tool(name.to_owned())),
                None => Err(bad("tool_choice.name", "a named function needs `name`")),
            },
            Some(other) => Err(bad(
                "tool_choice.type",
                format!(
                    "tool choice {:?} is not supported: only auto, none, required and \
                     `function` are",
                    clip(other, ECHO_BYTES)
                ),
            )),
            None => Err(bad("tool_choice.type", "a tool choice object needs `type`")),
        },
        _ => Err(bad(
            "tool_choice",
            "`tool_choice` must be a string or an object",
        )),
    }
}

/// `text.format` in the shared shape.
pub(super) fn response_format(format: WireFormat) -> ResponseFormat {
    match format {
        WireFormat::Text => ResponseFormat::Text,
        WireFormat::JsonObject => ResponseFormat::JsonObject,
        WireFormat::JsonSchema {
            name,
            schema,
            strict,
            ..
        } => ResponseFormat::JsonSchema {
            name,
            schema: schema.unwrap_or(Value::Object(Map::default())),
            strict,
        },
    }
}

/// Names kept or quoted (`model`, `user`, `previous_response_id`) and `metadata` within
/// their bounds.
///
/// # Errors
/// 400 naming the field.
pub(super) fn check_lengths(req: &WireRequest, model: &str) -> Result<(), ApiError> {
    json::check_names(&[
        ("model", Some(model)),
        ("user", req.user.as_deref()),
        ("previous_response_id", req.previous_response_id.as_deref()),
        ("service_tier", req.service_tier.as_deref()),
        ("prompt_cache_key", req.prompt_cache_key.as_deref()),
        ("safety_identifier", req.safety_identifier.as_deref()),
    ])?;
    if let Some(meta) = &req.metadata {
        if meta.len() > METADATA_PAIRS {
            return Err(bad(
                "metadata",
                format!("`metadata` holds at most {METADATA_PAIRS} pairs"),
            ));
        }
        for (k, v) in meta {
            let ok = !longer_than(k, METADATA_KEY_CHARS)
                && v.as_str()
                    .is_some_and(|s| !longer_than(s, METADATA_VALUE_CHARS));
            if !ok {
                return Err(bad(
                    "metadata",
                    format!(
                        "`metadata` keys are at most {METADATA_KEY_CHARS} characters and values \
                         strings of at most {METADATA_VALUE_CHARS}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// `input` as it was read before [`WireItem::Message`]: every item a `Value`.
    fn old_conversation(items: &str) -> Result<Conversation, ApiError> {
        let items: Vec<Value> = serde_json::from_str(items).unwrap();
        conversation(WireInput::Items(
            items.into_iter().map(WireItem::Value).collect(),
        ))
    }

    fn new_conversation(items: &str) -> Result<Conversation, ApiError> {
        let WireInput::Items(items) = serde_json::from_str(items).unwrap() else {
            panic!("not a list: {items}");
        };
        conversation(WireInput::Items(items))
    }

    fn same(a: &Result<Conversation, ApiError>, b: &Result<Conversation, ApiError>) -> bool {
        match (a, b) {
            (Ok(a), Ok(b)) => {
                a.messages == b.messages
                    && a.unanswered == b.unanswered
                    && a.foreign_reasoning == b.foreign_reasoning
                    && a.native_only == b.native_only
                    && a.unmodelled.names().eq(b.unmodelled.names())
            }
            (Err(a), Err(b)) => a == b,
            _ => false,
        }
    }

    /// Items a plain message's reader takes, or must leave to the `Value` path: every
    /// mix of type, role, content, extra and repeated keys, and what is not an object.
    fn items() -> Vec<String> {
        let kinds = [
            None,
            Some(json!(null)),
            Some(json!("message")),
            Some(json!("text")),
        ];
        let kinds = kinds.into_iter().chain([
            Some(json!("function_call")),
            Some(json!(5)),
            Some(json!("Message")),
        ]);
        let roles = [
            None,
            Some(json!("user")),
            Some(json!("assistant")),
            Some(json!("system")),
            Some(json!("developer")),
            Some(json!("tool")),
            Some(json!("User")),
            Some(json!(null)),
            Some(json!(1)),
        ];
        let contents = [
            None,
            Some(json!("Say \"hi\" \\ \n\u{e9}\u{1f600}")),
            Some(json!("")),
            Some(json!(null)),
            Some(json!([{"type": "input_text", "text": "parts"}])),
            Some(json!({"text": "an object"})),
            Some(json!(7)),
        ];
        let mut out = Vec::new();
        for kind in kinds {
            for role in &roles {
                for content in &contents {
                    let mut fields = Vec::new();
                    let pairs = [("type", &kind), ("role", role), ("content", content)];
                    for (key, value) in pairs {
                        if let Some(v) = value {
                            fields.push(format!("{key:?}:{v}"));
                        }
                    }
                    out.push(format!("{{{}}}", fields.join(",")));
                    // the same keys in reverse, and with more after them
                    let mut back = fields.clone();
                    back.reverse();
                    out.push(format!("{{{}}}", back.join(",")));
                    fields.push(r#""id":"msg_1""#.into());
                    out.push(format!("{{{}}}", fields.join(",")));
                }
            }
        }
        out.extend(
            [
                r#"{"role":"user","content":"a","role":"assistant"}"#,
                r#"{"role":"user","content":"a","content":"b"}"#,
                r#"{"role":"user","content":"a","content":[{"type":"input_text","text":"b"}]}"#,
                r#"{"type":"message","type":"message","role":"user","content":"a"}"#,
                r#"{"type":null,"role":"user","content":"a","type":"reasoning"}"#,
                r#"{"role":"user","content":"a","annotations":[1]}"#,
                r#"{"role":"user","content":"a","x-y":1,"é":2}"#,
                r#"{"r\u006fle":"user","content":"esc\u0061ped key"}"#,
                r#"{"role":"us\u0065r","content":"esc\u0061ped"}"#,
                r#"{}"#,
                r#"[]"#,
                r#"[{"role":"user","content":"nested"}]"#,
                r#""a string""#,
                r#"null"#,
                r#"true"#,
                r#"-3"#,
                r#"2.5"#,
                r#"{"$serde_json::private::RawValue":"{\"role\":\"user\",\"content\":\"raw\"}"}"#,
                r#"{"role":"user","$serde_json::private::RawValue":"{}","content":"later"}"#,
                r#"{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}"#,
                r#"{"type":"function_call_output","call_id":"c1","output":"done"}"#,
                r#"{"type":"function_call_output","call_id":"c9","output":"no call"}"#,
                r#"{"type":"reasoning","summary":[]}"#,
                r#"{"type":"web_search_call","id":"ws_1"}"#,
            ]
            .map(str::to_owned),
        );
        out
    }

    #[test]
    fn a_plain_message_item_reads_as_its_value_did() {
        let items = items();
        let mut plain = 0;
        for item in &items {
            // alone, and among others (reasoning before an answer, a call before its output)
            let lists = [
                format!("[{item}]"),
                format!(r#"[{{"role":"user","content":"first"}},{item}]"#),
                format!(r#"[{item},{{"role":"assistant","content":"after"}},{item}]"#),
                format!(
                    r#"[{{"type":"function_call","call_id":"c1","name":"f","arguments":"{{}}"}},{item}]"#
                ),
            ];
            for list in lists {
                let (old, new) = (old_conversation(&list), new_conversation(&list));
                assert!(same(&old, &new), "{list}: {old:?} != {new:?}");
            }
            let value: Value = serde_json::from_str(item).unwrap();
            match serde_json::from_str::<WireItem>(item).unwrap() {
                WireItem::Value(v) => assert_eq!(v, value, "{item}"),
                WireItem::Message { .. } => plain += 1,
            }
        }
        // the plain reader did take some (type absent, null or "message" with a known
        // role and string content, in either key order; escaped keys and roles too)
        assert_eq!(plain, 3 * 4 * 2 * 2 + 2, "{plain}");
    }

    /// What is not JSON fails as it did, with serde_json's message for the same place.
    #[test]
    fn a_broken_item_fails_as_its_value_did() {
        let broken = [
            r#"[{"role":"user","content":"a""#,
            r#"[{"role":"user","content":"a",}]"#,
            r#"[{"role":"user" "content":"a"}]"#,
            r#"[{"role":"user","content":tru}]"#,
            r#"[{"role":"user","content":"a"},]"#,
            r#"[{"role":"user","content":"\x"}]"#,
            r#"[{"role":"user","conte"#,
            r#"[{"role":"user","content":"a","id":[1,}]"#,
            r#"[{1:2}]"#,
            r#"[{"$serde_json::private::RawValue":5}]"#,
            r#"[{"$serde_json::private::RawValue":"{nope"}]"#,
        ];
        for text in broken {
            let old = serde_json::from_str::<Vec<Value>>(text).unwrap_err();
            let new = serde_json::from_str::<WireInput>(text).unwrap_err();
            assert_eq!(old.to_string(), new.to_string(), "{text}");
        }
    }
}
