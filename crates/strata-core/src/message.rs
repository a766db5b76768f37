//! Messages: what surface events project to (session-core §4).
//!
//! A [`Message`] is a cheap handle on the event that carries it, so derived
//! message lists share the log's immutable values instead of copying them.
//! Projection is verbatim: `user/message` projects its `data`, the other
//! surface types project `data.message`; system and assistant messages with
//! empty content project nothing (an empty assistant message only carries
//! usage; an empty system message means "no prompt").
//!
//! Deciding whether an event projects builds no tree: a stored payload is read through a
//! borrowed view of its text, so deriving the messages of a restored log keeps it as text.
//! A message's tree is built when a caller reads it: [`Message::value`] keeps it in the event
//! (a live session sends the same messages with every request), [`Message::value_uncached`]
//! hands it over and drops it (a reader that passes over every message of a log once, such
//! as printing or exporting them, would otherwise hold a tree for each).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::event::{Event, EventType};
use crate::view::{Kind, Node, View};

/// One model-visible message, shared with the event it came from.
///
/// Invariant: `event` projects to a message (see [`project`]).
#[derive(Clone)]
pub struct Message {
    event: Arc<Event>,
}

impl Message {
    /// The message object, verbatim (`id`, `role`, `content`, `source`, extras). The tree is
    /// parsed on first use and stays in the event ([`Event::data`]), as it does for the
    /// accessors below; see [`Message::value_uncached`] for a pass over many messages.
    pub fn value(&self) -> &Value {
        match self.event.event_type {
            EventType::UserMessage => self.event.data(),
            _ => self.event.data().get("message").unwrap_or(&Value::Null),
        }
    }

    /// The message object, as [`Message::value`], without keeping the tree: borrowed when the
    /// event's payload is already parsed, otherwise parsed for the caller and dropped with the
    /// result ([`Event::data_uncached`]). For readers that pass over many messages once.
    pub fn value_uncached(&self) -> Cow<'_, Value> {
        let user = self.event.event_type == EventType::UserMessage;
        match self.event.data_uncached() {
            Cow::Borrowed(data) if user => Cow::Borrowed(data),
            Cow::Borrowed(data) => Cow::Borrowed(data.get("message").unwrap_or(&Value::Null)),
            Cow::Owned(data) if user => Cow::Owned(data),
            Cow::Owned(Value::Object(mut data)) => {
                Cow::Owned(data.remove("message").unwrap_or(Value::Null))
            }
            Cow::Owned(_) => Cow::Owned(Value::Null),
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

// Comparing, printing and serializing read each message once: no tree is kept for them.

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        Arc::ptr_eq(&self.event, &other.event) || self.value_uncached() == other.value_uncached()
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.value_uncached(), f)
    }
}

impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value_uncached().serialize(serializer)
    }
}

/// Projects one event to its message (`deriveEventMessage`), or `None`. Builds no tree: a
/// payload not yet parsed is read through a borrowed view of its text.
pub fn project(event: &Arc<Event>) -> Option<Message> {
    projects(event).then(|| Message {
        event: event.clone(),
    })
}

/// The message an event of `event_type` with payload `data` projects to (the object
/// [`Message::value`] reads), or `None`: [`project`]'s rule on a payload the caller parsed, so
/// a reader can project without keeping the tree in the event ([`Event::data_uncached`]).
pub fn projected_message<'v>(event_type: &EventType, data: &'v Value) -> Option<&'v Value> {
    message_node(event_type, data)
}

/// Materialized depths of the view [`projects`] reads: the payload and its `message` (whose
/// `content` is then raw text, enough to tell an empty array).
const PROJECT_VIEW_DEPTH: u8 = 2;

/// Whether `event` projects to a message: read from its tree when it is parsed, otherwise
/// from a view of its text (a `user/message` always does, with no read at all).
fn projects(event: &Event) -> bool {
    match event.event_type {
        EventType::UserMessage => return true,
        EventType::ToolResult
        | EventType::SystemMessage
        | EventType::DeveloperMessage
        | EventType::AssistantMessage => {}
        _ => return false,
    }
    if event.is_data_parsed() {
        return message_node(&event.event_type, event.data()).is_some();
    }
    match View::parse(event.data_json(), PROJECT_VIEW_DEPTH) {
        Some(view) => message_node(&event.event_type, &view).is_some(),
        // An accepted payload is valid JSON, so the view parses; should it not, the tree
        // answers (and is dropped).
        None => message_node(&event.event_type, &*event.data_uncached()).is_some(),
    }
}

/// The projection rule on a payload's tree or view: the message node, or `None`.
fn message_node<'n, N: Node<'n>>(event_type: &EventType, data: N) -> Option<N> {
    let message = match event_type {
        EventType::UserMessage => return Some(data),
        EventType::ToolResult => data.get("message")?,
        // An empty developer message keeps its node and projects nothing (docs/format-v4.md §2.2).
        EventType::SystemMessage | EventType::DeveloperMessage | EventType::AssistantMessage => {
            let message = data.get("message")?;
            if message.get("content").is_some_and(Node::is_empty_array) {
                return None;
            }
            message
        }
        _ => return None,
    };
    (message.kind() == Kind::Object).then_some(message)
}

#[cfg(test)]
mod tests;
