//! strata-format: the dsh session bytes — what a line, a file name, a zstd frame or a
//! checkpoint record is, independent of where the bytes live.
//!
//! This layer sits directly above `strata-core` (store → format → core) and below every store.
//! It owns the V3 JSONL line codec (the header line and event lines, byte-identical to dsh),
//! the range encoding of `sourceEventSeqs`, the directory and file naming, the incremental
//! line scanner, the structural walk over zstd frames and the one-frame compressor, and the
//! checkpoint record. It opens no file, starts no thread and reads no environment: its readers
//! take any `std::io::Read`, its frame walk any [`frames::ByteSource`]. It judges only what the
//! line format owns; every event rule is `strata-core`'s.
//!
//! ```
//! use strata_format::{decode_event_line, encode_source_seqs, Location};
//!
//! assert_eq!(encode_source_seqs(&[1, 2, 3, 7]).to_string(), "[[1,3],7]");
//! let line = br#"{"seq":0,"type":"turn/start","time":5,"data":{"turn":1}}"#;
//! let row = decode_event_line(line, &Location::line(2)).unwrap();
//! assert_eq!((row.type_tag(), row.seq_number()), (Some("turn/start"), Some(0)));
//! ```
//!
//! See ARCHITECTURE.md at the repository root for how the crates fit together, and
//! docs/format.md for the bytes themselves.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use codec::{
    decode_event_line, decode_header_line, decode_header_value, encode_event_line,
    encode_header_line, expand_sources, write_range_sources, CodecError, EventLine, JsonlReader,
    Location, ReaderOptions, TornTail, RETIRED_HEADER_KEYS, V3_HEADER_KEYS,
};
pub use layout::{
    decode_segment, encode_segment, parse_session_file_name, project_key, session_file_name,
    LayoutError, MAX_PROJECT_SLUG_UNITS, MAX_SEGMENT_BYTES, NO_CWD_DIR,
};
pub use ranges::{decode_source_seqs, encode_source_seqs, RangeError, MAX_SAFE_SEQ};

pub mod checkpoint;
pub mod codec;
pub mod frames;
pub mod layout;
pub mod lines;
pub mod ranges;
pub mod zstd_frame;
