//! `messages` (and `system`) as the shared shape's conversation, turn by turn: a user turn's
//! tool results become tool messages (first), its other blocks one user message; an
//! assistant turn's text and tool calls one assistant message; a system turn, or a
//! mid-conversation system block, system messages where they stand (each codec places
//! them as its vendor can: OpenAI in place, Anthropic and Gemini in the system prompt).
//!
//! A system turn's per-turn settings (SDK 2.15's `BetaSystemMessageParam`) are carried, not
//! dropped: `clear_at: "next_user_message"` leaves its text out once a later user turn
//! exists (as Anthropic does), and its `output_config.effort`, when it is the last one
//! before the answer, is the answer's reasoning effort (`super::WireRequest::effort`).
//! Tool additions and removals are collected in order for [`super::toolset`].

use std::collections::HashMap;

use serde_json::Value;
use switchyard::chat::{ContentPart, ImageSource, Message, ToolCall};
use switchyard::Role;

use super::toolset::{self, ToolChange};
use super::{
    bad, system_messages, Block, Ignored, StrOr, SystemBlock, WireImageSource, WireMessage,
};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;

/// The conversation in the shared shape, and what its turns set for the answer.
pub(super) struct Conversation {
    pub messages: Vec<Message>,
    /// The `output_config.effort` of the last system turn after the last assistant turn.
    pub effort: Option<String>,
    /// Tool additions and removals, in order.
    pub tool_changes: Vec<ToolChange>,
}

/// `system`, then every turn of `messages`.
///
/// # Errors
/// 400 naming the field.
pub(super) fn conversation(
    system: Option<StrOr<SystemBlock>>,
    messages: Vec<WireMessage>,
    ignored: &mut Ignored,
) -> Result<Conversation, ApiError> {
    let last = |role: &str| messages.iter().rposition(|m| m.role == role);
    let mut turns = Turns {
        out: Vec::with_capacity(messages.len() + 3),
        names: HashMap::new(),
        last_user: last("user"),
        last_assistant: last("assistant"),
        effort: None,
        tool_changes: Vec::new(),
        ignored,
    };
    if let Some(system) = system {
        system_messages(system, "system", &mut turns.out, turns.ignored)?;
    }
    for (i, m) in messages.into_iter().enumerate() {
        turns.push(i, m)?;
    }
    Ok(Conversation {
        messages: turns.out,
        effort: turns.effort,
        tool_changes: turns.tool_changes,
    })
}

/// Tool-use ids and the names of their tools (a tool result in the shared shape names its
/// function: Gemini needs it).
type Names = HashMap<String, String>;

/// The conversation being built, turn by turn.
struct Turns<'i> {
    out: Vec<Message>,
    names: Names,
    /// Where the last user and assistant turns stand (for `clear_at` and per-turn effort).
    last_user: Option<usize>,
    last_assistant: Option<usize>,
    effort: Option<String>,
    tool_changes: Vec<ToolChange>,
    ignored: &'i mut Ignored,
}

