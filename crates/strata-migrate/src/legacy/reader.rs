//! A streaming reader of v0, v1 and v2 JSONL logs (raw or zstd), yielding one logical event per
//! item as an order-preserving JSON object.
//!
//! The reader owns the *storage* layer of older generations: the header line (generation
//! detection, physical shape), JSON syntax, packed chunk rows (v0/v1, expanded to their
//! `assistant/chunk` events) and range-encoded `sourceEventSeqs` (v2). It judges no event rule:
//! rows go to the v0 restore path or the migration stages, which ask the core.
//!
//! Invariants:
//! - Memory is bounded by one read chunk, one record and one packed row's expansion; the file is
//!   never held whole (zstd artifacts are decoded frame by frame).
//! - Events come out in file order; each item carries the physical line it came from, and every
//!   error names the file, the generation, the line and the seq the line should start at.
//! - v0/v1 `sourceEventSeqs` are passed through as written: upstream 0.1.0-rc.8 does not
//!   range-decode them, so neither does strata (a pair is then an invalid source, as upstream).
//! - After an error the iteration ends; an unterminated final record is a torn tail, reported
//!   by [`LegacyReader::torn_tail`], never an event.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value};
use strata_core::{EventType, Generation, RawEvent};

use super::detect::{detect_generation, name_hint, NameHint};
use super::error::{At, ReadError};
use super::header::logical_header;
use super::js;
use super::released_rows::ReleasedRows;
use super::rows::decode_row;
use super::untouched::untouched_row;
use super::zstd_source::ZstdSource;
use strata_format::codec::TornTail;
use strata_format::lines::{LineError, LineScanner, LineScannerConfig, DEFAULT_MAX_RECORD_LEN};
use strata_format::ranges::decode_source_seqs;

/// One logical event read from a log, with the physical line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct LogRecord {
    /// 1-based physical line (packed-row members share their row's line).
    pub line: u64,
    /// The event object as stored (a packed member as upstream expands it).
    pub event: Value,
}

/// One logical event as a restore reads it: a tree, or a row that no legacy step looks into,
/// kept as text (`untouched`).
pub(crate) enum Record {
    /// The event object as stored.
    Tree(LogRecord),
    /// An untouched row and its physical line.
    Row {
        /// 1-based physical line.
        line: u64,
        /// The row, its payload the text it was stored with.
        row: RawEvent,
    },
}

impl Record {
    /// The record as a tree (a row kept as text is parsed back).
    pub(crate) fn into_tree(self) -> LogRecord {
        match self {
            Record::Tree(record) => record,
            Record::Row { line, row } => LogRecord {
                line,
                event: row.to_value(),
            },
        }
    }
}

/// An event decoded from a line, not yet yielded.
enum Pending {
    Tree(Value),
    Row(RawEvent),
}

/// A streaming reader of an older-generation log.
pub struct LegacyReader {
    source: Box<dyn Read + Send>,
    zstd: bool,
    file: String,
    generation: Generation,
    header: Map<String, Value>,
    scanner: LineScanner,
    chunk: Vec<u8>,
    /// Invariant: `pos <= len <= chunk.len()`; `chunk[pos..len]` is unconsumed input.
    pos: usize,
    len: usize,
    /// Events yielded so far: the seq the next event should carry.
    next_seq: u64,
    /// Expanded members of the current packed row (or the current row) not yet yielded, and
    /// its line.
    pending: VecDeque<Pending>,
    pending_line: u64,
    torn: Option<TornTail>,
    done: bool,
    /// The released v0/v1 codec's row rules, when the migration asked for them.
    released_rows: Option<ReleasedRows>,
    /// Untouched v0/v1 rows are kept as text ([`LegacyReader::records`]).
    keep_rows: bool,
}

