//! The directory beside a file, where strata stages the temporary file it publishes from and
//! which it fsyncs to make the published name durable (docs/format.md §6 item 1).
//!
//! A path's parent is the empty path when the path is a bare file name (`session.jsonl` run
//! in its own directory), and the empty path cannot be opened: every directory fsync and every
//! temporary file beside a target goes through [`dir_of`], so a bare name means `.`.

use std::path::Path;

/// The directory holding `path`: its parent, or `.` for a bare file name (and for `/`, which
/// has no parent and is never a file strata publishes).
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}

#[cfg(test)]
mod tests;
