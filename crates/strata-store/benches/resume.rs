//! Resume benchmark (issue 9): time and peak RSS from opening a stored session for writing to
//! a ready-to-send request (the request header fold and the derived messages), resuming
//! lazily from a checkpoint (`Store::open_write`) next to restoring the whole log
//! (`Store::open_write_full`), in the same run, for synthetic sessions of 10 k … 5 M events
//! with periodic compaction.
//!
//! Every measured open runs in a fresh child process, so its peak RSS (`VmHWM`) is its own;
//! the figure includes the process baseline (printed as `idle`). Each case runs three times
//! and the median is printed. The logs are `strata_core::synth` sessions (compaction every 8
//! turns, 5 % prunes per turn) appended as dsh writes them, 512 events per batch (one zstd frame
//! or SQLite transaction each), with the offset index kept by the appender and a checkpoint
//! recorded at the end; one untimed open then adds the end-seed marker. Generation is never
//! timed, and the logs are cached on disk between runs.
//!
//! Run: `STRATA_BENCH_DIR=DIR cargo bench -p strata-store --bench resume`.
//! Knobs: `STRATA_BENCH_SIZES` (comma-separated event counts, default
//! `10000,100000,1000000,5000000`), `STRATA_BENCH_BACKENDS` (default `zstd,sqlite`; also
//! `raw` and `postgres`), `STRATA_BENCH_DIR` (default `$TMPDIR/strata-bench-resume`; logs are
//! kept there and reused when complete).
//!
//! `postgres` runs against `STRATA_TEST_DATABASE_URL`, else `DATABASE_URL`, else
//! `postgres://postgres@127.0.0.1:5432/test`, in one schema per size made for the run and
//! dropped after it (so its logs are generated every run); its size is the schema's tables
//! with their indexes and TOAST.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use strata_core::synth::{generate, SynthConfig};
use strata_store::{
    Backend, Compression, JsonlBackend, JsonlConfig, PostgresBackend, SqliteBackend, Store,
};

mod support;

use support::{database_url, peak_rss, Schema};

const ID: &str = "bench-resume";
const BATCH: usize = 512;
const RUNS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Raw,
    Zstd,
    Sqlite,
    /// `at` is a store address (`postgres://…?schema=…`) rather than a directory.
    Postgres,
}

