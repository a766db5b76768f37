//! `strata validate`: accept or reject logs under their generation's rules. Each argument is a
//! log file (raw or zstd), a `sqlite://PATH#ID` reference or a session id in the default store.

use super::Status;
use crate::cli::Format;
use crate::input::{load, LoadError};
use crate::output;

pub(crate) fn run(files: &[std::path::PathBuf], format: Format) -> anyhow::Result<Status> {
    let mut status = Status::Ok;
    let mut unreadable = 0_usize;
    for file in files {
        match load(file) {
            Ok(loaded) => {
                if format.json {
                    output::line(
                        &serde_json::json!({
                            "ok": true,
                            "file": loaded.label,
                            "events": loaded.n_stored,
                            "surfaceNodes": loaded.session.surface().len(),
                            "replaceGeneration": loaded.session.surface().replace_generation(),
                            "tornTail": loaded.torn.map(|torn| serde_json::json!({
                                "offset": torn.offset,
                                "bytes": torn.len,
                            })),
                        })
                        .to_string(),
                    )?;
                } else {
                    output::line(&output::visible(&format!(
                        "{}: ok ({} events, {} surface nodes, {} replacements)",
                        loaded.label,
                        loaded.n_stored,
                        loaded.session.surface().len(),
                        loaded.session.surface().replace_generation()
                    )))?;
                    if let Some(torn) = loaded.torn {
                        eprintln!(
                            "{}",
                            output::visible(&format!(
                                "{}: note: ignored an unfinished final record ({} bytes at byte \
                                 {}): a write that never completed, which the next writer \
                                 truncates",
                                loaded.label, torn.len, torn.offset
                            ))
                        );
                    }
                }
            }
            Err(LoadError::Invalid(rejection)) => {
                status = Status::Invalid;
                if format.json {
                    output::line(&output::rejection_json(&rejection).to_string())?;
                } else {
                    output::line(&output::rejection_text(&rejection))?;
                }
            }
            Err(LoadError::Io(error)) => {
                let message = output::error_text(&error);
                if format.json {
                    let label = file.display().to_string();
                    output::line(&output::error_json(Some(&label), "io", &message).to_string())?;
                }
                eprintln!("{}", output::visible_lines(&format!("strata: {message}")));
                unreadable += 1;
            }
        }
    }
    if unreadable > 0 {
        eprintln!(
            "strata: {unreadable} of {} logs could not be read",
            files.len()
        );
        return Ok(Status::Failed);
    }
    Ok(status)
}
