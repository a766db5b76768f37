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

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use strata_core::{
    Checkpoint, Event, EventSource, RawEvent, ReplaceSpelling, ScanArena, ScannedRow, Seq,
    SessionHeader, SourceError, SurfaceMeta,
};

use crate::codec::{
    decode_header_line, encode_header_line, expand_sources, scan_json_row, write_range_sources,
    Location,
};
use crate::decode_pool::{DecodePool, PageSource, RecordBatch, RecordDecoder, RecordSource};
use crate::error::StoreError;
use crate::layout::{encode_segment, MAX_SEGMENT_BYTES};
use crate::lines::DEFAULT_MAX_RECORD_LEN;
use crate::lock::SessionLock;
use crate::memory::sort_newest_first;
use crate::store::load_resuming;
use crate::store::{
    default_sqlite_path, Backend, Batch, EventRows, Listing, LoadFn, LogAppender, LogStream,
    ResumePoint, TornInfo,
};

/// The schema this build reads and writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// Page size of a new database, in bytes. A log is read start to end far more often than a
/// row is rewritten: at SQLite's default 4 KiB, a full load of a million ~1 KB events was
/// ~285,000 `pread` calls on the reading thread; 16 KiB pages make that a quarter.
const PAGE_SIZE: u32 = 16 * 1024;

/// `PRAGMA application_id` of a strata database: "STRA".
pub const APPLICATION_ID: i64 = 0x5354_5241;

/// `data` payloads at least this long are stored zstd-compressed when that is smaller.
pub const COMPRESS_THRESHOLD: usize = 4096;

const SCHEMA: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    header TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    next_seq INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_created_at ON sessions (created_at DESC, id);
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time INTEGER NOT NULL,
    data ANY NOT NULL,
    source_event_seqs TEXT,
    surface_op TEXT,
    ignorable INTEGER CHECK (ignorable IS NULL OR ignorable = 1),
    PRIMARY KEY (session_id, seq)
) STRICT;
";

/// The checkpoint cache (issue 9), created on every open when missing.
const CHECKPOINT_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS checkpoints (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n_events INTEGER NOT NULL,
    record BLOB NOT NULL
) STRICT;
";

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
        let mut bytes = Vec::new();
        for column in 0..3 {
            match row
                .get_ref(column)
                .map_err(self.sql("read checkpoint evidence"))?
            {
                ValueRef::Text(text) | ValueRef::Blob(text) => bytes.extend_from_slice(text),
                ValueRef::Integer(value) => bytes.extend_from_slice(value.to_string().as_bytes()),
                ValueRef::Real(value) => bytes.extend_from_slice(value.to_string().as_bytes()),
                ValueRef::Null => {}
            }
            bytes.push(b'\n');
        }
        Ok(Some(crate::checkpoint::fnv64_hex(&bytes)))
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
            let Ok((session_id, evidence, checkpoint)) =
                crate::checkpoint::decode(&record, next_seq)
            else {
                return Ok(None);
            };
            let fits = session_id == id
                && evidence.n_events > 0
                && evidence.n_events <= next_seq
                && evidence.header_hash == crate::checkpoint::fnv64_hex(header_text.as_bytes())
                && self.row_hash_on(&conn, id, evidence.n_events - 1)?.as_ref()
                    == Some(&evidence.last_hash);
            if !fits {
                return Ok(None);
            }
            (header, checkpoint)
        };
        let rows = self.rows(id, checkpoint.n_events)?;
        let point = ResumePoint {
            checkpoint,
            source: Arc::new(SqliteSource {
                backend: self.clone(),
                id: id.to_owned(),
            }),
        };
        Ok(Some(LogStream::resuming(
            header,
            self.location(id),
            None,
            rows,
            point,
        )))
    }

    /// Opens a session for appending; `resumable` first offers `load` the rows after its
    /// checkpoint (see [`Backend::open_append_resumable`]).
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
        let stream = load_resuming(resumed, || self.scan(id), load, || self.location(id))?;
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

