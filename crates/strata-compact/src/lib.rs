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
//! use strata_compact::{block_on, CompactionConfig, Compactor, ExtractiveSummarizer, IdGenerator, Trigger};
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

pub use compaction::{
    CompactError, CompactionBatch, CompactionIds, CompactionOutcome, CompactionPlan, Compactor,
    IdGenerator, Pressure, Trigger, CHECKPOINT_PLUGIN,
};
pub use config::{Budget, CompactionConfig, ConfigError, PrunerConfig, Retain};
pub use deadline::{block_on, with_deadline, Deadline};
pub use estimate::{
    block_tokens, blocks_tokens, json_len, message_tokens, ByteEstimator, TokenEstimator,
    FRAME_TOKENS,
};
pub use extractive::{extract, ExtractiveSummarizer, EXTRACTIVE_MODEL, EXTRACTIVE_PROVIDER};
pub use host::{
    system_clock_ms, AutoReport, AutoStatus, CompactionHost, MemoryHost, MemoryHostError,
    OverflowReport, WriterHost, WriterHostError,
};
pub use meter::{Anchor, Measurement, TokenMeter};
pub use prune::{
    prune_blocks, text_chars, PruneError, PrunePlan, PrunedResult, Pruner, MARKER, MARKER_CHARS,
};
pub use repair::{plan_repair, repair_events, repair_stored};
pub use resume::{restore_resumed, resume_stream, Resumed, INTERRUPTED};
pub use select::{select_region, Region};
pub use summarizer::{
    instruction_text, SummarizeError, Summarizer, Summary, SummaryRequest, CHECKPOINT_PREAMBLE,
    INSTRUCTION_PLUGIN, SUMMARY_SECTIONS,
};

mod compaction;
mod config;
mod deadline;
mod estimate;
mod extractive;
mod host;
mod meter;
mod prune;
mod repair;
mod resume;
mod select;
mod summarizer;
