//! The seq-ranges catalogue (session-core §11.7, `seq-ranges.spec.ts`) plus strata's own
//! checks on number semantics and hostile input.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

/// Enough room that the bound never decides a round trip.
const UNBOUNDED: u64 = u64::MAX;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn round_trip(seqs: &[u64]) {
    let encoded = encode_source_seqs(seqs);
    // Through text too, as a real log would carry it.
    let reparsed = parse(&encoded.to_string());
    assert_eq!(decode_source_seqs(&reparsed, UNBOUNDED).unwrap(), seqs);
    assert_eq!(decode_source_seqs(&encoded, UNBOUNDED).unwrap(), seqs);
}

// §11.7: round trips of `[]`, `[5]`, runs, mixed, `[3,2]` and huge values.
#[test]
fn round_trips() {
    round_trip(&[]);
    round_trip(&[5]);
    round_trip(&[0, 1, 2, 3, 4, 5]);
    round_trip(&[1, 3, 4, 5, 7, 9, 10, 11, 12, 20]);
    round_trip(&[3, 2]);
    round_trip(&[4, 4, 4]);
    round_trip(&[
        MAX_SAFE_SEQ - 3,
        MAX_SAFE_SEQ - 2,
        MAX_SAFE_SEQ - 1,
        MAX_SAFE_SEQ,
    ]);
    round_trip(&[0, MAX_SAFE_SEQ]);
}

// §10.1 encoding examples.
#[test]
fn encode_examples() {
    assert_eq!(encode_source_seqs(&[1, 3, 4, 5, 7]), json!([1, [3, 5], 7]));
    assert_eq!(encode_source_seqs(&[1, 3, 4, 7]), json!([1, 3, 4, 7]));
    assert_eq!(encode_source_seqs(&[3, 2]), json!([3, 2]));
    assert_eq!(encode_source_seqs(&[]), json!([]));
    assert_eq!(encode_source_seqs(&[0, 1, 2]), json!([[0, 2]]));
    assert_eq!(encode_source_seqs(&[0, 1]), json!([0, 1]));
    // Not strictly increasing: runs are not ranged even where they exist.
    assert_eq!(encode_source_seqs(&[1, 2, 3, 3]), json!([1, 2, 3, 3]));
    assert_eq!(encode_source_seqs(&[5, 1, 2, 3]), json!([5, 1, 2, 3]));
}

#[test]
fn encode_writes_compact_text_like_json_stringify() {
    assert_eq!(
        encode_source_seqs(&[1, 3, 4, 5, 7]).to_string(),
        "[1,[3,5],7]"
    );
}

// §11.7: a 1,000,001-element run encodes to one pair.
#[test]
fn million_element_run_is_one_pair() {
    let seqs: Vec<u64> = (0..=1_000_000).collect();
    let encoded = encode_source_seqs(&seqs);
    assert_eq!(encoded, json!([[0, 1_000_000]]));
    assert_eq!(decode_source_seqs(&encoded, 1_000_001).unwrap(), seqs);
}

// §11.7 decode errors: a non-array.
#[test]
fn decode_rejects_non_array() {
    let error = decode_source_seqs(&json!("invalid"), 10).unwrap_err();
    assert_eq!(error, RangeError::NotArray { found: "string" });
    assert!(error
        .to_string()
        .starts_with("sourceEventSeqs must be an array"));
    assert_eq!(
        decode_source_seqs(&json!({"0": 1}), 10),
        Err(RangeError::NotArray { found: "object" })
    );
}

// §11.7 decode errors: −1.
#[test]
fn decode_rejects_negative() {
    let error = decode_source_seqs(&json!([-1]), 10).unwrap_err();
    assert_eq!(
        error,
        RangeError::NotSeq {
            entry_idx: 0,
            found: "-1".into()
        }
    );
    assert!(error
        .to_string()
        .contains("must contain non-negative safe integers"));
    assert!(matches!(
        decode_source_seqs(&json!([[-1, 2]]), 10),
        Err(RangeError::NotSeq { entry_idx: 0, .. })
    ));
}

// §11.7 decode errors: `[[1]]`.
#[test]
fn decode_rejects_short_pair() {
    let error = decode_source_seqs(&json!([[1]]), 10).unwrap_err();
    assert_eq!(
        error,
        RangeError::NotPair {
            entry_idx: 0,
            found: "[1]".into()
        }
    );
    assert!(error
        .to_string()
        .contains("range entries must be [start, end] pairs"));
    assert!(matches!(
        decode_source_seqs(&json!([0, [1, 2, 3]]), 10),
        Err(RangeError::NotPair { entry_idx: 1, .. })
    ));
    // dsh routes any entry that is not a number through the pair check.
    assert!(matches!(
        decode_source_seqs(&json!(["0"]), 10),
        Err(RangeError::NotPair { entry_idx: 0, .. })
    ));
    assert!(matches!(
        decode_source_seqs(&json!([null]), 10),
        Err(RangeError::NotPair { entry_idx: 0, .. })
    ));
}

