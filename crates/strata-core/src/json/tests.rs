//! Tests of the held-string JSON layer: parsing, the held form of lone surrogates, and
//! writing as `JSON.stringify` does.

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

/// What Node v20.20.2 does with each text (recorded from
/// `node -e 'const v = JSON.parse(text); /* v.charCodeAt(i) for each i */ JSON.stringify(v)'`):
/// the JSON text read, the UTF-16 code units of the string `JSON.parse` returns, and the text
/// `JSON.stringify` writes for it. A lone surrogate stays one unit and is written as a
/// lowercase escape; a pair is a character, written literally.
const NODE_STRINGS: &[(&str, &[u16], &str)] = &[
    (r#""\ud800""#, &[0xd800], r#""\ud800""#),
    (r#""\uDC00""#, &[0xdc00], r#""\udc00""#),
    (r#""\ud800x""#, &[0xd800, 0x78], r#""\ud800x""#),
    (r#""\ud800\u0041""#, &[0xd800, 0x41], r#""\ud800A""#),
    (r#""\ud800\ud800""#, &[0xd800, 0xd800], r#""\ud800\ud800""#),
    (r#""\udc00\ud800""#, &[0xdc00, 0xd800], r#""\udc00\ud800""#),
    (
        r#""\ud800\ud83d\ude00""#,
        &[0xd800, 0xd83d, 0xde00],
        "\"\\ud800\u{1F600}\"",
    ),
    (r#""\ud83d\ude00""#, &[0xd83d, 0xde00], "\"\u{1F600}\""),
    (r#""\uD83D\uDE00""#, &[0xd83d, 0xde00], "\"\u{1F600}\""),
    (
        r#""A\ud800B ""#,
        &[0x41, 0xd800, 0x42, 0x20],
        r#""A\ud800B ""#,
    ),
    (r#""\ud800\n""#, &[0xd800, 0xa], r#""\ud800\n""#),
    (
        r#""\ud800\\udc00""#,
        &[0xd800, 0x5c, 0x75, 0x64, 0x63, 0x30, 0x30],
        r#""\ud800\\udc00""#,
    ),
    // Real characters of the range strata holds lone surrogates in, escaped and literal.
    (r#""\udbff\udfff""#, &[0xdbff, 0xdfff], "\"\u{10FFFF}\""),
    (r#""\udbfd\udfff""#, &[0xdbfd, 0xdfff], "\"\u{10F7FF}\""),
    (r#""\udbfe\udc00""#, &[0xdbfe, 0xdc00], "\"\u{10F800}\""),
    ("\"\u{10F800}\"", &[0xdbfe, 0xdc00], "\"\u{10F800}\""),
    (
        "\"\u{10F7FF}\u{10F800}\"",
        &[0xdbfd, 0xdfff, 0xdbfe, 0xdc00],
        "\"\u{10F7FF}\u{10F800}\"",
    ),
    (r#""\ufffd""#, &[0xfffd], "\"\u{FFFD}\""),
];

#[test]
fn strings_read_and_write_as_node_does() {
    for &(text, units, written) in NODE_STRINGS {
        let value = super::parse(text).unwrap_or_else(|error| panic!("{text}: {error}"));
        let Value::String(held) = &value else {
            panic!("{text}: not a string");
        };
        assert_eq!(held::code_units(held), units, "{text}");
        assert_eq!(to_js_string(&value), written, "{text}");
        assert_eq!(to_js_vec(&value).unwrap(), written.as_bytes(), "{text}");
        assert_eq!(super::parse(written).unwrap(), value, "{text}");
        // The same text inside a tool call's `arguments` (JSON text that is itself a string,
        // so read as a held string) reads the same.
        let call = super::parse(&format!(
            r#"{{"arguments":{}}}"#,
            to_js_string(&Value::String(held_from_text(text).into_owned()))
        ));
        let arguments = call.unwrap()["arguments"].as_str().unwrap().to_owned();
        assert_eq!(parse_held(&arguments).unwrap(), value, "{text}");
        let call = super::parse(&format!(
            r#"{{"arguments":{}}}"#,
            to_js_string(&Value::String(held_from_text(written).into_owned()))
        ));
        let arguments = call.unwrap()["arguments"].as_str().unwrap().to_owned();
        assert_eq!(parse_held(&arguments).unwrap(), value, "{text}");
    }
    // Keys are strings too (Node: `JSON.stringify(JSON.parse('{"\ud800":"\udfff"}'))`).
    let object = super::parse(r#"{"\ud800":"\udfff"}"#).unwrap();
    assert_eq!(to_js_string(&object), r#"{"\ud800":"\udfff"}"#);
}

/// A JavaScript string's units: ASCII (quotes, backslashes and control characters among
/// them), BMP text, surrogates of both kinds (paired or not, by chance) and the units of the
/// reserved range U+10F7FF..=U+10FFFF.
fn js_units() -> impl proptest::strategy::Strategy<Value = Vec<u16>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        prop_oneof![
            0x00u16..0x80,
            Just(u16::from(b'"')),
            Just(u16::from(b'\\')),
            0x80u16..0xD800,
            0xD800u16..0xE000,
            0xDBFDu16..0xDC00,
            0xDFFFu16..=0xDFFF,
            0xE000u16..=0xFFFF,
        ],
        0..24,
    )
}

/// What `JSON.stringify` writes for the string of `units` (ECMA-262 QuoteJSONString).
fn stringify_units(units: &[u16]) -> String {
    let mut out = String::from("\"");
    for item in char::decode_utf16(units.iter().copied()) {
        match item {
            Ok('"') => out.push_str("\\\""),
            Ok('\\') => out.push_str("\\\\"),
            Ok('\u{8}') => out.push_str("\\b"),
            Ok('\u{c}') => out.push_str("\\f"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\r') => out.push_str("\\r"),
            Ok('\t') => out.push_str("\\t"),
            Ok(c) if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            Ok(c) => out.push(c),
            Err(lone) => out.push_str(&format!("\\u{:04x}", lone.unpaired_surrogate())),
        }
    }
    out.push('"');
    out
}

/// JSON text for the string of `units`, each unit or pair spelled as `spelling` picks: as
/// itself where JSON allows, or as `\uXXXX` escapes in lower or upper case.
fn spell_units(units: &[u16], spelling: &[u8]) -> String {
    let mut out = String::from("\"");
    let mut picks = spelling.iter().cycle();
    let mut index = 0;
    for item in char::decode_utf16(units.iter().copied()) {
        let pick = picks.next().copied().unwrap_or(0) % 3;
        let width = item.as_ref().map_or(1, |c| c.len_utf16());
        let escape = |out: &mut String, upper: bool| {
            for unit in &units[index..index + width] {
                if upper {
                    out.push_str(&format!("\\u{unit:04X}"));
                } else {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        };
        match item {
            Ok(c) if pick == 0 && c != '"' && c != '\\' && u32::from(c) >= 0x20 => out.push(c),
            _ => escape(&mut out, pick == 2),
        }
        index += width;
    }
    out.push('"');
    out
}

strata_testkit::proptest! {
    /// Any JavaScript string, however its JSON text spells it, reads into a held string that
    /// spells the same units and writes back as `JSON.stringify` writes it.
    #[test]
    fn any_string_round_trips_as_json_stringify_writes_it(
        units in js_units(),
        spelling in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..8),
    ) {
        let text = spell_units(&units, &spelling);
        let value = super::parse(&text).unwrap();
        let Value::String(held) = &value else { panic!("{text}: not a string") };
        proptest::prop_assert_eq!(&held::code_units(held), &units);
        let written = to_js_string(&value);
        proptest::prop_assert_eq!(&written, &stringify_units(&units));
        // As an object key, and read back from what was written, the same.
        let object = super::parse(&format!("{{{text}:{text}}}")).unwrap();
        proptest::prop_assert_eq!(to_js_string(&object), format!("{{{written}:{written}}}"));
        proptest::prop_assert_eq!(super::parse(&written).unwrap(), value);
    }

    /// Text that did not come from JSON is held as itself unless it has reserved code points,
    /// and writes as serde_json writes the text; read back as text, it is the text again.
    #[test]
    fn text_made_held_writes_as_itself(text in "(\\PC|[\u{10F7F0}-\u{10FFFF}\"\\\\\n])*") {
        let held = held_from_text(&text);
        proptest::prop_assert_eq!(text_from_held(&held), text.as_str());
        let value = Value::String(held.into_owned());
        proptest::prop_assert_eq!(to_js_string(&value), serde_json::to_string(&text).unwrap());
    }
}

#[test]
fn text_from_held_shows_a_lone_surrogate_as_the_replacement_character() {
    let value = super::parse(r#""A\ud800B \udbff\udfff \ud83d""#).unwrap();
    assert_eq!(
        text_from_held(value.as_str().unwrap()),
        "A\u{FFFD}B \u{10FFFF} \u{FFFD}"
    );
    // Two halves joined in Rust (stream deltas that split a pair) are the character.
    let high = super::parse(r#""\ud83d""#).unwrap();
    let low = super::parse(r#""\ude00""#).unwrap();
    let joined = format!("{}{}", high.as_str().unwrap(), low.as_str().unwrap());
    assert_eq!(text_from_held(&joined), "\u{1F600}");
    assert_eq!(to_js_string(&Value::String(joined)), "\"\u{1F600}\"");
}

#[test]
fn values_cross_to_and_from_text_string_by_string() {
    // A lone surrogate in a key and in strings, and a real U+10F800.
    let held = super::parse("{\"\\ud800k\":[\"A\\ud800B\",\"\u{10F800}\",1,{\"x\":\"\\udfff\"}]}")
        .unwrap();
    let text = text_value_from_held(held.clone());
    assert_eq!(
        text,
        json!({"\u{FFFD}k": ["A\u{FFFD}B", "\u{10F800}", 1, {"x": "\u{FFFD}"}]})
    );
    // Text made held writes as the text; a held value writes its lone surrogates.
    let native = json!({"path": "\u{10F800}", "n": [true, null]});
    assert_eq!(
        to_js_string(&held_value_from_text(native.clone())),
        serde_json::to_string(&native).unwrap()
    );
    assert_eq!(
        to_js_string(&held),
        "{\"\\ud800k\":[\"A\\ud800B\",\"\u{10F800}\",1,{\"x\":\"\\udfff\"}]}"
    );
}
