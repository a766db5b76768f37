//! Request reconstruction over a long scripted session: retries, tool round trips with
//! reasoning, tool errors, a token-limit stop, a second turn. Every request the model received
//! equals the request rebuilt from the stored log prefix before its answer or attempt.

use std::sync::Arc;

use serde_json::json;
use strata_agent::agent::{ReasoningReplay, TurnOutcome};
use strata_agent::llm::ScriptedModel;
use tokio_util::sync::CancellationToken;

use crate::support::{config, derived, field, of_type, reconstructed_requests, Fixture};

const SCRIPT: &str = r#"{"responses": [
  {"events": [], "error": {"code": "SERVER_ERROR", "message": "busy"}},
  {"events": [
    {"type": "reasoning_delta", "text": "Need files."},
    {"type": "tool_call_delta", "index": 0, "id": "c1", "name": "list_dir", "arguments_delta": "{}"},
    {"type": "tool_call_delta", "index": 1, "id": "c2", "name": "nope", "arguments_delta": "{}"},
    {"type": "tool_call_delta", "index": 2, "id": "c3", "name": "read_file", "arguments_delta": "{\"path\": "},
    {"type": "usage", "prompt_tokens": 10, "completion_tokens": 5},
    {"type": "finish", "reason": "tool_calls"}
  ]},
  {"events": [
    {"type": "reasoning_delta", "text": "One more."},
    {"type": "tool_call_delta", "index": 0, "id": "c4", "name": "grep", "arguments_delta": "{\"pattern\": \"milk\"}"},
    {"type": "finish", "reason": "tool_calls"}
  ]},
  {"events": [
    {"type": "text_delta", "text": "Notes mention milk."},
    {"type": "finish", "reason": "stop"}
  ]},
  {"events": [
    {"type": "text_delta", "text": "Writing"},
    {"type": "tool_call_delta", "index": 0, "id": "c5", "name": "read_file", "arguments_delta": "{\"pa"},
    {"type": "finish", "reason": "length"}
  ]}
]}"#;

#[tokio::test]
async fn every_request_equals_what_the_log_rebuilds() {
    let fixture = Fixture::new();
    std::fs::write(fixture.work_dir.path().join("notes.txt"), "milk\n").unwrap();
    let model = Arc::new(ScriptedModel::from_json_str(SCRIPT).unwrap());
    let mut config = config("deepseek-reasoner");
    config.system_prompt = "You are a coding agent.".into();
    let mut agent = fixture.agent("s", model.clone(), config);
    let cancel = CancellationToken::new();
    let first = agent.run_turn("Find milk", &cancel).await.unwrap();
    assert_eq!((first.outcome, first.n_steps), (TurnOutcome::Completed, 3));
    let second = agent.run_turn("Write it down", &cancel).await.unwrap();
    assert_eq!(second.outcome, TurnOutcome::MaxTokens);
    agent.close().unwrap();

    let session = fixture.load("s");
    assert_eq!(of_type(&session, "assistant/attempt").len(), 1);
    let results = of_type(&session, "tool/result");
    let codes: Vec<_> = results
        .iter()
        .map(|result| result.data().get("error").map(|e| e["code"].clone()))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some(json!("UNKNOWN_TOOL")),
            Some(json!("INVALID_ARGUMENTS")),
            None,
            Some(json!("NOT_RUN_TRUNCATED"))
        ]
    );
    // The truncated call is recorded and answered, citing its own tool/call.
    let calls = of_type(&session, "tool/call");
    assert_eq!(results[4].sources().map(|s| s[0]), Some(calls[4].seq()));
    assert_eq!(field(calls[4], &["arguments"]), "{\"pa");
    assert_eq!(
        field(of_type(&session, "turn/end")[1], &["reason"]),
        &json!({"kind": "max-tokens"})
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        requests,
        reconstructed_requests(&fixture, "s", ReasoningReplay::default())
    );
    // Reasoning is replayed within the exchange and dropped after the next user message.
    let third = serde_json::to_value(&requests[3]).unwrap();
    assert_eq!(third["messages"][2]["reasoning_content"], "Need files.");
    let fifth = serde_json::to_value(&requests[4]).unwrap();
    assert_eq!(fifth["messages"][2].get("reasoning_content"), None);
    assert_eq!(
        derived(&session).last(),
        Some(&(
            "user".into(),
            "tool:Error: tool call not run: the model's output was cut by its token limit".into()
        ))
    );
    fixture.assert_logs_accepted();
}
