//! Real crashes (issue 3; bytes compared since issue 26): `strata-crash-writer` appends in
//! random batches and reports every event of each acknowledged batch as the canonical line it
//! acknowledged; the test SIGKILLs it at random moments and reopens the store.
//!
//! Invariants checked after every kill, on every durable backend (PostgreSQL included when a
//! server is there):
//! - every acknowledged event is present **byte-identical** to what was acknowledged: the
//!   loaded event's canonical V3 line (for SQLite and PostgreSQL, the stored row's
//!   serialization) and, for the JSONL stores, the stored line itself (the raw file's line, or
//!   the line in a complete zstd frame's plaintext) equal the reported bytes;
//! - no seq is ever acknowledged with two different lines (an acknowledged event is never
//!   rewritten), and the next writer opens with every acknowledged event durable;
//! - the log validates; every few kills (and at the end) a reopen for writing leaves no open
//!   turn (crash repair) and a second reopen adds nothing.
//!
//! The same holds with many sessions at once (issue 28 item 3): the writer appends to
//! [`MANY`] sessions of one SQLite store concurrently, one thread each, so their batches share
//! group commits; after each kill every session's acknowledged events are checked as above.
//!
//! `STRATA_CRASH_KILLS` sets the kills per backend (default 100; the many-session test runs a
//! quarter of that, at least 10); `scripts/crash-1000.sh` runs 1,000 and prints each backend's
//! report line (`crash report: …`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strata_core::repair::open_turn_closers;
use strata_core::CloseCause;
use strata_format::{encode_event_line, frames::scan_frames};
use strata_store::{JsonlBackend, Store};

use crate::common::{durable, store, Kind};
use crate::pg;

const ID: &str = "crash";

/// The cwd the writer gives the session's header (its JSONL directory depends on it).
const WRITER_CWD: &str = "/crash/test";

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
fn target(kind: Kind, dir: &Path) -> (Store, &'static str, String, Option<pg::SchemaGuard>) {
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
    /// Every event it acknowledged: its seq and its line, `\n` included.
    acked: Vec<(u64, Vec<u8>)>,
}

/// Folds one writer run into the model of acknowledged lines (`label` names the backend or
/// session in failures): everything acknowledged before the run was there when it opened, and
/// no seq is ever acknowledged with two different lines.
fn absorb(label: &str, kill_idx: usize, acked: &mut BTreeMap<u64, Vec<u8>>, run: Run) {
    if let Some((&highest, _)) = acked.last_key_value() {
        assert!(
            run.opened > highest,
            "{label} kill {kill_idx}: opened with {} events, acked {highest}",
            run.opened
        );
    }
    for (seq, line) in run.acked {
        if let Some(earlier) = acked.insert(seq, line.clone()) {
            assert_eq!(
                String::from_utf8_lossy(&earlier),
                String::from_utf8_lossy(&line),
                "{label} kill {kill_idx}: seq {seq} acknowledged twice, differently"
            );
        }
    }
}

/// One complete `ack <seq> <line>\n` report, or `None` for anything else.
fn parse_ack(report: &[u8]) -> Option<(u64, Vec<u8>)> {
    let rest = report.strip_prefix(b"ack ")?;
    let space = rest.iter().position(|&byte| byte == b' ')?;
    let seq = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
    Some((seq, rest[space + 1..].to_vec()))
}

/// Starts the crash writer with `args` and a thread that forwards each complete line it
/// prints: only complete lines count, so a kill mid-print acknowledges nothing of that line
/// (a cut `ack 12` of `ack 123` must not claim seq 12's line).
fn spawn_writer(args: &[&str]) -> (Child, mpsc::Receiver<Vec<u8>>, JoinHandle<()>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-crash-writer"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match stdout.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") || lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines_rx, reader)
}

