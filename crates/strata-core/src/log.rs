//! The session log as a session holds it: all of it, or a resident tail plus pinned events.
//!
//! A session restored from a whole log holds every event (*full mode*). A session resumed from
//! a checkpoint (*lazy mode*) holds only what the next request and the acceptance rules need:
//! the contiguous *resident tail* from `base` on, the *pinned* events below it (the surface
//! nodes and the latest event of each type, fixed when the checkpoint was loaded), and an
//! [`EventSource`] the store implements to fetch any other event on demand. Full mode is the
//! special case `base == 0` with nothing pinned.
//!
//! A caller that needs the whole log of a lazy session as one slice can have it
//! *materialized*: every event below `base` fetched once from the source, after which the
//! full copy is kept in step with appends and rollbacks. That costs O(history), once; the
//! resume, append and request paths never do it.
//!
//! Invariants:
//! - `tail[i].seq() == base + i`; the log's length is `base + tail.len()`;
//! - every pinned event has the seq it is keyed by, and that seq is `< base`;
//! - `base` never changes after construction: appends and rollbacks touch the tail (and the
//!   materialized copy, once it exists) only;
//! - once set, `full[i].seq() == i` and `full.len() == len()`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::event::Event;
use crate::seq::Seq;
use crate::wire::RawEvent;

/// Where a lazily resumed session fetches the events it does not hold (implemented by stores).
///
/// Rows are returned as stored; the session runs the event-local acceptance rules on them
/// before use, so a source cannot hand the session an event that was never acceptable.
pub trait EventSource: Send + Sync {
    /// The stored row at `seq`.
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError>;

    /// The stored rows at `seqs` (ascending, distinct), in that order. Sources with a cheaper
    /// batched read (one zstd frame for many seqs, one SQL query) override this.
    fn load_many(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        seqs.iter().map(|seq| self.load(*seq)).collect()
    }

    /// The stored rows with seq `start..end` (half-open), in order: what materializing a lazy
    /// log reads. Sources that can stream the log sequentially override this.
    fn load_range(&self, start: u64, end: u64) -> Result<Vec<RawEvent>, SourceError> {
        let seqs = (start..end)
            .map(|value| Seq::new(value).map_err(|error| SourceError::new(value, error)))
            .collect::<Result<Vec<Seq>, SourceError>>()?;
        self.load_many(&seqs)
    }
}

/// An [`EventSource`] failed to produce a row.
#[derive(Debug, thiserror::Error)]
#[error("event source could not load seq {seq}: {source}")]
pub struct SourceError {
    /// The seq asked for.
    pub seq: u64,
    /// What went wrong, as the source reports it (an I/O or decode error of the store).
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl SourceError {
    /// Wraps a source's own error.
    pub fn new(seq: u64, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        SourceError {
            seq,
            source: source.into(),
        }
    }
}

/// The events of one session log (see the module docs).
pub(crate) struct Log {
    /// Invariant: the seq of `tail[0]`; 0 in full mode.
    base: u64,
    /// Invariant: `tail[i].seq() == base + i`.
    tail: Vec<Arc<Event>>,
    /// Invariant: keys `< base`, each event's seq equal to its key.
    pinned: HashMap<u64, Arc<Event>>,
    source: Option<Arc<dyn EventSource>>,
    /// The whole log, once materialized (lazy mode only).
    full: OnceLock<Vec<Arc<Event>>>,
}

impl Log {
    /// An empty, fully resident log.
    pub(crate) fn new() -> Log {
        Log {
            base: 0,
            tail: Vec::new(),
            pinned: HashMap::new(),
            source: None,
            full: OnceLock::new(),
        }
    }

