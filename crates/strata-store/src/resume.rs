//! Lazy opens of JSONL logs (issue 9): the checkpoint sidecar, the rows after it, an event
//! source over the offset index, and the appender that keeps both sidecars current.
//!
//! Beside `session.v3.jsonl[.zstd]` live `session.v3.ckpt` (a [`checkpoint`](strata_format::checkpoint)
//! record) and `session.v3.idx` (an [`OffsetIndex`]). A resumable read uses them only after
//! checking the checkpoint's evidence against the log: same header line and file (device,
//! inode), log at least as long as the covered prefix, the last covered record still where
//! the checkpoint says, hashing to the same value, ending exactly at the covered length, and
//! indexed at that position. Anything else — a missing, torn, foreign, stale or
//! unknown-version sidecar — and the log is read whole, after which the sidecars are rebuilt.
//!
//! Invariants:
//! - The sidecars are caches. They are written after the log bytes they describe are durable
//!   (the writer records a checkpoint only after the append that made its events durable) and
//!   never fsynced: a crash may tear or lose them, which the checks above detect.
//! - A checkpoint file is replaced whole (temp file + rename), never written in place.
//! - Reading the rows after a checkpoint follows the same torn-tail and corruption rules as a
//!   full read: a torn final line or frame ends the rows (its complete records are served), a
//!   bad complete record is an error.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use strata_core::{Checkpoint, EventSource, RawEvent, Seq, SessionHeader, SourceError};

use crate::backend::{Batch, EventRows, LogAppender, LogStream, ResumePoint, TornInfo};
use crate::error::StoreError;
use crate::file_io::ensure_not_shrunk;
use crate::index::{
    IndexIdentity, OffsetIndex, RecordPos, ENTRY_LEN as INDEX_ENTRY_LEN,
    HEADER_LEN as INDEX_HEADER_LEN, INDEX_FILE_NAME,
};
use strata_format::checkpoint::{self, fnv64, fnv64_hex, Evidence};
use strata_format::codec::{decode_event_line, Location};
use strata_format::frames::scan_frames;
use strata_format::lines::{LineScanner, LineScannerConfig};
use strata_format::zstd_frame::{decompress, recoverable_prefix};

/// The file name of a V3 log's checkpoint sidecar.
pub const CHECKPOINT_FILE_NAME: &str = "session.v3.ckpt";

/// The largest checkpoint record read (a surface of millions of nodes still fits).
const MAX_CHECKPOINT_LEN: u64 = 256 << 20;

/// The largest zstd frame plaintext decoded for one lookup.
const MAX_FRAME_PLAIN: usize = 1 << 30;

const CHUNK_LEN: usize = 256 * 1024;

fn sidecar(log: &Path, name: &str) -> PathBuf {
    log.with_file_name(name)
}

/// The positions and last record of the rows a tail read served, for the index.
#[derive(Debug, Default)]
pub(crate) struct TailLog {
    /// One entry per row served, in seq order from the read's first seq.
    pub(crate) positions: Vec<RecordPos>,
    /// The last row served: its position and the FNV-1a 64 of its line.
    pub(crate) last: Option<(RecordPos, u64)>,
}

/// A resumable read of a JSONL log: the rows after a verified checkpoint.
pub(crate) struct Resumable {
    pub(crate) stream: LogStream<'static>,
    pub(crate) tail: Arc<Mutex<TailLog>>,
    pub(crate) identity: IndexIdentity,
    pub(crate) n_checkpointed: u64,
}

/// Reads the header line of a log (without its `\n`).
pub(crate) fn header_line(path: &Path, zstd: bool, max_len: usize) -> Result<Vec<u8>, StoreError> {
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let source: Box<dyn Read> = if zstd {
        Box::new(
            crate::zstd::ZstdStream::new(file)
                .map_err(|source| StoreError::io("decode", path, source))?,
        )
    } else {
        Box::new(file)
    };
    let mut line = Vec::new();
    BufReader::with_capacity(8 * 1024, source)
        .take(max_len as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|source| StoreError::io("read", path, source))?;
    if line.pop() != Some(b'\n') {
        return Err(StoreError::Corrupt {
            location: path.display().to_string(),
            line: Some(1),
            seq: None,
            detail: "the header line does not end".into(),
        });
    }
    Ok(line)
}

