//! The V3 line codec: header rules and version dispatch (session-core §2.3), range-encoded
//! sources (§10.1), byte-identical re-encoding, and the streaming reader's line accounting.

use proptest::prelude::*;
use serde_json::json;
use strata_core::{HeaderSpec, Rule};

use super::*;

const HEADER: &str = r#"{"type":"session","version":3,"id":"s-1","createdAt":5,"isSeeded":false,"delegationDepth":0}"#;

fn header_err(line: &str) -> CodecError {
    decode_header_line(line.as_bytes(), &Location::line(1)).unwrap_err()
}

#[test]
fn header_round_trips_byte_identical_with_every_optional_key() {
    let line = r#"{"type":"session","version":3,"id":"a/b ü","createdAt":1700000000000,"isSeeded":true,"delegationDepth":2,"cwd":"/w","parentSession":"p","origin":"subagent","agentPreset":"minimal"}"#;
    let header = decode_header_line(line.as_bytes(), &Location::line(1)).unwrap();
    assert_eq!(header.id(), "a/b ü");
    assert_eq!(header.delegation_depth(), 2);
    let mut out = Vec::new();
    encode_header_line(&header, &mut out).unwrap();
    assert_eq!(out, format!("{line}\n").into_bytes());
}

#[test]
fn header_built_by_core_encodes_in_dsh_key_order() {
    let header = SessionHeader::new(HeaderSpec {
        id: "x".into(),
        created_at: 9,
        cwd: Some("/tmp".into()),
        ..HeaderSpec::default()
    })
    .unwrap();
    let mut out = Vec::new();
    encode_header_line(&header, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"createdAt\":9,\"isSeeded\":false,\"delegationDepth\":0,\"cwd\":\"/tmp\"}\n"
    );
}

#[test]
fn newer_version_is_refused_before_shape_checks_with_upgrade_text() {
    // Unknown keys and a wrong type would be corruption in V4; v5 must still say "upgrade".
    let error = header_err(r#"{"type":"nope","version":5,"id":"s","extra":1}"#);
    assert!(matches!(error, CodecError::NewerVersion { found: 5, .. }));
    assert_eq!(
        error.to_string(),
        "line 1: session \"s\" uses log format v5, but this harness reads up to v4: the log was written by a newer harness — upgrade the harness to open it"
    );
    assert!(error.is_unsupported_version());
}

#[test]
fn v4_headers_decode_and_encode_in_their_own_key_order() {
    // dsh's V4 writer order (docs/format-v4.md §1): cwd and parentSession before isSeeded.
    let line = r#"{"type":"session","version":4,"id":"s","createdAt":1,"cwd":"/a","parentSession":"p","isSeeded":false,"origin":"subagent","delegationDepth":1,"agentPreset":"x"}"#;
    let header = decode_header_line(line.as_bytes(), &Location::line(1)).unwrap();
    assert_eq!(header.generation(), Generation::V4);
    let mut out = Vec::new();
    encode_header_line(&header, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), format!("{line}\n"));
    let built = SessionHeader::new_in(
        HeaderSpec {
            id: "s".into(),
            created_at: 1,
            cwd: Some("/a".into()),
            parent_session: Some("p".into()),
            origin: Some("subagent".into()),
            delegation_depth: 1,
            agent_preset: Some("x".into()),
            ..HeaderSpec::default()
        },
        Generation::V4,
    )
    .unwrap();
    let mut out = Vec::new();
    encode_header_line(&built, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), format!("{line}\n"));
    // The logical V4 header has an exact key set: a V3 header's extra key is refused.
    let extra = header_err(
        r#"{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0,"extension":{}}"#,
    );
    assert!(matches!(extra, CodecError::NotHeader { .. }), "{extra}");
}

#[test]
fn older_versions_are_refused_with_direction_aware_text() {
    for version in 0..3 {
        let error = header_err(&format!(
            r#"{{"type":"session","version":{version},"id":"old","createdAt":0,"seedLength":3}}"#
        ));
        assert!(matches!(error, CodecError::OlderVersion { found, .. } if found == version));
        assert!(error.to_string().ends_with(&format!(
            "session \"old\" uses log format v{version}, older than the supported v3, and this build ships no upgrade path for it"
        )));
    }
}

