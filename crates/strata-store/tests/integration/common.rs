//! Shared helpers: one constructor per backend, so every contract test runs on all of them.

use std::path::Path;

use strata_core::{Candidate, HeaderSpec, SessionHeader};
use strata_store::synth::turn_candidates;
use strata_store::{Compression, JsonlBackend, JsonlConfig, SessionWriter, Store};

/// The backends every contract test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Raw,
    Zstd,
    Sqlite,
    /// A schema of its own on the test server (see `pg.rs`); left out, after a loud SKIP
    /// notice, when there is no server and none is required.
    Postgres,
}

/// The durable backends that need no server.
pub const DURABLE: [Kind; 3] = [Kind::Raw, Kind::Zstd, Kind::Sqlite];

const EVERY: [Kind; 5] = [
    Kind::Memory,
    Kind::Raw,
    Kind::Zstd,
    Kind::Sqlite,
    Kind::Postgres,
];

/// Every backend this run can test, PostgreSQL included when a server is there.
pub fn all() -> Vec<Kind> {
    EVERY.into_iter().filter(|kind| available(*kind)).collect()
}

/// Every durable backend this run can test.
pub fn durable() -> Vec<Kind> {
    all()
        .into_iter()
        .filter(|kind| *kind != Kind::Memory)
        .collect()
}

fn available(kind: Kind) -> bool {
    kind != Kind::Postgres || crate::pg::server().is_some()
}

/// A fresh store of `kind`: files under `dir`, or (Postgres) a schema of its own, dropped with
/// the store.
pub fn store(kind: Kind, dir: &Path) -> Store {
    match kind {
        Kind::Postgres => crate::pg::store("contract").expect("a PostgreSQL server"),
        Kind::Memory => Store::memory(),
        Kind::Raw => Store::new(JsonlBackend::new(JsonlConfig::new(
            dir.join("raw"),
            Compression::None,
        ))),
        Kind::Zstd => Store::new(JsonlBackend::new(JsonlConfig::new(
            dir.join("zstd"),
            Compression::Zstd,
        ))),
        Kind::Sqlite => Store::new(
            strata_store::SqliteBackend::open(&dir.join("strata.db")).expect("open sqlite"),
        ),
    }
}

pub fn header(id: &str, created_at: u64) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: id.to_owned(),
        created_at,
        cwd: Some("/home/user/project".to_owned()),
        ..HeaderSpec::default()
    })
    .unwrap()
}

/// Appends `n_turns` complete synthetic turns, one append per turn.
pub fn append_turns(writer: &SessionWriter, n_turns: u64) {
    for _ in 0..n_turns {
        let (turn, next) = writer.with_session(|session| {
            let turns = session
                .events()
                .unwrap()
                .iter()
                .filter(|event| event.event_type().as_str() == "turn/start")
                .count() as u64;
            (turns + 1, session.len() as u64)
        });
        writer
            .append(turn_candidates(turn, next, 40), 1_000 + next as i64)
            .unwrap();
    }
}

/// The first `n` candidates of the next turn (leaving it open).
pub fn partial_turn(writer: &SessionWriter, n: usize) -> Vec<Candidate> {
    let (turn, next) = writer.with_session(|session| {
        let turns = session
            .events()
            .unwrap()
            .iter()
            .filter(|event| event.event_type().as_str() == "turn/start")
            .count() as u64;
        (turns + 1, session.len() as u64)
    });
    turn_candidates(turn, next, 40)
        .into_iter()
        .take(n)
        .collect()
}

/// A long session (about 3.5 KB of JSONL per turn).
pub fn long_session(n_turns: u64) -> strata_core::Session {
    let store = Store::memory();
    let writer = store.create(header("long", 1)).expect("create");
    for turn in 1..=n_turns {
        let first = writer.durable_len();
        writer
            .append(strata_store::synth::turn_candidates(turn, first, 1500), 1)
            .expect("append");
    }
    writer.with_session(|session| {
        strata_core::Session::restore(
            session.header().clone(),
            session.events().unwrap().iter().cloned(),
            strata_core::SeedOptions::default(),
        )
        .expect("restore")
    })
}

/// The one session log under a JSONL root.
pub fn find_log(root: &std::path::Path) -> std::path::PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains("session.v3.jsonl") {
                return path;
            }
        }
    }
    panic!("no log under {}", root.display());
}
