//! Rule 9's equality: a tool-result replacement may change only the tool-result content.

use serde_json::Value;

use crate::json::json_equal;
use crate::view::{Node, View};

/// Deep equality of two tool-result payloads with the tool-result block's
/// inner content (`message.content[0].content`) treated as equal (§5.2 rule 9c).
/// Rule 9 read off the texts: two tool-result payloads that are byte-identical but for the
/// value of their first block's `content` (`message.content[0].content`, as a view finds it)
/// are equal except for that content, so [`equal_except_tool_content`] would say so too:
/// every byte outside that value is the same, so everything serde reads from them is the same
/// except what that value becomes, which is the one field rule 9 ignores (or, were it a
/// repeated key's value serde drops, nothing). `false` says only that the texts cannot settle
/// it. This spares parsing both payloads into trees (a twentieth of a pruned log's restore).
pub(super) fn same_text_but_tool_content(left: &str, right: &str) -> bool {
    // The byte range of `message.content[0].content`'s value in `text`.
    fn content_span(text: &str) -> Option<(usize, usize)> {
        // Materialized down to the block; its `content` stays raw text (a `View::Deep`).
        let view = View::parse(text, 4)?;
        let block = (&view).get("message")?.get("content")?.at(0)?;
        let View::Deep(raw) = block.get("content")? else {
            return None;
        };
        let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        let end = start.checked_add(raw.len())?;
        // A view's raw text lies in the text it was parsed from.
        (text.get(start..end)? == *raw).then_some((start, end))
    }
    let (Some((left_start, left_end)), Some((right_start, right_end))) =
        (content_span(left), content_span(right))
    else {
        return false;
    };
    left.get(..left_start) == right.get(..right_start)
        && left.get(left_end..) == right.get(right_end..)
}

pub(super) fn equal_except_tool_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    if left.len() != right.len() {
        return false;
    }
    left.iter().all(|(key, left_value)| {
        let Some(right_value) = right.get(key) else {
            return false;
        };
        if key == "message" {
            equal_message_except_content(left_value, right_value)
        } else {
            json_equal(left_value, right_value)
        }
    })
}

fn equal_message_except_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    left.len() == right.len()
        && left.iter().all(|(key, left_value)| {
            let Some(right_value) = right.get(key) else {
                return false;
            };
            if key != "content" {
                return json_equal(left_value, right_value);
            }
            let (Value::Array(left_blocks), Value::Array(right_blocks)) = (left_value, right_value)
            else {
                return json_equal(left_value, right_value);
            };
            left_blocks.len() == right_blocks.len()
                && left_blocks
                    .iter()
                    .zip(right_blocks)
                    .enumerate()
                    .all(|(index, (a, b))| {
                        if index > 0 {
                            return json_equal(a, b);
                        }
                        equal_block_except_content(a, b)
                    })
        })
}

fn equal_block_except_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    // Blanking sets `content` to null on both sides, so a missing key and a
    // present one compare equal once blanked.
    let keys_left = left.keys().filter(|key| *key != "content");
    let count_left = keys_left.clone().count();
    let count_right = right.keys().filter(|key| *key != "content").count();
    count_left == count_right
        && keys_left.into_iter().all(|key| {
            right.get(key).is_some_and(|right_value| {
                left.get(key).is_some_and(|l| json_equal(l, right_value))
            })
        })
}

#[cfg(test)]
mod tool_content_tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::{equal_except_tool_content, same_text_but_tool_content};

    const TARGET: &str = r#"{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c-1"},"content":[{"type":"tool-result","toolCallId":"c-1","content":[{"type":"text","text":"a long result"}],"isError":false}],"role":"user","id":"r-1"}}"#;

    fn full(left: &str, right: &str) -> bool {
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        equal_except_tool_content(&parse(left), &parse(right))
    }

    #[test]
    fn a_pruned_content_is_settled_on_the_texts() {
        for content in [
            r#"[{"type":"text","text":"[pruned]"}]"#,
            "[]",
            "null",
            r#""x""#,
        ] {
            let pruned = TARGET.replace(r#"[{"type":"text","text":"a long result"}]"#, content);
            assert!(same_text_but_tool_content(TARGET, &pruned), "{pruned}");
            assert!(full(TARGET, &pruned), "{pruned}");
        }
    }

    #[test]
    fn other_changes_are_left_to_the_trees() {
        for (from, to) in [
            (r#""isError":false"#, r#""isError":true"#),
            (r#""id":"r-1""#, r#""id":"r-2""#),
            (r#""turn":1"#, r#""turn":2"#),
            (r#""toolCallId":"c-1""#, r#""toolCallId":"c-2""#),
            // the same values, another order: equal, but not by the texts
            (r#""role":"user","id":"r-1""#, r#""id":"r-1","role":"user""#),
        ] {
            let changed = TARGET.replace(from, to);
            assert!(!same_text_but_tool_content(TARGET, &changed), "{changed}");
        }
    }

    /// Significant bytes to edit a payload with.
    const EDITS: &[u8] = b"\"\\{}[],:0123456789.eE-tfnulcx ";

    strata_testkit::proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever two payloads the texts call equal but for the tool content, the trees do
        /// too: an edit anywhere, a repeated key, content of any shape.
        #[test]
        fn the_texts_never_call_equal_what_the_trees_do_not(
            edits in crate::byte_edits::edits(),
            both in any::<bool>(),
        ) {
            let bytes = crate::byte_edits::apply(TARGET, edits, EDITS);
            let Ok(edited) = std::str::from_utf8(&bytes) else { return Ok(()) };
            if serde_json::from_str::<Value>(edited).is_err() {
                return Ok(());
            }
            let left = if both { edited } else { TARGET };
            if same_text_but_tool_content(left, edited) {
                prop_assert!(full(left, edited), "{} vs {}", left, edited);
            }
        }
    }
}
