//! The shared shape as a Converse request body: system blocks, alternating turns of content
//! blocks (text, images as base64 bytes or S3 locations, tool uses and results, signed
//! reasoning), `inferenceConfig`, `toolConfig`, `requestMetadata` and
//! `additionalModelRequestFields`. Pure functions; the codec's `encode` calls [`body`].
//!
//! Rules (Bedrock's Converse API reference, `Message`, `ContentBlock`, `ToolConfiguration`):
//! - system and developer messages become `system` text blocks, in order;
//! - a conversation alternates `user` and `assistant`: adjacent turns of one role are
//!   merged; tool results are `toolResult` blocks of a user turn (`toolUseId`, `content`:
//!   the text, or the JSON when the text is a JSON object or array);
//! - images: base64 bytes (`png`, `jpeg`, `gif`, `webp`), a `data:` URL's bytes, or an
//!   `s3://` URL as an `s3Location`; any other URL is refused (Bedrock fetches no URLs);
//! - `tool_choice`: `auto` → `{"auto":{}}`, `required` → `{"any":{}}`, a named tool →
//!   `{"tool":{"name"}}`; `none` sends no `toolConfig`, which Bedrock refuses when the
//!   history holds tool blocks, so that case is refused here with a clear message;
//! - `metadata` and `user` go in `requestMetadata` (string values; others as JSON text);
//! - fields the gateway does not model (a route's `passthrough_unknown`) go in
//!   `additionalModelRequestFields`, the model's own parameters;
//! - `reasoning_effort`, for Claude models only (a model id holding `anthropic.claude`), is
//!   `additionalModelRequestFields.thinking`, as on Anthropic's API: `none` disabled, else a
//!   budget of 1024 / 2048 / 8192 / 24576 tokens (minimal / low / medium / high) cut to one
//!   below `maxTokens`, which is then always sent (4096 when the request sets none). Other
//!   models take no common reasoning field, and a `maxTokens` of 1025 or less leaves no
//!   room for Claude's smallest budget: the codec cannot honour the field then
//!   ([`cannot_honour`]), so the gateway sends the request without it (a provider whose
//!   model does not reason is marked so in the price table, or by `reasoning = false`).
//! - cache breakpoints ([`Message::cache`], [`crate::chat::Tool::cache_control`]) are
//!   `cachePoint` blocks (`{"cachePoint": {"type": "default"}}`, with `ttl` `5m` or `1h`
//!   when the breakpoint names one) placed after the block they close: after the marked
//!   text or image block of a user turn, after a tool message's `toolResult` block, after
//!   the marked text of a system prompt or an assistant turn (each part its own block when
//!   a message has a breakpoint), and after a tool's `toolSpec` in `toolConfig.tools`
//!   (Bedrock's Converse API reference, `CachePointBlock`; its prompt-caching guide). Only
//!   models that cache take them ([`caching`]): Claude 3.7 Sonnet, 3.5 Haiku and every
//!   Claude 4 or later (tools too; a `1h` TTL from Claude 4.5 on), and Amazon Nova (system
//!   and messages only, no `1h`). On any other model the breakpoints are not sent (the
//!   field is ignored, named in `x-switchyard-ignored`); on a caching model, a breakpoint
//!   it cannot take (a tool breakpoint on Nova, a `1h` TTL before Claude 4.5) makes the
//!   field one it cannot honour for that request (never shortened: the gateway drops the
//!   request's breakpoints for it, or skips it on a strict route), and more
//!   than [`MAX_CACHE_BREAKPOINTS`], a `1h` breakpoint after a 5-minute one (Converse's
//!   order is tools, system, messages) or one on an empty text part is a `BadRequest`.

use serde_json::{json, Map, Value};

use crate::chat::{
    CacheControl, CacheTtl, ChatRequest, ContentPart, Field, FieldSet, ImageSource, Message,
    ReasoningEffort, Role, Support, ToolCall, ToolChoice, MAX_CACHE_BREAKPOINTS,
};
use crate::error::{ErrorKind, ProviderError};

