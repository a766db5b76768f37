//! strata-compact: compaction and tool-result pruning as validated surface replacements.
//!
//! This crate decides *what* to rewrite in a session's model-visible history and builds
//! the events that record it; it never writes bytes and never bypasses the core. Layer:
//! cli → agent → **compact** → store → core. Every rewrite is a `replace` surface
//! operation the core validates like any other append, so compaction is auditable and
//! replayable: nothing is deleted, and replaying the log reproduces the same surface.
//!
//! - [`TokenMeter`] — the context size of the next request: the last provider usage plus
//!   an estimate of what changed since (pluggable [`TokenEstimator`]).
//! - [`Compactor`] — trigger policy, region selection, the summary request, and the
//!   `compaction/start` … checkpoint `user/message` … `compaction/end` batch; the drivers
//!   [`Compactor::compact_if_needed`], [`Compactor::recover_overflow`] and
//!   [`Compactor::compact_now`] run it through a [`CompactionHost`] that owns I/O.
//! - [`Summarizer`] — the async seam the agent's LLM summarizer implements;
//!   [`ExtractiveSummarizer`] is the deterministic offline one.
//! - [`Pruner`] — middle-elision of oversized tool results, one node per replacement, appended
//!   only inside an open turn ([`Pruner::plan_in_turn`]).
//! - [`restore_resumed`] — the core's crash repair (an open compaction bracket, then the turn)
//!   for a log read from storage; [`repair_stored`] appends it durably to a stored session.
//!
//! ```
//! use strata_compact::deadline::block_on;
//! use strata_compact::{CompactionConfig, Compactor, ExtractiveSummarizer, IdGenerator, Trigger};
//! use strata_core::synth::{generate, SynthConfig};
//!
//! let mut session = generate(&SynthConfig { compact_every: 0, ..SynthConfig::default() }).unwrap();
//! let compactor = Compactor::new(CompactionConfig::default()).unwrap();
//! let ids = IdGenerator::seeded(1).next_ids();
//! let before = session.surface().len();
//! let batch = block_on(compactor.compact(&session, Trigger::Manual, &ExtractiveSummarizer, &ids))
//!     .unwrap()
//!     .expect("a long session has history to compact");
//! // The caller owns I/O: append the batch (here in memory; durably through a store writer).
//! session.append_batch(batch.candidates, 0).unwrap();
//! assert!(session.surface().len() < before);
//! ```
//!
//! See `ARCHITECTURE.md` at the repository root for how the crates fit together.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use compaction::{CompactError, CompactionOutcome, Compactor, IdGenerator, Pressure, Trigger};
pub use config::{Budget, CompactionConfig, ConfigError, PrunerConfig, Retain};
pub use estimate::{ByteEstimator, TokenEstimator};
pub use extractive::ExtractiveSummarizer;
pub use host::{AutoReport, AutoStatus, CompactionHost, MemoryHost, WriterHost};
pub use meter::TokenMeter;
pub use prune::{PruneError, PrunedResult, Pruner};
pub use repair::{plan_repair, repair_events, repair_stored};
pub use resume::{restore_resumed, resume_stream, Resumed};
pub use summarizer::{SummarizeError, Summarizer, Summary, SummaryRequest};

// What the root names is what an agent builder uses; the modules below hold the parts a
// specialist reaches for (a custom summarizer's prompt texts, token arithmetic, the region a
// compaction summarizes, the ids and events of one compaction) under their own names.
pub mod compaction;
mod config;
pub mod deadline;
pub mod estimate;
pub mod extractive;
pub mod host;
pub mod meter;
pub mod prune;
mod repair;
pub mod resume;
pub mod select;
pub mod summarizer;
