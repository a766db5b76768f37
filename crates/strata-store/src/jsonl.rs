//! The JSONL backend, dsh-compatible (persistence §2; session-core §10.4).
//!
//! Layout: `<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.v3.jsonl`, or
//! `session.v3.jsonl.zstd` in a zstd root (`_no-cwd/` when the header has no cwd), with the
//! writer lock `session.lock` beside it. Raw logs are one compact JSON record per line; zstd
//! logs are one checksummed frame for the header line and one per append batch.
//!
//! Invariants (the backend contract of `store.rs`, made concrete):
//! - **Publish.** A session file appears only complete: bytes go to an exclusive temp file,
//!   fsync, `link` to the final name (which fails rather than replaces), fsync of the
//!   directory (persistence §2.6). New directories are fsynced into their parents. The temp
//!   file is locked while its writer lives; create and open for writing remove the ones
//!   killed writers left beside the log (`temp`, docs/format.md §5b).
//! - **Append.** One `pwrite` at the known end + `fdatasync` per batch. On failure the file is
//!   truncated back to its pre-append size and fsynced before the error is returned.
//! - **Torn tail.** A reader stops before an unterminated final line (raw) or a torn final
//!   frame (zstd, keeping its complete records); an open for writing truncates those bytes
//!   (re-appending recovered zstd records as a fresh frame) before any append.
//! - **Corruption is loud.** A complete line that does not decode, a seq out of order, a bad
//!   frame: an error naming file, line and seq. Nothing after a bad record is ever dropped.
//! - **One encoding per root.** A log of the other encoding in this root is refused, as is an
//!   id stored under two project directories, and a header whose id is not the requested one.
//!
//! This file is the backend (layout, configuration, the `Backend` trait); its parts: `read`
//! (rows streamed from a raw or zstd file), `tail` (the last records, read backwards), `append`
//! (the appender a write-open leaves), `publish` (a new log made durable) and `files` (one log
//! file outside any store).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_core::{Event, Generation, RawEvent, SessionHeader};

use crate::backend::ensure_read_to_end;
use crate::backend::{Backend, Listing, LoadFn, LogAppender, LogStream, ReadFrom};
use crate::error::StoreError;
use crate::lock::{SessionLock, LOCK_FILE_NAME};
use crate::memory::sort_newest_first;
use strata_format::codec::encode_header_line;
use strata_format::layout::{
    encode_segment, parse_session_file_name, project_key, session_file_name, MAX_SEGMENT_BYTES,
};
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;
use strata_format::zstd_frame::{FrameCompressor, DEFAULT_LEVEL};

/// How a JSONL root stores its logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `session.v3.jsonl`: plain lines.
    None,
    /// `session.v3.jsonl.zstd`: one zstd frame per batch (dsh's default).
    Zstd,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Compression::None => "raw .jsonl",
            Compression::Zstd => ".jsonl.zstd",
        }
    }
}

/// Configuration of a [`JsonlBackend`].
#[derive(Debug, Clone)]
pub struct JsonlConfig {
    /// The root directory (created on first write).
    pub root: PathBuf,
    /// The root's one encoding.
    pub compression: Compression,
    /// Largest record read or written, in bytes (default 64 MiB).
    pub max_record_len: usize,
    /// zstd level for new frames.
    pub zstd_level: i32,
    /// Whether writers keep the lazy-resume sidecars (`session.v3.idx`, `session.v3.ckpt`)
    /// beside the logs they write (default on). Off for a root another program owns, such as
    /// dsh's own folder: its writers then leave only what dsh itself would (the log and
    /// `session.lock`), and every open reads the whole log.
    pub sidecars: bool,
}

impl JsonlConfig {
    /// A root with default limits.
    pub fn new(root: impl Into<PathBuf>, compression: Compression) -> JsonlConfig {
        JsonlConfig {
            root: root.into(),
            compression,
            max_record_len: DEFAULT_MAX_RECORD_LEN,
            zstd_level: DEFAULT_LEVEL,
            sidecars: true,
        }
    }

    /// This configuration without sidecars (see [`JsonlConfig::sidecars`]).
    pub fn without_sidecars(mut self) -> JsonlConfig {
        self.sidecars = false;
        self
    }
}

/// The JSONL [`Backend`].
#[derive(Debug, Clone)]
pub struct JsonlBackend {
    config: JsonlConfig,
}

