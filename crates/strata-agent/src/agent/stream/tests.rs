//! The recorder against hand-written expectations: runs compact into §4.6 records, blocks are
//! derived from delta kinds, failures drop undispatched calls.

use serde_json::json;

use super::*;
use crate::llm::{HttpFailure, StreamEvent, Usage};

fn text(text: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: text.into() }
}

fn reasoning(text: &str) -> StreamEvent {
    StreamEvent::ReasoningDelta { text: text.into() }
}

fn call(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        id: id.map(Into::into),
        name: name.map(Into::into),
        arguments_delta: args.into(),
    }
}

#[test]
fn text_deltas_compact_into_one_record_with_time_gaps() {
    let mut recorder = StreamRecorder::new();
    recorder.push(text("He"), 1000);
    recorder.push(text("llo"), 1000);
    recorder.push(text(","), 1003);
    recorder.push(text(" world"), 1010);
    let settled = recorder.settle(&FinishReason::Stop, 1012);
    assert_eq!(
        settled.content,
        vec![json!({"type": "text", "text": "Hello, world"})]
    );
    assert_eq!(
        settled.stream,
        vec![
            json!({"type": "chunk", "time": 1000, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}),
            json!({"type": "text-chunks", "time0": 1000, "index": 0, "dt": [0, 3, 7], "texts": ["He", "llo", ",", " world"]}),
            json!({"type": "chunk", "time": 1012, "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello, world"}}}),
            json!({"type": "chunk", "time": 1012, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}),
        ]
    );
    assert!(settled.tool_calls.is_empty());
    assert_eq!(settled.usage, None);
}

#[test]
fn reasoning_then_text_are_two_blocks_and_keys_keep_dsh_order() {
    let mut recorder = StreamRecorder::new();
    recorder.push(reasoning("Think"), 5);
    recorder.push(reasoning("ing."), 6);
    recorder.push(text("Answer."), 9);
    let settled = recorder.settle(&FinishReason::Stop, 9);
    assert_eq!(
        settled.content,
        vec![
            json!({"type": "reasoning", "text": "Thinking."}),
            json!({"type": "text", "text": "Answer."}),
        ]
    );
    let records: Vec<String> = settled
        .stream
        .iter()
        .map(|record| record.to_string())
        .collect();
    assert_eq!(
        records[1],
        r#"{"type":"reasoning-chunks","time0":5,"index":0,"dt":[1],"texts":["Think","ing."]}"#
    );
    assert_eq!(
        records[3],
        r#"{"type":"text-chunks","time0":9,"index":1,"dt":[],"texts":["Answer."]}"#
    );
}

#[test]
fn parallel_tool_calls_are_blocks_in_first_seen_order_with_ids_carried_forward() {
    let mut recorder = StreamRecorder::new();
    recorder.push(text("Let me look."), 1);
    recorder.push(call(0, Some("call_a"), Some("list_dir"), ""), 2);
    recorder.push(call(0, None, None, "{\"path\":"), 3);
    recorder.push(call(1, Some("call_b"), Some("read_file"), "{\"pa"), 4);
    recorder.push(call(0, None, None, " \"src\"}"), 5);
    recorder.push(call(0, None, None, ""), 5);
    recorder.push(call(1, None, None, "th\": \"x\"}"), 7);
    recorder.push(
        StreamEvent::Usage(Usage {
            prompt_tokens: 100,
            completion_tokens: 20,
            prompt_cache_hit_tokens: Some(60),
            prompt_cache_miss_tokens: Some(40),
            reasoning_tokens: None,
        }),
        8,
    );
    let settled = recorder.settle(&FinishReason::ToolCalls, 9);
    assert_eq!(
        settled.tool_calls,
        vec![
            CallBlock {
                id: "call_a".into(),
                name: "list_dir".into(),
                arguments: "{\"path\": \"src\"}".into()
            },
            CallBlock {
                id: "call_b".into(),
                name: "read_file".into(),
                arguments: "{\"path\": \"x\"}".into()
            },
        ]
    );
    assert_eq!(
        settled.content[1],
        json!({"type": "tool-call", "id": "call_a", "name": "list_dir", "arguments": "{\"path\": \"src\"}"})
    );
    let tool_records: Vec<&Value> = settled
        .stream
        .iter()
        .filter(|record| record["type"] == "tool-call-chunks")
        .collect();
    assert_eq!(
        tool_records,
        vec![
            &json!({"type": "tool-call-chunks", "time0": 2, "index": 1, "dt": [], "id": "call_a", "name": "list_dir", "args": [""]}),
            &json!({"type": "tool-call-chunks", "time0": 3, "index": 1, "dt": [], "id": "call_a", "args": ["{\"path\":"]}),
            &json!({"type": "tool-call-chunks", "time0": 4, "index": 2, "dt": [], "id": "call_b", "name": "read_file", "args": ["{\"pa"]}),
            &json!({"type": "tool-call-chunks", "time0": 5, "index": 1, "dt": [0], "id": "call_a", "args": [" \"src\"}", ""]}),
            &json!({"type": "tool-call-chunks", "time0": 7, "index": 2, "dt": [], "id": "call_b", "args": ["th\": \"x\"}"]}),
        ]
    );
    assert_eq!(
        settled.usage,
        Some(json!({"inputTokens": 40, "outputTokens": 20, "cacheReadTokens": 60}))
    );
    let last = settled.stream.last().map(Value::to_string);
    assert_eq!(
        last.as_deref(),
        Some(
            r#"{"type":"chunk","time":9,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}"#
        )
    );
}