/// Decodes a row rebuilt as its V3 JSONL line, on the reading thread or in the decode pool,
/// with the same errors.
#[derive(Clone)]
struct SqliteRowDecoder {
    location: Arc<str>,
}

impl RecordDecoder for SqliteRowDecoder {
    fn decode<'a>(
        &self,
        _line: u64,
        seq: u64,
        bytes: &'a [u8],
        arena: Option<&'a ScanArena>,
    ) -> Result<ScannedRow<'a>, StoreError> {
        let row = scan_json_row(bytes, arena).map_err(|error| StoreError::Corrupt {
            location: self.location.to_string(),
            line: None,
            seq: Some(seq),
            detail: format!("row is not JSON: {error}"),
        })?;
        if !row.envelope().has_source_event_seqs() {
            return Ok(row);
        }
        // Only a row citing sources needs its location (for a range that does not decode):
        // built here, not for every row.
        let location = Location {
            file: Some(PathBuf::from(&*self.location)),
            line: 0,
            seq: Some(seq),
        };
        row.try_map_envelope(|raw| expand_sources(raw, &location))
            .map_err(StoreError::from)
    }
}

fn connect(path: &Path) -> Result<Connection, StoreError> {
    let sql = |op: &'static str| {
        move |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let conn = Connection::open(path).map_err(sql("open"))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(sql("set busy_timeout"))?;
    Ok(conn)
}

/// Checks (or, on a pristine file, creates) the schema, then sets the durability pragmas.
fn initialise(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let sql = |op: &'static str| {
        move |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let pragma = |name: &str| -> Result<i64, StoreError> {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
            .map_err(sql("read pragma"))
    };
    let check = |application_id: i64, user_version: i64| -> Result<(), StoreError> {
        if application_id != APPLICATION_ID {
            return Err(StoreError::ForeignDatabase {
                path: path.to_path_buf(),
                found: application_id,
                expected: APPLICATION_ID,
            });
        }
        if user_version != SCHEMA_VERSION {
            return Err(StoreError::SchemaVersion {
                path: path.to_path_buf(),
                found: user_version,
                expected: SCHEMA_VERSION,
            });
        }
        Ok(())
    };
    let (application_id, user_version) = (pragma("application_id")?, pragma("user_version")?);
    if application_id == 0 && user_version == 0 {
        conn.execute_batch(&format!("PRAGMA page_size = {PAGE_SIZE}"))
            .map_err(sql("set page_size"))?;
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(sql("begin schema transaction"))?;
        let result = (|| {
            let n_objects: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
                .map_err(sql("inspect schema"))?;
            let (application_id, user_version) =
                (pragma("application_id")?, pragma("user_version")?);
            if application_id == 0 && user_version == 0 {
                if n_objects != 0 {
                    return Err(StoreError::SchemaVersion {
                        path: path.to_path_buf(),
                        found: 0,
                        expected: SCHEMA_VERSION,
                    });
                }
                conn.execute_batch(SCHEMA).map_err(sql("create schema"))?;
                conn.execute_batch(&format!(
                    "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
                ))
                .map_err(sql("stamp schema version"))?;
                Ok(())
            } else {
                check(application_id, user_version)
            }
        })();
        match result {
            Ok(()) => conn.execute_batch("COMMIT").map_err(sql("commit schema"))?,
            Err(error) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(error);
            }
        }
    } else {
        check(application_id, user_version)?;
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(sql("set journal_mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Sqlite {
            path: path.to_path_buf(),
            op: "set journal_mode",
            source: rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, not wal"
            )),
        });
    }
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(sql("set pragmas"))?;
    conn.execute_batch(CHECKPOINT_SCHEMA)
        .map_err(sql("create the checkpoint table"))?;
    Ok(())
}

