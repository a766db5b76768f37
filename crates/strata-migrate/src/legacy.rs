//! Older dsh generations (v0, v1, v2): reading their files, hydrating v0 fixtures, and the
//! legacy normalizations of the v0 restore path (session-core §0, §2.4, §10.3, §12;
//! persistence §0.5, §2.2–§2.3, §2.10).
//!
//! strata writes V3 only. These modules read what older harnesses left on users' disks, so the
//! files can be validated under their own generation's rules and migrated (see `migrate`).

pub use detect::{detect_generation, name_hint, NameHint};
pub use error::{generation_name, At, ReadError};
pub use fixture::{hydrate_fixture, Fixture, FixtureError, FixtureOptions, DEFAULT_FIXTURE_TIME};
pub use header::{logical_header, map_v0_fields};
pub(crate) use js::{js_seq, js_time};
pub use normalize::{RefusalScan, Upgrader};
pub use open::{open_file, OpenError, Opened};
pub use reader::{physical_header, sniff, LegacyReader, LogRecord};
pub use rejection::{ErrorClass, LegacyRule, Rejection, RuleId, Wrapping};
pub use restore::{
    restore_v0, restore_v2, seed_v0, RestoreSink, Restored, SessionSink, VerifierSink,
};
pub use rows::{decode_row, expand_record, pack_records, PackedRow, RowError, RowKind, MIN_RUN};
pub use zstd_source::ZstdSource;

mod detect;
mod error;
mod fixture;
mod header;
pub(crate) mod js;
mod normalize;
mod open;
mod reader;
mod rejection;
pub(crate) mod released_rows;
mod restore;
mod rows;
mod untouched;
mod zstd_source;
