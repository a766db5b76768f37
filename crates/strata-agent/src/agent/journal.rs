//! The loop's handle on its session: validated, durable appends through the store's
//! [`SessionWriter`], event times from the [`Clock`], and every appended event shown to the
//! [`Observer`].
//!
//! The writer's `append` returns only once the batch is durable (one group-committed write and
//! fsync), so every append is also a checkpoint in the sense of persistence §4.1. The loop
//! batches what belongs together — a step's opening events with its request header, an answer
//! with its tool calls — so a step costs a handful of syncs, and it calls
//! [`Journal::checkpoint`] at the two barriers the spec names (before model dispatch, before
//! tool bodies) to assert that nothing is pending there. The append blocks on a condition
//! variable, so it runs on Tokio's blocking pool rather than stalling the loop's executor.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use strata_core::{Candidate, Event, Session};
use strata_store::SessionWriter;

use super::{AgentError, Clock, Observer};

/// A session writer with a clock and an observer.
pub struct Journal {
    writer: Arc<SessionWriter>,
    clock: Arc<dyn Clock>,
    observer: Arc<dyn Observer>,
    n_appends: AtomicU64,
    n_checkpoints: AtomicU64,
}

impl Journal {
    /// Wraps `writer`.
    pub fn new(
        writer: SessionWriter,
        clock: Arc<dyn Clock>,
        observer: Arc<dyn Observer>,
    ) -> Journal {
        Journal {
            writer: Arc::new(writer),
            clock,
            observer,
            n_appends: AtomicU64::new(0),
            n_checkpoints: AtomicU64::new(0),
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.writer.id()
    }

    /// Validates and durably appends `candidates` as one batch at the clock's current time,
    /// then shows each event to the observer. An empty batch appends nothing.
    pub async fn append(&self, candidates: Vec<Candidate>) -> Result<Vec<Arc<Event>>, AgentError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let writer = Arc::clone(&self.writer);
        let time = self.clock.now_ms();
        let events = tokio::task::spawn_blocking(move || writer.append(candidates, time))
            .await
            .map_err(|error| AgentError::Task {
                id: self.id().to_owned(),
                detail: error.to_string(),
            })??;
        self.n_appends.fetch_add(1, Ordering::Relaxed);
        for event in &events {
            self.observer.event(event);
        }
        Ok(events)
    }

    /// A durability barrier: fails if any event of the session is not yet durable.
    pub fn checkpoint(&self) -> Result<(), AgentError> {
        self.n_checkpoints.fetch_add(1, Ordering::Relaxed);
        let durable = self.writer.durable_len();
        let len = self.with_session(|session| session.len() as u64);
        if durable < len {
            return Err(AgentError::NotDurable {
                id: self.id().to_owned(),
                len,
                durable,
            });
        }
        Ok(())
    }

    /// Runs `f` on the in-memory session.
    pub fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        self.writer.with_session(f)
    }

    /// The clock's current time.
    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The observer.
    pub fn observer(&self) -> &dyn Observer {
        &*self.observer
    }

    /// The writer (for its durability counters and the events added when it was opened).
    pub fn writer(&self) -> &SessionWriter {
        &self.writer
    }

    /// Appends made so far (each one a durable group commit).
    pub fn n_appends(&self) -> u64 {
        self.n_appends.load(Ordering::Relaxed)
    }

    /// Checkpoints passed so far.
    pub fn n_checkpoints(&self) -> u64 {
        self.n_checkpoints.load(Ordering::Relaxed)
    }

    pub(crate) fn set_observer(&mut self, observer: Arc<dyn Observer>) {
        self.observer = observer;
    }

    pub(crate) fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// Closes the writer (flushes, releases the session lock), unless another handle to it is
    /// still alive, in which case the last handle closes it on drop.
    pub fn close(self) -> Result<(), AgentError> {
        match Arc::try_unwrap(self.writer) {
            Ok(writer) => writer.close().map_err(AgentError::from),
            Err(_shared) => Ok(()),
        }
    }
}
