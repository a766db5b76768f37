//! The tail of a log: the last complete records of a raw or zstd file, read backwards without
//! reading the whole log (what a lazy write-open checks its checkpoint against).

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use strata_core::json::non_negative_safe_integer;
use strata_core::RawEvent;

use super::read_all;
use crate::error::StoreError;
use strata_format::frames::{scan_frames, FrameScan};
use strata_format::zstd_frame::recoverable_prefix;

/// The events with seq `from_seq..` of a raw log, read backwards from its end so a tail read
/// costs O(tail), not O(file). Lines are validated as a contiguous run ending at the last
/// complete record.
pub(crate) fn read_tail_raw(
    path: &Path,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Vec<RawEvent>, StoreError> {
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let len = file
        .metadata()
        .map_err(|source| StoreError::io("stat", path, source))?
        .len();
    // Collect complete lines from the end, newest first, until one has seq < from_seq.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut end = len; // exclusive end of the unread region
    let mut pending: Vec<u8> = Vec::new(); // bytes after the last newline seen (reversed order)
    let mut seen_newline = false;
    let chunk_len: u64 = 64 * 1024;
    let mut chunk = vec![0u8; chunk_len as usize];
    let mut done = false;
    while end > 0 && !done {
        let start = end.saturating_sub(chunk_len);
        let buf = &mut chunk[..(end - start) as usize];
        file.read_exact_at(buf, start)
            .map_err(|source| StoreError::io("read", path, source))?;
        for index in (0..buf.len()).rev() {
            let byte = buf[index];
            if byte != b'\n' {
                pending.push(byte);
                if pending.len() > max_record_len {
                    return Err(StoreError::Corrupt {
                        location: path.display().to_string(),
                        line: None,
                        seq: None,
                        detail: format!("a record near offset {} is longer than the {max_record_len}-byte limit", start + index as u64),
                    });
                }
                continue;
            }
            if seen_newline {
                // `pending` holds one complete line, reversed.
                pending.reverse();
                let line = std::mem::take(&mut pending);
                let seq = line_seq(&line);
                if seq.is_some_and(|seq| seq < from_seq) {
                    done = true;
                    break;
                }
                lines.push(line);
            } else {
                // Bytes after the final newline are a torn tail: ignore them.
                pending.clear();
                seen_newline = true;
            }
        }
        end = start;
    }
    // If the scan reached offset 0, `pending` holds the header line, which is not an event.
    lines.reverse();
    let mut events = Vec::with_capacity(lines.len());
    for (expected, line) in (from_seq..).zip(lines) {
        let location = strata_format::codec::Location {
            file: Some(path.to_path_buf()),
            line: 0,
            seq: Some(expected),
        };
        let event = strata_format::codec::decode_event_line(&line, &location)?;
        let seq = event.seq_number();
        if seq != Some(expected) {
            return Err(StoreError::Corrupt {
                location: path.display().to_string(),
                line: None,
                seq: Some(expected),
                detail: format!(
                    "seq out of order in the log tail: expected {expected}, found {}",
                    event
                        .seq_value()
                        .map_or_else(|| "none".to_owned(), |value| value.to_string())
                ),
            });
        }
        events.push(event);
    }
    Ok(events)
}

/// The seq of a complete line, read cheaply when the line starts like a strata/dsh event.
fn line_seq(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct SeqOnly {
        seq: Option<serde_json::Value>,
    }
    let parsed: SeqOnly = serde_json::from_slice(line).ok()?;
    parsed.seq.as_ref().and_then(non_negative_safe_integer)
}

/// The events with seq `from_seq..` of a zstd log, read from its end so a tail read costs
/// O(tail): the last frames are found by searching backwards for the frame magic and accepting
/// a candidate only when the frames from it chain structurally to the end of the file; their
/// plaintext is checksummed on decompression and their seqs must run contiguously to
/// `from_seq`. Anything else (no such chain near the end, a frame that does not decompress,
/// seqs that do not fit) falls back to the whole-file walk, which is the authority.
pub(crate) fn read_tail_zstd(
    path: &Path,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Vec<RawEvent>, StoreError> {
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let len = file
        .metadata()
        .map_err(|source| StoreError::io("stat", path, source))?
        .len();
    let mut window: u64 = 16 * 1024;
    // `region` holds the file's bytes from `region_start` to its end.
    let mut region_start = len;
    let mut region: Vec<u8> = Vec::new();
    while region_start > 0 && window < len / 2 {
        let start = region_start.saturating_sub(window);
        let mut earlier = vec![0; usize::try_from(region_start - start).unwrap_or(0)];
        file.read_exact_at(&mut earlier, start)
            .map_err(|source| StoreError::io("read", path, source))?;
        earlier.extend_from_slice(&region);
        region = earlier;
        region_start = start;
        window = window.saturating_mul(2);
        // The earliest magic from which the frames chain to the end of the file.
        let candidate = region
            .windows(4)
            .enumerate()
            .filter(|(_, bytes)| *bytes == MAGIC)
            .map(|(index, _)| index)
            .find(|&index| scan_frames(&region[index..]).is_ok_and(|scan| !scan.frames.is_empty()));
        let Some(candidate) = candidate else {
            continue;
        };
        let header_at_start = region_start == 0 && candidate == 0;
        if let Ok(Some(events)) = tail_of_frames(
            path,
            &region[candidate..],
            header_at_start,
            from_seq,
            max_record_len,
        ) {
            return Ok(events);
        }
    }
    let bytes = read_all(path, file)?;
    tail_of_frames(path, &bytes, true, from_seq, max_record_len)
        .map(|events| events.unwrap_or_default())
}

/// The events with seq `from_seq..` in the frames of `bytes` (a whole zstd log when
/// `header_at_start`, else a run of event frames ending at the end of the log): frames are
/// decompressed from the end until one starts at or before `from_seq`. `None` when the run does
/// not reach back that far (only possible without the header).
fn tail_of_frames(
    path: &Path,
    bytes: &[u8],
    header_at_start: bool,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Option<Vec<RawEvent>>, StoreError> {
    let scan =
        scan_frames(bytes).map_err(|error| tail_corrupt(path, from_seq, error.to_string()))?;
    let mut decoder = zstd::stream::raw::Decoder::new()
        .map_err(|source| StoreError::io("decode", path, source))?;
    let plaintexts = frames_back_to(path, bytes, &scan, header_at_start, from_seq, &mut decoder)?;
    if !header_at_start && !reaches(&plaintexts, from_seq) {
        return Ok(None);
    }
    let events = decode_tail(path, &plaintexts, from_seq, max_record_len)?;
    if let Some(first) = events.first().and_then(|event| event.seq_value()) {
        if non_negative_safe_integer(&first) != Some(from_seq) {
            return Err(tail_corrupt(
                path,
                from_seq,
                format!("log tail starts at seq {first}, after the requested {from_seq}"),
            ));
        }
    }
    Ok(Some(events))
}

/// A log tail that cannot be read as it claims to be.
fn tail_corrupt(path: &Path, from_seq: u64, detail: String) -> StoreError {
    StoreError::Corrupt {
        location: path.display().to_string(),
        line: None,
        seq: Some(from_seq),
        detail,
    }
}

/// Whether the oldest plaintext gathered (the last, gathering newest first) starts at or
/// before `from_seq`.
fn reaches(plaintexts: &[Vec<u8>], from_seq: u64) -> bool {
    plaintexts
        .last()
        .and_then(|plain| plain.split(|&byte| byte == b'\n').next())
        .and_then(line_seq)
        .is_some_and(|first| first <= from_seq)
}

/// The plaintexts of the frames that hold seqs `from_seq..`, newest first: a torn last frame's
/// complete records, then whole frames from the end back until one starts at or before
/// `from_seq` (frame 0 of a whole log is the header and is never read).
fn frames_back_to(
    path: &Path,
    bytes: &[u8],
    scan: &FrameScan,
    header_at_start: bool,
    from_seq: u64,
    decoder: &mut zstd::stream::raw::Decoder<'static>,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut plaintexts: Vec<Vec<u8>> = Vec::new();
    if let Some(start) = scan.torn_start {
        let mut plain = Vec::new();
        if strata_format::zstd_frame::decompress(decoder, &bytes[start..], &mut plain, false)
            .is_err()
        {
            plain.clear();
        }
        let keep = recoverable_prefix(&plain).len();
        plain.truncate(keep);
        if !plain.is_empty() {
            plaintexts.push(plain);
        }
    }
    for frame in scan.frames.iter().skip(usize::from(header_at_start)).rev() {
        if reaches(&plaintexts, from_seq) {
            break;
        }
        let mut plain = Vec::new();
        strata_format::zstd_frame::decompress(
            decoder,
            &bytes[frame.start..frame.end],
            &mut plain,
            true,
        )
        .map_err(|error| {
            tail_corrupt(
                path,
                from_seq,
                format!(
                    "zstd frame at offset {} does not decompress: {error}",
                    frame.start
                ),
            )
        })?;
        if plain.last().is_some_and(|&byte| byte != b'\n') {
            return Err(tail_corrupt(
                path,
                from_seq,
                format!(
                    "complete zstd frame at offset {} contains a torn JSONL record",
                    frame.start
                ),
            ));
        }
        plaintexts.push(plain);
    }
    Ok(plaintexts)
}

/// Decodes the records with seq `from_seq..` of `plaintexts` (newest first), checking that
/// their seqs are consecutive.
fn decode_tail(
    path: &Path,
    plaintexts: &[Vec<u8>],
    from_seq: u64,
    max_record_len: usize,
) -> Result<Vec<RawEvent>, StoreError> {
    let corrupt = |detail: String| tail_corrupt(path, from_seq, detail);
    let mut events = Vec::new();
    let mut expected: Option<u64> = None;
    for plain in plaintexts.iter().rev() {
        // Records in a frame have consecutive seqs: skip the ones before `from_seq` unparsed.
        let first_seq = plain.split(|&byte| byte == b'\n').next().and_then(line_seq);
        let n_skip = first_seq.map_or(0, |first| from_seq.saturating_sub(first));
        for (line_idx, line) in plain.split(|&byte| byte == b'\n').enumerate() {
            if line.is_empty() || (line_idx as u64) < n_skip {
                continue;
            }
            if line.len() > max_record_len {
                return Err(corrupt(format!(
                    "a record is longer than the {max_record_len}-byte limit"
                )));
            }
            let location = strata_format::codec::Location {
                file: Some(path.to_path_buf()),
                line: 0,
                seq: expected,
            };
            let event = strata_format::codec::decode_event_line(line, &location)?;
            let Some(seq) = event.seq_number() else {
                return Err(corrupt("record without a seq in the log tail".into()));
            };
            if expected.is_some_and(|want| want != seq) {
                return Err(corrupt(format!(
                    "seq out of order in the log tail: expected {}, found {seq}",
                    expected.unwrap_or_default()
                )));
            }
            expected = Some(seq + 1);
            if seq >= from_seq {
                events.push(event);
            }
        }
    }
    Ok(events)
}
