//! A V3 log file outside any store layout, as a store of its one session (issue 27 item 2).
//!
//! The file a user holds in their hand — a copy, an export, a log mailed by a colleague — is
//! maintained in place by the same code a JSONL store uses: [`LooseFile`] is a [`Backend`]
//! whose only session is the one the file's header names, so `Store::open_write` takes the
//! writer lock, streams and validates the whole log, cuts a torn tail, closes a crashed turn
//! and appends with one write and one `fdatasync` per batch, rolled back on failure
//! (docs/format.md §5), exactly as for a stored session.
//!
//! Invariants:
//! - **The lock.** A file named as a dsh session file (`session[.vN].jsonl[.zstd]`) is locked
//!   with `session.lock` in its directory — dsh's own lock for that directory, so a dsh writer
//!   and strata exclude each other. Any other name is locked with `<file name>.lock` beside it,
//!   so two loose logs in one directory never block each other ([`lock_path_for`]).
//! - **Nothing but the log and its lock.** No checkpoint or offset index is written beside a
//!   loose file, and no other session can be created or deleted through it
//!   ([`StoreError::Unsupported`]).
//! - **The encoding is the file's.** Raw or zstd is told from the content; a zstd log gets one
//!   new frame per batch, as dsh frames it (the header alone in the first frame).
//! - **V3 only.** An older generation's file is refused by the V3 reader; the way forward is
//!   `strata migrate`, which publishes a successor beside it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_core::{Event, RawEvent, SessionHeader};

use crate::backend::{
    ensure_read_to_end, Backend, Listing, LoadFn, LogAppender, LogStream, ReadFrom,
};
use crate::error::StoreError;
use crate::jsonl::{
    appender_after_read, is_zstd_file, read_header, read_tail_raw, read_tail_zstd, AppendStart,
    JsonlRows,
};
use crate::lock::{SessionLock, LOCK_FILE_NAME};
use strata_format::layout::parse_session_file_name;
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;
use strata_format::zstd_frame::DEFAULT_LEVEL;

/// One V3 log file as a store of its one session.
#[derive(Debug, Clone)]
pub struct LooseFile {
    path: PathBuf,
    lock_path: PathBuf,
    zstd: bool,
}

impl LooseFile {
    /// The log at `path` (which must exist); its encoding is read from its first bytes.
    pub fn open(path: impl Into<PathBuf>) -> Result<LooseFile, StoreError> {
        let path = path.into();
        let zstd = is_zstd_file(&path)?;
        let lock_path = lock_path_for(&path);
        Ok(LooseFile {
            path,
            lock_path,
            zstd,
        })
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file whose `flock` excludes a second writer (see [`lock_path_for`]).
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// Whether the log is zstd frames.
    pub fn is_zstd(&self) -> bool {
        self.zstd
    }

    /// The session id the file's header names.
    pub fn session_id(&self) -> Result<String, StoreError> {
        Ok(read_header(&self.path, self.zstd)?.id().to_owned())
    }

    /// Opens the rows, refusing a header that names another session.
    fn rows(&self, id: &str) -> Result<JsonlRows, StoreError> {
        let rows = JsonlRows::open(&self.path, self.zstd, DEFAULT_MAX_RECORD_LEN)?;
        if rows.header().id() != id {
            return Err(self.not_found(id));
        }
        Ok(rows)
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            store: self.describe(),
            id: id.to_owned(),
        }
    }

    fn unsupported(&self, op: &'static str) -> StoreError {
        StoreError::Unsupported {
            store: self.describe(),
            op,
            reason: "a loose log file holds exactly one session; use a store \
                     (`jsonl:DIR`, a SQLite file) for more",
        }
    }
}

/// The lock file of a writer of the log at `path`: `session.lock` in its directory when the
/// file is named as a dsh session file (dsh locks that name for the directory's session),
/// else `<file name>.lock` beside it.
pub fn lock_path_for(path: &Path) -> PathBuf {
    let dir = crate::temp::dir_of(path);
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if parse_session_file_name(&name).is_some() {
        return dir.join(LOCK_FILE_NAME);
    }
    dir.join(format!("{name}.lock"))
}

impl Backend for LooseFile {
    fn describe(&self) -> String {
        format!("file:{}", self.path.display())
    }

    fn max_record_len(&self) -> usize {
        DEFAULT_MAX_RECORD_LEN
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let _ = (header, events);
        Err(self.unsupported("create a session"))
    }

    /// Keeps no checkpoints: whatever `from` says, the whole log is read.
    fn open_append(
        &self,
        id: &str,
        _from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let lock = SessionLock::acquire(&self.lock_path, id)?;
        // A publish of this name killed between its link and its unlink left a temp file.
        crate::temp::sweep(&self.path);
        let mut stream = self.rows(id)?.into_stream();
        load(&mut stream)?;
        ensure_read_to_end(&mut stream, || self.path.display().to_string())?;
        let start = AppendStart {
            id,
            next_seq: stream.next_seq(),
            torn: stream.torn(),
            lock,
        };
        let level = self.zstd.then_some(DEFAULT_LEVEL);
        let appender =
            appender_after_read(&self.path, crate::temp::dir_of(&self.path), level, start)?;
        Ok(Box::new(appender))
    }

    /// Keeps no checkpoints: whatever `from` says, the whole log is read.
    fn scan(&self, id: &str, _from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        Ok(self.rows(id)?.into_stream())
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        if !self.exists(id)? {
            return Err(self.not_found(id));
        }
        if self.zstd {
            return read_tail_zstd(&self.path, from_seq, DEFAULT_MAX_RECORD_LEN);
        }
        read_tail_raw(&self.path, from_seq, DEFAULT_MAX_RECORD_LEN)
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.session_id()? == id)
    }

    fn list(&self) -> Result<Listing, StoreError> {
        let mut listing = Listing::default();
        match read_header(&self.path, self.zstd) {
            Ok(header) => listing.sessions.push(header),
            Err(problem) => listing.problems.push(problem),
        }
        Ok(listing)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let _ = id;
        Err(self.unsupported("delete a session"))
    }
}

#[cfg(test)]
mod tests;
