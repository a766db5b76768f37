//! Hostile session ids and oversized records (issue 3): ids are encoded into one safe path
//! component or refused, never escape the root; a 64 MiB single line is refused with a size
//! error instead of exhausting memory.

use std::fs;
use std::path::Path;

use strata_core::{payload, Candidate, HeaderSpec, SessionHeader, SurfaceIntent};
use strata_format::{lines::DEFAULT_MAX_RECORD_LEN, CodecError, MAX_SEGMENT_BYTES};
use strata_store::{
    read_log, AppendError, Compression, JsonlBackend, JsonlConfig, Store, StoreError,
};

use crate::common::{all, store, Kind};

fn header_for(id: &str) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: id.to_owned(),
        created_at: 1,
        ..HeaderSpec::default()
    })
    .unwrap()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn hostile_ids_are_encoded_inside_the_root_or_refused() {
    let long = "x".repeat(4096);
    let ids = [
        "../x",
        "a/b",
        "..",
        ".",
        "nul\0byte",
        "~tilde",
        "héllo wörld",
        "/abs",
        &long,
    ];
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside-marker");
        let store = store(kind, &dir.path().join("inner"));
        for id in ids {
            match store.create(header_for(id)) {
                Ok(writer) => {
                    writer.close().unwrap();
                    let log = store.read(id).unwrap();
                    assert_eq!(log.header.id(), id, "{kind:?}");
                    assert!(store.list().unwrap().sessions.iter().any(|h| h.id() == id));
                }
                // Only the 4 KiB id may be refused, naming the store's limit (see
                // `ids_at_and_past_each_stores_limit`), and PostgreSQL, whose text cannot hold
                // NUL, refuses the NUL id up front.
                Err(StoreError::BadId { .. }) if kind == Kind::Postgres && id.contains('\0') => {}
                Err(StoreError::IdTooLong { .. }) if id == long => {}
                Err(error) => panic!("{kind:?} refused {id:?}: {error}"),
            }
        }
        // Nothing was created outside the store's own directory.
        let entries: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert!(entries.len() <= 1, "{kind:?}: {entries:?}");
        assert!(!outside.exists());
        for path in files_under(&dir.path().join("inner")) {
            assert!(path.starts_with(dir.path().join("inner")));
        }
    }
}

/// Issue 22: ids of more than ~250 bytes failed with "File name too long" on the JSONL store
/// (dsh's layout makes the encoded id a directory name, which dsh itself cannot create past 255
/// bytes) and on SQLite (its lock file was named after the encoded id). A JSONL store now
/// refuses an id whose directory name would pass 255 bytes, naming the limit, before writing
/// anything; SQLite takes any id (a long one's lock file name is hashed); PostgreSQL refuses
/// ids past the 2048 bytes its B-tree keys hold for certain.
#[test]
fn ids_at_and_past_each_stores_limit() {
    let accents = "é".repeat(52); // 104 bytes, 260 as `~00E9` escapes
    let cases: [(String, usize); 4] = [
        ("i".repeat(255), 255),
        ("i".repeat(256), 256),
        ("i".repeat(10_000), 10_000),
        (accents, 260),
    ];
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(kind, &dir.path().join("inner"));
        for (id, n_name_bytes) in &cases {
            let limit = match kind {
                Kind::Raw | Kind::Zstd => Some(MAX_SEGMENT_BYTES),
                Kind::Postgres => Some(strata_store::postgres::MAX_ID_BYTES),
                Kind::Memory | Kind::Sqlite => None,
            };
            let measured = match kind {
                Kind::Raw | Kind::Zstd => *n_name_bytes,
                _ => id.len(),
            };
            let created = store.create(header_for(id));
            match limit.filter(|&limit| measured > limit) {
                None => {
                    let writer = created
                        .unwrap_or_else(|error| panic!("{kind:?}: {} bytes: {error}", id.len()));
                    crate::common::append_turns(&writer, 1);
                    writer.close().unwrap();
                    assert_eq!(store.load(id).unwrap().len(), 9, "{kind:?}");
                    // The writer lock works for it: a second writer is refused while one is open.
                    let writer = store.open_write(id).unwrap();
                    assert!(matches!(
                        store.open_write(id),
                        Err(StoreError::Locked { .. })
                    ));
                    drop(writer);
                    assert!(store.list().unwrap().sessions.iter().any(|h| h.id() == *id));
                    store.delete(id).unwrap();
                    assert!(!store.backend().exists(id).unwrap(), "{kind:?}");
                }
                Some(limit) => {
                    let error = created
                        .err()
                        .unwrap_or_else(|| panic!("{kind:?}: a {}-byte id was created", id.len()));
                    let StoreError::IdTooLong {
                        n_bytes,
                        limit: named,
                        ..
                    } = &error
                    else {
                        panic!("{kind:?}: {error}");
                    };
                    assert_eq!((*n_bytes, *named), (id.len(), limit), "{kind:?}");
                    let message = error.to_string();
                    assert!(
                        message.contains(&format!(" is {} bytes", id.len()))
                            && message.contains(&format!("takes at most {limit} (")),
                        "{kind:?}: {message}"
                    );
                    // Refused before anything was written; a lookup finds nothing.
                    assert!(!store.backend().exists(id).unwrap(), "{kind:?}");
                    assert!(store.list().unwrap().sessions.is_empty(), "{kind:?}");
                    assert!(matches!(store.load(id), Err(StoreError::NotFound { .. })));
                }
            }
        }
        if matches!(kind, Kind::Raw | Kind::Zstd) {
            // Nothing but project directories (from the ids it took) in the root.
            for path in files_under(&dir.path().join("inner")) {
                let name = path.file_name().unwrap().len();
                assert!(name <= MAX_SEGMENT_BYTES, "{kind:?}: {}", path.display());
            }
        }
    }
}

