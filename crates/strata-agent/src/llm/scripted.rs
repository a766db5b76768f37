//! [`ScriptedModel`]: a [`ChatModel`] that replays canned responses, so the whole agent loop
//! runs offline and reproducibly (tests, `strata demo`). It records every request it receives,
//! so a test can compare the request sent at each step with what the log reconstructs.
//!
//! # Script format
//!
//! A JSON object with one key, `responses`: one entry per expected request, used in order.
//! Each response has `events` (a list, may be empty) and an optional `error` injected after
//! them. Each event has a `type` and that type's fields, plus an optional `delay_ms` waited
//! before it is delivered:
//!
//! | `type` | fields |
//! |---|---|
//! | `reasoning_delta` | `text` (non-empty) |
//! | `text_delta` | `text` (non-empty) |
//! | `tool_call_delta` | `index`, optional `id`, `name`, `arguments_delta` (default `""`) |
//! | `usage` | `prompt_tokens`, `completion_tokens`, optional `prompt_cache_hit_tokens`, `prompt_cache_miss_tokens`, `reasoning_tokens` |
//! | `finish` | `reason`: `stop`, `length`, `tool_calls`, `content_filter` or any other string |
//!
//! The `error` object has a `code` (an [`LlmError::code`], e.g. `RATE_LIMITED`), and optionally
//! `message`, `status` (HTTP codes default to 429, 500, 401, 400 and 400 for `RATE_LIMITED`,
//! `SERVER_ERROR`, `AUTH`, `BAD_REQUEST`, `CONTEXT_WINDOW_EXCEEDED`), `retry_after_ms`,
//! `request_id`, `after_ms` (for the timeouts) and `delay_ms`.
//!
//! Delays sleep on Tokio's timer, so a script with delays needs a Tokio runtime with time
//! enabled; a test can pause that clock (`#[tokio::test(start_paused = true)]`) to replay long
//! delays instantly and exactly. Scripts without delays replay on any executor.
//!
//! A response must end with a `finish` event or have an `error`, and `finish` may only come
//! last, so every replayed stream keeps the [`EventStream`] contract. Unknown keys, and keys
//! that do not belong to an event's type, are rejected so typos fail loudly.
//!
//! ```
//! use strata_agent::llm::{LlmError, ScriptedModel};
//!
//! let script = r#"{"responses": [
//!   {"events": [], "error": {"code": "RATE_LIMITED", "retry_after_ms": 10}},
//!   {"events": [
//!     {"type": "reasoning_delta", "text": "The user wants the files."},
//!     {"type": "text_delta", "text": "Let me look.", "delay_ms": 5},
//!     {"type": "tool_call_delta", "index": 0, "id": "call_0", "name": "list_dir", "arguments_delta": ""},
//!     {"type": "tool_call_delta", "index": 0, "arguments_delta": "{\"path\": \".\"}"},
//!     {"type": "usage", "prompt_tokens": 120, "completion_tokens": 30, "prompt_cache_hit_tokens": 100},
//!     {"type": "finish", "reason": "tool_calls"}
//!   ]},
//!   {"events": [{"type": "text_delta", "text": "Two files."}],
//!    "error": {"code": "STREAM_DISCONNECTED", "message": "peer reset"}}
//! ]}"#;
//! let model = ScriptedModel::from_json_str(script).unwrap();
//! assert_eq!(model.n_remaining(), 3);
//! ```

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{stream, StreamExt};
use serde::Deserialize;

use super::{
    ChatModel, ChatRequest, EventStream, FinishReason, HttpFailure, LlmError, StreamEvent, Usage,
};

/// Replays a script of responses, one per request, and records the requests.
#[derive(Debug)]
pub struct ScriptedModel {
    responses: Vec<ScriptedResponse>,
    state: Mutex<ReplayState>,
}

