//! The SQLite backend: strata's embedded default store (persistence §3, rebuilt).
//!
//! One database holds every session: a `sessions` row per header and an `events` row per event
//! with the envelope as columns (`type`, `seq`, `time`, `data`, `source_event_seqs`,
//! `surface_op`, `ignorable`), primary key `(session_id, seq)`.
//!
//! Invariants:
//! - **Durable commits.** WAL journal, `synchronous=FULL` (a committed append survives an OS
//!   crash), every write in a `BEGIN IMMEDIATE` transaction on the one writer connection.
//!   Appends of different sessions waiting at the same moment share one transaction and one
//!   fsync, each batch in its own savepoint (`group_commit`); an append is acknowledged only
//!   after the commit that holds it returned.
//! - **Bump-and-reject.** `PRAGMA user_version` is [`SCHEMA_VERSION`] and `application_id` is
//!   [`APPLICATION_ID`]; a database with any other version is refused on open, naming both,
//!   before anything is changed. A pristine file is initialised in one transaction.
//! - **No stale writer.** Inside each append transaction (its batch's savepoint) the batch's
//!   first seq must equal the session's stored `next_seq`, else that batch alone fails; on top
//!   of that a per-session `flock` file (`<db>.locks/<encodeSegment(id)>.lock`, a hashed name
//!   when that is too long for a file name) makes a second writer fail at open with the
//!   holder's pid. Ids have no length limit.
//! - **Lossless rows.** `data` is the exact JSON text (zstd-compressed as a BLOB when it is at
//!   least 4 KiB and compression shrinks it); `source_event_seqs` is the JSONL range encoding;
//!   rows read back are the same events (envelope key order is canonical).
//! - **Checkpoints are a cache** (issue 9). The `(session_id, seq)` key is the offset index; a
//!   `checkpoints` row per session holds the newest checkpoint record, created with the table
//!   on open when missing (no schema version bump: older builds ignore it, and their appends
//!   only make it stale). It is used only when it covers at most `next_seq` events and the
//!   stored row at its last covered seq still hashes to what it recorded.
//!
//! This file is the backend (open, the session-level operations of the `Backend` trait); its
//! parts: `schema` (tables, pragmas, first open), `rows` (an event as its columns and back),
//! `read` (paged reads, the lazy session's event source), `append` (a session's appender) and
//! `group_commit` (one transaction and one fsync for the batches of many sessions).

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use strata_core::{Event, RawEvent, SessionHeader};

use crate::backend::load_resuming;
use crate::backend::{Backend, Listing, LoadFn, LogAppender, LogStream, ReadFrom};
use crate::decode_pool::{DecodePool, RecordDecoder};
use crate::error::StoreError;
use crate::keyed::{fitting, row_hash, KeyedSource};
use crate::lock::SessionLock;
use crate::memory::sort_newest_first;
use strata_format::codec::{decode_header_line, encode_header_line, Location};
use strata_format::layout::{encode_segment, MAX_SEGMENT_BYTES};
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;

/// The SQLite [`Backend`].
#[derive(Clone)]
pub struct SqliteBackend {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    locks_dir: PathBuf,
    /// The one writer connection.
    writer: Mutex<Connection>,
    /// A connection for reads, so reads never wait behind a commit's fsync.
    reader: Mutex<Connection>,
    /// Commits the appends of every session of this store together (see `group_commit`).
    committer: GroupCommitter,
}

