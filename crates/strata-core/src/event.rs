//! Accepted events: the immutable records a session log is made of.
//!
//! An [`Event`] is only ever built by acceptance (`accept` module), so holding
//! one means every event-local rule of its generation held when it was
//! accepted. Events are shared as `Arc<Event>` between the log, the surface
//! and derived messages; nothing mutates them afterwards.
//!
//! Serialization keeps the envelope key order the event was read with and the
//! `data` object exactly (key order and number spelling), so a read-then-write
//! round trip is byte-identical.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::data::Data;
use crate::generation::{Generation, ReplaceSpelling};
use crate::seq::Seq;
use crate::view::{Node, View};

/// An event type tag such as `turn/start`; core types are interned variants.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `turn/start {turn}`.
    TurnStart,
    /// `turn/end {turn, reason}`.
    TurnEnd,
    /// `step/start {turn, step}`.
    StepStart,
    /// `step/end {turn, step}`.
    StepEnd,
    /// `system/message` — surface node 0 in V3.
    SystemMessage,
    /// `user/message` — the message itself is the payload.
    UserMessage,
    /// `assistant/message` — one settled model response.
    AssistantMessage,
    /// `assistant/attempt` — a failed or cancelled model attempt (V2+).
    AssistantAttempt,
    /// `assistant/chunk` — one provider stream chunk (v0/v1 only).
    AssistantChunk,
    /// `tool/call` — a tool call recorded as started.
    ToolCall,
    /// `tool/result` — the result message of one tool call.
    ToolResult,
    /// `request/header` — the call configuration of subsequent requests.
    RequestHeader,
    /// `request/context` — route metadata (provider, model, context window).
    RequestContext,
    /// `session/end-seed` — the boundary between seeded history and live work.
    SessionEndSeed,
    /// `todo/write` — the agent's todo list (latest wins).
    TodoWrite,
    /// `developer/message` — a step-scoped developer instruction, tool additions and
    /// removals (V4 only; unknown to V3 and older).
    DeveloperMessage,
    /// Any other type: a plugin event, known or unknown depending on the generation. The
    /// name sits behind a thin pointer so an `EventType` is 16 bytes, not 24: every loaded
    /// event carries one.
    Other(Arc<String>),
}

const CORE_TYPES: &[(&str, EventType)] = &[
    ("turn/start", EventType::TurnStart),
    ("turn/end", EventType::TurnEnd),
    ("step/start", EventType::StepStart),
    ("step/end", EventType::StepEnd),
    ("system/message", EventType::SystemMessage),
    ("user/message", EventType::UserMessage),
    ("assistant/message", EventType::AssistantMessage),
    ("assistant/attempt", EventType::AssistantAttempt),
    ("assistant/chunk", EventType::AssistantChunk),
    ("tool/call", EventType::ToolCall),
    ("tool/result", EventType::ToolResult),
    ("request/header", EventType::RequestHeader),
    ("request/context", EventType::RequestContext),
    ("session/end-seed", EventType::SessionEndSeed),
    ("todo/write", EventType::TodoWrite),
    ("developer/message", EventType::DeveloperMessage),
];

impl EventType {
    /// Whether events of this type join the surface under `generation` (and so must carry
    /// `surfaceOp`).
    pub fn is_surface_in(&self, generation: Generation) -> bool {
        match self {
            EventType::UserMessage | EventType::AssistantMessage | EventType::ToolResult => true,
            EventType::SystemMessage => generation >= Generation::V3,
            EventType::DeveloperMessage => generation >= Generation::V4,
            _ => false,
        }
    }

    /// Whether `generation`'s vocabulary declares the type (core or plugin).
    ///
    /// The read path refuses an unknown type unless it is marked `ignorable`
    /// (session-core §3.2); a known log-only type may never carry surface metadata.
    pub fn is_known_in(&self, generation: Generation) -> bool {
        match self {
            EventType::SystemMessage => generation >= Generation::V3,
            EventType::AssistantAttempt => generation >= Generation::V2,
            EventType::AssistantChunk => generation <= Generation::V1,
            EventType::DeveloperMessage => generation >= Generation::V4,
            // zDSH's `slots/dispatch` never was upstream's, and no V4 log holds it.
            EventType::Other(name) if generation.is_v4() && name.as_str() == "slots/dispatch" => {
                false
            }
            EventType::Other(name) => generation
                .plugin_types()
                .binary_search(&name.as_str())
                .is_ok(),
            _ => true,
        }
    }