impl Turns<'_> {
    /// One turn into the conversation.
    fn push(&mut self, i: usize, mut m: WireMessage) -> Result<(), ApiError> {
        // the turn's path, written only when something names it (a turn of plain text
        // without unknown keys names nothing)
        let at = || format!("messages.{i}");
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => Role::System,
            other => {
                return Err(bad(
                    &format!("{}.role", at()),
                    format!(
                        "{:?} is not one of user, assistant, system",
                        clip(other, ECHO_BYTES)
                    ),
                ))
            }
        };
        let cleared = if role == Role::System {
            self.system_settings(i, &mut m)?
        } else {
            // per-turn settings belong to system turns alone
            if m.clear_at.is_some() {
                m.other.push("clear_at");
            }
            if m.output_config.is_some() {
                m.other.push("output_config");
            }
            false
        };
        if m.other.first().is_some() {
            self.ignored.unknown(&m.other, &at(), "messages")?;
        }
        let blocks = match m.content {
            None if role == Role::System => return Ok(()),
            None => return Err(bad(&format!("{}.content", at()), "Field required")),
            Some(StrOr::Str(_)) if cleared => return Ok(()),
            Some(StrOr::Str(text)) => {
                self.out.push(Message::text(role, text));
                return Ok(());
            }
            Some(StrOr::List(blocks)) => blocks,
        };
        let mut turn = empty(role);
        let at = at();
        for (j, block) in blocks.into_iter().enumerate() {
            self.block(&mut turn, block, &format!("{at}.content.{j}"))?;
        }
        if cleared {
            turn.content.clear();
        }
        self.flush(&mut turn);
        Ok(())
    }

    /// A system turn's `clear_at` and `output_config`: whether its text is cleared (a
    /// later user turn exists and it was to stay only until then), and its effort noted
    /// when it is in force for the answer (no assistant turn after it).
    fn system_settings(&mut self, i: usize, m: &mut WireMessage) -> Result<bool, ApiError> {
        if m.content.is_none() && m.output_config.is_none() {
            return Err(bad(
                &format!("messages.{i}"),
                "a system message needs content or output_config",
            ));
        }
        let cleared = match m.clear_at.as_deref() {
            None | Some("never") => false,
            Some("next_user_message") => self.last_user.is_some_and(|u| u > i),
            Some(_) => {
                // a word of a later beta: its text stays, and the setting is named
                self.ignored.add("messages.clear_at");
                false
            }
        };
        if let Some(config) = m.output_config.take() {
            let at = format!("messages.{i}.output_config");
            self.ignored
                .unknown(&config.other, &at, "messages.output_config")?;
            let in_force = self.last_assistant.is_none_or(|a| a < i);
            if let (Some(effort), true) = (config.effort, in_force) {
                self.effort = Some(effort);
            }
        }
        Ok(cleared)
    }

    /// One block into `turn` (or, for tool results and system blocks, before it); one of
    /// a type the dialect does not model into none (`Ignored::unknown_block`).
    fn block(&mut self, turn: &mut Message, block: Block, at: &str) -> Result<(), ApiError> {
        if let Block::Unknown(other) = block {
            self.ignored
                .unknown_block(at, || unknown_type(&other.kind, at))?;
            turn.content.push(ContentPart::Text { text: other.json });
            return Ok(());
        }
        self.ignored.unknown(block.other(), at, block.kind())?;
        let role = turn.role;
        let allowed = match &block {
            Block::Image { .. } => role != Role::Assistant,
            Block::ToolUse { .. } | Block::Thinking { .. } | Block::RedactedThinking { .. } => {
                role == Role::Assistant
            }
            Block::ToolResult { .. } => role == Role::User,
            _ => true,
        };
        if !allowed {
            return Err(misplaced(block.kind(), role, at));
        }
        match block {
            Block::Text {
                text,
                cache_control,
                citations,
                ..
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored.add_if(citations.is_some(), "citations");
                turn.content.push(ContentPart::Text { text });
            }
            Block::Image {
                source,
                cache_control,
                transformations,
                ..
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.ignored
                    .add_if(transformations.is_some(), "image.transformations");
                turn.content.push(image(source));
            }
            Block::ToolUse { .. } => self.tool_use(turn, block),
            Block::ToolResult { .. } => self.tool_result(block, at)?,
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {
                // carried for Anthropic providers; another vendor leaves reasoning out
                self.ignored.add("thinking");
                thinking(turn, block);
            }
            Block::MidConvSystem {
                content,
                cache_control,
                ..
            } => {
                self.ignored
                    .add_if(cache_control.is_some(), "cache_control");
                self.flush(turn);
                super::system_blocks(
                    content,
                    &format!("{at}.content"),
                    &mut self.out,
                    self.ignored,
                )?;
            }
            Block::ToolAddition {
                tool,
                cache_control,
                ..
            } => self.tool_change(tool, true, cache_control.is_some(), at)?,
            Block::ToolRemoval {
                tool,
                cache_control,
                ..
            } => self.tool_change(tool, false, cache_control.is_some(), at)?,
            Block::Unknown(_) => {}
        }
        Ok(())
    }

    /// A `tool_use` block as the turn's tool call.
    fn tool_use(&mut self, turn: &mut Message, block: Block) {
        let Block::ToolUse {
            id,
            name,
            input,
            cache_control,
            caller,
            toolset_name,
            ..
        } = block
        else {
            return;
        };
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

    /// A `tool_result` block as a tool message, ahead of the turn's other blocks.
    fn tool_result(&mut self, block: Block, at: &str) -> Result<(), ApiError> {
        let Block::ToolResult {
            tool_use_id,
            content,
            is_error,
            cache_control,
            toolset_name,
            ..
        } = block
        else {
            return Ok(());
        };
        self.ignored
            .add_if(cache_control.is_some(), "cache_control");
        self.ignored
            .add_if(toolset_name.is_some(), "tool_result.toolset_name");
        self.ignored.add_if(is_error, "tool_result.is_error");
        let result = tool_message(tool_use_id, content, &self.names, at, self.ignored)?;
        self.out.push(result);
        Ok(())
    }

    /// A `tool_addition` (`add`) or `tool_removal` block's change, kept for the tool set.
    fn tool_change(
        &mut self,
        tool: Value,
        add: bool,
        cached: bool,
        at: &str,
    ) -> Result<(), ApiError> {
        self.ignored.add_if(cached, "cache_control");
        if let Some(change) = toolset::change(tool, add, at, self.ignored)? {
            self.tool_changes.push(change);
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

/// A `thinking` or `redacted_thinking` block as the turn's reasoning (signature and data
/// kept for Anthropic providers).
fn thinking(turn: &mut Message, block: Block) {
    let block = match block {
        Block::Thinking {
            thinking,
            signature,
            ..
        } => switchyard::chat::Thinking {
            text: thinking,
            signature: Some(signature),
            redacted: None,
        },
        Block::RedactedThinking { data, .. } => switchyard::chat::Thinking {
            redacted: Some(data),
            ..switchyard::chat::Thinking::default()
        },
        _ => return,
    };
    turn.thinking.push(block);
}

/// The 400 for a block in a turn whose role cannot hold it.
fn misplaced(kind: &str, role: Role, at: &str) -> ApiError {
    let what = match kind {
        "redacted_thinking" => "thinking",
        other => other,
    };
    let name = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System | Role::Developer | Role::Tool => "system",
    };
    bad(at, format!("{what} blocks are not allowed in {name} turns"))
}

/// The 400 for a block at `at` of a type the dialect does not model, without a beta: as
/// the parser words an unknown tag, at the block's `type`.
fn unknown_type(kind: &str, at: &str) -> ApiError {
    bad(&format!("{at}.type"), super::blocks::unknown_variant(kind))
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
    ignored: &mut Ignored,
) -> Result<Message, ApiError> {
    let parts = match content {
        None => Vec::new(),
        Some(StrOr::Str(text)) => vec![ContentPart::Text { text }],
        Some(StrOr::List(blocks)) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (k, b) in blocks.into_iter().enumerate() {
                let at = format!("{at}.content.{k}");
                if let Block::Unknown(other) = b {
                    ignored.unknown_block(&at, || unknown_type(&other.kind, &at))?;
                    parts.push(ContentPart::Text { text: other.json });
                    continue;
                }
                ignored.unknown(b.other(), &at, b.kind())?;
                parts.push(match b {
                    Block::Text { text, .. } => ContentPart::Text { text },
                    Block::Image { source, .. } => image(source),
                    _ => {
                        return Err(bad(
                            &format!("{at}.type"),
                            "a tool result holds text and image blocks only",
                        ))
                    }
                });
            }
            parts
        }
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
