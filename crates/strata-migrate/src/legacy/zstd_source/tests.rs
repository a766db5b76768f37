//! Tests of streaming decode of concatenated zstd frames, torn and corrupt artifacts.

use std::io::Read;

use super::*;
use strata_format::zstd_frame::{FrameCompressor, DEFAULT_LEVEL};

fn artifact(frames: &[&[u8]]) -> Vec<u8> {
    let mut compressor = FrameCompressor::new(DEFAULT_LEVEL).unwrap();
    frames
        .iter()
        .flat_map(|frame| compressor.frame(frame).unwrap())
        .collect()
}

fn read_all(bytes: &[u8]) -> (io::Result<Vec<u8>>, bool) {
    let mut source = ZstdSource::new(io::BufReader::with_capacity(7, bytes)).unwrap();
    let mut out = Vec::new();
    let result = source.read_to_end(&mut out).map(|_| out);
    (result, source.is_torn())
}

#[test]
fn concatenated_frames_stream_as_one_plaintext() {
    let bytes = artifact(&[b"header\n", b"a\nb\n", b"c\n"]);
    let (plain, torn) = read_all(&bytes);
    assert_eq!(plain.unwrap(), b"header\na\nb\nc\n");
    assert!(!torn);
}

#[test]
fn a_cut_final_frame_is_torn_not_corrupt() {
    let bytes = artifact(&[b"header\n", b"a\nb\n"]);
    let first_len = artifact(&[b"header\n"]).len();
    for cut in first_len + 1..bytes.len() {
        let (plain, torn) = read_all(&bytes[..cut]);
        let plain = plain.unwrap();
        assert!(torn, "cut at {cut}");
        assert!(plain.starts_with(b"header\n"));
    }
}

#[test]
fn garbage_and_torn_records_in_complete_frames_are_corrupt() {
    let (result, _) = read_all(b"not zstd at all\n");
    assert_eq!(result.unwrap_err().kind(), io::ErrorKind::InvalidData);
    let bytes = artifact(&[b"header\n", b"no newline"]);
    let (result, _) = read_all(&bytes);
    assert!(result
        .unwrap_err()
        .to_string()
        .contains("torn JSONL record"));
}

fn read_any(bytes: &[u8]) -> (io::Result<Vec<u8>>, bool) {
    let mut source = ZstdSource::any_framing(io::BufReader::with_capacity(7, bytes)).unwrap();
    let mut out = Vec::new();
    let result = source.read_to_end(&mut out).map(|_| out);
    (result, source.is_torn())
}

/// A skippable frame holding `data`.
fn skippable(data: &[u8]) -> Vec<u8> {
    let mut frame = 0x184D_2A5F_u32.to_le_bytes().to_vec();
    frame.extend((data.len() as u32).to_le_bytes());
    frame.extend_from_slice(data);
    frame
}

#[test]
fn any_framing_reads_one_frame_mid_line_cuts_and_skippable_frames() {
    let plain = b"header\nline one\nline two\n".repeat(50);
    let one = zstd::bulk::compress(&plain, 3).unwrap();
    let pieces = [
        artifact(&[&plain[..3]]),
        artifact(&[&plain[3..100]]),
        skippable(b"index"),
        artifact(&[&plain[100..]]),
    ];
    let boundaries: Vec<usize> = (0..=pieces.len())
        .map(|n| pieces[..n].iter().map(Vec::len).sum())
        .collect();
    let cut = pieces.concat();
    for bytes in [&one, &cut] {
        let (result, torn) = read_any(bytes);
        assert_eq!(result.unwrap(), plain);
        assert!(!torn);
    }
    // dsh's framing still refuses both the mid-line cut and the skippable frame.
    assert!(read_all(&cut).0.is_err());
    // Every truncation is a torn prefix, never an error or a panic.
    for (bytes, boundaries) in [(&one, &vec![0]), (&cut, &boundaries)] {
        for end in 0..bytes.len() {
            let (result, torn) = read_any(&bytes[..end]);
            let served = result.unwrap_or_else(|error| panic!("cut {end}: {error}"));
            assert!(plain.starts_with(&served), "cut {end}");
            assert_eq!(torn, !boundaries.contains(&end), "cut {end}");
        }
    }
    // Damage is an error naming what broke, or (a frame made to look longer) a torn prefix.
    for at in 0..cut.len() {
        let mut damaged = cut.clone();
        damaged[at] ^= 0x5a;
        match read_any(&damaged) {
            (Ok(served), _) => assert!(plain.starts_with(&served), "at {at}"),
            (Err(error), _) => assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}"),
        }
    }
}
