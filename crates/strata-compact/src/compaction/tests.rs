//! Unit tests of the compaction module.
