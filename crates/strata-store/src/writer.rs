//! The session writer: validated appends, group-committed by one flusher thread.
//!
//! An append is validated and committed to the in-memory [`Session`] on the caller's thread
//! (under the writer's lock, so seq order equals queue order), encoded as JSONL (so an oversize
//! record is refused before anything is queued), then queued. One flusher thread takes
//! *everything* queued, writes it with one [`LogAppender::append`] (one write + one fsync), and
//! wakes the appenders whose batches it covered. Appenders that arrive while a flush is in
//! progress coalesce into the next one. No deadline or debounce is involved: a flush starts as
//! soon as the previous one ends. An append that finds no flush running (and no checkpoint
//! waiting) flushes the queue itself on its own thread instead: the same single flush, without
//! the two thread handoffs to the flusher and back (issue 28: with 64 sessions on one SQLite
//! store, about 1.5 context switches per append instead of 3.7, and less CPU per append).
//!
//! Invariants:
//! - `durable_len` only grows; every event with seq `< durable_len` is on stable storage, and
//!   `append` returns `Ok` only once `durable_len` passes its batch's last seq.
//! - Queued events are exactly the session's events with seq `durable_len..session.len()`
//!   (minus the batch being flushed).
//! - One flush at a time: whoever flushes (the flusher thread, or an appender flushing inline)
//!   has taken the appender out of the state and puts it back when done, so `appender` is
//!   `None` exactly while a flush runs; flushes take the queue whole, so batches reach the
//!   store in seq order.
//! - After a store failure the writer is poisoned: `failed` is set, never cleared, and every
//!   waiting and later append fails. The in-memory session may then hold events that never
//!   became durable; reopen the session to recover.
//! - Checkpoints (issue 9) are taken on the caller's thread right after a batch commits, so a
//!   checkpoint is exactly the session's state at its `n_events`; the flusher records it
//!   with [`LogAppender::checkpoint`] only once those events are durable. One is taken every
//!   [`CHECKPOINT_EVERY`] events (sooner at a turn end) and one when the writer closes, so a
//!   reopen replays a short tail. Recording is best effort and never poisons the writer.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use strata_core::{Candidate, Event, Session};

use crate::backend::{Batch, LogAppender};
use crate::error::{AppendError, StoreError};
use strata_format::codec::encode_event_line;

/// The exclusive, group-committing writer of one open session.
///
/// `append` takes `&self`, so a writer shared by threads (`Arc<SessionWriter>`) coalesces their
/// concurrent appends. Dropping the writer flushes what is queued and releases the session's
/// writer lock; [`SessionWriter::close`] does the same and reports a failure.
pub struct SessionWriter {
    id: String,
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
    max_record_len: usize,
    added_on_open: Vec<Arc<Event>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when work is queued or the writer closes.
    work: Condvar,
    /// Signalled when `durable_len` grows or the writer fails.
    durable: Condvar,
}

/// Events between periodic checkpoints (a turn end takes one after a sixteenth of that).
pub const CHECKPOINT_EVERY: u64 = 4096;

struct State {
    session: Session,
    /// A checkpoint waiting for its events to be durable; the newest replaces an older one.
    pending_checkpoint: Option<strata_core::Checkpoint>,
    /// Invariant: the `n_events` of the newest checkpoint taken (recorded or pending).
    checkpointed: u64,
    /// Checkpoints the flusher recorded successfully, for tests and benches.
    n_checkpoints: u64,
    /// Events accepted but not yet handed to the flusher, with their encoded lines.
    queued: Vec<Arc<Event>>,
    queued_jsonl: Vec<u8>,
    /// Invariant: every event with seq below this is durable.
    durable_len: u64,
    failed: Option<Arc<StoreError>>,
    closing: bool,
    /// Number of flushes done (group commits), for tests and benches.
    n_flushes: u64,
    /// The store's appender, here while no flush runs (see the invariants above).
    appender: Option<Box<dyn LogAppender>>,
}

