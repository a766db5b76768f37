//! The legacy read-side normalizations of the v0 restore path (persistence §0.5), exactly as
//! upstream 0.1.0-rc.8's persistence coordinator applies them (docs/v0-rules.md, steps R2–R3).
//!
//! Two parts, both streaming:
//! - [`RefusalScan`] (R2): three whole-log scans for retired shapes — the first
//!   `request/header-delta`, else the first `mode/set`, else the first `request/header` with
//!   reason `"fallback"` — including the raw `TypeError`s upstream throws on a `null` row or a
//!   `request/header` without data. It observes every event once and answers at the end.
//! - [`Upgrader`] (R3, before the message-shape checks): per event, in order, U1 drops a valid
//!   pre-react-loop `turn/start.trigger`, U2 checks every `turn/end` strictly and maps old
//!   reasons, U3 turns `steering/message` into `user/message`, U4 wraps pre-identity message
//!   payloads with the deterministic id `legacy-message:<session>:<seq>`.
//!
//! The same upgrades are the first half of the frozen v0→v1 migration edge (§0.5 [NEWER]).
//!
//! Invariant: the [`Upgrader`] remembers one message id per message event (for a legacy
//! tool-result rewrite, which inherits its target's id), so its state grows with the number of
//! messages, not with the number of events.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::js;
use super::rejection::{LegacyRule, Rejection};

/// What the R2 scans found; see [`RefusalScan::verdict`].
#[derive(Clone, Debug, Default)]
pub struct RefusalScan {
    /// Scan (a): the first `request/header-delta` or `null` row.
    delta: Option<Rejection>,
    /// Scan (b): the first `mode/set`.
    mode_set: Option<Rejection>,
    /// Scan (c): the first fallback reason or data-less `request/header`.
    fallback: Option<Rejection>,
}

impl RefusalScan {
    /// Observes the next stored event (upstream runs the scans before any upgrade).
    pub fn observe(&mut self, session_id: &str, event: &Value) {
        if self.delta.is_some() {
            return;
        }
        let Value::Object(map) = event else {
            if event.is_null() {
                self.delta = Some(Rejection::type_error(
                    "Cannot read properties of null (reading 'type')",
                ));
            }
            return;
        };
        let seq = || js::display(map.get("seq"));
        match map.get("type").and_then(Value::as_str) {
            Some("request/header-delta") => {
                self.delta = Some(
                    Rejection::wrapped(
                        LegacyRule::LegacyHeaderDelta,
                        format!(
                            "session \"{session_id}\" contains unsupported legacy request/header-delta event at seq {}",
                            seq()
                        ),
                    )
                    .with_seq_value(map.get("seq")),
                );
            }
            Some("mode/set") if self.mode_set.is_none() => {
                self.mode_set = Some(
                    Rejection::wrapped(
                        LegacyRule::LegacyModeSet,
                        format!(
                            "session \"{session_id}\" contains unsupported legacy mode/set event at seq {}",
                            seq()
                        ),
                    )
                    .with_seq_value(map.get("seq")),
                );
            }
            Some("request/header") if self.fallback.is_none() => match map.get("data") {
                None => {
                    self.fallback = Some(Rejection::type_error(
                        "Cannot read properties of undefined (reading 'reason')",
                    ))
                }
                Some(Value::Null) => {
                    self.fallback = Some(Rejection::type_error(
                        "Cannot read properties of null (reading 'reason')",
                    ))
                }
                Some(data) if data.get("reason").and_then(Value::as_str) == Some("fallback") => {
                    self.fallback = Some(
                        Rejection::wrapped(
                            LegacyRule::LegacyFallbackReason,
                            format!(
                                "session \"{session_id}\" contains unsupported legacy request/header reason \"fallback\" at seq {}",
                                seq()
                            ),
                        )
                        .with_seq_value(map.get("seq")),
                    );
                }
                Some(_) => {}
            },
            _ => {}
        }
    }

    /// The refusal upstream reports after scanning the whole log, if any.
    pub fn verdict(&self) -> Option<&Rejection> {
        self.delta
            .as_ref()
            .or(self.mode_set.as_ref())
            .or(self.fallback.as_ref())
    }

    /// Whether the log is already known to be refused (later events cannot change the verdict
    /// of scan (a), the first to run).
    pub fn decided(&self) -> bool {
        self.delta.is_some()
    }
}

/// Applies U1–U4 to each stored event in order.
#[derive(Clone, Debug)]
pub struct Upgrader {
    session_id: String,
    /// Message id per seq (by the seq's double value), for legacy tool-result rewrites.
    ids: HashMap<u64, String>,
}

impl Upgrader {
    /// An upgrader for the session `session_id` (the id goes into minted message ids).
    pub fn new(session_id: &str) -> Upgrader {
        Upgrader {
            session_id: session_id.to_owned(),
            ids: HashMap::new(),
        }
    }

