//! The v1→v2 edge, as upstream's released chain writes it (docs/migration.md, "v1 → v2"): token
//! chunks move into the settlements they belong to, and the header's numeric inherited cut
//! becomes `isSeeded` plus a tagged end-seed marker.
//!
//! One *pending attempt* is kept: the `assistant/chunk` events of one (turn, step) model
//! attempt, whether a `finish` chunk made it terminal, and the events that arrived after its
//! chunks (buffered, emitted after the attempt settles, in order). A chunk of another step or
//! after a terminal attempt settles it; `turn/end`, `step/end`, `llm/retry` and
//! `llm/retry-started` settle it before they are written. An `assistant/message` citing
//! exactly the pending chunks, in order, takes them as its `stream` (appended as the last data
//! key) and drops `sourceEventSeqs`; one citing `[]` or of another step leaves the attempt to
//! settle alone; other citations, or none while an attempt of its step is pending, refuse. An
//! attempt no message took becomes a log-only `assistant/attempt {turn, step, stream}` with its
//! last chunk's time, written before the buffered events.
//!
//! Also: a `turn/start` while a turn is open refuses, except the legacy interrupted restart
//! (a `turn/start` for the next turn right after an `agent/inbox/spliced` to the next turn,
//! no step open), which gets a synthesized `turn/end {reason: interrupted}` before it; a goal
//! message carrying `source.change` becomes a `goal/change` plus the message with a plugin
//! `goal` source.
//!
//! Seqs are renumbered densely and every same-session reference is remapped; a retained
//! reference to a consumed chunk refuses the migration.
//!
//! Invariant: state is one attempt (its chunks and buffered events), the open turn and step,
//! the [`SeqMap`] (one entry per run) and a small output queue, so memory does not grow with
//! the log.

use std::collections::VecDeque;

use serde_json::{Map, Value};
use strata_core::json::json_equal;

use super::error::MigrateError;
use super::payload_audit::{self, AuditError};
use super::refusal::Refusal;
use super::remap::{remap_references_strictly, BadReference, SeqMap};
use super::stage::{StageContext, StageItem, Staged};
use super::stream::{embeddable, encode_stream};
use crate::legacy::{js_seq, js_time};

const EDGE: &str = "v1→v2";

/// The v2 header: `isSeeded` (from `seedLength`) replaces the numeric cut; keys in the
/// V3 physical order.
pub fn header(v1: &Map<String, Value>) -> Map<String, Value> {
    let mut header = Map::new();
    header.insert("version".into(), Value::from(2));
    // v0 read header numbers as doubles (`-0`, `1e3`); v2 writes them as integers.
    let number = |key: &str, default: Value| match v1.get(key) {
        Some(value) => js_seq(value).map_or_else(|| value.clone(), Value::from),
        None => default,
    };
    header.insert("id".into(), v1.get("id").cloned().unwrap_or(Value::Null));
    header.insert("createdAt".into(), number("createdAt", Value::Null));
    header.insert(
        "isSeeded".into(),
        Value::Bool(v1.contains_key("seedLength")),
    );
    header.insert(
        "delegationDepth".into(),
        number("delegationDepth", Value::from(0)),
    );
    for key in ["cwd", "parentSession", "origin", "agentPreset"] {
        if let Some(value) = v1.get(key) {
            header.insert(key.into(), value.clone());
        }
    }
    header
}

/// The seed cut a v1 header names.
pub fn seed_length(v1: &Map<String, Value>) -> Option<u64> {
    v1.get("seedLength").and_then(js_seq)
}

/// The v1→v2 edge over a stream of v1 events.
pub struct V1ToV2<I> {
    input: I,
    context: StageContext,
    map: SeqMap,
    next_out: u64,
    /// The chunk events of the attempt in progress, with their source provenance.
    pending: Vec<Staged>,
    /// Whether a `finish` chunk ended the pending attempt.
    terminal: bool,
    /// Events that arrived after the pending attempt's chunks.
    buffered: Vec<Staged>,
    /// The open turn's number and whether a step is open.
    open_turn: Option<Value>,
    open_step: bool,
    /// Whether the previous event was an `agent/inbox/spliced` to the next turn that inserted
    /// messages.
    after_next_turn_splice: bool,
    /// The inherited cut (`seedLength`) and whether its marker has been written.
    seed_cut: Option<u64>,
    cut_done: bool,
    n_input: u64,
    last_time: Value,
    out: VecDeque<Staged>,
    done: bool,
}

