//! Appending to a JSONL log: the appender a write-open leaves after reading the log (its torn
//! tail cut first), one `pwrite` and one `fdatasync` per batch, rolled back on failure.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use super::{open_rw, sync_what_was_read, torn_frame_records};
use crate::backend::{Batch, LogAppender, TornInfo};
use crate::error::StoreError;
use crate::lock::SessionLock;
use crate::powerloss::note;
use strata_format::zstd_frame::FrameCompressor;

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
    pub(super) id: String,
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// Invariant: the file's length; every byte before it is durable.
    pub(super) size: u64,
    pub(super) next_seq: u64,
    pub(super) compressor: Option<FrameCompressor>,
    pub(super) _lock: SessionLock,
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
