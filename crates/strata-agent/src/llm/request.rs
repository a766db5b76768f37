//! The chat-completion request in OpenAI wire format, with DeepSeek's `reasoning_content` on
//! assistant messages.
//!
//! These are wire types: field order is the serialized key order, and that order is part of
//! the contract (the agent loop compares the request it sent with the one the log
//! reconstructs, byte for byte). Add new optional fields at the end of a struct, skipped when
//! unset, so existing requests keep their bytes.

use serde::{Deserialize, Serialize};

/// A streamed chat-completion request.
///
/// `stream: true` and `stream_options: {include_usage: true}` are always sent: the client only
/// speaks SSE, and usage arrives only when asked for. They are private so no caller can turn
/// them off; build the request with [`ChatRequest::new`] and set the public fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name, e.g. `deepseek-chat` or `deepseek-reasoner`.
    pub model: String,
    /// The conversation so far, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Functions the model may call; omitted from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Whether the model may or must call a tool; provider default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Cap on generated tokens; provider default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature; provider default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass; provider default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Reasoning effort for models that take one (`low`, `medium`, `high`); opaque here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(skip_deserializing, default = "always_true")]
    stream: bool,
    #[serde(skip_deserializing, default)]
    stream_options: StreamOptions,
}

impl ChatRequest {
    /// A streamed request with provider defaults for every optional field.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages,
            tools: Vec::new(),
            tool_choice: None,
            max_tokens: None,
            temperature: None,
            top_p: None,
            stop: Vec::new(),
            reasoning_effort: None,
            stream: true,
            stream_options: StreamOptions::default(),
        }
    }
}

/// Always `{include_usage: true}`: without it OpenAI-compatible servers send no usage chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StreamOptions {
    include_usage: bool,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions {
            include_usage: true,
        }
    }
}

fn always_true() -> bool {
    true
}

/// One message of the conversation, tagged by `role` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// The system prompt.
    System {
        /// The prompt text.
        content: String,
    },
    /// What the user typed (or what the loop says on the user's behalf).
    User {
        /// The message text.
        content: String,
    },
    /// An earlier model answer, replayed as context.
    Assistant {
        /// The answer text; empty when the model only called tools.
        content: String,
        /// DeepSeek's chain of thought. Sent back only when the provider wants it (DeepSeek
        /// asks for it within a tool-calling turn and rejects it elsewhere on some models), so
        /// the message builder decides; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// Tool calls the model made; omitted when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The `id` of the [`ToolCall`] this answers.
        tool_call_id: String,
        /// The result text as the model should see it.
        content: String,
    },
}

impl ChatMessage {
    /// A system prompt.
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage::Assistant {
            content: content.into(),
            reasoning_content: None,
            tool_calls: Vec::new(),
        }
    }

    /// A tool result answering call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }
}

/// The only tool kind OpenAI-compatible APIs define; a type so the JSON always says
/// `"type": "function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    /// A function call.
    #[default]
    Function,
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id, echoed by the matching tool message.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default)]
    pub kind: ToolKind,
    /// Which function, with what arguments.
    pub function: FunctionCall,
}

impl ToolCall {
    /// A function call with raw JSON `arguments`.
    pub fn function(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: ToolKind::Function,
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// The function part of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function name.
    pub name: String,
    /// The arguments as the model wrote them: a JSON text, kept verbatim (possibly invalid).
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `function`.
    #[serde(rename = "type", default)]
    pub kind: ToolKind,
    /// Name, description and parameter schema.
    pub function: FunctionDefinition,
}

impl ToolDefinition {
    /// A function tool with a JSON-schema `parameters` object.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> ToolDefinition {
        ToolDefinition {
            kind: ToolKind::Function,
            function: FunctionDefinition {
                name: name.into(),
                description: Some(description.into()),
                parameters,
            },
        }
    }
}

/// The function part of a [`ToolDefinition`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON schema of the arguments object, sent verbatim (key order kept).
    pub parameters: serde_json::Value,
}

/// Whether the model may call tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls (e.g. a summarizer request that still lists tools for cache reuse).
    None,
    /// At least one tool call.
    Required,
}

#[cfg(test)]
mod tests;
