//! Unit tests for error-response classification and header parsing.

use super::*;

#[test]
fn status_error_maps_codes() {
    let code = |status, body: &str| status_error(status, body, None, None).code();
    assert_eq!(code(429, ""), "RATE_LIMITED");
    assert_eq!(code(401, ""), "AUTH");
    assert_eq!(code(403, ""), "AUTH");
    assert_eq!(code(500, ""), "SERVER_ERROR");
    assert_eq!(code(503, "server overloaded"), "SERVER_ERROR");
    assert_eq!(code(400, r#"{"error":{"message":"bad"}}"#), "BAD_REQUEST");
    assert_eq!(code(422, "invalid"), "BAD_REQUEST");
}

#[test]
fn status_error_detects_deepseek_context_length() {
    let body = r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (70000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#;
    let error = status_error(400, body, None, Some("req-1".into()));
    assert_eq!(error.code(), "CONTEXT_WINDOW_EXCEEDED");
    let http = error.http().unwrap();
    assert!(http
        .message
        .starts_with("This model's maximum context length is 65536"));
    assert_eq!(http.request_id.as_deref(), Some("req-1"));
}

#[test]
fn retry_after_ms_reads_both_headers() {
    let mut headers = HeaderMap::new();
    assert_eq!(retry_after_ms(&headers), None);
    headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
    assert_eq!(retry_after_ms(&headers), Some(2000));
    headers.insert(RETRY_AFTER, HeaderValue::from_static("0.25"));
    assert_eq!(retry_after_ms(&headers), Some(250));
    headers.insert("retry-after-ms", HeaderValue::from_static("120"));
    assert_eq!(retry_after_ms(&headers), Some(120));
    let mut dated = HeaderMap::new();
    dated.insert(
        RETRY_AFTER,
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after_ms(&dated), None);
}

#[test]
fn new_rejects_bad_base_url_and_key() {
    let config = LlmConfig::new("api.deepseek.com", "m");
    assert_eq!(
        HttpChatModel::new(config).unwrap_err(),
        ConfigError::InvalidBaseUrl {
            base_url: "api.deepseek.com".into()
        }
    );
    let mut config = LlmConfig::new("https://api.deepseek.com", "m");
    config.api_key = Some("sk\nbad".into());
    assert_eq!(
        HttpChatModel::new(config).unwrap_err(),
        ConfigError::InvalidApiKey
    );
}

#[test]
fn debug_never_prints_the_key() {
    let mut config = LlmConfig::new("https://api.deepseek.com", "m");
    config.api_key = Some("sk-very-secret".into());
    let model = HttpChatModel::new(config).unwrap();
    let printed = format!("{model:?}");
    assert!(!printed.contains("sk-very-secret"), "{printed}");
}
