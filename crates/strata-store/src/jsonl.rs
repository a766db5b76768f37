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

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_core::json::non_negative_safe_integer;
use strata_core::{Event, Generation, RawEvent, ScanArena, ScannedRow, SessionHeader};

use crate::codec::{
    encode_event_line, encode_header_line, scan_event_line_at, JsonlReader, Location, ReaderOptions,
};
use crate::decode_pool::{DecodePool, NoPages, RecordBatch, RecordDecoder, RecordSource};
use crate::error::StoreError;
use crate::frames::scan_frames;
use crate::layout::{
    encode_segment, parse_session_file_name, project_key, session_file_name, MAX_SEGMENT_BYTES,
};
use crate::lines::DEFAULT_MAX_RECORD_LEN;
use crate::lock::{SessionLock, LOCK_FILE_NAME};
use crate::memory::sort_newest_first;
use crate::powerloss::note;
use crate::store::ensure_read_to_end;
use crate::store::{
    Backend, Batch, EventRows, Listing, LoadFn, LogAppender, LogStream, StoredLog, TornInfo,
};
use crate::zstd::{recoverable_prefix, FrameCompressor, Framing, ZstdStream, DEFAULT_LEVEL};

/// What a refusal of a zstd file in another framing than dsh's tells the user to do.
pub(crate) const FOREIGN_FRAMING_HINT: &str = "a file compressed another way (by the `zstd` \
    tool, say) is read by the reading commands but never appended to; `strata convert FILE \
    jsonl-zstd:DIR` copies it into a store in dsh's framing";

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
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, false)
    }

    fn open_append_resumable(
        &self,
        id: &str,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, self.config.sidecars)
    }

    fn scan_resumable(&self, id: &str) -> Result<LogStream<'_>, StoreError> {
        if !self.config.sidecars {
            return self.scan(id);
        }
        let found = self.find_existing(id)?;
        let rows = self.open_log(&found.file, id)?;
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

    fn scan(&self, id: &str) -> Result<LogStream<'_>, StoreError> {
        let found = self.find_existing(id)?;
        Ok(self.open_log(&found.file, id)?.into_stream())
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

/// What a read of a log before its first append established: the session, the seq the next
/// append starts at, the torn tail to cut, and the writer lock held throughout.
pub(crate) struct AppendStart<'a> {
    pub(crate) id: &'a str,
    pub(crate) next_seq: u64,
    pub(crate) torn: Option<TornInfo>,
    pub(crate) lock: SessionLock,
}

/// The appender of a log just read to its end under `start.lock`: makes what was read durable
/// (the file and the directories up from `dir`), cuts a torn tail (re-appending the complete
/// records a torn zstd frame held as a fresh frame), and positions the appender at the end.
/// `zstd_level` is `Some` for a zstd log. Shared by store sessions and loose files, so both
/// follow one durability rule.
pub(crate) fn appender_after_read(
    path: &Path,
    dir: &Path,
    zstd_level: Option<i32>,
    start: AppendStart<'_>,
) -> Result<JsonlAppender, StoreError> {
    let AppendStart {
        id,
        next_seq,
        torn,
        lock,
    } = start;
    let file = open_rw(path)?;
    sync_what_was_read(&file, path, dir)?;
    let mut size = file
        .metadata()
        .map_err(|source| StoreError::io("stat", path, source))?
        .len();
    let mut compressor = match zstd_level {
        Some(level) => Some(
            FrameCompressor::new(level)
                .map_err(|source| StoreError::io("start zstd for", path, source))?,
        ),
        None => None,
    };
    if let Some(torn) = torn {
        // Never glue an append onto torn bytes: cut them first, durably, re-appending the
        // complete records a torn zstd frame held as a fresh frame.
        let recovered = match &compressor {
            Some(_) => torn_frame_records(path, torn.offset)?,
            None => Vec::new(),
        };
        file.set_len(torn.offset)
            .and_then(|()| {
                note!(SetLen {
                    path: path.to_path_buf(),
                    len: torn.offset
                });
                file.sync_all()
            })
            .map_err(|source| StoreError::io("truncate torn tail of", path, source))?;
        note!(Sync(path.to_path_buf()));
        size = torn.offset;
        if let (Some(compressor), false) = (&mut compressor, recovered.is_empty()) {
            let frame = compressor
                .frame(&recovered)
                .map_err(|source| StoreError::io("compress", path, source))?;
            file.write_all_at(&frame, size)
                .and_then(|()| {
                    note!(Write {
                        path: path.to_path_buf(),
                        offset: size,
                        bytes: frame.clone()
                    });
                    file.sync_data()
                })
                .map_err(|source| StoreError::io("re-append recovered records to", path, source))?;
            note!(Sync(path.to_path_buf()));
            size += frame.len() as u64;
        }
    }
    Ok(JsonlAppender {
        id: id.to_owned(),
        path: path.to_path_buf(),
        file,
        size,
        next_seq,
        compressor,
        _lock: lock,
    })
}

