//! Subcommands: each a short function of library calls.

use anyhow::Context;
use strata_core::{fold_window, Seq};

use crate::cli::{Cli, Command, Format};
use crate::input::{load, LoadError};
use crate::output;

/// How a subcommand ended when it did not fail outright.
pub enum Status {
    /// Everything was accepted.
    Ok,
    /// Some input was rejected (exit 1).
    Invalid,
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<Status> {
    match cli.command {
        Command::Validate { files, format } => validate(&files, format),
        Command::Surface { file, format } => surface(&file, format),
        Command::Messages { file, format } => messages(&file, format),
    }
}

fn validate(files: &[std::path::PathBuf], format: Format) -> anyhow::Result<Status> {
    let mut status = Status::Ok;
    let mut unreadable = 0_usize;
    for file in files {
        match load(file) {
            Ok(loaded) => {
                if format.json {
                    output::line(
                        &serde_json::json!({
                            "ok": true,
                            "file": file.display().to_string(),
                            "events": loaded.n_stored,
                            "surfaceNodes": loaded.session.surface().len(),
                            "replaceGeneration": loaded.session.surface().replace_generation(),
                        })
                        .to_string(),
                    )?;
                } else {
                    output::line(&format!(
                        "{}: ok ({} events, {} surface nodes, {} replacements)",
                        file.display(),
                        loaded.n_stored,
                        loaded.session.surface().len(),
                        loaded.session.surface().replace_generation()
                    ))?;
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
                eprintln!("strata: {error:#}");
                unreadable += 1;
            }
        }
    }
    if unreadable > 0 {
        anyhow::bail!("{unreadable} of {} logs could not be read", files.len());
    }
    Ok(status)
}

/// Loads one file for a viewing command; a rejected log is reported and yields `None`.
fn load_for_view(
    file: &std::path::Path,
    format: Format,
) -> anyhow::Result<Option<crate::input::Loaded>> {
    match load(file) {
        Ok(loaded) => Ok(Some(loaded)),
        Err(LoadError::Invalid(rejection)) => {
            if format.json {
                output::line(&output::rejection_json(&rejection).to_string())?;
            } else {
                eprintln!("{}", output::rejection_text(&rejection));
            }
            Ok(None)
        }
        Err(LoadError::Io(error)) => Err(error),
    }
}

fn surface(file: &std::path::Path, format: Format) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    let generation = loaded.session.generation();
    let fold = fold_window(generation, Seq::ZERO, loaded.rows.clone())
        .context("the restored log failed an offline fold")?;
    if format.json {
        output::line(&output::fold_json(&fold).to_string())?;
        return Ok(Status::Ok);
    }
    output::line(&format!(
        "{} surface nodes, {} replacements ({} events)",
        fold.nodes.len(),
        fold.replacements.len(),
        loaded.n_stored
    ))?;
    for seq in &fold.nodes {
        let event = loaded
            .session
            .event(*seq)
            .context("surface node outside the log")?;
        let shown = match loaded.session.project(*seq) {
            Some(message) => output::message_preview(&message, 72),
            None => "(no message: empty content)".to_owned(),
        };
        output::line(&format!(
            "{:>8}  {:<18} {}",
            seq.get(),
            event.event_type().as_str(),
            shown
        ))?;
    }
    for replacement in &fold.replacements {
        let shadowed: Vec<String> = replacement
            .shadowed
            .iter()
            .map(|s| s.get().to_string())
            .collect();
        output::line(&format!(
            "replace @{}: {}..{} shadowed [{}]",
            replacement.seq.get(),
            replacement.start.get(),
            replacement.end.get(),
            shadowed.join(", ")
        ))?;
    }
    Ok(Status::Ok)
}

fn messages(file: &std::path::Path, format: Format) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    let messages = loaded.session.derive_messages();
    if format.json {
        output::line(&serde_json::to_string(&messages)?)?;
        return Ok(Status::Ok);
    }
    for message in messages.iter() {
        output::line(&format!("── {} ({})", message.role(), message.id()))?;
        output::line(&output::message_text(message))?;
    }
    Ok(Status::Ok)
}
