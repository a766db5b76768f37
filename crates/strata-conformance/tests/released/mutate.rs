//! Single-mutation corpora: each case is one base log with one change — an event dropped,
//! duplicated, swapped with its neighbour or moved across a turn/step boundary (the log then
//! renumbered and its seq references remapped, so the change is the move itself), a seq
//! renumbered, an id changed (call ids, message ids, compaction ids, retry ids, command ids),
//! a turn or step number changed, a replacement's endpoints or sources changed, a shadowed span
//! changed, `ignorable` flipped, a type renamed to one no vocabulary knows, or the log cut
//! short.

use std::path::Path;

use serde_json::{Map, Value};
use strata_format::{decode_source_seqs, encode_source_seqs};

use crate::corpus::Base;
use crate::rng::Rng;

/// Every mutation kind, in the order the summary table lists them.
pub const KINDS: &[&str] = &[
    "unchanged",
    "drop",
    "drop-gap",
    "duplicate",
    "swap-adjacent",
    "move-across-boundary",
    "renumber-seq",
    "change-call-id",
    "change-message-id",
    "change-compaction-id",
    "change-retry-id",
    "change-command-id",
    "change-turn",
    "change-step",
    "surfaceop-endpoint",
    "surfaceop-to-append",
    "surfaceop-to-replace",
    "source-seqs",
    "shadowed-seqs",
    "flip-ignorable",
    "unknown-type",
    "truncate",
];

/// One mutated log.
#[derive(Clone, Debug)]
pub struct Case {
    /// The mutation kind (one of [`KINDS`]).
    pub kind: &'static str,
    /// The base log's name.
    pub base: String,
    /// The corpus seed it was drawn with.
    pub seed: u64,
    /// Whether that seed is a regression seed.
    pub regression: bool,
    /// What was changed, for failure messages.
    pub detail: String,
    /// The header line.
    pub header: Value,
    /// The event rows.
    pub rows: Vec<Value>,
}

impl Case {
    /// Writes the case as a JSONL log.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|error| error.to_string())?;
        }
        let mut text = self.header.to_string();
        text.push('\n');
        for row in &self.rows {
            text.push_str(&row.to_string());
            text.push('\n');
        }
        std::fs::write(path, text).map_err(|error| format!("{}: {error}", path.display()))
    }
}

/// `per_base` cases per base log and seed (kinds taken in turn, skipping a kind the base gives
/// no site for), plus each base unchanged once.
pub fn corpus(bases: &[Base], seeds: &[(u64, bool)], per_base: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for base in bases {
        cases.push(Case {
            kind: "unchanged",
            base: base.name.clone(),
            seed: 0,
            regression: true,
            detail: "unchanged".to_owned(),
            header: base.header.clone(),
            rows: base.rows.clone(),
        });
    }
    for &(seed, regression) in seeds {
        for (base_index, base) in bases.iter().enumerate() {
            let mut rng = Rng::new(seed ^ (base_index as u64).wrapping_mul(0x51_7CC1_B727_220A));
            let mutable = &KINDS[1..];
            let mut next = rng.below(mutable.len());
            let mut made = 0;
            let mut tries = 0;
            while made < per_base && tries < per_base * 4 {
                tries += 1;
                let kind = mutable[next % mutable.len()];
                next += 1;
                if let Some((rows, detail)) = mutate(kind, &base.rows, &mut rng) {
                    if rows != base.rows {
                        made += 1;
                        cases.push(Case {
                            kind,
                            base: base.name.clone(),
                            seed,
                            regression,
                            detail,
                            header: base.header.clone(),
                            rows,
                        });
                    }
                }
            }
        }
    }
    cases
}