#[test]
fn the_empty_id_is_refused_by_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(JsonlBackend::new(JsonlConfig::new(
        dir.path(),
        Compression::None,
    )));
    let error = store.create(header_for("")).unwrap_err();
    assert!(matches!(error, StoreError::BadId { .. }), "{error}");
}

#[test]
fn an_event_above_the_configured_record_limit_is_refused_before_anything_is_written() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let config = JsonlConfig {
            max_record_len: 64 * 1024,
            ..JsonlConfig::new(dir.path(), compression)
        };
        let store = Store::new(JsonlBackend::new(config));
        let writer = store.create(header_for("big")).unwrap();
        let huge = Candidate::surface(
            payload::UserMessage {
                message: payload::user_text_message("u", &"y".repeat(64 * 1024)),
            },
            SurfaceIntent::append(),
        );
        let error = writer.append(vec![huge], 1).unwrap_err();
        assert!(
            matches!(
                error,
                AppendError::TooLarge {
                    seq: 0,
                    limit: 65536,
                    ..
                }
            ),
            "{compression:?}: {error}"
        );
        assert_eq!(writer.durable_len(), 0);
        // The writer is still usable and nothing reached the file.
        let small = Candidate::surface(
            payload::UserMessage {
                message: payload::user_text_message("u", "small"),
            },
            SurfaceIntent::append(),
        );
        writer.append(vec![small], 2).unwrap();
        writer.close().unwrap();
        assert_eq!(store.read("big").unwrap().events.len(), 1);
    }
}

#[test]
fn a_64_mib_single_line_is_refused_with_a_size_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.v3.jsonl");
    let header = r#"{"type":"session","version":3,"id":"s","createdAt":0,"isSeeded":false,"delegationDepth":0}"#;
    let mut bytes = Vec::with_capacity(DEFAULT_MAX_RECORD_LEN + 200);
    bytes.extend_from_slice(header.as_bytes());
    bytes.push(b'\n');
    bytes.resize(bytes.len() + DEFAULT_MAX_RECORD_LEN + 1, b'z');
    bytes.push(b'\n');
    fs::write(&path, &bytes).unwrap();
    drop(bytes);
    let error = read_log(&path).unwrap_err();
    match &error {
        StoreError::Codec(codec) => assert!(
            matches!(**codec, CodecError::TooLarge { limit, ref location, .. }
                if limit == DEFAULT_MAX_RECORD_LEN && location.line == 2),
            "{error}"
        ),
        other => panic!("unexpected {other}"),
    }
    assert!(error
        .to_string()
        .contains("longer than the 67108864-byte limit"));
}

#[test]
fn a_database_of_another_schema_version_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    drop(strata_store::SqliteBackend::open(&path).unwrap());
    {
        let conn = rusqlite_connection(&path);
        conn.execute_batch("PRAGMA user_version = 7;").unwrap();
    }
    let error = strata_store::SqliteBackend::open(&path).err().unwrap();
    assert_eq!(
        error.to_string(),
        format!(
            "database {} has schema version 7, but this build reads only version {}",
            path.display(),
            strata_store::sqlite::SCHEMA_VERSION
        )
    );
    let _ = Kind::Memory;
}

#[test]
fn a_new_database_has_16_kib_pages_and_one_with_4_kib_pages_still_serves() {
    let dir = tempfile::tempdir().unwrap();
    let page_size = |path: &Path| -> i64 {
        rusqlite_connection(path)
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .unwrap()
    };
    let fresh = dir.path().join("fresh.db");
    drop(strata_store::SqliteBackend::open(&fresh).unwrap());
    assert_eq!(page_size(&fresh), 16 * 1024);

    // A database an earlier build made, at SQLite's default page size.
    let older = dir.path().join("older.db");
    rusqlite_connection(&older)
        .execute_batch("PRAGMA page_size = 4096; VACUUM;")
        .unwrap();
    let store = strata_store::Store::sqlite(&older).unwrap();
    assert_eq!(page_size(&older), 4096);
    let writer = store.create(header_for("older")).unwrap();
    let turns = strata_store::synth::turn_candidates(1, 0, 64);
    let n = turns.len();
    writer.append(turns, 1).unwrap();
    writer.close().unwrap();
    assert_eq!(store.load("older").unwrap().len(), n + 1);
    assert_eq!(
        page_size(&older),
        4096,
        "pages are never resized under a user"
    );
}

fn rusqlite_connection(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}
