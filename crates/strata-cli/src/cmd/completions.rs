//! `strata completions SHELL`: a completion script generated from the command-line definition
//! itself, so it never drifts from the flags `strata` accepts.

use clap::CommandFactory;

use super::Status;
use crate::cli::Cli;

pub(crate) fn run(shell: clap_complete::Shell) -> anyhow::Result<Status> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "strata", &mut script);
    // One write through the pipe-aware path: `strata completions bash | head` is not an error.
    let text = String::from_utf8_lossy(&script);
    crate::output::line(text.trim_end_matches('\n'))?;
    Ok(Status::Ok)
}
