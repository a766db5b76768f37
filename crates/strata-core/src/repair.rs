//! Crash repair: closers for a turn left open by a crash or a fork cut (session-core §8, §9.3).
//!
//! A pure function of the committed prefix: scan the log once tracking the
//! open turn, the open step and the tool calls announced by assistant
//! messages of the open step, then close them — a synthetic error result for
//! each unanswered call (distinguishing "never started" from "started, outcome
//! unknown" by whether a `tool/call` was recorded), `step/end`, `turn/end`.
//! A never-started call always gets V3's one exact `TOOL_NOT_STARTED` repair
//! ([`TOOL_NOT_STARTED_TEXT`]); the cause shows in the other closers.
//!
//! A compaction bracket the crash left open is closed first, by a `compaction/end` that
//! copies the start's `compactionId`, `sourceCommandId` and `turn` and records `error` (the
//! cause): dsh's format layer refuses a `turn/end` that crosses an open compaction, and a
//! `compaction/end` after the end-seed marker (which forgets the open compaction) matches no
//! start. A bracket is open when the newest of {`compaction/start`, `compaction/end`,
//! `session/end-seed`} is a `compaction/start`; a start followed by a marker is stale and
//! stays as it is. Upstream's own repair leaves the bracket to its marker instead, which its
//! format layer accepts only when it reads the whole log (docs/divergences.md).
//! The closers reuse the last event's time, so repair is deterministic.

use std::sync::Arc;

use serde_json::Value;

use crate::candidate::{object, Candidate, SurfaceIntent};
use crate::event::{Event, EventType};
use crate::payload::{text_block, ToolResult};
pub use crate::relations::TOOL_NOT_STARTED_TEXT;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::wire::RawEvent;

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

#[derive(Clone)]
struct PendingCall {
    /// The call id as the assistant block held it (`None`: the block had no `id`).
    call_id: Option<Value>,
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

/// How strictly the scan reads malformed rows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScanMode {
    /// Accepted events: a missing payload reads as empty and only string call ids register.
    Lenient,
    /// Stored v0/v1 rows, as upstream rc.8 reads them: a `null` or missing payload of a
    /// bracket fails with JavaScript's `TypeError` text, and any call id registers.
    Upstream,
}

/// The state of `interruptedTurnClosers` (session-core §8) after some rows.
#[derive(Clone)]
struct TurnScan {
    mode: ScanMode,
    open_turn: Option<Position>,
    open_step: Option<Position>,
    pending: Vec<PendingCall>,
}

/// JavaScript's `TypeError` for reading `key` of a `null`/missing payload.
fn type_error(data: Option<&Value>, key: &str) -> AcceptError {
    let what = if data.is_some() { "null" } else { "undefined" };
    AcceptError::new(
        Rule::InternalTypeError,
        format!("Cannot read properties of {what} (reading '{key}')"),
    )
}

impl TurnScan {
    fn new(mode: ScanMode) -> TurnScan {
        TurnScan {
            mode,
            open_turn: None,
            open_step: None,
            pending: Vec::new(),
        }
    }

