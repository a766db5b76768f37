//! Fuzz target `checkpoint`: the checkpoint record reader (docs/testing.md, "Fuzzing").
#![no_main]
libfuzzer_sys::fuzz_target!(
    // The allocator's thresholds and the store's inline decoding (see init_fuzzing).
    init: strata_fuzz::init_fuzzing(),
    |data: &[u8]| strata_fuzz::checkpoint(data)
);