/// The verified checkpoint of the log at `log`, with the rows after it, or `None` when there
/// is no usable one (see the module docs). Never fails: a problem with the sidecars, or with
/// the log bytes they point at, means "read the whole log", which reports log problems itself.
pub(crate) fn resume_stream(
    log: &Path,
    zstd: bool,
    header: &SessionHeader,
    id: &str,
    max_record_len: usize,
) -> Option<Resumable> {
    let verified = verify(log, zstd, id, max_record_len).ok()?;
    let (checkpoint, evidence, identity, index) = verified;
    let file = File::open(log).ok()?;
    let file_len = file.metadata().ok()?.len();
    let tail = Arc::new(Mutex::new(TailLog::default()));
    let rows = TailRows::new(
        log,
        zstd,
        evidence.log_bytes,
        checkpoint.n_events,
        file_len,
        max_record_len,
        Arc::clone(&tail),
    )
    .ok()?;
    let source = JsonlSource {
        path: log.to_path_buf(),
        file,
        zstd,
        index,
        max_record_len,
    };
    let n_checkpointed = checkpoint.n_events;
    let point = ResumePoint {
        checkpoint,
        source: Arc::new(source),
    };
    let stream = LogStream::resuming(
        header.clone(),
        log.display().to_string(),
        Some(2),
        rows,
        point,
    );
    Some(Resumable {
        stream,
        tail,
        identity,
        n_checkpointed,
    })
}

type Verified = (Checkpoint, Evidence, IndexIdentity, OffsetIndex);

/// Checks the checkpoint sidecar of `log` against it; `Err` names why it is not usable.
fn verify(log: &Path, zstd: bool, id: &str, max_record_len: usize) -> Result<Verified, String> {
    let path = sidecar(log, CHECKPOINT_FILE_NAME);
    let len = fs::metadata(&path)
        .map_err(|error| error.to_string())?
        .len();
    if len > MAX_CHECKPOINT_LEN {
        return Err(format!("{len} bytes is too large for a checkpoint"));
    }
    let bytes = fs::read(&path).map_err(|error| error.to_string())?;
    // The offset index has a slot for every covered event (checked below): its size bounds
    // what the record may claim before the record is expanded.
    let index_len = fs::metadata(sidecar(log, INDEX_FILE_NAME)).map_or(0, |meta| meta.len());
    let max_events = index_len.saturating_sub(INDEX_HEADER_LEN) / INDEX_ENTRY_LEN;
    let (session_id, evidence, checkpoint) =
        checkpoint::decode(&bytes, max_events).map_err(|error| error.to_string())?;
    if session_id != id {
        return Err(format!("it names session {session_id:?}"));
    }
    if evidence.n_events == 0 {
        return Err("it covers no events".into());
    }
    let header = header_line(log, zstd, max_record_len).map_err(|error| error.to_string())?;
    let identity = IndexIdentity::of(log, zstd, fnv64(&header)).map_err(|e| e.to_string())?;
    if evidence.header_hash != fnv64_hex(&header)
        || evidence.file != Some([identity.dev, identity.ino])
    {
        return Err("it belongs to another log file".into());
    }
    let file = File::open(log).map_err(|error| error.to_string())?;
    let file_len = file.metadata().map_err(|error| error.to_string())?.len();
    if file_len < evidence.log_bytes {
        return Err(format!(
            "the log has {file_len} bytes, fewer than the {} it covers",
            evidence.log_bytes
        ));
    }
    let pos = RecordPos {
        frame: evidence.last_frame,
        offset: u32::try_from(evidence.last_offset).map_err(|error| error.to_string())?,
    };
    let (line, end) = read_record(&file, pos, zstd, max_record_len)
        .map_err(|error| format!("its last record does not read: {error}"))?;
    if end != evidence.log_bytes || fnv64_hex(&line) != evidence.last_hash {
        return Err("its last record differs from the log's".into());
    }
    let index = OffsetIndex::open(&sidecar(log, INDEX_FILE_NAME), &identity)
        .map_err(|error| error.to_string())?
        .ok_or("the offset index is missing or belongs to another log")?;
    if index
        .get(evidence.n_events - 1)
        .map_err(|e| e.to_string())?
        != Some(pos)
    {
        return Err("the offset index disagrees with it".into());
    }
    Ok((checkpoint, evidence, identity, index))
}

