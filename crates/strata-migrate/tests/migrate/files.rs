//! The files a migration reads and publishes (issue 22): a v0 log cut under the legacy reader
//! ends with an I/O error naming the file, never a signal, and a migration removes a killed
//! migration's temporary file beside its target but never one a live writer holds
//! (docs/format.md §5b). The store's own cases are in strata-store's `shrink` and
//! `temp_files` tests; these are the same checks on the older generations' paths.

use std::fs;
use std::path::{Path, PathBuf};

use strata_migrate::legacy::LegacyReader;
use strata_migrate::migrate::migrate_file;
use strata_testkit::files::{drain_after_cut, plant_live_temp, plant_stale_temp};

#[test]
fn a_v0_log_cut_under_the_legacy_reader_ends_with_a_shrink_error() {
    let dir = tempfile::tempdir().expect("dir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/v0/generated/gen-e500-s11.jsonl");
    let text = std::fs::read_to_string(fixture).expect("the v0 fixture");
    let (header_line, body) = text.split_once('\n').expect("a header line");
    // The reader judges storage, not rules: the same body many times is a long v0 file to it.
    let mut long = format!("{header_line}\n");
    while long.len() < 8 << 20 {
        long.push_str(body);
    }
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, long).expect("write");
    let reader = LegacyReader::open(&path).expect("open the v0 log");
    drain_after_cut(reader, &path);
}

#[test]
fn a_migration_removes_a_killed_migrations_temp_beside_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("session.jsonl");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/v0/generated/released-e500-s11.jsonl"),
        &source,
    )
    .unwrap();
    let target = dir.path().join("session.v3.jsonl");
    // Earlier builds named a migration's temp file `….migrating.tmp`.
    let mut old_name = target.as_os_str().to_owned();
    old_name.push(".0000012345ab.migrating.tmp");
    let stale_old = PathBuf::from(old_name);
    fs::write(&stale_old, b"partial").unwrap();
    let stale = plant_stale_temp(&target, "0123456789ab");
    let (live, _holder) = plant_live_temp(&target, "ba9876543210");
    let report = migrate_file(&source).unwrap();
    assert_eq!(report.target, target);
    assert!(!stale_old.exists() && !stale.exists());
    assert!(live.exists());
    // Only the source, the published log and the live writer's temp remain.
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "session.jsonl",
            "session.v3.jsonl",
            "session.v3.jsonl.ba9876543210.tmp"
        ]
    );
}
