//! The scripted model: replay in order, injected errors through the retry loop, recorded
//! requests, exhaustion and delays on a paused clock.

use std::time::Duration;

use futures_util::StreamExt;
use strata_agent::llm::{
    stream_with_retries, AttemptItem, ChatMessage, ChatModel, ChatRequest, FinishReason, LlmError,
    RetryPolicy, ScriptedModel, StreamEvent,
};
use tokio_util::sync::CancellationToken;

const SCRIPT: &str = r#"{"responses": [
  {"events": [], "error": {"code": "RATE_LIMITED", "retry_after_ms": 20, "message": "slow down"}},
  {"events": [
    {"type": "reasoning_delta", "text": "Need the listing."},
    {"type": "tool_call_delta", "index": 0, "id": "call_0", "name": "list_dir", "arguments_delta": "{\"path\":"},
    {"type": "tool_call_delta", "index": 0, "arguments_delta": "\"src\"}"},
    {"type": "usage", "prompt_tokens": 50, "completion_tokens": 12},
    {"type": "finish", "reason": "tool_calls"}
  ]},
  {"events": [
    {"type": "text_delta", "text": "src has lib.rs."},
    {"type": "finish", "reason": "stop"}
  ]}
]}"#;

fn first_request() -> ChatRequest {
    ChatRequest::new(
        "deepseek-chat",
        vec![
            ChatMessage::system(""),
            ChatMessage::user("What is in src?"),
        ],
    )
}

#[tokio::test]
async fn scripted_model_replays_script_and_records_requests() {
    let model = ScriptedModel::from_json_str(SCRIPT).unwrap();
    let policy = RetryPolicy::default();
    let first = first_request();
    let items: Vec<_> = stream_with_retries(&model, &first, policy, CancellationToken::new())
        .collect()
        .await;
    let items: Vec<AttemptItem> = items.into_iter().map(Result::unwrap).collect();
    match &items[0] {
        AttemptItem::Retrying(failed) => {
            assert_eq!(failed.attempt, 1);
            assert_eq!(failed.error.code(), "RATE_LIMITED");
            assert_eq!(failed.retry_in, Some(Duration::from_millis(20)));
        }
        other => panic!("expected a retry, got {other:?}"),
    }
    assert_eq!(items.len(), 6);
    assert_eq!(
        items[5],
        AttemptItem::Event(StreamEvent::Finish {
            reason: FinishReason::ToolCalls
        })
    );

    let mut second = first.clone();
    second.messages.push(ChatMessage::Assistant {
        content: String::new(),
        reasoning_content: Some("Need the listing.".into()),
        tool_calls: vec![strata_agent::llm::ToolCall::function(
            "call_0",
            "list_dir",
            "{\"path\":\"src\"}",
        )],
    });
    second.messages.push(ChatMessage::tool("call_0", "lib.rs"));
    let events: Vec<_> = model.stream(&second).collect().await;
    assert_eq!(
        events,
        vec![
            Ok(StreamEvent::TextDelta {
                text: "src has lib.rs.".into()
            }),
            Ok(StreamEvent::Finish {
                reason: FinishReason::Stop
            }),
        ]
    );
    assert_eq!(model.requests(), vec![first.clone(), first, second]);
    assert_eq!(model.n_remaining(), 0);
}

#[tokio::test]
async fn scripted_model_exhausted_is_an_error() {
    let model = ScriptedModel::from_json_str(r#"{"responses": []}"#).unwrap();
    let events: Vec<_> = model.stream(&first_request()).collect().await;
    assert_eq!(
        events,
        vec![Err(LlmError::ScriptExhausted { n_responses: 0 })]
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn scripted_model_waits_each_delay() {
    let model = ScriptedModel::from_json_str(
        r#"{"responses": [{"events": [
            {"type": "text_delta", "text": "a", "delay_ms": 1500},
            {"type": "text_delta", "text": "b"},
            {"type": "finish", "reason": "stop", "delay_ms": 500}
        ]}]}"#,
    )
    .unwrap();
    let started = tokio::time::Instant::now();
    let mut stream = model.stream(&first_request());
    let mut arrivals = Vec::new();
    while let Some(event) = stream.next().await {
        arrivals.push((started.elapsed(), event.unwrap()));
    }
    let times: Vec<u128> = arrivals.iter().map(|(t, _)| t.as_millis()).collect();
    assert_eq!(times, [1500, 1500, 2000]);
}

#[tokio::test(start_paused = true)]
async fn scripted_model_mid_stream_error_is_not_retried() {
    let model = ScriptedModel::from_json_str(
        r#"{"responses": [
            {"events": [{"type": "text_delta", "text": "par"}],
             "error": {"code": "STREAM_DISCONNECTED", "message": "peer reset", "delay_ms": 100}},
            {"events": [{"type": "text_delta", "text": "unused"}, {"type": "finish", "reason": "stop"}]}
        ]}"#,
    )
    .unwrap();
    let policy = RetryPolicy::default();
    let request = first_request();
    let items: Vec<_> = stream_with_retries(&model, &request, policy, CancellationToken::new())
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    let failed = items[1].clone().unwrap_err();
    assert_eq!(
        failed.error.to_string(),
        "stream ended before [DONE] or a finish reason: peer reset"
    );
    assert_eq!(
        failed.events,
        vec![StreamEvent::TextDelta { text: "par".into() }]
    );
    assert_eq!(model.n_remaining(), 1);
}
