//! Typed failures of one model attempt.
//!
//! The codes ([`LlmError::code`]) are stable strings the agent loop writes into the log (the
//! `failure` of an `assistant/attempt` or `turn/end`), so renaming one is a format change.
//! Whether a failure is worth retrying is the [`RetryPolicy`](super::RetryPolicy)'s call, not the
//! error's.

use std::fmt;
use std::time::Duration;

/// What an HTTP error response told us. Kept whole so a log reader can see the provider's own
/// words and correlate with its request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpFailure {
    /// The HTTP status code.
    pub status: u16,
    /// The provider's message (`error.message` of a JSON body) or the start of the raw body.
    pub message: String,
    /// The server's `retry-after-ms` / `retry-after` hint, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// The provider's request id header (`x-request-id` and friends), for support tickets.
    pub request_id: Option<String>,
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http {}", self.status)?;
        if let Some(request_id) = &self.request_id {
            write!(f, " (request id {request_id})")?;
        }
        if let Some(ms) = self.retry_after_ms {
            write!(f, ", retry after {ms} ms")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// Why an attempt failed. Each variant is one [`code`](LlmError::code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// HTTP 429: too many requests or tokens for the account right now (`RATE_LIMITED`).
    #[error("rate limited: {0}")]
    RateLimited(HttpFailure),
    /// HTTP 5xx, or an error object sent inside a 200 stream (`SERVER_ERROR`).
    #[error("server error: {0}")]
    Server(HttpFailure),
    /// HTTP 401 or 403: missing, wrong or unfunded key (`AUTH`).
    #[error("authentication failed: {0}")]
    Auth(HttpFailure),
    /// HTTP 4xx whose body says the prompt does not fit the model's context (DeepSeek: "This
    /// model's maximum context length is …"). The caller should compact, not retry
    /// (`CONTEXT_WINDOW_EXCEEDED`).
    #[error("context window exceeded: {0}")]
    ContextWindowExceeded(HttpFailure),
    /// Any other HTTP 4xx: the request itself is wrong (`BAD_REQUEST`).
    #[error("request rejected: {0}")]
    BadRequest(HttpFailure),
    /// The connection could not be made or broke before the response head (`TRANSPORT`).
    #[error("transport error: {detail}")]
    Transport {
        /// The error chain, outermost first.
        detail: String,
    },
    /// TCP/TLS connect did not finish in time (`TIMEOUT_CONNECT`).
    #[error("connect timed out after {after_ms} ms")]
    TimeoutConnect {
        /// The configured connect timeout.
        after_ms: u64,
    },
    /// The response head did not arrive in time after sending (`TIMEOUT_FIRST_BYTE`).
    #[error("no response head within {after_ms} ms of sending the request")]
    TimeoutFirstByte {
        /// The configured first-byte timeout.
        after_ms: u64,
    },
    /// The body went silent (not even a keep-alive comment) for too long (`TIMEOUT_IDLE`).
    #[error("stream idle for {after_ms} ms{}", request_suffix(.request_id))]
    TimeoutIdle {
        /// The configured idle timeout.
        after_ms: u64,
        /// The provider's request id, if it sent one.
        request_id: Option<String>,
    },
    /// The body ended or broke before `data: [DONE]` and before any finish reason
    /// (`STREAM_DISCONNECTED`). The delivered prefix is real output; a new attempt may follow.
    #[error("stream ended before [DONE] or a finish reason{}: {detail}", request_suffix(.request_id))]
    StreamDisconnected {
        /// What ended the body: end of file, or the transport error chain.
        detail: String,
        /// The provider's request id, if it sent one.
        request_id: Option<String>,
    },
    /// The stream was not well-formed SSE carrying chat-completion chunks (`PROTOCOL`).
    #[error("malformed stream{}: {detail}: {excerpt:?}", request_suffix(.request_id))]
    Protocol {
        /// What was wrong.
        detail: String,
        /// The offending data, cut to a few hundred characters.
        excerpt: String,
        /// The provider's request id, if it sent one.
        request_id: Option<String>,
    },
    /// The model finished with reason `stop` without producing any reasoning, text or tool call
    /// (`EMPTY_RESPONSE`); dsh treats this as a retryable failure.
    #[error("empty response: the model stopped without any content{}", request_suffix(.request_id))]
    EmptyResponse {
        /// The provider's request id, if it sent one.
        request_id: Option<String>,
    },
    /// The caller's cancellation token fired (`CANCELLED`).
    #[error("cancelled")]
    Cancelled,
    /// A [`ScriptedModel`](super::ScriptedModel) was asked for more responses than its script
    /// holds (`SCRIPT_EXHAUSTED`): the code under test made an unexpected request.
    #[error("scripted model exhausted: all {n_responses} responses were used")]
    ScriptExhausted {
        /// How many responses the script had.
        n_responses: usize,
    },
}

impl LlmError {
    /// The stable machine-readable code, e.g. `RATE_LIMITED`.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::RateLimited(_) => "RATE_LIMITED",
            LlmError::Server(_) => "SERVER_ERROR",
            LlmError::Auth(_) => "AUTH",
            LlmError::ContextWindowExceeded(_) => "CONTEXT_WINDOW_EXCEEDED",
            LlmError::BadRequest(_) => "BAD_REQUEST",
            LlmError::Transport { .. } => "TRANSPORT",
            LlmError::TimeoutConnect { .. } => "TIMEOUT_CONNECT",
            LlmError::TimeoutFirstByte { .. } => "TIMEOUT_FIRST_BYTE",
            LlmError::TimeoutIdle { .. } => "TIMEOUT_IDLE",
            LlmError::StreamDisconnected { .. } => "STREAM_DISCONNECTED",
            LlmError::Protocol { .. } => "PROTOCOL",
            LlmError::EmptyResponse { .. } => "EMPTY_RESPONSE",
            LlmError::Cancelled => "CANCELLED",
            LlmError::ScriptExhausted { .. } => "SCRIPT_EXHAUSTED",
        }
    }

    /// The HTTP failure behind the error, for the variants that come from an error response.
    pub fn http(&self) -> Option<&HttpFailure> {
        match self {
            LlmError::RateLimited(http)
            | LlmError::Server(http)
            | LlmError::Auth(http)
            | LlmError::ContextWindowExceeded(http)
            | LlmError::BadRequest(http) => Some(http),
            _ => None,
        }
    }

    /// The HTTP status, when the failure is an HTTP error response.
    pub fn status(&self) -> Option<u16> {
        self.http().map(|http| http.status)
    }

    /// The server's retry hint, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        self.http()
            .and_then(|http| http.retry_after_ms)
            .map(Duration::from_millis)
    }

    /// The provider's request id, when the response carried one.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            LlmError::RateLimited(http)
            | LlmError::Server(http)
            | LlmError::Auth(http)
            | LlmError::ContextWindowExceeded(http)
            | LlmError::BadRequest(http) => http.request_id.as_deref(),
            LlmError::TimeoutIdle { request_id, .. }
            | LlmError::StreamDisconnected { request_id, .. }
            | LlmError::Protocol { request_id, .. }
            | LlmError::EmptyResponse { request_id } => request_id.as_deref(),
            _ => None,
        }
    }
}

fn request_suffix(request_id: &Option<String>) -> String {
    match request_id {
        Some(id) => format!(" (request id {id})"),
        None => String::new(),
    }
}
