//! The Gemini API on the wire: the serde types of a `GenerateContentRequest`, a
//! `GenerateContentResponse` (the whole reply, or one streamed chunk of it) and its
//! `usageMetadata`, as Google documents them for `v1beta`. Field names are camelCase, as
//! the REST API's JSON mapping spells them. Requests borrow from the shared shape;
//! responses are lenient about absent fields (proto3 omits defaults) and strict about
//! nothing: the adapter decides what a usable response is.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST models/{model}:generateContent` (and `:streamGenerateContent`) body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request<'a> {
    pub contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig<'a>>,
}

/// `systemInstruction`: text parts only, no role.
#[derive(Debug, Serialize)]
pub(super) struct SystemInstruction<'a> {
    pub parts: Vec<Part<'a>>,
}

/// One turn of `contents`: role `user` or `model`.
#[derive(Debug, Serialize)]
pub(super) struct Content<'a> {
    pub role: &'static str,
    pub parts: Vec<Part<'a>>,
}

/// One part of a turn. Each variant serialises as the one-key object the API expects
/// (`{"text": …}`, `{"inlineData": …}`, …).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Part<'a> {
    Text {
        text: &'a str,
    },
    InlineData {
        #[serde(rename = "inlineData")]
        inline_data: Blob<'a>,
    },
    FileData {
        #[serde(rename = "fileData")]
        file_data: FileData<'a>,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: FunctionCall<'a>,
        /// The signature Gemini 3 requires on a replayed call (see the module docs of
        /// the adapter: the shared shape cannot carry the real one).
        #[serde(rename = "thoughtSignature")]
        thought_signature: &'static str,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: FunctionResponse<'a>,
    },
}

/// `inlineData`: base64 bytes and their media type.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Blob<'a> {
    pub mime_type: &'a str,
    pub data: &'a str,
}

/// `fileData`: a URI Gemini fetches itself.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<&'static str>,
    pub file_uri: &'a str,
}

/// An earlier call of the model, replayed in history. `args` is a JSON object.
#[derive(Debug, Serialize)]
pub(super) struct FunctionCall<'a> {
    pub name: &'a str,
    pub args: Value,
}

/// A tool's result. `response` is a JSON object.
#[derive(Debug, Serialize)]
pub(super) struct FunctionResponse<'a> {
    pub name: &'a str,
    pub response: Value,
}

/// One entry of `tools`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool<'a> {
    pub function_declarations: Vec<FunctionDeclaration<'a>>,
}

/// A function the model may call. `parametersJsonSchema` takes standard JSON Schema
/// (what the shared shape carries); the older `parameters` takes only Google's OpenAPI
/// subset and rejects common keywords such as `additionalProperties`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    pub parameters_json_schema: &'a Value,
}

/// `toolConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolConfig<'a> {
    pub function_calling_config: FunctionCallingConfig<'a>,
}

/// `toolConfig.functionCallingConfig`: `AUTO`, `ANY` or `NONE`, and the names `ANY` may
/// pick from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionCallingConfig<'a> {
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_function_names: Vec<&'a str>,
}

/// `generationConfig`. `responseJsonSchema` takes standard JSON Schema (the older
/// `responseSchema` takes Google's OpenAPI subset).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_json_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
}

/// `generationConfig.thinkingConfig`: a level (Gemini 3) or a token budget (Gemini 2.5);
/// never both (Gemini refuses that).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
}

impl GenerationConfig<'_> {
    /// Nothing set: the field can be left out.
    pub fn is_empty(&self) -> bool {
        self.temperature.is_none()
            && self.top_p.is_none()
            && self.max_output_tokens.is_none()
            && self.stop_sequences.is_empty()
            && self.response_mime_type.is_none()
            && self.seed.is_none()
            && self.presence_penalty.is_none()
            && self.frequency_penalty.is_none()
            && self.response_logprobs.is_none()
            && self.candidate_count.is_none()
            && self.top_k.is_none()
            && self.thinking_config.is_none()
    }
}

/// A `GenerateContentResponse`: the whole reply, or one chunk of a stream. An error
/// object some paths return in its place is kept in `error`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response {
    #[serde(default)]
    pub candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub model_version: Option<String>,
    /// The response's id (every chunk of a stream repeats it).
    #[serde(default)]
    pub response_id: Option<String>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// One candidate (the adapter reads the first; it never asks for more).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate {
    #[serde(default)]
    pub content: Option<CandidateContent>,
    /// Absent until the candidate is finished (streams), then `STOP`, `MAX_TOKENS`, ...
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Set for a request with `responseLogprobs`.
    #[serde(default)]
    pub logprobs_result: Option<LogprobsResult>,
    #[serde(default)]
    pub index: Option<u32>,
}

/// `logprobsResult`: per output token, the chosen candidate and (with `logprobs`) the top
/// candidates at that step.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogprobsResult {
    #[serde(default)]
    pub top_candidates: Vec<TopCandidates>,
    #[serde(default)]
    pub chosen_candidates: Vec<LogprobCandidate>,
}

/// The top candidates of one step.
#[derive(Debug, Default, Deserialize)]
pub(super) struct TopCandidates {
    #[serde(default)]
    pub candidates: Vec<LogprobCandidate>,
}

/// A token and its log probability.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogprobCandidate {
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub log_probability: f64,
}

/// A candidate's content.
#[derive(Debug, Default, Deserialize)]
pub(super) struct CandidateContent {
    #[serde(default)]
    pub parts: Option<Vec<ResponsePart>>,
}

/// A part of a candidate. Kinds the adapter does not use (`inlineData` output,
/// `executableCode`, ...) deserialise with every field `None` and are skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResponsePart {
    #[serde(default)]
    pub text: Option<String>,
    /// `true` on a thought summary: not part of the answer.
    #[serde(default)]
    pub thought: Option<bool>,
    #[serde(default)]
    pub function_call: Option<ResponseFunctionCall>,
}

/// A call the model made; it arrives whole (never in pieces).
#[derive(Debug, Default, Deserialize)]
pub(super) struct ResponseFunctionCall {
    /// Set by newer models only.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    /// A JSON object; absent for a call without arguments.
    #[serde(default)]
    pub args: Option<Value>,
}

/// `promptFeedback`: set when the prompt itself was blocked.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
    #[serde(default)]
    pub block_reason_message: Option<String>,
}

/// `usageMetadata`. `promptTokenCount` already includes `cachedContentTokenCount`;
/// `candidatesTokenCount` excludes `thoughtsTokenCount` (reported apart).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    #[serde(default)]
    pub prompt_token_count: Option<u64>,
    #[serde(default)]
    pub cached_content_token_count: Option<u64>,
    #[serde(default)]
    pub candidates_token_count: Option<u64>,
    #[serde(default)]
    pub thoughts_token_count: Option<u64>,
    #[serde(default)]
    pub tool_use_prompt_token_count: Option<u64>,
}
