//! The store contract (issue 3 item 1), run identically against every backend: memory, raw
//! JSONL, zstd JSONL, SQLite and PostgreSQL (issue 8).

use std::sync::Arc;
use std::thread;

use strata_core::fork::ForkErrorCode;
use strata_core::{
    payload, Candidate, CloseCause, EventType, ForkMode, SeedOptions, Session, SurfaceIntent,
};
use strata_store::{AppendError, ForkError, MemoryBackend, Store, StoreError};

use crate::common::{all, append_turns, durable, header, partial_turn, store, Kind};

fn each_backend(test: impl Fn(Kind, Store)) {
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        test(kind, store(kind, dir.path()));
    }
}

#[test]
fn create_append_read_restore_round_trip() {
    each_backend(|kind, store| {
        let writer = store.create(header("s1", 10)).unwrap();
        append_turns(&writer, 3);
        let expected: Vec<_> = writer.with_session(|session| session.events().unwrap().to_vec());
        assert_eq!(writer.durable_len(), 24, "{kind:?}");
        writer.close().unwrap();

        let log = store.read("s1").unwrap();
        assert_eq!(log.header.id(), "s1");
        assert_eq!(log.events.len(), 24, "{kind:?}");
        assert!(log.torn.is_none());
        let session = store.load("s1").unwrap();
        // Event-identical: the restored events serialize exactly like what was appended.
        assert_eq!(
            json_lines(&session.events().unwrap()[..24]),
            json_lines(&expected),
            "{kind:?}"
        );

        let tail = store.read_from("s1", 20).unwrap();
        assert_eq!(tail.len(), 4, "{kind:?}");
        assert_eq!(tail[0].seq_value(), Some(serde_json::json!(20)));
        assert!(store.read_from("s1", 24).unwrap().is_empty());
        assert!(store.read_from("s1", 1_000).unwrap().is_empty());
    });
}

#[test]
fn read_from_every_seq_matches_the_full_read() {
    each_backend(|kind, store| {
        let writer = store.create(header("tail", 1)).unwrap();
        for _ in 0..4 {
            append_turns(&writer, 1);
            writer.append(partial_turn(&writer, 0), 1).unwrap();
        }
        writer.close().unwrap();
        let all: Vec<String> = store
            .read("tail")
            .unwrap()
            .events
            .iter()
            .map(|event| event.to_value().to_string())
            .collect();
        for from in 0..=all.len() as u64 + 2 {
            let tail: Vec<String> = store
                .read_from("tail", from)
                .unwrap()
                .iter()
                .map(|event| event.to_value().to_string())
                .collect();
            let start = (from as usize).min(all.len());
            assert_eq!(tail, all[start..], "{kind:?} from {from}");
        }
    });
}

#[test]
fn list_is_newest_first_from_headers_only() {
    each_backend(|kind, store| {
        for (id, created_at) in [("old", 1), ("new", 3), ("mid", 2)] {
            store
                .create(header(id, created_at))
                .unwrap()
                .close()
                .unwrap();
        }
        let listing = store.list().unwrap();
        let ids: Vec<&str> = listing.sessions.iter().map(|h| h.id()).collect();
        assert_eq!(ids, ["new", "mid", "old"], "{kind:?}");
        assert!(listing.problems.is_empty());
    });
}

#[test]
fn second_writer_gets_the_lock_error_naming_a_pid() {
    each_backend(|kind, store| {
        let writer = store.create(header("locked", 1)).unwrap();
        let error = store.open_write("locked").unwrap_err();
        assert!(
            matches!(error, StoreError::Locked { .. }),
            "{kind:?}: {error}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "session \"locked\" is open for writing by pid {}",
                std::process::id()
            )
        );
        assert!(matches!(
            store.delete("locked"),
            Err(StoreError::Locked { .. })
        ));
        drop(writer);
        // Released with the writer.
        store.open_write("locked").unwrap().close().unwrap();
    });
}

#[test]
fn rejected_append_changes_nothing_and_the_writer_stays_usable() {
    each_backend(|kind, store| {
        let writer = store.create(header("r", 1)).unwrap();
        append_turns(&writer, 1);
        // A tool result citing a seq from the future is rejected by the core.
        let bad = Candidate::surface(
            payload::UserMessage {
                message: payload::user_text_message("u-bad", "x"),
            },
            SurfaceIntent::append_citing(vec![strata_core::Seq::new(99).unwrap()]),
        );
        let good = partial_turn(&writer, 1);
        let error = writer.append(vec![good[0].clone(), bad], 5).unwrap_err();
        assert!(
            matches!(error, AppendError::Rejected(_)),
            "{kind:?}: {error}"
        );
        assert_eq!(writer.durable_len(), 8);
        assert_eq!(writer.with_session(Session::len), 8);
        append_turns(&writer, 1);
        writer.close().unwrap();
        assert_eq!(store.read("r").unwrap().events.len(), 16, "{kind:?}");
    });
}