impl SqliteBackend {
    /// Opens (creating if missing) the database at `path`, refusing other schema versions.
    pub fn open(path: &Path) -> Result<SqliteBackend, StoreError> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|source| StoreError::io("create directory", parent, source))?;
        }
        let writer = connect(path)?;
        initialise(path, &writer)?;
        let reader = connect(path)?;
        let mut locks_dir = path.as_os_str().to_owned();
        locks_dir.push(".locks");
        Ok(SqliteBackend {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                locks_dir: PathBuf::from(locks_dir),
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
                committer: GroupCommitter::default(),
            }),
        })
    }

    /// Opens the default store (see [`default_sqlite_path`]).
    pub fn open_default() -> Result<SqliteBackend, StoreError> {
        let path = default_sqlite_path().ok_or_else(|| {
            StoreError::io(
                "locate default store",
                "$HOME",
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "none of STRATA_HOME, XDG_DATA_HOME, HOME is set",
                ),
            )
        })?;
        SqliteBackend::open(&path)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The group committer's counters: how many commits carried how many sessions' batches.
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        self.inner.committer.stats()
    }

    fn sql(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.inner.path.clone(),
            op,
            source,
        }
    }

    fn lock(&self, id: &str) -> Result<SessionLock, StoreError> {
        let name = lock_file_name(id)?;
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.inner.locks_dir)
            .map_err(|source| StoreError::io("create directory", &self.inner.locks_dir, source))?;
        SessionLock::acquire(&self.inner.locks_dir.join(name), id)
    }

    fn location(&self, id: &str) -> String {
        format!("sqlite:{}#{id}", self.inner.path.display())
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            store: self.describe(),
            id: id.to_owned(),
        }
    }

    /// Reads a session's header on `conn`.
    fn read_header_on(&self, conn: &Connection, id: &str) -> Result<SessionHeader, StoreError> {
        let header_text: Option<String> = conn
            .prepare_cached("SELECT header FROM sessions WHERE id = ?1")
            .and_then(|mut statement| statement.query_row([id], |row| row.get(0)).optional())
            .map_err(self.sql("read session"))?;
        let Some(header_text) = header_text else {
            return Err(self.not_found(id));
        };
        self.decode_header(id, &header_text)
    }

    /// Decodes a session's stored header text.
    fn decode_header(&self, id: &str, header_text: &str) -> Result<SessionHeader, StoreError> {
        let location = Location {
            file: Some(PathBuf::from(self.location(id))),
            line: 1,
            seq: None,
        };
        Ok(decode_header_line(header_text.as_bytes(), &location)?)
    }

    /// Reads up to `limit` events with seq `from_seq..` on `conn` (all of them when `limit` is
    /// `None`), requiring contiguous seqs.
    fn read_events_on(
        &self,
        conn: &Connection,
        id: &str,
        from_seq: u64,
        limit: Option<usize>,
    ) -> Result<Vec<RawEvent>, StoreError> {
        let mut events = Vec::with_capacity(limit.unwrap_or(0));
        let decoder = self.row_decoder(id);
        let mut line = Vec::new();
        self.read_lines_on(conn, id, from_seq, limit, |expected, row| {
            line.clear();
            self.row_line(id, row, expected, &mut line)?;
            events.push(decoder.decode(0, expected, &line, None)?.into_raw());
            Ok(())
        })?;
        Ok(events)
    }

    /// Calls `each(seq, row)` on the rows with seq `from_seq..` in order (at most `limit`),
    /// stopping at its first error; returns how many rows were read.
    fn read_lines_on(
        &self,
        conn: &Connection,
        id: &str,
        from_seq: u64,
        limit: Option<usize>,
        mut each: impl FnMut(u64, &rusqlite::Row<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        let mut statement = conn
            .prepare_cached(
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable \
                 FROM events WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(self.sql("read events"))?;
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        let limit = limit.map_or(-1, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
        let mut rows = statement
            .query(params![id, from, limit])
            .map_err(self.sql("read events"))?;
        let mut expected = from_seq;
        while let Some(row) = rows.next().map_err(self.sql("read events"))? {
            each(expected, row)?;
            expected += 1;
        }
        Ok(expected - from_seq)
    }

    /// Decodes this session's rows rebuilt as lines (see [`SqliteBackend::row_line`]).
    fn row_decoder(&self, id: &str) -> SqliteRowDecoder {
        SqliteRowDecoder {
            location: Arc::from(self.location(id)),
        }
    }

    /// FNV-1a 64 of the stored row at `seq` (type, time and data as stored), the evidence a
    /// checkpoint keeps of its last covered event; `None` when there is no such row.
    fn row_hash_on(
        &self,
        conn: &Connection,
        id: &str,
        seq: u64,
    ) -> Result<Option<String>, StoreError> {
        let mut statement = conn
            .prepare_cached(
                "SELECT type, time, data FROM events WHERE session_id = ?1 AND seq = ?2",
            )
            .map_err(self.sql("read checkpoint evidence"))?;
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let mut rows = statement
            .query(params![id, seq])
            .map_err(self.sql("read checkpoint evidence"))?;
        let Some(row) = rows.next().map_err(self.sql("read checkpoint evidence"))? else {
            return Ok(None);
        };
        let column = |index: usize| -> Result<Vec<u8>, StoreError> {
            Ok(
                match row
                    .get_ref(index)
                    .map_err(self.sql("read checkpoint evidence"))?
                {
                    ValueRef::Text(text) | ValueRef::Blob(text) => text.to_vec(),
                    ValueRef::Integer(value) => value.to_string().into_bytes(),
                    ValueRef::Real(value) => value.to_string().into_bytes(),
                    ValueRef::Null => Vec::new(),
                },
            )
        };
        Ok(Some(row_hash(&column(0)?, &column(1)?, &column(2)?)))
    }

    /// The stored header text and next seq of a session.
    fn session_row_on(&self, conn: &Connection, id: &str) -> Result<(String, u64), StoreError> {
        let row: Option<(String, i64)> = conn
            .prepare_cached("SELECT header, next_seq FROM sessions WHERE id = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(self.sql("read session"))?;
        let (header, next_seq) = row.ok_or_else(|| self.not_found(id))?;
        Ok((header, u64::try_from(next_seq).unwrap_or(0)))
    }

    /// The rows of session `id` from `from_seq` on, read a page at a time.
    fn rows(&self, id: &str, from_seq: u64) -> Result<SqliteRows, StoreError> {
        let (header_text, n_stored) = self.session_row_on(&lock_conn(&self.inner.reader), id)?;
        Ok(SqliteRows {
            backend: self.clone(),
            id: id.to_owned(),
            header_text: Arc::from(header_text),
            page: Vec::new().into_iter(),
            n_yielded: 0,
            n_stored,
            next_seq: from_seq,
            done: false,
        })
    }

    /// The rows after the session's checkpoint, when it has one that fits the stored log.
    fn resume_stream(&self, id: &str) -> Result<Option<LogStream<'_>>, StoreError> {
        let (header, checkpoint) = {
            let conn = lock_conn(&self.inner.reader);
            let header = self.read_header_on(&conn, id)?;
            let (header_text, next_seq) = self.session_row_on(&conn, id)?;
            let record: Option<Vec<u8>> = conn
                .prepare_cached("SELECT record FROM checkpoints WHERE session_id = ?1")
                .and_then(|mut statement| statement.query_row([id], |row| row.get(0)).optional())
                .map_err(self.sql("read checkpoint"))?;
            let Some(record) = record else {
                return Ok(None);
            };
            let fitting = fitting(&record, id, &header_text, next_seq, |seq| {
                self.row_hash_on(&conn, id, seq)
            })?;
            let Some(checkpoint) = fitting else {
                return Ok(None);
            };
            (header, checkpoint)
        };
        let rows = self.rows(id, checkpoint.n_events)?;
        let point = KeyedSource::resume_point(
            checkpoint,
            SqliteKeyed {
                backend: self.clone(),
                id: id.to_owned(),
            },
        );
        Ok(Some(LogStream::resuming(
            header,
            self.location(id),
            None,
            rows,
            point,
        )))
    }

    /// Opens a session for appending; `resumable` first offers `load` the rows after its
    /// checkpoint (see [`Backend::open_append`] from [`ReadFrom::Checkpoint`]).
    fn open_append_with(
        &self,
        id: &str,
        load: &mut LoadFn<'_>,
        resumable: bool,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        if !self.exists(id)? {
            return Err(self.not_found(id));
        }
        let lock = self.lock(id)?;
        let resumed = if resumable {
            self.resume_stream(id)?
        } else {
            None
        };
        let stream = load_resuming(
            resumed,
            || self.scan(id, ReadFrom::Start),
            load,
            || self.location(id),
        )?;
        Ok(Box::new(SqliteAppender {
            backend: self.clone(),
            id: id.to_owned(),
            next_seq: stream.next_seq(),
            _lock: lock,
        }))
    }

    fn row_line(
        &self,
        id: &str,
        row: &rusqlite::Row<'_>,
        expected: u64,
        line: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let corrupt = |detail: String| StoreError::Corrupt {
            location: self.location(id),
            line: None,
            seq: Some(expected),
            detail,
        };
        let seq: i64 = row.get(0).map_err(self.sql("read events"))?;
        if u64::try_from(seq).ok() != Some(expected) {
            return Err(corrupt(format!(
                "seq out of order: expected {expected}, found {seq}"
            )));
        }
        let event_type = match row.get_ref(1).map_err(self.sql("read events"))? {
            ValueRef::Text(text) => text,
            other => {
                return Err(corrupt(format!(
                    "type has SQL type {:?}",
                    other.data_type()
                )))
            }
        };
        let time: i64 = row.get(2).map_err(self.sql("read events"))?;
        // The row is rebuilt as its V3 JSONL line (dsh's key order) and decoded by the line
        // codec, so the payload stays the stored text: never parsed into a tree here, never
        // re-serialized.
        let data = row.get_ref(3).map_err(self.sql("read events"))?;
        let data_len = match data {
            ValueRef::Text(text) | ValueRef::Blob(text) => text.len(),
            _ => 0,
        };
        line.reserve(data_len + 256);
        line.extend_from_slice(b"{\"type\":");
        let event_type = std::str::from_utf8(event_type)
            .map_err(|error| corrupt(format!("type is not UTF-8: {error}")))?;
        if event_type
            .bytes()
            .all(|byte| (b' '..0x7f).contains(&byte) && byte != b'"' && byte != b'\\')
        {
            // Nearly every type: printable ASCII that JSON spells as it is.
            line.push(b'"');
            line.extend_from_slice(event_type.as_bytes());
            line.push(b'"');
        } else {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *line, event_type);
        }
        let mut number = itoa::Buffer::new();
        line.extend_from_slice(b",\"seq\":");
        line.extend_from_slice(number.format(seq).as_bytes());
        line.extend_from_slice(b",\"time\":");
        line.extend_from_slice(number.format(time).as_bytes());
        line.extend_from_slice(b",\"data\":");
        match data {
            ValueRef::Text(text) => line.extend_from_slice(text),
            ValueRef::Blob(blob) => {
                let text = zstd::bulk::decompress(blob, 1 << 30)
                    .map_err(|error| corrupt(format!("data does not decompress: {error}")))?;
                line.extend_from_slice(&text);
            }
            other => {
                return Err(corrupt(format!(
                    "data has SQL type {:?}",
                    other.data_type()
                )))
            }
        }
        for (index, key, prefix) in [
            (4, "sourceEventSeqs", &b",\"sourceEventSeqs\":"[..]),
            (5, "surfaceOp", b",\"surfaceOp\":"),
        ] {
            match row.get_ref(index).map_err(self.sql("read events"))? {
                ValueRef::Null => {}
                ValueRef::Text(text) => {
                    line.extend_from_slice(prefix);
                    line.extend_from_slice(text);
                }
                other => {
                    return Err(corrupt(format!(
                        "{key} has SQL type {:?}",
                        other.data_type()
                    )))
                }
            }
        }
        let ignorable: Option<i64> = row.get(6).map_err(self.sql("read events"))?;
        if ignorable == Some(1) {
            line.extend_from_slice(b",\"ignorable\":true");
        }
        line.push(b'}');
        Ok(())
    }
}

/// The name of session `id`'s lock file in `<db>.locks/`: `<encodeSegment(id)>.lock`, or, when
/// that would not fit a file name (the database has no other limit on ids), the first
/// [`LOCK_NAME_PREFIX`] bytes of the segment, `~h` and the id's 128-bit FNV-1a in hex. A
/// canonical segment never holds `~h` (every `~` starts four upper-case hex digits), so the two
/// forms never meet; two long ids sharing a name only make their writers exclude each other.
fn lock_file_name(id: &str) -> Result<String, StoreError> {
    const LOCK_SUFFIX: &str = ".lock";
    const LOCK_NAME_PREFIX: usize = 200;
    let segment = encode_segment(id).map_err(|source| StoreError::BadId {
        id: id.to_owned(),
        source,
    })?;
    if segment.len() + LOCK_SUFFIX.len() <= MAX_SEGMENT_BYTES {
        return Ok(format!("{segment}{LOCK_SUFFIX}"));
    }
    // The segment is ASCII, so any byte index is a char boundary.
    let prefix = &segment[..LOCK_NAME_PREFIX];
    Ok(format!(
        "{prefix}~h{:032x}{LOCK_SUFFIX}",
        fnv1a_128(id.as_bytes())
    ))
}

/// FNV-1a, 128 bits: tells long ids' lock files apart (not a defence against an adversary
/// choosing ids, who could at most make two sessions' writers wait for each other).
fn fnv1a_128(bytes: &[u8]) -> u128 {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in bytes {
        hash ^= u128::from(*byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    hash
}

fn lock_conn(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Backend for SqliteBackend {
    fn describe(&self) -> String {
        format!("sqlite:{}", self.inner.path.display())
    }

    fn max_record_len(&self) -> usize {
        DEFAULT_MAX_RECORD_LEN
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let id = header.id();
        let lock = self.lock(id)?;
        let mut header_line = Vec::new();
        encode_header_line(header, &mut header_line)?;
        header_line.pop();
        let header_text = String::from_utf8_lossy(&header_line).into_owned();
        let mut conn = lock_conn(&self.inner.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.sql("begin create"))?;
        let exists: Option<i64> = tx
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(self.sql("create session"))?;
        if exists.is_some() {
            return Err(StoreError::AlreadyExists {
                store: self.describe(),
                id: id.to_owned(),
            });
        }
        tx.execute(
            "INSERT INTO sessions (id, header, created_at, cwd, parent_session, next_seq) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                header_text,
                i64::try_from(header.created_at()).unwrap_or(i64::MAX),
                header.cwd(),
                header.parent_session(),
                events.len() as i64
            ],
        )
        .map_err(self.sql("create session"))?;
        insert_events(&tx, id, events).map_err(self.sql("create session"))?;
        tx.commit().map_err(self.sql("commit create"))?;
        drop(conn);
        Ok(Box::new(SqliteAppender {
            backend: self.clone(),
            id: id.to_owned(),
            next_seq: events.len() as u64,
            _lock: lock,
        }))
    }

    fn open_append(
        &self,
        id: &str,
        from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, from == ReadFrom::Checkpoint)
    }

    fn scan(&self, id: &str, from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        if from == ReadFrom::Checkpoint {
            if let Some(stream) = self.resume_stream(id)? {
                return Ok(stream);
            }
        }
        let rows = self.rows(id, 0)?;
        // The header the rows were read against (one query for both).
        let header = self.decode_header(id, &rows.header_text)?;
        // Rows are read a page at a time and decoded on a pool of threads (see `decode_pool`).
        Ok(LogStream::new(
            header,
            self.location(id),
            None,
            DecodePool::new(rows),
        ))
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        let conn = lock_conn(&self.inner.reader);
        self.read_header_on(&conn, id)?;
        self.read_events_on(&conn, id, from_seq, None)
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        let conn = lock_conn(&self.inner.reader);
        conn.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")
            .and_then(|mut statement| statement.exists([id]))
            .map_err(self.sql("look up session"))
    }

    fn list(&self) -> Result<Listing, StoreError> {
        let conn = lock_conn(&self.inner.reader);
        let mut statement = conn
            .prepare_cached("SELECT id, header FROM sessions ORDER BY created_at DESC, id")
            .map_err(self.sql("list sessions"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(self.sql("list sessions"))?;
        let mut listing = Listing::default();
        for row in rows {
            let (id, header) = row.map_err(self.sql("list sessions"))?;
            let location = Location {
                file: Some(PathBuf::from(self.location(&id))),
                line: 1,
                seq: None,
            };
            match decode_header_line(header.as_bytes(), &location) {
                Ok(header) => listing.sessions.push(header),
                Err(error) => listing.problems.push(error.into()),
            }
        }
        sort_newest_first(&mut listing.sessions);
        Ok(listing)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        if !self.exists(id)? {
            return Err(self.not_found(id));
        }
        let _lock = self.lock(id)?;
        let mut conn = lock_conn(&self.inner.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.sql("begin delete"))?;
        tx.execute("DELETE FROM checkpoints WHERE session_id = ?1", [id])
            .map_err(self.sql("delete checkpoint"))?;
        tx.execute("DELETE FROM events WHERE session_id = ?1", [id])
            .map_err(self.sql("delete events"))?;
        tx.execute("DELETE FROM sessions WHERE id = ?1", [id])
            .map_err(self.sql("delete session"))?;
        tx.commit().map_err(self.sql("commit delete"))
    }
}

/// Where strata keeps its default SQLite store: `$STRATA_HOME/strata.db`, else
/// `$XDG_DATA_HOME/strata/strata.db`, else `~/.local/share/strata/strata.db`. `None` when
/// none of those variables is set.
pub fn default_sqlite_path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(home) = var("STRATA_HOME") {
        return Some(PathBuf::from(home).join("strata.db"));
    }
    if let Some(data) = var("XDG_DATA_HOME") {
        return Some(PathBuf::from(data).join("strata").join("strata.db"));
    }
    var("HOME").map(|home| {
        PathBuf::from(home)
            .join(".local")
            .join("share")
            .join("strata")
            .join("strata.db")
    })
}

#[cfg(test)]
mod tests;

mod append;
mod group_commit;
mod read;
mod rows;
mod schema;

pub use group_commit::GroupCommitStats;
use group_commit::GroupCommitter;

use append::SqliteAppender;
use read::{SqliteKeyed, SqliteRows};
pub use rows::COMPRESS_THRESHOLD;
use rows::{insert_events, SqliteRowDecoder};
use schema::{connect, initialise};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
