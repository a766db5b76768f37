//! Fuzz target `zstd_log`: zstd-framed logs (docs/testing.md, "Fuzzing").
#![no_main]
libfuzzer_sys::fuzz_target!(
    // The store's decode pool runs inline: the same reading and decoding, no threads per input.
    init: strata_fuzz::init_fuzzing(),
    |data: &[u8]| strata_fuzz::zstd_log(data)
);
