//! The row rules of upstream's released v0/v1 codec, with its texts (docs/migration.md,
//! refusal `m0-row`): what the migration's first hop checks of each physical row before any
//! edge sees it.
//!
//! upstream 0.1.0-rc.8 (the reader's own rules, `rows`) and the released codec check the same
//! rows in different orders and words; a migration is judged by the released chain, so the
//! reader runs these rules first when asked to ([`super::LegacyReader::with_released_rows`]).
//!
//! Per row, in this order:
//! 1. the row is a JSON object;
//! 2. a packed row (`text-chunks`, `reasoning-chunks`, `tool-call-chunks`): exact envelope keys,
//!    `seq0` a count, `time0` a safe integer, `data` an object with exact keys, a non-empty
//!    string payload, `dt` one shorter than the payload, every running time a safe integer,
//!    `turn`/`step`/`index` counts, a tool row's non-empty string `id` and optional string
//!    `name`, a final seq that is a count;
//! 3. a plain row with `sourceEventSeqs`: `seq` a count, then the range decoding of the list
//!    against that seq (plain members first meet the entry budget, pairs are `[start, end]`
//!    with `start ≤ end` inside the budget, a list with a pair is strictly increasing);
//! 4. the row's first seq (`seq0`, or `seq` as written) equals the number of events before it.
//!
//! Numbers are judged as doubles, as `JSON.parse` reads them: a "count" is a safe integer
//! ≥ 0 that is not `-0`; a "safe integer" is not `-0` either.

use serde_json::{Map, Value};

use super::js::{display, is_safe_integer, number};

/// The row state of one log: the row index and the events so far.
#[derive(Clone, Debug, Default)]
pub struct ReleasedRows {
    /// Physical rows seen (the next row's index).
    row: u64,
    /// Events the accepted rows stand for (the next row's expected seq).
    events: u64,
    /// Whether the rows are a v2 file's (see [`ReleasedRows::v2`]).
    v2: bool,
}

impl ReleasedRows {
    /// The row rules of the released v2 codec: exact envelope keys (a missing one first), a
    /// string `type`, a safe-integer `time`, `ignorable` only `true`, a row with sources a count
    /// `seq` and a list of counts or `[start, end]` pairs inside it, all unique earlier seqs
    /// (strictly increasing once a pair occurs), then the seq gap.
    pub fn v2() -> ReleasedRows {
        ReleasedRows {
            v2: true,
            ..ReleasedRows::default()
        }
    }

    /// Judges the next physical row; `Err` carries upstream's text.
    pub fn check(&mut self, value: &Value) -> Result<(), String> {
        if self.v2 {
            return self.check_v2(value);
        }
        let row = self.row;
        self.row += 1;
        let Value::Object(record) = value else {
            return Err(format!("released Session row {row} must be a JSON object"));
        };
        let packed = record.get("type").and_then(Value::as_str).filter(|tag| {
            matches!(
                *tag,
                "text-chunks" | "reasoning-chunks" | "tool-call-chunks"
            )
        });
        let expected = self.events;
        // `seq !== eventCount` in upstream's words: the seq as written, compared as a number.
        let (first_seq, n_events) = match packed {
            Some(tag) => {
                let (seq0, n) = packed_row(record, tag, row)?;
                (Some(Value::from(seq0)), n)
            }
            None => {
                if let Some(sources) = record.get("sourceEventSeqs") {
                    let seq = count(record.get("seq"))
                        .ok_or_else(|| format!("released Session row {row} seq {COUNT}"))?;
                    decode_ranges(sources, seq)?;
                }
                (record.get("seq").cloned(), 1)
            }
        };
        let dense = first_seq
            .as_ref()
            .and_then(number)
            .is_some_and(|seq| seq == expected as f64);
        if !dense {
            return Err(format!(
                "released Session row {row} has seq gap (expected {expected}, got {})",
                display(first_seq.as_ref())
            ));
        }
        self.events += n_events;
        Ok(())
    }
}