/// One canned response: events, each after its delay, then optionally an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedResponse {
    /// The events in order, each with the delay before it is delivered.
    pub events: Vec<(Duration, StreamEvent)>,
    /// The error that ends the stream after the events, with its delay.
    pub error: Option<(Duration, LlmError)>,
}

impl ScriptedResponse {
    /// A response delivering `events` without delays.
    pub fn new(events: Vec<StreamEvent>) -> ScriptedResponse {
        ScriptedResponse {
            events: events.into_iter().map(|e| (Duration::ZERO, e)).collect(),
            error: None,
        }
    }

    /// A response delivering `events` without delays, then failing with `error`.
    pub fn failing(events: Vec<StreamEvent>, error: LlmError) -> ScriptedResponse {
        ScriptedResponse {
            error: Some((Duration::ZERO, error)),
            ..ScriptedResponse::new(events)
        }
    }
}

/// Why a script was rejected. Indexes are 0-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// Not JSON, or not the script shape (unknown key, wrong type).
    #[error("script is not valid: {detail}")]
    Json {
        /// serde's message, with line and column.
        detail: String,
    },
    /// One event is wrong for its type.
    #[error("script response {response_idx}, event {event_idx}: {detail}")]
    Event {
        /// Which response.
        response_idx: usize,
        /// Which event within it.
        event_idx: usize,
        /// What is wrong.
        detail: String,
    },
    /// A response as a whole breaks the stream contract.
    #[error("script response {response_idx}: {detail}")]
    Response {
        /// Which response.
        response_idx: usize,
        /// What is wrong.
        detail: String,
    },
}

#[derive(Debug, Default)]
struct ReplayState {
    /// Invariant: index of the next response to replay; equals `responses.len()` once used up.
    next_idx: usize,
    requests: Vec<ChatRequest>,
}

impl ScriptedModel {
    /// A model replaying `responses` in order. Fails if a response breaks the stream contract
    /// (no terminal finish or error, finish not last, empty text delta).
    pub fn new(responses: Vec<ScriptedResponse>) -> Result<ScriptedModel, ScriptError> {
        for (response_idx, response) in responses.iter().enumerate() {
            check_response(response_idx, response)?;
        }
        Ok(ScriptedModel {
            responses,
            state: Mutex::new(ReplayState::default()),
        })
    }

    /// Parses a script in the format of the module documentation.
    pub fn from_json_str(json: &str) -> Result<ScriptedModel, ScriptError> {
        let script: ScriptWire =
            strata_core::json::from_str(json).map_err(|error| ScriptError::Json {
                detail: error.to_string(),
            })?;
        let mut responses = Vec::with_capacity(script.responses.len());
        for (response_idx, response) in script.responses.into_iter().enumerate() {
            let mut events = Vec::with_capacity(response.events.len());
            for (event_idx, event) in response.events.into_iter().enumerate() {
                let delay = Duration::from_millis(event.delay_ms);
                let event = event.into_event().map_err(|detail| ScriptError::Event {
                    response_idx,
                    event_idx,
                    detail,
                })?;
                events.push((delay, event));
            }
            let error = match response.error {
                Some(error) => {
                    let delay = Duration::from_millis(error.delay_ms);
                    let error = error.into_error().map_err(|detail| ScriptError::Response {
                        response_idx,
                        detail,
                    })?;
                    Some((delay, error))
                }
                None => None,
            };
            responses.push(ScriptedResponse { events, error });
        }
        ScriptedModel::new(responses)
    }

    /// Every request received so far, in order, including any made after the script ran out.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// How many responses are left to replay.
    pub fn n_remaining(&self) -> usize {
        self.responses.len() - self.lock().next_idx
    }

