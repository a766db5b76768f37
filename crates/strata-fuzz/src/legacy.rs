//! The v0/v1/v2 readers: an older-generation log read from bytes and restored under its own
//! generation's rules, and the v0 fixture hydrator.

use std::io::Cursor;

use strata_core::SeedOptions;
use strata_migrate::legacy::{
    hydrate_fixture, restore_v0, restore_v2, FixtureOptions, LegacyReader, LogRecord, NameHint,
    SessionSink, VerifierSink,
};

/// The file names a log is read under: the name's generation hint must agree with the header.
const NAMES: [(&str, Option<u32>); 4] = [
    ("session.jsonl", None),
    ("session.v0.jsonl", Some(0)),
    ("session.v1.jsonl", Some(1)),
    ("session.v2.jsonl", Some(2)),
];

/// The first byte picks the file name (and so the generation hint) and the sink (the
/// streaming verifier, or the whole-session restore); the rest is the file.
pub fn legacy(data: &[u8]) {
    let (first, log) = data.split_first().unwrap_or((&0, data));
    let (file, generation) = NAMES[usize::from(*first) % NAMES.len()];
    let hint = NameHint {
        generation,
        zstd: false,
    };
    let _ = hydrate_fixture(log, &FixtureOptions::default());
    let Ok(mut reader) = LegacyReader::from_reader(Cursor::new(log.to_vec()), file, hint) else {
        return;
    };
    let generation = reader.generation();
    let header = reader.header().clone();
    let records: Vec<LogRecord> = reader.by_ref().map_while(Result::ok).collect();
    let _ = reader.torn_tail();
    let whole = first & 0x80 != 0;
    let v0 = matches!(
        generation,
        strata_core::Generation::V0 | strata_core::Generation::V1
    );
    match (v0, whole) {
        (true, false) => drop(restore_v0(generation, &header, records, VerifierSink::new)),
        (true, true) => drop(restore_v0(generation, &header, records, |header| {
            SessionSink::new(header, SeedOptions::default())
        })),
        (false, false) => drop(restore_v2(&header, records, VerifierSink::new)),
        (false, true) => drop(restore_v2(&header, records, |header| {
            SessionSink::new(header, SeedOptions::default())
        })),
    }
}
