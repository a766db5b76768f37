//! Store benchmarks (issue 3), printed as figures and ratios against a physical floor measured
//! in the same run:
//!
//! - `SessionWriter::append` durable events/s at batch 1 and 64 per backend, vs a bare
//!   `write + fdatasync` loop of the same bytes;
//! - full load of an N-event log (raw, zstd, SQLite): wall time, MB/s of plaintext, peak RSS,
//!   vs the bare read (+ decompress) + `serde_json` tokenize floor; each measured in a fresh
//!   child process so peak RSS is per phase. The `value` row parses every record into a kept
//!   `serde_json::Value` (what the core's event representation costs before any store work);
//!   `read` is `Store::read` (decode to wire rows), `load` is `Store::load` (read + restore);
//! - `Store::read_from` of the last 50 events.
//!
//! Run: `cargo bench -p strata-store --bench store`. Sizes: `STRATA_BENCH_EVENTS` (default
//! 1,000,000 events in the load log), `STRATA_BENCH_APPENDS` (default 400 appends per append
//! case), `STRATA_BENCH_DIR` (default a temp dir; the disk under test).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use strata_core::{HeaderSpec, SessionHeader};
use strata_store::synth::{turn_candidates, EVENTS_PER_TURN};
use strata_store::{Compression, JsonlBackend, JsonlConfig, SessionWriter, SqliteBackend, Store};

const ID: &str = "bench";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Raw,
    Zstd,
    Sqlite,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Raw, Kind::Zstd, Kind::Sqlite];

    fn name(self) -> &'static str {
        match self {
            Kind::Raw => "raw",
            Kind::Zstd => "zstd",
            Kind::Sqlite => "sqlite",
        }
    }

    fn parse(name: &str) -> Kind {
        match name {
            "raw" => Kind::Raw,
            "zstd" => Kind::Zstd,
            _ => Kind::Sqlite,
        }
    }

    fn store(self, dir: &Path) -> Store {
        match self {
            Kind::Raw => Store::new(JsonlBackend::new(JsonlConfig::new(
                dir.join("raw"),
                Compression::None,
            ))),
            Kind::Zstd => Store::new(JsonlBackend::new(JsonlConfig::new(
                dir.join("zstd"),
                Compression::Zstd,
            ))),
            Kind::Sqlite => Store::new(SqliteBackend::open(&dir.join("strata.db")).unwrap()),
        }
    }

    /// The file a load reads (for the floor).
    fn file(self, dir: &Path) -> PathBuf {
        match self {
            Kind::Raw => find(&dir.join("raw"), "session.v3.jsonl"),
            Kind::Zstd => find(&dir.join("zstd"), "session.v3.jsonl.zstd"),
            Kind::Sqlite => dir.join("strata.db"),
        }
    }
}

fn find(root: &Path, name: &str) -> PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|file| file == name) {
                return path;
            }
        }
    }
    panic!("no {name} under {}", root.display());
}

fn header() -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: ID.to_owned(),
        created_at: 1,
        cwd: Some("/bench".to_owned()),
        ..HeaderSpec::default()
    })
    .unwrap()
}

/// Appends synthetic turns until the log has at least `n_events`, `batch` events per append.
fn fill(writer: &SessionWriter, n_events: u64, batch: usize) -> (u64, Duration) {
    let mut n_appends = 0;
    let mut pending = Vec::new();
    let mut next = writer.durable_len();
    let mut turn = next / EVENTS_PER_TURN + 1;
    let start = Instant::now();
    while next < n_events {
        while pending.len() < batch {
            pending.extend(turn_candidates(turn, next + pending.len() as u64, 120));
            turn += 1;
        }
        let rest = pending.split_off(batch);
        let appended = writer
            .append(std::mem::replace(&mut pending, rest), 1)
            .unwrap();
        next += appended.len() as u64;
        n_appends += 1;
    }
    (n_appends, start.elapsed())
}

