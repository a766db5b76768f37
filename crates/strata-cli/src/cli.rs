//! Command-line syntax: what the user can type, checked only against itself.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// strata — inspect, validate and manipulate event-sourced LLM agent session logs
/// (DeepSeek Harness V3 format).
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that session logs are accepted under their generation's rules.
    ///
    /// Exits 0 when every log is accepted, 1 when any is rejected (printing
    /// `FILE: seq N: <rule>: <message>`), 2 on usage or I/O errors.
    ///
    /// Example: strata validate ~/.dsh/sessions/--home-me--/abc/session.v3.jsonl
    Validate {
        /// Session log files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        format: Format,
    },
    /// Show the surface: the events the model sees, in order, and every replacement.
    ///
    /// Example: strata surface session.v3.jsonl --json
    Surface {
        /// A session log file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
    /// Print the derived messages: what the next model request would send.
    ///
    /// Example: strata messages session.v3.jsonl --json > messages.json
    Messages {
        /// A session log file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
}

/// Output format flags shared by every subcommand.
#[derive(Debug, Args, Clone, Copy)]
pub struct Format {
    /// Print machine-readable JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