impl ReleasedRows {
    fn check_v2(&mut self, value: &Value) -> Result<(), String> {
        let row = self.row;
        self.row += 1;
        let label = format!("released v2 row {row}");
        let Value::Object(record) = value else {
            return Err(format!("{label} must be an object"));
        };
        if let Some(key) = ["type", "seq", "time", "data"]
            .iter()
            .find(|key| !record.contains_key(**key))
        {
            return Err(format!("{label} lacks required field {key}"));
        }
        if let Some(key) = record
            .keys()
            .find(|key| !V2_ENVELOPE_KEYS.contains(&key.as_str()))
        {
            return Err(format!("{label} has unexpected field {key}"));
        }
        if !record.get("type").is_some_and(Value::is_string) {
            return Err(format!("{label} type must be a string"));
        }
        if safe_integer(record.get("time")).is_none() {
            return Err(format!("{label} time must be a safe integer"));
        }
        if record
            .get("ignorable")
            .is_some_and(|flag| *flag != Value::Bool(true))
        {
            return Err(format!("{label} ignorable must be true when present"));
        }
        if let Some(sources) = record.get("sourceEventSeqs") {
            let seq = count(record.get("seq")).ok_or_else(|| format!("{label} seq {COUNT}"))?;
            decode_v2_ranges(sources, seq)?;
        }
        let expected = self.events;
        let dense = record
            .get("seq")
            .and_then(number)
            .is_some_and(|seq| seq == expected as f64);
        if !dense {
            return Err(format!(
                "{label} has seq gap (expected {expected}, got {})",
                display(record.get("seq"))
            ));
        }
        self.events += 1;
        Ok(())
    }
}

/// The released v2 codec's range decoding against a row's seq.
fn decode_v2_ranges(value: &Value, seq: u64) -> Result<(), String> {
    let Value::Array(entries) = value else {
        return Err("sourceEventSeqs must be an array".into());
    };
    let mut members: Vec<u64> = Vec::new();
    let mut has_range = false;
    for entry in entries {
        let Value::Array(pair) = entry else {
            members
                .push(count(Some(entry)).ok_or_else(|| format!("sourceEventSeqs member {COUNT}"))?);
            continue;
        };
        let [start, end] = pair.as_slice() else {
            return Err("sourceEventSeqs range must be a [start, end] pair".into());
        };
        let start =
            count(Some(start)).ok_or_else(|| format!("sourceEventSeqs range start {COUNT}"))?;
        let end = count(Some(end)).ok_or_else(|| format!("sourceEventSeqs range end {COUNT}"))?;
        let room = seq.saturating_sub(members.len() as u64);
        if start > end || end >= seq || end - start + 1 > room {
            return Err("sourceEventSeqs range exceeds its event seq".into());
        }
        members.extend(start..=end);
        has_range = true;
    }
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    if members
        .iter()
        .any(|member| *member >= seq || !seen.insert(*member))
    {
        return Err("sourceEventSeqs ranges must contain unique earlier seqs".into());
    }
    if has_range && members.windows(2).any(|pair| pair[1] <= pair[0]) {
        return Err("sourceEventSeqs ranges must be strictly increasing".into());
    }
    Ok(())
}

/// A v2 row's envelope keys, in the order upstream's v1→v2 edge writes them.
pub(crate) const V2_ENVELOPE_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "ignorable",
    "sourceEventSeqs",
    "surfaceOp",
];

const COUNT: &str = "must be a non-negative safe integer";

/// A count as upstream's `sessionFormatCount` takes it.
pub(crate) fn count(value: Option<&Value>) -> Option<u64> {
    let x = value.and_then(number)?;
    (is_safe_integer(x) && x >= 0.0 && !(x == 0.0 && x.is_sign_negative())).then_some(x as u64)
}

/// A safe integer, not `-0`.
pub(crate) fn safe_integer(value: Option<&Value>) -> Option<f64> {
    let x = value.and_then(number)?;
    (is_safe_integer(x) && !(x == 0.0 && x.is_sign_negative())).then_some(x)
}

/// Exact keys: an unexpected one first (in the record's order), then a missing one.
pub(crate) fn exact_keys(
    record: &Map<String, Value>,
    required: &[&str],
    optional: &[&str],
    label: &str,
) -> Result<(), String> {
    if let Some(key) = record
        .keys()
        .find(|key| !required.contains(&key.as_str()) && !optional.contains(&key.as_str()))
    {
        return Err(format!(
            "{label} has unexpected member {}",
            strata_core::json::to_js_string(&Value::from(key.as_str()))
        ));
    }
    if let Some(key) = required.iter().find(|key| !record.contains_key(**key)) {
        return Err(format!("{label} lacks required member \"{key}\""));
    }
    Ok(())
}

