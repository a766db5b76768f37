//! The older-generation reader: detection, row expansion with line numbers, v2 range decoding,
//! zstd artifacts, torn tails and error locations.

use std::io::Write;

use serde_json::{json, Value};

use super::*;
use strata_format::zstd_frame::{FrameCompressor, DEFAULT_LEVEL};

const V0_HEADER: &str =
    r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#;

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

fn read(path: &Path) -> (Vec<LogRecord>, Option<ReadError>, LegacyReader) {
    let mut reader = LegacyReader::open(path).unwrap();
    let mut records = Vec::new();
    let mut error = None;
    for item in reader.by_ref() {
        match item {
            Ok(record) => records.push(record),
            Err(e) => error = Some(e),
        }
    }
    (records, error, reader)
}

#[test]
fn v0_rows_expand_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{V0_HEADER}\n{}\n{}\n",
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"text-chunks","seq0":1,"time0":5,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#
    );
    let path = write(&dir, "session.jsonl", body.as_bytes());
    let (records, error, reader) = read(&path);
    assert!(error.is_none());
    assert_eq!(reader.generation(), Generation::V0);
    let lines: Vec<u64> = records.iter().map(|r| r.line).collect();
    assert_eq!(lines, [2, 3, 3, 3]);
    assert_eq!(records[3].event["time"], json!(7));
    assert!(!reader.is_torn());
}

#[test]
fn malformed_row_names_generation_line_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{V0_HEADER}\n{}\n{}\n",
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"text-chunks","seq0":1,"time0":5,"data":{"turn":1,"step":1,"index":0,"dt":[2],"texts":["o","k","!"]}}"#
    );
    let path = write(&dir, "session.jsonl", body.as_bytes());
    let (records, error, _) = read(&path);
    assert_eq!(records.len(), 1);
    let error = error.unwrap();
    assert_eq!(error.rule_id(), "malformed-chunk-row");
    assert!(
        error.to_string().ends_with(
            "session.jsonl: v0 line 3 (seq 1): corrupt record: malformed text-chunks storage row: dt length 1 does not match 3 members"
        ),
        "{error}"
    );
}

#[test]
fn v2_sources_are_range_decoded_and_rows_are_not_expanded() {
    let dir = tempfile::tempdir().unwrap();
    let header = r#"{"type":"session","version":2,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;
    let body = format!(
        "{header}\n{}\n{}\n",
        r#"{"type":"user/message","seq":4,"time":1,"data":{},"sourceEventSeqs":[[0,3]],"surfaceOp":"append"}"#,
        r#"{"type":"text-chunks","seq0":1,"time0":5,"data":{}}"#
    );
    let path = write(&dir, "session.v2.jsonl", body.as_bytes());
    let (records, error, reader) = read(&path);
    assert!(error.is_none());
    assert_eq!(reader.generation(), Generation::V2);
    assert_eq!(records[0].event["sourceEventSeqs"], json!([0, 1, 2, 3]));
    assert_eq!(records[1].event["type"], json!("text-chunks"));
}

#[test]
fn zstd_artifacts_stream_and_report_torn_tails() {
    let dir = tempfile::tempdir().unwrap();
    let mut compressor = FrameCompressor::new(DEFAULT_LEVEL).unwrap();
    let mut bytes = compressor
        .frame(format!("{V0_HEADER}\n").as_bytes())
        .unwrap();
    bytes.extend(
        compressor
            .frame(b"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n{\"type\":\"tu")
            .unwrap(),
    );
    let path = write(&dir, "session.jsonl.zstd", &bytes);
    let (records, error, reader) = read(&path);
    // A complete frame ending mid-record is not dsh's framing, but an older log is only
    // read, in any framing: the frames' plaintext is one stream, whose unterminated end is a
    // torn tail.
    assert_eq!(records.len(), 1);
    assert!(error.is_none(), "{error:?}");
    assert!(reader.torn_tail().is_some());
    drop(reader);

    let mut bytes = compressor
        .frame(format!("{V0_HEADER}\n").as_bytes())
        .unwrap();
    let batch = compressor
        .frame(b"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n")
        .unwrap();
    bytes.extend_from_slice(&batch);
    let cut = bytes.len() - 3;
    let path = write(&dir, "session.jsonl.zstd", &bytes[..cut]);
    let (_, error, _) = read(&path);
    assert!(error.is_none());
}

#[test]
fn newer_and_v3_logs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "session.jsonl",
        b"{\"type\":\"session\",\"version\":9,\"id\":\"n\"}\n",
    );
    let error = LegacyReader::open(&path).err().unwrap();
    assert!(error.to_string().contains("uses log format v9"), "{error}");
    let path = write(
        &dir,
        "session.v3.jsonl",
        b"{\"type\":\"session\",\"version\":3,\"id\":\"n\",\"createdAt\":0,\"isSeeded\":false,\"delegationDepth\":0}\n",
    );
    assert_eq!(sniff(&path).unwrap().0, Generation::V3);
    assert!(LegacyReader::open(&path).is_err());
}

#[test]
fn bad_json_line_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{V0_HEADER}\n{{nope\n");
    let path = write(&dir, "session.jsonl", body.as_bytes());
    let (_, error, _) = read(&path);
    let error = error.unwrap();
    assert_eq!(error.line(), Some(2));
    assert_eq!(error.at().unwrap().seq, Some(0));
    let _: Value = json!(null);
}