/// The record at `pos` without its `\n`, and where the covered log would end if it were the
/// last record: raw, just past its `\n`; zstd, the end of its frame, and only when it is the
/// frame's last record (otherwise `u64::MAX`).
fn read_record(
    file: &File,
    pos: RecordPos,
    zstd: bool,
    max_record_len: usize,
) -> io::Result<(Vec<u8>, u64)> {
    if zstd {
        let (plain, end) = read_frame(file, pos.frame)?;
        let start = pos.offset as usize;
        let rest = plain
            .get(start..)
            .ok_or_else(|| invalid_data("the record offset is past the frame"))?;
        let len = rest
            .iter()
            .position(|byte| *byte == b'\n')
            .ok_or_else(|| invalid_data("the record does not end in its frame"))?;
        let is_last = start + len + 1 == plain.len();
        return Ok((rest[..len].to_vec(), if is_last { end } else { u64::MAX }));
    }
    let mut line = Vec::new();
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut at = pos.frame;
    loop {
        let read = file.read_at(&mut chunk, at)?;
        if read == 0 {
            return Err(invalid_data("the record does not end"));
        }
        if let Some(newline) = chunk[..read].iter().position(|byte| *byte == b'\n') {
            line.extend_from_slice(&chunk[..newline]);
            let end = pos.frame + line.len() as u64 + 1;
            return Ok((line, end));
        }
        line.extend_from_slice(&chunk[..read]);
        at += read as u64;
        if line.len() > max_record_len {
            return Err(invalid_data("the record is longer than the record limit"));
        }
    }
}

/// Decompresses the complete zstd frame at `start` (checksum verified): its plaintext and the
/// offset just past it.
fn read_frame(file: &File, start: u64) -> io::Result<(Vec<u8>, u64)> {
    use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
    let mut decoder = Decoder::new()?;
    let mut plain: Vec<u8> = Vec::new();
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut at = start;
    loop {
        let read = file.read_at(&mut chunk, at)?;
        if read == 0 {
            return Err(invalid_data("the frame ends early"));
        }
        let mut input = InBuffer::around(&chunk[..read]);
        loop {
            if plain.capacity() - plain.len() < 32 * 1024 {
                plain.reserve(plain.capacity().max(64 * 1024));
            }
            let position = plain.len();
            let mut output = OutBuffer::around_pos(&mut plain, position);
            let hint = decoder.run(&mut input, &mut output)?;
            let produced = output.pos() - position;
            if plain.len() > MAX_FRAME_PLAIN {
                return Err(invalid_data("the frame's plaintext is too large"));
            }
            if hint == 0 {
                return Ok((plain, at + input.pos() as u64));
            }
            if input.pos() == read && produced == 0 {
                break;
            }
        }
        at += read as u64;
    }
}

fn invalid_data(detail: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, detail.to_owned())
}

/// Fetches events of a JSONL log through its offset index (one `pread`, or one frame).
struct JsonlSource {
    path: PathBuf,
    file: File,
    zstd: bool,
    index: OffsetIndex,
    max_record_len: usize,
}

impl JsonlSource {
    fn position(&self, seq: Seq) -> Result<RecordPos, SourceError> {
        self.index
            .get(seq.get())
            .map_err(|error| SourceError::new(seq.get(), error))?
            .ok_or_else(|| SourceError::new(seq.get(), "the offset index has no valid entry"))
    }

    fn decode(&self, seq: Seq, line: &[u8]) -> Result<RawEvent, SourceError> {
        let location = Location {
            file: Some(self.path.clone()),
            line: seq.get() + 2,
            seq: Some(seq.get()),
        };
        decode_event_line(line, &location).map_err(|error| SourceError::new(seq.get(), error))
    }
}

