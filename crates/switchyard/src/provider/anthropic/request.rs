//! The shared shape as a Messages API request body: system prompt lifting, role merging,
//! the prefill trim, content blocks, tool calls and results, images, tool choice and the
//! JSON-output instruction (the rules are in the parent module's docs). Pure functions;
//! the codec's `encode` ([`super::Anthropic::build_request`]) assembles their results.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::{bad_request, wire};
use crate::chat::{
    ChatRequest, ContentPart, Field, ImageSource, Message, ReasoningEffort, ResponseFormat, Role,
    Support, Thinking, ToolCall, ToolChoice,
};
use crate::error::ProviderError;

/// The system prompt: every system message's text, then the JSON instruction if any.
pub(super) fn system_prompt(
    req: &ChatRequest,
    native_schema: bool,
) -> Result<Option<String>, ProviderError> {
    let mut parts = Vec::new();
    for m in req.messages.iter().filter(|m| m.is_instructions()) {
        if has_image(m) {
            return Err(bad_request("Anthropic takes no images in a system prompt"));
        }
        let text = m.joined_text();
        if !text.is_empty() {
            parts.push(text);
        }
    }
    let instruction = req
        .response_format
        .as_ref()
        .filter(|_| !native_schema)
        .and_then(json_instruction);
    parts.extend(instruction);
    Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
}

/// What the system prompt says for a JSON response format (Anthropic has no JSON mode).
fn json_instruction(format: &ResponseFormat) -> Option<String> {
    const ONLY: &str = "and nothing else: no prose before or after it, no Markdown code fences.";
    match format {
        ResponseFormat::Text => None,
        ResponseFormat::JsonObject => {
            Some(format!("Respond with a single valid JSON object {ONLY}"))
        }
        ResponseFormat::JsonSchema { name, schema, .. } => Some(format!(
            "Respond with a single valid JSON object that conforms to the JSON Schema \
             named {name:?} below, {ONLY}\n\n{schema}"
        )),
    }
}

/// `output_config` for a `json_schema` response format (structured outputs).
pub(super) fn native_output_config(req: &ChatRequest) -> Option<Value> {
    match &req.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            Some(json!({"format": {"type": "json_schema", "schema": schema}}))
        }
        _ => None,
    }
}

/// `tool_choice`; `auto` / `none` are left out when no tools are declared (they say
/// nothing then), `required` / a named tool are sent so a wrong request fails loudly.
/// `parallel_tool_calls: false` is `disable_parallel_tool_use` (on `auto` when the request
/// sets no choice).
pub(super) fn wire_tool_choice(req: &ChatRequest) -> Option<wire::ToolChoiceOut<'_>> {
    let serial = req.parallel_tool_calls == Some(false);
    let choice = match req.tool_choice.as_ref() {
        None if serial => wire::ToolChoice::Auto,
        None => return None,
        Some(ToolChoice::Auto) => wire::ToolChoice::Auto,
        Some(ToolChoice::None) => wire::ToolChoice::None,
        Some(ToolChoice::Required) => wire::ToolChoice::Any,
        Some(ToolChoice::Tool(name)) => wire::ToolChoice::Tool { name },
    };
    let meaningless =
        req.tools.is_empty() && matches!(choice, wire::ToolChoice::Auto | wire::ToolChoice::None);
    let disable_parallel_tool_use = serial && !matches!(choice, wire::ToolChoice::None);
    (!meaningless).then_some(wire::ToolChoiceOut {
        choice,
        disable_parallel_tool_use,
    })
}

/// Anthropic's smallest thinking budget.
pub(super) const MIN_THINKING_BUDGET: u32 = 1024;

/// `reasoning_effort` as `thinking`: `none` turns it off; otherwise a budget of minimal
/// 1024, low 2048, medium 8192, high 24576 tokens, cut to one below `max_tokens`
/// (Anthropic counts thinking in `max_tokens` and wants the budget below it).
///
/// # Errors
/// `BadRequest` when `max_tokens` leaves less than Anthropic's minimum budget (1024).
pub(super) fn thinking(
    effort: Option<ReasoningEffort>,
    max_tokens: u32,
) -> Result<Option<wire::Thinking>, ProviderError> {
    let budget = match effort {
        None => return Ok(None),
        Some(ReasoningEffort::None) => return Ok(Some(wire::Thinking::Disabled)),
        Some(ReasoningEffort::Minimal) => MIN_THINKING_BUDGET,
        Some(ReasoningEffort::Low) => 2048,
        Some(ReasoningEffort::Medium) => 8192,
        Some(ReasoningEffort::High) => 24576,
    };
    let budget_tokens = budget.min(max_tokens.saturating_sub(1));
    if budget_tokens < MIN_THINKING_BUDGET {
        return Err(bad_request(format!(
            "reasoning_effort needs max_tokens above {MIN_THINKING_BUDGET} on Anthropic \
             (thinking counts in max_tokens), got {max_tokens}"
        )));
    }
    Ok(Some(wire::Thinking::Enabled { budget_tokens }))
}

