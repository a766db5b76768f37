//! Typed payloads of the V3 core events (session-core §3.1), built in dsh's key order.
//!
//! Each payload knows its event type and whether it is a surface event, so
//! [`Candidate`](crate::Candidate) can demand the right intent at compile time.
//! The message helpers build message objects with the key order dsh writes
//! (persistence-compaction §0.4a), which keeps our logs byte-comparable.

use serde_json::Value;

use crate::candidate::{object, LogOnlyPayload, Placement, SurfaceIntent, SurfacePayload};
use crate::event::EventType;

/// `turn/start {turn}`: opens turn `turn` (numbered from 1).
#[derive(Clone, Debug, PartialEq)]
pub struct TurnStart {
    /// The turn number.
    pub turn: u64,
}

/// `turn/end {turn, reason}`: closes a turn; `reason` is a `TurnEndReason` object.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnEnd {
    /// The turn number.
    pub turn: u64,
    /// `{kind: "completed" | "aborted" | "error" | "max-tokens" | "interrupted" | …}`.
    pub reason: Value,
}

/// `step/start {turn, step}`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepStart {
    /// The turn number.
    pub turn: u64,
    /// The step number within the turn.
    pub step: u64,
}

/// `step/end {turn, step}`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepEnd {
    /// The turn number.
    pub turn: u64,
    /// The step number within the turn.
    pub step: u64,
}

/// `tool/call`: a tool call recorded as started, before its body runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// The provider's call id.
    pub call_id: String,
    /// The tool name.
    pub name: String,
    /// The raw JSON argument string as the model produced it.
    pub arguments: String,
}

/// Why a `request/header` was written (§7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderReason {
    /// The first header of the log.
    Initial,
    /// The first request of a new loop instance over a log with headers.
    Resume,
    /// Config, adapter defaults or tools changed.
    Change,
    /// Same header, new message series (after a surface replacement).
    Series,
}

impl HeaderReason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HeaderReason::Initial => "initial",
            HeaderReason::Resume => "resume",
            HeaderReason::Change => "change",
            HeaderReason::Series => "series",
        }
    }
}

/// `request/header {header, reason, startsSeries?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestHeader {
    /// `{config, adapterDefaults?, tools?}` (V3 forbids `system`, empty tools, empty defaults).
    pub header: Value,
    /// Why the header was written.
    pub reason: HeaderReason,
    /// Marks an initial/resume/change header that also starts a series.
    pub starts_series: bool,
}

/// `request/context {provider, model, contextWindow?, systemPromptUpdate?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestContext {
    /// The routed provider.
    pub provider: String,
    /// The routed model.
    pub model: String,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// `Some("in-history")` when prompt changes are appended rather than replaced.
    pub system_prompt_update: Option<String>,
}

/// `session/end-seed {inherited?: true}`: the boundary between seeded and live events.
#[derive(Clone, Debug, PartialEq)]
pub struct EndSeed {
    /// True for a fresh fork child's inherited-prefix marker.
    pub inherited: bool,
}

/// `assistant/attempt {turn, step, stream}`: a failed, retried or cancelled model attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct AssistantAttempt {
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// The compact stream records of the attempt (§4.6).
    pub stream: Vec<Value>,
}

/// Any other log-only event (plugin records such as `compaction/start`).
#[derive(Clone, Debug, PartialEq)]
pub struct PluginEvent {
    /// The type tag.
    pub event_type: String,
    /// The payload.
    pub data: Value,
}

/// `user/message`: the payload is the message itself.
#[derive(Clone, Debug, PartialEq)]
pub struct UserMessage {
    /// `{content, source, role: "user", id}`.
    pub message: Value,
}

/// `system/message {turn, step, message}`: the system prompt node.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemMessage {
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// `{role: "system", content, source: {kind: "plugin", plugin}, id}`.
    pub message: Value,
}

/// `assistant/message {turn, step, message, stream, usage?, interrupted?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct AssistantMessage {
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// `{role: "assistant", content, source: {kind: "model", provider, model}, id}`.
    pub message: Value,
    /// The compact stream records of the attempt (§4.6).
    pub stream: Vec<Value>,
    /// Provider-reported token usage.
    pub usage: Option<Value>,
    /// True when the stream was cancelled and this is the delivered prefix.
    pub interrupted: bool,
}

/// `tool/result {turn, step, message, error?, meta?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The turn number.
    pub turn: u64,
    /// The step number of the call.
    pub step: u64,
    /// `{source: {kind: "tool", callId}, content: [tool-result block], role: "user", id}`.
    pub message: Value,
    /// `{name, code}` for failed results (requires `isError: true`).
    pub error: Option<Value>,
    /// Tool-specific metadata.
    pub meta: Option<Value>,
}

macro_rules! log_only {
    ($payload:ty, $event_type:expr, |$this:ident| $data:expr) => {
        impl LogOnlyPayload for $payload {
            fn event_type(&self) -> EventType {
                $event_type
            }
            fn into_data(self) -> Value {
                let $this = self;
                $data
            }
        }
    };
}