    /// The payload, or upstream's `TypeError` when it is `null`/missing and must be read.
    fn payload<'d>(&self, data: Option<&'d Value>, key: &str) -> Result<&'d Value, AcceptError> {
        match data {
            Some(value) if !value.is_null() => Ok(value),
            _ if self.mode == ScanMode::Upstream => Err(type_error(data, key)),
            _ => Ok(&Value::Null),
        }
    }

    fn observe(
        &mut self,
        event_type: &EventType,
        seq: Option<Seq>,
        data: Option<&Value>,
    ) -> Result<(), AcceptError> {
        match event_type {
            EventType::TurnStart => {
                let data = self.payload(data, "turn")?;
                self.open_turn = open_position(data, "turn");
                self.open_step = None;
                self.pending.clear();
            }
            EventType::TurnEnd => {
                self.open_turn = None;
                self.open_step = None;
                self.pending.clear();
            }
            EventType::StepStart => {
                let data = self.payload(data, "step")?;
                self.open_step = open_position(data, "step");
            }
            EventType::StepEnd => {
                self.pending.clear();
                self.open_step = None;
            }
            EventType::AssistantMessage => {
                let data = data.unwrap_or(&Value::Null);
                let step = data.get("step").cloned();
                let blocks = data
                    .get("message")
                    .and_then(|message| message.get("content"))
                    .and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.is_null() && self.mode == ScanMode::Upstream {
                        return Err(type_error(Some(block), "type"));
                    }
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    let call_id = match (self.mode, block.get("id")) {
                        (ScanMode::Lenient, Some(Value::String(id))) => {
                            Some(Value::from(id.as_str()))
                        }
                        (ScanMode::Lenient, _) => continue,
                        (ScanMode::Upstream, id) => id.cloned(),
                    };
                    // Like `Map.set`: a repeated id keeps its position, loses its call seq.
                    match self.pending.iter_mut().find(|call| call.call_id == call_id) {
                        Some(call) => {
                            call.step = step.clone();
                            call.call_seq = None;
                        }
                        None => self.pending.push(PendingCall {
                            call_id,
                            step: step.clone(),
                            call_seq: None,
                        }),
                    }
                }
            }
            EventType::ToolCall => {
                let data = self.payload(data, "callId")?;
                let call_id = match (self.mode, data.get("callId")) {
                    (ScanMode::Lenient, Some(Value::String(id))) => Some(Value::from(id.as_str())),
                    (ScanMode::Lenient, _) => return Ok(()),
                    (ScanMode::Upstream, id) => id.cloned(),
                };
                if let Some(call) = self.pending.iter_mut().find(|call| call.call_id == call_id) {
                    call.call_seq = seq;
                }
            }
            EventType::ToolResult => {
                let call_id = data
                    .and_then(|data| data.get("message"))
                    .and_then(|message| message.get("source"))
                    .and_then(|source| source.get("callId"));
                let call_id = match (self.mode, call_id) {
                    (ScanMode::Lenient, Some(Value::String(id))) => Some(Value::from(id.as_str())),
                    (ScanMode::Lenient, _) => return Ok(()),
                    (ScanMode::Upstream, id) => id.cloned(),
                };
                self.pending.retain(|call| call.call_id != call_id);
            }
            _ => {}
        }
        Ok(())
    }

    /// The closers, the first numbered `first_seq`; empty when no turn is open.
    fn closers(self, first_seq: Seq, cause: CloseCause) -> Vec<Candidate> {
        let Some(turn) = self.open_turn else {
            return Vec::new();
        };
        let mut candidates = Vec::new();
        for (seq, call) in (first_seq.get()..).zip(self.pending) {
            // A started call's outcome is unknown, and any result settles it; a call never
            // started takes V3's exact repair, which names no cause of its own.
            let (id_prefix, text, error_name, error_code) = match call.call_seq {
                Some(_) => (
                    cause.as_str(),
                    cause.started_text(),
                    "ToolOutcomeUnknownError",
                    "TOOL_OUTCOME_UNKNOWN",
                ),
                None => (
                    CloseCause::Interrupted.as_str(),
                    TOOL_NOT_STARTED_TEXT,
                    "ToolNotStartedError",
                    "TOOL_NOT_STARTED",
                ),
            };
            let call_id = call.call_id.clone().unwrap_or(Value::Null);
            let shown = match &call.call_id {
                Some(Value::String(id)) => id.clone(),
                Some(other) => crate::json::js_display(other),
                None => "undefined".to_owned(),
            };
            let mut source = vec![("kind", Value::from("tool"))];
            let mut block = vec![("type", Value::from("tool-result"))];
            // A missing id stays missing, as `JSON.stringify` drops `undefined`.
            if call.call_id.is_some() {
                source.push(("callId", call_id.clone()));
                block.push(("toolCallId", call_id));
            }
            block.push(("isError", true.into()));
            block.push(("content", Value::Array(vec![text_block(text)])));
            let message = object(vec![
                (
                    "id",
                    format!("{id_prefix}-tool-result-{shown}-{seq}").into(),
                ),
                ("role", "user".into()),
                ("source", object(source)),
                ("content", Value::Array(vec![object(block)])),
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
            candidates.push(candidate);
        }
        if let Some(step) = self.open_step {
            let mut candidate = Candidate::log_only(crate::payload::StepEnd { turn: 0, step: 0 });
            set_position(&mut candidate, &turn, Some(&step));
            candidates.push(candidate);
        }
        let mut turn_end = Candidate::log_only(crate::payload::TurnEnd {
            turn: 0,
            reason: object(vec![("kind", cause.as_str().into())]),
        });
        set_position(&mut turn_end, &turn, None);
        candidates.push(turn_end);
        candidates
    }
}

/// `interruptedTurnClosers`: closers for a turn left open by a crash.
pub fn interrupted_turn_closers(events: &[Arc<Event>]) -> Closers {
    open_turn_closers(events, CloseCause::Interrupted)
}

/// `openTurnClosers(events, cause)`: closers for what is left open at the end of `events` — a
/// compaction bracket, then the turn (see the module docs).
///
/// O(events since the last turn boundary and since the last compaction event or marker): a
/// `turn/start` or `turn/end` resets everything the turn scan tracks, so it starts there, and
/// the bracket scan walks back to the newest bracket event; payloads are read without keeping
/// their trees.
pub fn open_turn_closers(events: &[Arc<Event>], cause: CloseCause) -> Closers {
    let mut scan = TurnScan::new(ScanMode::Lenient);
    let from = events
        .iter()
        .rposition(|event| TurnState::is_boundary(event))
        .unwrap_or(0);
    for event in events.get(from..).unwrap_or(&[]) {
        observe_event(&mut scan, event);
    }
    let (first_seq, time) = match events.last() {
        Some(last) => (last.seq.next(), last.time),
        None => (Seq::ZERO, 0),
    };
    let bracket = events
        .iter()
        .rev()
        .find(|event| is_bracket_event(event))
        .filter(|event| is_compaction_start(event));
    closers_of(bracket.map(AsRef::as_ref), scan, first_seq, time, cause)
}

/// The closers of an open `bracket` (its `compaction/start`) and of the turn `scan` holds,
/// numbered from `first_seq`.
fn closers_of(
    bracket: Option<&Event>,
    scan: TurnScan,
    first_seq: Seq,
    time: i64,
    cause: CloseCause,
) -> Closers {
    let mut candidates = Vec::new();
    let mut turn_first_seq = first_seq;
    if let Some(start) = bracket {
        candidates.push(bracket_closer(start, cause));
        turn_first_seq = first_seq.next();
    }
    candidates.extend(scan.closers(turn_first_seq, cause));
    Closers {
        candidates,
        first_seq,
        time,
    }
}

/// The `compaction/start` type tag.
pub(crate) const COMPACTION_START: &str = "compaction/start";

/// The `compaction/end` type tag.
pub(crate) const COMPACTION_END: &str = "compaction/end";

/// Whether `event` opens, closes or makes stale a compaction bracket.
fn is_bracket_event(event: &Event) -> bool {
    match &event.event_type {
        EventType::SessionEndSeed => true,
        EventType::Other(name) => {
            name.as_str() == COMPACTION_START || name.as_str() == COMPACTION_END
        }
        _ => false,
    }
}

fn is_compaction_start(event: &Event) -> bool {
    matches!(&event.event_type, EventType::Other(name) if name.as_str() == COMPACTION_START)
}

/// `compaction/end {compactionId, sourceCommandId?, turn, error: cause}`, the closer of the
/// bracket `start` opened: the same ids and owner turn (which a bracket must keep), no summary
/// and no replacement, so the surface is what the log held.
fn bracket_closer(start: &Event, cause: CloseCause) -> Candidate {
    let data = start.data_uncached();
    let mut entries = Vec::new();
    for key in ["compactionId", "sourceCommandId", "turn"] {
        if let Some(value) = data.get(key) {
            entries.push((key, value.clone()));
        }
    }
    entries.push(("error", cause.as_str().into()));
    Candidate::log_only(crate::payload::PluginEvent {
        event_type: COMPACTION_END.into(),
        data: object(entries),
    })
}

/// Crash repair over *stored* v0/v1 rows, as upstream 0.1.0-rc.8's persistence coordinator
/// runs it before any envelope check (docs/v0-rules.md, restore step R5): rows are read the
/// way JavaScript reads them, so a `null` or missing bracket payload fails with upstream's
/// `TypeError` text ([`Rule::InternalTypeError`]), and any call id registers.
///
/// Feed every row in order with [`StoredTurnScan::observe`]; [`StoredTurnScan::closer_rows`]
/// then gives the closers as stored rows (`{type, seq, time, data, sourceEventSeqs?,
/// surfaceOp?}`), numbered after the last row and carrying its time. The scan keeps only the
/// open turn, step and pending calls, so it streams.
pub struct StoredTurnScan {
    scan: TurnScan,
    /// The last row's seq and time as written.
    last: Option<(Option<Value>, Option<Value>)>,
    n_rows: u64,
}

impl Default for StoredTurnScan {
    fn default() -> Self {
        StoredTurnScan {
            scan: TurnScan::new(ScanMode::Upstream),
            last: None,
            n_rows: 0,
        }
    }
}

impl StoredTurnScan {
    /// A scan before any row.
    pub fn new() -> StoredTurnScan {
        StoredTurnScan::default()
    }

    /// Reads the next stored row (an event object after the legacy upgrades).
    pub fn observe(&mut self, row: &Value) -> Result<(), AcceptError> {
        self.n_rows += 1;
        self.last = Some((row.get("seq").cloned(), row.get("time").cloned()));
        let Some(tag) = row.get("type").and_then(Value::as_str) else {
            return Ok(());
        };
        let seq = row
            .get("seq")
            .and_then(crate::json::js_non_negative_safe_integer)
            .and_then(|seq| Seq::new(seq).ok());
        self.scan
            .observe(&EventType::parse(tag), seq, row.get("data"))
    }

    /// [`StoredTurnScan::observe`] for a row decoded without a tree (its payload kept as
    /// text): the same state, with the payload parsed only for the types whose bracket the
    /// scan reads (turns, steps, calls and results), so a reader that keeps rows as text
    /// builds no tree for the rest (a v0 log's chunks, most of its rows).
    pub fn observe_raw(&mut self, row: &RawEvent) -> Result<(), AcceptError> {
        self.n_rows += 1;
        let seq_value = row.seq_value();
        let seq = seq_value
            .as_ref()
            .and_then(crate::json::js_non_negative_safe_integer)
            .and_then(|seq| Seq::new(seq).ok());
        self.last = Some((seq_value, row.time_value()));
        let Some(tag) = row.type_tag() else {
            return Ok(());
        };
        let event_type = EventType::parse(tag);
        let reads_payload = matches!(
            event_type,
            EventType::TurnStart
                | EventType::StepStart
                | EventType::AssistantMessage
                | EventType::ToolCall
                | EventType::ToolResult
        );
        if !reads_payload {
            return self.scan.observe(&event_type, seq, None);
        }
        let data = row.data();
        self.scan.observe(&event_type, seq, data.as_deref())
    }

    /// The closers for a turn left open, as stored rows; empty when none is open.
    pub fn closer_rows(self, cause: CloseCause) -> Vec<Value> {
        let Some((last_seq, last_time)) = self.last else {
            return Vec::new();
        };
        let first = last_seq
            .as_ref()
            .and_then(crate::json::js_non_negative_safe_integer)
            .map_or(self.n_rows, |seq| seq + 1);
        let Ok(first_seq) = Seq::new(first) else {
            return Vec::new();
        };
        self.scan
            .closers(first_seq, cause)
            .into_iter()
            .zip(first..)
            .map(|(candidate, seq)| candidate.into_row(seq, last_time.clone()))
            .collect()
    }
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

/// The open turn at some point of a log: what crash repair would close (session-core §8).
///
/// The fold [`open_turn_closers`] runs, as a value: a session keeps it to compute closers
/// without rescanning history, and a checkpoint carries it. A `turn/start` or `turn/end`
/// resets it, so the state after a log depends only on the events since its last such
/// boundary ([`TurnState::is_boundary`]).
///
/// Bracket positions are kept as the log held them: `None` is "not open", `Some(None)` is
/// "open, but the opening event had no such field" (a closer then omits it, as
/// `JSON.stringify` drops `undefined`), `Some(Some(value))` is "open at `value`" (any JSON).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnState {
    /// The open turn's `turn`.
    pub turn: Option<Option<Value>>,
    /// The open step's `step`.
    pub step: Option<Option<Value>>,
    /// Calls announced in the open step and still unanswered, in announcement order.
    pub pending: Vec<OpenCall>,
}

/// A tool call an assistant message announced and no `tool/result` answered yet.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenCall {
    /// The tool-call block's `id`, a JSON string for accepted events.
    pub call_id: Value,
    /// The announcing assistant message's `step` (`None`: the field was missing).
    pub step: Option<Value>,
    /// The `tool/call` that recorded the call as started, if any (its closer cites it).
    pub call_seq: Option<Seq>,
}

