//! [`Store`]: the API callers use — sessions validated by strata-core, persisted by whichever
//! [`Backend`] it was built on — and [`restore_stream`], a stored log's rows into a session.
//! The contract every backend keeps is `backend.rs`'s; this file adds validation on top of it.
//!
//! No method panics on bad input or I/O failure.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use strata_core::fork::ForkErrorCode;
use strata_core::{
    fork_session, CloseCause, Event, ForkMode, RawEvent, ResumeError, SeedOptions, Session,
    SessionHeader,
};

use crate::backend::{Backend, Listing, LogStream, ReadFrom, StoredLog};
use crate::error::{ForkError, StoreError};
use crate::writer::SessionWriter;

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

    /// The default store: SQLite at [`default_sqlite_path`](crate::default_sqlite_path).
    pub fn open_default() -> Result<Store, StoreError> {
        Ok(Store::new(crate::sqlite::SqliteBackend::open_default()?))
    }

    /// The backend, for backend-specific operations.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Creates an empty session and returns its writer (the header is durable on return).
    pub fn create(&self, header: SessionHeader) -> Result<SessionWriter, StoreError> {
        self.backend.check_new_id(header.id())?;
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
    pub fn import(
        &self,
        header: SessionHeader,
        events: impl IntoIterator<Item = RawEvent>,
    ) -> Result<(), StoreError> {
        self.backend.check_new_id(header.id())?;
        let location = self.backend.describe();
        let id = header.id().to_owned();
        let mut n_events = 0_usize;
        let counted = events.into_iter().inspect(|_| n_events += 1);
        let session = Session::restore(header, counted, IMPORT_OPTIONS)
            .map_err(|source| invalid(&id, &location, None, source))?;
        // A restored session holds its whole log: its resident events are all of them.
        let stored = session.resident_events().get(..n_events).unwrap_or(&[]);
        self.create_checkpointed(&session, stored)
    }

    /// Stores a log read from elsewhere (another store, a file — see
    /// [`scan_log`](crate::scan_log)) as a new session, event for event, validated as it streams
    /// in. Returns the number of events stored. A torn tail the stream ended before is not part
    /// of the log and is left out; the caller, which still holds the stream, finds it in
    /// [`LogStream::torn`] and should say so.
    pub fn import_stream(&self, stream: &mut LogStream<'_>) -> Result<u64, StoreError> {
        // Before the log is read: an id the store cannot hold fails at once, not after a
        // restore of the whole log.
        self.backend.check_new_id(stream.header().id())?;
        let session = restore_stream(stream, IMPORT_OPTIONS)?;
        let n_events = stream.n_read();
        let stored = session
            .resident_events()
            .get(..usize::try_from(n_events).unwrap_or(usize::MAX))
            .unwrap_or(&[]);
        self.create_checkpointed(&session, stored)?;
        Ok(n_events)
    }

    /// Creates a session from `stored`, the events of the restored `session` (restored with
    /// [`IMPORT_OPTIONS`], so it holds exactly them), and records the
    /// session's checkpoint beside it: the first write-open after an import or a convert then
    /// resumes lazily, as every later one does, instead of restoring the whole log (issue 28).
    /// The checkpoint is best effort, as an open's: without it the next open reads the log.
    fn create_checkpointed(
        &self,
        session: &Session,
        stored: &[Arc<Event>],
    ) -> Result<(), StoreError> {
        let mut appender = self.backend.create(session.header(), stored)?;
        if stored.len() == session.len() {
            if let Some(checkpoint) = session.checkpoint() {
                let _ = appender.checkpoint(&checkpoint);
            }
        }
        Ok(())
    }

    /// Opens a session for writing (exclusive), resuming from the newest verified checkpoint
    /// when the backend keeps one (O(live surface + rows since the checkpoint), issue 9), else
    /// restoring the whole log. The rows read are validated as they stream in; a turn a crash
    /// left open is closed (session-core §8) and the end-seed marker added (§9.1), both made
    /// durable before this returns, and a checkpoint of the result is recorded. Reopening a
    /// repaired log adds nothing. See [`Store::open_write_full`] for the full restore.
    pub fn open_write(&self, id: &str) -> Result<SessionWriter, StoreError> {
        self.open_write_with(id, true)
    }

    /// [`Store::open_write`] that always restores (and so re-validates) the whole log, whatever
    /// checkpoints exist. It neither uses nor maintains them: what it appends makes them stale,
    /// which the next resumable open detects (it then reads the rows after the checkpoint).
    pub fn open_write_full(&self, id: &str) -> Result<SessionWriter, StoreError> {
        self.open_write_with(id, false)
    }

    fn open_write_with(&self, id: &str, resumable: bool) -> Result<SessionWriter, StoreError> {
        let mut restored: Option<(Session, u64, u64)> = None;
        let mut load = |stream: &mut LogStream<'_>| {
            let options = SeedOptions {
                marker_time: now_ms(),
                ..SeedOptions::default()
            };
            let from = stream.first_seq();
            let session = restore_stream(stream, options.repaired(CloseCause::Interrupted))?;
            restored = Some((
                check_id(session, id, stream.location())?,
                stream.next_seq(),
                from,
            ));
            Ok(())
        };
        let from = if resumable {
            ReadFrom::Checkpoint
        } else {
            ReadFrom::Start
        };
        let mut appender = self.backend.open_append(id, from, &mut load)?;
        let Some((session, n_stored, checkpointed)) = restored else {
            return Err(StoreError::Corrupt {
                location: self.backend.describe(),
                line: None,
                seq: None,
                detail: format!("the backend opened session {id:?} without streaming its log"),
            });
        };
        let added: Vec<Arc<Event>> = match n_stored.checked_sub(session.resident_base()) {
            Some(offset) => session
                .resident_events()
                .get(usize::try_from(offset).unwrap_or(usize::MAX)..)
                .unwrap_or(&[])
                .to_vec(),
            None => Vec::new(),
        };
        appender.append_events(&added)?;
        let mut checkpointed = checkpointed;
        if resumable && (session.len() as u64) > checkpointed {
            if let Some(checkpoint) = session.checkpoint() {
                // Best effort: without it the next open reads more of the log.
                if appender.checkpoint(&checkpoint).is_ok() {
                    checkpointed = checkpoint.n_events;
                }
            }
        }
        Ok(SessionWriter::start_checkpointed(
            session,
            appender,
            self.backend.max_record_len(),
            added,
            checkpointed,
        ))
    }

    /// Reads a session as a stream: the header at once, the events as they are pulled.
    pub fn scan(&self, id: &str) -> Result<LogStream<'_>, StoreError> {
        self.backend.scan(id, ReadFrom::Start)
    }

    /// Reads a session's header and complete events without validating or changing anything.
    pub fn read(&self, id: &str) -> Result<StoredLog, StoreError> {
        self.backend.read(id)
    }

    /// Reads and validates a session, streaming rows from the backend into the restore (no
    /// repair is written; the end-seed marker a restore adds exists only in the returned value).
    /// Always the whole log: this is the full verification.
    pub fn load(&self, id: &str) -> Result<Session, StoreError> {
        let mut stream = self.backend.scan(id, ReadFrom::Start)?;
        let session = restore_stream(&mut stream, SeedOptions::default())?;
        check_id(session, id, stream.location())
    }

    /// [`Store::load`] resuming from the newest verified checkpoint when the backend keeps one
    /// (a lazy session: O(live surface + rows since the checkpoint)); the whole log otherwise,
    /// or when the checkpoint turns out not to fit. Reads only, writes nothing.
    pub fn load_lazy(&self, id: &str) -> Result<Session, StoreError> {
        let mut stream = self.backend.scan(id, ReadFrom::Checkpoint)?;
        if stream.resume_point().is_some() {
            match restore_stream(&mut stream, SeedOptions::default()) {
                Ok(session) => return check_id(session, id, stream.location()),
                Err(StoreError::StaleCheckpoint { .. }) => {}
                Err(other) => return Err(other),
            }
            stream = self.backend.scan(id, ReadFrom::Start)?;
        }
        let session = restore_stream(&mut stream, SeedOptions::default())?;
        check_id(session, id, stream.location())
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
        self.backend.check_new_id(child_id)?;
        if self.backend.exists(child_id)? {
            return Err(ForkError::Refused(strata_core::ForkError::new(
                ForkErrorCode::SessionAlreadyExists,
                format!("session \"{child_id}\" already exists"),
            )));
        }
        let mut source = match self.backend.scan(source_id, ReadFrom::Start) {
            Ok(source) => source,
            Err(StoreError::NotFound { .. }) => {
                return Err(ForkError::Refused(strata_core::ForkError::new(
                    ForkErrorCode::SessionNotFound,
                    format!("session \"{source_id}\" not found"),
                )))
            }
            Err(other) => return Err(other.into()),
        };
        let parent = restore_stream(&mut source, SeedOptions::default())?;
        let n_stored = source.n_read();
        // The default cut is the last *stored* event, not a marker the restore added.
        let boundary = boundary.or_else(|| n_stored.checked_sub(1));
        // A boundary is a stored seq: the marker the restore added is not in the source.
        if let Some(boundary) = boundary.filter(|&boundary| boundary >= n_stored) {
            let last = n_stored
                .checked_sub(1)
                .map_or_else(|| "none".to_owned(), |last| last.to_string());
            return Err(ForkError::Refused(strata_core::ForkError::new(
                ForkErrorCode::InvalidBoundary,
                format!(
                    "fork boundary {boundary} does not exist in session \"{source_id}\" (last seq: {last})"
                ),
            )));
        }
        let child = fork_session(
            &parent,
            child_id,
            boundary,
            mode,
            u64::try_from(now_ms()).unwrap_or(0),
        )
        .map_err(ForkError::Refused)?;
        // The inherited prefix is the parent's stored rows (a marker the restore added is not).
        // The child is a new session, whole in memory: its resident events are all of them.
        let n_shared = child.inherited_count().min(n_stored);
        let appender = self.backend.create_fork(
            parent.header(),
            n_shared,
            child.header(),
            child.resident_events(),
        )?;
        Ok(SessionWriter::start(
            child,
            appender,
            self.backend.max_record_len(),
            Vec::new(),
        ))
    }
}

