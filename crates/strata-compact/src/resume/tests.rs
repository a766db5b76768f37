//! Unit tests of the resume over stored rows: an open bracket is closed before the turn.

use serde_json::{json, Value};

use super::*;

fn row(seq: u64, kind: &str, data: Value) -> RawEvent {
    RawEvent::from_value(json!({"type": kind, "seq": seq, "time": 100 + seq, "data": data}))
}

fn header() -> SessionHeader {
    SessionHeader::fresh("resume", 1).unwrap()
}

fn added(rows: Vec<RawEvent>) -> Vec<Value> {
    let resumed = restore_resumed(
        header(),
        rows,
        SeedOptions {
            marker_time: 7,
            ..SeedOptions::default()
        },
    )
    .unwrap();
    resumed.session.events().unwrap()[resumed.n_stored..]
        .iter()
        .map(|event| json!({"type": event.event_type().as_str(), "data": event.data()}))
        .collect()
}

#[test]
fn the_newest_start_without_end_or_marker_is_closed_before_the_turn() {
    let rows = vec![
        row(0, "turn/start", json!({"turn": 1})),
        row(
            1,
            "compaction/start",
            json!({"compactionId": "c1", "sourceCommandId": "cmd", "turn": 1}),
        ),
    ];
    assert_eq!(
        added(rows),
        [
            json!({"type": "compaction/end", "data": {"compactionId": "c1", "sourceCommandId": "cmd", "turn": 1, "error": INTERRUPTED}}),
            json!({"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "interrupted"}}}),
            json!({"type": "session/end-seed", "data": {}}),
        ]
    );
}

#[test]
fn closed_and_stale_brackets_are_left_alone() {
    let start = row(
        0,
        "compaction/start",
        json!({"compactionId": "c1", "turn": null}),
    );
    // A failed end (no summary, so it carries an error: docs/rules.md R49).
    let end = row(
        1,
        "compaction/end",
        json!({"compactionId": "c1", "turn": null, "error": {"message": "failed"}}),
    );
    let marker = row(1, "session/end-seed", json!({}));
    let marker_only = [json!({"type": "session/end-seed", "data": {}})];
    assert_eq!(added(vec![start.clone(), end]), marker_only);
    // The marker already ends the log: nothing is added.
    assert_eq!(added(vec![start, marker]), Vec::<Value>::new());
}
