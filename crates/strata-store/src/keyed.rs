//! What the SQL stores share on a lazy resume: their primary key `(session_id, seq)` is the
//! offset index, so a checkpoint's evidence is checked against stored rows and the events a
//! resumed session asks for are fetched by key. SQLite and PostgreSQL differ only in how they
//! run a query; the checks, the paging and the "no such row" errors are written once here.
//!
//! Invariants:
//! - **A checkpoint is never trusted blindly.** [`fitting`] takes a record only when it
//!   decodes, names this session, covers `0 < nEvents ≤ next_seq` events, its `headerHash` is
//!   the FNV-1a 64 of the stored header text, and its `lastHash` is [`row_hash`] of the stored
//!   row at `nEvents − 1`. Anything else is "no checkpoint": the caller reads the whole log.
//! - **Every fetched row is the one asked for.** [`KeyedSource`] fails a seq whose row is
//!   missing; the backends' row readers check each row's seq and decode it like any other read.

use std::sync::Arc;

use strata_core::{Checkpoint, EventSource, RawEvent, Seq, SourceError};
use strata_format::checkpoint::fnv64_hex;

use crate::backend::ResumePoint;
use crate::error::StoreError;

/// Rows per query when a resumed session materializes a range of its log: a bounded result
/// set whatever the range.
const RANGE_PAGE: u64 = 1024;

/// One stored session's rows, read by primary key.
pub(crate) trait KeyedRows: Send + Sync + 'static {
    /// Up to `limit` events with seq `from..`, in seq order, each checked to carry its seq.
    fn rows_from(&self, from: u64, limit: u64) -> Result<Vec<RawEvent>, StoreError>;

    /// The events at `seqs` (ascending, distinct), in that order; fewer when some are not
    /// stored (the caller names the first one missing). Backends with a batched lookup
    /// override this one-query-per-seq default.
    fn rows_at(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        let mut events = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let row = self
                .rows_from(seq.get(), 1)
                .map_err(|error| SourceError::new(seq.get(), error))?;
            events.extend(row);
        }
        Ok(events)
    }
}

/// An [`EventSource`] over a SQL store's primary key (see the module invariants).
pub(crate) struct KeyedSource<R>(pub(crate) R);

impl<R: KeyedRows> KeyedSource<R> {
    /// The resume point of a session whose `checkpoint` [`fitting`] accepted.
    pub(crate) fn resume_point(checkpoint: Checkpoint, rows: R) -> ResumePoint {
        ResumePoint {
            checkpoint,
            source: Arc::new(KeyedSource(rows)),
        }
    }
}

impl<R: KeyedRows> EventSource for KeyedSource<R> {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        self.load_many(&[seq])?
            .pop()
            .ok_or_else(|| no_such_row(seq.get()))
    }

    fn load_many(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        let events = self.0.rows_at(seqs)?;
        if let Some(missing) = seqs.get(events.len()) {
            return Err(no_such_row(missing.get()));
        }
        Ok(events)
    }

    fn load_range(&self, start: u64, end: u64) -> Result<Vec<RawEvent>, SourceError> {
        let mut events = Vec::new();
        let mut from = start;
        while from < end {
            let limit = (end - from).min(RANGE_PAGE);
            let page = self
                .0
                .rows_from(from, limit)
                .map_err(|error| SourceError::new(from, error))?;
            let n_read = page.len() as u64;
            events.extend(page);
            if n_read < limit {
                break;
            }
            from += n_read;
        }
        Ok(events)
    }
}

fn no_such_row(seq: u64) -> SourceError {
    SourceError::new(seq, "no such row")
}

/// The checkpoint `record` proves for the session `id` whose stored header is `header_text`
/// and which holds `next_seq` rows, or `None` when it proves nothing (see the module
/// invariants). `last_hash(seq)` is [`row_hash`] of the stored row at `seq`, `None` when
/// there is none.
pub(crate) fn fitting(
    record: &[u8],
    id: &str,
    header_text: &str,
    next_seq: u64,
    last_hash: impl FnOnce(u64) -> Result<Option<String>, StoreError>,
) -> Result<Option<Checkpoint>, StoreError> {
    let Ok((session_id, evidence, checkpoint)) =
        strata_format::checkpoint::decode(record, next_seq)
    else {
        return Ok(None);
    };
    let covers = session_id == id
        && evidence.n_events > 0
        && evidence.n_events <= next_seq
        && checkpoint.n_events == evidence.n_events
        && evidence.header_hash == fnv64_hex(header_text.as_bytes());
    if !covers || last_hash(evidence.n_events - 1)?.as_ref() != Some(&evidence.last_hash) {
        return Ok(None);
    }
    Ok(Some(checkpoint))
}

/// The evidence a checkpoint keeps of its last covered row: the FNV-1a 64 (hex) of the row's
/// `type`, `time` (decimal) and `data` as stored, each followed by `\n`.
pub(crate) fn row_hash(event_type: &[u8], time: &[u8], data: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(event_type.len() + time.len() + data.len() + 3);
    for part in [event_type, time, data] {
        bytes.extend_from_slice(part);
        bytes.push(b'\n');
    }
    fnv64_hex(&bytes)
}