    /// Upgrades one event in place (U1–U4), then records its message id.
    pub fn upgrade(&mut self, event: &mut Value) -> Result<(), Rejection> {
        let Value::Object(map) = event else {
            return Ok(());
        };
        let seq_value = map.get("seq").cloned();
        let seq_text = || js::display(seq_value.as_ref());
        let malformed = |what: &str| {
            Rejection::wrapped(
                LegacyRule::LegacyMalformed,
                format!(
                    "session \"{}\" contains malformed pre-react-loop {what} at seq {}",
                    self.session_id,
                    seq_text()
                ),
            )
            .with_seq_value(seq_value.as_ref())
        };
        let minted = || format!("legacy-message:{}:{}", self.session_id, seq_text());
        let tag = map.get("type").and_then(Value::as_str).map(str::to_owned);
        match tag.as_deref() {
            Some("turn/start") => {
                if let Some(Value::Object(data)) = map.get_mut("data") {
                    if data.contains_key("trigger") {
                        if !valid_trigger(data) {
                            return Err(malformed("turn/start"));
                        }
                        data.shift_remove("trigger");
                    }
                }
            }
            Some("turn/end") => {
                if let Some(Value::Object(data)) = map.get_mut("data") {
                    upgrade_turn_end(data).map_err(|()| malformed("turn/end"))?;
                }
            }
            Some("steering/message") => {
                let Some(Value::Object(data)) = map.get("data") else {
                    return Err(malformed("steering/message"));
                };
                let new_data = upgrade_steering(data, &minted())
                    .ok_or_else(|| malformed("steering/message"))?;
                map.insert("type".into(), Value::from("user/message"));
                map.insert("data".into(), new_data);
            }
            _ => {}
        }
        let tag = map.get("type").and_then(Value::as_str).map(str::to_owned);
        let replace_start = map
            .get("surfaceOp")
            .filter(|op| op.get("op").and_then(Value::as_str) == Some("replace"))
            .and_then(|op| op.get("start"))
            .and_then(js::number);
        if let Some(Value::Object(data)) = map.get_mut("data") {
            match tag.as_deref() {
                Some("user/message") => {
                    let pre_identity = !data.contains_key("id")
                        && !data.contains_key("role")
                        && !data.contains_key("message")
                        && data.contains_key("content")
                        && data.contains_key("source");
                    if pre_identity {
                        data.insert("id".into(), Value::from(minted()));
                        data.insert("role".into(), Value::from("user"));
                    }
                }
                Some("assistant/message")
                    if !data.contains_key("message")
                        && data.contains_key("content")
                        && data.contains_key("provenance") =>
                {
                    let content = data.shift_remove("content").unwrap_or(Value::Null);
                    let provenance = data.shift_remove("provenance").unwrap_or(Value::Null);
                    let mut source = spread(&provenance);
                    source.insert("kind".into(), Value::from("model"));
                    let mut message = Map::new();
                    message.insert("id".into(), Value::from(minted()));
                    message.insert("role".into(), Value::from("assistant"));
                    message.insert("content".into(), content);
                    message.insert("source".into(), Value::Object(source));
                    data.insert("message".into(), Value::Object(message));
                }
                Some("tool/result")
                    if !data.contains_key("message")
                        && data.contains_key("callId")
                        && data.contains_key("content")
                        && data.contains_key("isError") =>
                {
                    let id = match replace_start {
                        Some(start) => self.ids.get(&seq_key(start)).cloned(),
                        None => Some(minted()),
                    };
                    let call_id = data.shift_remove("callId").unwrap_or(Value::Null);
                    let content = data.shift_remove("content").unwrap_or(Value::Null);
                    let is_error = data.shift_remove("isError").unwrap_or(Value::Null);
                    let mut block = Map::new();
                    block.insert("type".into(), Value::from("tool-result"));
                    block.insert("toolCallId".into(), call_id.clone());
                    block.insert("content".into(), content);
                    block.insert("isError".into(), is_error);
                    let mut source = Map::new();
                    source.insert("kind".into(), Value::from("tool"));
                    source.insert("callId".into(), call_id);
                    let mut message = Map::new();
                    if let Some(id) = id {
                        message.insert("id".into(), Value::from(id));
                    }
                    message.insert("role".into(), Value::from("user"));
                    message.insert("content".into(), Value::Array(vec![Value::Object(block)]));
                    message.insert("source".into(), Value::Object(source));
                    data.insert("message".into(), Value::Object(message));
                }
                _ => {}
            }
        }
        self.record_id(map, tag.as_deref(), seq_value.as_ref());
        Ok(())
    }

    fn record_id(&mut self, map: &Map<String, Value>, tag: Option<&str>, seq: Option<&Value>) {
        let Some(seq) = seq.and_then(js::number) else {
            return;
        };
        let data = map.get("data");
        let id = match tag {
            Some("user/message") => data.and_then(|data| data.get("id")),
            _ => data
                .and_then(|data| data.get("message"))
                .and_then(|message| message.get("id")),
        };
        if let Some(Value::String(id)) = id {
            self.ids.insert(seq_key(seq), id.clone());
        }
    }
}

