//! The shared shape as a Messages API request body: system prompt lifting, role merging,
//! the prefill trim, content blocks with their cache breakpoints, tool calls and results,
//! images, tool choice and JSON output (structured outputs or a forced tool) (the rules
//! are in the parent module's docs). Pure functions;
//! the codec's `encode` ([`super::Anthropic::build_request`]) assembles their results.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::{bad_request, wire};
use crate::chat::{
    CacheControl, ChatRequest, ContentPart, Field, FieldSet, ImageSource, Message, ReasoningEffort,
    ResponseFormat, Role, Support, Thinking, ToolCall, ToolChoice,
};
use crate::error::ProviderError;

/// The system prompt: every system and developer message's text, joined with blank lines;
/// as text blocks instead when one of them carries a cache breakpoint (each part a block,
/// the marked ones with their `cache_control`).
pub(super) fn system_prompt(req: &ChatRequest) -> Result<Option<wire::System<'_>>, ProviderError> {
    let instructions = || req.messages.iter().filter(|m| m.is_instructions());
    if instructions().any(has_image) {
        return Err(bad_request("Anthropic takes no images in a system prompt"));
    }
    if instructions().any(|m| !m.cache.is_empty()) {
        let mut blocks = Vec::new();
        for m in instructions() {
            for (i, part) in m.content.iter().enumerate() {
                if let ContentPart::Text { text } = part {
                    blocks.extend(text_block(text, m.cache_at(i))?);
                }
            }
        }
        return Ok((!blocks.is_empty()).then_some(wire::System::Blocks(blocks)));
    }
    let parts: Vec<String> = instructions()
        .map(Message::joined_text)
        .filter(|t| !t.is_empty())
        .collect();
    Ok((!parts.is_empty()).then(|| wire::System::Text(parts.join("\n\n"))))
}

/// A text block with its breakpoint; `None` for empty text (Anthropic refuses empty
/// blocks), which may not carry a breakpoint.
fn text_block(
    text: &str,
    cache: Option<CacheControl>,
) -> Result<Option<wire::Block<'_>>, ProviderError> {
    if text.is_empty() {
        return match cache {
            Some(_) => Err(bad_request(
                "cache_control on an empty text part: Anthropic caches no empty block",
            )),
            None => Ok(None),
        };
    }
    Ok(Some(wire::Block::Text {
        text: Cow::Borrowed(text),
        cache_control: cache.map(wire::CacheControl::from),
    }))
}

/// The name of the forced tool that carries a `json_object` answer.
pub(super) const JSON_OBJECT_TOOL: &str = "json_response";

/// How a JSON response format reaches Anthropic, which has no JSON mode.
#[derive(Debug)]
pub(super) enum JsonOutput<'a> {
    /// Structured outputs: `output_config.format` with the schema (models that have it).
    Native(&'a Value),
    /// A forced tool whose input is the answer: `tools` holds only it, `tool_choice`
    /// names it, and its input comes back as the answer's text.
    Tool {
        /// The tool's name (the schema's, or [`JSON_OBJECT_TOOL`]).
        name: &'a str,
        /// Its `input_schema`.
        schema: Cow<'a, Value>,
    },
}

impl JsonOutput<'_> {
    /// `output_config` for the native form.
    pub(super) fn output_config(&self) -> Option<Value> {
        match self {
            Self::Native(schema) => {
                Some(json!({"format": {"type": "json_schema", "schema": schema}}))
            }
            Self::Tool { .. } => None,
        }
    }

    /// The forced tool's name, for the tool form.
    pub(super) fn tool_name(&self) -> Option<&str> {
        match self {
            Self::Native(_) => None,
            Self::Tool { name, .. } => Some(name),
        }
    }
}

