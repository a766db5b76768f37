//! Exporting the request a log implies to other APIs' wire shapes: OpenAI chat completions and
//! Anthropic messages (`strata messages --format openai|anthropic`).
//!
//! Both run the core's tool-pairing check first ([`check_tool_pairing`]) and refuse a message
//! list in which a tool call has no result (or a result no call): the providers reject such a
//! request, and patching it here would hide what the log says. A crashed turn is answered by
//! crash repair in the log (`strata repair`), not by the exporter.
//!
//! - OpenAI: the exact request the agent loop sends (each message as
//!   [`chat_messages`](crate::agent::chat_messages) converts it, and [`request_from_header`]),
//!   without DeepSeek's `reasoning_content`; with no `request/header` in the log, just
//!   `{"messages": [...]}`.
//! - Anthropic: `{model, max_tokens, system, messages, tools}`; system messages join into
//!   `system`, tool calls become `tool_use` blocks (arguments parsed as the `input` object),
//!   tool results become `tool_result` blocks of a user message, consecutive messages of one
//!   role merge (the API alternates roles), reasoning is left out (it needs provider
//!   signatures), attachments become a placeholder text.
//! - V4 logs (docs/format-v4.md): a tool-role result is the tool message (OpenAI `tool`,
//!   Anthropic `tool_result`), a developer message's text joins the system prompt (OpenAI a
//!   `system` message, Anthropic `system`); its tool additions and removals are not text.
//!
//! An export is an [`ExportedRequest`]: checked when it is built, and converted as it is
//! serialized, one message at a time (each read from its event without keeping the tree,
//! converted, written and dropped), so exporting a log of a million messages holds neither
//! their trees nor the converted request. What it writes is the request a `Value` of the whole
//! would print, byte for byte.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};
use strata_core::{check_tool_pairing, Message, PairingError};

use crate::agent::{convert, request_from_header, ReconstructError};

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

/// A request ready to be serialized (`serde_json::to_writer`, `to_value`, …), its messages
/// converted as they are written (see the module docs).
#[derive(Debug)]
pub struct ExportedRequest<'m> {
    /// The request's members in order, `messages` standing empty where the converted
    /// messages go.
    members: Map<String, Value>,
    messages: Messages<'m>,
}

/// The messages of an export, in one API's shape.
#[derive(Debug)]
enum Messages<'m> {
    /// One or more chat messages per message.
    Openai(&'m [Message]),
    /// Runs of one role merged into a turn; system messages and messages with nothing to
    /// send left out. One [`Turn`] per message.
    Anthropic(&'m [Message], Vec<Turn>),
}

/// What an Anthropic export makes of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    /// Left out: a system message (joined into `system`) or nothing to send.
    Skip,
    User,
    Assistant,
}

/// The OpenAI chat-completions request for `messages` under the canonical `header` (session
/// `id` names the log in errors).
pub fn openai_request<'m>(
    id: &str,
    header: Option<&Value>,
    messages: &'m [Message],
) -> Result<ExportedRequest<'m>, ExportError> {
    check_tool_pairing(messages)?;
    let members = match header {
        // A request is a struct, so it serializes as an object.
        Some(header) => match serde_json::to_value(request_from_header(id, header, Vec::new())?)? {
            Value::Object(members) => members,
            _ => Map::new(),
        },
        None => Map::from_iter([("messages".to_owned(), json!([]))]),
    };
    Ok(ExportedRequest {
        members,
        messages: Messages::Openai(messages),
    })
}

/// The Anthropic messages request for `messages` under the canonical `header`.
pub fn anthropic_request<'m>(
    header: Option<&Value>,
    messages: &'m [Message],
) -> Result<ExportedRequest<'m>, ExportError> {
    check_tool_pairing(messages)?;
    let mut system: Vec<String> = Vec::new();
    let turns: Vec<Turn> = messages
        .iter()
        .map(|message| {
            let message = message.value_uncached();
            let content = content(&message);
            match str_field(&message, "role") {
                // A V4 developer message's text joins the system prompt (docs/format-v4.md).
                "system" | "developer" => {
                    system.push(join_text(content));
                    Turn::Skip
                }
                "tool" => Turn::User,
                "assistant" if assistant_blocks(content).is_empty() => Turn::Skip,
                "assistant" => Turn::Assistant,
                _ if user_blocks(content).is_empty() => Turn::Skip,
                _ => Turn::User,
            }
        })
        .collect();
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
    request.insert("messages".into(), json!([]));
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
    Ok(ExportedRequest {
        members: request,
        messages: Messages::Anthropic(messages, turns),
    })
}

impl Serialize for ExportedRequest<'_> {
    /// The members in order, as a `Value` object serializes them, with the messages written
    /// where `messages` stands.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len()))?;
        for (key, value) in &self.members {
            if key == "messages" {
                map.serialize_entry(key, &self.messages)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Messages::Openai(messages) => {
                serializer.collect_seq(messages.iter().flat_map(|message| {
                    let mut chat = Vec::new();
                    // DeepSeek's `reasoning_content` is never exported.
                    convert(&message.value_uncached(), false, &mut chat);
                    chat
                }))
            }
            Messages::Anthropic(messages, turns) => {
                serializer.collect_seq(runs(turns).map(|(turn, range)| Run {
                    turn,
                    messages: &messages[range.clone()],
                    turns: &turns[range],
                }))
            }
        }
    }
}

/// The runs of one role among `turns`, skipped messages ignored: each run's role and the index
/// range from its first message to the next run's (the skipped messages in it are left out
/// when it is written).
fn runs(turns: &[Turn]) -> impl Iterator<Item = (Turn, std::ops::Range<usize>)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        let first = start
            + turns
                .get(start..)?
                .iter()
                .position(|turn| *turn != Turn::Skip)?;
        let turn = turns[first];
        let end = turns[first..]
            .iter()
            .position(|other| *other != Turn::Skip && *other != turn)
            .map_or(turns.len(), |offset| first + offset);
        start = end;
        Some((turn, first..end))
    })
}

/// One Anthropic message: `{role, content}`, the content blocks of a run's messages.
struct Run<'m> {
    turn: Turn,
    messages: &'m [Message],
    turns: &'m [Turn],
}

impl Serialize for Run<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let role = match self.turn {
            Turn::Assistant => "assistant",
            _ => "user",
        };
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", role)?;
        map.serialize_entry("content", &RunContent(self))?;
        map.end()
    }
}

struct RunContent<'r, 'm>(&'r Run<'m>);

impl Serialize for RunContent<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let blocks = run
            .messages
            .iter()
            .zip(run.turns)
            .filter(|(_, turn)| **turn == run.turn)
            .flat_map(|(message, _)| {
                let message = message.value_uncached();
                match run.turn {
                    Turn::Assistant => assistant_blocks(content(&message)),
                    _ if str_field(&message, "role") == "tool" => vec![tool_role_block(&message)],
                    _ => user_blocks(content(&message)),
                }
            });
        serializer.collect_seq(blocks)
    }
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

/// The `tool_result` block of a V4 tool-role message (its content is the result).
fn tool_role_block(message: &Value) -> Value {
    let mut result = json!({
        "type": "tool_result",
        "tool_use_id": str_field(message, "toolCallId"),
        "content": [{"type": "text", "text": join_text(content(message))}],
    });
    if message.get("isError") == Some(&Value::Bool(true)) {
        result["is_error"] = Value::Bool(true);
    }
    result
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

/// A message object's content blocks.
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
