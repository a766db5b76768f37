//! Publishing a new log durably: the directory created and synced, the file written whole
//! beside its final name and renamed into place, never over an existing log.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::Arc;

use strata_core::Event;

use crate::error::StoreError;
use crate::powerloss::note;
use strata_format::codec::encode_event_line;
use strata_format::zstd_frame::FrameCompressor;

/// Creates a directory (mode 0700) if missing and makes its name durable in its parent.
pub(super) fn create_dir_durable(dir: &Path) -> Result<(), StoreError> {
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
pub(super) fn sync_what_was_read(
    file: &File,
    path: &Path,
    session_dir: &Path,
) -> Result<(), StoreError> {
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

pub(super) fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source| StoreError::io("fsync directory", dir, source))?;
    note!(SyncDir(dir.to_path_buf()));
    Ok(())
}

pub(super) fn open_rw(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| StoreError::io("open", path, source))
}

pub(super) enum PublishError {
    Exists,
    Io(StoreError),
}

/// Publishes what `write` writes at `path` durably and without ever replacing an existing
/// file: exclusive, locked temp file (after sweeping the ones killed writers left beside
/// `path`, see `temp`), write, fsync, `link` (EEXIST if taken), directory fsync, unlink the
/// temp name. Returns the number of bytes published.
pub(super) fn publish_new(
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
pub(super) fn write_whole_log(
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