/// A packed row's rules; its first seq and the events it stands for.
fn packed_row(record: &Map<String, Value>, tag: &str, row: u64) -> Result<(u64, u64), String> {
    let label = format!("released {tag} row {row}");
    exact_keys(record, &["type", "seq0", "time0", "data"], &[], &label)?;
    let seq0 = count(record.get("seq0")).ok_or_else(|| format!("{label} seq0 {COUNT}"))?;
    let time0 = safe_integer(record.get("time0"))
        .ok_or_else(|| format!("{label} time0 must be a safe integer"))?;
    let Some(Value::Object(data)) = record.get("data") else {
        return Err(format!("{label} data must be a JSON object"));
    };
    let tool = tag == "tool-call-chunks";
    let data_label = format!("{label} data");
    if tool {
        exact_keys(
            data,
            &["turn", "step", "index", "id", "dt", "args"],
            &["name"],
            &data_label,
        )?;
    } else {
        exact_keys(
            data,
            &["turn", "step", "index", "dt", "texts"],
            &[],
            &data_label,
        )?;
    }
    let payload = data.get(if tool { "args" } else { "texts" });
    let members = match payload {
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_string) => {
            items.len()
        }
        _ => return Err(format!("{label} payload must be a non-empty string array")),
    };
    let gaps = match data.get("dt") {
        Some(Value::Array(gaps)) if gaps.len() + 1 == members => gaps,
        _ => return Err(format!("{label} dt length must match its payload")),
    };
    let mut time = time0;
    for gap in gaps {
        let gap = safe_integer(Some(gap))
            .ok_or_else(|| format!("{label} dt member must be a safe integer"))?;
        time += gap;
        if !is_safe_integer(time) {
            return Err(format!("{label} member time must be a safe integer"));
        }
    }
    for key in ["turn", "step", "index"] {
        count(data.get(key)).ok_or_else(|| format!("{label} {key} {COUNT}"))?;
    }
    if tool {
        let id_ok = matches!(data.get("id"), Some(Value::String(id)) if !id.is_empty());
        let name_ok = data.get("name").is_none_or(Value::is_string);
        if !(id_ok && name_ok) {
            return Err(format!("{label} id and optional name must be strings"));
        }
    }
    let last = seq0 as f64 + members as f64 - 1.0;
    if !is_safe_integer(last) {
        return Err(format!("{label} final seq {COUNT}"));
    }
    Ok((seq0, members as u64))
}

