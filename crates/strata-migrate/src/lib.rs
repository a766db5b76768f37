//! strata-migrate: every generation of dsh session logs that strata reads — the v0, v1 and v2
//! files older harnesses left on users' disks, the released v0→v1→v2→v3 migration chain, and
//! dsh's own session folder, where several generations of one session may lie side by side.
//!
//! This layer sits above `strata-store` (cli → migrate → store → format → core): it reads
//! older files with the store's file primitives (`strata_store::file_io`), restores them
//! through strata-core's rules for their generation, and publishes a migration's V3 file
//! beside its untouched source. strata writes V3 only; nothing here writes an older
//! generation.
//!
//! - [`legacy`] — detecting a file's generation, streaming v0/v1/v2 rows, upstream
//!   0.1.0-rc.8's restore path with its legacy normalizations (docs/v0-rules.md);
//! - [`migrate`] — the adjacent edges as streaming adapters and `migrate_file`
//!   (docs/migration.md);
//! - [`open`] — any dsh log file, any generation, with one uniform rejection
//!   ([`open::LogError`]): the older generations loaded whole, every reader's failure sorted
//!   into "breaks a rule" or "could not be read";
//! - [`DshRoot`] — `$DSH_HOME/sessions`: the highest generation of each session directory,
//!   id-prefix lookups, listings with titles.
//!
//! See ARCHITECTURE.md at the repository root for how the crates fit together.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use dsh_root::{
    current_log, read_title, DshListing, DshRoot, DshRootError, DshSession, DshSummary,
    DSH_HOME_ENV, TITLE_EVENT_TYPE,
};

pub mod legacy;
pub mod migrate;
pub mod open;

mod dsh_root;