    /// A log of `base` events of which only `pinned` are held; the tail starts empty.
    /// The caller guarantees each pinned event's seq is `< base` (checked in debug builds).
    pub(crate) fn lazy(
        base: u64,
        pinned: impl IntoIterator<Item = Arc<Event>>,
        source: Arc<dyn EventSource>,
    ) -> Log {
        let pinned: HashMap<u64, Arc<Event>> = pinned
            .into_iter()
            .map(|event| (event.seq.get(), event))
            .collect();
        debug_assert!(pinned.keys().all(|seq| *seq < base));
        Log {
            base,
            tail: Vec::new(),
            pinned,
            source: Some(source),
            full: OnceLock::new(),
        }
    }

    /// The number of events (also the next seq).
    pub(crate) fn len(&self) -> u64 {
        self.base + self.tail.len() as u64
    }

    /// The seq the next event gets.
    pub(crate) fn next_seq(&self) -> Seq {
        // A log never holds 2^53 events, so its length is a safe seq.
        Seq::from_index(usize::try_from(self.len()).unwrap_or(usize::MAX))
    }

    /// The seq of the first resident event.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Whether every event is resident.
    pub(crate) fn is_full(&self) -> bool {
        self.base == 0
    }

    /// The resident tail (the whole log in full mode).
    pub(crate) fn tail(&self) -> &[Arc<Event>] {
        &self.tail
    }

    /// A held event: resident or pinned.
    pub(crate) fn get(&self, seq: Seq) -> Option<&Arc<Event>> {
        match seq.get().checked_sub(self.base) {
            Some(offset) => usize::try_from(offset)
                .ok()
                .and_then(|index| self.tail.get(index)),
            None => self.pinned.get(&seq.get()),
        }
    }

    /// The last event, when held (always in full mode; in lazy mode it is pinned or resident).
    pub(crate) fn last(&self) -> Option<&Arc<Event>> {
        let last = self.len().checked_sub(1)?;
        Seq::new(last).ok().and_then(|seq| self.get(seq))
    }

    /// The source of events that are not held.
    pub(crate) fn source(&self) -> Option<&Arc<dyn EventSource>> {
        self.source.as_ref()
    }

    /// The number of pinned events.
    pub(crate) fn n_pinned(&self) -> usize {
        self.pinned.len()
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.tail.reserve(additional);
    }

    /// Appends the event at seq `len()`.
    pub(crate) fn push(&mut self, event: Arc<Event>) {
        debug_assert_eq!(event.seq.get(), self.len());
        if let Some(full) = self.full.get_mut() {
            full.push(event.clone());
        }
        self.tail.push(event);
    }

    /// Drops events from seq `len` on; never below `base`.
    pub(crate) fn truncate(&mut self, len: u64) {
        let keep = len.saturating_sub(self.base);
        self.tail
            .truncate(usize::try_from(keep).unwrap_or(usize::MAX));
        let len = usize::try_from(self.len()).unwrap_or(usize::MAX);
        if let Some(full) = self.full.get_mut() {
            full.truncate(len);
        }
    }

    /// The whole log as one slice: the tail in full mode; in lazy mode the materialized copy,
    /// built on first use from `prefix` (the events below `base`, in seq order).
    pub(crate) fn whole<E>(
        &self,
        prefix: impl FnOnce() -> Result<Vec<Arc<Event>>, E>,
    ) -> Result<&[Arc<Event>], E> {
        if self.is_full() {
            return Ok(&self.tail);
        }
        if let Some(full) = self.full.get() {
            return Ok(full);
        }
        let mut full = prefix()?;
        full.extend(self.tail.iter().cloned());
        // Another thread may have won the race with the same events; either copy will do.
        let _ = self.full.set(full);
        Ok(self.full.get().map_or(&[][..], Vec::as_slice))
    }

    /// The pinned event at `seq`, if one.
    pub(crate) fn pinned(&self, seq: Seq) -> Option<&Arc<Event>> {
        self.pinned.get(&seq.get())
    }
}

impl crate::accept::EventLookup for Log {
    fn event(&self, seq: Seq) -> Option<&Event> {
        self.get(seq).map(|event| event.as_ref())
    }
}
