//! The SQLite row decoder: rows of the `events` table, as another program (or a damaged file)
//! may have left them, read back by the SQLite store.

use std::cell::RefCell;
use std::sync::{Mutex, OnceLock};

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use strata_core::SessionHeader;
use strata_store::Store;

/// The session every input's rows are stored under.
const ID: &str = "fuzz";

struct Db {
    store: Store,
    conn: Connection,
}

/// One store per process, with the session created through the store (its header row is the
/// real one); each input then replaces the session's event rows.
fn db() -> Option<&'static Mutex<Db>> {
    static DB: OnceLock<Option<Mutex<Db>>> = OnceLock::new();
    DB.get_or_init(|| {
        let path = crate::scratch().join("rows.sqlite");
        let store = Store::sqlite(&path).ok()?;
        let header = SessionHeader::fresh(ID, 1_700_000_000_000).ok()?;
        store.create(header).ok()?.close().ok()?;
        let conn = Connection::open(&path).ok()?;
        // The harness's own writes need no durability.
        conn.execute_batch("PRAGMA synchronous = OFF").ok()?;
        Some(Mutex::new(Db { store, conn }))
    })
    .as_ref()
}

/// One column's value: a leading `0x01` makes the rest a zstd-compressed BLOB (as the store
/// writes a large `data`), `0x02` a raw BLOB, `0x03` NULL, `0x04` an INTEGER (the rest's
/// digits, or 0); otherwise TEXT (lossy UTF-8: the column is `TEXT` or `ANY`, STRICT).
fn column(field: &[u8]) -> SqlValue {
    match field.split_first() {
        Some((1, rest)) => SqlValue::Blob(compress(rest)),
        Some((2, rest)) => SqlValue::Blob(rest.to_vec()),
        Some((3, _)) => SqlValue::Null,
        Some((4, rest)) => SqlValue::Integer(
            std::str::from_utf8(rest)
                .ok()
                .and_then(|digits| digits.parse().ok())
                .unwrap_or(0),
        ),
        _ => SqlValue::Text(String::from_utf8_lossy(field).into_owned()),
    }
}

/// `plain` as one zstd frame, by one compressor per thread (a context is large to create).
fn compress(plain: &[u8]) -> Vec<u8> {
    thread_local! {
        static ENCODER: RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { RefCell::new(None) };
    }
    ENCODER.with(|encoder| {
        let mut encoder = encoder.borrow_mut();
        if encoder.is_none() {
            *encoder = zstd::bulk::Compressor::new(1).ok();
        }
        encoder
            .as_mut()
            .and_then(|encoder| encoder.compress(plain).ok())
            .unwrap_or_default()
    })
}

/// Rows are `\n`-separated, their columns `\t`-separated in the order `type`, `time`, `data`,
/// `source_event_seqs`, `surface_op`, `ignorable` (missing ones NULL; see `column`). A row
/// the table's constraints refuse is skipped; `next_seq` is set to the rows stored. The store
/// then reads the log (the row decoder) and loads it (the core's rules).
pub fn sqlite_rows(data: &[u8]) {
    let Some(db) = db() else {
        return;
    };
    let db = db.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Ok(tx) = db.conn.unchecked_transaction() else {
        return;
    };
    // Statements prepared once per connection (rusqlite's cache), not per input.
    let run = |sql: &str, params: &[&dyn rusqlite::ToSql]| {
        tx.prepare_cached(sql)
            .and_then(|mut statement| statement.execute(params))
    };
    let _ = run("DELETE FROM events WHERE session_id = ?1", &[&ID]);
    let _ = run("DELETE FROM checkpoints WHERE session_id = ?1", &[&ID]);
    let mut seq = 0_i64;
    for row in data.split(|byte| *byte == b'\n') {
        if seq >= 4096 {
            break;
        }
        let mut columns = row.split(|byte| *byte == b'\t').map(column);
        let mut next = || columns.next().unwrap_or(SqlValue::Null);
        let values = [next(), next(), next(), next(), next(), next()];
        let inserted = run(
            "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, \
             surface_op, ignorable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                ID, seq, values[0], values[1], values[2], values[3], values[4], values[5]
            ],
        );
        if inserted.is_ok() {
            seq += 1;
        }
    }
    let _ = run(
        "UPDATE sessions SET next_seq = ?1 WHERE id = ?2",
        rusqlite::params![seq, ID],
    );
    if tx.commit().is_err() {
        return;
    }
    let _ = db.store.read(ID);
    if let Ok(session) = db.store.load(ID) {
        let _ = session.derive_messages();
    }
}
