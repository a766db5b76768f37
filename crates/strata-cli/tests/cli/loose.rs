//! In-place maintenance of a loose log file (issue 27 item 2): `compact` and `repair` on a V3
//! file outside any store layout append to that file, raw or zstd (dsh's framing kept), under
//! the file's own writer lock, and say which seqs they appended; `prune` keeps dsh's rule (no
//! tool-result rewrite outside an open turn) and writes nothing; an older generation's file is
//! refused, pointing at `migrate`. Upstream's released V3 format layer accepts every result.

use std::path::{Path, PathBuf};

use strata_store::sidecars::lock_path_for;
use strata_store::{write_log, SessionLock};

use super::dsh::{assert_dsh_accepts, crash_point, names_in, synth};
use super::*;

/// A loose copy of a synthetic session's first `n` events (all when `None`) at `dir/name`.
fn loose_copy(dir: &Path, name: &str, id: &str, n: Option<usize>) -> PathBuf {
    let session = synth(id, 9);
    let n = n
        .unwrap_or_else(|| crash_point(&session))
        .min(session.len());
    let file = dir.join(name);
    write_log(&file, session.header(), &session.events().unwrap()[..n]).expect("write log");
    file
}

fn whole(id: &str) -> Option<usize> {
    Some(synth(id, 9).len())
}

fn run_ok(command: &mut Command) -> String {
    let output = command.output().expect("run strata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf8")
}

#[test]
fn compact_appends_to_a_loose_file_in_its_encoding_and_says_which_seqs() {
    for name in ["copy.jsonl", "copy.jsonl.zstd"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = loose_copy(dir.path(), name, "loose-compact", whole("loose-compact"));
        let before = std::fs::read(&file).expect("read");
        let n_before = read_log_len(&file);
        let text = run_ok(strata().args(["compact", "--offline"]).arg(&file));
        // The writer's open adds the end-seed marker, then the bracketed compaction batch.
        let appended = format!(": appended seqs {n_before}..={} (5 events)", n_before + 4);
        assert!(text.contains(&appended), "{name}: {text}");
        let after = std::fs::read(&file).expect("read");
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "{name}: appended, not rewritten"
        );
        assert_eq!(read_log_len(&file), n_before + 5);
        // The log and its lock, nothing else (no checkpoint, no offset index).
        assert_eq!(
            names_in(dir.path()),
            [name.to_owned(), format!("{name}.lock")]
        );
        assert_dsh_accepts(&file);
        // Compacting again appends a second checkpoint or nothing, never fails.
        strata()
            .args(["compact", "--offline"])
            .arg(&file)
            .assert()
            .success();
        assert_dsh_accepts(&file);
    }
}

#[test]
fn repair_closes_a_crashed_turn_in_a_loose_file_once() {
    for name in ["crashed.jsonl", "crashed.jsonl.zstd"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = loose_copy(dir.path(), name, "loose-crash", None);
        let n_before = read_log_len(&file);
        let text = run_ok(strata().arg("repair").arg(&file));
        assert!(text.contains(": appended "), "{name}: {text}");
        assert!(
            text.contains(&format!("  {n_before:>8}  ")),
            "{name}: {text}"
        );
        assert!(text.contains("turn/end"), "{name}: {text}");
        assert_dsh_accepts(&file);
        let bytes = std::fs::read(&file).expect("read");
        let text = run_ok(strata().arg("repair").arg(&file));
        assert!(text.contains("nothing to repair"), "{name}: {text}");
        assert_eq!(std::fs::read(&file).expect("read"), bytes);
        assert_eq!(
            names_in(dir.path()),
            [name.to_owned(), format!("{name}.lock")]
        );
    }
}

#[test]
fn a_session_file_name_outside_a_layout_uses_dsh_s_lock_and_a_second_writer_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = loose_copy(dir.path(), "session.v3.jsonl", "loose-lock", None);
    assert_eq!(lock_path_for(&file), dir.path().join("session.lock"));
    let held = SessionLock::acquire(&lock_path_for(&file), "loose-lock").expect("lock");
    let bytes = std::fs::read(&file).expect("read");
    for args in [vec!["repair"], vec!["compact", "--offline"]] {
        strata()
            .args(&args)
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "is open for writing by pid {}",
                std::process::id()
            )));
    }
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
    drop(held);
    strata().arg("repair").arg(&file).assert().success();
    assert_dsh_accepts(&file);
    assert_eq!(names_in(dir.path()), ["session.lock", "session.v3.jsonl"]);
}

#[test]
fn prune_keeps_dsh_s_rule_on_a_loose_file_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("big.jsonl");
    let session = strata_core::synth::generate(&strata_core::synth::SynthConfig {
        events: 300,
        seed: 3,
        content_bytes: 5_000,
        compact_every: 0,
        prune_rate: 0.0,
        id: "loose-prune".into(),
    })
    .expect("synthetic session");
    write_log(&file, session.header(), session.events().unwrap()).expect("write");
    let bytes = std::fs::read(&file).expect("read");
    let text = run_ok(strata().args(["prune", "--dry-run"]).arg(&file));
    assert!(text.contains(": would prune "), "{text}");
    strata()
        .arg("prune")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("outside an open turn"))
        .stderr(predicate::str::contains("nothing was written"));
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
    assert_eq!(names_in(dir.path()), ["big.jsonl"]);
}

#[test]
fn an_older_generation_loose_file_is_refused_pointing_at_migrate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("old.jsonl");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/v0/generated/released-e500-s11.jsonl"),
        &file,
    )
    .expect("copy");
    let bytes = std::fs::read(&file).expect("read");
    for args in [vec!["compact", "--offline"], vec!["repair"]] {
        strata()
            .args(&args)
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("strata migrate"));
    }
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
    assert_eq!(names_in(dir.path()), ["old.jsonl"]);
}

#[test]
fn fork_without_an_output_still_needs_a_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = loose_copy(dir.path(), "copy.jsonl", "loose-fork", whole("loose-fork"));
    strata()
        .args(["fork", "--at", "5"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("hint: pass -o OUT"));
    assert_eq!(names_in(dir.path()), ["copy.jsonl"]);
}

fn read_log_len(file: &Path) -> u64 {
    strata_store::read_log(file).expect("read log").events.len() as u64
}