/// The exclusive appender of one JSONL log.
pub(crate) struct JsonlAppender {
    id: String,
    path: PathBuf,
    file: File,
    /// Invariant: the file's length; every byte before it is durable.
    size: u64,
    next_seq: u64,
    compressor: Option<FrameCompressor>,
    _lock: SessionLock,
}

impl LogAppender for JsonlAppender {
    fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let Some(first) = batch.events.first() else {
            return Ok(());
        };
        if first.seq().get() != self.next_seq {
            return Err(StoreError::SeqConflict {
                id: self.id.clone(),
                expected: first.seq().get(),
                found: self.next_seq,
            });
        }
        let frame;
        let bytes = match &mut self.compressor {
            Some(compressor) => {
                frame = compressor
                    .frame(batch.jsonl)
                    .map_err(|source| StoreError::io("compress", &self.path, source))?;
                &frame[..]
            }
            None => batch.jsonl,
        };
        let written = self.file.write_all_at(bytes, self.size).and_then(|()| {
            note!(Write {
                path: self.path.clone(),
                offset: self.size,
                bytes: bytes.to_vec()
            });
            self.file.sync_data()
        });
        if let Err(write) = written {
            // Leave the file as it was, durably, before reporting (persistence §10 item 6).
            return Err(
                match self
                    .file
                    .set_len(self.size)
                    .and_then(|()| self.file.sync_all())
                {
                    Ok(()) => {
                        note!(SetLen {
                            path: self.path.clone(),
                            len: self.size
                        });
                        note!(Sync(self.path.clone()));
                        StoreError::io("append to", &self.path, write)
                    }
                    Err(rollback) => StoreError::RollbackFailed {
                        path: self.path.clone(),
                        size: self.size,
                        write,
                        rollback,
                    },
                },
            );
        }
        note!(Sync(self.path.clone()));
        self.size += bytes.len() as u64;
        self.next_seq += batch.events.len() as u64;
        Ok(())
    }
}

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
    decoder: RowDecoder,
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
    path: Arc<Path>,
    /// Whether rows must carry seqs `0, 1, 2, …` (store reads). A file read for a tool leaves
    /// seqs to the core, which reports a gap with its own rule and upstream's message.
    check_seqs: bool,
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

/// Fails when `file` (`len_at_open` bytes long when its read began) is shorter now: the read
/// ended early because the file was cut under it, and the end it saw is not the log's.
pub(crate) fn ensure_not_shrunk(file: &File, len_at_open: u64) -> io::Result<()> {
    let len_now = file.metadata()?.len();
    if len_now < len_at_open {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the file shrank from {len_at_open} to {len_now} bytes while it was read \
                 (another program truncated it); read it again"
            ),
        ));
    }
    Ok(())
}

