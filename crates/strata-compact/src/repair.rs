//! Durable crash repair of a stored session: the closers [`resume_stream`] computes — an open
//! compaction bracket's `compaction/end`, then the open turn's closers (session-core §8), then
//! the end-seed marker — appended through the store under the writer lock (`strata repair`).
//!
//! These are the closers `Store::open_write` appends too; unlike it, this path leaves a log
//! with nothing open untouched (not even a marker is added), so repairing twice writes once.

use std::sync::Arc;

use strata_core::{Event, EventType, RawEvent, SeedOptions, SessionHeader};
use strata_store::{LogStream, ReadFrom, Store, StoreError};

use crate::resume::{restore_resumed, resume_stream, Resumed};

/// The events a resume would append to a stored log when a turn or a compaction bracket is
/// open — closers, then the end-seed marker; empty when nothing is open.
pub fn repair_events(resumed: &Resumed) -> Vec<Arc<Event>> {
    // What a resume adds lies past the stored rows, in the resident tail even of a lazy
    // session.
    let base = usize::try_from(resumed.session.resident_base()).unwrap_or(usize::MAX);
    let added = resumed
        .session
        .resident_events()
        .get(resumed.n_stored.saturating_sub(base)..)
        .unwrap_or(&[]);
    if added
        .iter()
        .all(|event| *event.event_type() == EventType::SessionEndSeed)
    {
        return Vec::new();
    }
    added.to_vec()
}

/// Plans the repair of a log read from storage (see [`repair_events`]), without writing.
pub fn plan_repair(
    header: SessionHeader,
    rows: Vec<RawEvent>,
    marker_time: i64,
) -> Result<(Resumed, Vec<Arc<Event>>), strata_core::AcceptError> {
    let resumed = restore_resumed(
        header,
        rows,
        SeedOptions {
            marker_time,
            ..SeedOptions::default()
        },
    )?;
    let added = repair_events(&resumed);
    Ok((resumed, added))
}

/// Opens stored session `id` for appending (taking its writer lock), validates its whole log,
/// and durably appends the closers of an open compaction bracket and turn plus the end-seed
/// marker. Returns what was appended; empty, and nothing written, when nothing was open.
pub fn repair_stored(
    store: &Store,
    id: &str,
    marker_time: i64,
) -> Result<Vec<Arc<Event>>, StoreError> {
    let mut added: Vec<Arc<Event>> = Vec::new();
    let mut load = |stream: &mut LogStream<'_>| -> Result<(), StoreError> {
        // Streamed like a load: the rows are never all held at once.
        let resumed = resume_stream(
            stream,
            SeedOptions {
                marker_time,
                ..SeedOptions::default()
            },
        )?;
        added = repair_events(&resumed);
        Ok(())
    };
    let mut appender = store
        .backend()
        .open_append(id, ReadFrom::Start, &mut load)?;
    appender.append_events(&added)?;
    Ok(added)
}

#[cfg(test)]
mod tests;
