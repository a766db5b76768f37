//! The storage seam: the [`Backend`] contract every store implements, and [`Store`], the API
//! callers use on top of it.
//!
//! # Contract (every backend, identically)
//!
//! - **Logs are dense.** A stored session is a header plus events with seqs `0..n` (half-open:
//!   `n` is the next seq). Reads return a contiguous prefix starting at seq 0 (or at the
//!   requested seq); a torn final record is never returned.
//! - **Create is atomic and durable.** [`Backend::create`] publishes the header and the given
//!   events together, or nothing; it never replaces an existing session.
//! - **One writer per session.** [`Backend::open_append`] and [`Backend::create`] take the
//!   session's exclusive writer lock (across processes); a second writer gets
//!   [`StoreError::Locked`] naming the holder's pid. The lock is released when the returned
//!   [`LogAppender`] is dropped or its process dies. Readers take no lock.
//! - **Append is all-or-nothing and durable on return.** [`LogAppender::append`] writes a
//!   batch whose first seq is the log's next seq; `Ok` means the batch is on stable storage.
//!   On `Err` the log holds exactly what it held before the call, except when the error is
//!   [`StoreError::RollbackFailed`], which leaves at most a torn final record that the next
//!   open drops. Either way the appender must not be used again: a latched I/O error poisons
//!   the writer; reopen to recover.
//! - **Torn tails.** Opening for writing drops a torn final record (raw JSONL: the
//!   unterminated line; zstd: the torn frame, whose complete records are re-appended in a fresh
//!   frame) before any append, so an append never glues onto torn bytes. A complete record that
//!   does not decode is corruption, reported with file, line and seq, never skipped.
//! - **Validation is the core's.** Backends store what they are given; [`Store`] and
//!   [`SessionWriter`] run every event through strata-core before a byte is written.
//!
//! No method panics on bad input or I/O failure.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use strata_core::{
    fork_session, CloseCause, Event, ForkErrorCode, ForkMode, RawEvent, SeedOptions, Session,
    SessionHeader,
};

use crate::codec::encode_event_line;
use crate::error::{ForkError, StoreError};
use crate::writer::SessionWriter;

/// One batch handed to [`LogAppender::append`]: the accepted events, and the same events
/// already encoded as V3 JSONL lines (each ending in `\n`), so line-based backends write them
/// without encoding twice.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    /// The events, with contiguous seqs.
    pub events: &'a [Arc<Event>],
    /// `encode_event_line` of every event, concatenated.
    pub jsonl: &'a [u8],
}

/// A stored session as read: its header and the contiguous, complete prefix of its events.
#[derive(Debug, Clone)]
pub struct StoredLog {
    /// The validated header.
    pub header: SessionHeader,
    /// The events, seq `0..events.len()`, decoded but not yet judged by the core.
    pub events: Vec<RawEvent>,
    /// Where the log lives (a file path, or `sqlite:path#id`), for messages.
    pub location: String,
    /// The line number of event 0 (JSONL: 2, after the header line); `None` for stores without
    /// lines. Event `i` is on line `first_line + i`.
    pub first_line: Option<u64>,
    /// What an open for writing dropped, or what a read ignored, at the end of the log.
    pub torn: Option<TornInfo>,
}

/// A torn end of a log (persistence §2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornInfo {
    /// Byte offset where the torn part starts: the log is (or would be) truncated here.
    pub offset: u64,
    /// Bytes from `offset` to the end of the file when read.
    pub len: u64,
    /// Complete records recovered from a torn zstd frame (re-appended by an open for writing).
    pub n_recovered: usize,
}

/// The result of listing a store: headers newest first, and the sessions that could not be
/// read, so one bad file neither hides the others nor goes unreported.
#[derive(Debug, Default)]
pub struct Listing {
    /// Headers, newest `createdAt` first (ties by id).
    pub sessions: Vec<SessionHeader>,
    /// Sessions whose header could not be read.
    pub problems: Vec<StoreError>,
}

/// A storage backend: the seam every store implements with the contract in the module docs.
pub trait Backend: Send + Sync {
    /// `kind:location`, for messages (`jsonl:/root`, `sqlite:/db`, `memory`).
    fn describe(&self) -> String;

    /// The largest event record the backend accepts, in encoded JSONL bytes.
    fn max_record_len(&self) -> usize;

    /// Durably publishes a new session holding `header` and `events` (seqs `0..events.len()`),
    /// and returns its exclusive appender. Fails with [`StoreError::AlreadyExists`] if the id
    /// is stored.
    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError>;

