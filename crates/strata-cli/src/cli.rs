//! Command-line syntax: what the user can type, checked only against itself.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// strata — inspect, validate and manipulate event-sourced LLM agent session logs
/// (DeepSeek Harness V3 format).
#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about,
    long_about = None,
    after_help = "Start with `strata demo` (offline, a few seconds).\nA LOG is a file (raw or zstd JSONL, any dsh generation), `sqlite://PATH#ID`,\n`postgres://…#ID`, `dsh#ID` (dsh's own folder; an id or unique prefix), or a\nsession id in the default store (or --store).\nExit codes: 0 ok, 1 a log broke a rule, 2 usage or I/O error."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an offline tour on the embedded default store: a scripted agent session with tool
    /// calls, a crash and its repair, compaction, pruning and a fork, printing the surface
    /// before and after each step.
    ///
    /// Example: strata demo
    Demo {
        #[command(flatten)]
        store: StoreArg,
    },
    /// Check that session logs are accepted under their generation's rules.
    ///
    /// Each LOG is a file (raw, or zstd in any framing: `.zstd`, `.zst`), a `sqlite://PATH#ID`
    /// reference or a session id in the default store (an existing file wins over an id).
    /// Exits 0 when every log is accepted, 1 when any is rejected (printing `FILE: seq N:
    /// <rule>: <message>`), 2 on usage or I/O errors.
    ///
    /// Example: strata validate ~/.dsh/sessions/--home-me--/abc/session.v3.jsonl
    Validate {
        /// Session logs: files, `sqlite://PATH#ID` references or stored session ids.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Summarize a session log: header, generation, counts by type, turns and steps, surface
    /// size, shadowed events, every replacement with what it shadowed, token usage, file size.
    ///
    /// Exits 1 when the log is rejected, 2 when it cannot be read.
    ///
    /// Example: strata inspect session.v3.jsonl
    Inspect {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Show the surface: the events the model sees, in order, and every replacement.
    ///
    /// Example: strata surface session.v3.jsonl --json
    Surface {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Print the derived messages: what the next model request would send.
    ///
    /// `--at SEQ` gives the request as it was right after event SEQ. `--format openai` and
    /// `--format anthropic` print the whole request in that API's shape, after checking that
    /// every tool call has its result. Exits 1 when the log is rejected or the export is refused
    /// (a tool call without its result: close a crashed turn with `strata repair`), 2 when SEQ
    /// is past the end of the log or the log cannot be read.
    ///
    /// Example: strata messages session.v3.jsonl --format openai --at 42 --json
    Messages {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// The wire shape: dsh (strata's own message values), openai (a chat-completions
        /// request) or anthropic (a messages request).
        #[arg(long = "format", value_enum, default_value_t = MessageFormat::Dsh)]
        shape: MessageFormat,
        /// The request as it was right after this seq instead of the next one.
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Write a self-contained HTML report of a session: a timeline of every event by turn and
    /// step (of the newest 100,000 on a longer log), surface nodes vs shadowed events, each
    /// replacement's span, token usage per step. The page loads nothing from the network; an
    /// existing FILE is replaced only with --force.
    ///
    /// Example: strata report session.v3.jsonl -o report.html
    Report {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// The HTML file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Replace the output file if it exists (without this flag an existing file is left
        /// alone and the command fails).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Close a turn (and a compaction bracket) left open by a crash, durably, with the
    /// closers a resume would append.
    ///
    /// LOG is a file, a `sqlite://PATH#ID` reference, a stored session id or `dsh#ID` (a session
    /// in dsh's own folder, by id or unique prefix). A file in a store layout or dsh's folder is
    /// written through that store; any other V3 file is appended in place under its own writer
    /// lock (dsh's `session.lock` for a file named `session.v3.jsonl[.zstd]`, else
    /// `FILE.lock`). An older generation is migrated first in dsh's folder (as dsh continues a
    /// session) and refused elsewhere: `strata migrate` it. A log
    /// with nothing open is left untouched, so repairing twice writes once. Exits 1 when the log
    /// is rejected, 2 when it cannot be read or opened for writing (another writer holds it).
    ///
    /// Example: strata repair session.v3.jsonl --dry-run
    Repair {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// Print the closers that would be appended; write nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Fork a session at a seq: a new log holding the prefix up to SEQ (an open turn closed
    /// with `forked` closers).
    ///
    /// The child gets a fresh id and names LOG's session as its parent. With -o it is written
    /// as a V3 JSONL file (zstd when OUT ends in `.zstd` or `.zst`; an existing file is never
    /// replaced);
    /// without -o it is created in LOG's store (a stored session, or a file inside a JSONL
    /// store layout) and its id printed. Exits 1 when LOG is rejected, 2 when SEQ is not a seq
    /// of LOG or the fork cannot be written.
    ///
    /// Example: strata fork session.v3.jsonl --at 42 -o fork.session.v3.jsonl
    Fork {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// The last seq the fork keeps.
        #[arg(long, value_name = "SEQ")]
        at: u64,
        /// Write the fork to this new file, zstd when it ends in `.zstd` or `.zst` (default: a
        /// new session in the source's store).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Replace the oldest history with a checkpoint summary, keeping the newest unit
    /// verbatim; the shadowed events stay in the log.
    ///
    /// LOG is a file, a `sqlite://PATH#ID` reference, a stored session id or `dsh#ID`. Without
    /// --dry-run the events are appended durably, through the log's store, or to a loose V3
    /// file in place under its own writer lock (as `strata repair`), and the seqs appended are
    /// printed; an older generation is migrated first in dsh's folder and refused elsewhere
    /// (`strata migrate` it).
    ///
    /// The summary comes from a model unless --offline: the same OpenAI-compatible client,
    /// settings and retries as `chat` and `run` (STRATA_BASE_URL, DEEPSEEK_API_KEY or
    /// STRATA_API_KEY, --model or STRATA_MODEL, --model-script), asked under the log's last
    /// request/header (its model unless --model or STRATA_MODEL names another). The attempt is
    /// recorded as the agent records its own: compaction/start … compaction/end. When the model
    /// fails (or its summary hits the token cap, or is not smaller than what it replaces) the
    /// failure is recorded in compaction/end, the conversation is left as it was, and the
    /// command exits 1. A dry run never calls the model: without --offline it prints the bound
    /// the summary is capped at; with it, the extractive checkpoint it would write.
    ///
    /// Example: strata compact session.v3.jsonl --offline --dry-run
    Compact {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// Summarize offline with the extractive summarizer (first and last lines of each
        /// turn, tool names and outcomes) instead of a model.
        #[arg(long, conflicts_with_all = ["model_script", "model"])]
        offline: bool,
        /// Print what would be shadowed and the token counts before and after; write nothing
        /// and call no model.
        #[arg(long)]
        dry_run: bool,
        /// Replay this scripted-model JSON file instead of calling the API (as `run` does).
        #[arg(long, value_name = "FILE")]
        model_script: Option<PathBuf>,
        /// Model to summarize with (default: $STRATA_MODEL, else the model of the log's last
        /// request/header).
        #[arg(long)]
        model: Option<String>,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Show which tool results over 8,192 code points an agent's pre-step would middle-elide;
    /// a finished session is never rewritten.
    ///
    /// dsh accepts a tool-result rewrite only inside an open turn (it refuses "tool/result
    /// replacement is outside an open turn") and prunes only in an agent's pre-step, between
    /// two steps of a turn, writing no turn of its own for a manual action. A session this
    /// command reads has no open turn, so without --dry-run it refuses, writing nothing, when
    /// anything is over the limit (exit 2), and exits 0 when nothing is. To shrink a finished
    /// session use `strata compact --offline`; `strata run --resume` and `strata chat` prune at
    /// their pre-step when the context nears its window.
    ///
    /// Example: strata prune session.v3.jsonl --dry-run
    Prune {
        /// A session log: a file, `sqlite://PATH#ID` or a stored session id.
        file: PathBuf,
        /// Print what would be rewritten and the token counts before and after; write nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// Migrate an older dsh log (v0, v1, v2) to V3: writes `session.v3.jsonl[.zstd]` beside it.
    ///
    /// FILE is a path or `dsh#ID` (that session's current log in dsh's folder). A file named
    /// `session[.vN].jsonl[.zstd]` is migrated under its directory's writer lock
    /// (`session.lock`, dsh's), so no dsh writer appends to it meanwhile; afterwards the V3 log
    /// is the session dsh and strata open. The source is streamed through the v0→v1→v2→v3 edges into a temporary file (the edges
    /// write and refuse what upstream's released chain writes and refuses), validated under its
    /// own generation's rules, the copy re-read and validated as V3 with its derived messages
    /// compared to the source's, then published; nothing is published for an invalid source,
    /// the source is never modified and no file is ever replaced.
    /// Exits 0 when migrated, 1 when the source is invalid or cannot be carried, 2 on I/O
    /// errors, an existing target or a source that is already V3.
    ///
    /// Example: strata migrate ~/.dsh/sessions/--home-me--/abc/session.jsonl.zstd
    Migrate {
        /// The older-generation log file (`session.jsonl`, `session.v1.jsonl`, ...).
        file: PathBuf,
        #[command(flatten)]
        format: Format,
        #[command(flatten)]
        store: LogStoreArg,
    },
    /// List the sessions of a store, newest first (read from headers only).
    ///
    /// With `--store dsh` (dsh's own folder, $DSH_HOME/sessions, else ~/.dsh/sessions) or
    /// `--store dsh:HOME`, each session directory once, at its highest generation: project, id,
    /// generation and encoding, size in bytes, created, and its newest `session/title`.
    /// Nothing is validated or written.
    ///
    /// Example: strata sessions --store dsh --json
    Sessions {
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        format: Format,
    },
    /// Copy a JSONL session log (raw or zstd; `dsh#ID` names one in dsh's own folder) into a
    /// store, validated, event for event.
    ///
    /// Exits 1 when the log is rejected, 2 when it cannot be read or the session exists.
    ///
    /// Example: strata import ~/.dsh/sessions/--home-me--/abc/session.v3.jsonl.zstd
    Import {
        /// The session log file.
        file: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        format: Format,
    },
    /// Write a stored session as a JSONL log, zstd in dsh's framing when FILE ends in `.zstd`
    /// or `.zst` (never replaces a file).
    ///
    /// Example: strata export abc -o abc.session.v3.jsonl.zstd
    Export {
        /// The session id.
        id: String,
        /// The file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        format: Format,
    },
    /// Copy sessions between stores of any kind (JSONL raw or zstd, SQLite, PostgreSQL), in
    /// either direction, validated as they stream in, event for event.
    ///
    /// IN is one session (a log file or STORE#ID, e.g. `sqlite://PATH#ID`, `postgres://…#ID`,
    /// `jsonl:DIR#ID`, `dsh#ID`) or a whole store (a SQLite file, `jsonl:DIR`, `jsonl-zstd:DIR`,
    /// `postgres://…`, `dsh` for dsh's own folder), all of whose sessions are copied. OUT is a store, created if missing;
    /// sessions keep their ids. Exits 1 when a session is rejected, 2 when one cannot be copied
    /// (for example because OUT already holds its id).
    ///
    /// Example: strata convert ~/.local/share/strata/strata.db postgres://agents@db.internal/strata
    Convert {
        /// Where the sessions come from.
        #[arg(value_name = "IN")]
        input: String,
        /// The store they go to.
        #[arg(value_name = "OUT")]
        output: String,
        #[command(flatten)]
        format: Format,
    },
    /// Print a session's events as they are appended (like `tail -f`), from any host: on a
    /// PostgreSQL store each append wakes the tail as it commits; other stores are polled.
    ///
    /// REF is `postgres://…#ID`, `sqlite://PATH#ID`, a V3 log file, `dsh#ID` (a session of
    /// dsh's own folder, followed as dsh appends to it), or an id in the store named by
    /// `--store` (else $STRATA_STORE, else $STRATA_DATABASE_URL, else the default SQLite store). Prints
    /// the last N stored events (or from --from SEQ), then every new one until interrupted.
    ///
    /// Example: strata tail 'postgres://agents@db.internal/strata#run-42' --json
    Tail {
        /// The session: `postgres://…#ID`, `sqlite://PATH#ID` or a stored session id.
        reference: String,
        /// Start at this seq instead of the last N events.
        #[arg(long, value_name = "SEQ")]
        from: Option<u64>,
        /// How many stored events to print before following.
        #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10)]
        n_last: u64,
        #[command(flatten)]
        store: StoreArg,
        /// Print each event as one V3 JSON line.
        #[arg(long)]
        json: bool,
    },
    /// Chat with the agent on a session: type a prompt per line; tokens stream as they arrive
    /// and tool calls are shown. Ctrl-C cancels the running turn (the partial answer is kept);
    /// Ctrl-C at the prompt, Ctrl-D or `/quit` ends the chat. `/system TEXT` changes the system
    /// prompt.
    ///
    /// Example: strata chat --session work --resume
    Chat {
        #[command(flatten)]
        agent: AgentArgs,
    },
    /// Run one agent turn for PROMPT and exit (0 when the turn completed, 2 when it failed or
    /// was cancelled).
    ///
    /// Example: strata run "What does src/main.rs do?" --json
    Run {
        /// What to ask.
        prompt: String,
        #[command(flatten)]
        agent: AgentArgs,
        /// Print one JSON object per appended event instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script.
    ///
    /// Example: strata completions bash > ~/.local/share/bash-completion/completions/strata
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// The wire shapes `strata messages` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MessageFormat {
    /// strata's message values (dsh's shape).
    Dsh,
    /// An OpenAI chat-completions request.
    Openai,
    /// An Anthropic messages request.
    Anthropic,
}

impl Command {
    /// Whether the command was asked for JSON output (`--json`), so its errors are reported as
    /// JSON too.
    pub fn wants_json(&self) -> bool {
        match self {
            Command::Validate { format, .. }
            | Command::Inspect { format, .. }
            | Command::Surface { format, .. }
            | Command::Messages { format, .. }
            | Command::Repair { format, .. }
            | Command::Fork { format, .. }
            | Command::Migrate { format, .. }
            | Command::Sessions { format, .. }
            | Command::Import { format, .. }
            | Command::Export { format, .. }
            | Command::Convert { format, .. } => format.json,
            Command::Tail { json, .. } | Command::Run { json, .. } => *json,
            Command::Demo { .. }
            | Command::Report { .. }
            | Command::Compact { .. }
            | Command::Prune { .. }
            | Command::Chat { .. }
            | Command::Completions { .. } => false,
        }
    }
}

impl Command {
    /// The `--store` of a command that takes a LOG: where a bare session id is looked up.
    pub fn log_store_flag(&self) -> Option<&str> {
        match self {
            Command::Validate { store, .. }
            | Command::Inspect { store, .. }
            | Command::Surface { store, .. }
            | Command::Messages { store, .. }
            | Command::Report { store, .. }
            | Command::Repair { store, .. }
            | Command::Fork { store, .. }
            | Command::Compact { store, .. }
            | Command::Prune { store, .. }
            | Command::Migrate { store, .. } => store.store.as_deref(),
            _ => None,
        }
    }
}

/// The `--store` flag of the commands that take a LOG.
#[derive(Debug, Args, Clone)]
pub struct LogStoreArg {
    /// Where a bare session id (or, in dsh's folder, a unique id prefix) is looked up: `dsh`
    /// (dsh's own folder, $DSH_HOME/sessions, else ~/.dsh/sessions), `dsh:HOME`, a SQLite file,
    /// `jsonl:DIR`, `jsonl-zstd:DIR` or a `postgres://` address (default: $STRATA_STORE, else
    /// $STRATA_DATABASE_URL, else the embedded SQLite store).
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
}

/// The `--store` flag of the store commands.
#[derive(Debug, Args, Clone)]
pub struct StoreArg {
    /// The store: a SQLite file, `jsonl:DIR`, `jsonl-zstd:DIR` or a `postgres://` address, whose
    /// schema is `?schema=NAME`, else the first of a search_path in `options`, else `strata`
    /// (default: $STRATA_STORE, else $STRATA_DATABASE_URL, else the embedded SQLite store under
    /// $STRATA_HOME or ~/.local/share/strata). `strata sessions` also lists `dsh` (dsh's own
    /// folder, $DSH_HOME, else ~/.dsh) and `dsh:HOME`.
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
}

/// Output format flags shared by every subcommand.
#[derive(Debug, Args, Clone, Copy)]
pub struct Format {
    /// Print machine-readable JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags shared by the agent commands (`chat`, `run`).
#[derive(Debug, Args, Clone)]
pub struct AgentArgs {
    /// Session id; a new session gets a fresh id when omitted.
    #[arg(long)]
    pub session: Option<String>,
    /// Continue a stored session (the latest one when --session is omitted); a crashed turn is
    /// closed first.
    #[arg(long)]
    pub resume: bool,
    /// Where sessions live: a SQLite file, `jsonl:DIR`, `jsonl-zstd:DIR` or a `postgres://`
    /// address, whose schema is `?schema=NAME`, else the first of a search_path in `options`,
    /// else `strata` (default: $STRATA_STORE, else $STRATA_DATABASE_URL, else the embedded SQLite
    /// store under $STRATA_HOME or ~/.local/share/strata).
    #[arg(long, value_name = "PATH")]
    pub store: Option<String>,
    /// Replay this scripted-model JSON file instead of calling the API (offline runs).
    #[arg(long, value_name = "FILE")]
    pub model_script: Option<PathBuf>,
    /// Model name (default: $STRATA_MODEL, else deepseek-chat).
    #[arg(long)]
    pub model: Option<String>,
    /// System prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Directory the tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Let the model create and overwrite files in the working directory (write_file).
    #[arg(long)]
    pub allow_write: bool,
    /// Let the model run shell commands (run_command). Not a sandbox: a command runs with your
    /// full rights and can read, change or delete anything you can; the working directory is
    /// only where it starts.
    #[arg(long)]
    pub allow_commands: bool,
}