impl Kind {
    fn parse(name: &str) -> Kind {
        match name {
            "raw" => Kind::Raw,
            "zstd" => Kind::Zstd,
            "sqlite" => Kind::Sqlite,
            "postgres" => Kind::Postgres,
            other => panic!("unknown backend {other:?} (raw, zstd, sqlite, postgres)"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Raw => "raw",
            Kind::Zstd => "zstd",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }

    /// The backend of the log at `at`: a directory, or (Postgres) a store address.
    fn backend(self, at: &str) -> Box<dyn Backend> {
        let dir = Path::new(at);
        match self {
            Kind::Raw => Box::new(JsonlBackend::new(JsonlConfig::new(
                dir.join("raw"),
                Compression::None,
            ))),
            Kind::Zstd => Box::new(JsonlBackend::new(JsonlConfig::new(
                dir.join("zstd"),
                Compression::Zstd,
            ))),
            Kind::Sqlite => Box::new(SqliteBackend::open(&dir.join("strata.db")).unwrap()),
            Kind::Postgres => Box::new(PostgresBackend::connect(at).unwrap()),
        }
    }

    fn store(self, at: &str) -> Store {
        let dir = Path::new(at);
        match self {
            Kind::Raw => Store::jsonl(dir.join("raw"), Compression::None),
            Kind::Zstd => Store::jsonl(dir.join("zstd"), Compression::Zstd),
            Kind::Sqlite => Store::sqlite(&dir.join("strata.db")).unwrap(),
            Kind::Postgres => Store::new(PostgresBackend::connect(at).unwrap()),
        }
    }

    /// Bytes on disk of the log (JSONL file, or the database with its WAL); Postgres sizes are
    /// taken from the server by [`Schema::size`].
    fn size(self, dir: &Path) -> u64 {
        let files: Vec<PathBuf> = match self {
            Kind::Raw | Kind::Zstd => {
                let root = dir.join(self.name());
                let mut found = Vec::new();
                for project in fs::read_dir(&root).into_iter().flatten().flatten() {
                    for session in fs::read_dir(project.path()).into_iter().flatten().flatten() {
                        for file in fs::read_dir(session.path()).into_iter().flatten().flatten() {
                            let name = file.file_name();
                            if name.to_string_lossy().starts_with("session.v3.jsonl") {
                                found.push(file.path());
                            }
                        }
                    }
                }
                found
            }
            Kind::Sqlite => vec![dir.join("strata.db"), dir.join("strata.db-wal")],
            Kind::Postgres => Vec::new(),
        };
        files
            .iter()
            .filter_map(|file| fs::metadata(file).ok())
            .map(|metadata| metadata.len())
            .sum()
    }
}

/// Child: generates a session of about `n_events` and stores it at `at` for `kind`.
fn generate_log(at: &str, kind: Kind, n_events: u64) {
    let session = generate(&SynthConfig {
        events: n_events,
        id: ID.to_owned(),
        ..SynthConfig::default()
    })
    .unwrap();
    let backend = kind.backend(at);
    let mut appender = backend.create(session.header(), &[]).unwrap();
    // One append (and one zstd frame) per batch, as dsh writes.
    for batch in session.events().unwrap().chunks(BATCH) {
        appender.append_events(batch).unwrap();
    }
    appender.checkpoint(&session.checkpoint().unwrap()).unwrap();
    drop(appender);
    // The first open adds the end-seed marker (and checkpoints it); measured opens add nothing.
    let writer = kind.store(at).open_write(ID).unwrap();
    assert!(writer.with_session(|session| session.is_lazy()));
    writer.close().unwrap();
    println!("{}", session.len());
}

/// Child: one measured open. Prints `seconds peak_rss n_events n_nodes n_messages n_pinned`.
fn measure(at: &str, kind: Kind, lazy: bool) {
    let store = kind.store(at);
    let start = Instant::now();
    let writer = if lazy {
        store.open_write(ID).unwrap()
    } else {
        store.open_write_full(ID).unwrap()
    };
    let (header, messages, n_events, n_nodes, n_pinned, is_lazy) = writer.with_session(|session| {
        (
            session.request_header().cloned(),
            session.derive_messages(),
            session.len(),
            session.surface().len(),
            session.n_pinned(),
            session.is_lazy(),
        )
    });
    let elapsed = start.elapsed();
    let rss = peak_rss();
    assert!(header.is_some(), "a request header");
    assert_eq!(is_lazy, lazy, "the open resumed from its checkpoint");
    println!(
        "{} {rss} {n_events} {n_nodes} {} {n_pinned}",
        elapsed.as_secs_f64(),
        messages.len()
    );
    // Closing is not part of "ready to send"; nothing was appended, so nothing is written.
    // A PostgreSQL writer is dropped instead, after the clock: that releases its advisory
    // writer lock at once, which a vanished connection does only when the server notices.
    if kind == Kind::Postgres {
        drop(writer);
    } else {
        std::mem::forget(writer);
    }
}

fn child(args: &[&str]) -> Vec<String> {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / (1024.0 * 1024.0))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |index: usize| args.get(index).map(String::as_str).unwrap_or_default();
    if let Some(index) = args.iter().position(|arg| arg == "--generate") {
        generate_log(
            arg(index + 1),
            Kind::parse(arg(index + 2)),
            arg(index + 3).parse().unwrap(),
        );
        return;
    }
    if let Some(index) = args.iter().position(|arg| arg == "--measure") {
        measure(
            arg(index + 1),
            Kind::parse(arg(index + 2)),
            arg(index + 3) == "lazy",
        );
        return;
    }
    if let Some(_index) = args.iter().position(|arg| arg == "--idle") {
        println!("0 {}", peak_rss());
        return;
    }
    if args.iter().any(|arg| arg == "--list") {
        return;
    }
    let base = std::env::var_os("STRATA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("strata-bench-resume"));
    let sizes: Vec<u64> = std::env::var("STRATA_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,100000,1000000,5000000".to_owned())
        .split(',')
        .filter_map(|value| value.trim().replace('_', "").parse().ok())
        .collect();
    let kinds: Vec<Kind> = std::env::var("STRATA_BENCH_BACKENDS")
        .unwrap_or_else(|_| "zstd,sqlite".to_owned())
        .split(',')
        .map(|name| Kind::parse(name.trim()))
        .collect();
    let idle = child(&["--idle"]);
    println!(
        "resume benchmark: open for writing → request header + derived messages ready \
         (median of {RUNS}; RSS = peak of a fresh process, idle process {} MB)",
        mb(idle[1].parse().unwrap())
    );
    println!(
        "{:<7} {:>9} {:>9} {:>7} {:>6} | {:>10} {:>9} | {:>9} {:>9} {:>7} | {:>8}",
        "backend",
        "events",
        "log MB",
        "nodes",
        "msgs",
        "full ms",
        "full MB",
        "lazy ms",
        "lazy MB",
        "pinned",
        "speedup"
    );
    for n_events in &sizes {
        for kind in &kinds {
            let dir = base.join(format!("{}-{n_events}", kind.name()));
            let marker = dir.join("complete");
            let schema = (*kind == Kind::Postgres)
                .then(|| Schema::create(&database_url(), &format!("resume_{n_events}")));
            let at = match &schema {
                Some(schema) => schema.store_url(),
                None => dir.to_str().unwrap().to_owned(),
            };
            if schema.is_some() || !marker.exists() {
                if schema.is_none() {
                    let _ = fs::remove_dir_all(&dir);
                    fs::create_dir_all(&dir).unwrap();
                }
                let start = Instant::now();
                let generated = child(&["--generate", &at, kind.name(), &n_events.to_string()]);
                if schema.is_none() {
                    fs::write(&marker, b"").unwrap();
                }
                eprintln!(
                    "generated {} events for {} in {:.1}s (not timed)",
                    generated[0],
                    kind.name(),
                    start.elapsed().as_secs_f64()
                );
            }
            let mut figures: Vec<(f64, f64, Vec<String>)> = Vec::new();
            for mode in ["full", "lazy"] {
                let runs: Vec<Vec<String>> = (0..RUNS)
                    .map(|_| child(&["--measure", &at, kind.name(), mode]))
                    .collect();
                let seconds = median(runs.iter().map(|run| run[0].parse().unwrap()).collect());
                let rss = median(runs.iter().map(|run| run[1].parse().unwrap()).collect());
                figures.push((seconds, rss, runs[0].clone()));
            }
            let (full, lazy) = (&figures[0], &figures[1]);
            assert_eq!(full.2[2..5], lazy.2[2..5], "same log, surface and messages");
            println!(
                "{:<7} {:>9} {:>9} {:>7} {:>6} | {:>10.1} {:>9} | {:>9.2} {:>9} {:>7} | {:>7.0}×",
                kind.name(),
                full.2[2],
                mb(schema
                    .as_ref()
                    .map_or_else(|| kind.size(&dir), Schema::size) as f64),
                full.2[3],
                full.2[4],
                full.0 * 1e3,
                mb(full.1),
                lazy.0 * 1e3,
                mb(lazy.1),
                lazy.2[5],
                full.0 / lazy.0
            );
        }
    }
}