/// A located session log.
struct Found {
    dir: PathBuf,
    file: PathBuf,
}

impl JsonlBackend {
    /// A backend over `config.root`.
    pub fn new(config: JsonlConfig) -> JsonlBackend {
        JsonlBackend { config }
    }

    /// The configuration.
    pub fn config(&self) -> &JsonlConfig {
        &self.config
    }

    fn zstd(&self) -> bool {
        self.config.compression == Compression::Zstd
    }

    fn file_name(&self) -> String {
        session_file_name(Generation::NATIVE.format_version() as u32, self.zstd())
    }

    /// The session directory a header maps to.
    pub fn session_dir(&self, cwd: Option<&str>, id: &str) -> Result<PathBuf, StoreError> {
        let segment = encode_segment(id).map_err(|source| StoreError::BadId {
            id: id.to_owned(),
            source,
        })?;
        Ok(self.config.root.join(project_key(cwd)).join(segment))
    }

    /// Finds the log of `id` in any project directory.
    fn find(&self, id: &str) -> Result<Option<Found>, StoreError> {
        let segment = encode_segment(id).map_err(|source| StoreError::BadId {
            id: id.to_owned(),
            source,
        })?;
        let root = &self.config.root;
        let entries = match fs::read_dir(root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::io("list", root, source)),
        };
        let mut found: Option<Found> = None;
        for entry in entries {
            let entry = entry.map_err(|source| StoreError::io("list", root, source))?;
            let dir = entry.path().join(&segment);
            if !dir.is_dir() {
                continue;
            }
            let Some(file) = self.log_file_in(&dir)? else {
                continue;
            };
            if let Some(first) = &found {
                return Err(StoreError::Duplicate {
                    id: id.to_owned(),
                    first: first.file.clone(),
                    second: file,
                });
            }
            found = Some(Found { dir, file });
        }
        Ok(found)
    }

    /// The V3 log in a session directory, refusing other generations and encodings.
    fn log_file_in(&self, dir: &Path) -> Result<Option<PathBuf>, StoreError> {
        let entries = fs::read_dir(dir).map_err(|source| StoreError::io("list", dir, source))?;
        let supported = Generation::NATIVE.format_version() as u32;
        let mut newest: Option<(u32, bool, PathBuf)> = None;
        for entry in entries {
            let entry = entry.map_err(|source| StoreError::io("list", dir, source))?;
            let name = entry.file_name();
            let Some((generation, zstd)) = name.to_str().and_then(parse_session_file_name) else {
                continue;
            };
            let path = entry.path();
            if generation == supported && zstd != self.zstd() {
                return Err(StoreError::WrongEncoding {
                    path,
                    found: if zstd {
                        Compression::Zstd.name()
                    } else {
                        Compression::None.name()
                    },
                    expected: self.config.compression.name(),
                });
            }
            if newest
                .as_ref()
                .is_none_or(|(best, _, _)| generation > *best)
            {
                newest = Some((generation, zstd, path));
            }
        }
        match newest {
            None => Ok(None),
            Some((generation, _, path)) if generation == supported => Ok(Some(path)),
            Some((found, _, path)) => Err(StoreError::Generation {
                path,
                found,
                supported,
            }),
        }
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            store: self.describe(),
            id: id.to_owned(),
        }
    }

    fn find_existing(&self, id: &str) -> Result<Found, StoreError> {
        self.find(id)?.ok_or_else(|| self.not_found(id))
    }

    /// Opens a log file of this root for streaming, checking that its header names `id` and
    /// maps to the directory it sits in.
    fn open_log(&self, path: &Path, id: &str) -> Result<JsonlRows, StoreError> {
        let rows = JsonlRows::open(path, self.zstd(), self.config.max_record_len)?;
        let header = rows.header();
        if header.id() != id {
            return Err(StoreError::Corrupt {
                location: path.display().to_string(),
                line: Some(1),
                seq: None,
                detail: format!(
                    "header names session {:?}, not the requested {id:?} (id collision)",
                    header.id()
                ),
            });
        }
        let expected_dir = self.session_dir(header.cwd(), id)?;
        if path.parent() != Some(expected_dir.as_path()) {
            return Err(StoreError::Corrupt {
                location: path.display().to_string(),
                line: Some(1),
                seq: None,
                detail: format!(
                    "header cwd maps session {id:?} to {}, not here",
                    expected_dir.display()
                ),
            });
        }
        Ok(rows)
    }

    /// Opens a log for appending (see [`Backend::open_append`]); `resumable` first offers
    /// `load` the rows after a verified checkpoint, and keeps the sidecars current.
    fn open_append_with(
        &self,
        id: &str,
        load: &mut LoadFn<'_>,
        resumable: bool,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let found = self.find_existing(id)?;
        let lock = SessionLock::acquire(&found.dir.join(LOCK_FILE_NAME), id)?;
        // A create killed between its link and its unlink left its temp file beside the log.
        crate::temp::sweep(&found.file);
        let rows = self.open_log(&found.file, id)?;
        let mut resumed = None;
        if resumable {
            let header = rows.header();
            let max_record_len = self.config.max_record_len;
            if let Some(mut resumable) =
                crate::resume::resume_stream(&found.file, self.zstd(), header, id, max_record_len)
            {
                match load(&mut resumable.stream) {
                    Ok(()) => resumed = Some(resumable),
                    // The checkpoint did not fit after all: read the whole log.
                    Err(StoreError::StaleCheckpoint { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        let mut whole;
        let stream = match &mut resumed {
            Some(resumed) => &mut resumed.stream,
            None => {
                whole = rows.into_stream();
                load(&mut whole)?;
                &mut whole
            }
        };
        ensure_read_to_end(stream, || found.file.display().to_string())?;
        let next_seq = stream.next_seq();
        let torn = stream.torn();
        let appender = Box::new(appender_after_read(
            &found.file,
            &found.dir,
            self.zstd().then_some(self.config.zstd_level),
            AppendStart {
                id,
                next_seq,
                torn,
                lock,
            },
        )?);
        if !resumable {
            return Ok(appender);
        }
        let tail = resumed.map(|resumed| {
            let mut log = resumed
                .tail
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (
                resumed.identity,
                resumed.n_checkpointed,
                std::mem::take(&mut *log),
            )
        });
        Ok(Box::new(crate::resume::SidecarAppender::new(
            appender,
            id,
            &found.file,
            self.zstd(),
            self.config.max_record_len,
            tail.as_ref()
                .map(|(identity, n_checkpointed, log)| (*identity, *n_checkpointed, log)),
        )))
    }
}

impl Backend for JsonlBackend {
    fn describe(&self) -> String {
        let kind = if self.zstd() { "jsonl+zstd" } else { "jsonl" };
        format!("{kind}:{}", self.config.root.display())
    }

    fn max_record_len(&self) -> usize {
        self.config.max_record_len
    }

    /// The id names the session's directory (dsh's encoding of it), which must fit one file
    /// name: dsh applies no limit and fails creating the directory; this store says so first.
    fn check_new_id(&self, id: &str) -> Result<(), StoreError> {
        let segment = encode_segment(id).map_err(|source| StoreError::BadId {
            id: id.to_owned(),
            source,
        })?;
        if segment.len() <= MAX_SEGMENT_BYTES {
            return Ok(());
        }
        Err(StoreError::IdTooLong {
            store: self.describe(),
            id: id.to_owned(),
            n_bytes: id.len(),
            n_name_bytes: Some(segment.len()),
            limit: MAX_SEGMENT_BYTES,
            reason: "dsh's layout names a session's directory after its id, and a file name \
                     holds at most 255 bytes",
        })
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let id = header.id();
        self.check_new_id(id)?;
        if header.generation() != Generation::NATIVE {
            return Err(StoreError::GenerationNotKept {
                store: self.describe(),
                id: id.to_owned(),
                found: header.generation().format_version(),
            });
        }
        let dir = self.session_dir(header.cwd(), id)?;
        if self.find(id)?.is_some() {
            return Err(StoreError::AlreadyExists {
                store: self.describe(),
                id: id.to_owned(),
            });
        }
        create_dir_durable(&self.config.root)?;
        if let Some(project) = dir.parent() {
            create_dir_durable(project)?;
        }
        create_dir_durable(&dir)?;
        let lock = SessionLock::acquire(&dir.join(LOCK_FILE_NAME), id)?;
        let final_path = dir.join(self.file_name());
        let mut header_line = Vec::new();
        encode_header_line(header, &mut header_line)?;
        let mut compressor = if self.zstd() {
            Some(
                FrameCompressor::new(self.config.zstd_level)
                    .map_err(|source| StoreError::io("start zstd for", &final_path, source))?,
            )
        } else {
            None
        };
        let size = publish_new(&final_path, |out| {
            write_whole_log(out, &header_line, events, compressor.as_mut())
        })
        .map_err(|error| match error {
            PublishError::Exists => StoreError::AlreadyExists {
                store: self.describe(),
                id: id.to_owned(),
            },
            PublishError::Io(error) => error,
        })?;
        let file = open_rw(&final_path)?;
        let appender = Box::new(JsonlAppender {
            id: id.to_owned(),
            path: final_path.clone(),
            file,
            size,
            next_seq: events.len() as u64,
            compressor,
            _lock: lock,
        });
        if !self.config.sidecars {
            return Ok(appender);
        }
        Ok(Box::new(crate::resume::SidecarAppender::new(
            appender,
            id,
            &final_path,
            self.zstd(),
            self.config.max_record_len,
            None,
        )))
    }

    fn open_append(
        &self,
        id: &str,
        from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let resumable = from == ReadFrom::Checkpoint && self.config.sidecars;
        self.open_append_with(id, load, resumable)
    }

    fn scan(&self, id: &str, from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        let found = self.find_existing(id)?;
        let rows = self.open_log(&found.file, id)?;
        if from == ReadFrom::Start || !self.config.sidecars {
            return Ok(rows.into_stream());
        }
        let resumed = crate::resume::resume_stream(
            &found.file,
            self.zstd(),
            rows.header(),
            id,
            self.config.max_record_len,
        );
        Ok(match resumed {
            Some(resumed) => resumed.stream,
            None => rows.into_stream(),
        })
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        let found = self.find_existing(id)?;
        if self.zstd() {
            return read_tail_zstd(&found.file, from_seq, self.config.max_record_len);
        }
        read_tail_raw(&found.file, from_seq, self.config.max_record_len)
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.find(id)?.is_some())
    }

    fn list(&self) -> Result<Listing, StoreError> {
        let mut listing = Listing::default();
        let root = &self.config.root;
        let projects = match fs::read_dir(root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(listing),
            Err(source) => return Err(StoreError::io("list", root, source)),
        };
        for project in projects {
            let project = project.map_err(|source| StoreError::io("list", root, source))?;
            let project_path = project.path();
            if !project_path.is_dir() {
                continue;
            }
            let sessions = fs::read_dir(&project_path)
                .map_err(|source| StoreError::io("list", &project_path, source))?;
            for session in sessions {
                let session =
                    session.map_err(|source| StoreError::io("list", &project_path, source))?;
                let dir = session.path();
                if !dir.is_dir() {
                    continue;
                }
                let header = self
                    .log_file_in(&dir)
                    .and_then(|file| file.map(|file| read_header(&file, self.zstd())).transpose());
                match header {
                    Ok(Some(header)) => listing.sessions.push(header),
                    Ok(None) => {}
                    Err(problem) => listing.problems.push(problem),
                }
            }
        }
        sort_newest_first(&mut listing.sessions);
        Ok(listing)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let found = self.find_existing(id)?;
        let lock = SessionLock::acquire(&found.dir.join(LOCK_FILE_NAME), id)?;
        fs::remove_file(&found.file)
            .map_err(|source| StoreError::io("delete", &found.file, source))?;
        fsync_dir(&found.dir)?;
        drop(lock);
        fs::remove_dir_all(&found.dir)
            .map_err(|source| StoreError::io("delete", &found.dir, source))?;
        if let Some(project) = found.dir.parent() {
            fsync_dir(project)?;
        }
        Ok(())
    }
}

mod append;
mod files;
mod publish;
mod read;
mod tail;

pub(crate) use append::{appender_after_read, AppendStart, JsonlAppender};
pub use files::{is_zstd_file, read_log, scan_log, scan_log_for_writing, write_log};
use publish::{
    create_dir_durable, fsync_dir, open_rw, publish_new, sync_what_was_read, write_whole_log,
    PublishError,
};
use read::{read_all, torn_frame_records};
pub(crate) use read::{read_header, JsonlRows};
pub(crate) use tail::{read_tail_raw, read_tail_zstd};
