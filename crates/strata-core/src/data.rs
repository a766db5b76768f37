//! Event payloads held as the JSON text they were written with, parsed on demand.
//!
//! A log of a million events is mostly payload bytes. Holding each payload as
//! its raw text (byte-identical on write) instead of a parsed `serde_json::Value`
//! tree (an allocation per key, string and number) keeps a loaded log close to
//! its plaintext size and makes loading close to the speed of tokenizing.
//! Validation reads payloads through borrowed views (`view` module); the full
//! `Value` is built only when a caller asks for it, once.
//!
//! Loaded payloads share storage: a store's decoder moves the payload texts of a
//! whole batch of rows into one block ([`RawEvent::share_payloads`]), so a load
//! makes one long-lived allocation per batch rather than one per event (fewer
//! allocator calls, no per-payload malloc header, and far fewer times a
//! decoding thread's heap has to grow).
//!
//! Invariants: a [`Text`] is valid JSON; when a `Data`'s `value` is set it is
//! exactly its text parsed by [`crate::json::parse`] (strings held, lone surrogates kept).
//!
//! [`RawEvent::share_payloads`]: crate::RawEvent::share_payloads

use std::sync::{Arc, OnceLock};

use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// A payload as raw JSON text with a lazily parsed `Value`.
///
/// The cache is boxed (a parsed tree is far larger than the slot, and most events never parse
/// theirs) and the text is a thin handle on a shared block: a `Data` is 32 bytes, and an
/// `Event` (88 bytes, see `StoredMeta`) stays in glibc's 112-byte size class.
pub struct Data {
    text: Text,
    value: OnceLock<Box<Value>>,
}

/// JSON text: `len` bytes at `start` of a shared, immutable block (16 bytes). `len ==
/// WHOLE` means the whole block, whatever its length (a payload with a block of its own).
///
/// The block is an `Arc<String>` (a thin pointer to the string it was built in): a batch's
/// block is filled once and moved behind the `Arc`, never copied again.
#[derive(Clone)]
pub(crate) struct Text {
    block: Arc<String>,
    start: u32,
    len: u32,
}

/// `Text::len` for a text that is its whole block.
const WHOLE: u32 = u32::MAX;

impl Text {
    /// Text that is its own block.
    pub(crate) fn whole(text: &str) -> Text {
        Text {
            block: Arc::new(text.to_owned()),
            start: 0,
            len: WHOLE,
        }
    }

    /// Whether the text is a block of its own (not yet shared with other texts).
    pub(crate) fn is_whole(&self) -> bool {
        self.len == WHOLE
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        if self.len == WHOLE {
            return self.block.as_str();
        }
        let start = self.start as usize;
        // In range by construction (`share`); the fallback only keeps this free of panics.
        self.block
            .get(start..start + self.len as usize)
            .unwrap_or("null")
    }

    /// Moves the payload texts of a batch of rows into one new block: `text` gives a row's
    /// text not yet shared, `set` hands the row its handle. Rows keep their texts when the
    /// block would not fit 32-bit offsets.
    pub(crate) fn share_among<T>(
        rows: &mut [T],
        text: impl Fn(&T) -> Option<&str>,
        mut set: impl FnMut(&mut T, Text),
    ) {
        let Some(shared) = Text::share(rows.iter().filter_map(&text)) else {
            return;
        };
        let mut shared = shared.into_iter();
        for row in rows.iter_mut() {
            if text(row).is_some() {
                if let Some(handle) = shared.next() {
                    set(row, handle);
                }
            }
        }
    }