impl EventSource for JsonlSource {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        let pos = self.position(seq)?;
        let (line, _) = read_record(&self.file, pos, self.zstd, self.max_record_len)
            .map_err(|error| SourceError::new(seq.get(), error))?;
        self.decode(seq, &line)
    }

    fn load_many(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        if !self.zstd {
            return seqs.iter().map(|seq| self.load(*seq)).collect();
        }
        // Seqs ascend, and so do their frames: decompress each frame once.
        let mut frame: Option<(u64, Vec<u8>)> = None;
        let mut rows = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let pos = self.position(*seq)?;
            if frame.as_ref().map(|(start, _)| *start) != Some(pos.frame) {
                let (plain, _) = read_frame(&self.file, pos.frame)
                    .map_err(|error| SourceError::new(seq.get(), error))?;
                frame = Some((pos.frame, plain));
            }
            let plain = frame.as_ref().map_or(&[][..], |(_, plain)| plain);
            let rest = plain.get(pos.offset as usize..).ok_or_else(|| {
                SourceError::new(seq.get(), "the record offset is past its frame")
            })?;
            let len = rest
                .iter()
                .position(|byte| *byte == b'\n')
                .ok_or_else(|| SourceError::new(seq.get(), "the record does not end"))?;
            rows.push(self.decode(*seq, &rest[..len])?);
        }
        Ok(rows)
    }

    fn load_range(&self, start: u64, end: u64) -> Result<Vec<RawEvent>, SourceError> {
        // Sequentially, without the index: materializing must not depend on every entry.
        let failed = |error: StoreError| SourceError::new(start, error);
        let offset = body_offset(&self.path, self.zstd, self.max_record_len).map_err(failed)?;
        let walk =
            RecordWalk::new(&self.path, self.zstd, offset, self.max_record_len).map_err(failed)?;
        let mut rows = Vec::with_capacity(usize::try_from(end.saturating_sub(start)).unwrap_or(0));
        for (seq, record) in (0..end).zip(walk) {
            let (_, line) = record.map_err(|error| SourceError::new(seq, error))?;
            if seq >= start {
                let seq = Seq::new(seq).map_err(|error| SourceError::new(seq, error))?;
                rows.push(self.decode(seq, &line)?);
            }
        }
        Ok(rows)
    }
}

/// The records of a JSONL log from a byte offset on (a record or frame boundary), with their
/// positions: raw lines, or the lines of complete zstd frames. A torn final line or frame ends
/// the records (a torn frame's complete records are served first) and is reported by `torn`.
pub(crate) struct RecordWalk {
    path: PathBuf,
    file: File,
    zstd: bool,
    file_len: u64,
    /// Raw: the line scanner. zstd: unused.
    scanner: LineScanner,
    chunk: Vec<u8>,
    /// zstd: compressed bytes not yet decoded; `buf[0]` is at file offset `buf_offset`.
    buf: Vec<u8>,
    buf_offset: u64,
    /// File offset of the next read.
    read_offset: u64,
    eof: bool,
    ready: VecDeque<(RecordPos, Vec<u8>)>,
    torn: Option<TornInfo>,
    failed: bool,
}

impl RecordWalk {
    /// Walks the log at `path` from byte `offset`.
    pub(crate) fn new(
        path: &Path,
        zstd: bool,
        offset: u64,
        max_record_len: usize,
    ) -> Result<RecordWalk, StoreError> {
        let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
        let file_len = file
            .metadata()
            .map_err(|source| StoreError::io("stat", path, source))?
            .len();
        Ok(RecordWalk {
            path: path.to_path_buf(),
            file,
            zstd,
            file_len,
            scanner: LineScanner::new(LineScannerConfig {
                max_record_len,
                first_line: 1,
                first_offset: offset,
            }),
            chunk: vec![0; CHUNK_LEN],
            buf: Vec::new(),
            buf_offset: offset,
            read_offset: offset,
            eof: false,
            ready: VecDeque::new(),
            torn: None,
            failed: false,
        })
    }