/// How Bedrock's Converse carries each field (the Bedrock column of `docs/fields.md`).
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Temperature | Field::TopP => Support::Native,
        // Claude's `thinking` in `additionalModelRequestFields` (see the module docs)
        Field::ReasoningEffort => Support::Translated,
        // `stopSequences`, `toolSpec`, `toolChoice` `any`, `requestMetadata`, `system`,
        // `additionalModelRequestFields`: the same things under Converse's shapes
        Field::Stop
        | Field::Tools
        | Field::ToolChoice
        | Field::Metadata
        | Field::User
        | Field::DeveloperRole
        | Field::Passthrough => Support::Translated,
        // Converse has no service tier field this codec sends, nor OpenAI's cache and
        // storage settings
        Field::ServiceTier
        | Field::Store
        | Field::PromptCacheKey
        | Field::PromptCacheRetention
        | Field::SafetyIdentifier => Support::Ignored,
        // `cachePoint` blocks, on the models that cache (see `model_support`)
        Field::CacheControl => Support::Translated,
        // no `n`: `n` answers are `n` calls (`provider/fanout.rs`)
        Field::N => Support::Translated,
        // model-specific (through `additionalModelRequestFields`, in each model family's
        // own names) or absent from Converse: not honoured for every model, so refused
        Field::ResponseFormat
        | Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::Logprobs
        | Field::TopLogprobs
        | Field::TopK
        | Field::ParallelToolCalls
        | Field::LogitBias
        | Field::Verbosity
        | Field::Prediction
        | Field::Audio
        | Field::Modalities
        | Field::WebSearchOptions
        | Field::Functions => Support::Unsupported,
    }
}

/// What a model takes of Bedrock's prompt caching (its prompt-caching guide's table of
/// models and the fields each caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caching {
    /// No `cachePoint` blocks: a model that does not cache, or an id that does not say
    /// which model it is (an application inference profile's ARN).
    None,
    /// Amazon Nova: system and messages, the default TTL only.
    Nova,
    /// Claude: system, messages and tools; `one_hour`: the `1h` TTL too (Claude 4.5 on).
    Claude { one_hour: bool },
}

