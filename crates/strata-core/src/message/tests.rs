//! The projection rule read through a view of a payload's text (what [`project`] does for a
//! stored event) agrees with the rule on the parsed tree ([`projected_message`]).

use proptest::prelude::*;

use super::*;
use crate::byte_edits;

/// Payloads near the edges of the rule: empty and non-empty content, content that is not an
/// array or is an array spelled with spaces, a message that is not an object or is missing,
/// and repeated keys (the last one counts, in a tree as in a view).
const PAYLOADS: &[&str] = &[
    r#"{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"id":"a1"},"stream":[]}"#,
    r#"{"turn":1,"step":1,"message":{"role":"assistant","content":[],"id":"a1"},"stream":[]}"#,
    r#"{"turn":1,"message":{"role":"system","content":[ ],"id":"s"}}"#,
    r#"{"turn":1,"message":{"role":"system","content":"text","id":"s"}}"#,
    r#"{"turn":1,"message":{"role":"system","id":"s"}}"#,
    r#"{"turn":1,"message":"not an object"}"#,
    r#"{"turn":1}"#,
    r#"{"message":{"content":[]},"message":{"content":[{"type":"text","text":"x"}]}}"#,
    r#"{"message":{"content":[{"type":"text"}]},"message":{"content":[]}}"#,
    r#"{"message":{"content":[],"content":[1]}}"#,
    r#"{"message":{"content":[{"type":"tool-result","toolCallId":"c","content":[]}]}}"#,
    r#"[]"#,
    r#"{"content":[],"role":"user","id":"u"}"#,
];

const TYPES: &[EventType] = &[
    EventType::UserMessage,
    EventType::AssistantMessage,
    EventType::SystemMessage,
    EventType::ToolResult,
    EventType::TurnStart,
];

/// Both readings of `text` as a payload of every type: `(projects by view, by tree)`.
fn both(text: &str) -> Vec<(bool, bool)> {
    let tree: Value = serde_json::from_str(text).expect("valid JSON");
    let view = View::parse(text, PROJECT_VIEW_DEPTH).expect("a view of valid JSON");
    TYPES
        .iter()
        .map(|event_type| {
            (
                message_node(event_type, &view).is_some(),
                projected_message(event_type, &tree).is_some(),
            )
        })
        .collect()
}

#[test]
fn a_view_projects_what_the_tree_projects() {
    for text in PAYLOADS {
        for (event_type, (by_view, by_tree)) in TYPES.iter().zip(both(text)) {
            assert_eq!(by_view, by_tree, "{event_type}: {text}");
        }
    }
    // The rule itself, on a few of them.
    assert_eq!(
        both(PAYLOADS[1])[1],
        (false, false),
        "empty assistant content"
    );
    assert_eq!(both(PAYLOADS[2])[2], (false, false), "empty system content");
    assert_eq!(both(PAYLOADS[3])[2], (true, true), "content not an array");
    assert_eq!(
        both(PAYLOADS[5])[3],
        (false, false),
        "message not an object"
    );
    assert_eq!(
        both(PAYLOADS[7])[1],
        (true, true),
        "the last message counts"
    );
    assert_eq!(
        both(PAYLOADS[8])[1],
        (false, false),
        "the last message counts"
    );
}

strata_testkit::proptest! {
    /// Near-valid payloads (a few byte edits of the edge cases, kept when still JSON).
    #[test]
    fn a_view_projects_what_the_tree_projects_after_edits(
        pick in 0..PAYLOADS.len(),
        edits in byte_edits::edits(),
    ) {
        let bytes = byte_edits::apply(PAYLOADS[pick], edits, b"{}[]\",: 0ax");
        let Ok(text) = std::str::from_utf8(&bytes) else { return Ok(()) };
        if serde_json::from_str::<Value>(text).is_err() {
            return Ok(());
        }
        for (by_view, by_tree) in both(text) {
            prop_assert_eq!(by_view, by_tree, "{}", text);
        }
    }
}