/// The SQL values of one event's columns.
struct Row {
    seq: i64,
    event_type: String,
    time: i64,
    data: SqlValue,
    sources: Option<String>,
    surface_op: Option<String>,
    ignorable: Option<i64>,
}

fn event_row(event: &Event) -> Row {
    // The payload's stored text, as is: no parse, no re-serialization.
    let data = event.data_json();
    let data = if data.len() >= COMPRESS_THRESHOLD {
        match zstd::bulk::compress(data.as_bytes(), 3) {
            Ok(compressed) if compressed.len() < data.len() => SqlValue::Blob(compressed),
            _ => SqlValue::Text(data.to_owned()),
        }
    } else {
        SqlValue::Text(data.to_owned())
    };
    let (sources, surface_op) = match event.meta() {
        SurfaceMeta::LogOnly => (None, None),
        SurfaceMeta::Surface { op, sources } => (
            sources.as_ref().map(|sources| {
                let mut out = Vec::new();
                write_range_sources(sources, &mut out);
                String::from_utf8_lossy(&out).into_owned()
            }),
            Some(op.to_value(ReplaceSpelling::StartSeqEndSeq).to_string()),
        ),
        SurfaceMeta::Opaque {
            surface_op,
            source_event_seqs,
        } => (
            source_event_seqs.as_deref().map(Value::to_string),
            surface_op.as_deref().map(Value::to_string),
        ),
    };
    Row {
        seq: i64::try_from(event.seq().get()).unwrap_or(i64::MAX),
        event_type: event.event_type().as_str().to_owned(),
        time: event.time(),
        data,
        sources,
        surface_op,
        ignorable: event.is_ignorable().then_some(1),
    }
}

fn insert_events(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    events: &[Arc<Event>],
) -> rusqlite::Result<()> {
    let rows: Vec<Row> = events.iter().map(|event| event_row(event)).collect();
    insert_rows(tx, id, &rows)
}

/// Inserts one session's rows on `conn`, inside the caller's transaction.
fn insert_rows(conn: &Connection, id: &str, rows: &[Row]) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for row in rows {
        statement.execute(params![
            id,
            row.seq,
            row.event_type,
            row.time,
            row.data,
            row.sources,
            row.surface_op,
            row.ignorable
        ])?;
    }
    Ok(())
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
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, false)
    }

    fn open_append_resumable(
        &self,
        id: &str,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, true)
    }

    fn scan_resumable(&self, id: &str) -> Result<LogStream<'_>, StoreError> {
        match self.resume_stream(id)? {
            Some(stream) => Ok(stream),
            None => self.scan(id),
        }
    }

    fn scan(&self, id: &str) -> Result<LogStream<'_>, StoreError> {
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

/// Rows per page of a streamed read: large enough that per-query costs vanish, small enough that
/// a page is a bounded buffer.
const PAGE_ROWS: usize = 1024;

/// The rows of one session, read a page at a time (keyset pagination on `seq`) on the shared
/// reader connection, which is locked only while a page is read (so a read-ahead thread never
/// holds it while the caller waits).
struct SqliteRows {
    backend: SqliteBackend,
    id: String,
    /// The session's stored header when the read started (a paged read checks it per page).
    header_text: Arc<str>,
    page: std::vec::IntoIter<RawEvent>,
    /// Rows handed out so far.
    n_yielded: u64,
    /// The session's `next_seq` when the read started (for progress; a live writer may add).
    n_stored: u64,
    /// Invariant: the seq of the first row of the next page.
    next_seq: u64,
    done: bool,
}

impl Iterator for SqliteRows {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.page.next() {
                self.n_yielded += 1;
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            let conn = lock_conn(&self.backend.inner.reader);
            let page = self
                .backend
                .read_events_on(&conn, &self.id, self.next_seq, Some(PAGE_ROWS));
            drop(conn);
            match page {
                Ok(page) => {
                    self.done = page.len() < PAGE_ROWS;
                    self.next_seq += page.len() as u64;
                    self.page = page.into_iter();
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

impl EventRows for SqliteRows {
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.n_yielded.min(self.n_stored), self.n_stored))
    }
}

impl RecordSource for SqliteRows {
    type Decoder = SqliteRowDecoder;
    type Pages = SqlitePages;

