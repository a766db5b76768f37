//! V4's row admission (docs/format-v4.md §3.2–§3.3): the rules a V4 row passes on its own
//! before any relational rule — retired syntax (N-ROW-2, N-ROW-3), tool-role results
//! (N-ROW-5), a fork's not-started result (N-ROW-6) and developer messages (N-DEV-1–N-DEV-5).
//!
//! They read payloads deeper than a V3 view is built (content blocks of every message slot,
//! stream chunks, request tools), so they judge a parsed tree. Their order is upstream's:
//! developer data first, then the retired source kind, the retired syntax, the tool role and
//! the fork result; the first failure wins.

use serde_json::{Map, Value};

use crate::event::EventType;
use crate::json::{canonical_decimal, non_negative_safe_integer};
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;

/// Whether V4's row admission reads a payload of this type: the message slots, the content
/// slots and request headers. Every other type takes V3's path unchanged.
pub(super) fn reads(event_type: &EventType) -> bool {
    match event_type {
        EventType::UserMessage
        | EventType::SystemMessage
        | EventType::DeveloperMessage
        | EventType::AssistantMessage
        | EventType::AssistantAttempt
        | EventType::ToolResult
        | EventType::RequestHeader => true,
        EventType::Other(name) => matches!(
            name.as_str(),
            "agent/inbox/spliced"
                | "session/title-llm-request"
                | "team/message/queued"
                | "compaction/summary"
                | "tool/ptc-dispatch"
        ),
        _ => false,
    }
}

/// Runs V4's row admission on one known event's payload. `ignorable` rows of
/// `developer/message` are judged too: a V4 reader knows the type (N-ROW-1).
pub(super) fn check_row(
    event_type: &EventType,
    seq: Seq,
    data: &Value,
    surface_append: bool,
    sources: Option<&[u64]>,
) -> Result<(), AcceptError> {
    let row = Row {
        event_type,
        seq,
        data,
    };
    if *event_type == EventType::DeveloperMessage {
        row.developer()?;
    }
    row.retired_source()?;
    row.retired_syntax()?;
    row.foreign_roles()?;
    if *event_type == EventType::SystemMessage {
        row.system_fields()?;
    }
    if *event_type == EventType::ToolResult {
        row.tool_role()?;
        row.fork_result(surface_append, sources)?;
    }
    Ok(())
}

/// One row under judgement, for messages that name it.
struct Row<'a> {
    event_type: &'a EventType,
    seq: Seq,
    data: &'a Value,
}

/// The message slots of an event (docs/format-v4.md §2.7): the objects that carry a `source`.
fn message_slots<'v>(event_type: &EventType, data: &'v Value) -> Vec<&'v Value> {
    match event_type {
        EventType::UserMessage => vec![data],
        EventType::SystemMessage
        | EventType::DeveloperMessage
        | EventType::AssistantMessage
        | EventType::ToolResult => data.get("message").into_iter().collect(),
        EventType::Other(name) => {
            let list = match name.as_str() {
                "agent/inbox/spliced" => data.get("inserted"),
                "session/title-llm-request" => data.get("messages"),
                _ => None,
            };
            list.and_then(Value::as_array)
                .map(|items| items.iter().collect())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The content arrays whose block tags V4 interprets (docs/format-v4.md §3, N-ROW-3).
fn content_arrays<'v>(event_type: &EventType, data: &'v Value) -> Vec<&'v Value> {
    let mut arrays: Vec<&Value> = Vec::new();
    let mut push = |value: Option<&'v Value>| arrays.extend(value);
    match event_type {
        EventType::UserMessage => push(data.get("content")),
        EventType::DeveloperMessage | EventType::AssistantMessage => {
            push(
                data.get("message")
                    .and_then(|message| message.get("content")),
            );
        }
        EventType::Other(name) => match name.as_str() {
            "team/message/queued" => {
                push(
                    data.get("message")
                        .and_then(|message| message.get("content")),
                );
            }
            "agent/inbox/spliced" => {
                for item in data
                    .get("inserted")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    push(item.get("content"));
                }
            }
            "session/title-llm-request" => {
                for item in data
                    .get("messages")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    push(item.get("content"));
                }
            }
            "compaction/summary" => {
                push(data.get("summary"));
                push(data.get("rawOutput"));
            }
            "tool/ptc-dispatch" => push(data.get("content")),
            _ => {}
        },
        _ => {}
    }
    arrays
}

