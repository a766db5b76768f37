//! Opening an older-generation log file the way its own harness does: read it (generation
//! detected from the header and the name), then validate it under its generation's rules —
//! v0/v1 through upstream rc.8's restore path, v2 under v2 rules — streaming into a
//! [`RestoreSink`]. Every failure names the file, the generation, the line and the seq.

use std::path::Path;

use strata_core::{Generation, SessionHeader};

use super::error::{generation_name, ReadError};
use super::reader::{LegacyReader, Record};
use super::rejection::Rejection;
use super::restore::{restore_v0_records, restore_v2, RestoreSink, Restored};
use strata_format::codec::TornTail;

/// An older-generation log that was read and accepted under its own rules.
pub struct Opened<T> {
    /// The log's generation.
    pub generation: Generation,
    /// What the sink produced, and the restore path's crash-repair closers.
    pub restored: Restored<T>,
    /// Events the file held (closers excluded).
    pub n_stored: u64,
    /// An unterminated final record, left out (persistence §2.7).
    pub torn_tail: Option<TornTail>,
}

/// Why an older-generation log could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file could not be read as a log of a generation strata knows.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The log breaks its generation's rules.
    #[error("{file}: {}{}: {}: {}", generation_name(*.generation), place(.rejection), .rejection.rule, .rejection.message)]
    Rejected {
        /// The file.
        file: String,
        /// Its generation.
        generation: Generation,
        /// The rule, upstream's text and where.
        rejection: Rejection,
    },
}

/// ` line L (seq S)` for a rejection, as far as it is known.
fn place(rejection: &Rejection) -> String {
    let mut text = String::new();
    if let Some(line) = rejection.line {
        text.push_str(&format!(" line {line}"));
    }
    match (rejection.seq, rejection.index) {
        (Some(seq), _) => text.push_str(&format!(" (seq {seq})")),
        (None, Some(index)) => text.push_str(&format!(" (event {index})")),
        (None, None) => {}
    }
    text
}

/// Reads and validates the v0, v1 or v2 log at `path`; `sink` receives the validated header
/// and the rows of the seed path.
pub fn open_file<S: RestoreSink>(
    path: &Path,
    sink: impl FnOnce(SessionHeader) -> S,
) -> Result<Opened<S::Output>, OpenError> {
    let mut reader = LegacyReader::open(path)
        .map_err(OpenError::Read)?
        .keeping_rows();
    let generation = reader.generation();
    let file = reader.file().to_owned();
    let header = reader.header().clone();
    // The reader's first error ends the record stream; it is reported as what it is.
    let mut read_error: Option<ReadError> = None;
    let mut n_stored = 0_u64;
    let records = std::iter::from_fn(|| match reader.next_record()? {
        Ok(record) => {
            n_stored += 1;
            Some(record)
        }
        Err(error) => {
            read_error = Some(error);
            None
        }
    });
    let verdict = match generation {
        Generation::V0 | Generation::V1 => restore_v0_records(generation, &header, records, sink),
        // The reader keeps no v2 row as text: every record is a tree already.
        _ => restore_v2(&header, records.map(Record::into_tree), sink),
    };
    if let Some(error) = read_error {
        return Err(OpenError::Read(error));
    }
    let restored = verdict.map_err(|rejection| OpenError::Rejected {
        file,
        generation,
        rejection,
    })?;
    Ok(Opened {
        generation,
        restored,
        n_stored,
        torn_tail: reader.torn_tail(),
    })
}
