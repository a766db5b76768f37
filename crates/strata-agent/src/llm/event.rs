//! The provider-neutral events of one streamed model attempt.
//!
//! Every [`ChatModel`](super::ChatModel) speaks this vocabulary, whatever its wire format, so
//! the agent loop, the session log's embedded `stream` and the tests see one shape. It mirrors
//! dsh's `StreamChunk` deltas (session-core §4.6) without the block start/end bookkeeping, which
//! the loop can derive.

/// One event of a streamed attempt.
///
/// A successful stream is: any number of deltas, at most one [`StreamEvent::Usage`], then
/// exactly one [`StreamEvent::Finish`], which is always last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the model's visible chain of thought (DeepSeek `reasoning_content`).
    ReasoningDelta {
        /// The piece; never empty.
        text: String,
    },
    /// A piece of the answer text (`content`).
    TextDelta {
        /// The piece; never empty.
        text: String,
    },
    /// A piece of one tool call. Calls are told apart by `index`; the first delta of a call
    /// carries its `id` and `name`, later ones usually only more argument text.
    ToolCallDelta {
        /// Position of the call in the assistant message (0-based), stable across deltas.
        index: u32,
        /// The provider's call id, present on the first delta of the call.
        id: Option<String>,
        /// The function name, present on the first delta of the call.
        name: Option<String>,
        /// More raw JSON argument text; concatenating all of a call's pieces gives its arguments.
        arguments_delta: String,
    },
    /// Token accounting for the attempt, reported once near the end.
    Usage(Usage),
    /// The model stopped; the attempt is complete.
    Finish {
        /// Why the model stopped.
        reason: FinishReason,
    },
}

impl StreamEvent {
    /// Whether the event carries model output (reasoning, text or a tool call). Retrying an
    /// attempt is only safe while none has been delivered: the user may already have seen it.
    pub fn is_content(&self) -> bool {
        matches!(
            self,
            StreamEvent::ReasoningDelta { .. }
                | StreamEvent::TextDelta { .. }
                | StreamEvent::ToolCallDelta { .. }
        )
    }
}

/// Why the model stopped, as the OpenAI-compatible `finish_reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// Natural end of the answer (`stop`).
    Stop,
    /// `max_tokens` reached (`length`); the answer is truncated.
    Length,
    /// The model wants tool results before going on (`tool_calls`).
    ToolCalls,
    /// The provider withheld output (`content_filter`).
    ContentFilter,
    /// Any other reason, spelled as the provider sent it (DeepSeek, for one, may send
    /// `insufficient_system_resource`).
    Other(String),
}

impl FinishReason {
    /// Maps the wire spelling; unknown spellings are kept, not rejected, because providers add
    /// reasons and a finished answer is still worth keeping.
    pub fn from_wire(reason: &str) -> FinishReason {
        match reason {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }

    /// The wire spelling, inverse of [`FinishReason::from_wire`].
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other,
        }
    }
}

/// Token counts of one attempt. The optional fields are DeepSeek's (prompt cache) or reported
/// only by some models (reasoning); `None` means the provider did not say, not zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens in the request, cached or not.
    pub prompt_tokens: u64,
    /// Tokens generated, reasoning included.
    pub completion_tokens: u64,
    /// Prompt tokens served from DeepSeek's context cache (billed lower). Filled from OpenAI's
    /// `prompt_tokens_details.cached_tokens` when the DeepSeek field is absent.
    pub prompt_cache_hit_tokens: Option<u64>,
    /// Prompt tokens not found in the context cache.
    pub prompt_cache_miss_tokens: Option<u64>,
    /// Of `completion_tokens`, those spent on reasoning.
    pub reasoning_tokens: Option<u64>,
}
