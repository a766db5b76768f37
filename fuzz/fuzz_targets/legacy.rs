//! Fuzz target `legacy`: the v0/v1/v2 readers (docs/testing.md, "Fuzzing").
#![no_main]
libfuzzer_sys::fuzz_target!(
    // The allocator's thresholds and the store's inline decoding (see init_fuzzing).
    init: strata_fuzz::init_fuzzing(),
    |data: &[u8]| strata_fuzz::legacy(data)
);