/// The bare floor: the same bytes per batch, `write` + `fdatasync`, no validation or encoding.
fn floor_appends(dir: &Path, batch_bytes: &[u8], n_appends: u64) -> Duration {
    let path = dir.join("floor.bin");
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let start = Instant::now();
    for _ in 0..n_appends {
        file.write_all(batch_bytes).unwrap();
        file.sync_data().unwrap();
    }
    let elapsed = start.elapsed();
    fs::remove_file(path).unwrap();
    elapsed
}

fn bench_appends(base: &Path) {
    let n_appends = env_u64("STRATA_BENCH_APPENDS", 400);
    println!("## durable append (SessionWriter::append), {n_appends} appends per case");
    println!(
        "{:<8} {:>6} {:>14} {:>16} {:>8}",
        "backend", "batch", "events/s", "floor events/s", "ratio"
    );
    for batch in [1usize, 64] {
        // The bytes of one batch, for the floor: the JSONL encoding of `batch` events.
        let mut sample = Vec::new();
        {
            let store = Store::memory();
            let writer = store.create(header()).unwrap();
            fill(&writer, batch as u64, batch);
            writer.with_session(|session| {
                for event in &session.events()[..batch] {
                    strata_store::encode_event_line(event, &mut sample);
                }
            });
        }
        // The disk is shared and noisy: the floor is the best of a run before and after.
        let mut floor = floor_appends(base, &sample, n_appends);
        let mut rows = Vec::new();
        for kind in Kind::ALL {
            let dir = tempfile::tempdir_in(base).unwrap();
            let store = kind.store(dir.path());
            let writer = store.create(header()).unwrap();
            let (appends, elapsed) = fill(&writer, n_appends * batch as u64, batch);
            writer.close().unwrap();
            rows.push((
                kind,
                (appends * batch as u64) as f64 / elapsed.as_secs_f64(),
            ));
        }
        floor = floor.min(floor_appends(base, &sample, n_appends));
        let floor_rate = (n_appends * batch as u64) as f64 / floor.as_secs_f64();
        for (kind, rate) in rows {
            println!(
                "{:<8} {:>6} {:>14.0} {:>16.0} {:>7.2}x",
                kind.name(),
                batch,
                rate,
                floor_rate,
                rate / floor_rate
            );
        }
    }
}

/// Peak resident set of this process, from /proc (kB → bytes).
fn peak_rss() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Child process entry: runs one load phase and prints `seconds peak_rss n_events`.
fn child(mode: &str, kind: Kind, dir: &Path) {
    let start = Instant::now();
    let n_events = match mode {
        "floor" => floor_load(kind, &kind.file(dir), false),
        "value" => floor_load(kind, &kind.file(dir), true),
        "read" => kind.store(dir).read(ID).unwrap().events.len() as u64,
        "load" => kind.store(dir).load(ID).unwrap().len() as u64,
        other => panic!("unknown mode {other}"),
    };
    println!(
        "{} {} {}",
        start.elapsed().as_secs_f64(),
        peak_rss(),
        n_events
    );
}

/// Read (+ decompress) + tokenize every record into `IgnoredAny`: what any JSONL reader pays.
///
/// With `values`, every record is parsed into a `serde_json::Value` and kept, as a load must
/// (the cost of the data model itself, not of the store).
fn floor_load(kind: Kind, path: &Path, values: bool) -> u64 {
    let mut n = 0;
    let mut kept: Vec<serde_json::Value> = Vec::new();
    let mut tokenize_lines = |reader: &mut dyn BufRead| {
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).unwrap() == 0 {
                break;
            }
            if values {
                kept.push(serde_json::from_slice(&line).unwrap());
            } else {
                serde_json::from_slice::<IgnoredAny>(&line).unwrap();
            }
            n += 1;
        }
    };
    match kind {
        Kind::Raw => tokenize_lines(&mut BufReader::with_capacity(
            256 * 1024,
            File::open(path).unwrap(),
        )),
        Kind::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(File::open(path).unwrap()).unwrap();
            tokenize_lines(&mut BufReader::with_capacity(256 * 1024, decoder));
        }
        Kind::Sqlite => {
            let conn = rusqlite::Connection::open(path).unwrap();
            let mut statement = conn
                .prepare("SELECT data FROM events WHERE session_id = ?1 ORDER BY seq")
                .unwrap();
            let mut rows = statement.query([ID]).unwrap();
            while let Some(row) = rows.next().unwrap() {
                match row.get_ref(0).unwrap() {
                    rusqlite::types::ValueRef::Text(text) if values => {
                        kept.push(serde_json::from_slice(text).unwrap());
                    }
                    rusqlite::types::ValueRef::Text(text) => {
                        serde_json::from_slice::<IgnoredAny>(text).unwrap();
                    }
                    rusqlite::types::ValueRef::Blob(blob) => {
                        let text = zstd::bulk::decompress(blob, 1 << 30).unwrap();
                        serde_json::from_slice::<IgnoredAny>(&text).unwrap();
                    }
                    _ => {}
                }
                n += 1;
            }
            return n;
        }
    }
    drop(kept);
    n.saturating_sub(1) // the header line
}

