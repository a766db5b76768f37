//! What the relational and head rules read of an event's payload, without building the rest.
//!
//! A stored event holds its payload as text. The message types (`user/message`,
//! `system/message`, `assistant/message`, `tool/result`, `assistant/attempt`: nine in ten
//! events of a conversation) carry the long texts, and the rules read a few scalars of them
//! (and of a `tool/call`, the next most common type): [`Message`] holds those in plain fields.
//! A store's decoding thread reads them from the view its scan of the row built
//! ([`Message::from_view`], carried to the restore with the row), so the restoring thread, the
//! one a load waits on, reads no payload text for them; elsewhere they are decoded in one pass
//! that skips everything else and builds no JSON tree. The other types have small payloads,
//! which [`payload`] parses whole.
//!
//! Invariant: for any payload text, [`Message::read`] equals [`Message::from_value`] of the
//! payload parsed whole. The decoding reads every JSON shape as the tree lookups do (a field
//! of another type reads as absent, a repeated key's last value wins, an array is not an
//! object); a text it cannot decode is parsed whole. [`Message::from_view`] of any view of the
//! payload equals it too, or declines (a view too shallow for a lookup).

use std::borrow::Cow;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::event::{Event, EventType};
use crate::json::non_negative_safe_integer;
use crate::seq::MAX_SAFE_INTEGER;
use crate::view::{Kind, Node, View};

/// The `source` of a message (`data.source` of a `user/message`, `data.message.source` of
/// the others), as the rules read it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Source {
    /// `kind` is the string `"user"`.
    pub user: bool,
    /// `kind` is the string `"plugin"`.
    pub plugin: bool,
    /// `plugin` is the string `"compact"`.
    pub compact: bool,
    /// `kind` is the string `"compact-checkpoint"` (V4's compaction checkpoint source).
    pub compact_checkpoint: bool,
    /// `callId`, when present (boxed: a `Value` is large, and most sources have none).
    call_id: Option<Box<Value>>,
    /// `compactionId` and `sourceCommandId`, when either is present (a compaction
    /// checkpoint's): held apart, as nearly every message has neither.
    compaction: Option<Box<Compaction>>,
}

/// A source's `compactionId` and `sourceCommandId`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Compaction {
    compaction_id: Option<Value>,
    source_command_id: Option<Value>,
}

impl Source {
    /// `callId`, when present.
    pub(crate) fn call_id(&self) -> Option<&Value> {
        self.call_id.as_deref()
    }

    /// `compactionId`, when present.
    pub(crate) fn compaction_id(&self) -> Option<&Value> {
        self.compaction.as_ref()?.compaction_id.as_ref()
    }

    /// `sourceCommandId`, when present.
    pub(crate) fn source_command_id(&self) -> Option<&Value> {
        self.compaction.as_ref()?.source_command_id.as_ref()
    }

    fn compaction_mut(&mut self) -> &mut Compaction {
        self.compaction.get_or_insert_with(Box::default)
    }
}

/// One `tool-call` block of an assistant message's `message.content`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    /// `id` (`null` when absent, as the rules compare it).
    pub id: Value,
    /// `name`, when present.
    pub name: Option<Value>,
    /// `arguments`, when present.
    pub arguments: Option<Value>,
}

/// A `turn` or `step` as the rules compare it: nearly always a plain safe integer, held
/// without a `Value` (a number's `Value` is a heap string under `arbitrary_precision`, and
/// facts read on a decoding thread are dropped on the restoring one). Any other value is
/// boxed, so the facts stay small.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Num {
    /// A non-negative safe integer.
    Int(u64),
    /// Any other value.
    Other(Box<Value>),
}

impl Num {
    fn of(value: Value) -> Num {
        match safe_count(&value) {
            Some(n) => Num::Int(n),
            None => Num::Other(Box::new(value)),
        }
    }

    /// [`Num::of`] of a borrowed value (copied only when it is not a count).
    pub(crate) fn of_ref(value: &Value) -> Num {
        safe_count(value).map_or_else(|| Num::Other(Box::new(value.clone())), Num::Int)
    }

    /// Whether the value is the integer `n` (JavaScript `===`).
    pub(crate) fn is(&self, n: u64) -> bool {
        match self {
            Num::Int(m) => *m == n,
            Num::Other(value) => non_negative_safe_integer(value) == Some(n),
        }
    }

