//! The shared shape to a `GenerateContentRequest`: roles and turn merging, text and image
//! parts, tool declarations and `tool_choice`, replayed calls and tool results,
//! `generationConfig`. Pure: no I/O, no configuration; every refusal is `BadRequest`.
//!
//! Choices worth knowing:
//! - **Roles**: system messages become `systemInstruction` (their text, wherever they
//!   appear); assistant is `model`; tool results are `functionResponse` parts in a `user`
//!   turn. Consecutive turns of the same role are merged (Gemini wants them alternating,
//!   and the results of parallel calls in one turn). Empty text parts are not sent.
//! - **Images**: base64 (and `data:` URLs) become `inlineData`. Any other URL becomes
//!   `fileData {fileUri}`: Gemini fetches Files API URIs, and public or signed HTTPS URLs
//!   on current models; the gateway never fetches it. `mimeType` is taken from the path's
//!   extension (`.png`, `.jpg`/`.jpeg`, `.webp`, `.heic`, `.heif`) and left out otherwise,
//!   so Gemini goes by what it fetches; a URL it cannot use comes back as its own 400
//!   (`BadRequest`, returned to the caller). OpenAI's `detail` hint has no equivalent.
//! - **Tools**: declared with `parametersJsonSchema` (standard JSON Schema, as the shared
//!   shape carries). `tool_choice` becomes `functionCallingConfig.mode` `AUTO` / `ANY` /
//!   `NONE`, a named tool `ANY` + `allowedFunctionNames`. A replayed call's arguments are
//!   parsed from their JSON text (invalid or non-object JSON is `BadRequest`: garbage is
//!   not sent). A tool result's function name is `Message.name`, else the name of the
//!   earlier call with its `tool_call_id`. Its `response` must be a JSON object: an object
//!   result is sent as is, anything else (other JSON, plain text) as `{"content": …}`.
//! - **Call ids**: `generateContent` pairs calls and results by name and order; older
//!   models send no ids. A returned call keeps Gemini's `id` when there is one, else gets
//!   `call_<n>` (its position in the reply or stream), stable across retries of the same
//!   answer. Ids coming back in history (from any vendor) are accepted and not sent.
//! - **Thought signatures**: Gemini 3 rejects a replayed `functionCall` without a
//!   `thoughtSignature`; the shared shape has no field to carry the real one, so replayed
//!   calls carry Google's documented placeholder [`FOREIGN_THOUGHT_SIGNATURE`] (the
//!   model loses its earlier reasoning context between tool steps, not the conversation).
//! - **JSON**: `json_object` is `responseMimeType: application/json`; `json_schema` adds
//!   `responseJsonSchema` (standard JSON Schema; `name` and `strict` have no equivalent).
//!   `user` has no equivalent and is not sent.
//! - **Fields** ([`support`]): `seed`, `presencePenalty`, `frequencyPenalty`, `topK` are
//!   native; `logprobs` / `top_logprobs` become `responseLogprobs` / `logprobs`, `n`
//!   `candidateCount`, developer messages `systemInstruction`, `reasoning_effort`
//!   `thinkingConfig` ([`thinking_config`]). `service_tier`, `metadata` and `user` are
//!   advisory and not sent; `parallel_tool_calls: false` has no equivalent.

use serde_json::{json, Value};

use super::{bad_request, wire, FOREIGN_THOUGHT_SIGNATURE};
use crate::chat::{
    ChatRequest, ContentPart, Field, ImageSource, Message, ReasoningEffort, ResponseFormat, Role,
    Support, ToolCall, ToolChoice,
};
use crate::error::ProviderError;

/// The request body for `req`.
pub(super) fn body<'a>(
    req: &'a ChatRequest,
    model: &str,
) -> Result<wire::Request<'a>, ProviderError> {
    let (system, contents) = wire_contents(&req.messages)?;
    let tools = if req.tools.is_empty() {
        Vec::new()
    } else {
        let declarations = req.tools.iter().map(|t| wire::FunctionDeclaration {
            name: &t.name,
            description: t.description.as_deref(),
            parameters_json_schema: &t.parameters,
        });
        vec![wire::Tool {
            function_declarations: declarations.collect(),
        }]
    };
    let tool_config = req
        .tool_choice
        .as_ref()
        .filter(|_| !req.tools.is_empty())
        .map(wire_tool_config);
    Ok(wire::Request {
        contents,
        system_instruction: (!system.is_empty())
            .then_some(wire::SystemInstruction { parts: system }),
        tools,
        tool_config,
        generation_config: Some(generation_config(req, model)).filter(|g| !g.is_empty()),
    })
}

