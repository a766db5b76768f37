//! The v0/v1 rows a restore reads as text: rows no legacy step rewrites or looks into, decoded
//! the way a V3 log's rows are (the envelope scanned, the payload kept as the text it was
//! stored with) instead of as a JSON tree that is then written back to text.
//!
//! A row qualifies when every step of the restore path (docs/v0-rules.md, R2–R6) is blind to
//! its payload and a tree could not change its text:
//! - its type is one of [`UNTOUCHED_TYPES`]: known to v0 and v1, no surface message (R3's
//!   message shapes), none that U1–U4 rewrite (`turn/*`, `steering/message`, messages), none
//!   that R2 reads (`request/header`, the retired types); R5's bracket scan reads the open step
//!   of a `step/start` and the call id of a `tool/call`, from the row
//!   ([`StoredTurnScan::observe_raw`](strata_core::repair::StoredTurnScan::observe_raw) parses just
//!   that payload);
//! - it names no key `message` (the upgrader remembers a `data.message.id` of any row, for a
//!   later legacy tool result replacing it);
//! - the one-pass scanner claims it ([`ScannedRow::is_scanned`]: compact JSON, which serde
//!   reads the same);
//! - its text is what `JSON.stringify` writes of its own parse, so keeping the text keeps the
//!   bytes a tree would have written back: no escape but the ones `JSON.stringify` writes
//!   (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` for the other control
//!   characters), and no code point of the range strata holds lone surrogates in
//!   (`strata_core::json`: lead byte `F4`).
//!
//! Any other row takes the tree path, so what qualifies is an optimization only: the restore's
//! verdicts, texts and sessions are the same either way (the reader's tests compare the two).

use strata_core::ingest::ScannedRow;
use strata_core::RawEvent;

/// The row types a v0/v1 restore passes through untouched, by their tags as stored.
pub(crate) const UNTOUCHED_TYPES: &[&str] = &[
    "assistant/chunk",
    "step/start",
    "step/end",
    "tool/call",
    "compaction/start",
    "compaction/end",
    "compaction/summary",
    "compaction/prune",
    "todo/write",
    "request/context",
];

/// The row `text` decoded without a tree, when it qualifies (see the module docs).
pub(crate) fn untouched_row(text: &str) -> Option<RawEvent> {
    let tag = leading_type(text)?;
    if !UNTOUCHED_TYPES.contains(&tag) || names_message(text) || !stringify_spelled(text) {
        return None;
    }
    let row = ScannedRow::scan(text).ok()?;
    row.is_scanned().then(|| row.into_raw())
}

/// The `type` of a row that opens with it (`{"type":"assistant/chunk",…`), as strata and dsh
/// write rows; `None` for any other opening.
fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

/// Whether `text` holds the key (or string) `"message"` spelled without escapes, which is how a
/// text with only `JSON.stringify`'s escapes spells the key `message`.
fn names_message(text: &str) -> bool {
    static MESSAGE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"message\""));
    MESSAGE.find(text.as_bytes()).is_some()
}

/// Whether `text` holds only the escapes `JSON.stringify` writes and no code point from lead
/// byte `F4` (see the module docs).
fn stringify_spelled(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr::memchr2(b'\\', 0xF4, bytes.get(at..).unwrap_or_default()) {
        if bytes[at + found] == 0xF4 {
            return false;
        }
        let escape = at + found + 1;
        match bytes.get(escape) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => at = escape + 1,
            Some(b'u') => {
                let Some(unit) = bytes.get(escape + 1..escape + 5) else {
                    return false;
                };
                if !is_stringify_control_escape(unit) {
                    return false;
                }
                at = escape + 5;
            }
            _ => return false,
        }
    }
    true
}

/// Whether the four hex digits `unit` are how `JSON.stringify` escapes a control character:
/// lowercase, below `0x20`, and not one it writes with a short escape.
fn is_stringify_control_escape(unit: &[u8]) -> bool {
    let lower_hex = |byte: &u8| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte);
    if !unit.iter().all(lower_hex) || unit[..2] != *b"00" || unit[2] > b'1' {
        return false;
    }
    let Ok(text) = std::str::from_utf8(unit) else {
        return false;
    };
    !matches!(
        u32::from_str_radix(text, 16),
        Ok(0x08 | 0x09 | 0x0a | 0x0c | 0x0d) | Err(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_chunk_row_is_read_as_text() {
        let text = r#"{"type":"assistant/chunk","seq":5,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a\nb\u001f"}}}"#;
        let row = untouched_row(text).expect("a chunk row qualifies");
        assert_eq!(
            row.data_json(),
            Some(
                r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a\nb\u001f"}}"#
            )
        );
        let tree = RawEvent::from_value(strata_core::json::parse(text).unwrap());
        assert_eq!(row.to_value(), tree.to_value());
    }

    #[test]
    fn rows_a_tree_would_respell_or_a_step_reads_take_the_tree_path() {
        let chunk = |text: &str| {
            format!(
                r#"{{"type":"assistant/chunk","seq":5,"time":1,"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{text}"}}}}}}"#
            )
        };
        assert!(untouched_row(&chunk("plain")).is_some());
        for respelled in [
            r"\/",
            r"\u0041",
            r"\u000a",
            r"\u001F",
            r"\ud800",
            "\u{10F800}",
        ] {
            assert!(untouched_row(&chunk(respelled)).is_none(), "{respelled}");
        }
        let named = r#"{"type":"todo/write","seq":1,"time":1,"data":{"message":{"id":"m"}}}"#;
        assert!(untouched_row(named).is_none());
        let upgraded = r#"{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
        assert!(untouched_row(upgraded).is_none());
        let spaced = r#"{"type":"step/end", "seq":1,"time":1,"data":{"turn":1,"step":1}}"#;
        assert!(untouched_row(spaced).is_none());
        let reordered = r#"{"seq":1,"type":"step/end","time":1,"data":{"turn":1,"step":1}}"#;
        assert!(untouched_row(reordered).is_none());
    }
}
