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
use std::process::Command;

use strata_store::{Compression, Store};

#[path = "support/mod.rs"]
mod support;

use support::{count_lines, env_u64, generate_in_child, measure, serve_child_generate, ID};

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
    if serve_child_generate(&args) {
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
    let this = std::env::current_exe().expect("the bench binary");
    let log = generate_in_child(&this, &root, &shape, size);
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
