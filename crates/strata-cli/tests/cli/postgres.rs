//! PostgreSQL from the command line (issue 8): `--store postgres://…` and
//! `$STRATA_DATABASE_URL` wherever a store is taken, `postgres://…#ID` references, `strata tail`
//! following a session that another process appends to, and `strata convert` between every
//! kind of store in both directions, byte-identical at the end.
//!
//! The server comes from the store crate's harness (`pg`): skipped, after its loud notice, when
//! there is none and none is required.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strata_core::{HeaderSpec, SessionHeader};
use strata_store::synth::turn_candidates;
use strata_store::{PostgresBackend, SessionWriter, Store};

use super::*;
use crate::pg;

/// `strata` with no store inherited from the environment.
fn isolated(home: &tempfile::TempDir) -> Command {
    let mut command = strata();
    command
        .env("STRATA_HOME", home.path())
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL")
        .env("NO_COLOR", "1");
    command
}

fn header(id: &str) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: id.to_owned(),
        created_at: 1_700_000_000_000,
        cwd: Some("/work".to_owned()),
        ..HeaderSpec::default()
    })
    .expect("header")
}

fn append_turn(writer: &SessionWriter) {
    let (turn, next) = writer.with_session(|session| {
        let turns = session
            .events()
            .iter()
            .filter(|event| event.event_type().as_str() == "turn/start")
            .count() as u64;
        (turns + 1, session.len() as u64)
    });
    writer
        .append(
            turn_candidates(turn, next, 40),
            1_700_000_000_000 + next as i64,
        )
        .expect("append");
}

/// A `strata tail` child and its stdout lines, read on a thread.
struct Tail {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Tail {
    fn spawn(args: &[&str]) -> Tail {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("tail")
            .args(args)
            .env_remove("STRATA_STORE")
            .env_remove("STRATA_DATABASE_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn strata tail");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Tail { child, lines }
    }

    /// The next `n` lines, failing after 20 s.
    fn take(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut out = Vec::new();
        while out.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => out.push(line),
                Err(_) => panic!("tail printed {} of {n} lines: {out:?}", out.len()),
            }
        }
        out
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn seqs(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("one JSON event per line");
            value["seq"].as_u64().expect("seq")
        })
        .collect()
}

#[test]
fn tail_follows_a_session_another_process_appends_to() {
    let Some(schema) = pg::schema("cli_tail") else {
        return;
    };
    let url = schema.store_url();
    let store = Store::new(PostgresBackend::connect(&url).expect("open the store"));
    let writer = store.create(header("live")).expect("create");
    append_turn(&writer);
    let reference = format!("{url}#live");
    let tail = Tail::spawn(&[&reference, "--json", "-n", "3"]);
    assert_eq!(seqs(&tail.take(3)), [5, 6, 7]);
    // Appended here, printed there as each batch commits.
    append_turn(&writer);
    append_turn(&writer);
    assert_eq!(seqs(&tail.take(16)), (8..24).collect::<Vec<_>>());
    // Every line is the event's V3 JSON, byte for byte.
    drop(tail);
    let tail = Tail::spawn(&["--store", &url, "live", "--json", "--from", "23"]);
    let last = writer.with_session(|session| session.events()[23].to_json());
    assert_eq!(tail.take(1), [last]);
    // Text for people: seq, UTC time, type.
    let tail = Tail::spawn(&["--store", &url, "live", "-n", "1"]);
    let line = &tail.take(1)[0];
    assert!(
        line.contains("23  2023-11-14 22:13:20  turn/end"),
        "{line:?}"
    );
    writer.close().expect("close");
}

#[test]
fn tail_polls_a_store_without_notifications() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("strata.db");
    let store = Store::sqlite(&db).expect("sqlite");
    let writer = store.create(header("polled")).expect("create");
    append_turn(&writer);
    let reference = format!("sqlite://{}#polled", db.display());
    let tail = Tail::spawn(&[&reference, "--json", "-n", "1"]);
    assert_eq!(seqs(&tail.take(1)), [7]);
    append_turn(&writer);
    assert_eq!(seqs(&tail.take(8)), (8..16).collect::<Vec<_>>());
    writer.close().expect("close");
}

