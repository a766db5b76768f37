//! Crash mid-compaction (issue 5; persistence-compaction §10 item 30).
//!
//! A compaction batch is one append, but a raw JSONL append is several lines: a kill
//! mid-write can leave `compaction/start` complete and the rest torn. These tests write such
//! a log to disk, reopen it, and check that the bracket is closed, the session validates,
//! and no replacement appears.

use std::io::Write;

use serde_json::json;
use strata_compact::{
    block_on, close_open_bracket, restore_resumed, resume_stream, CompactionConfig, Compactor,
    ExtractiveSummarizer, IdGenerator, MemoryHost, Trigger, INTERRUPTED,
};
use strata_core::{SeedOptions, Session};
use strata_store::{encode_event_line, read_log, scan_log, write_log, Compression, Store};

use crate::common::{messages, open_turn, raw_prefix, synth, types_from};

/// A session compacted inside an open turn, and the index of its `compaction/start`.
fn compacted() -> (Session, usize, Session) {
    let mut session = synth(500, 21, 0, 0.0, 100);
    open_turn(&mut session);
    let before = Session::restore(
        session.header().clone(),
        raw_prefix(&session, session.len()),
        SeedOptions::default(),
    )
    .unwrap();
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let mut host = MemoryHost::new(session);
    let ids = IdGenerator::seeded(77).next_ids();
    let outcome =
        block_on(compactor.attempt(&mut host, Trigger::Overflow, &ExtractiveSummarizer, &ids))
            .unwrap()
            .unwrap();
    assert!(outcome.is_compacted());
    let session = host.into_session();
    let start = session
        .events()
        .iter()
        .position(|event| event.event_type().as_str() == "compaction/start")
        .unwrap();
    (session, start, before)
}

/// Writes events `..=start` and a torn half of the next line, as a kill mid-append leaves.
fn crashed_log(dir: &std::path::Path, session: &Session, start: usize) -> std::path::PathBuf {
    let path = dir.join("session.v3.jsonl");
    write_log(&path, session.header(), &session.events()[..=start]).unwrap();
    let mut next = Vec::new();
    encode_event_line(&session.events()[start + 1], &mut next);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&next[..next.len() / 2]).unwrap();
    path
}

#[test]
fn reopening_closes_the_bracket_and_writes_no_replacement() {
    let (session, start, before) = compacted();
    let dir = tempfile::tempdir().unwrap();
    let path = crashed_log(dir.path(), &session, start);

    let stored = read_log(&path).unwrap();
    assert!(
        stored.torn.is_some(),
        "the torn line is reported, not returned"
    );
    assert_eq!(stored.events.len(), start + 1);
    let resumed =
        restore_resumed(stored.header, stored.events, SeedOptions { marker_time: 5 }).unwrap();
    let repaired = resumed.session;
    assert_eq!(resumed.n_stored, start + 1);
    // The bracket closes first, then the open turn, then the end-seed marker.
    assert_eq!(
        types_from(&repaired, start + 1),
        ["compaction/end", "turn/end", "session/end-seed"]
    );
    let start_data = repaired.events()[start].data();
    let end_data = repaired.events()[start + 1].data();
    assert_eq!(end_data["compactionId"], start_data["compactionId"]);
    assert_eq!(end_data["turn"], start_data["turn"]);
    assert_eq!(end_data["error"], INTERRUPTED);
    assert_eq!(
        repaired.events()[start + 2].data()["reason"],
        json!({"kind": "interrupted"})
    );
    // No replacement: the surface and messages are those before the attempt.
    assert_eq!(repaired.surface().nodes(), before.surface().nodes());
    assert_eq!(
        repaired.surface().replace_generation(),
        before.surface().replace_generation()
    );
    assert_eq!(messages(&repaired), messages(&before));

    // The repaired log validates on its own and reopening it adds nothing.
    let full = raw_prefix(&repaired, repaired.len());
    let again = restore_resumed(repaired.header().clone(), full, SeedOptions::default()).unwrap();
    assert_eq!(again.session.len(), repaired.len());
    // And compaction is no longer busy.
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    assert!(compactor
        .plan(&again.session, Trigger::Manual)
        .unwrap()
        .is_some());
}