#[test]
fn concurrent_appends_are_group_committed_and_dense() {
    for kind in durable() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(kind, dir.path());
        let writer = Arc::new(store.create(header("g", 1)).unwrap());
        let n_threads = 8;
        let n_appends = 25;
        thread::scope(|scope| {
            for thread_idx in 0..n_threads {
                let writer = Arc::clone(&writer);
                scope.spawn(move || {
                    for append_idx in 0..n_appends {
                        let candidate = Candidate::log_only(payload::PluginEvent {
                            event_type: "x-bench/tick".into(),
                            data: serde_json::json!({"thread": thread_idx, "n": append_idx}),
                        })
                        .ignorable();
                        let event = writer.append_one(candidate, 7).unwrap();
                        // Durable on return.
                        assert!(writer.durable_len() > event.seq().get());
                    }
                });
            }
        });
        let total = (n_threads * n_appends) as u64;
        assert_eq!(writer.durable_len(), total);
        let n_flushes = writer.n_flushes();
        assert!(
            n_flushes < total,
            "{kind:?}: {n_flushes} flushes for {total} appends"
        );
        Arc::into_inner(writer).unwrap().close().unwrap();
        let log = store.read("g").unwrap();
        assert_eq!(log.events.len() as u64, total);
        store.load("g").unwrap();
    }
}

#[test]
fn loads_while_a_writer_appends_see_a_growing_valid_prefix() {
    // A reader never sees a record half written: a raw log is read up to its last newline
    // when the read starts (through mapped windows), a zstd one up to its last whole frame,
    // a database as of its last commit (more than one page of rows is read on the decoders'
    // own connections, each page as of the commit it finds).
    for kind in durable() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(kind, dir.path());
        let writer = store.create(header("live", 1)).unwrap();
        append_turns(&writer, 140);
        let n_turns = 60;
        let writing = std::sync::atomic::AtomicBool::new(true);
        thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..n_turns {
                    append_turns(&writer, 1);
                }
                writing.store(false, std::sync::atomic::Ordering::Release);
            });
            let mut seen = 0;
            let mut n_loads = 0;
            while writing.load(std::sync::atomic::Ordering::Acquire) || n_loads == 0 {
                let loaded = store.load("live").unwrap_or_else(|error| {
                    panic!("{kind:?}: a load during appends failed: {error}")
                });
                assert!(loaded.len() >= seen, "{kind:?}: {} < {seen}", loaded.len());
                seen = loaded.len();
                for row in store.scan("live").unwrap() {
                    row.unwrap_or_else(|error| panic!("{kind:?}: {error}"));
                }
                n_loads += 1;
            }
        });
        let n_written = writer.durable_len();
        writer.close().unwrap();
        assert_eq!(store.read("live").unwrap().events.len() as u64, n_written);
    }
}

#[test]
fn reopen_after_a_crash_closes_the_open_turn_once() {
    each_backend(|kind, store| {
        let writer = store.create(header("c", 1)).unwrap();
        append_turns(&writer, 1);
        // turn/start, step/start, user, assistant (announces call-2), tool/call — then "crash".
        writer.append(partial_turn(&writer, 5), 9).unwrap();
        drop(writer);

        let reopened = store.open_write("c").unwrap();
        let added: Vec<String> = reopened
            .added_on_open()
            .iter()
            .map(|event| event.event_type().as_str().to_owned())
            .collect();
        assert_eq!(
            added,
            ["tool/result", "step/end", "turn/end", "session/end-seed"],
            "{kind:?}"
        );
        let closer = &reopened.added_on_open()[0];
        assert_eq!(
            closer.data()["error"]["code"],
            serde_json::json!("TOOL_OUTCOME_UNKNOWN")
        );
        reopened.close().unwrap();

        let again = store.open_write("c").unwrap();
        assert!(
            again.added_on_open().is_empty(),
            "{kind:?}: second reopen added events"
        );
        again.close().unwrap();
        let session = store.load("c").unwrap();
        assert_eq!(session.len(), 17);
        assert_eq!(
            session.events().unwrap().last().unwrap().event_type(),
            &EventType::SessionEndSeed
        );
    });
}

