//! How a Rust string holds a JavaScript string, lone UTF-16 surrogates included.
//!
//! A JavaScript string is a sequence of UTF-16 code units that need not pair up:
//! `JSON.parse` reads `"\ud800"` as a string of one unit, and `JSON.stringify` writes that unit
//! back as the escape `\ud800`. dsh makes such strings in practice (a slice at a UTF-16 index of
//! model or tool output can cut a surrogate pair), so its logs hold them. A Rust `String` holds
//! Unicode scalar values only, and serde_json refuses a lone surrogate escape, so strata spells
//! the strings it reads in a *held* form (docs/format.md §1a):
//!
//! - a lone surrogate U+D800 + k (k < 2048) is held as the code point U+10F800 + k, one of the
//!   last 2048 code points of plane 16 (private use; U+10FFFE and U+10FFFF are noncharacters);
//! - a real code point of the *reserved* range U+10F7FF..=U+10FFFF is held as the *marker*
//!   U+10F7FF followed by that code point;
//! - every other code point is held as itself, so text without reserved code points or lone
//!   surrogates (all text in practice) is held as itself.
//!
//! Held strings are in one-to-one correspondence with JavaScript strings, so reading JSON text
//! into held strings and writing them back gives `JSON.stringify`'s bytes; equality, emptiness
//! and order of keys are kept. A lone surrogate stays one `char`, so cutting a held string at
//! a `char` boundary never splits one (as a JavaScript slice never splits a unit).
//!
//! Text from outside JSON (a file a tool reads, a typed prompt) becomes held with
//! [`held_from_text`]; a held string read as text (a tool's argument, a terminal line) with
//! [`text_from_held`], which writes a lone surrogate as U+FFFD, as Node's UTF-8 encoder does.
//!
//! Invariant: [`parse`] never makes a held high surrogate directly followed by a held low one
//! (JSON text spelling that pair means the character). A string joined in Rust can hold one
//! (two stream deltas that split a pair); it is the same JavaScript string as the character,
//! and every writer here writes it as the character.

use std::borrow::Cow;
use std::io;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use serde_json::Value;

/// The first reserved code point, which is also the marker.
const MARKER: char = '\u{10F7FF}';
/// Where a held lone surrogate's code points start: U+D800 is held as U+10F800.
const LONE_BASE: u32 = 0x10_F800;
const SURROGATES: std::ops::RangeInclusive<u32> = 0xD800..=0xDFFF;
const HIGH_SURROGATES: std::ops::RangeInclusive<u32> = 0xD800..=0xDBFF;
const LOW_SURROGATES: std::ops::RangeInclusive<u32> = 0xDC00..=0xDFFF;
/// Every reserved code point is spelled in UTF-8 from this lead byte.
pub(crate) const RESERVED_LEAD: u8 = 0xF4;

/// Parses JSON text as `JSON.parse` reads it: strings come out held.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    from_str(text)
}

/// Deserializes JSON text into `T`, its strings held (as [`parse`]).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(&readable_json(text, Literals::Text))
}

/// Parses JSON text that is itself a held string (a tool call's `arguments`): its escapes are
/// read as [`parse`] reads them, its literal characters are held already.
pub fn parse_held(held: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&readable_json(held, Literals::Held))
}

/// The held form of text that did not come from JSON (a file, a command's output, a prompt).
pub fn held_from_text(text: &str) -> Cow<'_, str> {
    if !has_reserved(text) {
        return Cow::Borrowed(text);
    }
    let mut held = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if is_reserved(c) {
            held.push(MARKER);
        }
        held.push(c);
    }
    Cow::Owned(held)
}

/// A held string as text: real characters as themselves, each lone surrogate as U+FFFD (what
/// Node writes for one when it encodes a string as UTF-8).
pub fn text_from_held(held: &str) -> Cow<'_, str> {
    if !has_reserved(held) {
        return Cow::Borrowed(held);
    }
    let mut text = String::with_capacity(held.len());
    for unit in units(held) {
        match unit {
            Unit::Char(c) => text.push(c),
            Unit::Lone(_) => text.push(char::REPLACEMENT_CHARACTER),
        }
    }
    Cow::Owned(text)
}

/// `value`, built from text that did not come from JSON (a tool's metadata), with every
/// string and key held ([`held_from_text`]).
pub fn held_value_from_text(value: Value) -> Value {
    map_strings(value, &held_from_text)
}

/// `value` with every string and key as text ([`text_from_held`]): what code that reads a
/// value as text (a tool reading its arguments) is given, as Node would hand a JavaScript
/// string to the file system.
pub fn text_value_from_held(value: Value) -> Value {
    map_strings(value, &text_from_held)
}

fn map_strings(value: Value, map: &dyn Fn(&str) -> Cow<'_, str>) -> Value {
    match value {
        Value::String(text) => match map(&text) {
            Cow::Borrowed(_) => Value::String(text),
            Cow::Owned(mapped) => Value::String(mapped),
        },
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| map_strings(item, map))
                .collect(),
        ),
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(key, item)| (map(&key).into_owned(), map_strings(item, map)))
                .collect(),
        ),
        other => other,
    }
}

