//! Real crashes (issue 3): `strata-crash-writer` appends in random batches and reports each
//! acknowledged seq; the test SIGKILLs it at random moments, then checks that every
//! acknowledged event is present and the log validates. Every few kills (and at the end) it
//! reopens for writing: crash repair closes an open turn, and a second reopen adds nothing.
//!
//! `STRATA_CRASH_KILLS` sets the kills per backend (default 100; PostgreSQL, whose writer start
//! pays for a connection, gets a quarter of it, at least 20); `scripts/crash-1000.sh` runs
//! 1,000.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strata_core::{open_turn_closers, CloseCause};
use strata_store::Store;

use crate::common::{durable, store, Kind};
use crate::pg;

const ID: &str = "crash";

fn n_kills() -> usize {
    std::env::var("STRATA_CRASH_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
}

/// A small deterministic generator (the test reproduces given the same seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// The store under test and how the writer names it: `(store, kind arg, path or address)`,
/// plus the PostgreSQL schema's guard.
fn target(
    kind: Kind,
    dir: &std::path::Path,
) -> (Store, &'static str, String, Option<pg::SchemaGuard>) {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    match kind {
        Kind::Raw => (store(kind, dir), "raw", path("raw"), None),
        Kind::Zstd => (store(kind, dir), "zstd", path("zstd"), None),
        Kind::Sqlite => (store(kind, dir), "sqlite", path("strata.db"), None),
        Kind::Postgres => {
            let guard = pg::schema("crash").expect("a PostgreSQL server");
            let url = guard.store_url();
            let store = Store::new(strata_store::PostgresBackend::connect(&url).unwrap());
            (store, "postgres", url, Some(guard))
        }
        Kind::Memory => unreachable!("the crash test needs a durable backend"),
    }
}

/// What one writer run reported.
struct Run {
    /// Durable events after its open (and repair).
    opened: u64,
    /// Closers its open appended (crash repair of the previous kill).
    n_closers: u64,
    /// The highest seq it acknowledged.
    acked: Option<u64>,
}

/// Runs the writer until a random moment after it opened, then SIGKILLs it.
fn crash_once(name: &str, path: &str, rng: &mut Rng) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-crash-writer"))
        .args([name, path, ID, "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let Ok(open_line) = lines_rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        panic!(
            "writer did not open: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let numbers: Vec<u64> = open_line
        .strip_prefix("open ")
        .map(|rest| rest.split(' ').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    let [opened, n_closers] = numbers[..] else {
        panic!("unexpected first line {open_line:?}");
    };
    std::thread::sleep(Duration::from_micros(rng.below(15_000)));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    // Only complete lines count: a kill mid-print acknowledges nothing.
    let acked = lines_rx
        .try_iter()
        .filter_map(|line| {
            line.strip_prefix("ack ")
                .and_then(|n| n.parse::<u64>().ok())
        })
        .max();
    Run {
        opened,
        n_closers,
        acked,
    }
}

fn check_repair_is_idempotent(store: &Store) {
    let writer = store.open_write(ID).unwrap();
    writer.with_session(|session| {
        assert!(
            open_turn_closers(session.events(), CloseCause::Interrupted).is_empty(),
            "reopened log still has an open turn"
        );
    });
    writer.close().unwrap();
    let again = store.open_write(ID).unwrap();
    assert!(
        again.added_on_open().is_empty(),
        "second reopen added events"
    );
    again.close().unwrap();
}

#[test]
fn sigkill_never_loses_an_acknowledged_event() {
    for (backend_idx, kind) in durable().into_iter().enumerate() {
        let kills = match kind {
            Kind::Postgres => (n_kills() / 4).max(20),
            _ => n_kills(),
        };
        let started = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let (store, name, path, _schema) = target(kind, dir.path());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ backend_idx as u64);
        let mut highest_acked: Option<u64> = None;
        let mut n_repaired = 0;
        for kill_idx in 0..kills {
            let Run {
                opened,
                n_closers,
                acked,
            } = crash_once(name, &path, &mut rng);
            if n_closers > 0 {
                n_repaired += 1;
            }
            // Everything acknowledged before the previous kill was there when this run opened.
            if let Some(previous) = highest_acked {
                assert!(
                    opened > previous,
                    "{kind:?} kill {kill_idx}: opened with {opened} events, acked {previous}"
                );
            }
            highest_acked = acked.max(highest_acked);
            let log = store.read(ID).unwrap();
            if let Some(acked) = highest_acked {
                assert!(
                    log.events.len() as u64 > acked,
                    "{kind:?} kill {kill_idx}: {} events durable, seq {acked} was acknowledged",
                    log.events.len()
                );
            }
            store
                .load(ID)
                .unwrap_or_else(|error| panic!("{kind:?} kill {kill_idx}: {error}"));
            if kill_idx % 10 == 9 {
                check_repair_is_idempotent(&store);
            }
        }
        check_repair_is_idempotent(&store);
        eprintln!(
            "{kind:?}: {kills} kills, {} events, {n_repaired} reopens repaired an open turn, {:.1?}",
            store.read(ID).unwrap().events.len(),
            started.elapsed()
        );
        if kills >= 100 || (kind == Kind::Postgres && kills >= 20) {
            assert!(
                n_repaired > 0,
                "{kind:?}: no kill left an open turn to repair"
            );
        }
    }
}