fn run_child(mode: &str, kind: Kind, dir: &Path) -> (f64, u64, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--child", mode, kind.name(), dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{mode} {kind:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    (
        fields[0].parse().unwrap(),
        fields[1].parse().unwrap(),
        fields[2].parse().unwrap(),
    )
}

fn bench_loads(base: &Path) {
    let n_events = env_u64("STRATA_BENCH_EVENTS", 1_000_000);
    let dir = tempfile::tempdir_in(base).unwrap();
    let mut plaintext = 0u64;
    for kind in Kind::ALL {
        let store = kind.store(dir.path());
        let writer = store.create(header()).unwrap();
        let (_, elapsed) = fill(&writer, n_events, 512);
        writer.close().unwrap();
        let size = fs::metadata(kind.file(dir.path())).unwrap().len();
        if kind == Kind::Raw {
            plaintext = size;
        }
        println!(
            "built {} log: {} events, {:.1} MB on disk, {:.1}s",
            kind.name(),
            store
                .read_from(ID, 0)
                .map(|events| events.len())
                .unwrap_or(0),
            size as f64 / 1e6,
            elapsed.as_secs_f64()
        );
    }
    let mb = plaintext as f64 / 1e6;
    println!();
    println!("## full load of a {n_events}-event log ({mb:.1} MB of V3 JSONL plaintext)");
    println!(
        "{:<8} {:<6} {:>9} {:>9} {:>11} {:>10} {:>11}",
        "backend", "phase", "wall s", "MB/s", "peak RSS MB", "RSS/plain", "time/floor"
    );
    for kind in Kind::ALL {
        let (floor_s, floor_rss, _) = run_child("floor", kind, dir.path());
        for mode in ["floor", "value", "read", "load"] {
            let (seconds, rss, n) = if mode == "floor" {
                (floor_s, floor_rss, 0)
            } else {
                run_child(mode, kind, dir.path())
            };
            if mode == "read" || mode == "load" {
                assert!(n >= n_events, "{mode} {kind:?} read {n} events");
            }
            println!(
                "{:<8} {:<6} {:>9.3} {:>9.0} {:>11.0} {:>9.2}x {:>10.2}x",
                kind.name(),
                mode,
                seconds,
                mb / seconds,
                rss as f64 / 1e6,
                rss as f64 / plaintext as f64,
                seconds / floor_s
            );
        }
    }
    println!();
    println!("## Store::read_from(last 50 events), median of 21");
    for kind in Kind::ALL {
        let store = kind.store(dir.path());
        let n = store.read(ID).unwrap().events.len() as u64;
        let mut times: Vec<Duration> = (0..21)
            .map(|_| {
                let start = Instant::now();
                let tail = store.read_from(ID, n - 50).unwrap();
                assert_eq!(tail.len(), 50);
                start.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "{:<8} {:>9.3} ms",
            kind.name(),
            times[10].as_secs_f64() * 1e3
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--child") {
        child(
            &args[index + 1],
            Kind::parse(&args[index + 2]),
            Path::new(&args[index + 3]),
        );
        return;
    }
    if args.iter().any(|arg| arg == "--list") {
        return;
    }
    let base = std::env::var_os("STRATA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    bench_appends(&base);
    println!();
    bench_loads(&base);
    let _ = std::io::stdout().flush();
}
