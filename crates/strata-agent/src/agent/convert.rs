//! Derived messages → chat-completion messages: the one place the surface meets the wire.
//!
//! Each surface message maps by role and content blocks (session-core §4):
//!
//! | message | blocks | chat message |
//! |---|---|---|
//! | `system` | `text` | `system` (text blocks joined by newlines) |
//! | `user` | `text`, `image`, `file`, plugin blocks | `user` (attachments as a placeholder line, unknown blocks skipped) |
//! | `user` from a tool | one `tool-result` with inner blocks | `tool` with `tool_call_id` |
//! | `assistant` | `text`, `reasoning`, `tool-call` | `assistant` with `tool_calls`, and `reasoning_content` per [`ReasoningReplay`] |
//!
//! The conversion is a pure function of the messages, so the request sent at a step and the
//! request rebuilt from the log at that point are the same bytes.

use serde_json::Value;

use crate::llm::{ChatMessage, ToolCall};

/// When earlier reasoning is sent back to the model.
///
/// DeepSeek's thinking models want the reasoning of the current tool-calling exchange replayed
/// and ignore (or, on older models, reject) reasoning from earlier turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReasoningReplay {
    /// Never send `reasoning_content`.
    Never,
    /// Send it for assistant messages after the last user-typed message (the exchange in
    /// progress).
    #[default]
    CurrentExchange,
    /// Send it for every assistant message.
    Always,
}

/// Converts surface messages (message objects, in surface order) to chat messages.
pub fn chat_messages<'a>(
    messages: impl IntoIterator<Item = &'a Value>,
    reasoning: ReasoningReplay,
) -> Vec<ChatMessage> {
    let messages: Vec<&Value> = messages.into_iter().collect();
    let exchange_start = messages
        .iter()
        .rposition(|message| role(message) == "user" && !is_tool_result(message))
        .unwrap_or(0);
    let mut out = Vec::with_capacity(messages.len());
    for (idx, message) in messages.iter().enumerate() {
        let include_reasoning = match reasoning {
            ReasoningReplay::Never => false,
            ReasoningReplay::CurrentExchange => idx > exchange_start,
            ReasoningReplay::Always => true,
        };
        convert(message, include_reasoning, &mut out);
    }
    out
}

/// Converts one message, appending zero or more chat messages to `out`.
pub fn convert(message: &Value, include_reasoning: bool, out: &mut Vec<ChatMessage>) {
    let blocks = content(message);
    match role(message) {
        "system" => out.push(ChatMessage::system(join_text(blocks))),
        // A V4 developer message's instructions, as the system speaking; one that only adds or
        // removes tools says nothing to the model (docs/format-v4.md, "Exports").
        "developer" => {
            let text = join_text(blocks);
            if !text.is_empty() {
                out.push(ChatMessage::system(text));
            }
        }
        // A V4 result is a tool-role message: its content is the result.
        "tool" => out.push(ChatMessage::tool(
            str_field(message, "toolCallId"),
            join_text(blocks),
        )),
        "assistant" => {
            let mut text = Vec::new();
            let mut reasoning = Vec::new();
            let mut tool_calls = Vec::new();
            for block in blocks {
                match block_type(block) {
                    "text" => text.push(str_field(block, "text")),
                    "reasoning" => reasoning.push(str_field(block, "text")),
                    "tool-call" => tool_calls.push(ToolCall::function(
                        str_field(block, "id"),
                        str_field(block, "name"),
                        str_field(block, "arguments"),
                    )),
                    _ => {}
                }
            }
            let reasoning_content =
                (include_reasoning && !reasoning.is_empty()).then(|| reasoning.join("\n"));
            out.push(ChatMessage::Assistant {
                content: text.join("\n"),
                reasoning_content,
                tool_calls,
            });
        }
        _ if is_tool_result(message) => {
            for block in blocks
                .iter()
                .filter(|block| block_type(block) == "tool-result")
            {
                let inner = block
                    .get("content")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                out.push(ChatMessage::tool(
                    str_field(block, "toolCallId"),
                    join_text(inner),
                ));
            }
        }
        // `user` and any role a plugin invents: the model sees it as the user speaking.
        _ => out.push(ChatMessage::user(join_text(blocks))),
    }
}

/// Text of a block list: `text` blocks, attachments as placeholders, other blocks skipped.
fn join_text(blocks: &[Value]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block_type(block) {
            "text" => Some(str_field(block, "text").to_owned()),
            "image" => Some("[image attachment omitted]".to_owned()),
            "file" => Some("[file attachment omitted]".to_owned()),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn is_tool_result(message: &Value) -> bool {
    message
        .get("source")
        .and_then(|source| source.get("kind"))
        .and_then(Value::as_str)
        == Some("tool")
        || content(message)
            .iter()
            .any(|block| block_type(block) == "tool-result")
}

fn role(message: &Value) -> &str {
    str_field(message, "role")
}

fn content(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn block_type(block: &Value) -> &str {
    str_field(block, "type")
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
