//! Torn tails and interior corruption on JSONL logs (persistence §2.7; peers (c) items 3–4):
//! every truncation offset opens to the last complete record, an append never glues onto
//! torn bytes, and a bad complete record is reported by file, line and seq — never skipped.

use std::fs;
use std::path::{Path, PathBuf};

use strata_store::{Compression, JsonlBackend, JsonlConfig, Store, StoreError};

use crate::common::{append_turns, header, partial_turn};

const ID: &str = "torn";

fn backend(root: &Path, compression: Compression) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig::new(root, compression))
}

fn log_path(root: &Path, compression: Compression) -> PathBuf {
    let name = match compression {
        Compression::None => "session.v3.jsonl",
        Compression::Zstd => "session.v3.jsonl.zstd",
    };
    backend(root, compression)
        .session_dir(Some("/home/user/project"), ID)
        .unwrap()
        .join(name)
}

/// A small valid log written in several batches (several zstd frames), returned as bytes with
/// the JSON of each event.
fn small_log(compression: Compression) -> (Vec<u8>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(backend(dir.path(), compression));
    let writer = store.create(header(ID, 1)).unwrap();
    append_turns(&writer, 2);
    writer.append(partial_turn(&writer, 3), 50).unwrap();
    let events = writer.with_session(|session| {
        session
            .events()
            .unwrap()
            .iter()
            .map(|event| event.to_json())
            .collect()
    });
    writer.close().unwrap();
    (fs::read(log_path(dir.path(), compression)).unwrap(), events)
}

fn install(root: &Path, compression: Compression, bytes: &[u8]) -> PathBuf {
    let path = log_path(root, compression);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, bytes).unwrap();
    path
}

fn event_json(store: &Store) -> Vec<String> {
    let session = store.load(ID).unwrap();
    session.events().unwrap()[..store.read(ID).unwrap().events.len()]
        .iter()
        .map(|event| event.to_json())
        .collect()
}

#[test]
fn raw_every_truncation_offset_opens_to_the_last_complete_record() {
    let (bytes, events) = small_log(Compression::None);
    let line_ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, &byte)| byte == b'\n')
        .map(|(index, _)| index + 1)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(backend(dir.path(), Compression::None));
    for cut in 0..=bytes.len() {
        install(dir.path(), Compression::None, &bytes[..cut]);
        let complete = line_ends.iter().filter(|&&end| end <= cut).count();
        match store.read(ID) {
            Ok(log) => {
                assert!(complete >= 1, "cut {cut}: header-less log read");
                assert_eq!(log.events.len(), complete - 1, "cut {cut}");
                let at_boundary = line_ends.contains(&cut);
                assert_eq!(log.torn.is_some(), !at_boundary, "cut {cut}");
                assert_eq!(event_json(&store), events[..complete - 1], "cut {cut}");
                let n = complete - 1;
                for from in [0, n.saturating_sub(3), n] {
                    let tail = store.read_from(ID, from as u64).unwrap();
                    assert_eq!(tail.len(), n - from, "cut {cut} from {from}");
                }
            }
            Err(error) => {
                assert_eq!(complete, 0, "cut {cut}: {error}");
                assert!(
                    error.to_string().contains("empty or header-less"),
                    "{error}"
                );
            }
        }
    }
}

#[test]
fn zstd_every_truncation_offset_opens_to_the_last_recoverable_record() {
    let (bytes, events) = small_log(Compression::Zstd);
    let scan = strata_format::frames::scan_frames(&bytes).unwrap();
    assert!(scan.frames.len() >= 4, "expected several frames");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(backend(dir.path(), Compression::Zstd));
    let mut n_by_frames = Vec::new();
    for cut in 0..=bytes.len() {
        install(dir.path(), Compression::Zstd, &bytes[..cut]);
        let complete_frames = scan.frames.iter().filter(|frame| frame.end <= cut).count();
        match store.read(ID) {
            Ok(log) => {
                assert!(
                    complete_frames >= 1,
                    "cut {cut}: log without header frame read"
                );
                let n = log.events.len();
                // Complete frames are always kept; a torn frame adds only complete records.
                assert_eq!(event_json(&store), events[..n], "cut {cut}");
                n_by_frames.push((complete_frames, n));
                // A tail read agrees with the full read, torn frame included.
                for from in [0, n.saturating_sub(3), n] {
                    let tail = store.read_from(ID, from as u64).unwrap();
                    assert_eq!(tail.len(), n - from, "cut {cut} from {from}");
                }
                let at_boundary = scan.frames.iter().any(|frame| frame.end == cut);
                assert_eq!(log.torn.is_some(), !at_boundary, "cut {cut}");
            }
            Err(error) => assert_eq!(complete_frames, 0, "cut {cut}: {error}"),
        }
    }
    // More bytes never mean fewer events.
    assert!(n_by_frames.windows(2).all(|pair| pair[0].1 <= pair[1].1));
}

