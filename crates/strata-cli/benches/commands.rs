//! What the `strata` subcommands cost on a large log, next to the library's `Store::load` of
//! the same log: wall time and peak RSS of each command in a fresh process, as ratios to a
//! load measured in the same run.
//!
//! Every subcommand that reads a log loads it first, so a command far above the load is
//! doing something of its own a large log makes expensive. This bench is how the figures in
//! the commits that fixed such cases were taken (parsed payload trees kept in every event made
//! `inspect`, `report`, `fork` and `compact --dry-run` take 3–4 GB on an 800 MB log, and a
//! progress wrapper that dropped the decoders' prechecked rows made `validate` twice a load).
//!
//! Two shapes of log: `realistic` (the synthetic agent log, compacted every few turns, so its
//! surface stays small however long the log) and `conversation` (a long conversation never
//! compacted: nearly every event a live surface node, so whatever a command keeps per surface
//! node, such as a parsed message tree, shows at full size).
//!
//! Run: `cargo bench -p strata-cli --bench commands`. Knobs: `STRATA_BENCH_SHAPE`
//! (`realistic`, the default, or `conversation`), `STRATA_BENCH_EVENTS` (default 200,000 events
//! of the realistic log), `STRATA_BENCH_NODES` (default 200,000 live nodes of the conversation),
//! `STRATA_BENCH_DIR` (default a temp dir), `STRATA_BENCH_RUNS` (best of this many runs per
//! command, default 3), `STRATA_BENCH_BASELINE` (another build's `strata` binary, measured
//! beside this one). For example, the million-node conversation beside a baseline build:
//! `STRATA_BENCH_SHAPE=conversation STRATA_BENCH_NODES=1000000 STRATA_BENCH_BASELINE=OLD
//! cargo bench -p strata-cli --bench commands`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_store::{Backend, Compression, JsonlBackend, JsonlConfig, Store};

/// The id of the generated session.
const ID: &str = "bench";

/// Events per append batch (and per decode batch on read), as dsh writes.
const BATCH: usize = 512;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Child process entry: writes the synthetic log of `shape` and `size` (events of the
/// realistic log, live nodes of the conversation) as a raw V3 JSONL file under `root`.
fn generate_log(root: &Path, shape: &str, size: u64) {
    let session = match shape {
        "conversation" => generate_conversation(&ConversationConfig {
            nodes: size,
            id: ID.to_owned(),
            ..ConversationConfig::default()
        }),
        _ => generate(&SynthConfig {
            events: size,
            id: ID.to_owned(),
            ..SynthConfig::default()
        }),
    }
    .expect("the generator's appends are valid");
    let backend = JsonlBackend::new(JsonlConfig::new(root.to_path_buf(), Compression::None));
    let mut appender = backend
        .create(session.header(), &[])
        .expect("create the log");
    // One append (and one zstd frame) per batch, as dsh writes.
    for batch in session.events().chunks(BATCH) {
        appender.append_events(batch).expect("append a batch");
    }
    drop(appender);
}

/// The number of newlines in `bytes`.
fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|byte| **byte == b'\n').count()
}

/// The one `session.v3.jsonl` under `root`.
fn find_log(root: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_log(&path) {
                return Some(found);
            }
        } else if path
            .file_name()
            .is_some_and(|name| name == "session.v3.jsonl")
        {
            return Some(path);
        }
    }
    None
}

/// Runs `command` to its end with its output discarded: `(wall seconds, peak RSS bytes)`.
/// The peak is the child's own (`wait4`), not the largest of all children so far; it also
/// counts this process's RSS when it forked (Linux carries it over), which the bench keeps to
/// a few MB.
fn measure(mut command: Command) -> (f64, u64) {
    let start = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; `wait4` writes it and the status of our own
    // child, which `Child` has not waited for (it never waits on drop).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{command:?} failed with status {status}"
    );
    drop(child);
    // `ru_maxrss` is in KiB on Linux.
    (seconds, u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024)
}

