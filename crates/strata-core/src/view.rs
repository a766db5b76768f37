//! Borrowed views of JSON payloads, for validating raw text without building `Value`s.
//!
//! Acceptance reads a handful of fields of a payload (a message's id, role,
//! source kind; whether content is an array). A [`View`] materializes the
//! payload's containers down to a fixed depth, borrowing strings from the
//! text, and keeps everything deeper as raw text whose kind, emptiness or
//! string value can still be read. The [`Node`] trait lets one check function
//! run over a `&Value` (appends) or a `&View` (stored rows) alike.
//!
//! A view's strings are held strings, as [`crate::json::parse`] reads them: a string with a
//! lone surrogate's escape, which serde_json refuses to unescape, is kept as raw text and read
//! through `json` (`View::parse` falls back to [`View::parse_lenient`] for such payloads), and
//! one with a code point of the reserved range is copied with its marker.
//!
//! Invariant: a view never outlives, and never copies more than the short
//! escaped strings of, the text it was parsed from.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::json::non_negative_safe_integer;

/// serde_json's private map key for numbers under `arbitrary_precision`.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A borrowed, depth-limited view of a JSON value.
#[derive(Debug)]
pub(crate) enum View<'a> {
    Null,
    Bool(bool),
    /// A number's text.
    Number(Cow<'a, str>),
    Str(Cow<'a, str>),
    Array(Entries<'a, View<'a>>),
    Object(Entries<'a, (Cow<'a, str>, View<'a>)>),
    /// A value below the materialized depth (or a string with escapes, see the `scan`
    /// module), as its raw JSON text.
    Deep(&'a str),
}

/// A container's entries: owned (a view serde parsed) or in a scan's arena (the `scan`
/// module: a decoder's views take no allocation of their own, and are dropped by resetting
/// the arena). Arena entries are only ever borrowed text and arena entries, so nothing in an
/// arena needs dropping.
#[derive(Debug)]
pub(crate) enum Entries<'a, T> {
    Owned(Vec<T>),
    Arena(&'a [T]),
}

impl<T> std::ops::Deref for Entries<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Entries::Owned(entries) => entries,
            Entries::Arena(entries) => entries,
        }
    }
}

impl<'a> View<'a> {
    /// Parses `text`, materializing containers at depths `< depth`.
    pub(crate) fn parse(text: &'a str, depth: u8) -> Option<View<'a>> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        ViewSeed { depth }
            .deserialize(&mut deserializer)
            .ok()
            .or_else(|| View::parse_lenient(text, depth))
    }

    /// [`View::parse`] of text whose strings serde_json will not unescape (a lone surrogate's
    /// escape): each value is first read as raw text, which serde skips without pairing
    /// escapes, then a string with escapes is kept raw, a container is viewed from its own
    /// text and a key is read as bytes. A pass over the text per materialized level; only
    /// payloads that hold such strings come here.
    fn parse_lenient(text: &'a str, depth: u8) -> Option<View<'a>> {
        let text = text.trim_matches([' ', '\t', '\n', '\r']);
        if depth == 0 {
            return Some(View::Deep(text));
        }
        match text.as_bytes().first()? {
            b'"' => {
                let inner = text.get(1..text.len().checked_sub(1)?)?;
                if inner.contains('\\') || crate::json::has_reserved(inner) {
                    Some(View::Deep(text))
                } else {
                    Some(View::Str(Cow::Borrowed(inner)))
                }
            }
            b'{' | b'[' => {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                deserializer.deserialize_any(LenientVisitor { depth }).ok()
            }
            _ => View::parse(text, depth),
        }
    }
}

/// What a JSON value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Number,
    Str,
    Array,
    Object,
}

