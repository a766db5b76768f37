//! zstd framing of JSONL logs (persistence §2.5): one checksummed frame per durable batch.
//!
//! Writing: the header line is one frame and every append batch is one more, compressed with
//! the content checksum on, no dictionary, no skippable frames. Reading: [`ZstdStream`]
//! decodes the frames of a file one after another straight into the reader's buffer and serves
//! their plaintext as one byte stream, so the same [`JsonlReader`](strata_format::JsonlReader) reads raw
//! and zstd logs, streaming.
//!
//! Invariants:
//! - Every complete frame is decompressed with its checksum verified, and its plaintext must
//!   end with `\n`: a complete frame never holds a torn record. Anything else is corruption.
//! - Only the final frame may be torn: a frame whose decoding fails or runs out of input is
//!   torn only if the structural frame scanner finds its bytes end before the frame does;
//!   otherwise it is corruption. A torn frame contributes what decoded before its bytes ran out
//!   (or turned to garbage): the reader sees its complete records, then a torn fragment.
//! - Memory is bounded by one compressed read buffer and the decoder's window: neither the file
//!   nor a frame's plaintext is ever held whole, so a log written as one huge frame streams too,
//!   and a decompression bomb costs time, not memory. The window is capped by the zstd
//!   library's default limit (128 MiB): a frame that asks for more (`zstd --long=31`) does not
//!   decode. A damaged frame is told from a torn one by walking its headers in the file.
//! - A read never spans two frames, so the end of the first frame (the header) is known as soon
//!   as its last byte is served.
//!
//! Framing: a store, and anything that will append to a file, reads it under dsh's framing
//! ([`Framing::Dsh`]), which the rules above describe and a writer relies on (the torn-tail
//! repair cuts at a frame start). A command that only reads a file takes any framing zstd
//! allows ([`Framing::Any`]): one frame for the whole log (what the `zstd` tool writes),
//! frames cut mid-record, skippable frames. The frames' plaintext is then one byte stream and
//! only its end can be torn; memory stays bounded the same way.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, Read};

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

use strata_format::frames::{frame_end_in, ByteSource, FrameError};
use strata_format::zstd_frame::Framing;

/// Little-endian magic number that opens every zstd frame.
const FRAME_MAGIC: u32 = 0xFD2F_B528;

/// [`ZstdStream::first_frame_plain_end`] before the first frame has ended: no plaintext offset
/// reaches it.
const NOT_YET: u64 = u64::MAX;

/// What a refusal of a zstd file in another framing than dsh's tells the user to do.
pub(crate) const FOREIGN_FRAMING_HINT: &str = "a file compressed another way (by the `zstd` \
    tool, say) is read by the reading commands but never appended to; `strata convert FILE \
    jsonl-zstd:DIR` copies it into a store in dsh's framing";

thread_local! {
    /// Whether streams on this thread hand their decoder on ([`reuse_decoders`]).
    static REUSE: Cell<bool> = const { Cell::new(false) };
    /// The decoder the last stream dropped on this thread left, when reusing.
    static SPARE: RefCell<Option<Decoder<'static>>> = const { RefCell::new(None) };
}

/// Makes every `ZstdStream` on this thread from now on start with the decoder the previous
/// one dropped (reinitialised at every frame as a fresh one is), instead of creating one per
/// stream (`true`); off by default, since a kept decoder keeps the window of the largest frame
/// it decoded. For the fuzz harnesses, which open a stream per input: creating the decoder was
/// an eighth of a `zstd_log` execution.
pub fn reuse_decoders(reuse: bool) {
    REUSE.with(|flag| flag.set(reuse));
    if !reuse {
        SPARE.with(|spare| spare.borrow_mut().take());
    }
}

/// A stream's decoder, left for the next stream on this thread when it is dropped and
/// decoders are reused ([`reuse_decoders`]).
struct StreamDecoder(Option<Decoder<'static>>);

impl StreamDecoder {
    /// The spare decoder when reusing, else a fresh one.
    fn new() -> io::Result<StreamDecoder> {
        let spare = if REUSE.with(Cell::get) {
            SPARE.with(|spare| spare.borrow_mut().take())
        } else {
            None
        };
        match spare {
            Some(decoder) => Ok(StreamDecoder(Some(decoder))),
            None => Decoder::new().map(|decoder| StreamDecoder(Some(decoder))),
        }
    }

    /// The decoder (only a dropped stream has none).
    fn get(&mut self) -> io::Result<&mut Decoder<'static>> {
        self.0
            .as_mut()
            .ok_or_else(|| io::Error::other("the zstd decoder was handed on"))
    }
}

