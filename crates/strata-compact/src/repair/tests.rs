//! Unit tests of durable repair on a JSONL store.

use strata_core::{payload, Candidate, SessionHeader, SurfaceIntent};
use strata_store::Compression;

use super::*;

fn types(events: &[Arc<Event>]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event.event_type().as_str())
        .collect()
}

/// A stored session left inside an open turn with an open compaction bracket.
fn crashed(store: &Store) {
    let writer = store
        .create(SessionHeader::fresh("crashed", 1).unwrap())
        .unwrap();
    let hello = payload::UserMessage {
        message: payload::user_text_message("u1", "hello"),
    };
    writer
        .append(
            vec![
                Candidate::log_only(payload::TurnStart { turn: 1 }),
                Candidate::surface(hello, SurfaceIntent::append()),
                Candidate::log_only(payload::PluginEvent {
                    event_type: "compaction/start".into(),
                    data: serde_json::json!({"compactionId": "c1", "turn": 1}),
                }),
            ],
            2,
        )
        .unwrap();
    // Dropped without closing anything: what a crash leaves.
    drop(writer);
}

#[test]
fn closes_the_bracket_then_the_turn_once() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::None);
    crashed(&store);
    let added = repair_stored(&store, "crashed", 7).unwrap();
    assert_eq!(
        types(&added),
        ["compaction/end", "turn/end", "session/end-seed"]
    );
    assert_eq!(added[0].data()["error"], "interrupted");
    let again = repair_stored(&store, "crashed", 8).unwrap();
    assert!(
        again.is_empty(),
        "a repaired log needs nothing: {:?}",
        types(&again)
    );
    let session = store.load("crashed").unwrap();
    assert_eq!(
        session.len(),
        6,
        "the log ends with the repair's marker: a load adds none"
    );
}

#[test]
fn a_closed_log_is_left_untouched() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::None);
    let writer = store
        .create(SessionHeader::fresh("clean", 1).unwrap())
        .unwrap();
    writer
        .append(
            vec![
                Candidate::log_only(payload::TurnStart { turn: 1 }),
                Candidate::log_only(payload::TurnEnd {
                    turn: 1,
                    reason: serde_json::json!({"kind": "completed"}),
                }),
            ],
            2,
        )
        .unwrap();
    writer.close().unwrap();
    assert!(repair_stored(&store, "clean", 3).unwrap().is_empty());
    assert_eq!(store.read("clean").unwrap().events.len(), 2);
}