    /// Interns a type tag; unknown tags become [`EventType::Other`].
    pub fn parse(tag: &str) -> EventType {
        if let Some((_, event_type)) = CORE_TYPES.iter().find(|(name, _)| *name == tag) {
            return event_type.clone();
        }
        // Known plugin names share one allocation each; others get their own.
        let interned = interned_plugin_names();
        match interned.binary_search_by(|name| name.as_str().cmp(tag)) {
            Ok(index) => EventType::Other(interned[index].clone()),
            Err(_) => EventType::Other(Arc::new(tag.to_owned())),
        }
    }

    /// The wire tag.
    pub fn as_str(&self) -> &str {
        match self {
            EventType::TurnStart => "turn/start",
            EventType::TurnEnd => "turn/end",
            EventType::StepStart => "step/start",
            EventType::StepEnd => "step/end",
            EventType::SystemMessage => "system/message",
            EventType::UserMessage => "user/message",
            EventType::AssistantMessage => "assistant/message",
            EventType::AssistantAttempt => "assistant/attempt",
            EventType::AssistantChunk => "assistant/chunk",
            EventType::ToolCall => "tool/call",
            EventType::ToolResult => "tool/result",
            EventType::RequestHeader => "request/header",
            EventType::RequestContext => "request/context",
            EventType::SessionEndSeed => "session/end-seed",
            EventType::TodoWrite => "todo/write",
            EventType::DeveloperMessage => "developer/message",
            EventType::Other(name) => name,
        }
    }
}

/// Every plugin type name some generation knows, sorted, allocated once.
fn interned_plugin_names() -> &'static [Arc<String>] {
    static NAMES: std::sync::OnceLock<Vec<Arc<String>>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&str> = crate::generation::all_plugin_types().collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .map(|name| Arc::new(name.to_owned()))
            .collect()
    })
}

impl fmt::Debug for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An inclusive span of current surface nodes, named by the node seqs at its ends.
///
/// The ends are ordered by *surface position*, not by number: after an earlier
/// replacement, `start` may be numerically greater than `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplaceRange {
    /// The first shadowed node.
    pub start: Seq,
    /// The last shadowed node (equal to `start` for a single-node rewrite).
    pub end: Seq,
}

/// How a surface event joins the surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SurfaceOp {
    /// Push the event's seq onto the tail.
    Append,
    /// Remove the inclusive span and put the event's seq in its place.
    Replace(ReplaceRange),
}

impl SurfaceOp {
    /// A replace of the inclusive span `start..=end` (by surface position).
    pub fn replace(start: Seq, end: Seq) -> SurfaceOp {
        SurfaceOp::Replace(ReplaceRange { start, end })
    }

    /// The op as JSON in a generation's spelling.
    pub fn to_value(self, spelling: ReplaceSpelling) -> Value {
        match self {
            SurfaceOp::Append => Value::from("append"),
            SurfaceOp::Replace(range) => {
                let (start_key, end_key) = match spelling {
                    ReplaceSpelling::StartEnd => ("start", "end"),
                    ReplaceSpelling::StartSeqEndSeq => ("startSeq", "endSeq"),
                };
                let mut map = serde_json::Map::new();
                map.insert("op".into(), Value::from("replace"));
                map.insert(start_key.into(), Value::from(range.start.get()));
                map.insert(end_key.into(), Value::from(range.end.get()));
                Value::Object(map)
            }
        }
    }
}

/// The surface metadata an accepted event carries.
#[derive(Clone, Debug, PartialEq)]
pub enum SurfaceMeta {
    /// A log-only event: neither `surfaceOp` nor `sourceEventSeqs`.
    LogOnly,
    /// A surface event with its validated placement and cited sources.
    Surface {
        /// How the event joined the surface.
        op: SurfaceOp,
        /// Cited earlier seqs, in the order written (`None` when absent).
        sources: Option<Arc<[Seq]>>,
    },
    /// An unknown `ignorable` event: whatever metadata it carried, kept verbatim and ignored.
    Opaque {
        /// The raw `surfaceOp` value, if present (boxed: opaque events are rare,
        /// and every event pays for the largest variant).
        surface_op: Option<Box<Value>>,
        /// The raw `sourceEventSeqs` value, if present.
        source_event_seqs: Option<Box<Value>>,
    },
}

/// An event's [`SurfaceMeta`] as the event holds it: 16 bytes instead of 40. Nearly every event
/// is log-only or a plain append, which need no allocation; the rest are boxed. With it an
/// `Event` is 88 bytes and its shared allocation fits glibc's 112-byte size class (a 1 M-event
/// log of small events is 16 MB smaller in memory).
///
/// Invariant: the form is canonical (`From<SurfaceMeta>`), so derived equality is equality of
/// the metadata.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StoredMeta {
    LogOnly,
    Append,
    Other(Box<SurfaceMeta>),
}