impl<I: Iterator<Item = StageItem>> V1ToV2<I> {
    /// Wraps a stream of v1 events whose header had `seed_length` (`seedLength`).
    pub fn new(input: I, context: StageContext, seed_length: Option<u64>) -> V1ToV2<I> {
        V1ToV2 {
            input,
            context,
            map: SeqMap::default(),
            next_out: 0,
            pending: Vec::new(),
            terminal: false,
            buffered: Vec::new(),
            open_turn: None,
            open_step: false,
            after_next_turn_splice: false,
            seed_cut: seed_length,
            cut_done: false,
            n_input: 0,
            last_time: Value::from(0),
            out: VecDeque::new(),
            done: false,
        }
    }

    /// Writes the inherited-cut marker before the first event whose origin reaches the cut
    /// (or tags the source's own marker at the cut).
    fn cut_before(&mut self, origin: u64, event: &mut Map<String, Value>, source_seq: Option<u64>) {
        let Some(cut) = self.seed_cut else {
            return;
        };
        if self.cut_done || origin < cut {
            return;
        }
        self.cut_done = true;
        if event.get("type").and_then(Value::as_str) == Some("session/end-seed")
            && source_seq == Some(cut)
        {
            event.insert("data".into(), serde_json::json!({"inherited": true}));
            return;
        }
        let time = event.get("time").cloned().unwrap_or(Value::from(0));
        let mut marker = Map::new();
        marker.insert("type".into(), Value::from("session/end-seed"));
        marker.insert("seq".into(), Value::from(self.next_out));
        marker.insert("time".into(), time);
        marker.insert("data".into(), serde_json::json!({"inherited": true}));
        self.next_out += 1;
        self.out.push_back(Staged {
            line: 0,
            source_seq: None,
            event: marker,
        });
    }

    fn emit_inserted(
        &mut self,
        line: u64,
        origin: u64,
        event_type: &str,
        time: Value,
        data: Value,
    ) {
        let mut event = Map::new();
        event.insert("type".into(), Value::from(event_type));
        event.insert("seq".into(), Value::Null);
        event.insert("time".into(), time);
        event.insert("data".into(), data);
        self.cut_before(origin, &mut event, None);
        event.insert("seq".into(), Value::from(self.next_out));
        self.next_out += 1;
        self.out.push_back(Staged {
            line,
            source_seq: None,
            event,
        });
    }

    fn emit_kept(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        // Upstream maps an event's own seq before its references: a self-reference maps (and
        // is left for the artifact's rules to judge).
        let input = staged.seq();
        if let Some(input) = input {
            self.map.keep(input, self.next_out);
        }
        remap_references_strictly(&mut staged.event, &self.map, ("start", "end"))
            .map_err(|bad| self.reference_error(&staged, &bad))?;
        if let Some(origin) = input {
            self.cut_before(origin, &mut staged.event, staged.source_seq);
        }
        staged
            .event
            .insert("seq".into(), Value::from(self.next_out));
        // v0 accepted any spelling of an integral time (`1e3`, `-0.0`); v2+ write integers.
        // `-0` stays: upstream's artifact check refuses it (`time must be a safe integer`).
        let negative_zero = staged
            .event
            .get("time")
            .and_then(Value::as_f64)
            .is_some_and(|time| time == 0.0 && time.is_sign_negative());
        if let Some(time) = js_time(staged.event.get("time")).filter(|_| !negative_zero) {
            staged.event.insert("time".into(), Value::from(time));
        }
        self.next_out += 1;
        staged.event = envelope_order(std::mem::take(&mut staged.event));
        self.out.push_back(staged);
        Ok(())
    }

    /// Upstream's refusal of a reference the edge cannot map (a chunk it consumed, a later
    /// event, a value that is not a seq): `<type> <seq> <field> targets consumed
    /// assistant/chunk <value>`.
    fn reference_error(&self, staged: &Staged, bad: &BadReference) -> MigrateError {
        let field = match bad.field {
            "sourceEventSeqs" => "sources",
            "surfaceOp start" => "surface start",
            "surfaceOp end" => "surface end",
            "data.sourceEventSeq" => "sourceEventSeq",
            "data.shadowedRange.start" => "shadowedRange start",
            "data.shadowedRange.end" => "shadowedRange end",
            "data.shadowedSeqs" => "shadowedSeqs",
            "data.messageSeqs" => "messageSeqs",
            other => other,
        };
        let seq = crate::legacy::js::display(staged.event.get("seq"));
        MigrateError::Refused {
            at: self.context.at(staged),
            refusal: Refusal::UnmappedReference,
            text: format!(
                "{} {seq} {field} targets consumed assistant/chunk {}",
                staged.event_type(),
                bad.shown
            ),
        }
    }

