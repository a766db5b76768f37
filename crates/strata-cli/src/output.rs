//! Printing: JSON shapes of the CLI contract and plain-text views for people.

use std::io::{self, BufWriter, StdoutLock, Write};

use serde_json::{json, Value};
use strata_core::fold::Fold;
use strata_core::{json, Message, Seq};

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

/// An error's text, its causes joined by `: ` as anyhow's `{:#}` does, but without a cause
/// whose text the message already ends with: the store's errors name their OS error in their
/// own message and also return it as their source, which `{:#}` would print twice.
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if text.is_empty() {
            text = cause;
        } else if !text.ends_with(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// `{"ok":false,["file",]"error":{"kind","message"}}`: a failure that is not a rejection (`kind`
/// `io` for a log or store that could not be read or written, `usage` for a command line that
/// could not be parsed), printed on stdout under `--json` so a consumer of the JSON sees it.
pub fn error_json(file: Option<&str>, kind: &str, message: &str) -> Value {
    let mut object = serde_json::Map::new();
    object.insert("ok".into(), Value::Bool(false));
    if let Some(file) = file {
        object.insert("file".into(), Value::String(file.to_owned()));
    }
    object.insert("error".into(), json!({"kind": kind, "message": message}));
    Value::Object(object)
}

/// Stdout locked once and buffered, for a command that prints a line per surface node or
/// message, or JSON serialized straight into it: a line costs no system call of its own, and
/// nothing is built whole before it is written. [`Stdout::finish`] flushes; a write error (a
/// closed pipe among them, see [`is_broken_pipe`]) comes back as an [`io::Error`].
pub struct Stdout {
    out: BufWriter<StdoutLock<'static>>,
}

impl Stdout {
    /// Locks stdout for this command's output.
    pub fn new() -> Stdout {
        Stdout {
            out: BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        }
    }

    /// Writes one line.
    pub fn line(&mut self, text: &str) -> anyhow::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// Writes the JSON `serialize` puts straight into stdout (`serde_json::to_writer` or
    /// `to_writer_pretty`) and ends the line. A write error comes back as the `io::Error` it
    /// was: serde's error would hide it from [`is_broken_pipe`] (its source skips it).
    pub fn json_line(
        &mut self,
        serialize: impl FnOnce(&mut dyn Write) -> serde_json::Result<()>,
    ) -> anyhow::Result<()> {
        serialize(&mut self.out).map_err(io::Error::from)?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// The writer, for output written straight into it.
    pub fn writer(&mut self) -> &mut impl Write {
        &mut self.out
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }
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
    visible(&format!(
        "{}: {place}{}: {}",
        rejection.file.display(),
        rejection.rule,
        rejection.message
    ))
    .into_owned()
}

/// `{"nodes":[..],"replacements":[{"seq","startSeq","endSeq","shadowed"}]}` for `surface --json`,
/// written as it goes (a million nodes as `Value`s would be a heap string each).
pub fn write_fold_json(out: &mut impl Write, fold: &Fold) -> io::Result<()> {
    fn seqs(out: &mut impl Write, seqs: &[Seq]) -> io::Result<()> {
        out.write_all(b"[")?;
        for (index, seq) in seqs.iter().enumerate() {
            if index > 0 {
                out.write_all(b",")?;
            }
            write!(out, "{}", seq.get())?;
        }
        out.write_all(b"]")
    }
    out.write_all(br#"{"nodes":"#)?;
    seqs(out, &fold.nodes)?;
    out.write_all(br#","replacements":["#)?;
    for (index, replacement) in fold.replacements.iter().enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        write!(
            out,
            r#"{{"seq":{},"startSeq":{},"endSeq":{},"shadowed":"#,
            replacement.seq.get(),
            replacement.start.get(),
            replacement.end.get()
        )?;
        seqs(out, &replacement.shadowed)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"]}")
}

/// `[{"seq","startSeq","endSeq","shadowed"}]`: a fold's replacements as `inspect --json` lists
/// them (what [`write_fold_json`] writes under `replacements`).
pub fn replacements_json(fold: &Fold) -> Value {
    fold.replacements
        .iter()
        .map(|replacement| {
            json!({
                "seq": replacement.seq.get(),
                "startSeq": replacement.start.get(),
                "endSeq": replacement.end.get(),
                "shadowed": replacement.shadowed.iter().map(|seq| seq.get()).collect::<Vec<_>>(),
            })
        })
        .collect()
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

/// A one-line preview of a message: role, id and the start of its text. Reads the message
/// once without keeping its tree ([`Message::value_uncached`]).
pub fn message_preview(message: &Message, width: usize) -> String {
    let value = message.value_uncached();
    let text = message_value_text(&value);
    let mut preview: String = text.chars().take(width).collect();
    if text.chars().count() > width {
        preview.push('…');
    }
    format!(
        "{:<9} {:<28} {}",
        str_field(&value, "role"),
        json::text_from_held(str_field(&value, "id")),
        preview.replace('\n', "⏎")
    )
}

/// The heading and text lines of a message in `strata messages`: `── role (id)`, then the
/// human-readable text. Reads the message once without keeping its tree.
pub fn message_lines(message: &Message) -> (String, String) {
    let value = message.value_uncached();
    let heading = format!(
        "── {} ({})",
        str_field(&value, "role"),
        json::text_from_held(str_field(&value, "id"))
    );
    (
        visible(&heading).into_owned(),
        visible_lines(&message_value_text(&value)),
    )
}

/// The human-readable text (text blocks, tool calls and tool results) of a message object the
/// caller parsed (see [`strata_core::message::projected_message`], [`Message::value_uncached`]).
pub fn message_value_text(message: &Value) -> String {
    content_text(
        message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
    )
}

/// A string member of a message object, or `""` ([`Message::role`], [`Message::id`]).
fn str_field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
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

/// `text` as plain-text output may show it: every character a terminal acts on instead of
/// printing — the C0 and C1 controls (ESC, NUL, newline, carriage return, …) and DEL, and the
/// Unicode marks that reorder or break a line (bidi embeddings, overrides, isolates and marks,
/// line and paragraph separators) — spelled visibly, as Rust escapes them (`\u{1b}`, `\0`,
/// `\n`, `\u{202e}`). Every log-controlled string (ids, cwd, titles, event types, message
/// text, file names) goes through it on its way to a terminal, so a hostile log cannot move
/// the cursor, retitle the window or fake a line; `--json` output is escaped by JSON instead.
/// Kept as they are: a tab, which only advances the cursor (message text keeps its
/// indentation), and backslashes, so a cwd like `C:\work` reads naturally.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| {
        (c.is_control() && c != '\t')
            || matches!(
                c,
                '\u{061c}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    };
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\0' | '\n' | '\r' => out.extend(c.escape_debug()),
            c if acts(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`visible`] for text of several lines (message bodies, error chains with a hint line): each
/// line escaped, the line breaks kept.
pub fn visible_lines(text: &str) -> String {
    text.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests;
