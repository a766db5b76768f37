//! Advisory per-session writer locks (persistence §1.6; peers (c) item 6).
//!
//! A writer takes a non-blocking exclusive `flock(2)` on a lock file (JSONL:
//! `<session dir>/session.lock`; SQLite: one file per session beside the database) and writes
//! its pid into it, so a second writer — in another process or in this one, since each open
//! is its own file description — fails at once with
//! `session "<id>" is open for writing by pid N`.
//!
//! Invariants:
//! - The lock lives exactly as long as the [`SessionLock`] value (or its process): dropping it
//!   unlocks explicitly (a forked child may share the descriptor) and closes it; a crashed
//!   holder never leaves a stale lock.
//! - The pid in the file is advisory evidence for the error message only; it is never used to
//!   decide who holds the lock.
//! - On NFSv3 and similar file systems `flock` may not exclude remote writers.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt};
use std::path::Path;

use fs4::fs_std::FileExt as _;

use crate::error::{LockHolder, StoreError};

/// The name of the lock file in a JSONL session directory.
pub const LOCK_FILE_NAME: &str = "session.lock";

/// A held exclusive writer lock.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
}

impl SessionLock {
    /// Takes the lock at `path` (creating the file) for session `id`, or reports who holds it.
    pub fn acquire(path: &Path, id: &str) -> Result<SessionLock, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|source| StoreError::io("open lock file", path, source))?;
        let locked = match file.try_lock_exclusive() {
            Ok(locked) => locked,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(source) => return Err(StoreError::io("lock", path, source)),
        };
        if !locked {
            return Err(StoreError::Locked {
                id: id.to_owned(),
                holder: LockHolder {
                    pid: read_pid(&file),
                },
            });
        }
        let pid = format!("{}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.write_all_at(pid.as_bytes(), 0))
            .map_err(|source| StoreError::io("record pid in lock file", path, source))?;
        Ok(SessionLock { file })
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Clear the pid so a stale number never names the next holder, then release the lock
        // explicitly: a child process forked by another thread between its fork and exec
        // shares this open file description, so merely closing our descriptor would leave
        // the lock held until that child execs or exits.
        let _ = self.file.set_len(0);
        let _ = fs4::fs_std::FileExt::unlock(&self.file);
    }
}

fn read_pid(mut file: &File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
