//! Wire shapes: an event row as read from storage, before acceptance.
//!
//! A [`RawEvent`] holds each envelope field as the JSON it was written with,
//! plus what the decoder noticed (unknown keys, a non-object row, key order).
//! Nothing is judged here: acceptance decides, in the order the rules are
//! listed, so the first failing rule is the one reported. This is the only
//! module whose types derive serde; surface, plan and index types stay private
//! to their modules so the wire format is the only compatibility promise.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::data::Payload;

use crate::event::{EnvelopeKey, Event, EventType, KeyOrder, SurfaceMeta};
use crate::generation::Generation;
use crate::seq::Seq;

/// One event row as read from storage or built by a caller, not yet accepted.
#[derive(Clone, Debug, Default)]
pub struct RawEvent {
    pub(crate) event_type: Option<TypeField>,
    pub(crate) seq: Option<Scalar>,
    pub(crate) time: Option<Scalar>,
    pub(crate) data: Option<Payload>,
    // The fields most rows lack (or, for `type`, `seq` and `time`, hold without a `Value`) are
    // boxed: a row is moved from decoder to rule check to restore, and 520 bytes of inline
    // `Value`s made those moves a measurable part of a load.
    pub(crate) surface_op: Option<Box<Value>>,
    pub(crate) source_event_seqs: Option<Box<Value>>,
    pub(crate) ignorable: Option<Box<Value>>,
    /// `sourceEventSeqs` was a compact list of plain seqs (a tool result's `[7]`), held typed:
    /// as a `Value` every number was a heap string (`arbitrary_precision`), parsed back into
    /// seqs by the rules. Invariant: `source_event_seqs` is then `None`.
    pub(crate) plain_sources: Option<Arc<[Seq]>>,
    pub(crate) order: Option<KeyOrder>,
    /// `surfaceOp` was the plain `"append"` nearly every surface event carries, held without
    /// a value (docs/measurements.md §4). Invariant: `surface_op` is then `None`.
    pub(crate) append_op: bool,
    /// The row was not a JSON object, or had a key outside the envelope.
    pub(crate) malformed: bool,
    /// The row was JSON `null` (v0 readers fail on it differently from other non-objects).
    pub(crate) null_row: bool,
}

impl RawEvent {
    /// Decodes a parsed JSON row. Never fails: defects are kept for acceptance to report.
    pub fn from_value(value: Value) -> RawEvent {
        let Value::Object(map) = value else {
            return RawEvent {
                malformed: true,
                null_row: value.is_null(),
                ..RawEvent::default()
            };
        };
        let mut raw = RawEvent {
            order: Some(KeyOrder::empty()),
            ..RawEvent::default()
        };
        for (key, value) in map {
            raw.set_field(&key, value);
        }
        raw
    }

    /// Parses one JSON text (a JSONL line without its newline).
    pub fn from_json_str(text: &str) -> Result<RawEvent, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Parses one JSON text from bytes.
    pub fn from_json_slice(bytes: &[u8]) -> Result<RawEvent, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// A raw copy of an accepted event, for re-seeding history (replay, fork,
    /// migration). Sources come back as a plain array.
    pub fn from_event(event: &Event) -> RawEvent {
        RawEvent::from_event_in(event, Generation::NATIVE)
    }

    /// [`RawEvent::from_event`] with replace endpoints spelled as `generation` writes them
    /// (`start`/`end` before V3), to replay an older generation's log under its own rules.
    pub fn from_event_in(event: &Event, generation: Generation) -> RawEvent {
        let (surface_op, source_event_seqs, plain_sources) = match event.meta() {
            SurfaceMeta::LogOnly => (None, None, None),
            SurfaceMeta::Surface { op, sources } => (
                Some(Box::new(op.to_value(generation.replace_spelling()))),
                None,
                sources.clone(),
            ),
            SurfaceMeta::Opaque {
                surface_op,
                source_event_seqs,
            } => (surface_op.clone(), source_event_seqs.clone(), None),
        };
        RawEvent {
            event_type: Some(TypeField::Tag(event.event_type.clone())),
            seq: Some(Scalar::Number(event.seq.get() as f64)),
            time: Some(Scalar::Number(event.time as f64)),
            data: Some(Payload::Text(event.data.text().clone())),
            surface_op,
            source_event_seqs,
            plain_sources,
            ignorable: event.ignorable.then(|| Box::new(Value::Bool(true))),
            order: Some(event.order),
            append_op: false,
            malformed: false,
            null_row: false,
        }
    }

