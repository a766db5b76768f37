//! strata-store: the durable side of a session log — how events become bytes on disk and back.
//!
//! This layer sits directly above `strata-core` (cli → agent → compact → store → core). It owns
//! the dsh on-disk vocabulary: the `sourceEventSeqs` range encoding, the directory and file
//! naming of JSONL sessions, the structural walk over zstd frames and the incremental newline
//! record scanner that readers feed. It never decides whether an event is acceptable; that is
//! the core's job, and the store only hands it decoded values. The codecs and scanners are
//! pure (bytes or values in, values out); file I/O belongs only to the stores built on them.
//!
//! ```
//! use serde_json::json;
//! use strata_store::{decode_source_seqs, encode_source_seqs};
//!
//! let stored = encode_source_seqs(&[1, 3, 4, 5, 7]);
//! assert_eq!(stored, json!([1, [3, 5], 7]));
//! assert_eq!(decode_source_seqs(&stored, 8).unwrap(), [1, 3, 4, 5, 7]);
//! ```
//!
//! See ARCHITECTURE.md at the repository root for how the crates fit together.
#![deny(missing_docs)]

pub use codec::{
    decode_event_line, decode_header_line, decode_header_value, encode_event_line,
    encode_header_line, expand_sources, write_range_sources, CodecError, EventLine, JsonlReader,
    Location, ReaderOptions, TornTail, RETIRED_HEADER_KEYS, V3_HEADER_KEYS,
};
pub use error::{AppendError, ForkError, LockHolder, StoreError};
pub use frames::{scan_frames, FrameError, FrameScan, FrameSpan};
pub use jsonl::{read_log, write_log, Compression, JsonlBackend, JsonlConfig};
pub use layout::{
    decode_segment, encode_segment, parse_session_file_name, project_key, session_file_name,
    LayoutError, MAX_PROJECT_SLUG_UNITS, NO_CWD_DIR,
};
pub use lines::{
    Fragment, LineError, LineScanner, LineScannerConfig, Record, DEFAULT_MAX_RECORD_LEN,
};
pub use memory::MemoryBackend;
pub use ranges::{decode_source_seqs, encode_source_seqs, RangeError, MAX_SAFE_SEQ};
pub use sqlite::{SqliteBackend, APPLICATION_ID, COMPRESS_THRESHOLD, SCHEMA_VERSION};
pub use store::{
    default_sqlite_path, Backend, Batch, Listing, LogAppender, Store, StoredLog, TornInfo,
};
pub use writer::SessionWriter;

pub mod synth;

mod codec;
mod error;
mod frames;
mod jsonl;
mod layout;
mod lines;
mod lock;
mod memory;
mod ranges;
mod sqlite;
mod store;
mod writer;
mod zstd;