/// Child process entry: `Store::load` of the session in `root`.
fn child_load(root: &Path) {
    let session = Store::jsonl(root, Compression::None)
        .load(ID)
        .expect("load the generated log");
    assert!(session.len() > 1);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--child-load") {
        child_load(Path::new(&args[index + 1]));
        return;
    }
    if let Some(index) = args.iter().position(|arg| arg == "--child-generate") {
        let size = args[index + 3].parse().expect("a size");
        generate_log(Path::new(&args[index + 1]), &args[index + 2], size);
        return;
    }
    if args.iter().any(|arg| arg == "--list") {
        return;
    }
    let shape = std::env::var("STRATA_BENCH_SHAPE").unwrap_or_else(|_| "realistic".into());
    let size = match shape.as_str() {
        "realistic" => env_u64("STRATA_BENCH_EVENTS", 200_000),
        "conversation" => env_u64("STRATA_BENCH_NODES", 200_000),
        other => panic!("STRATA_BENCH_SHAPE: {other:?} is neither realistic nor conversation"),
    };
    let runs = env_u64("STRATA_BENCH_RUNS", 3).max(1);
    let base = std::env::var_os("STRATA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("strata-bench-commands-")
        .tempdir_in(&base)
        .expect("a scratch directory");
    let root = dir.path().join("jsonl");
    // Generated in a child: a process's peak RSS counts the memory of the process it was
    // forked from, so this one stays small.
    let this = std::env::current_exe().expect("the bench binary");
    let status = Command::new(&this)
        .args([
            "--child-generate",
            &root.display().to_string(),
            &shape,
            &size.to_string(),
        ])
        .status()
        .expect("spawn the generator");
    assert!(status.success(), "generating the log failed");
    let log = find_log(&root).expect("the generated log");
    let bytes = std::fs::read(&log).expect("read the generated log");
    let log_bytes = bytes.len() as u64;
    // Lines after the header line.
    let n_events = count_lines(&bytes).saturating_sub(1) as u64;
    drop(bytes);
    let strata = env!("CARGO_BIN_EXE_strata");
    let scratch = dir.path().join("out");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let fork_at = (n_events * 9 / 10).to_string();
    let at = fork_at.clone();
    let log_arg = log.to_str().expect("a UTF-8 temp path").to_owned();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("validate", vec!["validate".into(), log_arg.clone()]),
        ("inspect", vec!["inspect".into(), log_arg.clone()]),
        ("surface", vec!["surface".into(), log_arg.clone()]),
        ("messages", vec!["messages".into(), log_arg.clone()]),
        (
            "messages --json",
            vec!["messages".into(), log_arg.clone(), "--json".into()],
        ),
        (
            "messages openai",
            vec![
                "messages".into(),
                log_arg.clone(),
                "--format".into(),
                "openai".into(),
            ],
        ),
        (
            "messages anthropic",
            vec![
                "messages".into(),
                log_arg.clone(),
                "--format".into(),
                "anthropic".into(),
            ],
        ),
        (
            "messages --at 90%",
            vec![
                "messages".into(),
                log_arg.clone(),
                "--at".into(),
                at.clone(),
            ],
        ),
        (
            "compact --dry-run",
            vec!["compact".into(), log_arg.clone(), "--dry-run".into()],
        ),
        (
            "compact --offline",
            vec![
                "compact".into(),
                log_arg.clone(),
                "--dry-run".into(),
                "--offline".into(),
            ],
        ),
        (
            "prune --dry-run",
            vec!["prune".into(), log_arg.clone(), "--dry-run".into()],
        ),
        (
            "repair --dry-run",
            vec!["repair".into(), log_arg.clone(), "--dry-run".into()],
        ),
        (
            "fork --at 90%",
            vec![
                "fork".into(),
                log_arg.clone(),
                "--at".into(),
                fork_at,
                "-o".into(),
                "FORK".into(),
            ],
        ),
        (
            "report",
            vec![
                "report".into(),
                log_arg.clone(),
                "-o".into(),
                scratch.join("report.html").display().to_string(),
                "--force".into(),
            ],
        ),
    ];
    let root_arg = root.display().to_string();
    let load = || {
        let mut command = Command::new(&this);
        command.args(["--child-load", &root_arg]);
        measure(command)
    };
    // Another build's binary, measured beside this one (before/after figures in one run).
    let baseline = std::env::var_os("STRATA_BENCH_BASELINE").map(PathBuf::from);
    let mut binaries: Vec<(&str, PathBuf)> = vec![("", PathBuf::from(strata))];
    if let Some(baseline) = baseline {
        binaries.push(("baseline", baseline));
    }
    println!(
        "## strata subcommands on the {shape} log of {size} {} ({n_events} events, {:.0} MB of raw V3 JSONL), best of {runs}",
        if shape == "conversation" { "live nodes" } else { "events" },
        log_bytes as f64 / 1e6
    );
    println!(
        "{:<20} {:<9} {:>8} {:>12} {:>10} {:>10} {:>10}",
        "command", "binary", "wall s", "peak RSS MB", "time/load", "RSS/load", "RSS/file"
    );
    let mut load_best = (f64::MAX, u64::MAX);
    let mut best = vec![vec![(f64::MAX, u64::MAX); binaries.len()]; cases.len()];
    for run in 0..runs {
        // The load and the commands take turns, so a slow spell of the machine hits both.
        let (seconds, rss) = load();
        load_best = (load_best.0.min(seconds), load_best.1.min(rss));
        for ((_, args), slots) in cases.iter().zip(best.iter_mut()) {
            for ((label, binary), slot) in binaries.iter().zip(slots.iter_mut()) {
                let fork_out = scratch.join(format!("fork-{run}{label}.v3.jsonl"));
                let args = args.iter().map(|arg| {
                    if arg == "FORK" {
                        fork_out.display().to_string()
                    } else {
                        arg.clone()
                    }
                });
                let mut command = Command::new(binary);
                command.args(args).env("NO_COLOR", "1");
                let (seconds, rss) = measure(command);
                *slot = (slot.0.min(seconds), slot.1.min(rss));
            }
        }
    }
    let row = |name: &str, label: &str, (seconds, rss): (f64, u64)| {
        println!(
            "{:<20} {:<9} {:>8.3} {:>12.0} {:>9.2}x {:>9.2}x {:>9.2}x",
            name,
            label,
            seconds,
            rss as f64 / 1e6,
            seconds / load_best.0,
            rss as f64 / load_best.1 as f64,
            rss as f64 / log_bytes as f64
        );
    };
    row("Store::load", "", load_best);
    for ((name, _), slots) in cases.iter().zip(best) {
        for ((label, _), measured) in binaries.iter().zip(slots) {
            row(name, label, measured);
        }
    }
}
