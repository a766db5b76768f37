//! Opening any dsh log file, whatever its generation, with one uniform rejection.
//!
//! A file may be V3, or a v0, v1 or v2 log an older harness wrote; each is read by its own
//! reader and judged by its own generation's rules, and each reader fails in its own terms (a
//! store error, a line-codec error, a legacy read or restore error). A command that names a
//! file wants two answers, whichever reader ran: the file breaks a rule ([`LogError::Invalid`],
//! with the rule's stable id, the file, line and seq), or it could not be read
//! ([`LogError::Unreadable`]). This module is that mapping, and the older generations' load.
//!
//! V3 files stream through the store (`strata_store::scan_log`, `restore_stream`), which a
//! caller drives itself (to watch progress, say) and maps with [`store_rejection`]; an older
//! generation is loaded whole here ([`open_older_generation`]), in its own numbering.

use std::path::{Path, PathBuf};

use strata_core::{Generation, SeedOptions, Session};
use strata_format::CodecError;
use strata_store::StoreError;

use crate::legacy;

/// A log that breaks a rule: which one, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The file (or store reference) as the caller named it.
    pub file: PathBuf,
    /// The rule's stable id (docs/rules.md, docs/v0-rules.md, or a codec rule such as
    /// `invalid-json`).
    pub rule: String,
    /// The event seq, when known.
    pub seq: Option<u64>,
    /// The event's index in the log, when known.
    pub index: Option<u64>,
    /// The line in the file, when known.
    pub line: Option<u64>,
    /// The message (upstream's text where upstream has one).
    pub message: String,
}

/// Why a log could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The log breaks a format or acceptance rule of its generation.
    #[error("{}: {} ({})", .0.file.display(), .0.message, .0.rule)]
    Invalid(Rejection),
    /// The log could not be found or read.
    #[error(transparent)]
    Unreadable(Unreadable),
}

/// A failure to read, from whichever reader met it.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// The V3 reader or a store.
    #[error(transparent)]
    Store(StoreError),
    /// The line codec.
    #[error(transparent)]
    Codec(CodecError),
    /// An older generation's reader.
    #[error(transparent)]
    Legacy(legacy::OpenError),
}

/// A v0, v1 or v2 log, restored under its own generation's rules.
pub struct OlderLog {
    /// The restored session, in the log's own numbering.
    pub session: Session,
    /// How many events were read (stored events and the repair closers v0/v1 restores add,
    /// which are part of the constructor seed).
    pub n_stored: usize,
}

/// Whether `path` holds a v0, v1 or v2 log (false for V3 and V4, read by the native codec, and
/// for a file that cannot be sniffed, which that reader then reports).
pub fn is_older_generation(path: &Path) -> bool {
    matches!(legacy::sniff(path), Ok((generation, _)) if generation < Generation::V3)
}

/// Loads a v0, v1 or v2 log file under its own generation's rules (v0/v1 as upstream rc.8's
/// restore path does, crash-repair closers included), kept in its own numbering, so a viewer
/// reports the seqs the file holds. `None` for a V3 (or unsniffable) file. `label` names the
/// file in a rejection.
pub fn open_older_generation(path: &Path, label: &str) -> Result<Option<OlderLog>, LogError> {
    if !is_older_generation(path) {
        return Ok(None);
    }
    let opened = legacy::open_file(path, |header| {
        legacy::SessionSink::new(header, SeedOptions::default())
    });
    let file = PathBuf::from(label);
    match opened {
        Ok(opened) => {
            let session = opened.restored.outcome;
            let n_stored = usize::try_from(session.first_live_seq()).unwrap_or(usize::MAX);
            Ok(Some(OlderLog { session, n_stored }))
        }
        Err(legacy::OpenError::Read(error)) if !error.is_io() => {
            Err(LogError::Invalid(Rejection {
                file,
                rule: error.rule_id().to_owned(),
                seq: error.at().and_then(|at| at.seq),
                index: None,
                line: error.line(),
                message: error.to_string(),
            }))
        }
        Err(legacy::OpenError::Rejected {
            generation,
            rejection,
            ..
        }) => Err(LogError::Invalid(Rejection {
            file,
            rule: rejection.rule.id().to_owned(),
            seq: rejection.seq.or(rejection.index),
            index: rejection.index,
            line: rejection.line,
            message: format!(
                "{} rules{}: {}",
                legacy::generation_name(generation),
                rejection
                    .line
                    .map_or_else(String::new, |line| format!(", line {line}")),
                rejection.message
            ),
        })),
        Err(other) => Err(LogError::Unreadable(Unreadable::Legacy(other))),
    }
}

/// Sorts a store error into a rejection (the log breaks a rule) or a failure to read;
/// `label` names the log.
pub fn store_rejection(label: &str, error: StoreError) -> LogError {
    let file = PathBuf::from(label);
    match error {
        StoreError::Invalid { line, source, .. } => LogError::Invalid(Rejection {
            file,
            rule: source.rule.id().to_owned(),
            seq: source.seq.or(source.index),
            index: source.index,
            line,
            message: source.message.clone(),
        }),
        StoreError::Codec(error) => codec_rejection(&file, *error),
        StoreError::Corrupt {
            line, seq, detail, ..
        } => LogError::Invalid(Rejection {
            file,
            rule: "corrupt-record".into(),
            seq,
            index: None,
            line,
            message: detail,
        }),
        other => LogError::Unreadable(Unreadable::Store(other)),
    }
}

/// Sorts a line-codec error into a rejection or a failure to read.
pub fn codec_rejection(path: &Path, error: CodecError) -> LogError {
    if let CodecError::Io { .. } = error {
        return LogError::Unreadable(Unreadable::Codec(error));
    }
    let message = match &error {
        // The codec's message is upstream's ("this build ships no upgrade path"); strata ships
        // one, so the rejection names it.
        CodecError::OlderVersion {
            id,
            found,
            supported,
            ..
        } => format!(
            "session \"{id}\" uses log format v{found}, older than the supported v{supported}: \
             `strata migrate {}` writes a V3 copy beside it, which this command reads",
            path.display()
        ),
        _ => error.to_string(),
    };
    LogError::Invalid(Rejection {
        file: path.to_path_buf(),
        rule: codec_rule(&error),
        seq: error.location().and_then(|location| location.seq),
        index: None,
        line: error.line(),
        message,
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