    /// More than a page left to read: each decoder reads its own pages on a connection of
    /// its own (the SQLite work, a third of a load's, then runs on every decoder, and no
    /// reading thread copies every row across to them).
    fn pages(&self) -> Option<Arc<SqlitePages>> {
        (!self.done && self.n_yielded == 0 && self.n_stored > self.next_seq + PAGE_ROWS as u64)
            .then(|| {
                Arc::new(SqlitePages {
                    backend: self.backend.clone(),
                    id: self.id.clone(),
                    header_text: self.header_text.clone(),
                    start: self.next_seq,
                    n_stored: self.n_stored,
                })
            })
    }

    fn decoder(&self) -> SqliteRowDecoder {
        self.backend.row_decoder(&self.id)
    }

    /// One page of rows, rebuilt as their lines, per batch.
    fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError> {
        if self.done {
            return Ok(false);
        }
        let conn = lock_conn(&self.backend.inner.reader);
        let backend = &self.backend;
        let id = &self.id;
        let read = backend.read_lines_on(&conn, id, self.next_seq, Some(PAGE_ROWS), |seq, row| {
            batch.push_with(0, seq, |line| backend.row_line(id, row, seq, line))
        });
        drop(conn);
        let n_read = batch.len() as u64;
        self.n_yielded += n_read;
        self.next_seq += n_read;
        match read {
            Ok(n) => {
                self.done = n < PAGE_ROWS as u64;
                Ok(!self.done)
            }
            Err(error) => {
                self.done = true;
                Err(error)
            }
        }
    }

    fn next_row(&mut self) -> Option<Result<RawEvent, StoreError>> {
        self.next()
    }

    fn torn(&self) -> Option<TornInfo> {
        None
    }

    fn progress(&self) -> Option<(u64, u64)> {
        EventRows::progress(self)
    }

    fn location(&self) -> String {
        self.backend.location(&self.id)
    }
}

/// A session's rows from `start` on, read a page ([`PAGE_ROWS`] rows) at a time on any thread's
/// own connection. Rows below the session's `next_seq` never change while it exists, so pages
/// read in separate transactions fit together; a page that is not full is the end (as for
/// [`SqliteRows`], a writer's later rows are simply not read). Each page is read in one
/// transaction with the session's header, which must still be the one the read started with:
/// pages of a session deleted and created again under the same id are never mixed.
struct SqlitePages {
    backend: SqliteBackend,
    id: String,
    header_text: Arc<str>,
    start: u64,
    /// The session's `next_seq` when the read started (for progress).
    n_stored: u64,
}

impl PageSource for SqlitePages {
    type Reader = Connection;

    fn open_reader(&self) -> Result<Connection, StoreError> {
        connect(&self.backend.inner.path)
    }

    fn fill_page(
        &self,
        conn: &mut Connection,
        index: u64,
        batch: &mut RecordBatch,
    ) -> Result<bool, StoreError> {
        let backend = &self.backend;
        let id = &self.id;
        let from = self
            .start
            .saturating_add(index.saturating_mul(PAGE_ROWS as u64));
        // A read transaction: the header check and the page see one snapshot. It only reads,
        // so dropping it (a rollback) is all its end needs.
        let tx = conn
            .transaction()
            .map_err(backend.sql("begin a page read"))?;
        let header_text = match backend.session_row_on(&tx, id) {
            Ok((header_text, _)) => Some(header_text),
            Err(StoreError::NotFound { .. }) => None,
            Err(error) => return Err(error),
        };
        if header_text.as_deref() != Some(&*self.header_text) {
            return Err(StoreError::ChangedDuringRead {
                store: backend.describe(),
                id: id.clone(),
            });
        }
        let n = backend.read_lines_on(&tx, id, from, Some(PAGE_ROWS), |seq, row| {
            batch.push_with(0, seq, |line| backend.row_line(id, row, seq, line))
        })?;
        Ok(n == PAGE_ROWS as u64)
    }

