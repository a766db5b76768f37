//! strata-store: the durable side of a session log — where a log's bytes live and how they
//! get there safely.
//!
//! This layer sits directly above `strata-format` (cli → agent → compact → store → format →
//! core), which owns the dsh bytes (line codec, naming, zstd frames, checkpoint record). The
//! store owns files, databases and their guarantees: a [`Backend`] seam with a written
//! contract, implemented by [`MemoryBackend`], [`JsonlBackend`] (raw or zstd, dsh's layout),
//! [`SqliteBackend`] (the embedded default) and `PostgresBackend` (sessions shared by many
//! hosts; the default-on cargo feature `postgres`), and [`Store`] / [`SessionWriter`] on top. It never decides whether an event is
//! acceptable: every event passes through strata-core before a byte is written, and every
//! stored log is judged by the core when it is loaded.
//!
//! ```
//! use strata_core::{payload, Candidate, SessionHeader, SurfaceIntent};
//! use strata_store::{Compression, Store};
//!
//! let root = tempfile::tempdir().unwrap();
//! let store = Store::jsonl(root.path(), Compression::Zstd);
//! let writer = store.create(SessionHeader::fresh("demo", 1).unwrap()).unwrap();
//! let hello = payload::UserMessage { message: payload::user_text_message("m1", "hello") };
//! // Returns once the batch is durable.
//! writer.append(vec![Candidate::surface(hello, SurfaceIntent::append())], 2).unwrap();
//! writer.close().unwrap();
//!
//! let session = store.load("demo").unwrap();
//! assert_eq!(session.derive_messages().len(), 1);
//! ```
//!
//! See ARCHITECTURE.md at the repository root for how the crates fit together.
#![deny(missing_docs)]
// No unsafe code today; a future site must be allowed where it stands, with its reason.
#![deny(unsafe_code)]

pub use backend::{Backend, FollowFrom, Listing, LogStream, ReadFrom, StoredLog, TornInfo};
pub use error::{AppendError, ForkError, LockHolder, StoreError};
pub use jsonl::{
    is_zstd_file, read_log, scan_log, write_log, Compression, JsonlBackend, JsonlConfig,
};
pub use lock::SessionLock;
pub use loose::LooseFile;
pub use memory::MemoryBackend;
#[cfg(feature = "postgres")]
pub use postgres::{Follower, PostgresBackend, PostgresConfig};
pub use sqlite::{default_sqlite_path, GroupCommitStats, SqliteBackend};
pub use store::{restore_stream, Store};
pub use writer::{SessionWriter, CHECKPOINT_EVERY};

/// The files a store keeps beside a session's log (JSONL stores and loose files): its writer
/// lock and the lazy-resume sidecars, for tools that copy, move or clean up a session folder.
pub mod sidecars {
    pub use crate::index::INDEX_FILE_NAME;
    pub use crate::lock::LOCK_FILE_NAME;
    pub use crate::loose::lock_path_for;
    pub use crate::resume::{remove_sidecars, CHECKPOINT_FILE_NAME};
}

pub mod synth;

pub mod file_io;

/// What the fuzz harnesses of `crates/strata-fuzz` reach past the public store path: the
/// offset index (an index entry's check would stop almost every mutated input before its
/// decoder) and the switches that keep one input's decoding on the harness's own thread.
/// Not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::decode_pool::decode_inline;
    pub use crate::index::{IndexIdentity, OffsetIndex, RecordPos};
    pub use crate::zstd::reuse_decoders;

    /// Reads a V3 log file as a store reads it, in dsh's zstd framing (the header line alone
    /// in the first frame, every frame ending on a line boundary), where
    /// [`read_log`](crate::read_log) takes any framing.
    pub fn read_log_in_dsh_framing(
        path: &std::path::Path,
    ) -> Result<crate::StoredLog, crate::StoreError> {
        crate::jsonl::scan_log_for_writing(path)?.collect_log()
    }
}

/// The README's Rust examples (the core's and the store's), compiled and run as doctests here:
/// this is the lowest crate that can compile both.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

pub mod backend;
mod decode_pool;
mod error;
mod index;
mod jsonl;
mod keyed;
mod lock;
mod loose;
mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
mod powerloss;
mod resume;
mod sql_row;
pub mod sqlite;
mod store;
mod temp;
mod writer;
mod zstd;