    /// JavaScript `===` of two optional values (absent equals absent), as
    /// `relations::same` compares them.
    pub(crate) fn same(left: Option<&Num>, right: Option<&Num>) -> bool {
        match (left, right) {
            (None, None) => true,
            (Some(Num::Int(a)), Some(Num::Int(b))) => a == b,
            (Some(a), Some(b)) => super::same(Some(&a.value()), Some(&b.value())),
            _ => false,
        }
    }

    /// The value.
    pub(crate) fn value(&self) -> Cow<'_, Value> {
        match self {
            Num::Int(n) => Cow::Owned(Value::from(*n)),
            Num::Other(value) => Cow::Borrowed(&**value),
        }
    }
}

/// A plain non-negative safe integer.
fn safe_count(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// What the rules read of a `tool/call`: its top-level `callId`, `name` and `arguments`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Invocation {
    /// `callId`, when present.
    pub call_id: Option<Value>,
    /// `name`, when present.
    pub name: Option<Value>,
    /// `arguments`, when present.
    pub arguments: Option<Value>,
}

/// What the rules read of a message payload.
///
/// Small (no heap in the common message) and held by value: a decoding thread's facts travel
/// inline with the row to the restoring thread, which has nothing of theirs to free.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Message {
    /// The payload is a JSON object (P12).
    pub object: bool,
    /// `turn`, when present (`null` included).
    pub turn: Option<Num>,
    /// `step`, when present (`null` included).
    pub step: Option<Num>,
    /// The message's source (user, system and tool messages).
    pub source: Source,
    /// The `tool-call` blocks, in order (assistant messages).
    pub calls: Vec<Block>,
    /// The call a `tool/call` starts (`Some` exactly for a `tool/call`'s facts).
    invocation: Option<Box<Invocation>>,
}

/// The invocation of a message that starts no call.
static NO_INVOCATION: Invocation = Invocation {
    call_id: None,
    name: None,
    arguments: None,
};

impl Message {
    /// The call a `tool/call` starts (all absent for other types).
    pub(crate) fn invocation(&self) -> &Invocation {
        self.invocation.as_deref().unwrap_or(&NO_INVOCATION)
    }

    fn invocation_mut(&mut self) -> &mut Invocation {
        self.invocation.get_or_insert_with(Box::default)
    }
}

/// The types [`Message`] describes.
#[cfg(test)]
const TYPES: [EventType; 10] = [
    EventType::TurnStart,
    EventType::TurnEnd,
    EventType::StepStart,
    EventType::StepEnd,
    EventType::ToolCall,
    EventType::UserMessage,
    EventType::SystemMessage,
    EventType::AssistantMessage,
    EventType::ToolResult,
    EventType::AssistantAttempt,
];

/// Whether `event_type` is one of the types [`Message`] describes.
pub(crate) fn has_facts(event_type: &EventType) -> bool {
    matches!(
        event_type,
        EventType::TurnStart
            | EventType::TurnEnd
            | EventType::StepStart
            | EventType::StepEnd
            | EventType::ToolCall
            | EventType::UserMessage
            | EventType::SystemMessage
            | EventType::AssistantMessage
            | EventType::ToolResult
            | EventType::AssistantAttempt
    )
}

/// Which parts of a payload a type's rules read.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// `source` at the top (`user/message`).
    TopSource,
    /// `turn`, `step` and `message.source` (`system/message`, `tool/result`).
    MessageSource,
    /// `turn`, `step` and the `tool-call` blocks of `message.content`.
    Calls,
    /// `turn` and `step` (`assistant/attempt`, the turn and step boundaries).
    Settlement,
    /// `turn`, `step` and the started call (`tool/call`).
    Invocation,
}

fn shape(event_type: &EventType) -> Shape {
    match event_type {
        EventType::UserMessage => Shape::TopSource,
        EventType::SystemMessage | EventType::ToolResult => Shape::MessageSource,
        EventType::AssistantMessage => Shape::Calls,
        EventType::ToolCall => Shape::Invocation,
        _ => Shape::Settlement,
    }
}

