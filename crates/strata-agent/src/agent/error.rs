//! Why a turn could not be carried out. Model failures are not here: they end the turn with a
//! `turn/end {kind: "error"}` and come back as a [`TurnOutcome`](super::TurnOutcome). These are
//! the failures that leave the turn open in the log (a crash-repair closes it on the next open).

use strata_store::AppendError;

use super::ReconstructError;

/// A failure of the loop's own machinery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The store refused or failed an append; the writer may be poisoned (reopen to recover).
    #[error(transparent)]
    Append(#[from] AppendError),
    /// The request could not be rebuilt from the log.
    #[error(transparent)]
    Reconstruct(#[from] ReconstructError),
    /// A checkpoint found events that are not durable.
    #[error("session {id:?} has {len} events but only {durable} are durable at a checkpoint")]
    NotDurable {
        /// The session id.
        id: String,
        /// Events in memory.
        len: u64,
        /// Events on stable storage.
        durable: u64,
    },
    /// A blocking append task could not run (runtime shutting down, or it panicked).
    #[error("append task for session {id:?} failed: {detail}")]
    Task {
        /// The session id.
        id: String,
        /// The join error.
        detail: String,
    },
}
