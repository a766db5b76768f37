//! The V3 and V4 JSONL line codec: the session header line and event lines, byte-identical to dsh
//! (session-core §2.3, §10.1, §10.4; persistence §2.2–§2.3).
//!
//! A V3 log is one header line followed by one event per line, each compact JSON terminated by
//! `\n`. This module turns lines into values and back; it judges only what the *line format*
//! owns — the header's exact key set and version, JSON syntax, the range encoding of
//! `sourceEventSeqs` — and leaves every event rule to `strata-core`.
//!
//! Invariants:
//! - The header `version` is read and dispatched on before any other header validation, so a
//!   log from a newer harness says "upgrade", never "corrupt" (persistence §1.1, §10 item 10).
//!   [`decode_header_value`] is the one seam where readers for older generations plug in.
//! - Encoding is byte-identical to dsh's `JSON.stringify`: a line read and written back is the
//!   same bytes, as long as the header line starts with `"type"` (dsh always writes it first).
//! - The streaming [`JsonlReader`] holds at most one read chunk plus one record (bounded by the
//!   configured record limit); it never buffers the whole stream.
//! - Every error names the line and, where known, the file and the seq.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use strata_core::ingest::{ScanArena, ScannedRow};
use strata_core::json::non_negative_safe_integer;
use strata_core::{AcceptError, Event, EventType, Generation, RawEvent, Seq, SessionHeader};

use crate::lines::{LineError, LineScanner, LineScannerConfig, DEFAULT_MAX_RECORD_LEN};
use crate::ranges::{decode_source_seqs, is_plain_seq_list, RangeError};

/// The physical V3 header keys, in dsh's write order; no other key is allowed.
pub const V3_HEADER_KEYS: [&str; 10] = [
    "type",
    "version",
    "id",
    "createdAt",
    "isSeeded",
    "delegationDepth",
    "cwd",
    "parentSession",
    "origin",
    "agentPreset",
];

/// Header fields dsh retired; their presence refuses the header instead of being ignored.
pub const RETIRED_HEADER_KEYS: [&str; 2] = ["sandboxMode", "approvalPolicy"];

/// Where in a log a codec error happened.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// The log file, when the bytes came from one.
    pub file: Option<PathBuf>,
    /// 1-based line number (the header is line 1).
    pub line: u64,
    /// The seq of the row, or the seq it should have had when the row did not decode.
    pub seq: Option<u64>,
}

impl Location {
    /// A location on `line` of an unnamed stream.
    pub fn line(line: u64) -> Location {
        Location {
            file: None,
            line,
            seq: None,
        }
    }

    /// This location in `file`.
    pub fn with_file(mut self, file: Option<&Path>) -> Location {
        self.file = file.map(Path::to_path_buf);
        self
    }

    /// This location at event `seq`.
    pub fn with_seq(mut self, seq: Option<u64>) -> Location {
        self.seq = seq;
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        write!(f, "line {}", self.line)?;
        if let Some(seq) = self.seq {
            write!(f, " (seq {seq})")?;
        }
        Ok(())
    }
}

