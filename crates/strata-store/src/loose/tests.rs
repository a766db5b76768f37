//! A loose log file as a store of one session: appends under the file's lock, in its own
//! encoding, and nothing but the log and the lock beside it.

use strata_core::{payload, Candidate, SessionHeader, SurfaceIntent};

use super::*;
use crate::{write_log, Store};

fn hello(text: &str) -> Candidate {
    Candidate::surface(
        payload::UserMessage {
            message: payload::user_text_message(text, text),
        },
        SurfaceIntent::append(),
    )
}

/// A one-event log written as a file, then opened as a loose store.
fn loose_log(dir: &Path, name: &str) -> (PathBuf, Store) {
    let store = Store::memory();
    let writer = store
        .create(SessionHeader::fresh("loose", 1).unwrap())
        .unwrap();
    writer.append(vec![hello("m1")], 2).unwrap();
    writer.close().unwrap();
    let session = store.load("loose").unwrap();
    let path = dir.join(name);
    let n = session.len() - 1; // without the marker a load adds
    write_log(&path, session.header(), &session.events().unwrap()[..n]).unwrap();
    let loose = Store::new(LooseFile::open(&path).unwrap());
    (path, loose)
}

#[test]
fn the_lock_is_dsh_s_for_a_session_file_name_and_per_file_otherwise() {
    assert_eq!(
        lock_path_for(Path::new("/a/b/session.v3.jsonl.zstd")),
        Path::new("/a/b/session.lock")
    );
    assert_eq!(
        lock_path_for(Path::new("/a/b/copy.jsonl")),
        Path::new("/a/b/copy.jsonl.lock")
    );
    assert_eq!(
        lock_path_for(Path::new("copy.jsonl")),
        Path::new("./copy.jsonl.lock")
    );
}

#[test]
fn appends_land_in_the_file_in_its_encoding_under_its_lock() {
    for name in ["copy.jsonl", "copy.jsonl.zstd"] {
        let dir = tempfile::tempdir().unwrap();
        let (path, store) = loose_log(dir.path(), name);
        let writer = store.open_write("loose").unwrap();
        // A second writer is refused while the first holds the lock.
        let second = store.open_write("loose").map(drop).unwrap_err();
        assert!(matches!(second, StoreError::Locked { .. }), "{second}");
        writer.append(vec![hello("m2")], 3).unwrap();
        writer.close().unwrap();
        let log = crate::read_log(&path).unwrap();
        // m1, the marker the writer's open added, m2.
        assert_eq!(log.events.len(), 3, "{name}");
        assert_eq!(is_zstd_file(&path).unwrap(), name.ends_with(".zstd"));
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [name.to_owned(), format!("{name}.lock")]);
        assert!(store.load("loose").is_ok());
    }
}

#[test]
fn another_id_is_not_found_and_creating_or_deleting_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_path, store) = loose_log(dir.path(), "copy.jsonl");
    assert!(matches!(
        store.open_write("other").map(drop),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete("loose"),
        Err(StoreError::Unsupported { .. })
    ));
    assert!(matches!(
        store
            .create(SessionHeader::fresh("new", 1).unwrap())
            .map(drop),
        Err(StoreError::Unsupported { .. })
    ));
    assert_eq!(store.list().unwrap().sessions[0].id(), "loose");
}
