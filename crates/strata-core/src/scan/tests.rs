//! The scanner against serde: whatever row it claims, serde decodes to the same row and the
//! same view; whatever it does not, serde decodes (or refuses) exactly as before.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::synth::{generate, SynthConfig};
use crate::view::{Kind, Node};

/// What every `Node` query says about a view, as a value (two views that answer every query
/// alike describe the same).
fn describe<'n, N: Node<'n>>(node: N) -> Value {
    match node.kind() {
        Kind::Null => json!("null"),
        Kind::Bool => json!({ "bool": node.boolean() }),
        Kind::Number => json!({ "seq": node.seq_number() }),
        Kind::Str => json!({ "str": node.text().map(|text| text.into_owned()) }),
        Kind::Array => {
            let len = node.len();
            let items: Vec<Value> = (0..len.unwrap_or(0))
                .map_while(|index| node.at(index).map(describe))
                .collect();
            json!({ "array": len, "items": items })
        }
        Kind::Object => {
            let members: Vec<Value> = node
                .members()
                .into_iter()
                .map(|(key, value)| json!([key, describe(value)]))
                .collect();
            json!({ "object": node.len(), "members": members })
        }
    }
}

/// Checks `line` both ways; returns whether the scanner claimed it.
fn agrees(line: &str) -> bool {
    let serde = RawEvent::from_json_str(line);
    let arena = ScanArena::new();
    let scanned = ScannedRow::scan_in(line, Some(&arena));
    match (&serde, &scanned) {
        (Err(expected), Err(found)) => {
            assert_eq!(found.to_string(), expected.to_string(), "{line}");
            return false;
        }
        (Ok(_), Ok(_)) => {}
        _ => panic!("serde {serde:?} but scan {scanned:?} for {line}"),
    }
    let (Ok(expected), Ok(row)) = (serde, scanned) else {
        return false;
    };
    let claimed = scan_envelope(line, Some(&arena.0)).is_some();
    assert_eq!(row.is_scanned(), claimed, "{line}");
    // Without an arena the same row, and no view.
    let (plain, no_view) = ScannedRow::scan(line).unwrap().into_parts();
    assert!(no_view.is_none());
    assert_eq!(plain.to_value(), expected.to_value(), "{line}");
    assert_eq!(plain.order, expected.order, "{line}");
    let (found, view) = row.into_parts();
    assert_eq!(found.malformed, expected.malformed, "{line}");
    assert_eq!(found.null_row, expected.null_row, "{line}");
    assert_eq!(found.order, expected.order, "{line}");
    assert_eq!(found.data_json(), expected.data_json(), "{line}");
    assert_eq!(found.to_value(), expected.to_value(), "{line}");
    if let Some(prepared) = view {
        let text = found.data_json().unwrap_or("null");
        let parsed = View::parse(text, prepared.depth).expect("serde parses what the scan viewed");
        assert_eq!(describe(&prepared.view), describe(&parsed), "{line}");
    }
    claimed
}

/// A synthetic session's rows as strata writes them (built once per content size).
fn synth_lines(content_bytes: usize) -> &'static [String] {
    static LINES: std::sync::OnceLock<Vec<(usize, Vec<String>)>> = std::sync::OnceLock::new();
    let all = LINES.get_or_init(|| {
        [0, 120, 1024]
            .into_iter()
            .map(|content_bytes| {
                let session = generate(&SynthConfig {
                    events: 400,
                    content_bytes,
                    ..SynthConfig::default()
                })
                .unwrap();
                let lines = session
                    .events()
                    .unwrap()
                    .iter()
                    .map(|event| event.to_json())
                    .collect();
                (content_bytes, lines)
            })
            .collect()
    });
    all.iter()
        .find(|(size, _)| *size == content_bytes)
        .map_or(&[], |(_, lines)| lines.as_slice())
}