/// Opens `path` and reads its first line: the generation (from the header `version` and the
/// file name) and whether it is zstd, without reading further.
pub fn sniff(path: &Path) -> Result<(Generation, NameHint), ReadError> {
    let hint = content_hint(path);
    let file = path.display().to_string();
    let mut reader = line_reader(path, hint.zstd, &file)?;
    let (first, _) = reader.first_line()?;
    let generation = detect_generation(&file, hint, &first)?;
    Ok((generation, hint))
}

/// The first line of an older-generation log as stored (its physical header), parsed; the
/// migration checks its exact keys as upstream's released v0/v1 codec does.
pub fn physical_header(path: &Path) -> Result<Value, ReadError> {
    let hint = content_hint(path);
    let file = path.display().to_string();
    let mut reader = line_reader(path, hint.zstd, &file)?;
    Ok(reader.first_line()?.0)
}

impl LegacyReader {
    /// Opens a v0, v1 or v2 log file, raw or zstd (told apart by content).
    ///
    /// Refuses a V3 or V4 log with [`ReadError::NotHeader`] naming it: those are read by the
    /// native codec ([`JsonlReader`](strata_format::JsonlReader)).
    pub fn open(path: &Path) -> Result<LegacyReader, ReadError> {
        let hint = content_hint(path);
        let file = path.display().to_string();
        let mut reader = line_reader(path, hint.zstd, &file)?;
        let (first, _) = reader.first_line()?;
        let generation = detect_generation(&file, hint, &first)?;
        if generation >= Generation::V3 {
            return Err(ReadError::NotHeader {
                file,
                generation: Some(generation),
                detail: format!(
                    "a {} log is read by the native codec, not the older-generation reader",
                    crate::legacy::generation_name(generation)
                ),
            });
        }
        reader.header = logical_header(&file, generation, first)?;
        reader.generation = generation;
        Ok(reader)
    }

    /// Reads an older-generation log from a byte stream (already decompressed).
    pub fn from_reader(
        source: impl Read + Send + 'static,
        file: &str,
        hint: NameHint,
    ) -> Result<LegacyReader, ReadError> {
        let mut reader = LegacyReader::new(Box::new(source), false, file);
        let (first, _) = reader.first_line()?;
        let generation = detect_generation(file, hint, &first)?;
        if generation >= Generation::V3 {
            return Err(ReadError::NotHeader {
                file: file.to_owned(),
                generation: Some(generation),
                detail: format!(
                    "a {} log is read by the native codec, not the older-generation reader",
                    crate::legacy::generation_name(generation)
                ),
            });
        }
        reader.header = logical_header(file, generation, first)?;
        reader.generation = generation;
        Ok(reader)
    }

    fn new(source: Box<dyn Read + Send>, zstd: bool, file: &str) -> LegacyReader {
        LegacyReader {
            source,
            zstd,
            file: file.to_owned(),
            generation: Generation::V0,
            header: Map::new(),
            scanner: LineScanner::new(LineScannerConfig {
                max_record_len: DEFAULT_MAX_RECORD_LEN,
                ..LineScannerConfig::default()
            }),
            chunk: vec![0; 256 * 1024],
            pos: 0,
            len: 0,
            next_seq: 0,
            pending: VecDeque::new(),
            pending_line: 0,
            torn: None,
            done: false,
            released_rows: None,
            keep_rows: false,
        }
    }

    /// Judges each row by upstream's released v0/v1 or v2 codec first (`released_rows`), as
    /// the migration does; a refusal is [`ReadError::ReleasedRow`].
    pub fn with_released_rows(mut self) -> LegacyReader {
        self.released_rows = Some(match self.generation {
            Generation::V0 | Generation::V1 => ReleasedRows::default(),
            _ => ReleasedRows::v2(),
        });
        self
    }

    /// The log's generation.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The logical header object (the header line without `type`; v0/v1 unknown keys dropped).
    pub fn header(&self) -> &Map<String, Value> {
        &self.header
    }

    /// The file name used in messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The unterminated final record, once iteration has ended.
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// Whether the log ended in a torn state: an unterminated record or a cut zstd frame.
    pub fn is_torn(&self) -> bool {
        self.torn.is_some()
    }

