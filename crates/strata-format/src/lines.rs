//! The incremental newline record scanner that JSONL readers feed (persistence §2.7).
//!
//! Readers get a log's body in chunks: read from a file, or yielded frame by frame by a zstd
//! decoder. The scanner splits those chunks into complete `\n`-terminated records without
//! copying them, except for a fragment that straddles two chunks, which it carries. Records
//! are byte slices: decoding them as UTF-8 and JSON is the caller's job, and only complete
//! records ever reach it.
//!
//! Invariants:
//! - The records produced do not depend on how the input is split into chunks.
//! - Only `\n` ends a record; a `\r` before it stays in the record.
//! - The scanner buffers at most `max_record_len` bytes: a record that grows past the limit is
//!   reported as soon as that is known, before the rest of it arrives, and the scanner stops.
//! - Line numbers count records (first one is `first_line`, 1 by default); offsets count bytes
//!   of the scanned stream (first one is `first_offset`, 0 by default).

/// The default bound on one record: far above any real event, low enough that a corrupt file
/// without newlines cannot make a reader buffer gigabytes.
pub const DEFAULT_MAX_RECORD_LEN: usize = 64 * 1024 * 1024;

/// How a [`LineScanner`] numbers records and how large it lets them grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineScannerConfig {
    /// Largest record accepted, in bytes, not counting its `\n`.
    pub max_record_len: usize,
    /// Line number of the first record, so a body scanned after a separately read header line
    /// can keep the file's numbering (1-based in files).
    pub first_line: u64,
    /// Byte offset of the first byte fed, for the same reason.
    pub first_offset: u64,
}

impl Default for LineScannerConfig {
    fn default() -> Self {
        LineScannerConfig {
            max_record_len: DEFAULT_MAX_RECORD_LEN,
            first_line: 1,
            first_offset: 0,
        }
    }
}

/// One complete record: the bytes before a `\n`, with where they were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record's line number.
    pub line: u64,
    /// Byte offset of the record's first byte.
    pub offset: u64,
    /// The record without its terminating `\n`.
    pub bytes: &'a [u8],
}

impl Record<'_> {
    /// Offset just past this record's `\n`: where a log that ends with this record would be
    /// truncated, and where the next record starts.
    pub fn end_offset(&self) -> u64 {
        self.offset + self.bytes.len() as u64 + 1
    }
}

/// Bytes after the last `\n` when the input ends: a torn tail, or a record still being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// The line number the record would have had.
    pub line: u64,
    /// Byte offset of the fragment's first byte.
    pub offset: u64,
    /// The unterminated bytes; never empty.
    pub bytes: &'a [u8],
}

/// Why scanning stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// A record grew past the configured limit.
    #[error("record at line {line} (offset {offset}) is longer than the {limit}-byte limit")]
    RecordTooLarge {
        /// Line number of the oversized record.
        line: u64,
        /// Byte offset where the oversized record starts.
        offset: u64,
        /// The configured `max_record_len`.
        limit: usize,
    },
}

/// Splits a byte stream fed in chunks into `\n`-terminated records (persistence §2.7).
///
/// Feed each chunk by calling [`LineScanner::next_record`] until it returns `Ok(None)`; the
/// chunk is then fully consumed, with any unterminated tail carried into the next chunk. When
/// the stream ends, [`LineScanner::trailing_fragment`] tells whether it ended mid-record.
///
/// ```
/// use strata_format::lines::LineScanner;
///
/// let mut scanner = LineScanner::default();
/// let mut lines = Vec::new();
/// for chunk in [&b"{\"a\":1}\n{\"b\""[..], &b":2}\n{\"c\""[..]] {
///     let mut rest = chunk;
///     while let Some(record) = scanner.next_record(&mut rest).unwrap() {
///         lines.push((record.line, record.bytes.to_vec()));
///     }
/// }
/// assert_eq!(lines, [(1, b"{\"a\":1}".to_vec()), (2, b"{\"b\":2}".to_vec())]);
/// assert_eq!(scanner.trailing_fragment().unwrap().bytes, b"{\"c\"");
/// ```
#[derive(Debug, Clone)]
pub struct LineScanner {
    max_record_len: usize,
    /// Line number of the next record to complete.
    next_line: u64,
    /// Invariant: byte offset of the first byte of `partial` (or of the next byte fed when
    /// `partial` holds nothing pending).
    next_offset: u64,
    /// The carried fragment, or the last record returned when `partial_is_record` is set.
    /// Invariant: `partial.len() <= max_record_len` and `partial.capacity()` grows no further
    /// than `max_record_len`.
    partial: Vec<u8>,
    /// Set while `partial` holds a record lent out by the last `next_record` call; the next
    /// call clears it.
    partial_is_record: bool,
    /// The error that stopped the scanner; every later call returns it again.
    failed: Option<LineError>,
}