log_only!(TurnStart, EventType::TurnStart, |this| object(vec![(
    "turn",
    this.turn.into()
)]));
log_only!(TurnEnd, EventType::TurnEnd, |this| object(vec![
    ("turn", this.turn.into()),
    ("reason", this.reason)
]));
log_only!(StepStart, EventType::StepStart, |this| object(vec![
    ("turn", this.turn.into()),
    ("step", this.step.into())
]));
log_only!(StepEnd, EventType::StepEnd, |this| object(vec![
    ("turn", this.turn.into()),
    ("step", this.step.into())
]));
log_only!(ToolCall, EventType::ToolCall, |this| object(vec![
    ("turn", this.turn.into()),
    ("step", this.step.into()),
    ("callId", this.call_id.into()),
    ("name", this.name.into()),
    ("arguments", this.arguments.into())
]));
log_only!(RequestHeader, EventType::RequestHeader, |this| {
    let mut entries = vec![
        ("header", this.header),
        ("reason", this.reason.as_str().into()),
    ];
    if this.starts_series {
        entries.push(("startsSeries", true.into()));
    }
    object(entries)
});
log_only!(RequestContext, EventType::RequestContext, |this| {
    let mut entries = vec![
        ("provider", this.provider.into()),
        ("model", this.model.into()),
    ];
    if let Some(window) = this.context_window {
        entries.push(("contextWindow", window.into()));
    }
    if let Some(update) = this.system_prompt_update {
        entries.push(("systemPromptUpdate", update.into()));
    }
    object(entries)
});
log_only!(EndSeed, EventType::SessionEndSeed, |this| {
    if this.inherited {
        object(vec![("inherited", true.into())])
    } else {
        object(vec![])
    }
});
log_only!(
    AssistantAttempt,
    EventType::AssistantAttempt,
    |this| object(vec![
        ("turn", this.turn.into()),
        ("step", this.step.into()),
        ("stream", Value::Array(this.stream))
    ])
);
impl LogOnlyPayload for PluginEvent {
    fn event_type(&self) -> EventType {
        EventType::parse(&self.event_type)
    }
    fn into_data(self) -> Value {
        self.data
    }
}

impl SurfacePayload for UserMessage {
    type Intent = SurfaceIntent;
    fn event_type(&self) -> EventType {
        EventType::UserMessage
    }
    fn into_data(self) -> Value {
        self.message
    }
}

impl SurfacePayload for SystemMessage {
    type Intent = SurfaceIntent;
    fn event_type(&self) -> EventType {
        EventType::SystemMessage
    }
    fn into_data(self) -> Value {
        object(vec![
            ("turn", self.turn.into()),
            ("step", self.step.into()),
            ("message", self.message),
        ])
    }
}

impl SurfacePayload for AssistantMessage {
    type Intent = Placement;
    fn event_type(&self) -> EventType {
        EventType::AssistantMessage
    }
    fn into_data(self) -> Value {
        let mut entries = vec![
            ("turn", self.turn.into()),
            ("step", self.step.into()),
            ("message", self.message),
            ("stream", Value::Array(self.stream)),
        ];
        if let Some(usage) = self.usage {
            entries.push(("usage", usage));
        }
        if self.interrupted {
            entries.push(("interrupted", true.into()));
        }
        object(entries)
    }
}

impl SurfacePayload for ToolResult {
    type Intent = SurfaceIntent;
    fn event_type(&self) -> EventType {
        EventType::ToolResult
    }
    fn into_data(self) -> Value {
        let mut entries = vec![
            ("turn", self.turn.into()),
            ("step", self.step.into()),
            ("message", self.message),
        ];
        if let Some(error) = self.error {
            entries.push(("error", error));
        }
        if let Some(meta) = self.meta {
            entries.push(("meta", meta));
        }
        object(entries)
    }
}

/// A `text` content block.
pub fn text_block(text: &str) -> Value {
    object(vec![("type", "text".into()), ("text", text.into())])
}

/// A user message `{content, source: {kind: "user"}, role, id}` with one text block.
pub fn user_text_message(id: &str, text: &str) -> Value {
    user_message(
        id,
        vec![text_block(text)],
        object(vec![("kind", "user".into())]),
    )
}

/// A user message with explicit content and source (injected context, summaries).
pub fn user_message(id: &str, content: Vec<Value>, source: Value) -> Value {
    object(vec![
        ("content", Value::Array(content)),
        ("source", source),
        ("role", "user".into()),
        ("id", id.into()),
    ])
}

/// A system message; an empty `prompt` gives empty content ("no system prompt").
pub fn system_message(id: &str, prompt: &str, plugin: &str) -> Value {
    let content = if prompt.is_empty() {
        Vec::new()
    } else {
        vec![text_block(prompt)]
    };
    object(vec![
        ("role", "system".into()),
        ("content", Value::Array(content)),
        (
            "source",
            object(vec![("kind", "plugin".into()), ("plugin", plugin.into())]),
        ),
        ("id", id.into()),
    ])
}

/// An assistant message from `provider`/`model`.
pub fn assistant_message(id: &str, content: Vec<Value>, provider: &str, model: &str) -> Value {
    object(vec![
        ("role", "assistant".into()),
        ("content", Value::Array(content)),
        (
            "source",
            object(vec![
                ("kind", "model".into()),
                ("provider", provider.into()),
                ("model", model.into()),
            ]),
        ),
        ("id", id.into()),
    ])
}

/// A V3 tool-result message: one `tool-result` block wrapping `content`.
pub fn tool_result_message(id: &str, call_id: &str, content: Vec<Value>, is_error: bool) -> Value {
    object(vec![
        (
            "source",
            object(vec![("kind", "tool".into()), ("callId", call_id.into())]),
        ),
        (
            "content",
            Value::Array(vec![object(vec![
                ("type", "tool-result".into()),
                ("toolCallId", call_id.into()),
                ("content", Value::Array(content)),
                ("isError", is_error.into()),
            ])]),
        ),
        ("role", "user".into()),
        ("id", id.into()),
    ])
}

/// A `tool-call` content block.
pub fn tool_call_block(call_id: &str, name: &str, arguments: &str) -> Value {
    object(vec![
        ("type", "tool-call".into()),
        ("id", call_id.into()),
        ("name", name.into()),
        ("arguments", arguments.into()),
    ])
}