/// Why a line (or the stream it came from) could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The log has no complete first line.
    #[error("{}: empty or header-less session log", display_file(.file))]
    MissingHeader {
        /// The log file, when known.
        file: Option<PathBuf>,
    },
    /// The first line is not a V3 session header object (bad JSON, wrong `type`, an unknown or
    /// missing key).
    #[error("{location}: not a session header: {detail}")]
    NotHeader {
        /// Where.
        location: Location,
        /// What is wrong with it.
        detail: String,
    },
    /// The header names a format version newer than this build reads.
    #[error("{location}: session \"{id}\" uses log format v{found}, but this harness reads up to v{supported}: the log was written by a newer harness — upgrade the harness to open it")]
    NewerVersion {
        /// Where.
        location: Location,
        /// The header's id (`<unknown>` when it has none).
        id: String,
        /// The version found.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The header names an older format version that this build cannot read.
    #[error("{location}: session \"{id}\" uses log format v{found}, older than the supported v{supported}, and this build ships no upgrade path for it")]
    OlderVersion {
        /// Where.
        location: Location,
        /// The header's id (`<unknown>` when it has none).
        id: String,
        /// The version found.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The header carries a field dsh retired (`sandboxMode`, `approvalPolicy`).
    #[error("{location}: session header has retired field \"{field}\"")]
    RetiredField {
        /// Where.
        location: Location,
        /// The retired key.
        field: String,
    },
    /// The header has the V3 shape but a field breaks the header rules (session-core §2.3).
    #[error("{location}: invalid session header: {source}")]
    InvalidHeader {
        /// Where.
        location: Location,
        /// The core's verdict, with its rule id.
        #[source]
        source: AcceptError,
    },
    /// A body line is not JSON (or not UTF-8).
    #[error("{location}: not a JSON event: {detail}")]
    Json {
        /// Where.
        location: Location,
        /// serde_json's description.
        detail: String,
    },
    /// A stored `sourceEventSeqs` breaks the range encoding (session-core §10.1).
    #[error("{location}: {source}")]
    Sources {
        /// Where (with the row's seq).
        location: Location,
        /// Which range rule failed.
        #[source]
        source: RangeError,
    },
    /// A record is longer than the configured limit; reading stops there.
    #[error("{location}: record at offset {offset} is longer than the {limit}-byte limit")]
    TooLarge {
        /// Where (the oversized record's line).
        location: Location,
        /// Byte offset of the record.
        offset: u64,
        /// The configured limit.
        limit: usize,
    },
    /// The header to encode is neither V3 nor V4 (strata writes those only).
    #[error("cannot write a v{version} header: strata writes v3 and v4 logs only")]
    NotNative {
        /// The header's format version.
        version: u64,
    },
    /// Reading the underlying stream failed.
    #[error("{}: read failed: {source}", display_file(.file))]
    Io {
        /// The log file, when known.
        file: Option<PathBuf>,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

impl CodecError {
    /// The line the error concerns, when it concerns one.
    pub fn line(&self) -> Option<u64> {
        self.location().map(|location| location.line)
    }

    /// The location of a line-level error.
    pub fn location(&self) -> Option<&Location> {
        match self {
            CodecError::NotHeader { location, .. }
            | CodecError::NewerVersion { location, .. }
            | CodecError::OlderVersion { location, .. }
            | CodecError::RetiredField { location, .. }
            | CodecError::InvalidHeader { location, .. }
            | CodecError::Json { location, .. }
            | CodecError::Sources { location, .. }
            | CodecError::TooLarge { location, .. } => Some(location),
            _ => None,
        }
    }

    /// Whether the error means "this build cannot interpret an intact log" (a version refusal)
    /// rather than corruption.
    pub fn is_unsupported_version(&self) -> bool {
        matches!(
            self,
            CodecError::NewerVersion { .. } | CodecError::OlderVersion { .. }
        )
    }
}

fn display_file(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map_or_else(|| "<stream>".to_owned(), |path| path.display().to_string())
}

/// Decodes a header line (without its `\n`) into a validated V3 or V4 [`SessionHeader`].
pub fn decode_header_line(line: &[u8], location: &Location) -> Result<SessionHeader, CodecError> {
    let value: Value = serde_json::from_slice(line).map_err(|error| CodecError::NotHeader {
        location: location.clone(),
        detail: format!("not JSON: {error}"),
    })?;
    decode_header_value(value, location)
}

/// Decodes a parsed header record: reads `version` first and dispatches to the reader of that
/// generation. V3 and V4 have a reader here; v0–v2 are refused as older (strata-migrate reads
/// them), anything above V4 is refused as newer.
pub fn decode_header_value(value: Value, location: &Location) -> Result<SessionHeader, CodecError> {
    let Value::Object(fields) = value else {
        return Err(CodecError::NotHeader {
            location: location.clone(),
            detail: "not a JSON object".into(),
        });
    };
    let oldest = Generation::V3.format_version();
    let newest = Generation::V4.format_version();
    let id = || {
        fields
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("<unknown>")
            .to_owned()
    };
    // A numeric version other than ours is refused before anything else is looked at.
    if let Some(found) = fields.get("version").and_then(non_negative_safe_integer) {
        match Generation::from_format_version(found) {
            Some(generation @ (Generation::V3 | Generation::V4)) => {
                return decode_physical_header(fields, location, generation)
            }
            Some(_) => {
                return Err(CodecError::OlderVersion {
                    location: location.clone(),
                    id: id(),
                    found,
                    supported: oldest,
                })
            }
            None if found > newest => {
                return Err(CodecError::NewerVersion {
                    location: location.clone(),
                    id: id(),
                    found,
                    supported: newest,
                })
            }
            None => {}
        }
    }
    // No usable version: let the V3 shape check explain what is wrong.
    decode_physical_header(fields, location, Generation::V3)
}

/// The V3 physical header rules, which V4 shares (docs/format-v4.md §1.3): `type: "session"`,
/// the exact key set, `delegationDepth` always present, then the logical header rules of the
/// core for `generation`.
fn decode_physical_header(
    mut fields: Map<String, Value>,
    location: &Location,
    generation: Generation,
) -> Result<SessionHeader, CodecError> {
    let not_header = |detail: String| CodecError::NotHeader {
        location: location.clone(),
        detail,
    };
    if fields.get("type").and_then(Value::as_str) != Some("session") {
        return Err(not_header("\"type\" must be \"session\"".into()));
    }
    for key in fields.keys() {
        if RETIRED_HEADER_KEYS.contains(&key.as_str()) {
            return Err(CodecError::RetiredField {
                location: location.clone(),
                field: key.clone(),
            });
        }
        if !V3_HEADER_KEYS.contains(&key.as_str()) {
            return Err(not_header(format!("unknown key \"{key}\"")));
        }
    }
    for required in ["version", "id", "createdAt", "isSeeded", "delegationDepth"] {
        if !fields.contains_key(required) {
            return Err(not_header(format!("missing key \"{required}\"")));
        }
    }
    fields.shift_remove("type");
    SessionHeader::from_value(Value::Object(fields), generation).map_err(|source| {
        CodecError::InvalidHeader {
            location: location.clone(),
            source,
        }
    })
}

/// Appends the header line (with its `\n`) for a V3 or V4 header: `type` first, then the
/// header's fields in their stored order, so a decoded header is written back byte for byte.
pub fn encode_header_line(header: &SessionHeader, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if !matches!(header.generation(), Generation::V3 | Generation::V4) {
        return Err(CodecError::NotNative {
            version: header.generation().format_version(),
        });
    }
    out.extend_from_slice(b"{\"type\":\"session\"");
    for (key, value) in header.fields() {
        out.push(b',');
        write_json(out, &Value::String(key.clone()));
        out.push(b':');
        write_json(out, value);
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// Decodes one event line (without its `\n`) into a wire row: JSON syntax is checked here, and
/// a range-encoded `sourceEventSeqs` is expanded (bounded by the row's own seq), except on an
/// unknown `ignorable` event, whose metadata is opaque and kept verbatim. Envelope and event
/// rules are the core's to judge.
pub fn decode_event_line(line: &[u8], location: &Location) -> Result<RawEvent, CodecError> {
    decode_event_line_at(line, || location.clone())
}

/// [`decode_event_line`] building the location only for an error (a row that decodes costs no
/// copy of the file name).
pub fn decode_event_line_at(
    line: &[u8],
    location: impl Fn() -> Location,
) -> Result<RawEvent, CodecError> {
    scan_event_line_at(line, None, location).map(ScannedRow::into_raw)
}

/// [`decode_event_line_at`] keeping the payload borrowed from `line` and, given an arena, the
/// view of it the one-pass scan built ([`ScannedRow`]): a decoding thread shares the payloads
/// of its batch and checks each row ahead without parsing any payload twice.
pub fn scan_event_line_at<'a>(
    line: &'a [u8],
    arena: Option<&'a ScanArena>,
    location: impl Fn() -> Location,
) -> Result<ScannedRow<'a>, CodecError> {
    let row = scan_json_row(line, arena).map_err(|error| CodecError::Json {
        location: location(),
        detail: error.to_string(),
    })?;
    if !row.envelope().has_source_event_seqs() {
        // Most rows cite no sources: nothing to expand, and the row is not moved about.
        return Ok(row);
    }
    row.try_map_envelope(|raw| expand_sources_at(raw, location))
}

/// Decodes one stored row's JSON (a JSONL line, or a SQLite row rebuilt as one). One SIMD
/// UTF-8 check of the whole row lets it be read as a `str`, so the payload is not validated a
/// second time (docs/measurements.md §4); a row that is not UTF-8 takes serde's byte path,
/// for serde's own error and position.
pub fn scan_json_row<'a>(
    bytes: &'a [u8],
    arena: Option<&'a ScanArena>,
) -> Result<ScannedRow<'a>, serde_json::Error> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => ScannedRow::scan_in(text, arena),
        Err(_) => RawEvent::from_json_slice(bytes).map(ScannedRow::from),
    }
}