impl Default for LineScanner {
    fn default() -> Self {
        LineScanner::new(LineScannerConfig::default())
    }
}

impl LineScanner {
    /// Creates a scanner positioned at `config.first_line` and `config.first_offset`.
    pub fn new(config: LineScannerConfig) -> Self {
        LineScanner {
            max_record_len: config.max_record_len,
            next_line: config.first_line,
            next_offset: config.first_offset,
            partial: Vec::new(),
            partial_is_record: false,
            failed: None,
        }
    }

    /// Returns the next complete record from `rest`, advancing `rest` past it.
    ///
    /// `Ok(None)` means `rest` held no further `\n`: its remaining bytes were carried and `rest`
    /// is now empty, so feed the next chunk. A record straddling chunks is returned from the
    /// scanner's buffer; any other record borrows `rest` directly. Stopping early is fine:
    /// whatever is left in `rest` has not been consumed.
    ///
    /// After an error the scanner is finished: every later call returns the same error.
    pub fn next_record<'r, 'c: 'r>(
        &'r mut self,
        rest: &mut &'c [u8],
    ) -> Result<Option<Record<'r>>, LineError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if self.partial_is_record {
            self.partial.clear();
            self.partial_is_record = false;
        }
        let chunk: &'c [u8] = rest;
        let newline = find_newline(chunk);
        let head_len = newline.unwrap_or(chunk.len());
        let record_len = self.partial.len().saturating_add(head_len);
        if record_len > self.max_record_len {
            return Err(self.fail());
        }
        let Some(newline) = newline else {
            self.carry(chunk);
            *rest = &[];
            return Ok(None);
        };
        *rest = &chunk[newline + 1..];
        let line = self.next_line;
        let offset = self.next_offset;
        self.next_line += 1;
        self.next_offset += record_len as u64 + 1;
        let bytes = if self.partial.is_empty() {
            &chunk[..newline]
        } else {
            self.carry(&chunk[..newline]);
            self.partial_is_record = true;
            &self.partial[..]
        };
        Ok(Some(Record {
            line,
            offset,
            bytes,
        }))
    }

    /// The unterminated bytes carried since the last `\n`, for a reader that has fed the whole
    /// stream and must decide what a torn tail means. `None` if the stream ended on a `\n` (or
    /// is empty), or if the scanner stopped with an error.
    pub fn trailing_fragment(&self) -> Option<Fragment<'_>> {
        if self.partial_is_record || self.partial.is_empty() || self.failed.is_some() {
            return None;
        }
        Some(Fragment {
            line: self.next_line,
            offset: self.next_offset,
            bytes: &self.partial,
        })
    }

    /// How many bytes of an unterminated record the scanner holds, for memory accounting.
    pub fn pending_len(&self) -> usize {
        if self.partial_is_record {
            0
        } else {
            self.partial.len()
        }
    }

    /// Appends to the carried fragment, growing the buffer no further than the record limit.
    fn carry(&mut self, bytes: &[u8]) {
        let needed = self.partial.len() + bytes.len();
        if needed > self.partial.capacity() {
            let target = needed
                .max(self.partial.capacity().saturating_mul(2))
                .min(self.max_record_len);
            self.partial.reserve_exact(target - self.partial.len());
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Stops the scanner on an oversized record and releases its buffer.
    fn fail(&mut self) -> LineError {
        let error = LineError::RecordTooLarge {
            line: self.next_line,
            offset: self.next_offset,
            limit: self.max_record_len,
        };
        self.partial = Vec::new();
        self.failed = Some(error.clone());
        error
    }
}

/// The index of the first `\n` in `bytes`, eight bytes at a time.
///
/// A record is typically hundreds of bytes to kilobytes long, and finding its end byte by byte
/// would cost about as much as tokenizing it; a word-at-a-time search (the classic "has zero
/// byte" test on `word ^ 0x0a…0a`) is several times faster without any unsafe code or extra
/// dependency. The lowest flagged byte is always a true match: the test's false positives only
/// occur above a real zero byte.
pub(crate) fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let mut array = [0_u8; 8];
        array.copy_from_slice(word);
        let zeroed = u64::from_le_bytes(array) ^ NEWLINES;
        let flags = zeroed.wrapping_sub(ONES) & !zeroed & HIGHS;
        if flags != 0 {
            return Some(offset + (flags.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&byte| byte == b'\n')
        .map(|index| offset + index)
}

#[cfg(test)]
mod tests;
