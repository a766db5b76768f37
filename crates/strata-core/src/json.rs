//! The lossless-JSON rule (session-core §2.5) and JavaScript number semantics.
//!
//! dsh stores everything as JSON produced by `JSON.stringify` and reads it with
//! `JSON.parse`, so "a number" means an IEEE double: `1.0` is the integer 1,
//! `-0` is a distinct value that does not survive a round trip, and `1e400` is
//! `Infinity`. strata parses with serde_json's `arbitrary_precision`, which keeps
//! each number's text, and judges it here with the same semantics.
//!
//! serde_json's compact writer escapes strings like `JSON.stringify` (`\"`, `\\`,
//! `\b \f \n \r \t`, other control characters as lowercase `\u00xx`, everything
//! else literal) and, with `preserve_order`, keeps object keys in insertion order.
//! What it cannot hold is a lone UTF-16 surrogate, which a JavaScript string can:
//! strata reads JSON text with [`parse`] (or [`from_str`]), whose strings are
//! *held* strings that keep lone surrogates, and writes JSON with [`to_js_string`],
//! [`to_js_vec`] or [`to_js_string_pretty`], which spell them as `JSON.stringify`
//! does (`\ud800`). Plain `serde_json::from_str` / `to_string` on payloads lose
//! or misspell them; the `held` module's docs give the spelling.

use serde_json::{Number, Value};

pub use held::{
    from_str, held_from_text, held_value_from_text, parse, parse_held, text_from_held,
    text_value_from_held, to_js_string_pretty, to_js_vec, to_js_writer, to_js_writer_pretty,
};
pub(crate) use held::{has_reserved, held_from_wtf8, RESERVED_LEAD};

use crate::seq::MAX_SAFE_INTEGER;

/// The value of a number spelled as a plain integer in canonical form (digits, no leading
/// zero), the spelling `Value::from` gives it back; `None` for any other spelling or a value
/// past `u64`. Loads read nearly every seq, turn and source this way instead of through serde.
pub fn plain_integer(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|byte| byte.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Reads a JSON number the way `JSON.parse` would (a double).
pub fn number_value(number: &Number) -> f64 {
    number
        .as_f64()
        .or_else(|| number.to_string().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// True for a number that `JSON.stringify` cannot reproduce: `-0`, NaN or ±Infinity.
pub fn is_lossy_number(number: &Number) -> bool {
    let value = number_value(number);
    !value.is_finite() || (value == 0.0 && value.is_sign_negative())
}

/// The value as a JavaScript safe integer (`Number.isSafeInteger`), rejecting `-0`.
pub fn safe_integer(value: &Value) -> Option<i64> {
    let Value::Number(number) = value else {
        return None;
    };
    if let Some(int) = number.as_i64() {
        // Integer spelling; `-0` parses as 0 here, so look at the text.
        if int == 0 && number.to_string().starts_with('-') {
            return None;
        }
        return (int.unsigned_abs() <= MAX_SAFE_INTEGER).then_some(int);
    }
    let float = number_value(number);
    if !float.is_finite() || float.fract() != 0.0 || float.abs() > MAX_SAFE_INTEGER as f64 {
        return None;
    }
    if float == 0.0 && float.is_sign_negative() {
        return None;
    }
    Some(float as i64)
}

/// The value as a non-negative JavaScript safe integer, rejecting `-0`.
pub fn non_negative_safe_integer(value: &Value) -> Option<u64> {
    safe_integer(value).and_then(|int| u64::try_from(int).ok())
}

/// The value as a non-negative safe integer the way upstream 0.1.0-rc.8 reads one:
/// `Number.isSafeInteger(x) && x >= 0` on the double `JSON.parse` gives, so `-0` is 0 and
/// `1.0` is 1 (docs/v0-rules.md, "Numbers").
pub fn js_non_negative_safe_integer(value: &Value) -> Option<u64> {
    let Value::Number(number) = value else {
        return None;
    };
    let float = number_value(number);
    let safe = float.is_finite() && float.fract() == 0.0 && float.abs() <= MAX_SAFE_INTEGER as f64;
    (safe && float >= 0.0).then_some(float as u64)
}

/// True when every number in `value` is representable by `JSON.stringify`
/// (the Rust side of dsh's lossless-JSON rule: serde values cannot hold
/// functions, cycles or holes, so numbers are all that is left to check).
pub fn is_lossless(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => true,
        Value::Number(number) => !is_lossy_number(number),
        Value::Array(items) => items.iter().all(is_lossless),
        Value::Object(map) => map.values().all(is_lossless),
    }
}

/// [`is_lossless`] on JSON text, without building a value: every number token
/// is read as a double and refused when it is `-0` or not finite.
pub fn text_is_lossless(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => {
                // Skip the string, honouring escapes.
                index += 1;
                while index < bytes.len() {
                    match bytes[index] {
                        b'\\' => index += 2,
                        b'"' => break,
                        _ => index += 1,
                    }
                }
                index += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = index;
                while index < bytes.len()
                    && matches!(bytes[index], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    index += 1;
                }
                let token = &text[start..index];
                match token.parse::<f64>() {
                    Ok(value)
                        if value.is_finite() && !(value == 0.0 && value.is_sign_negative()) => {}
                    _ => return false,
                }
            }
            _ => index += 1,
        }
    }
    true
}

/// Deep JSON equality with object keys compared as sets, numbers by value.
///
/// The tool-result rewrite rule (session-core §5.2 rule 9) compares payloads
/// this way; `Value`'s own `==` would be order-sensitive under `preserve_order`
/// and spelling-sensitive under `arbitrary_precision`.
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => {
            a.to_string() == b.to_string() || number_value(a) == number_value(b)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => false,
    }
}

/// How JavaScript's `String(v)` (and a template literal) prints a JSON value in upstream's
/// messages: strings bare (a lone surrogate as U+FFFD, as a terminal shows it), numbers as doubles (`1.0` → `1`, `-0` → `0`), arrays joined by
/// commas, objects as `[object Object]`.
pub fn js_display(value: &Value) -> String {
    match value {
        Value::String(text) => text_from_held(text).into_owned(),
        Value::Null => "null".into(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => {
            let float = number_value(number);
            if float == 0.0 {
                "0".into()
            } else if float.is_finite() && float.fract() == 0.0 && float.abs() < 1e21 {
                format!("{float:.0}")
            } else if float.is_nan() {
                "NaN".into()
            } else if float.is_infinite() {
                if float > 0.0 { "Infinity" } else { "-Infinity" }.into()
            } else {
                format!("{float}")
            }
        }
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_display(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// Serializes a value as compact JSON with `JSON.stringify`'s key order and escapes, lone
/// surrogates included (`\ud800`).
///
/// Numbers are written as they are held: one read from text keeps that text's spelling
/// (serde_json's `arbitrary_precision`), so text `JSON.stringify` wrote comes back byte for
/// byte, and `1.50` stays `1.50`; a float built in Rust is spelled by serde_json (`2.0` and
/// `-0.0`, where `JSON.stringify` writes `2` and `0`).
pub fn to_js_string(value: &Value) -> String {
    // Serializing a `Value` into memory cannot fail: keys are strings and the writer is a
    // `Vec`, so the error case is unreachable.
    to_js_vec(value).map_or_else(|_| String::from("null"), held::utf8)
}

/// `0` or a decimal without a leading zero, as a safe integer.
pub(crate) fn canonical_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    if text.len() > 1 && text.starts_with('0') {
        return None;
    }
    text.parse::<u64>().ok().filter(|n| *n <= MAX_SAFE_INTEGER)
}

mod held;
#[cfg(test)]
mod tests;
