//! Unit tests for script loading and validation.

use super::*;

fn load_error(json: &str) -> String {
    ScriptedModel::from_json_str(json).unwrap_err().to_string()
}

#[test]
fn from_json_str_reads_every_event_type_and_error() {
    let model = ScriptedModel::from_json_str(
        r#"{"responses": [
            {"events": [
                {"type": "reasoning_delta", "text": "r", "delay_ms": 7},
                {"type": "text_delta", "text": "t"},
                {"type": "tool_call_delta", "index": 1, "id": "c", "name": "n", "arguments_delta": "{}"},
                {"type": "tool_call_delta", "index": 1},
                {"type": "usage", "prompt_tokens": 1, "completion_tokens": 2, "reasoning_tokens": 1},
                {"type": "finish", "reason": "tool_calls"}
            ]},
            {"error": {"code": "RATE_LIMITED", "retry_after_ms": 30, "request_id": "r1", "delay_ms": 3}}
        ]}"#,
    )
    .unwrap();
    let first = ScriptedResponse {
        events: vec![
            (
                Duration::from_millis(7),
                StreamEvent::ReasoningDelta { text: "r".into() },
            ),
            (Duration::ZERO, StreamEvent::TextDelta { text: "t".into() }),
            (
                Duration::ZERO,
                StreamEvent::ToolCallDelta {
                    index: 1,
                    id: Some("c".into()),
                    name: Some("n".into()),
                    arguments_delta: "{}".into(),
                },
            ),
            (
                Duration::ZERO,
                StreamEvent::ToolCallDelta {
                    index: 1,
                    id: None,
                    name: None,
                    arguments_delta: String::new(),
                },
            ),
            (
                Duration::ZERO,
                StreamEvent::Usage(Usage {
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    reasoning_tokens: Some(1),
                    ..Usage::default()
                }),
            ),
            (
                Duration::ZERO,
                StreamEvent::Finish {
                    reason: FinishReason::ToolCalls,
                },
            ),
        ],
        error: None,
    };
    let second = ScriptedResponse {
        events: Vec::new(),
        error: Some((
            Duration::from_millis(3),
            LlmError::RateLimited(HttpFailure {
                status: 429,
                message: String::new(),
                retry_after_ms: Some(30),
                request_id: Some("r1".into()),
            }),
        )),
    };
    assert_eq!(model.responses, vec![first, second]);
}

#[test]
fn from_json_str_rejects_malformed_scripts() {
    assert!(load_error(r#"{"responses": [], "extra": 1}"#).contains("unknown field `extra`"));
    assert!(
        load_error(r#"{"responses": [{"events": [{"type": "text"}]}]}"#)
            .contains("unknown variant `text`")
    );
    assert_eq!(
        load_error(
            r#"{"responses": [{"events": [{"type": "finish", "reason": "stop", "text": "x"}]}]}"#
        ),
        "script response 0, event 0: field text does not belong to a finish event"
    );
    assert_eq!(
        load_error(r#"{"responses": [{"events": [{"type": "usage", "prompt_tokens": 1}]}]}"#),
        "script response 0, event 0: usage event lacks completion_tokens"
    );
    assert_eq!(
        load_error(r#"{"responses": [{"events": [{"type": "text_delta", "text": "a"}]}]}"#),
        "script response 0: ends with neither a finish event nor an error"
    );
    assert_eq!(
        load_error(
            r#"{"responses": [{"events": [{"type": "finish", "reason": "stop"}, {"type": "text_delta", "text": "a"}]}]}"#
        ),
        "script response 0, event 0: finish is not the last event"
    );
    assert_eq!(
        load_error(
            r#"{"responses": [{"events": [{"type": "text_delta", "text": ""}], "error": {"code": "TRANSPORT"}}]}"#
        ),
        "script response 0, event 0: delta text is empty"
    );
    assert_eq!(
        load_error(r#"{"responses": [{"error": {"code": "NOPE"}}]}"#),
        "script response 0: unknown error code \"NOPE\""
    );
}

#[test]
fn from_json_str_maps_every_error_code() {
    for code in [
        "RATE_LIMITED",
        "SERVER_ERROR",
        "AUTH",
        "BAD_REQUEST",
        "CONTEXT_WINDOW_EXCEEDED",
        "TRANSPORT",
        "TIMEOUT_CONNECT",
        "TIMEOUT_FIRST_BYTE",
        "TIMEOUT_IDLE",
        "STREAM_DISCONNECTED",
        "PROTOCOL",
        "EMPTY_RESPONSE",
        "CANCELLED",
    ] {
        let json = format!(r#"{{"responses": [{{"error": {{"code": "{code}"}}}}]}}"#);
        let model = ScriptedModel::from_json_str(&json).unwrap();
        let (_, error) = model.responses[0].error.clone().unwrap();
        assert_eq!(error.code(), code);
    }
}
