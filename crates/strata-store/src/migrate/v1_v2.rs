//! The v1→v2 edge: token chunks move into the settlements they belong to (persistence §2.10,
//! session-core §4.6), and the header's numeric inherited cut becomes `isSeeded` plus a tagged
//! end-seed marker (§9.1).
//!
//! Chunk events are grouped per model attempt: consecutive `assistant/chunk` events of one
//! turn and step, ended by the `assistant/message` they settle, by a bracket event
//! (`turn/*`, `step/*`, `llm/retry*`, `session/end-seed`) or by chunks of another step. An
//! `assistant/message` takes the chunks it cites (all pending chunks of its step when it cites
//! none; none when it cites `[]`) as its embedded `stream`, and drops its `sourceEventSeqs`
//! (v2 forbids them on assistant messages). Chunks no message took become a log-only
//! `assistant/attempt {turn, step, stream}` placed where the attempt ended.
//!
//! Seqs are renumbered densely and every same-session reference is remapped; a retained
//! reference to a consumed chunk refuses the migration.
//!
//! Invariant: state is one attempt's chunks, the [`SeqMap`] (one entry per run) and a small
//! output queue, so memory does not grow with the log.

use std::collections::VecDeque;

use serde_json::{Map, Value};
use strata_core::json::json_equal;

use super::error::MigrateError;
use super::remap::{remap_references, SeqMap, Unmapped};
use super::stage::{StageContext, StageItem, Staged};
use super::stream::{embeddable, encode_stream};
use crate::legacy::{js_seq, js_time};

const EDGE: &str = "v1→v2";

