//! Resuming a stored log for writing after a crash (`strata repair`, `strata compact`'s dry
//! run): the session a resuming writer would hold, and how much of it the store does not hold
//! yet.
//!
//! The closers are the core's (`Session::restore` with `SeedOptions::repair`, session-core §8): a compaction
//! bracket the crash left open is closed first — a `compaction/end` with the start's
//! `compactionId`, `sourceCommandId` and `turn`, and `error: "interrupted"` ([`INTERRUPTED`]);
//! no replacement is written, so the surface is exactly what the log held — then the open turn,
//! then the end-seed marker. Every store's `open_write` writes the same closers, so a log
//! repaired here and one reopened by a writer are the same.

use strata_core::{AcceptError, CloseCause, RawEvent, SeedOptions, Session, SessionHeader};
use strata_store::{restore_stream, LogStream, StoreError};

/// The `error` text of the `compaction/end` that closes a bracket on resume.
pub const INTERRUPTED: &str = "interrupted";

/// A session restored for writing, and how much of it is not yet stored.
pub struct Resumed {
    /// The restored session: stored events, then the closers and marker resume added.
    pub session: Session,
    /// How many events the store held; the events from seq `n_stored` on must
    /// be persisted.
    pub n_stored: usize,
}

impl std::fmt::Debug for Resumed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumed")
            .field("session", &self.session.id())
            .field("n_events", &self.session.len())
            .field("n_stored", &self.n_stored)
            .finish()
    }
}

/// [`restore_resumed`] from a stream, holding no more of the log than a load does: rows go
/// from the stream to the session as the backend hands them out (checked ahead on its
/// decoding threads), then the closers and the end-seed marker. Same session, same errors
/// (located as a load locates them). The stream must start at seq 0, as `Backend::scan` and
/// `open_append` give it.
pub fn resume_stream(
    stream: &mut LogStream<'_>,
    options: SeedOptions,
) -> Result<Resumed, StoreError> {
    let session = restore_stream(stream, options.repaired(CloseCause::Interrupted))?;
    Ok(Resumed {
        session,
        n_stored: usize::try_from(stream.n_read()).unwrap_or(usize::MAX),
    })
}

/// Restores a stored log for a writer after a crash: an open compaction bracket is closed
/// first, then the open turn (session-core §8), then the end-seed marker is added (§9.1).
/// Reopening the result adds nothing.
pub fn restore_resumed(
    header: SessionHeader,
    rows: Vec<RawEvent>,
    options: SeedOptions,
) -> Result<Resumed, AcceptError> {
    let n_stored = rows.len();
    let session = Session::restore(header, rows, options.repaired(CloseCause::Interrupted))?;
    Ok(Resumed { session, n_stored })
}

#[cfg(test)]
mod tests;
