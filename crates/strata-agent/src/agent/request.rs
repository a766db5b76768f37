//! Request headers and request reconstruction (session-core §7.2).
//!
//! The loop never builds a request from its own state: it writes the `request/header` (when
//! needed) and then reads the request back from the session — the header fold for the model,
//! tools and sampling settings, the derived messages for the conversation. So the request sent
//! at a step is, by construction, what [`chat_request`] rebuilds from the log prefix at that
//! point, and a test can check it against a stored log.

use serde_json::{Map, Value};
use strata_core::payload::{HeaderReason, RequestContext};
use strata_core::request::header_equals;
use strata_core::Session;

use super::convert::{chat_messages, ReasoningReplay};
use crate::llm::{ChatRequest, ToolDefinition};

/// The routed model and its call settings: what the `request/header` config and the
/// `request/context` record.
#[derive(Debug, Clone, PartialEq)]
pub struct CallConfig {
    /// Provider name recorded in the header and on assistant messages (e.g. `deepseek`).
    pub provider: String,
    /// Model name sent in requests.
    pub model: String,
    /// Cap on generated tokens; provider default when `None`.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; provider default when `None`.
    pub temperature: Option<f64>,
    /// Reasoning effort for models that take one.
    pub reasoning_effort: Option<String>,
    /// The model's context window in tokens, when known (recorded in `request/context`).
    pub context_window: Option<u64>,
}

impl CallConfig {
    /// `provider`/`model` with provider defaults for everything else.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> CallConfig {
        CallConfig {
            provider: provider.into(),
            model: model.into(),
            max_tokens: None,
            temperature: None,
            reasoning_effort: None,
            context_window: None,
        }
    }
}

/// Why a request could not be rebuilt from a session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReconstructError {
    /// The log has no `request/header` yet.
    #[error("session {id:?} has no request/header to rebuild a request from")]
    NoHeader {
        /// The session id.
        id: String,
    },
    /// The latest header lacks a field the request needs, or has it with the wrong type.
    #[error("request/header of session {id:?} is unusable: {detail}")]
    BadHeader {
        /// The session id.
        id: String,
        /// What is wrong.
        detail: String,
    },
}

/// The header `{config: {provider, model, maxTokens?, temperature?, reasoningEffort?}, tools?}`
/// (V3: no `system`, no empty `tools`).
pub fn header_value(call: &CallConfig, tools: &[Value]) -> Value {
    let mut config = Map::new();
    config.insert("provider".into(), call.provider.as_str().into());
    config.insert("model".into(), call.model.as_str().into());
    if let Some(max_tokens) = call.max_tokens {
        config.insert("maxTokens".into(), max_tokens.into());
    }
    if let Some(temperature) = call.temperature {
        config.insert("temperature".into(), temperature.into());
    }
    if let Some(effort) = &call.reasoning_effort {
        config.insert("reasoningEffort".into(), effort.as_str().into());
    }
    let mut header = Map::new();
    header.insert("config".into(), Value::Object(config));
    if !tools.is_empty() {
        header.insert("tools".into(), Value::Array(tools.to_vec()));
    }
    Value::Object(header)
}

/// The `request/context` payload for `call`.
pub fn context_payload(call: &CallConfig) -> RequestContext {
    RequestContext {
        provider: call.provider.clone(),
        model: call.model.clone(),
        context_window: call.context_window,
        system_prompt_update: None,
    }
}

/// Whether the folded `request/context` already records `call`'s route and capacity.
pub fn context_matches(folded: Option<&Value>, call: &CallConfig) -> bool {
    let Some(folded) = folded else {
        return false;
    };
    folded.get("provider").and_then(Value::as_str) == Some(call.provider.as_str())
        && folded.get("model").and_then(Value::as_str) == Some(call.model.as_str())
        && folded.get("contextWindow").and_then(Value::as_u64) == call.context_window
        && folded.get("systemPromptUpdate").is_none()
}

/// Whether the next request needs a `request/header`, and with what reason and
/// `startsSeries` marker:
///
/// - no header in the log → `initial`;
/// - the first request of this loop instance over a log with headers → `resume`;
/// - the header changed → `change` (starting a series if the surface was replaced too);
/// - the surface's replace generation moved since the previous request → `series`;
/// - otherwise no header.
pub fn header_reason(
    folded: Option<&Value>,
    desired: &Value,
    previous_generation: Option<u64>,
    generation: u64,
) -> Option<(HeaderReason, bool)> {
    match (folded, previous_generation) {
        (None, _) => Some((HeaderReason::Initial, false)),
        (Some(_), None) => Some((HeaderReason::Resume, false)),
        (Some(folded), Some(previous)) => {
            let moved = previous != generation;
            if !header_equals(folded, desired) {
                Some((HeaderReason::Change, moved))
            } else if moved {
                Some((HeaderReason::Series, false))
            } else {
                None
            }
        }
    }
}

/// The request the log implies at its current end: model, tools and settings from the latest
/// `request/header`, messages from the derived messages.
pub fn chat_request(
    session: &Session,
    reasoning: ReasoningReplay,
) -> Result<ChatRequest, ReconstructError> {
    let header = session
        .request_header()
        .ok_or_else(|| ReconstructError::NoHeader {
            id: session.id().to_owned(),
        })?;
    let derived = session.derive_messages();
    let messages = chat_messages(derived.iter().map(|message| message.value()), reasoning);
    request_from_header(session.id(), header, messages)
}

/// A request with `messages` and the model, tools and settings of the canonical `header`
/// (session `id` names the log in errors). Also used for summary requests, which must carry
/// the conversation's exact header (persistence §5.9).
pub fn request_from_header(
    id: &str,
    header: &Value,
    messages: Vec<crate::llm::ChatMessage>,
) -> Result<ChatRequest, ReconstructError> {
    let bad = |detail: &str| ReconstructError::BadHeader {
        id: id.to_owned(),
        detail: detail.to_owned(),
    };
    let config = header.get("config").ok_or_else(|| bad("no config"))?;
    let model = config
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("config.model is not a string"))?;
    let mut request = ChatRequest::new(model, messages);
    if let Some(max_tokens) = config.get("maxTokens") {
        let max_tokens = max_tokens
            .as_u64()
            .and_then(|tokens| u32::try_from(tokens).ok())
            .ok_or_else(|| bad("config.maxTokens is not a 32-bit count"))?;
        request.max_tokens = Some(max_tokens);
    }
    if let Some(temperature) = config.get("temperature") {
        request.temperature = Some(
            temperature
                .as_f64()
                .ok_or_else(|| bad("config.temperature is not a number"))?,
        );
    }
    if let Some(effort) = config.get("reasoningEffort") {
        request.reasoning_effort = Some(
            effort
                .as_str()
                .ok_or_else(|| bad("config.reasoningEffort is not a string"))?
                .to_owned(),
        );
    }
    if let Some(tools) = header.get("tools").and_then(Value::as_array) {
        for tool in tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a tool has no name"))?;
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let parameters = tool.get("parameters").cloned().unwrap_or(Value::Null);
            request
                .tools
                .push(ToolDefinition::function(name, description, parameters));
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests;
