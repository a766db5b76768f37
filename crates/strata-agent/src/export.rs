//! Exporting the request a log implies to other APIs' wire shapes: OpenAI chat completions and
//! Anthropic messages (`strata messages --format openai|anthropic`).
//!
//! Both run the core's tool-pairing check first ([`check_tool_pairing`]) and refuse a message
//! list in which a tool call has no result (or a result no call): the providers reject such a
//! request, and patching it here would hide what the log says. A crashed turn is answered by
//! crash repair in the log (`strata repair`), not by the exporter.
//!
//! - OpenAI: the exact request the agent loop sends ([`chat_messages`] +
//!   [`request_from_header`]), without DeepSeek's `reasoning_content`; with no
//!   `request/header` in the log, just `{"messages": [...]}`.
//! - Anthropic: `{model, max_tokens, system, messages, tools}`; system messages join into
//!   `system`, tool calls become `tool_use` blocks (arguments parsed as the `input` object),
//!   tool results become `tool_result` blocks of a user message, consecutive messages of one
//!   role merge (the API alternates roles), reasoning is left out (it needs provider
//!   signatures), attachments become a placeholder text.

use serde_json::{json, Map, Value};
use strata_core::{check_tool_pairing, Message, PairingError};

use crate::agent::{chat_messages, request_from_header, ReasoningReplay, ReconstructError};

/// `max_tokens` of an Anthropic export when the header names none (the API requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u64 = 8192;

/// Why a request cannot be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A tool call without its result, or a result without its call.
    #[error("the messages cannot be sent: {0}")]
    Pairing(#[from] PairingError),
    /// The request header cannot be turned into a request.
    #[error(transparent)]
    Header(#[from] ReconstructError),
    /// The request did not serialize as a JSON value (none does: its map keys are strings).
    #[error("the request did not serialize: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The OpenAI chat-completions request for `messages` under the canonical `header` (session
/// `id` names the log in errors).
pub fn openai_request(
    id: &str,
    header: Option<&Value>,
    messages: &[Message],
) -> Result<Value, ExportError> {
    check_tool_pairing(messages)?;
    let chat = chat_messages(messages.iter().map(Message::value), ReasoningReplay::Never);
    match header {
        Some(header) => {
            let request = request_from_header(id, header, chat)?;
            Ok(serde_json::to_value(&request)?)
        }
        None => Ok(json!({ "messages": chat })),
    }
}

/// The Anthropic messages request for `messages` under the canonical `header`.
pub fn anthropic_request(
    header: Option<&Value>,
    messages: &[Message],
) -> Result<Value, ExportError> {
    check_tool_pairing(messages)?;
    let mut system: Vec<String> = Vec::new();
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role() {
            "system" => {
                system.push(join_text(message.content()));
                continue;
            }
            "assistant" => ("assistant", assistant_blocks(message.content())),
            _ => ("user", user_blocks(message.content())),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if last == role => content.extend(blocks),
            _ => turns.push((role.to_owned(), blocks)),
        }
    }
    let config = header.and_then(|header| header.get("config"));
    let mut request = Map::new();
    if let Some(model) = config.and_then(|config| config.get("model")) {
        request.insert("model".into(), model.clone());
    }
    let max_tokens = config
        .and_then(|config| config.get("maxTokens"))
        .and_then(Value::as_u64)
        .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
    request.insert("max_tokens".into(), max_tokens.into());
    if let Some(temperature) = config.and_then(|config| config.get("temperature")) {
        request.insert("temperature".into(), temperature.clone());
    }
    let system: Vec<String> = system.into_iter().filter(|text| !text.is_empty()).collect();
    if !system.is_empty() {
        request.insert("system".into(), system.join("\n\n").into());
    }
    let turns: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    request.insert("messages".into(), turns.into());
    let tools: Vec<Value> = header
        .and_then(|header| header.get("tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|tool| {
            let mut out = Map::new();
            out.insert("name".into(), tool.get("name").cloned().unwrap_or_default());
            if let Some(description) = tool.get("description") {
                out.insert("description".into(), description.clone());
            }
            let schema = tool
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            out.insert("input_schema".into(), schema);
            Value::Object(out)
        })
        .collect();
    if !tools.is_empty() {
        request.insert("tools".into(), tools.into());
    }
    Ok(Value::Object(request))
}

fn assistant_blocks(content: &[Value]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in content {
        match block_type(block) {
            "text" if !str_field(block, "text").is_empty() => {
                blocks.push(json!({"type": "text", "text": str_field(block, "text")}));
            }
            "tool-call" => {
                let arguments = str_field(block, "arguments");
                // `input` must be an object; arguments that are not one are kept as text.
                // Argument text is a held string (the `json` module): read as JSON.parse reads
                // it, lone surrogates kept.
                let input = match strata_core::json::parse_held(arguments) {
                    Ok(Value::Object(object)) => Value::Object(object),
                    _ if arguments.trim().is_empty() => json!({}),
                    _ => json!({ "arguments": arguments }),
                };
                blocks.push(json!({
                    "type": "tool_use",
                    "id": str_field(block, "id"),
                    "name": str_field(block, "name"),
                    "input": input,
                }));
            }
            _ => {}
        }
    }
    blocks
}

fn user_blocks(content: &[Value]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in content {
        match block_type(block) {
            "tool-result" => {
                let inner = block
                    .get("content")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let mut result = json!({
                    "type": "tool_result",
                    "tool_use_id": str_field(block, "toolCallId"),
                    "content": [{"type": "text", "text": join_text(inner)}],
                });
                if block.get("isError") == Some(&Value::Bool(true)) {
                    result["is_error"] = Value::Bool(true);
                }
                blocks.push(result);
            }
            _ => {
                let text = join_text(std::slice::from_ref(block));
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
            }
        }
    }
    blocks
}

/// Text of a block list: `text` blocks, attachments as placeholders, other blocks skipped.
fn join_text(blocks: &[Value]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter_map(|block| match block_type(block) {
            "text" => Some(str_field(block, "text")),
            "image" => Some("[image attachment omitted]"),
            "file" => Some("[file attachment omitted]"),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn block_type(block: &Value) -> &str {
    str_field(block, "type")
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
