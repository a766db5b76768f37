//! The pool yields what the sequential reader yields, in order, errors and torn tails included,
//! over logs several batches long.

use std::path::{Path, PathBuf};

use strata_core::synth::{generate, SynthConfig};
use strata_core::{Generation, RawEvent, SeedOptions, Session};

use super::DecodePool;
use crate::backend::EventRows;
use crate::error::StoreError;
use crate::jsonl::JsonlRows;
use strata_format::codec::{encode_event_line, encode_header_line};
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;

/// A V3 log of about `n_events` synthetic events (several pool batches), as file bytes.
pub(crate) fn log_bytes(n_events: u64) -> (Vec<u8>, usize) {
    let session = generate(&SynthConfig {
        events: n_events,
        id: "pool".to_owned(),
        ..SynthConfig::default()
    })
    .unwrap();
    let mut bytes = Vec::new();
    encode_header_line(session.header(), &mut bytes).unwrap();
    for event in session.events().unwrap() {
        encode_event_line(event, &mut bytes);
    }
    (bytes, session.events().unwrap().len())
}

/// Writes a log into a directory of its own: a file is never rewritten in place, as a pool
/// that stopped early may still be reading it.
pub(crate) fn write(dir: &Path, bytes: &[u8]) -> PathBuf {
    let dir = tempfile::tempdir_in(dir).unwrap().keep();
    let path = dir.join("session.v3.jsonl");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The rows the line reader yields on the reading thread: the reference.
fn sequential(path: &Path) -> (Vec<Result<RawEvent, String>>, JsonlRows) {
    let mut rows = JsonlRows::open(path, false, DEFAULT_MAX_RECORD_LEN).unwrap();
    let read = rows
        .by_ref()
        .map(|row| row.map_err(|error| error.to_string()))
        .collect();
    (read, rows)
}

/// The rows the pool yields.
fn pooled(path: &Path) -> (Vec<Result<RawEvent, String>>, DecodePool<JsonlRows>) {
    let mut pool = DecodePool::new(JsonlRows::open(path, false, DEFAULT_MAX_RECORD_LEN).unwrap());
    let read = pool
        .by_ref()
        .map(|row| row.map_err(|error: StoreError| error.to_string()))
        .collect();
    (read, pool)
}

fn values(rows: &[Result<RawEvent, String>]) -> Vec<Result<serde_json::Value, String>> {
    rows.iter()
        .map(|row| row.as_ref().map(RawEvent::to_value).map_err(Clone::clone))
        .collect()
}

#[test]
fn rows_arrive_in_order_as_the_sequential_reader_yields_them() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, n_events) = log_bytes(6_000);
    assert!(bytes.len() > 4 * super::BATCH_BYTES, "several batches");
    let path = write(dir.path(), &bytes);
    let (expected, rows) = sequential(&path);
    let (read, pool) = pooled(&path);
    assert_eq!(read.len(), n_events);
    assert_eq!(values(&read), values(&expected));
    assert_eq!(pool.torn(), rows.torn());
    assert_eq!(pool.progress(), rows.progress());
}

#[test]
fn a_bad_record_in_a_later_batch_ends_the_rows_there_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = log_bytes(6_000);
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&byte| byte == b'\n').collect();
    for bad_line in [3_usize, 1_500, 4_321, lines.len()] {
        let mut damaged = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if index + 1 == bad_line {
                damaged.extend_from_slice(b"{\"type\":\n");
            } else {
                damaged.extend_from_slice(line);
            }
        }
        let path = write(dir.path(), &damaged);
        let (expected, _) = sequential(&path);
        let (read, mut pool) = pooled(&path);
        assert_eq!(
            read.len(),
            bad_line - 1,
            "rows before line {bad_line}, then its error"
        );
        assert_eq!(values(&read), values(&expected));
        let error = read.last().unwrap().as_ref().unwrap_err();
        assert!(error.contains(&format!("line {bad_line}")), "{error}");
        assert!(pool.next().is_none(), "nothing after the first error");
    }
}

