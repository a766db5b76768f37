//! Many writers, one SQLite store (issue 28 item 3): the batches of different sessions share
//! commits, and each session keeps its own acknowledgement, order and stale-writer check.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use strata_format::encode_event_line;
use strata_store::synth::turn_candidates;
use strata_store::{
    AppendError, GroupCommitStats, SessionWriter, SqliteBackend, Store, StoreError,
};

use crate::common::header;

fn sqlite(dir: &std::path::Path) -> (Store, SqliteBackend) {
    let backend = SqliteBackend::open(&dir.join("strata.db")).unwrap();
    (Store::new(backend.clone()), backend)
}

/// Waits (bounded) until the committer's state satisfies `done`.
fn wait_for(backend: &SqliteBackend, what: &str, done: impl Fn(&GroupCommitStats) -> bool) {
    let start = Instant::now();
    loop {
        let stats = backend.group_commit_stats();
        if done(&stats) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting until {what}: {stats:?}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Each event's canonical line, as acknowledged (the marker an open adds left out).
fn lines(events: &[Arc<strata_core::Event>]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event.event_type().as_str() != "session/end-seed")
        .map(|event| {
            let mut line = Vec::new();
            encode_event_line(event, &mut line);
            String::from_utf8(line).unwrap()
        })
        .collect()
}

/// The stored session's events as canonical lines (loading validates the log).
fn stored_lines(store: &Store, id: &str) -> Vec<String> {
    let session = store
        .load(id)
        .unwrap_or_else(|error| panic!("{id}: {error}"));
    lines(session.events().unwrap())
}

#[test]
fn concurrent_sessions_keep_every_acknowledged_event_in_order() {
    const N_SESSIONS: usize = 16;
    const N_TURNS: u64 = 6;
    let dir = tempfile::tempdir().unwrap();
    let (store, backend) = sqlite(dir.path());
    let writers: Vec<SessionWriter> = (0..N_SESSIONS)
        .map(|index| store.create(header(&format!("s{index}"), 1)).unwrap())
        .collect();
    let barrier = Arc::new(Barrier::new(N_SESSIONS));
    let handles: Vec<_> = writers
        .into_iter()
        .enumerate()
        .map(|(index, writer)| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let mut acked = Vec::new();
                let mut n_batches = 0;
                for turn in 1..=N_TURNS {
                    let mut candidates = turn_candidates(turn, acked.len() as u64, 60)
                        .into_iter()
                        .peekable();
                    // Batches of 1 to 3 events, differing per session.
                    let mut size = 1 + index % 3;
                    while candidates.peek().is_some() {
                        let batch: Vec<_> = candidates.by_ref().take(size).collect();
                        let events = writer.append(batch, 1_000).unwrap();
                        // Acknowledged means durable: the watermark already covers it.
                        assert!(writer.durable_len() > events.last().unwrap().seq().get());
                        acked.extend(lines(&events));
                        n_batches += 1;
                        size = size % 3 + 1;
                    }
                }
                writer.close().unwrap();
                (format!("s{index}"), acked, n_batches)
            })
        })
        .collect();
    let mut total_batches = 0;
    for handle in handles {
        let (id, acked, n_batches) = handle.join().unwrap();
        total_batches += n_batches;
        assert_eq!(acked.len() as u64, N_TURNS * 8, "{id}");
        assert_eq!(stored_lines(&store, &id), acked, "{id}: stored log differs");
    }
    let stats = backend.group_commit_stats();
    // Every batch went through the committer, and no commit held nothing.
    assert_eq!(stats.batches, total_batches);
    assert!(
        stats.commits >= 1 && stats.commits <= stats.batches,
        "{stats:?}"
    );
    assert_eq!((stats.waiting, stats.committing), (0, false));
    // A fresh open reads the same logs.
    drop(store);
    let (reopened, _) = sqlite(dir.path());
    for index in 0..N_SESSIONS {
        let id = format!("s{index}");
        assert_eq!(
            stored_lines(&reopened, &id).len() as u64,
            N_TURNS * 8,
            "{id}"
        );
    }
}