#[test]
fn a_manual_bracket_closes_with_a_null_turn() {
    let mut session = synth(300, 5, 0, 0.0, 100);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let ids = IdGenerator::seeded(1).next_ids();
    let batch = block_on(compactor.compact(&session, Trigger::Manual, &ExtractiveSummarizer, &ids))
        .unwrap()
        .unwrap();
    let first = session.len();
    session.append_batch(batch.candidates, 0).unwrap();
    let stored = raw_prefix(&session, first + 1);
    let resumed =
        restore_resumed(session.header().clone(), stored, SeedOptions::default()).unwrap();
    assert_eq!(
        types_from(&resumed.session, first + 1),
        ["compaction/end", "session/end-seed"]
    );
    assert_eq!(
        resumed.session.events()[first + 1].data()["turn"],
        json!(null)
    );
}

// The store's own open path closes the turn but not the bracket (the store cannot know
// compaction), and its end-seed marker makes the bracket stale, as upstream does;
// `close_open_bracket` then records the bracket's end, once.
#[test]
fn store_open_write_then_close_open_bracket_records_the_interrupted_attempt() {
    let (session, start, before) = compacted();
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::None);
    store
        .import(session.header().clone(), raw_prefix(&session, start + 1))
        .unwrap();
    let writer = store.open_write(session.id()).unwrap();
    let added: Vec<&str> = writer
        .added_on_open()
        .iter()
        .map(|e| e.event_type().as_str())
        .collect();
    assert_eq!(added, ["turn/end", "session/end-seed"]);
    let closer = close_open_bracket(&writer, 7)
        .unwrap()
        .expect("a bracket was open");
    assert_eq!(closer.event_type().as_str(), "compaction/end");
    assert_eq!(closer.data()["error"], json!("interrupted"));
    let started = &session.events()[start];
    assert_eq!(
        closer.data()["compactionId"],
        started.data()["compactionId"]
    );
    assert!(
        close_open_bracket(&writer, 8).unwrap().is_none(),
        "closed once"
    );
    writer.with_session(|reopened| {
        assert_eq!(reopened.surface().nodes(), before.surface().nodes());
        let compactor = Compactor::new(CompactionConfig::default()).unwrap();
        assert!(compactor.plan(reopened, Trigger::Manual).unwrap().is_some());
    });
    writer.close().unwrap();
    // The closer is durable, and a reopen does not repeat it (only the end-seed marker every
    // reopen after new events adds).
    let writer = store.open_write(session.id()).unwrap();
    let added: Vec<&str> = writer
        .added_on_open()
        .iter()
        .map(|e| e.event_type().as_str())
        .collect();
    assert_eq!(added, ["session/end-seed"]);
    assert!(close_open_bracket(&writer, 9).unwrap().is_none());
    writer.close().unwrap();
}

#[test]
fn close_open_bracket_leaves_a_closed_log_alone() {
    let (session, _, _) = compacted();
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::None);
    store
        .import(
            session.header().clone(),
            raw_prefix(&session, session.len()),
        )
        .unwrap();
    let writer = store.open_write(session.id()).unwrap();
    let before = writer.with_session(|s| s.len());
    assert!(close_open_bracket(&writer, 1).unwrap().is_none());
    assert_eq!(writer.with_session(|s| s.len()), before);
    writer.close().unwrap();
}

/// `resume_stream` (what `strata repair` streams) gives the session and stored count
/// `restore_resumed` gives over the same rows all held, at cuts around an open compaction
/// bracket, inside open turns and after closed ones.
#[test]
fn a_streamed_resume_equals_the_resume_of_all_rows() {
    let (session, start, _) = compacted();
    let dir = tempfile::tempdir().unwrap();
    let cuts = (1..=session.len()).filter(|cut| cut.abs_diff(start) <= 10 || cut % 23 == 0);
    let mut n_open_brackets = 0;
    for cut in cuts {
        let path = dir.path().join(format!("cut-{cut}.v3.jsonl"));
        write_log(&path, session.header(), &session.events()[..cut]).unwrap();
        let stored = read_log(&path).unwrap();
        let options = SeedOptions { marker_time: 7 };
        let held = restore_resumed(stored.header, stored.events, options).unwrap();
        let mut stream = scan_log(&path).unwrap();
        let streamed = resume_stream(&mut stream, options).unwrap();
        assert_eq!(streamed.n_stored, held.n_stored, "cut {cut}");
        let lines = |session: &Session| -> Vec<Vec<u8>> {
            session
                .events()
                .iter()
                .map(|event| {
                    let mut line = Vec::new();
                    encode_event_line(event, &mut line);
                    line
                })
                .collect()
        };
        assert_eq!(lines(&streamed.session), lines(&held.session), "cut {cut}");
        if types_from(&held.session, cut).first().map(String::as_str) == Some("compaction/end") {
            n_open_brackets += 1;
        }
    }
    assert!(n_open_brackets > 0, "some cut leaves the bracket open");
}