/// A map key for a seq read as a double (`-0` and `0` are the same key).
fn seq_key(seq: f64) -> u64 {
    if seq == 0.0 {
        0
    } else {
        seq.to_bits()
    }
}

/// `{...value}`: an object's own keys; any other value spreads to nothing (strings, which
/// would spread their characters, never occur as a provenance).
fn spread(value: &Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

fn is_turn_number(value: Option<&Value>) -> bool {
    value
        .and_then(js::number)
        .is_some_and(|x| js::is_safe_integer(x) && x >= 1.0)
}

fn has_only(map: &Map<String, Value>, keys: &[&str]) -> bool {
    map.keys().all(|key| keys.contains(&key.as_str()))
}

fn non_array_object(value: Option<&Value>) -> Option<&Map<String, Value>> {
    match value {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// U1: `{turn, trigger: {kind: <non-empty string>, ...}}`.
fn valid_trigger(data: &Map<String, Value>) -> bool {
    is_turn_number(data.get("turn"))
        && has_only(data, &["turn", "trigger"])
        && non_array_object(data.get("trigger")).is_some_and(
            |trigger| matches!(trigger.get("kind"), Some(Value::String(kind)) if !kind.is_empty()),
        )
}

/// U2: checks a `turn/end` payload and maps old reason shapes; `Err` = malformed.
fn upgrade_turn_end(data: &mut Map<String, Value>) -> Result<(), ()> {
    if !is_turn_number(data.get("turn")) || data.len() != 2 || !data.contains_key("reason") {
        return Err(());
    }
    let Some(Value::Object(reason)) = data.get("reason") else {
        return Err(());
    };
    let Some(Value::String(kind)) = reason.get("kind") else {
        return Err(());
    };
    let only_kind = reason.len() == 1;
    let replacement = match kind.as_str() {
        "completed" | "blocked" | "max-tokens" | "interrupted" => {
            if !only_kind {
                return Err(());
            }
            None
        }
        "aborted" if reason.contains_key("reason") => None,
        "aborted" => {
            if !only_kind {
                return Err(());
            }
            Some(nested("aborted", "reason", object_with_kind("legacy")))
        }
        "disposed" => {
            if !only_kind {
                return Err(());
            }
            Some(nested("aborted", "reason", object_with_kind("disposed")))
        }
        "error" if reason.contains_key("error") => None,
        "error" => {
            if !reason
                .get("step")
                .is_some_and(js::is_non_negative_safe_integer)
            {
                return Err(());
            }
            if reason.len() == 3 && reason.contains_key("failure") {
                let failure = non_array_object(reason.get("failure")).ok_or(())?;
                if !valid_failure(failure) {
                    return Err(());
                }
                Some(nested("error", "error", Value::Object(failure.clone())))
            } else if has_only(reason, &["kind", "step", "message", "code"])
                && matches!(reason.get("message"), Some(Value::String(_)))
                && reason.get("code").is_none_or(Value::is_string)
            {
                let mut error = Map::new();
                error.insert(
                    "message".into(),
                    reason.get("message").cloned().unwrap_or(Value::Null),
                );
                error.insert(
                    "code".into(),
                    reason
                        .get("code")
                        .cloned()
                        .unwrap_or_else(|| Value::from("UNKNOWN")),
                );
                Some(nested("error", "error", Value::Object(error)))
            } else {
                return Err(());
            }
        }
        _ => None,
    };
    if let Some(replacement) = replacement {
        data.insert("reason".into(), replacement);
    }
    Ok(())
}

fn valid_failure(failure: &Map<String, Value>) -> bool {
    matches!(failure.get("message"), Some(Value::String(_)))
        && matches!(failure.get("code"), Some(Value::String(_)))
        && failure.get("status").is_none_or(Value::is_number)
        && failure
            .get("providerRetryAfterMs")
            .is_none_or(Value::is_number)
        && failure.get("requestId").is_none_or(Value::is_string)
}

fn object_with_kind(kind: &str) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), Value::from(kind));
    Value::Object(map)
}

fn nested(kind: &str, key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), Value::from(kind));
    map.insert(key.into(), value);
    Value::Object(map)
}

/// U3: the new `user/message` data for a `steering/message`, or `None` when malformed.
fn upgrade_steering(data: &Map<String, Value>, minted: &str) -> Option<Value> {
    let turn_ok = data
        .get("turn")
        .and_then(js::number)
        .is_some_and(js::is_safe_integer);
    if let Some(message) = non_array_object(data.get("message")) {
        if turn_ok && data.len() == 2 && data.contains_key("turn") {
            return Some(Value::Object(message.clone()));
        }
    }
    if turn_ok
        && data.len() == 3
        && ["turn", "content", "source"]
            .iter()
            .all(|key| data.contains_key(*key))
    {
        let mut message: Map<String, Value> = data
            .iter()
            .filter(|(key, _)| key.as_str() != "turn")
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        message.insert("id".into(), Value::from(minted));
        message.insert("role".into(), Value::from("user"));
        return Some(Value::Object(message));
    }
    None
}

#[cfg(test)]
mod tests;
