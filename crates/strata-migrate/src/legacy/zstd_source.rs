//! A streaming reader of a zstd session artifact: concatenated checksummed frames decoded one
//! after another into one plaintext stream (persistence §2.5), without holding the file.
//!
//! The V3 store reads zstd logs whole (it needs frame offsets for repair); a migration source
//! can be far larger than memory, so this reader pulls compressed bytes through a `BufRead` and
//! keeps only the decoder's window and one output buffer.
//!
//! Invariants:
//! - Every frame must start with the zstd frame magic; skippable frames and garbage are
//!   corruption (`InvalidData`), as in dsh.
//! - A complete frame's checksum is verified by the decoder, and its plaintext must end with
//!   `\n`; otherwise the artifact is corrupt.
//! - Input ending inside a frame is a torn final frame: what it decoded has been served, reading
//!   ends, and [`ZstdSource::is_torn`] says so (the line scanner then sees any unterminated
//!   record as a torn tail).
//!
//! Those are dsh's framing rules ([`ZstdSource::new`]). An older log is only ever read (a
//! migration writes a V3 copy beside it), so the reading commands take it in any framing zstd
//! allows ([`ZstdSource::any_framing`]): frames may end mid-record and skippable frames are
//! skipped, the frames' plaintext being one byte stream.

use std::io::{self, BufRead, Read};

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

use strata_format::zstd_frame::Framing;

const FRAME_MAGIC: [u8; 4] = 0xFD2F_B528_u32.to_le_bytes();

/// Whether collected frame-start bytes open a skippable frame (magic `0x184D2A50..=0x184D2A5F`).
fn is_skippable(start: &[u8]) -> bool {
    start.len() >= 4 && start[0] & 0xF0 == 0x50 && start[1..4] == [0x2A, 0x4D, 0x18]
}

/// Decodes a zstd artifact frame by frame.
pub struct ZstdSource<R> {
    inner: R,
    decoder: Decoder<'static>,
    framing: Framing,
    /// Bytes of the next frame's magic collected so far (a frame starts when all 4 match), and
    /// of a skippable frame's length after its magic.
    magic: Vec<u8>,
    /// Bytes of a skippable frame's data still to skip.
    skip: u64,
    in_frame: bool,
    /// The last plaintext byte the current frame produced.
    last_byte: Option<u8>,
    out: Vec<u8>,
    /// Invariant: `out_pos <= out.len()`; `out[out_pos..]` is not yet served.
    out_pos: usize,
    torn: bool,
    /// Corruption found after decoding plaintext that is served first.
    failure: Option<String>,
    /// Compressed bytes consumed so far.
    offset: u64,
}

impl<R: BufRead> ZstdSource<R> {
    /// Reads the artifact from `inner`, in dsh's framing.
    pub fn new(inner: R) -> io::Result<ZstdSource<R>> {
        ZstdSource::with_framing(inner, Framing::Dsh)
    }

    /// Reads the artifact from `inner` in any framing zstd allows (see the module docs).
    pub fn any_framing(inner: R) -> io::Result<ZstdSource<R>> {
        ZstdSource::with_framing(inner, Framing::Any)
    }

    fn with_framing(inner: R, framing: Framing) -> io::Result<ZstdSource<R>> {
        Ok(ZstdSource {
            inner,
            decoder: Decoder::new()?,
            framing,
            magic: Vec::with_capacity(8),
            skip: 0,
            in_frame: false,
            last_byte: None,
            out: Vec::with_capacity(128 * 1024),
            out_pos: 0,
            torn: false,
            failure: None,
            offset: 0,
        })
    }

    /// Whether the artifact ended inside a frame (a torn final append).
    pub fn is_torn(&self) -> bool {
        self.torn
    }

    fn corrupt(&self, detail: String) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, detail)
    }

    /// Decodes more plaintext into `out`; `false` at the end of the artifact.
    fn fill(&mut self) -> io::Result<bool> {
        if let Some(detail) = self.failure.take() {
            return Err(self.corrupt(detail));
        }
        loop {
            let input = match self.inner.fill_buf() {
                Ok(input) => input,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if input.is_empty() {
                if self.in_frame || !self.magic.is_empty() || self.skip > 0 {
                    self.torn = true;
                }
                return Ok(false);
            }
            if self.skip > 0 {
                // Inside a skippable frame's data: drop it unread.
                let take = usize::try_from(self.skip)
                    .unwrap_or(usize::MAX)
                    .min(input.len());
                self.inner.consume(take);
                self.offset += take as u64;
                self.skip -= take as u64;
                continue;
            }
            if !self.in_frame && self.framing == Framing::Any && is_skippable(&self.magic) {
                // A skippable frame's magic: its 4-byte length follows.
                let take = (8 - self.magic.len()).min(input.len());
                self.magic.extend_from_slice(&input[..take]);
                self.inner.consume(take);
                self.offset += take as u64;
                if self.magic.len() == 8 {
                    let size = [self.magic[4], self.magic[5], self.magic[6], self.magic[7]];
                    self.skip = u64::from(u32::from_le_bytes(size));
                    self.magic.clear();
                }
                continue;
            }
            if !self.in_frame {
                // Collect the 4-byte magic, then hand it to the decoder first.
                let need = 4 - self.magic.len();
                let take = need.min(input.len());
                self.magic.extend_from_slice(&input[..take]);
                self.inner.consume(take);
                self.offset += take as u64;
                if self.magic.len() < 4
                    || (self.framing == Framing::Any && is_skippable(&self.magic))
                {
                    continue;
                }
                if self.magic != FRAME_MAGIC {
                    return Err(
                        self.corrupt(format!("bad frame magic at offset {}", self.offset - 4))
                    );
                }
                self.decoder.reinit()?;
                let magic = std::mem::take(&mut self.magic);
                let mut magic_in = InBuffer::around(&magic);
                let mut sink = OutBuffer::around(&mut self.out);
                self.decoder.run(&mut magic_in, &mut sink)?;
                self.in_frame = true;
                self.last_byte = None;
                continue;
            }
            let before = self.out.len();
            if self.out.capacity() - before < 64 * 1024 {
                self.out.reserve(128 * 1024);
            }
            let mut in_buffer = InBuffer::around(input);
            let mut out_buffer = OutBuffer::around_pos(&mut self.out, before);
            let hint = self
                .decoder
                .run(&mut in_buffer, &mut out_buffer)
                .map_err(|error| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("zstd frame does not decompress: {error}"),
                    )
                })?;
            let produced = out_buffer.pos();
            let consumed = in_buffer.pos();
            self.inner.consume(consumed);
            self.offset += consumed as u64;
            if produced > before {
                self.last_byte = self.out.get(produced - 1).copied();
            }
            if hint == 0 {
                self.in_frame = false;
                let mid_record = self.last_byte.is_some_and(|byte| byte != b'\n');
                if mid_record && self.framing == Framing::Dsh {
                    // Serve the complete records before the torn one, then fail.
                    self.failure = Some(format!(
                        "complete frame ending at offset {} contains a torn JSONL record",
                        self.offset
                    ));
                    if produced == before {
                        let detail = self.failure.take().unwrap_or_default();
                        return Err(self.corrupt(detail));
                    }
                }
            }
            if produced > before {
                return Ok(true);
            }
        }
    }
}

impl<R: BufRead> Read for ZstdSource<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            if !self.fill()? {
                return Ok(0);
            }
        }
        let available = &self.out[self.out_pos..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.out_pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
