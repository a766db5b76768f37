//! Older dsh generations end to end (issue 4): v0 logs validate under v0 rules and report v0
//! seqs and lines; `strata migrate` publishes a verified V3 log beside an untouched source and
//! refuses an invalid one before writing anything.

use super::*;

/// A generated v0 log (`fixtures/v0/generated`) laid out as `dir/session.jsonl`.
fn v0_session(dir: &std::path::Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/v0/generated/released-e500-s11.jsonl");
    let text = std::fs::read_to_string(source).expect("fixture");
    let path = dir.join("session.jsonl");
    std::fs::write(&path, edit(&text)).expect("write");
    path
}

#[test]
fn a_v0_log_validates_under_v0_rules_and_reports_v0_seqs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = v0_session(dir.path(), str::to_owned);
    strata()
        .arg("validate")
        .arg(&good)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok (562 events, 14 surface nodes"));
    // A source citing a later event: upstream's rule, text and the v0 seq and line.
    let bad = v0_session(dir.path(), |text| {
        text.replacen("\"sourceEventSeqs\":[", "\"sourceEventSeqs\":[99999,", 1)
    });
    strata()
        .arg("validate")
        .arg(&bad)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "seq 53: source-not-earlier: v0 rules, line 55: invalid seed event at index 53: sourceEventSeqs must reference earlier events: 99999 >= current seq 53",
        ));
}

#[test]
fn migrate_publishes_a_verified_v3_log_beside_the_untouched_source() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = v0_session(dir.path(), str::to_owned);
    let before = std::fs::read(&source).expect("read");
    let output = strata()
        .args(["migrate", "--json"])
        .arg(&source)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&output).expect("json");
    assert_eq!(report["sourceGeneration"], "v0");
    assert_eq!(report["sourceEvents"], 562);
    assert_eq!(std::fs::read(&source).expect("read"), before);
    let target = dir.path().join("session.v3.jsonl");
    strata().arg("validate").arg(&target).assert().success();
    // Running it again never replaces the published log (exit 2).
    strata().arg("migrate").arg(&source).assert().code(2);
}

/// Issue 22: a bare file name run in its own directory. The publish fsynced the target's
/// parent, which is the empty path for a bare name, so the command failed (exit 2) after the
/// V3 log was already published, and a rerun then refused it as existing.
#[test]
fn migrate_of_a_bare_file_name_in_its_directory_succeeds() {
    let dir = tempfile::tempdir().expect("temp dir");
    v0_session(dir.path(), str::to_owned);
    strata()
        .current_dir(dir.path())
        .args(["migrate", "session.jsonl"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "session.jsonl: v0 → v3: session.v3.jsonl (562 events",
        ));
    strata()
        .current_dir(dir.path())
        .args(["validate", "session.v3.jsonl"])
        .assert()
        .success();
}

#[test]
fn an_invalid_source_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = v0_session(dir.path(), |text| {
        text.replacen("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"", 1)
    });
    strata()
        .arg("migrate")
        .arg(&source)
        .assert()
        .code(1)
        // Upstream's v1→v2 edge reads the endpoints of any surfaceOp but "append", and names
        // the one it cannot map (docs/migration.md, refusal `m2-unmapped-reference`).
        .stderr(predicate::str::contains(
            "[m2-unmapped-reference]: user/message 2 surface start targets consumed assistant/chunk undefined",
        ));
    // Nothing but the writer lock the migration held (dsh's `session.lock`, left for the next
    // writer as dsh leaves it); no V3 file, no temporary file.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["session.jsonl", "session.lock"]);
}

#[test]
fn a_corrupt_packed_row_names_generation_line_and_seq() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":1,\"delegationDepth\":0}\n\
         {\"type\":\"text-chunks\",\"seq0\":0,\"time0\":1,\"data\":{\"turn\":1}}\n",
    )
    .expect("write");
    strata()
        .arg("validate")
        .arg(&path)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "v0 line 2 (seq 0): corrupt record: malformed text-chunks storage row",
        ));
}
