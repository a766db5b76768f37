//! The happy path: a DeepSeek-shaped stream decodes to the exact event sequence, and the
//! request goes out as expected.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use strata_agent::llm::{
    ChatModel, FinishReason, HttpChatModel, StreamEvent, ToolDefinition, Usage,
};

use crate::server::{data, delta, done, finish, request, role, usage, Part, Reply, TestServer};

fn tool_call(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        id: id.map(Into::into),
        name: name.map(Into::into),
        arguments_delta: arguments.into(),
    }
}

#[tokio::test]
async fn http_chat_model_streams_deepseek_sse_exactly() {
    let reply = Reply::sse(vec![
        role(),
        Part::Bytes(": keep-alive\n\n".into()),
        delta(r#"{"content":null,"reasoning_content":"The user wants "}"#),
        delta(r#"{"content":null,"reasoning_content":"a listing."}"#),
        delta(r#"{"content":"Let me ","reasoning_content":null}"#),
        // One chunk split mid-JSON across two writes.
        Part::Bytes("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo".into()),
        Part::Pause(Duration::from_millis(10)),
        Part::Bytes("ok.\"},\"finish_reason\":null}]}\n\n".into()),
        delta(
            r#"{"tool_calls":[{"index":0,"id":"call_0_aa","type":"function","function":{"name":"list_dir","arguments":""}}]}"#,
        ),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}"#),
        delta(
            r#"{"tool_calls":[{"index":1,"id":"call_1_bb","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}"#,
        ),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":" \"src\"}"}}]}"#),
        Part::Bytes(": keep-alive\n\n".into()),
        delta(r#"{"tool_calls":[{"index":1,"function":{"arguments":"th\": \"Cargo.toml\"}"}}]}"#),
        finish("tool_calls"),
        usage(),
        done(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let model = HttpChatModel::new(server.config()).unwrap();
    let mut request = request();
    request.tools = vec![ToolDefinition::function(
        "list_dir",
        "List a directory",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    )];
    let events: Vec<_> = model.stream(&request).collect().await;
    let expected: Vec<Result<StreamEvent, _>> = vec![
        StreamEvent::ReasoningDelta {
            text: "The user wants ".into(),
        },
        StreamEvent::ReasoningDelta {
            text: "a listing.".into(),
        },
        StreamEvent::TextDelta {
            text: "Let me ".into(),
        },
        StreamEvent::TextDelta {
            text: "look.".into(),
        },
        tool_call(0, Some("call_0_aa"), Some("list_dir"), ""),
        tool_call(0, None, None, "{\"path\":"),
        tool_call(1, Some("call_1_bb"), Some("read_file"), "{\"pa"),
        tool_call(0, None, None, " \"src\"}"),
        tool_call(1, None, None, "th\": \"Cargo.toml\"}"),
        StreamEvent::Usage(Usage {
            prompt_tokens: 64,
            completion_tokens: 40,
            prompt_cache_hit_tokens: Some(0),
            prompt_cache_miss_tokens: Some(64),
            reasoning_tokens: Some(12),
        }),
        StreamEvent::Finish {
            reason: FinishReason::ToolCalls,
        },
    ]
    .into_iter()
    .map(Ok)
    .collect();
    assert_eq!(events, expected);

    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/chat/completions");
    assert_eq!(sent.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(sent.content_type.as_deref(), Some("application/json"));
    assert_eq!(sent.accept.as_deref(), Some("text/event-stream"));
    assert_eq!(sent.body, serde_json::to_vec(&request).unwrap());
}

#[tokio::test]
async fn http_chat_model_without_key_sends_no_authorization() {
    let reply = Reply::sse(vec![
        delta(r#"{"content":"hi"}"#),
        finish("stop"),
        data(r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#),
        done(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let mut config = server.config();
    config.api_key = None;
    let model = HttpChatModel::new(config).unwrap();
    let events: Vec<_> = model.stream(&request()).collect().await;
    assert_eq!(events.len(), 3);
    assert_eq!(server.received()[0].authorization, None);
}

/// Issue 22 (defects found by hostile probes): a lone UTF-16 surrogate in a log's message text
/// (dsh's JavaScript strings can hold one) goes to the model as `JSON.stringify` writes it,
/// and one in a streamed delta is kept, not a protocol error.
#[tokio::test]
async fn lone_surrogates_go_out_as_json_stringify_writes_them_and_come_back() {
    let log_message = strata_core::json::parse(
        r#"{"content":[{"type":"text","text":"A\ud800B"}],"source":{"kind":"user"},"role":"user","id":"m1"}"#,
    )
    .unwrap();
    let messages = strata_agent::agent::chat_messages(
        [&log_message],
        strata_agent::agent::ReasoningReplay::Never,
    );
    let request = strata_agent::llm::ChatRequest::new("deepseek-chat", messages);
    let reply = Reply::sse(vec![
        role(),
        // A provider that cut a pair between two chunks, then a lone low surrogate.
        delta(r#"{"content":"x\ud83d"}"#),
        delta(r#"{"content":"\ude00 \udfff"}"#),
        finish("stop"),
        done(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let model = HttpChatModel::new(server.config()).unwrap();
    let events: Vec<_> = model.stream(&request).collect().await;

    let body = String::from_utf8(server.received()[0].body.clone()).unwrap();
    assert!(
        body.contains(r#""messages":[{"role":"user","content":"A\ud800B"}]"#),
        "{body}"
    );
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            Ok(StreamEvent::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Joined, the halves are the character; the lone low surrogate stays one.
    assert_eq!(
        strata_core::json::to_js_string(&serde_json::Value::String(text)),
        "\"x\u{1F600} \\udfff\""
    );
}
