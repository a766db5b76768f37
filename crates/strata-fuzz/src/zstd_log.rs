//! zstd frames: a `.zstd` V3 log read the way a store reads it (dsh's framing) or the way the
//! reading commands read a file (any framing), and the frame scanner.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_format::frames::scan_frames;
use strata_format::zstd_frame::{decompress as decompress_frame, recoverable_prefix};
use strata_store::read_log;

/// The input as a log file. A first byte with the low bit clear: the rest is the file as it
/// is (frames, their checksums and any damage are the fuzzer's). Set: the rest is plaintext,
/// cut at each `0x1e` byte into pieces that become one checksummed frame each, so mutations
/// reach the reader's frame and line logic past the checksums; bit 1 then tears the last
/// frame in half, as a crash mid-append leaves it.
fn file_bytes(data: &[u8]) -> Vec<u8> {
    thread_local! {
        /// One compressor per thread: a zstd context is large to create and reset per frame.
        static ENCODER: RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { RefCell::new(None) };
    }
    let (first, rest) = data.split_first().unwrap_or((&0, data));
    if first & 1 == 0 {
        return rest.to_vec();
    }
    ENCODER.with(|encoder| {
        let mut encoder = encoder.borrow_mut();
        if encoder.is_none() {
            let Ok(mut created) = zstd::bulk::Compressor::new(1) else {
                return Vec::new();
            };
            if created.include_checksum(true).is_err() {
                return Vec::new();
            }
            *encoder = Some(created);
        }
        let Some(encoder) = encoder.as_mut() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut last_start = 0;
        for piece in crate::fields(rest, 0x1e) {
            let Ok(frame) = encoder.compress(piece) else {
                return Vec::new();
            };
            last_start = out.len();
            out.extend_from_slice(&frame);
        }
        if first & 2 != 0 {
            let cut = last_start + (out.len() - last_start) / 2;
            out.truncate(cut);
        }
        out
    })
}

/// The zstd reader of a JSONL log (`read_log` on a `.zstd` file in any framing, or in dsh's
/// framing as a store reads it: frame stream, torn final frame, then the line codec), the frame
/// scanner, and one-frame decompression, complete and torn.
pub fn zstd_log(data: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let bytes = file_bytes(data);
    let _ = scan_frames(&bytes);
    thread_local! {
        /// One decoder per thread (`decompress_frame` resets it for every frame).
        static DECODER: RefCell<Option<zstd::stream::raw::Decoder<'static>>> =
            const { RefCell::new(None) };
    }
    DECODER.with(|decoder| {
        let mut decoder = decoder.borrow_mut();
        if decoder.is_none() {
            *decoder = zstd::stream::raw::Decoder::new().ok();
        }
        if let Some(decoder) = decoder.as_mut() {
            let mut plain = Vec::new();
            for complete in [true, false] {
                if decompress_frame(decoder, &bytes, &mut plain, complete).is_ok() {
                    let _ = recoverable_prefix(&plain);
                }
            }
        }
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 4;
    let path = crate::scratch().join(format!("zstd-{n}.v3.jsonl.zstd"));
    if std::fs::write(&path, &bytes).is_ok() {
        // Bit 2 of the first byte: as a store reads it (dsh's framing), else as the reading
        // commands read a file (any framing).
        if data.first().is_some_and(|first| first & 4 != 0) {
            let _ = strata_store::fuzzing::read_log_in_dsh_framing(&path);
        } else {
            let _ = read_log(&path);
        }
    }
}
