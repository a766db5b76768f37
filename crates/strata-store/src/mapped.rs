//! A raw JSONL log's body read through memory-mapped windows.
//!
//! A full load of a raw log used to `read` it into a buffer and copy each record into the batch
//! a decoding thread owns: two copies of every byte, the first (the kernel's, from the page
//! cache) a tenth of all a load's samples. Here the reading thread maps the body a window at a
//! time and hands out records as ranges of the window; the decoders read them in place and
//! copy only payloads, once, into the blocks the loaded events keep.
//!
//! Invariants:
//! - Only complete records are ever mapped: the body is `[header_end, body_end)`, where
//!   `body_end` is just past the file's last `\n` when the read starts (found with `pread`
//!   from the end). Bytes after it are the torn tail, reported as it was by the line reader and
//!   never read through a mapping. strata's writers (and dsh's) only append past the end and
//!   truncate only a torn tail, so no writer changes a mapped byte; a program that rewrote or
//!   truncated the log's complete records while it is read could make the read see changed
//!   bytes or, on a mapping past the new end, stop the process with `SIGBUS`.
//! - Records, line numbers, seqs and errors are the line reader's: line 1 is the header, every
//!   record (without its `\n`) is one line, a record longer than the limit is refused with the
//!   line reader's error, the first error ends the read. A body whose torn tail is itself
//!   longer than the limit, or a file whose first window cannot be mapped, is left to the line
//!   reader.
//! - A window ends on a record boundary or at a record too long for it (then the next window
//!   starts at that record and is made long enough), and every record handed out lies wholly
//!   in one window. A batch of records holds its window (an `Arc`) until it is decoded, so a
//!   window is unmapped once its last batch is done: a load keeps only a few windows mapped.
//! - The log is a snapshot of its complete records when the read started: records appended
//!   while it runs are not read.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use crate::codec::{CodecError, Location};
use crate::decode_pool::RecordBatch;
use crate::error::StoreError;
use crate::store::TornInfo;

/// A mapped window of a log: the bytes records are read from in place.
pub(crate) type Window = Mmap;

/// Bytes mapped per window (a window grows for a longer record).
const WINDOW_LEN: usize = 4 * 1024 * 1024;

/// Bytes read per `pread` while looking for the last `\n` from the end.
const TAIL_CHUNK: u64 = 64 * 1024;

/// The body of a raw log (the records after the header), read through mapped windows.
pub(crate) struct MappedBody {
    file: File,
    path: PathBuf,
    max_record_len: usize,
    /// The file's length when the read started.
    file_len: u64,
    /// Just past the last complete record (the last `\n`) when the read started.
    body_end: u64,
    /// The current window and the file offset it starts at.
    window: Option<(Arc<Window>, u64)>,
    /// Invariant: the offset of the next record (`body_end` once every record is read).
    pos: u64,
    /// The line number of the next record.
    line: u64,
    /// The seq the next record's row should carry.
    seq: u64,
}

impl MappedBody {
    /// The body of the raw log in `file` (of length `file_len`, its header ending at
    /// `header_end`), or `None` when the line reader must read it: its torn tail is longer
    /// than `max_record_len`, or the file cannot be read from its end.
    pub(crate) fn open(
        file: &File,
        path: &Path,
        header_end: u64,
        file_len: u64,
        max_record_len: usize,
    ) -> Option<MappedBody> {
        let body_end = last_record_end(file, header_end, file_len, max_record_len)?;
        let mut body = MappedBody {
            file: file.try_clone().ok()?,
            path: path.to_path_buf(),
            max_record_len,
            file_len,
            body_end,
            window: None,
            pos: header_end,
            line: 2,
            seq: 0,
        };
        // A file system that cannot map files (some FUSE ones) is found here, not mid-read.
        if body.pos < body.body_end {
            body.map_next().ok()?;
        }
        Some(body)
    }

    /// Offset just past the last record handed out (header included).
    pub(crate) fn committed_offset(&self) -> u64 {
        self.pos
    }

    /// The unterminated bytes after the body, once every record is read.
    pub(crate) fn torn(&self) -> Option<TornInfo> {
        (self.pos == self.body_end && self.body_end < self.file_len).then_some(TornInfo {
            offset: self.body_end,
            len: self.file_len - self.body_end,
            n_recovered: 0,
        })
    }

    /// Adds the next records to `batch`, in place in their window, until it is full or the
    /// next record lies in another window; `Ok(false)` once the body has ended. On an error,
    /// the records before it are in `batch`.
    pub(crate) fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError> {
        while !batch.is_full() {
            // A batch holds one window: a record past it waits for the next batch.
            let Some(span) = self.next_span(batch.len() == 0)? else {
                break;
            };
            let Some((window, _)) = &self.window else {
                return Err(self.outside_window());
            };
            batch.push_mapped(window, self.line, self.seq, span.clone());
            self.advance(&span);
        }
        Ok(self.pos < self.body_end)
    }

