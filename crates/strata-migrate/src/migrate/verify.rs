//! The two validation passes of a migration, both streaming: the source under its own
//! generation's rules (v0/v1 exactly as upstream rc.8's restore path, v2 under v2 rules), and
//! the written V3 log under V3 rules, each reduced to what the comparison needs (the derived
//! messages as JSON). Both run through the core's `Verifier`, which keeps only the surface.

use std::path::Path;

use serde_json::Value;
use strata_core::{Generation, SessionHeader, Verifier};

use super::error::MigrateError;
use super::pipeline::open_v3;
use crate::legacy::{open_file, OpenError, ReadError, VerifierSink};
use strata_format::codec::{JsonlReader, ReaderOptions, TornTail};

/// A validated log, reduced to what a migration compares.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// Events the log holds.
    pub n_events: u64,
    /// Its derived messages, as JSON.
    pub messages: Vec<Value>,
    /// An unterminated final record (not part of the log).
    pub torn_tail: Option<TornTail>,
}

/// Validates an older-generation source under its own rules, streaming.
pub fn validate_source(path: &Path) -> Result<Checked, MigrateError> {
    let opened = open_file(path, VerifierSink::new).map_err(|error| match error {
        OpenError::Read(ReadError::NotHeader {
            generation: Some(Generation::V3),
            ..
        }) => MigrateError::AlreadyNative {
            file: path.display().to_string(),
        },
        OpenError::Read(error) => MigrateError::Read(error),
        OpenError::Rejected {
            file,
            generation,
            rejection,
        } => MigrateError::InvalidSource {
            file,
            generation,
            rejection: Box::new(rejection),
        },
    })?;
    let restored = opened.restored;
    // A log left open in a turn restores with crash-repair closers appended; the migration
    // carries the log as stored (the V3 reader repairs it on open), so the messages compared
    // are those of the stored events: the closers' tool results come last on the surface.
    let n_closer_results = restored
        .repair_closers
        .iter()
        .filter(|(kind, _)| kind == "tool/result")
        .count();
    let mut messages = restored.outcome.message_values();
    messages.truncate(messages.len().saturating_sub(n_closer_results));
    Ok(Checked {
        n_events: opened.n_stored,
        messages,
        torn_tail: opened.torn_tail,
    })
}

/// Re-reads a written V3 log with the native reader and validates it under V3 rules,
/// streaming.
pub fn verify_target(path: &Path, zstd: bool) -> Result<Checked, MigrateError> {
    let verify_error = |detail: String| MigrateError::Verify {
        path: path.to_path_buf(),
        detail,
    };
    let source = open_v3(path, zstd)?;
    let mut reader = JsonlReader::new(
        source,
        ReaderOptions {
            file: Some(path.to_path_buf()),
            ..ReaderOptions::default()
        },
    )
    .map_err(|error| verify_error(error.to_string()))?;
    let header: SessionHeader = reader.header().clone();
    if header.generation() != Generation::V3 {
        return Err(verify_error("the written header is not v3".into()));
    }
    let mut verifier = Verifier::new(header);
    for row in reader.by_ref() {
        let row = row.map_err(|error| verify_error(error.to_string()))?;
        verifier.push(row.event).map_err(|error| {
            verify_error(format!(
                "line {}: {} [{}]",
                row.line, error.message, error.rule
            ))
        })?;
    }
    if let Some(torn) = reader.torn_tail() {
        return Err(verify_error(format!("torn record at line {}", torn.line)));
    }
    let verified = verifier
        .finish()
        .map_err(|error| verify_error(format!("{} [{}]", error.message, error.rule)))?;
    Ok(Checked {
        n_events: verified.n_events,
        messages: verified.message_values(),
        torn_tail: None,
    })
}
