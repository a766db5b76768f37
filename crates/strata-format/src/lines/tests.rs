//! The newline record scanner (persistence §2.7): chunking never changes the output, `\r` is
//! data, and oversized records fail early without being buffered.

use proptest::prelude::*;

use super::*;

/// Everything a scan produced, owned so runs can be compared.
#[derive(Debug, PartialEq, Eq)]
struct Scan {
    records: Vec<(u64, u64, Vec<u8>)>,
    fragment: Option<(u64, u64, Vec<u8>)>,
}

fn scan_chunks(config: LineScannerConfig, chunks: &[&[u8]]) -> Result<Scan, LineError> {
    let mut scanner = LineScanner::new(config);
    let mut records = Vec::new();
    for chunk in chunks {
        let mut rest = *chunk;
        while let Some(record) = scanner.next_record(&mut rest)? {
            assert_eq!(
                record.end_offset(),
                record.offset + record.bytes.len() as u64 + 1
            );
            records.push((record.line, record.offset, record.bytes.to_vec()));
        }
        assert!(rest.is_empty());
    }
    let fragment = scanner
        .trailing_fragment()
        .map(|f| (f.line, f.offset, f.bytes.to_vec()));
    assert_eq!(
        scanner.pending_len(),
        fragment.as_ref().map_or(0, |f| f.2.len())
    );
    Ok(Scan { records, fragment })
}

fn scan(input: &[u8]) -> Scan {
    scan_chunks(LineScannerConfig::default(), &[input]).unwrap()
}

const SAMPLE: &[u8] = b"{\"seq\":0}\n\n{\"seq\":1,\"t\":\"a\\nb\"}\r\n{\"seq\":2}\nxyz";

#[test]
fn splits_records_with_lines_and_offsets() {
    assert_eq!(
        scan(SAMPLE),
        Scan {
            records: vec![
                (1, 0, b"{\"seq\":0}".to_vec()),
                (2, 10, b"".to_vec()),
                (3, 11, b"{\"seq\":1,\"t\":\"a\\nb\"}\r".to_vec()),
                (4, 33, b"{\"seq\":2}".to_vec()),
            ],
            fragment: Some((5, 43, b"xyz".to_vec())),
        }
    );
}

#[test]
fn empty_and_newline_terminated_inputs_have_no_fragment() {
    assert_eq!(
        scan(b""),
        Scan {
            records: vec![],
            fragment: None
        }
    );
    assert_eq!(scan(b"a\n").fragment, None);
    assert_eq!(scan(b"a\n").records, vec![(1, 0, b"a".to_vec())]);
}

// §2.7: an incomplete trailing fragment is carried to the next chunk.
#[test]
fn every_single_split_gives_the_same_output() {
    let whole = scan(SAMPLE);
    for cut in 0..=SAMPLE.len() {
        let (a, b) = SAMPLE.split_at(cut);
        let split = scan_chunks(LineScannerConfig::default(), &[a, b]).unwrap();
        assert_eq!(split, whole, "split at {cut}");
    }
}

#[test]
fn every_double_split_gives_the_same_output() {
    let whole = scan(SAMPLE);
    for first in 0..=SAMPLE.len() {
        for second in first..=SAMPLE.len() {
            let chunks = [&SAMPLE[..first], &SAMPLE[first..second], &SAMPLE[second..]];
            let split = scan_chunks(LineScannerConfig::default(), &chunks).unwrap();
            assert_eq!(split, whole, "splits at {first} and {second}");
        }
    }
}

#[test]
fn one_byte_chunks_give_the_same_output() {
    let chunks: Vec<&[u8]> = SAMPLE.chunks(1).collect();
    assert_eq!(
        scan_chunks(LineScannerConfig::default(), &chunks).unwrap(),
        scan(SAMPLE)
    );
}

#[test]
fn crlf_is_not_special() {
    let scanned = scan(b"a\r\nb\r\r\n\r");
    assert_eq!(
        scanned.records,
        vec![(1, 0, b"a\r".to_vec()), (2, 3, b"b\r\r".to_vec())]
    );
    assert_eq!(scanned.fragment, Some((3, 7, b"\r".to_vec())));
}

#[test]
fn numbering_can_continue_after_a_header() {
    let config = LineScannerConfig {
        first_line: 2,
        first_offset: 100,
        ..LineScannerConfig::default()
    };
    let scanned = scan_chunks(config, &[b"x\ny"]).unwrap();
    assert_eq!(scanned.records, vec![(2, 100, b"x".to_vec())]);
    assert_eq!(scanned.fragment, Some((3, 102, b"y".to_vec())));
}