    /// Hands the next record to `take(line, seq, bytes)`; `None` at the end of the body.
    pub(crate) fn next_record<T>(
        &mut self,
        take: impl FnOnce(u64, u64, &[u8]) -> T,
    ) -> Option<Result<T, StoreError>> {
        let span = match self.next_span(true) {
            Ok(span) => span?,
            Err(error) => return Some(Err(error)),
        };
        let Some(bytes) = self
            .window
            .as_ref()
            .and_then(|(window, _)| window.get(span.clone()))
        else {
            return Some(Err(self.outside_window()));
        };
        let taken = take(self.line, self.seq, bytes);
        self.advance(&span);
        Some(Ok(taken))
    }

    /// Cannot happen (a span is found in the current window); reported, never skipped.
    fn outside_window(&self) -> StoreError {
        StoreError::io(
            "read",
            &self.path,
            std::io::Error::other(format!("record at line {} outside its window", self.line)),
        )
    }

    /// Where the next record lies in the current window, mapping the next window first when
    /// it ends past this one (unless `!remap`); `None` at the end of the body, or when a new
    /// window is needed and `!remap`. A record over the limit is refused.
    fn next_span(&mut self, remap: bool) -> Result<Option<Range<usize>>, StoreError> {
        while self.pos < self.body_end {
            if let Some(span) = self.span_in_window() {
                if span.len() > self.max_record_len {
                    return Err(self.too_large());
                }
                return Ok(Some(span));
            }
            if !remap {
                return Ok(None);
            }
            self.map_next()?;
        }
        Ok(None)
    }

    /// The next record, when it ends inside the current window.
    fn span_in_window(&self) -> Option<Range<usize>> {
        let (window, window_start) = self.window.as_ref()?;
        let start = usize::try_from(self.pos.checked_sub(*window_start)?).ok()?;
        let end = start + memchr::memchr(b'\n', window.get(start..)?)?;
        Some(start..end)
    }

    /// Maps the window that starts at the next record: [`WINDOW_LEN`] bytes, or as many as
    /// that record needs, or to the body's end. The body ends with `\n`, so the record ends
    /// inside it.
    fn map_next(&mut self) -> Result<(), StoreError> {
        let rest = self.body_end - self.pos;
        let mut len = WINDOW_LEN as u64;
        if let Some((window, window_start)) = &self.window {
            // The current window held no end for the record at `pos`: it is longer than
            // what was left of that window, so make room for twice that (at least).
            let seen = window_start + window.len() as u64 - self.pos;
            len = len.max(seen.saturating_mul(2));
            if seen > self.max_record_len as u64 {
                return Err(self.too_large());
            }
        }
        let len = len.min(rest);
        self.window = None;
        let map_len = usize::try_from(len).map_err(|_| {
            StoreError::io("map", &self.path, std::io::ErrorKind::OutOfMemory.into())
        })?;
        // SAFETY: the range holds complete records of the log (before its last `\n` when the
        // read started), which no strata or dsh writer modifies or truncates (module
        // invariants); the mapping is read-only and private to this reader.
        let window = unsafe {
            MmapOptions::new()
                .offset(self.pos)
                .len(map_len)
                .populate()
                .map(&self.file)
        }
        .map_err(|source| StoreError::io("map", &self.path, source))?;
        self.window = Some((Arc::new(window), self.pos));
        Ok(())
    }

    /// The line reader's error for the record at `pos`.
    fn too_large(&self) -> StoreError {
        StoreError::from(CodecError::TooLarge {
            location: Location::line(self.line)
                .with_file(Some(&self.path))
                .with_seq(self.line.checked_sub(2)),
            offset: self.pos,
            limit: self.max_record_len,
        })
    }

    fn advance(&mut self, span: &Range<usize>) {
        self.pos += span.len() as u64 + 1;
        self.line += 1;
        self.seq += 1;
    }
}

/// Just past the last `\n` in `[header_end, file_len)` (or `header_end` when there is none),
/// read backwards with `pread`; `None` when the bytes after it are more than `max_record_len`
/// (the line reader reports that record) or the file cannot be read.
fn last_record_end(
    file: &File,
    header_end: u64,
    file_len: u64,
    max_record_len: usize,
) -> Option<u64> {
    let mut chunk = vec![0u8; TAIL_CHUNK as usize];
    let mut end = file_len;
    while end > header_end {
        if file_len - end > max_record_len as u64 {
            return None;
        }
        let start = end.saturating_sub(TAIL_CHUNK).max(header_end);
        let buf = chunk.get_mut(..usize::try_from(end - start).ok()?)?;
        file.read_exact_at(buf, start).ok()?;
        if let Some(index) = memchr::memrchr(b'\n', buf) {
            let body_end = start + index as u64 + 1;
            return (file_len - body_end <= max_record_len as u64).then_some(body_end);
        }
        end = start;
    }
    (file_len - header_end <= max_record_len as u64).then_some(header_end)
}

#[cfg(test)]
mod tests;
