//! Paged reads: a session several pages long, read by decoders on their own connections, yields
//! what reading it a page at a time on one connection yields, errors included, in order.

use std::path::Path;

use strata_core::synth::{generate, SynthConfig};
use strata_core::{HeaderSpec, RawEvent, SeedOptions, Session, SessionHeader};

use super::read::PAGE_ROWS;
use super::{SqliteBackend, SqliteRows};
use crate::backend::Backend;
use crate::decode_pool::{PageSource, RecordBatch, RecordSource};
use crate::error::StoreError;
use crate::store::Store;

const ID: &str = "paged";

/// A database holding one synthetic session of about `n_events` events; returns the number
/// stored.
fn database(path: &Path, n_events: u64) -> u64 {
    let session = generate(&SynthConfig {
        events: n_events,
        id: ID.to_owned(),
        ..SynthConfig::default()
    })
    .unwrap();
    let backend = SqliteBackend::open(path).unwrap();
    backend
        .create(session.header(), session.events().unwrap())
        .unwrap();
    session.events().unwrap().len() as u64
}

/// A fresh directory holding a database of about `n_events` (see [`database`]).
fn fresh(n_events: u64) -> (tempfile::TempDir, std::path::PathBuf, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    let n_stored = database(&path, n_events);
    (dir, path, n_stored)
}

/// The rows as one connection reads them a page at a time (the pre-pool reading).
fn sequential(backend: &SqliteBackend) -> Vec<Result<RawEvent, StoreError>> {
    let mut rows = backend.rows(ID, 0).unwrap();
    assert!(rows.pages().is_some(), "the log is long enough to be paged");
    std::iter::from_fn(|| rows.next()).collect()
}

fn pooled(store: &Store) -> Vec<Result<RawEvent, StoreError>> {
    store.scan(ID).unwrap().collect()
}

/// Rows as comparable text: each row's JSONL line, or its error's message.
fn texts(rows: &[Result<RawEvent, StoreError>]) -> Vec<String> {
    rows.iter()
        .map(|row| match row {
            Ok(raw) => raw.to_value().to_string(),
            Err(error) => format!("error: {error}"),
        })
        .collect()
}

#[test]
fn a_paged_read_yields_the_rows_and_session_of_a_sequential_one() {
    // Three and a bit pages, so every decoder reads more than one and the last is short.
    let (_dir, path, n_stored) = fresh(3 * PAGE_ROWS as u64 + 300);
    let backend = SqliteBackend::open(&path).unwrap();
    let expected = sequential(&backend);
    assert_eq!(expected.len() as u64, n_stored);
    let store = Store::new(backend.clone());
    assert_eq!(texts(&pooled(&store)), texts(&expected));
    let header = store.read(ID).unwrap().header;
    let plain = Session::restore(
        header,
        expected.into_iter().map(Result::unwrap),
        SeedOptions::default(),
    )
    .unwrap();
    let loaded = store.load(ID).unwrap();
    assert_eq!(loaded.events().unwrap(), plain.events().unwrap());
    assert_eq!(loaded.surface(), plain.surface());
}

#[test]
fn a_log_of_exactly_whole_pages_ends_after_its_last_page() {
    let (_dir, path, n_stored) = fresh(2 * PAGE_ROWS as u64 + 10);
    let backend = SqliteBackend::open(&path).unwrap();
    // Trim the log to exactly two pages (next_seq with it), so the last page read is empty.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let whole = 2 * PAGE_ROWS as i64;
    conn.execute("DELETE FROM events WHERE seq >= ?1", [whole])
        .unwrap();
    conn.execute("UPDATE sessions SET next_seq = ?1", [whole])
        .unwrap();
    assert!(n_stored > whole as u64);
    let expected = sequential(&backend);
    assert_eq!(expected.len(), 2 * PAGE_ROWS);
    assert_eq!(texts(&pooled(&Store::new(backend))), texts(&expected));
}