static LOG_ONLY: SurfaceMeta = SurfaceMeta::LogOnly;
static APPEND: SurfaceMeta = SurfaceMeta::Surface {
    op: SurfaceOp::Append,
    sources: None,
};

impl From<SurfaceMeta> for StoredMeta {
    fn from(meta: SurfaceMeta) -> StoredMeta {
        match meta {
            SurfaceMeta::LogOnly => StoredMeta::LogOnly,
            SurfaceMeta::Surface {
                op: SurfaceOp::Append,
                sources: None,
            } => StoredMeta::Append,
            other => StoredMeta::Other(Box::new(other)),
        }
    }
}

impl StoredMeta {
    /// The metadata.
    pub(crate) fn get(&self) -> &SurfaceMeta {
        match self {
            StoredMeta::LogOnly => &LOG_ONLY,
            StoredMeta::Append => &APPEND,
            StoredMeta::Other(meta) => meta,
        }
    }
}

/// One envelope key; used to remember the order keys were read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EnvelopeKey {
    Type,
    Seq,
    Time,
    Data,
    SourceEventSeqs,
    SurfaceOp,
    Ignorable,
}

impl EnvelopeKey {
    /// Every key, in dsh's runtime write order; a key's index here is its 3-bit code.
    const ALL: [EnvelopeKey; 7] = [
        EnvelopeKey::Type,
        EnvelopeKey::Seq,
        EnvelopeKey::Time,
        EnvelopeKey::Data,
        EnvelopeKey::SourceEventSeqs,
        EnvelopeKey::SurfaceOp,
        EnvelopeKey::Ignorable,
    ];

    const fn code(self) -> u32 {
        self as u32
    }
}

/// The order of envelope keys as read (or dsh's write order for new events).
///
/// Packed into 32 bits (seven 3-bit key codes, then a 3-bit count) because every event carries
/// one: this keeps `Event` at 120 bytes instead of 128.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyOrder {
    packed: u32,
}

impl KeyOrder {
    const BITS: u32 = 3;
    const LEN_SHIFT: u32 = 21;

    /// dsh's runtime write order: `type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?`.
    pub(crate) const CANONICAL: KeyOrder = {
        let mut order = KeyOrder::empty();
        let mut index = 0;
        while index < EnvelopeKey::ALL.len() {
            order.packed |= EnvelopeKey::ALL[index].code() << (KeyOrder::BITS * index as u32);
            index += 1;
        }
        order.packed |= (EnvelopeKey::ALL.len() as u32) << KeyOrder::LEN_SHIFT;
        order
    };

    pub(crate) const fn empty() -> KeyOrder {
        KeyOrder { packed: 0 }
    }

    fn len(self) -> usize {
        (self.packed >> Self::LEN_SHIFT) as usize
    }

    fn key(self, index: usize) -> EnvelopeKey {
        let code = (self.packed >> (Self::BITS * index as u32)) & 0b111;
        EnvelopeKey::ALL[code as usize]
    }

    fn read(self) -> impl Iterator<Item = EnvelopeKey> {
        (0..self.len()).map(move |index| self.key(index))
    }

    /// Records a key; returns false if it was already present (a duplicate key).
    pub(crate) fn push(&mut self, key: EnvelopeKey) -> bool {
        let len = self.len();
        if len >= EnvelopeKey::ALL.len() || self.read().any(|read| read == key) {
            return false;
        }
        self.packed |= key.code() << (Self::BITS * len as u32);
        self.packed =
            (self.packed & !(0b111 << Self::LEN_SHIFT)) | (((len + 1) as u32) << Self::LEN_SHIFT);
        true
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = EnvelopeKey> + '_ {
        // Keys never read (e.g. set by a typed append) follow in canonical order.
        let order = *self;
        order.read().chain(
            EnvelopeKey::ALL
                .into_iter()
                .filter(move |key| !order.read().any(|read| read == *key)),
        )
    }
}

impl std::fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.read()).finish()
    }
}

/// One accepted, immutable session event.
///
/// Two events are equal when they carry the same envelope values and the
/// same payload text; how they were read (key order, which checks ran) does
/// not matter.
#[derive(Clone, Debug)]
pub struct Event {
    pub(crate) event_type: EventType,
    pub(crate) seq: Seq,
    pub(crate) time: i64,
    pub(crate) data: Data,
    pub(crate) meta: StoredMeta,
    pub(crate) ignorable: bool,
    pub(crate) order: KeyOrder,
    /// The generation whose event-local data and shape rules this event
    /// passed (`None` when they were not checked, e.g. an offline fold).
    /// Those rules read the event alone, so a later replay under the same
    /// generation need not run them again.
    pub(crate) checked_under: Option<Generation>,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.event_type == other.event_type
            && self.seq == other.seq
            && self.time == other.time
            && self.ignorable == other.ignorable
            && self.meta == other.meta
            && self.data == other.data
    }
}

