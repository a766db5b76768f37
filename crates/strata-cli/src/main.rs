//! The `strata` binary: parse the command line, run one subcommand, map the outcome to an exit code.
//!
//! Exit codes: 0 success, 1 invalid input (a log that breaks a rule), 2 usage
//! or I/O errors. A closed stdout pipe is not an error. Under `--json`, an error is also one
//! JSON object on stdout (`{"ok":false,"error":{"kind","message"}}`), so a consumer reading
//! the JSON sees the failure. Subcommands are short functions of library calls; no validation
//! or surface logic lives here.

#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod demo;
mod input;
mod output;
mod progress;
mod report;
mod writable;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(error) => return usage_error(&error),
    };
    let json = args.command.wants_json();
    let outcome = cmd::run(args);
    match outcome {
        Ok(cmd::Status::Ok) => ExitCode::SUCCESS,
        Ok(cmd::Status::Invalid) => ExitCode::from(1),
        Ok(cmd::Status::Failed) => ExitCode::from(2),
        Err(error) => {
            if output::is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            let message = output::error_text(&error);
            if json {
                // A closed stdout here is no reason to hide the error from stderr.
                let _ = output::line(&output::error_json(None, "io", &message).to_string());
            }
            eprintln!("{}", output::visible_lines(&format!("strata: {message}")));
            ExitCode::from(2)
        }
    }
}

/// A command line clap refused: its own report (help and version requests are not errors),
/// and with `--json` among the arguments the same as one JSON object on stdout.
fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let asked_for_json = std::env::args_os().any(|arg| arg == "--json");
    let is_request = matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if asked_for_json && !is_request {
        let rendered = error.to_string();
        let message = rendered.trim_end();
        let message = message.strip_prefix("error: ").unwrap_or(message);
        let _ = output::line(&output::error_json(None, "usage", message).to_string());
    }
    let _ = error.print();
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
}
