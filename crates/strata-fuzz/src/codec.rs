//! The V3/V4 line codec, and the core's acceptance rules on the rows it decodes.

use strata_core::ingest::PrecheckedRow;
use strata_core::{CloseCause, RawEvent, SeedOptions, Session, Verifier};
use strata_format::{
    decode_event_line, decode_header_line, decode_source_seqs, EventLine, JsonlReader, Location,
    ReaderOptions,
};

/// The read sizes a reader is driven with: a line, a UTF-8 sequence or a number may be split by
/// any chunk boundary, so the first byte of the input picks one.
const CHUNK_LENS: [usize; 8] = [1, 2, 3, 7, 64, 4096, 65_536, 256 * 1024];

fn reader_options(data: &[u8]) -> (ReaderOptions, &[u8]) {
    let (first, rest) = data.split_first().unwrap_or((&0, data));
    let options = ReaderOptions {
        chunk_len: CHUNK_LENS[usize::from(*first) % CHUNK_LENS.len()],
        // Small enough that the fuzzer reaches the oversized-record path.
        max_record_len: if first & 0x80 != 0 { 256 } else { 1 << 20 },
        ..ReaderOptions::default()
    };
    (options, rest)
}

/// The header and the rows a streaming read decodes, `None` when the header does not decode.
fn read_rows(data: &[u8]) -> Option<(strata_core::SessionHeader, Vec<RawEvent>)> {
    let (options, log) = reader_options(data);
    let mut reader = JsonlReader::new(log, options).ok()?;
    let mut rows = Vec::new();
    // A bad line is reported and reading goes on; the good rows are judged as they are (a
    // gap in their seqs is the core's to refuse).
    for EventLine { event, .. } in reader.by_ref().flatten() {
        rows.push(event);
    }
    let _ = (
        reader.committed_offset(),
        reader.torn_tail(),
        reader.header_end(),
    );
    Some((reader.header().clone(), rows))
}

/// The V3/V4 JSONL line codec: the streaming reader (header, rows, torn tail, oversized
/// records) at a chunk size the input picks, then every line through the one-line decoders and
/// the `sourceEventSeqs` range decoder.
pub fn line_codec(data: &[u8]) {
    let _ = read_rows(data);
    let (_, log) = reader_options(data);
    let location = Location::line(1);
    for (index, line) in log.split(|byte| *byte == b'\n').enumerate() {
        if index == 0 {
            let _ = decode_header_line(line, &location);
        }
        if let Ok(raw) = decode_event_line(line, &location) {
            let _ = raw.type_tag();
        }
    }
    if let Ok(text) = std::str::from_utf8(log) {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
            let _ = decode_source_seqs(&value, 1 << 16);
        }
    }
}

/// The acceptance rules on decoded rows: the rows of a log the codec decodes, restored by the
/// core as a store does it (plain, repaired, prechecked), and verified row by row; what the
/// verifier accepts the restore must accept too.
pub fn accept(data: &[u8]) {
    let Some((header, rows)) = read_rows(data) else {
        return;
    };
    let options = SeedOptions::default();
    let mut verifier = Verifier::new(header.clone());
    // A rejected row changes nothing: the verdict is the first rejection, else `finish`'s.
    let pushed = rows.iter().cloned().try_for_each(|row| verifier.push(row));
    let verified = pushed.and_then(|()| verifier.finish().map(drop));
    let restored = Session::restore(header.clone(), rows.iter().cloned(), options);
    if let Ok(session) = &restored {
        let _ = session.derive_messages();
        let _ = session.checkpoint();
        let _ = session.turn_state();
    }
    // The verifier runs the restore's rules row by row, without R39's look-ahead (a turn
    // boundary inside a compaction that a later end-seed makes stale; docs/rules.md): it may
    // refuse what the restore accepts, never the other way round.
    assert!(
        verified.is_err() || restored.is_ok(),
        "the Verifier accepts a log Session::restore refuses: {:?}",
        restored.err()
    );
    let generation = header.generation();
    let prechecked = rows
        .iter()
        .cloned()
        .enumerate()
        .map(|(index, raw)| PrecheckedRow::check(generation, index as u64, raw));
    let repaired = Session::restore(
        header,
        prechecked,
        SeedOptions {
            repair: Some(CloseCause::Interrupted),
            ..options
        },
    );
    if let Ok(session) = repaired {
        let _ = session.derive_messages();
    }
}