/// Read access to a JSON value, for checks that run on `Value`s and views alike.
pub(crate) trait Node<'n>: Copy {
    /// The member `key` of an object.
    fn get(self, key: &str) -> Option<Self>;
    /// The element `index` of an array.
    fn at(self, index: usize) -> Option<Self>;
    /// What the value is.
    fn kind(self) -> Kind;
    /// The string value.
    fn text(self) -> Option<Cow<'n, str>>;
    /// `Some(b)` for a boolean.
    fn boolean(self) -> Option<bool>;
    /// A non-negative safe integer (JavaScript semantics).
    fn seq_number(self) -> Option<u64>;
    /// Number of elements or members of a container.
    fn len(self) -> Option<usize>;
    /// Members of an object, in order.
    fn members(self) -> Vec<(Cow<'n, str>, Self)>;

    /// Whether the value is a non-empty string.
    fn is_non_empty_str(self) -> bool {
        self.text().is_some_and(|text| !text.is_empty())
    }
    /// Whether the value is an array with no elements.
    fn is_empty_array(self) -> bool {
        self.kind() == Kind::Array && self.len() == Some(0)
    }
    /// Whether the value is an object with no members.
    fn is_empty_object(self) -> bool {
        self.kind() == Kind::Object && self.len() == Some(0)
    }
}

