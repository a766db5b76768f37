//! Unit tests of the tool-pairing check on small logs.

use serde_json::{json, Value};

use super::*;
use crate::{RawEvent, SeedOptions, Session, SessionHeader};

/// A log of one turn: a user prompt, an assistant message calling `calls`, then a result for
/// each of `answered`, then `tail` (extra rows, already numbered from the next seq).
fn session(calls: &[&str], answered: &[&str], tail: &[Value]) -> Session {
    let mut rows = vec![
        json!({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}),
        json!({"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}),
        json!({"type":"user/message","seq":2,"time":1,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"u1"},"surfaceOp":"append"}),
    ];
    let blocks: Vec<Value> = calls
        .iter()
        .map(|id| json!({"type":"tool-call","id":id,"name":"read_file","arguments":"{}"}))
        .collect();
    rows.push(json!({"type":"assistant/message","seq":3,"time":2,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":blocks,"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"},"stream":[]},"surfaceOp":"append"}));
    for id in calls {
        let seq = rows.len();
        rows.push(json!({"type":"tool/call","seq":seq,"time":2,"data":{"turn":1,"step":1,"callId":id,"name":"read_file","arguments":"{}"}}));
    }
    for id in answered {
        let seq = rows.len();
        let call_seq = 4 + calls.iter().position(|call| call == id).unwrap_or(0);
        rows.push(json!({"type":"tool/result","seq":seq,"time":3,"data":{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":id},"content":[{"type":"tool-result","toolCallId":id,"content":[{"type":"text","text":"ok"}],"isError":false}],"role":"user","id":format!("r-{id}")}},"sourceEventSeqs":[call_seq],"surfaceOp":"append"}));
    }
    rows.extend(tail.iter().cloned());
    let header = SessionHeader::fresh("pairing", 1).unwrap();
    Session::restore(
        header,
        rows.into_iter().map(RawEvent::from_value),
        SeedOptions::default(),
    )
    .unwrap()
}

fn check(session: &Session) -> Result<(), PairingError> {
    check_tool_pairing(session.derive_messages().iter())
}

#[test]
fn answered_calls_pass() {
    assert_eq!(check(&session(&["c1", "c2"], &["c2", "c1"], &[])), Ok(()));
}

#[test]
fn a_call_without_result_at_the_end_is_missing() {
    let error = check(&session(&["c1", "c2"], &["c1"], &[])).unwrap_err();
    assert_eq!(
        error,
        PairingError::MissingResult {
            call_id: "c2".into(),
            name: "read_file".into(),
            message_id: "a1".into(),
            seq: 3,
            next_seq: None,
        }
    );
    assert_eq!(
        error.to_string(),
        "tool call \"c2\" (read_file) in message \"a1\" at seq 3 has no result (the messages end first)"
    );
}

#[test]
fn a_user_message_before_the_result_is_missing() {
    let tail = [
        json!({"type":"user/message","seq":5,"time":4,"data":{"content":[{"type":"text","text":"and?"}],"source":{"kind":"user"},"role":"user","id":"u2"},"surfaceOp":"append"}),
    ];
    let error = check(&session(&["c1"], &[], &tail)).unwrap_err();
    assert!(
        matches!(
            error,
            PairingError::MissingResult {
                next_seq: Some(5),
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn messages_without_tools_pass() {
    assert_eq!(check(&session(&[], &[], &[])), Ok(()));
}

#[test]
fn a_repaired_open_call_passes() {
    let open = session(&["c1"], &[], &[]);
    let repaired = Session::restore(
        open.header().clone(),
        open.to_raw_events().unwrap().into_iter().take(5),
        SeedOptions::default().repaired(crate::CloseCause::Interrupted),
    )
    .unwrap();
    assert_eq!(check(&repaired), Ok(()));
}
