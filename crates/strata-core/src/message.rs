//! Messages: what surface events project to (session-core §4).
//!
//! A [`Message`] is a cheap handle on the event that carries it, so derived
//! message lists share the log's immutable values instead of copying them.
//! Projection is verbatim: `user/message` projects its `data`, the other
//! surface types project `data.message`; system and assistant messages with
//! empty content project nothing (an empty assistant message only carries
//! usage; an empty system message means "no prompt").

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::event::{Event, EventType};

/// One model-visible message, shared with the event it came from.
///
/// Invariant: `event` projects to a message (see [`project`]).
#[derive(Clone)]
pub struct Message {
    event: Arc<Event>,
}

impl Message {
    /// The message object, verbatim (`id`, `role`, `content`, `source`, extras).
    pub fn value(&self) -> &Value {
        match self.event.event_type {
            EventType::UserMessage => self.event.data(),
            _ => self.event.data().get("message").unwrap_or(&Value::Null),
        }
    }

    /// The event this message was projected from.
    pub fn event(&self) -> &Arc<Event> {
        &self.event
    }

    /// The message role (`system`, `user`, `assistant`; tool results are `user` in V3).
    pub fn role(&self) -> &str {
        self.value()
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The stable message id.
    pub fn id(&self) -> &str {
        self.value().get("id").and_then(Value::as_str).unwrap_or("")
    }

    /// The content blocks.
    pub fn content(&self) -> &[Value] {
        self.value()
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The message source (`{kind, …}`).
    pub fn source(&self) -> Option<&Value> {
        self.value().get("source")
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        Arc::ptr_eq(&self.event, &other.event) || self.value() == other.value()
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

/// Projects one event to its message (`deriveEventMessage`), or `None`.
pub fn project(event: &Arc<Event>) -> Option<Message> {
    projected_message(&event.event_type, event.data()).map(|_| Message {
        event: event.clone(),
    })
}

/// The message an event of `event_type` with payload `data` projects to (the object
/// [`Message::value`] reads), or `None`: [`project`]'s rule on a payload the caller parsed, so
/// a reader can project without keeping the tree in the event ([`Event::data_uncached`]).
pub fn projected_message<'v>(event_type: &EventType, data: &'v Value) -> Option<&'v Value> {
    let message = match event_type {
        EventType::UserMessage => return Some(data),
        EventType::ToolResult => data.get("message")?,
        EventType::SystemMessage | EventType::AssistantMessage => {
            let message = data.get("message")?;
            if matches!(message.get("content"), Some(Value::Array(blocks)) if blocks.is_empty()) {
                return None;
            }
            message
        }
        _ => return None,
    };
    message.is_object().then_some(message)
}
