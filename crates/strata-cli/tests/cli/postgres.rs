//! PostgreSQL from the command line (issue 8): `--store postgres://…` and
//! `$STRATA_DATABASE_URL` wherever a store is taken, `postgres://…#ID` references, `strata tail`
//! following a session that another process appends to, and `strata convert` between every
//! kind of store in both directions, byte-identical at the end. The agent on PostgreSQL (issue
//! 22): `strata run`, `chat` and `--resume` on a shared store, and two hosts racing on one
//! session.
//!
//! The server comes from the store crate's harness (`pg`): skipped, after its loud notice, when
//! there is none and none is required.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strata_core::{HeaderSpec, SessionHeader};
use strata_store::synth::turn_candidates;
use strata_store::{PostgresBackend, PostgresConfig, SessionWriter, Store};

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
            .unwrap()
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

/// The lines `child` prints on its piped stdout, as they come, read on a thread of their own.
fn stdout_lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
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
    lines
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
        let lines = stdout_lines(&mut child);
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
    let last = writer.with_session(|session| session.events().unwrap()[23].to_json());
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
        assert_eq!(value["events"], 132, "{from} → {to}");
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

/// A model script answering each request with one text, in order.
fn answers(dir: &Path, name: &str, texts: &[&str]) -> PathBuf {
    let responses: Vec<Value> = texts
        .iter()
        .map(|text| {
            serde_json::json!({"events": [
                {"type": "text_delta", "text": text},
                {"type": "finish", "reason": "stop"}
            ]})
        })
        .collect();
    let path = dir.join(name);
    let script = serde_json::json!({ "responses": responses });
    std::fs::write(&path, script.to_string()).expect("write the script");
    path
}

/// A model script that runs one command, then answers `done`.
fn command_then_answer(dir: &Path, command: &str) -> PathBuf {
    let arguments = serde_json::json!({ "command": command }).to_string();
    let script = serde_json::json!({"responses": [
        {"events": [
            {"type": "tool_call_delta", "index": 0, "id": "call_gate", "name": "run_command",
             "arguments_delta": arguments},
            {"type": "finish", "reason": "tool_calls"}
        ]},
        {"events": [
            {"type": "text_delta", "text": "done"},
            {"type": "finish", "reason": "stop"}
        ]}
    ]});
    let path = dir.join("gate.json");
    std::fs::write(&path, script.to_string()).expect("write the script");
    path
}

/// `strata run|chat` on the store at `url`, with `home` as the workspace.
fn agent(home: &tempfile::TempDir, url: &str, script: &Path, args: &[&str]) -> Command {
    let mut command = isolated(home);
    command
        .args(args)
        .args(["--store", url])
        .arg("--model-script")
        .arg(script)
        .arg("--workdir")
        .arg(home.path());
    command
}

fn json_events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect()
}

fn event_types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect()
}

/// Asserts that the stored session `id` holds, at their seqs, exactly the events a command
/// printed with `--json` (what it acknowledged).
fn assert_stored(store: &Store, id: &str, printed: &[Value]) {
    let stored = store.load(id).expect("the stored log validates");
    for event in printed {
        let seq = event["seq"].as_u64().expect("seq") as usize;
        assert_eq!(
            stored.events().unwrap()[seq].to_json(),
            event.to_string(),
            "seq {seq}"
        );
    }
}

