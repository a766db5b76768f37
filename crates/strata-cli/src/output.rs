//! Printing: JSON shapes of the CLI contract and plain-text views for people.

use std::io::{self, Write};

use serde_json::{json, Value};
use strata_core::{json, Fold, Message};

use crate::input::Rejection;

/// True when the error is a closed stdout pipe (`strata … | head`), which is not a failure.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

/// Writes one line to stdout, surfacing a closed pipe as an error the caller maps to success.
pub fn line(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    Ok(())
}

/// `{"ok":false,"error":{"rule","seq","index","line","message"}}` for `validate --json`.
pub fn rejection_json(rejection: &Rejection) -> Value {
    json!({
        "ok": false,
        "file": rejection.file.display().to_string(),
        "error": {
            "rule": rejection.rule,
            "seq": rejection.seq,
            "index": rejection.index,
            "line": rejection.line,
            "message": rejection.message,
        }
    })
}

/// `FILE: seq N: <rule>: <message>` (or `line N` when only the line is known).
pub fn rejection_text(rejection: &Rejection) -> String {
    let place = match (rejection.seq, rejection.line) {
        (Some(seq), _) => format!("seq {seq}: "),
        (None, Some(line)) => format!("line {line}: "),
        (None, None) => String::new(),
    };
    format!(
        "{}: {place}{}: {}",
        rejection.file.display(),
        rejection.rule,
        rejection.message
    )
}

/// `{"nodes":[..],"replacements":[{"seq","startSeq","endSeq","shadowed"}]}` for `surface --json`.
pub fn fold_json(fold: &Fold) -> Value {
    json!({
        "nodes": fold.nodes.iter().map(|seq| seq.get()).collect::<Vec<_>>(),
        "replacements": fold.replacements.iter().map(|replacement| json!({
            "seq": replacement.seq.get(),
            "startSeq": replacement.start.get(),
            "endSeq": replacement.end.get(),
            "shadowed": replacement.shadowed.iter().map(|seq| seq.get()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// An epoch-milliseconds instant as UTC `YYYY-MM-DD HH:MM:SS` (proleptic Gregorian calendar).
pub fn utc_time(epoch_ms: u64) -> String {
    let seconds = epoch_ms / 1000;
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, unsigned form).
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// A one-line preview of a message: role, id and the start of its text.
pub fn message_preview(message: &Message, width: usize) -> String {
    let text = message_text(message);
    let mut preview: String = text.chars().take(width).collect();
    if text.chars().count() > width {
        preview.push('…');
    }
    format!(
        "{:<9} {:<28} {}",
        message.role(),
        json::text_from_held(message.id()),
        preview.replace('\n', "⏎")
    )
}

/// The human-readable text of a message: text blocks, tool calls and tool results.
pub fn message_text(message: &Message) -> String {
    content_text(message.content())
}

/// [`message_text`] of a message object the caller parsed (see
/// [`strata_core::projected_message`]).
pub fn message_value_text(message: &Value) -> String {
    content_text(
        message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
    )
}

/// Text for a terminal: held strings are joined with text of strata's own, then shown with
/// each lone surrogate as U+FFFD.
fn content_text(blocks: &[Value]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        describe_block(block, &mut parts);
    }
    json::text_from_held(&parts.join(" ")).into_owned()
}

fn describe_block(block: &Value, parts: &mut Vec<String>) {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => parts.push(
            block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        ),
        Some("reasoning") => parts.push(format!(
            "[reasoning: {}]",
            block.get("text").and_then(Value::as_str).unwrap_or("")
        )),
        Some("tool-call") => parts.push(format!(
            "[call {} {}({})]",
            block.get("id").and_then(Value::as_str).unwrap_or("?"),
            block.get("name").and_then(Value::as_str).unwrap_or("?"),
            block.get("arguments").and_then(Value::as_str).unwrap_or("")
        )),
        Some("tool-result") => {
            let error = block.get("isError") == Some(&Value::Bool(true));
            parts.push(format!(
                "[result {}{}]",
                block
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                if error { " error" } else { "" }
            ));
            for inner in block
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                describe_block(inner, parts);
            }
        }
        Some(other) => parts.push(format!("[{other}]")),
        None => parts.push("[?]".into()),
    }
}