#[test]
fn unknown_missing_and_retired_keys_are_refused() {
    let unknown = header_err(
        r#"{"type":"session","version":3,"id":"s","createdAt":0,"isSeeded":false,"delegationDepth":0,"extension":{}}"#,
    );
    assert!(
        matches!(&unknown, CodecError::NotHeader { detail, .. } if detail == "unknown key \"extension\""),
        "{unknown}"
    );
    let missing =
        header_err(r#"{"type":"session","version":3,"id":"s","createdAt":0,"isSeeded":false}"#);
    assert!(
        matches!(&missing, CodecError::NotHeader { detail, .. } if detail.contains("delegationDepth"))
    );
    for field in RETIRED_HEADER_KEYS {
        let retired = header_err(&format!(
            r#"{{"type":"session","version":3,"id":"s","createdAt":0,"isSeeded":false,"delegationDepth":0,"{field}":"x"}}"#
        ));
        assert!(matches!(&retired, CodecError::RetiredField { field: f, .. } if f == field));
    }
    let not_session = header_err(r#"{"type":"turn/start","seq":0,"time":0,"data":{}}"#);
    assert!(matches!(not_session, CodecError::NotHeader { .. }));
    let not_json = header_err("{\"type\":");
    assert!(matches!(not_json, CodecError::NotHeader { .. }));
}

#[test]
fn header_field_rules_come_from_the_core_with_rule_ids() {
    let error = header_err(
        r#"{"type":"session","version":3,"id":"s","createdAt":-0,"isSeeded":false,"delegationDepth":0}"#,
    );
    match error {
        CodecError::InvalidHeader { source, .. } => assert_eq!(source.rule, Rule::HeaderInvalid),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn event_line_expands_ranges_bounded_by_its_seq() {
    let line = br#"{"type":"user/message","seq":9,"time":0,"data":{},"sourceEventSeqs":[1,[3,5],7],"surfaceOp":"append"}"#;
    let raw = decode_event_line(line, &Location::line(11)).unwrap();
    assert_eq!(
        raw.source_event_seqs().as_deref(),
        Some(&json!([1, 3, 4, 5, 7]))
    );

    let too_long = br#"{"type":"user/message","seq":2,"time":0,"data":{},"sourceEventSeqs":[[0,5]],"surfaceOp":"append"}"#;
    let error = decode_event_line(too_long, &Location::line(4)).unwrap_err();
    assert!(matches!(
        &error,
        CodecError::Sources { location, source: RangeError::RangeTooLong { .. } }
            if location.line == 4 && location.seq == Some(2)
    ));
    assert!(error
        .to_string()
        .starts_with("line 4 (seq 2): sourceEventSeqs range exceeds"));
}

#[test]
fn opaque_ignorable_metadata_is_kept_verbatim() {
    let line = br#"{"type":"x/y","seq":5,"time":0,"data":null,"sourceEventSeqs":[[0,3]],"ignorable":true}"#;
    let raw = decode_event_line(line, &Location::line(7)).unwrap();
    assert_eq!(raw.source_event_seqs().as_deref(), Some(&json!([[0, 3]])));
}

#[test]
fn range_writer_matches_the_value_encoder() {
    let cases: &[&[u64]] = &[
        &[],
        &[1],
        &[1, 2],
        &[1, 2, 3],
        &[1, 3, 4, 5, 7],
        &[1, 3, 4, 7],
        &[3, 2],
        &[0, 1, 2, 3, 9, 10, 11],
        &[5, 6, 7, 6, 7, 8],
    ];
    for case in cases {
        let seqs: Vec<Seq> = case.iter().map(|&s| Seq::new(s).unwrap()).collect();
        let mut out = Vec::new();
        write_range_sources(&seqs, &mut out);
        let expected = crate::ranges::encode_source_seqs(case);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected.to_string(),
            "{case:?}"
        );
    }
}

#[test]
fn reader_numbers_lines_and_reports_a_torn_tail() {
    let log = format!(
        "{HEADER}\n{}\n{}\n{{\"type\":\"tu",
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#
    );
    // Tiny chunks exercise records straddling reads.
    let options = ReaderOptions {
        chunk_len: 7,
        ..ReaderOptions::default()
    };
    let mut reader = JsonlReader::new(log.as_bytes(), options).unwrap();
    let rows: Vec<EventLine> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(rows.iter().map(|row| row.line).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(rows[0].offset, HEADER.len() as u64 + 1);
    assert_eq!(rows[1].end_offset, reader.committed_offset());
    let torn = reader.torn_tail().unwrap();
    assert_eq!(torn.line, 4);
    assert_eq!(torn.offset, reader.committed_offset());
    assert_eq!(torn.len, 11);
}

#[test]
fn reader_names_file_line_and_expected_seq_of_a_bad_line_and_continues() {
    let log = format!(
        "{HEADER}\n{}\nnot json\n{}\n",
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#
    );
    let options = ReaderOptions {
        file: Some(PathBuf::from("/logs/s.jsonl")),
        ..ReaderOptions::default()
    };
    let items: Vec<_> = JsonlReader::new(log.as_bytes(), options).unwrap().collect();
    assert_eq!(items.len(), 3);
    let error = items[1].as_ref().unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("/logs/s.jsonl: line 3 (seq 1): not a JSON event"),
        "{error}"
    );
    assert_eq!(items[2].as_ref().unwrap().line, 4);
}

#[test]
fn reader_refuses_an_oversized_line_without_buffering_it() {
    let log = format!("{HEADER}\n{}\n", "x".repeat(5000));
    let options = ReaderOptions {
        max_record_len: 1024,
        chunk_len: 256,
        ..ReaderOptions::default()
    };
    let items: Vec<_> = JsonlReader::new(log.as_bytes(), options).unwrap().collect();
    assert_eq!(items.len(), 1);
    assert!(matches!(
        items[0].as_ref().unwrap_err(),
        CodecError::TooLarge { location, limit: 1024, .. } if location.line == 2
    ));
}

#[test]
fn empty_stream_and_unterminated_header_have_no_header() {
    for log in ["", HEADER] {
        let error = JsonlReader::new(log.as_bytes(), ReaderOptions::default())
            .err()
            .unwrap();
        assert!(matches!(error, CodecError::MissingHeader { .. }));
    }
}

fn valid_lines() -> Vec<String> {
    vec![
        HEADER.to_owned(),
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.to_owned(),
        r#"{"type":"user/message","seq":1,"time":2,"data":{"content":[{"type":"text","text":"h\u00e9"}],"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append"}"#.to_owned(),
        r#"{"type":"user/message","seq":5,"time":2,"data":{},"sourceEventSeqs":[0,[1,3]],"surfaceOp":{"op":"replace","startSeq":1,"endSeq":1}}"#.to_owned(),
    ]
}

strata_testkit::proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random bytes never panic: the reader yields rows or typed errors naming a line.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut log = format!("{HEADER}\n").into_bytes();
        log.extend_from_slice(&bytes);
        let reader = JsonlReader::new(&log[..], ReaderOptions { chunk_len: 13, ..ReaderOptions::default() });
        for item in reader.unwrap() {
            if let Err(error) = item {
                prop_assert!(error.line().is_some_and(|line| line >= 2), "{error}");
            }
        }
        let _ = decode_header_line(&bytes, &Location::line(1));
    }

    /// Mutating one byte of a valid log never panics; errors name the mutated line or later.
    #[test]
    fn mutated_lines_never_panic(line_idx in 0usize..4, pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut lines = valid_lines();
        let mut bytes = lines[line_idx].clone().into_bytes();
        let at = pos.index(bytes.len());
        bytes[at] = byte;
        lines[line_idx] = String::from_utf8_lossy(&bytes).into_owned();
        let log = lines.join("\n") + "\n";
        match JsonlReader::new(log.as_bytes(), ReaderOptions::default()) {
            Ok(reader) => {
                for item in reader {
                    if let Err(error) = item {
                        prop_assert!(error.line().is_some_and(|line| line >= 2), "{error}");
                    }
                }
            }
            Err(error) => prop_assert!(line_idx == 0 || byte == b'\n', "{error}"),
        }
    }
}

/// The text path (SIMD UTF-8 check, then a `str` parse) and the byte path give the same row,
/// or the same error, for valid lines, lines with bad UTF-8 inside or outside strings, and
/// escapes serde must refuse either way.
#[test]
fn decode_event_line_text_and_byte_paths_agree() {
    let location = Location {
        file: None,
        line: 2,
        seq: None,
    };
    let valid = br#"{"type":"user/message","seq":0,"time":1,"data":{"message":{"id":"m","role":"user","content":[{"type":"text","text":"h\u00e9 \u6570"}]}},"surfaceOp":"append"}"#;
    let mut bad_in_string = valid.to_vec();
    let at = bad_in_string.iter().position(|b| *b == b'h').unwrap();
    bad_in_string[at] = 0xFF;
    let mut bad_outside = valid.to_vec();
    bad_outside.insert(1, 0xC3);
    let surrogate = br#"{"type":"user/message","seq":0,"time":1,"data":{"t":"\ud800"}}"#;
    let truncated = &valid[..valid.len() - 3];
    for line in [
        valid.as_slice(),
        &bad_in_string,
        &bad_outside,
        surrogate.as_slice(),
        truncated,
    ] {
        let bytes = RawEvent::from_json_slice(line)
            .map(|raw| raw.to_value())
            .map_err(|error| error.to_string());
        let decoded = decode_event_line(line, &location)
            .map(|raw| raw.to_value())
            .map_err(|error| match error {
                CodecError::Json { detail, .. } => detail,
                other => other.to_string(),
            });
        assert_eq!(decoded, bytes, "{}", String::from_utf8_lossy(line));
    }
}
