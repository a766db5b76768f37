//! Unit tests for the retry decision.

use super::*;
use crate::llm::HttpFailure;

fn policy(max_retries: u32, jitter: f64) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        backoff: Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            jitter,
        },
    }
}

fn http(status: u16, retry_after_ms: Option<u64>) -> HttpFailure {
    HttpFailure {
        status,
        message: String::new(),
        retry_after_ms,
        request_id: None,
    }
}

#[test]
fn retry_delay_doubles_and_caps() {
    let policy = policy(10, 0.0);
    let error = LlmError::Server(http(500, None));
    let delays: Vec<_> = (1..=6)
        .map(|attempt| policy.retry_delay(attempt, &error, false).unwrap())
        .collect();
    let ms: Vec<u128> = delays.iter().map(Duration::as_millis).collect();
    assert_eq!(ms, [100, 200, 400, 800, 1000, 1000]);
}

#[test]
fn retry_delay_stops_after_max_retries() {
    let policy = policy(2, 0.0);
    let error = LlmError::Transport {
        detail: "refused".into(),
    };
    assert!(policy.retry_delay(2, &error, false).is_some());
    assert_eq!(policy.retry_delay(3, &error, false), None);
}

#[test]
fn retry_delay_honours_retry_after_up_to_max() {
    let policy = policy(3, 0.5);
    let error = LlmError::RateLimited(http(429, Some(750)));
    assert_eq!(
        policy.retry_delay(1, &error, false),
        Some(Duration::from_millis(750))
    );
    let error = LlmError::RateLimited(http(429, Some(5000)));
    assert_eq!(policy.retry_delay(1, &error, false), None);
}

#[test]
fn retry_delay_never_after_content_or_for_permanent_errors() {
    let policy = policy(3, 0.0);
    let disconnected = LlmError::StreamDisconnected {
        detail: "reset".into(),
        request_id: None,
    };
    assert!(policy.retry_delay(1, &disconnected, false).is_some());
    assert_eq!(policy.retry_delay(1, &disconnected, true), None);
    for error in [
        LlmError::Auth(http(401, None)),
        LlmError::BadRequest(http(400, None)),
        LlmError::ContextWindowExceeded(http(400, None)),
        LlmError::Protocol {
            detail: "x".into(),
            excerpt: String::new(),
            request_id: None,
        },
        LlmError::Cancelled,
    ] {
        assert_eq!(policy.retry_delay(1, &error, false), None, "{error}");
    }
}

#[test]
fn retry_delay_jitter_stays_in_band() {
    let policy = policy(3, 0.2);
    let error = LlmError::Server(http(502, None));
    let low = policy
        .retry_delay_with_jitter(1, &error, false, 0.0)
        .unwrap();
    let high = policy
        .retry_delay_with_jitter(1, &error, false, 0.999_999)
        .unwrap();
    assert_eq!(low, Duration::from_millis(80));
    assert!(high > Duration::from_millis(119) && high <= Duration::from_millis(120));
    for _ in 0..100 {
        let unit = random_unit();
        assert!((0.0..1.0).contains(&unit));
    }
}