    /// Copies `texts` into one new block, returning their handles in order; `None` when the
    /// block would not fit 32-bit offsets.
    fn share<'t>(texts: impl Iterator<Item = &'t str> + Clone) -> Option<Vec<Text>> {
        let total: usize = texts.clone().map(str::len).sum();
        if u32::try_from(total).map_or(true, |total| total == WHOLE) {
            return None;
        }
        let mut block = String::with_capacity(total);
        let mut spans = Vec::new();
        for text in texts {
            // Both fit: their sum is below `WHOLE`.
            let start = block.len() as u32;
            spans.push((start, text.len() as u32));
            block.push_str(text);
        }
        let block = Arc::new(block);
        Some(
            spans
                .into_iter()
                .map(|(start, len)| Text {
                    block: block.clone(),
                    start,
                    len,
                })
                .collect(),
        )
    }
}

/// A payload not yet accepted: raw text from storage, or a value built by a caller.
#[derive(Clone, Debug)]
pub(crate) enum Payload {
    /// Text read from storage; validated through a borrowed view.
    Raw(Box<RawValue>),
    /// Text read from storage and moved into a shared block, or an accepted event's text.
    Text(Text),
    /// A value built in memory (appends, normalizations); boxed, as rows from storage are the
    /// common case and carry text.
    Value(Box<Value>),
}

impl Data {
    /// Serializes a value built in memory, keeping the value as the parsed form.
    pub(crate) fn from_value(value: Value) -> Data {
        let text = crate::json::to_js_string(&value);
        let cell = OnceLock::new();
        let _ = cell.set(Box::new(value));
        Data {
            text: Text::whole(&text),
            value: cell,
        }
    }

    /// The payload's JSON text, exactly as stored.
    pub fn json(&self) -> &str {
        self.text.as_str()
    }

    /// The text handle (shared, not copied, when an event is re-read as a row).
    pub(crate) fn text(&self) -> &Text {
        &self.text
    }

    /// The parsed payload, built on first use.
    pub fn value(&self) -> &Value {
        self.value
            .get_or_init(|| Box::new(parse_accepted(self.json())))
    }

    /// The parsed payload without keeping it: for a fold that reads a payload once while
    /// loading (a `request/header`), where a cached tree would stay in memory with the event.
    pub(crate) fn value_uncached(&self) -> std::borrow::Cow<'_, Value> {
        match self.value.get() {
            Some(value) => std::borrow::Cow::Borrowed(value),
            None => std::borrow::Cow::Owned(parse_accepted(self.json())),
        }
    }

    /// Whether the parsed form has been built (for memory accounting in benches).
    pub fn is_parsed(&self) -> bool {
        self.value.get().is_some()
    }
}

impl Payload {
    /// The payload's stored JSON text, when it came from storage.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Payload::Raw(raw) => Some(raw.get()),
            Payload::Text(text) => Some(text.as_str()),
            Payload::Value(_) => None,
        }
    }

    /// Turns an accepted payload into stored form.
    pub(crate) fn into_data(self) -> Data {
        match self {
            Payload::Raw(raw) => Data {
                text: Text::whole(raw.get()),
                value: OnceLock::new(),
            },
            Payload::Text(text) => Data {
                text,
                value: OnceLock::new(),
            },
            Payload::Value(value) => Data::from_value(*value),
        }
    }

    /// The payload as a `Value` (parsing raw text); for the rare rules that
    /// need the whole payload.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Payload::Raw(_) | Payload::Text(_) => parse_accepted(self.text().unwrap_or("null")),
            Payload::Value(value) => (**value).clone(),
        }
    }
}

/// A payload's text, which serde_json read as JSON when it was decoded, as a value.
///
/// [`crate::json::parse`] reads every text serde_json accepts as a raw value, lone surrogates
/// included, except one nested past serde_json's limit of 128 containers, which `JSON.parse`
/// reads and strata cannot hold as a `Value`: that one comes out `null`.
pub(crate) fn parse_accepted(text: &str) -> Value {
    crate::json::parse(text).unwrap_or(Value::Null)
}

impl Clone for Data {
    fn clone(&self) -> Data {
        let value = OnceLock::new();
        if let Some(parsed) = self.value.get() {
            let _ = value.set(parsed.clone());
        }
        Data {
            text: self.text.clone(),
            value,
        }
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.json() == other.json()
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