#[test]
fn a_torn_tail_is_reported_after_the_last_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    let (mut bytes, n_events) = log_bytes(3_000);
    bytes.extend_from_slice(b"{\"type\":\"user/message\",\"seq\":");
    let path = write(dir.path(), &bytes);
    let (expected, rows) = sequential(&path);
    let (read, pool) = pooled(&path);
    assert_eq!(read.len(), n_events);
    assert_eq!(values(&read), values(&expected));
    assert!(pool.torn().is_some());
    assert_eq!(pool.torn(), rows.torn());
}

#[test]
fn rows_checked_ahead_restore_the_same_session() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, n_events) = log_bytes(6_000);
    let path = write(dir.path(), &bytes);
    let rows = JsonlRows::open(&path, false, DEFAULT_MAX_RECORD_LEN).unwrap();
    let header = rows.header().clone();
    let (expected, _) = sequential(&path);
    let plain = Session::restore(
        header.clone(),
        expected.into_iter().map(Result::unwrap),
        SeedOptions::default(),
    )
    .unwrap();
    let mut pool = DecodePool::new(rows);
    let mut checked = Vec::new();
    while let Some(row) = pool.next_prechecked(Generation::V3) {
        checked.push(row.unwrap());
    }
    assert_eq!(checked.len(), n_events);
    let ahead = Session::restore(header, checked, SeedOptions::default()).unwrap();
    assert_eq!(ahead.events().unwrap(), plain.events().unwrap());
    assert_eq!(ahead.surface(), plain.surface());
}

#[test]
fn dropping_the_rows_part_way_stops_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = log_bytes(6_000);
    let path = write(dir.path(), &bytes);
    for taken in [0, 1, 1_500] {
        let mut pool =
            DecodePool::new(JsonlRows::open(&path, false, DEFAULT_MAX_RECORD_LEN).unwrap());
        for _ in 0..taken {
            pool.next().unwrap().unwrap();
        }
        // Dropped on a thread of its own, so a hang fails the test at a deadline instead of
        // stalling the suite: every pool thread must end at its next send or receive.
        let (done, dropped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(pool);
            let _ = done.send(());
        });
        assert!(
            dropped.recv_timeout(DROP_DEADLINE).is_ok(),
            "dropping the pool after {taken} rows did not return within {DROP_DEADLINE:?}"
        );
    }
}

/// How long dropping a pool may take before the drop test calls it a hang: far above the
/// milliseconds it takes, even on a loaded CI machine.
const DROP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// A SQLite session of `n_turns` synthetic turns (several pages of rows).
fn sqlite_session(dir: &Path, n_turns: u64) -> (crate::Store, PathBuf) {
    use crate::synth::{turn_candidates, EVENTS_PER_TURN};
    let path = dir.join("strata.db");
    let store = crate::Store::sqlite(&path).unwrap();
    let header = strata_core::SessionHeader::fresh("pool", 1).unwrap();
    let writer = store.create(header).unwrap();
    for turn in 1..=n_turns {
        let candidates = turn_candidates(turn, (turn - 1) * EVENTS_PER_TURN, 64);
        writer.append(candidates, 1).unwrap();
    }
    writer.close().unwrap();
    (store, path)
}

