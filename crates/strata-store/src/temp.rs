//! Temporary files staged beside a file being published, and the sweep that removes the ones
//! killed writers left behind (docs/format.md §5b).
//!
//! A writer that publishes a file (a JSONL store's new log, `write_log`, a migration) writes it
//! under a temporary name beside its target first, then links it into place. A writer killed
//! before it removes that name leaves the file behind, as large as what it had written. The
//! rule that lets a later writer remove it safely:
//!
//! - A temporary file is named `<target>.<12 hex digits>.tmp` and created exclusively
//!   (`O_EXCL`, mode 0600). Its writer holds an exclusive `flock(2)` on it from the moment it
//!   owns the name until it has removed the name; the kernel drops that lock when the writer's
//!   process dies, however it dies.
//! - [`sweep`] removes a temporary file of a target only while holding that lock itself, and
//!   only if the name still refers to the file it locked. A file whose lock is held belongs to
//!   a live writer and is left alone.
//! - A writer owns its name only once it holds the lock and the name still refers to the file
//!   it created: a sweep may lock a file between its creation and the writer's `flock` (and
//!   remove it), in which case the writer starts over under a new name.
//!
//! The same holds across hosts only where `flock` does (docs/format.md §6 item 4). Files left
//! by builds that did not lock their temporary files (`<target>.<hex>.migrating.tmp` too) are
//! swept by the same rule: such a build's live writer holds no lock, so a concurrent sweep can
//! remove its temporary file, and that writer then fails to publish (the name is gone) without
//! losing anything, since its source was never modified.
//!
//! The directory beside a file is [`dir_of`]: a bare file name's parent is the empty path,
//! which cannot be opened, so every directory fsync and every temporary file beside a target
//! goes through it and a bare name means `.`.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use fs4::fs_std::FileExt as _;

/// The directory holding `path`: its parent, or `.` for a bare file name (and for `/`, which
/// has no parent and is never a file strata publishes).
pub fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}

/// A temporary file beside a target, owned by this writer: created exclusively and held under
/// an exclusive `flock` for as long as the value lives. Dropping it removes the name, then
/// releases the lock (in that order, so a sweep never finds a live writer's file unlocked).
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    file: File,
}

impl TempFile {
    /// Stages a new temporary file for `target` (see the module documentation).
    pub fn create(target: &Path) -> io::Result<TempFile> {
        // Each failed attempt lost a race with a sweep or met a name in use; either is rare,
        // so a few attempts under fresh names settle it.
        const ATTEMPTS: usize = 8;
        for _ in 0..ATTEMPTS {
            let path = temp_path(target);
            let file = match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => file,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            };
            crate::powerloss::note!(Create(path.clone()));
            if let Some(temp) = TempFile::claim(path, file)? {
                return Ok(temp);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "no temporary name beside {} could be claimed in {ATTEMPTS} attempts",
                target.display()
            ),
        ))
    }

    /// Takes ownership of the file just created at `path`: its lock, then proof that the name
    /// still refers to it. `None` when a sweep got there first (it holds the lock, or it already
    /// removed the name), so the file is not ours to publish.
    fn claim(path: PathBuf, file: File) -> io::Result<Option<TempFile>> {
        if !try_lock(&file)? || !names_file(&path, &file) {
            return Ok(None);
        }
        Ok(Some(TempFile { path, file }))
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, for writing and syncing.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // After a publish the name is a second link to the published file: removing it leaves
        // the published name alone. The lock goes when the descriptor closes, after this.
        let _ = fs::remove_file(&self.path);
        // (The model ignores the unlink of a name a sweep already removed.)
        crate::powerloss::note!(Unlink(self.path.clone()));
    }
}

/// Removes the temporary files of `target` whose writers are gone (their lock is free), and
/// returns how many it removed. Best effort: an entry that cannot be examined is left as it is,
/// since sweeping is housekeeping and never a reason to fail the write that runs it.
pub fn sweep(target: &Path) -> usize {
    let Some(target_name) = target.file_name() else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(dir_of(target)) else {
        return 0;
    };
    let mut n_removed = 0;
    for entry in entries.flatten() {
        if !is_temp_name_of(target_name, &entry.file_name()) {
            continue;
        }
        let path = entry.path();
        // No following a planted symlink, and no blocking on a planted FIFO.
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        if !file.metadata().is_ok_and(|metadata| metadata.is_file()) {
            continue;
        }
        if !matches!(try_lock(&file), Ok(true)) {
            // A live writer's (or unlockable): left alone.
            continue;
        }
        if names_file(&path, &file) && fs::remove_file(&path).is_ok() {
            crate::powerloss::note!(Unlink(path.clone()));
            n_removed += 1;
        }
        // Dropping `file` releases the lock, after the name is gone.
    }
    n_removed
}

/// Whether `name` is a temporary file name of the target named `target_name`:
/// `<target>.<12 to 16 lowercase hex digits>.tmp`, or `….migrating.tmp` as migrations of
/// earlier builds named theirs.
fn is_temp_name_of(target_name: &OsStr, name: &OsStr) -> bool {
    let (Some(target_name), Some(name)) = (target_name.to_str(), name.to_str()) else {
        return false;
    };
    let Some(rest) = name
        .strip_prefix(target_name)
        .and_then(|rest| rest.strip_prefix('.'))
    else {
        return false;
    };
    let Some(nonce) = rest
        .strip_suffix(".migrating.tmp")
        .or_else(|| rest.strip_suffix(".tmp"))
    else {
        return false;
    };
    (12..=16).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// `<target>.<nonce>.tmp` with a nonce unlikely to be in use: the clock, the pid and a counter.
fn temp_path(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nonce =
        (nanos ^ (u64::from(std::process::id()) << 32) ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            & 0xFFFF_FFFF_FFFF;
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{nonce:012x}.tmp"));
    PathBuf::from(name)
}

/// Takes an exclusive `flock` without waiting: `Ok(false)` when another open file holds one.
fn try_lock(file: &File) -> io::Result<bool> {
    match file.try_lock_exclusive() {
        Ok(locked) => Ok(locked),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(error) => Err(error),
    }
}

/// Whether `path` still names the file `file` has open (same device and inode).
fn names_file(path: &Path, file: &File) -> bool {
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
