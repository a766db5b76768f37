//! strata-store integration tests: one binary, one submodule per topic.

/// Golden V3 logs: read → restore → write is byte-identical (issue 2 item 2).
mod golden;

/// Backend constructors and synthetic turns shared by the topics below.
mod common;

/// The PostgreSQL test server (given, local, or throw-away) and per-test schemas (issue 8).
mod pg;

/// The store contract on every backend: create, append, read, list, fork, delete, locks,
/// group commit, crash repair on reopen, poisoning (issue 3 item 1).
mod contract;

/// Torn tails at every offset, appends after a torn tail, interior corruption (issue 3).
mod torn;

/// Hostile ids, record size limits, schema version refusal (issue 3).
mod hostile;

/// SIGKILL crash test against the `strata-crash-writer` helper, one session and (SQLite) many
/// sessions at once (issues 3, 28).
mod crash;

/// Many sessions appending into one SQLite store share commits, each keeping its own
/// acknowledgement, order and stale-writer check (issue 28 item 3).
mod many_writers;

/// Simulated crashes at random syncs against a naive model, raw and zstd (issue 3 item 3).
mod simcrash;

/// Streaming reads at scale: huge zstd frames, tail reads from the end (issue 3).
mod stream;

/// Temporary files of killed writers are removed by the next write of the same file; a live
/// writer's are left alone (issue 22).
mod temp_files;

/// Lazy opens from checkpoints and offset indexes, across damaged or stale sidecars (issue 9).
mod resume;

/// PostgreSQL only: racing writers, a connection killed mid-batch, schema versions, fork as
/// `INSERT … SELECT`, following a live session (issue 8).
mod postgres;

/// A log cut under its reader ends the read with an error naming the file, never a signal
/// (issue 22).
mod shrink;
