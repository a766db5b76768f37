//! Tests of JavaScript number semantics.

use serde_json::json;

use super::*;

#[test]
fn numbers_are_judged_as_doubles() {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    assert!(is_non_negative_safe_integer(&parse("-0")));
    assert!(is_non_negative_safe_integer(&parse("1e3")));
    assert!(is_non_negative_safe_integer(&parse("4503599627370496.5")));
    assert!(!is_non_negative_safe_integer(&parse("9007199254740992")));
    assert!(!is_non_negative_safe_integer(&parse("0.5")));
    assert!(!is_non_negative_safe_integer(&json!("0")));
}

#[test]
fn display_prints_like_string_of_value() {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    assert_eq!(display(Some(&parse("1.0"))), "1");
    assert_eq!(display(Some(&parse("-0"))), "0");
    assert_eq!(display(Some(&json!("0"))), "0");
    assert_eq!(display(None), "undefined");
    assert_eq!(display(Some(&Value::Null)), "null");
    assert_eq!(display(Some(&parse("-1"))), "-1");
    assert_eq!(number_to_value(3.0), json!(3));
}
