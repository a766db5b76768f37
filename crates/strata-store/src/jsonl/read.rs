//! Reading a JSONL log: rows streamed from a raw or zstd file, decoded on the reading thread
//! or in the decode pool, with the checks that the file did not shrink under the reader.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_core::ingest::{ScanArena, ScannedRow};
use strata_core::{RawEvent, SessionHeader};

use crate::backend::{EventRows, LogStream, TornInfo};
use crate::decode_pool::{DecodePool, NoPages, RecordBatch, RecordDecoder, RecordSource};
use crate::error::StoreError;
use crate::file_io::ensure_not_shrunk;
use crate::zstd::ZstdStream;
use strata_format::codec::{scan_event_line_at, JsonlReader, Location, ReaderOptions};
use strata_format::zstd_frame::recoverable_prefix;
use strata_format::zstd_frame::Framing;

/// The byte source under a log's rows: the file itself, or its zstd plaintext. Both are read
/// with `read`, never through a memory map: a log shrinks under a reader whenever a writer
/// trims a torn tail or rolls back a failed append (strata's and dsh's do), or a user
/// truncates it, and a mapped page past the new end kills the reading process with `SIGBUS`.
/// A read sees a shorter file as an early end instead, which [`check_not_shrunk`] reports.
enum Source {
    Raw(JsonlReader<File>),
    Zstd(JsonlReader<ZstdStream>),
}

impl Source {
    /// Hands the next complete record to `take(line, seq, bytes)` (see
    /// [`JsonlReader::next_record`]), with the source's errors as store errors naming `path`.
    fn next_record<T>(
        &mut self,
        path: &Path,
        take: impl FnOnce(u64, u64, &[u8]) -> T,
    ) -> Option<Result<T, StoreError>> {
        match self {
            Source::Raw(reader) => reader
                .next_record(take)
                .map(|item| item.map_err(StoreError::from)),
            Source::Zstd(reader) => reader.next_record(take).map(|item| {
                item.map_err(|error| zstd_error(path, reader.get_ref().failure(), error))
            }),
        }
    }
}

/// The events of one V3 log file, streamed: contiguous seqs from 0 are required, the first bad
/// record ends the stream with an error naming file, line and seq, and a torn tail is recorded
/// (never returned) when the stream ends.
pub(crate) struct JsonlRows {
    source: Source,
    path: PathBuf,
    file_len: u64,
    /// Decodes records; a copy of `path` that helper threads can own.
    pub(super) decoder: RowDecoder,
    done: bool,
    torn: Option<TornInfo>,
}

impl JsonlRows {
    /// Opens `path` (raw, or zstd in dsh's framing when `zstd`) and reads its header.
    pub(crate) fn open(
        path: &Path,
        zstd: bool,
        max_record_len: usize,
    ) -> Result<JsonlRows, StoreError> {
        JsonlRows::open_with(path, zstd, Framing::Dsh, max_record_len)
    }

    /// [`JsonlRows::open`] taking a zstd file's frames under `framing`: dsh's (the header line
    /// alone in the first frame, as a writer needs it), or any.
    pub(crate) fn open_with(
        path: &Path,
        zstd: bool,
        framing: Framing,
        max_record_len: usize,
    ) -> Result<JsonlRows, StoreError> {
        let options = ReaderOptions {
            file: Some(path.to_path_buf()),
            max_record_len,
            ..ReaderOptions::default()
        };
        let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
        let file_len = file
            .metadata()
            .map_err(|source| StoreError::io("stat", path, source))?
            .len();
        let source = if zstd {
            let stream = ZstdStream::with_framing(file, framing)
                .map_err(|source| StoreError::io("decode", path, source))?;
            let reader =
                JsonlReader::new(stream, options).map_err(|error| zstd_error(path, None, error))?;
            let stream = reader.get_ref();
            if framing == Framing::Dsh
                && stream.first_frame_plain_end() != Some(reader.header_end())
            {
                if let Some(detail) = stream.failure() {
                    return Err(corrupt(path, detail.to_owned()));
                }
                return Err(StoreError::ForeignFraming {
                    path: path.to_path_buf(),
                });
            }
            Source::Zstd(reader)
        } else {
            Source::Raw(JsonlReader::new(file, options)?)
        };
        Ok(JsonlRows {
            source,
            path: path.to_path_buf(),
            file_len,
            decoder: RowDecoder {
                path: Arc::from(path),
                check_seqs: true,
            },
            done: false,
            torn: None,
        })
    }

