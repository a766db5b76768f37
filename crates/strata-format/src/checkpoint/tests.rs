//! The checkpoint record format: round trip, and every way a record is set aside.

use serde_json::json;
use strata_core::repair::{OpenCall, TurnState};
use strata_core::synth::{generate, SynthConfig};
use strata_core::{Checkpoint, EventType, Seq};

use super::*;

fn evidence(n_events: u64) -> Evidence {
    Evidence {
        n_events,
        log_bytes: 12_345,
        last_frame: 12_000,
        last_offset: 7,
        last_hash: fnv64_hex(b"last"),
        header_hash: fnv64_hex(b"header"),
        file: Some([1, 2]),
    }
}

fn seqs(values: &[u64]) -> Vec<Seq> {
    values
        .iter()
        .map(|value| Seq::new(*value).unwrap())
        .collect()
}

fn sample() -> Checkpoint {
    Checkpoint {
        n_events: 40,
        nodes: seqs(&[0, 1, 2, 3, 30, 12, 13, 39]),
        replace_generation: 3,
        request_header_seq: Some(Seq::new(4).unwrap()),
        request_context_seq: None,
        last_inherited_marker: Some(9),
        latest: vec![
            (EventType::TurnStart, Seq::new(31).unwrap()),
            (EventType::parse("compaction/start"), Seq::new(29).unwrap()),
        ],
        turn: TurnState {
            turn: Some(Some(json!(7))),
            step: Some(None),
            pending: vec![
                OpenCall {
                    call_id: json!("call-1"),
                    step: Some(json!(null)),
                    call_seq: Some(Seq::new(35).unwrap()),
                },
                OpenCall {
                    call_id: json!("call-2"),
                    step: None,
                    call_seq: None,
                },
            ],
        },
        relations: Some(relations()),
    }
}