/// The system parts and the merged turns of a conversation.
fn wire_contents(
    messages: &[Message],
) -> Result<(Vec<wire::Part<'_>>, Vec<wire::Content<'_>>), ProviderError> {
    let mut system = Vec::new();
    let mut turns: Vec<wire::Content<'_>> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let (role, parts) = match m.role {
            Role::System | Role::Developer => {
                system.extend(text_parts(m));
                continue;
            }
            Role::User => ("user", content_parts(m)?),
            Role::Assistant => ("model", assistant_parts(m)?),
            Role::Tool => ("user", tool_result_parts(m, &messages[..i])?),
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => turns.push(wire::Content { role, parts }),
        }
    }
    if turns.is_empty() {
        return Err(bad_request(
            "nothing to send: Gemini needs at least one user or assistant message",
        ));
    }
    Ok((system, turns))
}

/// The text parts alone (`systemInstruction` takes text only), empty ones left out.
fn text_parts(m: &Message) -> impl Iterator<Item = wire::Part<'_>> {
    m.content.iter().filter_map(|part| match part {
        ContentPart::Text { text } if !text.is_empty() => Some(wire::Part::Text { text }),
        _ => None,
    })
}

/// Text and image parts, empty text left out.
fn content_parts(m: &Message) -> Result<Vec<wire::Part<'_>>, ProviderError> {
    let mut parts = Vec::with_capacity(m.content.len());
    for part in &m.content {
        match part {
            ContentPart::Text { text } if text.is_empty() => {}
            ContentPart::Text { text } => parts.push(wire::Part::Text { text }),
            ContentPart::Image { source, .. } => parts.push(image_part(source)?),
        }
    }
    Ok(parts)
}

/// An assistant turn: its text, then its calls (with the placeholder signature).
fn assistant_parts(m: &Message) -> Result<Vec<wire::Part<'_>>, ProviderError> {
    let mut parts = content_parts(m)?;
    for call in &m.tool_calls {
        parts.push(wire::Part::FunctionCall {
            function_call: wire::FunctionCall {
                name: &call.name,
                args: call_args(call)?,
            },
            thought_signature: FOREIGN_THOUGHT_SIGNATURE,
        });
    }
    Ok(parts)
}

/// A replayed call's arguments: a JSON object (an empty string means none).
fn call_args(call: &ToolCall) -> Result<Value, ProviderError> {
    let text = call.arguments.trim();
    if text.is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(args)) => Ok(Value::Object(args)),
        Ok(_) => Err(bad_request(format!(
            "arguments of tool call {:?} ({}) are not a JSON object",
            call.id, call.name
        ))),
        Err(e) => Err(bad_request(format!(
            "arguments of tool call {:?} ({}) are not valid JSON: {e}",
            call.id, call.name
        ))),
    }
}

/// A tool result: a `functionResponse` (then any images it carries).
fn tool_result_parts<'a>(
    m: &'a Message,
    earlier: &'a [Message],
) -> Result<Vec<wire::Part<'a>>, ProviderError> {
    let name = m.name.as_deref().filter(|n| !n.is_empty()).or_else(|| {
        let id = m.tool_call_id.as_deref()?;
        earlier
            .iter()
            .flat_map(|e| &e.tool_calls)
            .find(|c| c.id == id)
            .map(|c| c.name.as_str())
    });
    let name = name.ok_or_else(|| {
        bad_request("tool result without a function name (set `name` or answer an earlier call)")
    })?;
    let mut parts = vec![wire::Part::FunctionResponse {
        function_response: wire::FunctionResponse {
            name,
            response: tool_response(&m.joined_text()),
        },
    }];
    for part in &m.content {
        if let ContentPart::Image { source, .. } = part {
            parts.push(image_part(source)?);
        }
    }
    Ok(parts)
}

/// A tool's output as the object `functionResponse.response` must be: a JSON object as
/// is, anything else wrapped as `{"content": …}`.
fn tool_response(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Value::Object(object),
        Ok(other) => json!({ "content": other }),
        Err(_) => json!({ "content": text }),
    }
}

