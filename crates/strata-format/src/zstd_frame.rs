//! One zstd frame per durable batch (persistence §2.5): the compressor strata writes with and
//! the one-frame decompressor every reader shares.
//!
//! Invariants:
//! - Every frame strata writes carries its content checksum and content size, no dictionary.
//! - [`decompress`] of a complete frame verifies the checksum and refuses trailing bytes; of a
//!   torn frame it keeps whatever decoded before the bytes ran out or turned to garbage, and
//!   [`recoverable_prefix`] cuts that to its complete records.

use std::io;

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

/// How a reader takes a file's frames: dsh's framing, which a writer relies on, or any framing
/// zstd allows, for a file that is only read (the store's `ZstdStream` and the older
/// generations' reader both take one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// dsh's framing, which a writer relies on: every complete frame ends on a record
    /// boundary, no skippable frames (the store also wants the header line alone in the first
    /// frame).
    #[default]
    Dsh,
    /// Any framing zstd allows: the frames' plaintext is one byte stream, skippable frames are
    /// skipped. For reads that write nothing.
    Any,
}

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

/// Decompresses one frame into `out` (cleared first). With `complete`, the frame must end
/// (checksum verified by the decoder); without it, whatever the available bytes yield before
/// they run out or stop decoding is kept, as `ZstdStream` serves a torn frame.
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
        let hint = match decoder.run(&mut input, &mut output) {
            Ok(hint) => hint,
            // Best effort on a torn frame: keep what decoded before the damage.
            Err(_) if !complete => return Ok(()),
            Err(error) => return Err(error),
        };
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