/// The prompt caching `model` (a model id, inference profile or ARN holding one) takes.
pub(super) fn caching(model: &str) -> Caching {
    if model.contains("amazon.nova-") {
        return Caching::Nova;
    }
    let Some((_, rest)) = model.split_once("anthropic.claude-") else {
        return Caching::None;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    let number = |i: usize| {
        parts
            .get(i)
            .filter(|p| (1..=2).contains(&p.len()))
            .and_then(|p| p.parse::<u32>().ok())
    };
    match parts.first().copied() {
        // `claude-3-7-sonnet-…`, `claude-3-5-haiku-…`: the Claude 3 models that cache
        Some("3") => match (number(1), parts.get(2).copied()) {
            (Some(7), Some("sonnet")) | (Some(5), Some("haiku")) => {
                Caching::Claude { one_hour: false }
            }
            _ => Caching::None,
        },
        // `claude-sonnet-4-5-…`, `claude-opus-4-…`: Claude 4 and later
        Some("opus" | "sonnet" | "haiku") => match number(1) {
            Some(major) if major >= 4 => Caching::Claude {
                one_hour: (major, number(2).unwrap_or(0)) >= (4, 5),
            },
            _ => Caching::None,
        },
        _ => Caching::None,
    }
}

/// `support`, for `model`: breakpoints are ignored on a model that does not cache.
pub(super) fn model_support(field: Field, model: &str) -> Support {
    if field == Field::CacheControl && caching(model) == Caching::None {
        return Support::Ignored;
    }
    support(field)
}

/// Fields of `req` that `model` cannot take here, though the codec takes each (see the
/// module docs): breakpoints a caching model cannot take (a tool breakpoint on Nova, a
/// one-hour TTL before Claude 4.5), and `reasoning_effort` on a model that is not Claude
/// or with a `maxTokens` that leaves no room for Claude's smallest thinking budget. Both
/// are degradable: the gateway sends the request without them.
pub(super) fn cannot_honour(req: &ChatRequest, model: &str) -> FieldSet {
    let mut set = FieldSet::EMPTY;
    set.insert_if(cache_clash(req, model), Field::CacheControl);
    set.insert_if(thinking(req, model).is_err(), Field::ReasoningEffort);
    set
}

/// Breakpoints of `req` a caching `model` cannot take: a tool breakpoint on Nova, a
/// one-hour TTL before Claude 4.5 or after a shorter one, one on an empty text part.
fn cache_clash(req: &ChatRequest, model: &str) -> bool {
    let caching = caching(model);
    if caching == Caching::None || req.cache_breakpoints() == 0 {
        return false;
    }
    let one_hour_asked = breakpoint_ttls(req).any(|t| t == Some(CacheTtl::OneHour));
    let tool_breakpoints = req.tools.iter().any(|t| t.cache_control.is_some());
    (caching == Caching::Nova && tool_breakpoints)
        || (one_hour_asked && caching != Caching::Claude { one_hour: true })
        || one_hour_after_shorter(req)
        || req.marks_empty_part()
}

/// A `1h` breakpoint after a shorter one in Converse's order (Bedrock wants TTLs
/// non-increasing).
fn one_hour_after_shorter(req: &ChatRequest) -> bool {
    let mut shorter_seen = false;
    for ttl in breakpoint_ttls(req) {
        match ttl {
            Some(CacheTtl::OneHour) if shorter_seen => return true,
            Some(CacheTtl::OneHour) => {}
            Some(CacheTtl::FiveMinutes) | None => shorter_seen = true,
        }
    }
    false
}

/// The request's breakpoints' TTLs in Converse's order: tools, system, messages.
fn breakpoint_ttls(req: &ChatRequest) -> impl Iterator<Item = Option<CacheTtl>> + '_ {
    let tools = req
        .tools
        .iter()
        .filter_map(|t| t.cache_control.map(|c| c.ttl));
    let system = req.messages.iter().filter(|m| m.is_instructions());
    let rest = req.messages.iter().filter(|m| !m.is_instructions());
    let marks = system
        .chain(rest)
        .flat_map(|m| m.cache.iter().map(|c| c.control.ttl));
    tools.chain(marks)
}

/// Refuses breakpoints the model cannot take (what `cannot_honour` names), too many, and
/// a `1h` TTL after a shorter one (Bedrock wants TTLs non-increasing in its order).
fn check_breakpoints(req: &ChatRequest, model: &str) -> Result<(), ProviderError> {
    let count = req.cache_breakpoints();
    if count > MAX_CACHE_BREAKPOINTS {
        return Err(bad_request(format!(
            "{count} cache_control breakpoints: Bedrock takes at most {MAX_CACHE_BREAKPOINTS}"
        )));
    }
    if one_hour_after_shorter(req) {
        return Err(bad_request(
            "cache_control ttl \"1h\" after a 5-minute breakpoint: Bedrock wants \
             one-hour breakpoints first (tools, then system, then messages)",
        ));
    }
    if req.marks_empty_part() {
        return Err(empty_part_mark());
    }
    if cache_clash(req, model) {
        return Err(bad_request(match caching(model) {
            Caching::Nova if req.tools.iter().any(|t| t.cache_control.is_some()) => format!(
                "cache_control on a tool: Amazon Nova on Bedrock caches no tool definitions \
                 ({model:?})"
            ),
            _ => format!(
                "cache_control ttl \"1h\": on Bedrock only Claude 4.5 and later models take \
                 a one-hour cache, not {model:?}"
            ),
        }));
    }
    Ok(())
}

/// A `cachePoint` block for `control`.
fn cache_point(control: CacheControl) -> Value {
    let mut point = Map::new();
    point.insert("type".into(), "default".into());
    if let Some(ttl) = control.ttl {
        point.insert("ttl".into(), ttl.as_str().into());
    }
    json!({ "cachePoint": point })
}

