//! The directory tools are confined to.
//!
//! Every path a tool touches goes through [`Workspace::resolve`]: relative paths are taken from
//! the root, `..` is applied lexically, and the longest existing prefix is canonicalized, so
//! neither `..` nor a symlink inside the workspace can reach outside it. Components that do not
//! exist yet (a file `write_file` is about to create) cannot be symlinks, so checking the
//! canonical existing prefix is enough.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// A confined working directory.
///
/// Invariant: `root` is absolute and canonical (no symlinks, no `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Confines tools to `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Workspace> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("workspace {} is not a directory", root.display()),
            ));
        }
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path `path` names inside the workspace (it need not exist), or
    /// [`ToolError::OutsideWorkspace`]. An empty path is the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let outside = || ToolError::OutsideWorkspace {
            path: path.to_owned(),
            root: self.root.display().to_string(),
        };
        let joined = self.root.join(path);
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(outside());
                    }
                }
                Component::CurDir => {}
                other => normal.push(other.as_os_str()),
            }
        }
        // Canonicalize the longest existing prefix, then re-append the rest.
        let mut existing = normal.clone();
        let mut rest = Vec::new();
        let canonical = loop {
            match std::fs::canonicalize(&existing) {
                Ok(canonical) => break canonical,
                Err(_) => {
                    let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                        return Err(outside());
                    };
                    rest.push(name);
                    if !existing.pop() {
                        return Err(outside());
                    }
                }
            }
        };
        let mut resolved = canonical;
        for name in rest.into_iter().rev() {
            resolved.push(name);
        }
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(outside())
        }
    }

    /// `path` relative to the root, for output the model reads (`.` for the root itself).
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}