    /// The torn end the walk stopped before, once it has ended.
    pub(crate) fn torn(&self) -> Option<TornInfo> {
        self.torn
    }

    fn corrupt(&mut self, detail: String) -> StoreError {
        self.failed = true;
        StoreError::Corrupt {
            location: self.path.display().to_string(),
            line: None,
            seq: None,
            detail,
        }
    }

    /// Reads the next chunk; `false` at the end of the file.
    fn read_chunk(&mut self) -> Result<usize, StoreError> {
        let read = loop {
            match self.file.read_at(&mut self.chunk, self.read_offset) {
                Ok(read) => break read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.failed = true;
                    return Err(StoreError::io("read", &self.path, source));
                }
            }
        };
        self.read_offset += read as u64;
        self.eof = read == 0;
        if self.eof {
            // An end before the length the walk began with is a cut, not the log's end.
            if let Err(source) = ensure_not_shrunk(&self.file, self.file_len) {
                self.failed = true;
                return Err(StoreError::io("read", &self.path, source));
            }
        }
        Ok(read)
    }

    fn fill_raw(&mut self) -> Result<(), StoreError> {
        let read = self.read_chunk()?;
        if read == 0 {
            if let Some(fragment) = self.scanner.trailing_fragment() {
                self.torn = Some(TornInfo {
                    offset: fragment.offset,
                    len: self.file_len.saturating_sub(fragment.offset),
                    n_recovered: 0,
                });
            }
            return Ok(());
        }
        let mut rest = &self.chunk[..read];
        loop {
            match self.scanner.next_record(&mut rest) {
                Ok(Some(record)) => self.ready.push_back((
                    RecordPos {
                        frame: record.offset,
                        offset: 0,
                    },
                    record.bytes.to_vec(),
                )),
                Ok(None) => return Ok(()),
                Err(error) => return Err(self.corrupt(error.to_string())),
            }
        }
    }

    fn fill_zstd(&mut self) -> Result<(), StoreError> {
        let read = self.read_chunk()?;
        self.buf.extend_from_slice(&self.chunk[..read]);
        let scan = match scan_frames(&self.buf) {
            Ok(scan) => scan,
            Err(error) => {
                let detail = format!("{error} (relative to offset {})", self.buf_offset);
                return Err(self.corrupt(detail));
            }
        };
        let mut decoder = zstd::stream::raw::Decoder::new()
            .map_err(|source| StoreError::io("decode", &self.path, source))?;
        let mut plain = Vec::new();
        let mut consumed = 0;
        for frame in &scan.frames {
            let start = self.buf_offset + frame.start as u64;
            if let Err(error) = decompress(
                &mut decoder,
                &self.buf[frame.start..frame.end],
                &mut plain,
                true,
            ) {
                return Err(self.corrupt(format!(
                    "zstd frame at offset {start} does not decompress: {error}"
                )));
            }
            if plain.last().is_some_and(|byte| *byte != b'\n') {
                return Err(self.corrupt(format!(
                    "complete zstd frame at offset {start} contains a torn JSONL record"
                )));
            }
            self.queue_lines(start, &plain)?;
            consumed = frame.end;
        }
        self.buf.drain(..consumed);
        self.buf_offset += consumed as u64;
        if read == 0 && !self.buf.is_empty() {
            // The file ends inside a frame: a torn append. Serve its complete records.
            let start = self.buf_offset;
            if decompress(&mut decoder, &self.buf, &mut plain, false).is_err() {
                plain.clear();
            }
            let keep = recoverable_prefix(&plain).len();
            plain.truncate(keep);
            let n_recovered = plain.iter().filter(|byte| **byte == b'\n').count();
            self.queue_lines(start, &plain)?;
            self.torn = Some(TornInfo {
                offset: start,
                len: self.file_len.saturating_sub(start),
                n_recovered,
            });
            self.buf.clear();
        }
        Ok(())
    }

    fn queue_lines(&mut self, frame: u64, plain: &[u8]) -> Result<(), StoreError> {
        let mut offset = 0_usize;
        for line in plain.split_inclusive(|byte| *byte == b'\n') {
            let Ok(in_frame) = u32::try_from(offset) else {
                return Err(self.corrupt(format!(
                    "zstd frame at offset {frame} holds more than 4 GiB of records"
                )));
            };
            let bytes = line.strip_suffix(b"\n").unwrap_or(line);
            self.ready.push_back((
                RecordPos {
                    frame,
                    offset: in_frame,
                },
                bytes.to_vec(),
            ));
            offset += line.len();
        }
        Ok(())
    }
}