/// Text parts of `m` as text blocks, each followed by its `cachePoint` when marked
/// (empty parts left out; a marked empty part is refused).
fn marked_text_blocks(m: &Message) -> Result<Vec<Value>, ProviderError> {
    let mut blocks = Vec::new();
    for (i, part) in m.content.iter().enumerate() {
        let ContentPart::Text { text } = part else {
            continue;
        };
        let mark = m.cache_at(i);
        if text.is_empty() {
            if mark.is_some() {
                return Err(empty_part_mark());
            }
            continue;
        }
        blocks.push(json!({ "text": text }));
        blocks.extend(mark.map(cache_point));
    }
    Ok(blocks)
}

fn empty_part_mark() -> ProviderError {
    bad_request(
        "cache_control on an empty text part: Bedrock caches after a block, not after nothing",
    )
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}

/// Claude's smallest thinking budget.
const MIN_THINKING_BUDGET: u32 = 1024;

/// `maxTokens` sent with thinking when the request sets none (Anthropic's default).
const THINKING_MAX_TOKENS: u32 = crate::provider::anthropic::DEFAULT_MAX_TOKENS;

/// `reasoning_effort` as Claude's `thinking`, and the `maxTokens` it needs sent.
fn thinking(req: &ChatRequest, model: &str) -> Result<Option<(Value, u32)>, ProviderError> {
    let Some(effort) = req.reasoning_effort else {
        return Ok(None);
    };
    if !model.contains("anthropic.claude") {
        return Err(bad_request(format!(
            "reasoning_effort: on Bedrock only Claude models take it (as \
             additionalModelRequestFields.thinking), not {model:?}; set reasoning = false \
             on this provider"
        )));
    }
    let max_tokens = req.max_tokens.unwrap_or(THINKING_MAX_TOKENS);
    let budget = match effort {
        ReasoningEffort::None => return Ok(Some((json!({"type": "disabled"}), max_tokens))),
        ReasoningEffort::Minimal => MIN_THINKING_BUDGET,
        ReasoningEffort::Low => 2048,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 24576,
    };
    let budget = budget.min(max_tokens.saturating_sub(1));
    if budget < MIN_THINKING_BUDGET {
        return Err(bad_request(format!(
            "reasoning_effort needs max_tokens above {MIN_THINKING_BUDGET} on Claude \
             (thinking counts in max_tokens), got {max_tokens}"
        )));
    }
    Ok(Some((
        json!({"type": "enabled", "budget_tokens": budget}),
        max_tokens,
    )))
}

/// The Converse body for `req` (the same for Converse and ConverseStream) to `model`.
pub(super) fn body(req: &ChatRequest, model: &str) -> Result<Value, ProviderError> {
    let thinking = thinking(req, model)?;
    // breakpoints go only to a model that caches (else the field is ignored)
    let cache = caching(model) != Caching::None && req.cache_breakpoints() > 0;
    if cache {
        check_breakpoints(req, model)?;
    }
    let mut body = Map::new();
    let mut system = Vec::new();
    for m in req.messages.iter().filter(|m| m.is_instructions()) {
        if m.content
            .iter()
            .any(|p| matches!(p, ContentPart::Image { .. }))
        {
            return Err(bad_request("Bedrock takes no images in a system prompt"));
        }
        if cache && !m.cache.is_empty() {
            system.extend(marked_text_blocks(m)?);
            continue;
        }
        let text = m.joined_text();
        if !text.is_empty() {
            system.push(json!({ "text": text }));
        }
    }
    let messages = turns(&req.messages, cache)?;
    if messages.is_empty() {
        return Err(bad_request("the request has no user or assistant messages"));
    }
    let has_tool_blocks = messages.iter().any(|m| {
        m["content"].as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some())
        })
    });
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(max) = thinking.as_ref().map(|(_, max)| *max).or(req.max_tokens) {
        inference.insert("maxTokens".into(), max.into());
    }
    if let Some(t) = req.temperature {
        inference.insert("temperature".into(), f64::from(t).into());
    }
    if let Some(p) = req.top_p {
        inference.insert("topP".into(), f64::from(p).into());
    }
    if !req.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(req.stop));
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    if let Some(config) = tool_config(req, has_tool_blocks, cache)? {
        body.insert("toolConfig".into(), config);
    }
    if let Some(metadata) = request_metadata(req) {
        body.insert("requestMetadata".into(), metadata);
    }
    let mut extra = req.passthrough.as_deref().cloned().unwrap_or_default();
    if let Some((thinking, _)) = thinking {
        extra.insert("thinking".into(), thinking);
    }
    if !extra.is_empty() {
        body.insert("additionalModelRequestFields".into(), Value::Object(extra));
    }
    Ok(Value::Object(body))
}

