//! Packed chunk rows: the v0/v1 storage form of a run of `assistant/chunk` deltas
//! (session-core §10.3, persistence §2.3).
//!
//! A v0/v1 writer may store three or more consecutive same-block deltas as one row
//! `{"type":"text-chunks"|"reasoning-chunks"|"tool-call-chunks","seq0","time0","data"}`. A row is
//! storage vocabulary, never a logical event: the reader expands it back to the exact
//! `assistant/chunk` events it stands for before any rule runs. Rows are validated strictly, in
//! upstream's check order and with upstream's messages (docs/v0-rules.md, "Packed chunk rows"):
//! a malformed row is corruption, never skipped.
//!
//! Invariants:
//! - Arithmetic is done in doubles, as upstream does: `(seq0 + members) - 1` and every running
//!   time sum must be safe integers as doubles (so `seq0 = 2^53 - 2` with three members passes).
//! - Expanded events have keys `type, seq, time, data` and `data` keys `turn, step, chunk`; a
//!   tool delta carries `name` only when the row has one.
//! - Any line whose `type` is not a row tag passes through untouched.

use serde_json::{Map, Value};

use super::js::{is_safe_integer, number, number_to_value};

/// The three row tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// `text-chunks`: `text-delta` members.
    Text,
    /// `reasoning-chunks`: `reasoning-delta` members.
    Reasoning,
    /// `tool-call-chunks`: `tool-call-delta` members.
    ToolCall,
}

impl RowKind {
    /// The row tag for a `type` value, if it is one.
    pub fn from_tag(tag: &str) -> Option<RowKind> {
        match tag {
            "text-chunks" => Some(RowKind::Text),
            "reasoning-chunks" => Some(RowKind::Reasoning),
            "tool-call-chunks" => Some(RowKind::ToolCall),
            _ => None,
        }
    }

    /// The row tag.
    pub fn tag(self) -> &'static str {
        match self {
            RowKind::Text => "text-chunks",
            RowKind::Reasoning => "reasoning-chunks",
            RowKind::ToolCall => "tool-call-chunks",
        }
    }

    /// The `chunk.type` of each expanded member.
    pub fn delta_type(self) -> &'static str {
        match self {
            RowKind::Text => "text-delta",
            RowKind::Reasoning => "reasoning-delta",
            RowKind::ToolCall => "tool-call-delta",
        }
    }

    fn members_key(self) -> &'static str {
        match self {
            RowKind::ToolCall => "args",
            _ => "texts",
        }
    }
}

/// A malformed packed row; the message is upstream's
/// (`malformed text-chunks storage row: dt length 1 does not match 3 members`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed {} storage row: {detail}", .kind.tag())]
pub struct RowError {
    /// Which row tag.
    pub kind: RowKind,
    /// Upstream's description of the failed check.
    pub detail: String,
}

/// A validated packed row, ready to expand.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedRow {
    kind: RowKind,
    seq0: f64,
    time0: f64,
    turn: Value,
    step: Value,
    index: Value,
    id: Option<Value>,
    name: Option<Value>,
    dt: Vec<f64>,
    members: Vec<Value>,
}

