//! A body read through mapped windows yields what the line reader yields: the same rows, the
//! same first error (line, seq, message), the same torn tail and progress, on the reading
//! thread and through the decode pool.

use std::path::Path;

use crate::codec::encode_header_line;
use crate::decode_pool::tests::{log_bytes, write};
use crate::decode_pool::DecodePool;
use crate::jsonl::JsonlRows;
use crate::store::{EventRows, TornInfo};
use strata_core::RawEvent;

/// What a read of a log shows: its rows (values or error messages), torn tail and progress.
type Read = (
    Vec<Result<serde_json::Value, String>>,
    Option<TornInfo>,
    Option<(u64, u64)>,
);

fn collect(
    rows: &mut dyn Iterator<Item = Result<RawEvent, crate::StoreError>>,
) -> Vec<Result<serde_json::Value, String>> {
    rows.map(|row| {
        row.as_ref()
            .map(RawEvent::to_value)
            .map_err(ToString::to_string)
    })
    .collect()
}

/// The read by the line reader (the reference), or through mapped windows on the reading
/// thread, or through mapped windows in the decode pool; `Err` when the log does not open.
fn read(path: &Path, max_record_len: usize, how: How) -> Result<Read, String> {
    let mapped = how != How::Lines;
    let mut rows =
        JsonlRows::open(path, false, max_record_len, mapped).map_err(|e| e.to_string())?;
    if how == How::Pool {
        let mut pool = DecodePool::new(rows);
        let read = collect(&mut pool);
        return Ok((read, pool.torn(), pool.progress()));
    }
    let read = collect(&mut rows);
    Ok((read, rows.torn(), EventRows::progress(&rows)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    Lines,
    Mapped,
    Pool,
}

/// Whether a log opens with its body mapped (else it is left to the line reader).
fn opens_mapped(path: &Path, max_record_len: usize) -> bool {
    JsonlRows::open(path, false, max_record_len, true).is_ok_and(|rows| rows.is_mapped())
}

fn assert_same(path: &Path, max_record_len: usize) -> Result<Read, String> {
    let lines = read(path, max_record_len, How::Lines);
    if lines.is_ok() {
        assert!(
            opens_mapped(path, max_record_len),
            "{} opens mapped",
            path.display()
        );
    }
    let mapped = read(path, max_record_len, How::Mapped);
    assert_eq!(mapped, lines, "mapped read of {}", path.display());
    // The pool's progress runs ahead of its rows (the reader's, when it handed out the batch),
    // so only its rows and torn tail are compared.
    let pool = read(path, max_record_len, How::Pool);
    let rows_and_tail =
        |read: &Result<Read, String>| read.clone().map(|(rows, torn, _)| (rows, torn));
    assert_eq!(
        rows_and_tail(&pool),
        rows_and_tail(&lines),
        "pooled read of {}",
        path.display()
    );
    lines
}

fn header_line() -> Vec<u8> {
    let header = strata_core::SessionHeader::fresh("mapped", 1).unwrap();
    let mut bytes = Vec::new();
    encode_header_line(&header, &mut bytes).unwrap();
    bytes
}

/// A minimal event line at `seq` whose payload holds `text_len` bytes of text.
fn line(seq: u64, text_len: usize) -> Vec<u8> {
    format!(
        "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":1,\"data\":{{\"content\":\"{}\"}}}}\n",
        "a".repeat(text_len)
    )
    .into_bytes()
}

#[test]
fn every_prefix_of_a_log_reads_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = log_bytes(24);
    // Every cut in the header, the first records and the last ones; a sample between.
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|&(_, &byte)| byte == b'\n')
        .map(|(index, _)| index + 1)
        .collect();
    let (head, tail) = (ends[2], ends[ends.len() - 3]);
    let (mut n_torn, mut n_read) = (0, 0);
    for len in (0..=bytes.len()).filter(|&len| len <= head || len >= tail || len % 17 == 0) {
        let path = write(dir.path(), &bytes[..len]);
        if let Ok((_, torn, _)) = assert_same(&path, crate::lines::DEFAULT_MAX_RECORD_LEN) {
            n_torn += usize::from(torn.is_some());
            n_read += 1;
        }
    }
    assert!(
        n_read > 100 && n_torn > n_read / 2,
        "{n_torn} of {n_read} end torn"
    );
}

#[test]
fn records_longer_than_a_window_read_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header_line();
    // Around and across window ends: records of 5 and 9 MiB (longer than a window, and than
    // twice what is left of one), and small ones between.
    let sizes = [100, 5 << 20, 10, 3 << 20, 9 << 20, 50, 4 << 20, 1];
    for (seq, size) in sizes.into_iter().enumerate() {
        bytes.extend_from_slice(&line(seq as u64, size));
    }
    let path = write(dir.path(), &bytes);
    let (rows, torn, _) = assert_same(&path, crate::lines::DEFAULT_MAX_RECORD_LEN).unwrap();
    assert_eq!(rows.len(), sizes.len());
    assert!(rows.iter().all(Result::is_ok));
    assert_eq!(torn, None);
}

#[test]
fn bad_and_oversized_records_are_reported_alike() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 1_000;
    let good = |seq| line(seq, 100);
    let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("header only", vec![]),
        ("a torn tail only", vec![b"{\"type\":\"user".to_vec()]),
        ("a blank line", vec![good(0), b"\n".to_vec(), good(1)]),
        ("a CRLF line", vec![good(0), b"{\"type\":1}\r\n".to_vec()]),
        (
            "not JSON",
            vec![good(0), good(1), b"garbage\n".to_vec(), good(3)],
        ),
        ("a seq gap", vec![good(0), good(2)]),
        (
            "an oversized record",
            vec![good(0), line(1, 2 * limit), good(2)],
        ),
        (
            "an oversized torn tail",
            vec![good(0), vec![b'x'; 2 * limit]],
        ),
        ("a torn tail at the limit", vec![good(0), vec![b'x'; limit]]),
        ("a record at the limit", vec![good(0), line(1, limit - 62)]),
        (
            "a record over the limit",
            vec![good(0), line(1, limit - 61)],
        ),
    ];
    assert_eq!(
        line(1, limit - 62).len(),
        limit + 1,
        "a record at the limit, and its newline"
    );
    for (name, records) in cases {
        let mut bytes = header_line();
        for record in records {
            bytes.extend_from_slice(&record);
        }
        let path = write(dir.path(), &bytes);
        let (rows, _, _) = if name == "an oversized torn tail" {
            // Left to the line reader, which reports it.
            assert!(
                !opens_mapped(&path, limit),
                "{name}: left to the line reader"
            );
            read(&path, limit, How::Lines).unwrap()
        } else {
            assert_same(&path, limit).unwrap()
        };
        let error = rows.iter().find_map(|row| row.as_ref().err());
        match name {
            "header only"
            | "a torn tail only"
            | "a torn tail at the limit"
            | "a record at the limit" => assert_eq!(error, None, "{name}"),
            _ => assert!(
                error.is_some_and(|error| error.contains("line ")),
                "{name}: {error:?}"
            ),
        }
    }
}
