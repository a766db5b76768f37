//! Rules 12 and the data rules: each event type's payload and message shapes, judged on a
//! parsed tree or a view of the payload text, with the subject upstream's refusal names.

use super::{Context, Path};
use crate::event::EventType;
use crate::generation::Generation;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::view::{Kind, Node};

/// The candidate a data or shape rule is judged on, for messages.
pub(super) struct Who<'e> {
    pub(super) event_type: &'e EventType,
    pub(super) seq: Seq,
    /// The seq as the stored row wrote it (adopt path: the row is not validated yet).
    pub(super) shown_seq: Option<String>,
}

/// How messages name the candidate in data and shape rules (§5.3).
fn subject(context: &Context<'_>, who: &Who<'_>) -> String {
    match context.path {
        Path::Seed | Path::Restore => {
            format!("seed {} at index {}", who.event_type, context.index)
        }
        Path::Adopt => match &who.shown_seq {
            Some(shown) => format!("session event at seq {shown}"),
            None => format!("session event at seq {}", who.seq),
        },
        Path::Append | Path::Fold => {
            format!("session event \"{}\" at seq {}", who.event_type, who.seq)
        }
    }
}

/// The payload rules of one candidate in its generation's order: V2+ run the data rules
/// (§5.3) before the shapes (§4.5); v0 checks the shapes first and refuses the `fallback`
/// reason after them (docs/v0-rules.md, "Path --seed" steps 2–3).
pub(super) fn check_payload<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
    shape_checked: bool,
) -> Result<(), AcceptError> {
    if context.generation.legacy_check_order() {
        if shape_checked {
            check_message_shape(context, who, data)?;
        }
        check_data(context, who, data)
    } else {
        check_data(context, who, data)?;
        if shape_checked {
            check_message_shape(context, who, data)?;
        }
        Ok(())
    }
}

/// How messages of the retired-shape refusals name the candidate (upstream names the
/// position, not the type: `seed event at index 3`, or `session event "T"` on append).
fn legacy_subject(context: &Context<'_>, who: &Who<'_>) -> String {
    match context.path {
        Path::Seed | Path::Restore => format!("seed event at index {}", context.index),
        Path::Append | Path::Fold | Path::Adopt => {
            format!("session event \"{}\"", who.event_type)
        }
    }
}

