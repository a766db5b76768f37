//! Many writers, one store (issue 28 item 3): N sessions appending concurrently into one store.
//!
//! Each of N sessions has its own [`SessionWriter`] on its own thread and appends small
//! `store::synth` events one at a time (batch size 1, waiting for each acknowledgement) for a
//! fixed time. Printed per backend and N: aggregate durable events/s, p50/p99 append latency,
//! and both as ratios to the 1-session case; next to the bare fsync floor of the same disk (a
//! loop of a small `write` + `fdatasync` on one file in the bench dir, appending; `x floor` is
//! over that). A second floor rewrites the same bytes in place: a sync with no size change to
//! journal, as SQLite's reused WAL mostly has, so a store can beat the appending floor.
//!
//! PostgreSQL gives every writer a connection of its own and the server here allows 100, so
//! N above [`PG_MAX_WRITERS`] is reported as not run.
//!
//! One run (2 shared cores, a virtio disk whose fsync rate swings 300–1,400/s between runs;
//! `STRATA_BENCH_SECS=5`, before and after interleaved): SQLite at 64 sessions went from
//! 1,269 to 11,863 durable events/s, 34× its own 1-session rate (before: 3.3×), p99 3.1× the
//! 1-session p99 (before: 13.6×); PostgreSQL, one connection and commit per writer, stays near
//! 1.2×.
//!
//! Run: `STRATA_BENCH_DIR=DIR cargo bench -p strata-store --bench many_writers`.
//! Knobs: `STRATA_BENCH_WRITERS` (comma-separated N, default `1,8,64,256`),
//! `STRATA_BENCH_BACKENDS` (comma-separated, default `sqlite,postgres`), `STRATA_BENCH_SECS`
//! (seconds per case, default 3), `STRATA_BENCH_DIR` (default a temp dir; the disk under test).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use strata_core::{HeaderSpec, SessionHeader};
use strata_store::synth::{turn_candidates, EVENTS_PER_TURN};
use strata_store::{PostgresBackend, SessionWriter, SqliteBackend, Store};

mod support;
use support::{database_url, env_u64, Schema};

/// Writers the PostgreSQL server can take at once (each holds a connection; the shared pool
/// and the server's own reserve take the rest of its 100).
const PG_MAX_WRITERS: usize = 80;

/// Bytes of user and tool texts in the synthetic events: small events.
const TEXT_LEN: usize = 40;

fn header(id: &str) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: id.to_owned(),
        created_at: 1,
        cwd: Some("/bench".to_owned()),
        ..HeaderSpec::default()
    })
    .unwrap()
}

fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|item| item.trim().to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// What one case measured.
struct Case {
    n_events: u64,
    elapsed: Duration,
    /// Every append's latency, sorted.
    latencies: Vec<Duration>,
}

impl Case {
    fn rate(&self) -> f64 {
        self.n_events as f64 / self.elapsed.as_secs_f64()
    }

    fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let index = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[index]
    }
}

/// Appends one event at a time until `deadline`, returning each append's latency.
fn append_until(writer: &SessionWriter, deadline: Instant) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let mut next = writer.durable_len();
    let mut turn = next / EVENTS_PER_TURN + 1;
    while Instant::now() < deadline {
        // A whole turn's candidates, made before its appends are timed.
        for candidate in turn_candidates(turn, next, TEXT_LEN) {
            let start = Instant::now();
            writer.append_one(candidate, 1).unwrap();
            latencies.push(start.elapsed());
            next += 1;
        }
        turn += 1;
    }
    latencies
}

