//! strata-compact integration tests: one binary, one submodule per topic (issue 5).

/// Session builders, summarizers and checks shared by the topics below.
mod common;

/// Properties on random realistic sessions: compaction and pruning always produce logs the
/// core accepts, the checkpoint replaces exactly the shadowed span, and replay from disk
/// reproduces surface and messages.
mod properties;

/// Region selection on hand-built sessions: parallel tool calls, cuts inside a step, the
/// system head.
mod selection;

/// Failure is non-destructive: failing, timing-out and non-shrinking summarizers, busy
/// brackets, changed surfaces.
mod failure;

/// Crash mid-compaction: the open bracket is closed on resume, no replacement appears.
mod crash;

/// The token meter: provider anchors, projection after compaction, header changes, rollback.
mod meter;

/// The tool-result pruner on real logs.
mod prune;

/// The trigger policy drivers through in-memory and durable hosts.
mod drivers;

/// Upstream's released V3 format layer accepts what the writers here write.
mod upstream;