/// OpenAI's `service_tier` in Anthropic's words: `auto` and `priority` are `auto`
/// (priority capacity when the account has it), anything else `standard_only`.
pub(super) fn service_tier(tier: Option<&str>) -> Option<&'static str> {
    tier.map(|t| match t {
        "auto" | "priority" => "auto",
        _ => "standard_only",
    })
}

/// How the Messages API carries each field: `top_k` natively; `response_format` (native
/// structured outputs where configured, else the system prompt's JSON instruction),
/// `parallel_tool_calls`,
/// `reasoning_effort`, `service_tier`, `user` (`metadata.user_id`) and developer messages
/// (the system prompt) translated; `metadata` tags are advisory (Anthropic's `metadata`
/// holds only a user id); `seed`, penalties, log probabilities and `n` > 1 it cannot do.
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Temperature
        | Field::TopP
        | Field::Stop
        | Field::Tools
        | Field::ToolChoice
        | Field::TopK => Support::Native,
        Field::ResponseFormat
        | Field::ParallelToolCalls
        | Field::ReasoningEffort
        | Field::ServiceTier
        | Field::User
        | Field::DeveloperRole => Support::Translated,
        Field::Metadata => Support::Ignored,
        Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::Logprobs
        | Field::TopLogprobs
        | Field::N
        | Field::Passthrough => Support::Unsupported,
    }
}

/// The conversation as alternating turns (system messages excluded), with the final
/// prefill trimmed, and the whitespace the trim removed. See the parent module's docs for
/// the merging rules.
pub(super) fn wire_turns(
    messages: &[Message],
) -> Result<(Vec<wire::Turn<'_>>, String), ProviderError> {
    let mut turns: Vec<wire::Turn<'_>> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System | Role::Developer => continue,
            Role::User => ("user", user_blocks(m)?),
            Role::Tool => ("user", vec![tool_result_block(m)?]),
            Role::Assistant => ("assistant", assistant_blocks(m)?),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => append(last, blocks),
            _ => turns.push(wire::Turn {
                role,
                content: blocks,
            }),
        }
    }
    for turn in &mut turns {
        // Stable: tool results first in a user turn, reasoning first in an assistant turn
        // (Anthropic requires both), everything else after, each in its order.
        if turn.role == "user" {
            turn.content.sort_by_key(|b| !b.is_tool_result());
        } else {
            turn.content.sort_by_key(|b| !b.is_thinking());
        }
    }
    drop_prefill_thinking(&mut turns);
    let trimmed = trim_prefill(&mut turns);
    Ok((turns, trimmed))
}

/// Merge `blocks` into a turn of the same role; adjacent assistant text is joined.
fn append<'a>(turn: &mut wire::Turn<'a>, blocks: Vec<wire::Block<'a>>) {
    for block in blocks {
        if turn.role == "assistant" {
            if let (Some(wire::Block::Text { text: prev }), wire::Block::Text { text }) =
                (turn.content.last_mut(), &block)
            {
                prev.to_mut().push_str(text);
                continue;
            }
        }
        turn.content.push(block);
    }
}

/// A final assistant turn (a prefill) goes without reasoning blocks: Anthropic refuses
/// them there when thinking is off, and refuses a prefill altogether when it is on.
fn drop_prefill_thinking(turns: &mut Vec<wire::Turn<'_>>) {
    if let Some(last) = turns.last_mut().filter(|t| t.role == "assistant") {
        last.content.retain(|b| !b.is_thinking());
        if last.content.is_empty() {
            turns.pop();
        }
    }
}

