//! Errors of the older-generation read path: every message names the file, the generation, the
//! line and (where one exists) the seq, so an operator can open the file at the right place.

use std::fmt;
use std::io;

use strata_core::{AcceptError, Generation};

use super::rows::RowError;
use strata_format::ranges::RangeError;

/// The lowercase name of a generation as it appears in messages and file names (`v0` … `v4`).
pub fn generation_name(generation: Generation) -> &'static str {
    match generation {
        Generation::V0 => "v0",
        Generation::V1 => "v1",
        Generation::V2 => "v2",
        Generation::V3 => "v3",
        Generation::V4 => "v4",
    }
}

/// Where in a log a record lies: file, generation, physical line and the seq of the (first)
/// event the line holds or should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    /// The log file (`<stream>` when unnamed).
    pub file: String,
    /// The generation the log was read as.
    pub generation: Generation,
    /// 1-based physical line (the header is line 1 when present).
    pub line: u64,
    /// The seq of the line's first event, when known.
    pub seq: Option<u64>,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} line {}",
            self.file,
            generation_name(self.generation),
            self.line
        )?;
        if let Some(seq) = self.seq {
            write!(f, " (seq {seq})")?;
        }
        Ok(())
    }
}

/// Why an older-generation log could not be read (before any acceptance rule runs).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file has no complete first line.
    #[error("{file}: empty or header-less session log")]
    MissingHeader {
        /// The log file.
        file: String,
    },
    /// The header (or the file name) names a generation newer than strata knows.
    #[error("{file}: line 1: session \"{id}\" uses log format v{version}, but strata reads v0 to v3: the log was written by a newer harness — upgrade strata to open it")]
    NewerGeneration {
        /// The log file.
        file: String,
        /// The header's id (`<unknown>` when it has none).
        id: String,
        /// The version found, as written.
        version: String,
    },
    /// The file name and the header name different generations.
    #[error("{file}: line 1: the file name says {} but the header says version {}", generation_name(*.named), .found.format_version())]
    GenerationMismatch {
        /// The log file.
        file: String,
        /// The generation the name implies.
        named: Generation,
        /// The generation the header names.
        found: Generation,
    },
    /// The first line is not a session header of its generation.
    #[error("{file}: line 1: not a {} session header: {detail}", .generation.map_or("dsh", generation_name))]
    NotHeader {
        /// The log file.
        file: String,
        /// The generation the header (or name) claims, when it claims one.
        generation: Option<Generation>,
        /// What is wrong.
        detail: String,
    },
    /// The header has its generation's physical shape but a field breaks the header rules.
    #[error("{file}: line 1: invalid {} session header: {source}", generation_name(*.generation))]
    InvalidHeader {
        /// The log file.
        file: String,
        /// The header's generation.
        generation: Generation,
        /// The core's verdict.
        #[source]
        source: AcceptError,
    },
    /// A body line is not JSON.
    #[error("{at}: corrupt record: not JSON: {detail}")]
    Json {
        /// Where.
        at: At,
        /// The parser's description.
        detail: String,
    },
    /// A packed chunk row breaks the row rules (v0/v1).
    #[error("{at}: corrupt record: {source}")]
    MalformedRow {
        /// Where (the seq is the row's first expected seq).
        at: At,
        /// Which row rule failed, with upstream's text.
        #[source]
        source: RowError,
    },
    /// A v0/v1 row breaks a row rule of upstream's released codec (read for a migration).
    #[error("{at}: upstream's released v0/v1 codec refuses this row: {text}")]
    ReleasedRow {
        /// Where.
        at: At,
        /// Upstream's text.
        text: String,
    },
    /// A range-encoded `sourceEventSeqs` is malformed (v2).
    #[error("{at}: corrupt record: {source}")]
    Sources {
        /// Where.
        at: At,
        /// Which range rule failed.
        #[source]
        source: RangeError,
    },
    /// A record is longer than the reader's limit.
    #[error("{at}: record is longer than the {limit}-byte limit")]
    TooLarge {
        /// Where.
        at: At,
        /// The limit.
        limit: usize,
    },
    /// The zstd framing is damaged (bad magic, checksum, a complete frame with a torn record).
    #[error("{file}: corrupt {} zstd artifact: {detail}", generation_name(*.generation))]
    Corrupt {
        /// The log file.
        file: String,
        /// The generation.
        generation: Generation,
        /// What is wrong.
        detail: String,
    },
    /// Reading failed.
    #[error("{file}: read failed: {source}")]
    Io {
        /// The log file.
        file: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    /// The location of a line-level error.
    pub fn at(&self) -> Option<&At> {
        match self {
            ReadError::Json { at, .. }
            | ReadError::MalformedRow { at, .. }
            | ReadError::ReleasedRow { at, .. }
            | ReadError::Sources { at, .. }
            | ReadError::TooLarge { at, .. } => Some(at),
            _ => None,
        }
    }

    /// The 1-based line the error concerns (1 for header errors).
    pub fn line(&self) -> Option<u64> {
        match self {
            ReadError::NewerGeneration { .. }
            | ReadError::GenerationMismatch { .. }
            | ReadError::NotHeader { .. }
            | ReadError::InvalidHeader { .. } => Some(1),
            other => other.at().map(|at| at.line),
        }
    }

    /// A stable id for the failure, in the oracle's vocabulary where it has one.
    pub fn rule_id(&self) -> &'static str {
        match self {
            ReadError::MissingHeader { .. } => "missing-header",
            ReadError::NewerGeneration { .. } | ReadError::GenerationMismatch { .. } => {
                "header-bad-version"
            }
            ReadError::NotHeader { .. } => "header-invalid",
            ReadError::InvalidHeader { source, .. } => source.rule.id(),
            ReadError::Json { .. } => "bad-json",
            ReadError::MalformedRow { .. } => "malformed-chunk-row",
            ReadError::ReleasedRow { .. } => "m0-row",
            ReadError::Sources { .. } => "source-range",
            ReadError::TooLarge { .. } => "record-too-large",
            ReadError::Corrupt { .. } => "corrupt-record",
            ReadError::Io { .. } => "io",
        }
    }

    /// Whether the bytes could not be read at all (as opposed to bytes that break a rule).
    pub fn is_io(&self) -> bool {
        matches!(self, ReadError::Io { .. })
    }
}