fn image_part(source: &ImageSource) -> Result<wire::Part<'_>, ProviderError> {
    let (mime_type, data) = match source {
        ImageSource::Base64 { media_type, data } => (media_type.as_str(), data.as_str()),
        ImageSource::Url { url } => match url.strip_prefix("data:") {
            Some(rest) => {
                let (media, data) = rest.split_once(";base64,").ok_or_else(|| {
                    bad_request("a data: URL image must be base64 (data:<type>;base64,<data>)")
                })?;
                (media.split(';').next().unwrap_or(media), data)
            }
            None => {
                return Ok(wire::Part::FileData {
                    file_data: wire::FileData {
                        mime_type: image_type_of(url),
                        file_uri: url,
                    },
                })
            }
        },
    };
    Ok(wire::Part::InlineData {
        inline_data: wire::Blob { mime_type, data },
    })
}

/// An image's media type from its URL's extension, for the types Gemini reads.
fn image_type_of(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let (_, extension) = path.rsplit('/').next()?.rsplit_once('.')?;
    Some(match extension.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "heif" => "image/heif",
        _ => return None,
    })
}

fn wire_tool_config(choice: &ToolChoice) -> wire::ToolConfig<'_> {
    let (mode, allowed) = match choice {
        ToolChoice::Auto => ("AUTO", Vec::new()),
        ToolChoice::None => ("NONE", Vec::new()),
        ToolChoice::Required => ("ANY", Vec::new()),
        ToolChoice::Tool(name) => ("ANY", vec![name.as_str()]),
    };
    wire::ToolConfig {
        function_calling_config: wire::FunctionCallingConfig {
            mode,
            allowed_function_names: allowed,
        },
    }
}

fn generation_config<'a>(req: &'a ChatRequest, model: &str) -> wire::GenerationConfig<'a> {
    let (response_mime_type, response_json_schema) = match &req.response_format {
        None | Some(ResponseFormat::Text) => (None, None),
        Some(ResponseFormat::JsonObject) => (Some("application/json"), None),
        Some(ResponseFormat::JsonSchema { schema, .. }) => (Some("application/json"), Some(schema)),
    };
    wire::GenerationConfig {
        temperature: req.temperature,
        top_p: req.top_p,
        max_output_tokens: req.max_tokens,
        stop_sequences: &req.stop,
        response_mime_type,
        response_json_schema,
        seed: req.seed,
        presence_penalty: req.presence_penalty,
        frequency_penalty: req.frequency_penalty,
        response_logprobs: req.logprobs.then_some(true),
        logprobs: req.top_logprobs.filter(|_| req.logprobs),
        candidate_count: req.n.filter(|&n| n > 1),
        top_k: req.top_k,
        thinking_config: req.reasoning_effort.map(|e| thinking_config(e, model)),
    }
}

/// `reasoning_effort` as `thinkingConfig`: Gemini 3 models (`gemini-3…`) take a
/// `thinkingLevel` (`none` is sent as `minimal`, their lowest); earlier ones a
/// `thinkingBudget` in tokens: none 0 (off), minimal 512, low 1024, medium 8192,
/// high 24576 (2.5 Flash's ceiling).
pub(super) fn thinking_config(effort: ReasoningEffort, model: &str) -> wire::ThinkingConfig {
    let model = model.rsplit('/').next().unwrap_or(model);
    if model.starts_with("gemini-3") {
        let level = match effort {
            ReasoningEffort::None | ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        };
        return wire::ThinkingConfig {
            thinking_level: Some(level),
            thinking_budget: None,
        };
    }
    let budget = match effort {
        ReasoningEffort::None => 0,
        ReasoningEffort::Minimal => 512,
        ReasoningEffort::Low => 1024,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 24576,
    };
    wire::ThinkingConfig {
        thinking_level: None,
        thinking_budget: Some(budget),
    }
}

/// How Gemini carries each field (see the module docs).
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Temperature
        | Field::TopP
        | Field::Stop
        | Field::Tools
        | Field::ToolChoice
        | Field::ResponseFormat
        | Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::TopK => Support::Native,
        Field::Logprobs
        | Field::TopLogprobs
        | Field::N
        | Field::ReasoningEffort
        | Field::DeveloperRole => Support::Translated,
        // Gemini caches implicitly (and explicitly only through its cachedContents API)
        Field::ServiceTier
        | Field::Metadata
        | Field::User
        | Field::CacheControl
        | Field::Store
        | Field::PromptCacheKey
        | Field::PromptCacheRetention
        | Field::SafetyIdentifier => Support::Ignored,
        Field::ParallelToolCalls
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
