//! Request reconstruction folds: the latest request header and route context (session-core §7.2).
//!
//! The model request at any point of a log is the canonical form of the last
//! `request/header` plus the derived messages. These folds are pure functions
//! over events so stores, the agent loop and `strata messages --at SEQ` agree.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::{Event, EventType};
use crate::generation::Generation;

/// The canonical form of a `request/header`'s header: `config`, plus
/// `adapterDefaults` only when a flag is set, `tools` only when non-empty
/// (and, before V3, `system` when non-empty).
pub fn canonical_header(header: &Value, generation: Generation) -> Value {
    let mut canonical = Map::new();
    if let Some(config) = header.get("config") {
        canonical.insert("config".into(), config.clone());
    }
    if let Some(Value::Object(defaults)) = header.get("adapterDefaults") {
        let flagged = ["reasoningEffort", "maxTokens"]
            .iter()
            .any(|key| defaults.get(*key) == Some(&Value::Bool(true)));
        if flagged {
            canonical.insert("adapterDefaults".into(), Value::Object(defaults.clone()));
        }
    }
    if generation < Generation::V3 {
        if let Some(Value::String(system)) = header.get("system") {
            if !system.is_empty() {
                canonical.insert("system".into(), Value::from(system.clone()));
            }
        }
    }
    if let Some(Value::Array(tools)) = header.get("tools") {
        if !tools.is_empty() {
            canonical.insert("tools".into(), Value::Array(tools.clone()));
        }
    }
    Value::Object(canonical)
}

/// The canonical header of the last `request/header` in `events`, or `None`.
pub fn fold_request_header(events: &[Arc<Event>], generation: Generation) -> Option<Arc<Value>> {
    events
        .iter()
        .rev()
        .find(|event| event.event_type == EventType::RequestHeader)
        .and_then(|event| event.data().get("header"))
        .map(|header| Arc::new(canonical_header(header, generation)))
}

/// The data of the last `request/context` in `events` (latest wins wholesale).
pub fn fold_request_context(events: &[Arc<Event>]) -> Option<Arc<Value>> {
    events
        .iter()
        .rev()
        .find(|event| event.event_type == EventType::RequestContext)
        .map(|event| Arc::new(event.data().clone()))
}

/// Header equality used to decide `change` vs no new header: same config,
/// same adapter-default flags, same tools in order (compared as JSON text,
/// so key order matters, as upstream's `JSON.stringify` comparison does).
pub fn header_equals(left: &Value, right: &Value) -> bool {
    let text = |value: Option<&Value>| value.map(crate::json::to_js_string);
    let flags = |value: &Value| {
        let defaults = value.get("adapterDefaults");
        (
            defaults.and_then(|d| d.get("reasoningEffort")) == Some(&Value::Bool(true)),
            defaults.and_then(|d| d.get("maxTokens")) == Some(&Value::Bool(true)),
        )
    };
    let tools = |value: &Value| -> Vec<String> {
        value
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| tools.iter().map(crate::json::to_js_string).collect())
            .unwrap_or_default()
    };
    let config_equal = match (left.get("config"), right.get("config")) {
        (Some(a), Some(b)) => crate::json::json_equal(a, b),
        (a, b) => text(a) == text(b),
    };
    config_equal && flags(left) == flags(right) && tools(left) == tools(right)
}