/// If `value` is a row-tagged record, validates it; `Ok(None)` for any other value.
pub fn decode_row(value: &Value) -> Result<Option<PackedRow>, RowError> {
    let Some(kind) = value
        .get("type")
        .and_then(Value::as_str)
        .and_then(RowKind::from_tag)
    else {
        return Ok(None);
    };
    // `value.get` only answers for objects, so `value` is an object here.
    let Value::Object(row) = value else {
        return Ok(None);
    };
    let fail = |detail: &str| RowError {
        kind,
        detail: detail.to_owned(),
    };
    if row.len() != 4
        || !["type", "seq0", "time0", "data"]
            .iter()
            .all(|key| row.contains_key(*key))
    {
        return Err(fail("envelope must be exactly {type, seq0, time0, data}"));
    }
    let seq0 = row
        .get("seq0")
        .and_then(number)
        .filter(|x| is_safe_integer(*x) && *x >= 0.0)
        .ok_or_else(|| fail("seq0 must be a non-negative safe integer"))?;
    let time0 = row
        .get("time0")
        .and_then(number)
        .filter(|x| is_safe_integer(*x))
        .ok_or_else(|| fail("time0 must be a safe integer"))?;
    let Some(Value::Object(data)) = row.get("data") else {
        return Err(fail("data must be an object"));
    };
    let members_key = kind.members_key();
    let exact = match kind {
        RowKind::ToolCall => {
            let base = ["turn", "step", "index", "id", "dt", "args"];
            let n_expected = if data.contains_key("name") { 7 } else { 6 };
            data.len() == n_expected && base.iter().all(|key| data.contains_key(*key))
        }
        _ => {
            data.len() == 5
                && ["turn", "step", "index", "dt", "texts"]
                    .iter()
                    .all(|key| data.contains_key(*key))
        }
    };
    if !exact {
        return Err(fail(match kind {
            RowKind::ToolCall => "data must be exactly {turn, step, index, id, name?, dt, args}",
            _ => "data must be exactly {turn, step, index, dt, texts}",
        }));
    }
    let (id, name) = if kind == RowKind::ToolCall {
        let id = data.get("id").cloned();
        let name = data.get("name").cloned();
        let strings =
            matches!(id, Some(Value::String(_))) && name.as_ref().is_none_or(Value::is_string);
        if !strings {
            return Err(fail("id (and name when present) must be strings"));
        }
        (id, name)
    } else {
        (None, None)
    };
    let field = |key: &str| data.get(key).cloned().unwrap_or(Value::Null);
    let (turn, step, index) = (field("turn"), field("step"), field("index"));
    if ![&turn, &step, &index].iter().all(|value| value.is_number()) {
        return Err(fail("turn/step/index must be numbers"));
    }
    let members = match data.get(members_key) {
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_string) => {
            items.clone()
        }
        _ => {
            return Err(fail(&format!(
                "{members_key} must be a non-empty string array"
            )))
        }
    };
    let dt: Vec<f64> = match data.get("dt") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| number(item).filter(|x| is_safe_integer(*x)))
            .collect::<Option<_>>()
            .ok_or_else(|| fail("dt must be an array of safe integers"))?,
        _ => return Err(fail("dt must be an array of safe integers")),
    };
    if dt.len() + 1 != members.len() {
        return Err(fail(&format!(
            "dt length {} does not match {} members",
            dt.len(),
            members.len()
        )));
    }
    if !is_safe_integer((seq0 + members.len() as f64) - 1.0) {
        return Err(fail("member seqs must stay safe integers"));
    }
    let mut time = time0;
    for gap in &dt {
        time += gap;
        if !is_safe_integer(time) {
            return Err(fail("member times must stay safe integers"));
        }
    }
    Ok(Some(PackedRow {
        kind,
        seq0,
        time0,
        turn,
        step,
        index,
        id,
        name,
        dt,
        members,
    }))
}

impl PackedRow {
    /// The row tag.
    pub fn kind(&self) -> RowKind {
        self.kind
    }

    /// How many events the row stands for.
    pub fn n_members(&self) -> usize {
        self.members.len()
    }

    /// The expanded `assistant/chunk` events, in seq order.
    pub fn expand(self) -> impl Iterator<Item = Value> {
        let PackedRow {
            kind,
            seq0,
            time0,
            turn,
            step,
            index,
            id,
            name,
            dt,
            members,
        } = self;
        let mut time = time0;
        members.into_iter().enumerate().map(move |(k, member)| {
            if k > 0 {
                time += dt[k - 1];
            }
            let mut chunk = Map::new();
            chunk.insert("type".into(), Value::from(kind.delta_type()));
            chunk.insert("index".into(), index.clone());
            match kind {
                RowKind::ToolCall => {
                    chunk.insert("id".into(), id.clone().unwrap_or(Value::Null));
                    if let Some(name) = &name {
                        chunk.insert("name".into(), name.clone());
                    }
                    chunk.insert("argumentsDelta".into(), member);
                }
                _ => {
                    chunk.insert("text".into(), member);
                }
            }
            let mut data = Map::new();
            data.insert("turn".into(), turn.clone());
            data.insert("step".into(), step.clone());
            data.insert("chunk".into(), Value::Object(chunk));
            let mut event = Map::new();
            event.insert("type".into(), Value::from("assistant/chunk"));
            event.insert("seq".into(), number_to_value(seq0 + k as f64));
            event.insert("time".into(), number_to_value(time));
            event.insert("data".into(), Value::Object(data));
            Value::Object(event)
        })
    }
}

/// The fewest members a packed row holds (`MIN_RUN`, a v0 format constant).
pub const MIN_RUN: usize = 3;

/// An eligible chunk event (persistence §2.3), with what decides whether runs continue.
#[derive(Clone, Copy)]
struct Packable<'a> {
    kind: RowKind,
    /// `turn`, `step`, `index`.
    block: [&'a Value; 3],
    id: Option<&'a Value>,
    name: Option<&'a Value>,
    member: &'a Value,
    seq: f64,
    time: f64,
}

