//! File faults the store's and the migration's tests stage alike: a log cut under its reader
//! (`truncate(1)` from another program) and the temporary files a killed or a live writer
//! leaves beside a target (docs/format.md §5b). Test support only: every failure panics.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt as _;

/// Cuts `path` to `len` bytes, as `truncate(1)` would.
pub fn cut(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(len))
        .expect("truncate the log");
}

/// Asserts that `error` is the shrink error a read of a file cut under it ends with, naming
/// `path`.
pub fn assert_shrank(error: &dyn std::fmt::Display, path: &Path) {
    let text = error.to_string();
    assert!(
        text.contains("shrank") && text.contains(&path.display().to_string()),
        "expected a shrink error naming {}, got: {text}",
        path.display()
    );
}

/// Pulls one row, cuts the file to an eighth of its length and drains `rows`: the last item
/// must be the shrink error.
pub fn drain_after_cut<T, E: std::fmt::Display>(
    mut rows: impl Iterator<Item = Result<T, E>>,
    path: &Path,
) {
    rows.next()
        .expect("a first row")
        .unwrap_or_else(|error| panic!("first row: {error}"));
    let file_len = fs::metadata(path).expect("stat").len();
    cut(path, file_len / 8);
    let last = rows.last().expect("rows after the cut");
    match last {
        Ok(_) => panic!("the read of {} ended without an error", path.display()),
        Err(error) => assert_shrank(&error, path),
    }
}

/// A temporary file of `target` as a killed writer leaves it (`<target>.<nonce>.tmp`, partly
/// written, unlocked).
pub fn plant_stale_temp(target: &Path, nonce: &str) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{nonce}.tmp"));
    let path = PathBuf::from(name);
    fs::write(
        &path,
        b"{\"type\":\"session\",\"version\":3,\"id\":\"cut off her",
    )
    .expect("plant a temporary file");
    path
}

/// A temporary file of `target` a live writer holds: planted, and locked (a lock of another
/// open file description, as another process's would be) until the returned file is dropped.
pub fn plant_live_temp(target: &Path, nonce: &str) -> (PathBuf, File) {
    let path = plant_stale_temp(target, nonce);
    let holder = File::open(&path).expect("open the planted file");
    assert!(holder.try_lock_exclusive().expect("lock the planted file"));
    (path, holder)
}