/// The complete records a torn final zstd frame starting at `start` decodes to (best effort).
fn torn_frame_records(path: &Path, start: u64) -> Result<Vec<u8>, StoreError> {
    let mut file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|source| StoreError::io("read", path, source))?;
    let mut decoder = zstd::stream::raw::Decoder::new()
        .map_err(|source| StoreError::io("decode", path, source))?;
    let mut plain = Vec::new();
    if crate::zstd::decompress(&mut decoder, &bytes, &mut plain, false).is_err() {
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
fn zstd_error(path: &Path, failure: Option<&str>, error: crate::codec::CodecError) -> StoreError {
    match (failure, &error) {
        (Some(detail), crate::codec::CodecError::Io { .. }) => corrupt(path, detail.to_owned()),
        _ => StoreError::from(error),
    }
}

fn read_all(path: &Path, mut file: File) -> Result<Vec<u8>, StoreError> {
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

/// The events with seq `from_seq..` of a raw log, read backwards from its end so a tail read
/// costs O(tail), not O(file). Lines are validated as a contiguous run ending at the last
/// complete record.
pub(crate) fn read_tail_raw(
    path: &Path,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Vec<RawEvent>, StoreError> {
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let len = file
        .metadata()
        .map_err(|source| StoreError::io("stat", path, source))?
        .len();
    // Collect complete lines from the end, newest first, until one has seq < from_seq.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut end = len; // exclusive end of the unread region
    let mut pending: Vec<u8> = Vec::new(); // bytes after the last newline seen (reversed order)
    let mut seen_newline = false;
    let chunk_len: u64 = 64 * 1024;
    let mut chunk = vec![0u8; chunk_len as usize];
    let mut done = false;
    while end > 0 && !done {
        let start = end.saturating_sub(chunk_len);
        let buf = &mut chunk[..(end - start) as usize];
        file.read_exact_at(buf, start)
            .map_err(|source| StoreError::io("read", path, source))?;
        for index in (0..buf.len()).rev() {
            let byte = buf[index];
            if byte != b'\n' {
                pending.push(byte);
                if pending.len() > max_record_len {
                    return Err(StoreError::Corrupt {
                        location: path.display().to_string(),
                        line: None,
                        seq: None,
                        detail: format!("a record near offset {} is longer than the {max_record_len}-byte limit", start + index as u64),
                    });
                }
                continue;
            }
            if seen_newline {
                // `pending` holds one complete line, reversed.
                pending.reverse();
                let line = std::mem::take(&mut pending);
                let seq = line_seq(&line);
                if seq.is_some_and(|seq| seq < from_seq) {
                    done = true;
                    break;
                }
                lines.push(line);
            } else {
                // Bytes after the final newline are a torn tail: ignore them.
                pending.clear();
                seen_newline = true;
            }
        }
        end = start;
    }
    // If the scan reached offset 0, `pending` holds the header line, which is not an event.
    lines.reverse();
    let mut events = Vec::with_capacity(lines.len());
    for (expected, line) in (from_seq..).zip(lines) {
        let location = crate::codec::Location {
            file: Some(path.to_path_buf()),
            line: 0,
            seq: Some(expected),
        };
        let event = crate::codec::decode_event_line(&line, &location)?;
        let seq = event.seq_number();
        if seq != Some(expected) {
            return Err(StoreError::Corrupt {
                location: path.display().to_string(),
                line: None,
                seq: Some(expected),
                detail: format!(
                    "seq out of order in the log tail: expected {expected}, found {}",
                    event
                        .seq_value()
                        .map_or_else(|| "none".to_owned(), |value| value.to_string())
                ),
            });
        }
        events.push(event);
    }
    Ok(events)
}

/// The seq of a complete line, read cheaply when the line starts like a strata/dsh event.
fn line_seq(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct SeqOnly {
        seq: Option<serde_json::Value>,
    }
    let parsed: SeqOnly = serde_json::from_slice(line).ok()?;
    parsed.seq.as_ref().and_then(non_negative_safe_integer)
}

/// The events with seq `from_seq..` of a zstd log, read from its end so a tail read costs
/// O(tail): the last frames are found by searching backwards for the frame magic and accepting
/// a candidate only when the frames from it chain structurally to the end of the file; their
/// plaintext is checksummed on decompression and their seqs must run contiguously to
/// `from_seq`. Anything else (no such chain near the end, a frame that does not decompress,
/// seqs that do not fit) falls back to the whole-file walk, which is the authority.
pub(crate) fn read_tail_zstd(
    path: &Path,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Vec<RawEvent>, StoreError> {
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    let file = File::open(path).map_err(|source| StoreError::io("open", path, source))?;
    let len = file
        .metadata()
        .map_err(|source| StoreError::io("stat", path, source))?
        .len();
    let mut window: u64 = 16 * 1024;
    // `region` holds the file's bytes from `region_start` to its end.
    let mut region_start = len;
    let mut region: Vec<u8> = Vec::new();
    while region_start > 0 && window < len / 2 {
        let start = region_start.saturating_sub(window);
        let mut earlier = vec![0; usize::try_from(region_start - start).unwrap_or(0)];
        file.read_exact_at(&mut earlier, start)
            .map_err(|source| StoreError::io("read", path, source))?;
        earlier.extend_from_slice(&region);
        region = earlier;
        region_start = start;
        window = window.saturating_mul(2);
        // The earliest magic from which the frames chain to the end of the file.
        let candidate = region
            .windows(4)
            .enumerate()
            .filter(|(_, bytes)| *bytes == MAGIC)
            .map(|(index, _)| index)
            .find(|&index| scan_frames(&region[index..]).is_ok_and(|scan| !scan.frames.is_empty()));
        let Some(candidate) = candidate else {
            continue;
        };
        let header_at_start = region_start == 0 && candidate == 0;
        if let Ok(Some(events)) = tail_of_frames(
            path,
            &region[candidate..],
            header_at_start,
            from_seq,
            max_record_len,
        ) {
            return Ok(events);
        }
    }
    let bytes = read_all(path, file)?;
    tail_of_frames(path, &bytes, true, from_seq, max_record_len)
        .map(|events| events.unwrap_or_default())
}

/// The events with seq `from_seq..` in the frames of `bytes` (a whole zstd log when
/// `header_at_start`, else a run of event frames ending at the end of the log): frames are
/// decompressed from the end until one starts at or before `from_seq`. `None` when the run does
/// not reach back that far (only possible without the header).
fn tail_of_frames(
    path: &Path,
    bytes: &[u8],
    header_at_start: bool,
    from_seq: u64,
    max_record_len: usize,
) -> Result<Option<Vec<RawEvent>>, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        location: path.display().to_string(),
        line: None,
        seq: Some(from_seq),
        detail,
    };
    let scan = scan_frames(bytes).map_err(|error| corrupt(error.to_string()))?;
    let mut decoder = zstd::stream::raw::Decoder::new()
        .map_err(|source| StoreError::io("decode", path, source))?;
    // Plaintexts of the frames needed, newest first.
    let mut plaintexts: Vec<Vec<u8>> = Vec::new();
    if let Some(start) = scan.torn_start {
        let mut plain = Vec::new();
        if crate::zstd::decompress(&mut decoder, &bytes[start..], &mut plain, false).is_err() {
            plain.clear();
        }
        let keep = recoverable_prefix(&plain).len();
        plain.truncate(keep);
        if !plain.is_empty() {
            plaintexts.push(plain);
        }
    }
    // Frame 0 of a whole log is the header; event frames follow.
    let reaches = |plaintexts: &[Vec<u8>]| {
        plaintexts
            .last()
            .and_then(|plain| plain.split(|&byte| byte == b'\n').next())
            .and_then(line_seq)
            .is_some_and(|first| first <= from_seq)
    };
    for frame in scan.frames.iter().skip(usize::from(header_at_start)).rev() {
        if reaches(&plaintexts) {
            break;
        }
        let mut plain = Vec::new();
        crate::zstd::decompress(
            &mut decoder,
            &bytes[frame.start..frame.end],
            &mut plain,
            true,
        )
        .map_err(|error| {
            corrupt(format!(
                "zstd frame at offset {} does not decompress: {error}",
                frame.start
            ))
        })?;
        if plain.last().is_some_and(|&byte| byte != b'\n') {
            return Err(corrupt(format!(
                "complete zstd frame at offset {} contains a torn JSONL record",
                frame.start
            )));
        }
        plaintexts.push(plain);
    }
    if !header_at_start && !reaches(&plaintexts) {
        return Ok(None);
    }
    let mut events = Vec::new();
    let mut expected: Option<u64> = None;
    for plain in plaintexts.iter().rev() {
        // Records in a frame have consecutive seqs: skip the ones before `from_seq` unparsed.
        let first_seq = plain.split(|&byte| byte == b'\n').next().and_then(line_seq);
        let n_skip = first_seq.map_or(0, |first| from_seq.saturating_sub(first));
        for (line_idx, line) in plain.split(|&byte| byte == b'\n').enumerate() {
            if line.is_empty() || (line_idx as u64) < n_skip {
                continue;
            }
            if line.len() > max_record_len {
                return Err(corrupt(format!(
                    "a record is longer than the {max_record_len}-byte limit"
                )));
            }
            let location = crate::codec::Location {
                file: Some(path.to_path_buf()),
                line: 0,
                seq: expected,
            };
            let event = crate::codec::decode_event_line(line, &location)?;
            let Some(seq) = event.seq_number() else {
                return Err(corrupt("record without a seq in the log tail".into()));
            };
            if expected.is_some_and(|want| want != seq) {
                return Err(corrupt(format!(
                    "seq out of order in the log tail: expected {}, found {seq}",
                    expected.unwrap_or_default()
                )));
            }
            expected = Some(seq + 1);
            if seq >= from_seq {
                events.push(event);
            }
        }
    }
    if let Some(first) = events.first().and_then(|event| event.seq_value()) {
        if non_negative_safe_integer(&first) != Some(from_seq) {
            return Err(corrupt(format!(
                "log tail starts at seq {first}, after the requested {from_seq}"
            )));
        }
    }
    Ok(Some(events))
}

/// Creates a directory (mode 0700) if missing and makes its name durable in its parent.
fn create_dir_durable(dir: &Path) -> Result<(), StoreError> {
    let parent = dir.parent().filter(|parent| !parent.as_os_str().is_empty());
    if !dir.is_dir() {
        if let Some(parent) = parent.filter(|parent| !parent.is_dir()) {
            create_dir_durable(parent)?;
        }
        match DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {
                note!(Mkdir(dir.to_path_buf()));
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(StoreError::io("create directory", dir, source)),
        }
    }
    // Synced into its parent even when it was there already: a create killed between making
    // it and this sync left a name a power cut may still take away, with the log published
    // under it (found by the power-loss model, issue 26).
    match parent {
        Some(parent) => fsync_dir(parent),
        None => Ok(()),
    }
}

/// Makes what an open for writing read durable before it reports it: the log's bytes (a
/// writer killed between its write and its fsync left complete records only in the page
/// cache) and the names on the way to it, the log's directory up to the root's parent (a
/// create killed before its directory syncs left names a power cut may still take away).
/// Without this, the events the open reports durable could vanish in a power cut, and a
/// later write could reach the disk before an earlier unsynced one, leaving a hole of zeros
/// inside the log (both found by the power-loss model, issue 26).
fn sync_what_was_read(file: &File, path: &Path, session_dir: &Path) -> Result<(), StoreError> {
    file.sync_all()
        .map_err(|source| StoreError::io("fsync", path, source))?;
    note!(Sync(path.to_path_buf()));
    // The session's directory, its project directory, the root and the root's parent (`.`
    // for a bare relative root). A directory this process may not open for reading (a parent
    // with mode 0711) was there before any of this store's writers, and is skipped.
    for dir in session_dir.ancestors().take(4) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        match File::open(dir).and_then(|handle| handle.sync_all()) {
            Ok(()) => {
                note!(SyncDir(dir.to_path_buf()));
            }
            Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {}
            Err(source) => return Err(StoreError::io("fsync directory", dir, source)),
        }
    }
    Ok(())
}

fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source| StoreError::io("fsync directory", dir, source))?;
    note!(SyncDir(dir.to_path_buf()));
    Ok(())
}

