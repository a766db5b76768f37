//! The structural walk over a zstd session artifact (persistence §2.5).
//!
//! A `.jsonl.zstd` log is a plain concatenation of independent zstd frames: the first holds the
//! header line and each later one holds one durable append batch. Before decompressing anything,
//! a reader walks the frame and block headers to find where every complete frame starts and
//! ends and whether the file ends inside a frame (a torn append). This module is that walk; it
//! reads headers only and never decompresses.
//!
//! Invariants:
//! - The returned frames are contiguous: the first starts at 0, each starts where the previous
//!   one ends, and the torn start (if any) is where the last one ends.
//! - A file cut at any byte offset scans without error; running out of bytes is always a torn
//!   tail, never corruption, because only the final frame can be torn by construction.
//! - Corruption is reported only for bytes that are present and cannot be what strata or dsh
//!   writes: a magic other than the zstd frame magic (skippable frames included), reserved
//!   frame-header bits, or the reserved block type.
//! - Offsets are byte offsets into the scanned slice.

/// Little-endian magic number that opens every zstd frame.
const FRAME_MAGIC: u32 = 0xFD2F_B528;

/// Skippable frames use the 16 magics `0x184D2A50..=0x184D2A5F`.
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// Frame-header descriptor bits that must be zero (the unused and the reserved bit).
const DESCRIPTOR_RESERVED_BITS: u8 = 0x18;

/// One complete zstd frame, as the half-open byte range `start..end` of the scanned slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpan {
    /// Offset of the frame's magic number.
    pub start: usize,
    /// Offset just past the frame's last byte (its checksum, if it has one).
    pub end: usize,
}

/// Where the frames of a zstd artifact lie, so a reader can decompress the complete ones and
/// treat an incomplete final frame as a torn append.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FrameScan {
    /// Every complete frame, in file order; contiguous from offset 0.
    pub frames: Vec<FrameSpan>,
    /// Start of the final frame when the bytes end inside it; `None` when the bytes end exactly
    /// at a frame boundary. Repair truncates the file to this offset.
    pub torn_start: Option<usize>,
}

/// Why bytes that are present cannot be part of a strata or dsh zstd artifact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The four bytes at a frame start are not the zstd frame magic.
    #[error("corrupt zstd artifact: bad frame magic 0x{found:08x} at offset {offset} (expected 0x{FRAME_MAGIC:08x})")]
    BadMagic {
        /// Offset of the frame start.
        offset: usize,
        /// The little-endian value found there.
        found: u32,
    },
    /// A skippable frame: valid zstd, but never written by dsh or strata, so it marks a file
    /// that is not one of ours or has been tampered with.
    #[error("corrupt zstd artifact: skippable frame magic 0x{found:08x} at offset {offset}")]
    SkippableFrame {
        /// Offset of the frame start.
        offset: usize,
        /// The skippable magic found there.
        found: u32,
    },
    /// The frame-header descriptor sets a bit the format reserves.
    #[error("corrupt zstd artifact: frame header descriptor 0x{descriptor:02x} at offset {offset} sets reserved bits (frame at offset {frame_start})")]
    ReservedBits {
        /// Offset of the frame this descriptor belongs to.
        frame_start: usize,
        /// Offset of the descriptor byte.
        offset: usize,
        /// The descriptor byte.
        descriptor: u8,
    },
    /// A block header uses block type 3, which the format reserves.
    #[error("corrupt zstd artifact: reserved block type at offset {offset} (frame at offset {frame_start})")]
    ReservedBlockType {
        /// Offset of the frame this block belongs to.
        frame_start: usize,
        /// Offset of the three-byte block header.
        offset: usize,
    },
}

/// Walks the frames of a zstd artifact structurally, so a reader knows which byte ranges to
/// decompress and where a torn final append begins, before spending any work on decompression.
///
/// Running out of bytes anywhere inside a frame is reported as `torn_start`, never as an error.
pub fn scan_frames(bytes: &[u8]) -> Result<FrameScan, FrameError> {
    let mut frames = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        match frame_end(bytes, start)? {
            Some(end) => {
                frames.push(FrameSpan { start, end });
                start = end;
            }
            None => {
                return Ok(FrameScan {
                    frames,
                    torn_start: Some(start),
                })
            }
        }
    }
    Ok(FrameScan {
        frames,
        torn_start: None,
    })
}

/// The end of the frame starting at `start`, or `None` if the bytes end inside it.
fn frame_end(bytes: &[u8], start: usize) -> Result<Option<usize>, FrameError> {
    let mut cursor = Cursor {
        bytes: SliceBytes(bytes),
        pos: start as u64,
    };
    let end = match walk_frame(&mut cursor, start as u64) {
        Ok(end) => end?,
        Err(never) => match never {},
    };
    // Offsets never exceed the slice's length, a `usize`.
    Ok(end.map(|end| usize::try_from(end).unwrap_or(usize::MAX)))
}