impl<'n> Node<'n> for &'n Value {
    fn get(self, key: &str) -> Option<Self> {
        self.as_object().and_then(|map| map.get(key))
    }
    fn at(self, index: usize) -> Option<Self> {
        self.as_array().and_then(|items| items.get(index))
    }
    fn kind(self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::Str,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }
    fn text(self) -> Option<Cow<'n, str>> {
        self.as_str().map(Cow::Borrowed)
    }
    fn boolean(self) -> Option<bool> {
        self.as_bool()
    }
    fn seq_number(self) -> Option<u64> {
        non_negative_safe_integer(self)
    }
    fn len(self) -> Option<usize> {
        match self {
            Value::Array(items) => Some(items.len()),
            Value::Object(map) => Some(map.len()),
            _ => None,
        }
    }
    fn members(self) -> Vec<(Cow<'n, str>, Self)> {
        self.as_object()
            .map(|map| {
                map.iter()
                    .map(|(key, value)| (Cow::Borrowed(key.as_str()), value))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The held content of a JSON string literal (quotes included) whose escapes are all
/// single-character ones (`\"`, `\n`, …) and which holds no reserved code point: exactly what
/// [`crate::json::from_str`] reads it as, without its rewrite and serde pass (a tool call's
/// `arguments` are such strings). `None` for any other literal (a `\u` escape, a control
/// character), which is left to that parser.
fn unescape_simple(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    if crate::json::has_reserved(inner) {
        return None;
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(match chars.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                _ => return None,
            }),
            '"' => return None,
            c if (c as u32) < 0x20 => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

impl<'n, 'a: 'n> Node<'n> for &'n View<'a> {
    fn get(self, key: &str) -> Option<Self> {
        match self {
            View::Object(members) => members
                .iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }
    fn at(self, index: usize) -> Option<Self> {
        match self {
            View::Array(items) => items.get(index),
            _ => None,
        }
    }
    fn kind(self) -> Kind {
        match self {
            View::Null => Kind::Null,
            View::Bool(_) => Kind::Bool,
            View::Number(_) => Kind::Number,
            View::Str(_) => Kind::Str,
            View::Array(_) => Kind::Array,
            View::Object(_) => Kind::Object,
            View::Deep(raw) => match raw.as_bytes().first() {
                Some(b'{') => Kind::Object,
                Some(b'[') => Kind::Array,
                Some(b'"') => Kind::Str,
                Some(b't' | b'f') => Kind::Bool,
                Some(b'n') => Kind::Null,
                _ => Kind::Number,
            },
        }
    }
    fn text(self) -> Option<Cow<'n, str>> {
        match self {
            View::Str(text) => Some(Cow::Borrowed(text.as_ref())),
            View::Deep(raw) if raw.starts_with('"') => {
                let text = *raw;
                // A string without escapes or reserved code points is its own (held) content
                // between the quotes.
                if !text.contains('\\') && text.len() >= 2 {
                    let inner = &text[1..text.len() - 1];
                    if !crate::json::has_reserved(inner) {
                        return Some(Cow::Borrowed(inner));
                    }
                }
                if let Some(unescaped) = unescape_simple(text) {
                    return Some(Cow::Owned(unescaped));
                }
                crate::json::from_str::<String>(text).ok().map(Cow::Owned)
            }
            _ => None,
        }
    }
    fn boolean(self) -> Option<bool> {
        match self {
            View::Bool(value) => Some(*value),
            View::Deep(raw) => match *raw {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
    fn seq_number(self) -> Option<u64> {
        let text = match self {
            View::Number(text) => text.as_ref(),
            View::Deep(raw) if self.kind() == Kind::Number => raw,
            _ => return None,
        };
        // Nearly every seq, turn and step is a plain integer of a few digits: below 10^15,
        // so safe, and read as serde would (a viewed number is valid JSON: no leading zero).
        if text.len() <= 15 {
            if let Some(value) = crate::json::plain_integer(text) {
                return Some(value);
            }
        }
        let value: Value = serde_json::from_str(text).ok()?;
        non_negative_safe_integer(&value)
    }
    fn len(self) -> Option<usize> {
        match self {
            View::Array(items) => Some(items.len()),
            View::Object(members) => Some(members.len()),
            View::Deep(raw) => {
                let text = raw.trim();
                let inner = text.get(1..text.len().saturating_sub(1))?;
                match self.kind() {
                    Kind::Array | Kind::Object if inner.trim().is_empty() => Some(0),
                    Kind::Array | Kind::Object => {
                        // Count by parsing one level; rare (deep containers whose size matters).
                        let view = View::parse(raw, 1)?;
                        match view {
                            View::Array(items) => Some(items.len()),
                            View::Object(members) => Some(members.len()),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
    fn members(self) -> Vec<(Cow<'n, str>, Self)> {
        match self {
            View::Object(members) => members
                .iter()
                .map(|(key, value)| (Cow::Borrowed(key.as_ref()), value))
                .collect(),
            _ => Vec::new(),
        }
    }
}

struct ViewSeed {
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for ViewSeed {
    type Value = View<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<View<'de>, D::Error> {
        if self.depth == 0 {
            let raw: &'de RawValue = serde::Deserialize::deserialize(deserializer)?;
            return Ok(View::Deep(raw.get()));
        }
        deserializer.deserialize_any(ViewVisitor { depth: self.depth })
    }
}

struct ViewVisitor {
    depth: u8,
}

impl<'de> Visitor<'de> for ViewVisitor {
    type Value = View<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<View<'de>, E> {
        Ok(View::Null)
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<View<'de>, E> {
        Ok(View::Bool(value))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<View<'de>, E> {
        Ok(View::Number(Cow::Owned(value.to_string())))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<View<'de>, E> {
        Ok(View::Number(Cow::Owned(value.to_string())))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<View<'de>, E> {
        Ok(View::Number(Cow::Owned(value.to_string())))
    }
    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<View<'de>, E> {
        Ok(View::Str(held(value)))
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<View<'de>, E> {
        Ok(View::Str(Cow::Owned(held(value).into_owned())))
    }
    fn visit_string<E: de::Error>(self, value: String) -> Result<View<'de>, E> {
        Ok(View::Str(owned_held(value)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<View<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ViewSeed {
            depth: self.depth - 1,
        })? {
            items.push(item);
        }
        Ok(View::Array(Entries::Owned(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<View<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if members.is_empty() && key == NUMBER_TOKEN {
                let text: KeyText<'de> = map.next_value_seed(KeySeed)?;
                return Ok(View::Number(text));
            }
            let value = map.next_value_seed(ViewSeed {
                depth: self.depth - 1,
            })?;
            members.push((key, value));
        }
        Ok(View::Object(Entries::Owned(members)))
    }
}

type KeyText<'de> = Cow<'de, str>;

/// Deserializes a string, borrowing it when it has no escapes.
pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(held(value))
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(held(value).into_owned()))
    }
    fn visit_string<E: de::Error>(self, value: String) -> Result<Cow<'de, str>, E> {
        Ok(owned_held(value))
    }
    // Keys of a lenient view, read as bytes (WTF-8: lone surrogates unpaired).
    fn visit_borrowed_bytes<E: de::Error>(self, value: &'de [u8]) -> Result<Cow<'de, str>, E> {
        match std::str::from_utf8(value) {
            Ok(text) => Ok(held(text)),
            Err(_) => self.visit_bytes(value),
        }
    }
    fn visit_bytes<E: de::Error>(self, value: &[u8]) -> Result<Cow<'de, str>, E> {
        crate::json::held_from_wtf8(value)
            .map(Cow::Owned)
            .ok_or_else(|| E::custom("a key that is not a string"))
    }
}

/// A string serde unescaped (real characters only) as a held string.
fn held(text: &str) -> Cow<'_, str> {
    crate::json::held_from_text(text)
}

fn owned_held(text: String) -> Cow<'static, str> {
    match crate::json::held_from_text(&text) {
        Cow::Borrowed(_) => Cow::Owned(text),
        Cow::Owned(held) => Cow::Owned(held),
    }
}

/// A container of a lenient view (see [`View::parse_lenient`]).
struct LenientVisitor {
    depth: u8,
}

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = View<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON container")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<View<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            items.push(lenient_member(raw, self.depth)?);
        }
        Ok(View::Array(Entries::Owned(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<View<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(BytesKeySeed)? {
            if members.is_empty() && key == NUMBER_TOKEN {
                let text: KeyText<'de> = map.next_value_seed(KeySeed)?;
                return Ok(View::Number(text));
            }
            let raw: &'de RawValue = map.next_value()?;
            members.push((key, lenient_member(raw, self.depth)?));
        }
        Ok(View::Object(Entries::Owned(members)))
    }
}

/// A member of a lenient container at `depth`, viewed one level down.
fn lenient_member<'de, E: de::Error>(raw: &'de RawValue, depth: u8) -> Result<View<'de>, E> {
    View::parse_lenient(raw.get(), depth - 1).ok_or_else(|| E::custom("not a JSON value"))
}

/// A key read as bytes, which serde_json gives without pairing its escapes.
struct BytesKeySeed;

impl<'de> DeserializeSeed<'de> for BytesKeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_bytes(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"{"id":"m\n1","role":"user","n":-0,"c":[1,{"a":"b"}],"deep":{"x":{"y":"z\"q"}},"e":[],"o":{}}"#;

    /// The same questions asked of a `Value` and of a depth-2 view agree.
    #[test]
    fn views_agree_with_values() {
        let value: Value = serde_json::from_str(TEXT).unwrap();
        let view = View::parse(TEXT, 2).unwrap();
        for key in ["id", "role", "missing"] {
            let from_value = Node::get(&value, key)
                .and_then(Node::text)
                .map(Cow::into_owned);
            let from_view = Node::get(&view, key)
                .and_then(Node::text)
                .map(Cow::into_owned);
            assert_eq!(from_value, from_view, "{key}");
        }
        assert_eq!(
            Node::get(&value, "id").and_then(Node::text).as_deref(),
            Some("m\n1")
        );
        for key in ["c", "e", "o", "deep"] {
            let value_node = Node::get(&value, key).unwrap();
            let view_node = Node::get(&view, key).unwrap();
            assert_eq!(value_node.kind(), view_node.kind(), "{key}");
            assert_eq!(value_node.len(), view_node.len(), "{key}");
        }
        assert_eq!(Node::get(&view, "n").unwrap().seq_number(), None);
        assert!(Node::get(&view, "o").unwrap().is_empty_object());
        let deep = Node::get(&view, "deep").unwrap().get("x").unwrap();
        assert_eq!(deep.kind(), Kind::Object);
    }

    #[test]
    fn deep_leaves_answer_text_booleans_and_numbers() {
        let leaf = View::parse(r#"{"s":"a\"b","p":"plain","t":true,"n":7,"z":[ ]}"#, 1).unwrap();
        assert_eq!(
            Node::get(&leaf, "s").unwrap().text().as_deref(),
            Some("a\"b")
        );
        assert_eq!(
            Node::get(&leaf, "p").unwrap().text().as_deref(),
            Some("plain")
        );
        assert_eq!(Node::get(&leaf, "t").unwrap().boolean(), Some(true));
        assert_eq!(Node::get(&leaf, "n").unwrap().seq_number(), Some(7));
        assert!(Node::get(&leaf, "z").unwrap().is_empty_array());
    }

    /// Lone surrogates and reserved code points, in keys and values at every depth, answer as
    /// `json::parse`'s value does (serde_json alone refuses the escapes).
    #[test]
    fn views_hold_strings_as_json_parse_does() {
        let text = "{\"id\":\"m\\ud800\",\"\\udc00k\":\"v\",\"real\":\"\u{10F800}\",\
                    \"c\":[{\"t\":\"A\\ud800B\"},\"\\ud83d\\ude00\"],\"n\":7}";
        let value = crate::json::parse(text).unwrap();
        for depth in 1..4 {
            let view = View::parse(text, depth).unwrap();
            for key in ["id", "\u{10FC00}k", "real", "n"] {
                let from_value = Node::get(&value, key).map(|node| (node.text(), node.kind()));
                let from_view = Node::get(&view, key).map(|node| (node.text(), node.kind()));
                assert_eq!(from_value, from_view, "{key} at depth {depth}");
                assert!(from_view.is_some(), "{key} at depth {depth}");
            }
            if depth > 2 {
                // A deep leaf cannot be indexed; from depth 3 the block is materialized.
                let block = Node::get(&view, "c").and_then(|c| c.at(0)).unwrap();
                assert_eq!(
                    block.get("t").and_then(Node::text).as_deref(),
                    value["c"][0]["t"].as_str(),
                    "depth {depth}"
                );
            }
            assert_eq!(Node::get(&view, "n").unwrap().seq_number(), Some(7));
        }
        assert_eq!(
            crate::json::to_js_string(&value["id"]),
            "\"m\\ud800\"",
            "the id is held, not lost"
        );
    }

    #[test]
    fn a_viewed_number_is_a_seq_exactly_when_its_value_is_one() {
        for text in [
            "0",
            "7",
            "123456789012345",
            "1234567890123456",
            "9007199254740991",
            "9007199254740992",
            "-0",
            "-1",
            "7.0",
            "7.5",
            "7e0",
            "7E2",
            "1e400",
        ] {
            let row = format!(r#"{{"n":{text}}}"#);
            let value: Value = serde_json::from_str(&row).unwrap();
            let view = View::parse(&row, 2).unwrap();
            assert_eq!(
                Node::get(&view, "n").unwrap().seq_number(),
                Node::get(&value, "n").unwrap().seq_number(),
                "{text}"
            );
            // Built to depth 0, the number is a deep leaf; the same answer.
            let deep = View::parse(&row, 1).unwrap();
            assert_eq!(
                Node::get(&deep, "n").unwrap().seq_number(),
                Node::get(&value, "n").unwrap().seq_number(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_simply_escaped_string_reads_as_the_held_parser_reads_it() {
        for literal in [
            r#""{\"path\":\"a\"}""#,
            r#""a\\b\/c\n\r\t\b\f""#,
            r#""é\"""#,
            r#""\u0041""#,
            r#""\ud800""#,
            "\"\u{10F7FF}\\n\"",
            r#""\q""#,
            r#""a\""#,
            r#""""#,
        ] {
            let held = crate::json::from_str::<String>(literal).ok();
            if let Some(unescaped) = super::unescape_simple(literal) {
                assert_eq!(Some(unescaped), held, "{literal}");
            }
            let view = View::Deep(literal);
            assert_eq!(Node::text(&view).map(Cow::into_owned), held, "{literal}");
        }
    }
}