fn mutate(kind: &str, rows: &[Value], rng: &mut Rng) -> Option<(Vec<Value>, String)> {
    let n = rows.len();
    if n < 2 {
        return None;
    }
    let mut rows = rows.to_vec();
    let detail = match kind {
        "drop" => {
            let i = rng.below(n);
            rows.remove(i);
            renumber(&mut rows, |seq| {
                Some(if seq > i as u64 { seq - 1 } else { seq })
            });
            format!("dropped seq {i}")
        }
        "drop-gap" => {
            let i = rng.below(n - 1);
            rows.remove(i);
            format!("dropped seq {i}, later seqs kept")
        }
        "duplicate" => {
            let i = rng.below(n);
            let copy = rows[i].clone();
            rows.insert(i + 1, copy);
            renumber(&mut rows, |seq| {
                Some(if seq > i as u64 { seq + 1 } else { seq })
            });
            format!("duplicated seq {i}")
        }
        "swap-adjacent" => {
            let i = rng.below(n - 1);
            rows.swap(i, i + 1);
            let (a, b) = (i as u64, i as u64 + 1);
            renumber(&mut rows, |seq| {
                Some(if seq == a {
                    b
                } else if seq == b {
                    a
                } else {
                    seq
                })
            });
            format!("swapped seqs {i} and {}", i + 1)
        }
        "move-across-boundary" => {
            let boundaries: Vec<usize> = (0..n).filter(|&i| is_boundary(&rows[i])).collect();
            let movable: Vec<usize> = (0..n).filter(|&i| !is_boundary(&rows[i])).collect();
            let &from = rng.pick(&movable)?;
            let before: Vec<usize> = boundaries.iter().copied().filter(|&b| b < from).collect();
            let after: Vec<usize> = boundaries.iter().copied().filter(|&b| b > from).collect();
            // Just past the nearest boundary on one side.
            let to = if rng.below(2) == 0 {
                *before.last().or(after.first())?
            } else {
                *after.first().or(before.last())?
            };
            // Removed, then inserted at the boundary's old index: just before a boundary that
            // was before it, just after one that was after it.
            let row = rows.remove(from);
            rows.insert(to, row);
            let (from, at) = (from as u64, to as u64);
            renumber(&mut rows, move |seq| {
                Some(if seq == from {
                    at
                } else if from < at && seq > from && seq <= at {
                    seq - 1
                } else if at < from && seq >= at && seq < from {
                    seq + 1
                } else {
                    seq
                })
            });
            format!("moved seq {from} to {at}, across the boundary at seq {to}")
        }
        "renumber-seq" => {
            let i = rng.below(n);
            let delta: i64 = *rng.pick(&[-2, -1, 1, 2, 1000])?;
            let seq = (i as i64 + delta).max(0) as u64;
            if seq == i as u64 {
                return None;
            }
            rows[i]["seq"] = Value::from(seq);
            format!("seq {i} renumbered {seq}")
        }
        "change-call-id" => change_id(&mut rows, &["callId"], rng, Some("tool-call"))?,
        "change-message-id" => change_message_id(&mut rows, rng)?,
        "change-compaction-id" => change_id(&mut rows, &["compactionId"], rng, None)?,
        "change-retry-id" => change_id(&mut rows, &["retryId"], rng, None)?,
        "change-command-id" => change_id(&mut rows, &["commandId", "sourceCommandId"], rng, None)?,
        "change-turn" => change_number(&mut rows, "turn", rng)?,
        "change-step" => change_number(&mut rows, "step", rng)?,
        "surfaceop-endpoint" => {
            let sites: Vec<usize> = (0..n).filter(|&i| replace_of(&rows[i]).is_some()).collect();
            let &i = rng.pick(&sites)?;
            let key = *rng.pick(&["startSeq", "endSeq"])?;
            let old = rows[i]["surfaceOp"][key].as_u64()?;
            let new = match rng.below(3) {
                0 => old + 1,
                1 => old.checked_sub(1)?,
                _ => rng.below(i) as u64,
            };
            if new == old {
                return None;
            }
            rows[i]["surfaceOp"][key] = Value::from(new);
            format!("seq {i} surfaceOp {key} {old} → {new}")
        }
        "surfaceop-to-append" => {
            let sites: Vec<usize> = (0..n).filter(|&i| replace_of(&rows[i]).is_some()).collect();
            let &i = rng.pick(&sites)?;
            rows[i]["surfaceOp"] = Value::from("append");
            format!("seq {i} replace → append")
        }
        "surfaceop-to-replace" => {
            let sites: Vec<usize> = (1..n)
                .filter(|&i| rows[i].get("surfaceOp") == Some(&Value::from("append")))
                .collect();
            let &i = rng.pick(&sites)?;
            let earlier: Vec<usize> = (0..i)
                .filter(|&j| rows[j].get("surfaceOp").is_some())
                .collect();
            let &target = rng.pick(&earlier)?;
            let object = rows[i].as_object_mut()?;
            object.insert(
                "surfaceOp".to_owned(),
                serde_json::json!({"op": "replace", "startSeq": target, "endSeq": target}),
            );
            if rng.below(2) == 0 {
                object.insert("sourceEventSeqs".to_owned(), serde_json::json!([target]));
            }
            format!("seq {i} append → replace of seq {target}")
        }
        "source-seqs" => {
            let sites: Vec<usize> = (0..n)
                .filter(|&i| rows[i].get("sourceEventSeqs").is_some())
                .collect();
            let &i = rng.pick(&sites)?;
            let mut seqs = decode_source_seqs(&rows[i]["sourceEventSeqs"], i as u64).ok()?;
            let what = match rng.below(3) {
                0 if !seqs.is_empty() => {
                    let at = rng.below(seqs.len());
                    let gone = seqs.remove(at);
                    format!("without {gone}")
                }
                1 => {
                    let extra = rng.below(i.max(1)) as u64;
                    if seqs.contains(&extra) {
                        return None;
                    }
                    seqs.push(extra);
                    seqs.sort_unstable();
                    format!("with {extra}")
                }
                _ => {
                    rows[i].as_object_mut()?.remove("sourceEventSeqs");
                    return Some((rows, format!("seq {i} sourceEventSeqs removed")));
                }
            };
            rows[i]["sourceEventSeqs"] = encode_source_seqs(&seqs);
            format!("seq {i} sourceEventSeqs {what}")
        }
        "shadowed-seqs" => {
            let sites: Vec<usize> = (0..n)
                .filter(|&i| rows[i]["data"]["shadowedSeqs"].is_array())
                .collect();
            let &i = rng.pick(&sites)?;
            let seqs = rows[i]["data"]["shadowedSeqs"].as_array_mut()?;
            if rng.below(2) == 0 && !seqs.is_empty() {
                let at = rng.below(seqs.len());
                seqs.remove(at);
                format!("seq {i} shadowedSeqs without member {at}")
            } else {
                let extra = rng.below(i.max(1));
                seqs.push(Value::from(extra));
                format!("seq {i} shadowedSeqs with {extra}")
            }
        }
        "flip-ignorable" => {
            let i = rng.below(n);
            let object = rows[i].as_object_mut()?;
            if object.remove("ignorable").is_none() {
                object.insert("ignorable".to_owned(), Value::Bool(true));
                format!("seq {i} made ignorable")
            } else {
                format!("seq {i} no longer ignorable")
            }
        }
        "unknown-type" => {
            let i = rng.below(n);
            let object = rows[i].as_object_mut()?;
            let was = object.insert("type".to_owned(), Value::from("x/unknown"))?;
            format!("seq {i} {was} renamed x/unknown")
        }
        "truncate" => {
            let cut = 1 + rng.below(n - 1);
            rows.truncate(cut);
            format!("cut after {cut} events")
        }
        _ => return None,
    };
    Some((rows, detail))
}

