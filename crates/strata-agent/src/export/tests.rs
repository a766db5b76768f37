//! Unit tests of the OpenAI and Anthropic exports on generated and crashed logs.

use serde_json::json;
use strata_core::synth::{generate, SynthConfig};
use strata_core::{RawEvent, SeedOptions, Session, SessionHeader};

use super::*;

fn generated() -> Session {
    // A size whose last turns keep a tool round trip on the surface: each compaction shadows
    // everything before its turn, so some sizes end on turns without tool calls.
    generate(&SynthConfig {
        events: 320,
        compact_every: 3,
        ..SynthConfig::default()
    })
    .unwrap()
}

/// A turn whose assistant message called `c1`, with no result: what a crash leaves.
fn unanswered() -> Session {
    let rows = [
        json!({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}),
        json!({"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}),
        json!({"type":"user/message","seq":2,"time":1,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"u1"},"surfaceOp":"append"}),
        json!({"type":"assistant/message","seq":3,"time":2,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"c1","name":"read_file","arguments":"{\"path\":\"a\"}"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"},"stream":[]},"surfaceOp":"append"}),
    ];
    Session::restore(
        SessionHeader::fresh("crash", 1).unwrap(),
        rows.into_iter().map(RawEvent::from_value),
        SeedOptions::default(),
    )
    .unwrap()
}

#[test]
fn openai_is_the_loops_request() {
    let session = generated();
    let messages = session.derive_messages().to_vec();
    let header = session.request_header().map(|header| &**header);
    let request =
        serde_json::to_value(openai_request(session.id(), header, &messages).unwrap()).unwrap();
    assert_eq!(request["model"], "deepseek-chat");
    let sent = request["messages"].as_array().unwrap();
    assert_eq!(sent[0]["role"], "system");
    assert!(sent.iter().any(|message| message["role"] == "tool"));
    assert!(sent
        .iter()
        .all(|message| message.get("reasoning_content").is_none()));
}

#[test]
fn anthropic_pairs_tool_use_with_tool_result_and_alternates_roles() {
    let session = generated();
    let messages = session.derive_messages().to_vec();
    let header = session.request_header().map(|header| &**header);
    let request = serde_json::to_value(anthropic_request(header, &messages).unwrap()).unwrap();
    assert!(request["system"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(request["max_tokens"], 8192);
    let turns = request["messages"].as_array().unwrap();
    assert!(turns
        .windows(2)
        .all(|pair| pair[0]["role"] != pair[1]["role"]));
    for (index, turn) in turns.iter().enumerate() {
        for block in turn["content"].as_array().unwrap() {
            if block["type"] == "tool_use" {
                assert!(block["input"].is_object());
                let answered = turns[index + 1]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == block["id"]);
                assert!(answered, "{block}");
            }
        }
    }
    assert!(request["tools"][0]["input_schema"].is_object());
}

#[test]
fn an_unanswered_call_is_refused_by_both() {
    let session = unanswered();
    let messages = session.derive_messages().to_vec();
    let openai = openai_request(session.id(), None, &messages).unwrap_err();
    assert!(matches!(
        openai,
        ExportError::Pairing(PairingError::MissingResult { .. })
    ));
    let anthropic = anthropic_request(None, &messages).unwrap_err();
    assert_eq!(
        anthropic.to_string(),
        "the messages cannot be sent: tool call \"c1\" (read_file) in message \"a1\" at seq 3 has no result (the messages end first)"
    );
}
