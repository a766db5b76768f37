//! `strata compact` and `strata prune` end to end (issue 5 item 4): dry runs change nothing
//! and report tokens before and after; real runs append durably through the session's store
//! and leave a log that validates.

use std::path::PathBuf;

use strata_core::synth::{generate, SynthConfig};
use strata_store::{read_log, Compression, Store};

use super::*;

/// A synthetic session imported into a raw JSONL store under a temp dir; returns the dir
/// (keep it alive) and the session file inside the store layout.
fn stored_session(content_bytes: usize) -> (tempfile::TempDir, PathBuf) {
    let session = generate(&SynthConfig {
        events: 600,
        seed: 3,
        content_bytes,
        compact_every: 0,
        prune_rate: 0.0,
        id: "cli-compact".into(),
    })
    .expect("synthetic session");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::jsonl(dir.path().join("root"), Compression::None);
    store
        .import(session.header().clone(), session.to_raw_events().unwrap())
        .expect("import");
    let location = store.read("cli-compact").expect("read").location;
    (dir, PathBuf::from(location))
}

fn event_types(file: &std::path::Path) -> Vec<String> {
    read_log(file)
        .expect("read log")
        .events
        .iter()
        .map(|event| event.type_tag().unwrap_or("").to_owned())
        .collect()
}

fn stdout_of(command: &mut Command) -> String {
    let output = command.output().expect("run strata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf8")
}

#[test]
fn a_dry_run_reports_the_span_and_tokens_and_writes_nothing() {
    let (_dir, file) = stored_session(120);
    let before = std::fs::read(&file).expect("read");
    let text = stdout_of(
        strata()
            .args(["compact", "--offline", "--dry-run"])
            .arg(&file),
    );
    assert!(text.contains(": would shadow "), "{text}");
    assert!(text.contains("  shadowed seqs: "), "{text}");
    assert!(text.contains("(extractive checkpoint of "), "{text}");
    assert_eq!(std::fs::read(&file).expect("read"), before);
    // Without --offline a dry run still plans, with an upper bound for the summary.
    let text = stdout_of(strata().args(["compact", "--dry-run"]).arg(&file));
    assert!(text.contains("(summary capped at 8192 tokens)"), "{text}");
}

#[test]
fn an_offline_compaction_appends_one_bracketed_batch_that_validates() {
    let (_dir, file) = stored_session(120);
    let n_before = event_types(&file).len();
    let text = stdout_of(strata().args(["compact", "--offline"]).arg(&file));
    assert!(
        text.contains("history items into a checkpoint at seq "),
        "{text}"
    );
    let types = event_types(&file);
    // Opening for writing adds the end-seed marker; then the compaction batch.
    assert_eq!(
        &types[n_before..],
        [
            "session/end-seed",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end"
        ]
    );
    strata()
        .arg("validate")
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("1 replacements"));
    strata_conformance::format_oracle::assert_accepted(&[&file]);
}

#[test]
fn a_loose_file_is_planned_by_a_dry_run_and_compacted_in_place() {
    let loose = tempfile::tempdir().expect("temp dir");
    let file = loose.path().join("copy.v3.jsonl");
    std::fs::copy(sample(), &file).expect("copy");
    let before = std::fs::read(&file).expect("read");
    strata()
        .args(["compact", "--offline", "--dry-run"])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(std::fs::read(&file).expect("read"), before);
    let text = stdout_of(strata().args(["compact", "--offline"]).arg(&file));
    assert!(
        text.contains(": appended seqs 132..=136 (5 events)"),
        "{text}"
    );
    strata_conformance::format_oracle::assert_accepted(&[&file]);
}

/// dsh accepts a tool-result rewrite only inside an open turn, and a stored session has none:
/// `strata prune` shows what a pre-step would prune, and without `--dry-run` refuses, saying
/// why and what to run instead, and writes nothing (not even a writer's end-seed marker).
#[test]
fn prune_shows_the_rewrites_and_refuses_to_write_a_finished_session() {
    let (_dir, file) = stored_session(5_000);
    let before = std::fs::read(&file).expect("read");
    let text = stdout_of(strata().args(["prune", "--dry-run"]).arg(&file));
    assert!(text.contains(": would prune "), "{text}");
    assert!(text.contains(" code points, "), "{text}");
    assert!(text.contains("without --dry-run"), "{text}");
    let refused = strata()
        .arg("prune")
        .arg(&file)
        .output()
        .expect("run strata");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for needle in [
        "not pruned",
        "tool/result replacement is outside an open turn",
        "nothing was written",
        "strata compact --offline",
    ] {
        assert!(stderr.contains(needle), "{needle:?} in {stderr}");
    }
    assert_eq!(std::fs::read(&file).expect("read"), before);
    // Nothing over the limit: nothing to refuse.
    let (_dir, small) = stored_session(120);
    let text = stdout_of(strata().arg("prune").arg(&small));
    assert!(
        text.contains("no tool result over 8192 code points"),
        "{text}"
    );
}