    /// Writes chunks no message took as one log-only `assistant/attempt`.
    fn flush_attempt(&mut self, chunks: Vec<Staged>) {
        let (Some(first), Some(last)) = (chunks.first(), chunks.last()) else {
            return;
        };
        let (turn, step) = Self::step_key(first);
        let time = last.event.get("time").cloned().unwrap_or(Value::from(0));
        let (line, origin) = (last.line, last.seq().unwrap_or(0));
        let events: Vec<Map<String, Value>> =
            chunks.into_iter().map(|staged| staged.event).collect();
        let mut data = Map::new();
        data.insert("turn".into(), turn);
        data.insert("step".into(), step);
        data.insert("stream".into(), Value::Array(encode_stream(&events)));
        self.emit_inserted(line, origin, "assistant/attempt", time, Value::Object(data));
    }

    /// Emits the events buffered behind the pending attempt, in order.
    fn flush_buffered(&mut self) -> Result<(), MigrateError> {
        for staged in std::mem::take(&mut self.buffered) {
            self.emit_kept(staged)?;
        }
        Ok(())
    }

    /// Settles the pending attempt no message took: the attempt, then its buffered events.
    fn settle(&mut self) -> Result<(), MigrateError> {
        let chunks = std::mem::take(&mut self.pending);
        self.terminal = false;
        self.flush_attempt(chunks);
        self.flush_buffered()
    }

    fn step_key(staged: &Staged) -> (Value, Value) {
        let data = staged.event.get("data");
        let field = |key: &str| {
            data.and_then(|data| data.get(key))
                .cloned()
                .unwrap_or(Value::Null)
        };
        (field("turn"), field("step"))
    }

    fn same_step(a: &(Value, Value), b: &(Value, Value)) -> bool {
        json_equal(&a.0, &b.0) && json_equal(&a.1, &b.1)
    }

    fn refuse(&self, staged: &Staged, refusal: Refusal, text: String) -> MigrateError {
        MigrateError::Refused {
            at: self.context.at(staged),
            refusal,
            text,
        }
    }

    fn on_message(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        let seq = staged.seq().unwrap_or(0);
        let key = Self::step_key(&staged);
        let pending_key = self.pending.first().map(Self::step_key);
        let cited: Option<Vec<Option<u64>>> = match staged.event.get("sourceEventSeqs") {
            Some(Value::Array(items)) => Some(items.iter().map(js_seq).collect()),
            Some(_) => Some(vec![None]),
            None => None,
        };
        let mut stream = Vec::new();
        match (&pending_key, &cited) {
            (Some(pending), _) if !Self::same_step(pending, &key) => self.settle()?,
            (Some(_), None) => {
                return Err(self.refuse(
                    &staged,
                    Refusal::MessageOmitsAttempt,
                    format!("assistant/message {seq} does not cite its complete v1 chunk attempt"),
                ))
            }
            (None, None) => {}
            (_, Some(list)) if list.is_empty() => self.settle()?,
            (_, Some(list)) => {
                let matches = list.len() == self.pending.len()
                    && list
                        .iter()
                        .zip(&self.pending)
                        .all(|(cited, chunk)| cited.is_some() && *cited == chunk.seq());
                if !matches {
                    return Err(self.refuse(
                        &staged,
                        Refusal::MessageProvenanceNotAttempt,
                        format!(
                            "assistant/message {seq} chunk provenance is not one complete ordered attempt"
                        ),
                    ));
                }
                self.terminal = false;
                stream = std::mem::take(&mut self.pending);
                self.flush_buffered()?;
            }
        }
        staged.event.shift_remove("sourceEventSeqs");
        let events: Vec<Map<String, Value>> = stream.into_iter().map(|chunk| chunk.event).collect();
        let records = Value::Array(encode_stream(&events));
        if let Some(Value::Object(data)) = staged.event.get_mut("data") {
            data.shift_remove("stream");
            data.insert("stream".into(), records);
        }
        self.emit_kept(staged)
    }

