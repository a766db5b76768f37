//! Temporary files of killed writers (issue 22): a writer killed mid-publish leaves its
//! `<target>.<hex>.tmp` behind (a killed import: up to the whole log). The next write of the
//! same file removes it — a JSONL store's create or open for writing, `write_log`, a
//! migration (strata-migrate's tests) — but never one a live writer still holds locked (docs/format.md §5b).
//!
//! A killed writer's file is planted here exactly as the kernel leaves it: bytes under a temp
//! name, with no lock held. A live writer is this test process holding the file's `flock` on
//! a descriptor of its own (a lock of another open file description, as another process's
//! would be). `strata-cli`'s tests kill a real `strata import` mid-publish.

use std::fs;
use std::path::Path;

use strata_store::{write_log, Compression, JsonlBackend, JsonlConfig, Store};
use strata_testkit::files::{plant_live_temp, plant_stale_temp};

use crate::common::{append_turns, header};

fn jsonl(root: &Path, compression: Compression) -> Store {
    Store::new(JsonlBackend::new(JsonlConfig::new(root, compression)))
}

#[test]
fn a_jsonl_create_removes_a_killed_writers_temp_and_keeps_a_live_ones() {
    for (compression, file_name) in [
        (Compression::None, "session.v3.jsonl"),
        (Compression::Zstd, "session.v3.jsonl.zstd"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let session_dir = root.join("--home-user-project--").join("s1");
        fs::create_dir_all(&session_dir).unwrap();
        let target = session_dir.join(file_name);
        let stale = plant_stale_temp(&target, "0123456789ab");
        let (live, holder) = plant_live_temp(&target, "ba9876543210");
        let unrelated = session_dir.join("notes.tmp");
        fs::write(&unrelated, b"not ours").unwrap();

        let store = jsonl(&root, compression);
        let writer = store.create(header("s1", 1)).unwrap();
        append_turns(&writer, 1);
        writer.close().unwrap();
        assert!(
            !stale.exists(),
            "{compression:?}: the killed writer's temp is removed"
        );
        assert!(
            live.exists(),
            "{compression:?}: a live writer's temp is left alone"
        );
        assert!(unrelated.exists());
        assert_eq!(store.load("s1").unwrap().len(), 9);

        // Once its writer is gone, the next open for writing removes it.
        drop(holder);
        drop(store.open_write("s1").unwrap());
        assert!(!live.exists(), "{compression:?}");
    }
}

#[test]
fn write_log_removes_a_killed_writers_temp_beside_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = jsonl(&dir.path().join("root"), Compression::None);
    let writer = store.create(header("s1", 1)).unwrap();
    append_turns(&writer, 2);
    writer.close().unwrap();
    let session = store.load("s1").unwrap();
    let out = dir.path().join("export.jsonl");
    let stale = plant_stale_temp(&out, "00000000cafe");
    let (live, _holder) = plant_live_temp(&out, "00000000beef");
    write_log(&out, session.header(), session.events().unwrap()).unwrap();
    assert!(!stale.exists());
    assert!(live.exists());
    assert_eq!(
        strata_store::read_log(&out).unwrap().events.len(),
        session.len()
    );
}
