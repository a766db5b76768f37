//! Tool-call pairing: whether every tool call in a message list is answered by exactly one
//! result before the conversation moves on, and every result answers a call.
//!
//! Chat APIs refuse a request that breaks this (OpenAI wants a `tool` message for every
//! `tool_calls` entry right after the assistant message; Anthropic wants every `tool_use`
//! answered by a `tool_result` in the next user turn). The log's own rules keep pairs together
//! on the surface and crash repair answers calls a crash left open, so a valid, repaired log
//! passes; a prefix cut inside a step, or a log repaired only at request time elsewhere, may
//! not. Exporters run this check first and refuse with its error rather than send a request the
//! provider would reject or silently patch.

use serde_json::Value;

use crate::message::Message;

/// A tool call without its result, or a result without its call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PairingError {
    /// A tool call is not answered before the next assistant or user message (or the end).
    #[error(
        "tool call {call_id:?} ({name}) in message {message_id:?} at seq {seq} has no result{}",
        next_seq.map_or_else(|| " (the messages end first)".to_owned(), |next| format!(" before the message at seq {next}"))
    )]
    MissingResult {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The id of the assistant message that made the call.
        message_id: String,
        /// The seq of the event carrying that message.
        seq: u64,
        /// The seq of the message that came before the result, if any.
        next_seq: Option<u64>,
    },
    /// A tool result answers no open call of the preceding assistant message.
    #[error(
        "tool result for {call_id:?} in message {message_id:?} at seq {seq} answers no open tool call"
    )]
    OrphanResult {
        /// The call id the result names.
        call_id: String,
        /// The id of the message carrying the result.
        message_id: String,
        /// The seq of the event carrying that message.
        seq: u64,
    },
}

/// A call waiting for its result.
struct OpenCall {
    call_id: String,
    name: String,
    message_id: String,
    seq: u64,
}

/// Checks that every `tool-call` block of an assistant message is answered by one
/// `tool-result` block in the messages that follow it, before the next assistant message or
/// user-typed message, and that every result answers such a call. Returns the first problem in
/// message order. Each message is read once and its tree dropped
/// ([`Message::value_uncached`]), so checking a whole log's messages keeps none.
pub fn check_tool_pairing<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Result<(), PairingError> {
    let mut open: Vec<OpenCall> = Vec::new();
    for message in messages {
        let seq = message.event().seq().get();
        let value = message.value_uncached();
        let content = content(&value);
        // A V3 result wraps itself in `tool-result` blocks; a V4 one is a tool-role message.
        let results: Vec<&str> = if str_field(&value, "role") == "tool" {
            vec![str_field(&value, "toolCallId")]
        } else {
            content
                .iter()
                .filter(|block| block_type(block) == "tool-result")
                .map(|block| str_field(block, "toolCallId"))
                .collect()
        };
        if results.is_empty() {
            // Any other message moves the conversation on: open calls stay unanswered.
            if let Some(call) = open.first() {
                return Err(missing(call, Some(seq)));
            }
            if str_field(&value, "role") == "assistant" {
                open = content
                    .iter()
                    .filter(|block| block_type(block) == "tool-call")
                    .map(|block| OpenCall {
                        call_id: str_field(block, "id").to_owned(),
                        name: str_field(block, "name").to_owned(),
                        message_id: str_field(&value, "id").to_owned(),
                        seq,
                    })
                    .collect();
            }
            continue;
        }
        for call_id in results {
            let Some(index) = open.iter().position(|call| call.call_id == call_id) else {
                return Err(PairingError::OrphanResult {
                    call_id: call_id.to_owned(),
                    message_id: str_field(&value, "id").to_owned(),
                    seq,
                });
            };
            open.remove(index);
        }
    }
    match open.first() {
        Some(call) => Err(missing(call, None)),
        None => Ok(()),
    }
}

fn missing(call: &OpenCall, next_seq: Option<u64>) -> PairingError {
    PairingError::MissingResult {
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        message_id: call.message_id.clone(),
        seq: call.seq,
        next_seq,
    }
}

/// A message's content blocks ([`Message::content`] of a tree the caller holds).
fn content(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn block_type(block: &Value) -> &str {
    str_field(block, "type")
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
