//! strata-store: the durable side of a session log — how events become bytes on disk and back.
//!
//! This layer sits directly above `strata-core` (cli → agent → compact → store → core). It owns
//! the dsh on-disk vocabulary (the V3 JSONL line codec, `sourceEventSeqs` range encoding, the
//! directory and file naming, zstd framing) and the stores built on it: a [`Backend`] seam with
//! a written contract, implemented by [`MemoryBackend`], [`JsonlBackend`] (raw or zstd, dsh's
//! layout), [`SqliteBackend`] (the embedded default) and [`PostgresBackend`] (sessions shared
//! by many hosts), and [`Store`] / [`SessionWriter`] on top. It never decides whether an event is acceptable: every event passes through strata-core
//! before a byte is written, and every stored log is judged by the core when it is loaded.
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

pub use checkpoint::{CheckpointRecordError, Evidence, CHECKPOINT_MAGIC};
pub use codec::{
    decode_event_line, decode_header_line, decode_header_value, encode_event_line,
    encode_header_line, expand_sources, write_range_sources, CodecError, EventLine, JsonlReader,
    Location, ReaderOptions, TornTail, RETIRED_HEADER_KEYS, V3_HEADER_KEYS,
};
pub use dsh_root::{
    current_log, read_title, DshListing, DshRoot, DshRootError, DshSession, DshSummary,
    DSH_HOME_ENV, TITLE_EVENT_TYPE,
};
pub use error::{AppendError, ForkError, LockHolder, StoreError};
pub use frames::{scan_frames, FrameError, FrameScan, FrameSpan};
pub use index::INDEX_FILE_NAME;
pub use jsonl::{
    is_zstd_file, read_log, scan_log, scan_log_for_writing, write_log, Compression, JsonlBackend,
    JsonlConfig,
};
pub use layout::{
    decode_segment, encode_segment, parse_session_file_name, project_key, session_file_name,
    LayoutError, MAX_PROJECT_SLUG_UNITS, MAX_SEGMENT_BYTES, NO_CWD_DIR,
};
pub use lines::{
    Fragment, LineError, LineScanner, LineScannerConfig, Record, DEFAULT_MAX_RECORD_LEN,
};
pub use lock::{SessionLock, LOCK_FILE_NAME};
pub use loose::{lock_path_for, LooseFile};
pub use memory::MemoryBackend;
pub use postgres::{
    FollowFrom, Follower, PostgresBackend, PostgresConfig,
    DEFAULT_SCHEMA as POSTGRES_DEFAULT_SCHEMA, MAX_ID_BYTES as POSTGRES_MAX_ID_BYTES,
    SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION,
};
pub use ranges::{decode_source_seqs, encode_source_seqs, RangeError, MAX_SAFE_SEQ};
pub use resume::{remove_sidecars, CHECKPOINT_FILE_NAME};
pub use sqlite::{
    GroupCommitStats, SqliteBackend, APPLICATION_ID, COMPRESS_THRESHOLD, SCHEMA_VERSION,
};
pub use store::{
    default_sqlite_path, restore_stream, Backend, Batch, EventRows, Listing, LoadFn, LogAppender,
    LogStream, ReadFrom, ResumePoint, Store, StoredLog, TornInfo,
};
pub use writer::{SessionWriter, CHECKPOINT_EVERY};

pub mod legacy;
pub mod migrate;
pub mod synth;

/// The sidecar and frame decoders that only the store's own paths call, reachable by the fuzz
/// harnesses of `crates/strata-fuzz`: through the public store path, a self-hashed checkpoint
/// record or an index entry's check would stop almost every mutated input before the decoder.
/// Not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::checkpoint::{decode as decode_checkpoint, encode as encode_checkpoint};
    pub use crate::checkpoint::{fnv64, fnv64_hex};
    pub use crate::decode_pool::decode_inline;
    pub use crate::index::{IndexIdentity, OffsetIndex, RecordPos};
    pub use crate::zstd::{decompress as decompress_frame, recoverable_prefix, reuse_decoders};

    /// Reads a V3 log file as a store reads it, in dsh's zstd framing (the header line alone
    /// in the first frame, every frame ending on a line boundary), where
    /// [`read_log`](crate::read_log) takes any framing.
    pub fn read_log_in_dsh_framing(
        path: &std::path::Path,
    ) -> Result<crate::StoredLog, crate::StoreError> {
        crate::scan_log_for_writing(path)?.collect_log()
    }
}

/// The README's Rust examples (the core's and the store's), compiled and run as doctests here:
/// this is the lowest crate that can compile both.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

mod checkpoint;
mod codec;
mod decode_pool;
mod dsh_root;
mod error;
mod frames;
mod index;
mod jsonl;
mod layout;
mod lines;
mod lock;
mod loose;
mod memory;
mod postgres;
mod powerloss;
mod ranges;
mod resume;
mod sqlite;
mod store;
mod temp;
mod writer;
mod zstd;
