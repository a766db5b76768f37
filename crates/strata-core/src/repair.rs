//! Crash repair: closers for a turn left open by a crash or a fork cut (session-core §8, §9.3).
//!
//! A pure function of the committed prefix: scan the log once tracking the
//! open turn, the open step and the tool calls announced by assistant
//! messages of the open step, then close them — a synthetic error result for
//! each unanswered call (distinguishing "never started" from "started, outcome
//! unknown" by whether a `tool/call` was recorded), `step/end`, `turn/end`.
//! The closers reuse the last event's time, so repair is deterministic.

use std::sync::Arc;

use serde_json::Value;

use crate::candidate::{object, Candidate, SurfaceIntent};
use crate::event::{Event, EventType};
use crate::payload::{text_block, ToolResult};
use crate::seq::Seq;

/// Why a turn is being closed; decides ids, texts and the `turn/end` reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseCause {
    /// The process died inside the turn (resume repair).
    Interrupted,
    /// A fork cut the history inside the turn.
    Forked,
}

impl CloseCause {
    /// The reason kind and id prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseCause::Interrupted => "interrupted",
            CloseCause::Forked => "forked",
        }
    }

    fn not_started_text(self) -> &'static str {
        match self {
            CloseCause::Interrupted => "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.",
            CloseCause::Forked => "The history inherited by this branch has no record of this tool call starting. The parent session may have executed it after the fork point. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.",
        }
    }

    fn started_text(self) -> &'static str {
        match self {
            CloseCause::Interrupted => "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.",
            CloseCause::Forked => "The history inherited by this branch records this tool call starting but does not include its result. The parent session may have completed it after the fork point. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.",
        }
    }
}

/// The synthetic events that close an open turn, to append right after the log.
#[derive(Clone, Debug, PartialEq)]
pub struct Closers {
    /// The candidates, in append order.
    pub candidates: Vec<Candidate>,
    /// The seq the first closer gets (message ids embed each closer's seq).
    pub first_seq: Seq,
    /// The time every closer carries: the last event's time.
    pub time: i64,
}

impl Closers {
    /// Whether there is nothing to close.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }
}

struct PendingCall {
    call_id: String,
    /// The registering assistant message's `step` (`None`: the field was missing).
    step: Option<Value>,
    call_seq: Option<Seq>,
}

/// An open bracket's number as the log held it: `None` when the field was
/// missing (the closer omits it too, as `JSON.stringify` drops `undefined`).
type Position = Option<Value>;

/// Reads a bracket number the way upstream does: `null` means "none open",
/// a missing field still opens the bracket (docs/v0-rules.md, crash repair).
fn open_position(data: &Value, key: &str) -> Option<Position> {
    match data.get(key) {
        Some(Value::Null) => None,
        Some(value) => Some(Some(value.clone())),
        None => Some(None),
    }
}

/// `interruptedTurnClosers`: closers for a turn left open by a crash.
pub fn interrupted_turn_closers(events: &[Arc<Event>]) -> Closers {
    open_turn_closers(events, CloseCause::Interrupted)
}

