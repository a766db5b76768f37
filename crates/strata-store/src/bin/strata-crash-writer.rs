//! Crash-test helper: appends synthetic turns to one session in random batches forever,
//! printing `ack <seq> <line>` for every event of a batch once its append returns (so the batch
//! is durable), until it is killed. `<line>` is the event's canonical V3 JSONL line
//! ([`strata_format::encode_event_line`], `\n` included): exactly the bytes a JSONL store wrote,
//! and what a SQL store's row must serialize back to. The crash test SIGKILLs the writer at
//! random moments and checks that every acknowledged event survived byte for byte and the log
//! validates.
//!
//! Usage: `strata-crash-writer <raw|zstd|sqlite|postgres> <path or postgres://address>
//! <session-id>[,<session-id>...] [text-len]`
//!
//! On start it opens the session for writing (creating it if missing), which repairs a turn a
//! previous kill left open, and prints `open <durable events> <closers added>`.
//!
//! Given several comma-separated ids (issue 28: many writers, one store), it opens each in
//! turn, printing `open <index> <durable events> <closers added>` (index in the list), then
//! appends to all of them at once, one thread per session, printing `ack <index> <seq> <line>`.
//! A batch's report is written whole under the stdout lock, so reports never interleave.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use strata_core::{HeaderSpec, SessionHeader};
use strata_format::encode_event_line;
use strata_store::synth::turn_candidates;
use strata_store::{
    Compression, JsonlBackend, JsonlConfig, SessionWriter, SqliteBackend, Store, StoreError,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: strata-crash-writer <raw|zstd|sqlite|postgres> <path|address> <session-id> [text-len]"
        );
        return ExitCode::from(2);
    }
    let text_len = args.get(4).and_then(|len| len.parse().ok()).unwrap_or(200);
    match run(&args[1], PathBuf::from(&args[2]), &args[3], text_len) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("strata-crash-writer: {error}");
            ExitCode::from(1)
        }
    }
}

fn run(kind: &str, path: PathBuf, id: &str, text_len: usize) -> Result<(), String> {
    let store = match kind {
        "raw" => Store::new(JsonlBackend::new(JsonlConfig::new(path, Compression::None))),
        "zstd" => Store::new(JsonlBackend::new(JsonlConfig::new(path, Compression::Zstd))),
        "sqlite" => Store::new(SqliteBackend::open(&path).map_err(|e| e.to_string())?),
        #[cfg(feature = "postgres")]
        "postgres" => Store::new(
            strata_store::PostgresBackend::connect(&path.to_string_lossy())
                .map_err(|e| e.to_string())?,
        ),
        other => return Err(format!("unknown backend {other:?}")),
    };
    let ids: Vec<&str> = id.split(',').collect();
    if ids.len() > 1 {
        return run_many(&store, &ids, text_len);
    }
    let writer = open_or_create(&store, id).map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout().lock();
    let n_closers = closers(&writer);
    writeln!(stdout, "open {} {n_closers}", writer.durable_len()).map_err(|e| e.to_string())?;
    append_forever(&writer, text_len, |report| {
        stdout.write_all(report)?;
        stdout.flush()
    })
}

/// Several sessions of one store, each appended to by a thread of its own.
fn run_many(store: &Store, ids: &[&str], text_len: usize) -> Result<(), String> {
    let mut writers = Vec::with_capacity(ids.len());
    {
        let mut stdout = std::io::stdout().lock();
        for (index, id) in ids.iter().enumerate() {
            let writer = open_or_create(store, id).map_err(|e| e.to_string())?;
            let n_closers = closers(&writer);
            writeln!(stdout, "open {index} {} {n_closers}", writer.durable_len())
                .map_err(|e| e.to_string())?;
            writers.push(writer);
        }
        stdout.flush().map_err(|e| e.to_string())?;
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(index, writer)| {
                scope.spawn(move || {
                    let prefix = format!("ack {index} ");
                    append_forever(writer, text_len, |report| {
                        // `report` is `ack <seq> <line>` lines: name the session in each.
                        let mut named = Vec::with_capacity(report.len() + 16);
                        for line in report.split_inclusive(|&byte| byte == b'\n') {
                            named.extend_from_slice(prefix.as_bytes());
                            named.extend_from_slice(line.strip_prefix(b"ack ").unwrap_or(line));
                        }
                        let mut stdout = std::io::stdout().lock();
                        stdout.write_all(&named)?;
                        stdout.flush()
                    })
                })
            })
            .collect();
        // Each thread runs until the process is killed or its first failure.
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err("writer thread panicked".to_owned()))
        })
    })
}

/// Closers the open appended (crash repair), the end-seed marker left out.
fn closers(writer: &SessionWriter) -> usize {
    writer
        .added_on_open()
        .iter()
        .filter(|event| event.event_type().as_str() != "session/end-seed")
        .count()
}

/// Appends synthetic turns in random batches of 1 to 4 events until a failure, handing each
/// acknowledged batch's `ack <seq> <line>` report to `report`.
fn append_forever(
    writer: &SessionWriter,
    text_len: usize,
    mut report: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), String> {
    // xorshift seeded from the pid, clock and session: every run cuts batches differently.
    let mut state = u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64)
        ^ writer.id().bytes().fold(0_u64, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(u64::from(byte))
        })
        | 1;
    let mut random = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    loop {
        let (turn, next) = next_turn(writer);
        let mut candidates = turn_candidates(turn, next, text_len).into_iter().peekable();
        while candidates.peek().is_some() {
            let n = 1 + random(4) as usize;
            let batch: Vec<_> = candidates.by_ref().take(n).collect();
            let events = writer
                .append(batch, 1_700_000_000_000 + next as i64)
                .map_err(|e| e.to_string())?;
            // Reported only now that the append returned: every byte below was acknowledged.
            let mut lines = Vec::new();
            for event in &events {
                write!(lines, "ack {} ", event.seq().get()).map_err(|e| e.to_string())?;
                encode_event_line(event, &mut lines);
            }
            report(&lines).map_err(|e| e.to_string())?;
        }
    }
}

fn open_or_create(store: &Store, id: &str) -> Result<SessionWriter, StoreError> {
    match store.open_write(id) {
        Err(StoreError::NotFound { .. }) => {
            let header = SessionHeader::new(HeaderSpec {
                id: id.to_owned(),
                created_at: 1_700_000_000_000,
                cwd: Some("/crash/test".to_owned()),
                ..HeaderSpec::default()
            })
            .map_err(|source| StoreError::Invalid {
                id: id.to_owned(),
                location: "header".into(),
                line: None,
                source: Box::new(source),
            })?;
            store.create(header)
        }
        other => other,
    }
}

/// The next turn number and the seq it starts at.
fn next_turn(writer: &SessionWriter) -> (u64, u64) {
    writer.with_session(|session| {
        // Turns are numbered from 1 with no gaps: the latest `turn/start` names the count
        // (an O(1) fold, so a resumed lazy session never reads its history here).
        let turns = session
            .latest(&strata_core::EventType::TurnStart)
            .and_then(|event| event.u64_field("turn"))
            .unwrap_or(0);
        (turns + 1, session.len() as u64)
    })
}