/// A relational state with every part non-empty: an open turn and step, a call, a chain,
/// an open compaction, a head, commands, retries, titles and PTC sub-calls.
fn relations() -> strata_core::Relations {
    let mut session =
        strata_core::Session::create(strata_core::SessionHeader::fresh("r", 0).unwrap()).unwrap();
    let rows = [
        json!({"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}),
        json!({"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}),
        json!({"type":"system/message","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"role":"system","content":[],"source":{"kind":"plugin","plugin":"p"},"id":"s"}},"surfaceOp":"append"}),
        json!({"type":"user/message","seq":3,"time":0,"data":{"role":"user","content":[],"source":{"kind":"user"},"id":"u"},"surfaceOp":"append"}),
        json!({"type":"request/header","seq":4,"time":0,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}}),
        json!({"type":"llm/retry","seq":5,"time":0,"data":{"turn":1,"step":1,"provider":"p","policyKey":"k","retry":1,"retryId":"r"}}),
        json!({"type":"command/run","seq":6,"time":0,"data":{"commandId":"c"}}),
        json!({"type":"tool/ptc-dispatch-start","seq":7,"time":0,"data":{"subCallId":"s1","rootCallId":"root","parentCallId":"root","name":"n","arguments":{}}}),
        json!({"type":"assistant/message","seq":8,"time":0,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"c1","name":"read","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a"},"stream":[]},"surfaceOp":"append"}),
        json!({"type":"compaction/start","seq":9,"time":0,"data":{"compactionId":"k","turn":1}}),
    ];
    session
        .extend_restored(rows.into_iter().map(strata_core::RawEvent::from_value))
        .unwrap();
    session.checkpoint().unwrap().relations.unwrap()
}

#[test]
fn checkpoint_record_round_trips() {
    let record = encode("s1", &sample(), &evidence(40));
    let (id, found_evidence, checkpoint) = decode(&record, u64::MAX).unwrap();
    assert_eq!(id, "s1");
    assert_eq!(found_evidence, evidence(40));
    assert_eq!(checkpoint, sample());
    // Runs of consecutive nodes are written as one pair.
    let text = String::from_utf8(record).unwrap();
    assert!(
        text.contains("\"nodes\":[[0,4],[30,1],[12,2],[39,1]]"),
        "{text}"
    );
}

#[test]
fn checkpoint_record_round_trips_a_generated_session() {
    let session = generate(&SynthConfig {
        events: 2_000,
        ..SynthConfig::default()
    })
    .unwrap();
    let checkpoint = session.checkpoint().unwrap();
    let record = encode("synthetic", &checkpoint, &evidence(checkpoint.n_events));
    assert_eq!(decode(&record, u64::MAX).unwrap().2, checkpoint);
}

#[test]
fn torn_checkpoint_records_are_set_aside_at_every_length() {
    let record = encode("s1", &sample(), &evidence(40));
    for len in 0..record.len() {
        let error = decode(&record[..len], u64::MAX).unwrap_err();
        assert!(
            matches!(
                error,
                CheckpointRecordError::Torn { .. } | CheckpointRecordError::Version { .. }
            ),
            "{len}: {error}"
        );
    }
}

#[test]
fn damaged_checkpoint_records_are_set_aside() {
    let record = encode("s1", &sample(), &evidence(40));
    // Any flipped byte of the body changes the checksum.
    let body_start = CHECKPOINT_MAGIC.len() + 1;
    for at in (body_start..record.len() - 18).step_by(7) {
        let mut damaged = record.clone();
        damaged[at] ^= 0x20;
        assert!(decode(&damaged, u64::MAX).is_err(), "byte {at}");
    }
    // Zeroed pages, as a crash may leave them.
    assert!(decode(&vec![0; record.len()], u64::MAX).is_err());
}

#[test]
fn other_versions_are_refused_by_name() {
    let mut record = encode("s1", &sample(), &evidence(40));
    record[CHECKPOINT_MAGIC.len() - 1] = b'2';
    let error = decode(&record, u64::MAX).unwrap_err();
    assert_eq!(
        error,
        CheckpointRecordError::Version {
            found: "strata-checkpoint 2".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "not a version-1 checkpoint record (first line \"strata-checkpoint 2\")"
    );
}

#[test]
fn a_record_claiming_more_nodes_than_events_is_refused() {
    let mut checkpoint = sample();
    checkpoint.nodes = seqs(&[0, 1, 2]);
    let mut record = encode("s1", &checkpoint, &evidence(40));
    // Rewrite the run length and the checksum consistently: a well-formed lie.
    let text = String::from_utf8(record.clone()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let body = lines[1].replace("[[0,3]]", "[[0,4000000000]]");
    let sum = fnv64_hex(body.as_bytes());
    lines[1] = &body;
    lines[2] = &sum;
    record = format!("{}\n", lines.join("\n")).into_bytes();
    let error = decode(&record, u64::MAX).unwrap_err();
    assert!(
        matches!(error, CheckpointRecordError::Shape { .. }),
        "{error}"
    );
}

/// A well-formed record claiming billions of events is refused before its node runs expand:
/// the log bounds what it may cover (found by the `checkpoint` fuzz target: a 1.5 KB record
/// made the decoder allocate tens of gigabytes).
#[test]
fn a_record_covering_more_events_than_the_log_holds_is_refused_before_expanding() {
    let checkpoint = sample();
    let record = encode("s1", &checkpoint, &evidence(40));
    let text = String::from_utf8(record).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let body = lines[1]
        .replace("\"nEvents\":40", "\"nEvents\":9000000000000")
        .replacen("\"nodes\":[", "\"nodes\":[[0,4000000000],", 1);
    assert_ne!(body, lines[1]);
    let sum = fnv64_hex(body.as_bytes());
    lines[1] = &body;
    lines[2] = &sum;
    let record = format!("{}\n", lines.join("\n")).into_bytes();
    let error = decode(&record, 40).unwrap_err();
    assert!(
        matches!(error, CheckpointRecordError::Shape { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("more than the 40"), "{error}");
    assert!(decode(&encode("s1", &checkpoint, &evidence(40)), 40).is_ok());
    assert!(decode(&encode("s1", &checkpoint, &evidence(40)), 39).is_err());
}