    fn progress(&self, index: u64) -> Option<(u64, u64)> {
        let read = (index + 1).saturating_mul(PAGE_ROWS as u64);
        Some((read.min(self.n_stored), self.n_stored))
    }
}

#[cfg(test)]
mod tests;

mod group_commit;

pub use group_commit::GroupCommitStats;
use group_commit::{GroupCommitter, Job};

/// The exclusive appender of one SQLite session.
struct SqliteAppender {
    backend: SqliteBackend,
    id: String,
    next_seq: u64,
    _lock: SessionLock,
}

impl LogAppender for SqliteAppender {
    fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Submits the batch to the store's group committer: it commits in one transaction with
    /// the batches other sessions submitted at the same moment, under this batch's own checks.
    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let Some(first) = batch.events.first() else {
            return Ok(());
        };
        let job = Job {
            id: self.id.clone(),
            first_seq: first.seq().get(),
            rows: batch.events.iter().map(|event| event_row(event)).collect(),
        };
        self.backend.inner.committer.submit(&self.backend, job)?;
        self.next_seq = first.seq().get() + batch.events.len() as u64;
        Ok(())
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let n_events = checkpoint.n_events;
        if n_events == 0 || n_events != self.next_seq {
            return Ok(());
        }
        let backend = &self.backend;
        let conn = lock_conn(&backend.inner.writer);
        let (header_text, _) = backend.session_row_on(&conn, &self.id)?;
        let Some(last_hash) = backend.row_hash_on(&conn, &self.id, n_events - 1)? else {
            return Ok(());
        };
        let evidence = crate::checkpoint::Evidence {
            n_events,
            log_bytes: 0,
            last_frame: n_events - 1,
            last_offset: 0,
            last_hash,
            header_hash: crate::checkpoint::fnv64_hex(header_text.as_bytes()),
            file: None,
        };
        let record = crate::checkpoint::encode(&self.id, checkpoint, &evidence);
        conn.execute(
            "INSERT INTO checkpoints (session_id, n_events, record) VALUES (?1, ?2, ?3) \
             ON CONFLICT (session_id) DO UPDATE SET n_events = excluded.n_events, \
             record = excluded.record",
            params![self.id, i64::try_from(n_events).unwrap_or(i64::MAX), record],
        )
        .map_err(backend.sql("write checkpoint"))?;
        Ok(())
    }
}

/// Fetches events of one session by seq (the primary key is the index).
struct SqliteSource {
    backend: SqliteBackend,
    id: String,
}

impl EventSource for SqliteSource {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        self.load_many(&[seq])?
            .pop()
            .ok_or_else(|| SourceError::new(seq.get(), "no such row"))
    }

    fn load_many(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        let conn = lock_conn(&self.backend.inner.reader);
        seqs.iter()
            .map(|seq| {
                let rows = self
                    .backend
                    .read_events_on(&conn, &self.id, seq.get(), Some(1))
                    .map_err(|error| SourceError::new(seq.get(), error))?;
                rows.into_iter()
                    .next()
                    .ok_or_else(|| SourceError::new(seq.get(), "no such row"))
            })
            .collect()
    }

    fn load_range(&self, start: u64, end: u64) -> Result<Vec<RawEvent>, SourceError> {
        let conn = lock_conn(&self.backend.inner.reader);
        let limit = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX);
        self.backend
            .read_events_on(&conn, &self.id, start, Some(limit))
            .map_err(|error| SourceError::new(start, error))
    }
}