impl Message {
    /// The facts of `event`'s payload: read from the tree when it is parsed (appends), else
    /// decoded from the text.
    pub(super) fn read(event: &Event) -> Message {
        if event.is_data_parsed() {
            return Message::from_value(&event.event_type, event.data());
        }
        Message::decode(&event.event_type, event.data_json())
            .unwrap_or_else(|| Message::from_value(&event.event_type, &event.data_uncached()))
    }

    /// The facts of a payload text of an object, in one pass; `None` for any other text.
    fn decode(event_type: &EventType, text: &str) -> Option<Message> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let facts = TopSeed(shape(event_type))
            .deserialize(&mut deserializer)
            .ok()?;
        deserializer.end().ok()?;
        Some(facts)
    }

    /// The facts of a parsed payload, by tree lookups (the reference [`Message::read`] agrees
    /// with).
    pub(super) fn from_value(event_type: &EventType, data: &Value) -> Message {
        // A tree holds every value it is asked for.
        Message::from_node(event_type, data).unwrap_or_default()
    }

    /// The facts of a payload's view, as a decoding thread reads them from the view its scan
    /// built (so the restoring thread reads no payload text); `None` when the view holds a
    /// container the rules look into as raw text (it was built too shallow for them).
    pub(crate) fn from_view(event_type: &EventType, data: &View<'_>) -> Option<Message> {
        Message::from_node(event_type, data)
    }

    /// The lookups behind [`Message::from_value`] and [`Message::from_view`].
    fn from_node<'n, N: Leaf<'n>>(event_type: &EventType, data: N) -> Option<Message> {
        let shape = shape(event_type);
        let mut facts = Message {
            object: data.kind() == Kind::Object,
            ..Message::default()
        };
        if data.opaque() {
            return None;
        }
        if shape != Shape::TopSource {
            facts.turn = num(data.member("turn"))?;
            facts.step = num(data.member("step"))?;
        }
        match shape {
            Shape::TopSource => facts.source = Source::from_node(data.member("source"))?,
            Shape::MessageSource => {
                let message = data.member("message");
                if message.is_some_and(N::opaque) {
                    return None;
                }
                facts.source =
                    Source::from_node(message.and_then(|message| message.member("source")))?;
            }
            Shape::Calls => {
                let message = data.member("message");
                if message.is_some_and(N::opaque) {
                    return None;
                }
                let content = message
                    .and_then(|message| message.member("content"))
                    .filter(|content| content.kind() == Kind::Array);
                if let Some(content) = content {
                    if content.opaque() {
                        return None;
                    }
                    for index in 0..content.len().unwrap_or(0) {
                        let Some(block) = content.at(index) else {
                            continue;
                        };
                        if block.opaque() {
                            return None;
                        }
                        let tool_call =
                            block.member("type").and_then(N::text).as_deref() == Some("tool-call");
                        if tool_call {
                            facts.calls.push(Block {
                                id: held(block.member("id"))?.unwrap_or(Value::Null),
                                name: held(block.member("name"))?,
                                arguments: held(block.member("arguments"))?,
                            });
                        }
                    }
                }
            }
            Shape::Invocation => {
                facts.invocation = Some(Box::new(Invocation {
                    call_id: held(data.member("callId"))?,
                    name: held(data.member("name"))?,
                    arguments: held(data.member("arguments"))?,
                }));
            }
            Shape::Settlement => {}
        }
        Some(facts)
    }
}

impl Source {
    fn from_node<'n, N: Leaf<'n>>(source: Option<N>) -> Option<Source> {
        let Some(source) = source else {
            return Some(Source::default());
        };
        if source.opaque() {
            return None;
        }
        let text = |key: &str| source.member(key).and_then(N::text);
        let value = |key: &str| held(source.member(key));
        let kind = text("kind");
        let compaction_id = value("compactionId")?;
        let source_command_id = value("sourceCommandId")?;
        let compaction = (compaction_id.is_some() || source_command_id.is_some()).then(|| {
            Box::new(Compaction {
                compaction_id,
                source_command_id,
            })
        });
        Some(Source {
            user: kind.as_deref() == Some("user"),
            plugin: kind.as_deref() == Some("plugin"),
            compact: text("plugin").as_deref() == Some("compact"),
            compact_checkpoint: kind.as_deref() == Some("compact-checkpoint"),
            call_id: value("callId")?.map(Box::new),
            compaction,
        })
    }
}