impl Iterator for RecordWalk {
    type Item = Result<(RecordPos, Vec<u8>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Some(Ok(record));
            }
            if self.eof || self.failed {
                return None;
            }
            let filled = if self.zstd {
                self.fill_zstd()
            } else {
                self.fill_raw()
            };
            if let Err(error) = filled {
                return Some(Err(error));
            }
        }
    }
}

/// The rows after a checkpoint, decoded and checked for contiguous seqs, their positions
/// recorded in a [`TailLog`].
struct TailRows {
    walk: RecordWalk,
    next_seq: u64,
    done: bool,
    log: Arc<Mutex<TailLog>>,
}

impl TailRows {
    fn new(
        path: &Path,
        zstd: bool,
        offset: u64,
        first_seq: u64,
        file_len: u64,
        max_record_len: usize,
        log: Arc<Mutex<TailLog>>,
    ) -> Result<TailRows, StoreError> {
        let mut walk = RecordWalk::new(path, zstd, offset, max_record_len)?;
        walk.file_len = file_len;
        Ok(TailRows {
            walk,
            next_seq: first_seq,
            done: false,
            log,
        })
    }
}

impl Iterator for TailRows {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let (pos, line) = match self.walk.next() {
            None => {
                self.done = true;
                return None;
            }
            Some(Err(error)) => {
                self.done = true;
                return Some(Err(error));
            }
            Some(Ok(record)) => record,
        };
        let expected = self.next_seq;
        let location = Location {
            file: Some(self.walk.path.clone()),
            line: expected + 2,
            seq: Some(expected),
        };
        let event = match decode_event_line(&line, &location) {
            Ok(event) => event,
            Err(error) => {
                self.done = true;
                return Some(Err(error.into()));
            }
        };
        if event.seq_number() != Some(expected) {
            self.done = true;
            return Some(Err(StoreError::Corrupt {
                location: self.walk.path.display().to_string(),
                line: Some(expected + 2),
                seq: Some(expected),
                detail: format!(
                    "seq out of order: expected {expected}, found {}",
                    event
                        .seq_value()
                        .map_or_else(|| "none".to_owned(), |value| value.to_string())
                ),
            }));
        }
        self.next_seq += 1;
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.positions.push(pos);
        log.last = Some((pos, fnv64(&line)));
        Some(Ok(event))
    }
}

impl EventRows for TailRows {
    fn torn(&self) -> Option<TornInfo> {
        self.walk.torn()
    }

    fn progress(&self) -> Option<(u64, u64)> {
        Some((
            self.walk.read_offset.min(self.walk.file_len),
            self.walk.file_len,
        ))
    }
}

/// Where the events of a log start: just past the header line (raw) or frame (zstd).
fn body_offset(path: &Path, zstd: bool, max_record_len: usize) -> Result<u64, StoreError> {
    if !zstd {
        return Ok(header_line(path, false, max_record_len)?.len() as u64 + 1);
    }
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    read_frame(&file, 0)
        .map(|(_, end)| end)
        .map_err(|source| StoreError::io("read the header frame of", path, source))
}

/// A JSONL appender that keeps the offset index current and records checkpoints.
pub(crate) struct SidecarAppender {
    inner: Box<dyn LogAppender>,
    id: String,
    log: PathBuf,
    /// A read handle on the log, to learn its length after a zstd append (`None`: no
    /// sidecars are kept).
    file: Option<File>,
    zstd: bool,
    identity: IndexIdentity,
    /// `None` once the index could not be kept current: no more checkpoints then.
    index: Option<OffsetIndex>,
    /// Invariant: the log's length in bytes.
    size: u64,
    /// The last record: position and FNV-1a 64 of its line.
    last: Option<(RecordPos, u64)>,
}

