//! Retried calls: every failed attempt is reported with its number, error and events, before
//! the backoff, and content already shown is never silently retried.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use strata_agent::llm::{
    stream_with_retries, AttemptItem, FailedAttempt, FinishReason, HttpChatModel, HttpFailure,
    LlmError, StreamEvent,
};
use tokio_util::sync::CancellationToken;

use crate::server::{delta, finish, hello_reply, request, role, usage, Part, Reply, TestServer};

/// Runs a retried call to the end: the items, then the final error if any.
async fn run(
    server: &TestServer,
    cancel: CancellationToken,
) -> (Vec<AttemptItem>, Option<FailedAttempt>) {
    let model = HttpChatModel::new(server.config()).unwrap();
    let policy = model.config().retry_policy();
    let request = request();
    let mut items = Vec::new();
    let mut call = stream_with_retries(&model, &request, policy, cancel);
    while let Some(item) = call.next().await {
        match item {
            Ok(item) => items.push(item),
            Err(failed) => return (items, Some(failed)),
        }
    }
    (items, None)
}

fn hello_items() -> Vec<AttemptItem> {
    vec![
        AttemptItem::Event(StreamEvent::TextDelta {
            text: "Hello".into(),
        }),
        AttemptItem::Event(StreamEvent::Usage(strata_agent::llm::Usage {
            prompt_tokens: 64,
            completion_tokens: 40,
            prompt_cache_hit_tokens: Some(0),
            prompt_cache_miss_tokens: Some(64),
            reasoning_tokens: Some(12),
        })),
        AttemptItem::Event(StreamEvent::Finish {
            reason: FinishReason::Stop,
        }),
    ]
}

#[tokio::test]
async fn stream_with_retries_429_honours_retry_after_then_succeeds() {
    let rate_limited = Reply::error(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
    )
    .header("retry-after", "1")
    .header("retry-after-ms", "60")
    .header("x-request-id", "req-429");
    let server = TestServer::start(vec![rate_limited, hello_reply()]).await;
    let started = Instant::now();
    let (items, failed) = run(&server, CancellationToken::new()).await;
    let elapsed = started.elapsed();
    assert_eq!(failed, None);
    let mut expected = vec![AttemptItem::Retrying(FailedAttempt {
        attempt: 1,
        error: LlmError::RateLimited(HttpFailure {
            status: 429,
            message: "Rate limit reached".into(),
            retry_after_ms: Some(60),
            request_id: Some("req-429".into()),
        }),
        events: Vec::new(),
        retry_in: Some(Duration::from_millis(60)),
    })];
    expected.extend(hello_items());
    assert_eq!(items, expected);
    assert!(elapsed >= Duration::from_millis(60), "{elapsed:?}");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn stream_with_retries_500_twice_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::error(500, r#"{"error":{"message":"internal error"}}"#),
        Reply::error(503, "Service Unavailable"),
        hello_reply(),
    ])
    .await;
    let (items, failed) = run(&server, CancellationToken::new()).await;
    assert_eq!(failed, None);
    let retrying: Vec<(u32, String, Option<Duration>)> = items
        .iter()
        .filter_map(|item| match item {
            AttemptItem::Retrying(failed) => {
                Some((failed.attempt, failed.error.to_string(), failed.retry_in))
            }
            AttemptItem::Event(_) => None,
        })
        .collect();
    assert_eq!(
        retrying,
        vec![
            (
                1,
                "server error: http 500: internal error".into(),
                Some(Duration::from_millis(5))
            ),
            (
                2,
                "server error: http 503: Service Unavailable".into(),
                Some(Duration::from_millis(10))
            ),
        ]
    );
    assert_eq!(items[2..], hello_items()[..]);
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn stream_with_retries_does_not_retry_after_content() {
    let reply = Reply::sse(vec![
        role(),
        delta(r#"{"reasoning_content":"Hmm"}"#),
        delta(r#"{"content":"Hel"}"#),
        Part::Pause(Duration::from_millis(10)),
        Part::Abort,
    ]);
    let server = TestServer::start(vec![reply, hello_reply()]).await;
    let (items, failed) = run(&server, CancellationToken::new()).await;
    let partial = vec![
        StreamEvent::ReasoningDelta { text: "Hmm".into() },
        StreamEvent::TextDelta { text: "Hel".into() },
    ];
    let live: Vec<AttemptItem> = partial.iter().cloned().map(AttemptItem::Event).collect();
    assert_eq!(items, live);
    let failed = failed.unwrap();
    assert_eq!(failed.attempt, 1);
    assert_eq!(failed.error.code(), "STREAM_DISCONNECTED");
    assert_eq!(failed.events, partial);
    assert_eq!(failed.retry_in, None);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn stream_with_retries_never_retries_context_overflow() {
    let body = r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens.","type":"invalid_request_error"}}"#;
    let server = TestServer::start(vec![Reply::error(400, body), hello_reply()]).await;
    let (items, failed) = run(&server, CancellationToken::new()).await;
    assert_eq!(items, Vec::new());
    let failed = failed.unwrap();
    assert_eq!(
        (failed.attempt, failed.error.code()),
        (1, "CONTEXT_WINDOW_EXCEEDED")
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn stream_with_retries_retries_an_empty_response() {
    let empty = Reply::sse(vec![role(), finish("stop"), usage(), crate::server::done()]);
    let server = TestServer::start(vec![empty, hello_reply()]).await;
    let (items, failed) = run(&server, CancellationToken::new()).await;
    assert_eq!(failed, None);
    match &items[1] {
        AttemptItem::Retrying(failed) => {
            assert_eq!(failed.error.code(), "EMPTY_RESPONSE");
            assert!(matches!(failed.events[..], [StreamEvent::Usage(_)]));
        }
        other => panic!("expected a retry, got {other:?}"),
    }
    assert_eq!(items[2..], hello_items()[..]);
}

#[tokio::test]
async fn stream_with_retries_gives_up_after_max_retries() {
    let server = TestServer::start(Vec::new()).await; // every request gets a 500
    let (items, failed) = run(&server, CancellationToken::new()).await;
    let attempts: Vec<u32> = items
        .iter()
        .map(|item| match item {
            AttemptItem::Retrying(failed) => failed.attempt,
            AttemptItem::Event(event) => panic!("unexpected event {event:?}"),
        })
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
    let failed = failed.unwrap();
    assert_eq!((failed.attempt, failed.retry_in), (4, None));
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn stream_with_retries_cancel_mid_stream_keeps_delivered_events() {
    let reply = Reply::sse(vec![role(), delta(r#"{"content":"Hel"}"#), Part::Stall]);
    let server = TestServer::start(vec![reply]).await;
    let model = HttpChatModel::new(server.config()).unwrap();
    let policy = model.config().retry_policy();
    let request = request();
    let cancel = CancellationToken::new();
    let mut call = stream_with_retries(&model, &request, policy, cancel.clone());
    let first = call.next().await.unwrap().unwrap();
    assert_eq!(
        first,
        AttemptItem::Event(StreamEvent::TextDelta { text: "Hel".into() })
    );
    cancel.cancel();
    let failed = call.next().await.unwrap().unwrap_err();
    assert_eq!(
        failed,
        FailedAttempt {
            attempt: 1,
            error: LlmError::Cancelled,
            events: vec![StreamEvent::TextDelta { text: "Hel".into() }],
            retry_in: None,
        }
    );
    assert!(call.next().await.is_none());
}
