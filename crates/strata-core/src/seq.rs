//! Sequence numbers: the position of an event in its session log.
//!
//! A session log is dense and zero-based, so an event's seq is also its index.
//! Seqs cross the wire as JavaScript numbers; every seq strata accepts is a
//! non-negative *safe integer* (≤ 2^53 − 1) so that dsh, which stores seqs as
//! doubles, reads back the same value.

use std::fmt;

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The position of an existing event in a session log.
///
/// Invariant: the value is ≤ [`MAX_SAFE_INTEGER`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Seq(u64);

/// A value that cannot be a [`Seq`]: negative, fractional, or beyond the safe range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SessionSeq must be a non-negative safe integer, got {got}")]
pub struct SeqRangeError {
    /// The rejected value as it was written.
    pub got: String,
}

impl Seq {
    /// Seq 0, the first event of every log.
    pub const ZERO: Seq = Seq(0);

    /// Checks the safe-integer bound; the only way to build a `Seq` from an untrusted number.
    pub fn new(value: u64) -> Result<Seq, SeqRangeError> {
        if value <= MAX_SAFE_INTEGER {
            Ok(Seq(value))
        } else {
            Err(SeqRangeError {
                got: value.to_string(),
            })
        }
    }

    /// Builds a seq from a log length or index the caller already bounds (a log
    /// can never hold 2^53 events, so in-memory indexes are always safe).
    pub(crate) fn from_index(index: usize) -> Seq {
        Seq(index as u64)
    }

    /// The raw value, for arithmetic and serialization.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The seq as an index into a log whose first event has seq `base`.
    pub fn index_from(self, base: Seq) -> Option<usize> {
        self.0
            .checked_sub(base.0)
            .and_then(|offset| usize::try_from(offset).ok())
    }

    /// The seq after this one (the next append position).
    pub fn next(self) -> Seq {
        Seq(self.0 + 1)
    }
}

impl fmt::Debug for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<Seq> for u64 {
    fn from(seq: Seq) -> u64 {
        seq.0
    }
}

impl TryFrom<u64> for Seq {
    type Error = SeqRangeError;
    fn try_from(value: u64) -> Result<Seq, SeqRangeError> {
        Seq::new(value)
    }
}

impl PartialEq<u64> for Seq {
    fn eq(&self, other: &u64) -> bool {
        self.0 == *other
    }
}
