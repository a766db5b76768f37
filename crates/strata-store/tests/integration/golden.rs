//! Golden V3 logs under `tests/golden/`: every file is read with the streaming reader, restored
//! by strata-core (so it is a valid log), and written back byte for byte.

use std::path::PathBuf;

use strata_core::{SeedOptions, Session};
use strata_format::{encode_event_line, encode_header_line, JsonlReader, ReaderOptions};

fn golden_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden files in {}", dir.display());
    files
}

#[test]
fn golden_logs_restore_and_rewrite_byte_identical() {
    for path in golden_files() {
        let original = std::fs::read(&path).unwrap();
        let options = ReaderOptions {
            file: Some(path.clone()),
            chunk_len: 64,
            ..ReaderOptions::default()
        };
        let mut reader = JsonlReader::new(std::fs::File::open(&path).unwrap(), options).unwrap();
        let rows: Vec<_> = reader.by_ref().map(|row| row.unwrap().event).collect();
        assert!(reader.torn_tail().is_none());
        let n_rows = rows.len();
        let header = reader.header().clone();
        let session = Session::restore(header, rows, SeedOptions::default())
            .unwrap_or_else(|error| panic!("{}: {error:?}", path.display()));
        // The golden logs end with an end-seed marker, so restore adds nothing.
        assert_eq!(session.len(), n_rows, "{}", path.display());
        let mut written = Vec::new();
        encode_header_line(session.header(), &mut written).unwrap();
        for event in session.events().unwrap() {
            encode_event_line(event, &mut written);
        }
        if written != original {
            let ours = String::from_utf8_lossy(&written);
            let theirs = String::from_utf8_lossy(&original);
            for (index, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
                assert_eq!(a, b, "{} line {}", path.display(), index + 1);
            }
            panic!("{}: lengths differ", path.display());
        }
    }
}

#[test]
fn golden_log_covers_every_core_event_type_and_replaces() {
    let path = golden_files()
        .into_iter()
        .find(|path| path.ends_with("v3-every-type.jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    for needle in [
        "\"turn/start\"",
        "\"turn/end\"",
        "\"step/start\"",
        "\"step/end\"",
        "\"system/message\"",
        "\"user/message\"",
        "\"assistant/message\"",
        "\"assistant/attempt\"",
        "\"tool/call\"",
        "\"tool/result\"",
        "\"request/header\"",
        "\"request/context\"",
        "\"session/end-seed\"",
        "\"todo/write\"",
        "\"ignorable\":true",
        "\"op\":\"replace\"",
        "[[3,10],16,17,21]",
        "\\u0001",
        "世界",
    ] {
        assert!(text.contains(needle), "golden log lacks {needle}");
    }
}