/// Expands a range-encoded `sourceEventSeqs` in a decoded row (bounded by the row's own seq),
/// leaving opaque metadata and rows without a valid seq as they are. Shared by every backend
/// that stores the JSONL range encoding.
pub fn expand_sources(raw: RawEvent, location: &Location) -> Result<RawEvent, CodecError> {
    expand_sources_at(raw, || location.clone())
}

fn expand_sources_at(
    mut raw: RawEvent,
    location: impl Fn() -> Location,
) -> Result<RawEvent, CodecError> {
    let row_seq = raw.seq_number();
    if !raw.has_source_event_seqs() || is_opaque(&raw) {
        return Ok(raw);
    }
    // Without a valid seq the envelope is invalid anyway; leave the value for the core to report.
    let Some(seq) = row_seq else {
        return Ok(raw);
    };
    // A list the scanner held as seqs is plain: decoding it gives it back when it has no more
    // entries than `is_plain_seq_list` allows.
    if raw
        .plain_source_seqs()
        .is_some_and(|seqs| seqs.len() as u64 <= seq)
    {
        return Ok(raw);
    }
    let Some(stored) = raw.source_event_seqs() else {
        return Ok(raw);
    };
    if is_plain_seq_list(&stored, seq) {
        // Decoding would give back these seqs, re-encoding this very value.
        return Ok(raw);
    }
    let seqs = decode_source_seqs(&stored, seq).map_err(|source| CodecError::Sources {
        location: location().with_seq(Some(seq)),
        source,
    })?;
    raw.set_source_event_seqs(Some(Value::Array(
        seqs.into_iter().map(Value::from).collect(),
    )));
    Ok(raw)
}

