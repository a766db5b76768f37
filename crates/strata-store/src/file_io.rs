//! The file primitives the JSONL store is built from, for crates that read or publish dsh
//! files outside a store (strata-migrate's readers of older generations and its migration
//! publisher): the shrink check a streaming read ends with, and the locked temporary files a
//! publish writes first (docs/format.md §5b).

use std::fs::File;
use std::io;

pub use crate::temp::{dir_of, sweep, TempFile};

/// Fails when `file` (`len_at_open` bytes long when its read began) is shorter now: the read
/// ended early because the file was cut under it, and the end it saw is not the log's.
pub fn ensure_not_shrunk(file: &File, len_at_open: u64) -> io::Result<()> {
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