/// Trim the trailing whitespace of a final assistant turn's last text block, dropping the
/// block (and the turn) if nothing is left. Returns what was trimmed.
fn trim_prefill(turns: &mut Vec<wire::Turn<'_>>) -> String {
    let Some(last) = turns.last_mut().filter(|t| t.role == "assistant") else {
        return String::new();
    };
    let mut trimmed = String::new();
    if let Some(wire::Block::Text { text }) = last.content.last_mut() {
        let keep = text.trim_end().len();
        trimmed.push_str(&text[keep..]);
        match text {
            Cow::Borrowed(s) => *s = &s[..keep],
            Cow::Owned(s) => s.truncate(keep),
        }
        if text.is_empty() {
            last.content.pop();
        }
    }
    if last.content.is_empty() {
        turns.pop();
    }
    trimmed
}

fn user_blocks(m: &Message) -> Result<Vec<wire::Block<'_>>, ProviderError> {
    m.content
        .iter()
        .filter(|p| !matches!(p, ContentPart::Text { text } if text.is_empty()))
        .map(|p| match p {
            ContentPart::Text { text } => Ok(wire::Block::Text {
                text: Cow::Borrowed(text),
            }),
            ContentPart::Image { source, .. } => image_block(source),
        })
        .collect()
}

fn assistant_blocks(m: &Message) -> Result<Vec<wire::Block<'_>>, ProviderError> {
    if has_image(m) {
        return Err(bad_request(
            "Anthropic takes no images in assistant messages",
        ));
    }
    let mut blocks = Vec::with_capacity(1 + m.thinking.len() + m.tool_calls.len());
    let text = match m.content.as_slice() {
        [ContentPart::Text { text }] => Cow::Borrowed(text.as_str()),
        _ => Cow::Owned(m.joined_text()),
    };
    if !text.is_empty() || !m.tool_calls.is_empty() {
        // reasoning alone is no turn: it goes with the answer it came with
        blocks.extend(m.thinking.iter().filter_map(thinking_block));
    }
    if !text.is_empty() {
        blocks.push(wire::Block::Text { text });
    }
    for call in &m.tool_calls {
        blocks.push(wire::Block::ToolUse {
            id: &call.id,
            name: &call.name,
            input: tool_input(call)?,
        });
    }
    Ok(blocks)
}

/// A reasoning block as Anthropic returned it: redacted with its data, or thinking with
/// its signature. Reasoning without either (another vendor's plain `reasoning_content`) is
/// not Anthropic's, which would refuse it unsigned: left out.
fn thinking_block(t: &Thinking) -> Option<wire::Block<'_>> {
    match (&t.redacted, &t.signature) {
        (Some(data), _) => Some(wire::Block::RedactedThinking { data }),
        (None, Some(signature)) => Some(wire::Block::Thinking {
            thinking: &t.text,
            signature,
        }),
        (None, None) => None,
    }
}

/// A tool call's arguments as the `input` object Anthropic requires.
fn tool_input(call: &ToolCall) -> Result<Value, ProviderError> {
    if call.arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(input @ Value::Object(_)) => Ok(input),
        Ok(_) => Err(bad_request(format!(
            "tool call {:?} ({}): arguments are JSON but not an object",
            call.id, call.name
        ))),
        Err(e) => Err(bad_request(format!(
            "tool call {:?} ({}): arguments are not valid JSON: {e}",
            call.id, call.name
        ))),
    }
}

fn tool_result_block(m: &Message) -> Result<wire::Block<'_>, ProviderError> {
    let tool_use_id = m
        .tool_call_id
        .as_deref()
        .ok_or_else(|| bad_request("tool message without tool_call_id"))?;
    let content = if has_image(m) {
        Some(wire::ToolResultContent::Blocks(user_blocks(m)?))
    } else {
        let text = m.joined_text();
        (!text.is_empty()).then_some(wire::ToolResultContent::Text(Cow::Owned(text)))
    };
    Ok(wire::Block::ToolResult {
        tool_use_id,
        content,
    })
}

fn image_block(source: &ImageSource) -> Result<wire::Block<'_>, ProviderError> {
    let source = match source {
        ImageSource::Base64 { media_type, data } => wire::ImageSource::Base64 {
            media_type: Cow::Borrowed(media_type),
            data: Cow::Borrowed(data),
        },
        ImageSource::Url { url } => match url.strip_prefix("data:") {
            Some(rest) => {
                let (media_type, data) = rest
                    .split_once(";base64,")
                    .ok_or_else(|| bad_request("an image data: URL that is not base64"))?;
                wire::ImageSource::Base64 {
                    media_type: Cow::Borrowed(media_type),
                    data: Cow::Borrowed(data),
                }
            }
            None => wire::ImageSource::Url { url },
        },
    };
    Ok(wire::Block::Image { source })
}

fn has_image(m: &Message) -> bool {
    m.content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }))
}
