//! Unit tests for SSE decoding: DeepSeek's chunk shapes, arbitrary read boundaries, and every
//! way a body can end.

use super::*;
use futures_util::{stream, StreamExt};

const ROLE: &str = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"logprobs":null,"finish_reason":null}]}"#;

fn data(json: &str) -> String {
    format!("data: {json}\n\n")
}

fn delta(delta: &str) -> String {
    data(&format!(
        r#"{{"id":"c1","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}],"usage":null}}"#
    ))
}

fn finish(reason: &str) -> String {
    data(&format!(
        r#"{{"id":"c1","choices":[{{"index":0,"delta":{{"content":""}},"finish_reason":"{reason}"}}]}}"#
    ))
}

const USAGE: &str = r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":16},"prompt_cache_hit_tokens":16,"prompt_cache_miss_tokens":4,"completion_tokens_details":{"reasoning_tokens":5}}}"#;

fn usage() -> Usage {
    Usage {
        prompt_tokens: 20,
        completion_tokens: 9,
        prompt_cache_hit_tokens: Some(16),
        prompt_cache_miss_tokens: Some(4),
        reasoning_tokens: Some(5),
    }
}

fn text(text: &str) -> Item {
    Ok(StreamEvent::TextDelta { text: text.into() })
}

fn reasoning(text: &str) -> Item {
    Ok(StreamEvent::ReasoningDelta { text: text.into() })
}

fn finished(reason: FinishReason) -> Item {
    Ok(StreamEvent::Finish { reason })
}

/// Decodes `body` delivered in reads of `read_len` bytes (0: one read).
async fn decode_in_reads(body: &[u8], read_len: usize) -> Vec<Item> {
    let reads: Vec<Result<Vec<u8>, LlmError>> = if read_len == 0 {
        vec![Ok(body.to_vec())]
    } else {
        body.chunks(read_len).map(|c| Ok(c.to_vec())).collect()
    };
    decode_sse_stream(stream::iter(reads), Some("req-1".into()))
        .collect()
        .await
}

async fn decode(body: &str) -> Vec<Item> {
    decode_in_reads(body.as_bytes(), 0).await
}

