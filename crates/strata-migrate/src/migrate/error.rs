//! Migration errors: one enum for the whole `strata migrate` operation, each variant naming the
//! source file, its generation, the line and the source seq it concerns.

use std::io;
use std::path::PathBuf;

use strata_core::Generation;

use super::refusal::Refusal;
use crate::legacy::{generation_name, At, ReadError, Rejection};

/// Why a log could not be migrated. Nothing is published when any of these is returned, and
/// the source is never modified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// The source could not be read (unknown generation, corrupt record, I/O).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The source breaks its own generation's rules; refused before anything is published.
    #[error("{file}: refusing to migrate an invalid {} log: {}", generation_name(*.generation), describe(.rejection))]
    InvalidSource {
        /// The source file.
        file: String,
        /// Its generation.
        generation: Generation,
        /// The rule that refused it, with upstream's text.
        rejection: Box<Rejection>,
    },
    /// An event type the frozen first-party vocabulary does not know (v0→v1 closes it).
    #[error("{at}: the {edge} migration refuses event type \"{event_type}\": the frozen v0 vocabulary does not know it (even when ignorable)")]
    UnknownType {
        /// Where.
        at: At,
        /// The edge, e.g. `v0→v1`.
        edge: &'static str,
        /// The type tag.
        event_type: String,
    },
    /// A same-session reference that cannot be carried to the new numbering.
    #[error("{at}: the {edge} migration cannot remap {field} = {target}: {reason}")]
    Reference {
        /// Where.
        at: At,
        /// The edge.
        edge: &'static str,
        /// The field holding the reference.
        field: &'static str,
        /// The referenced source-stage seq.
        target: u64,
        /// Why (`it names a chunk consumed into an embedded stream`, …).
        reason: &'static str,
    },
    /// An event the edge cannot carry without losing information.
    #[error("{at}: the {edge} migration cannot carry this event: {detail}")]
    Unsupported {
        /// Where.
        at: At,
        /// The edge.
        edge: &'static str,
        /// What cannot be carried.
        detail: String,
    },
    /// A log upstream's released chain refuses, refused for the same reason: `text` is
    /// upstream's refusal text (docs/migration.md lists every [`Refusal`]).
    #[error("{at}: the {} migration refuses this log [{refusal}]: {text}", .refusal.edge())]
    Refused {
        /// Where.
        at: At,
        /// Which refusal.
        refusal: Refusal,
        /// Upstream's text, with its interpolated values.
        text: String,
    },
    /// The source is already a V3 log.
    #[error("{file}: already a v3 log; nothing to migrate")]
    AlreadyNative {
        /// The source file.
        file: String,
    },
    /// The source is a V4 log, newer than the V3 this chain writes.
    #[error("{file}: a v4 log, newer than the v3 this migration writes; strata reads it as it is (docs/format-v4.md)")]
    AlreadyNewer {
        /// The source file.
        file: String,
    },
    /// The target generation already exists beside the source.
    #[error("{}: already exists; strata never overwrites a log", .path.display())]
    TargetExists {
        /// The target path.
        path: PathBuf,
    },
    /// The migrated log did not verify (re-read and validated as V3, messages compared).
    #[error("{}: migrated log failed verification: {detail}", .path.display())]
    Verify {
        /// The temporary file that failed (removed afterwards).
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// A file-system operation failed.
    #[error("{op} {}: {source}", .path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl MigrateError {
    /// Whether the failure is the input's fault (exit 1) rather than I/O (exit 2).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            MigrateError::Read(error) => !error.is_io(),
            MigrateError::Io { .. }
            | MigrateError::TargetExists { .. }
            | MigrateError::AlreadyNative { .. }
            | MigrateError::AlreadyNewer { .. } => false,
            _ => true,
        }
    }
}

/// `line L, seq S: rule: message` for a source rejection.
fn describe(rejection: &Rejection) -> String {
    let mut place = Vec::new();
    if let Some(line) = rejection.line {
        place.push(format!("line {line}"));
    }
    match (rejection.seq, rejection.index) {
        (Some(seq), _) => place.push(format!("seq {seq}")),
        (None, Some(index)) => place.push(format!("event {index}")),
        (None, None) => {}
    }
    let place = if place.is_empty() {
        String::new()
    } else {
        format!("{}: ", place.join(", "))
    };
    format!("{place}{}: {}", rejection.rule, rejection.message)
}