// §11.7 decode errors: `[[4,2]]`.
#[test]
fn decode_rejects_inverted_pair() {
    let error = decode_source_seqs(&json!([[4, 2]]), 10).unwrap_err();
    assert_eq!(
        error,
        RangeError::StartAfterEnd {
            entry_idx: 0,
            start: 4,
            end: 2
        }
    );
    assert!(error.to_string().contains("ranges require start <= end"));
}

// §11.7 decode errors: overlapping `[[2,5],[4,7]]`.
#[test]
fn decode_rejects_overlap() {
    let error = decode_source_seqs(&json!([[2, 5], [4, 7]]), 10).unwrap_err();
    assert_eq!(
        error,
        RangeError::NotIncreasing {
            entry_idx: 1,
            previous: 5,
            found: 4
        }
    );
    assert!(error
        .to_string()
        .contains("ranges must be strictly increasing"));
    // A plain number going backwards counts once any pair is present, wherever it is.
    assert!(matches!(
        decode_source_seqs(&json!([9, 1, [3, 5]]), 10),
        Err(RangeError::NotIncreasing { entry_idx: 1, .. })
    ));
    // Touching, not overlapping, is fine.
    assert_eq!(
        decode_source_seqs(&json!([[2, 4], [5, 7]]), 10).unwrap(),
        [2, 3, 4, 5, 6, 7]
    );
}

#[test]
fn decode_keeps_unordered_plain_lists() {
    // Without pairs the codec passes order and duplicates through; surface rules judge them.
    assert_eq!(decode_source_seqs(&json!([3, 2]), 10).unwrap(), [3, 2]);
    assert_eq!(decode_source_seqs(&json!([1, 1]), 10).unwrap(), [1, 1]);
}

#[test]
fn per_entry_rules_win_over_order() {
    // dsh checks strict increase only after every entry passed; a later bad entry wins.
    assert!(matches!(
        decode_source_seqs(&json!([[2, 5], [4, 7], [1]]), 10),
        Err(RangeError::NotPair { entry_idx: 2, .. })
    ));
}

// §11.7 decode errors: `maxEntries` 0.
#[test]
fn decode_with_max_entries_zero() {
    assert_eq!(
        decode_source_seqs(&json!([]), 0).unwrap(),
        Vec::<u64>::new()
    );
    let error = decode_source_seqs(&json!([0]), 0).unwrap_err();
    assert_eq!(
        error,
        RangeError::TooManyEntries {
            entry_idx: 0,
            n_entries: 1,
            max_entries: 0
        }
    );
    assert!(error
        .to_string()
        .contains("sourceEventSeqs exceeds its event sequence"));
    assert!(matches!(
        decode_source_seqs(&json!([[0, 0]]), 0),
        Err(RangeError::RangeTooLong { .. })
    ));
}

// §11.7 decode errors: `maxEntries` 10.
#[test]
fn decode_with_max_entries_ten() {
    let ten: Vec<u64> = (0..10).collect();
    assert_eq!(decode_source_seqs(&json!([[0, 9]]), 10).unwrap(), ten);
    let error = decode_source_seqs(&json!([[0, 10]]), 10).unwrap_err();
    assert_eq!(
        error,
        RangeError::RangeTooLong {
            entry_idx: 0,
            start: 0,
            end: 10,
            n_before: 0,
            max_entries: 10
        }
    );
    assert!(error
        .to_string()
        .contains("range exceeds its event sequence"));
    assert!(matches!(
        decode_source_seqs(&json!([[0, 8], 9, 10]), 10),
        Err(RangeError::TooManyEntries {
            entry_idx: 2,
            n_entries: 11,
            max_entries: 10
        })
    ));
    assert!(matches!(
        decode_source_seqs(&json!([0, 1, [2, 10]]), 10),
        Err(RangeError::RangeTooLong {
            entry_idx: 2,
            n_before: 2,
            ..
        })
    ));
}

#[test]
fn hostile_range_fails_fast() {
    // Would be 2^53 seqs (64 PiB) if expanded before the bound check.
    let hostile = json!([[0, 9_007_199_254_740_991u64]]);
    assert!(matches!(
        decode_source_seqs(&hostile, 5),
        Err(RangeError::RangeTooLong { max_entries: 5, .. })
    ));
    // Many plain entries stop at the bound too.
    let many = Value::Array((0..1000u64).map(Value::from).collect());
    assert!(matches!(
        decode_source_seqs(&many, 5),
        Err(RangeError::TooManyEntries { entry_idx: 5, .. })
    ));
}