/// Event types that close a pending attempt before they are written.
const ATTEMPT_BOUNDARIES: [&str; 7] = [
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "llm/retry",
    "llm/retry-started",
    "session/end-seed",
];

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
            seed_cut: seed_length,
            cut_done: false,
            n_input: 0,
            last_time: Value::from(0),
            out: VecDeque::new(),
            done: false,
        }
    }

    fn emit_inserted(&mut self, line: u64, event_type: &str, time: Value, data: Value) {
        let mut event = Map::new();
        event.insert("type".into(), Value::from(event_type));
        event.insert("seq".into(), Value::from(self.next_out));
        event.insert("time".into(), time);
        event.insert("data".into(), data);
        self.next_out += 1;
        self.out.push_back(Staged {
            line,
            source_seq: None,
            event,
        });
    }

    fn emit_kept(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        remap_references(&mut staged.event, &self.map, ("start", "end"))
            .map_err(|bad| self.reference_error(&staged, bad.field, bad.target, bad.reason))?;
        if let Some(input) = staged.seq() {
            self.map.keep(input, self.next_out);
        }
        staged
            .event
            .insert("seq".into(), Value::from(self.next_out));
        // v0 accepted any spelling of an integral time (`1e3`, `-0.0`); v2+ write integers.
        if let Some(time) = js_time(staged.event.get("time")) {
            staged.event.insert("time".into(), Value::from(time));
        }
        self.next_out += 1;
        self.out.push_back(staged);
        Ok(())
    }

    fn reference_error(
        &self,
        staged: &Staged,
        field: &'static str,
        target: u64,
        reason: Unmapped,
    ) -> MigrateError {
        MigrateError::Reference {
            at: self.context.at(staged),
            edge: EDGE,
            field,
            target,
            reason: match reason {
                Unmapped::Consumed => "it names a chunk consumed into an embedded stream",
                Unmapped::NotEarlier => "it does not name an earlier event",
            },
        }
    }

    /// Writes the pending chunks (all, or those not in `keep`) as one `assistant/attempt`.
    fn flush_attempt(&mut self, chunks: Vec<Staged>) {
        let Some(first) = chunks.first() else {
            return;
        };
        let line = chunks.last().map_or(first.line, |last| last.line);
        let data_of = |staged: &Staged, key: &str| {
            staged
                .event
                .get("data")
                .and_then(|data| data.get(key))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let (turn, step) = (data_of(first, "turn"), data_of(first, "step"));
        let time = chunks
            .last()
            .and_then(|last| last.event.get("time").cloned())
            .unwrap_or(Value::from(0));
        let events: Vec<Map<String, Value>> =
            chunks.into_iter().map(|staged| staged.event).collect();
        let mut data = Map::new();
        data.insert("turn".into(), turn);
        data.insert("step".into(), step);
        data.insert("stream".into(), Value::Array(encode_stream(&events)));
        self.emit_inserted(line, "assistant/attempt", time, Value::Object(data));
    }

    fn flush_pending(&mut self) {
        let chunks = std::mem::take(&mut self.pending);
        self.flush_attempt(chunks);
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

    fn on_message(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        // v2+ settlements carry turn and step as non-negative integers (session-core §4.5);
        // v0 never checked them.
        if let Some(Value::Object(data)) = staged.event.get_mut("data") {
            for key in ["turn", "step"] {
                match data.get(key).and_then(js_seq) {
                    Some(number) => {
                        data.insert(key.into(), Value::from(number));
                    }
                    None => {
                        return Err(MigrateError::Unsupported {
                            at: self.context.at(&staged),
                            edge: EDGE,
                            detail: format!(
                                "assistant/message {key} is not a non-negative integer, which v2 settlements require"
                            ),
                        })
                    }
                }
            }
        }
        if matches!(staged.event.get("surfaceOp"), Some(Value::Object(_))) {
            return Err(MigrateError::Unsupported {
                at: self.context.at(&staged),
                edge: EDGE,
                detail: "an assistant/message replace must cite what it shadows, and v2 forbids \
                         sourceEventSeqs on assistant messages"
                    .into(),
            });
        }
        let key = Self::step_key(&staged);
        let pending_key = self.pending.first().map(Self::step_key);
        let cited: Option<Vec<u64>> = match staged.event.get("sourceEventSeqs") {
            Some(Value::Array(items)) => Some(items.iter().filter_map(js_seq).collect()),
            _ => None,
        };
        let pending = std::mem::take(&mut self.pending);
        let (stream, rest): (Vec<Staged>, Vec<Staged>) = match &cited {
            Some(list) if !list.is_empty() => pending
                .into_iter()
                .partition(|chunk| chunk.seq().is_some_and(|seq| list.contains(&seq))),
            Some(_) => (Vec::new(), pending),
            None if pending_key.is_some_and(|pending_key| Self::same_step(&pending_key, &key)) => {
                (pending, Vec::new())
            }
            None => (Vec::new(), pending),
        };
        self.flush_attempt(rest);
        staged.event.shift_remove("sourceEventSeqs");
        let events: Vec<Map<String, Value>> = stream.into_iter().map(|chunk| chunk.event).collect();
        let records = Value::Array(encode_stream(&events));
        if let Some(Value::Object(data)) = staged.event.get_mut("data") {
            insert_after(data, "message", "stream", records);
        }
        self.emit_kept(staged)
    }

    fn on_event(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        self.n_input += 1;
        if let Some(time) = staged.event.get("time") {
            self.last_time = time.clone();
        }
        let input_seq = staged.seq();
        if let (Some(cut), false) = (self.seed_cut, self.cut_done) {
            if input_seq == Some(cut) {
                self.cut_done = true;
                if staged.event_type() == "session/end-seed" {
                    self.flush_pending();
                    staged
                        .event
                        .insert("data".into(), serde_json::json!({"inherited": true}));
                    return self.emit_kept(staged);
                }
                self.flush_pending();
                let time = staged.event.get("time").cloned().unwrap_or(Value::from(0));
                self.emit_inserted(
                    staged.line,
                    "session/end-seed",
                    time,
                    serde_json::json!({"inherited": true}),
                );
            }
        }
        match staged.event_type() {
            "assistant/chunk" => {
                embeddable(&staged.event).map_err(|detail| MigrateError::Unsupported {
                    at: self.context.at(&staged),
                    edge: EDGE,
                    detail,
                })?;
                let key = Self::step_key(&staged);
                if self
                    .pending
                    .first()
                    .is_some_and(|first| !Self::same_step(&Self::step_key(first), &key))
                {
                    self.flush_pending();
                }
                if let Some(input) = input_seq {
                    self.map.drop_seq(input);
                }
                self.pending.push(staged);
                Ok(())
            }
            "assistant/message" => self.on_message(staged),
            tag => {
                if ATTEMPT_BOUNDARIES.contains(&tag) {
                    self.flush_pending();
                }
                if tag == "session/end-seed" {
                    if let Some(Value::Object(data)) = staged.event.get_mut("data") {
                        data.shift_remove("inherited");
                    }
                }
                self.emit_kept(staged)
            }
        }
    }

    fn finish(&mut self) -> Result<(), MigrateError> {
        self.flush_pending();
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
            self.emit_inserted(
                0,
                "session/end-seed",
                time,
                serde_json::json!({"inherited": true}),
            );
        }
        Ok(())
    }
}

/// Inserts `key: value` right after `after` (or at the end when `after` is missing).
pub(crate) fn insert_after(map: &mut Map<String, Value>, after: &str, key: &str, value: Value) {
    map.shift_remove(key);
    match map.keys().position(|existing| existing == after) {
        Some(position) => {
            map.shift_insert(position + 1, key.to_owned(), value);
        }
        None => {
            map.insert(key.to_owned(), value);
        }
    }
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