    fn on_chunk(&mut self, staged: Staged) -> Result<(), MigrateError> {
        embeddable(&staged.event).map_err(|detail| MigrateError::Unsupported {
            at: self.context.at(&staged),
            edge: EDGE,
            detail,
        })?;
        let key = Self::step_key(&staged);
        let other_step = self
            .pending
            .first()
            .is_some_and(|first| !Self::same_step(&Self::step_key(first), &key));
        if self.terminal || other_step {
            self.settle()?;
        } else {
            self.flush_buffered()?;
        }
        let input = staged.seq();
        if let (Some(cut), Some(first), Some(seq)) = (
            self.seed_cut,
            self.pending.first().and_then(Staged::seq),
            input,
        ) {
            if first < cut && seq >= cut {
                return Err(self.refuse(
                    &staged,
                    Refusal::CutSplitsAttempt,
                    format!("inherited Session cut {cut} splits one Assistant attempt"),
                ));
            }
        }
        if let Some(input) = input {
            self.map.drop_seq(input);
        }
        let finish = staged
            .event
            .get("data")
            .and_then(|data| data.get("chunk"))
            .and_then(|chunk| chunk.get("type"))
            .and_then(Value::as_str)
            == Some("finish");
        self.pending.push(staged);
        if finish {
            self.terminal = true;
        }
        Ok(())
    }

    /// The legacy interrupted restart and the refusal of a `turn/start` that does not close the
    /// prior turn.
    fn on_turn_start(&mut self, staged: &Staged) -> Result<(), MigrateError> {
        let turn = staged
            .event
            .get("data")
            .and_then(|data| data.get("turn"))
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(open) = self.open_turn.clone() {
            let next = open
                .as_u64()
                .zip(turn.as_u64())
                .is_some_and(|(open, turn)| turn == open + 1);
            if !(next && !self.open_step && self.after_next_turn_splice) {
                return Err(self.refuse(
                    staged,
                    Refusal::TurnStartWithoutClose,
                    format!(
                        "turn/start {} does not close the prior turn",
                        strata_core::json::to_js_string(&turn)
                    ),
                ));
            }
            if !self.pending.is_empty() {
                self.settle()?;
            }
            let time = staged.event.get("time").cloned().unwrap_or(Value::from(0));
            self.emit_inserted(
                staged.line,
                staged.seq().unwrap_or(0),
                "turn/end",
                time,
                serde_json::json!({"turn": open, "reason": {"kind": "interrupted"}}),
            );
        }
        self.open_turn = Some(turn);
        self.open_step = false;
        Ok(())
    }

    fn on_event(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        self.n_input += 1;
        if let Some(time) = staged.event.get("time") {
            self.last_time = time.clone();
        }
        let tag = staged.event_type().to_owned();
        let after_splice = std::mem::take(&mut self.after_next_turn_splice);
        match tag.as_str() {
            "turn/start" => {
                self.after_next_turn_splice = after_splice;
                self.on_turn_start(&staged)?;
                self.after_next_turn_splice = false;
            }
            "turn/end" => {
                self.open_turn = None;
                self.open_step = false;
            }
            "step/start" => self.open_step = true,
            "step/end" => self.open_step = false,
            "agent/inbox/spliced" => {
                let data = staged.event.get("data");
                self.after_next_turn_splice = data
                    .and_then(|data| data.get("target"))
                    .and_then(Value::as_str)
                    == Some("next-turn")
                    && data
                        .and_then(|data| data.get("inserted"))
                        .and_then(Value::as_array)
                        .is_some_and(|inserted| !inserted.is_empty());
            }
            "session/end-seed" => {
                if let Some(Value::Object(data)) = staged.event.get_mut("data") {
                    data.shift_remove("inherited");
                }
            }
            _ => {}
        }
        match tag.as_str() {
            "assistant/chunk" => return self.on_chunk(staged),
            "assistant/message" => return self.on_message(staged),
            "turn/end" | "step/end" | "llm/retry" | "llm/retry-started" => {
                self.settle()?;
                return self.emit_kept(staged);
            }
            _ => {}
        }
        let goal = split_goal(&mut staged);
        let pending = !self.pending.is_empty();
        if let Some(change) = goal {
            let time = staged.event.get("time").cloned().unwrap_or(Value::from(0));
            let mut event = Map::new();
            event.insert("type".into(), Value::from("goal/change"));
            event.insert("seq".into(), Value::Null);
            event.insert("time".into(), time);
            event.insert("data".into(), change);
            let generated = Staged {
                line: staged.line,
                source_seq: None,
                event,
            };
            if pending {
                self.buffered.push(generated);
            } else {
                self.emit_generated(generated, staged.seq().unwrap_or(0));
            }
        }
        if pending {
            self.buffered.push(staged);
            Ok(())
        } else {
            self.emit_kept(staged)
        }
    }

