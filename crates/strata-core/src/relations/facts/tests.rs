//! The one-pass decoding agrees with the tree lookups on every payload (the module's
//! invariant), including shapes the event-local rules would refuse.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{Message, TYPES};
use crate::event::EventType;
use crate::scan::{ScanArena, ScannedRow};
use crate::view::View;

/// Keys and strings the rules look for, so generated payloads hit every branch.
const KEYS: &[&str] = &[
    "turn",
    "step",
    "message",
    "source",
    "kind",
    "plugin",
    "callId",
    "compactionId",
    "sourceCommandId",
    "content",
    "type",
    "id",
    "name",
    "arguments",
    "text",
];
const TEXTS: &[&str] = &[
    "user",
    "plugin",
    "compact",
    "tool-call",
    "model",
    "c1",
    "é\"\\",
];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0_u64..4).prop_map(|n| json!(n)),
        Just(json!(-1.5)),
        Just(json!(1.0)),
        Just(json!(9_007_199_254_740_993_u64)),
        prop::sample::select(TEXTS).prop_map(|text| json!(text)),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect(),
                )
            }),
        ]
    })
}

fn check(text: &str) {
    let Ok(parsed) = serde_json::from_str::<Value>(text) else {
        return;
    };
    for event_type in &TYPES {
        let decoded = Message::decode(event_type, text);
        let looked_up = Message::from_value(event_type, &parsed);
        match decoded {
            Some(decoded) => assert_eq!(decoded, looked_up, "{event_type:?}: {text}"),
            None => assert!(!parsed.is_object(), "{event_type:?} not decoded: {text}"),
        }
        check_views(event_type, text, &looked_up);
    }
}

/// The facts a decoding thread reads from a row's view (serde's and the scanner's, at the
/// depth acceptance builds, and shallower) are the lookups' whenever the view gives them.
fn check_views(event_type: &EventType, text: &str, looked_up: &Message) {
    for depth in 0..=crate::read_depth::scan_depth(event_type) {
        if let Some(view) = View::parse(text, depth) {
            if let Some(facts) = Message::from_view(event_type, &view) {
                assert_eq!(
                    &facts, looked_up,
                    "{event_type:?} (view to depth {depth}): {text}"
                );
            }
        }
    }
    if let Some(facts) = scanned_facts(event_type, text) {
        assert_eq!(&facts, looked_up, "{event_type:?} (scanned view): {text}");
    }
}

/// The facts of `payload` as a store's decoder reads them: from the view its scan of the row
/// built.
fn scanned_facts(event_type: &EventType, payload: &str) -> Option<Message> {
    let row = format!(
        r#"{{"type":"{}","seq":0,"time":0,"data":{payload}}}"#,
        event_type.as_str()
    );
    let arena = ScanArena::new();
    let scanned = ScannedRow::scan_in(&row, Some(&arena)).ok()?;
    let (_, prepared) = scanned.into_parts();
    Message::from_view(event_type, &prepared?.view)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoding_agrees_with_lookups(payload in value()) {
        check(&payload.to_string());
    }
}

#[test]
fn shapes_a_lookup_does_not_find_read_as_absent() {
    for text in [
        r#"{"source":["user"]}"#,
        r#"{"source":{"kind":["user"]}}"#,
        r#"{"source":5}"#,
        r#"{"source":{"kind":5,"plugin":{"a":1}}}"#,
        r#"{"message":[{"source":{"kind":"plugin"}}]}"#,
        r#"{"message":{"content":{"type":"tool-call","id":"c1"}}}"#,
        r#"{"message":{"content":[["tool-call"],{"type":"tool-call"},7]}}"#,
        r#"{"turn":null,"step":1e400}"#,
        r#"[{"turn":1}]"#,
        r#"{}"#,
    ] {
        check(text);
    }
}

#[test]
fn a_repeated_key_reads_its_last_value() {
    for text in [
        r#"{"source":{"kind":"plugin"},"source":{"kind":"user"}}"#,
        r#"{"turn":1,"turn":2,"message":{"content":[]},"message":{"content":[{"type":"tool-call","id":"a"}]}}"#,
        r#"{"message":{"source":{"callId":"a","callId":"b"}}}"#,
        r#"{"message":{"content":[{"type":"tool-call","id":"a","type":"text"}]}}"#,
    ] {
        check(text);
    }
    let facts = Message::decode(
        &crate::event::EventType::UserMessage,
        r#"{"source":{"kind":"plugin"},"source":{"kind":"user"}}"#,
    );
    assert!(facts.is_some_and(|facts| facts.source.user));
}

#[test]
fn a_writer_s_messages_are_read_ahead_from_their_scanned_views() {
    // The restoring thread reads no payload text only if the decoder's views give the facts
    // of the rows strata and dsh write.
    let log = include_str!("../../../../../examples/sample.v3.jsonl");
    let mut messages = 0;
    for line in log.lines().skip(1) {
        let row: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let event_type = EventType::parse(row["type"].as_str().unwrap_or(""));
        if !TYPES.contains(&event_type) {
            continue;
        }
        messages += 1;
        let payload = row["data"].to_string();
        let looked_up = Message::from_value(&event_type, &row["data"]);
        assert_eq!(
            scanned_facts(&event_type, &payload),
            Some(looked_up),
            "{line}"
        );
    }
    assert!(messages > 10, "{messages} messages in the sample");
}

#[test]
fn a_held_turn_compares_as_its_value_does() {
    for text in [
        "0",
        "1",
        "2",
        "1.0",
        "1e0",
        "-1",
        "9007199254740991",
        "9007199254740993",
        "\"1\"",
        "null",
    ] {
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let held = Message::from_value(&EventType::AssistantAttempt, &json!({ "turn": value }));
        let Some(num) = held.turn else {
            panic!("{text}: no turn");
        };
        assert_eq!(*num.value(), value, "{text}");
        for n in [0, 1, 2, 9_007_199_254_740_991] {
            let expected = crate::json::non_negative_safe_integer(&value) == Some(n);
            assert_eq!(num.is(n), expected, "{text} is {n}");
        }
    }
}