#[test]
fn a_bad_row_on_any_page_ends_the_rows_with_its_error_after_every_row_before_it() {
    let page = PAGE_ROWS as i64;
    // First and last row of a page, the middle of one, the log's last row.
    for (seq, damage) in [
        (page - 1, "UPDATE events SET data = '{' WHERE seq = ?1"),
        (page, "UPDATE events SET data = x'00' WHERE seq = ?1"),
        (2 * page + 17, "DELETE FROM events WHERE seq = ?1"),
        (
            3 * page,
            "UPDATE events SET data = '{\"a\":}' WHERE seq = ?1",
        ),
    ] {
        let (_dir, path, n_stored) = fresh(3 * page as u64 + 1);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let seq = seq.min(n_stored as i64 - 1);
        assert_eq!(conn.execute(damage, [seq]).unwrap(), 1, "{damage}");
        let backend = SqliteBackend::open(&path).unwrap();
        let expected = sequential(&backend);
        let rows = pooled(&Store::new(backend));
        assert_eq!(
            rows.len() as i64,
            seq + 1,
            "{damage}: rows up to the bad one"
        );
        assert!(rows[..seq as usize].iter().all(Result::is_ok));
        match &rows[seq as usize] {
            Err(StoreError::Corrupt { seq: at, .. }) => {
                assert_eq!(*at, Some(seq as u64), "{damage}")
            }
            other => panic!("{damage}: row {seq} is {other:?}"),
        }
        // The sequential reading reports the bad page in place of the whole page; the rows
        // before that page are the same.
        let n_before = expected.iter().take_while(|row| row.is_ok()).count();
        assert_eq!(texts(&rows[..n_before]), texts(&expected[..n_before]));
    }
}

#[test]
fn dropping_a_paged_read_part_way_stops_its_decoders() {
    let (_dir, path, _) = fresh(4 * PAGE_ROWS as u64);
    let store = Store::new(SqliteBackend::open(&path).unwrap());
    for taken in [0, 1, PAGE_ROWS + 5] {
        let mut rows = store.scan(ID).unwrap();
        for _ in 0..taken {
            rows.next().unwrap().unwrap();
        }
        drop(rows);
    }
    // The database is still readable, and writable (no decoder holds a read transaction).
    let writer = store.open_write(ID).unwrap();
    writer.close().unwrap();
    assert!(store.load(ID).is_ok());
}

#[test]
fn a_short_log_is_read_by_the_reading_thread() {
    let (_dir, path, _) = fresh(PAGE_ROWS as u64 / 2);
    let backend = SqliteBackend::open(&path).unwrap();
    let rows: SqliteRows = backend.rows(ID, 0).unwrap();
    assert!(rows.pages().is_none());
}

#[test]
fn pages_of_a_session_deleted_or_created_again_are_never_mixed() {
    for recreate in [false, true] {
        let (_dir, path, _) = fresh(3 * PAGE_ROWS as u64);
        let backend = SqliteBackend::open(&path).unwrap();
        let pages = backend.rows(ID, 0).unwrap().pages().unwrap();
        let mut conn = pages.open_reader().unwrap();
        let mut batch = RecordBatch::default();
        assert!(pages.fill_page(&mut conn, 0, &mut batch).unwrap());
        assert_eq!(batch.len(), PAGE_ROWS);
        backend.delete(ID).unwrap();
        if recreate {
            // Another session under the same id, as long: its pages would fit by seq.
            let other = generate(&SynthConfig {
                events: 3 * PAGE_ROWS as u64,
                id: ID.to_owned(),
                seed: 7,
                ..SynthConfig::default()
            })
            .unwrap();
            let header = SessionHeader::new(HeaderSpec {
                id: ID.to_owned(),
                created_at: 99,
                ..HeaderSpec::default()
            })
            .unwrap();
            backend.create(&header, other.events().unwrap()).unwrap();
        }
        let mut next = RecordBatch::default();
        match pages.fill_page(&mut conn, 1, &mut next) {
            Err(StoreError::ChangedDuringRead { id, .. }) => assert_eq!(id, ID),
            other => panic!("recreate {recreate}: page 1 read as {other:?}"),
        }
        assert_eq!(next.len(), 0, "no row of the other session");
    }
}