impl TurnState {
    /// Whether `event` resets the fold (`turn/start`, `turn/end`).
    pub fn is_boundary(event: &Event) -> bool {
        matches!(event.event_type, EventType::TurnStart | EventType::TurnEnd)
    }

    /// Whether a turn is open.
    pub fn is_open(&self) -> bool {
        self.turn.is_some()
    }

    /// Folds `event` in, exactly as [`open_turn_closers`] does.
    pub fn observe(&mut self, event: &Event) {
        let mut scan = self.to_scan();
        observe_event(&mut scan, event);
        *self = TurnState::from_scan(scan);
    }

    /// Folds every event of `events` in.
    pub fn observe_all<'e>(&mut self, events: impl IntoIterator<Item = &'e Arc<Event>>) {
        let mut scan = self.to_scan();
        for event in events {
            observe_event(&mut scan, event);
        }
        *self = TurnState::from_scan(scan);
    }

    /// The closers of the open turn, the first numbered `first_seq`, all carrying `time`
    /// (the last event's time); empty when no turn is open. A compaction bracket is not part
    /// of the turn: [`TurnState::closers_after`] closes one first.
    pub fn closers(&self, first_seq: Seq, time: i64, cause: CloseCause) -> Closers {
        self.closers_after(None, first_seq, time, cause)
    }

    /// [`TurnState::closers`] preceded by the closer of the compaction bracket `bracket` (its
    /// `compaction/start`) opened, when one is open (see the module docs).
    pub fn closers_after(
        &self,
        bracket: Option<&Event>,
        first_seq: Seq,
        time: i64,
        cause: CloseCause,
    ) -> Closers {
        closers_of(bracket, self.to_scan(), first_seq, time, cause)
    }

    fn to_scan(&self) -> TurnScan {
        TurnScan {
            mode: ScanMode::Lenient,
            open_turn: self.turn.clone(),
            open_step: self.step.clone(),
            pending: self
                .pending
                .iter()
                .map(|call| PendingCall {
                    call_id: Some(call.call_id.clone()),
                    step: call.step.clone(),
                    call_seq: call.call_seq,
                })
                .collect(),
        }
    }

    fn from_scan(scan: TurnScan) -> TurnState {
        TurnState {
            turn: scan.open_turn,
            step: scan.open_step,
            // A lenient scan registers string ids only.
            pending: scan
                .pending
                .into_iter()
                .filter_map(|call| {
                    Some(OpenCall {
                        call_id: call.call_id?,
                        step: call.step,
                        call_seq: call.call_seq,
                    })
                })
                .collect(),
        }
    }
}

/// One accepted event through a lenient scan, reading its payload without caching a parsed
/// tree in the event (a stored event keeps only its text).
fn observe_event(scan: &mut TurnScan, event: &Event) {
    let needs_data = matches!(
        event.event_type,
        EventType::TurnStart
            | EventType::StepStart
            | EventType::AssistantMessage
            | EventType::ToolCall
            | EventType::ToolResult
    );
    // The lenient scan never fails, and reads no payload of other types.
    if !needs_data {
        let _ = scan.observe(&event.event_type, Some(event.seq), None);
        return;
    }
    if event.is_data_parsed() {
        let _ = scan.observe(&event.event_type, Some(event.seq), Some(event.data()));
        return;
    }
    let parsed: Value = crate::data::parse_accepted(event.data_json());
    let _ = scan.observe(&event.event_type, Some(event.seq), Some(&parsed));
}

#[cfg(test)]
mod tests;