    /// Emits a generated event that sits in the output like a kept one (no input seq).
    fn emit_generated(&mut self, staged: Staged, origin: u64) {
        let Staged { line, event, .. } = staged;
        let time = event.get("time").cloned().unwrap_or(Value::from(0));
        let data = event.get("data").cloned().unwrap_or(Value::Null);
        let tag = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.emit_inserted(line, origin, &tag, time, data);
    }

    fn finish(&mut self) -> Result<(), MigrateError> {
        self.settle()?;
        if let (Some(cut), false) = (self.seed_cut, self.cut_done) {
            if cut != self.n_input {
                return Err(MigrateError::Unsupported {
                    at: crate::legacy::At {
                        file: self.context.file.to_string(),
                        generation: self.context.source_generation,
                        line: 1,
                        seq: None,
                    },
                    edge: EDGE,
                    detail: format!(
                        "header seedLength {cut} exceeds the log's {} events",
                        self.n_input
                    ),
                });
            }
            self.cut_done = true;
            let time = self.last_time.clone();
            let origin = self.n_input;
            self.emit_inserted(
                0,
                origin,
                "session/end-seed",
                time,
                serde_json::json!({"inherited": true}),
            );
        }
        Ok(())
    }
}

/// The legacy goal split: a `user/message` whose goal source carries `change` loses it (its
/// source becomes the plugin `goal`); the change is returned as the `goal/change` data.
fn split_goal(staged: &mut Staged) -> Option<Value> {
    if staged.event_type() != "user/message" {
        return None;
    }
    let Some(Value::Object(data)) = staged.event.get_mut("data") else {
        return None;
    };
    let Some(Value::Object(source)) = data.get("source") else {
        return None;
    };
    if source.get("kind").and_then(Value::as_str) != Some("goal") {
        return None;
    }
    let change = source.get("change")?.clone();
    data.insert(
        "source".into(),
        serde_json::json!({"kind": "plugin", "plugin": "goal"}),
    );
    Some(change)
}

/// The envelope key order upstream's v1→v2 edge writes: type, seq, time, data, ignorable,
/// sourceEventSeqs, surfaceOp (any other key after them, in its order).
fn envelope_order(mut event: Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for key in crate::legacy::released_rows::V2_ENVELOPE_KEYS {
        if let Some(value) = event.shift_remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(event);
    ordered
}

/// What upstream's v1→v2 edge checks of an event read from a v1 file before it transforms it
/// (docs/migration.md, "v1 → v2"): the payload audit at version 1 for a known type other than
/// `assistant/chunk`, then the closed vocabulary. A v0 source's events were audited by the
/// v0→v1 edge.
pub fn audit_decoded(context: &StageContext, staged: Staged) -> StageItem {
    let tag = staged.event_type();
    let seq = staged.source_seq.unwrap_or_default();
    let refuse = |refusal, text| MigrateError::Refused {
        at: context.at(&staged),
        refusal,
        text,
    };
    if !payload_audit::is_known(tag) {
        let shown = payload_audit::shown_type(staged.event.get("type"));
        let seq = crate::legacy::js::display(staged.event.get("seq"));
        return Err(refuse(
            Refusal::UnknownHistoricalType,
            format!("format v1 contains unknown event type {shown} at seq {seq}"),
        ));
    }
    if tag != "assistant/chunk" {
        match payload_audit::audit(tag, seq, staged.event.get("data"), 1) {
            Ok(()) => {}
            Err(AuditError::Rule(text)) => return Err(refuse(Refusal::PayloadShape, text)),
            // The inventory was checked above; other descriptor versions pass at v1.
            Err(AuditError::UnknownType | AuditError::DescriptorVersion(_)) => {}
        }
    }
    Ok(staged)
}

impl<I: Iterator<Item = StageItem>> Iterator for V1ToV2<I> {
    type Item = StageItem;

    fn next(&mut self) -> Option<StageItem> {
        loop {
            if let Some(staged) = self.out.pop_front() {
                return Some(Ok(staged));
            }
            if self.done {
                return None;
            }
            let step = match self.input.next() {
                Some(Ok(staged)) => self.on_event(staged),
                Some(Err(error)) => Err(error),
                None => {
                    self.done = true;
                    self.finish()
                }
            };
            if let Err(error) = step {
                self.done = true;
                self.out.clear();
                return Some(Err(error));
            }
        }
    }
}