/// `toolConfig`: the tools and the choice (see the module docs for `none`).
fn tool_config(
    req: &ChatRequest,
    has_tool_blocks: bool,
    cache: bool,
) -> Result<Option<Value>, ProviderError> {
    if req.tools.is_empty() {
        if has_tool_blocks {
            return Err(bad_request(
                "the conversation holds tool calls or results but the request declares no \
                 tools: Bedrock requires the tools (toolConfig) whenever they are in the history",
            ));
        }
        return Ok(None);
    }
    let choice = match &req.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
        Some(ToolChoice::None) if has_tool_blocks => {
            return Err(bad_request(
                "tool_choice \"none\": Bedrock's Converse has no such choice, and a \
                 conversation holding tool calls cannot be sent without its tools",
            ))
        }
        Some(ToolChoice::None) => return Ok(None),
    };
    let mut tools = Vec::new();
    for t in &req.tools {
        tools.push({
            let mut spec = Map::new();
            spec.insert("name".into(), t.name.clone().into());
            if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
                spec.insert("description".into(), d.into());
            }
            let schema = if t.parameters.is_null() {
                json!({"type": "object", "properties": {}})
            } else {
                t.parameters.clone()
            };
            spec.insert("inputSchema".into(), json!({ "json": schema }));
            json!({ "toolSpec": spec })
        });
        if cache {
            tools.extend(t.cache_control.map(cache_point));
        }
    }
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    if let Some(choice) = choice {
        config.insert("toolChoice".into(), choice);
    }
    Ok(Some(Value::Object(config)))
}

/// `requestMetadata`: the request's metadata and its `user`, as strings.
fn request_metadata(req: &ChatRequest) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in req.metadata.iter().flatten() {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(k.clone(), Value::String(text));
    }
    if let Some(user) = &req.user {
        out.entry("user")
            .or_insert_with(|| Value::String(user.clone()));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// The conversation as alternating turns (system messages excluded).
/// With `cache`, each breakpoint is a `cachePoint` after the block it closes.
fn turns(messages: &[Message], cache: bool) -> Result<Vec<Value>, ProviderError> {
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System | Role::Developer => continue,
            Role::User => ("user", user_blocks(m, cache)?),
            Role::Tool => {
                let mut blocks = vec![tool_result(m)?];
                // a mark on any part closes the whole result (no cachePoint inside one)
                if cache {
                    blocks.extend(m.cache.last().map(|c| cache_point(c.control)));
                }
                ("user", blocks)
            }
            Role::Assistant => ("assistant", assistant_blocks(m, cache)?),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    Ok(out
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect())
}

fn user_blocks(m: &Message, cache: bool) -> Result<Vec<Value>, ProviderError> {
    let mut blocks = Vec::new();
    for (i, part) in m.content.iter().enumerate() {
        let mark = m.cache_at(i).filter(|_| cache);
        match part {
            ContentPart::Text { text } if text.is_empty() => {
                if mark.is_some() {
                    return Err(empty_part_mark());
                }
                continue;
            }
            ContentPart::Text { text } => blocks.push(json!({ "text": text })),
            ContentPart::Image { source, .. } => blocks.push(image(source)?),
        }
        blocks.extend(mark.map(cache_point));
    }
    Ok(blocks)
}

fn assistant_blocks(m: &Message, cache: bool) -> Result<Vec<Value>, ProviderError> {
    if m.content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }))
    {
        return Err(bad_request("Bedrock takes no images in assistant messages"));
    }
    let text = m.joined_text();
    let mut blocks = Vec::new();
    if !text.is_empty() || !m.tool_calls.is_empty() {
        // signed reasoning goes back with the answer it came with; unsigned reasoning
        // (another vendor's) would be refused, and is left out
        for t in &m.thinking {
            match (&t.redacted, &t.signature) {
                (Some(data), _) => {
                    blocks.push(json!({"reasoningContent": {"redactedContent": data}}));
                }
                (None, Some(signature)) => blocks.push(json!({"reasoningContent": {
                    "reasoningText": {"text": t.text, "signature": signature}
                }})),
                (None, None) => {}
            }
        }
    }
    if cache && !m.cache.is_empty() {
        // a block per part, the marked ones followed by their cachePoint
        blocks.extend(marked_text_blocks(m)?);
    } else if !text.is_empty() {
        blocks.push(json!({ "text": text }));
    }
    for call in &m.tool_calls {
        blocks.push(json!({"toolUse": {
            "toolUseId": call.id,
            "name": call.name,
            "input": tool_input(call)?,
        }}));
    }
    Ok(blocks)
}

