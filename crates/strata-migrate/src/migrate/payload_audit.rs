//! The payload audit of upstream's v0→v1 edge (docs/migration.md, "v0 → v1", step 10), with
//! its texts: every event but `assistant/chunk` must be of the frozen v0 inventory, carry a
//! `data` object with exactly its type's members, and meet its type's value rules.
//!
//! What is reproduced: the whole inventory with every type's exact members; the value rules of
//! the message slots (message, content blocks, sources of every kind upstream names), stream
//! chunks, request headers, turn-end reasons, failures, usage, tool calls and results,
//! retries, compaction brackets and prunes, titles, approvals, hooks, commands, settings and
//! workflow events. What is not: the nested shapes of `goal/change`, `schedule/change`,
//! `team/*`, `web/deepseek-search-llm-request` and session-reference sources beyond their
//! members (docs/migration.md lists them as work left).
//!
//! Texts: the label is `<type> <seq>` plus a path; exact-member checks name an unexpected
//! member first, then a missing one. Numbers are doubles as `JSON.parse` reads them.

use serde_json::{Map, Value};

use crate::legacy::js::number;
use crate::legacy::released_rows::{count, exact_keys, safe_integer};

/// Why the audit refused.
#[derive(Debug, PartialEq, Eq)]
pub enum AuditError {
    /// A type outside the frozen v0 inventory.
    UnknownType,
    /// A `subagent/descriptor` of another version than 3 (`n`).
    DescriptorVersion(u64),
    /// A broken member rule, with upstream's text.
    Rule(String),
}

type Check<T = ()> = Result<T, String>;

/// The members of each v0 type: required, then optional.
fn members(tag: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    Some(match tag {
        "agent-preset/selected" => (&["agentPreset"], &[]),
        "agent/inbox/spliced" => (
            &["target", "start", "inserted"],
            &["removedCount", "outcome"],
        ),
        "approval/asked" => (&["id", "toolName"], &["callId", "reason"]),
        "approval/decided" => (&["id", "outcome"], &[]),
        "approval/policy" => (&["policy"], &["source"]),
        "assistant/chunk" => (&["turn", "step", "chunk"], &[]),
        "assistant/message" => (&["turn", "step", "message"], &["usage", "interrupted"]),
        "command/done" => (&["commandId", "kind"], &["text", "sourceEventSeq"]),
        "command/run" => (&["commandId", "name", "source"], &["args"]),
        "compaction/end" => (&["compactionId", "turn"], &["sourceCommandId", "error"]),
        "compaction/prune" => (
            &["shadowedRange", "shadowedSeqs", "shadowedTokenCount"],
            &[],
        ),
        "compaction/start" => (&["compactionId", "turn"], &["sourceCommandId"]),
        "compaction/summary" => (
            &[
                "compactionId",
                "summary",
                "shadowedRange",
                "shadowedSeqs",
                "shadowedTokenCount",
                "provider",
                "model",
            ],
            &[
                "sourceCommandId",
                "maxTokens",
                "usage",
                "rawOutput",
                "llmStreamCall",
            ],
        ),
        "feedback/record" => (&["text"], &[]),
        "goal/change" => (
            &["kind", "version", "operation"],
            &[
                "goal",
                "roundsStarted",
                "createdAt",
                "updatedAt",
                "cleared",
                "clearedAt",
            ],
        ),
        "hook/invoked" => (&["turn", "point", "dialect", "handlerId"], &["matcher"]),
        "hook/result" => (
            &["turn", "point", "handlerId", "decision", "durationMs"],
            &["exitCode", "stderrSummary"],
        ),
        "llm/retry" => (
            &[
                "retryId",
                "turn",
                "step",
                "provider",
                "mode",
                "policyKey",
                "retry",
                "delayMs",
                "failure",
            ],
            &["maxRetries"],
        ),
        "llm/retry-started" => (&["retryId", "turn", "step", "retry"], &[]),
        "model/selection" => (&["provider", "model"], &["reasoningEffort"]),
        "permission/preset" => (&["preset"], &[]),
        "plan/mode" => (&["active"], &[]),
        "request/context" => (&["provider", "model"], &["contextWindow"]),
        "request/header" => (&["header", "reason"], &["startsSeries"]),
        "sandbox/mode" => (&["mode"], &["source"]),
        "schedule/change" => (&["version", "operation"], &["schedule", "id", "acceptedAt"]),
        "session-log-deepseek/delivery-accepted" => (&["sessionId", "throughSeq"], &[]),
        "session/end-seed" => (&[], &[]),
        "session/title" => (&["title", "messageSeqs", "source"], &[]),
        "session/title-llm-request" => (
            &[
                "titleProvider",
                "messageSeqs",
                "route",
                "system",
                "messages",
                "maxTokens",
            ],
            &[],
        ),
        "step/end" | "step/start" => (&["turn", "step"], &[]),
        "subagent/descriptor" => (
            &["mode", "version", "provider"],
            &[
                "label",
                "agentProvider",
                "agentModel",
                "agentReasoningEffort",
                "persona",
                "toolFilter",
            ],
        ),
        "subagent/model-selection-policy" => (&["allowedModels"], &[]),
        "team/member" => (&["version", "teamId", "member"], &[]),
        "team/message/delivered" => (&["version", "teamId", "messageId", "targetId"], &[]),
        "team/message/queued" => (&["version", "teamId", "message"], &[]),
        "team/task" => (&["version", "teamId", "task"], &[]),
        "todo/write" => (&["todos"], &[]),
        "tool-workflow/agent-end" => (&["runId", "seq", "outcome"], &[]),
        "tool-workflow/agent-start" => (&["runId", "seq", "label", "childId"], &["phase"]),
        "tool-workflow/run-end" => (&["runId", "stopReason"], &[]),
        "tool-workflow/run-start" => (&["runId", "name"], &[]),
        "tool/call" => (&["turn", "step", "callId", "name", "arguments"], &[]),
        "tool/code-dispatch" => (
            &[
                "rootCallId",
                "parentCallId",
                "subCallId",
                "name",
                "arguments",
                "isError",
                "content",
            ],
            &[],
        ),
        "tool/code-dispatch-start" => (
            &[
                "rootCallId",
                "parentCallId",
                "subCallId",
                "name",
                "arguments",
            ],
            &[],
        ),
        "tool/result" => (&["turn", "step", "message"], &["error", "meta"]),
        "turn/end" => (&["turn", "reason"], &[]),
        "turn/start" => (&["turn"], &[]),
        "user/message" => (&["role", "id", "content", "source"], &[]),
        "web/deepseek-search-llm-request" => (&["endpoint", "apiVersion", "body"], &[]),
        _ => return None,
    })
}

