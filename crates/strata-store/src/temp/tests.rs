//! Unit tests of temporary files: the directory beside a file, names, ownership and the sweep.

use std::ffi::OsStr;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use super::{dir_of, is_temp_name_of, sweep, TempFile};

#[test]
fn a_bare_file_name_lives_in_the_working_directory() {
    assert_eq!(dir_of(Path::new("session.v3.jsonl")), Path::new("."));
    assert_eq!(dir_of(Path::new("a/session.v3.jsonl")), Path::new("a"));
    assert_eq!(dir_of(Path::new("/r/a/b")), Path::new("/r/a"));
    assert_eq!(dir_of(Path::new("./b")), Path::new("."));
}

#[test]
fn temp_names_of_a_target_are_recognised_and_nothing_else() {
    let target = OsStr::new("session.v3.jsonl");
    let is_temp = |name: &str| is_temp_name_of(target, OsStr::new(name));
    assert!(is_temp("session.v3.jsonl.0123456789ab.tmp"));
    assert!(is_temp("session.v3.jsonl.00000012345f.migrating.tmp"));
    assert!(!is_temp("session.v3.jsonl"));
    assert!(!is_temp("session.v3.jsonl.zstd.0123456789ab.tmp"));
    assert!(!is_temp("session.v3.jsonl.0123456789AB.tmp"));
    assert!(!is_temp("session.v3.jsonl.01234.tmp"));
    assert!(!is_temp("session.v3.jsonl.notes.tmp"));
    assert!(!is_temp("session.v3.ckpt.tmp"));
    assert!(!is_temp("other.0123456789ab.tmp"));
}

#[test]
fn a_live_temp_file_survives_a_sweep_and_its_drop_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("log.jsonl");
    let mut temp = TempFile::create(&target).unwrap();
    temp.file().write_all(b"partial").unwrap();
    let path = temp.path().to_path_buf();
    assert!(is_temp_name_of(
        target.file_name().unwrap(),
        path.file_name().unwrap()
    ));
    assert_eq!(sweep(&target), 0);
    assert_eq!(fs::read(&path).unwrap(), b"partial");
    drop(temp);
    assert!(!path.exists());
}

#[test]
fn a_sweep_removes_unlocked_temp_files_of_its_target_only() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("log.jsonl");
    let stale = dir.path().join("log.jsonl.0123456789ab.tmp");
    let stale_migration = dir.path().join("log.jsonl.0000000abcde.migrating.tmp");
    let foreign = dir.path().join("other.jsonl.0123456789ab.tmp");
    let odd = dir.path().join("log.jsonl.notes.tmp");
    for path in [&stale, &stale_migration, &foreign, &odd] {
        fs::write(path, b"left by a killed writer").unwrap();
    }
    // A symlink planted under a temp name is not followed, and stays.
    let pointed = dir.path().join("precious");
    fs::write(&pointed, b"keep").unwrap();
    let link = dir.path().join("log.jsonl.aaaaaaaaaaaa.tmp");
    std::os::unix::fs::symlink(&pointed, &link).unwrap();
    assert_eq!(sweep(&target), 2);
    assert!(!stale.exists() && !stale_migration.exists());
    assert!(foreign.exists() && odd.exists());
    assert!(link.symlink_metadata().is_ok());
    assert_eq!(fs::read(&pointed).unwrap(), b"keep");
}

/// A sweep may open and lock a file between a writer's `O_EXCL` create and the writer's own
/// lock. Either way round, the writer must not take the file for its own.
#[test]
fn a_writer_never_claims_a_file_a_sweep_locked_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("log.jsonl");
    let created = |nonce: &str| {
        let path = dir.path().join(format!("log.jsonl.{nonce}.tmp"));
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        (path, file)
    };
    // The sweep holds the lock (about to remove the name).
    let (path, file) = created("00000000000a");
    let sweeper = fs::File::open(&path).unwrap();
    assert!(super::try_lock(&sweeper).unwrap());
    assert!(TempFile::claim(path.clone(), file).unwrap().is_none());
    drop(sweeper);
    // The sweep already removed the name (and let go of the lock).
    let (path, file) = created("00000000000b");
    assert_eq!(sweep(&target), 2);
    assert!(!path.exists());
    assert!(TempFile::claim(path, file).unwrap().is_none());
    // Unraced, the file is the writer's, and a sweep leaves it alone.
    let (path, file) = created("00000000000c");
    let temp = TempFile::claim(path.clone(), file).unwrap().unwrap();
    assert_eq!(sweep(&target), 0);
    assert!(path.exists());
    drop(temp);
    assert!(!path.exists());
}