#[test]
fn every_delta_member_is_kept_in_the_stream() {
    let mut recorder = StreamRecorder::new();
    let pieces = ["a", "b", "c", "d"];
    for (time, piece) in pieces.iter().enumerate() {
        recorder.push(reasoning(piece), time as i64);
        recorder.push(text(piece), time as i64);
    }
    assert_eq!(recorder.n_events(), 8);
    let settled = recorder.settle(&FinishReason::Stop, 10);
    let members: usize = settled
        .stream
        .iter()
        .filter_map(|record| record.get("texts").and_then(Value::as_array))
        .map(Vec::len)
        .sum();
    assert_eq!(members, 8);
    // Alternating kinds open a new block at each switch.
    assert_eq!(settled.content.len(), 8);
}

#[test]
fn cancellation_keeps_the_visible_prefix_and_drops_undispatched_calls() {
    let mut recorder = StreamRecorder::new();
    recorder.push(reasoning("Plan"), 1);
    recorder.push(text("Partial"), 2);
    recorder.push(call(0, Some("call_x"), Some("grep"), "{\"pat"), 3);
    assert!(recorder.has_visible());
    let settled = recorder.fail(&LlmError::Cancelled, 4);
    assert_eq!(
        settled.content,
        vec![
            json!({"type": "reasoning", "text": "Plan"}),
            json!({"type": "text", "text": "Partial"}),
        ]
    );
    assert!(settled.tool_calls.is_empty());
    assert_eq!(
        settled.stream.last(),
        Some(
            &json!({"type": "chunk", "time": 4, "chunk": {"type": "finish", "reason": {"kind": "aborted", "failure": {"message": "cancelled", "code": "CANCELLED"}}}})
        )
    );
}

#[test]
fn a_failed_attempt_records_the_failure_with_status_and_retry_hint() {
    let error = LlmError::RateLimited(HttpFailure {
        status: 429,
        message: "slow down".into(),
        retry_after_ms: Some(250),
        request_id: Some("req-1".into()),
    });
    let recorder = StreamRecorder::new();
    assert!(!recorder.has_visible());
    let settled = recorder.fail(&error, 7);
    assert_eq!(
        settled.stream,
        vec![
            json!({"type": "chunk", "time": 7, "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {
                "message": "rate limited: http 429 (request id req-1), retry after 250 ms: slow down",
                "code": "RATE_LIMITED",
                "status": 429,
                "providerRetryAfterMs": 250,
                "requestId": "req-1"
            }}}})
        ]
    );
    assert!(settled.content.is_empty());
}

#[test]
fn a_call_without_an_id_is_kept_raw_and_given_a_block_id() {
    let mut recorder = StreamRecorder::new();
    recorder.push(call(3, None, Some("list_dir"), "{}"), 1);
    let settled = recorder.settle(&FinishReason::ToolCalls, 2);
    assert_eq!(
        settled.stream[1],
        json!({"type": "chunk", "time": 1, "chunk": {"type": "tool-call-delta", "index": 0, "name": "list_dir", "argumentsDelta": "{}"}})
    );
    assert_eq!(settled.tool_calls[0].id, "call-0");
}

#[test]
fn token_limit_and_unknown_reasons_map_to_dsh_kinds() {
    let settled = StreamRecorder::new().settle(&FinishReason::Length, 1);
    assert_eq!(
        settled.stream[0]["chunk"]["reason"],
        json!({"kind": "max-tokens"})
    );
    let settled = StreamRecorder::new().settle(
        &FinishReason::Other("insufficient_system_resource".into()),
        1,
    );
    assert_eq!(
        settled.stream[0]["chunk"]["reason"],
        json!({"kind": "other", "providerReason": "insufficient_system_resource"})
    );
}
