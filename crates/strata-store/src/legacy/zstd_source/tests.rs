//! Tests of streaming decode of concatenated zstd frames, torn and corrupt artifacts.

use std::io::Read;

use super::*;
use crate::zstd::{FrameCompressor, DEFAULT_LEVEL};

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