#[test]
fn fork_inherits_a_prefix_and_refuses_bad_requests() {
    each_backend(|kind, store| {
        let writer = store.create(header("parent", 1)).unwrap();
        append_turns(&writer, 2);
        writer.append(partial_turn(&writer, 5), 9).unwrap();

        // V3 store fork: default boundary is the last stored event, inside an open turn.
        let open = store.fork("parent", "child", None, ForkMode::ClosedTurn);
        assert!(
            matches!(&open, Err(ForkError::Refused(error)) if error.code == ForkErrorCode::OpenTurn),
            "{kind:?}"
        );
        let child = store
            .fork("parent", "child", Some(15), ForkMode::ClosedTurn)
            .unwrap();
        assert_eq!(child.with_session(|s| s.inherited_count()), 16);
        child.close().unwrap();
        let child_log = store.read("child").unwrap();
        assert_eq!(child_log.header.parent_session(), Some("parent"));
        assert!(child_log.header.is_seeded());
        assert_eq!(child_log.events.len(), 17, "{kind:?}");

        // Any-prefix fork: closers for the cut turn follow the inherited marker.
        let any = store
            .fork("parent", "any", None, ForkMode::AnyPrefix)
            .unwrap();
        let types: Vec<String> = any.with_session(|session| {
            session.events().unwrap()[21..]
                .iter()
                .map(|event| event.event_type().as_str().to_owned())
                .collect()
        });
        assert_eq!(
            types,
            ["session/end-seed", "tool/result", "step/end", "turn/end"],
            "{kind:?}"
        );
        any.close().unwrap();
        store.load("any").unwrap();

        let exists = store.fork("parent", "child", None, ForkMode::AnyPrefix);
        assert!(
            matches!(&exists, Err(ForkError::Refused(e)) if e.code == ForkErrorCode::SessionAlreadyExists)
        );
        // The boundary must be a stored seq, not the marker a restore of the source adds.
        let n_stored = store.read("parent").unwrap().events.len() as u64;
        let past = store.fork("parent", "past", Some(n_stored), ForkMode::AnyPrefix);
        assert!(
            matches!(&past, Err(ForkError::Refused(e)) if e.code == ForkErrorCode::InvalidBoundary
                && e.message.contains(&format!("last seq: {}", n_stored - 1))),
            "{kind:?}"
        );
        assert!(matches!(
            store.read("past"),
            Err(StoreError::NotFound { .. })
        ));
        let missing = store.fork("nope", "x", None, ForkMode::AnyPrefix);
        assert!(
            matches!(&missing, Err(ForkError::Refused(e)) if e.code == ForkErrorCode::SessionNotFound)
        );
        drop(writer);
    });
}

#[test]
fn delete_removes_a_closed_session() {
    each_backend(|kind, store| {
        let writer = store.create(header("d", 1)).unwrap();
        append_turns(&writer, 1);
        writer.close().unwrap();
        store.delete("d").unwrap();
        assert!(
            matches!(store.read("d"), Err(StoreError::NotFound { .. })),
            "{kind:?}"
        );
        assert!(store.list().unwrap().sessions.is_empty());
        // The id can be reused.
        store.create(header("d", 2)).unwrap().close().unwrap();
    });
}

#[test]
fn duplicate_create_is_refused() {
    each_backend(|kind, store| {
        store.create(header("dup", 1)).unwrap().close().unwrap();
        let error = store.create(header("dup", 2)).unwrap_err();
        assert!(
            matches!(error, StoreError::AlreadyExists { .. }),
            "{kind:?}: {error}"
        );
    });
}

#[test]
fn a_failed_write_poisons_the_writer_and_reopen_recovers() {
    let backend = MemoryBackend::new();
    let store = Store::new(backend.clone());
    let writer = store.create(header("p", 1)).unwrap();
    append_turns(&writer, 1);
    backend.fail_appends_after(0);
    let error = writer.append(partial_turn(&writer, 1), 5).unwrap_err();
    assert!(matches!(error, AppendError::Store { .. }), "{error}");
    let later = writer.append(Vec::new(), 5).unwrap_err();
    assert!(matches!(later, AppendError::Poisoned { .. }), "{later}");
    assert!(writer.close().is_err());
    backend.fail_appends_after(usize::MAX);
    let reopened = store.open_write("p").unwrap();
    // Only the durable turn survived; the reopen added its end-seed marker.
    assert_eq!(reopened.with_session(Session::len), 9);
    reopened.close().unwrap();
}

#[test]
fn import_is_event_identical_and_validated() {
    let golden = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v3-every-type.jsonl"),
    )
    .unwrap();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v3-every-type.jsonl");
    let source = strata_store::read_log(&path).unwrap();
    let expected = Session::restore(
        source.header.clone(),
        source.events.clone(),
        SeedOptions::default(),
    )
    .unwrap();
    each_backend(|kind, store| {
        store
            .import(source.header.clone(), source.events.clone())
            .unwrap();
        let loaded = store.load(source.header.id()).unwrap();
        assert_eq!(
            json_lines(loaded.events().unwrap()),
            json_lines(expected.events().unwrap()),
            "{kind:?}"
        );
        assert_eq!(loaded.header(), expected.header());
        if kind == Kind::Raw {
            let file = find_file(store.backend().describe().trim_start_matches("jsonl:"));
            assert_eq!(
                std::fs::read(file).unwrap(),
                golden,
                "raw file differs from golden"
            );
        }
    });
}

/// Events compared by their V3 JSON (the envelope's remembered key order is not part of the
/// value: an appended event and the same event read back spell the same bytes).
fn json_lines(events: &[Arc<strata_core::Event>]) -> Vec<String> {
    events.iter().map(|event| event.to_json()).collect()
}

fn find_file(root: &str) -> std::path::PathBuf {
    let mut stack = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(".jsonl") {
                return path;
            }
        }
    }
    panic!("no log under {root}");
}

#[test]
fn close_cause_is_exported_for_callers() {
    assert_eq!(CloseCause::Interrupted.as_str(), "interrupted");
}