impl SessionWriter {
    /// Starts the flusher for a session whose events are all durable.
    pub(crate) fn start(
        session: Session,
        appender: Box<dyn LogAppender>,
        max_record_len: usize,
        added_on_open: Vec<Arc<Event>>,
    ) -> SessionWriter {
        SessionWriter::start_checkpointed(session, appender, max_record_len, added_on_open, 0)
    }

    /// [`SessionWriter::start`] for a session whose first `checkpointed` events are covered by
    /// a recorded checkpoint.
    pub(crate) fn start_checkpointed(
        session: Session,
        appender: Box<dyn LogAppender>,
        max_record_len: usize,
        added_on_open: Vec<Arc<Event>>,
        checkpointed: u64,
    ) -> SessionWriter {
        let id = session.id().to_owned();
        let durable_len = session.len() as u64;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending_checkpoint: None,
                checkpointed,
                n_checkpoints: 0,
                session,
                queued: Vec::new(),
                queued_jsonl: Vec::new(),
                durable_len,
                failed: None,
                closing: false,
                n_flushes: 0,
                appender: Some(appender),
            }),
            work: Condvar::new(),
            durable: Condvar::new(),
        });
        let flusher_shared = Arc::clone(&shared);
        let flusher = thread::Builder::new()
            // Thread names may not hold NUL; ids may hold anything.
            .name(format!(
                "strata-flush-{}",
                id.chars()
                    .filter(char::is_ascii_alphanumeric)
                    .take(16)
                    .collect::<String>()
            ))
            .spawn(move || flush_loop(&flusher_shared));
        let flusher = match flusher {
            Ok(handle) => Some(handle),
            Err(error) => {
                // Without a flusher nothing can be made durable: poison the writer.
                let mut state = lock(&shared.state);
                state.failed = Some(Arc::new(StoreError::io(
                    "spawn flusher thread for",
                    &id,
                    error,
                )));
                None
            }
        };
        SessionWriter {
            id,
            shared,
            flusher,
            max_record_len,
            added_on_open,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Validates `candidates` as one unit at `time` and appends them; returns once they are
    /// durable. A rejected or oversized batch changes nothing and leaves the writer usable.
    pub fn append(
        &self,
        candidates: Vec<Candidate>,
        time: i64,
    ) -> Result<Vec<Arc<Event>>, AppendError> {
        let mut guard = lock(&self.shared.state);
        if let Some(cause) = &guard.failed {
            return Err(AppendError::Poisoned {
                id: self.id.clone(),
                cause: Arc::clone(cause),
            });
        }
        let state = &mut *guard;
        let jsonl_start = state.queued_jsonl.len();
        let mark = state.session.begin_batch();
        let mut events = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            let event = match state.session.append(candidate, time) {
                Ok(event) => event,
                Err(error) => {
                    state.session.rollback(mark);
                    state.queued_jsonl.truncate(jsonl_start);
                    return Err(AppendError::Rejected(error));
                }
            };
            let line_start = state.queued_jsonl.len();
            encode_event_line(&event, &mut state.queued_jsonl);
            let len = state.queued_jsonl.len() - line_start - 1;
            if len > self.max_record_len {
                state.session.rollback(mark);
                state.queued_jsonl.truncate(jsonl_start);
                return Err(AppendError::TooLarge {
                    seq: event.seq().get(),
                    len,
                    limit: self.max_record_len,
                });
            }
            events.push(event);
        }
        state.session.end_batch(mark);
        let Some(last) = events.last() else {
            return Ok(events);
        };
        let target = last.seq().get() + 1;
        let n_new = target.saturating_sub(state.checkpointed);
        let turn_ended = *last.event_type() == strata_core::EventType::TurnEnd;
        if n_new >= CHECKPOINT_EVERY || (turn_ended && n_new >= CHECKPOINT_EVERY / 16) {
            if let Some(checkpoint) = state.session.checkpoint() {
                state.checkpointed = checkpoint.n_events;
                state.pending_checkpoint = Some(checkpoint);
            }
        }
        state.queued.extend(events.iter().cloned());
        if state.pending_checkpoint.is_none() {
            if let Some(appender) = state.appender.take() {
                // No flush running: flush on this thread. (A pending checkpoint is left to the
                // flusher, which records it right after the flush that makes it durable.)
                return self.flush_inline(guard, appender, events, target);
            }
        }
        self.shared.work.notify_one();
        loop {
            if guard.durable_len >= target {
                return Ok(events);
            }
            if let Some(cause) = &guard.failed {
                return Err(AppendError::Store {
                    id: self.id.clone(),
                    cause: Arc::clone(cause),
                });
            }
            guard = self
                .shared
                .durable
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Flushes the whole queue (this append's batch and any queued behind the flush that just
    /// ended) on the caller's thread, with the appender taken from the state.
    fn flush_inline(
        &self,
        mut guard: MutexGuard<'_, State>,
        mut appender: Box<dyn LogAppender>,
        events: Vec<Arc<Event>>,
        target: u64,
    ) -> Result<Vec<Arc<Event>>, AppendError> {
        let batch_events = std::mem::take(&mut guard.queued);
        let jsonl = std::mem::take(&mut guard.queued_jsonl);
        drop(guard);
        let result = appender.append(&Batch {
            events: &batch_events,
            jsonl: &jsonl,
        });
        let mut state = lock(&self.shared.state);
        state.n_flushes += 1;
        match result {
            Ok(()) => {
                if let Some(last) = batch_events.last() {
                    state.durable_len = last.seq().get() + 1;
                }
                state.appender = Some(appender);
            }
            // A failed appender is poisoned: dropped, never put back.
            Err(error) => state.failed = Some(Arc::new(error)),
        }
        self.shared.durable.notify_all();
        // Batches queued meanwhile, a checkpoint taken meanwhile: the flusher's work now.
        if !state.queued.is_empty() || state.pending_checkpoint.is_some() {
            self.shared.work.notify_one();
        }
        if state.durable_len >= target {
            return Ok(events);
        }
        let cause = state.failed.clone().unwrap_or_else(|| {
            Arc::new(StoreError::Injected(
                "inline flush left the batch undurable".into(),
            ))
        });
        Err(AppendError::Store {
            id: self.id.clone(),
            cause,
        })
    }

    /// Appends one candidate; see [`SessionWriter::append`].
    pub fn append_one(&self, candidate: Candidate, time: i64) -> Result<Arc<Event>, AppendError> {
        let mut events = self.append(vec![candidate], time)?;
        // One candidate in, one event out.
        events.pop().ok_or_else(|| AppendError::Poisoned {
            id: self.id.clone(),
            cause: Arc::new(StoreError::Injected("append returned no event".into())),
        })
    }

    /// Runs `f` on the in-memory session (its events, surface, derived messages).
    pub fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&lock(&self.shared.state).session)
    }

    /// How many events are durable. Invariant: only grows.
    pub fn durable_len(&self) -> u64 {
        lock(&self.shared.state).durable_len
    }

    /// How many group commits (write + fsync) were done, by the flusher or inline.
    pub fn n_flushes(&self) -> u64 {
        lock(&self.shared.state).n_flushes
    }

    /// How many checkpoints the flusher has recorded beside the log.
    pub fn n_checkpoints(&self) -> u64 {
        lock(&self.shared.state).n_checkpoints
    }

    /// Events the open added and made durable: crash closers and the end-seed marker.
    pub fn added_on_open(&self) -> &[Arc<Event>] {
        &self.added_on_open
    }

    /// The error that poisoned the writer, if any.
    pub fn failure(&self) -> Option<Arc<StoreError>> {
        lock(&self.shared.state).failed.clone()
    }

    /// Flushes what is queued, stops the flusher and releases the writer lock; reports the
    /// failure that poisoned the writer, if any.
    pub fn close(mut self) -> Result<(), AppendError> {
        self.shutdown();
        match self.failure() {
            Some(cause) => Err(AppendError::Poisoned {
                id: self.id.clone(),
                cause,
            }),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        {
            let mut state = lock(&self.shared.state);
            // A final checkpoint, so the next open replays nothing.
            if !state.closing && state.failed.is_none() {
                let len = state.session.len() as u64;
                if len > state.checkpointed {
                    if let Some(checkpoint) = state.session.checkpoint() {
                        state.checkpointed = checkpoint.n_events;
                        state.pending_checkpoint = Some(checkpoint);
                    }
                }
            }
            state.closing = true;
        }
        self.shared.work.notify_all();
        if let Some(handle) = self.flusher.take() {
            // A panicking flusher already poisoned nothing we could report better.
            let _ = handle.join();
        }
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The flusher: take everything queued, write it as one batch, publish the new watermark. Its
/// appender is dropped (releasing the writer lock) when it stops.
fn flush_loop(shared: &Shared) {
    flush_until_done(shared);
    let appender = lock(&shared.state).appender.take();
    drop(appender);
}

fn flush_until_done(shared: &Shared) {
    let mut events: Vec<Arc<Event>> = Vec::new();
    let mut jsonl: Vec<u8> = Vec::new();
    loop {
        let checkpoint;
        let mut appender;
        {
            let mut state = lock(&shared.state);
            // Wait for work, and for an inline flush to give the appender back.
            while state.failed.is_none()
                && (state.appender.is_none()
                    || (state.queued.is_empty()
                        && state.pending_checkpoint.is_none()
                        && !state.closing))
            {
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.failed.is_some() {
                return;
            }
            let Some(taken) = state.appender.take() else {
                continue;
            };
            appender = taken;
            if state.queued.is_empty() {
                // Nothing to write: record a checkpoint whose events are all durable, then
                // stop if closing (a checkpoint taken at close waits for nothing else).
                let durable_len = state.durable_len;
                let checkpoint = state
                    .pending_checkpoint
                    .take_if(|checkpoint| checkpoint.n_events <= durable_len);
                let closing = state.closing;
                drop(state);
                if let Some(checkpoint) = checkpoint {
                    record_checkpoint(shared, appender.as_mut(), &checkpoint);
                }
                lock(&shared.state).appender = Some(appender);
                if closing {
                    return;
                }
                continue;
            }
            events.clear();
            jsonl.clear();
            std::mem::swap(&mut events, &mut state.queued);
            std::mem::swap(&mut jsonl, &mut state.queued_jsonl);
            // The checkpoint was taken when its batch committed, so it covers exactly the
            // events queued up to then: these, or fewer.
            let flushed_len = events.last().map_or(0, |last| last.seq().get() + 1);
            checkpoint = state
                .pending_checkpoint
                .take_if(|checkpoint| checkpoint.n_events <= flushed_len);
        }
        let result = appender.append(&Batch {
            events: &events,
            jsonl: &jsonl,
        });
        let mut state = lock(&shared.state);
        state.n_flushes += 1;
        match result {
            Ok(()) => {
                if let Some(last) = events.last() {
                    state.durable_len = last.seq().get() + 1;
                }
            }
            Err(error) => state.failed = Some(Arc::new(error)),
        }
        shared.durable.notify_all();
        if state.failed.is_some() {
            // A failed appender is poisoned: dropped here, never put back.
            return;
        }
        drop(state);
        if let Some(checkpoint) = checkpoint {
            record_checkpoint(shared, appender.as_mut(), &checkpoint);
        }
        lock(&shared.state).appender = Some(appender);
    }
}

/// Records a checkpoint whose events are durable, if it is still the log's exact length.
fn record_checkpoint(
    shared: &Shared,
    appender: &mut dyn LogAppender,
    checkpoint: &strata_core::Checkpoint,
) {
    if checkpoint.n_events != appender.next_seq() {
        // More was appended since: a checkpoint records a whole log, so wait for the next.
        return;
    }
    if appender.checkpoint(checkpoint).is_ok() {
        lock(&shared.state).n_checkpoints += 1;
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
