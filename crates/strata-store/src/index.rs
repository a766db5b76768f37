//! The offset index of a JSONL log: where each event's record starts (issue 9; docs/format.md
//! §8), so a lazy session fetches one event with one `pread` instead of reading the log.
//!
//! File `session.v3.idx` beside the log: a 48-byte header, then one 16-byte record per seq:
//!
//! ```text
//! header: "STRAIDX\0" | version u32 = 1 | kind u32 (0 raw, 1 zstd) | header_hash u64
//!         | dev u64 | ino u64 | reserved u64 = 0                        (little-endian)
//! entry:  frame u64 | offset u32 | check u32                             (little-endian)
//! ```
//!
//! Raw logs: `frame` is the byte offset of the record's line, `offset` is 0. zstd logs:
//! `frame` is the offset of the frame holding the record, `offset` where the record starts in
//! that frame's plaintext. `check` is the low half of FNV-1a 64 over `seq`, `frame`, `offset`
//! (little-endian): a zeroed or garbage entry (a crash before its page reached the disk) does
//! not pass it.
//!
//! Invariants:
//! - The index is a cache and is never fsynced: an entry is trusted only after its check
//!   passes *and* the record it points to decodes to an event with the asked seq; anything
//!   else is a miss, and the caller falls back to reading the log.
//! - A header naming another version, kind, log header or file (device, inode) makes the
//!   whole index stale: it is recreated empty.
//! - Entries from the log's durable length on are rewritten by every open for writing (from
//!   the rows it reads), so an entry left by a torn append is never trusted for long.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use strata_format::checkpoint::fnv64;

/// The file name of a V3 log's offset index.
pub const INDEX_FILE_NAME: &str = "session.v3.idx";

const MAGIC: &[u8; 8] = b"STRAIDX\0";
const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: u64 = 48;
pub(crate) const ENTRY_LEN: u64 = 16;

/// Where a record starts (see the module docs for the two meanings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordPos {
    /// Raw: the line's byte offset. zstd: the frame's byte offset.
    pub frame: u64,
    /// zstd: the record's offset in the frame's plaintext. Raw: 0.
    pub offset: u32,
}

/// What an index belongs to: a log of one kind, header and file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexIdentity {
    /// Whether the log is zstd-framed.
    pub zstd: bool,
    /// FNV-1a 64 of the log's header line.
    pub header_hash: u64,
    /// The log file's device number.
    pub dev: u64,
    /// The log file's inode number.
    pub ino: u64,
}

impl IndexIdentity {
    /// The identity of the log at `path` whose header line hashes to `header_hash`.
    pub fn of(path: &Path, zstd: bool, header_hash: u64) -> Result<IndexIdentity, StoreError> {
        let metadata =
            std::fs::metadata(path).map_err(|source| StoreError::io("stat", path, source))?;
        Ok(IndexIdentity {
            zstd,
            header_hash,
            dev: metadata.dev(),
            ino: metadata.ino(),
        })
    }

    fn header(&self) -> [u8; HEADER_LEN as usize] {
        let mut header = [0_u8; HEADER_LEN as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&u32::from(self.zstd).to_le_bytes());
        header[16..24].copy_from_slice(&self.header_hash.to_le_bytes());
        header[24..32].copy_from_slice(&self.dev.to_le_bytes());
        header[32..40].copy_from_slice(&self.ino.to_le_bytes());
        header
    }
}

/// An open offset index (see the module docs).
#[derive(Debug)]
pub struct OffsetIndex {
    path: PathBuf,
    file: File,
    /// Invariant: the number of entry slots the file holds (valid or not).
    n_entries: u64,
}

fn check(seq: u64, pos: RecordPos) -> u32 {
    let mut bytes = [0_u8; 20];
    bytes[..8].copy_from_slice(&seq.to_le_bytes());
    bytes[8..16].copy_from_slice(&pos.frame.to_le_bytes());
    bytes[16..].copy_from_slice(&pos.offset.to_le_bytes());
    fnv64(&bytes) as u32
}