#[test]
fn a_sqlite_reference_is_compacted_in_its_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("strata.db");
    let session = generate(&SynthConfig {
        events: 400,
        compact_every: 0,
        prune_rate: 0.0,
        id: "in-sqlite".into(),
        ..SynthConfig::default()
    })
    .expect("synthetic session");
    Store::sqlite(&db)
        .expect("sqlite store")
        .import(session.header().clone(), session.to_raw_events().unwrap())
        .expect("import");
    let reference = format!("sqlite://{}#in-sqlite", db.display());
    let text = stdout_of(strata().args(["compact", "--offline", &reference]));
    assert!(text.contains("into a checkpoint at seq "), "{text}");
    strata()
        .args(["surface", &reference])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 replacements"));
}

#[test]
fn a_dsh_v0_log_is_planned_in_its_own_numbering() {
    // Compaction and pruning plan on an older log as a writer would resume it; its replace
    // ops (spelled `start`/`end`) must replay under its own rules.
    let v0 = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/v0/generated/gen-e700-s12-dense.jsonl");
    let before = std::fs::read(&v0).expect("read");
    let text = stdout_of(
        strata()
            .args(["compact", "--offline", "--dry-run"])
            .arg(&v0),
    );
    assert!(text.contains(": would shadow "), "{text}");
    assert!(text.contains("(extractive checkpoint of "), "{text}");
    let text = stdout_of(strata().args(["prune", "--dry-run"]).arg(&v0));
    assert!(
        text.contains("no tool result over 8192 code points"),
        "{text}"
    );
    assert_eq!(std::fs::read(&v0).expect("read"), before);
}

/// Issue 22 (defects found by hostile probes): text a lone UTF-16 surrogate is part of is
/// copied into the events compaction writes, spelled as `JSON.stringify` does (it was read as
/// `null` and dropped). The pruner's case is strata-compact's (`tests/compact/prune.rs`), as
/// `strata prune` no longer rewrites a stored session.
mod lone_surrogates {
    use super::*;

    /// Inserts `A\ud800B ` after the first `after` of each line `pick` chooses.
    fn insert(file: &std::path::Path, after: &str, pick: impl Fn(&str) -> bool) {
        let text = std::fs::read_to_string(file).expect("read");
        let edited: String = text
            .lines()
            .map(|line| {
                let line = if pick(line) {
                    line.replacen(after, &format!(r"{after}A\ud800B "), 1)
                } else {
                    line.to_owned()
                };
                format!("{line}\n")
            })
            .collect();
        std::fs::write(file, edited).expect("write");
    }

    fn appended(file: &std::path::Path, n_lines: usize) -> String {
        let text = std::fs::read_to_string(file).expect("read");
        text.lines().skip(n_lines).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn an_offline_summary_keeps_the_text() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir
            .path()
            .join("--home-user-project--/sample-session/session.v3.jsonl");
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
        std::fs::copy(sample(), &file).expect("copy");
        // The last checkpoint's summary (seq 120) and the user's message after it (seq 123).
        insert(&file, "<compacted-summary>", |line| {
            line.contains(r#""seq":120,"#)
        });
        insert(&file, r#""text":""#, |line| line.contains(r#""seq":123,"#));
        let n_lines = std::fs::read_to_string(&file)
            .expect("read")
            .lines()
            .count();
        strata().arg("validate").arg(&file).assert().success();
        stdout_of(strata().args(["compact", "--offline"]).arg(&file));
        strata().arg("validate").arg(&file).assert().success();
        let new = appended(&file, n_lines);
        assert!(new.contains("turn 8: A\\ud800B tool tab"), "{new}");
        assert!(new.contains("earlier: A\\ud800B session"), "{new}");
    }
}
