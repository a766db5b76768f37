//! [`ZstdStream`] under [`Framing::Any`], the reading commands' framing: a log compressed any
//! way zstd allows streams as its plaintext, and a truncated or damaged one ends torn or with a
//! clear error, never a panic, while [`Framing::Dsh`] (a writer's) still refuses what dsh never
//! writes.

use std::io::{self, Read};

use super::{Framing, ZstdStream};
use strata_format::zstd_frame::FrameCompressor;

/// A few hundred JSONL records, as the plaintext of a log.
fn plaintext() -> Vec<u8> {
    let mut plain = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n".to_vec();
    for seq in 0..300 {
        plain.extend_from_slice(
            format!("{{\"type\":\"user/message\",\"seq\":{seq},\"data\":{{\"text\":\"hello {seq}\"}}}}\n")
                .as_bytes(),
        );
    }
    plain
}

/// `plain` cut at `cuts` (plaintext offsets), each piece one checksummed frame.
fn frames_at(plain: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut compressor = FrameCompressor::new(3).unwrap();
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&plain.len())) {
        out.extend(compressor.frame(&plain[start..cut]).unwrap());
        start = cut;
    }
    out
}

/// A skippable frame holding `data`.
fn skippable(data: &[u8]) -> Vec<u8> {
    let mut frame = 0x184D_2A53_u32.to_le_bytes().to_vec();
    frame.extend((data.len() as u32).to_le_bytes());
    frame.extend_from_slice(data);
    frame
}

/// What a stream over `bytes` serves, how it ends (`Ok(torn)` or the error), read in `chunk`
/// byte reads.
fn read(bytes: &[u8], framing: Framing, chunk: usize) -> (Vec<u8>, io::Result<bool>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl.zst");
    std::fs::write(&path, bytes).unwrap();
    let mut stream =
        ZstdStream::with_framing(std::fs::File::open(&path).unwrap(), framing).unwrap();
    let mut plain = Vec::new();
    let mut buf = vec![0; chunk];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (plain, Ok(stream.torn().is_some())),
            Ok(n) => plain.extend_from_slice(&buf[..n]),
            Err(error) => return (plain, Err(error)),
        }
    }
}

#[test]
fn any_framing_streams_one_frame_frames_cut_mid_line_and_skippable_frames() {
    let plain = plaintext();
    let one_frame = zstd::bulk::compress(&plain, 19).unwrap();
    let mid_line = frames_at(&plain, &[10, 11, 500, 4097]);
    let with_skippable = [
        skippable(b"pzstd-style index"),
        frames_at(&plain[..700], &[3]),
        skippable(b""),
        frames_at(&plain[700..], &[1]),
    ]
    .concat();
    for bytes in [&one_frame, &mid_line, &with_skippable] {
        for chunk in [1, 7, 64 * 1024] {
            let (served, end) = read(bytes, Framing::Any, chunk);
            assert_eq!(served, plain, "chunk {chunk}");
            assert!(!end.unwrap(), "not torn");
        }
    }
    // A writer's framing refuses a frame cut mid-line and a skippable frame, naming why.
    let (_, end) = read(&mid_line, Framing::Dsh, 4096);
    let error = end.unwrap_err().to_string();
    assert!(error.contains("torn JSONL record"), "{error}");
    assert!(error.contains("strata convert"), "{error}");
    let (_, end) = read(&with_skippable, Framing::Dsh, 4096);
    assert!(end.unwrap_err().to_string().contains("skippable"));
}

#[test]
fn any_framing_on_every_truncation_serves_a_prefix_and_ends_torn() {
    let plain = plaintext();
    for bytes in [
        zstd::bulk::compress(&plain, 3).unwrap(),
        frames_at(&plain, &[5, 2000, 2001]),
        [
            frames_at(&plain[..100], &[]),
            skippable(b"12345678"),
            frames_at(&plain[100..], &[]),
        ]
        .concat(),
    ] {
        for cut in 0..bytes.len() {
            let (served, end) = read(&bytes[..cut], Framing::Any, 4096);
            assert!(plain.starts_with(&served), "cut {cut}: not a prefix");
            match end {
                Ok(torn) => assert!(torn || cut == 0 || served.len() < plain.len(), "cut {cut}"),
                Err(error) => panic!("cut {cut}: a truncation is torn, not {error}"),
            }
        }
    }
}

#[test]
fn any_framing_on_damaged_bytes_errs_clearly_or_serves_a_prefix() {
    let plain = plaintext();
    let bytes = frames_at(&plain, &[40, 3000]);
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            let (served, end) = read(&damaged, Framing::Any, 4096);
            match end {
                // A flip that makes a frame look longer than the file reads as a torn end.
                Ok(_) => assert!(plain.starts_with(&served), "flip {flip:#x} at {at}"),
                Err(error) => {
                    assert_eq!(error.kind(), io::ErrorKind::InvalidData, "at {at}: {error}");
                    assert!(error.to_string().contains("zstd"), "at {at}: {error}");
                }
            }
        }
    }
}

#[test]
fn a_torn_frame_counts_the_records_it_completed() {
    // Several 128 KiB blocks, so a cut in the last one leaves whole blocks to decode.
    let plain = plaintext().repeat(30);
    let bytes = zstd::bulk::compress(&plain, 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.zst");
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let mut stream =
        ZstdStream::with_framing(std::fs::File::open(&path).unwrap(), Framing::Any).unwrap();
    let mut served = Vec::new();
    stream.read_to_end(&mut served).unwrap();
    let torn = stream.torn().expect("torn");
    assert_eq!(torn.start, 0);
    assert_eq!(
        stream.torn_frame_lines(),
        served.iter().filter(|&&byte| byte == b'\n').count() as u64
    );
    assert!(stream.torn_frame_lines() > 0 && served.len() < plain.len());
}

#[test]
fn a_file_read_for_writing_must_be_in_dsh_framing() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sample.v3.jsonl"
    );
    let plain = std::fs::read(sample).unwrap();
    let header_end = plain.iter().position(|&byte| byte == b'\n').unwrap() + 1;
    let dir = tempfile::tempdir().unwrap();
    let boundary = 3001
        + plain[3000..]
            .iter()
            .position(|&byte| byte == b'\n')
            .unwrap();
    let dsh = dir.path().join("dsh.v3.jsonl.zstd");
    std::fs::write(&dsh, frames_at(&plain, &[header_end, boundary])).unwrap();
    let one_frame = dir.path().join("one.v3.jsonl.zst");
    std::fs::write(&one_frame, zstd::bulk::compress(&plain, 3).unwrap()).unwrap();
    let mid_line = dir.path().join("mid.v3.jsonl.zst");
    std::fs::write(&mid_line, frames_at(&plain, &[header_end, boundary - 5])).unwrap();
    let n_events = |path: &std::path::Path, writing: bool| {
        let stream = if writing {
            crate::jsonl::scan_log_for_writing(path)
        } else {
            crate::scan_log(path)
        };
        stream
            .and_then(|stream| stream.collect_log())
            .map(|log| log.events.len())
    };
    for path in [&dsh, &one_frame, &mid_line] {
        assert_eq!(n_events(path, false).unwrap(), 132, "{}", path.display());
    }
    assert_eq!(n_events(&dsh, true).unwrap(), 132);
    let error = n_events(&one_frame, true).unwrap_err();
    assert!(
        matches!(error, crate::StoreError::ForeignFraming { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("strata convert"), "{error}");
    let error = n_events(&mid_line, true).unwrap_err().to_string();
    assert!(error.contains("torn JSONL record"), "{error}");
}