/// A tool call's arguments as the `input` object Converse requires.
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

/// A tool message as a `toolResult` block: its JSON when the text is an object or array
/// (Converse's `json` content), else its text; images travel as image blocks.
fn tool_result(m: &Message) -> Result<Value, ProviderError> {
    let id = m
        .tool_call_id
        .as_deref()
        .ok_or_else(|| bad_request("tool message without tool_call_id"))?;
    let mut content = Vec::new();
    for part in &m.content {
        match part {
            ContentPart::Text { text } if text.is_empty() => {}
            ContentPart::Text { text } => match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) => content.push(json!({ "json": v })),
                _ => content.push(json!({ "text": text })),
            },
            ContentPart::Image { source, .. } => content.push(image(source)?),
        }
    }
    if content.is_empty() {
        content.push(json!({"text": ""}));
    }
    Ok(json!({"toolResult": {"toolUseId": id, "content": content}}))
}

/// An image block: base64 bytes (a `data:` URL's too) or an S3 location.
fn image(source: &ImageSource) -> Result<Value, ProviderError> {
    let (media_type, data) = match source {
        ImageSource::Base64 { media_type, data } => (media_type.as_str(), data.as_str()),
        ImageSource::Url { url } if url.starts_with("s3://") => {
            let format = format_of_path(url)?;
            return Ok(json!({"image": {
                "format": format,
                "source": {"s3Location": {"uri": url}},
            }}));
        }
        ImageSource::Url { url } => match parse_data_url(url) {
            Some(parts) => parts,
            None => {
                return Err(bad_request(
                    "Bedrock takes images as bytes (base64 or a data: URL) or s3:// URLs, \
                     not web URLs",
                ))
            }
        },
    };
    let format = match media_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(bad_request(format!(
                "image media type {other:?}: Bedrock takes png, jpeg, gif or webp"
            )))
        }
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

/// `data:image/png;base64,AAAA` as (`image/png`, `AAAA`).
fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// The image format an S3 object's extension names.
fn format_of_path(url: &str) -> Result<&'static str, ProviderError> {
    let ext = url.rsplit('.').next().unwrap_or_default();
    match ext.to_ascii_lowercase().as_str() {
        "png" => Ok("png"),
        "jpg" | "jpeg" => Ok("jpeg"),
        "gif" => Ok("gif"),
        "webp" => Ok("webp"),
        _ => Err(bad_request(format!(
            "image {url:?}: the S3 object's extension must name its format (png, jpeg, gif, webp)"
        ))),
    }
}
