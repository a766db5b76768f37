//! Seq remapping for a migration stage that changes the number of events (persistence §2.10:
//! "renumbers densely and remaps every declared same-session reference").
//!
//! A stage keeps some input events (each gets the next output seq), drops some (v0 chunk
//! events, consumed into an embedded stream) and inserts new ones (attempts, markers, system
//! prompts). [`SeqMap`] answers "which output seq does input seq `s` have now" for every
//! earlier input event, and [`remap_references`] rewrites every field that holds a same-session
//! seq: the envelope `sourceEventSeqs` and replace endpoints, `command/done.sourceEventSeq`,
//! `compaction/summary|prune` `shadowedRange`/`shadowedSeqs`, and `session/title(-llm-request)`
//! `messageSeqs` (session-core §3.2 notes).
//!
//! Invariant: the map stores one entry per *run* of kept or dropped input seqs (a change of
//! offset), not one per event, so its size grows with the number of model attempts, not with
//! the number of chunk events (16 bytes per run).

use serde_json::{Map, Value};

use crate::legacy::js_seq;

/// Why a reference could not be remapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmapped {
    /// The referenced event was consumed by the stage (a chunk embedded into a stream).
    Consumed,
    /// The reference is not to an earlier event of the input.
    NotEarlier,
    /// The value is not a seq at all (judged only by [`remap_references_strictly`]).
    NotASeq,
}

/// Input seq → output seq for one stage.
#[derive(Clone, Debug, Default)]
pub struct SeqMap {
    /// `(first input seq of a run, output - input)`, sorted by input seq; kept runs only.
    kept: Vec<(u64, i64)>,
    /// Inclusive dropped input ranges, sorted and coalesced.
    dropped: Vec<(u64, u64)>,
    /// The next input seq the stage expects (every smaller input seq was kept or dropped).
    next_input: u64,
}

impl SeqMap {
    /// Records that input seq `input` became output seq `output`.
    pub fn keep(&mut self, input: u64, output: u64) {
        let delta = output as i64 - input as i64;
        // Dropped seqs are answered from `dropped` first, so a run only ends when the offset does.
        if self.kept.last().is_none_or(|&(_, last)| last != delta) {
            self.kept.push((input, delta));
        }
        self.next_input = input + 1;
    }

    /// Records that input seq `input` has no output event of its own.
    pub fn drop_seq(&mut self, input: u64) {
        match self.dropped.last_mut() {
            Some((_, end)) if *end + 1 == input => *end = input,
            _ => self.dropped.push((input, input)),
        }
        self.next_input = input + 1;
    }

    /// The output seq of an earlier input event.
    pub fn map(&self, input: u64) -> Result<u64, Unmapped> {
        if input >= self.next_input {
            return Err(Unmapped::NotEarlier);
        }
        let dropped = self
            .dropped
            .partition_point(|&(start, _)| start <= input)
            .checked_sub(1)
            .is_some_and(|index| self.dropped[index].1 >= input);
        if dropped {
            return Err(Unmapped::Consumed);
        }
        let index = self
            .kept
            .partition_point(|&(start, _)| start <= input)
            .checked_sub(1)
            .ok_or(Unmapped::NotEarlier)?;
        let delta = self.kept[index].1;
        Ok((input as i64 + delta) as u64)
    }

    /// How many runs the map holds (its memory is 16 bytes per run).
    pub fn n_runs(&self) -> usize {
        self.kept.len() + self.dropped.len()
    }
}

/// A reference that could not be remapped: which field and which seq.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadReference {
    /// The field, e.g. `sourceEventSeqs` or `data.shadowedSeqs`.
    pub field: &'static str,
    /// The referenced input seq (0 when the value is not a seq).
    pub target: u64,
    /// The value as a template literal prints it (`undefined` when absent).
    pub shown: String,
    /// Why.
    pub reason: Unmapped,
}

/// Rewrites every same-session seq reference of one event through `map`.
///
/// Values that are not seqs (absent, `null`, strings) are left alone: the event rules, not the
/// migration, judge them. `replace_keys` names the replace endpoints as the input spells them.
pub fn remap_references(
    event: &mut Map<String, Value>,
    map: &SeqMap,
    replace_keys: (&str, &str),
) -> Result<(), BadReference> {
    remap(event, map, replace_keys, false)
}

/// [`remap_references`] as upstream's v1→v2 edge remaps: a present reference that is not a
/// seq, or a replace whose endpoint is absent, is unmapped too ([`Unmapped::NotASeq`]).
pub fn remap_references_strictly(
    event: &mut Map<String, Value>,
    map: &SeqMap,
    replace_keys: (&str, &str),
) -> Result<(), BadReference> {
    remap(event, map, replace_keys, true)
}

fn remap(
    event: &mut Map<String, Value>,
    map: &SeqMap,
    replace_keys: (&str, &str),
    strict: bool,
) -> Result<(), BadReference> {
    let remap_one = |value: &mut Value, field: &'static str| -> Result<(), BadReference> {
        match js_seq(value) {
            Some(input) => {
                let output = map.map(input).map_err(|reason| BadReference {
                    field,
                    target: input,
                    shown: crate::legacy::js::display(Some(value)),
                    reason,
                })?;
                *value = Value::from(output);
            }
            None if strict => {
                return Err(BadReference {
                    field,
                    target: 0,
                    shown: crate::legacy::js::display(Some(value)),
                    reason: Unmapped::NotASeq,
                })
            }
            None => {}
        }
        Ok(())
    };
    let remap_list = |value: Option<&mut Value>, field: &'static str| -> Result<(), BadReference> {
        if let Some(Value::Array(items)) = value {
            for item in items {
                remap_one(item, field)?;
            }
        }
        Ok(())
    };
    let absent = |field: &'static str| BadReference {
        field,
        target: 0,
        shown: "undefined".into(),
        reason: Unmapped::NotASeq,
    };
    remap_list(event.get_mut("sourceEventSeqs"), "sourceEventSeqs")?;
    match event.get_mut("surfaceOp") {
        Some(Value::Object(op)) => {
            for (key, field) in [
                (replace_keys.0, "surfaceOp start"),
                (replace_keys.1, "surfaceOp end"),
            ] {
                match op.get_mut(key) {
                    Some(value) => remap_one(value, field)?,
                    None if strict => return Err(absent(field)),
                    None => {}
                }
            }
        }
        // Upstream reads the endpoints of any surfaceOp but "append".
        Some(op) if strict && op.as_str() != Some("append") => {
            return Err(absent("surfaceOp start"))
        }
        _ => {}
    }
    let tag = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(Value::Object(data)) = event.get_mut("data") else {
        return Ok(());
    };
    match tag.as_str() {
        "command/done" => {
            if let Some(value) = data.get_mut("sourceEventSeq") {
                remap_one(value, "data.sourceEventSeq")?;
            }
        }
        "compaction/summary" | "compaction/prune" => {
            if let Some(Value::Object(range)) = data.get_mut("shadowedRange") {
                for (key, field) in [
                    ("start", "data.shadowedRange.start"),
                    ("end", "data.shadowedRange.end"),
                ] {
                    if let Some(value) = range.get_mut(key) {
                        remap_one(value, field)?;
                    }
                }
            }
            remap_list(data.get_mut("shadowedSeqs"), "data.shadowedSeqs")?;
        }
        "session/title" | "session/title-llm-request" => {
            remap_list(data.get_mut("messageSeqs"), "data.messageSeqs")?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests;