/// Runs the writer until a random moment after it opened, then SIGKILLs it.
fn crash_once(name: &str, path: &str, rng: &mut Rng) -> Run {
    let (mut child, lines_rx, reader) = spawn_writer(&[name, path, ID, "120"]);
    let Ok(open_line) = lines_rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        panic!(
            "writer did not open: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let numbers: Vec<u64> = String::from_utf8_lossy(&open_line)
        .trim_end()
        .strip_prefix("open ")
        .map(|rest| rest.split(' ').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    let [opened, n_closers] = numbers[..] else {
        panic!("unexpected first line {open_line:?}");
    };
    std::thread::sleep(Duration::from_micros(rng.below(15_000)));
    let child_pid = child.id();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    if name == "postgres" {
        wait_until_server_ended_backends_of(child_pid);
    }
    reader.join().unwrap();
    let acked = lines_rx
        .try_iter()
        .map(|line| parse_ack(&line).unwrap_or_else(|| panic!("unexpected report {line:?}")))
        .collect();
    Run {
        opened,
        n_closers,
        acked,
    }
}

/// Waits until the PostgreSQL server has ended the backends of the killed writer `pid` (it
/// notices the closed connection on its own time, a while on a loaded machine): until then the
/// writer's advisory lock is held, and the next open would fail with `Locked`, a race of the
/// test, not a finding.
fn wait_until_server_ended_backends_of(pid: u32) {
    let url = &pg::server().expect("a PostgreSQL server").url;
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let exact = format!("strata pid={pid}");
    let with_host = format!("strata pid={pid} host=%");
    for _ in 0..60_000 {
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE application_name = $1 OR application_name LIKE $2",
                &[&exact, &with_host],
            )
            .unwrap();
        if row.get::<_, i64>(0) == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the server never ended the backends of killed writer {pid}");
}

/// The complete event lines of a JSONL log, read from the file itself (`\n` included): a raw
/// log's terminated lines, or the lines of a zstd log's complete frames, header left out. A
/// torn tail (never acknowledged) is left out too.
fn file_lines(kind: Kind, path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let plain = match kind {
        Kind::Raw => bytes,
        Kind::Zstd => {
            let scan = scan_frames(&bytes).unwrap();
            let mut plain = Vec::new();
            for frame in &scan.frames {
                let frame = &bytes[frame.start..frame.end];
                plain.extend(zstd::stream::decode_all(frame).unwrap());
            }
            plain
        }
        _ => unreachable!("only JSONL stores have lines"),
    };
    plain
        .split_inclusive(|&byte| byte == b'\n')
        .filter(|line| line.ends_with(b"\n"))
        .skip(1)
        .map(<[u8]>::to_vec)
        .collect()
}

/// The JSONL log file of a store under `root`.
fn log_file(kind: Kind, root: &str) -> Option<PathBuf> {
    let compression = match kind {
        Kind::Raw => strata_store::Compression::None,
        Kind::Zstd => strata_store::Compression::Zstd,
        _ => return None,
    };
    let backend = JsonlBackend::new(strata_store::JsonlConfig::new(root, compression));
    let file = strata_format::session_file_name(3, compression == strata_store::Compression::Zstd);
    Some(
        backend
            .session_dir(Some(WRITER_CWD), ID)
            .unwrap()
            .join(file),
    )
}

/// Byte comparisons of acknowledged events against what the store holds.
#[derive(Default)]
struct Comparison {
    n_compared: u64,
    mismatches: Vec<String>,
}

impl Comparison {
    fn check(&mut self, what: &str, seq: u64, stored: Option<&[u8]>, acked: &[u8]) {
        self.n_compared += 1;
        if stored != Some(acked) {
            self.mismatches.push(format!(
                "{what}: seq {seq} acknowledged as {:?}, stored as {:?}",
                String::from_utf8_lossy(acked),
                stored.map(String::from_utf8_lossy)
            ));
        }
    }
}

/// Compares every acknowledged event with the store's copy: the loaded event's canonical line
/// and, for a JSONL store, the line in the file.
fn compare_acked(
    kind: Kind,
    store: &Store,
    id: &str,
    log_file: Option<&Path>,
    acked: &BTreeMap<u64, Vec<u8>>,
    comparison: &mut Comparison,
    kill_idx: usize,
) {
    let session = store
        .load(id)
        .unwrap_or_else(|error| panic!("{kind:?} {id} kill {kill_idx}: {error}"));
    let events = session.events().unwrap();
    let lines = log_file.map(|path| file_lines(kind, path));
    for (&seq, bytes) in acked {
        let stored = events.get(seq as usize).map(|event| {
            let mut line = Vec::new();
            encode_event_line(event, &mut line);
            line
        });
        let what = format!("{kind:?} {id} kill {kill_idx} loaded row");
        comparison.check(&what, seq, stored.as_deref(), bytes);
        if let Some(lines) = &lines {
            let what = format!("{kind:?} kill {kill_idx} stored line");
            comparison.check(
                &what,
                seq,
                lines.get(seq as usize).map(Vec::as_slice),
                bytes,
            );
        }
    }
}

fn check_repair_is_idempotent(store: &Store, id: &str) {
    let writer = store.open_write(id).unwrap();
    writer.with_session(|session| {
        assert!(
            open_turn_closers(session.events().unwrap(), CloseCause::Interrupted).is_empty(),
            "reopened log still has an open turn"
        );
    });
    writer.close().unwrap();
    let again = store.open_write(id).unwrap();
    assert!(
        again.added_on_open().is_empty(),
        "second reopen added events"
    );
    again.close().unwrap();
}

#[test]
fn sigkill_never_loses_or_changes_an_acknowledged_event() {
    for (backend_idx, kind) in durable().into_iter().enumerate() {
        let kills = n_kills();
        let started = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let (store, name, path, _schema) = target(kind, dir.path());
        let log_file = log_file(kind, &path);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ backend_idx as u64);
        // The model: every acknowledged event's line, by seq.
        let mut acked: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut comparison = Comparison::default();
        let mut n_repaired = 0;
        for kill_idx in 0..kills {
            let run = crash_once(name, &path, &mut rng);
            if run.n_closers > 0 {
                n_repaired += 1;
            }
            absorb(&format!("{kind:?}"), kill_idx, &mut acked, run);
            compare_acked(
                kind,
                &store,
                ID,
                log_file.as_deref(),
                &acked,
                &mut comparison,
                kill_idx,
            );
            if kill_idx % 10 == 9 {
                check_repair_is_idempotent(&store, ID);
            }
        }
        check_repair_is_idempotent(&store, ID);
        compare_acked(
            kind,
            &store,
            ID,
            log_file.as_deref(),
            &acked,
            &mut comparison,
            kills,
        );
        eprintln!(
            "crash report: {kind:?}: {kills} kills, {} acknowledged events, {} byte comparisons, \
             {} mismatches, {} events stored, {n_repaired} reopens repaired an open turn, {:.1?}",
            acked.len(),
            comparison.n_compared,
            comparison.mismatches.len(),
            store.read(ID).unwrap().events.len(),
            started.elapsed()
        );
        assert_eq!(
            comparison.mismatches.first(),
            None,
            "{kind:?}: {} mismatches",
            comparison.mismatches.len()
        );
        assert!(!acked.is_empty(), "{kind:?}: no append was acknowledged");
        if kills >= 20 {
            assert!(
                n_repaired > 0,
                "{kind:?}: no kill left an open turn to repair"
            );
        }
    }
}

/// Sessions the many-session crash test appends to at once.
const MANY: usize = 6;

/// Runs the writer on [`MANY`] sessions of the SQLite store at `path` until a random moment
/// after they opened, then SIGKILLs it; one [`Run`] per session.
fn crash_many_once(path: &str, ids: &[String], rng: &mut Rng) -> Vec<Run> {
    let (mut child, lines_rx, reader) = spawn_writer(&["sqlite", path, &ids.join(","), "120"]);
    let mut runs: Vec<Run> = Vec::with_capacity(ids.len());
    for index in 0..ids.len() {
        let Ok(open_line) = lines_rx.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "writer did not open session {index}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let numbers: Vec<u64> = String::from_utf8_lossy(&open_line)
            .trim_end()
            .strip_prefix("open ")
            .map(|rest| rest.split(' ').filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        let [opened_index, opened, n_closers] = numbers[..] else {
            panic!("unexpected open line {open_line:?}");
        };
        assert_eq!(opened_index, index as u64, "sessions open in list order");
        runs.push(Run {
            opened,
            n_closers,
            acked: Vec::new(),
        });
    }
    std::thread::sleep(Duration::from_micros(rng.below(40_000)));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    for line in lines_rx.try_iter() {
        let parsed = line.strip_prefix(b"ack ").and_then(|rest| {
            let space = rest.iter().position(|&byte| byte == b' ')?;
            let index: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
            let mut single = b"ack ".to_vec();
            single.extend_from_slice(&rest[space + 1..]);
            Some((index, parse_ack(&single)?))
        });
        let Some((index, ack)) = parsed.filter(|(index, _)| *index < runs.len()) else {
            panic!("unexpected report {line:?}");
        };
        runs[index].acked.push(ack);
    }
    runs
}

#[test]
fn sigkill_of_many_sessions_in_one_sqlite_store_loses_no_acknowledged_event() {
    let kills = (n_kills() / 4).max(10);
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (store, _, path, _) = target(Kind::Sqlite, dir.path());
    let ids: Vec<String> = (0..MANY).map(|index| format!("many-{index}")).collect();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut acked: Vec<BTreeMap<u64, Vec<u8>>> = vec![BTreeMap::new(); MANY];
    let mut comparison = Comparison::default();
    let mut n_repaired = 0;
    let mut n_concurrent_kills = 0;
    for kill_idx in 0..kills {
        let runs = crash_many_once(&path, &ids, &mut rng);
        if runs.iter().filter(|run| !run.acked.is_empty()).count() > 1 {
            n_concurrent_kills += 1;
        }
        for ((id, run), acked) in ids.iter().zip(runs).zip(acked.iter_mut()) {
            if run.n_closers > 0 {
                n_repaired += 1;
            }
            absorb(id, kill_idx, acked, run);
            compare_acked(
                Kind::Sqlite,
                &store,
                id,
                None,
                acked,
                &mut comparison,
                kill_idx,
            );
        }
        if kill_idx % 10 == 9 {
            for id in &ids {
                check_repair_is_idempotent(&store, id);
            }
        }
    }
    for (id, acked) in ids.iter().zip(&acked) {
        check_repair_is_idempotent(&store, id);
        compare_acked(
            Kind::Sqlite,
            &store,
            id,
            None,
            acked,
            &mut comparison,
            kills,
        );
        assert!(!acked.is_empty(), "{id}: no append was acknowledged");
    }
    eprintln!(
        "crash report: Sqlite, {MANY} sessions: {kills} kills ({n_concurrent_kills} with acks \
         from several sessions), {} acknowledged events, {} byte comparisons, {} mismatches, \
         {n_repaired} session reopens repaired an open turn, {:.1?}",
        acked.iter().map(BTreeMap::len).sum::<usize>(),
        comparison.n_compared,
        comparison.mismatches.len(),
        started.elapsed()
    );
    assert_eq!(
        comparison.mismatches.first(),
        None,
        "{} mismatches",
        comparison.mismatches.len()
    );
    assert!(
        n_concurrent_kills > 0,
        "no run had several sessions acknowledged before its kill"
    );
}
