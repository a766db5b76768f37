//! Event payloads held as the JSON text they were written with, parsed on demand.
//!
//! A log of a million events is mostly payload bytes. Holding each payload as
//! its raw text (one allocation, byte-identical on write) instead of a parsed
//! `serde_json::Value` tree (an allocation per key, string and number) keeps a
//! loaded log close to its plaintext size and makes loading close to the speed
//! of tokenizing. Validation reads payloads through borrowed views (`view`
//! module); the full `Value` is built only when a caller asks for it, once.
//!
//! Invariant: `raw` is valid JSON; when `value` is set it is exactly `raw` parsed.

use once_cell::race::OnceBox;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// A payload as raw JSON text with a lazily parsed `Value`.
///
/// The cache is a `OnceBox` (one pointer; two threads racing to parse keep one result) rather
/// than a `OnceLock<Box<_>>` (two words): with it an `Event` is 104 bytes, and its shared
/// allocation drops a malloc size class.
pub struct Data {
    raw: Box<RawValue>,
    value: OnceBox<Value>,
}

/// A payload not yet accepted: raw text from storage, or a value built by a caller.
#[derive(Clone, Debug)]
pub(crate) enum Payload {
    /// Text read from storage; validated through a borrowed view.
    Raw(Box<RawValue>),
    /// A value built in memory (appends, normalizations); boxed, as rows from storage are the
    /// common case and carry text.
    Value(Box<Value>),
}

impl Data {
    /// Wraps text read from storage.
    pub(crate) fn from_raw(raw: Box<RawValue>) -> Data {
        Data {
            raw,
            value: OnceBox::new(),
        }
    }

    /// Serializes a value built in memory, keeping the value as the parsed form.
    pub(crate) fn from_value(value: Value) -> Data {
        let text = crate::json::to_js_string(&value);
        let raw = RawValue::from_string(text).unwrap_or_else(|_| null_raw());
        let cell = OnceBox::new();
        let _ = cell.set(Box::new(value));
        Data { raw, value: cell }
    }

    /// The payload's JSON text, exactly as stored.
    pub fn json(&self) -> &str {
        self.raw.get()
    }

    /// The raw value (for writers that embed it verbatim).
    pub fn raw(&self) -> &RawValue {
        &self.raw
    }

    /// The parsed payload, built on first use.
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            // `raw` is valid JSON that serde_json already parsed once with the
            // same limits, so this parse succeeds.
            Box::new(serde_json::from_str(self.raw.get()).unwrap_or(Value::Null))
        })
    }

    /// Whether the parsed form has been built (for memory accounting in benches).
    pub fn is_parsed(&self) -> bool {
        self.value.get().is_some()
    }
}

impl Payload {
    /// Turns an accepted payload into stored form.
    pub(crate) fn into_data(self) -> Data {
        match self {
            Payload::Raw(raw) => Data::from_raw(raw),
            Payload::Value(value) => Data::from_value(*value),
        }
    }

    /// The payload as a `Value` (parsing raw text); for the rare rules that
    /// need the whole payload.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Payload::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            Payload::Value(value) => (**value).clone(),
        }
    }
}

fn null_raw() -> Box<RawValue> {
    // The literal `null` is valid JSON, so this cannot fail; no input reaches it.
    #[allow(clippy::expect_used)]
    RawValue::from_string("null".to_owned()).expect("`null` is valid JSON")
}

impl Clone for Data {
    fn clone(&self) -> Data {
        let value = OnceBox::new();
        if let Some(parsed) = self.value.get() {
            let _ = value.set(Box::new(parsed.clone()));
        }
        Data {
            raw: self.raw.clone(),
            value,
        }
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.raw.get() == other.raw.get()
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw.get())
    }
}
