//! Unit tests for the request wire types: exact bytes, key order, round trip.

use super::*;
use serde_json::json;

#[test]
fn chat_request_minimal_bytes() {
    let request = ChatRequest::new("deepseek-chat", vec![ChatMessage::user("hi")]);
    let bytes = serde_json::to_string(&request).unwrap();
    assert_eq!(
        bytes,
        r#"{"model":"deepseek-chat","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn chat_request_every_block_type_keeps_key_order() {
    let mut request = ChatRequest::new(
        "deepseek-reasoner",
        vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("list /tmp"),
            ChatMessage::Assistant {
                content: String::new(),
                reasoning_content: Some("use list_dir".into()),
                tool_calls: vec![ToolCall::function(
                    "call_0",
                    "list_dir",
                    r#"{"path":"/tmp"}"#,
                )],
            },
            ChatMessage::tool("call_0", "a.txt"),
            ChatMessage::assistant("one file"),
        ],
    );
    request.tools = vec![ToolDefinition::function(
        "list_dir",
        "List a directory",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )];
    request.tool_choice = Some(ToolChoice::Auto);
    request.max_tokens = Some(1024);
    request.temperature = Some(0.7);
    request.top_p = Some(1.0);
    request.stop = vec!["END".into()];
    request.reasoning_effort = Some("high".into());
    let bytes = serde_json::to_string(&request).unwrap();
    let expected = concat!(
        r#"{"model":"deepseek-reasoner","messages":["#,
        r#"{"role":"system","content":"be brief"},"#,
        r#"{"role":"user","content":"list /tmp"},"#,
        r#"{"role":"assistant","content":"","reasoning_content":"use list_dir","tool_calls":[{"id":"call_0","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\"/tmp\"}"}}]},"#,
        r#"{"role":"tool","tool_call_id":"call_0","content":"a.txt"},"#,
        r#"{"role":"assistant","content":"one file"}],"#,
        r#""tools":[{"type":"function","function":{"name":"list_dir","description":"List a directory","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}],"#,
        r#""tool_choice":"auto","max_tokens":1024,"temperature":0.7,"top_p":1.0,"stop":["END"],"reasoning_effort":"high","#,
        r#""stream":true,"stream_options":{"include_usage":true}}"#
    );
    assert_eq!(bytes, expected);
    let back: ChatRequest = serde_json::from_str(&bytes).unwrap();
    assert_eq!(back, request);
}

#[test]
fn chat_request_deserialize_cannot_turn_streaming_off() {
    let back: ChatRequest = serde_json::from_str(
        r#"{"model":"m","messages":[],"stream":false,"stream_options":{"include_usage":false}}"#,
    )
    .unwrap();
    assert_eq!(back, ChatRequest::new("m", Vec::new()));
}

#[test]
fn chat_message_rejects_unknown_role() {
    let error = serde_json::from_str::<ChatMessage>(r#"{"role":"developer","content":"x"}"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown variant `developer`"), "{error}");
}