impl OffsetIndex {
    /// Opens the index at `path` for reading, if it exists and belongs to `identity`.
    pub fn open(path: &Path, identity: &IndexIdentity) -> Result<Option<OffsetIndex>, StoreError> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::io("open", path, source)),
        };
        OffsetIndex::checked(path, file, identity)
    }

    /// Opens the index at `path` for writing, recreating it empty when it is missing, torn
    /// or belongs to another log.
    pub fn open_or_create(
        path: &Path,
        identity: &IndexIdentity,
    ) -> Result<OffsetIndex, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|source| StoreError::io("open", path, source))?;
        // (The model creates only a missing file.)
        crate::powerloss::note!(Create(path.to_path_buf()));
        let reopened = file
            .try_clone()
            .map_err(|source| StoreError::io("open", path, source))?;
        if let Some(index) = OffsetIndex::checked(path, reopened, identity)? {
            return Ok(index);
        }
        file.set_len(0)
            .and_then(|()| file.write_all_at(&identity.header(), 0))
            .map_err(|source| StoreError::io("write", path, source))?;
        crate::powerloss::note!(SetLen {
            path: path.to_path_buf(),
            len: 0
        });
        crate::powerloss::note!(Write {
            path: path.to_path_buf(),
            offset: 0,
            bytes: identity.header().to_vec()
        });
        Ok(OffsetIndex {
            path: path.to_path_buf(),
            file,
            n_entries: 0,
        })
    }

    fn checked(
        path: &Path,
        file: File,
        identity: &IndexIdentity,
    ) -> Result<Option<OffsetIndex>, StoreError> {
        let len = file
            .metadata()
            .map_err(|source| StoreError::io("stat", path, source))?
            .len();
        if len < HEADER_LEN {
            return Ok(None);
        }
        let mut header = [0_u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0)
            .map_err(|source| StoreError::io("read", path, source))?;
        if header != identity.header() {
            return Ok(None);
        }
        Ok(Some(OffsetIndex {
            path: path.to_path_buf(),
            file,
            n_entries: (len - HEADER_LEN) / ENTRY_LEN,
        }))
    }

    /// The number of entry slots (an upper bound on the valid entries).
    pub fn n_entries(&self) -> u64 {
        self.n_entries
    }

    /// The position of `seq`'s record, or `None` when the index has no valid entry for it.
    pub fn get(&self, seq: u64) -> Result<Option<RecordPos>, StoreError> {
        if seq >= self.n_entries {
            return Ok(None);
        }
        let mut entry = [0_u8; ENTRY_LEN as usize];
        self.file
            .read_exact_at(&mut entry, HEADER_LEN + seq * ENTRY_LEN)
            .map_err(|source| StoreError::io("read", &self.path, source))?;
        let field = |range: std::ops::Range<usize>| entry.get(range).unwrap_or_default();
        let frame = u64::from_le_bytes(field(0..8).try_into().unwrap_or_default());
        let offset = u32::from_le_bytes(field(8..12).try_into().unwrap_or_default());
        let stored = u32::from_le_bytes(field(12..16).try_into().unwrap_or_default());
        let pos = RecordPos { frame, offset };
        Ok((check(seq, pos) == stored).then_some(pos))
    }

    /// Writes the entries of seqs `first_seq..` (which must not leave a gap: `first_seq <=
    /// n_entries`), dropping any entries after them.
    pub fn write_from(
        &mut self,
        first_seq: u64,
        positions: &[RecordPos],
    ) -> Result<(), StoreError> {
        if first_seq > self.n_entries {
            return Err(StoreError::StaleCheckpoint {
                location: self.path.display().to_string(),
                detail: format!(
                    "index holds {} entries, cannot write from seq {first_seq}",
                    self.n_entries
                ),
            });
        }
        let mut bytes = Vec::with_capacity(positions.len() * ENTRY_LEN as usize);
        for (seq, pos) in (first_seq..).zip(positions) {
            bytes.extend_from_slice(&pos.frame.to_le_bytes());
            bytes.extend_from_slice(&pos.offset.to_le_bytes());
            bytes.extend_from_slice(&check(seq, *pos).to_le_bytes());
        }
        let end = first_seq + positions.len() as u64;
        self.file
            .write_all_at(&bytes, HEADER_LEN + first_seq * ENTRY_LEN)
            .map_err(|source| StoreError::io("write", &self.path, source))?;
        crate::powerloss::note!(Write {
            path: self.path.clone(),
            offset: HEADER_LEN + first_seq * ENTRY_LEN,
            bytes: bytes.clone()
        });
        if end < self.n_entries {
            self.file
                .set_len(HEADER_LEN + end * ENTRY_LEN)
                .map_err(|source| StoreError::io("truncate", &self.path, source))?;
            crate::powerloss::note!(SetLen {
                path: self.path.clone(),
                len: HEADER_LEN + end * ENTRY_LEN
            });
        }
        self.n_entries = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