/// Where the frame starting at offset 0 of `bytes` ends (`None` when the bytes end inside it),
/// found by reading its frame and block headers only: a few bytes per 128 KiB block, so a
/// reader that must tell a torn final frame from a damaged one (a store reading a file through
/// its own [`ByteSource`]) holds no more than that, however large the frame. Offsets in a
/// [`FrameError`] are relative to the frame's start.
pub fn frame_end_in<B: ByteSource>(bytes: B) -> Result<Result<Option<u64>, FrameError>, B::Error> {
    let mut cursor = Cursor { bytes, pos: 0 };
    walk_frame(&mut cursor, 0)
}

/// Random access to the bytes a frame walk reads, so the walk itself touches no file: a slice,
/// or a file the caller reads. `Ok(false)` when fewer than `buf.len()` bytes remain at `pos`.
pub trait ByteSource {
    /// The error reading can raise (none for a slice).
    type Error;
    /// Fills `buf` from `pos`, or says the bytes end first.
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<bool, Self::Error>;
    /// Whether at least `n` bytes remain at `pos`.
    fn has(&self, pos: u64, n: u64) -> bool;
}

/// A slice as a [`ByteSource`].
struct SliceBytes<'a>(&'a [u8]);

impl ByteSource for SliceBytes<'_> {
    type Error = std::convert::Infallible;

    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<bool, Self::Error> {
        let found = usize::try_from(pos)
            .ok()
            .and_then(|pos| self.0.get(pos..))
            .and_then(|rest| rest.get(..buf.len()));
        match found {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn has(&self, pos: u64, n: u64) -> bool {
        (self.0.len() as u64).saturating_sub(pos) >= n
    }
}

/// Walks the frame whose magic is at `start` (the cursor's position): its end, or `None` when
/// the bytes end inside it.
fn walk_frame<B: ByteSource>(
    cursor: &mut Cursor<B>,
    start: u64,
) -> Result<Result<Option<u64>, FrameError>, B::Error> {
    let offset = |at: u64| usize::try_from(at).unwrap_or(usize::MAX);
    let Some(magic) = cursor.take::<4>()? else {
        return Ok(Ok(None));
    };
    let magic = u32::from_le_bytes(magic);
    if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
        return Ok(Err(FrameError::SkippableFrame {
            offset: offset(start),
            found: magic,
        }));
    }
    if magic != FRAME_MAGIC {
        return Ok(Err(FrameError::BadMagic {
            offset: offset(start),
            found: magic,
        }));
    }

    let descriptor_offset = cursor.pos;
    let Some([descriptor]) = cursor.take::<1>()? else {
        return Ok(Ok(None));
    };
    if descriptor & DESCRIPTOR_RESERVED_BITS != 0 {
        return Ok(Err(FrameError::ReservedBits {
            frame_start: offset(start),
            offset: offset(descriptor_offset),
            descriptor,
        }));
    }
    let single_segment = descriptor & 0x20 != 0;
    let has_checksum = descriptor & 0x04 != 0;
    let dictionary_id_len = [0, 1, 2, 4][usize::from(descriptor & 0x03)];
    let content_size_len = match descriptor >> 6 {
        0 => u64::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let window_descriptor_len = u64::from(!single_segment);
    if !cursor.skip(window_descriptor_len + dictionary_id_len + content_size_len) {
        return Ok(Ok(None));
    }

    loop {
        let block_offset = cursor.pos;
        let Some(header) = cursor.take::<3>()? else {
            return Ok(Ok(None));
        };
        let header = u32::from_le_bytes([header[0], header[1], header[2], 0]);
        let is_last = header & 1 != 0;
        let block_size = u64::from(header >> 3);
        let payload_len = match (header >> 1) & 0x03 {
            // Raw and compressed blocks carry `block_size` bytes.
            0 | 2 => block_size,
            // An RLE block carries the one byte it repeats `block_size` times.
            1 => 1,
            _ => {
                return Ok(Err(FrameError::ReservedBlockType {
                    frame_start: offset(start),
                    offset: offset(block_offset),
                }))
            }
        };
        if !cursor.skip(payload_len) {
            return Ok(Ok(None));
        }
        if is_last {
            break;
        }
    }

    if has_checksum && !cursor.skip(4) {
        return Ok(Ok(None));
    }
    Ok(Ok(Some(cursor.pos)))
}

/// A read position that reports running out of bytes instead of panicking.
struct Cursor<B> {
    bytes: B,
    /// Invariant: at most the source's length.
    pos: u64,
}

impl<B: ByteSource> Cursor<B> {
    /// Reads the next `N` bytes, or returns `None` (leaving the position alone) if fewer remain.
    fn take<const N: usize>(&mut self) -> Result<Option<[u8; N]>, B::Error> {
        let mut taken = [0; N];
        if !self.bytes.read_at(self.pos, &mut taken)? {
            return Ok(None);
        }
        self.pos += N as u64;
        Ok(Some(taken))
    }

    /// Advances `n` bytes, or returns false if fewer remain.
    fn skip(&mut self, n: u64) -> bool {
        if !self.bytes.has(self.pos, n) {
            return false;
        }
        self.pos += n;
        true
    }
}

#[cfg(test)]
mod tests;
