//! [`HttpChatModel`]: the OpenAI-compatible `POST {base}/chat/completions` client over reqwest
//! (rustls with the ring provider and Mozilla's roots; no OpenSSL, no C build beyond ring).
//!
//! One call is: send with a first-byte deadline, classify a non-2xx response by status and body
//! into an [`LlmError`], otherwise hand the body to [`decode_sse_stream`] behind an idle
//! deadline. No retries here: they belong to the caller, which must log every attempt.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use strata_core::json;

use super::sse::{error_message, excerpt};
use super::{
    decode_sse_stream, ChatModel, ChatRequest, ConfigError, EventStream, HttpFailure, LlmConfig,
    LlmError,
};

/// Largest error body read to classify a failure; the rest is dropped with the connection.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Response headers that carry the provider's request id, in order of preference.
const REQUEST_ID_HEADERS: [&str; 2] = ["x-request-id", "request-id"];

/// Streams chat completions from an OpenAI-compatible server (DeepSeek by default).
///
/// Cheap to share: the connection pool lives inside and calls take `&self`.
#[derive(Debug, Clone)]
pub struct HttpChatModel {
    client: reqwest::Client,
    url: String,
    authorization: Option<HeaderValue>,
    config: LlmConfig,
}

impl HttpChatModel {
    /// Builds the client. Fails on a base URL that is not absolute http(s), a key that cannot
    /// be a header, or a TLS setup error; nothing is sent yet.
    pub fn new(config: LlmConfig) -> Result<HttpChatModel, ConfigError> {
        let url = config.chat_completions_url();
        let parsed = reqwest::Url::parse(&url).map_err(|_| ConfigError::InvalidBaseUrl {
            base_url: config.base_url.clone(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(ConfigError::InvalidBaseUrl {
                base_url: config.base_url.clone(),
            });
        }
        let authorization = match &config.api_key {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                    .map_err(|_| ConfigError::InvalidApiKey)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|error| ConfigError::Client {
                detail: error_chain(&error),
            })?;
        Ok(HttpChatModel {
            client,
            url,
            authorization,
            config,
        })
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }
}

impl ChatModel for HttpChatModel {
    fn stream(&self, request: &ChatRequest) -> EventStream {
        // `json` writes lone surrogates held in the messages as JSON.stringify does.
        let body = match json::to_js_vec(request) {
            Ok(body) => body,
            Err(error) => {
                let error = LlmError::Protocol {
                    detail: format!("request did not serialize: {error}"),
                    excerpt: String::new(),
                    request_id: None,
                };
                return Box::pin(stream::iter([Err(error)]));
            }
        };
        let call = Call {
            client: self.client.clone(),
            url: self.url.clone(),
            authorization: self.authorization.clone(),
            body,
            connect_timeout: self.config.connect_timeout,
            first_byte_timeout: self.config.first_byte_timeout,
            idle_timeout: self.config.idle_timeout,
        };
        Box::pin(stream::once(call.open()).flatten())
    }
}

/// Everything one attempt needs, owned, so the stream is `'static`.
struct Call {
    client: reqwest::Client,
    url: String,
    authorization: Option<HeaderValue>,
    body: Vec<u8>,
    connect_timeout: Duration,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
}

impl Call {
    async fn open(self) -> EventStream {
        let idle_timeout = self.idle_timeout;
        match self.send().await {
            Ok((response, request_id)) => body_events(response, idle_timeout, request_id),
            Err(error) => Box::pin(stream::iter([Err(error)])),
        }
    }

    /// Sends the request and returns a 2xx event-stream response with its request id.
    async fn send(self) -> Result<(reqwest::Response, Option<String>), LlmError> {
        let mut builder = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(self.body);
        if let Some(authorization) = self.authorization {
            builder = builder.header(AUTHORIZATION, authorization);
        }
        let response = match tokio::time::timeout(self.first_byte_timeout, builder.send()).await {
            Err(_elapsed) => {
                return Err(LlmError::TimeoutFirstByte {
                    after_ms: millis(self.first_byte_timeout),
                })
            }
            Ok(Err(error)) => return Err(send_error(&error, self.connect_timeout)),
            Ok(Ok(response)) => response,
        };
        let request_id = request_id(response.headers());
        let status = response.status();
        if status.is_success() {
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("text/event-stream")
                .to_owned();
            if content_type.starts_with("text/event-stream") {
                return Ok((response, request_id));
            }
            let body = read_body(response, self.idle_timeout).await;
            return Err(LlmError::Protocol {
                detail: format!("expected content-type text/event-stream, got {content_type}"),
                excerpt: excerpt(&body),
                request_id,
            });
        }
        let retry_after_ms = retry_after_ms(response.headers());
        let body = read_body(response, self.idle_timeout).await;
        Err(status_error(
            status.as_u16(),
            &body,
            retry_after_ms,
            request_id,
        ))
    }
}

/// The body of a 2xx response as events, each read bounded by `idle_timeout`.
fn body_events(
    response: reqwest::Response,
    idle_timeout: Duration,
    request_id: Option<String>,
) -> EventStream {
    let id = request_id.clone();
    let bytes = stream::unfold(Some(response), move |response| {
        let request_id = id.clone();
        async move {
            let mut response = response?;
            match tokio::time::timeout(idle_timeout, response.chunk()).await {
                Ok(Ok(Some(bytes))) => Some((Ok(bytes), Some(response))),
                Ok(Ok(None)) => None,
                Ok(Err(error)) => {
                    let error = LlmError::StreamDisconnected {
                        detail: error_chain(&error),
                        request_id,
                    };
                    Some((Err(error), None))
                }
                Err(_elapsed) => {
                    let error = LlmError::TimeoutIdle {
                        after_ms: millis(idle_timeout),
                        request_id,
                    };
                    Some((Err(error), None))
                }
            }
        }
    });
    decode_sse_stream(bytes, request_id)
}

/// Classifies an error response. Public within the crate for unit tests.
pub(crate) fn status_error(
    status: u16,
    body: &str,
    retry_after_ms: Option<u64>,
    request_id: Option<String>,
) -> LlmError {
    let http = HttpFailure {
        status,
        message: error_message(body),
        retry_after_ms,
        request_id,
    };
    match status {
        429 => LlmError::RateLimited(http),
        401 | 403 => LlmError::Auth(http),
        500..=599 => LlmError::Server(http),
        400..=499 if says_context_exceeded(body) => LlmError::ContextWindowExceeded(http),
        _ => LlmError::BadRequest(http),
    }
}

/// Whether an error body says the prompt is too long for the model. DeepSeek: "This model's
/// maximum context length is 65536 tokens. However, you requested …"; OpenAI adds the code
/// `context_length_exceeded`.
fn says_context_exceeded(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    [
        "maximum context length",
        "context_length_exceeded",
        "context length",
        "context window",
    ]
    .iter()
    .any(|needle| body.contains(needle))
}

/// The server's retry hint in milliseconds: `retry-after-ms`, else `retry-after` in seconds.
/// The HTTP-date form of `retry-after` is ignored (it would need a clock).
pub(crate) fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
    let number = |name: &str| -> Option<f64> {
        let value: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(ms.ceil() as u64);
    }
    number(RETRY_AFTER.as_str()).map(|seconds| (seconds * 1000.0).ceil() as u64)
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        let value = headers.get(*name)?.to_str().ok()?.trim();
        (!value.is_empty()).then(|| value.to_owned())
    })
}

fn send_error(error: &reqwest::Error, connect_timeout: Duration) -> LlmError {
    // The only deadline reqwest itself enforces is the connect timeout.
    if error.is_timeout() {
        return LlmError::TimeoutConnect {
            after_ms: millis(connect_timeout),
        };
    }
    LlmError::Transport {
        detail: error_chain(error),
    }
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body, stopping quietly on error or stall: the
/// status already says what failed, the body only adds words.
async fn read_body(mut response: reqwest::Response, idle_timeout: Duration) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout(idle_timeout, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

/// `error: cause: cause …`, because reqwest's own message ("error sending request") hides the
/// useful part in its sources.
fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn tls_config() -> Result<rustls::ClientConfig, ConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots: rustls::RootCertStore = webpki_roots::TLS_SERVER_ROOTS.iter().cloned().collect();
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ConfigError::Client {
            detail: format!("tls: {error}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests;