    fn set_field(&mut self, key: &str, value: Value) {
        let (slot, envelope_key) = match key {
            "type" => {
                self.event_type = Some(TypeField::from_value(value));
                if let Some(order) = &mut self.order {
                    order.push(EnvelopeKey::Type);
                }
                return;
            }
            "seq" | "time" => {
                let scalar = Scalar::from_value(value);
                if key == "seq" {
                    self.seq = Some(scalar);
                } else {
                    self.time = Some(scalar);
                }
                if let Some(order) = &mut self.order {
                    order.push(if key == "seq" {
                        EnvelopeKey::Seq
                    } else {
                        EnvelopeKey::Time
                    });
                }
                return;
            }
            "data" => {
                self.data = Some(Payload::Value(Box::new(value)));
                if let Some(order) = &mut self.order {
                    order.push(EnvelopeKey::Data);
                }
                return;
            }
            "surfaceOp" => {
                self.append_op = false;
                (&mut self.surface_op, EnvelopeKey::SurfaceOp)
            }
            "sourceEventSeqs" => {
                self.plain_sources = None;
                (&mut self.source_event_seqs, EnvelopeKey::SourceEventSeqs)
            }
            "ignorable" => (&mut self.ignorable, EnvelopeKey::Ignorable),
            _ => {
                self.malformed = true;
                return;
            }
        };
        // Like `JSON.parse`, a repeated key keeps its first position and its last value.
        *slot = Some(Box::new(value));
        if let Some(order) = &mut self.order {
            order.push(envelope_key);
        }
    }

    /// The `type` tag, when it is a string.
    pub fn type_tag(&self) -> Option<&str> {
        match self.event_type.as_ref()? {
            TypeField::Tag(event_type) => Some(event_type.as_str()),
            TypeField::Other(_) => None,
        }
    }

    /// The `seq` value as written (numbers normalized to their double value).
    pub fn seq_value(&self) -> Option<Value> {
        self.seq.as_ref().map(Scalar::to_value)
    }

    /// The `time` value as written (numbers normalized to their double value).
    pub fn time_value(&self) -> Option<Value> {
        self.time.as_ref().map(Scalar::to_value)
    }

    /// The `seq` as a non-negative safe integer, when it is one.
    pub fn seq_number(&self) -> Option<u64> {
        self.seq
            .as_ref()
            .and_then(Scalar::safe_integer)
            .and_then(|seq| u64::try_from(seq).ok())
    }

    /// The `time` as a safe integer, when it is one.
    pub fn time_number(&self) -> Option<i64> {
        self.time.as_ref().and_then(Scalar::safe_integer)
    }

    /// The `seq` as `generation` reads it: v0/v1 judge it as a double with `x >= 0`, so `-0`
    /// is the seq 0 (docs/v0-rules.md, "Numbers"); later generations refuse `-0`.
    pub(crate) fn seq_for(&self, generation: Generation) -> Option<u64> {
        let scalar = self.seq.as_ref()?;
        let seq = if generation.negative_zero_is_a_seq() {
            scalar.js_safe_integer()
        } else {
            scalar.safe_integer()
        };
        seq.and_then(|seq| u64::try_from(seq).ok())
    }