#[test]
fn the_scanner_claims_every_row_strata_writes_and_agrees_with_serde() {
    for content_bytes in [0, 120, 1024] {
        for line in synth_lines(content_bytes) {
            assert!(agrees(line), "not claimed: {line}");
        }
    }
}

#[test]
fn rows_of_other_shapes_go_to_serde() {
    let declined = [
        // whitespace other than spaces, and a raw tab in a string
        "{\"type\":\"turn/start\",\n\"seq\":0,\"time\":1,\"data\":{}}",
        "{\"type\":\"user/message\",\"seq\":0,\"time\":1,\"data\":{\"a\":\"x\ty\"}}",
        // raw control bytes in strings: far into a long one, just after an escape, in its
        // last bytes, in the type, in a key
        "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"a\":\"0123456789abcdefghijklmnopqrstuvwxyz\u{1}\"}}",
        "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"a\":\"0123456789\\\"\n0123456789\"}}",
        "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"a\":\"0123456789abcdefghijklmnopq\u{1f}\"}}",
        "{\"type\":\"turn/start\u{0}\",\"seq\":0,\"time\":1,\"data\":{}}",
        "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"a\\u0062\r\":1}}",
        // an escape in a key or in the type
        r#"{"typ\u0065":"turn/start","seq":0,"time":1,"data":{}}"#,
        r#"{"type":"turn\/start","seq":0,"time":1,"data":{}}"#,
        // a repeated key, an unknown key, `data` before `type`
        r#"{"type":"turn/start","seq":0,"seq":1,"time":1,"data":{}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{},"extra":1}"#,
        r#"{"data":{},"type":"turn/start","seq":0,"time":1}"#,
        // `seq` not a number
        r#"{"type":"turn/start","seq":"0","time":1,"data":{}}"#,
        // a lone surrogate where serde unescapes (a materialized string) ...
        r#"{"type":"user/message","seq":0,"time":1,"data":{"id":"\ud800","role":"user"}}"#,
        // ... serde's private number key, and nesting past the scanner's limit
        r#"{"type":"user/message","seq":0,"time":1,"data":{"$serde_json::private::Number":"1"}}"#,
        // not objects, and broken JSON
        "null",
        "[1,2]",
        "",
        r#"{"type":"turn/start","seq":01,"time":1}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":tru}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":"\x"}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":1.}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":1e}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":[1,]}}"#,
        r#"{"type":"turn/start","seq":0,"time":1} x"#,
        r#"{"type":"turn/start","seq":0,"time":1"#,
        // keys that are not the envelope's, or spelled with escapes
        r#"{"typo":"turn/start","seq":0,"time":1,"data":{}}"#,
        r#"{"type":"turn/start","sequence":0,"time":1,"data":{}}"#,
        r#"{"type":"turn/start","s":0,"time":1,"data":{}}"#,
        r#"{"type":"turn/start","seq":0,"t":1,"data":{}}"#,
        r#"{"t\u0079pe":"turn/start","seq":0,"time":1,"data":{}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"dat\u0061":{}}"#,
        r#"{"type":"tool/result","seq":0,"time":1,"data":{},"surfaceOps":"append"}"#,
        r#"{"type":"tool/result","seq":0,"time":1,"data":{},"ignorable":true,"i":1}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{},"":1}"#,
        // spaces between tokens (strata and dsh write compact JSON), wherever they stand
        r#" { "type" : "tool/result" , "seq" : 1.0e0 , "time" : -0 , "data" : { "x" : [ 1 , -2.5E+3 , true , false , null , { } , [ ] ] } } "#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":[1, 2]}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a" :1}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a": 1}}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"a":1 }}"#,
        r#"{"type":"turn/start","seq":0,"time":1,"data":{ }}"#,
        r#"{"type":"turn/start","seq":0,"time":1} "#,
    ];
    for line in declined {
        assert!(!agrees(line), "claimed: {line}");
    }
    let deep = format!(
        r#"{{"type":"turn/start","seq":0,"time":1,"data":{}1{}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(!agrees(&deep));
}

#[test]
fn escapes_and_numbers_the_scanner_does_claim() {
    let claimed = [
        r#"{"type":"user/message","seq":0,"time":-1,"data":{"id":"m\n1","role":"user","content":"a\"b\\c\u001b\u00e9"}}"#,
        r#"{"type":"tool/result","seq":1.0e0,"time":-0,"data":{"x":[1,-2.5E+3,true,false,null,{},[]]}}"#,
        r#"{"type":"tool/result","seq":3,"time":4,"data":{"a":{"b":{"c":{"d":{"e":"\ud83d\ude00"}}}}}}"#,
        r#"{"type":"x/unknown","seq":3,"time":4,"data":"\ud800","ignorable":true}"#,
        r#"{"type":"compaction","seq":5,"time":6,"data":{},"surfaceOp":{"kind":"replace","startSeq":1,"endSeq":2},"sourceEventSeqs":[1,2]}"#,
        r#"{"type":"turn/start","seq":0,"time":1}"#,
        r#"{}"#,
    ];
    for line in claimed {
        assert!(agrees(line), "declined: {line}");
    }
}

/// Bytes that change a JSON row's meaning, for mutations.
const SIGNIFICANT: &[u8] = b"\"\\{}[],: \t\n\x00\x1f\x7f0123456789.eE+-tfnulrd\xc3";

strata_testkit::proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Any edit of a real row: the scanner and serde agree on it (or the scanner declines).
    #[test]
    fn mutated_rows_agree_with_serde(
        which in 0usize..400,
        content in prop::sample::select(vec![0usize, 120]),
        edits in crate::byte_edits::edits(),
    ) {
        let lines = synth_lines(content);
        let bytes = crate::byte_edits::apply(&lines[which % lines.len()], edits, SIGNIFICANT);
        if let Ok(line) = std::str::from_utf8(&bytes) {
            agrees(line);
        }
    }

    /// The word-at-a-time search finds what a byte-by-byte search finds, wherever the first
    /// `"`, `\` or control byte lies (in a whole word, in the tail, or nowhere), among bytes of
    /// every other value (a borrow out of a byte that matched must not mark a byte before it).
    #[test]
    fn word_search_finds_the_first_quote_backslash_or_control_byte(
        filler in prop::collection::vec(any::<u8>().prop_filter("not searched for", |byte| *byte != b'"' && *byte != b'\\' && *byte >= 0x20), 0..64),
        found in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec![b'"', b'\\', 0, b'\n', b'\t', 0x1f])), 0..3),
    ) {
        let mut bytes = filler;
        for (at, byte) in found {
            bytes.insert(at.index(bytes.len() + 1), byte);
        }
        let expected = bytes.iter().position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20);
        prop_assert_eq!(string_stop(&bytes), expected);
    }

    /// The lead-byte flag of a view's string search is never `false` for a run that holds a
    /// reserved code point's lead byte before the stop, wherever it lies in its word (a
    /// `false` lets the view borrow the string as it stands, skipping the exact search).
    #[test]
    fn the_lead_byte_flag_never_misses_a_lead_byte(
        filler in prop::collection::vec(prop::sample::select(vec![b'a', 0x8f, 0xf3, 0xf5, 0xf4, 0x01, 0xff]), 0..64),
        stop in prop::option::of((any::<prop::sample::Index>(), prop::sample::select(vec![b'"', b'\\', 0]))),
    ) {
        let mut bytes = filler;
        if let Some((at, byte)) = stop {
            bytes.insert(at.index(bytes.len() + 1), byte);
        }
        let expected = bytes.iter().position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20);
        let found = string_stop_with_leads(&bytes);
        prop_assert_eq!(found.map(|(at, _)| at), expected);
        if let (Some((at, leads)), Some(_)) = (found, expected) {
            if bytes[..at].contains(&crate::json::RESERVED_LEAD) {
                prop_assert!(leads, "a lead byte before {} in {:?}", at, bytes);
            }
        }
    }
}