impl SidecarAppender {
    /// Wraps the appender of the log at `log` (`id`), whose events the index must describe:
    /// `tail` when a resumed read served the rows after a checkpoint of `n_checkpointed`
    /// events (entries before it are kept), else rebuilt by walking the whole log. Sidecar
    /// trouble never fails the open: the appender then keeps no sidecars.
    pub(crate) fn new(
        inner: Box<dyn LogAppender>,
        id: &str,
        log: &Path,
        zstd: bool,
        max_record_len: usize,
        resumed: Option<(IndexIdentity, u64, &TailLog)>,
    ) -> SidecarAppender {
        let mut appender = SidecarAppender {
            id: id.to_owned(),
            log: log.to_path_buf(),
            file: None,
            zstd,
            identity: IndexIdentity {
                zstd,
                header_hash: 0,
                dev: 0,
                ino: 0,
            },
            index: None,
            size: 0,
            last: None,
            inner,
        };
        let index_path = sidecar(log, INDEX_FILE_NAME);
        let ready = appender.start(&index_path, max_record_len, resumed);
        if ready.is_err() {
            appender.index = None;
            appender.file = None;
            // A stale checkpoint must not outlive the index it relies on.
            let _ = fs::remove_file(sidecar(log, CHECKPOINT_FILE_NAME));
            crate::powerloss::note!(Unlink(sidecar(log, CHECKPOINT_FILE_NAME)));
        }
        appender
    }

    fn start(
        &mut self,
        index_path: &Path,
        max_record_len: usize,
        resumed: Option<(IndexIdentity, u64, &TailLog)>,
    ) -> Result<(), StoreError> {
        let file =
            File::open(&self.log).map_err(|source| StoreError::io("open", &self.log, source))?;
        self.size = file
            .metadata()
            .map_err(|source| StoreError::io("stat", &self.log, source))?
            .len();
        self.file = Some(file);
        match resumed {
            Some((identity, n_checkpointed, tail)) => {
                self.identity = identity;
                let mut index = OffsetIndex::open_or_create(index_path, &identity)?;
                index.write_from(n_checkpointed, &tail.positions)?;
                self.last = tail.last;
                if self.last.is_none() {
                    // No rows after the checkpoint: its last record is the log's.
                    self.last = last_covered(&self.log, index_path, &identity, n_checkpointed);
                }
                self.index = Some(index);
                Ok(())
            }
            None => self.rebuild(index_path, max_record_len),
        }
    }

    /// Rebuilds the index from the whole log.
    fn rebuild(&mut self, index_path: &Path, max_record_len: usize) -> Result<(), StoreError> {
        let header = header_line(&self.log, self.zstd, max_record_len)?;
        self.identity = IndexIdentity::of(&self.log, self.zstd, fnv64(&header))?;
        let mut index = OffsetIndex::open_or_create(index_path, &self.identity)?;
        let start = body_offset(&self.log, self.zstd, max_record_len)?;
        let mut walk = RecordWalk::new(&self.log, self.zstd, start, max_record_len)?;
        let mut batch = Vec::with_capacity(64 * 1024);
        let mut first_seq = 0_u64;
        let mut last = None;
        for record in walk.by_ref() {
            let (pos, line) = record?;
            last = Some((pos, fnv64(&line)));
            batch.push(pos);
            if batch.len() == batch.capacity() {
                index.write_from(first_seq, &batch)?;
                first_seq += batch.len() as u64;
                batch.clear();
            }
        }
        index.write_from(first_seq, &batch)?;
        let n_indexed = first_seq + batch.len() as u64;
        if n_indexed != self.inner.next_seq() || walk.torn().is_some() {
            return Err(StoreError::StaleCheckpoint {
                location: self.log.display().to_string(),
                detail: format!(
                    "indexed {n_indexed} records, but the log holds {} events",
                    self.inner.next_seq()
                ),
            });
        }
        self.index = Some(index);
        self.last = last;
        Ok(())
    }
}