fn open_rw(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| StoreError::io("open", path, source))
}

enum PublishError {
    Exists,
    Io(StoreError),
}

/// Publishes what `write` writes at `path` durably and without ever replacing an existing
/// file: exclusive, locked temp file (after sweeping the ones killed writers left beside
/// `path`, see `temp`), write, fsync, `link` (EEXIST if taken), directory fsync, unlink the
/// temp name. Returns the number of bytes published.
fn publish_new(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<&mut File>) -> io::Result<u64>,
) -> Result<u64, PublishError> {
    let dir = crate::temp::dir_of(path);
    crate::temp::sweep(path);
    if path.exists() {
        return Err(PublishError::Exists);
    }
    let mut temp = crate::temp::TempFile::create(path).map_err(|source| {
        PublishError::Io(StoreError::io(
            "create a temporary file beside",
            path,
            source,
        ))
    })?;
    let written = (|| {
        let file = temp.file();
        let mut out = io::BufWriter::with_capacity(256 * 1024, &mut *file);
        let len = write(&mut out)?;
        out.flush()?;
        drop(out);
        file.sync_all()?;
        Ok(len)
    })();
    note!(Write {
        path: temp.path().to_path_buf(),
        offset: 0,
        bytes: fs::read(temp.path()).unwrap_or_default()
    });
    note!(Sync(temp.path().to_path_buf()));
    // On a failure, dropping `temp` removes its name.
    let len =
        written.map_err(|source| PublishError::Io(StoreError::io("write", temp.path(), source)))?;
    let linked = fs::hard_link(temp.path(), path);
    // (The model ignores a link that failed: its name was taken.)
    note!(Link {
        from: temp.path().to_path_buf(),
        to: path.to_path_buf()
    });
    drop(temp);
    match linked {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(PublishError::Exists)
        }
        Err(source) => return Err(PublishError::Io(StoreError::io("publish", path, source))),
    }
    fsync_dir(dir).map_err(PublishError::Io)?;
    Ok(len)
}