/// The block tags an assistant stream names (`block-end.block.type`, `block-start.blockType`).
fn stream_tags(event_type: &EventType, data: &Value) -> Vec<String> {
    if !matches!(
        event_type,
        EventType::AssistantMessage | EventType::AssistantAttempt
    ) {
        return Vec::new();
    }
    let Some(stream) = data.get("stream").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut tags = Vec::new();
    for entry in stream {
        if entry.get("type").and_then(Value::as_str) != Some("chunk") {
            continue;
        }
        let Some(chunk) = entry.get("chunk") else {
            continue;
        };
        let tag = match chunk.get("type").and_then(Value::as_str) {
            Some("block-end") => chunk
                .get("block")
                .and_then(|block| block.get("type"))
                .and_then(Value::as_str),
            Some("block-start") => chunk.get("blockType").and_then(Value::as_str),
            _ => None,
        };
        if let Some(tag) = tag {
            tags.push(tag.to_owned());
        }
    }
    tags
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

fn is_tool_change(tag: &str) -> bool {
    matches!(tag, "tool-addition" | "tool-removal")
}

impl Row<'_> {
    fn refuse(&self, rule: Rule, detail: &str) -> AcceptError {
        AcceptError::new(
            rule,
            format!("format v4 {} at seq {} {detail}", self.event_type, self.seq),
        )
    }

    /// N-DEV-1–N-DEV-4: a developer message's own shape.
    fn developer(&self) -> Result<(), AcceptError> {
        let fail = |detail: &str| Err(self.refuse(Rule::V4Developer, detail));
        let Some(data) = self.data.as_object() else {
            return fail("data must be an object");
        };
        let Some(message) = data.get("message").and_then(Value::as_object) else {
            return fail("requires an object message");
        };
        if message.get("role").and_then(Value::as_str) != Some("developer") {
            return fail("requires a developer-role message");
        }
        for key in ["turn", "step"] {
            if !data.get(key).is_some_and(is_positive_safe_integer) {
                return fail(&format!("{key} must be a positive safe integer"));
            }
        }
        if !non_empty_str(message.get("id")) {
            return fail("requires a non-empty message id");
        }
        let Some(content) = message.get("content").and_then(Value::as_array) else {
            return fail("requires array content");
        };
        if !producer_source(message) {
            return fail("requires a producer-owned source kind");
        }
        let mut additions = 0_usize;
        for block in content {
            let Some(tag) = block_type(block) else {
                continue;
            };
            if !is_tool_change(tag) {
                continue;
            }
            if !non_empty_str(block.get("toolName")) {
                return fail(&format!("{tag} requires a non-empty toolName"));
            }
            if tag == "tool-addition" {
                if block.get("tool").is_some() {
                    return fail("tool-addition must omit inline tool definitions");
                }
                additions += 1;
            }
        }
        match (additions, data.get("headerSeq")) {
            (0, Some(_)) => fail("must omit headerSeq without tool additions"),
            (1.., header_seq) if header_seq.and_then(non_negative_safe_integer).is_none() => {
                fail("tool additions require a headerSeq naming a request/header")
            }
            _ => Ok(()),
        }
    }

    /// N-ROW-2: the retired `{kind: "plugin"}` source in a message slot.
    fn retired_source(&self) -> Result<(), AcceptError> {
        for slot in message_slots(self.event_type, self.data) {
            let kind = slot
                .get("source")
                .and_then(|source| source.get("kind"))
                .and_then(Value::as_str);
            if kind == Some("plugin") {
                return Err(self.refuse(
                    Rule::V4RetiredSource,
                    "message requires a producer-owned source kind",
                ));
            }
        }
        Ok(())
    }

    /// N-ROW-3b, N-ROW-3c and the `deferLoading` half of N-DEV-5: `header.system`, a released
    /// `tool-result` wrapper in an interpreted content slot, and a tool whose own
    /// `deferLoading` is anything but `true`.
    fn retired_syntax(&self) -> Result<(), AcceptError> {
        if *self.event_type == EventType::RequestHeader {
            return self.request_header();
        }
        let wrapper = |tag: &str| tag == "tool-result";
        let in_content = content_arrays(self.event_type, self.data)
            .into_iter()
            .filter_map(Value::as_array)
            .flatten()
            .any(|block| block_type(block).is_some_and(wrapper));
        if in_content
            || stream_tags(self.event_type, self.data)
                .iter()
                .any(|tag| wrapper(tag))
        {
            return Err(self.refuse(
                Rule::V4RetiredSyntax,
                "must not contain a released tool-result wrapper",
            ));
        }
        Ok(())
    }

    fn request_header(&self) -> Result<(), AcceptError> {
        let Some(header) = self
            .data
            .as_object()
            .and_then(|data| data.get("header"))
            .and_then(Value::as_object)
        else {
            return Err(self.refuse(Rule::V4RetiredSyntax, "requires an object header"));
        };
        if header.contains_key("system") {
            return Err(self.refuse(Rule::V4RetiredSyntax, "rejects retired header.system"));
        }
        let tools = header.get("tools").and_then(Value::as_array);
        for tool in tools.into_iter().flatten() {
            if let Some(defer) = tool.get("deferLoading") {
                if *defer != Value::Bool(true) {
                    return Err(self.refuse(
                        Rule::V4Developer,
                        "tool deferLoading must be true when present",
                    ));
                }
            }
        }
        Ok(())
    }

    /// N-DEV-5: the developer role and tool-change blocks outside a developer message.
    fn foreign_roles(&self) -> Result<(), AcceptError> {
        if *self.event_type == EventType::DeveloperMessage {
            return Ok(());
        }
        let developer_role = message_slots(self.event_type, self.data)
            .iter()
            .any(|slot| slot.get("role").and_then(Value::as_str) == Some("developer"));
        if developer_role {
            return Err(self.refuse(
                Rule::V4Developer,
                "developer/message and developer role must occur together",
            ));
        }
        let change_in_content = content_arrays(self.event_type, self.data)
            .into_iter()
            .filter_map(Value::as_array)
            .flatten()
            .chain(
                message_slots(self.event_type, self.data)
                    .into_iter()
                    .filter_map(|slot| slot.get("content").and_then(Value::as_array))
                    .flatten(),
            )
            .any(|block| block_type(block).is_some_and(is_tool_change));
        if change_in_content
            || stream_tags(self.event_type, self.data)
                .iter()
                .any(|tag| is_tool_change(tag))
        {
            return Err(self.refuse(
                Rule::V4Developer,
                "tool-addition and tool-removal blocks require developer role",
            ));
        }
        Ok(())
    }

    /// N-ROW-4: a system message's fields and the blocks of its content.
    fn system_fields(&self) -> Result<(), AcceptError> {
        let fail = |detail: &str| Err(self.refuse(Rule::V4SystemFields, detail));
        let Some(data) = self.data.as_object() else {
            return fail("data must be an object");
        };
        for key in ["turn", "step"] {
            if !data.get(key).is_some_and(is_positive_safe_integer) {
                return fail(&format!("{key} must be a positive safe integer"));
            }
        }
        let Some(message) = data.get("message").and_then(Value::as_object) else {
            return fail("requires an object message");
        };
        if !non_empty_str(message.get("id")) {
            return fail("requires a non-empty message id");
        }
        if message.get("role").and_then(Value::as_str) != Some("system") {
            return fail("requires a system-role message");
        }
        let Some(content) = message.get("content").and_then(Value::as_array) else {
            return fail("requires array content");
        };
        for block in content {
            let Some(tag) = block_type(block).filter(|tag| !tag.is_empty()) else {
                return fail("content blocks require a non-empty type");
            };
            let ok = match tag {
                "text" | "reasoning" => block.get("text").is_some_and(Value::is_string),
                "tool-call" => {
                    non_empty_str(block.get("id"))
                        && non_empty_str(block.get("name"))
                        && block.get("arguments").is_some_and(Value::is_string)
                }
                "image" => block.get("attachment").is_some_and(image_attachment_ok),
                "tool-result" => {
                    return Err(self.refuse(
                        Rule::V4RetiredSyntax,
                        "must not contain a released tool-result wrapper",
                    ))
                }
                _ => true,
            };
            if !ok {
                return fail(&format!("has an invalid {tag} block"));
            }
        }
        Ok(())
    }

    /// N-ROW-5: a tool result is a tool-role message whose `toolCallId` is its source's call.
    fn tool_role(&self) -> Result<(), AcceptError> {
        let fail = |detail: &str| Err(self.refuse(Rule::V4ToolRole, detail));
        let Some(data) = self.data.as_object() else {
            return fail("data must be an object");
        };
        let Some(message) = data.get("message").and_then(Value::as_object) else {
            return fail("requires a tool-role message");
        };
        if message.get("role").and_then(Value::as_str) != Some("tool") {
            return fail("requires a tool-role message");
        }
        if !non_empty_str(message.get("id")) {
            return fail("requires a non-empty message id");
        }
        let source = message.get("source").and_then(Value::as_object);
        let call_id = source
            .filter(|source| source.get("kind").and_then(Value::as_str) == Some("tool"))
            .and_then(|source| source.get("callId"))
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let tool_call_id = message
            .get("toolCallId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        if call_id.is_none() || tool_call_id != call_id {
            return fail("requires toolCallId matching its tool source");
        }
        if !message.get("content").is_some_and(Value::is_array) {
            return fail("requires array content");
        }
        let content = message.get("content").and_then(Value::as_array);
        if content
            .into_iter()
            .flatten()
            .any(|block| block_type(block) == Some("tool-result"))
        {
            return Err(self.refuse(
                Rule::V4RetiredSyntax,
                "must not contain a released tool-result wrapper",
            ));
        }
        let is_error = match message.get("isError") {
            None => false,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return fail("isError must be boolean when present"),
        };
        if data.contains_key("error") && !is_error {
            return fail("carries error metadata for a non-error tool result");
        }
        Ok(())
    }

    /// N-ROW-6: a fork's not-started result (`forked-tool-result-<callId>-<N>`), exact.
    fn fork_result(
        &self,
        surface_append: bool,
        sources: Option<&[u64]>,
    ) -> Result<(), AcceptError> {
        let data = self.data;
        let message = data.get("message");
        let id = message
            .and_then(|message| message.get("id"))
            .and_then(Value::as_str);
        let code = data
            .get("error")
            .and_then(|error| error.get("code"))
            .and_then(Value::as_str);
        let Some(suffix) = id.and_then(|id| id.strip_prefix("forked-tool-result-")) else {
            return Ok(());
        };
        if code != Some("TOOL_NOT_STARTED") {
            return Ok(());
        }
        let fail = || {
            Err(self.refuse(
                Rule::V4ForkResult,
                "is an invalid V4 not-started fork result",
            ))
        };
        let Some(call_id) = message
            .and_then(|message| message.get("source"))
            .and_then(|source| source.get("callId"))
            .and_then(Value::as_str)
        else {
            return fail();
        };
        let Some(n) = suffix
            .strip_prefix(call_id)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(canonical_decimal)
        else {
            return fail();
        };
        let Some(message) = message.and_then(Value::as_object) else {
            return fail();
        };
        let error_name = data
            .get("error")
            .and_then(|error| error.get("name"))
            .and_then(Value::as_str);
        let one_text = message
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|content| {
                content.len() == 1
                    && block_type(&content[0]) == Some("text")
                    && content[0].get("text").is_some_and(Value::is_string)
            });
        let shape_ok = error_name == Some("ToolNotStartedError")
            && message.get("role").and_then(Value::as_str) == Some("tool")
            && message.get("isError") == Some(&Value::Bool(true))
            && message.get("toolCallId").and_then(Value::as_str) == Some(call_id)
            && source_kind(message) == Some("tool")
            && one_text;
        let own = self.seq.get();
        let placement_ok = if surface_append {
            sources.is_none() && n == own
        } else {
            n < own && sources == Some(&[n][..])
        };
        if shape_ok && placement_ok {
            Ok(())
        } else {
            fail()
        }
    }
}

