//! Loading session logs named on the command line into validated sessions.
//!
//! The only place the CLI touches files: it reads a JSONL log through the store
//! codec and restores it through the core, turning each failure into a
//! [`LoadError`] that says whether the input was invalid (exit 1) or could not
//! be read (exit 2), with file, line and seq context.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use strata_core::{AcceptError, RawEvent, SeedOptions, Session};
use strata_store::{CodecError, JsonlReader, ReaderOptions};

/// A log that was read and accepted.
pub struct Loaded {
    /// The restored session (with the end-seed marker a restore adds).
    pub session: Session,
    /// The events as stored, for offline folds.
    pub rows: Vec<RawEvent>,
    /// How many events the file held.
    pub n_stored: usize,
}

/// Why a log could not be loaded.
pub enum LoadError {
    /// The file breaks a format or acceptance rule.
    Invalid(Rejection),
    /// The file could not be read.
    Io(anyhow::Error),
}

/// A rejected log, with everything needed to report it.
pub struct Rejection {
    /// The file.
    pub file: PathBuf,
    /// The stable rule id.
    pub rule: String,
    /// The event seq, when known.
    pub seq: Option<u64>,
    /// The event's index in the log, when known.
    pub index: Option<u64>,
    /// The line in the file, when known.
    pub line: Option<u64>,
    /// The upstream message.
    pub message: String,
}

/// Reads and restores one JSONL log.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let file = File::open(path).map_err(|error| {
        LoadError::Io(anyhow::anyhow!("cannot open {}: {error}", path.display()))
    })?;
    let options = ReaderOptions {
        file: Some(path.to_path_buf()),
        ..ReaderOptions::default()
    };
    let reader = JsonlReader::new(BufReader::new(file), options)
        .map_err(|error| codec_failure(path, error))?;
    let header = reader.header().clone();
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for row in reader {
        let row = row.map_err(|error| codec_failure(path, error))?;
        lines.push(row.line);
        rows.push(row.event);
    }
    let n_stored = rows.len();
    let session = Session::restore(header, rows.clone(), SeedOptions::default())
        .map_err(|error| LoadError::Invalid(rejection(path, &error, &lines)))?;
    Ok(Loaded {
        session,
        rows,
        n_stored,
    })
}

fn rejection(path: &Path, error: &AcceptError, lines: &[u64]) -> Rejection {
    let line = error
        .index
        .and_then(|index| usize::try_from(index).ok())
        .and_then(|index| lines.get(index).copied());
    Rejection {
        file: path.to_path_buf(),
        rule: error.rule.id().to_owned(),
        seq: error.seq.or(error.index),
        index: error.index,
        line,
        message: error.message.clone(),
    }
}

fn codec_failure(path: &Path, error: CodecError) -> LoadError {
    if let CodecError::Io { .. } = error {
        return LoadError::Io(anyhow::Error::new(error));
    }
    LoadError::Invalid(Rejection {
        file: path.to_path_buf(),
        rule: codec_rule(&error),
        seq: error.location().and_then(|location| location.seq),
        index: None,
        line: error.line(),
        message: error.to_string(),
    })
}

/// A stable rule id for a decoding failure.
fn codec_rule(error: &CodecError) -> String {
    match error {
        CodecError::MissingHeader { .. } => "missing-header".into(),
        CodecError::NotHeader { .. } | CodecError::RetiredField { .. } => "header-invalid".into(),
        CodecError::NewerVersion { .. } | CodecError::OlderVersion { .. } => {
            "unsupported-version".into()
        }
        CodecError::InvalidHeader { source, .. } => source.rule.id().into(),
        CodecError::Json { .. } => "invalid-json".into(),
        CodecError::Sources { .. } => "source-range".into(),
        CodecError::TooLarge { .. } => "record-too-large".into(),
        _ => "corrupt-record".into(),
    }
}