/// The data rules that depend on the type name only (payload not read).
pub(super) fn check_data_by_name(context: &Context<'_>, who: &Who<'_>) -> Result<(), AcceptError> {
    match who.event_type {
        // The retired legacy shapes are refused by name only when reading v0/v1
        // logs (§0.5, §2.4). In V2+ `request/header-delta` is an ordinary unknown
        // type and `fallback` an invalid reason (§11.3 item 11).
        EventType::Other(name)
            if context.generation <= Generation::V1 && name.as_ref() == "request/header-delta" =>
        {
            Err(AcceptError::new(
                Rule::LegacyHeaderDelta,
                format!(
                    "{} uses unsupported legacy request/header-delta format",
                    legacy_subject(context, who)
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Event-local data rules (session-core §5.3).
pub(super) fn check_data<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let generation = context.generation;
    let fail = |rule: Rule, detail: &str| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    match who.event_type {
        EventType::RequestHeader => {
            if data.kind() != Kind::Object {
                // v0/v1 have no such rule: the shape check already said `lacks provider/model`.
                if !generation.checks_request_header_objects() {
                    return Ok(());
                }
                return fail(Rule::DataNotObject, "data must be an object");
            }
            if generation <= Generation::V1
                && data.get("reason").and_then(Node::text).as_deref() == Some("fallback")
            {
                return Err(AcceptError::new(
                    Rule::LegacyFallbackReason,
                    format!(
                        "{} uses unsupported legacy request/header reason \"fallback\"",
                        legacy_subject(context, who)
                    ),
                ));
            }
            let Some(header) = data.get("header").filter(|h| h.kind() == Kind::Object) else {
                if !generation.checks_request_header_objects() {
                    return Ok(());
                }
                return fail(Rule::HeaderNotObject, "header must be an object");
            };
            if generation >= Generation::V3 {
                // V4 refuses it as retired syntax (N-ROW-3, `accept/v4`).
                if header.get("system").is_some() && !generation.is_v4() {
                    return fail(
                        Rule::HeaderSystemForbidden,
                        "must omit header.system; use system/message",
                    );
                }
                if header.get("tools").is_some_and(Node::is_empty_array) {
                    return fail(Rule::EmptyTools, "must omit empty tools");
                }
                if header
                    .get("adapterDefaults")
                    .is_some_and(Node::is_empty_object)
                {
                    return fail(
                        Rule::EmptyAdapterDefaults,
                        "must omit empty adapterDefaults",
                    );
                }
            }
        }
        // V3's wrapper block carries the error flag; V4's tool-role message does (N-ROW-5).
        EventType::ToolResult if generation == Generation::V3 => {
            if data.kind() != Kind::Object {
                return fail(Rule::DataNotObject, "data must be an object");
            }
            if data.get("error").is_some() {
                let first_block_is_error = data
                    .get("message")
                    .and_then(|message| message.get("content"))
                    .and_then(|content| content.at(0))
                    .and_then(|block| block.get("isError"))
                    .and_then(Node::boolean)
                    == Some(true);
                if !first_block_is_error {
                    return fail(
                        Rule::ToolErrorWithoutIsError,
                        "error requires message content[0].isError === true",
                    );
                }
            }
        }
        _ => return check_data_by_name(context, who),
    }
    Ok(())
}

/// Message-shape checks (session-core §4.5): on seed and restore, and on V3 appends.
pub(super) fn check_message_shape<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let generation = context.generation;
    let fail = |rule: Rule, detail: String| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    let settlement_ok = |data: N| {
        data.get("turn").and_then(Node::seq_number).is_some()
            && data.get("step").and_then(Node::seq_number).is_some()
            && data
                .get("stream")
                .is_some_and(|stream| stream.kind() == Kind::Array)
    };
    let (role, message) = match who.event_type {
        EventType::UserMessage => ("user", Some(data)),
        // V4's system fields are N-ROW-4 (`accept/v4`); its sources are producer-owned.
        EventType::SystemMessage if generation.is_v4() => ("system", data.get("message")),
        EventType::DeveloperMessage if generation.is_v4() => ("developer", data.get("message")),
        EventType::SystemMessage if generation >= Generation::V3 => {
            // Upstream's own payload rules of a system message come first (P4–P10).
            crate::relations::system_payload_rules(data).map_err(|error| AcceptError {
                message: format!("{} {}", subject(context, who), error.message),
                ..error
            })?;
            ("system", data.get("message"))
        }
        EventType::AssistantMessage => ("assistant", data.get("message")),
        EventType::ToolResult if generation.is_v4() => ("tool", data.get("message")),
        EventType::ToolResult => ("user", data.get("message")),
        EventType::AssistantAttempt if generation >= Generation::V2 => {
            if !settlement_ok(data) {
                return fail(
                    Rule::InvalidSettlementFields,
                    "has invalid settlement fields".into(),
                );
            }
            return Ok(());
        }
        EventType::RequestHeader => return check_request_header_shape(context, who, data),
        _ => return Ok(()),
    };
    let Some(message) = message.filter(|message| {
        message.kind() == Kind::Object && message.get("id").is_some_and(Node::is_non_empty_str)
    }) else {
        return fail(Rule::MessageNoId, "lacks an identified message".into());
    };
    if message.get("role").and_then(Node::text).as_deref() != Some(role) {
        return fail(
            Rule::MessageWrongRole,
            format!("message must have role \"{role}\""),
        );
    }
    let source = message.get("source");
    if !source.is_some_and(|source| source.get("kind").is_some_and(Node::is_non_empty_str)) {
        return fail(
            Rule::MessageInvalidSource,
            "message has invalid source".into(),
        );
    }
    let Some(content) = message.get("content").filter(|c| c.kind() == Kind::Array) else {
        return fail(
            Rule::MessageInvalidContent,
            "message has invalid content".into(),
        );
    };
    let source_kind = source
        .and_then(|source| source.get("kind"))
        .and_then(Node::text);
    let source_field = |key: &str| source.and_then(|s| s.get(key));
    match who.event_type {
        EventType::SystemMessage if !generation.is_v4() => {
            let plugin_ok = source_kind.as_deref() == Some("plugin")
                && source_field("plugin").is_some_and(Node::is_non_empty_str);
            if !plugin_ok {
                return fail(
                    Rule::SystemNoPluginSource,
                    "message must have plugin source".into(),
                );
            }
        }
        EventType::AssistantMessage => {
            let model_ok = source_kind.as_deref() == Some("model")
                && source_field("provider").is_some_and(Node::is_non_empty_str)
                && source_field("model").is_some_and(Node::is_non_empty_str);
            if !model_ok {
                return fail(
                    Rule::AssistantNoModelSource,
                    "message must have model source".into(),
                );
            }
            if generation >= Generation::V2 && !settlement_ok(data) {
                return fail(
                    Rule::InvalidSettlementFields,
                    "has invalid settlement fields".into(),
                );
            }
        }
        EventType::ToolResult => {
            let call_id = source_field("callId");
            if source_kind.as_deref() != Some("tool")
                || !call_id.is_some_and(Node::is_non_empty_str)
            {
                return fail(
                    Rule::ToolResultNoToolSource,
                    "message must have tool source".into(),
                );
            }
            if generation.is_v4() {
                // A tool-role message holds the result itself (N-ROW-5, `accept/v4`).
                return Ok(());
            }
            let block = content.at(0);
            let one_block = content.len() == Some(1)
                && block
                    .and_then(|block| block.get("type"))
                    .and_then(Node::text)
                    .as_deref()
                    == Some("tool-result")
                && block
                    .and_then(|block| block.get("content"))
                    .is_some_and(|inner| inner.kind() == Kind::Array);
            if !one_block {
                return fail(
                    Rule::ToolResultNotOneBlock,
                    "message must contain one tool-result block".into(),
                );
            }
            let block_call_id = block.and_then(|block| block.get("toolCallId"));
            let same = match (block_call_id, call_id) {
                (Some(a), Some(b)) => a.kind() == b.kind() && a.text() == b.text(),
                (None, None) => true,
                _ => false,
            };
            if !same {
                return fail(
                    Rule::ToolResultMismatchedCallId,
                    "message has mismatched tool call ids".into(),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_request_header_shape<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let fail = |rule: Rule, detail: &str| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    let header = data.get("header");
    let config = header.and_then(|header| header.get("config"));
    let has = |key: &str| {
        config
            .and_then(|config| config.get(key))
            .is_some_and(Node::is_non_empty_str)
    };
    if !has("provider") || !has("model") {
        return fail(Rule::RequestHeaderNoModel, "lacks provider/model");
    }
    if let Some(effort) = config.and_then(|config| config.get("reasoningEffort")) {
        if !effort.is_non_empty_str() {
            return fail(
                Rule::RequestHeaderBadReasoningEffort,
                "has an invalid reasoningEffort",
            );
        }
    }
    if let Some(defaults) = header.and_then(|header| header.get("adapterDefaults")) {
        let valid = defaults.kind() == Kind::Object
            && defaults.members().into_iter().all(|(key, flag)| {
                matches!(key.as_ref(), "reasoningEffort" | "maxTokens")
                    && flag.boolean() == Some(true)
                    && config.is_some_and(|config| config.get(&key).is_some())
            });
        if !valid {
            return fail(
                Rule::RequestHeaderBadAdapterDefaults,
                "has invalid adapterDefaults",
            );
        }
    }
    // v0/v1 check no reason here (only the retired `fallback`, a data rule).
    if !context.generation.checks_request_reason() {
        return Ok(());
    }
    let reasons: &[&str] = &["initial", "resume", "change", "series"];
    let reason_ok = data
        .get("reason")
        .and_then(Node::text)
        .is_some_and(|reason| reasons.contains(&reason.as_ref()));
    if !reason_ok {
        return fail(Rule::RequestHeaderBadReason, "has an invalid reason");
    }
    if let Some(marker) = data.get("startsSeries") {
        if marker.boolean() != Some(true) {
            return fail(
                Rule::RequestHeaderBadStartsSeries,
                "has an invalid startsSeries marker",
            );
        }
    }
    Ok(())
}
