//! Unit tests of the bracket scan over stored rows.

use serde_json::json;

use super::*;

fn row(seq: u64, kind: &str, data: Value) -> RawEvent {
    RawEvent::from_value(json!({"type": kind, "seq": seq, "time": 100 + seq, "data": data}))
}

#[test]
fn the_newest_start_without_end_or_marker_is_closed() {
    let rows = vec![
        row(0, "turn/start", json!({"turn": 1})),
        row(
            1,
            "compaction/start",
            json!({"compactionId": "c1", "sourceCommandId": "cmd", "turn": 1}),
        ),
        row(2, "step/start", json!({"turn": 1, "step": 1})),
    ];
    let closer = compaction_closer_row(&rows).unwrap();
    assert_eq!(
        closer.to_value(),
        json!({"type": "compaction/end", "seq": 3, "time": 102,
            "data": {"compactionId": "c1", "sourceCommandId": "cmd", "turn": 1, "error": "interrupted"}})
    );
}

#[test]
fn closed_and_stale_brackets_are_left_alone() {
    let start = row(
        0,
        "compaction/start",
        json!({"compactionId": "c1", "turn": null}),
    );
    let end = row(
        1,
        "compaction/end",
        json!({"compactionId": "c1", "turn": null}),
    );
    let marker = row(1, "session/end-seed", json!({}));
    assert!(compaction_closer_row(&[start.clone(), end]).is_none());
    assert!(compaction_closer_row(&[start, marker]).is_none());
    assert!(compaction_closer_row(&[]).is_none());
}