/// The last covered record of a checkpoint, read back through the index.
fn last_covered(
    log: &Path,
    index_path: &Path,
    identity: &IndexIdentity,
    n_events: u64,
) -> Option<(RecordPos, u64)> {
    let index = OffsetIndex::open(index_path, identity).ok()??;
    let pos = index.get(n_events.checked_sub(1)?).ok()??;
    let file = File::open(log).ok()?;
    let (line, _) = read_record(&file, pos, identity.zstd, usize::MAX).ok()?;
    Some((pos, fnv64(&line)))
}

impl LogAppender for SidecarAppender {
    fn next_seq(&self) -> u64 {
        self.inner.next_seq()
    }

    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let first_seq = self.inner.next_seq();
        self.inner.append(batch)?;
        if self.index.is_none() {
            return Ok(());
        }
        let before = self.size;
        self.size = if self.zstd {
            match self.file.as_ref().map(File::metadata) {
                Some(Ok(metadata)) => metadata.len(),
                _ => {
                    // Without the length, offsets are unknown: stop keeping sidecars.
                    self.index = None;
                    return Ok(());
                }
            }
        } else {
            before + batch.jsonl.len() as u64
        };
        let mut positions = Vec::with_capacity(batch.events.len());
        let mut last_line = None;
        let mut offset = 0_u64;
        for line in batch.jsonl.split_inclusive(|byte| *byte == b'\n') {
            let pos = if self.zstd {
                match u32::try_from(offset) {
                    Ok(in_frame) => RecordPos {
                        frame: before,
                        offset: in_frame,
                    },
                    Err(_) => {
                        self.index = None;
                        return Ok(());
                    }
                }
            } else {
                RecordPos {
                    frame: before + offset,
                    offset: 0,
                }
            };
            positions.push(pos);
            last_line = Some((pos, line));
            offset += line.len() as u64;
        }
        // Only the batch's last record is evidence for a checkpoint: hash that one alone.
        if let Some((pos, line)) = last_line {
            self.last = Some((pos, fnv64(line.strip_suffix(b"\n").unwrap_or(line))));
        }
        if let Some(index) = &mut self.index {
            if index.write_from(first_seq, &positions).is_err() {
                self.index = None;
            }
        }
        Ok(())
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let n_events = checkpoint.n_events;
        let (Some(index), Some((last, last_hash))) = (&self.index, self.last) else {
            return Ok(());
        };
        if n_events == 0 || n_events != self.inner.next_seq() || index.n_entries() != n_events {
            return Ok(());
        }
        let evidence = Evidence {
            n_events,
            log_bytes: self.size,
            last_frame: last.frame,
            last_offset: u64::from(last.offset),
            last_hash: format!("{last_hash:016x}"),
            header_hash: format!("{:016x}", self.identity.header_hash),
            file: Some([self.identity.dev, self.identity.ino]),
        };
        let record = checkpoint::encode(&self.id, checkpoint, &evidence);
        let path = sidecar(&self.log, CHECKPOINT_FILE_NAME);
        let temp = sidecar(&self.log, "session.v3.ckpt.tmp");
        fs::write(&temp, &record)
            .and_then(|()| {
                crate::powerloss::note!(Create(temp.clone()));
                crate::powerloss::note!(SetLen {
                    path: temp.clone(),
                    len: 0
                });
                crate::powerloss::note!(Write {
                    path: temp.clone(),
                    offset: 0,
                    bytes: record.clone()
                });
                fs::rename(&temp, &path)
            })
            .map_err(|source| StoreError::io("write checkpoint", &path, source))?;
        crate::powerloss::note!(Rename {
            from: temp,
            to: path
        });
        Ok(())
    }
}

/// Removes the sidecars of the log at `log` (tests, and callers that want a full rebuild).
pub fn remove_sidecars(log: &Path) -> Result<(), StoreError> {
    for name in [CHECKPOINT_FILE_NAME, INDEX_FILE_NAME] {
        let path = sidecar(log, name);
        crate::powerloss::note!(Unlink(path.clone()));
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(StoreError::io("remove", &path, source)),
        }
    }
    Ok(())
}
