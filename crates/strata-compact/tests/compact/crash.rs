//! Crash mid-compaction (issue 5; persistence-compaction §10 item 30).
//!
//! A compaction batch is one append, but a raw JSONL append is several lines: a kill
//! mid-write can leave `compaction/start` complete and the rest torn. These tests write such
//! a log to disk, reopen it, and check that the bracket is closed, the session validates,
//! and no replacement appears.

use std::io::Write;

use serde_json::json;
use strata_compact::deadline::block_on;
use strata_compact::resume::INTERRUPTED;
use strata_compact::IdGenerator;
use strata_compact::{
    restore_resumed, resume_stream, CompactionConfig, Compactor, ExtractiveSummarizer, MemoryHost,
    Trigger,
};
use strata_conformance::format_oracle::{
    assert_accepted, assert_session_accepted, assert_sessions_accepted,
};
use strata_core::{SeedOptions, Session};
use strata_format::encode_event_line;
use strata_store::{read_log, scan_log, write_log, Compression, Store};

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
        .unwrap()
        .iter()
        .position(|event| event.event_type().as_str() == "compaction/start")
        .unwrap();
    (session, start, before)
}

/// Writes events `..=start` and a torn half of the next line, as a kill mid-append leaves.
fn crashed_log(dir: &std::path::Path, session: &Session, start: usize) -> std::path::PathBuf {
    let path = dir.join("session.v3.jsonl");
    write_log(
        &path,
        session.header(),
        &session.events().unwrap()[..=start],
    )
    .unwrap();
    let mut next = Vec::new();
    encode_event_line(&session.events().unwrap()[start + 1], &mut next);
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
    let resumed = restore_resumed(
        stored.header,
        stored.events,
        SeedOptions {
            marker_time: 5,
            ..SeedOptions::default()
        },
    )
    .unwrap();
    let repaired = resumed.session;
    assert_eq!(resumed.n_stored, start + 1);
    // The bracket closes first, then the open turn, then the end-seed marker.
    assert_eq!(
        types_from(&repaired, start + 1),
        ["compaction/end", "turn/end", "session/end-seed"]
    );
    let start_data = repaired.events().unwrap()[start].data();
    let end_data = repaired.events().unwrap()[start + 1].data();
    assert_eq!(end_data["compactionId"], start_data["compactionId"]);
    assert_eq!(end_data["turn"], start_data["turn"]);
    assert_eq!(end_data["error"], INTERRUPTED);
    assert_eq!(
        repaired.events().unwrap()[start + 2].data()["reason"],
        json!({"kind": "interrupted"})
    );
    // No replacement: the surface and messages are those before the attempt.
    assert_eq!(repaired.surface().nodes(), before.surface().nodes());
    assert_eq!(
        repaired.surface().replace_generation(),
        before.surface().replace_generation()
    );
    assert_eq!(messages(&repaired), messages(&before));
    assert_session_accepted("repaired", &repaired);

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
        resumed.session.events().unwrap()[first + 1].data()["turn"],
        json!(null)
    );
}

// The store's own open path writes the core's closers: the bracket first, then the turn, then
// the end-seed marker, so the turn/end never crosses an open compaction and the compaction/end
// comes before the marker that would make its start stale (upstream's format layer refuses a
// compaction/end after it: "compaction/end has no matching compaction/start").
#[test]
fn store_open_write_closes_the_bracket_before_the_turn() {
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
    assert_eq!(added, ["compaction/end", "turn/end", "session/end-seed"]);
    let closer = &writer.added_on_open()[0];
    assert_eq!(closer.data()["error"], json!(INTERRUPTED));
    let started = &session.events().unwrap()[start];
    assert_eq!(
        closer.data()["compactionId"],
        started.data()["compactionId"]
    );
    assert_eq!(closer.data()["turn"], started.data()["turn"]);
    writer.with_session(|reopened| {
        assert_eq!(reopened.surface().nodes(), before.surface().nodes());
        let compactor = Compactor::new(CompactionConfig::default()).unwrap();
        assert!(compactor.plan(reopened, Trigger::Manual).unwrap().is_some());
    });
    writer.close().unwrap();
    // The closers are durable, and a reopen does not repeat them (only the end-seed marker
    // every reopen after new events adds).
    let writer = store.open_write(session.id()).unwrap();
    let added: Vec<&str> = writer
        .added_on_open()
        .iter()
        .map(|e| e.event_type().as_str())
        .collect();
    assert!(added.is_empty(), "{added:?}");
    writer.close().unwrap();
    let location = store.read(session.id()).unwrap().location;
    assert_accepted(&[location]);
}

#[test]
fn store_open_write_closes_a_manual_bracket_outside_a_turn() {
    let mut session = synth(300, 5, 0, 0.0, 100);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let ids = IdGenerator::seeded(1).next_ids();
    let batch = block_on(compactor.compact(&session, Trigger::Manual, &ExtractiveSummarizer, &ids))
        .unwrap()
        .unwrap();
    let first = session.len();
    session.append_batch(batch.candidates, 0).unwrap();
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::None);
    store
        .import(session.header().clone(), raw_prefix(&session, first + 1))
        .unwrap();
    let writer = store.open_write(session.id()).unwrap();
    let added: Vec<(String, serde_json::Value)> = writer
        .added_on_open()
        .iter()
        .map(|e| (e.event_type().to_string(), e.data()["turn"].clone()))
        .collect();
    assert_eq!(
        added,
        [
            ("compaction/end".to_owned(), json!(null)),
            ("session/end-seed".to_owned(), json!(null))
        ]
    );
    writer.close().unwrap();
    assert_accepted(&[store.read(session.id()).unwrap().location]);
}

#[test]
fn a_closed_log_reopens_without_a_bracket_closer() {
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
    let added: Vec<&str> = writer
        .added_on_open()
        .iter()
        .map(|e| e.event_type().as_str())
        .collect();
    assert!(!added.contains(&"compaction/end"), "{added:?}");
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
    let mut resumed = Vec::new();
    for cut in cuts {
        let path = dir.path().join(format!("cut-{cut}.v3.jsonl"));
        write_log(&path, session.header(), &session.events().unwrap()[..cut]).unwrap();
        let stored = read_log(&path).unwrap();
        let options = SeedOptions {
            marker_time: 7,
            ..SeedOptions::default()
        };
        let held = restore_resumed(stored.header, stored.events, options).unwrap();
        let mut stream = scan_log(&path).unwrap();
        let streamed = resume_stream(&mut stream, options).unwrap();
        assert_eq!(streamed.n_stored, held.n_stored, "cut {cut}");
        let lines = |session: &Session| -> Vec<Vec<u8>> {
            session
                .events()
                .unwrap()
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
        resumed.push((format!("cut-{cut}"), held.session));
    }
    assert!(n_open_brackets > 0, "some cut leaves the bracket open");
    // Every resume, whatever the cut, is a log upstream accepts.
    let labelled: Vec<(&str, &Session)> = resumed
        .iter()
        .map(|(label, session)| (label.as_str(), session))
        .collect();
    assert_sessions_accepted(&labelled);
}