/// `openTurnClosers(events, cause)`: closers for the open turn at the end of `events`.
pub fn open_turn_closers(events: &[Arc<Event>], cause: CloseCause) -> Closers {
    let mut open_turn: Option<Position> = None;
    let mut open_step: Option<Position> = None;
    let mut pending: Vec<PendingCall> = Vec::new();
    for event in events {
        let data = event.data();
        match event.event_type {
            EventType::TurnStart => {
                open_turn = open_position(data, "turn");
                open_step = None;
                pending.clear();
            }
            EventType::TurnEnd => {
                open_turn = None;
                open_step = None;
                pending.clear();
            }
            EventType::StepStart => {
                open_step = open_position(data, "step");
            }
            EventType::StepEnd => {
                pending.clear();
                open_step = None;
            }
            EventType::AssistantMessage => {
                let step = data.get("step").cloned();
                let blocks = data
                    .get("message")
                    .and_then(|message| message.get("content"))
                    .and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    let Some(call_id) = block.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    // Like `Map.set`: a repeated id keeps its position, loses its call seq.
                    match pending.iter_mut().find(|call| call.call_id == call_id) {
                        Some(call) => {
                            call.step = step.clone();
                            call.call_seq = None;
                        }
                        None => pending.push(PendingCall {
                            call_id: call_id.to_owned(),
                            step: step.clone(),
                            call_seq: None,
                        }),
                    }
                }
            }
            EventType::ToolCall => {
                if let Some(call_id) = data.get("callId").and_then(Value::as_str) {
                    if let Some(call) = pending.iter_mut().find(|call| call.call_id == call_id) {
                        call.call_seq = Some(event.seq);
                    }
                }
            }
            EventType::ToolResult => {
                let call_id = data
                    .get("message")
                    .and_then(|message| message.get("source"))
                    .and_then(|source| source.get("callId"))
                    .and_then(Value::as_str);
                if let Some(call_id) = call_id {
                    pending.retain(|call| call.call_id != call_id);
                }
            }
            _ => {}
        }
    }
    let (first_seq, time) = match events.last() {
        Some(last) => (last.seq.next(), last.time),
        None => (Seq::ZERO, 0),
    };
    let mut closers = Closers {
        candidates: Vec::new(),
        first_seq,
        time,
    };
    let Some(turn) = open_turn else {
        return closers;
    };
    for (seq, call) in (first_seq.get()..).zip(pending) {
        let (text, error_name, error_code) = match call.call_seq {
            Some(_) => (
                cause.started_text(),
                "ToolOutcomeUnknownError",
                "TOOL_OUTCOME_UNKNOWN",
            ),
            None => (
                cause.not_started_text(),
                "ToolNotStartedError",
                "TOOL_NOT_STARTED",
            ),
        };
        let message = object(vec![
            (
                "id",
                format!("{}-tool-result-{}-{seq}", cause.as_str(), call.call_id).into(),
            ),
            ("role", "user".into()),
            (
                "source",
                object(vec![
                    ("kind", "tool".into()),
                    ("callId", call.call_id.as_str().into()),
                ]),
            ),
            (
                "content",
                Value::Array(vec![object(vec![
                    ("type", "tool-result".into()),
                    ("toolCallId", call.call_id.as_str().into()),
                    ("isError", true.into()),
                    ("content", Value::Array(vec![text_block(text)])),
                ])]),
            ),
        ]);
        let payload = ToolResult {
            turn: 0,
            step: 0,
            message,
            error: Some(object(vec![
                ("name", error_name.into()),
                ("code", error_code.into()),
            ])),
            meta: None,
        };
        let intent = match call.call_seq {
            Some(call_seq) => SurfaceIntent::append_citing(vec![call_seq]),
            None => SurfaceIntent::append(),
        };
        let mut candidate = Candidate::surface(payload, intent);
        set_position(&mut candidate, &turn, Some(&call.step));
        closers.candidates.push(candidate);
    }
    if let Some(step) = open_step {
        let mut candidate = Candidate::log_only(crate::payload::StepEnd { turn: 0, step: 0 });
        set_position(&mut candidate, &turn, Some(&step));
        closers.candidates.push(candidate);
    }
    let mut turn_end = Candidate::log_only(crate::payload::TurnEnd {
        turn: 0,
        reason: object(vec![("kind", cause.as_str().into())]),
    });
    set_position(&mut turn_end, &turn, None);
    closers.candidates.push(turn_end);
    closers
}

/// Copies the open turn (and, when given, step) verbatim into a closer's
/// payload — they may be any JSON a log held — or drops the field when the
/// log had none, so a closer never carries a value the log did not.
fn set_position(candidate: &mut Candidate, turn: &Position, step: Option<&Position>) {
    let Value::Object(map) = &mut candidate.data else {
        return;
    };
    let fields = [("turn", Some(turn)), ("step", step)];
    for (key, position) in fields {
        match position {
            Some(Some(value)) => {
                if let Some(slot) = map.get_mut(key) {
                    *slot = value.clone();
                }
            }
            Some(None) => {
                map.shift_remove(key);
            }
            None => {}
        }
    }
}