/// The committer is held in `BEGIN IMMEDIATE` by another connection's write transaction, so
/// the batches of the other sessions deterministically queue up behind it and share the next
/// commit; one of them is stale (that transaction moved its session's `next_seq`).
#[test]
fn waiting_batches_share_one_commit_and_a_stale_one_fails_alone() {
    const N_OTHERS: usize = 7;
    let dir = tempfile::tempdir().unwrap();
    let (store, backend) = sqlite(dir.path());
    let first = store.create(header("first", 1)).unwrap();
    let others: Vec<SessionWriter> = (0..N_OTHERS)
        .map(|index| store.create(header(&format!("other{index}"), 1)).unwrap())
        .collect();
    let stale = store.create(header("stale", 1)).unwrap();
    stale.append(turn_candidates(1, 0, 40), 1).unwrap();
    let before = backend.group_commit_stats();

    let blocker = rusqlite::Connection::open(dir.path().join("strata.db")).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    blocker
        .execute(
            "UPDATE sessions SET next_seq = next_seq + 1 WHERE id = 'stale'",
            [],
        )
        .unwrap();

    thread::scope(|scope| {
        let first_append = scope.spawn(|| first.append(turn_candidates(1, 0, 40), 1));
        // The first batch's committer took the queue and waits for the write lock.
        wait_for(&backend, "the first commit is under way", |stats| {
            stats.committing && stats.waiting == 0 && stats.batches == before.batches
        });
        let others: Vec<_> = others
            .iter()
            .map(|writer| scope.spawn(|| writer.append(turn_candidates(1, 0, 40), 1)))
            .collect();
        let stale_append = scope.spawn(|| stale.append(turn_candidates(2, 8, 40), 1));
        wait_for(&backend, "every other batch is queued", |stats| {
            stats.waiting == N_OTHERS + 1
        });
        blocker.execute_batch("COMMIT").unwrap();

        assert_eq!(first_append.join().unwrap().unwrap().len(), 8);
        for other in others {
            assert_eq!(other.join().unwrap().unwrap().len(), 8);
        }
        let error = stale_append.join().unwrap().unwrap_err();
        let AppendError::Store { cause, .. } = &error else {
            panic!("expected a store error, got {error}");
        };
        let StoreError::SeqConflict {
            id,
            expected,
            found,
        } = cause.as_ref()
        else {
            panic!("expected a conflict, got {cause}");
        };
        assert_eq!((id.as_str(), *expected, *found), ("stale", 8, 9));
        assert!(
            error.to_string().contains("stale writer"),
            "the single-append wording is kept: {error}"
        );
    });
    let after = backend.group_commit_stats();
    // One commit for the first batch, one for the eight that waited behind it.
    assert_eq!(after.commits - before.commits, 2, "{after:?}");
    assert_eq!(
        after.batches - before.batches,
        2 + N_OTHERS as u64,
        "{after:?}"
    );
    assert!(stale.failure().is_some(), "a stale writer is poisoned");

    // Everything of the committed batches is stored; nothing of the stale one.
    let (expected_first, expected_others): (Vec<_>, Vec<_>) = (
        first.with_session(|session| lines(session.events().unwrap())),
        others
            .iter()
            .map(|writer| writer.with_session(|session| lines(session.events().unwrap())))
            .collect(),
    );
    first.close().unwrap();
    for writer in others {
        writer.close().unwrap();
    }
    drop(stale);
    assert_eq!(stored_lines(&store, "first"), expected_first);
    for (index, expected) in expected_others.iter().enumerate() {
        assert_eq!(&stored_lines(&store, &format!("other{index}")), expected);
    }
    let n_rows: i64 = blocker
        .query_row(
            "SELECT count(*) FROM events WHERE session_id = 'stale'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(n_rows, 8, "the stale batch wrote nothing");
}
