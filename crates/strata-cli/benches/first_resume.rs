//! The first resume after an import or a convert, next to the second (issue 28, item 2).
//!
//! A session brought into a store by `strata import` or `strata convert` carries a checkpoint
//! of exactly the events it stored (docs/format.md §5a), so the first `strata run --resume` of
//! it reads a short tail instead of the whole history, like every later resume. This bench
//! shows it: per store kind it imports the generated log, then times three resumes (each one
//! scripted turn) in fresh processes, and, as the floor the checkpoint saves, a resume of the
//! same import with its checkpoint taken away (JSONL stores: the sidecars deleted) and a full
//! `strata validate` of the log.
//!
//! Run: `cargo bench -p strata-cli --bench first_resume`. Knobs: `STRATA_BENCH_EVENTS` (events
//! of the realistic synthetic log, default 200,000), `STRATA_BENCH_SHAPE` (`realistic` or
//! `conversation`), `STRATA_BENCH_DIR` (default a temp dir).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/mod.rs"]
mod support;

use support::{env_u64, find_file, generate_in_child, measure, serve_child_generate, ID};

/// One reply and the end of the turn: the resume's own work, no tool and no delay.
const SCRIPT: &str = r#"{"responses": [{"events": [{"type": "text_delta", "text": "Hello."}, {"type": "finish", "reason": "stop"}]}]}"#;

/// A store kind the bench imports into: its label and how `--store` names it under `dir`.
struct Target {
    label: &'static str,
    store: fn(&Path) -> String,
    /// The command that brings the log in (`import` for SQLite, `convert` for JSONL stores).
    verb: &'static str,
}

const TARGETS: [Target; 3] = [
    Target {
        label: "sqlite",
        store: |dir| dir.join("strata.db").display().to_string(),
        verb: "import",
    },
    Target {
        label: "jsonl",
        store: |dir| format!("jsonl:{}", dir.join("jsonl").display()),
        verb: "convert",
    },
    Target {
        label: "jsonl-zstd",
        store: |dir| format!("jsonl-zstd:{}", dir.join("zstd").display()),
        verb: "convert",
    },
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if serve_child_generate(&args) || args.iter().any(|arg| arg == "--list") {
        return;
    }
    let shape = std::env::var("STRATA_BENCH_SHAPE").unwrap_or_else(|_| "realistic".into());
    let size = env_u64("STRATA_BENCH_EVENTS", 200_000);
    let base = std::env::var_os("STRATA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("strata-bench-first-resume-")
        .tempdir_in(&base)
        .expect("a scratch directory");
    let this = std::env::current_exe().expect("the bench binary");
    let log = generate_in_child(&this, &dir.path().join("source"), &shape, size);
    let log_bytes = std::fs::metadata(&log).expect("the log").len();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).expect("write the model script");
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("a work directory");
    let strata = PathBuf::from(env!("CARGO_BIN_EXE_strata"));

    println!(
        "## the first resume after an import, {shape} log of {size} events ({:.0} MB of raw V3 JSONL)",
        log_bytes as f64 / 1e6
    );
    let validate = {
        let mut command = Command::new(&strata);
        command.arg("validate").arg(&log);
        measure(command)
    };
    println!(
        "{:<11} {:<28} {:>8} {:>12} {:>12}",
        "store", "step", "wall s", "peak RSS MB", "÷ resume 2"
    );
    row("(file)", "validate (full read)", validate, None);
    for target in &TARGETS {
        let stores = dir.path().join(target.label);
        std::fs::create_dir_all(&stores).expect("a store directory");
        let store = (target.store)(&stores);
        let imported = {
            let mut command = Command::new(&strata);
            command.arg(target.verb).arg(&log);
            if target.verb == "import" {
                command.arg("--store");
            }
            command.arg(&store);
            measure(command)
        };
        let resume = || {
            let mut command = Command::new(&strata);
            command
                .args(["run", "hello", "--resume", "--session", ID, "--store"])
                .arg(&store)
                .arg("--model-script")
                .arg(&script)
                .arg("--workdir")
                .arg(&workdir);
            measure(command)
        };
        let resumes = [resume(), resume(), resume()];
        let second = resumes[1];
        row(target.label, target.verb, imported, Some(second));
        for (n, measured) in resumes.iter().enumerate() {
            row(
                target.label,
                &format!("resume {}", n + 1),
                *measured,
                Some(second),
            );
        }
        // The floor the checkpoint saves: the same resume once the sidecars are gone, so it
        // reads the whole history (JSONL only: a SQLite checkpoint is a row, not a file).
        if target.verb == "convert" {
            let removed = ["session.v3.ckpt", "session.v3.idx"]
                .iter()
                .filter_map(|name| find_file(&stores, name))
                .map(|path| std::fs::remove_file(path).expect("remove a sidecar"))
                .count();
            assert_eq!(removed, 2, "both sidecars of {}", target.label);
            row(
                target.label,
                "resume, sidecars deleted",
                resume(),
                Some(second),
            );
        }
    }
}

fn row(store: &str, step: &str, (seconds, rss): (f64, u64), second: Option<(f64, u64)>) {
    let ratio = second.map_or(String::new(), |(base, _)| {
        format!("{:.2}x", seconds / base.max(1e-9))
    });
    println!(
        "{store:<11} {step:<28} {seconds:>8.3} {:>12.1} {ratio:>12}",
        rss as f64 / 1e6
    );
}