    pub(crate) fn header(&self) -> &SessionHeader {
        match &self.source {
            Source::Raw(reader) => reader.header(),
            Source::Zstd(reader) => reader.header(),
        }
    }

    /// The rows as a stream, decoded in parallel on helper threads (see `decode_pool`).
    pub(crate) fn into_stream(self) -> LogStream<'static> {
        let header = self.header().clone();
        let location = self.path.display().to_string();
        LogStream::new(header, location, Some(2), DecodePool::new(self))
    }

    /// Records what the read left unread at the end of the file, or fails when the file
    /// shrank while it was read (what looks like a torn tail would be the cut).
    fn finish(&mut self) -> Result<(), StoreError> {
        self.done = true;
        let file = match &self.source {
            Source::Raw(reader) => reader.get_ref(),
            Source::Zstd(reader) => reader.get_ref().get_ref(),
        };
        ensure_not_shrunk(file, self.file_len)
            .map_err(|source| StoreError::io("read", &self.path, source))?;
        self.torn = match &self.source {
            // What the read itself found past its last complete record: the file may have
            // grown while it was read (a writer appending), so its length at open says
            // nothing about the end the read reached.
            Source::Raw(reader) => reader.torn_tail().map(|tail| TornInfo {
                offset: tail.offset,
                len: tail.len,
                n_recovered: 0,
            }),
            Source::Zstd(reader) => match reader.get_ref().torn() {
                Some(frame) => Some(TornInfo {
                    offset: frame.start,
                    len: self.file_len.saturating_sub(frame.start),
                    n_recovered: match reader.get_ref().framing() {
                        Framing::Dsh => torn_frame_records(&self.path, frame.start)?
                            .iter()
                            .filter(|&&byte| byte == b'\n')
                            .count(),
                        // The frame may be the whole file: count what the stream decoded of
                        // it rather than decode it again into memory, leaving out the header
                        // line when the frame holds its end.
                        Framing::Any => {
                            let header_in_frame = frame.plain_start < reader.header_end();
                            let n_lines = reader.get_ref().torn_frame_lines();
                            let n_events = n_lines.saturating_sub(u64::from(header_in_frame));
                            usize::try_from(n_events).unwrap_or(usize::MAX)
                        }
                    },
                }),
                None => None,
            },
        };
        Ok(())
    }

    /// Copies the next records into `batch` until it is full; `Ok(false)` once the log has
    /// ended. On an error, the records before it are in `batch`.
    fn copy_records(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError> {
        while !batch.is_full() {
            let pushed = self
                .source
                .next_record(&self.path, |line, seq, bytes| batch.push(line, seq, bytes));
            match pushed {
                None => return Ok(false),
                Some(Err(error)) => return Err(error),
                Some(Ok(())) => {}
            }
        }
        Ok(true)
    }
}

impl RecordSource for JsonlRows {
    type Decoder = RowDecoder;
    type Pages = NoPages;

    /// A JSONL log has no pages: only its own sequential read finds where records end.
    fn pages(&self) -> Option<Arc<NoPages>> {
        None
    }

    fn decoder(&self) -> RowDecoder {
        self.decoder.clone()
    }

    fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError> {
        if self.done {
            return Ok(false);
        }
        match self.copy_records(batch) {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.finish()?;
                Ok(false)
            }
            Err(error) => {
                self.done = true;
                Err(error)
            }
        }
    }

    fn next_row(&mut self) -> Option<Result<RawEvent, StoreError>> {
        self.next()
    }

    fn torn(&self) -> Option<TornInfo> {
        self.torn
    }

    fn progress(&self) -> Option<(u64, u64)> {
        EventRows::progress(self)
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

/// Turns one record of a log into the row [`JsonlRows`] yields: decoded, and (for store reads)
/// required to carry the seq of its position. The same on the reading thread and in the decode
/// pool, so both report a bad record with the same error.
#[derive(Clone)]
pub(crate) struct RowDecoder {
    pub(super) path: Arc<Path>,
    /// Whether rows must carry seqs `0, 1, 2, …` (store reads). A file read for a tool leaves
    /// seqs to the core, which reports a gap with its own rule and upstream's message.
    pub(super) check_seqs: bool,
}

impl RecordDecoder for RowDecoder {
    fn decode<'a>(
        &self,
        line: u64,
        seq: u64,
        bytes: &'a [u8],
        arena: Option<&'a ScanArena>,
    ) -> Result<ScannedRow<'a>, StoreError> {
        let location = || {
            Location::line(line)
                .with_file(Some(&self.path))
                .with_seq(Some(seq))
        };
        let row = scan_event_line_at(bytes, arena, location)?;
        let event = row.envelope();
        if self.check_seqs && event.seq_number() != Some(seq) {
            return Err(StoreError::Corrupt {
                location: self.path.display().to_string(),
                line: Some(line),
                seq: Some(seq),
                detail: format!(
                    "seq out of order: expected {seq}, found {}",
                    event
                        .seq_value()
                        .map_or_else(|| "none".to_owned(), |value| value.to_string())
                ),
            });
        }
        Ok(row)
    }
}

impl Iterator for JsonlRows {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let decoder = &self.decoder;
        let decoded = self.source.next_record(&self.path, |line, seq, bytes| {
            decoder
                .decode(line, seq, bytes, None)
                .map(ScannedRow::into_raw)
        });
        match decoded {
            None => self.finish().err().map(Err),
            Some(Ok(Ok(event))) => Some(Ok(event)),
            Some(Err(error)) | Some(Ok(Err(error))) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl EventRows for JsonlRows {
    fn torn(&self) -> Option<TornInfo> {
        self.torn
    }

    fn progress(&self) -> Option<(u64, u64)> {
        let done = match &self.source {
            Source::Raw(reader) => reader.committed_offset(),
            Source::Zstd(reader) => reader.get_ref().compressed_offset(),
        };
        Some((done.min(self.file_len), self.file_len))
    }
}

/// The complete records a torn final zstd frame starting at `start` decodes to (best effort).
pub(super) fn torn_frame_records(path: &Path, start: u64) -> Result<Vec<u8>, StoreError> {
    let mut file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|source| StoreError::io("read", path, source))?;
    let mut decoder = zstd::stream::raw::Decoder::new()
        .map_err(|source| StoreError::io("decode", path, source))?;
    let mut plain = Vec::new();
    if strata_format::zstd_frame::decompress(&mut decoder, &bytes, &mut plain, false).is_err() {
        plain.clear();
    }
    let keep = recoverable_prefix(&plain).len();
    plain.truncate(keep);
    Ok(plain)
}

fn corrupt(path: &Path, detail: String) -> StoreError {
    StoreError::Corrupt {
        location: path.display().to_string(),
        line: None,
        seq: None,
        detail,
    }
}

/// Prefers the frame-level failure (checksum, torn record in a complete frame) over the
/// generic read error it surfaced as.
fn zstd_error(
    path: &Path,
    failure: Option<&str>,
    error: strata_format::codec::CodecError,
) -> StoreError {
    match (failure, &error) {
        (Some(detail), strata_format::codec::CodecError::Io { .. }) => {
            corrupt(path, detail.to_owned())
        }
        _ => StoreError::from(error),
    }
}

pub(super) fn read_all(path: &Path, mut file: File) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| StoreError::io("read", path, source))?;
    Ok(bytes)
}

/// Reads only a log's header: the first line (raw) or the first frame (zstd).
pub(crate) fn read_header(path: &Path, zstd: bool) -> Result<SessionHeader, StoreError> {
    let options = ReaderOptions {
        file: Some(path.to_path_buf()),
        chunk_len: 8 * 1024,
        ..ReaderOptions::default()
    };
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    if !zstd {
        return Ok(JsonlReader::new(file, options)?.header().clone());
    }
    let stream = ZstdStream::new(file).map_err(|source| StoreError::io("decode", path, source))?;
    match JsonlReader::new(stream, options) {
        Ok(reader) => Ok(reader.header().clone()),
        Err(error) => Err(zstd_error(path, None, error)),
    }
}