/// A type neither V3 nor V4 knows, marked `ignorable: true`: the core keeps its metadata
/// verbatim. (The codec reads rows before their generation's rules: a type one of the two
/// knows has its sources decoded, which the other's opaque reading never looks at.)
fn is_opaque(raw: &RawEvent) -> bool {
    raw.ignorable() == Some(&Value::Bool(true))
        && raw.type_tag().is_some_and(|tag| {
            let event_type = EventType::parse(tag);
            !event_type.is_known_in(Generation::V3) && !event_type.is_known_in(Generation::V4)
        })
}

/// Appends one event line (with its `\n`) in V3 spelling with range-encoded sources.
pub fn encode_event_line(event: &Event, out: &mut Vec<u8>) {
    event.write_json_with(out, Generation::V3, &write_range_sources);
    out.push(b'\n');
}

/// Writes a sources list in the JSONL range encoding (session-core §10.1): in a strictly
/// increasing list, each maximal run of three or more consecutive seqs becomes `[first,last]`.
pub fn write_range_sources(sources: &[Seq], out: &mut Vec<u8>) {
    let increasing = sources.windows(2).all(|pair| pair[0] < pair[1]);
    out.push(b'[');
    let mut index = 0;
    let mut first = true;
    while index < sources.len() {
        let start = sources[index].get();
        let mut end_index = index;
        if increasing {
            while end_index + 1 < sources.len()
                && sources[end_index + 1].get() == sources[end_index].get() + 1
            {
                end_index += 1;
            }
        }
        if !first {
            out.push(b',');
        }
        first = false;
        if end_index - index >= 2 {
            let end = sources[end_index].get();
            out.extend_from_slice(format!("[{start},{end}]").as_bytes());
            index = end_index + 1;
        } else {
            out.extend_from_slice(start.to_string().as_bytes());
            index += 1;
        }
    }
    out.push(b']');
}