    fn at(&self, line: u64) -> At {
        At {
            file: self.file.clone(),
            generation: self.generation,
            line,
            seq: Some(self.next_seq),
        }
    }

    fn first_line(&mut self) -> Result<(Value, u64), ReadError> {
        let file = self.file.clone();
        let Some((line, bytes)) = self.next_line()? else {
            return Err(ReadError::MissingHeader { file });
        };
        let value = serde_json::from_slice(&bytes).map_err(|error| ReadError::NotHeader {
            file,
            generation: None,
            detail: format!("not JSON: {error}"),
        })?;
        Ok((value, line))
    }

    /// The next complete record; `None` at the end (recording a torn tail).
    fn next_line(&mut self) -> Result<Option<(u64, Vec<u8>)>, ReadError> {
        loop {
            let mut rest = &self.chunk[self.pos..self.len];
            let before = rest.len();
            match self.scanner.next_record(&mut rest) {
                Ok(Some(record)) => {
                    let found = (record.line, record.bytes.to_vec());
                    self.pos += before - rest.len();
                    return Ok(Some(found));
                }
                Ok(None) => self.pos = self.len,
                Err(LineError::RecordTooLarge { line, limit, .. }) => {
                    return Err(ReadError::TooLarge {
                        at: self.at(line),
                        limit,
                    })
                }
                Err(error) => {
                    return Err(ReadError::Corrupt {
                        file: self.file.clone(),
                        generation: self.generation,
                        detail: error.to_string(),
                    })
                }
            }
            let read = loop {
                match self.source.read(&mut self.chunk) {
                    Ok(read) => break read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) if error.kind() == io::ErrorKind::InvalidData && self.zstd => {
                        return Err(ReadError::Corrupt {
                            file: self.file.clone(),
                            generation: self.generation,
                            detail: error.to_string(),
                        })
                    }
                    Err(source) => {
                        return Err(ReadError::Io {
                            file: self.file.clone(),
                            source,
                        })
                    }
                }
            };
            self.pos = 0;
            self.len = read;
            if read == 0 {
                self.torn = self.scanner.trailing_fragment().map(|fragment| TornTail {
                    line: fragment.line,
                    offset: fragment.offset,
                    len: fragment.bytes.len() as u64,
                });
                return Ok(None);
            }
        }
    }

    fn decode(&mut self, line: u64, bytes: &[u8]) -> Result<(), ReadError> {
        // Read as JSON.parse reads it (strata_core::json): a lone surrogate, which upstream
        // reads as a string unit, is kept rather than refused.
        let text = std::str::from_utf8(bytes).map_err(|error| ReadError::Json {
            at: self.at(line),
            detail: error.to_string(),
        })?;
        if self.keep_rows {
            if let Some(row) = untouched_row(text) {
                self.pending.push_back(Pending::Row(row));
                self.pending_line = line;
                return Ok(());
            }
        }
        let value: Value = strata_core::json::parse(text).map_err(|error| ReadError::Json {
            at: self.at(line),
            detail: error.to_string(),
        })?;
        if let Some(rows) = self.released_rows.as_mut() {
            if let Err(text) = rows.check(&value) {
                return Err(ReadError::ReleasedRow {
                    at: self.at(line),
                    text,
                });
            }
        }
        if self.generation <= Generation::V1 {
            match decode_row(&value) {
                Ok(Some(row)) => {
                    self.pending.extend(row.expand().map(Pending::Tree));
                    self.pending_line = line;
                    return Ok(());
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(ReadError::MalformedRow {
                        at: self.at(line),
                        source,
                    })
                }
            }
        } else {
            let value = self.expand_ranges(line, value)?;
            self.pending.push_back(Pending::Tree(value));
            self.pending_line = line;
            return Ok(());
        }
        self.pending.push_back(Pending::Tree(value));
        self.pending_line = line;
        Ok(())
    }

    /// v2 stores `sourceEventSeqs` range-encoded (session-core §10.1); an unknown ignorable
    /// event's metadata is opaque and stays as written.
    fn expand_ranges(&self, line: u64, mut value: Value) -> Result<Value, ReadError> {
        let Value::Object(map) = &mut value else {
            return Ok(value);
        };
        let opaque = map.get("ignorable") == Some(&Value::Bool(true))
            && map
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|tag| !EventType::parse(tag).is_known_in(self.generation));
        if opaque {
            return Ok(value);
        }
        let Some(seq) = map
            .get("seq")
            .filter(|seq| js::is_non_negative_safe_integer(seq))
            .and_then(js::number)
        else {
            return Ok(value);
        };
        let Some(stored) = map.get_mut("sourceEventSeqs") else {
            return Ok(value);
        };
        let seqs = decode_source_seqs(stored, seq as u64).map_err(|source| ReadError::Sources {
            at: self.at(line),
            source,
        })?;
        *stored = Value::Array(seqs.into_iter().map(Value::from).collect());
        Ok(value)
    }
}

