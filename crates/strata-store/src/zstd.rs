//! zstd framing of JSONL logs (persistence §2.5): one checksummed frame per durable batch.
//!
//! Writing: the header line is one frame and every append batch is one more, compressed with
//! the content checksum on, no dictionary, no skippable frames. Reading: [`FramePlaintext`]
//! walks the frames found by the structural scanner and serves their plaintext as one byte
//! stream, so the same [`JsonlReader`](crate::JsonlReader) reads raw and zstd logs.
//!
//! Invariants:
//! - Every complete frame is decompressed with its checksum verified, and its plaintext must
//!   end with `\n`: a complete frame never holds a torn record. Anything else is corruption.
//! - Only the final frame may be torn (the scanner guarantees it). Its available bytes are
//!   decoded best-effort and only up to its last `\n`, so the reader sees its complete records
//!   and then a torn fragment; if nothing decodes, it contributes nothing.
//! - At most one frame's plaintext is held at a time; the compressed artifact is held whole.

use std::io::{self, Read};

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

use crate::frames::{FrameScan, FrameSpan};

/// The compression level strata writes (dsh uses the library default, 3).
pub const DEFAULT_LEVEL: i32 = 3;

/// A reusable compressor producing one checksummed frame per call.
pub struct FrameCompressor {
    compressor: zstd::bulk::Compressor<'static>,
}

impl FrameCompressor {
    /// A compressor at `level` with the content checksum on.
    pub fn new(level: i32) -> io::Result<FrameCompressor> {
        let mut compressor = zstd::bulk::Compressor::new(level)?;
        compressor.include_checksum(true)?;
        compressor.include_contentsize(true)?;
        Ok(FrameCompressor { compressor })
    }

    /// Compresses `plaintext` into exactly one frame.
    pub fn frame(&mut self, plaintext: &[u8]) -> io::Result<Vec<u8>> {
        self.compressor.compress(plaintext)
    }
}

/// Where a frame's plaintext lies in the concatenated plaintext stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainSpan {
    /// The compressed frame.
    pub frame: FrameSpan,
    /// Plaintext offset of its first byte.
    pub plain_start: u64,
    /// Plaintext offset just past its last byte.
    pub plain_end: u64,
}

/// The plaintext of a zstd artifact as one stream, frame by frame.
pub struct FramePlaintext<'a> {
    bytes: &'a [u8],
    frames: Vec<FrameSpan>,
    torn_start: Option<usize>,
    decoder: Decoder<'static>,
    /// The current frame's plaintext and how much of it was served.
    plain: Vec<u8>,
    served: usize,
    next_frame: usize,
    torn_done: bool,
    plain_offset: u64,
    /// Every frame decompressed so far.
    spans: Vec<PlainSpan>,
    /// Everything the torn final frame decoded to (complete records and a fragment).
    torn_plain: Vec<u8>,
    /// Why reading stopped with an error (also returned as `InvalidData`).
    failure: Option<String>,
}

impl<'a> FramePlaintext<'a> {
    /// Serves the plaintext of the frames `scan` found in `bytes`.
    pub fn new(bytes: &'a [u8], scan: FrameScan) -> io::Result<FramePlaintext<'a>> {
        Ok(FramePlaintext {
            bytes,
            frames: scan.frames,
            torn_start: scan.torn_start,
            decoder: Decoder::new()?,
            plain: Vec::new(),
            served: 0,
            next_frame: 0,
            torn_done: false,
            plain_offset: 0,
            spans: Vec::new(),
            torn_plain: Vec::new(),
            failure: None,
        })
    }

    /// The frames decompressed so far, with their plaintext ranges.
    pub fn spans(&self) -> &[PlainSpan] {
        &self.spans
    }

    /// What the torn final frame decoded to, once read (empty if none or nothing decoded).
    pub fn torn_plaintext(&self) -> &[u8] {
        &self.torn_plain
    }

    /// The corruption that stopped reading, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Loads the next frame's plaintext; `false` at the end.
    fn load_next(&mut self) -> io::Result<bool> {
        self.plain.clear();
        self.served = 0;
        if let Some(&frame) = self.frames.get(self.next_frame) {
            self.next_frame += 1;
            let compressed = &self.bytes[frame.start..frame.end];
            if let Err(error) = decompress(&mut self.decoder, compressed, &mut self.plain, true) {
                return Err(self.fail(format!(
                    "zstd frame at offset {} does not decompress: {error}",
                    frame.start
                )));
            }
            if self.plain.last().is_some_and(|&byte| byte != b'\n') {
                return Err(self.fail(format!(
                    "complete zstd frame at offset {} contains a torn JSONL record",
                    frame.start
                )));
            }
            let plain_start = self.plain_offset;
            self.plain_offset += self.plain.len() as u64;
            self.spans.push(PlainSpan {
                frame,
                plain_start,
                plain_end: self.plain_offset,
            });
            return Ok(true);
        }
        if let (Some(start), false) = (self.torn_start, self.torn_done) {
            self.torn_done = true;
            // Best effort: a torn frame yields what decodes; garbage yields nothing.
            if decompress(
                &mut self.decoder,
                &self.bytes[start..],
                &mut self.plain,
                false,
            )
            .is_err()
            {
                self.plain.clear();
            }
            self.torn_plain.clone_from(&self.plain);
            self.plain_offset += self.plain.len() as u64;
            return Ok(!self.plain.is_empty());
        }
        Ok(false)
    }

    fn fail(&mut self, detail: String) -> io::Error {
        self.failure = Some(detail.clone());
        io::Error::new(io::ErrorKind::InvalidData, detail)
    }
}

impl Read for FramePlaintext<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(failure) = &self.failure {
            return Err(io::Error::new(io::ErrorKind::InvalidData, failure.clone()));
        }
        while self.served == self.plain.len() {
            if !self.load_next()? {
                return Ok(0);
            }
        }
        let available = &self.plain[self.served..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.served += n;
        Ok(n)
    }
}

/// Decompresses one frame into `out` (cleared first). With `complete`, the frame must end
/// (checksum verified by the decoder); without it, whatever the available bytes yield is kept.
pub fn decompress(
    decoder: &mut Decoder<'static>,
    frame: &[u8],
    out: &mut Vec<u8>,
    complete: bool,
) -> io::Result<()> {
    decoder.reinit()?;
    out.clear();
    let mut input = InBuffer::around(frame);
    loop {
        if out.capacity() - out.len() < 32 * 1024 {
            out.reserve(out.capacity().max(64 * 1024));
        }
        let position = out.len();
        let mut output = OutBuffer::around_pos(out, position);
        let hint = decoder.run(&mut input, &mut output)?;
        let produced = output.pos() - position;
        if hint == 0 {
            if input.pos() < frame.len() && complete {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the end of the frame",
                ));
            }
            return Ok(());
        }
        if input.pos() == frame.len() && produced == 0 {
            // Input exhausted mid-frame.
            return if complete {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "frame ends early",
                ))
            } else {
                Ok(())
            };
        }
    }
}

/// The plaintext of the complete records in a torn frame: the decoded bytes up to their last
/// `\n` (empty when nothing complete decodes).
pub fn recoverable_prefix(plain: &[u8]) -> &[u8] {
    match plain.iter().rposition(|&byte| byte == b'\n') {
        Some(last) => &plain[..=last],
        None => &[],
    }
}
