//! `strata migrate`: carry an older dsh log (v0, v1, v2) to V3 beside it, verified, never
//! touching the source (persistence §2.10; the work is `strata_migrate::migrate::migrate_file`).
//!
//! FILE is a path, or a session of dsh's folder (`dsh#ID`, or an id with `--store dsh`), whose
//! current log is migrated. A file named as a dsh session file (`session[.vN].jsonl[.zstd]`) is
//! migrated under its directory's writer lock, `session.lock`, as dsh migrates: no dsh writer
//! appends to the source while its successor is written, and a second migration is refused.

use std::path::Path;

use serde_json::json;
use strata_migrate::legacy::generation_name;
use strata_migrate::migrate::{migrate_file, MigrateError};

use super::Status;
use crate::cli::Format;
use crate::input::{resolve, Input, LoadError};
use crate::output;
use crate::writable::lock_session_dir;

pub(crate) fn run(arg: &Path, format: Format) -> anyhow::Result<Status> {
    let file = match resolve(arg, None) {
        Ok(Input::File(file)) => file,
        Ok(Input::Stored { label, .. }) => anyhow::bail!(
            "{label}: a stored session is V3 already; migrate takes an older generation's file"
        ),
        Err(LoadError::Io(error)) => return Err(error),
        Err(LoadError::Invalid(rejection)) => {
            anyhow::bail!("{}", output::rejection_text(&rejection))
        }
    };
    let file = file.as_path();
    // A V4 log is newer than what migrate writes: refused before its folder's lock is taken.
    if let Ok((strata_core::Generation::V4, _)) = strata_migrate::legacy::sniff(file) {
        return Err(anyhow::Error::new(MigrateError::AlreadyNewer {
            file: file.display().to_string(),
        }));
    }
    let _lock = lock_session_dir(file)?;
    match migrate_file(file) {
        Ok(report) => {
            let source = generation_name(report.source_generation);
            if format.json {
                output::line(
                    &json!({
                        "ok": true,
                        "source": report.source.display().to_string(),
                        "sourceGeneration": source,
                        "target": report.target.display().to_string(),
                        "sourceEvents": report.n_source_events,
                        "targetEvents": report.n_target_events,
                        "messages": report.n_messages,
                        "tornTail": report.torn_tail.map(|torn| torn.line),
                    })
                    .to_string(),
                )?;
            } else {
                output::line(&output::visible(&format!(
                    "{}: {source} → v3: {} ({} events → {}; {} derived messages verified)",
                    report.source.display(),
                    report.target.display(),
                    report.n_source_events,
                    report.n_target_events,
                    report.n_messages
                )))?;
                if let Some(torn) = report.torn_tail {
                    eprintln!(
                        "{}",
                        output::visible(&format!(
                            "strata: {}: the unterminated record at line {} was left out",
                            report.source.display(),
                            torn.line
                        ))
                    );
                }
            }
            Ok(Status::Ok)
        }
        Err(error) if error.is_invalid_input() => {
            if format.json {
                output::line(
                    &json!({
                        "ok": false,
                        "file": file.display().to_string(),
                        "rule": rule(&error),
                        "error": error.to_string(),
                    })
                    .to_string(),
                )?;
            } else {
                eprintln!("{}", output::visible_lines(&error.to_string()));
            }
            Ok(Status::Invalid)
        }
        Err(error) => Err(anyhow::Error::new(error)),
    }
}

/// A stable id for the failure, when it has one.
fn rule(error: &MigrateError) -> Option<&'static str> {
    match error {
        MigrateError::InvalidSource { rejection, .. } => Some(rejection.rule.id()),
        MigrateError::Read(error) => Some(error.rule_id()),
        MigrateError::UnknownType { .. } => Some("unknown-type"),
        MigrateError::Reference { .. } => Some("migration-reference"),
        MigrateError::Unsupported { .. } => Some("migration-unsupported"),
        MigrateError::Verify { .. } => Some("migration-verify"),
        MigrateError::Refused { refusal, .. } => Some(refusal.id()),
        _ => None,
    }
}