impl Event {
    /// Whether this is a tagged `session/end-seed {inherited: true}`: the marker whose seq is
    /// a V2+ log's inherited event count (§9.1).
    pub fn is_inherited_marker(&self) -> bool {
        self.event_type == EventType::SessionEndSeed
            && self.data.value_uncached().get("inherited") == Some(&Value::Bool(true))
    }

    /// The type tag.
    pub fn event_type(&self) -> &EventType {
        &self.event_type
    }

    /// The event's position in its log.
    pub fn seq(&self) -> Seq {
        self.seq
    }

    /// Epoch milliseconds at append (any safe integer; not monotonic).
    pub fn time(&self) -> i64 {
        self.time
    }

    /// The type-specific payload, parsed (on first use for events read from
    /// storage, which hold their payload as text).
    pub fn data(&self) -> &Value {
        self.data.value()
    }

    /// The payload parsed without keeping the tree: for a reader that passes over many events
    /// once (a report of a whole log), whose trees [`Event::data`] would keep in memory for
    /// the events' life. Borrows the tree when the payload is already parsed.
    pub fn data_uncached(&self) -> std::borrow::Cow<'_, Value> {
        self.data.value_uncached()
    }

    /// The payload's JSON text, exactly as stored (byte-identical to the input).
    pub fn data_json(&self) -> &str {
        self.data.json()
    }

    /// Whether the payload has been parsed (stored events parse lazily).
    pub fn is_data_parsed(&self) -> bool {
        self.data.is_parsed()
    }

    /// The surface metadata.
    pub fn meta(&self) -> &SurfaceMeta {
        self.meta.get()
    }

    /// The placement of a surface event; `None` for log-only and opaque events.
    pub fn surface_op(&self) -> Option<SurfaceOp> {
        match self.meta() {
            SurfaceMeta::Surface { op, .. } => Some(*op),
            _ => None,
        }
    }

    /// The cited sources of a surface event; `None` when absent or not a surface event.
    pub fn sources(&self) -> Option<&[Seq]> {
        match self.meta() {
            SurfaceMeta::Surface {
                sources: Some(sources),
                ..
            } => Some(sources),
            _ => None,
        }
    }

    /// Whether the envelope carried `ignorable: true`.
    pub fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    /// A field of `data` when `data` is an object.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.data.value().get(key)
    }

    /// A non-negative integer field of `data` (`turn`, `step`, …). Read through a borrowed
    /// view when the payload is not parsed: no tree is built for a number, nor kept.
    pub fn u64_field(&self, key: &str) -> Option<u64> {
        if self.data.is_parsed() {
            return self
                .data
                .value()
                .get(key)
                .and_then(crate::json::non_negative_safe_integer);
        }
        let data = View::parse(self.data.json(), 1)?;
        data.get(key)?.seq_number()
    }

    /// Serializes the envelope as one compact JSON object in `generation`'s
    /// spelling, byte-identical to dsh. `write_sources` writes the
    /// `sourceEventSeqs` value (plain array in memory; range-encoded in JSONL).
    pub fn write_json_with(
        &self,
        out: &mut Vec<u8>,
        generation: Generation,
        write_sources: &dyn Fn(&[Seq], &mut Vec<u8>),
    ) {
        out.push(b'{');
        let mut first = true;
        for key in self.order.keys() {
            let write_key = |out: &mut Vec<u8>, first: &mut bool, name: &str| {
                if !*first {
                    out.push(b',');
                }
                *first = false;
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
            };
            match key {
                EnvelopeKey::Type => {
                    write_key(out, &mut first, "type");
                    write_value(out, &Value::from(self.event_type.as_str()));
                }
                EnvelopeKey::Seq => {
                    write_key(out, &mut first, "seq");
                    out.extend_from_slice(self.seq.get().to_string().as_bytes());
                }
                EnvelopeKey::Time => {
                    write_key(out, &mut first, "time");
                    out.extend_from_slice(self.time.to_string().as_bytes());
                }
                EnvelopeKey::Data => {
                    write_key(out, &mut first, "data");
                    out.extend_from_slice(self.data.json().as_bytes());
                }
                EnvelopeKey::SourceEventSeqs => match self.meta() {
                    SurfaceMeta::Surface {
                        sources: Some(sources),
                        ..
                    } => {
                        write_key(out, &mut first, "sourceEventSeqs");
                        write_sources(sources, out);
                    }
                    SurfaceMeta::Opaque {
                        source_event_seqs: Some(raw),
                        ..
                    } => {
                        write_key(out, &mut first, "sourceEventSeqs");
                        write_value(out, raw);
                    }
                    _ => {}
                },
                EnvelopeKey::SurfaceOp => match self.meta() {
                    SurfaceMeta::Surface { op, .. } => {
                        write_key(out, &mut first, "surfaceOp");
                        write_value(out, &op.to_value(generation.replace_spelling()));
                    }
                    SurfaceMeta::Opaque {
                        surface_op: Some(raw),
                        ..
                    } => {
                        write_key(out, &mut first, "surfaceOp");
                        write_value(out, raw);
                    }
                    _ => {}
                },
                EnvelopeKey::Ignorable => {
                    if self.ignorable {
                        write_key(out, &mut first, "ignorable");
                        out.extend_from_slice(b"true");
                    }
                }
            }
        }
        out.push(b'}');
    }

    /// The envelope as compact V3 JSON with plain `sourceEventSeqs` arrays.
    pub fn to_json(&self) -> String {
        self.to_json_in(Generation::NATIVE)
    }

    /// The envelope as compact JSON in `generation`'s spelling, plain sources.
    pub fn to_json_in(&self, generation: Generation) -> String {
        let mut out = Vec::with_capacity(128);
        self.write_json_with(&mut out, generation, &write_plain_sources);
        // Every byte written is valid UTF-8 (serde_json output and ASCII).
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Writes a sources list as a plain JSON array of numbers.
pub fn write_plain_sources(sources: &[Seq], out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, seq) in sources.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(seq.get().to_string().as_bytes());
    }
    out.push(b']');
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    out.extend_from_slice(crate::json::to_js_string(value).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::{EnvelopeKey, Event, EventType, KeyOrder};
    use crate::generation::Generation;

    #[test]
    fn v0_knows_chunks_and_not_system_messages() {
        assert!(EventType::AssistantChunk.is_known_in(Generation::V0));
        assert!(!EventType::SystemMessage.is_known_in(Generation::V0));
        assert!(!EventType::SystemMessage.is_surface_in(Generation::V0));
        assert!(EventType::SystemMessage.is_surface_in(Generation::V3));
        assert!(!EventType::parse("tool/code-dispatch").is_known_in(Generation::V3));
        assert!(EventType::parse("tool/code-dispatch").is_known_in(Generation::V0));
    }

    #[test]
    fn key_order_keeps_the_read_order_refuses_duplicates_and_completes_canonically() {
        let mut order = KeyOrder::empty();
        assert!(order.push(EnvelopeKey::Data));
        assert!(order.push(EnvelopeKey::Type));
        assert!(!order.push(EnvelopeKey::Data), "a duplicate key");
        assert!(order.push(EnvelopeKey::Ignorable));
        let keys: Vec<EnvelopeKey> = order.keys().collect();
        assert_eq!(
            keys,
            [
                EnvelopeKey::Data,
                EnvelopeKey::Type,
                EnvelopeKey::Ignorable,
                EnvelopeKey::Seq,
                EnvelopeKey::Time,
                EnvelopeKey::SourceEventSeqs,
                EnvelopeKey::SurfaceOp,
            ]
        );
        let mut full = KeyOrder::empty();
        for key in EnvelopeKey::ALL.into_iter().rev() {
            assert!(full.push(key));
        }
        assert!(!full.push(EnvelopeKey::Type), "all seven are taken");
        let reversed: Vec<EnvelopeKey> = full.keys().collect();
        assert_eq!(
            reversed,
            EnvelopeKey::ALL.into_iter().rev().collect::<Vec<_>>()
        );
        assert_eq!(
            KeyOrder::CANONICAL.keys().collect::<Vec<_>>(),
            EnvelopeKey::ALL.to_vec()
        );
        assert_eq!(
            KeyOrder::empty().keys().collect::<Vec<_>>(),
            EnvelopeKey::ALL.to_vec()
        );
    }

    /// Every log holds one `Event` per line: its size is a per-event memory cost.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_event_stays_in_the_112_byte_size_class() {
        // With the 16 bytes `Arc` adds, up to 88 keeps an event in glibc's 112-byte size class
        // (a million loaded events: 16 MB less than at 104 bytes, 32 MB less than at 120).
        assert!(
            std::mem::size_of::<Event>() <= 88,
            "{}",
            std::mem::size_of::<Event>()
        );
    }
}