#[test]
fn sqlite_rows_arrive_in_order_and_a_bad_row_ends_them_at_its_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = sqlite_session(dir.path(), 600);
    let n_stored = 600 * crate::synth::EVENTS_PER_TURN;
    assert!(n_stored > 4 * 1024, "several pages");
    let sequential = store.read_from("pool", 0).unwrap();
    let pooled: Vec<RawEvent> = store.scan("pool").unwrap().map(Result::unwrap).collect();
    let values = |rows: &[RawEvent]| rows.iter().map(RawEvent::to_value).collect::<Vec<_>>();
    assert_eq!(values(&pooled), values(&sequential));
    let loaded = store.load("pool").unwrap();
    assert_eq!(
        loaded.len() as u64,
        n_stored + 1,
        "the rows and the end-seed marker"
    );

    // A bad row in a later page, found by the reading thread (a payload blob that does not
    // decompress) or by a decoder (payload text that is not JSON): the rows before it, then
    // its error, and a load fails with that error.
    let bad_seq = 3_333;
    let conn = rusqlite::Connection::open(&path).unwrap();
    for (damage, message) in [
        ("x'00'", "data does not decompress"),
        ("'{\"role\":'", "row is not JSON"),
    ] {
        conn.execute(
            &format!("UPDATE events SET data = {damage} WHERE seq = ?1"),
            [bad_seq],
        )
        .unwrap();
        let mut scanned = store.scan("pool").unwrap();
        let mut n_good = 0;
        let error = loop {
            match scanned.next().unwrap() {
                Ok(_) => n_good += 1,
                Err(error) => break error,
            }
        };
        assert_eq!(n_good, bad_seq);
        assert!(scanned.next().is_none(), "nothing after the first error");
        assert!(error.to_string().contains(message), "{error}");
        assert!(error.to_string().contains("seq 3333"), "{error}");
        let Err(refused) = store.load("pool") else {
            panic!("a log with a bad row loaded");
        };
        assert_eq!(refused.to_string(), error.to_string());
    }
}

/// The rows, torn tail and progress a pool yields, decoded on threads or inline.
fn pool_outcome(path: &Path, inline: bool) -> (Vec<Result<serde_json::Value, String>>, String) {
    super::decode_inline(inline);
    let (read, pool) = pooled(path);
    super::decode_inline(false);
    let end = format!("{:?} {:?}", pool.torn(), pool.progress());
    (values(&read), end)
}

#[test]
fn inline_decoding_yields_what_the_threads_yield() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = log_bytes(6_000);
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&byte| byte == b'\n').collect();
    let mut logs = vec![bytes.clone(), lines[..3].concat()];
    let mut torn = bytes.clone();
    torn.extend_from_slice(b"{\"type\":\"user/message\",\"seq\":");
    logs.push(torn);
    for bad_line in [3_usize, 1_500, 4_321, lines.len()] {
        let mut damaged = lines.clone();
        damaged[bad_line - 1] = b"{\"type\":\n";
        logs.push(damaged.concat());
    }
    for log in &logs {
        let path = write(dir.path(), log);
        assert_eq!(pool_outcome(&path, true), pool_outcome(&path, false));
        // Checked ahead too.
        let checked = |inline| {
            super::decode_inline(inline);
            let mut pool =
                DecodePool::new(JsonlRows::open(&path, false, DEFAULT_MAX_RECORD_LEN).unwrap());
            super::decode_inline(false);
            let mut rows = Vec::new();
            while let Some(row) = pool.next_prechecked(Generation::V3) {
                rows.push(row.map(|row| format!("{row:?}")).map_err(|e| e.to_string()));
            }
            (rows, pool.torn(), pool.progress())
        };
        assert_eq!(checked(true), checked(false));
    }

    // SQLite pages, read on the pulling thread's own connection, a bad row in a later page.
    let (store, path) = sqlite_session(dir.path(), 600);
    let conn = rusqlite::Connection::open(&path).unwrap();
    for damage in [None, Some("x'00'"), Some("'{\"role\":'")] {
        if let Some(damage) = damage {
            conn.execute(
                &format!("UPDATE events SET data = {damage} WHERE seq = ?1"),
                [3_333],
            )
            .unwrap();
        }
        let scan = |inline| {
            super::decode_inline(inline);
            let rows: Vec<Result<serde_json::Value, String>> = store
                .scan("pool")
                .unwrap()
                .map(|row| row.map(|row| row.to_value()).map_err(|e| e.to_string()))
                .collect();
            let loaded = store.load("pool").map(|session| session.len());
            super::decode_inline(false);
            (rows, loaded.map_err(|e| e.to_string()))
        };
        assert_eq!(scan(true), scan(false));
    }
}
