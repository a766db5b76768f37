//! The storage seam: the [`Backend`] contract every store implements, and [`Store`], the API
//! callers use on top of it.
//!
//! # Contract (every backend, identically)
//!
//! - **Logs are dense.** A stored session is a header plus events with seqs `0..n` (half-open:
//!   `n` is the next seq). Reads return a contiguous prefix starting at seq 0 (or at the
//!   requested seq); a torn final record is never returned.
//! - **Reads stream.** [`Backend::scan`] hands out the header at once and the events one at a
//!   time as a [`LogStream`]: a backend holds a bounded buffer (a read chunk, a page of rows),
//!   never the whole log, so a load holds the restored session and little else. The first error
//!   ends a stream. A stream read while a writer appends sees a prefix of the log.
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
//!   frame) after the log was loaded and before any append, so an append never glues onto torn
//!   bytes, and a log that fails to load is left as it was. A complete record that
//!   does not decode is corruption, reported with file, line and seq, never skipped.
//! - **Validation is the core's.** Backends store what they are given; [`Store`] and
//!   [`SessionWriter`] run every event through strata-core before a byte is written.
//! - **Checkpoints are caches, never trusted blindly.** A backend may keep, beside a log, an
//!   offset index and [`Checkpoint`]s of a prefix of it (issue 9), each with evidence of the
//!   prefix it describes (its length and a hash of its last record). A read from
//!   [`ReadFrom::Checkpoint`] ([`Backend::scan`], [`Backend::open_append`]) offers the newest
//!   checkpoint whose evidence matches the log, with the rows after it and an
//!   [`EventSource`] for the rest; a missing, torn, stale or foreign one is ignored and the
//!   whole log is read. Losing or damaging either never loses or changes an event.
//!
//! No method panics on bad input or I/O failure.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use strata_core::ingest::PrecheckedRow;
use strata_core::{
    fork_session, Checkpoint, CloseCause, Event, EventSource, ForkErrorCode, ForkMode, Generation,
    RawEvent, ResumeError, SeedOptions, Session, SessionHeader,
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

/// The events of a stored log, pulled one at a time: what a backend's [`Backend::scan`] yields
/// behind a [`LogStream`].
///
/// Invariant: the rows carry contiguous seqs starting at the stream's first seq; after the first
/// `Err` the iterator ends.
pub trait EventRows: Iterator<Item = Result<RawEvent, StoreError>> + Send {
    /// The torn end the read stopped before; meaningful once `next` has returned `None`.
    fn torn(&self) -> Option<TornInfo> {
        None
    }

    /// How far the read has got, as `(done, total)` in the backend's own unit (file bytes for
    /// JSONL, rows for SQLite), for progress reports; `None` when the backend cannot tell.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }

    /// The next row with the core's event-local rules already run, for a restore from seq 0
    /// of a log of `generation` ([`Session::restore_prechecked`]). Rows that decode on helper
    /// threads check there (`decode_pool`); by default the row is left for the restore to
    /// check in full.
    fn next_prechecked(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        let _ = generation;
        self.next().map(|row| row.map(PrecheckedRow::deferred))
    }
}

/// A stored session being read: its header now, its events as the caller pulls them.
///
/// Feed it to [`Session::restore`] through [`Store::load`] (or iterate it) so rows flow from the
/// reader into the session without a second copy of the log in memory.
pub struct LogStream<'a> {
    header: SessionHeader,
    location: String,
    first_line: Option<u64>,
    rows: Box<dyn EventRows + 'a>,
    /// Invariant: the number of events yielded so far.
    n_read: u64,
    /// Invariant: the seq of the first row (the resume point's `n_events`, else 0).
    first_seq: u64,
    /// Set when the rows start after a checkpoint rather than at seq 0.
    resume: Option<ResumePoint>,
}

/// Where a resumable read starts: a verified checkpoint of the log's first
/// `checkpoint.n_events` events and a source for the events it names (see
/// [`Session::resume`]). The stream's rows are the events after it.
pub struct ResumePoint {
    /// The checkpoint, verified against the log by the backend.
    pub checkpoint: Checkpoint,
    /// Fetches the events the checkpoint names (and any other, on demand).
    pub source: Arc<dyn EventSource>,
}