#[test]
fn an_append_after_a_torn_tail_never_glues_onto_torn_bytes() {
    for compression in [Compression::None, Compression::Zstd] {
        let (bytes, events) = small_log(compression);
        // Cut points spread over the body, plus every one of the last 40 bytes.
        let cuts: Vec<usize> = (bytes.len() / 3..bytes.len())
            .step_by(37)
            .chain(bytes.len().saturating_sub(40)..bytes.len())
            .collect();
        for cut in cuts {
            let dir = tempfile::tempdir().unwrap();
            let path = install(dir.path(), compression, &bytes[..cut]);
            let store = Store::new(backend(dir.path(), compression));
            let before = store.read(ID).unwrap();
            let kept = before.events.len();
            let writer = store.open_write(ID).unwrap();
            append_turns(&writer, 1);
            writer.close().unwrap();
            // The whole file now reads with no torn tail and valid events.
            let after = store.read(ID).unwrap();
            assert!(after.torn.is_none(), "{compression:?} cut {cut}");
            assert_eq!(
                event_json(&store)[..kept],
                events[..kept],
                "{compression:?} cut {cut}"
            );
            store.load(ID).unwrap();
            if compression == Compression::None {
                let text = fs::read_to_string(&path).unwrap();
                assert!(text.ends_with('\n'));
                for line in text.lines() {
                    serde_json::from_str::<serde_json::Value>(line)
                        .unwrap_or_else(|error| panic!("cut {cut}: glued line {line:?}: {error}"));
                }
            }
        }
    }
}

#[test]
fn a_bad_interior_line_is_reported_with_file_line_and_seq_not_skipped() {
    let (mut bytes, _) = small_log(Compression::None);
    // Break the 5th line (seq 3) while keeping it newline-terminated.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    bytes[starts[4]] = b'#';
    let dir = tempfile::tempdir().unwrap();
    let path = install(dir.path(), Compression::None, &bytes);
    let store = Store::new(backend(dir.path(), Compression::None));
    let error = store.read(ID).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "{}: line 5 (seq 3): not a JSON event",
            path.display()
        )),
        "{message}"
    );
    // An open for writing refuses too, and leaves every byte in place.
    let open = store.open_write(ID).unwrap_err();
    assert!(matches!(open, StoreError::Codec(_)), "{open}");
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_seq_gap_in_a_complete_record_is_corruption() {
    let (bytes, _) = small_log(Compression::None);
    let text = String::from_utf8(bytes).unwrap();
    let broken = text.replacen("\"seq\":6,", "\"seq\":60,", 1);
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), Compression::None, broken.as_bytes());
    let store = Store::new(backend(dir.path(), Compression::None));
    let error = store.read(ID).unwrap_err();
    assert!(
        matches!(
            &error,
            StoreError::Corrupt {
                line: Some(8),
                seq: Some(6),
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn a_damaged_complete_zstd_frame_is_corruption() {
    let (mut bytes, _) = small_log(Compression::Zstd);
    let scan = strata_format::frames::scan_frames(&bytes).unwrap();
    let frame = scan.frames[2];
    // Flip a payload byte in the middle of a complete, non-final frame.
    let middle = (frame.start + frame.end) / 2;
    bytes[middle] ^= 0x55;
    let dir = tempfile::tempdir().unwrap();
    let path = install(dir.path(), Compression::Zstd, &bytes);
    let store = Store::new(backend(dir.path(), Compression::Zstd));
    let error = store.read(ID).unwrap_err();
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    assert!(store.open_write(ID).is_err());
    assert_eq!(fs::read(&path).unwrap(), bytes);
}