/// How an import restores the log it stores: exactly its events, the end-seed marker left to
/// the first write-open (which resumes from the checkpoint the import records).
const IMPORT_OPTIONS: SeedOptions = SeedOptions {
    marker_time: 0,
    surface_only: false,
    defer_marker: true,
    repair: None,
};

/// Restores a session from a stream, rows flowing from the reader into the core one at a time.
/// A read error ends the rows and is reported in preference to whatever the core made of the
/// shortened log; a rejection names the stream's location and the event's line.
///
/// A stream that resumes after a checkpoint ([`LogStream::resume_point`]) is resumed lazily
/// ([`Session::resume`]); if that fails for any reason (a checkpoint that does not fit, an
/// unreadable pinned event, a rejected row) the result is [`StoreError::StaleCheckpoint`] and
/// the caller reads the whole log, whose restore is the authority on what is wrong with it.
pub fn restore_stream(
    stream: &mut LogStream<'_>,
    options: SeedOptions,
) -> Result<Session, StoreError> {
    let header = stream.header().clone();
    let mut failure = None;
    if let Some(point) = stream.take_resume_point() {
        let location = stream.location().to_owned();
        let resumed = {
            let rows = UntilError {
                stream: &mut *stream,
                failure: &mut failure,
                pull: <LogStream<'_> as Iterator>::next,
            };
            Session::resume(header, point.checkpoint, rows, point.source, options)
        };
        let stale = |detail: String| StoreError::StaleCheckpoint {
            location: location.clone(),
            detail,
        };
        if let Some(error) = failure {
            return Err(stale(format!("reading the rows after it failed: {error}")));
        }
        return resumed.map_err(|error| match error {
            ResumeError::Rejected(rejected) => stale(format!(
                "a row after it is rejected ({rejected}); the whole log decides"
            )),
            other => stale(other.to_string()),
        });
    }
    let restored = {
        // Rows come with their event-local rules already run where the backend decodes on
        // helper threads; the restore runs the rest (same results as `Session::restore`).
        let rows = UntilError {
            stream: &mut *stream,
            failure: &mut failure,
            pull: LogStream::pull_prechecked,
        };
        Session::restore(header, rows, options)
    };
    if let Some(error) = failure {
        return Err(error);
    }
    restored.map_err(|source| {
        invalid(
            stream.header().id(),
            stream.location(),
            stream.first_line(),
            source,
        )
    })
}

/// The rows of a stream up to its first error, which is parked in `failure`; `pull` takes
/// the next row (as wire rows, or checked ahead).
struct UntilError<'s, 'a, T> {
    stream: &'s mut LogStream<'a>,
    failure: &'s mut Option<StoreError>,
    pull: fn(&mut LogStream<'a>) -> Option<Result<T, StoreError>>,
}

impl<T> Iterator for UntilError<'_, '_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.failure.is_some() {
            return None;
        }
        match (self.pull)(self.stream)? {
            Ok(row) => Some(row),
            Err(error) => {
                *self.failure = Some(error);
                None
            }
        }
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