/// Whether `text` has a reserved code point: a held string that is not its own text.
pub(crate) fn has_reserved(text: &str) -> bool {
    // Reserved code points are F4 8F 9F BF and up; a first test on the lead byte alone keeps
    // the common case one byte search.
    text.as_bytes().contains(&RESERVED_LEAD) && text.chars().any(is_reserved)
}

/// Serializes `value` as compact JSON the way `JSON.stringify` writes it.
pub fn to_js_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    to_js_writer(&mut out, value)?;
    Ok(out)
}

/// Serializes `value` indented by two spaces, as `JSON.stringify(value, null, 2)` writes it.
pub fn to_js_string_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    to_js_writer_pretty(&mut out, value)?;
    Ok(utf8(out))
}

/// [`to_js_vec`] into the caller's writer, for output written as it is produced.
pub fn to_js_writer<W: std::io::Write, T: Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut serializer =
        serde_json::Serializer::with_formatter(writer, HeldFormatter(CompactFormatter));
    value.serialize(&mut serializer)
}

/// [`to_js_string_pretty`] into the caller's writer.
pub fn to_js_writer_pretty<W: std::io::Write, T: Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut serializer =
        serde_json::Serializer::with_formatter(writer, HeldFormatter(PrettyFormatter::new()));
    value.serialize(&mut serializer)
}

/// Bytes a serializer wrote, which are UTF-8: strings are written as their own UTF-8 and
/// escapes, everything else is ASCII.
pub(super) fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

fn is_reserved(c: char) -> bool {
    c >= MARKER
}

/// One unit of a JavaScript string read from a held string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// A character (a pair of units, or one that is not a surrogate).
    Char(char),
    /// A lone surrogate.
    Lone(u16),
}

/// The JavaScript string a held string spells, a character or a lone surrogate at a time.
fn units(held: &str) -> impl Iterator<Item = Unit> + '_ {
    let mut chars = held.chars().peekable();
    std::iter::from_fn(move || {
        let c = chars.next()?;
        if c == MARKER {
            // A marker always precedes a reserved code point in a held string; one that does
            // not (text never made held) stands for itself.
            return Some(Unit::Char(
                chars.next_if(|&next| is_reserved(next)).unwrap_or(c),
            ));
        }
        let Some(unit) = lone_unit(c) else {
            return Some(Unit::Char(c));
        };
        if HIGH_SURROGATES.contains(&u32::from(unit)) {
            let low = chars
                .peek()
                .and_then(|&next| lone_unit(next))
                .filter(|low| LOW_SURROGATES.contains(&u32::from(*low)));
            if let Some(low) = low {
                chars.next();
                return Some(Unit::Char(pair(unit, low)));
            }
        }
        Some(Unit::Lone(unit))
    })
}

/// The lone surrogate a held code point stands for, if it is one.
fn lone_unit(c: char) -> Option<u16> {
    let offset = u32::from(c).checked_sub(LONE_BASE)?;
    u16::try_from(0xD800 + offset).ok()
}

/// The code point a lone surrogate is held as.
fn held_lone(unit: u16) -> char {
    // `unit` is a surrogate, so the sum is at most U+10FFFF: always a `char`.
    char::from_u32(LONE_BASE + u32::from(unit) - 0xD800).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The character a high and a low surrogate spell together.
fn pair(high: u16, low: u16) -> char {
    let code = 0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
    // Both are surrogates of their kind, so `code` is in U+10000..=U+10FFFF.
    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// How [`readable_json`] takes the literal characters of the text it is given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Literals {
    /// JSON text as stored or received: a literal reserved code point is real.
    Text,
    /// JSON text that is a held string: literal characters are held already.
    Held,
}

/// `text` respelled so that serde_json reads its strings as held strings: each escape of a
/// lone surrogate becomes the code point it is held as, each real reserved code point (a
/// literal one in [`Literals::Text`], or a pair of escapes) gets its marker. Everything else
/// is copied, so text without either is returned as it is, and serde reads any other error
/// where it was.
///
/// No string tracking is needed: in JSON text a backslash and a non-ASCII byte occur only
/// inside strings (anywhere else the text is not JSON, and stays not JSON).
fn readable_json(text: &str, literals: Literals) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    // `text[copied..index]` is still to be copied; both are char boundaries.
    let mut copied = 0;
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' if bytes.get(index + 1) == Some(&b'u') => {
                let Some(unit) = hex_escape(bytes, index) else {
                    index += 2;
                    continue;
                };
                if !SURROGATES.contains(&u32::from(unit)) {
                    index += 6;
                    continue;
                }
                let low = hex_escape(bytes, index + 6)
                    .filter(|low| LOW_SURROGATES.contains(&u32::from(*low)));
                let (held, len) = match low {
                    Some(low) if HIGH_SURROGATES.contains(&u32::from(unit)) => {
                        let c = pair(unit, low);
                        if !is_reserved(c) {
                            // serde reads an ordinary pair as it is.
                            index += 12;
                            continue;
                        }
                        ([Some(MARKER), Some(c)], 12)
                    }
                    _ => ([Some(held_lone(unit)), None], 6),
                };
                out.push_str(&text[copied..index]);
                out.extend(held.into_iter().flatten());
                index += len;
                copied = index;
            }
            // Any other escape is two bytes (or the text is not JSON).
            b'\\' => index += 2,
            RESERVED_LEAD if literals == Literals::Text => {
                let c = text[index..]
                    .chars()
                    .next()
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                if is_reserved(c) {
                    out.push_str(&text[copied..index]);
                    out.push(MARKER);
                    copied = index;
                }
                index += c.len_utf8();
            }
            _ => index += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The code unit of the `\uXXXX` escape at `index`, if one is there.