/// An optional member as the facts hold it: `Some(None)` when absent, `None` when a view
/// cannot give its value.
fn held<'n, N: Leaf<'n>>(node: Option<N>) -> Option<Option<Value>> {
    match node {
        None => Some(None),
        Some(node) => node.value().map(Some),
    }
}

/// [`held`] of a `turn` or `step`.
fn num<'n, N: Leaf<'n>>(node: Option<N>) -> Option<Option<Num>> {
    match node {
        None => Some(None),
        Some(node) => node.num().map(Some),
    }
}

/// A number's (or a raw value's) text as a value: a plain integer spelled canonically is the
/// value `Value::from` builds, anything else is parsed.
fn number(text: &str) -> Option<Value> {
    match crate::json::plain_integer(text) {
        Some(n) => Some(Value::from(n)),
        None => crate::json::parse(text).ok(),
    }
}

/// A payload node the facts are read from: a tree's node, or a view's.
trait Leaf<'n>: Node<'n> {
    /// The member `key` of an object, as [`Node::get`] finds it.
    fn member(self, key: &str) -> Option<Self> {
        self.get(key)
    }
    /// The node as a value; `None` for a container a view materialized (the rules copy only
    /// scalars and raw texts: ids, names, arguments).
    fn value(self) -> Option<Value>;
    /// Whether the node is a container a view keeps as raw text (a lookup in it finds
    /// nothing, where the tree's would).
    fn opaque(self) -> bool;
    /// The node as a `turn` or `step`.
    fn num(self) -> Option<Num> {
        self.value().map(Num::of)
    }
}

impl<'n> Leaf<'n> for &'n Value {
    /// A scan of the members, as a view's lookup: the facts read a few keys of small objects
    /// (a message, its source, a block), where hashing each key costs more than comparing it
    /// with every key. A map's keys are distinct, so the one found is the one `get` finds.
    fn member(self, key: &str) -> Option<Self> {
        self.as_object()?
            .iter()
            .find(|(name, _)| name.as_str() == key)
            .map(|(_, value)| value)
    }

    fn value(self) -> Option<Value> {
        Some(self.clone())
    }

    fn num(self) -> Option<Num> {
        Some(Num::of_ref(self))
    }

    fn opaque(self) -> bool {
        false
    }
}

impl<'n, 'a: 'n> Leaf<'n> for &'n View<'a> {
    fn value(self) -> Option<Value> {
        match self {
            View::Null => Some(Value::Null),
            View::Bool(value) => Some(Value::Bool(*value)),
            View::Str(text) => Some(Value::String(text.as_ref().to_owned())),
            // Turns, steps and ids are plain integers and strings: no parse for those.
            View::Number(text) => number(text),
            View::Deep(raw) if raw.starts_with('"') => {
                self.text().map(|text| text.into_owned().into())
            }
            View::Deep(raw) => number(raw),
            View::Array(_) | View::Object(_) => None,
        }
    }

    fn opaque(self) -> bool {
        matches!(self, View::Deep(raw) if raw.starts_with(['{', '[']))
    }

    fn num(self) -> Option<Num> {
        let plain = match self {
            View::Number(text) => crate::json::plain_integer(text),
            View::Deep(raw) => crate::json::plain_integer(raw),
            _ => None,
        };
        match plain {
            Some(n) if n <= MAX_SAFE_INTEGER => Some(Num::Int(n)),
            _ => self.value().map(Num::of),
        }
    }
}

/// The payload of a non-message event, as the rules read it: parsed whole, except for the
/// types no relational rule reads, whose only rule (P12) asks whether it is an object.
pub(super) fn payload(event: &Event) -> Cow<'_, Value> {
    if event.is_data_parsed() || handled_by_rules(event.event_type.as_str()) {
        return event.data_uncached();
    }
    let object = event.data_json().trim_start().starts_with('{');
    Cow::Owned(if object {
        Value::Object(serde_json::Map::new())
    } else {
        Value::Null
    })
}