impl std::fmt::Debug for ResumePoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumePoint")
            .field("n_events", &self.checkpoint.n_events)
            .field("n_nodes", &self.checkpoint.nodes.len())
            .finish_non_exhaustive()
    }
}

impl<'a> LogStream<'a> {
    /// A stream over `rows`, for backends. `first_line` is the line of event 0 (JSONL: 2).
    pub fn new(
        header: SessionHeader,
        location: String,
        first_line: Option<u64>,
        rows: impl EventRows + 'a,
    ) -> LogStream<'a> {
        LogStream {
            header,
            location,
            first_line,
            rows: Box::new(rows),
            n_read: 0,
            first_seq: 0,
            resume: None,
        }
    }

    /// A stream over the rows after `point`'s checkpoint, for backends: `rows` must start at
    /// seq `point.checkpoint.n_events`.
    pub fn resuming(
        header: SessionHeader,
        location: String,
        first_line: Option<u64>,
        rows: impl EventRows + 'a,
        point: ResumePoint,
    ) -> LogStream<'a> {
        let mut stream = LogStream::new(header, location, first_line, rows);
        stream.first_seq = point.checkpoint.n_events;
        stream.resume = Some(point);
        stream
    }

    /// The seq of the first row: 0, or the resume point's `n_events`.
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// The seq of the next row (the log's length once the stream is exhausted).
    pub fn next_seq(&self) -> u64 {
        self.first_seq + self.n_read
    }

    /// The checkpoint the rows follow, if this stream resumes (see [`ResumePoint`]).
    pub fn resume_point(&self) -> Option<&ResumePoint> {
        self.resume.as_ref()
    }

    /// Takes the resume point out (the stream keeps its first seq).
    pub fn take_resume_point(&mut self) -> Option<ResumePoint> {
        self.resume.take()
    }

    /// The validated header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Where the log lives (a file path, or `sqlite:path#id`), for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The line number of event 0, for stores with lines.
    pub fn first_line(&self) -> Option<u64> {
        self.first_line
    }

    /// How many events have been yielded.
    pub fn n_read(&self) -> u64 {
        self.n_read
    }

    /// The torn end the read stopped before, once the stream is exhausted.
    pub fn torn(&self) -> Option<TornInfo> {
        self.rows.torn()
    }

    /// How far the read has got, as `(done, total)` in the backend's unit (see
    /// [`EventRows::progress`]).
    pub fn progress(&self) -> Option<(u64, u64)> {
        self.rows.progress()
    }

    /// Reads the rest of the stream into a [`StoredLog`] (materializing every row). Only for
    /// streams from seq 0.
    pub fn collect_log(mut self) -> Result<StoredLog, StoreError> {
        let events = self
            .by_ref()
            .collect::<Result<Vec<RawEvent>, StoreError>>()?;
        Ok(StoredLog {
            torn: self.torn(),
            header: self.header,
            events,
            location: self.location,
            first_line: self.first_line,
        })
    }
}

impl LogStream<'_> {
    /// The next row checked ahead for a restore ([`EventRows::next_prechecked`]) under the
    /// stream's own generation.
    fn pull_prechecked(&mut self) -> Option<Result<PrecheckedRow, StoreError>> {
        self.prechecked_as(self.header.generation())
    }

    /// The next row checked ahead under `generation`; only a stream from seq 0 checks ahead.
    fn prechecked_as(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        if self.first_seq != 0 {
            // Rows after a checkpoint are not at their index from 0: the restore checks them.
            return self.next().map(|row| row.map(PrecheckedRow::deferred));
        }
        let item = self.rows.next_prechecked(generation);
        if let Some(Ok(_)) = item {
            self.n_read += 1;
        }
        item
    }
}

/// A stream is itself a source of rows, so a caller can wrap one (to report progress, say)
/// and hand the wrapper to a restore without losing what the backend offers: rows checked
/// ahead on the decoding threads, the torn tail, progress.
impl EventRows for LogStream<'_> {
    fn torn(&self) -> Option<TornInfo> {
        LogStream::torn(self)
    }

    fn progress(&self) -> Option<(u64, u64)> {
        LogStream::progress(self)
    }

    fn next_prechecked(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        self.prechecked_as(generation)
    }
}

