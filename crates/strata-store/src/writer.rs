//! The session writer: validated appends, group-committed by one flusher thread.
//!
//! An append is validated and committed to the in-memory [`Session`] on the caller's thread
//! (under the writer's lock, so seq order equals queue order), encoded as JSONL (so an oversize
//! record is refused before anything is queued), then queued. One flusher thread takes
//! *everything* queued, writes it with one [`LogAppender::append`] (one write + one fsync), and
//! wakes the appenders whose batches it covered. Appenders that arrive while a flush is in
//! progress coalesce into the next one. No deadline or debounce is involved: a flush starts as
//! soon as the previous one ends.
//!
//! Invariants:
//! - `durable_len` only grows; every event with seq `< durable_len` is on stable storage, and
//!   `append` returns `Ok` only once `durable_len` passes its batch's last seq.
//! - Queued events are exactly the session's events with seq `durable_len..session.len()`
//!   (minus the batch being flushed).
//! - After a store failure the writer is poisoned: `failed` is set, never cleared, and every
//!   waiting and later append fails. The in-memory session may then hold events that never
//!   became durable; reopen the session to recover.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use strata_core::{Candidate, Event, Session};

use crate::codec::encode_event_line;
use crate::error::{AppendError, StoreError};
use crate::store::{Batch, LogAppender};

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

struct State {
    session: Session,
    /// Events accepted but not yet handed to the flusher, with their encoded lines.
    queued: Vec<Arc<Event>>,
    queued_jsonl: Vec<u8>,
    /// Invariant: every event with seq below this is durable.
    durable_len: u64,
    failed: Option<Arc<StoreError>>,
    closing: bool,
    /// Number of flushes done (group commits), for tests and benches.
    n_flushes: u64,
}

impl SessionWriter {
    /// Starts the flusher for a session whose events are all durable.
    pub(crate) fn start(
        session: Session,
        appender: Box<dyn LogAppender>,
        max_record_len: usize,
        added_on_open: Vec<Arc<Event>>,
    ) -> SessionWriter {
        let id = session.id().to_owned();
        let durable_len = session.len() as u64;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                session,
                queued: Vec::new(),
                queued_jsonl: Vec::new(),
                durable_len,
                failed: None,
                closing: false,
                n_flushes: 0,
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
            .spawn(move || flush_loop(&flusher_shared, appender));
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
        state.queued.extend(events.iter().cloned());
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

    /// How many group commits (write + fsync) the flusher has done.
    pub fn n_flushes(&self) -> u64 {
        lock(&self.shared.state).n_flushes
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
        lock(&self.shared.state).closing = true;
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

/// The flusher: take everything queued, write it as one batch, publish the new watermark.
fn flush_loop(shared: &Shared, mut appender: Box<dyn LogAppender>) {
    let mut events: Vec<Arc<Event>> = Vec::new();
    let mut jsonl: Vec<u8> = Vec::new();
    loop {
        {
            let mut state = lock(&shared.state);
            while state.queued.is_empty() && !state.closing && state.failed.is_none() {
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.queued.is_empty() || state.failed.is_some() {
                return;
            }
            events.clear();
            jsonl.clear();
            std::mem::swap(&mut events, &mut state.queued);
            std::mem::swap(&mut jsonl, &mut state.queued_jsonl);
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
            return;
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