impl Drop for StreamDecoder {
    fn drop(&mut self) {
        if REUSE.with(Cell::get) {
            // The next stream reinitialises it at its first frame, as a fresh one.
            let decoder = self.0.take();
            SPARE.with(|spare| *spare.borrow_mut() = decoder);
        }
    }
}

/// Where a torn final frame was found by a [`ZstdStream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornFrame {
    /// Compressed offset of the frame's magic: an open for writing truncates the file here.
    pub start: u64,
    /// Plaintext offset of the frame's first byte: records starting at or after it were
    /// recovered from the torn frame.
    pub plain_start: u64,
}

/// The plaintext of a zstd log file as one byte stream, decoded frame by frame straight into
/// the caller's buffer (persistence §2.5).
///
/// Memory is one compressed read buffer and the decoder's window, whatever the file or frame
/// size. A read never spans two frames, so a frame's end is known when its last byte is served.
/// A complete frame's checksum is verified when its end is reached: the plaintext of a damaged
/// frame may be served before the error, so a reader must treat the whole read as failed when
/// an error arrives (every caller in this crate does).
pub struct ZstdStream {
    file: File,
    input: Vec<u8>,
    /// Invariant: `in_pos <= in_len <= input.len()`; `input[in_pos..in_len]` is unread.
    in_pos: usize,
    in_len: usize,
    /// Compressed offset of `input[in_pos]`.
    offset: u64,
    /// Plaintext bytes served so far.
    plain_offset: u64,
    eof: bool,
    decoder: StreamDecoder,
    framing: Framing,
    /// Where the skippable frame being skipped started, and how many of its bytes are still to
    /// skip (none when 0). Not an `Option`: every byte here counts, since a reader of either
    /// kind is sized by the larger.
    skipping: (u64, u64),
    /// `\n` bytes the current frame has produced so far.
    frame_lines: u64,
    /// The frame being decoded: its compressed start, plaintext start and last plaintext byte.
    frame: Option<(u64, u64, Option<u8>)>,
    /// Plaintext length of the first frame once decoded to its end; [`NOT_YET`] before.
    first_frame_plain_end: u64,
    torn: Option<TornFrame>,
    /// Corruption to report on the next read (after serving what came before it).
    failure: Option<String>,
    done: bool,
}

impl ZstdStream {
    /// Streams the plaintext of `file` in dsh's framing, read from its current position
    /// (offset 0).
    pub fn new(file: File) -> io::Result<ZstdStream> {
        ZstdStream::with_framing(file, Framing::Dsh)
    }

    /// Streams the plaintext of `file` under `framing`, read from its current position
    /// (offset 0).
    pub fn with_framing(file: File, framing: Framing) -> io::Result<ZstdStream> {
        Ok(ZstdStream {
            file,
            input: vec![0; 256 * 1024],
            in_pos: 0,
            in_len: 0,
            offset: 0,
            plain_offset: 0,
            eof: false,
            decoder: StreamDecoder::new()?,
            framing,
            skipping: (0, 0),
            frame_lines: 0,
            frame: None,
            first_frame_plain_end: NOT_YET,
            torn: None,
            failure: None,
            done: false,
        })
    }

    /// The file the stream reads.
    pub fn get_ref(&self) -> &File {
        &self.file
    }

    /// Plaintext length of the first frame, once it has been decoded to its end.
    pub fn first_frame_plain_end(&self) -> Option<u64> {
        (self.first_frame_plain_end != NOT_YET).then_some(self.first_frame_plain_end)
    }

    /// How many `\n` the torn final frame decoded: the records it completed (once the stream
    /// has ended inside it, see [`ZstdStream::torn`]).
    pub fn torn_frame_lines(&self) -> u64 {
        self.frame_lines
    }

