//! Failed attempts are logged, never hidden: a 429 then success leaves exactly one
//! `assistant/attempt`; a mid-stream disconnect logs the partial stream and restarts the call;
//! a request that fails for good ends the turn with an error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use strata_agent::agent::{ReasoningReplay, TurnOutcome};
use strata_agent::llm::HttpChatModel;
use tokio_util::sync::CancellationToken;

use crate::server::{delta, hello_reply, role, Part, Reply, TestServer};
use crate::support::{
    config, derived, field, of_type, reconstructed_requests, types, Fixture, Watch,
};

#[tokio::test]
async fn rate_limited_then_success_logs_exactly_one_attempt() {
    let fixture = Fixture::new();
    let limited = Reply::error(429, r#"{"error":{"message":"Rate limit reached"}}"#)
        .header("retry-after-ms", "5")
        .header("x-request-id", "req-429");
    let server = TestServer::start(vec![limited, hello_reply()]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let watch = Arc::new(Watch::default());
    let mut agent = fixture
        .agent("s", model, config("deepseek-chat"))
        .with_observer(watch.clone());
    let report = agent
        .run_turn("Hi", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Completed);
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[5..],
        [
            "request/context",
            "assistant/attempt",
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let attempts = of_type(&session, "assistant/attempt");
    assert_eq!(attempts.len(), 1);
    // The chunk is stamped when it arrives and the event when it is appended, moments later
    // (the same millisecond, usually: asserting equality failed now and then).
    let chunk_time = field(attempts[0], &["stream"])[0]["time"]
        .as_i64()
        .expect("a chunk time");
    assert!(
        (0..1_000).contains(&(attempts[0].time() - chunk_time)),
        "chunk at {chunk_time}, attempt at {}",
        attempts[0].time()
    );
    assert_eq!(
        field(attempts[0], &["stream"]),
        &json!([{"type": "chunk", "time": chunk_time, "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {
            "message": "rate limited: http 429 (request id req-429), retry after 5 ms: Rate limit reached",
            "code": "RATE_LIMITED",
            "status": 429,
            "providerRetryAfterMs": 5,
            "requestId": "req-429"
        }}}}])
    );
    assert_eq!(
        (field(attempts[0], &["turn"]), field(attempts[0], &["step"])),
        (&json!(1), &json!(1))
    );
    assert_eq!(derived(&session)[1], ("assistant".into(), "Hello".into()));
    assert_eq!(watch.warnings.lock().unwrap().len(), 1);
    // Both requests were the same request, and both are what the log rebuilds.
    let received = server.received();
    let rebuilt = reconstructed_requests(&fixture, "s", ReasoningReplay::default());
    assert_eq!(received.len(), 2);
    for (sent, rebuilt) in received.iter().zip(&rebuilt) {
        assert_eq!(sent.body, serde_json::to_vec(rebuilt).unwrap());
    }
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn a_mid_stream_disconnect_logs_the_partial_stream_and_restarts() {
    let fixture = Fixture::new();
    let broken = Reply::sse(vec![
        role(),
        delta(r#"{"content":"Hel"}"#),
        delta(r#"{"content":"lo wo"}"#),
        // Lets hyper flush the body before the connection is dropped.
        Part::Pause(Duration::from_millis(10)),
        Part::Abort,
    ]);
    let server = TestServer::start(vec![broken, hello_reply()]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let watch = Arc::new(Watch::default());
    let mut agent = fixture
        .agent("s", model, config("deepseek-chat"))
        .with_observer(watch.clone());
    let report = agent
        .run_turn("Hi", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Completed);
    agent.close().unwrap();
    let session = fixture.load("s");
    let attempts = of_type(&session, "assistant/attempt");
    assert_eq!(attempts.len(), 1);
    let stream = field(attempts[0], &["stream"]).as_array().unwrap();
    assert_eq!(stream[1]["type"], "text-chunks");
    assert_eq!(stream[1]["texts"], json!(["Hel", "lo wo"]));
    assert_eq!(stream[2]["chunk"]["reason"]["kind"], "error");
    assert_eq!(
        stream[2]["chunk"]["reason"]["failure"]["code"],
        "STREAM_DISCONNECTED"
    );
    // The partial text is evidence only: the surface holds the restarted answer.
    assert_eq!(
        derived(&session),
        [
            ("user".into(), "Hi".into()),
            ("assistant".into(), "Hello".into())
        ]
    );
    let warnings = watch.warnings.lock().unwrap();
    assert!(
        warnings[0].contains("restarting the request"),
        "{warnings:?}"
    );
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn a_request_that_fails_for_good_ends_the_turn_with_its_error() {
    let fixture = Fixture::new();
    let server = TestServer::start(vec![Reply::error(
        401,
        r#"{"error":{"message":"Authentication Fails"}}"#,
    )])
    .await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let mut agent = fixture.agent("s", model, config("deepseek-chat"));
    let report = agent
        .run_turn("Hi", &CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(report.outcome, TurnOutcome::Failed(ref e) if e.code() == "AUTH"));
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[5..],
        [
            "request/context",
            "assistant/attempt",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let end = of_type(&session, "turn/end")[0];
    assert_eq!(
        field(end, &["reason"]),
        &json!({"kind": "error", "error": {"message": "authentication failed: http 401: Authentication Fails", "code": "AUTH", "status": 401}})
    );
    assert_eq!(server.received().len(), 1);
    fixture.assert_logs_accepted();
}