fn write_json(out: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// How a [`JsonlReader`] names and bounds what it reads.
#[derive(Debug, Clone)]
pub struct ReaderOptions {
    /// The file being read, for error messages.
    pub file: Option<PathBuf>,
    /// Largest record accepted, in bytes (default [`DEFAULT_MAX_RECORD_LEN`], 64 MiB).
    pub max_record_len: usize,
    /// Size of each read from the source.
    pub chunk_len: usize,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            file: None,
            max_record_len: DEFAULT_MAX_RECORD_LEN,
            chunk_len: 256 * 1024,
        }
    }
}

/// One decoded event line and where it lies in the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct EventLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Byte offset just past the line's `\n`: a log ending with this record ends here.
    pub end_offset: u64,
    /// The decoded row.
    pub event: RawEvent,
}

/// Unterminated bytes at the end of a stream: a torn final record (persistence §2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// The line number the record would have had.
    pub line: u64,
    /// Byte offset of its first byte: where the log is truncated to drop it.
    pub offset: u64,
    /// How many bytes it has.
    pub len: u64,
}

/// A streaming reader of a V3 JSONL log: reads the header line on construction, then yields
/// one decoded row per body line.
///
/// Line-level decode errors are yielded and reading continues with the next line, so a caller
/// can see whether complete records follow a bad one; oversized records and I/O errors end the
/// iteration. An unterminated final record is not an error: iteration ends and
/// [`JsonlReader::torn_tail`] reports it.
///
/// ```
/// use strata_format::{JsonlReader, ReaderOptions};
///
/// let log = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"createdAt\":0,\"isSeeded\":false,\"delegationDepth\":0}\n\
///             {\"type\":\"turn/start\",\"seq\":0,\"time\":5,\"data\":{\"turn\":1}}\n{\"type\":\"tu";
/// let mut reader = JsonlReader::new(&log[..], ReaderOptions::default()).unwrap();
/// assert_eq!(reader.header().id(), "s");
/// let rows: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
/// assert_eq!(rows.len(), 1);
/// assert_eq!(rows[0].line, 2);
/// assert_eq!(reader.torn_tail().unwrap().line, 3);
/// ```
pub struct JsonlReader<R> {
    lines: Lines<R>,
    header: SessionHeader,
    /// Byte offset just past the header line.
    header_end: u64,
    /// The seq the next decoded row should carry (rows so far, counted from 0).
    next_seq: u64,
    /// Offset just past the last complete record (header included).
    committed: u64,
    done: bool,
}

/// The record source under a [`JsonlReader`]: one reusable read chunk fed to a line scanner.
struct Lines<R> {
    source: R,
    file: Option<PathBuf>,
    scanner: LineScanner,
    chunk: Vec<u8>,
    /// Invariant: `pos <= len <= chunk.len()`; `chunk[pos..len]` is unconsumed input.
    pos: usize,
    len: usize,
    torn: Option<TornTail>,
}