#[test]
fn stopping_early_leaves_the_rest_unconsumed() {
    let mut scanner = LineScanner::default();
    let mut rest: &[u8] = b"a\nb\nc";
    let first = scanner.next_record(&mut rest).unwrap().unwrap();
    assert_eq!(first.bytes, b"a");
    assert_eq!(rest, b"b\nc");
}

#[test]
fn records_at_the_limit_are_accepted() {
    let config = LineScannerConfig {
        max_record_len: 4,
        ..LineScannerConfig::default()
    };
    // Whole in one chunk, and carried across chunks.
    let whole = scan_chunks(config, &[b"abcd\nefgh\n"]).unwrap();
    let pieces = scan_chunks(config, &[b"ab", b"cd", b"\nefg", b"h", b"\n"]).unwrap();
    assert_eq!(whole, pieces);
    assert_eq!(whole.records.len(), 2);
}

#[test]
fn oversized_record_errors() {
    let config = LineScannerConfig {
        max_record_len: 4,
        ..LineScannerConfig::default()
    };
    let expected = LineError::RecordTooLarge {
        line: 2,
        offset: 3,
        limit: 4,
    };
    // Complete within one chunk.
    assert_eq!(
        scan_chunks(config, &[b"ab\nabcde\n"]),
        Err(expected.clone())
    );
    // Still unterminated: known to be too long before its newline arrives.
    assert_eq!(scan_chunks(config, &[b"ab\nabcde"]), Err(expected.clone()));
    // Carried across chunks.
    assert_eq!(
        scan_chunks(config, &[b"ab\nab", b"c", b"de", b"fgh\n"]),
        Err(expected.clone())
    );
    assert_eq!(
        expected.to_string(),
        "record at line 2 (offset 3) is longer than the 4-byte limit"
    );
}

#[test]
fn oversized_record_is_never_buffered() {
    let limit = 1024;
    let mut scanner = LineScanner::new(LineScannerConfig {
        max_record_len: limit,
        ..LineScannerConfig::default()
    });
    let block = [b'x'; 100];
    let mut n_fed = 0;
    let error = loop {
        let mut rest = &block[..];
        match scanner.next_record(&mut rest) {
            Ok(None) => {
                n_fed += block.len();
                assert!(scanner.pending_len() <= limit);
                assert!(scanner.partial.capacity() <= limit);
            }
            Ok(Some(_)) => panic!("no newline was fed"),
            Err(error) => break error,
        }
    };
    // The 11th block would take the record to 1100 bytes.
    assert_eq!(n_fed, 1000);
    assert_eq!(
        error,
        LineError::RecordTooLarge {
            line: 1,
            offset: 0,
            limit
        }
    );
    // The buffer is released and the scanner stays stopped.
    assert_eq!(scanner.partial.capacity(), 0);
    assert_eq!(scanner.trailing_fragment(), None);
    let mut rest: &[u8] = b"\nok\n";
    assert_eq!(scanner.next_record(&mut rest), Err(error));
}

#[test]
fn default_limit_is_64_mib() {
    assert_eq!(LineScannerConfig::default().max_record_len, 64 << 20);
}

strata_testkit::proptest! {
    #[test]
    fn chunking_never_changes_the_output(
        input in prop::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), any::<u8>()], 0..200),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts {
            chunks.push(&input[start..cut]);
            start = cut;
        }
        chunks.push(&input[start..]);
        let split = scan_chunks(LineScannerConfig::default(), &chunks).unwrap();
        let whole = scan(&input);
        prop_assert_eq!(&split, &whole);
        // Reassembling records and fragment gives back the input.
        let mut rebuilt = Vec::new();
        for (_, _, bytes) in &whole.records {
            rebuilt.extend_from_slice(bytes);
            rebuilt.push(b'\n');
        }
        if let Some((_, _, bytes)) = &whole.fragment {
            rebuilt.extend_from_slice(bytes);
        }
        prop_assert_eq!(rebuilt, input);
    }
}

strata_testkit::proptest! {
    /// The word-at-a-time search finds exactly the first `\n`, wherever it is and whatever
    /// surrounds it (bytes near 0x0a and 0x80 included).
    #[test]
    fn find_newline_matches_a_bytewise_search(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(0x0b_u8), Just(0x8a_u8), Just(0_u8), any::<u8>()],
            0..80,
        ),
    ) {
        let expected = bytes.iter().position(|&byte| byte == b'\n');
        prop_assert_eq!(find_newline(&bytes), expected);
        for start in 0..bytes.len().min(9) {
            let expected = bytes[start..].iter().position(|&byte| byte == b'\n');
            prop_assert_eq!(find_newline(&bytes[start..]), expected);
        }
    }
}