impl Iterator for LogStream<'_> {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.rows.next();
        if let Some(Ok(_)) = item {
            self.n_read += 1;
        }
        item
    }
}

impl std::fmt::Debug for LogStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStream")
            .field("id", &self.header.id())
            .field("location", &self.location)
            .field("n_read", &self.n_read)
            .finish_non_exhaustive()
    }
}

/// How a caller consumes the log an open for writing streams to it (see
/// [`Backend::open_append`]).
pub type LoadFn<'f> = dyn FnMut(&mut LogStream<'_>) -> Result<(), StoreError> + 'f;

/// Fails unless `load` consumed `stream` to its end: an appender starts right after the last row
/// the caller saw, so a partly read log would be appended to at the wrong seq. Every backend's
/// open for writing ends its read with this.
pub(crate) fn ensure_read_to_end(
    stream: &mut LogStream<'_>,
    location: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    if stream.next().is_some() {
        return Err(StoreError::Corrupt {
            location: location(),
            line: None,
            seq: Some(stream.next_seq()),
            detail: "the log was not read to its end before opening it for writing".into(),
        });
    }
    Ok(())
}

/// The read of a resumable open for writing on a SQL store: `load` gets the rows after a
/// verified checkpoint when `resumed` offers them, else — no checkpoint, or `load` found it
/// stale — the whole log from `whole`; then [`ensure_read_to_end`]. Returns the consumed
/// stream, whose `next_seq` is where the appender starts.
pub(crate) fn load_resuming<'s>(
    resumed: Option<LogStream<'s>>,
    whole: impl FnOnce() -> Result<LogStream<'s>, StoreError>,
    load: &mut LoadFn<'_>,
    location: impl FnOnce() -> String,
) -> Result<LogStream<'s>, StoreError> {
    if let Some(mut stream) = resumed {
        match load(&mut stream) {
            Ok(()) => {
                ensure_read_to_end(&mut stream, location)?;
                return Ok(stream);
            }
            Err(StoreError::StaleCheckpoint { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    let mut stream = whole()?;
    load(&mut stream)?;
    ensure_read_to_end(&mut stream, location)?;
    Ok(stream)
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

/// Where a read of a stored session starts (issue 9: lazy resume).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadFrom {
    /// The whole log, from its header: what loads and validations read.
    #[default]
    Start,
    /// After the newest checkpoint whose evidence matches the log, when there is one; else the
    /// whole log. What a write-open reads by default.
    Checkpoint,
}

/// A storage backend: the seam every store implements with the contract in the module docs.
pub trait Backend: Send + Sync {
    /// `kind:location`, for messages (`jsonl:/root`, `sqlite:/db`, `memory`).
    fn describe(&self) -> String;

    /// The largest event record the backend accepts, in encoded JSONL bytes.
    fn max_record_len(&self) -> usize;

    /// Refuses an id this backend cannot create a session under — [`StoreError::IdTooLong`]
    /// naming the limit, [`StoreError::BadId`] — so [`Store`] can refuse it before reading the
    /// log it would store; [`Backend::create`] checks it again. Only creation is limited, never
    /// a lookup. The default takes every id.
    fn check_new_id(&self, id: &str) -> Result<(), StoreError> {
        let _ = id;
        Ok(())
    }

    /// Durably publishes a new session holding `header` and `events` (seqs `0..events.len()`),
    /// and returns its exclusive appender. Fails with [`StoreError::AlreadyExists`] if the id
    /// is stored.
    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError>;

    /// Publishes a fork child like [`Backend::create`]. `events[..n_shared]` are verbatim copies
    /// of the stored events `0..n_shared` of the session `parent` heads, so a backend may copy
    /// those rows where they lie instead of writing them again (PostgreSQL: `INSERT … SELECT`);
    /// it must then refuse, changing nothing, when the stored parent no longer matches `parent`.
    /// The default writes every event through [`Backend::create`].
    fn create_fork(
        &self,
        parent: &SessionHeader,
        n_shared: u64,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let _ = (parent, n_shared);
        self.create(header, events)
    }

    /// Opens a stored session for appending: takes the writer lock, streams the log to `load`
    /// (which must consume it to its end), then drops a torn tail and returns an appender
    /// positioned after the last event streamed. When `load` fails nothing is modified and the
    /// lock is released.
    ///
    /// With [`ReadFrom::Checkpoint`] the stream may start after a verified checkpoint
    /// ([`LogStream::resume_point`]). If `load` then fails with [`StoreError::StaleCheckpoint`],
    /// the backend sets its sidecars aside and calls `load` again with the whole log; any other
    /// error is returned as is. The appender then maintains the backend's index and accepts
    /// [`LogAppender::checkpoint`]. A backend without checkpoints reads the whole log.
    fn open_append(
        &self,
        id: &str,
        from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError>;

    /// Reads a stored session as a stream (shared; no lock, no modification): the whole log, or
    /// with [`ReadFrom::Checkpoint`] from after the newest checkpoint whose evidence matches the
    /// log when there is one ([`LogStream::resume_point`]).
    fn scan(&self, id: &str, from: ReadFrom) -> Result<LogStream<'_>, StoreError>;

    /// Reads a whole stored session into memory (shared; no lock, no modification).
    fn read(&self, id: &str) -> Result<StoredLog, StoreError> {
        self.scan(id, ReadFrom::Start)?.collect_log()
    }

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

    /// Encodes `events` as their JSONL lines and appends them as one batch (nothing when
    /// empty): for writes outside a [`SessionWriter`](crate::SessionWriter), such as the
    /// closers an open or a repair adds.
    fn append_events(&mut self, events: &[Arc<Event>]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut jsonl = Vec::new();
        for event in events {
            encode_event_line(event, &mut jsonl);
        }
        self.append(&Batch {
            events,
            jsonl: &jsonl,
        })
    }

    /// Records `checkpoint` beside the log, for later resumable reads. Call only when
    /// `checkpoint.n_events` equals [`LogAppender::next_seq`] (every covered event durable);
    /// anything else is ignored. Best effort: a failure leaves the log and the appender
    /// intact (the next open reads more of the log). The default keeps no checkpoints.
    fn checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let _ = checkpoint;
        Ok(())
    }
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
        let stored = session.events().get(..n_events).unwrap_or(&[]);
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
        let session = restore_stream(stream, None, IMPORT_OPTIONS)?;
        let n_events = stream.n_read();
        let stored = session
            .events()
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
            let session = restore_stream(stream, Some(CloseCause::Interrupted), options)?;
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
        let session = restore_stream(&mut stream, None, SeedOptions::default())?;
        check_id(session, id, stream.location())
    }

    /// [`Store::load`] resuming from the newest verified checkpoint when the backend keeps one
    /// (a lazy session: O(live surface + rows since the checkpoint)); the whole log otherwise,
    /// or when the checkpoint turns out not to fit. Reads only, writes nothing.
    pub fn load_lazy(&self, id: &str) -> Result<Session, StoreError> {
        let mut stream = self.backend.scan(id, ReadFrom::Checkpoint)?;
        if stream.resume_point().is_some() {
            match restore_stream(&mut stream, None, SeedOptions::default()) {
                Ok(session) => return check_id(session, id, stream.location()),
                Err(StoreError::StaleCheckpoint { .. }) => {}
                Err(other) => return Err(other),
            }
            stream = self.backend.scan(id, ReadFrom::Start)?;
        }
        let session = restore_stream(&mut stream, None, SeedOptions::default())?;
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
        let parent = restore_stream(&mut source, None, SeedOptions::default())?;
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
        let n_shared = child.inherited_count().min(n_stored);
        let appender =
            self.backend
                .create_fork(parent.header(), n_shared, child.header(), child.events())?;
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
    repair: Option<CloseCause>,
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
            match repair {
                Some(cause) => Session::resume_repaired(
                    header,
                    point.checkpoint,
                    rows,
                    point.source,
                    cause,
                    options,
                ),
                None => Session::resume(header, point.checkpoint, rows, point.source, options),
            }
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
        Session::restore_prechecked(header, rows, options, repair)
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