#[test]
fn source_lists_built_without_serde_are_the_values_serde_reads() {
    for list in [
        "[]",
        "[0]",
        "[7]",
        "[3,9,12]",
        "[9007199254740991]",
        "[9007199254740992]",
        "[1,2,3,4]",
        "[1,2,3,4,5]",
        "[5,4,3,2,1,0,9,8,7]",
        "[18446744073709551615]",
        "[18446744073709551616]",
        "[07]",
        "[7.0]",
        "[7e0]",
        "[-1]",
        "[-0]",
        "[ 7 ]",
        "[7,]",
        "[,7]",
        "[[3,5]]",
        "[3,[4,6]]",
        "[\"7\"]",
        "{}",
    ] {
        let line = format!(
            r#"{{"type":"tool/result","seq":20,"time":1,"data":{{}},"sourceEventSeqs":{list}}}"#
        );
        agrees(&line);
        if let Some(built) = plain_seq_list(list) {
            let read: Value = serde_json::from_str(list).unwrap();
            let built = crate::wire::seqs_value(&built);
            assert_eq!(built, read, "{list}");
            assert_eq!(built.to_string(), list, "{list}");
        }
    }
}

#[test]
fn a_plain_append_is_held_without_a_value() {
    let line =
        r#"{"type":"user/message","seq":0,"time":1,"data":{"role":"user"},"surfaceOp":"append"}"#;
    let row = ScannedRow::scan(line).unwrap();
    assert!(row.envelope().append_op && row.envelope().surface_op.is_none());
    assert_eq!(row.envelope().surface_op(), Some(&json!("append")));
    assert!(agrees(line));
}