    /// The `time` as `generation` reads it (see [`RawEvent::seq_for`]).
    pub(crate) fn time_for(&self, generation: Generation) -> Option<i64> {
        let scalar = self.time.as_ref()?;
        if generation.negative_zero_is_a_seq() {
            scalar.js_safe_integer()
        } else {
            scalar.safe_integer()
        }
    }

    /// Whether the row was JSON `null`.
    pub fn is_null_row(&self) -> bool {
        self.null_row
    }

    /// The `data` value (parsed from stored text when needed).
    pub fn data(&self) -> Option<Cow<'_, Value>> {
        match self.data.as_ref()? {
            Payload::Value(value) => Some(Cow::Borrowed(&**value)),
            stored => Some(Cow::Owned(crate::data::parse_accepted(
                stored.text().unwrap_or("null"),
            ))),
        }
    }

    /// The stored text of `data`, when the row was decoded from text.
    pub fn data_json(&self) -> Option<&str> {
        self.data.as_ref()?.text()
    }

    /// Mutable access to `data`, for read-side normalizations of older
    /// generations (stored text is parsed into a value first).
    pub fn data_mut(&mut self) -> Option<&mut Value> {
        if let Some(text) = self.data.as_ref().and_then(Payload::text) {
            let value = crate::data::parse_accepted(text);
            self.data = Some(Payload::Value(Box::new(value)));
        }
        match self.data.as_mut()? {
            Payload::Value(value) => Some(&mut **value),
            Payload::Raw(_) | Payload::Text(_) => None,
        }
    }

    /// Replaces a payload held as a value (a row built or normalized in memory) with its JSON
    /// text, the text the accepted event would hold: a reader that hands such rows to another
    /// thread frees each value on the thread that built it, and the row shrinks to its text.
    pub fn serialize_payload(&mut self) {
        if let Some(Payload::Value(value)) = &self.data {
            let text = crate::json::to_js_string(value);
            self.data = Some(Payload::Text(crate::data::Text::whole(&text)));
        }
    }

    /// Moves the stored payload texts of `rows` into one shared block: a decoder calls this on
    /// each batch of rows it decoded, so a load makes one long-lived allocation per batch
    /// instead of one per event (see the `data` module). Rows keep their payloads when the
    /// batch's texts exceed 4 GiB in all.
    pub fn share_payloads(rows: &mut [RawEvent]) {
        crate::data::Text::share_among(
            rows,
            |row| match &row.data {
                Some(Payload::Raw(raw)) => Some(raw.get()),
                _ => None,
            },
            |row, text| row.data = Some(Payload::Text(text)),
        );
    }

    /// [`RawEvent::share_payloads`] for rows whose payload texts were made one row at a time
    /// (an older generation's reader keeps a row's own text, or writes a normalized tree back
    /// to text): every payload text holding a block of its own moves into one shared block,
    /// so the session they are restored into holds one allocation per batch, as a V3 load
    /// does, not one per event (docs/measurements.md §5).
    pub fn share_own_payloads(rows: &mut [RawEvent]) {
        crate::data::Text::share_among(
            rows,
            |row| match &row.data {
                Some(Payload::Raw(raw)) => Some(raw.get()),
                Some(Payload::Text(text)) if text.is_whole() => Some(text.as_str()),
                _ => None,
            },
            |row, text| row.data = Some(Payload::Text(text)),
        );
    }

    /// The `surfaceOp` value as written.
    pub fn surface_op(&self) -> Option<&Value> {
        if self.append_op {
            return Some(&APPEND_OP);
        }
        self.surface_op.as_deref()
    }

    /// The `sourceEventSeqs` value as written (built when the row holds a plain list typed,
    /// see [`RawEvent::plain_source_seqs`]).
    pub fn source_event_seqs(&self) -> Option<Cow<'_, Value>> {
        match (&self.source_event_seqs, &self.plain_sources) {
            (Some(value), _) => Some(Cow::Borrowed(value)),
            (None, Some(seqs)) => Some(Cow::Owned(seqs_value(seqs))),
            (None, None) => None,
        }
    }

    /// Whether the row carried `sourceEventSeqs` (any value).
    pub fn has_source_event_seqs(&self) -> bool {
        self.source_event_seqs.is_some() || self.plain_sources.is_some()
    }

    /// `sourceEventSeqs` when the row's decoder read it as a compact list of plain seqs and
    /// kept it typed (no `Value` built): a store's codec sees there is nothing to expand.
    /// `None` for any other list, and for a plain list decoded as a `Value`.
    pub fn plain_source_seqs(&self) -> Option<&[Seq]> {
        self.plain_sources.as_deref()
    }

    /// Whether the row carried `ignorable` (any value).
    pub fn ignorable(&self) -> Option<&Value> {
        self.ignorable.as_deref()
    }

    /// Replaces `sourceEventSeqs`; the JSONL codec stores it range-encoded and
    /// hands acceptance the expanded plain array.
    pub fn set_source_event_seqs(&mut self, value: Option<Value>) {
        self.plain_sources = None;
        self.source_event_seqs = value.map(Box::new);
    }

    /// Replaces `surfaceOp` (migrations respell replace endpoints).
    pub fn set_surface_op(&mut self, value: Option<Value>) {
        self.append_op = false;
        self.surface_op = value.map(Box::new);
    }

    /// Replaces `seq` (fixture hydration and migrations renumber).
    pub fn set_seq(&mut self, seq: u64) {
        self.seq = Some(Scalar::Number(seq as f64));
        if let Some(order) = &mut self.order {
            order.push(EnvelopeKey::Seq);
        }
    }

    /// Replaces `time` (fixture hydration).
    pub fn set_time(&mut self, time: i64) {
        self.time = Some(Scalar::Number(time as f64));
        if let Some(order) = &mut self.order {
            order.push(EnvelopeKey::Time);
        }
    }

    /// Replaces `type` (read-side renames of older generations).
    pub fn set_type_tag(&mut self, tag: &str) {
        self.event_type = Some(TypeField::Tag(EventType::parse(tag)));
    }

    /// Replaces `data`.
    pub fn set_data(&mut self, data: Value) {
        self.data = Some(Payload::Value(Box::new(data)));
    }

    /// The row as a JSON object with its fields in read order (for diagnostics
    /// and pass-through writers).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        let order = self.order.unwrap_or(KeyOrder::CANONICAL);
        for key in order.keys() {
            let (name, value) = match key {
                EnvelopeKey::Type => {
                    if let Some(field) = &self.event_type {
                        map.insert("type".to_owned(), field.to_value());
                    }
                    continue;
                }
                EnvelopeKey::Seq | EnvelopeKey::Time => {
                    let (name, scalar) = if key == EnvelopeKey::Seq {
                        ("seq", &self.seq)
                    } else {
                        ("time", &self.time)
                    };
                    if let Some(scalar) = scalar {
                        map.insert(name.to_owned(), scalar.to_value());
                    }
                    continue;
                }
                EnvelopeKey::Data => {
                    if let Some(data) = self.data() {
                        map.insert("data".to_owned(), data.into_owned());
                    }
                    continue;
                }
                EnvelopeKey::SourceEventSeqs => {
                    if let Some(value) = self.source_event_seqs() {
                        map.insert("sourceEventSeqs".to_owned(), value.into_owned());
                    }
                    continue;
                }
                EnvelopeKey::SurfaceOp => ("surfaceOp", self.surface_op()),
                EnvelopeKey::Ignorable => ("ignorable", self.ignorable.as_deref()),
            };
            if let Some(value) = value {
                map.insert(name.to_owned(), value.clone());
            }
        }
        Value::Object(map)
    }
}