/// An event's `type` as upstream's refusals print it (`JSON.stringify`, `undefined` when absent).
pub fn shown_type(tag: Option<&Value>) -> String {
    tag.map_or_else(|| "undefined".to_owned(), strata_core::json::to_js_string)
}

/// Whether `tag` is of the frozen v0 (and v1) inventory.
pub fn is_known(tag: &str) -> bool {
    members(tag).is_some()
}

/// Audits one event of type `tag` at `seq` of payload generation `version` (0: a v0 event the
/// v0→v1 edge normalized; 1: an event read from a v1 file, audited by the v1→v2 edge).
pub fn audit(tag: &str, seq: u64, data: Option<&Value>, version: u8) -> Result<(), AuditError> {
    let Some((required, optional)) = members(tag) else {
        return Err(AuditError::UnknownType);
    };
    let label = format!("{tag} {seq}");
    let data = record(data, &format!("{label} data")).map_err(AuditError::Rule)?;
    if tag == "subagent/descriptor" && data.get("version").and_then(number) != Some(3.0) {
        let descriptor =
            count_of(data.get("version"), &format!("{label} version")).map_err(AuditError::Rule)?;
        // A v1 file's other descriptor versions are opaque to the audit (v2→v3 refuses them).
        return match version {
            0 => Err(AuditError::DescriptorVersion(descriptor)),
            _ => Ok(()),
        };
    }
    // From v1 on, a delivery marker may name the generation it was accepted in.
    let versioned: Vec<&str>;
    let optional = if version >= 1 && tag == "session-log-deepseek/delivery-accepted" {
        versioned = optional
            .iter()
            .copied()
            .chain(["sessionFormatVersion"])
            .collect();
        &versioned[..]
    } else {
        optional
    };
    exact_keys(data, required, optional, &format!("{label} data")).map_err(AuditError::Rule)?;
    semantics(tag, seq, data, &label, version).map_err(AuditError::Rule)
}