/// N writers on one store, each on its own thread, started together.
fn run_case(store: &Store, label: &str, n: usize, secs: u64) -> Case {
    let writers: Vec<SessionWriter> = (0..n)
        .map(|index| {
            store
                .create(header(&format!("{label}-{n}-{index}")))
                .unwrap()
        })
        .collect();
    // Warm up each writer (statements, pages) outside the clock.
    for writer in &writers {
        let first = turn_candidates(1, 0, TEXT_LEN);
        writer.append(first, 1).unwrap();
    }
    let barrier = Arc::new(Barrier::new(n + 1));
    let handles: Vec<_> = writers
        .into_iter()
        .map(|writer| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let deadline = Instant::now() + Duration::from_secs(secs);
                let latencies = append_until(&writer, deadline);
                writer.close().unwrap();
                latencies
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut latencies = Vec::new();
    for handle in handles {
        latencies.extend(handle.join().unwrap());
    }
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    Case {
        n_events: latencies.len() as u64,
        elapsed,
        latencies,
    }
}

/// The bare floor: small `write` + `fdatasync` on one file, for `secs` seconds; appending
/// (the file grows, so each sync also journals its new size, as a JSONL log's does) or
/// `overwrite` (the same 200 bytes rewritten in place: data only, like a reused WAL).
fn fsync_floor(dir: &Path, secs: u64, overwrite: bool) -> Case {
    let path = dir.join("floor.bin");
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let line = [b'x'; 200];
    let mut latencies = Vec::new();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    while Instant::now() < deadline {
        let one = Instant::now();
        if overwrite {
            file.write_all_at(&line, 0).unwrap();
        } else {
            file.write_all(&line).unwrap();
        }
        file.sync_data().unwrap();
        latencies.push(one.elapsed());
    }
    let elapsed = start.elapsed();
    fs::remove_file(path).unwrap();
    latencies.sort_unstable();
    Case {
        n_events: latencies.len() as u64,
        elapsed,
        latencies,
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let writers: Vec<usize> = list("STRATA_BENCH_WRITERS", "1,8,64,256")
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    let backends = list("STRATA_BENCH_BACKENDS", "sqlite,postgres");
    let secs = env_u64("STRATA_BENCH_SECS", 3).max(1);
    let temp;
    let base = match std::env::var_os("STRATA_BENCH_DIR") {
        Some(dir) => {
            fs::create_dir_all(&dir).unwrap();
            std::path::PathBuf::from(dir)
        }
        None => {
            temp = tempfile::tempdir().unwrap();
            temp.path().to_path_buf()
        }
    };
    println!(
        "## many writers, one store: N sessions x batch 1, {secs} s per case, dir {}",
        base.display()
    );
    let floor = fsync_floor(&base, secs, false);
    let overwrite = fsync_floor(&base, secs, true);
    for (what, case) in [("append", &floor), ("overwrite in place", &overwrite)] {
        println!(
            "fsync floor (write 200 B + fdatasync, {what}): {:.0} fsyncs/s, p50 {:.3} ms, \
             p99 {:.3} ms",
            case.rate(),
            ms(case.quantile(0.5)),
            ms(case.quantile(0.99))
        );
    }
    println!(
        "{:<9} {:>5} {:>10} {:>12} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "backend",
        "N",
        "events",
        "events/s",
        "p50 ms",
        "p99 ms",
        "x floor",
        "x N=1 ev/s",
        "p99/N=1"
    );
    for backend in &backends {
        let mut one: Option<(f64, Duration)> = None;
        // Kept until the backend's cases are done: its files, or its PostgreSQL schema.
        let mut _dir = None;
        let mut _schema = None;
        let store = match backend.as_str() {
            "sqlite" => {
                let dir = tempfile::tempdir_in(&base).unwrap();
                let store = Store::new(SqliteBackend::open(&dir.path().join("strata.db")).unwrap());
                _dir = Some(dir);
                store
            }
            "postgres" => {
                let url = database_url();
                if let Err(error) = Client::connect(&url, NoTls) {
                    println!("{backend:<9} not run: no PostgreSQL server at {url}: {error}");
                    continue;
                }
                let schema = Schema::create(&url, "many");
                let store = Store::new(PostgresBackend::connect(&schema.store_url()).unwrap());
                _schema = Some(schema);
                store
            }
            other => {
                println!("{other:<9} not run: unknown backend (sqlite, postgres)");
                continue;
            }
        };
        for &n in &writers {
            if backend == "postgres" && n > PG_MAX_WRITERS {
                println!(
                    "{backend:<9} {n:>5} not run: one connection per writer, the server allows \
                     max_connections 100"
                );
                continue;
            }
            let case = run_case(&store, backend, n, secs);
            let (p50, p99) = (case.quantile(0.5), case.quantile(0.99));
            let rate = case.rate();
            if n == 1 {
                one = Some((rate, p99));
            }
            let (x_rate, x_p99) = match one {
                Some((one_rate, one_p99)) => (
                    format!("{:.2}x", rate / one_rate),
                    format!("{:.2}x", p99.as_secs_f64() / one_p99.as_secs_f64()),
                ),
                None => ("-".to_owned(), "-".to_owned()),
            };
            println!(
                "{:<9} {:>5} {:>10} {:>12.0} {:>9.3} {:>9.3} {:>8.2}x {:>10} {:>9}",
                backend,
                n,
                case.n_events,
                rate,
                ms(p50),
                ms(p99),
                rate / floor.rate(),
                x_rate,
                x_p99
            );
        }
        drop(store);
    }
}
