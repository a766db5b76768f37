use serde_json::{json, Value};

use super::*;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn negative_zero_is_lossy_in_every_spelling() {
    for text in ["-0", "-0.0", "-0e5", "-1e-400"] {
        assert!(!is_lossless(&parse(text)), "{text}");
        assert_eq!(safe_integer(&parse(text)), None, "{text}");
    }
    assert!(is_lossless(&parse("0")));
    assert!(is_lossless(&parse("0.0")));
}

#[test]
fn overflow_to_infinity_is_lossy() {
    assert!(!is_lossless(&parse("1e400")));
    assert!(!is_lossless(&parse(r#"{"a":[1,{"b":-1e999}]}"#)));
}

#[test]
fn safe_integers_follow_javascript() {
    assert_eq!(safe_integer(&parse("1.0")), Some(1));
    assert_eq!(safe_integer(&parse("1e3")), Some(1000));
    assert_eq!(safe_integer(&parse("-5")), Some(-5));
    assert_eq!(safe_integer(&parse("0.5")), None);
    assert_eq!(
        safe_integer(&parse("9007199254740991")),
        Some(9007199254740991)
    );
    assert_eq!(safe_integer(&parse("9007199254740992")), None);
    assert_eq!(safe_integer(&json!("1")), None);
    assert_eq!(non_negative_safe_integer(&parse("-1")), None);
}

#[test]
fn equality_ignores_key_order_and_number_spelling() {
    assert!(json_equal(
        &parse(r#"{"a":1,"b":[2]}"#),
        &parse(r#"{"b":[2.0],"a":1}"#)
    ));
    assert!(!json_equal(
        &parse(r#"{"a":1}"#),
        &parse(r#"{"a":1,"b":2}"#)
    ));
    assert!(!json_equal(&parse(r#"["a"]"#), &parse(r#"["b"]"#)));
    assert!(!json_equal(&parse(r#"["a"]"#), &parse(r#""a""#)));
}

#[test]
fn writer_matches_json_stringify_escapes_and_order() {
    let value = parse(r#"{"z":"a\"b\\c\u0001\n\t/é","a":1.50,"m":[true,null]}"#);
    assert_eq!(
        to_js_string(&value),
        "{\"z\":\"a\\\"b\\\\c\\u0001\\n\\t/é\",\"a\":1.50,\"m\":[true,null]}"
    );
}

#[test]
fn text_check_agrees_with_value_check() {
    for text in [
        "-0",
        "0",
        "-0.0",
        "1e400",
        "-1e-400",
        r#"{"a":"-0","b":[1,-2.5e3]}"#,
        r#"{"a":"x\"-0","b":-0}"#,
        r#"[0.1,-0.0001,"\\",-0e1]"#,
        "true",
        r#""-0""#,
    ] {
        let value = parse(text);
        assert_eq!(text_is_lossless(text), is_lossless(&value), "{text}");
    }
}
