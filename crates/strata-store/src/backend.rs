//! The storage seam: the [`Backend`] contract every store implements, and the types it
//! speaks in. This file names no implementation; [`Store`](crate::Store) is the API callers use on top of it.
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
//! - **Validation is the core's.** Backends store what they are given; [`Store`](crate::Store) and
//!   [`SessionWriter`](crate::SessionWriter) run every event through strata-core before a byte is written.
//! - **Checkpoints are caches, never trusted blindly.** A backend may keep, beside a log, an
//!   offset index and [`Checkpoint`]s of a prefix of it (issue 9), each with evidence of the
//!   prefix it describes (its length and a hash of its last record). A read from
//!   [`ReadFrom::Checkpoint`] ([`Backend::scan`], [`Backend::open_append`]) offers the newest
//!   checkpoint whose evidence matches the log, with the rows after it and an
//!   [`EventSource`] for the rest; a missing, torn, stale or foreign one is ignored and the
//!   whole log is read. Losing or damaging either never loses or changes an event.
//!
//! No method panics on bad input or I/O failure.

use std::sync::Arc;

use strata_core::ingest::PrecheckedRow;
use strata_core::{Checkpoint, Event, EventSource, Generation, RawEvent, SessionHeader};

use crate::error::StoreError;
use strata_format::codec::encode_event_line;

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
    /// of a log of `generation` ([`Session::restore`](strata_core::Session::restore) of prechecked rows). Rows that decode on helper
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
/// Feed it to [`Session::restore`](strata_core::Session::restore) through [`Store::load`](crate::Store::load) (or iterate it) so rows flow from the
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
/// [`Session::resume`](strata_core::Session::resume)). The stream's rows are the events after it.
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
    pub(crate) fn pull_prechecked(&mut self) -> Option<Result<PrecheckedRow, StoreError>> {
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

/// Where following a session's new events starts (`strata tail`; PostgreSQL's follower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowFrom {
    /// At this seq (the session's length: only events appended from now on).
    Seq(u64),
    /// At the last `n` stored events (`tail -n`), counted when following starts, so no event
    /// falls between the backlog and the live ones.
    Last(u64),
}

impl FollowFrom {
    /// The seq of the first event to hand out from a session of `n_stored` events.
    pub fn first_seq(self, n_stored: u64) -> u64 {
        match self {
            FollowFrom::Seq(seq) => seq,
            FollowFrom::Last(n) => n_stored.saturating_sub(n),
        }
    }
}

/// A storage backend: the seam every store implements with the contract in the module docs.
pub trait Backend: Send + Sync {
    /// `kind:location`, for messages (`jsonl:/root`, `sqlite:/db`, `memory`).
    fn describe(&self) -> String;

    /// The largest event record the backend accepts, in encoded JSONL bytes.
    fn max_record_len(&self) -> usize;

    /// Refuses an id this backend cannot create a session under — [`StoreError::IdTooLong`]
    /// naming the limit, [`StoreError::BadId`] — so [`Store`](crate::Store) can refuse it before reading the
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