/// Types with a relational rule of their own (others are read for P12 only).
fn handled_by_rules(tag: &str) -> bool {
    matches!(
        tag,
        "turn/start"
            | "turn/end"
            | "step/start"
            | "step/end"
            | "tool/call"
            | "developer/message"
            | "subagent/catalog"
            | "request/header"
            | "request/context"
            | "llm/retry"
            | "llm/retry-started"
            | "tool/ptc-dispatch-start"
            | "tool/ptc-dispatch"
            | "command/run"
            | "command/done"
            | "session/title"
            | "session/title-llm-request"
            | "compaction/start"
            | "compaction/summary"
            | "compaction/end"
            | "compaction/prune"
            | "session/end-seed"
            | "session-log-deepseek/delivery-accepted"
    )
}

// The decoders below read any JSON value: a value of a shape a lookup would not find
// (a number where an object belongs) reads as absent, as `Value::get` finds nothing in it.
// (Under serde_json's `arbitrary_precision` a number arrives as a one-key map, which reads as
// an object without the keys looked for, so it too reads as absent.)

/// Decodes the top-level object of a payload of one shape.
struct TopSeed(Shape);

impl<'de> DeserializeSeed<'de> for TopSeed {
    type Value = Message;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Message, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed {
    type Value = Message;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a payload object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut facts = Message {
            object: true,
            invocation: (self.0 == Shape::Invocation).then(Box::default),
            ..Message::default()
        };
        let reads_settlement = self.0 != Shape::TopSource;
        while let Some(key) = map.next_key::<Field>()? {
            match (key, self.0) {
                (Field::Turn, _) if reads_settlement => {
                    facts.turn = Some(raw_num(map.next_value()?)?);
                }
                (Field::Step, _) if reads_settlement => {
                    facts.step = Some(raw_num(map.next_value()?)?);
                }
                (Field::Source, Shape::TopSource) => {
                    facts.source = map.next_value::<AnySource>()?.0;
                }
                (Field::Message, Shape::MessageSource) => {
                    facts.source = map.next_value::<MessageSource>()?.0;
                }
                (Field::Message, Shape::Calls) => {
                    facts.calls = map.next_value::<MessageCalls>()?.0;
                }
                (Field::CallId, Shape::Invocation) => {
                    facts.invocation_mut().call_id = Some(map.next_value()?);
                }
                (Field::Name, Shape::Invocation) => {
                    facts.invocation_mut().name = Some(map.next_value()?);
                }
                (Field::Arguments, Shape::Invocation) => {
                    facts.invocation_mut().arguments = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(facts)
    }
}

/// A `turn` or `step` from its raw text (borrowed from the payload): a plain safe integer
/// without a `Value` (a number's is a heap string), anything else as the tree holds it.
fn raw_num<E: de::Error>(raw: &RawValue) -> Result<Num, E> {
    let text = raw.get();
    match crate::json::plain_integer(text) {
        Some(n) if n <= MAX_SAFE_INTEGER => Ok(Num::Int(n)),
        _ => number(text)
            .map(Num::of)
            .ok_or_else(|| E::custom("an unreadable turn or step")),
    }
}

/// Implements a visitor that reads any value, the non-object ones as `Default`.
macro_rules! any_value {
    ($visitor:ident, $what:literal) => {
        impl<'de> Deserialize<'de> for $visitor {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_any(AnyVisitor::<$visitor>(std::marker::PhantomData))
            }
        }

        impl<'de> Visitor<'de> for AnyVisitor<$visitor> {
            type Value = $visitor;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str($what)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$visitor, A::Error> {
                $visitor::read_map(map)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$visitor, A::Error> {
                $visitor::read_seq(seq)
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<$visitor, E> {
                Ok($visitor::default())
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<$visitor, E> {
                Ok($visitor::default())
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<$visitor, E> {
                Ok($visitor::default())
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<$visitor, E> {
                Ok($visitor::default())
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<$visitor, E> {
                Ok($visitor::from_str(value))
            }

            fn visit_unit<E: de::Error>(self) -> Result<$visitor, E> {
                Ok($visitor::default())
            }
        }
    };
}

struct AnyVisitor<T>(std::marker::PhantomData<T>);

/// The parts of one decoded value: what a map, a sequence or a string reads as.
trait Read: Default + Sized {
    fn read_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(Self::default())
    }

    fn read_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }

    fn from_str(_: &str) -> Self {
        Self::default()
    }
}

/// A string value compared with the texts the rules look for.
#[derive(Default, PartialEq)]
enum Text {
    User,
    Plugin,
    Compact,
    CompactCheckpoint,
    ToolCall,
    #[default]
    Other,
}

impl Read for Text {
    fn from_str(value: &str) -> Text {
        match value {
            "user" => Text::User,
            "plugin" => Text::Plugin,
            "compact" => Text::Compact,
            "compact-checkpoint" => Text::CompactCheckpoint,
            "tool-call" => Text::ToolCall,
            _ => Text::Other,
        }
    }
}
any_value!(Text, "a string");

/// An object key the rules read, compared without copying it.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Turn,
    Step,
    Message,
    Source,
    Kind,
    Plugin,
    CallId,
    CompactionId,
    SourceCommandId,
    Content,
    Type,
    Id,
    Name,
    Arguments,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_str(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
        Ok(match key {
            "turn" => Field::Turn,
            "step" => Field::Step,
            "message" => Field::Message,
            "source" => Field::Source,
            "kind" => Field::Kind,
            "plugin" => Field::Plugin,
            "callId" => Field::CallId,
            "compactionId" => Field::CompactionId,
            "sourceCommandId" => Field::SourceCommandId,
            "content" => Field::Content,
            "type" => Field::Type,
            "id" => Field::Id,
            "name" => Field::Name,
            "arguments" => Field::Arguments,
            _ => Field::Other,
        })
    }
}

/// A `source` object.
#[derive(Default)]
struct AnySource(Source);

impl Read for AnySource {
    fn read_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<AnySource, A::Error> {
        let mut source = Source::default();
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Kind => {
                    let kind = map.next_value::<Text>()?;
                    source.user = kind == Text::User;
                    source.plugin = kind == Text::Plugin;
                    source.compact_checkpoint = kind == Text::CompactCheckpoint;
                }
                Field::Plugin => source.compact = map.next_value::<Text>()? == Text::Compact,
                Field::CallId => source.call_id = Some(Box::new(map.next_value()?)),
                Field::CompactionId => {
                    source.compaction_mut().compaction_id = Some(map.next_value()?);
                }
                Field::SourceCommandId => {
                    source.compaction_mut().source_command_id = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(AnySource(source))
    }
}
any_value!(AnySource, "a source object");

/// A `message` object read for its `source`.
#[derive(Default)]
struct MessageSource(Source);

impl Read for MessageSource {
    fn read_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<MessageSource, A::Error> {
        let mut source = Source::default();
        while let Some(key) = map.next_key::<Field>()? {
            if key == Field::Source {
                source = map.next_value::<AnySource>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(MessageSource(source))
    }
}
any_value!(MessageSource, "a message object");

/// A `message` object read for the `tool-call` blocks of its `content`.
#[derive(Default)]
struct MessageCalls(Vec<Block>);

impl Read for MessageCalls {
    fn read_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<MessageCalls, A::Error> {
        let mut calls = Vec::new();
        while let Some(key) = map.next_key::<Field>()? {
            if key == Field::Content {
                calls = map.next_value::<Content>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(MessageCalls(calls))
    }
}
any_value!(MessageCalls, "a message object");

/// A `content` array: its `tool-call` blocks.
#[derive(Default)]
struct Content(Vec<Block>);

impl Read for Content {
    fn read_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Content, A::Error> {
        let mut calls = Vec::new();
        while let Some(block) = seq.next_element::<AnyBlock>()? {
            calls.extend(block.0);
        }
        Ok(Content(calls))
    }
}
any_value!(Content, "a content array");

/// One content block: `Some` for a `tool-call` block.
#[derive(Default)]
struct AnyBlock(Option<Block>);

impl Read for AnyBlock {
    fn read_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<AnyBlock, A::Error> {
        let mut call = false;
        let mut block = Block {
            id: Value::Null,
            name: None,
            arguments: None,
        };
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Type => call = map.next_value::<Text>()? == Text::ToolCall,
                Field::Id => block.id = map.next_value()?,
                Field::Name => block.name = Some(map.next_value()?),
                Field::Arguments => block.arguments = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(AnyBlock(call.then_some(block)))
    }
}
any_value!(AnyBlock, "a content block");

#[cfg(test)]
mod tests;