/// How `req`'s response format goes to Anthropic: a `json_schema` natively when the model
/// has structured outputs (`native`), else (and `json_object` always: structured outputs
/// take no open object) a forced tool. `None` for text.
///
/// # Errors
/// `BadRequest` naming the fields when a forced tool cannot carry the request: the
/// client's own `tools` or a forcing `tool_choice` (one forced tool leaves no room for
/// them), or `reasoning_effort` (Anthropic refuses a forced tool with thinking on).
pub(super) fn json_output(
    req: &ChatRequest,
    native: bool,
) -> Result<Option<JsonOutput<'_>>, ProviderError> {
    let (out, kind) = match &req.response_format {
        None | Some(ResponseFormat::Text) => return Ok(None),
        Some(ResponseFormat::JsonSchema { schema, .. }) if native => {
            return Ok(Some(JsonOutput::Native(schema)))
        }
        Some(ResponseFormat::JsonSchema { name, schema, .. }) => (
            JsonOutput::Tool {
                name,
                schema: Cow::Borrowed(schema),
            },
            "json_schema",
        ),
        Some(ResponseFormat::JsonObject) => (
            JsonOutput::Tool {
                name: JSON_OBJECT_TOOL,
                schema: Cow::Owned(json!({"type": "object"})),
            },
            "json_object",
        ),
    };
    let clash = json_clash(req, native);
    let field = [Field::Tools, Field::ToolChoice, Field::ReasoningEffort]
        .into_iter()
        .find(|f| clash.contains(*f));
    if let Some(field) = field {
        let why = if field == Field::ReasoningEffort {
            "Anthropic refuses a forced tool with thinking on"
        } else {
            "the forced tool leaves no room for the request's own tools"
        };
        let native_too = if kind == "json_schema" {
            "; a model with structured outputs (Claude 4.5 and later) takes both"
        } else {
            ""
        };
        return Err(bad_request(format!(
            "response_format {kind} with {field}: this Anthropic model answers JSON through \
             a forced tool, and {why}{native_too}"
        )));
    }
    Ok(Some(out))
}

/// The fields of `req` a JSON response format cannot go with when it needs a forced tool
/// (see [`json_output`]): `response_format` and each of the client's `tools`, a forcing
/// `tool_choice` and thinking (`reasoning_effort` other than `none`) it uses; empty when
/// there is no clash.
pub(super) fn json_clash(req: &ChatRequest, native: bool) -> FieldSet {
    let mut set = FieldSet::EMPTY;
    let forced_tool = match &req.response_format {
        None | Some(ResponseFormat::Text) => false,
        Some(ResponseFormat::JsonSchema { .. }) => !native,
        Some(ResponseFormat::JsonObject) => true,
    };
    if !forced_tool {
        return set;
    }
    set.insert_if(!req.tools.is_empty(), Field::Tools);
    set.insert_if(
        matches!(
            req.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool(_))
        ),
        Field::ToolChoice,
    );
    set.insert_if(
        req.reasoning_effort
            .is_some_and(|e| e != ReasoningEffort::None),
        Field::ReasoningEffort,
    );
    if !set.is_empty() {
        set.insert(Field::ResponseFormat);
    }
    set
}

/// Whether an Anthropic model id names a model with structured outputs
/// (`output_config.format`): Claude 4.5 and later of a named family (`claude-sonnet-4-5`,
/// `claude-haiku-4-5-20251001`, `claude-opus-4-6`, `claude-sonnet-5`, Vertex's
/// `claude-sonnet-4-5@20250929`, Bedrock's `anthropic.claude-…`). Older names
/// (`claude-3-7-sonnet`, `claude-opus-4-1`) and ids it cannot read say no.
#[must_use]
pub fn has_structured_outputs(model: &str) -> bool {
    let Some(at) = model.find("claude-") else {
        return false;
    };
    let mut parts = model[at + "claude-".len()..].split(['-', '@', '.', ':']);
    let family = parts.next().unwrap_or_default();
    if family.is_empty() || !family.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let Some(major) = parts.next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    // a dated snapshot's date is no minor version
    let minor = parts
        .next()
        .filter(|p| p.len() <= 2)
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(0);
    (major, minor) >= (4, 5)
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
/// `BadRequest` when `max_tokens` leaves less than Anthropic's minimum budget (1024). The
/// gateway never sends such a request: the codec cannot honour `reasoning_effort` for it
/// ([`thinking_fits`]), so the field is dropped (or the provider skipped, on a strict
/// route).
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

/// Whether `reasoning_effort` fits a call of `max_tokens`: off, or a budget of at least
/// Anthropic's minimum below it.
pub(super) fn thinking_fits(effort: Option<ReasoningEffort>, max_tokens: u32) -> bool {
    thinking(effort, max_tokens).is_ok()
}

/// OpenAI's `service_tier` in Anthropic's words: `auto` and `priority` are `auto`
/// (priority capacity when the account has it), anything else `standard_only`.
pub(super) fn service_tier(tier: Option<&str>) -> Option<&'static str> {
    tier.map(|t| match t {
        "auto" | "priority" => "auto",
        _ => "standard_only",
    })
}

