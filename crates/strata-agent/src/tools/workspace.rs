//! The directory tools are confined to.
//!
//! A [`Workspace`] holds an open handle on its root directory, and every file-system step a tool
//! takes is resolved beneath that handle by `cap_std::fs::Dir` (one `openat2` call with
//! `RESOLVE_BENEATH` on Linux 5.6 and later, a component-by-component walk that checks every
//! symlink elsewhere). Nothing checks a path and then opens it again, so no path — `..`, an
//! absolute path, a symlink at any component, dangling or live — and no rename racing a tool
//! call can make a tool open, create, list or stat anything outside the root: the kernel
//! resolves the path and confines it in the same step that opens it.
//!
//! Paths are first made relative to the root lexically ([`Workspace::confine`]): an absolute
//! path must lie under the root and a `..` may not climb above it, so the common cases get a
//! clear `OUTSIDE_WORKSPACE` before any I/O. The handle-relative open is what enforces the
//! confinement; the lexical step only explains it early.
//!
//! **Symlinks** with a relative target that stays inside the workspace are followed, wherever
//! they appear in a path (a repository's `docs -> book/src` keeps working). A symlink whose
//! target climbs out by `..`, and every symlink with an absolute target (even one that names a
//! place inside: resolved beneath the root's handle, `/` is outside it), is refused as outside
//! the workspace, whether or not its target exists, so `write_file` never creates a file
//! through a dangling link. `grep`'s walk follows no symlinks at all, as ripgrep's default walk
//! does.
//!
//! **Special files.** Files are opened with `O_NONBLOCK | O_NOCTTY` and their type is checked on
//! the open handle (`fstat`): a FIFO's open returns at once instead of waiting for a writer (or
//! fails with `ENXIO` when opened for writing with no reader), a socket's open fails, and
//! anything but a regular file or a directory is refused before a byte is read or written. So
//! no tool blocks on a pipe, a socket or a device. (`O_NONBLOCK` changes nothing for a regular
//! file or a directory.)

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

use super::ToolError;

/// A confined working directory.
///
/// Invariant: `root` is absolute and canonical (no symlinks, no `.` or `..`) and was the path of
/// `dir` when the workspace was opened. Tools reach files only through `dir`, so a workspace
/// keeps confining them to the directory it opened even if that directory is later renamed.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
}

/// What a tool means to do with a file it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read it (a regular file or a directory).
    Read,
    /// Write it, creating it when it does not exist; an existing file is not truncated by the
    /// open (the caller truncates once it knows the file is regular).
    Write,
}

/// An open file beneath the root and what `fstat` on its handle said it is.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file.
    File(std::fs::File),
    /// A directory, open for listing its entries.
    Dir(Dir),
}