#[test]
fn tail_of_a_missing_session_exits_two() {
    let Some(schema) = pg::schema("cli_missing") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    // The lookup does not create the schema...
    isolated(&home)
        .args(["tail", &format!("{url}#nope")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds no strata store"));
    // ...and in a store, a missing id is named.
    drop(PostgresBackend::connect(&url).expect("create the store"));
    isolated(&home)
        .args(["tail", &format!("{url}#nope")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("session \"nope\" not found"));
}

#[test]
fn store_flag_env_and_references_take_postgres() {
    let Some(schema) = pg::schema("cli_store") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    isolated(&home)
        .args(["import", "--store", &url])
        .arg(sample())
        .assert()
        .success();
    let listed = |command: &mut Command| -> Value {
        let output = command.output().expect("run");
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).expect("json")
    };
    let by_flag = listed(isolated(&home).args(["sessions", "--json", "--store", &url]));
    assert_eq!(by_flag["sessions"][0]["id"], "sample-session");
    let by_env = listed(
        isolated(&home)
            .env("STRATA_DATABASE_URL", &url)
            .args(["sessions", "--json"]),
    );
    assert_eq!(by_env["sessions"], by_flag["sessions"]);
    // A bare id resolves in $STRATA_DATABASE_URL; a reference names its store.
    isolated(&home)
        .env("STRATA_DATABASE_URL", &url)
        .args(["validate", "sample-session"])
        .assert()
        .success();
    isolated(&home)
        .args(["surface", &format!("{url}#sample-session"), "--json"])
        .assert()
        .success();
    // The password never shows in messages.
    isolated(&home)
        .args(["sessions", "--store", "postgres://u:hunter2@127.0.0.1:1/x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("hunter2").not());
}

#[test]
fn convert_moves_sessions_between_every_kind_of_store_byte_identically() {
    let Some(schema) = pg::schema("cli_convert") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    let db = home.path().join("a.db");
    let raw = format!("jsonl:{}", home.path().join("raw").display());
    let zstd = format!("jsonl-zstd:{}", home.path().join("zstd").display());
    let back = home.path().join("back.db");
    // file → SQLite → PostgreSQL (whole store) → zstd JSONL (one session) → raw JSONL →
    // SQLite again.
    let steps: [(String, String); 5] = [
        (sample().display().to_string(), db.display().to_string()),
        (db.display().to_string(), url.clone()),
        (format!("{url}#sample-session"), zstd.clone()),
        (zstd.clone(), raw.clone()),
        (format!("{raw}#sample-session"), back.display().to_string()),
    ];
    for (from, to) in &steps {
        let output = isolated(&home)
            .args(["convert", from, to, "--json"])
            .output()
            .expect("run");
        assert!(output.status.success(), "{from} → {to}: {output:?}");
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(value["ok"], true, "{from} → {to}");
        assert_eq!(value["events"], 130, "{from} → {to}");
    }
    // Every copy exports to the very bytes of the original file.
    let original = std::fs::read(sample()).expect("sample");
    for (index, store) in [url.as_str(), &zstd, &raw, &back.display().to_string()]
        .iter()
        .enumerate()
    {
        let out = home.path().join(format!("export-{index}.jsonl"));
        isolated(&home)
            .args(["export", "sample-session", "--store", store, "-o"])
            .arg(&out)
            .assert()
            .success();
        assert_eq!(std::fs::read(&out).expect("export"), original, "{store}");
    }
    // A session OUT already holds is reported, and the status says so.
    isolated(&home)
        .args(["convert", &db.display().to_string(), &url])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    // IN is never created.
    isolated(&home)
        .args(["convert", "jsonl:/nonexistent/strata", &url])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such store or file"));
}
