//! One attempt's failures against the real server, each mapped to its code with its evidence.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use strata_agent::llm::{ChatModel, HttpChatModel, HttpFailure, LlmError, StreamEvent};

use crate::server::{data, delta, done, finish, request, role, usage, Part, Reply, TestServer};

async fn collect(
    server: &TestServer,
    configure: impl FnOnce(&mut strata_agent::llm::LlmConfig),
) -> Vec<Result<StreamEvent, LlmError>> {
    let mut config = server.config();
    configure(&mut config);
    let model = HttpChatModel::new(config).unwrap();
    model.stream(&request()).collect().await
}

fn text(text: &str) -> Result<StreamEvent, LlmError> {
    Ok(StreamEvent::TextDelta { text: text.into() })
}

#[tokio::test]
async fn http_chat_model_mid_stream_disconnect_keeps_partial_events() {
    let reply = Reply::sse(vec![
        role(),
        delta(r#"{"content":"Hel"}"#),
        delta(r#"{"content":"lo"}"#),
        Part::Pause(Duration::from_millis(10)),
        Part::Abort,
    ]);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |_| {}).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[..2], [text("Hel"), text("lo")]);
    let error = events[2].as_ref().unwrap_err();
    // The transport break itself is the evidence, not a clean end of body.
    match error {
        LlmError::StreamDisconnected { detail, .. } => {
            assert!(detail.contains("response body"), "{detail}")
        }
        other => panic!("expected a disconnect, got {other:?}"),
    }
    assert_eq!(error.request_id(), Some("req-ok"));
}

