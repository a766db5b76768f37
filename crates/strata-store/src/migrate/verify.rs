//! The two validation passes of a migration: the source under its own generation's rules,
//! and the written V3 log under V3 rules, each reduced to what the comparison needs (the
//! derived messages as JSON).

use std::path::Path;

use serde_json::Value;
use strata_core::{Generation, RawEvent, SeedOptions, Session, SessionHeader};

use super::error::MigrateError;
use super::pipeline::open_v3;
use crate::codec::{JsonlReader, ReaderOptions, TornTail};
use crate::legacy::{LegacyReader, Rejection};

/// A validated log, reduced to what a migration compares.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    /// Events the log holds.
    pub n_events: u64,
    /// Its derived messages, as JSON.
    pub messages: Vec<Value>,
    /// An unterminated final record (not part of the log).
    pub torn_tail: Option<TornTail>,
}

/// Validates an older-generation source under its own rules.
pub fn validate_source(path: &Path) -> Result<Verified, MigrateError> {
    let mut reader = LegacyReader::open(path)?;
    let generation = reader.generation();
    let file = reader.file().to_owned();
    let header = reader.header().clone();
    let mut rows = Vec::new();
    for item in reader.by_ref() {
        let record = item?;
        rows.push(RawEvent::from_value(record.event));
    }
    let torn_tail = reader.torn_tail();
    let invalid = |error: &strata_core::AcceptError| MigrateError::InvalidSource {
        file: file.clone(),
        generation,
        rejection: Box::new(Rejection::from_accept(error)),
    };
    let header = SessionHeader::from_value(Value::Object(header), generation)
        .map_err(|error| invalid(&error))?;
    let n_events = rows.len() as u64;
    let session =
        Session::restore(header, rows, SeedOptions::default()).map_err(|error| invalid(&error))?;
    Ok(Verified {
        n_events,
        messages: session
            .derive_messages()
            .iter()
            .map(|message| message.value().clone())
            .collect(),
        torn_tail,
    })
}

/// Re-reads a written V3 log with the native reader and validates it under V3 rules.
pub fn verify_target(path: &Path, zstd: bool) -> Result<Verified, MigrateError> {
    let verify_error = |detail: String| MigrateError::Verify {
        path: path.to_path_buf(),
        detail,
    };
    let source = open_v3(path, zstd)?;
    let reader = JsonlReader::new(
        source,
        ReaderOptions {
            file: Some(path.to_path_buf()),
            ..ReaderOptions::default()
        },
    )
    .map_err(|error| verify_error(error.to_string()))?;
    let header = reader.header().clone();
    if header.generation() != Generation::V3 {
        return Err(verify_error("the written header is not v3".into()));
    }
    let mut rows = Vec::new();
    let mut reader = reader;
    for row in reader.by_ref() {
        rows.push(row.map_err(|error| verify_error(error.to_string()))?.event);
    }
    if let Some(torn) = reader.torn_tail() {
        return Err(verify_error(format!("torn record at line {}", torn.line)));
    }
    let n_events = rows.len() as u64;
    let session = Session::restore(header, rows, SeedOptions::default()).map_err(|error| {
        verify_error(format!(
            "{} [{}] at seq {}",
            error.message,
            error.rule,
            error
                .seq
                .or(error.index)
                .map_or("?".into(), |seq| seq.to_string())
        ))
    })?;
    Ok(Verified {
        n_events,
        messages: session
            .derive_messages()
            .iter()
            .map(|message| message.value().clone())
            .collect(),
        torn_tail: None,
    })
}
