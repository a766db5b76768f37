//! Unit tests of the token estimate's shape.

use serde_json::json;

use super::*;

#[test]
fn byte_estimator_rounds_up_and_counts_utf8_bytes() {
    assert_eq!(ByteEstimator.text_tokens(""), 0);
    assert_eq!(ByteEstimator.text_tokens("abcd"), 1);
    assert_eq!(ByteEstimator.text_tokens("abcde"), 2);
    // Four CJK characters are twelve UTF-8 bytes: three tokens, not one.
    assert_eq!(ByteEstimator.text_tokens("数据数据"), 3);
}

#[test]
fn message_price_is_blocks_plus_framing() {
    let message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "12345678"},
        {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{\"p\":1}"},
    ]});
    // text: 2 + 4; tool-call: 1 + 2 + 4; message: + 4.
    assert_eq!(message_tokens(&message, &ByteEstimator), 6 + 7 + 4);
}

#[test]
fn tool_result_block_prices_its_inner_blocks() {
    let message = json!({"role": "user", "content": [
        {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "abcdefgh"}], "isError": false}
    ]});
    // inner text 2 + 4, tool-result framing 4, message 4.
    assert_eq!(message_tokens(&message, &ByteEstimator), 6 + 4 + 4);
}

#[test]
fn json_len_matches_serialized_length_for_plain_values() {
    let value = json!({"type": "image", "attachment": {"id": "a1", "size": 1234, "ok": true, "x": null}, "list": [1, 2]});
    let serialized = serde_json::to_string(&value).unwrap();
    assert_eq!(json_len(&value), serialized.len());
}