#[test]
fn numbers_follow_javascript_semantics() {
    // `3.0` and `1e1` are integers to JSON.parse.
    assert_eq!(
        decode_source_seqs(&parse("[3.0, 1e1]"), 20).unwrap(),
        [3, 10]
    );
    assert_eq!(
        decode_source_seqs(&parse("[[1.0, 3e0]]"), 20).unwrap(),
        [1, 2, 3]
    );
    assert_eq!(
        decode_source_seqs(&parse("[9007199254740991]"), UNBOUNDED).unwrap(),
        [MAX_SAFE_SEQ]
    );
    for bad in [
        "-0",
        "-0.0",
        "0.5",
        "1e400",
        "-1e400",
        "9007199254740992",
        "9007199254740993",
        "18446744073709551616",
    ] {
        let value = parse(&format!("[{bad}]"));
        // serde_json keeps the number's digits but normalizes exponents (`1e400` → `1e+400`).
        assert_eq!(
            decode_source_seqs(&value, UNBOUNDED),
            Err(RangeError::NotSeq {
                entry_idx: 0,
                found: value[0].to_string()
            }),
            "{bad} must be rejected"
        );
        let pair = parse(&format!("[[0, {bad}]]"));
        assert!(
            matches!(
                decode_source_seqs(&pair, UNBOUNDED),
                Err(RangeError::NotSeq { entry_idx: 0, .. })
            ),
            "{bad} must be rejected as a pair endpoint"
        );
    }
}

#[test]
fn long_offending_entries_are_cut_in_messages() {
    let long = Value::Array(vec![Value::String("x".repeat(10_000))]);
    let error = decode_source_seqs(&long, 10).unwrap_err();
    assert!(error.to_string().len() < 200, "{error}");
}

#[test]
fn upstream_text_is_the_message_prefix() {
    let errors = [
        decode_source_seqs(&json!(1), 10),
        decode_source_seqs(&json!([-1]), 10),
        decode_source_seqs(&json!([[1]]), 10),
        decode_source_seqs(&json!([[4, 2]]), 10),
        decode_source_seqs(&json!([[2, 5], [4, 7]]), 10),
        decode_source_seqs(&json!([1]), 0),
        decode_source_seqs(&json!([[0, 10]]), 10),
    ];
    for error in errors {
        let error = error.unwrap_err();
        assert!(
            error.to_string().starts_with(error.upstream_text()),
            "{error}"
        );
    }
}

strata_testkit::proptest! {
    #[test]
    fn encode_then_decode_is_identity(seqs in prop::collection::vec(0..=MAX_SAFE_SEQ, 0..64)) {
        round_trip(&seqs);
    }

    #[test]
    fn encode_then_decode_is_identity_for_runs(
        start in 0..=MAX_SAFE_SEQ - 1000,
        steps in prop::collection::vec(0u64..4, 0..64),
    ) {
        // Steps of 0 make duplicates, 1 runs and larger ones gaps.
        let seqs: Vec<u64> = steps
            .iter()
            .scan(start, |seq, step| { *seq += step; Some(*seq) })
            .collect();
        round_trip(&seqs);
        if super::is_strictly_increasing(&seqs) {
            let encoded = encode_source_seqs(&seqs);
            prop_assert!(encoded.as_array().unwrap().len() <= seqs.len());
        }
    }

    #[test]
    fn decode_respects_the_bound(seqs in prop::collection::vec(0..200u64, 0..40), max in 0..40u64) {
        let encoded = encode_source_seqs(&seqs);
        match decode_source_seqs(&encoded, max) {
            Ok(decoded) => {
                prop_assert!(decoded.len() as u64 <= max);
                prop_assert_eq!(decoded, seqs);
            }
            Err(RangeError::TooManyEntries { .. } | RangeError::RangeTooLong { .. }) => {
                prop_assert!(seqs.len() as u64 > max);
            }
            Err(other) => prop_assert!(false, "unexpected {other}"),
        }
    }

    /// A list `is_plain_seq_list` passes is exactly what decoding and re-encoding it as a flat
    /// list gives back (so a reader may keep it as it is); entries are spelled every way JSON
    /// allows, ranges included.
    #[test]
    fn a_plain_list_is_what_decoding_gives_back(
        entries in prop::collection::vec(
            prop_oneof![
                (0..2000u64).prop_map(|seq| seq.to_string()),
                Just(MAX_SAFE_SEQ.to_string()),
                Just((MAX_SAFE_SEQ + 1).to_string()),
                Just("18446744073709551616".to_owned()),
                (0..50u64).prop_map(|seq| format!("{seq}.0")),
                (0..50u64).prop_map(|seq| format!("{seq}e0")),
                Just("-0".to_owned()),
                Just("-1".to_owned()),
                Just("0.5".to_owned()),
                Just("\"7\"".to_owned()),
                (0..50u64, 0..50u64).prop_map(|(a, b)| format!("[{a},{b}]")),
            ],
            0..8,
        ),
        max in 0..10u64,
    ) {
        let value = parse(&format!("[{}]", entries.join(",")));
        if is_plain_seq_list(&value, max) {
            let decoded = decode_source_seqs(&value, max).unwrap();
            let rebuilt = Value::Array(decoded.into_iter().map(Value::from).collect());
            prop_assert_eq!(rebuilt, value);
        } else {
            // Refused lists are those with something to expand, respell or reject.
            let plain = entries.iter().all(|entry| {
                entry.parse::<u64>().is_ok_and(|seq| seq <= MAX_SAFE_SEQ)
            });
            prop_assert!(!plain || entries.len() as u64 > max);
        }
    }
}