#[tokio::test]
async fn http_chat_model_clean_eof_before_done_is_a_disconnect() {
    let reply = Reply::sse(vec![role(), delta(r#"{"content":"Hel"}"#)]);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |_| {}).await;
    assert_eq!(
        events,
        vec![
            text("Hel"),
            Err(LlmError::StreamDisconnected {
                detail: "body ended".into(),
                request_id: Some("req-ok".into())
            })
        ]
    );
}

#[tokio::test]
async fn http_chat_model_idle_stall_times_out_fast() {
    let reply = Reply::sse(vec![role(), delta(r#"{"content":"Hel"}"#), Part::Stall]);
    let server = TestServer::start(vec![reply]).await;
    let started = Instant::now();
    let events = collect(&server, |config| {
        config.idle_timeout = Duration::from_millis(150)
    })
    .await;
    let elapsed = started.elapsed();
    assert_eq!(
        events,
        vec![
            text("Hel"),
            Err(LlmError::TimeoutIdle {
                after_ms: 150,
                request_id: Some("req-ok".into())
            })
        ]
    );
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn http_chat_model_keep_alives_hold_off_the_idle_timeout() {
    let keep_alive = || Part::Bytes(": keep-alive\n\n".into());
    // Each gap (100 ms) is well under the idle timeout, the silence as a whole is not.
    let pause = || Part::Pause(Duration::from_millis(100));
    let reply = Reply::sse(vec![
        role(),
        pause(),
        keep_alive(),
        pause(),
        keep_alive(),
        pause(),
        keep_alive(),
        pause(),
        delta(r#"{"content":"late"}"#),
        finish("stop"),
        usage(),
        done(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |config| {
        config.idle_timeout = Duration::from_millis(300)
    })
    .await;
    assert_eq!(events[0], text("late"));
    assert!(matches!(
        events.last(),
        Some(Ok(StreamEvent::Finish { .. }))
    ));
}

#[tokio::test]
async fn http_chat_model_slow_head_is_a_first_byte_timeout() {
    let mut reply = Reply::sse(vec![done()]);
    reply.head_delay = Duration::from_secs(5);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |config| {
        config.first_byte_timeout = Duration::from_millis(100)
    })
    .await;
    assert_eq!(
        events,
        vec![Err(LlmError::TimeoutFirstByte { after_ms: 100 })]
    );
}

#[tokio::test]
async fn http_chat_model_context_length_400() {
    let body = r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 81234 tokens (77138 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#;
    let server = TestServer::start(vec![
        Reply::error(400, body).header("x-request-id", "req-400")
    ])
    .await;
    let events = collect(&server, |_| {}).await;
    assert_eq!(
        events,
        vec![Err(LlmError::ContextWindowExceeded(HttpFailure {
            status: 400,
            message: "This model's maximum context length is 65536 tokens. However, you requested 81234 tokens (77138 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.".into(),
            retry_after_ms: None,
            request_id: Some("req-400".into()),
        }))]
    );
}

#[tokio::test]
async fn http_chat_model_401_is_auth() {
    let body = r#"{"error":{"message":"Authentication Fails (no such user)","type":"authentication_error"}}"#;
    let server = TestServer::start(vec![Reply::error(401, body)]).await;
    let events = collect(&server, |_| {}).await;
    let error = events[0].as_ref().unwrap_err();
    assert_eq!(error.code(), "AUTH");
    assert_eq!(
        error.to_string(),
        "authentication failed: http 401: Authentication Fails (no such user)"
    );
}

#[tokio::test]
async fn http_chat_model_malformed_chunk_is_protocol() {
    let reply = Reply::sse(vec![
        role(),
        delta(r#"{"content":"ok"}"#),
        data(r#"{"choices":[{"index":0,"delta":{"content":"x"}"#),
        done(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |_| {}).await;
    assert_eq!(events[0], text("ok"));
    match &events[1] {
        Err(LlmError::Protocol {
            excerpt,
            request_id,
            ..
        }) => {
            assert_eq!(excerpt, r#"{"choices":[{"index":0,"delta":{"content":"x"}"#);
            assert_eq!(request_id.as_deref(), Some("req-ok"));
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn http_chat_model_json_instead_of_sse_is_protocol() {
    let mut reply = Reply::error(200, r#"{"choices":[{"message":{"content":"hi"}}]}"#);
    reply.status = 200;
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |_| {}).await;
    let error = events[0].as_ref().unwrap_err();
    assert_eq!(error.code(), "PROTOCOL");
    assert!(
        error.to_string().contains("got application/json"),
        "{error}"
    );
}

#[tokio::test]
async fn http_chat_model_connection_refused_is_transport() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = strata_agent::llm::LlmConfig::new(format!("http://{addr}"), "m");
    let model = HttpChatModel::new(config).unwrap();
    let events: Vec<_> = model.stream(&request()).collect().await;
    let error = events[0].as_ref().unwrap_err();
    assert_eq!(error.code(), "TRANSPORT", "{error}");
    assert!(error.to_string().contains("tcp connect error"), "{error}");
}

#[tokio::test]
async fn http_chat_model_stop_without_content_is_empty_response() {
    let reply = Reply::sse(vec![role(), finish("stop"), usage(), done()]);
    let server = TestServer::start(vec![reply]).await;
    let events = collect(&server, |_| {}).await;
    assert!(matches!(events[0], Ok(StreamEvent::Usage(_))));
    assert_eq!(
        events[1],
        Err(LlmError::EmptyResponse {
            request_id: Some("req-ok".into())
        })
    );
}

#[tokio::test]
async fn http_chat_model_full_accept_queue_is_a_connect_timeout() {
    // A listener that never accepts, with its accept queue filled: the kernel then drops new
    // SYNs, so the client's connect hangs until its own timeout.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(50), connect).await {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    let mut config = strata_agent::llm::LlmConfig::new(format!("http://{addr}"), "m");
    config.connect_timeout = Duration::from_millis(150);
    let model = HttpChatModel::new(config).unwrap();
    let started = Instant::now();
    let events: Vec<_> = model.stream(&request()).collect().await;
    assert_eq!(
        events,
        vec![Err(LlmError::TimeoutConnect { after_ms: 150 })]
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(listener);
}
