//! The power-loss model's seam (issue 26): the JSONL stores' file operations, noted for tests.
//!
//! Every operation that changes a JSONL store's files on the way to a durable log (a log or
//! temporary file created, written, truncated, synced, linked or unlinked; a directory made or
//! synced) is followed by a `note!` of it. Outside `cfg(test)` the macro expands to nothing,
//! so the library's normal path is unchanged: no call, no branch, no allocation. Under
//! `cfg(test)` the note goes to a journal of the directories a test registered, and the model in
//! `powerloss/tests.rs` replays that journal into every image a power cut may leave (unsynced
//! writes dropped, torn at any byte or reordered within a sync epoch; directory entries not yet
//! synced lost) and opens each one.
//!
//! The seam is a note beside the real call rather than a file-system trait the store would go
//! through, so the store keeps calling `std::fs` directly and the model can never change what
//! the store does. What it cannot see it cannot replay: the model checks that replaying the
//! whole journal rebuilds the store's files byte for byte, so a write left un-noted fails the
//! test. Sidecars (offset index, checkpoint) are noted too: they are caches written without a
//! sync, so the model leaves any subset of their writes in an image (docs/format.md §5a).

/// Notes a file operation (a `journal::Op` variant, without its path) for the power-loss
/// model; nothing outside `cfg(test)`.
macro_rules! note {
    ($($op:tt)*) => {
        #[cfg(test)]
        $crate::powerloss::journal::record($crate::powerloss::journal::Op::$($op)*);
    };
}
pub(crate) use note;

#[cfg(test)]
pub(crate) mod journal {
    //! The journal the model replays: operations in the order they ran, across threads.

    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, PoisonError};

    /// One file operation, with everything the model needs to replay it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Op {
        /// A new, empty file, unless one has the name (its name is a directory entry of its
        /// parent).
        Create(PathBuf),
        /// Bytes written at an offset.
        Write {
            path: PathBuf,
            offset: u64,
            bytes: Vec<u8>,
        },
        /// `set_len`.
        SetLen { path: PathBuf, len: u64 },
        /// `fsync` or `fdatasync` of a file: its data and length are durable.
        Sync(PathBuf),
        /// A second name for a file (`link(2)`).
        Link { from: PathBuf, to: PathBuf },
        /// A name removed.
        Unlink(PathBuf),
        /// A name moved over another in the same directory, atomically.
        Rename { from: PathBuf, to: PathBuf },
        /// A new directory (an entry of its parent).
        Mkdir(PathBuf),
        /// `fsync` of a directory: its entries are durable.
        SyncDir(PathBuf),
        /// A test's marker: these event lines are acknowledged from here on.
        Ack(Vec<Vec<u8>>),
    }

    impl Op {
        fn path(&self) -> Option<&Path> {
            match self {
                Op::Create(path)
                | Op::Write { path, .. }
                | Op::SetLen { path, .. }
                | Op::Sync(path)
                | Op::Unlink(path)
                | Op::Mkdir(path)
                | Op::SyncDir(path) => Some(path),
                Op::Link { to, .. } | Op::Rename { to, .. } => Some(to),
                Op::Ack(_) => None,
            }
        }
    }

    /// The directories being recorded, each with its operations.
    static RECORDINGS: Mutex<Vec<(PathBuf, Vec<Op>)>> = Mutex::new(Vec::new());

    /// Records `op` if it touches a registered directory (an `Ack` goes to `ack_root`'s).
    pub(crate) fn record(op: Op) {
        let Some(path) = op.path() else {
            return;
        };
        let mut recordings = RECORDINGS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, ops)) = recordings
            .iter_mut()
            .find(|(root, _)| path.starts_with(root))
        {
            ops.push(op);
        }
    }

    /// Marks `lines` acknowledged in `root`'s recording.
    pub(crate) fn ack(root: &Path, lines: Vec<Vec<u8>>) {
        let mut recordings = RECORDINGS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, ops)) = recordings.iter_mut().find(|(dir, _)| dir == root) {
            ops.push(Op::Ack(lines));
        }
    }

    /// Starts recording the operations under `root`.
    pub(crate) fn start(root: &Path) {
        let mut recordings = RECORDINGS.lock().unwrap_or_else(PoisonError::into_inner);
        recordings.push((root.to_path_buf(), Vec::new()));
    }

    /// Edits `root`'s recording so far (a test turning a finished append into a killed one).
    pub(crate) fn edit<R>(root: &Path, f: impl FnOnce(&mut Vec<Op>) -> R) -> R {
        let mut recordings = RECORDINGS.lock().unwrap_or_else(PoisonError::into_inner);
        let index = recordings
            .iter()
            .position(|(dir, _)| dir == root)
            .unwrap_or_else(|| panic!("{} is not being recorded", root.display()));
        f(&mut recordings[index].1)
    }

    /// Stops recording `root` and returns its operations.
    pub(crate) fn finish(root: &Path) -> Vec<Op> {
        let mut recordings = RECORDINGS.lock().unwrap_or_else(PoisonError::into_inner);
        match recordings.iter().position(|(dir, _)| dir == root) {
            Some(index) => recordings.remove(index).1,
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