/// Long strings (past any one word), non-ASCII text, DEL (0x7f, which JSON strings may hold
/// raw) and escapes between long runs are the scanner's: it claims them and agrees with serde.
#[test]
fn long_strings_with_every_allowed_byte_are_claimed() {
    let text = "0123456789abcdefghijk\u{7f}lmnopqrstuvwxyz déjà 数据 \\\"quoted\\\" \\n then a run longer than two words \\t end";
    let line = format!(
        r#"{{"type":"user/message","seq":0,"time":1,"data":{{"id":"m1","role":"user","content":"{text}"}}}}"#
    );
    assert!(agrees(&line), "{line}");
    assert!(ScannedRow::scan(&line).unwrap().is_scanned(), "{line}");
}

/// Pieces of strings for rows with lone surrogates: escapes of lone and paired surrogates,
/// literal characters of the range `json` holds lone surrogates in, and ordinary text.
const STRING_PIECES: &[&str] = &[
    "a",
    "é",
    r"\n",
    r"\ud800",
    r"\uDC00",
    r"\ud83d\ude00",
    r"\udbff\udfff",
    "\u{10F800}",
    "\u{10F7FF}",
];

fn held_string() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(STRING_PIECES), 0..5)
        .prop_map(|pieces| pieces.concat())
}

strata_testkit::proptest! {
    /// Rows whose ids, keys, kinds and texts hold lone surrogates and reserved code points: the
    /// scanner and serde agree, and a view answers every query as `json::parse`'s value does.
    #[test]
    fn rows_with_lone_surrogates_view_as_json_parse_reads_them(
        id in held_string(),
        key in held_string(),
        kind in held_string(),
        text in held_string(),
    ) {
        let data = format!(
            r#"{{"id":"{id}","{key}x":"{text}","content":[{{"type":"text","text":"{text}"}}],"source":{{"kind":"{kind}"}},"role":"user"}}"#
        );
        let line = format!(r#"{{"type":"user/message","seq":0,"time":0,"data":{data}}}"#);
        agrees(&line);
        let value = crate::json::parse(&data).unwrap();
        let view = View::parse(&data, 5).unwrap();
        prop_assert_eq!(describe(&view), describe(&value));
    }
}