    /// Opens a stored session for appending: takes the writer lock, reads the log, drops a torn
    /// tail, and returns the log with an appender positioned after its last event.
    fn open_append(&self, id: &str) -> Result<(StoredLog, Box<dyn LogAppender>), StoreError>;

    /// Reads a stored session (shared; no lock, no modification).
    fn read(&self, id: &str) -> Result<StoredLog, StoreError>;

    /// Reads the events with seq in `from_seq..n` (half-open; empty when `from_seq >= n`),
    /// without validating the prefix before them.
    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError>;

    /// Whether a session with this id is stored.
    fn exists(&self, id: &str) -> Result<bool, StoreError>;

    /// Lists stored sessions from their headers only.
    fn list(&self) -> Result<Listing, StoreError>;

    /// Deletes a stored session; fails with [`StoreError::Locked`] while it is open for writing.
    fn delete(&self, id: &str) -> Result<(), StoreError>;
}

/// The exclusive append handle of one stored session (see the module contract).
pub trait LogAppender: Send {
    /// The seq the next batch must start at. Invariant: equals the number of stored events.
    fn next_seq(&self) -> u64;

    /// Durably appends `batch` (first seq = [`LogAppender::next_seq`]). On error the appender
    /// is poisoned and must be dropped.
    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError>;
}

/// The store API: sessions validated by strata-core, persisted by a [`Backend`].
///
/// ```
/// use strata_core::{payload, Candidate, SessionHeader, SurfaceIntent};
/// use strata_store::Store;
///
/// let store = Store::memory();
/// let writer = store.create(SessionHeader::fresh("s1", 1).unwrap()).unwrap();
/// let hello = payload::UserMessage { message: payload::user_text_message("m1", "hello") };
/// writer.append(vec![Candidate::surface(hello, SurfaceIntent::append())], 2).unwrap();
/// writer.close().unwrap();
///
/// let log = store.read("s1").unwrap();
/// assert_eq!(log.events.len(), 1);
/// assert_eq!(store.list().unwrap().sessions[0].id(), "s1");
/// ```
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
}

impl Store {
    /// A store over `backend`.
    pub fn new(backend: impl Backend + 'static) -> Store {
        Store {
            backend: Arc::new(backend),
        }
    }

    /// An in-memory store (tests and examples).
    pub fn memory() -> Store {
        Store::new(crate::memory::MemoryBackend::new())
    }

    /// A JSONL store rooted at `root` (created on first write) with default limits.
    pub fn jsonl(root: impl Into<PathBuf>, compression: crate::jsonl::Compression) -> Store {
        Store::new(crate::jsonl::JsonlBackend::new(
            crate::jsonl::JsonlConfig::new(root, compression),
        ))
    }

    /// The SQLite store at `path` (created if missing; other schema versions refused).
    pub fn sqlite(path: &std::path::Path) -> Result<Store, StoreError> {
        Ok(Store::new(crate::sqlite::SqliteBackend::open(path)?))
    }

    /// The default store: SQLite at [`default_sqlite_path`].
    pub fn open_default() -> Result<Store, StoreError> {
        Ok(Store::new(crate::sqlite::SqliteBackend::open_default()?))
    }

    /// The backend, for backend-specific operations.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Creates an empty session and returns its writer (the header is durable on return).
    pub fn create(&self, header: SessionHeader) -> Result<SessionWriter, StoreError> {
        let location = self.backend.describe();
        let id = header.id().to_owned();
        let session =
            Session::create(header).map_err(|source| invalid(&id, &location, None, source))?;
        let appender = self.backend.create(session.header(), &[])?;
        Ok(SessionWriter::start(
            session,
            appender,
            self.backend.max_record_len(),
            Vec::new(),
        ))
    }

    /// Stores an existing log as a new session, event for event (import). The log is validated
    /// by the core first; nothing is added to it.
    pub fn import(&self, header: SessionHeader, events: Vec<RawEvent>) -> Result<(), StoreError> {
        let location = self.backend.describe();
        let n_events = events.len();
        let id = header.id().to_owned();
        let session = Session::restore(header, events, SeedOptions::default())
            .map_err(|source| invalid(&id, &location, None, source))?;
        let stored = session.events().get(..n_events).unwrap_or(&[]);
        drop(self.backend.create(session.header(), stored)?);
        Ok(())
    }

