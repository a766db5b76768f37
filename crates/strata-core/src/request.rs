//! Request reconstruction folds: the latest request header and route context (session-core §7.2).
//!
//! The model request at any point of a log is the canonical form of the last
//! `request/header` plus the derived messages. These folds are pure functions
//! over events so stores, the agent loop and `strata messages --at SEQ` agree.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::{Event, EventType};
use crate::fold::fold_accepted;
use crate::generation::Generation;
use crate::message::{project, Message};
use crate::rule::AcceptError;
use crate::seq::Seq;

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

/// The request a log implied at one point: what a model call made right after event `seq`
/// would have sent — the header fold and the derived messages of the prefix `0..=seq`
/// (session-core §7.2). Later events, including later replacements, play no part.
#[derive(Clone, Debug)]
pub struct RequestAt {
    /// The last event of the prefix.
    pub seq: Seq,
    /// The canonical header of the last `request/header` at or before `seq`.
    pub header: Option<Arc<Value>>,
    /// The data of the last `request/context` at or before `seq`.
    pub context: Option<Arc<Value>>,
    /// The derived messages of the prefix, in surface order.
    pub messages: Vec<Message>,
}

/// Why [`request_at`] has no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestAtError {
    /// `seq` is past the end of the log.
    #[error("seq {seq} is past the end of the log ({n_events} events)")]
    OutOfRange {
        /// The seq asked for.
        seq: u64,
        /// How many events the log holds.
        n_events: u64,
    },
    /// The prefix failed the surface rules (only possible for events that were never
    /// accepted together).
    #[error(transparent)]
    Fold(#[from] AcceptError),
}

/// The request implied after event `seq` of `events` (a whole log from seq 0, in
/// `generation`'s rules): replays the prefix's surface and folds its header and context.
/// O(prefix); the surface is replayed, not the whole log's current one.
pub fn request_at(
    events: &[Arc<Event>],
    generation: Generation,
    seq: Seq,
) -> Result<RequestAt, RequestAtError> {
    let out_of_range = || RequestAtError::OutOfRange {
        seq: seq.get(),
        n_events: events.len() as u64,
    };
    let end = usize::try_from(seq.get()).map_err(|_| out_of_range())?;
    let prefix = events.get(..=end).ok_or_else(out_of_range)?;
    let fold = fold_accepted(prefix)?;
    let messages = fold
        .nodes
        .iter()
        .filter_map(|node| usize::try_from(node.get()).ok())
        .filter_map(|index| prefix.get(index))
        .filter_map(project)
        .collect();
    Ok(RequestAt {
        seq,
        header: fold_request_header(prefix, generation),
        context: fold_request_context(prefix),
        messages,
    })
}

#[cfg(test)]
mod tests;