fn semantics(tag: &str, seq: u64, data: &Map<String, Value>, label: &str, version: u8) -> Check {
    let at = |key: &str| format!("{label} {key}");
    let get = |key: &str| data.get(key);
    let optional = |key: &str, check: &dyn Fn(&Value, &str) -> Check| match get(key) {
        Some(value) => check(value, &at(key)),
        None => Ok(()),
    };
    match tag {
        "agent-preset/selected" => string(get("agentPreset"), &at("agentPreset")),
        "agent/inbox/spliced" => {
            one_of(get("target"), &["next-turn", "next-step"], &at("target"))?;
            count_of(get("start"), &at("start"))?;
            optional("removedCount", &|value, l| {
                count_of(Some(value), l).map(drop)
            })?;
            array(get("inserted"), &at("inserted"), |value, _| {
                message(
                    Some(value),
                    &format!("{label} inserted message"),
                    Slot::User,
                )
            })?;
            optional("outcome", &|value, l| one_of(Some(value), &["canceled"], l))
        }
        "approval/asked" => {
            non_empty(get("id"), &at("id"))?;
            non_empty(get("toolName"), &at("toolName"))?;
            optional("callId", &|value, l| non_empty(Some(value), l))?;
            optional("reason", &|value, l| string(Some(value), l))
        }
        "approval/decided" => {
            non_empty(get("id"), &at("id"))?;
            one_of(
                get("outcome"),
                &["allowed-once", "rejected", "cancelled", "unavailable"],
                &at("outcome"),
            )
        }
        "approval/policy" => {
            one_of(get("policy"), &["ask", "never"], &at("policy"))?;
            optional("source", &|value, l| {
                one_of(Some(value), &["delegation"], l)
            })
        }
        "assistant/message" => {
            coordinates(data, label)?;
            message(get("message"), &at("message"), Slot::Assistant)?;
            optional("usage", &|value, l| usage(Some(value), l))?;
            optional("interrupted", &|value, l| literal_true(value, l))
        }
        "command/done" => {
            non_empty(get("commandId"), &at("commandId"))?;
            one_of(get("kind"), &["success", "error"], &at("kind"))?;
            optional("text", &|value, l| string(Some(value), l))?;
            optional("sourceEventSeq", &|value, l| {
                earlier(Some(value), seq, l).map(drop)
            })
        }
        "command/run" => {
            non_empty(get("commandId"), &at("commandId"))?;
            non_empty(get("name"), &at("name"))?;
            optional("args", &|value, l| string(Some(value), l))?;
            let source = exact(get("source"), &at("source"), &["kind"], &[])?;
            one_of(source.get("kind"), &["user"], &at("source kind"))
        }
        "compaction/start" | "compaction/end" => {
            non_empty(get("compactionId"), &at("compactionId"))?;
            optional("sourceCommandId", &|value, l| non_empty(Some(value), l))?;
            if get("turn") != Some(&Value::Null) {
                count_of(get("turn"), &at("turn"))?;
            }
            optional("error", &|value, l| string(Some(value), l))
        }
        "compaction/prune" => shadowed(data, seq, label),
        "compaction/summary" => {
            if get("llmStreamCall") == Some(&Value::Bool(true)) && get("rawOutput").is_none() {
                return Err(format!("{label} llmStreamCall requires rawOutput"));
            }
            non_empty(get("compactionId"), &at("compactionId"))?;
            optional("sourceCommandId", &|value, l| non_empty(Some(value), l))?;
            blocks(get("summary"), &at("summary"))?;
            shadowed(data, seq, label)?;
            non_empty(get("provider"), &at("provider"))?;
            non_empty(get("model"), &at("model"))?;
            optional("maxTokens", &|value, l| count_of(Some(value), l).map(drop))?;
            optional("usage", &|value, l| usage(Some(value), l))?;
            optional("rawOutput", &|value, l| blocks(Some(value), l))?;
            optional("llmStreamCall", &|value, l| literal_true(value, l))
        }
        "feedback/record" => non_empty(get("text"), &at("text")),
        "hook/invoked" => {
            count_of(get("turn"), &at("turn"))?;
            non_empty(get("point"), &at("point"))?;
            one_of(get("dialect"), &["claude-code", "codex"], &at("dialect"))?;
            optional("matcher", &|value, l| string(Some(value), l))?;
            non_empty(get("handlerId"), &at("handlerId"))
        }
        "hook/result" => {
            count_of(get("turn"), &at("turn"))?;
            non_empty(get("point"), &at("point"))?;
            non_empty(get("handlerId"), &at("handlerId"))?;
            non_empty(get("decision"), &at("decision"))?;
            optional("exitCode", &|value, l| safe(Some(value), l).map(drop))?;
            optional("stderrSummary", &|value, l| string(Some(value), l))?;
            if finite(get("durationMs"), &at("durationMs"))? < 0.0 {
                return Err(format!("{label} durationMs must be non-negative"));
            }
            Ok(())
        }
        "llm/retry" => {
            non_empty(get("retryId"), &at("retryId"))?;
            coordinates(data, label)?;
            non_empty(get("provider"), &at("provider"))?;
            one_of(get("mode"), &["normal", "always"], &at("mode"))?;
            non_empty(get("policyKey"), &at("policyKey"))?;
            let retry = positive(get("retry"), &at("retry"))?;
            if get("mode") == Some(&Value::from("normal")) {
                let max = positive(get("maxRetries"), &at("maxRetries"))?;
                if retry > max {
                    return Err(format!("{label} retry exceeds maxRetries"));
                }
            } else if get("maxRetries").is_some() {
                return Err(format!("{label} always mode must omit maxRetries"));
            }
            let delay = finite(get("delayMs"), &at("delayMs"))?;
            if delay < 0.0 {
                return Err(format!("{label} delayMs must be non-negative"));
            }
            if delay > 2_147_483_647.0 {
                return Err(format!("{label} delayMs exceeds the timer range"));
            }
            failure(get("failure"), &at("failure"))
        }
        "llm/retry-started" => {
            non_empty(get("retryId"), &at("retryId"))?;
            coordinates(data, label)?;
            positive(get("retry"), &at("retry")).map(drop)
        }
        "model/selection" => {
            non_empty(get("provider"), &at("provider"))?;
            non_empty(get("model"), &at("model"))?;
            optional("reasoningEffort", &|value, l| non_empty(Some(value), l))
        }
        "permission/preset" => non_empty(get("preset"), &at("preset")),
        "plan/mode" => boolean(get("active"), &at("active")),
        "request/context" => {
            non_empty(get("provider"), &at("provider"))?;
            non_empty(get("model"), &at("model"))?;
            optional("contextWindow", &|value, l| {
                positive(Some(value), l).map(drop)
            })
        }
        "request/header" => {
            request_header(get("header"), &at("header"))?;
            one_of(
                get("reason"),
                &["initial", "resume", "change", "series"],
                &at("reason"),
            )?;
            optional("startsSeries", &|value, l| literal_true(value, l))
        }
        "sandbox/mode" => {
            one_of(
                get("mode"),
                &["read-only", "workspace-write", "danger-full-access"],
                &at("mode"),
            )?;
            optional("source", &|value, l| {
                one_of(Some(value), &["delegation"], l)
            })
        }
        "session-log-deepseek/delivery-accepted" => {
            // Only a marker of this payload generation is judged.
            let accepted = match get("sessionFormatVersion") {
                Some(value) => count_of(Some(value), &at("sessionFormatVersion"))?,
                None => 0,
            };
            if accepted != u64::from(version) {
                return Ok(());
            }
            non_empty(get("sessionId"), &at("sessionId"))?;
            earlier(get("throughSeq"), seq, &at("throughSeq")).map(drop)
        }
        "session/title" => {
            non_empty(get("title"), &at("title"))?;
            seq_list(get("messageSeqs"), seq, &at("messageSeqs"), false)?;
            title_source(get("source"), &at("source"))
        }
        "session/title-llm-request" => {
            non_empty(get("titleProvider"), &at("titleProvider"))?;
            seq_list(get("messageSeqs"), seq, &at("messageSeqs"), true)?;
            route(get("route"), &at("route"))?;
            string(get("system"), &at("system"))?;
            array(get("messages"), &at("messages"), |value, _| {
                message(Some(value), &format!("{label} message"), Slot::Any)
            })?;
            positive(get("maxTokens"), &at("maxTokens")).map(drop)
        }
        "step/end" | "step/start" => coordinates(data, label),
        "subagent/descriptor" => descriptor(data, label),
        "todo/write" => array(get("todos"), &at("todos"), |value, item| {
            let todo = exact(Some(value), item, &["content", "status"], &[])?;
            string(todo.get("content"), &format!("{item} content"))?;
            one_of(
                todo.get("status"),
                &["pending", "in_progress", "completed"],
                &format!("{item} status"),
            )
        })
        .map(drop),
        "tool-workflow/agent-end" => {
            workflow(data, label)?;
            one_of(
                get("outcome"),
                &["completed", "failed", "cancelled"],
                &at("outcome"),
            )
        }
        "tool-workflow/agent-start" => {
            workflow(data, label)?;
            string(get("label"), &at("label"))?;
            optional("phase", &|value, l| string(Some(value), l))?;
            non_empty(get("childId"), &at("childId"))
        }
        "tool-workflow/run-end" => {
            non_empty(get("runId"), &at("runId"))?;
            one_of(
                get("stopReason"),
                &["completed", "cancelled", "error"],
                &at("stopReason"),
            )
        }
        "tool-workflow/run-start" => {
            non_empty(get("runId"), &at("runId"))?;
            non_empty(get("name"), &at("name"))
        }
        "tool/call" => {
            coordinates(data, label)?;
            non_empty(get("callId"), &at("callId"))?;
            non_empty(get("name"), &at("name"))?;
            string(get("arguments"), &at("arguments"))
        }
        "tool/code-dispatch" | "tool/code-dispatch-start" => {
            for key in ["rootCallId", "parentCallId", "subCallId", "name"] {
                non_empty(get(key), &at(key))?;
            }
            if tag == "tool/code-dispatch" {
                boolean(get("isError"), &at("isError"))?;
                blocks(get("content"), &at("content"))?;
            }
            Ok(())
        }
        "tool/result" => {
            coordinates(data, label)?;
            message(get("message"), &at("message"), Slot::Tool)?;
            if let Some(error) = get("error") {
                let error = exact(Some(error), &at("error"), &["name", "code"], &[])?;
                non_empty(error.get("name"), &at("error name"))?;
                non_empty(error.get("code"), &at("error code"))?;
            }
            Ok(())
        }
        "turn/end" => {
            count_of(get("turn"), &at("turn"))?;
            turn_end_reason(get("reason"), &at("reason"))
        }
        "turn/start" => count_of(get("turn"), &at("turn")).map(drop),
        "user/message" => message_record(data, label, Slot::User),
        "subagent/model-selection-policy" => {
            let models = array(get("allowedModels"), &at("allowedModels"), |value, item| {
                route(Some(value), item)
            })?;
            if models == 0 {
                return Err(format!("{label} allowedModels must be non-empty"));
            }
            Ok(())
        }
        "team/member" | "team/message/delivered" | "team/message/queued" | "team/task" => {
            one_of_value(get("version"), &[Value::from(1)], "1", &at("version"))?;
            non_empty(get("teamId"), &at("teamId"))?;
            if tag == "team/message/delivered" {
                non_empty(get("messageId"), &at("messageId"))?;
                non_empty(get("targetId"), &at("targetId"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

// --- value rules -------------------------------------------------------------------------

fn record<'v>(value: Option<&'v Value>, label: &str) -> Check<&'v Map<String, Value>> {
    match value {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(format!("{label} must be a JSON object")),
    }
}

fn exact<'v>(
    value: Option<&'v Value>,
    label: &str,
    required: &[&str],
    optional: &[&str],
) -> Check<&'v Map<String, Value>> {
    let map = record(value, label)?;
    exact_keys(map, required, optional, label)?;
    Ok(map)
}

fn string(value: Option<&Value>, label: &str) -> Check {
    match value {
        Some(Value::String(_)) => Ok(()),
        _ => Err(format!("{label} must be a string")),
    }
}

fn non_empty(value: Option<&Value>, label: &str) -> Check {
    match value {
        Some(Value::String(text)) if !text.is_empty() => Ok(()),
        _ => Err(format!("{label} must be a non-empty string")),
    }
}

fn boolean(value: Option<&Value>, label: &str) -> Check {
    match value {
        Some(Value::Bool(_)) => Ok(()),
        _ => Err(format!("{label} must be a boolean")),
    }
}

fn count_of(value: Option<&Value>, label: &str) -> Check<u64> {
    count(value).ok_or_else(|| format!("{label} must be a non-negative safe integer"))
}

fn safe(value: Option<&Value>, label: &str) -> Check<f64> {
    safe_integer(value).ok_or_else(|| format!("{label} must be a safe integer"))
}

fn positive(value: Option<&Value>, label: &str) -> Check<u64> {
    match count_of(value, label)? {
        0 => Err(format!("{label} must be positive")),
        n => Ok(n),
    }
}

fn finite(value: Option<&Value>, label: &str) -> Check<f64> {
    value
        .and_then(number)
        .filter(|x| x.is_finite() && !(*x == 0.0 && x.is_sign_negative()))
        .ok_or_else(|| format!("{label} must be a finite number"))
}

fn one_of(value: Option<&Value>, allowed: &[&str], label: &str) -> Check {
    match value {
        Some(Value::String(text)) if allowed.contains(&text.as_str()) => Ok(()),
        _ => Err(format!("{label} must be one of {}", allowed.join(", "))),
    }
}

fn one_of_value(value: Option<&Value>, allowed: &[Value], shown: &str, label: &str) -> Check {
    let found = value.is_some_and(|value| {
        allowed
            .iter()
            .any(|candidate| match (number(candidate), number(value)) {
                (Some(a), Some(b)) => a == b,
                _ => candidate == value,
            })
    });
    if found {
        Ok(())
    } else {
        Err(format!("{label} must be one of {shown}"))
    }
}

fn literal_true(value: &Value, label: &str) -> Check {
    one_of_value(Some(value), &[Value::Bool(true)], "true", label)
}

/// An array whose members pass `check` (labelled `label[i]`); its length.
fn array(
    value: Option<&Value>,
    label: &str,
    mut check: impl FnMut(&Value, &str) -> Check,
) -> Check<usize> {
    let Some(Value::Array(items)) = value else {
        return Err(format!("{label} must be an array"));
    };
    for (index, item) in items.iter().enumerate() {
        check(item, &format!("{label}[{index}]"))?;
    }
    Ok(items.len())
}

fn coordinates(data: &Map<String, Value>, label: &str) -> Check {
    count_of(data.get("turn"), &format!("{label} turn"))?;
    count_of(data.get("step"), &format!("{label} step")).map(drop)
}

fn earlier(value: Option<&Value>, seq: u64, label: &str) -> Check<u64> {
    let target = count_of(value, label)?;
    if target >= seq {
        return Err(format!("{label} must identify an earlier event"));
    }
    Ok(target)
}

fn seq_list(value: Option<&Value>, seq: u64, label: &str, non_empty: bool) -> Check<Vec<u64>> {
    let mut seen = Vec::new();
    array(value, label, |member, item| {
        let target = earlier(Some(member), seq, item)?;
        if seen.contains(&target) {
            return Err(format!("{label} repeats seq {target}"));
        }
        seen.push(target);
        Ok(())
    })?;
    if non_empty && seen.is_empty() {
        return Err(format!("{label} must be non-empty"));
    }
    Ok(seen)
}

fn failure(value: Option<&Value>, label: &str) -> Check {
    let failure = exact(
        value,
        label,
        &["message", "code"],
        &["status", "providerRetryAfterMs", "requestId"],
    )?;
    non_empty(failure.get("message"), &format!("{label} message"))?;
    non_empty(failure.get("code"), &format!("{label} code"))?;
    if let Some(status) = failure.get("status") {
        let status = safe(Some(status), &format!("{label} status"))?;
        if !(100.0..=599.0).contains(&status) {
            return Err(format!("{label} status must be 100 through 599"));
        }
    }
    if let Some(after) = failure.get("providerRetryAfterMs") {
        if finite(Some(after), &format!("{label} providerRetryAfterMs"))? <= 0.0 {
            return Err(format!("{label} providerRetryAfterMs must be positive"));
        }
    }
    if let Some(id) = failure.get("requestId") {
        non_empty(Some(id), &format!("{label} requestId"))?;
    }
    Ok(())
}

fn usage(value: Option<&Value>, label: &str) -> Check {
    let usage = exact(
        value,
        label,
        &["inputTokens", "outputTokens"],
        &[
            "totalTokens",
            "cacheReadTokens",
            "cacheWriteTokens",
            "reasoningTokens",
        ],
    )?;
    for (key, value) in usage {
        count_of(Some(value), &format!("{label} {key}"))?;
    }
    Ok(())
}

fn shadowed(data: &Map<String, Value>, seq: u64, label: &str) -> Check {
    let range = exact(
        data.get("shadowedRange"),
        &format!("{label} shadowedRange"),
        &["start", "end"],
        &[],
    )?;
    let start = earlier(
        range.get("start"),
        seq,
        &format!("{label} shadowedRange start"),
    )?;
    let end = earlier(range.get("end"), seq, &format!("{label} shadowedRange end"))?;
    let seqs = seq_list(
        data.get("shadowedSeqs"),
        seq,
        &format!("{label} shadowedSeqs"),
        true,
    )?;
    if seqs.first() != Some(&start) || seqs.last() != Some(&end) {
        return Err(format!(
            "{label} shadowedRange must match shadowedSeqs endpoints"
        ));
    }
    count_of(
        data.get("shadowedTokenCount"),
        &format!("{label} shadowedTokenCount"),
    )
    .map(drop)
}

fn route(value: Option<&Value>, label: &str) -> Check {
    let route = exact(value, label, &["provider", "model"], &[])?;
    non_empty(route.get("provider"), &format!("{label} provider"))?;
    non_empty(route.get("model"), &format!("{label} model"))
}

fn title_source(value: Option<&Value>, label: &str) -> Check {
    let source = record(value, label)?;
    if source.get("kind") == Some(&Value::from("provider")) {
        exact_keys(source, &["kind", "provider"], &["model"], label)?;
        non_empty(source.get("provider"), &format!("{label} provider"))?;
        if let Some(model) = source.get("model") {
            route(Some(model), &format!("{label} model"))?;
        }
        return Ok(());
    }
    exact_keys(source, &["kind"], &[], label)?;
    one_of(
        source.get("kind"),
        &["fallback", "user"],
        &format!("{label} kind"),
    )
}

fn workflow(data: &Map<String, Value>, label: &str) -> Check {
    non_empty(data.get("runId"), &format!("{label} runId"))?;
    positive(data.get("seq"), &format!("{label} seq")).map(drop)
}

fn descriptor(data: &Map<String, Value>, label: &str) -> Check {
    non_empty(data.get("provider"), &format!("{label} provider"))?;
    if data.get("mode") == Some(&Value::from("one-shot")) {
        exact_keys(
            data,
            &["mode", "version", "provider"],
            &["label"],
            &format!("{label} data"),
        )?;
        if let Some(name) = data.get("label") {
            string(Some(name), &format!("{label} label"))?;
        }
        return Ok(());
    }
    one_of(data.get("mode"), &["continuable"], &format!("{label} mode"))?;
    non_empty(data.get("label"), &format!("{label} label"))?;
    for key in [
        "agentProvider",
        "agentModel",
        "agentReasoningEffort",
        "persona",
    ] {
        if let Some(value) = data.get(key) {
            non_empty(Some(value), &format!("{label} {key}"))?;
        }
    }
    if data.contains_key("agentProvider") != data.contains_key("agentModel") {
        return Err(format!(
            "{label} agentProvider and agentModel must be paired"
        ));
    }
    if let Some(filter) = data.get("toolFilter") {
        let filter = exact(
            Some(filter),
            &format!("{label} toolFilter"),
            &[],
            &["allow", "deny"],
        )?;
        if filter.is_empty() {
            return Err(format!("{label} toolFilter requires allow or deny"));
        }
        for key in ["allow", "deny"] {
            if let Some(list) = filter.get(key) {
                array(Some(list), &format!("{label} {key}"), |item, l| {
                    non_empty(Some(item), l)
                })?;
            }
        }
    }
    Ok(())
}

fn request_header(value: Option<&Value>, label: &str) -> Check {
    let header = exact(
        value,
        label,
        &["config"],
        &["adapterDefaults", "system", "tools"],
    )?;
    let config = exact(
        header.get("config"),
        &format!("{label} config"),
        &["provider", "model"],
        &["reasoningEffort", "temperature", "maxTokens", "stop"],
    )?;
    non_empty(config.get("provider"), &format!("{label} provider"))?;
    non_empty(config.get("model"), &format!("{label} model"))?;
    if let Some(effort) = config.get("reasoningEffort") {
        non_empty(Some(effort), &format!("{label} reasoningEffort"))?;
    }
    if let Some(temperature) = config.get("temperature") {
        finite(Some(temperature), &format!("{label} temperature"))?;
    }
    if let Some(max) = config.get("maxTokens") {
        positive(Some(max), &format!("{label} maxTokens"))?;
    }
    if let Some(stop) = config.get("stop") {
        array(Some(stop), &format!("{label} stop"), |item, l| {
            string(Some(item), l)
        })?;
    }
    if let Some(defaults) = header.get("adapterDefaults") {
        let defaults = exact(
            Some(defaults),
            &format!("{label} adapterDefaults"),
            &[],
            &["reasoningEffort", "maxTokens"],
        )?;
        for (key, marker) in defaults {
            literal_true(marker, &format!("{label} adapterDefaults {key}"))?;
            if !config.contains_key(key) {
                return Err(format!("{label} adapter default {key} lacks config value"));
            }
        }
    }
    if let Some(system) = header.get("system") {
        string(Some(system), &format!("{label} system"))?;
    }
    if let Some(tools) = header.get("tools") {
        array(Some(tools), &format!("{label} tools"), |tool, l| {
            let schema = exact(Some(tool), l, &["name", "description", "parameters"], &[])?;
            non_empty(schema.get("name"), &format!("{l} name"))?;
            string(schema.get("description"), &format!("{l} description"))?;
            record(schema.get("parameters"), &format!("{l} parameters")).map(drop)
        })?;
    }
    Ok(())
}

fn turn_end_reason(value: Option<&Value>, label: &str) -> Check {
    let reason = record(value, label)?;
    match reason.get("kind").and_then(Value::as_str) {
        Some("completed" | "blocked" | "max-tokens" | "interrupted") => {
            exact_keys(reason, &["kind"], &[], label)
        }
        Some("aborted") => {
            exact_keys(reason, &["kind", "reason"], &[], label)?;
            let cause_label = format!("{label} abort cause");
            let cause = record(reason.get("reason"), &cause_label)?;
            if cause.get("kind") == Some(&Value::from("hook")) {
                exact_keys(cause, &["kind", "reason"], &[], &cause_label)?;
                string(cause.get("reason"), &format!("{label} abort reason"))
            } else {
                exact_keys(cause, &["kind"], &[], &cause_label)?;
                one_of(
                    cause.get("kind"),
                    &["user", "parent", "disposed", "legacy"],
                    &format!("{label} abort kind"),
                )
            }
        }
        Some("error") => {
            exact_keys(reason, &["kind", "error"], &[], label)?;
            failure(reason.get("error"), &format!("{label} error"))
        }
        _ => non_empty(reason.get("kind"), &format!("{label} kind")),
    }
}

// --- messages ----------------------------------------------------------------------------

/// Which message slot a message fills: its role and source rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    User,
    Assistant,
    Tool,
    Any,
}

fn message(value: Option<&Value>, label: &str, slot: Slot) -> Check {
    let map = record(value, label)?;
    message_record(map, label, slot)
}

fn message_record(message: &Map<String, Value>, label: &str, slot: Slot) -> Check {
    exact_keys(message, &["id", "role", "content", "source"], &[], label)?;
    non_empty(message.get("id"), &format!("{label} id"))?;
    let role_label = format!("{label} role");
    match slot {
        Slot::Assistant => one_of(message.get("role"), &["assistant"], &role_label)?,
        Slot::User | Slot::Tool => one_of(message.get("role"), &["user"], &role_label)?,
        Slot::Any => one_of(
            message.get("role"),
            &["system", "user", "assistant"],
            &role_label,
        )?,
    }
    blocks(message.get("content"), &format!("{label} content"))?;
    let source_label = format!("{label} source");
    let source = record(message.get("source"), &source_label)?;
    let legacy_goal = slot == Slot::User
        && source.get("kind") == Some(&Value::from("goal"))
        && source.contains_key("change");
    if !legacy_goal {
        message_source(source, &source_label, slot)?;
    }
    if slot == Slot::Tool {
        let block = match message.get("content") {
            Some(Value::Array(items)) if items.len() == 1 => {
                Some(record(items.first(), &format!("{label} tool result"))?)
            }
            _ => None,
        };
        let matches = block.is_some_and(|block| {
            block.get("type") == Some(&Value::from("tool-result"))
                && block.get("toolCallId") == source.get("callId")
        });
        if !matches {
            return Err(format!(
                "{label} must contain exactly one tool-result block"
            ));
        }
    }
    Ok(())
}

fn blocks(value: Option<&Value>, label: &str) -> Check {
    array(value, label, |block, item| content_block(Some(block), item)).map(drop)
}

fn content_block(value: Option<&Value>, label: &str) -> Check {
    let block = record(value, label)?;
    let field = |key: &str| format!("{label} {key}");
    match block.get("type").and_then(Value::as_str) {
        Some("text" | "reasoning") => {
            exact_keys(block, &["type", "text"], &[], label)?;
            string(block.get("text"), &field("text"))
        }
        Some("image") => {
            exact_keys(block, &["type", "attachment"], &[], label)?;
            image(block.get("attachment"), &field("attachment"))
        }
        Some("tool-call") => {
            exact_keys(block, &["type", "id", "name", "arguments"], &[], label)?;
            non_empty(block.get("id"), &field("id"))?;
            non_empty(block.get("name"), &field("name"))?;
            string(block.get("arguments"), &field("arguments"))
        }
        Some("tool-result") => {
            exact_keys(
                block,
                &["type", "toolCallId", "content"],
                &["isError"],
                label,
            )?;
            non_empty(block.get("toolCallId"), &field("toolCallId"))?;
            blocks(block.get("content"), &field("content"))?;
            match block.get("isError") {
                Some(flag) => boolean(Some(flag), &field("isError")),
                None => Ok(()),
            }
        }
        _ => non_empty(block.get("type"), &field("type")),
    }
}

fn image(value: Option<&Value>, label: &str) -> Check {
    let attachment = exact(
        value,
        label,
        &["attachmentId", "mediaType", "bytes", "width", "height"],
        &["name", "originalDimensions"],
    )?;
    let field = |key: &str| format!("{label} {key}");
    non_empty(attachment.get("attachmentId"), &field("attachmentId"))?;
    one_of(
        attachment.get("mediaType"),
        &["image/png", "image/jpeg", "image/webp", "image/gif"],
        &field("mediaType"),
    )?;
    count_of(attachment.get("bytes"), &field("bytes"))?;
    positive(attachment.get("width"), &field("width"))?;
    positive(attachment.get("height"), &field("height"))?;
    if let Some(name) = attachment.get("name") {
        string(Some(name), &field("name"))?;
    }
    if let Some(dimensions) = attachment.get("originalDimensions") {
        let dimensions = exact(
            Some(dimensions),
            &field("originalDimensions"),
            &["width", "height"],
            &[],
        )?;
        positive(dimensions.get("width"), &field("original width"))?;
        positive(dimensions.get("height"), &field("original height"))?;
    }
    Ok(())
}

fn message_source(source: &Map<String, Value>, label: &str, slot: Slot) -> Check {
    let kind = source.get("kind").and_then(Value::as_str);
    if slot == Slot::Assistant && kind != Some("model") {
        return Err(format!("{label} must be model source"));
    }
    if slot == Slot::Tool && kind != Some("tool") {
        return Err(format!("{label} must be tool source"));
    }
    let field = |key: &str| format!("{label} {key}");
    let keys = |required: &[&str], optional: &[&str]| exact_keys(source, required, optional, label);
    match kind {
        Some("user") => {
            keys(&["kind"], &["rpcId", "clientTimeZone"])?;
            for key in ["rpcId", "clientTimeZone"] {
                if let Some(value) = source.get(key) {
                    non_empty(Some(value), &field(key))?;
                }
            }
            Ok(())
        }
        Some("plugin") => plugin_source(source, label),
        Some("model") => {
            keys(&["kind", "provider", "model"], &["replayState"])?;
            non_empty(source.get("provider"), &field("provider"))?;
            non_empty(source.get("model"), &field("model"))
        }
        Some("tool") => {
            keys(&["kind", "callId"], &[])?;
            non_empty(source.get("callId"), &field("callId"))
        }
        Some("agent-instructions") => {
            keys(
                &["kind", "form", "changes"],
                &["baseline", "baselineIdentity"],
            )?;
            one_of(source.get("form"), &["instructions"], &field("form"))?;
            if let Some(baseline) = source.get("baseline") {
                literal_true(baseline, &field("baseline"))?;
            }
            if let Some(identity) = source.get("baselineIdentity") {
                non_empty(Some(identity), &field("baselineIdentity"))?;
            }
            array(source.get("changes"), &field("changes"), |change, item| {
                let change = exact(
                    Some(change),
                    item,
                    &["action", "scope", "path"],
                    &["digest"],
                )?;
                one_of(
                    change.get("action"),
                    &["set", "replace", "remove"],
                    &format!("{item} action"),
                )?;
                string(change.get("scope"), &format!("{item} scope"))?;
                string(change.get("path"), &format!("{item} path"))?;
                match change.get("digest") {
                    Some(digest) => string(Some(digest), &format!("{item} digest")),
                    None => Ok(()),
                }
            })
            .map(drop)
        }
        Some("session-reference") => {
            keys(&["kind", "form", "version", "references"], &[])?;
            one_of(source.get("form"), &["recall"], &field("form"))?;
            one_of_value(
                source.get("version"),
                &[Value::from(1)],
                "1",
                &field("version"),
            )
        }
        Some("team-message") => {
            keys(
                &["kind", "teamId", "messageId", "senderId", "senderName"],
                &[],
            )?;
            for key in ["teamId", "messageId", "senderId"] {
                non_empty(source.get(key), &field(key))?;
            }
            string(source.get("senderName"), &field("senderName"))
        }
        Some("goal") => {
            keys(&["kind", "goalId", "revision", "round"], &[])?;
            non_empty(source.get("goalId"), &field("goalId"))?;
            positive(source.get("revision"), &field("revision"))?;
            positive(source.get("round"), &field("round")).map(drop)
        }
        Some("skill-invocation") => {
            keys(&["kind", "name", "form"], &[])?;
            non_empty(source.get("name"), &field("name"))?;
            one_of(source.get("form"), &["instructions"], &field("form"))
        }
        Some("skill-catalog") => {
            keys(&["kind", "form", "entries"], &["update"])?;
            one_of(source.get("form"), &["catalog"], &field("form"))?;
            if let Some(update) = source.get("update") {
                literal_true(update, &field("update"))?;
            }
            array(source.get("entries"), &field("entries"), |entry, item| {
                let entry = exact(Some(entry), item, &["name", "description"], &[])?;
                non_empty(entry.get("name"), &format!("{item} name"))?;
                string(entry.get("description"), &format!("{item} description"))
            })
            .map(drop)
        }
        Some("coordinator" | "subagent-report") => {
            keys(&["kind", "form", "senderSessionId"], &[])?;
            one_of(source.get("form"), &["relay"], &field("form"))?;
            non_empty(source.get("senderSessionId"), &field("senderSessionId"))
        }
        Some("subagent-settled") => {
            keys(&["kind", "form", "summary", "senderSessionId"], &[])?;
            one_of(source.get("form"), &["notice"], &field("form"))?;
            string(source.get("summary"), &field("summary"))?;
            non_empty(source.get("senderSessionId"), &field("senderSessionId"))
        }
        Some("webhook") => {
            keys(
                &[
                    "kind",
                    "provider",
                    "source",
                    "deliveryId",
                    "ruleId",
                    "form",
                    "summary",
                ],
                &[],
            )?;
            for key in ["provider", "source", "deliveryId", "ruleId"] {
                non_empty(source.get(key), &field(key))?;
            }
            one_of(source.get("form"), &["notice"], &field("form"))?;
            string(source.get("summary"), &field("summary"))
        }
        _ => non_empty(source.get("kind"), &field("kind")),
    }
}

fn plugin_source(source: &Map<String, Value>, label: &str) -> Check {
    let compact = source.get("plugin") == Some(&Value::from("compact"));
    let optional: &[&str] = if compact {
        &[
            "form",
            "sections",
            "summary",
            "compactionId",
            "sourceCommandId",
        ]
    } else {
        &["form", "sections", "summary"]
    };
    exact_keys(source, &["kind", "plugin"], optional, label)?;
    let field = |key: &str| format!("{label} {key}");
    non_empty(source.get("plugin"), &field("plugin"))?;
    if compact {
        non_empty(source.get("compactionId"), &field("compactionId"))?;
        if let Some(command) = source.get("sourceCommandId") {
            non_empty(Some(command), &field("sourceCommandId"))?;
        }
    }
    let Some(form) = source.get("form") else {
        return Ok(());
    };
    one_of(
        Some(form),
        &[
            "instructions",
            "catalog",
            "snapshot",
            "notice",
            "relay",
            "recall",
        ],
        &field("form"),
    )?;
    if *form == "snapshot" {
        array(
            source.get("sections"),
            &field("sections"),
            |section, item| {
                let section = exact(Some(section), item, &["name", "text"], &[])?;
                non_empty(section.get("name"), &format!("{item} name"))?;
                string(section.get("text"), &format!("{item} text"))
            },
        )?;
    } else if source.contains_key("sections") {
        return Err(format!("{label} sections require snapshot form"));
    }
    if *form == "notice" {
        string(source.get("summary"), &field("summary"))?;
    } else if source.contains_key("summary") {
        return Err(format!("{label} summary requires notice form"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(tag: &str, seq: u64, data: Value) -> Result<(), AuditError> {
        audit(tag, seq, Some(&data), 0)
    }

    #[test]
    fn members_are_exact_unexpected_first() {
        assert_eq!(
            rule(
                "user/message",
                0,
                json!({"role": "user", "content": [], "source": {"kind": "user"}, "extra": 1})
            ),
            Err(AuditError::Rule(
                "user/message 0 data has unexpected member \"extra\"".into()
            ))
        );
        assert_eq!(
            rule(
                "user/message",
                0,
                json!({"role": "user", "content": [], "source": {"kind": "user"}})
            ),
            Err(AuditError::Rule(
                "user/message 0 data lacks required member \"id\"".into()
            ))
        );
        assert_eq!(
            rule("x/unknown", 0, json!({})),
            Err(AuditError::UnknownType)
        );
    }

    #[test]
    fn a_tool_result_holds_one_block_for_its_call() {
        let result = |block_id: &str| {
            json!({"turn": 1, "step": 1, "message": {"id": "m", "role": "user",
                "content": [{"type": "tool-result", "toolCallId": block_id, "content": []}],
                "source": {"kind": "tool", "callId": "c1"}}})
        };
        assert_eq!(rule("tool/result", 3, result("c1")), Ok(()));
        assert_eq!(
            rule("tool/result", 3, result("c2")),
            Err(AuditError::Rule(
                "tool/result 3 message must contain exactly one tool-result block".into()
            ))
        );
    }

    #[test]
    fn request_headers_check_adapter_defaults_against_the_config() {
        let header = json!({"header": {"config": {"provider": "p", "model": "m"},
            "adapterDefaults": {"reasoningEffort": true}}, "reason": "initial"});
        assert_eq!(
            rule("request/header", 2, header),
            Err(AuditError::Rule(
                "request/header 2 header adapter default reasoningEffort lacks config value".into()
            ))
        );
    }

    #[test]
    fn descriptors_of_another_version_are_named() {
        let descriptor = json!({"mode": "one-shot", "version": 2, "provider": "p"});
        assert_eq!(
            rule("subagent/descriptor", 1, descriptor.clone()),
            Err(AuditError::DescriptorVersion(2))
        );
        // Opaque in a v1 file (the v2→v3 edge refuses it).
        assert_eq!(
            audit("subagent/descriptor", 1, Some(&descriptor), 1),
            Ok(())
        );
    }
}