    /// The state survives a panicking test thread: it is only ever appended to.
    fn lock(&self) -> MutexGuard<'_, ReplayState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ChatModel for ScriptedModel {
    fn stream(&self, request: &ChatRequest) -> EventStream {
        let mut state = self.lock();
        state.requests.push(request.clone());
        let Some(response) = self.responses.get(state.next_idx) else {
            let error = LlmError::ScriptExhausted {
                n_responses: self.responses.len(),
            };
            return Box::pin(stream::iter([Err(error)]));
        };
        state.next_idx += 1;
        let mut steps: Vec<(Duration, Result<StreamEvent, LlmError>)> = response
            .events
            .iter()
            .map(|(delay, event)| (*delay, Ok(event.clone())))
            .collect();
        if let Some((delay, error)) = &response.error {
            steps.push((*delay, Err(error.clone())));
        }
        Box::pin(stream::iter(steps).then(|(delay, item)| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            item
        }))
    }
}

fn check_response(response_idx: usize, response: &ScriptedResponse) -> Result<(), ScriptError> {
    let n_events = response.events.len();
    for (event_idx, (_, event)) in response.events.iter().enumerate() {
        let invalid = |detail: &str| ScriptError::Event {
            response_idx,
            event_idx,
            detail: detail.to_owned(),
        };
        match event {
            StreamEvent::ReasoningDelta { text } | StreamEvent::TextDelta { text }
                if text.is_empty() =>
            {
                return Err(invalid("delta text is empty"));
            }
            StreamEvent::Finish { .. } if event_idx + 1 != n_events => {
                return Err(invalid("finish is not the last event"));
            }
            StreamEvent::Finish { .. } if response.error.is_some() => {
                return Err(invalid("finish is followed by an error"));
            }
            _ => {}
        }
    }
    let finished = matches!(
        response.events.last(),
        Some((_, StreamEvent::Finish { .. }))
    );
    if !finished && response.error.is_none() {
        return Err(ScriptError::Response {
            response_idx,
            detail: "ends with neither a finish event nor an error".into(),
        });
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptWire {
    responses: Vec<ResponseWire>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseWire {
    #[serde(default)]
    events: Vec<EventWire>,
    #[serde(default)]
    error: Option<ErrorWire>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum EventKindWire {
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    Finish,
}

/// One event, flat, with the tag checked by hand: serde's internally tagged enums buffer their
/// input, and under the workspace's `arbitrary_precision` feature a buffered float no longer
/// deserializes ("invalid type: map, expected f64"). Checking by hand also lets the error say
/// which field does not belong to which event type.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventWire {
    #[serde(rename = "type")]
    kind: EventKindWire,
    #[serde(default)]
    delay_ms: u64,
    text: Option<String>,
    index: Option<u32>,
    id: Option<String>,
    name: Option<String>,
    arguments_delta: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_cache_hit_tokens: Option<u64>,
    prompt_cache_miss_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    reason: Option<String>,
}

impl EventWire {
    fn into_event(self) -> Result<StreamEvent, String> {
        let present = [
            ("text", self.text.is_some()),
            ("index", self.index.is_some()),
            ("id", self.id.is_some()),
            ("name", self.name.is_some()),
            ("arguments_delta", self.arguments_delta.is_some()),
            ("prompt_tokens", self.prompt_tokens.is_some()),
            ("completion_tokens", self.completion_tokens.is_some()),
            (
                "prompt_cache_hit_tokens",
                self.prompt_cache_hit_tokens.is_some(),
            ),
            (
                "prompt_cache_miss_tokens",
                self.prompt_cache_miss_tokens.is_some(),
            ),
            ("reasoning_tokens", self.reasoning_tokens.is_some()),
            ("reason", self.reason.is_some()),
        ];
        let (kind_name, allowed): (&str, &[&str]) = match self.kind {
            EventKindWire::ReasoningDelta => ("reasoning_delta", &["text"]),
            EventKindWire::TextDelta => ("text_delta", &["text"]),
            EventKindWire::ToolCallDelta => (
                "tool_call_delta",
                &["index", "id", "name", "arguments_delta"],
            ),
            EventKindWire::Usage => (
                "usage",
                &[
                    "prompt_tokens",
                    "completion_tokens",
                    "prompt_cache_hit_tokens",
                    "prompt_cache_miss_tokens",
                    "reasoning_tokens",
                ],
            ),
            EventKindWire::Finish => ("finish", &["reason"]),
        };
        if let Some((field, _)) = present
            .iter()
            .find(|(field, is_present)| *is_present && !allowed.contains(field))
        {
            return Err(format!(
                "field {field} does not belong to a {kind_name} event"
            ));
        }
        let missing = |field: &str| format!("{kind_name} event lacks {field}");
        Ok(match self.kind {
            EventKindWire::ReasoningDelta => StreamEvent::ReasoningDelta {
                text: self.text.ok_or_else(|| missing("text"))?,
            },
            EventKindWire::TextDelta => StreamEvent::TextDelta {
                text: self.text.ok_or_else(|| missing("text"))?,
            },
            EventKindWire::ToolCallDelta => StreamEvent::ToolCallDelta {
                index: self.index.ok_or_else(|| missing("index"))?,
                id: self.id,
                name: self.name,
                arguments_delta: self.arguments_delta.unwrap_or_default(),
            },
            EventKindWire::Usage => StreamEvent::Usage(Usage {
                prompt_tokens: self.prompt_tokens.ok_or_else(|| missing("prompt_tokens"))?,
                completion_tokens: self
                    .completion_tokens
                    .ok_or_else(|| missing("completion_tokens"))?,
                prompt_cache_hit_tokens: self.prompt_cache_hit_tokens,
                prompt_cache_miss_tokens: self.prompt_cache_miss_tokens,
                reasoning_tokens: self.reasoning_tokens,
            }),
            EventKindWire::Finish => StreamEvent::Finish {
                reason: FinishReason::from_wire(&self.reason.ok_or_else(|| missing("reason"))?),
            },
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorWire {
    code: String,
    #[serde(default)]
    message: String,
    status: Option<u16>,
    retry_after_ms: Option<u64>,
    request_id: Option<String>,
    after_ms: Option<u64>,
    #[serde(default)]
    delay_ms: u64,
}

impl ErrorWire {
    fn into_error(self) -> Result<LlmError, String> {
        let http = |default_status: u16| HttpFailure {
            status: self.status.unwrap_or(default_status),
            message: self.message.clone(),
            retry_after_ms: self.retry_after_ms,
            request_id: self.request_id.clone(),
        };
        let after_ms = self.after_ms.unwrap_or(0);
        Ok(match self.code.as_str() {
            "RATE_LIMITED" => LlmError::RateLimited(http(429)),
            "SERVER_ERROR" => LlmError::Server(http(500)),
            "AUTH" => LlmError::Auth(http(401)),
            "BAD_REQUEST" => LlmError::BadRequest(http(400)),
            "CONTEXT_WINDOW_EXCEEDED" => LlmError::ContextWindowExceeded(http(400)),
            "TRANSPORT" => LlmError::Transport {
                detail: self.message,
            },
            "TIMEOUT_CONNECT" => LlmError::TimeoutConnect { after_ms },
            "TIMEOUT_FIRST_BYTE" => LlmError::TimeoutFirstByte { after_ms },
            "TIMEOUT_IDLE" => LlmError::TimeoutIdle {
                after_ms,
                request_id: self.request_id,
            },
            "STREAM_DISCONNECTED" => LlmError::StreamDisconnected {
                detail: self.message,
                request_id: self.request_id,
            },
            "PROTOCOL" => LlmError::Protocol {
                detail: self.message,
                excerpt: String::new(),
                request_id: self.request_id,
            },
            "EMPTY_RESPONSE" => LlmError::EmptyResponse {
                request_id: self.request_id,
            },
            "CANCELLED" => LlmError::Cancelled,
            other => return Err(format!("unknown error code {other:?}")),
        })
    }
}

#[cfg(test)]
mod tests;