    /// Opens a session for writing (exclusive). The stored log is validated; a turn a crash left
    /// open is closed (session-core §8) and the end-seed marker added (§9.1), and both are made
    /// durable before this returns. Reopening a repaired log adds nothing.
    pub fn open_write(&self, id: &str) -> Result<SessionWriter, StoreError> {
        let (stored, mut appender) = self.backend.open_append(id)?;
        let n_stored = stored.events.len();
        let options = SeedOptions {
            marker_time: now_ms(),
        };
        let session = Session::restore_repaired(
            stored.header.clone(),
            stored.events,
            CloseCause::Interrupted,
            options,
        )
        .map_err(|source| invalid(id, &stored.location, stored.first_line, source))
        .and_then(|session| check_id(session, id, &stored.location))?;
        let added: Vec<Arc<Event>> = session.events()[n_stored..].to_vec();
        if !added.is_empty() {
            let mut jsonl = Vec::new();
            for event in &added {
                encode_event_line(event, &mut jsonl);
            }
            appender.append(&Batch {
                events: &added,
                jsonl: &jsonl,
            })?;
        }
        Ok(SessionWriter::start(
            session,
            appender,
            self.backend.max_record_len(),
            added,
        ))
    }

    /// Reads a session's header and complete events without validating or changing anything.
    pub fn read(&self, id: &str) -> Result<StoredLog, StoreError> {
        self.backend.read(id)
    }

    /// Reads and validates a session (no repair is written; the end-seed marker a restore adds
    /// exists only in the returned value).
    pub fn load(&self, id: &str) -> Result<Session, StoreError> {
        let stored = self.backend.read(id)?;
        let location = stored.location.clone();
        let first_line = stored.first_line;
        Session::restore(stored.header, stored.events, SeedOptions::default())
            .map_err(|source| invalid(id, &location, first_line, source))
            .and_then(|session| check_id(session, id, &location))
    }

    /// Reads the events with seq in `from_seq..n` (half-open), not validating earlier events.
    pub fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        self.backend.read_from(id, from_seq)
    }

    /// Lists sessions from their headers, newest first.
    pub fn list(&self) -> Result<Listing, StoreError> {
        self.backend.list()
    }

    /// Deletes a session (refused while it is open for writing).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.backend.delete(id)
    }

    /// Forks `source_id` into a new session `child_id` (session-core §9.2, or §9.3 with
    /// [`ForkMode::AnyPrefix`]) and returns the child's writer. `boundary` is the last inherited
    /// seq, inclusive; `None` means the source's last stored event.
    pub fn fork(
        &self,
        source_id: &str,
        child_id: &str,
        boundary: Option<u64>,
        mode: ForkMode,
    ) -> Result<SessionWriter, ForkError> {
        if self.backend.exists(child_id)? {
            return Err(ForkError::Refused(strata_core::ForkError::new(
                ForkErrorCode::SessionAlreadyExists,
                format!("session \"{child_id}\" already exists"),
            )));
        }
        let source = match self.backend.read(source_id) {
            Ok(source) => source,
            Err(StoreError::NotFound { .. }) => {
                return Err(ForkError::Refused(strata_core::ForkError::new(
                    ForkErrorCode::SessionNotFound,
                    format!("session \"{source_id}\" not found"),
                )))
            }
            Err(other) => return Err(other.into()),
        };
        let n_stored = source.events.len() as u64;
        let location = source.location.clone();
        let first_line = source.first_line;
        let parent = Session::restore(source.header, source.events, SeedOptions::default())
            .map_err(|error| invalid(source_id, &location, first_line, error))?;
        // The default cut is the last *stored* event, not a marker the restore added.
        let boundary = boundary.or_else(|| n_stored.checked_sub(1));
        let child = fork_session(
            &parent,
            child_id,
            boundary,
            mode,
            u64::try_from(now_ms()).unwrap_or(0),
        )
        .map_err(ForkError::Refused)?;
        let appender = self.backend.create(child.header(), child.events())?;
        Ok(SessionWriter::start(
            child,
            appender,
            self.backend.max_record_len(),
            Vec::new(),
        ))
    }
}

/// Wraps a core rejection of a stored log with where it is.
pub(crate) fn invalid(
    id: &str,
    location: &str,
    first_line: Option<u64>,
    source: strata_core::AcceptError,
) -> StoreError {
    let line = match (first_line, source.index.or(source.seq)) {
        (Some(first), Some(index)) => Some(first + index),
        _ => None,
    };
    StoreError::Invalid {
        id: id.to_owned(),
        location: location.to_owned(),
        line,
        source: Box::new(source),
    }
}

fn check_id(session: Session, id: &str, location: &str) -> Result<Session, StoreError> {
    if session.id() == id {
        Ok(session)
    } else {
        Err(StoreError::Corrupt {
            location: location.to_owned(),
            line: Some(1),
            seq: None,
            detail: format!(
                "header names session {:?}, not the requested {id:?} (id collision)",
                session.id()
            ),
        })
    }
}

/// Wall-clock epoch milliseconds: the store, not the core, reads the clock.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
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
