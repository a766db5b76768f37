//! strata-store integration tests: one binary, one submodule per topic.

/// Golden V3 logs: read → restore → write is byte-identical (issue 2 item 2).
mod golden;
