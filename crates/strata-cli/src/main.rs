//! The `strata` binary: parse the command line, run one subcommand, map the outcome to an exit code.
//!
//! Exit codes: 0 success, 1 invalid input (a log that breaks a rule), 2 usage
//! or I/O errors. A closed stdout pipe is not an error. Subcommands are short
//! functions of library calls; no validation or surface logic lives here.

mod cli;
mod cmd;
mod demo;
mod input;
mod output;
mod progress;
mod report;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let outcome = cmd::run(args);
    match outcome {
        Ok(cmd::Status::Ok) => ExitCode::SUCCESS,
        Ok(cmd::Status::Invalid) => ExitCode::from(1),
        Err(error) => {
            if output::is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("strata: {error:#}");
            ExitCode::from(2)
        }
    }
}
