//! Fuzz target `sqlite_rows`: the SQLite row decoder (docs/testing.md, "Fuzzing").
#![no_main]
libfuzzer_sys::fuzz_target!(
    // The store's decode pool runs inline: the same reading and decoding, no threads per input.
    init: strata_fuzz::init_fuzzing(),
    |data: &[u8]| strata_fuzz::sqlite_rows(data)
);
