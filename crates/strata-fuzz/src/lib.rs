//! strata-fuzz: one harness per decoder or validator that a file or a network peer reaches.
//!
//! Each target is a `fn(&[u8])` that feeds the bytes to the real entry point and ignores every
//! `Err`: only a panic, a hang or unbounded memory is a bug. The crate has no fuzz-engine
//! dependency, so the same functions serve the libFuzzer project in `fuzz/` (one
//! `fuzz_target!` per harness, see `scripts/fuzz`) and the plain regression test that replays
//! every crash ever found and the seed corpus under `cargo test --workspace`
//! (`tests/regressions.rs`). See docs/testing.md, "Fuzzing".
//!
//! Where a harness needs a file (the zstd reader, SQLite), it writes it in a per-process
//! temporary directory, under `/dev/shm` when that exists.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod checkpoint;
mod codec;
mod legacy;
mod script;
pub mod seeds;
mod sqlite;
mod sse;
mod zstd_log;

pub use checkpoint::{checkpoint, offset_index};
pub use codec::{accept, line_codec};
pub use legacy::legacy;
pub use script::model_script;
pub use sqlite::sqlite_rows;
pub use sse::sse;
pub use zstd_log::zstd_log;

/// A harness: bytes in, `Err`s ignored.
pub type Target = fn(&[u8]);

/// Every target by name: the names of `fuzz/fuzz_targets/*.rs`, `fuzz/corpus/*` and
/// `fuzz/regressions/*`.
pub const TARGETS: &[(&str, Target)] = &[
    ("line_codec", line_codec),
    ("accept", accept),
    ("legacy", legacy),
    ("zstd_log", zstd_log),
    ("sqlite_rows", sqlite_rows),
    ("sse", sse),
    ("model_script", model_script),
    ("checkpoint", checkpoint),
    ("offset_index", offset_index),
];

/// Set once by a fuzz engine's entry point, on the thread that runs the inputs: the store's
/// decode pool then reads and decodes each log on that thread (`decode_inline`: the same
/// batches through the same decoder, as one decoder thread would), instead of starting a
/// reader and decoder threads per read, which was most of a `zstd_log` or `sqlite_rows`
/// execution. The regression test leaves the pool threaded, so the corpus still runs both.
///
/// It also keeps the allocator's freed memory for reuse (no `mmap` per large block, no
/// trimming): a reader's two 256 KiB buffers per open were otherwise fresh pages each time,
/// faulted in and zeroed by the kernel (docs/measurements.md §6). Memory stays
/// bounded by the largest working set, which `-rss_limit_mb` still watches.
pub fn init_fuzzing() {
    strata_store::fuzzing::decode_inline(true);
    // One zstd decoder per thread, handed from each stream to the next (reinitialised at
    // every frame), not one created per `read_log` (docs/measurements.md §6).
    strata_store::fuzzing::reuse_decoders(true);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)] // the one unsafe site of the harnesses: glibc's allocator tuning
    // SAFETY: `mallopt` only changes glibc's allocation thresholds; called before any input.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// The per-process scratch directory of the harnesses that need files (kept until exit).
pub(crate) fn scratch() -> &'static std::path::Path {
    use std::sync::OnceLock;
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let builder = tempfile::Builder::new()
            .prefix("strata-fuzz-")
            .tempdir_in(shm);
        builder.or_else(|_| tempfile::tempdir()).ok()
    });
    match dir {
        Some(dir) => dir.path(),
        // No temporary directory at all: the harnesses that need one then see I/O errors.
        None => std::path::Path::new("/nonexistent-strata-fuzz"),
    }
}

/// Splits `data` at its first `\n`-free control byte `sep`: a harness's input is sometimes a
/// few fields, and a byte the seeds never use in text keeps them apart.
pub(crate) fn fields(data: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    data.split(move |byte| *byte == sep)
}
