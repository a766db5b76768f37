//! `strata demo` and `strata completions` end to end (issue 7 items 2 and 4): the demo runs
//! offline on the default store under `STRATA_HOME`, prints every phase, and leaves two
//! sessions — the demo session and its fork — that validate and hold the events of each phase;
//! it runs again in the same store; completion scripts are printed for each shell.

use std::path::Path;

use strata_core::RawEvent;
use strata_store::Store;

use super::*;

/// `strata` with the default store under `home` and nothing in the environment that would pick
/// another one; plain output.
fn strata_in(home: &Path) -> Command {
    let mut command = strata();
    command
        .env("STRATA_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL");
    command
}

/// Runs the demo in `home`'s default store and returns its stdout.
fn run_demo(home: &Path) -> String {
    let output = strata_in(home)
        .arg("demo")
        .output()
        .expect("run strata demo");
    assert!(
        output.status.success(),
        "strata demo failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stdout).expect("utf8")
}

/// The sessions of `home`'s default store, as `strata sessions --json` lists them.
fn listed_sessions(home: &Path) -> Vec<Value> {
    let output = strata_in(home)
        .args(["sessions", "--json"])
        .output()
        .expect("run strata sessions");
    assert!(output.status.success());
    let listing: Value = serde_json::from_slice(&output.stdout).expect("json");
    listing["sessions"].as_array().expect("sessions").clone()
}

/// `strata validate` on every listed session, by `sqlite://PATH#ID` reference.
fn assert_all_validate(home: &Path, sessions: &[Value]) {
    let database = home.join("strata.db");
    for session in sessions {
        let id = session["id"].as_str().expect("id");
        strata_in(home)
            .arg("validate")
            .arg(format!("sqlite://{}#{id}", database.display()))
            .assert()
            .success()
            .stdout(predicate::str::contains(": ok ("));
    }
}

fn events(home: &Path, id: &str) -> Vec<RawEvent> {
    let store = Store::sqlite(&home.join("strata.db")).expect("open the store");
    store.read(id).expect("read the session").events
}

fn data(event: &RawEvent) -> Value {
    event.data().expect("data").into_owned()
}

#[test]
fn the_demo_prints_each_phase_and_leaves_a_session_and_fork_that_validate() {
    let home = tempfile::tempdir().expect("temp dir");
    let text = run_demo(home.path());
    for phase in [
        "1. agent",
        "2. crash",
        "3. repair",
        "4. compact",
        "5. agent",
        "6. prune",
        "7. fork",
        "✓ done",
        "look next",
    ] {
        assert!(text.contains(phase), "no {phase:?} in:\n{text}");
    }
    assert!(!text.contains('\x1b'), "colours despite NO_COLOR:\n{text}");
    assert!(text.contains("strata inspect \"$S\""), "{text}");

    let sessions = listed_sessions(home.path());
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_all_validate(home.path(), &sessions);
    let fork = sessions
        .iter()
        .find(|session| session["parentSession"].is_string())
        .expect("a forked session");
    let parent_id = fork["parentSession"].as_str().expect("parent id");
    assert!(sessions.iter().any(|session| session["id"] == parent_id));
    // The references printed by the demo name these sessions.
    assert!(text.contains(&format!("#{parent_id}")), "{text}");

    let log = events(home.path(), parent_id);
    let types: Vec<&str> = log.iter().filter_map(RawEvent::type_tag).collect();
    // Repair: the crashed turn closed as interrupted, its tool call answered with an error.
    assert!(log.iter().any(|event| event.type_tag() == Some("turn/end")
        && data(event)["reason"]["kind"] == "interrupted"));
    assert!(log
        .iter()
        .any(|event| event.type_tag() == Some("tool/result")
            && data(event)["message"]["content"][0]["isError"] == true));
    // Compaction and pruning: a bracketed checkpoint and a replaced tool result.
    assert!(types.contains(&"compaction/end"), "{types:?}");
    assert!(types.contains(&"compaction/prune"), "{types:?}");
    assert!(log
        .iter()
        .any(|event| event.type_tag() == Some("tool/result")
            && event.surface_op().is_some_and(|op| op["op"] == "replace")));
    // More than one agent turn, with tool calls.
    assert_eq!(types.iter().filter(|t| **t == "turn/start").count(), 4);
    assert!(types.iter().filter(|t| **t == "tool/call").count() >= 4);

    // The fork cut a turn open and closed it with `forked` closers.
    let fork_log = events(home.path(), fork["id"].as_str().expect("fork id"));
    assert!(fork_log
        .iter()
        .any(|event| event.type_tag() == Some("turn/end")
            && data(event)["reason"]["kind"] == "forked"));
}

#[test]
fn the_demo_runs_again_in_the_same_store_with_fresh_sessions() {
    let home = tempfile::tempdir().expect("temp dir");
    run_demo(home.path());
    run_demo(home.path());
    let sessions = listed_sessions(home.path());
    assert_eq!(sessions.len(), 4, "{sessions:?}");
    let mut ids: Vec<&str> = sessions
        .iter()
        .map(|session| session["id"].as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4);
    assert_all_validate(home.path(), &sessions);
}

#[test]
fn the_demo_writes_to_the_store_given_by_flag() {
    let home = tempfile::tempdir().expect("temp dir");
    let other = home.path().join("other.db");
    strata_in(home.path())
        .arg("demo")
        .arg("--store")
        .arg(&other)
        .assert()
        .success()
        .stdout(predicate::str::contains("strata sessions --store"));
    assert!(other.is_file());
    assert!(!home.path().join("strata.db").exists());
    let listed = Store::sqlite(&other).expect("open").list().expect("list");
    assert_eq!(listed.sessions.len(), 2);
}

/// Both logs the demo writes are ones upstream's released V3 layer accepts: the prune lands in
/// the fourth turn's pre-step, between its steps (upstream refused the old demo's prune after
/// `turn/end`: "tool/result replacement is outside an open turn").
#[test]
fn the_demo_logs_are_accepted_by_upstream_with_the_prune_inside_the_turn() {
    let home = tempfile::tempdir().expect("temp dir");
    let root = home.path().join("logs");
    strata_in(home.path())
        .arg("demo")
        .arg("--store")
        .arg(format!("jsonl:{}", root.display()))
        .assert()
        .success();
    let store = Store::jsonl(&root, strata_store::Compression::None);
    let listed = store.list().expect("list");
    assert_eq!(listed.sessions.len(), 2);
    let mut files = Vec::new();
    for session in &listed.sessions {
        let log = store.read(session.id()).expect("read");
        if !log.header.is_seeded() {
            let types: Vec<&str> = log.events.iter().filter_map(RawEvent::type_tag).collect();
            let prune = types
                .iter()
                .position(|t| *t == "compaction/prune")
                .expect("a prune");
            let open = types[..prune].iter().rposition(|t| *t == "turn/start");
            let closed = types[..prune].iter().rposition(|t| *t == "turn/end");
            assert!(open > closed, "the prune is inside a turn: {types:?}");
            assert_eq!(types[prune - 1], "step/end", "{types:?}");
            assert_eq!(types[prune + 2], "step/start", "{types:?}");
        }
        files.push(log.location);
    }
    strata_conformance::format_oracle::assert_accepted(&files);
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        strata()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("strata"))
            .stdout(predicate::str::contains("validate"))
            .stdout(predicate::str::contains("demo"));
    }
}

#[test]
fn completions_refuse_an_unknown_shell() {
    strata().args(["completions", "tcsh"]).assert().code(2);
}