fn deepseek_body() -> String {
    [
        data(ROLE),
        ": keep-alive\n\n".into(),
        delta(r#"{"reasoning_content":"Think "}"#),
        delta(r#"{"reasoning_content":"hard — 世界."}"#),
        delta(r#"{"content":"Héllo"}"#),
        delta(r#"{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}"#),
        delta(r#"{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"list_dir","arguments":"{\"pa"}}]}"#),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a\"}"}}]}"#),
        delta(r#"{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}"#),
        finish("tool_calls"),
        data(USAGE),
        "data: [DONE]\n\n".into(),
    ]
    .concat()
}

fn deepseek_events() -> Vec<Item> {
    let call = |index, id: Option<&str>, name: Option<&str>, arguments: &str| {
        Ok(StreamEvent::ToolCallDelta {
            index,
            id: id.map(Into::into),
            name: name.map(Into::into),
            arguments_delta: arguments.into(),
        })
    };
    vec![
        reasoning("Think "),
        reasoning("hard — 世界."),
        text("Héllo"),
        call(0, Some("call_a"), Some("read_file"), ""),
        call(1, Some("call_b"), Some("list_dir"), "{\"pa"),
        call(0, None, None, "{\"path\":\"a\"}"),
        call(1, None, None, "th\":\".\"}"),
        Ok(StreamEvent::Usage(usage())),
        finished(FinishReason::ToolCalls),
    ]
}

#[tokio::test]
async fn decode_sse_stream_reads_deepseek_chunks() {
    assert_eq!(decode(&deepseek_body()).await, deepseek_events());
}

#[tokio::test]
async fn decode_sse_stream_is_independent_of_read_boundaries() {
    let body = deepseek_body();
    for read_len in [1, 2, 3, 5, 7, 64] {
        assert_eq!(
            decode_in_reads(body.as_bytes(), read_len).await,
            deepseek_events(),
            "read_len {read_len}"
        );
    }
}

#[tokio::test]
async fn decode_sse_stream_accepts_crlf_and_usage_beside_finish() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\r\n\r\n",
        ":ping\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],",
        "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    );
    let expected = vec![
        text("ok"),
        Ok(StreamEvent::Usage(Usage {
            prompt_tokens: 3,
            completion_tokens: 1,
            prompt_cache_hit_tokens: Some(2),
            ..Usage::default()
        })),
        finished(FinishReason::Stop),
    ];
    assert_eq!(decode(body).await, expected);
}

#[tokio::test]
async fn decode_sse_stream_eof_before_finish_is_a_disconnect() {
    let body = [data(ROLE), delta(r#"{"content":"par"}"#)].concat();
    let expected = vec![
        text("par"),
        Err(LlmError::StreamDisconnected {
            detail: "body ended".into(),
            request_id: Some("req-1".into()),
        }),
    ];
    assert_eq!(decode(&body).await, expected);
}

#[tokio::test]
async fn decode_sse_stream_eof_after_finish_completes() {
    let body = [delta(r#"{"content":"done"}"#), finish("length")].concat();
    assert_eq!(
        decode(&body).await,
        vec![text("done"), finished(FinishReason::Length)]
    );
}

#[tokio::test]
async fn decode_sse_stream_transport_error_after_finish_completes() {
    let reads: Vec<Result<String, LlmError>> = vec![
        Ok(delta(r#"{"content":"done"}"#)),
        Ok(finish("stop")),
        Err(LlmError::TimeoutIdle {
            after_ms: 5,
            request_id: None,
        }),
    ];
    let events: Vec<Item> = decode_sse_stream(stream::iter(reads), None).collect().await;
    assert_eq!(events, vec![text("done"), finished(FinishReason::Stop)]);
}

#[tokio::test]
async fn decode_sse_stream_passes_transport_errors_through() {
    let disconnect = LlmError::StreamDisconnected {
        detail: "connection reset".into(),
        request_id: None,
    };
    let reads: Vec<Result<String, LlmError>> =
        vec![Ok(delta(r#"{"content":"a"}"#)), Err(disconnect.clone())];
    let events: Vec<Item> = decode_sse_stream(stream::iter(reads), None).collect().await;
    assert_eq!(events, vec![text("a"), Err(disconnect)]);
}

#[tokio::test]
async fn decode_sse_stream_malformed_json_is_protocol() {
    let body = [
        delta(r#"{"content":"a"}"#),
        "data: {\"choices\": [\n\n".into(),
    ]
    .concat();
    let events = decode(&body).await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[0], text("a"));
    match &events[1] {
        Err(LlmError::Protocol {
            detail,
            excerpt,
            request_id,
        }) => {
            assert!(
                detail.starts_with("chunk is not valid chat-completion json"),
                "{detail}"
            );
            assert_eq!(excerpt, "{\"choices\": [");
            assert_eq!(request_id.as_deref(), Some("req-1"));
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn decode_sse_stream_done_without_finish_is_protocol() {
    let body = [delta(r#"{"content":"a"}"#), "data: [DONE]\n\n".into()].concat();
    let events = decode(&body).await;
    assert_eq!(events[0], text("a"));
    assert_eq!(events[1].as_ref().unwrap_err().code(), "PROTOCOL");
}

#[tokio::test]
async fn decode_sse_stream_stop_without_content_is_empty_response() {
    let body = [
        data(ROLE),
        finish("stop"),
        data(USAGE),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let expected = vec![
        Ok(StreamEvent::Usage(usage())),
        Err(LlmError::EmptyResponse {
            request_id: Some("req-1".into()),
        }),
    ];
    assert_eq!(decode(&body).await, expected);
}

#[tokio::test]
async fn decode_sse_stream_error_object_is_server_error() {
    let body = [
        delta(r#"{"content":"a"}"#),
        data(r#"{"error":{"message":"overloaded","type":"server_error"}}"#),
    ]
    .concat();
    let events = decode(&body).await;
    let error = events[1].as_ref().unwrap_err();
    assert_eq!(error.code(), "SERVER_ERROR");
    assert_eq!(error.http().unwrap().message, "error in stream: overloaded");
}

#[tokio::test]
async fn decode_sse_stream_keeps_unknown_finish_reasons() {
    let body = [
        delta(r#"{"content":"a"}"#),
        finish("insufficient_system_resource"),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    assert_eq!(
        decode(&body).await,
        vec![
            text("a"),
            finished(FinishReason::Other("insufficient_system_resource".into()))
        ]
    );
}

#[tokio::test]
async fn decode_sse_stream_invalid_utf8_is_protocol() {
    let mut body = delta(r#"{"content":"a"}"#).into_bytes();
    body.extend_from_slice(b"data: \xff\xfe\n\n");
    let events = decode_in_reads(&body, 0).await;
    assert_eq!(
        events.last().unwrap().as_ref().unwrap_err().code(),
        "PROTOCOL"
    );
}

#[test]
fn excerpt_cuts_on_char_boundaries() {
    let long = "é".repeat(400);
    let cut = excerpt(&long);
    assert_eq!(cut.chars().count(), 301);
    assert!(cut.ends_with('…'));
    assert_eq!(excerpt("short"), "short");
}

/// One leading byte-order mark is stripped (the SSE spec), in any read split; it used to panic
/// inside `eventsource-stream` (found by the `sse` fuzz target). A second one is part of the
/// first line, which is then not a `data` line.
#[tokio::test]
async fn a_leading_bom_is_stripped_once() {
    let body = format!("\u{feff}{}", deepseek_body());
    for read_len in [0, 1, 2, 3, 5] {
        assert_eq!(
            decode_in_reads(body.as_bytes(), read_len).await,
            deepseek_events()
        );
    }
    let twice = format!("\u{feff}\u{feff}{}", data(ROLE));
    let events = decode(&twice).await;
    assert!(matches!(events.as_slice(), [Err(_)]), "{events:?}");
    // A body that is only part of a BOM ends as an empty body does.
    assert_eq!(
        decode_in_reads(&[0xef, 0xbb], 1).await.len(),
        decode("").await.len()
    );
}