impl Packable<'_> {
    /// Whether `next` continues a run that starts with `self` and last had `previous`.
    fn continued_by(&self, previous: &Packable<'_>, next: &Packable<'_>) -> bool {
        next.kind == self.kind
            && next.seq == previous.seq + 1.0
            && is_safe_integer(next.time - previous.time)
            && next.block == self.block
            && next.id == self.id
            && next.name == self.name
    }
}

/// The packing view of an event, when it has exactly the shape a row can hold.
fn packable(event: &Value) -> Option<Packable<'_>> {
    let Value::Object(map) = event else {
        return None;
    };
    let envelope =
        map.len() == 4 && map.get("type").and_then(Value::as_str) == Some("assistant/chunk");
    let seq = map
        .get("seq")
        .and_then(number)
        .filter(|x| is_safe_integer(*x))?;
    let time = map
        .get("time")
        .and_then(number)
        .filter(|x| is_safe_integer(*x))?;
    let Some(Value::Object(data)) = map.get("data") else {
        return None;
    };
    if !envelope || data.len() != 3 {
        return None;
    }
    let (turn, step) = (data.get("turn")?, data.get("step")?);
    let Some(Value::Object(chunk)) = data.get("chunk") else {
        return None;
    };
    if !turn.is_number() || !step.is_number() {
        return None;
    }
    let index = chunk.get("index").filter(|index| index.is_number())?;
    let kind = match chunk.get("type").and_then(Value::as_str)? {
        "text-delta" => RowKind::Text,
        "reasoning-delta" => RowKind::Reasoning,
        "tool-call-delta" => RowKind::ToolCall,
        _ => return None,
    };
    let (id, name, member) = match kind {
        RowKind::ToolCall => {
            let id = chunk.get("id").filter(|id| id.is_string())?;
            let name = chunk.get("name");
            let member = chunk
                .get("argumentsDelta")
                .filter(|text| text.is_string())?;
            let expected = if name.is_some() { 5 } else { 4 };
            if chunk.len() != expected || name.is_some_and(|name| !name.is_string()) {
                return None;
            }
            (Some(id), name, member)
        }
        _ => {
            let member = chunk.get("text").filter(|text| text.is_string())?;
            if chunk.len() != 3 {
                return None;
            }
            (None, None, member)
        }
    };
    Some(Packable {
        kind,
        block: [turn, step, index],
        id,
        name,
        member,
        seq,
        time,
    })
}

/// Packs a batch of events the way a v0/v1 writer does (persistence §2.3): every run of at
/// least [`MIN_RUN`] consecutive exact-shape deltas of one block becomes one row; everything
/// else stays an event. `expand_record` of each output gives back `events` exactly.
pub fn pack_records(events: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < events.len() {
        let Some(first) = packable(&events[start]) else {
            out.push(events[start].clone());
            start += 1;
            continue;
        };
        let mut end = start + 1;
        let mut previous = first;
        while let Some(next) = events.get(end).and_then(packable) {
            if !first.continued_by(&previous, &next) {
                break;
            }
            previous = next;
            end += 1;
        }
        if end - start < MIN_RUN {
            out.extend(events[start..end].iter().cloned());
            start = end;
            continue;
        }
        let run: Vec<_> = events[start..end].iter().filter_map(packable).collect();
        let mut data = Map::new();
        data.insert("turn".into(), first.block[0].clone());
        data.insert("step".into(), first.block[1].clone());
        data.insert("index".into(), first.block[2].clone());
        if let Some(id) = first.id {
            data.insert("id".into(), id.clone());
        }
        if let Some(name) = first.name {
            data.insert("name".into(), name.clone());
        }
        let dt: Vec<Value> = run
            .windows(2)
            .map(|pair| number_to_value(pair[1].time - pair[0].time))
            .collect();
        data.insert("dt".into(), Value::Array(dt));
        let members: Vec<Value> = run.iter().map(|member| member.member.clone()).collect();
        data.insert(first.kind.members_key().into(), Value::Array(members));
        let mut row = Map::new();
        row.insert("type".into(), Value::from(first.kind.tag()));
        row.insert("seq0".into(), number_to_value(first.seq));
        row.insert("time0".into(), number_to_value(first.time));
        row.insert("data".into(), Value::Object(data));
        out.push(Value::Object(row));
        start = end;
    }
    out
}

/// Expands one stored record: a packed row into its events, anything else into itself.
pub fn expand_record(value: Value) -> Result<Vec<Value>, RowError> {
    match decode_row(&value)? {
        Some(row) => Ok(row.expand().collect()),
        None => Ok(vec![value]),
    }
}

#[cfg(test)]
mod tests;