impl PartialEq for RawEvent {
    /// Rows are equal when they hold the same fields (payload compared by value).
    fn eq(&self, other: &RawEvent) -> bool {
        self.malformed == other.malformed && self.to_value() == other.to_value()
    }
}

impl<'de> Deserialize<'de> for RawEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawEvent, D::Error> {
        deserializer.deserialize_any(RawEventVisitor)
    }
}

struct RawEventVisitor;

impl<'de> Visitor<'de> for RawEventVisitor {
    type Value = RawEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEvent, A::Error> {
        let mut raw = RawEvent {
            order: Some(KeyOrder::empty()),
            ..RawEvent::default()
        };
        while let Some(key) = map.next_key::<KeyName>()? {
            match key {
                KeyName::Known("data") => {
                    let value: Box<RawValue> = map.next_value()?;
                    raw.data = Some(Payload::Raw(value));
                    if let Some(order) = &mut raw.order {
                        order.push(EnvelopeKey::Data);
                    }
                }
                KeyName::Known("type") => {
                    raw.event_type = Some(map.next_value()?);
                    if let Some(order) = &mut raw.order {
                        order.push(EnvelopeKey::Type);
                    }
                }
                KeyName::Known(name @ ("seq" | "time")) => {
                    let scalar: Scalar = map.next_value()?;
                    if name == "seq" {
                        raw.seq = Some(scalar);
                    } else {
                        raw.time = Some(scalar);
                    }
                    if let Some(order) = &mut raw.order {
                        order.push(if name == "seq" {
                            EnvelopeKey::Seq
                        } else {
                            EnvelopeKey::Time
                        });
                    }
                }
                KeyName::Known(name) => {
                    let value: Value = map.next_value()?;
                    raw.set_field(name, value);
                }
                KeyName::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                    raw.malformed = true;
                }
            }
        }
        Ok(raw)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawEvent, E> {
        Ok(not_an_object())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawEvent, E> {
        Ok(not_an_object())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawEvent, E> {
        Ok(not_an_object())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawEvent, E> {
        Ok(not_an_object())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawEvent, E> {
        Ok(not_an_object())
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawEvent, E> {
        Ok(RawEvent {
            null_row: true,
            ..not_an_object()
        })
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawEvent, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(not_an_object())
    }
}

/// The `surfaceOp` a row with [`RawEvent::append_op`] carries.
pub(crate) static APPEND_OP: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::from("append"));

impl RawEvent {
    /// The `surfaceOp` as written, borrowed for the plain append (no allocation per row).
    pub(crate) fn take_surface_op(&mut self) -> Option<Cow<'static, Value>> {
        if std::mem::take(&mut self.append_op) {
            return Some(Cow::Borrowed(&*APPEND_OP));
        }
        self.surface_op.take().map(|value| Cow::Owned(*value))
    }
}

/// A row's `type` as read: a string is interned as its [`EventType`] while it is parsed (no
/// allocation for the core types, which are nearly every row); anything else is kept as JSON
/// for the envelope rule to reject.
#[derive(Clone, Debug)]
pub(crate) enum TypeField {
    /// A string tag.
    Tag(EventType),
    /// A `type` that is not a string.
    Other(Box<Value>),
}

impl TypeField {
    fn from_value(value: Value) -> TypeField {
        match value {
            Value::String(tag) => TypeField::Tag(EventType::parse(&tag)),
            other => TypeField::Other(Box::new(other)),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            TypeField::Tag(event_type) => Value::from(event_type.as_str()),
            TypeField::Other(value) => (**value).clone(),
        }
    }
}

impl<'de> Deserialize<'de> for TypeField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TypeField, D::Error> {
        deserializer.deserialize_any(TypeFieldVisitor)
    }
}

struct TypeFieldVisitor;

impl<'de> Visitor<'de> for TypeFieldVisitor {
    type Value = TypeField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event type")
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<TypeField, E> {
        Ok(TypeField::Tag(EventType::parse(tag)))
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<TypeField, E> {
        Ok(TypeField::Other(Box::new(Value::Bool(value))))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<TypeField, E> {
        Ok(TypeField::Other(Box::new(Value::from(value))))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<TypeField, E> {
        Ok(TypeField::Other(Box::new(Value::from(value))))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<TypeField, E> {
        Ok(TypeField::Other(Box::new(Value::from(value))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<TypeField, E> {
        Ok(TypeField::Other(Box::new(Value::Null)))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<TypeField, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|value| TypeField::Other(Box::new(value)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TypeField, A::Error> {
        // Also how an arbitrary-precision number arrives; `Value` knows its marker key.
        Value::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|value| TypeField::Other(Box::new(value)))
    }
}

fn not_an_object() -> RawEvent {
    RawEvent {
        malformed: true,
        ..RawEvent::default()
    }
}

/// An envelope key name, decoded without allocating.
enum KeyName {
    Known(&'static str),
    Unknown,
}

impl<'de> Deserialize<'de> for KeyName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyName, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = KeyName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an envelope key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyName, E> {
                Ok(match key {
                    "type" => KeyName::Known("type"),
                    "seq" => KeyName::Known("seq"),
                    "time" => KeyName::Known("time"),
                    "data" => KeyName::Known("data"),
                    "surfaceOp" => KeyName::Known("surfaceOp"),
                    "sourceEventSeqs" => KeyName::Known("sourceEventSeqs"),
                    "ignorable" => KeyName::Known("ignorable"),
                    _ => KeyName::Unknown,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// An envelope number (`seq`, `time`) read as the double `JSON.parse` gives,
/// without allocating; anything else is kept as the value it was.
#[derive(Clone, Debug)]
pub(crate) enum Scalar {
    Number(f64),
    Other(Box<Value>),
}

impl Scalar {
    fn from_value(value: Value) -> Scalar {
        match &value {
            Value::Number(number) => Scalar::Number(crate::json::number_value(number)),
            _ => Scalar::Other(Box::new(value)),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Scalar::Number(number) => {
                if number.fract() == 0.0 && number.abs() <= crate::seq::MAX_SAFE_INTEGER as f64 {
                    if *number == 0.0 && number.is_sign_negative() {
                        serde_json::from_str("-0").unwrap_or(Value::Null)
                    } else {
                        Value::from(*number as i64)
                    }
                } else {
                    serde_json::Number::from_f64(*number).map_or(Value::Null, Value::Number)
                }
            }
            Scalar::Other(value) => (**value).clone(),
        }
    }

    /// `Number.isSafeInteger` exactly (`-0` passes, as the integer 0).
    pub(crate) fn js_safe_integer(&self) -> Option<i64> {
        match self {
            Scalar::Number(number) => {
                let number = *number;
                let integral = number.is_finite() && number.fract() == 0.0;
                let safe = number.abs() <= crate::seq::MAX_SAFE_INTEGER as f64;
                (integral && safe).then_some(number as i64)
            }
            Scalar::Other(_) => None,
        }
    }

    /// `Number.isSafeInteger`, refusing `-0`.
    pub(crate) fn safe_integer(&self) -> Option<i64> {
        match self {
            Scalar::Number(number) => {
                let number = *number;
                let integral = number.is_finite() && number.fract() == 0.0;
                let safe = number.abs() <= crate::seq::MAX_SAFE_INTEGER as f64;
                let negative_zero = number == 0.0 && number.is_sign_negative();
                (integral && safe && !negative_zero).then_some(number as i64)
            }
            Scalar::Other(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value as f64))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value as f64))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value))
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other(Box::new(Value::Bool(value))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other(Box::new(Value::Null)))
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<Scalar, E> {
        Ok(Scalar::Other(Box::new(Value::from(value))))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Scalar::Other(Box::new(value)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        // Under `arbitrary_precision` a number arrives as a one-entry map
        // keyed by serde_json's private token, holding the number's text.
        let Some(first) = map.next_key_seed(crate::view::KeySeed)? else {
            return Ok(Scalar::Other(Box::new(Value::Object(Map::new()))));
        };
        if first == "$serde_json::private::Number" {
            let text = map.next_value_seed(crate::view::KeySeed)?;
            let number = text.parse::<f64>().unwrap_or(f64::NAN);
            return Ok(Scalar::Number(number));
        }
        let mut object = Map::new();
        object.insert(first.into_owned(), map.next_value()?);
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            object.insert(key, value);
        }
        Ok(Scalar::Other(Box::new(Value::Object(object))))
    }
}

/// A list of seqs as the JSON array of plain integers it is written as.
pub(crate) fn seqs_value(seqs: &[Seq]) -> Value {
    Value::Array(seqs.iter().map(|seq| Value::from(seq.get())).collect())
}

#[cfg(test)]
mod size_tests {
    /// Rows move from decoder to rule check to restore by value: their size is a per-row cost
    /// of every load (it was 520 bytes with the rare fields inline; a plain source list held
    /// typed adds 16 and saves a cited row its allocations).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_wire_row_stays_small() {
        let size = std::mem::size_of::<super::RawEvent>();
        assert!(size <= 128, "{size}");
    }
}

#[cfg(test)]
mod share_tests {
    use super::RawEvent;

    /// Sharing a batch's payloads changes where their bytes live, not what they are.
    #[test]
    fn shared_payloads_keep_their_text() {
        let lines = [
            r#"{"type":"user/message","seq":0,"time":1,"data":{"a":"é\"x"}}"#,
            r#"{"type":"turn/start","seq":1,"time":2,"data":{"turn":1}}"#,
            r#"{"type":"x","seq":2,"time":3}"#,
            r#"{"type":"turn/end","seq":3,"time":4,"data":[1, 2 ,3]}"#,
        ];
        let mut rows: Vec<RawEvent> = lines
            .iter()
            .map(|line| RawEvent::from_json_str(line).unwrap())
            .collect();
        let before: Vec<Option<String>> = rows
            .iter()
            .map(|row| row.data_json().map(str::to_owned))
            .collect();
        RawEvent::share_payloads(&mut rows);
        let after: Vec<Option<String>> = rows
            .iter()
            .map(|row| row.data_json().map(str::to_owned))
            .collect();
        assert_eq!(after, before);
        assert_eq!(after[3].as_deref(), Some("[1, 2 ,3]"));
        assert!(matches!(rows[0].data, Some(crate::data::Payload::Text(_))));
        // A second batch gets a block of its own.
        let mut again = vec![RawEvent::from_json_str(lines[1]).unwrap()];
        RawEvent::share_payloads(&mut again);
        assert_eq!(again[0].data_json(), Some(r#"{"turn":1}"#));
        assert_eq!(rows[1].data_json(), Some(r#"{"turn":1}"#));
    }
}

#[cfg(test)]
mod serialize_tests {
    use serde_json::json;

    use super::RawEvent;

    /// A value payload becomes the text its accepted event would hold (`to_js_string`'s, key
    /// order kept); a text payload and a row without data are left alone.
    #[test]
    fn a_value_payload_becomes_its_json_text() {
        let mut row = RawEvent::from_value(json!({
            "type": "turn/start", "seq": 0, "time": 1,
            "data": {"z": 2, "a": "é\"\n", "n": [1.5, 1e21, null]},
        }));
        assert_eq!(row.data_json(), None);
        row.serialize_payload();
        assert_eq!(
            row.data_json(),
            Some(r#"{"z":2,"a":"é\"\n","n":[1.5,1e+21,null]}"#)
        );

        let line = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn": 1}}"#;
        let mut text = RawEvent::from_json_str(line).unwrap();
        text.serialize_payload();
        assert_eq!(text.data_json(), Some(r#"{"turn": 1}"#));

        let mut bare = RawEvent::from_value(json!({"type": "x", "seq": 0, "time": 1}));
        bare.serialize_payload();
        assert_eq!(bare.data_json(), None);
        assert!(bare.data.is_none());
    }
}
