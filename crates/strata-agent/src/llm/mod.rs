//! The LLM client: OpenAI-compatible `POST /chat/completions` with `stream: true`, DeepSeek's
//! extensions (`reasoning_content`, usage with prompt-cache counters), retries, and a scripted
//! model for offline runs.
//!
//! The pieces, bottom up: [`ChatRequest`] is the wire request; a [`ChatModel`] turns it into a
//! stream of provider-neutral [`StreamEvent`]s or one typed [`LlmError`]; [`HttpChatModel`]
//! speaks HTTP + SSE and [`ScriptedModel`] replays a JSON script; [`stream_with_retries`] runs
//! attempts under a [`RetryPolicy`] and reports each failed one so the caller can log it.

mod config;
mod error;
mod event;
mod http;
mod model;
mod request;
mod retry;
mod scripted;
mod sse;

pub use config::{Backoff, ConfigError, LlmConfig};
pub use error::{HttpFailure, LlmError};
pub use event::{FinishReason, StreamEvent, Usage};
pub use http::HttpChatModel;
pub use model::{ChatModel, EventStream};
pub use request::{
    ChatMessage, ChatRequest, FunctionCall, FunctionDefinition, ToolCall, ToolChoice,
    ToolDefinition, ToolKind,
};
pub use retry::{stream_with_retries, AttemptItem, AttemptStream, FailedAttempt, RetryPolicy};
pub use scripted::{ScriptError, ScriptedModel, ScriptedResponse};
pub use sse::decode_sse_stream;