    /// Compressed bytes decoded so far (for progress reports).
    pub fn compressed_offset(&self) -> u64 {
        self.offset
    }

    /// The torn final frame, once the stream has ended inside one.
    pub fn torn(&self) -> Option<TornFrame> {
        self.torn
    }

    /// The corruption that stopped the stream, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn fail(&mut self, detail: String) -> io::Error {
        self.failure = Some(detail.clone());
        self.done = true;
        io::Error::new(io::ErrorKind::InvalidData, detail)
    }

    /// Reads more compressed bytes, keeping the unread ones; `false` at the end of the file.
    fn refill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.input.copy_within(self.in_pos..self.in_len, 0);
        self.in_len -= self.in_pos;
        self.in_pos = 0;
        loop {
            match self.file.read(&mut self.input[self.in_len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(read) => {
                    self.in_len += read;
                    return Ok(true);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// The framing the stream reads.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The stream ends inside the frame starting at `start`.
    fn end_torn(&mut self, start: u64, plain_start: u64) {
        self.torn = Some(TornFrame { start, plain_start });
        self.frame = None;
        self.done = true;
    }

    /// A frame did not decode: torn if its bytes run out before its structural end (only the
    /// final frame can be), corruption otherwise.
    ///
    /// The frame's structure is walked from its headers alone, never read whole, so a damaged
    /// frame of any size costs no more memory than a good one.
    fn decode_failed(&mut self, start: u64, plain_start: u64, error: &io::Error) -> io::Result<()> {
        match frame_end_in_file(&self.file, start)? {
            Ok(None) => {
                self.end_torn(start, plain_start);
                Ok(())
            }
            Ok(Some(_)) => Err(self.fail(format!(
                "zstd frame at offset {start} does not decompress: {error}"
            ))),
            Err(frame_error) => Err(self.fail(shift_offsets(&frame_error.to_string(), start))),
        }
    }

    /// Skips what remains of a skippable frame ([`Framing::Any`]); `false` when the file ends
    /// inside it (a torn tail, the stream has ended).
    fn skip_skippable(&mut self) -> io::Result<bool> {
        while self.skipping.1 > 0 {
            let (start, remaining) = self.skipping;
            if self.in_pos == self.in_len && !self.refill()? {
                let plain_start = self.plain_offset;
                self.skipping = (0, 0);
                self.end_torn(start, plain_start);
                return Ok(false);
            }
            let available = (self.in_len - self.in_pos) as u64;
            let step = remaining.min(available);
            // `step` is at most the buffered bytes, a `usize`.
            self.in_pos += usize::try_from(step).unwrap_or(0);
            self.offset += step;
            self.skipping = (start, remaining - step);
        }
        Ok(true)
    }

    /// Counts the `\n` of plaintext the current frame produced (the records a torn frame
    /// completed).
    fn count_lines(&mut self, plain: &[u8]) {
        self.frame_lines += memchr::memchr_iter(b'\n', plain).count() as u64;
    }
}

/// Frame errors found on a slice starting at `start` name offsets in that slice; say so.
fn shift_offsets(detail: &str, start: u64) -> String {
    format!("{detail} (relative to the frame at file offset {start})")
}

impl ZstdStream {
    /// Between frames: reads the next frame's magic and begins it, or consumes a skippable
    /// frame's header (`Framing::Any`). `false` when the input ended there (the stream is
    /// done, or torn after fewer than a header's bytes); an error for bytes no frame starts
    /// with.
    fn begin_frame(&mut self) -> io::Result<bool> {
        while self.in_len - self.in_pos < 4 {
            if !self.refill()? {
                if self.in_len > self.in_pos {
                    // Fewer than 4 bytes of a frame: a torn append.
                    let (start, plain_start) = (self.offset, self.plain_offset);
                    self.end_torn(start, plain_start);
                } else {
                    self.done = true;
                }
                return Ok(false);
            }
        }
        let magic_bytes = [
            self.input[self.in_pos],
            self.input[self.in_pos + 1],
            self.input[self.in_pos + 2],
            self.input[self.in_pos + 3],
        ];
        let magic = u32::from_le_bytes(magic_bytes);
        let skippable = magic & 0xFFFF_FFF0 == 0x184D_2A50;
        if skippable && self.framing == Framing::Any {
            // The magic, then the length of the user data to skip.
            while self.in_len - self.in_pos < 8 {
                if !self.refill()? {
                    let (start, plain_start) = (self.offset, self.plain_offset);
                    self.end_torn(start, plain_start);
                    return Ok(false);
                }
            }
            let at = self.in_pos + 4;
            let size = [
                self.input[at],
                self.input[at + 1],
                self.input[at + 2],
                self.input[at + 3],
            ];
            self.skipping = (self.offset, u64::from(u32::from_le_bytes(size)));
            self.in_pos += 8;
            self.offset += 8;
            return Ok(true);
        }
        if magic != FRAME_MAGIC {
            let offset = usize::try_from(self.offset).unwrap_or(usize::MAX);
            let detail = if skippable {
                let error = FrameError::SkippableFrame {
                    offset,
                    found: magic,
                };
                format!(
                    "{error}, which dsh's framing never writes ({})",
                    FOREIGN_FRAMING_HINT
                )
            } else {
                let error = FrameError::BadMagic {
                    offset,
                    found: magic,
                };
                error.to_string()
            };
            return Err(self.fail(detail));
        }
        self.decoder.get()?.reinit()?;
        self.frame = Some((self.offset, self.plain_offset, None));
        self.frame_lines = 0;
        Ok(true)
    }

    /// The input ended inside a frame: hands out what the decoder still holds (into
    /// `buf[filled..]`), else ends the stream torn at the frame. Returns the bytes filled.
    fn flush_torn_frame(
        &mut self,
        buf: &mut [u8],
        mut filled: usize,
        start: u64,
        plain_start: u64,
    ) -> usize {
        let mut input = InBuffer::around(&[]);
        let mut output = OutBuffer::around(&mut buf[filled..]);
        let flushed = self
            .decoder
            .get()
            .and_then(|decoder| decoder.run(&mut input, &mut output))
            .is_ok();
        let produced = output.pos();
        if flushed && produced > 0 {
            self.count_lines(&buf[filled..filled + produced]);
            filled += produced;
            self.plain_offset += produced as u64;
            self.frame = Some((start, plain_start, buf.get(filled - 1).copied()));
            return filled;
        }
        self.end_torn(start, plain_start);
        filled
    }

    /// The frame at `start` ended, its checksum verified: in dsh's framing it must end on a
    /// record boundary (`last_byte` is its last plaintext byte). Whether the read returns now
    /// (it filled bytes), else it goes on to the next frame.
    fn end_frame(&mut self, start: u64, last_byte: Option<u8>, filled: usize) -> io::Result<bool> {
        self.frame = None;
        self.frame_lines = 0;
        if self.first_frame_plain_end == NOT_YET {
            self.first_frame_plain_end = self.plain_offset;
        }
        let mid_record = last_byte.is_some_and(|byte| byte != b'\n');
        if mid_record && self.framing == Framing::Dsh {
            let detail = format!(
                "complete zstd frame at offset {start} contains a torn JSONL record: \
                 corrupt, or not in dsh's framing ({})",
                FOREIGN_FRAMING_HINT
            );
            if filled == 0 {
                return Err(self.fail(detail));
            }
            self.failure = Some(detail);
            self.done = true;
        }
        Ok(filled > 0)
    }
}

impl Read for ZstdStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(failure) = &self.failure {
            return Err(io::Error::new(io::ErrorKind::InvalidData, failure.clone()));
        }
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let mut filled = 0;
        loop {
            if self.skipping.1 > 0 && !self.skip_skippable()? {
                return Ok(filled);
            }
            let Some((start, plain_start, last_byte)) = self.frame else {
                // Between frames: a new one must begin with the frame magic.
                if self.begin_frame()? {
                    continue;
                }
                return Ok(filled);
            };
            if self.in_pos == self.in_len && !self.refill()? {
                return Ok(self.flush_torn_frame(buf, filled, start, plain_start));
            }
            let mut input = InBuffer::around(&self.input[self.in_pos..self.in_len]);
            let mut output = OutBuffer::around(&mut buf[filled..]);
            let result = self
                .decoder
                .get()
                .and_then(|decoder| decoder.run(&mut input, &mut output));
            let (consumed, produced) = (input.pos(), output.pos());
            self.in_pos += consumed;
            self.offset += consumed as u64;
            self.count_lines(&buf[filled..filled + produced]);
            filled += produced;
            self.plain_offset += produced as u64;
            let last_byte = if produced > 0 {
                buf.get(filled - 1).copied()
            } else {
                last_byte
            };
            self.frame = Some((start, plain_start, last_byte));
            let hint = match result {
                Ok(hint) => hint,
                Err(error) => {
                    self.decode_failed(start, plain_start, &error)?;
                    return Ok(filled);
                }
            };
            if hint == 0 {
                if self.end_frame(start, last_byte, filled)? {
                    return Ok(filled);
                }
                continue;
            }
            if filled == buf.len() {
                return Ok(filled);
            }
            if consumed == 0 && produced == 0 && self.in_pos < self.in_len {
                // zstd always consumes input or produces output while both have room.
                return Err(self.fail(format!("zstd frame at offset {start} stalled the decoder")));
            }
        }
    }
}

/// Where the frame starting at offset `start` of `file` ends (`None` when the file ends inside
/// it), walking its headers through [`FileBytes`]. Offsets in a [`FrameError`] are relative to
/// `start`.
fn frame_end_in_file(file: &File, start: u64) -> io::Result<Result<Option<u64>, FrameError>> {
    let len = file.metadata()?.len();
    match frame_end_in(FileBytes { file, start, len })? {
        Ok(end) => Ok(Ok(end.map(|end| start + end))),
        Err(error) => Ok(Err(error)),
    }
}

/// The bytes of a file from `start` to the `len` it had when the walk began.
struct FileBytes<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

impl ByteSource for FileBytes<'_> {
    type Error = io::Error;

    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<bool, Self::Error> {
        use std::os::unix::fs::FileExt as _;
        if !self.has(pos, buf.len() as u64) {
            return Ok(false);
        }
        match self.file.read_exact_at(buf, self.start + pos) {
            Ok(()) => Ok(true),
            // The file shrank under the walk: its bytes end here.
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn has(&self, pos: u64, n: u64) -> bool {
        self.len.saturating_sub(self.start).saturating_sub(pos) >= n
    }
}

#[cfg(test)]
mod framing_tests;

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::{reuse_decoders, ZstdStream};
    use strata_format::zstd_frame::FrameCompressor;

    /// Everything a stream serves and how it ends.
    fn stream(path: &std::path::Path, max: usize) -> (Vec<u8>, String) {
        let mut stream = ZstdStream::new(std::fs::File::open(path).unwrap()).unwrap();
        let mut plain = Vec::new();
        let mut buf = [0; 7];
        let end = loop {
            if plain.len() >= max {
                break "dropped".to_owned();
            }
            match stream.read(&mut buf) {
                Ok(0) => break format!("end {:?}", stream.torn()),
                Ok(n) => plain.extend_from_slice(&buf[..n]),
                Err(error) => break error.to_string(),
            }
        };
        (plain, end)
    }

    #[test]
    fn a_reused_decoder_serves_what_a_fresh_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut compressor = FrameCompressor::new(3).unwrap();
        let a = compressor.frame(b"{\"header\":1}\n").unwrap();
        let b = compressor.frame(&b"{\"row\":2}\n".repeat(500)).unwrap();
        let mut damaged = b.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0xff;
        let logs = [
            [a.clone(), b.clone()].concat(),
            [a.clone(), b[..b.len() / 2].to_vec()].concat(),
            [a.clone(), damaged].concat(),
            [a.clone(), b.clone(), b.clone()].concat(),
        ];
        let paths: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(index, log)| {
                let path = dir.path().join(format!("{index}.zstd"));
                std::fs::write(&path, log).unwrap();
                path
            })
            .collect();
        // Every log after every other, the first one dropped mid-frame too.
        for first in &paths {
            for max in [usize::MAX, 100] {
                for second in &paths {
                    let expected = stream(second, usize::MAX);
                    reuse_decoders(true);
                    let _ = stream(first, max);
                    let reused = stream(second, usize::MAX);
                    reuse_decoders(false);
                    assert_eq!(reused, expected);
                }
            }
        }
    }
}
