//! Criterion benches of compaction planning and pruning (filled in by the bench commit).

fn main() {}
