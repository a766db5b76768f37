//! JavaScript number semantics for the v0/v1 read path.
//!
//! dsh 0.1.0-rc.8 parses every line with `JSON.parse`, so each number becomes an IEEE double
//! before any rule looks at it: `1.0` and `1e3` are integers, `-0` is a non-negative safe
//! integer (`-0 >= 0` holds), `9007199254740993` is the double 2^53 and therefore not safe.
//! These helpers judge a `serde_json` number exactly that way, by its double value, never by
//! its spelling (docs/v0-rules.md, "Numbers"). The V3 codec is stricter (it refuses `-0`).

use serde_json::Value;
use strata_core::json::number_value;

/// `Number.MAX_SAFE_INTEGER` as a double.
pub(crate) const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// The value as `JSON.parse` would read it, when it is a number.
pub(crate) fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => Some(number_value(number)),
        _ => None,
    }
}

/// `Number.isSafeInteger(x)`.
pub(crate) fn is_safe_integer(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0 && x.abs() <= MAX_SAFE
}

/// `Number.isSafeInteger(v) && v >= 0` on a JSON value (`-0` passes).
pub(crate) fn is_non_negative_safe_integer(value: &Value) -> bool {
    number(value).is_some_and(|x| is_safe_integer(x) && x >= 0.0)
}

/// The value as a seq when it is a non-negative safe integer by JavaScript semantics.
pub(crate) fn js_seq(value: &Value) -> Option<u64> {
    number(value)
        .filter(|x| is_safe_integer(*x) && *x >= 0.0)
        .map(|x| x as u64)
}

/// The value as a time (a safe integer by JavaScript semantics).
pub(crate) fn js_time(value: Option<&Value>) -> Option<i64> {
    value
        .and_then(number)
        .filter(|x| is_safe_integer(*x))
        .map(|x| x as i64)
}

/// A double written back as JSON the way `JSON.stringify` prints it: integral values in
/// integer spelling (`-0` prints as `0`), others in shortest round-trip form.
pub(crate) fn number_to_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.2e18 {
        // Integral and in range: exact as i64 (a double below 2^63 in magnitude converts exactly).
        return Value::from(x as i64);
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// How a template literal prints a JSON value in upstream's messages (`String(v)`):
/// strings bare, `null` as `null`, numbers as doubles (`1.0` prints `1`, `-0` prints `0`).
pub(crate) fn display(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(flag)) => flag.to_string(),
        Some(Value::Number(number)) => display_number(number_value(number)),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => display(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// `String(x)` for a double, for the integral and ordinary cases upstream messages print.
pub(crate) fn display_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.abs() >= 1e21 || x.abs() < 1e-6 {
        // JavaScript's exponent form: shortest digits, the exponent signed (`1e+21`, `1e-19`).
        let text = format!("{x:e}");
        return match text.split_once('e') {
            Some((digits, exponent)) if !exponent.starts_with('-') => {
                format!("{digits}e+{exponent}")
            }
            _ => text,
        };
    }
    if x.fract() == 0.0 {
        return format!("{x:.0}");
    }
    // Shortest round-trip digits; JavaScript's exponent spelling differs only for very large
    // or very small magnitudes, which no rule message prints.
    let text = format!("{x}");
    text
}

#[cfg(test)]
mod tests;