fn event_type(row: &Value) -> &str {
    row["type"].as_str().unwrap_or("")
}

fn is_boundary(row: &Value) -> bool {
    matches!(
        event_type(row),
        "turn/start" | "turn/end" | "step/start" | "step/end"
    )
}

fn replace_of(row: &Value) -> Option<&Map<String, Value>> {
    row.get("surfaceOp")?
        .as_object()
        .filter(|op| op.get("op") == Some(&Value::from("replace")))
}

/// Sets every row's seq to its position and maps every seq reference through `map` (a
/// reference `map` gives `None` for is left as it was).
pub fn renumber(rows: &mut [Value], map: impl Fn(u64) -> Option<u64>) {
    let map = |value: &mut Value| {
        if let Some(seq) = value.as_u64() {
            if let Some(new) = map(seq) {
                *value = Value::from(new);
            }
        }
    };
    for (index, row) in rows.iter_mut().enumerate() {
        row["seq"] = Value::from(index as u64);
        if let Some(op) = row.get_mut("surfaceOp").and_then(Value::as_object_mut) {
            for key in ["startSeq", "endSeq"] {
                if let Some(value) = op.get_mut(key) {
                    map(value);
                }
            }
        }
        if let Some(sources) = row.get("sourceEventSeqs") {
            if let Ok(seqs) = decode_source_seqs(sources, u64::MAX) {
                let mut mapped: Vec<Value> = seqs.into_iter().map(Value::from).collect();
                mapped.iter_mut().for_each(map);
                let seqs: Vec<u64> = mapped.iter().filter_map(Value::as_u64).collect();
                row["sourceEventSeqs"] = encode_source_seqs(&seqs);
            }
        }
        let Some(data) = row.get_mut("data").and_then(Value::as_object_mut) else {
            continue;
        };
        for key in ["shadowedSeqs", "messageSeqs"] {
            if let Some(Value::Array(seqs)) = data.get_mut(key) {
                seqs.iter_mut().for_each(map);
            }
        }
        if let Some(Value::Object(range)) = data.get_mut("shadowedRange") {
            for key in ["start", "end"] {
                if let Some(value) = range.get_mut(key) {
                    map(value);
                }
            }
        }
        if let Some(value) = data.get_mut("sourceEventSeq") {
            map(value);
        }
    }
}