/// How the Messages API carries each field: `top_k` and `cache_control` natively;
/// `response_format` (structured outputs where the model has them, else a forced tool),
/// `parallel_tool_calls`,
/// `reasoning_effort`, `service_tier`, `user` (`metadata.user_id`) and developer messages
/// (the system prompt) translated; `metadata` tags and OpenAI's cache and storage settings
/// are advisory (Anthropic's `metadata` holds only a user id); `seed`, penalties, log
/// probabilities, `n` > 1 and OpenAI's own fields (`logit_bias`, `verbosity`,
/// `prediction`, audio, web search, `functions`) it cannot do.
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Temperature
        | Field::TopP
        | Field::Stop
        | Field::Tools
        | Field::ToolChoice
        | Field::TopK
        | Field::CacheControl => Support::Native,
        Field::ResponseFormat
        | Field::ParallelToolCalls
        | Field::ReasoningEffort
        | Field::ServiceTier
        | Field::User
        | Field::DeveloperRole => Support::Translated,
        // no `n`: `n` answers are `n` calls (`provider/fanout.rs`)
        Field::N => Support::Translated,
        // OpenAI's request tags and cache and storage settings: Anthropic caches by its
        // breakpoints and stores nothing, so they have no place there
        Field::Metadata
        | Field::Store
        | Field::PromptCacheKey
        | Field::PromptCacheRetention
        | Field::SafetyIdentifier => Support::Ignored,
        Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::Logprobs
        | Field::TopLogprobs
        | Field::Passthrough
        | Field::LogitBias
        | Field::Verbosity
        | Field::Prediction
        | Field::Audio
        | Field::Modalities
        | Field::WebSearchOptions
        | Field::Functions => Support::Unsupported,
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

/// Merge `blocks` into a turn of the same role; adjacent assistant text is joined (unless
/// either carries a cache breakpoint, which stays on its block).
fn append<'a>(turn: &mut wire::Turn<'a>, blocks: Vec<wire::Block<'a>>) {
    for block in blocks {
        if turn.role == "assistant" {
            if let (
                Some(wire::Block::Text {
                    text: prev,
                    cache_control: None,
                }),
                wire::Block::Text {
                    text,
                    cache_control: None,
                },
            ) = (turn.content.last_mut(), &block)
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
    if let Some(wire::Block::Text { text, .. }) = last.content.last_mut() {
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
    let mut blocks = Vec::with_capacity(m.content.len());
    for (i, p) in m.content.iter().enumerate() {
        match p {
            ContentPart::Text { text } => blocks.extend(text_block(text, m.cache_at(i))?),
            ContentPart::Image { source, .. } => blocks.push(image_block(source, m.cache_at(i))?),
        }
    }
    Ok(blocks)
}

fn assistant_blocks(m: &Message) -> Result<Vec<wire::Block<'_>>, ProviderError> {
    if has_image(m) {
        return Err(bad_request(
            "Anthropic takes no images in assistant messages",
        ));
    }
    let mut blocks = Vec::with_capacity(1 + m.thinking.len() + m.tool_calls.len());
    // with a cache breakpoint each part is a block (the mark stays on its part); else one
    let texts = if m.cache.is_empty() {
        let text = match m.content.as_slice() {
            [ContentPart::Text { text }] => Cow::Borrowed(text.as_str()),
            _ => Cow::Owned(m.joined_text()),
        };
        (!text.is_empty())
            .then(|| wire::Block::text(text))
            .into_iter()
            .collect()
    } else {
        let mut texts = Vec::with_capacity(m.content.len());
        for (i, p) in m.content.iter().enumerate() {
            if let ContentPart::Text { text } = p {
                texts.extend(text_block(text, m.cache_at(i))?);
            }
        }
        texts
    };
    if !texts.is_empty() || !m.tool_calls.is_empty() {
        // reasoning alone is no turn: it goes with the answer it came with
        blocks.extend(m.thinking.iter().filter_map(thinking_block));
    }
    blocks.extend(texts);
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
    // with images each part is a block (carrying its own mark); else the result's text,
    // and a mark on any of its parts goes on the result
    let (content, cache_control) = if has_image(m) {
        (Some(wire::ToolResultContent::Blocks(user_blocks(m)?)), None)
    } else {
        let text = m.joined_text();
        let content = (!text.is_empty()).then_some(wire::ToolResultContent::Text(Cow::Owned(text)));
        (content, m.cache.last().map(|c| c.control.into()))
    };
    Ok(wire::Block::ToolResult {
        tool_use_id,
        content,
        cache_control,
    })
}

fn image_block(
    source: &ImageSource,
    cache: Option<CacheControl>,
) -> Result<wire::Block<'_>, ProviderError> {
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
    Ok(wire::Block::Image {
        source,
        cache_control: cache.map(wire::CacheControl::from),
    })
}

fn has_image(m: &Message) -> bool {
    m.content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }))
}