fn hex_escape(bytes: &[u8], index: usize) -> Option<u16> {
    let escape = bytes.get(index..index + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let digits = std::str::from_utf8(&escape[2..]).ok()?;
    if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

/// serde_json's writer with strings spelled from their held form: a lone surrogate as its
/// lowercase `\udxxx` escape, a marked code point as itself. The inner formatter does
/// everything else.
pub(super) struct HeldFormatter<F>(pub(super) F);

impl<F: Formatter> Formatter for HeldFormatter<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // serde_json cuts a string into fragments only at the ASCII characters it escapes, so
        // a marker and its code point, or the two halves of a pair, share a fragment.
        if !has_reserved(fragment) {
            return self.0.write_string_fragment(writer, fragment);
        }
        let mut spelled = String::with_capacity(fragment.len() + 8);
        for unit in units(fragment) {
            match unit {
                Unit::Char(c) => spelled.push(c),
                Unit::Lone(unit) => spelled.push_str(&format!("\\u{unit:04x}")),
            }
        }
        self.0.write_string_fragment(writer, &spelled)
    }

    // Everything below forwards to the inner formatter.

    fn write_null<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.write_null(writer)
    }
    fn write_bool<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: bool) -> io::Result<()> {
        self.0.write_bool(writer, value)
    }
    fn write_i8<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i8) -> io::Result<()> {
        self.0.write_i8(writer, value)
    }
    fn write_i16<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i16) -> io::Result<()> {
        self.0.write_i16(writer, value)
    }
    fn write_i32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i32) -> io::Result<()> {
        self.0.write_i32(writer, value)
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i64) -> io::Result<()> {
        self.0.write_i64(writer, value)
    }
    fn write_i128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i128) -> io::Result<()> {
        self.0.write_i128(writer, value)
    }
    fn write_u8<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u8) -> io::Result<()> {
        self.0.write_u8(writer, value)
    }
    fn write_u16<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u16) -> io::Result<()> {
        self.0.write_u16(writer, value)
    }
    fn write_u32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u32) -> io::Result<()> {
        self.0.write_u32(writer, value)
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u64) -> io::Result<()> {
        self.0.write_u64(writer, value)
    }
    fn write_u128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u128) -> io::Result<()> {
        self.0.write_u128(writer, value)
    }
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.0.write_f32(writer, value)
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        self.0.write_f64(writer, value)
    }
    fn write_number_str<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        value: &str,
    ) -> io::Result<()> {
        self.0.write_number_str(writer, value)
    }
    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_string(writer)
    }
    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_string(writer)
    }
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        self.0.write_char_escape(writer, char_escape)
    }
    fn write_byte_array<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        value: &[u8],
    ) -> io::Result<()> {
        self.0.write_byte_array(writer, value)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_key(writer)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.0.write_raw_fragment(writer, fragment)
    }
}

/// The UTF-16 code units of the JavaScript string a held string spells (for tests that compare
/// with what Node reports).
#[cfg(test)]
pub(super) fn code_units(held: &str) -> Vec<u16> {
    let mut out = Vec::new();
    for unit in units(held) {
        match unit {
            Unit::Char(c) => out.extend(c.encode_utf16(&mut [0; 2]).iter()),
            Unit::Lone(unit) => out.push(unit),
        }
    }
    out
}

/// A string serde_json read as bytes (`deserialize_bytes`, which does not pair escapes) as a
/// held string: its WTF-8 spells a lone surrogate as the three-byte form of its code point.
/// `None` for bytes that are neither UTF-8 nor such a spelling.
pub(crate) fn held_from_wtf8(bytes: &[u8]) -> Option<String> {
    let mut held = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                held.push_str(&held_from_text(text));
                return Some(held);
            }
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                held.push_str(&held_from_text(std::str::from_utf8(valid).ok()?));
                // The three-byte form of U+D800..=U+DFFF: ED A0..BF 80..BF.
                let [0xED, second @ 0xA0..=0xBF, third @ 0x80..=0xBF, ..] = *after else {
                    return None;
                };
                let unit = 0xD000 | (u16::from(second & 0x3F) << 6) | u16::from(third & 0x3F);
                held.push(held_lone(unit));
                rest = &after[3..];
            }
        }
    }
}