/// Every (row, path) where a string sits under one of `keys` (anywhere in `data`), and, with
/// `block`, the `id` of content blocks of that type.
fn id_sites(rows: &[Value], keys: &[&str], block: Option<&str>) -> Vec<(usize, Vec<PathStep>)> {
    fn walk(
        value: &Value,
        keys: &[&str],
        block: Option<&str>,
        path: &mut Vec<PathStep>,
        out: &mut Vec<Vec<PathStep>>,
    ) {
        match value {
            Value::Object(map) => {
                let is_block =
                    block.is_some_and(|kind| map.get("type") == Some(&Value::from(kind)));
                for (key, child) in map {
                    path.push(PathStep::Key(key.clone()));
                    if child.is_string()
                        && (keys.contains(&key.as_str()) || (is_block && key == "id"))
                    {
                        out.push(path.clone());
                    } else {
                        walk(child, keys, block, path, out);
                    }
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    path.push(PathStep::Index(index));
                    walk(child, keys, block, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut sites = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let mut out = Vec::new();
        if let Some(data) = row.get("data") {
            walk(
                data,
                keys,
                block,
                &mut vec![PathStep::Key("data".into())],
                &mut out,
            );
        }
        sites.extend(out.into_iter().map(|path| (index, path)));
    }
    sites
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn at_mut<'a>(value: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        PathStep::Key(key) => value.get_mut(key.as_str()),
        PathStep::Index(index) => value.get_mut(*index),
    })
}

/// Replaces one id with a fresh one or with another id of the same family in the log.
fn change_id(
    rows: &mut [Value],
    keys: &[&str],
    rng: &mut Rng,
    block: Option<&str>,
) -> Option<String> {
    let sites = id_sites(rows, keys, block);
    let (row, path) = rng.pick(&sites)?.clone();
    let values: Vec<String> = sites
        .iter()
        .filter_map(|(row, path)| {
            let mut copy = rows[*row].clone();
            at_mut(&mut copy, path).and_then(|value| value.as_str().map(str::to_owned))
        })
        .collect();
    let slot = at_mut(&mut rows[row], &path)?;
    let old = slot.as_str()?.to_owned();
    let others: Vec<&String> = values.iter().filter(|value| **value != old).collect();
    let new = match rng.pick(&others) {
        Some(other) if rng.below(2) == 0 => (*other).clone(),
        _ => format!("mutated-{}", rng.below(1000)),
    };
    *slot = Value::from(new.clone());
    Some(format!("seq {row} {path:?} {old:?} → {new:?}"))
}

/// Changes a message id (`data.message.id`).
fn change_message_id(rows: &mut [Value], rng: &mut Rng) -> Option<String> {
    let sites: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i]["data"]["message"]["id"].is_string())
        .collect();
    let &i = rng.pick(&sites)?;
    let ids: Vec<String> = sites
        .iter()
        .filter_map(|&j| rows[j]["data"]["message"]["id"].as_str().map(str::to_owned))
        .collect();
    let old = rows[i]["data"]["message"]["id"].as_str()?.to_owned();
    let others: Vec<&String> = ids.iter().filter(|id| **id != old).collect();
    let new = match rng.pick(&others) {
        Some(other) if rng.below(2) == 0 => (*other).clone(),
        _ => format!("mutated-message-{}", rng.below(1000)),
    };
    rows[i]["data"]["message"]["id"] = Value::from(new.clone());
    Some(format!("seq {i} message id {old:?} → {new:?}"))
}

/// Changes a `turn` or `step` number (in `data`, or `data.message`) by ±1.
fn change_number(rows: &mut [Value], key: &str, rng: &mut Rng) -> Option<String> {
    let sites: Vec<(usize, bool)> = (0..rows.len())
        .flat_map(|i| {
            let top = rows[i]["data"][key].is_u64().then_some((i, false));
            let nested = rows[i]["data"]["message"][key]
                .is_u64()
                .then_some((i, true));
            top.into_iter().chain(nested)
        })
        .collect();
    let &(i, nested) = rng.pick(&sites)?;
    let slot = if nested {
        &mut rows[i]["data"]["message"][key]
    } else {
        &mut rows[i]["data"][key]
    };
    let old = slot.as_u64()?;
    let new = if old == 0 || rng.below(2) == 0 {
        old + 1
    } else {
        old - 1
    };
    *slot = Value::from(new);
    Some(format!(
        "seq {i} {}{key} {old} → {new}",
        if nested { "message." } else { "" }
    ))
}