/// Plaintext bytes per zstd frame when many events are written at once (create with events,
/// [`write_log`]): ~1 MiB slices, as a migration writes them (persistence §2.10), so a reader's
/// torn-frame recovery and memory stay bounded.
const BULK_FRAME_LEN: usize = 1 << 20;

/// Writes a whole log: the header line (its own frame in zstd), then the events, in frames of
/// about [`BULK_FRAME_LEN`] plaintext bytes. Returns the bytes written.
fn write_whole_log(
    out: &mut impl Write,
    header_line: &[u8],
    events: &[Arc<Event>],
    mut compressor: Option<&mut FrameCompressor>,
) -> io::Result<u64> {
    let mut written = 0_u64;
    let mut emit = |out: &mut dyn Write, plain: &[u8]| -> io::Result<()> {
        match compressor.as_deref_mut() {
            Some(compressor) => {
                let frame = compressor.frame(plain)?;
                out.write_all(&frame)?;
                written += frame.len() as u64;
            }
            None => {
                out.write_all(plain)?;
                written += plain.len() as u64;
            }
        }
        Ok(())
    };
    emit(out, header_line)?;
    let mut batch = Vec::with_capacity(BULK_FRAME_LEN + 64 * 1024);
    for event in events {
        encode_event_line(event, &mut batch);
        if batch.len() >= BULK_FRAME_LEN {
            emit(out, &batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        emit(out, &batch)?;
    }
    Ok(written)
}

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