fn source_kind(message: &Map<String, Value>) -> Option<&str> {
    message
        .get("source")
        .and_then(|source| source.get("kind"))
        .and_then(Value::as_str)
}

/// An object source whose `kind` is a non-empty string other than `plugin`.
fn producer_source(message: &Map<String, Value>) -> bool {
    source_kind(message).is_some_and(|kind| !kind.is_empty() && kind != "plugin")
}

fn non_empty_str(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|text| !text.is_empty())
}

/// An image block's attachment as N-ROW-4 reads it.
fn image_attachment_ok(attachment: &Value) -> bool {
    const MEDIA: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];
    let positive = |value: Option<&Value>| value.is_some_and(is_positive_safe_integer);
    let dimensions_ok =
        |value: &Value| positive(value.get("width")) && positive(value.get("height"));
    non_empty_str(attachment.get("attachmentId"))
        && attachment
            .get("mediaType")
            .and_then(Value::as_str)
            .is_some_and(|media| MEDIA.contains(&media))
        && attachment
            .get("bytes")
            .and_then(non_negative_safe_integer)
            .is_some()
        && dimensions_ok(attachment)
        && attachment.get("name").is_none_or(Value::is_string)
        && attachment
            .get("originalDimensions")
            .is_none_or(dimensions_ok)
}

fn is_positive_safe_integer(value: &Value) -> bool {
    non_negative_safe_integer(value).is_some_and(|n| n >= 1)
}
