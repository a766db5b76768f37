//! Rule 9's equality: a tool-result replacement may change only the tool-result content — in
//! V3 the wrapper block's, in V4 the tool-role message's own (docs/format-v4.md §2.6).

use serde_json::Value;

use crate::json::json_equal;

/// Deep equality of two tool-result payloads with the tool-result block's
/// inner content (`message.content[0].content`) treated as equal (§5.2 rule 9c); with
/// `tool_role` (V4), the message's `content` itself.
pub(super) fn equal_except_tool_content(left: &Value, right: &Value, tool_role: bool) -> bool {
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
            equal_message_except_content(left_value, right_value, tool_role)
        } else {
            json_equal(left_value, right_value)
        }
    })
}

fn equal_message_except_content(left: &Value, right: &Value, tool_role: bool) -> bool {
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
            if tool_role {
                return true;
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
    use serde_json::Value;

    use super::equal_except_tool_content;

    const TARGET: &str = r#"{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c-1"},"content":[{"type":"tool-result","toolCallId":"c-1","content":[{"type":"text","text":"a long result"}],"isError":false}],"role":"user","id":"r-1"}}"#;

    fn equal(left: &str, right: &str) -> bool {
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        equal_except_tool_content(&parse(left), &parse(right), false)
    }

    #[test]
    fn a_changed_tool_content_of_any_shape_is_equal() {
        for content in [
            r#"[{"type":"text","text":"[pruned]"}]"#,
            "[]",
            "null",
            r#""x""#,
        ] {
            let pruned = TARGET.replace(r#"[{"type":"text","text":"a long result"}]"#, content);
            assert!(equal(TARGET, &pruned), "{pruned}");
        }
    }

    #[test]
    fn any_other_change_is_not() {
        for (from, to) in [
            (r#""isError":false"#, r#""isError":true"#),
            (r#""id":"r-1""#, r#""id":"r-2""#),
            (r#""turn":1"#, r#""turn":2"#),
            (r#""toolCallId":"c-1""#, r#""toolCallId":"c-2""#),
        ] {
            let changed = TARGET.replace(from, to);
            assert!(!equal(TARGET, &changed), "{changed}");
        }
    }

    #[test]
    fn the_same_values_in_another_order_are_equal() {
        let reordered =
            TARGET.replace(r#""role":"user","id":"r-1""#, r#""id":"r-1","role":"user""#);
        assert!(equal(TARGET, &reordered));
    }
}