/// The released range decoding of a row's `sourceEventSeqs` against its seq (the entry budget).
fn decode_ranges(value: &Value, budget: u64) -> Result<(), String> {
    let Value::Array(entries) = value else {
        return Err("sourceEventSeqs must be an array".into());
    };
    let mut n_out: u64 = 0;
    let mut last: Option<u64> = None;
    let mut increasing = true;
    let mut has_range = false;
    let mut note = |seq: u64, last: &mut Option<u64>| {
        if last.is_some_and(|previous| seq <= previous) {
            increasing = false;
        }
        *last = Some(seq);
    };
    for entry in entries {
        if entry.is_number() {
            if n_out >= budget {
                return Err("sourceEventSeqs exceeds its event seq".into());
            }
            let seq =
                count(Some(entry)).ok_or_else(|| format!("sourceEventSeqs member {COUNT}"))?;
            note(seq, &mut last);
            n_out += 1;
            continue;
        }
        let Some([start, end]) = entry
            .as_array()
            .map(Vec::as_slice)
            .and_then(|pair| match pair {
                [start, end] => Some([start, end]),
                _ => None,
            })
        else {
            return Err("sourceEventSeqs range must be a [start, end] pair".into());
        };
        let start =
            count(Some(start)).ok_or_else(|| format!("sourceEventSeqs range start {COUNT}"))?;
        let end = count(Some(end)).ok_or_else(|| format!("sourceEventSeqs range end {COUNT}"))?;
        if end < start || end - start + 1 > budget - n_out {
            return Err("sourceEventSeqs range exceeds its event seq".into());
        }
        // Within a range members ascend; only its first can break the order.
        note(start, &mut last);
        last = Some(end);
        n_out += end - start + 1;
        has_range = true;
    }
    if has_range && !increasing {
        return Err("sourceEventSeqs ranges must be strictly increasing".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(rows: &[Value]) -> Result<(), String> {
        let mut state = ReleasedRows::default();
        rows.iter().try_for_each(|row| state.check(row))
    }

    #[test]
    fn seq_gaps_print_the_value_as_a_template_does() {
        let event = |seq: Value| json!({"type": "turn/start", "seq": seq, "time": 0, "data": {}});
        assert_eq!(
            run(&[event(json!(0)), event(json!(2))]),
            Err("released Session row 1 has seq gap (expected 1, got 2)".into())
        );
        assert_eq!(
            run(&[event(json!("0"))]),
            Err("released Session row 0 has seq gap (expected 0, got 0)".into())
        );
        assert_eq!(
            run(&[event(json!(0.5))]),
            Err("released Session row 0 has seq gap (expected 0, got 0.5)".into())
        );
        assert_eq!(
            run(&[json!({"type": "x"})]),
            Err("released Session row 0 has seq gap (expected 0, got undefined)".into())
        );
        assert_eq!(
            run(&[json!([1])]),
            Err("released Session row 0 must be a JSON object".into())
        );
    }

    #[test]
    fn a_packed_row_counts_its_members() {
        let row = json!({"type": "text-chunks", "seq0": 1, "time0": 5, "data":
            {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]}});
        let first = json!({"type": "step/start", "seq": 0, "time": 0, "data": {}});
        let after = json!({"type": "step/end", "seq": 4, "time": 0, "data": {}});
        assert_eq!(run(&[first.clone(), row.clone(), after]), Ok(()));
        let mut short = row.clone();
        short["data"]["dt"] = json!([1]);
        assert_eq!(
            run(&[first.clone(), short]),
            Err("released text-chunks row 1 dt length must match its payload".into())
        );
        let mut extra = row;
        extra["seq"] = json!(1);
        assert_eq!(
            run(&[first, extra]),
            Err("released text-chunks row 1 has unexpected member \"seq\"".into())
        );
    }

    #[test]
    fn v2_rows_judge_sources_as_unique_earlier_seqs() {
        let mut rows = ReleasedRows::v2();
        let first = json!({"type": "turn/start", "seq": 0, "time": 0, "data": {}});
        assert_eq!(rows.check(&first), Ok(()));
        let own = json!({"type": "user/message", "seq": 1, "time": 0, "data": {},
            "surfaceOp": "append", "sourceEventSeqs": [1]});
        assert_eq!(
            rows.check(&own),
            Err("sourceEventSeqs ranges must contain unique earlier seqs".into())
        );
        let mut rows = ReleasedRows::v2();
        assert_eq!(
            rows.check(&json!({"type": "x", "seq": 0, "time": 0, "data": {}, "extra": 1})),
            Err("released v2 row 0 has unexpected field extra".into())
        );
    }

    #[test]
    fn ranges_meet_the_budget_before_the_member_rule() {
        let with = |sources: Value| json!({"type": "user/message", "seq": 0, "time": 0, "data": {}, "sourceEventSeqs": sources});
        assert_eq!(
            run(&[with(json!([-1]))]),
            Err("sourceEventSeqs exceeds its event seq".into())
        );
        assert_eq!(
            run(&[with(json!(null))]),
            Err("sourceEventSeqs must be an array".into())
        );
        assert_eq!(
            run(&[with(json!([[0]]))]),
            Err("sourceEventSeqs range must be a [start, end] pair".into())
        );
        let at = |seq: u64, sources: Value| {
            let mut rows: Vec<Value> = (0..seq)
                .map(|s| json!({"type": "turn/start", "seq": s, "time": 0, "data": {}}))
                .collect();
            rows.push(json!({"type": "user/message", "seq": seq, "time": 0, "data": {}, "sourceEventSeqs": sources}));
            run(&rows)
        };
        assert_eq!(
            at(4, json!([2, [0, 1]])),
            Err("sourceEventSeqs ranges must be strictly increasing".into())
        );
        assert_eq!(at(4, json!([2, 0])), Ok(()));
        assert_eq!(
            at(2, json!([[0, 2]])),
            Err("sourceEventSeqs range exceeds its event seq".into())
        );
    }
}
