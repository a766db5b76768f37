//! Subcommands: each a short function of library calls, one module per subcommand.

mod agent;
mod chat;
mod compact;
mod compact_model;
mod completions;
mod convert;
mod demo;
mod export;
mod fork;
mod import;
mod inspect;
mod messages;
mod migrate;
mod prune;
mod repair;
mod report;
mod run;
mod sessions;
mod surface;
mod tail;
mod validate;

use crate::cli::{Cli, Command, Format};
use crate::input::{load, LoadError, Loaded};
use crate::output;

/// How a subcommand ended when it did not fail outright.
pub enum Status {
    /// Everything was accepted.
    Ok,
    /// Some input was rejected (exit 1).
    Invalid,
    /// Some input could not be read, and the command already reported which (exit 2): a
    /// command over many inputs reports each failure where it happens, in its own output.
    Failed,
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<Status> {
    crate::input::set_log_store_flag(cli.command.log_store_flag());
    match cli.command {
        Command::Validate { files, format, .. } => validate::run(&files, format),
        Command::Surface { file, format, .. } => surface::run(&file, format),
        Command::Messages {
            file,
            shape,
            at,
            format,
            ..
        } => messages::run(&file, shape, at, format),
        Command::Inspect { file, format, .. } => inspect::run(&file, format),
        Command::Repair {
            file,
            dry_run,
            format,
            ..
        } => repair::run(&file, dry_run, format),
        Command::Fork {
            file,
            at,
            output,
            format,
            ..
        } => fork::run(&file, at, output.as_deref(), format),
        Command::Demo { store } => demo::run(store.store.as_deref()),
        Command::Report {
            file,
            output,
            force,
            ..
        } => report::run(&file, &output, force),
        Command::Completions { shell } => completions::run(shell),
        Command::Chat { agent } => chat::run(&agent),
        Command::Run {
            prompt,
            agent,
            json,
        } => run::run(&prompt, &agent, json),
        Command::Migrate { file, format, .. } => migrate::run(&file, format),
        Command::Sessions { store, format } => sessions::run(store.store.as_deref(), format),
        Command::Import {
            file,
            store,
            format,
        } => import::run(&file, store.store.as_deref(), format),
        Command::Export {
            id,
            output,
            store,
            format,
        } => export::run(&id, &output, store.store.as_deref(), format),
        Command::Compact {
            file,
            offline,
            dry_run,
            model_script,
            model,
            ..
        } => compact::run(
            &file,
            offline,
            dry_run,
            &compact_model::ModelFlags {
                model_script,
                model,
            },
        ),
        Command::Prune { file, dry_run, .. } => prune::run(&file, dry_run),
        Command::Tail {
            reference,
            from,
            n_last,
            store,
            json,
        } => tail::run(
            &reference,
            store.store.as_deref(),
            from,
            n_last,
            Format { json },
        ),
        Command::Convert {
            input,
            output,
            format,
        } => convert::run(&input, &output, format),
    }
}

/// Loads one file for a viewing command; a rejected log is reported and yields `None`.
pub(crate) fn load_for_view(
    file: &std::path::Path,
    format: Format,
) -> anyhow::Result<Option<Loaded>> {
    match load(file) {
        Ok(loaded) => Ok(Some(loaded)),
        Err(error) => report_load_error(error, format).map(|_| None),
    }
}

/// Reports a failed load: a rejection is printed (JSON on stdout with `--json`, else text on
/// stderr) and yields [`Status::Invalid`]; an I/O failure is returned as the error (exit 2).
pub(crate) fn report_load_error(error: LoadError, format: Format) -> anyhow::Result<Status> {
    match error {
        LoadError::Invalid(rejection) => {
            if format.json {
                output::line(&output::rejection_json(&rejection).to_string())?;
            } else {
                eprintln!("{}", output::rejection_text(&rejection));
            }
            Ok(Status::Invalid)
        }
        LoadError::Io(error) => Err(error),
    }
}
