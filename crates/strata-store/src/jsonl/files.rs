//! One log file on its own, outside any store: sniffed, scanned, read and written whole.

use std::fs::File;
use std::io;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use strata_core::{Event, SessionHeader};

use super::{publish_new, write_whole_log, JsonlRows, PublishError};
use crate::backend::{LogStream, StoredLog};
use crate::error::StoreError;
use strata_format::codec::encode_header_line;
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;
use strata_format::zstd_frame::Framing;
use strata_format::zstd_frame::{FrameCompressor, DEFAULT_LEVEL};

/// Whether a file holds a zstd artifact: it starts with the zstd frame magic, or a skippable
/// frame's (as `pzstd` writes; only a read in any framing takes it). An empty or unreadable
/// start is not zstd. dsh names such files `.zstd`, the `zstd` tool `.zst`; content decides,
/// not the name.
pub fn is_zstd_file(path: &Path) -> Result<bool, StoreError> {
    let mut file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let mut magic = [0_u8; 4];
    let mut filled = 0;
    while filled < magic.len() {
        match file.read(&mut magic[filled..]) {
            Ok(0) => return Ok(false),
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(StoreError::io("read", path, source)),
        }
    }
    let skippable = magic[0] & 0xF0 == 0x50 && magic[1..] == [0x2A, 0x4D, 0x18];
    Ok(magic == [0x28, 0xB5, 0x2F, 0xFD] || skippable)
}

/// Streams a V3 JSONL log file outside any store, raw or zstd (told apart by content): the
/// header at once, then its complete events (seqs are left for the core to judge, so a gap is
/// reported with the core's rule); a torn tail is reported by
/// [`LogStream::torn`] at the end, never returned. For tools that take a file path (`strata
/// validate FILE`, `strata import FILE`).
///
/// A zstd file may be framed any way zstd allows (one frame for the whole log, as the `zstd`
/// tool writes it, frames cut mid-record, skippable frames): this read writes nothing, so it
/// does not need dsh's framing, which only a writer relies on. Memory stays bounded by the
/// decoder's window and the longest record, whatever the file holds. A stream's torn tail is
/// therefore a fact to report, not a place to cut the file: a writer opens the file through a
/// store, which reads it in dsh's framing and refuses any other.
pub fn scan_log(path: &Path) -> Result<LogStream<'static>, StoreError> {
    let zstd = is_zstd_file(path)?;
    scan_log_with(path, zstd, Framing::Any)
}

/// [`scan_log`] for a writer that will append to the file: a zstd file must be in dsh's
/// framing (the header line alone in the first frame, every frame ending on a line boundary),
/// so that the stream's torn tail is a place to cut; another framing is refused
/// ([`StoreError::ForeignFraming`] at the open, or a torn record in a complete frame as the
/// stream reaches it).
pub fn scan_log_for_writing(path: &Path) -> Result<LogStream<'static>, StoreError> {
    let zstd = is_zstd_file(path)?;
    scan_log_with(path, zstd, Framing::Dsh)
}

/// [`scan_log`] under `framing`.
fn scan_log_with(
    path: &Path,
    zstd: bool,
    framing: Framing,
) -> Result<LogStream<'static>, StoreError> {
    let mut rows = JsonlRows::open_with(path, zstd, framing, DEFAULT_MAX_RECORD_LEN)?;
    rows.decoder.check_seqs = false;
    Ok(rows.into_stream())
}

/// Reads a whole V3 JSONL log file outside any store (see [`scan_log`]) into memory.
pub fn read_log(path: &Path) -> Result<StoredLog, StoreError> {
    scan_log(path)?.collect_log()
}

/// Writes a session as a V3 JSONL file (zstd when the name ends in `.zstd` or `.zst`, in dsh's
/// framing: one frame for the header, then frames of about 1 MiB of event lines), published
/// durably and never over an existing file. The lines are byte-identical to what dsh writes
/// for the same events.
pub fn write_log(
    path: &Path,
    header: &SessionHeader,
    events: &[Arc<Event>],
) -> Result<(), StoreError> {
    let zstd = path
        .extension()
        .is_some_and(|extension| extension == "zstd" || extension == "zst");
    let mut header_line = Vec::new();
    encode_header_line(header, &mut header_line)?;
    let mut compressor = if zstd {
        Some(
            FrameCompressor::new(DEFAULT_LEVEL)
                .map_err(|source| StoreError::io("start zstd for", path, source))?,
        )
    } else {
        None
    };
    publish_new(path, |out| {
        write_whole_log(out, &header_line, events, compressor.as_mut())
    })
    .map(drop)
    .map_err(|error| match error {
        PublishError::Exists => StoreError::io(
            "write",
            path,
            io::Error::new(io::ErrorKind::AlreadyExists, "file exists"),
        ),
        PublishError::Io(error) => error,
    })
}
