//! `strata_migrate::open`: any dsh log file, any generation, refused in one shape. Each reader's
//! failure lands in the right family — a rule the log breaks (with its id, line and seq) or a
//! failure to read — and an older generation loads in its own numbering.

use std::path::{Path, PathBuf};

use strata_migrate::open::{
    codec_rejection, is_older_generation, open_older_generation, store_rejection, LogError,
};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

#[test]
fn a_v0_log_loads_in_its_own_numbering_and_a_v3_log_is_left_to_the_v3_reader() {
    let v0 = repo("fixtures/v0/generated/gen-e500-s11.jsonl");
    assert!(is_older_generation(&v0));
    let older = open_older_generation(&v0, "gen.jsonl")
        .unwrap()
        .expect("a v0 log");
    let rows = std::fs::read_to_string(&v0).unwrap().lines().count() - 1;
    assert_eq!(
        older.n_stored,
        usize::try_from(older.session.first_live_seq()).unwrap()
    );
    assert!(older.n_stored >= rows, "{} < {rows}", older.n_stored);

    let v3 = repo("examples/sample.v3.jsonl");
    assert!(!is_older_generation(&v3));
    assert!(open_older_generation(&v3, "sample").unwrap().is_none());
}

#[test]
fn a_v0_log_that_breaks_a_rule_is_a_rejection_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("fixtures/v0/generated/gen-e500-s11.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // Line 3 (seq 1) loses its closing brace: not JSON.
    let broken = lines[2].trim_end_matches('}').to_owned();
    lines[2] = &broken;
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    match open_older_generation(&path, "broken.jsonl") {
        Err(LogError::Invalid(rejection)) => {
            assert_eq!(rejection.file, PathBuf::from("broken.jsonl"));
            assert_eq!(rejection.line, Some(3), "{rejection:?}");
            assert!(!rejection.rule.is_empty());
        }
        Err(other) => panic!("expected a rejection, got {other}"),
        Ok(_) => panic!("a broken v0 log loaded"),
    }
}

#[test]
fn a_missing_file_could_not_be_read_and_a_newer_header_breaks_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.jsonl");
    let error = strata_store::scan_log(&missing).expect_err("no such file");
    assert!(matches!(
        store_rejection("nothing.jsonl", error),
        LogError::Unreadable(_)
    ));

    let newer = dir.path().join("session.v9.jsonl");
    std::fs::write(
        &newer,
        "{\"type\":\"session\",\"version\":9,\"id\":\"s\",\"createdAt\":0}\n",
    )
    .unwrap();
    let error = strata_store::scan_log(&newer).expect_err("a newer version");
    match store_rejection("session.v9.jsonl", error) {
        LogError::Invalid(rejection) => assert_eq!(rejection.rule, "unsupported-version"),
        LogError::Unreadable(error) => panic!("expected a rejection, got {error}"),
    }
}

#[test]
fn an_older_version_seen_by_the_v3_codec_names_the_migration() {
    let line = br#"{"type":"session","version":2,"id":"old","createdAt":0}"#;
    let error = strata_format::decode_header_line(line, &strata_format::Location::line(1))
        .expect_err("v2 is older than the codec reads");
    match codec_rejection(Path::new("old.jsonl"), error) {
        LogError::Invalid(rejection) => {
            assert_eq!(rejection.rule, "unsupported-version");
            assert!(
                rejection.message.contains("`strata migrate old.jsonl`"),
                "{}",
                rejection.message
            );
        }
        LogError::Unreadable(error) => panic!("expected a rejection, got {error}"),
    }
}