/// The name's hints, with the encoding told by content (the zstd frame magic), as the V3
/// reader tells it: a zstd log renamed without `.zstd` still reads.
fn content_hint(path: &Path) -> NameHint {
    let hint = name_hint(path);
    NameHint {
        zstd: strata_store::is_zstd_file(path).unwrap_or(hint.zstd),
        ..hint
    }
}

fn line_reader(path: &Path, zstd: bool, file: &str) -> Result<LegacyReader, ReadError> {
    let handle = File::open(path).map_err(|source| ReadError::Io {
        file: file.to_owned(),
        source,
    })?;
    let len_at_open = handle
        .metadata()
        .map_err(|source| ReadError::Io {
            file: file.to_owned(),
            source,
        })?
        .len();
    let buffered = BufReader::with_capacity(
        256 * 1024,
        Snapshot {
            file: handle,
            len_at_open,
        },
    );
    let source: Box<dyn Read + Send> = if zstd {
        // Older logs are only read (a migration writes a V3 copy beside them): any framing.
        Box::new(
            ZstdSource::any_framing(buffered).map_err(|source| ReadError::Io {
                file: file.to_owned(),
                source,
            })?,
        )
    } else {
        Box::new(buffered)
    };
    Ok(LegacyReader::new(source, zstd, file))
}

/// A log file read to the length it had when it was opened: an end before that length (the
/// file was truncated under the read) is an error, not the log's end.
struct Snapshot {
    file: File,
    len_at_open: u64,
}

impl Read for Snapshot {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.file.read(buf)?;
        if read == 0 && !buf.is_empty() {
            strata_store::file_io::ensure_not_shrunk(&self.file, self.len_at_open)?;
        }
        Ok(read)
    }
}

impl LegacyReader {
    /// Keeps the v0/v1 rows no legacy step looks into as text, yielded by
    /// [`LegacyReader::next_record`] as [`Record::Row`] (the restore path's reader; the
    /// migration's edges read trees).
    pub(crate) fn keeping_rows(mut self) -> LegacyReader {
        self.keep_rows = self.generation <= Generation::V1 && self.released_rows.is_none();
        self
    }

    /// The next logical event, a row kept as text when [`LegacyReader::keeping_rows`] allows.
    pub(crate) fn next_record(&mut self) -> Option<Result<Record, ReadError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.next_seq += 1;
                let line = self.pending_line;
                return Some(Ok(match event {
                    Pending::Tree(event) => Record::Tree(LogRecord { line, event }),
                    Pending::Row(row) => Record::Row { line, row },
                }));
            }
            if self.done {
                return None;
            }
            let step = self.next_line().and_then(|found| match found {
                Some((line, bytes)) => self.decode(line, &bytes).map(|()| true),
                None => Ok(false),
            });
            match step {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

impl Iterator for LegacyReader {
    type Item = Result<LogRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_record()?.map(Record::into_tree))
    }
}

#[cfg(test)]
mod tests;