#[test]
fn agent_runs_chats_and_resumes_on_postgres() {
    let Some(schema) = pg::schema("cli_agent") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    let first = answers(home.path(), "first.json", &["first answer"]);
    let output = agent(
        &home,
        &url,
        &first,
        &["run", "hello", "--session", "pg", "--json"],
    )
    .output()
    .expect("run");
    assert!(output.status.success(), "{output:?}");
    let printed = json_events(&output.stdout);
    assert_eq!(event_types(&printed).first(), Some(&"turn/start"));
    assert_eq!(event_types(&printed).last(), Some(&"turn/end"));
    let store = Store::new(PostgresBackend::connect(&url).expect("open the store"));
    assert_stored(&store, "pg", &printed);
    let n_first = printed.len();

    // --resume alone continues the latest session; the closed log gets only the end-seed
    // marker, no closers.
    let second = answers(home.path(), "second.json", &["second answer"]);
    let output = agent(
        &home,
        &url,
        &second,
        &["run", "again", "--resume", "--json"],
    )
    .output()
    .expect("run --resume");
    assert!(output.status.success(), "{output:?}");
    let printed = json_events(&output.stdout);
    assert_eq!(
        event_types(&printed)[..2],
        ["session/end-seed", "turn/start"]
    );
    assert_eq!(printed[0]["seq"].as_u64(), Some(n_first as u64));
    assert_stored(&store, "pg", &printed);

    // chat --session ID --resume, a turn per stdin line.
    let chat = answers(home.path(), "chat.json", &["third answer", "fourth answer"]);
    agent(&home, &url, &chat, &["chat", "--session", "pg", "--resume"])
        .write_stdin("three\nfour\n/quit\n")
        .assert()
        .success()
        .stdout("third answer\nfourth answer\n");
    // A new chat session on the same store.
    let fresh = answers(home.path(), "fresh.json", &["fresh answer"]);
    agent(&home, &url, &fresh, &["chat", "--session", "pg-chat"])
        .write_stdin("hi\n")
        .assert()
        .success()
        .stdout("fresh answer\n");

    let session = store.load("pg").expect("load");
    let texts: Vec<(String, String)> = session
        .derive_messages()
        .iter()
        .map(|message| {
            let text = message.value()["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            (message.role().to_owned(), text)
        })
        .collect();
    let expected = [
        ("user", "hello"),
        ("assistant", "first answer"),
        ("user", "again"),
        ("assistant", "second answer"),
        ("user", "three"),
        ("assistant", "third answer"),
        ("user", "four"),
        ("assistant", "fourth answer"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(role, text)| ((*role).to_owned(), (*text).to_owned()))
        .collect();
    assert_eq!(texts, expected);
    for id in ["pg", "pg-chat"] {
        isolated(&home)
            .args(["validate", &format!("{url}#{id}")])
            .assert()
            .success();
    }
}

/// A `strata run --json` that runs `command` as its tool, its printed lines read on a thread.
struct Host {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Host {
    fn spawn(home: &tempfile::TempDir, url: &str, id: &str, command: &str) -> Host {
        let script = command_then_answer(home.path(), command);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["run", "go", "--json", "--allow-commands", "--session", id])
            .args(["--store", url])
            .arg("--model-script")
            .arg(&script)
            .arg("--workdir")
            .arg(home.path())
            .env("STRATA_HOME", home.path())
            .env_remove("STRATA_STORE")
            .env_remove("STRATA_DATABASE_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata run");
        let lines = stdout_lines(&mut child);
        Host { child, lines }
    }

    /// Waits (at most 60 s) for `file` to appear, as the host's tool creates it.
    fn wait_for(&mut self, file: &Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !file.exists() {
            assert!(Instant::now() < deadline, "the tool body never started");
            assert!(
                self.child.try_wait().expect("try_wait").is_none(),
                "strata exited early"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the host to exit: its status, stderr and the events it printed.
    fn finish(mut self) -> (std::process::ExitStatus, String, Vec<Value>) {
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("read stderr");
        }
        let status = self.child.wait().expect("wait");
        let mut printed: Vec<Value> = self
            .lines
            .iter()
            .map(|line| serde_json::from_str(&line).expect("one JSON object per line"))
            .collect();
        // A failed run ends its JSON with the error (`{"ok":false,…}`), after the events.
        if printed.last().is_some_and(|last| last["ok"] == false) {
            let error = printed.pop().unwrap_or_default();
            assert_eq!(error["error"]["kind"], "io", "{error}");
            assert!(
                !status.success(),
                "an error object from a run that succeeded"
            );
        }
        (status, stderr, printed)
    }
}

const GATED: &str = "touch started && while [ ! -e go ]; do sleep 0.05; done";

#[test]
fn a_second_host_resuming_a_session_in_use_is_refused_and_the_first_keeps_writing() {
    let Some(schema) = pg::schema("cli_agent_lock") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    let mut first = Host::spawn(&home, &url, "shared", GATED);
    first.wait_for(&home.path().join("started"));
    // The second host finds the session open for writing, names the writer, writes nothing.
    let script = answers(home.path(), "second.json", &["never sent"]);
    let output = agent(
        &home,
        &url,
        &script,
        &["run", "me too", "--session", "shared", "--resume", "--json"],
    )
    .output()
    .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let holder = format!(
        "session \"shared\" is open for writing by pid {}",
        first.child.id()
    );
    assert!(stderr.contains(&holder), "{stderr}");
    // Nothing but the refusal, as JSON (`--json`).
    let refusal: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(refusal["ok"], false);
    assert!(
        refusal["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains(&holder)),
        "{refusal}"
    );
    std::fs::write(home.path().join("go"), "").expect("open the gate");
    let (status, stderr, printed) = first.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(event_types(&printed).last(), Some(&"turn/end"));
    let store = Store::new(PostgresBackend::connect(&url).expect("open the store"));
    assert_stored(&store, "shared", &printed);
    assert_eq!(
        store.read("shared").expect("read").events.len(),
        printed.len()
    );
}

#[test]
fn a_host_that_lost_the_race_on_a_session_gets_a_conflict_and_nothing_acknowledged_is_lost() {
    let Some(schema) = pg::schema("cli_agent_race") else {
        return;
    };
    let url = schema.store_url();
    let home = tempfile::tempdir().expect("temp dir");
    let mut loser = Host::spawn(&home, &url, "raced", GATED);
    loser.wait_for(&home.path().join("started"));
    // Another host, not asking for the writer lock, takes over the session while the first
    // runs its tool: its open closes the open turn, and it appends a turn of its own.
    let config = PostgresConfig::from_url(&url)
        .expect("address")
        .writer_lock(false);
    let other = Store::new(PostgresBackend::open(config).expect("open the store"));
    let writer = other.open_write("raced").expect("open for writing");
    let n_taken = writer.with_session(|session| session.len());
    append_turn(&writer);
    let n_other = writer.with_session(|session| session.len());
    writer.close().expect("close");
    std::fs::write(home.path().join("go"), "").expect("open the gate");
    // The first host's next append (its tool's result) loses: a conflict naming both seqs.
    let (status, stderr, printed) = loser.finish();
    assert_eq!(status.code(), Some(2), "{stderr}");
    let conflict = format!(
        "stale writer for session \"raced\": it appends at seq {}, but the store's next seq is {n_other}",
        printed.len()
    );
    assert!(stderr.contains(&conflict), "{stderr}");
    assert_eq!(event_types(&printed).last(), Some(&"tool/call"));
    // Everything either host acknowledged is stored, and the log validates.
    assert_stored(&other, "raced", &printed);
    assert_eq!(other.read("raced").expect("read").events.len(), n_other);
    assert!(n_taken > printed.len(), "the takeover closed the turn");
    isolated(&home)
        .args(["validate", &format!("{url}#raced")])
        .assert()
        .success();
}
