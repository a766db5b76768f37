//! The frame scanner against real zstd output (persistence §2.5: checksum on, one frame per
//! batch), against hand-built frames covering every header shape, and against truncation at
//! every offset and corrupted headers.

use std::io::Write as _;

use super::*;

/// One frame the way the JSONL store writes it: checksum on, level 3, no dictionary.
fn stream_frame(plaintext: &[u8]) -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_checksum(true).unwrap();
    encoder.write_all(plaintext).unwrap();
    encoder.finish().unwrap()
}

/// One frame from the one-shot API, which also records the content size in the header.
fn bulk_frame(plaintext: &[u8]) -> Vec<u8> {
    let mut compressor = zstd::bulk::Compressor::new(3).unwrap();
    compressor.include_checksum(true).unwrap();
    compressor.compress(plaintext).unwrap()
}

/// Deterministic incompressible bytes (xorshift), so zstd falls back to raw blocks.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn jsonl_batch(first_seq: u64, n_events: u64) -> Vec<u8> {
    let mut batch = Vec::new();
    for seq in first_seq..first_seq + n_events {
        writeln!(
            batch,
            r#"{{"type":"user/message","seq":{seq},"time":1700000000000,"data":{{"text":"hello {seq}"}}}}"#
        )
        .unwrap();
    }
    batch
}

/// A session artifact: header frame, then batch frames of varied shapes, returned with each
/// frame's plaintext.
fn artifact() -> (Vec<u8>, Vec<Vec<u8>>) {
    let plaintexts = vec![
        b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n"
            .to_vec(),
        jsonl_batch(0, 1),
        jsonl_batch(1, 40),
        // More than one 128 KiB block, compressible.
        jsonl_batch(41, 3000),
        // Incompressible: raw blocks.
        noise(150_000),
        // One repeated byte: RLE blocks.
        vec![b'x'; 140_000],
        jsonl_batch(3041, 2),
    ];
    let mut bytes = Vec::new();
    for (idx, plaintext) in plaintexts.iter().enumerate() {
        let frame = if idx % 2 == 0 {
            stream_frame(plaintext)
        } else {
            bulk_frame(plaintext)
        };
        bytes.extend_from_slice(&frame);
    }
    (bytes, plaintexts)
}

fn spans_of(frames: &[Vec<u8>]) -> Vec<FrameSpan> {
    let mut start = 0;
    frames
        .iter()
        .map(|frame| {
            let span = FrameSpan {
                start,
                end: start + frame.len(),
            };
            start = span.end;
            span
        })
        .collect()
}

