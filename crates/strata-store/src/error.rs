//! Store errors: one enum per operation family, each variant carrying its evidence.
//!
//! [`StoreError`] is what a backend reports (creating, opening, reading, listing, deleting):
//! I/O with the path and the operation, corruption with file, line and seq, lock conflicts with
//! the holder's pid, refusals with both the expected and the found value. [`AppendError`] is
//! what a [`SessionWriter`](crate::SessionWriter) append reports, and [`ForkError`] what a store
//! fork reports; both nest a `StoreError` when the store itself failed.
//!
//! Messages are lowercase, carry no trailing period, and name what they concern.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use strata_core::AcceptError;

use strata_format::codec::CodecError;
use strata_format::layout::LayoutError;

/// Who holds a session's writer lock, as far as the lock file tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's process id, when it had written it yet.
    pub pid: Option<u32>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "pid {pid}"),
            None => f.write_str("another process (pid not yet recorded)"),
        }
    }
}

/// A backend failure: the store could not do what was asked, or what it holds is bad.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session with this id is stored.
    #[error("session {id:?} not found in {store}")]
    NotFound {
        /// The store, as `backend:location`.
        store: String,
        /// The id looked up.
        id: String,
    },
    /// The session was deleted (and perhaps created again) while a read that spans several
    /// transactions was under way: the rows read so far are of a session no longer stored.
    #[error("session {id:?} in {store} was deleted or replaced while it was being read")]
    ChangedDuringRead {
        /// The store, as `backend:location`.
        store: String,
        /// The id read.
        id: String,
    },
    /// A session with this id is already stored.
    #[error("session {id:?} already exists in {store}")]
    AlreadyExists {
        /// The store, as `backend:location`.
        store: String,
        /// The id.
        id: String,
    },
    /// Another writer holds the session's lock.
    #[error("session {id:?} is open for writing by {holder}")]
    Locked {
        /// The session id.
        id: String,
        /// The lock holder.
        holder: LockHolder,
    },
    /// A file-system operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `append to`, `fsync`, …).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A zstd log whose first frame does not hold the header line alone: a file compressed
    /// some other way than dsh frames it (by the `zstd` tool, for one). Not corruption — the
    /// reading commands read such a file — but a store, and anything that appends, needs dsh's
    /// framing and does not touch it.
    #[error(
        "{}: the first zstd frame does not hold exactly the header line, which is dsh's \
         framing and what a writer needs; {}",
        path.display(),
        crate::zstd::FOREIGN_FRAMING_HINT
    )]
    ForeignFraming {
        /// The file.
        path: PathBuf,
    },
    /// A line or header did not decode (corruption or an unsupported format version).
    #[error(transparent)]
    Codec(Box<CodecError>),
    /// Stored bytes are damaged in a way the codec cannot name by line (zstd frames, seq gaps,
    /// SQL rows).
    #[error("corrupt session log {location}{}: {detail}", at(*.line, *.seq))]
    Corrupt {
        /// The file (or `sqlite:path#id`).
        location: String,
        /// The line, for JSONL logs.
        line: Option<u64>,
        /// The seq concerned.
        seq: Option<u64>,
        /// What is wrong.
        detail: String,
    },
    /// The stored log is intact but breaks a core acceptance rule.
    #[error("session {id:?} in {location}{} failed validation: {source} [{}]", at(*.line, .source.seq), .source.rule)]
    Invalid {
        /// The session id.
        id: String,
        /// The file or database.
        location: String,
        /// The line of the offending event, for JSONL logs.
        line: Option<u64>,
        /// The core's verdict (rule id, seq, upstream text).
        #[source]
        source: Box<AcceptError>,
    },
    /// An id that cannot name a session directory.
    #[error("session id {id:?} cannot be stored: {source}")]
    BadId {
        /// The id.
        id: String,
        /// Why.
        #[source]
        source: LayoutError,
    },
    /// An id longer than the store can hold, refused when a session would be created, before
    /// anything is read or written.
    #[error("session id {} is {n_bytes} bytes{}; {store} takes at most {limit} ({reason})", short_id(id), directory_name(*.n_name_bytes))]
    IdTooLong {
        /// The store, as `backend:location`.
        store: String,
        /// The id.
        id: String,
        /// Its length in UTF-8 bytes.
        n_bytes: usize,
        /// The length of the name the store spells it as, when that name is what is limited
        /// (JSONL: the session directory, dsh's encoding of the id).
        n_name_bytes: Option<usize>,
        /// The most bytes the store takes (of the name, when there is one).
        limit: usize,
        /// What sets the limit.
        reason: &'static str,
    },
    /// The same id is stored under two project directories.
    #[error("duplicate session id {id:?}: stored at both {} and {}", first.display(), second.display())]
    Duplicate {
        /// The id.
        id: String,
        /// One location.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A session file of the other encoding sits in this store's root.
    #[error("{} uses {found}, but this store is configured for {expected}; use a separate root or select the matching compression mode", path.display())]
    WrongEncoding {
        /// The offending file.
        path: PathBuf,
        /// Its encoding.
        found: &'static str,
        /// The store's encoding.
        expected: &'static str,
    },
    /// The session directory holds only a log generation this build does not read.
    #[error("{} is log format v{found}; this build reads v{supported}{}", path.display(), if *.found > *.supported { " — upgrade strata to open it" } else { " and cannot migrate older generations yet" })]
    Generation {
        /// The newest log file found.
        path: PathBuf,
        /// Its generation.
        found: u32,
        /// The generation this build reads and writes.
        supported: u32,
    },
    /// A JSONL store keeps V3 logs only: its layout, sidecars and directory selection are V3's
    /// (docs/format-v4.md); a V4 session is kept by the SQLite and PostgreSQL stores.
    #[error("{store}: session \"{id}\" is a v{found} log; this JSONL store keeps v3 logs (store it in SQLite or PostgreSQL)")]
    GenerationNotKept {
        /// The store.
        store: String,
        /// The session id.
        id: String,
        /// The header's generation.
        found: u64,
    },
    /// A SQLite operation failed.
    #[error("sqlite {}: {op}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The driver's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was made by another schema version (bump-and-reject).
    #[error("database {} has schema version {found}, but this build reads only version {expected}", path.display())]
    SchemaVersion {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` found.
        found: i64,
        /// The version this build reads.
        expected: i64,
    },
    /// The database file belongs to another application.
    #[error("database {} has application id {found:#x}, not strata's {expected:#x}", path.display())]
    ForeignDatabase {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA application_id` found.
        found: i64,
        /// strata's id.
        expected: i64,
    },
    /// The writer's idea of the next seq disagrees with the store's: a stale writer, or the
    /// loser of two writers racing on one session (PostgreSQL's expected-next-seq check).
    #[error("stale writer for session {id:?}: it appends at seq {expected}, but the store's next seq is {found}")]
    SeqConflict {
        /// The session id.
        id: String,
        /// The seq the batch starts at.
        expected: u64,
        /// The store's next seq.
        found: u64,
    },
    /// A write failed and truncating back to the pre-append size failed too.
    #[error("append to {} failed ({write}) and truncating back to {size} bytes also failed ({rollback}); the log may end in a torn record, which the next open drops", path.display())]
    RollbackFailed {
        /// The log file.
        path: PathBuf,
        /// The size before the append.
        size: u64,
        /// The write or sync error.
        write: io::Error,
        /// The truncate or sync error.
        rollback: io::Error,
    },
    /// A checkpoint or offset index beside a log does not describe it (stale, torn, of
    /// another version or another file): the open falls back to reading the whole log.
    #[error("checkpoint for {location} is not usable: {detail}")]
    StaleCheckpoint {
        /// The log (file, or `sqlite:path#id`).
        location: String,
        /// Why it was set aside.
        detail: String,
    },
    /// A PostgreSQL operation failed (with the server's message, code and detail when the
    /// server sent one).
    #[cfg(feature = "postgres")]
    #[error("{store}: {op}: {}", postgres_message(source))]
    Postgres {
        /// The store, as `postgres://user@host:port/db?schema=NAME` (never a password).
        store: String,
        /// What was being done.
        op: &'static str,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },
    /// The PostgreSQL schema was made by another strata schema version, or holds tables strata
    /// did not make (bump-and-reject; `found` is 0 when there is no version row).
    #[error("{store}: schema {schema:?} has strata schema version {found}, but this build reads only version {expected}")]
    PostgresSchemaVersion {
        /// The store.
        store: String,
        /// The PostgreSQL schema.
        schema: String,
        /// The version recorded in the schema's `schema_version` table.
        found: i64,
        /// The version this build reads.
        expected: i64,
    },
    /// A PostgreSQL store address that cannot be used.
    #[error("postgres store {url}: {detail}")]
    PostgresUrl {
        /// The address, its password removed.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The store cannot do this at all (a single loose file holds one session: it cannot
    /// create or delete one), so the caller is told what does.
    #[error("{store}: cannot {op}: {reason}")]
    Unsupported {
        /// The store, as `backend:location`.
        store: String,
        /// What was asked.
        op: &'static str,
        /// Why not, and what works instead.
        reason: &'static str,
    },
    /// A group commit of the SQLite store panicked (a bug); its batches were not stored, and the
    /// store goes on committing later ones.
    #[error("{store}: a group commit failed inside strata (a bug, please report it); its batches were not stored")]
    CommitPanicked {
        /// The store, as `backend:location`.
        store: String,
    },
    /// A failure injected by a test backend.
    #[error("injected failure: {0}")]
    Injected(String),
}

impl From<CodecError> for StoreError {
    fn from(error: CodecError) -> StoreError {
        StoreError::Codec(Box::new(error))
    }
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> StoreError {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// The driver's error with what its `Display` leaves out: the server's severity, message,
/// SQLSTATE and detail, or the chain of causes.
#[cfg(feature = "postgres")]
pub(crate) fn postgres_message(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut out = format!(
            "{} {}: {}",
            db.severity().to_lowercase(),
            db.code().code(),
            db.message()
        );
        if let Some(detail) = db.detail() {
            out.push_str(" (");
            out.push_str(detail);
            out.push(')');
        }
        return out;
    }
    error_chain(error)
}

/// An error and its sources, joined by `: `.
#[cfg(feature = "postgres")]
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// An id as a message names it: quoted and escaped, its first 32 characters when longer.
fn short_id(id: &str) -> String {
    match id.char_indices().nth(32) {
        Some((cut, _)) => format!("{:?}…", &id[..cut]),
        None => format!("{id:?}"),
    }
}

fn directory_name(n_name_bytes: Option<usize>) -> String {
    n_name_bytes.map_or_else(String::new, |n| format!(", {n} as a directory name"))
}

fn at(line: Option<u64>, seq: Option<u64>) -> String {
    match (line, seq) {
        (Some(line), Some(seq)) => format!(" at line {line} (seq {seq})"),
        (Some(line), None) => format!(" at line {line}"),
        (None, Some(seq)) => format!(" at seq {seq}"),
        (None, None) => String::new(),
    }
}

/// Why an append through a [`SessionWriter`](crate::SessionWriter) failed.
///
/// `Rejected` and `TooLarge` change nothing (the batch never reached the store and the writer
/// stays usable). `Store` and `Poisoned` mean the writer is poisoned: every later append fails
/// with `Poisoned`; reopen the session to recover.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// strata-core refused a candidate; nothing was written.
    #[error("append rejected: {0} [{rule}]", rule = .0.rule)]
    Rejected(AcceptError),
    /// An event encodes to a record larger than the store's limit; nothing was written.
    #[error("event at seq {seq} encodes to {len} bytes, above the {limit}-byte record limit")]
    TooLarge {
        /// The seq the event would have had.
        seq: u64,
        /// Its encoded length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Writing this batch failed; the writer is now poisoned.
    #[error("append to session {id:?} failed: {cause}")]
    Store {
        /// The session id.
        id: String,
        /// The store's error.
        cause: Arc<StoreError>,
    },
    /// An earlier write failed; the writer refuses every later append. Reopen to recover.
    #[error("session {id:?} writer is poisoned by an earlier failure ({cause}); reopen the session to recover")]
    Poisoned {
        /// The session id.
        id: String,
        /// The error that poisoned the writer.
        cause: Arc<StoreError>,
    },
}

/// Why a store fork failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// The fork itself was refused (session-core §9.2 codes: not found, exists, boundary, open
    /// turn).
    #[error("fork refused: {0} [{code}]", code = .0.code.as_str())]
    Refused(strata_core::ForkError),
    /// Reading the source or publishing the child failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