impl Workspace {
    /// Confines tools to `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = std::fs::canonicalize(root.as_ref())?;
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority()).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("cannot open workspace {}: {error}", root.display()),
            )
        })?;
        Ok(Workspace {
            root,
            dir: Arc::new(dir),
        })
    }

    /// The canonical root, as it was when the workspace was opened.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` relative to the root, with `.` and `..` applied lexically: `.` for the root itself
    /// (and for an empty path), or [`ToolError::OutsideWorkspace`] for an absolute path not under
    /// the root and for a `..` that climbs above it. The result need not exist, and it may still
    /// name a symlink that leads outside: only opening it beneath the root decides that.
    pub fn confine(&self, path: &str) -> Result<PathBuf, ToolError> {
        let outside = || self.outside(path);
        let given = Path::new(path);
        let relative = if given.has_root() {
            let absolute = normalize(given, true).ok_or_else(outside)?;
            absolute
                .strip_prefix(&self.root)
                .map_err(|_| outside())?
                .to_path_buf()
        } else {
            normalize(given, false).ok_or_else(outside)?
        };
        if relative.as_os_str().is_empty() {
            Ok(PathBuf::from("."))
        } else {
            Ok(relative)
        }
    }

    /// Opens `relative` (a [`confine`](Workspace::confine)d path) beneath the root without
    /// blocking, and checks what it is on the open handle. A path that leads outside the root is
    /// [`ToolError::OutsideWorkspace`]; a FIFO, socket or device is refused as an I/O error that
    /// names its type. `op` and `given` (the path as the model gave it) word the errors.
    pub(crate) fn open(
        &self,
        relative: &Path,
        access: Access,
        op: &str,
        given: &str,
    ) -> Result<Opened, ToolError> {
        let mut options = OpenOptions::new();
        match access {
            Access::Read => options.read(true),
            Access::Write => options.write(true).create(true),
        };
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        // The flag bits are small positive values, so the cast to `c_int` is exact.
        options.custom_flags(flags.bits() as i32);
        let file = match self.dir.open_with(relative, &options) {
            Ok(file) => file.into_std(),
            // `ENXIO`: a socket, a device with no driver behind it, or a FIFO opened for
            // writing with no reader. Say which from a stat beneath the root; it opens nothing.
            Err(error) if error.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => {
                return Err(match self.dir.metadata(relative) {
                    Ok(metadata) if !metadata.is_file() && !metadata.is_dir() => ToolError::Io {
                        op: op.to_owned(),
                        path: given.to_owned(),
                        detail: format!(
                            "not a regular file: {}",
                            describe_cap(&metadata.file_type())
                        ),
                    },
                    _ => self.error(op, given, &error),
                });
            }
            Err(error) => return Err(self.error(op, given, &error)),
        };
        let kind = file
            .metadata()
            .map_err(|error| self.error(op, given, &error))?
            .file_type();
        if kind.is_file() {
            Ok(Opened::File(file))
        } else if kind.is_dir() && access == Access::Read {
            Ok(Opened::Dir(Dir::from_std_file(file)))
        } else {
            Err(ToolError::Io {
                op: op.to_owned(),
                path: given.to_owned(),
                detail: format!("not a regular file: {}", describe(&kind)),
            })
        }
    }

    /// Opens `relative` beneath the root as a regular file to read; anything else (a directory
    /// included) is refused as [`open`](Workspace::open) words it.
    pub(crate) fn open_file(
        &self,
        relative: &Path,
        op: &str,
        given: &str,
    ) -> Result<std::fs::File, ToolError> {
        match self.open(relative, Access::Read, op, given)? {
            Opened::File(file) => Ok(file),
            Opened::Dir(_) => Err(ToolError::Io {
                op: op.to_owned(),
                path: given.to_owned(),
                detail: "is a directory".to_owned(),
            }),
        }
    }

    /// Creates `relative` and its missing parents as directories beneath the root.
    pub(crate) fn create_dir_all(
        &self,
        relative: &Path,
        op: &str,
        given: &str,
    ) -> Result<(), ToolError> {
        self.dir.create_dir_all(relative).map_err(|error| {
            // Through a symlink that leads outside, cap-std's `mkdir` meets the link and fails
            // with `EEXIST`; a stat beneath the root says why.
            match self.dir.metadata(relative) {
                Err(stat_error) if self.is_escape(&stat_error) => self.outside(given),
                _ => self.error(op, given, &error),
            }
        })
    }

    /// `error` from a step on `given` as a tool error: [`ToolError::OutsideWorkspace`] when the
    /// path led outside the root, [`ToolError::Io`] otherwise.
    pub(crate) fn error(&self, op: &str, given: &str, error: &io::Error) -> ToolError {
        if self.is_escape(error) {
            self.outside(given)
        } else {
            ToolError::io(op, given, error)
        }
    }

    /// Whether cap-std refused `error`'s step because the path led outside the root. It reports
    /// an escape as `PermissionDenied` with no OS error code (it turns `openat2`'s `EXDEV` and
    /// its own walk's refusals into one error of its own); a real `EACCES` carries its errno.
    fn is_escape(&self, error: &io::Error) -> bool {
        error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none()
    }

    fn outside(&self, given: &str) -> ToolError {
        ToolError::OutsideWorkspace {
            path: given.to_owned(),
            root: self.root.display().to_string(),
        }
    }
}

/// Two workspaces are equal when they were opened at the same canonical root.
impl PartialEq for Workspace {
    fn eq(&self, other: &Workspace) -> bool {
        self.root == other.root
    }
}

impl Eq for Workspace {}

/// `path` with `.` dropped and `..` applied lexically, or `None` when a `..` climbs above the
/// start of a relative path. An absolute path keeps its root, where `..` stays (as POSIX has it).
fn normalize(path: &Path, absolute: bool) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if depth == 0 {
                    if !absolute {
                        return None;
                    }
                } else {
                    normal.pop();
                    depth -= 1;
                }
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => normal.push(component.as_os_str()),
            Component::Normal(name) => {
                normal.push(name);
                depth += 1;
            }
        }
    }
    Some(normal)
}

/// What a file that is neither regular nor a directory is, for the model.
fn describe(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    special(
        kind.is_fifo(),
        kind.is_socket(),
        kind.is_char_device() || kind.is_block_device(),
    )
}

/// [`describe`] for the file type cap-std's stat returns.
fn describe_cap(kind: &cap_std::fs::FileType) -> &'static str {
    use cap_std::fs::FileTypeExt;
    special(
        kind.is_fifo(),
        kind.is_socket(),
        kind.is_char_device() || kind.is_block_device(),
    )
}

fn special(fifo: bool, socket: bool, device: bool) -> &'static str {
    if fifo {
        "a named pipe (FIFO)"
    } else if socket {
        "a socket"
    } else if device {
        "a device"
    } else {
        "a special file"
    }
}