impl<R: Read> Lines<R> {
    /// Calls `decode(file, line, offset, end_offset, bytes)` on the next complete record; `None` at
    /// the end of the stream (recording a torn tail if there is one).
    fn next_with<T>(
        &mut self,
        decode: impl FnOnce(Option<&Path>, u64, u64, u64, &[u8]) -> T,
    ) -> Result<Option<T>, CodecError> {
        loop {
            let mut rest = &self.chunk[self.pos..self.len];
            let before = rest.len();
            match self.scanner.next_record(&mut rest) {
                Ok(Some(record)) => {
                    let consumed = before - rest.len();
                    let value = decode(
                        self.file.as_deref(),
                        record.line,
                        record.offset,
                        record.end_offset(),
                        record.bytes,
                    );
                    self.pos += consumed;
                    return Ok(Some(value));
                }
                Ok(None) => self.pos = self.len,
                Err(LineError::RecordTooLarge {
                    line,
                    offset,
                    limit,
                }) => {
                    return Err(CodecError::TooLarge {
                        location: Location::line(line)
                            .with_file(self.file.as_deref())
                            .with_seq(line.checked_sub(2)),
                        offset,
                        limit,
                    })
                }
            }
            let read = loop {
                match self.source.read(&mut self.chunk) {
                    Ok(read) => break read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(source) => {
                        return Err(CodecError::Io {
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
}

impl<R: Read> JsonlReader<R> {
    /// Reads and validates the header line.
    pub fn new(source: R, options: ReaderOptions) -> Result<JsonlReader<R>, CodecError> {
        let config = LineScannerConfig {
            max_record_len: options.max_record_len,
            ..LineScannerConfig::default()
        };
        let mut lines = Lines {
            source,
            file: options.file,
            scanner: LineScanner::new(config),
            chunk: vec![0; options.chunk_len.max(1)],
            pos: 0,
            len: 0,
            torn: None,
        };
        let decoded = lines.next_with(|file, line, _, end, bytes| {
            let location = Location::line(line).with_file(file);
            decode_header_line(bytes, &location).map(|header| (header, end))
        })?;
        let Some(decoded) = decoded else {
            return Err(CodecError::MissingHeader { file: lines.file });
        };
        let (header, header_end) = decoded?;
        Ok(JsonlReader {
            lines,
            header,
            header_end,
            next_seq: 0,
            committed: header_end,
            done: false,
        })
    }

    /// The validated header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Byte offset just past the header line.
    pub fn header_end(&self) -> u64 {
        self.header_end
    }

    /// Byte offset just past the last complete record read so far (header included): the
    /// length a log holding exactly those records has.
    pub fn committed_offset(&self) -> u64 {
        self.committed
    }

    /// The unterminated final record, once iteration has ended.
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.lines.torn
    }

    /// The underlying source, borrowed (e.g. to ask a zstd source about its frames).
    pub fn get_ref(&self) -> &R {
        &self.lines.source
    }

    /// The underlying source.
    pub fn into_inner(self) -> R {
        self.lines.source
    }
}

/// One complete record as the line scanner found it, with the seq its row should carry.
struct RecordAt<'r> {
    file: Option<&'r Path>,
    line: u64,
    seq: u64,
    offset: u64,
    end_offset: u64,
    bytes: &'r [u8],
}

impl<R: Read> JsonlReader<R> {
    /// Hands the next complete record to `take(line, seq, bytes)` undecoded (the seq is the
    /// one the row should carry: rows so far), for a reader that decodes elsewhere; `None` at
    /// the end. The reader's bookkeeping (committed offset, torn tail) advances as with `next`.
    pub fn next_record<T>(
        &mut self,
        take: impl FnOnce(u64, u64, &[u8]) -> T,
    ) -> Option<Result<T, CodecError>> {
        self.next_record_with(|record| take(record.line, record.seq, record.bytes))
    }

    fn next_record_with<T>(
        &mut self,
        take: impl FnOnce(RecordAt<'_>) -> T,
    ) -> Option<Result<T, CodecError>> {
        if self.done {
            return None;
        }
        let seq = self.next_seq;
        let taken = self
            .lines
            .next_with(|file, line, offset, end_offset, bytes| {
                let record = RecordAt {
                    file,
                    line,
                    seq,
                    offset,
                    end_offset,
                    bytes,
                };
                (end_offset, take(record))
            });
        match taken {
            Ok(Some((end_offset, value))) => {
                self.committed = end_offset;
                self.next_seq += 1;
                Some(Ok(value))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl<R: Read> Iterator for JsonlReader<R> {
    type Item = Result<EventLine, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        let decoded = self.next_record_with(|record| {
            let location = || {
                Location::line(record.line)
                    .with_file(record.file)
                    .with_seq(Some(record.seq))
            };
            decode_event_line_at(record.bytes, location).map(|event| EventLine {
                line: record.line,
                offset: record.offset,
                end_offset: record.end_offset,
                event,
            })
        });
        decoded.map(|result| result.and_then(|row| row))
    }
}

#[cfg(test)]
mod tests;