/// Block types of a frame, read independently of the scanner so tests can show which shapes
/// they cover.
fn block_types(frame: &[u8]) -> Vec<u32> {
    let descriptor = frame[4];
    let single = descriptor & 0x20 != 0;
    let fcs = match descriptor >> 6 {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut pos = 5 + usize::from(!single) + [0, 1, 2, 4][usize::from(descriptor & 3)] + fcs;
    let mut types = Vec::new();
    loop {
        let header = u32::from_le_bytes([frame[pos], frame[pos + 1], frame[pos + 2], 0]);
        let kind = (header >> 1) & 3;
        types.push(kind);
        pos += 3 + if kind == 1 { 1 } else { (header >> 3) as usize };
        if header & 1 == 1 {
            return types;
        }
    }
}

#[test]
fn finds_every_frame_of_a_session_artifact() {
    let (bytes, plaintexts) = artifact();
    let scan = scan_frames(&bytes).unwrap();
    assert_eq!(scan.torn_start, None);
    assert_eq!(scan.frames.len(), plaintexts.len());
    assert_eq!(scan.frames[0].start, 0);
    assert_eq!(scan.frames.last().unwrap().end, bytes.len());
    for (span, plaintext) in scan.frames.iter().zip(&plaintexts) {
        let decoded = zstd::stream::decode_all(&bytes[span.start..span.end]).unwrap();
        assert_eq!(&decoded, plaintext);
    }
    // The artifact exercises every block type the scanner distinguishes.
    let types: Vec<u32> = scan
        .frames
        .iter()
        .flat_map(|span| block_types(&bytes[span.start..span.end]))
        .collect();
    for kind in [0, 1, 2] {
        assert!(
            types.contains(&kind),
            "no block of type {kind} in {types:?}"
        );
    }
}

#[test]
fn empty_input_has_no_frames() {
    assert_eq!(scan_frames(&[]).unwrap(), FrameScan::default());
}

// §2.5: any EOF inside a frame ⇒ tornStart = that frame's start; never corruption.
#[test]
fn every_truncation_is_a_prefix_plus_torn_start() {
    let (bytes, _) = artifact();
    let full = scan_frames(&bytes).unwrap().frames;
    for cut in 0..=bytes.len() {
        let scan =
            scan_frames(&bytes[..cut]).unwrap_or_else(|error| panic!("cut at {cut}: {error}"));
        let complete: Vec<FrameSpan> = full.iter().copied().filter(|f| f.end <= cut).collect();
        let boundary = complete.last().map_or(0, |f| f.end);
        assert_eq!(scan.frames, complete, "cut at {cut}");
        let expected_torn = (cut > boundary).then_some(boundary);
        assert_eq!(scan.torn_start, expected_torn, "cut at {cut}");
    }
}

/// Hand-built frames covering header shapes that the zstd library picks only in some cases.
fn handmade_frames() -> Vec<(Vec<u8>, Vec<u8>)> {
    let magic = FRAME_MAGIC.to_le_bytes();
    let raw_last = |len: usize| (((len as u32) << 3) | 1).to_le_bytes()[..3].to_vec();
    let rle_last = |len: usize| (((len as u32) << 3) | 0b011).to_le_bytes()[..3].to_vec();
    let mut frames = Vec::new();

    // Single segment, 1-byte content size, one raw block.
    let text = b"hello\n".to_vec();
    frames.push((
        [
            &magic[..],
            &[0x20, text.len() as u8],
            &raw_last(text.len()),
            &text,
        ]
        .concat(),
        text.clone(),
    ));
    // Single segment, one RLE block.
    frames.push((
        [&magic[..], &[0x20, 5], &rle_last(5), b"a"].concat(),
        b"aaaaa".to_vec(),
    ));
    // Window descriptor, no content size, an empty last block.
    frames.push((
        [&magic[..], &[0x00, 0x00], &raw_last(0)].concat(),
        Vec::new(),
    ));
    // Two blocks: a raw block that is not last, then a last RLE block.
    let mut first_block = ((3u32 << 3) & !1).to_le_bytes()[..3].to_vec();
    first_block.extend_from_slice(b"abc");
    frames.push((
        [&magic[..], &[0x00, 0x00], &first_block, &rle_last(2), b"d"].concat(),
        b"abcdd".to_vec(),
    ));
    // Dictionary id fields of 1, 2 and 4 bytes (id 0 = no dictionary).
    for (code, len) in [(1u8, 1usize), (2, 2), (3, 4)] {
        frames.push((
            [
                &magic[..],
                &[code, 0x00],
                &vec![0; len],
                &raw_last(2),
                b"ok",
            ]
            .concat(),
            b"ok".to_vec(),
        ));
    }
    // Content size fields of 2, 4 and 8 bytes (the 2-byte form stores size − 256).
    let long = vec![b'z'; 300];
    frames.push((
        [
            &magic[..],
            &[0x40, 0x00],
            &(300u16 - 256).to_le_bytes(),
            &raw_last(300),
            &long,
        ]
        .concat(),
        long.clone(),
    ));
    frames.push((
        [
            &magic[..],
            &[0x80, 0x00],
            &300u32.to_le_bytes(),
            &raw_last(300),
            &long,
        ]
        .concat(),
        long.clone(),
    ));
    frames.push((
        [
            &magic[..],
            &[0xC0, 0x00],
            &300u64.to_le_bytes(),
            &raw_last(300),
            &long,
        ]
        .concat(),
        long.clone(),
    ));
    // Checksum flag: borrow the checksum zstd computed for the same content.
    let reference = stream_frame(b"hello\n");
    let checksum = &reference[reference.len() - 4..];
    frames.push((
        [&magic[..], &[0x24, 6], &raw_last(6), b"hello\n", checksum].concat(),
        b"hello\n".to_vec(),
    ));
    frames
}

#[test]
fn handmade_frames_are_valid_zstd() {
    // Guards the test data itself: zstd must accept every hand-built frame.
    for (frame, plaintext) in handmade_frames() {
        assert_eq!(zstd::stream::decode_all(&frame[..]).unwrap(), plaintext);
    }
}

#[test]
fn every_header_shape_scans_and_truncates_cleanly() {
    let frames: Vec<Vec<u8>> = handmade_frames().into_iter().map(|(f, _)| f).collect();
    let bytes = frames.concat();
    let spans = spans_of(&frames);
    assert_eq!(
        scan_frames(&bytes).unwrap(),
        FrameScan {
            frames: spans.clone(),
            torn_start: None
        }
    );
    for cut in 0..=bytes.len() {
        let scan = scan_frames(&bytes[..cut]).unwrap();
        let complete: Vec<FrameSpan> = spans.iter().copied().filter(|f| f.end <= cut).collect();
        let boundary = complete.last().map_or(0, |f| f.end);
        assert_eq!(scan.frames, complete, "cut at {cut}");
        assert_eq!(scan.torn_start, (cut > boundary).then_some(boundary));
    }
}

// §2.5 rule 2: a bad magic is corruption, at the first frame or after complete ones.
#[test]
fn flipped_magic_is_corruption() {
    let (bytes, _) = artifact();
    let spans = scan_frames(&bytes).unwrap().frames;
    for span in [spans[0], spans[2], *spans.last().unwrap()] {
        let mut corrupt = bytes.clone();
        corrupt[span.start] ^= 0xFF;
        let error = scan_frames(&corrupt).unwrap_err();
        assert_eq!(
            error,
            FrameError::BadMagic {
                offset: span.start,
                found: 0xFD2F_B5D7
            }
        );
        assert!(error
            .to_string()
            .contains(&format!("offset {}", span.start)));
    }
}

#[test]
fn bad_magic_wins_over_truncation_once_four_bytes_exist() {
    let (bytes, _) = artifact();
    let first = scan_frames(&bytes).unwrap().frames[0];
    let mut corrupt = bytes[..first.end].to_vec();
    corrupt.extend_from_slice(b"{\"ty");
    assert!(matches!(
        scan_frames(&corrupt),
        Err(FrameError::BadMagic { offset, .. }) if offset == first.end
    ));
    // Fewer than four bytes cannot be judged: torn, by rule 1.
    corrupt.truncate(first.end + 3);
    assert_eq!(scan_frames(&corrupt).unwrap().torn_start, Some(first.end));
}

// §2.5 rule 2: skippable frames are corruption too.
#[test]
fn skippable_frames_are_corruption() {
    for nibble in 0..16u32 {
        let magic = 0x184D_2A50 | nibble;
        let mut bytes = stream_frame(b"{}\n");
        let start = bytes.len();
        bytes.extend_from_slice(&magic.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            scan_frames(&bytes),
            Err(FrameError::SkippableFrame {
                offset: start,
                found: magic
            })
        );
    }
}

// §2.5 rule 3: reserved descriptor bits.
#[test]
fn reserved_descriptor_bits_are_corruption() {
    for bit in [0x08u8, 0x10] {
        let mut bytes = stream_frame(b"{}\n");
        bytes[4] |= bit;
        assert_eq!(
            scan_frames(&bytes),
            Err(FrameError::ReservedBits {
                frame_start: 0,
                offset: 4,
                descriptor: bytes[4]
            })
        );
    }
}

// §2.5 rule 4: reserved block type.
#[test]
fn reserved_block_type_is_corruption() {
    let header = stream_frame(b"{}\n");
    let (frame, _) = handmade_frames().remove(0);
    let mut bytes = [&header[..], &frame].concat();
    // Handmade frame 0: magic, descriptor, 1-byte content size, then the block header.
    let block = header.len() + 6;
    bytes[block] |= 0b110;
    assert_eq!(
        scan_frames(&bytes),
        Err(FrameError::ReservedBlockType {
            frame_start: header.len(),
            offset: block
        })
    );
}
