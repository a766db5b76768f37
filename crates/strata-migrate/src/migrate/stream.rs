//! Embedding one model attempt's `assistant/chunk` events as `AssistantStreamRecord`s
//! (session-core §4.6): the v1→v2 edge's compact, lossless stream encoding.
//!
//! Consecutive deltas of the same kind and block index (tool deltas also the same call id and
//! name) become one `text-chunks` / `reasoning-chunks` / `tool-call-chunks` record
//! `{type, time0, index, dt[], texts[]|id, name?, args[]}`; every other chunk (block-start,
//! block-end, usage, finish, a delta with unusual keys) becomes `{type:"chunk", time, chunk}`.
//! Member `k`'s time is `time0 + dt[0] + … + dt[k-1]`, so every chunk and its time survive.
//!
//! Invariant: the encoding is lossless for chunk events of the exact shape v0 writers produce
//! (`{type, seq, time, data:{turn, step, chunk}}`); any other shape is refused by the caller
//! ([`embeddable`]) instead of being silently trimmed.

use serde_json::{Map, Value};

use crate::legacy::js_time;

/// Why a chunk event cannot be embedded without losing something.
pub fn embeddable(event: &Map<String, Value>) -> Result<(), String> {
    let envelope_ok = event.len() == 4
        && ["type", "seq", "time", "data"]
            .iter()
            .all(|key| event.contains_key(*key));
    if !envelope_ok {
        return Err("chunk event carries envelope keys beyond {type, seq, time, data}".into());
    }
    if js_time(event.get("time")).is_none() {
        return Err("chunk event time is not a safe integer".into());
    }
    match event.get("data") {
        Some(Value::Object(data))
            if data.len() == 3
                && ["turn", "step", "chunk"]
                    .iter()
                    .all(|key| data.contains_key(*key)) =>
        {
            Ok(())
        }
        _ => Err("chunk event data is not exactly {turn, step, chunk}".into()),
    }
}

/// The merge key of a compactable delta: record type, block index, and for tool deltas the
/// call id and name (`None` = no name key).
#[derive(Clone, Debug, PartialEq)]
struct RunKey {
    record: &'static str,
    index: Value,
    id: Option<Value>,
    name: Option<Option<Value>>,
}

/// The run a chunk could join, with its member, or `None` for a raw `chunk` record.
fn classify(chunk: &Value) -> Option<(RunKey, Value)> {
    let Value::Object(chunk) = chunk else {
        return None;
    };
    let text_like = |record: &'static str| -> Option<(RunKey, Value)> {
        let exact = chunk.len() == 3 && chunk.contains_key("type");
        let index = chunk.get("index").filter(|index| index.is_number())?;
        let text = chunk.get("text").filter(|text| text.is_string())?;
        exact.then(|| {
            (
                RunKey {
                    record,
                    index: index.clone(),
                    id: None,
                    name: None,
                },
                text.clone(),
            )
        })
    };
    match chunk.get("type").and_then(Value::as_str)? {
        "text-delta" => text_like("text-chunks"),
        "reasoning-delta" => text_like("reasoning-chunks"),
        "tool-call-delta" => {
            let index = chunk.get("index").filter(|index| index.is_number())?;
            let id = chunk.get("id").filter(|id| id.is_string())?;
            let args = chunk
                .get("argumentsDelta")
                .filter(|args| args.is_string())?;
            let name = chunk.get("name");
            if name.is_some_and(|name| !name.is_string()) {
                return None;
            }
            let expected = if name.is_some() { 5 } else { 4 };
            (chunk.len() == expected).then(|| {
                (
                    RunKey {
                        record: "tool-call-chunks",
                        index: index.clone(),
                        id: Some(id.clone()),
                        name: Some(name.cloned()),
                    },
                    args.clone(),
                )
            })
        }
        _ => None,
    }
}

struct Run {
    key: RunKey,
    time0: i64,
    last_time: i64,
    dt: Vec<Value>,
    members: Vec<Value>,
}

impl Run {
    fn into_record(self) -> Value {
        let mut record = Map::new();
        record.insert("type".into(), Value::from(self.key.record));
        record.insert("time0".into(), Value::from(self.time0));
        record.insert("index".into(), self.key.index);
        record.insert("dt".into(), Value::Array(self.dt));
        match self.key.id {
            Some(id) => {
                record.insert("id".into(), id);
                if let Some(Some(name)) = self.key.name {
                    record.insert("name".into(), name);
                }
                record.insert("args".into(), Value::Array(self.members));
            }
            None => {
                record.insert("texts".into(), Value::Array(self.members));
            }
        }
        Value::Object(record)
    }
}

/// Encodes the chunk events of one attempt (already checked with [`embeddable`]) as stream
/// records.
pub fn encode_stream(chunks: &[Map<String, Value>]) -> Vec<Value> {
    let mut records = Vec::new();
    let mut run: Option<Run> = None;
    for event in chunks {
        let time = js_time(event.get("time")).unwrap_or(0);
        let chunk = event
            .get("data")
            .and_then(|data| data.get("chunk"))
            .cloned()
            .unwrap_or(Value::Null);
        match classify(&chunk) {
            Some((key, member)) => {
                if let Some(current) = &mut run {
                    let gap = i128::from(time) - i128::from(current.last_time);
                    let safe = gap.unsigned_abs() <= 9_007_199_254_740_991;
                    if current.key == key && safe {
                        current.dt.push(Value::from(gap as i64));
                        current.members.push(member);
                        current.last_time = time;
                        continue;
                    }
                }
                if let Some(done) = run.take() {
                    records.push(done.into_record());
                }
                run = Some(Run {
                    key,
                    time0: time,
                    last_time: time,
                    dt: Vec::new(),
                    members: vec![member],
                });
            }
            None => {
                if let Some(done) = run.take() {
                    records.push(done.into_record());
                }
                let mut record = Map::new();
                record.insert("type".into(), Value::from("chunk"));
                record.insert("time".into(), Value::from(time));
                record.insert("chunk".into(), chunk);
                records.push(Value::Object(record));
            }
        }
    }
    if let Some(done) = run.take() {
        records.push(done.into_record());
    }
    records
}

#[cfg(test)]
mod tests;
