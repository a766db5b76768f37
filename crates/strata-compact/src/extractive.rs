//! A deterministic offline summarizer: extracts, never invents (tests, demos,
//! `strata compact --offline`).
//!
//! The shadowed span is split into turns at each message a person typed
//! (`source.kind == "user"`). For every turn the summary keeps the first line of the
//! prompt, the last line of the assistant's last text, and the tools it called with their
//! outcomes; failed tools also go under "Errors and Fixes", and `path` arguments under
//! "Files and Code". An earlier checkpoint in the span is carried over line by line, so
//! repeated compaction does not forget the oldest history. The output uses the section
//! headings an LLM summary must use, so both kinds of checkpoint read alike.
//!
//! The same input always gives the same bytes. The output is kept under the request's
//! token cap by dropping the oldest turns first (and saying how many were dropped).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::future::{ready, Future};

use serde_json::Value;

use crate::estimate::{ByteEstimator, TokenEstimator};
use crate::summarizer::{SummarizeError, Summarizer, Summary, SummaryRequest};

/// The offline summarizer (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtractiveSummarizer;

/// `compaction/summary.provider` of an extractive summary.
pub const EXTRACTIVE_PROVIDER: &str = "strata";
/// `compaction/summary.model` of an extractive summary.
pub const EXTRACTIVE_MODEL: &str = "extractive";

/// Longest line kept, in code points.
const LINE_CHARS: usize = 160;
/// Most lines carried over from earlier checkpoints.
const MAX_CARRIED: usize = 120;
/// Most file paths listed.
const MAX_FILES: usize = 60;
/// Most (newest) tool failures listed.
const MAX_ERRORS: usize = 40;

impl Summarizer for ExtractiveSummarizer {
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        ready(Ok(extract(request)))
    }
}

#[derive(Default)]
struct Turn {
    label: Option<u64>,
    prompt: Option<String>,
    last_answer: Option<String>,
    /// (tool name, failed?) in call order; outcomes filled from results.
    calls: Vec<(String, String, Option<bool>)>,
}

/// Builds the extractive summary of `request`'s shadowed messages.
pub fn extract(request: &SummaryRequest) -> Summary {
    let mut carried: Vec<String> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut errors: Vec<String> = Vec::new();
    for message in request.shadowed_messages() {
        // Read once, the tree dropped after: a span may be a whole log's messages.
        let value = message.value_uncached();
        let source_kind = value
            .get("source")
            .and_then(|source| source.get("kind"))
            .and_then(Value::as_str);
        let content = value
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let turn_number = message.event().u64_field("turn");
        let role = value.get("role").and_then(Value::as_str).unwrap_or("");
        match (role, source_kind) {
            ("user", Some("user")) => {
                turns.push(Turn {
                    prompt: first_line(&message_text(content)),
                    ..Turn::default()
                });
            }
            ("user", Some("tool")) => {
                let Some(block) = content.first() else {
                    continue;
                };
                let call_id = block
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let failed = block
                    .get("isError")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let turn = current(&mut turns);
                let name = turn
                    .calls
                    .iter_mut()
                    .find(|(_, id, outcome)| id == call_id && outcome.is_none())
                    .map(|call| {
                        call.2 = Some(failed);
                        call.0.clone()
                    })
                    .unwrap_or_else(|| "tool".to_owned());
                if failed {
                    let inner = block
                        .get("content")
                        .and_then(Value::as_array)
                        .map(|blocks| message_text(blocks))
                        .unwrap_or_default();
                    let what = first_line(&inner).unwrap_or_else(|| "(no output)".into());
                    errors.push(format!("{name} failed: {what}"));
                }
            }
            ("user", _) => {
                let text = message_text(content);
                if let Some(inner) = checkpoint_body(&text) {
                    carried.extend(
                        inner
                            .lines()
                            .map(str::trim)
                            .filter(|line| !line.is_empty())
                            .map(clip),
                    );
                } else if let Some(line) = first_line(&text) {
                    current(&mut turns).last_answer.get_or_insert(line);
                }
            }
            ("assistant", _) => {
                let turn = current(&mut turns);
                if turn.label.is_none() {
                    turn.label = turn_number;
                }
                if let Some(line) = last_line(&message_text(content)) {
                    turn.last_answer = Some(line);
                }
                for block in content {
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    turn.calls.push((name.to_owned(), id.to_owned(), None));
                    let arguments = block.get("arguments").and_then(Value::as_str).unwrap_or("");
                    // Argument text is a held string: lone surrogates in a path are kept.
                    if let Ok(Value::Object(args)) = strata_core::json::parse_held(arguments) {
                        if let Some(Value::String(path)) = args.get("path") {
                            files.insert(clip(path));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Bound the lists that grow with the span; the newest errors matter most.
    carried.truncate(MAX_CARRIED);
    let files: Vec<String> = files.into_iter().take(MAX_FILES).collect();
    let errors = errors.split_off(errors.len().saturating_sub(MAX_ERRORS));
    let budget = u64::from(request.max_tokens);
    let mut omitted = 0;
    let mut text = loop {
        let text = render(&turns[omitted..], omitted, &carried, &files, &errors);
        if ByteEstimator.text_tokens(&text) < budget || omitted >= turns.len() {
            break text;
        }
        omitted += 1.max((turns.len() - omitted) / 8);
    };
    // Last resort for a tiny cap: cut at a character boundary under the budget.
    let max_bytes = usize::try_from(budget.saturating_sub(1) * 4).unwrap_or(usize::MAX);
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    Summary {
        text: vec![text],
        provider: EXTRACTIVE_PROVIDER.into(),
        model: EXTRACTIVE_MODEL.into(),
        usage: None,
        raw_output: None,
    }
}

fn render(
    turns: &[Turn],
    omitted: usize,
    carried: &[String],
    files: &[String],
    errors: &[String],
) -> String {
    let mut out = String::new();
    let none = |out: &mut String| out.push_str("(none)\n");
    out.push_str("## Primary Request and Intent\n");
    if omitted > 0 {
        let _ = writeln!(out, "- ({omitted} earlier turns omitted)");
    }
    if turns.is_empty() && omitted == 0 {
        none(&mut out);
    }
    for (index, turn) in turns.iter().enumerate() {
        let label = turn
            .label
            .map_or_else(|| format!("#{}", omitted + index + 1), |n| n.to_string());
        let prompt = turn.prompt.as_deref().unwrap_or("(no prompt)");
        let _ = write!(out, "- turn {label}: {prompt}");
        if let Some(answer) = &turn.last_answer {
            let _ = write!(out, " → {answer}");
        }
        if !turn.calls.is_empty() {
            let calls: Vec<String> = turn
                .calls
                .iter()
                .map(|(name, _, outcome)| match outcome {
                    Some(false) => format!("{name} ok"),
                    Some(true) => format!("{name} failed"),
                    None => format!("{name} unanswered"),
                })
                .collect();
            let _ = write!(out, " [tools: {}]", calls.join(", "));
        }
        out.push('\n');
    }
    out.push_str("## Key Technical Concepts\n");
    none(&mut out);
    out.push_str("## Files and Code\n");
    if files.is_empty() {
        none(&mut out);
    }
    for file in files {
        let _ = writeln!(out, "- {file}");
    }
    out.push_str("## Errors and Fixes\n");
    if errors.is_empty() {
        none(&mut out);
    }
    for error in errors {
        let _ = writeln!(out, "- {error}");
    }
    out.push_str("## Pending Jobs\n");
    none(&mut out);
    out.push_str("## Current Work\n");
    match turns.last().and_then(|turn| turn.last_answer.as_deref()) {
        Some(answer) => {
            let _ = writeln!(out, "- {answer}");
        }
        None => none(&mut out),
    }
    out.push_str("## Next Step\n");
    none(&mut out);
    out.push_str("## Critical Context\n");
    if carried.is_empty() {
        none(&mut out);
    }
    for line in carried {
        let _ = writeln!(out, "- earlier: {}", line.trim_start_matches("- "));
    }
    out
}

fn current(turns: &mut Vec<Turn>) -> &mut Turn {
    if turns.is_empty() {
        turns.push(Turn::default());
    }
    let last = turns.len() - 1;
    &mut turns[last]
}

/// The text of `text` blocks, newline-joined (reasoning is not summarized).
fn message_text(blocks: &[Value]) -> String {
    let mut out = String::new();
    for block in blocks {
        if block.get("type").and_then(Value::as_str) == Some("text") {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
    }
    out
}

/// The text between `<compacted-summary>` and `</compacted-summary>`, if present.
fn checkpoint_body(text: &str) -> Option<&str> {
    let open = "<compacted-summary>";
    let start = text.find(open)? + open.len();
    let end = text[start..]
        .find("</compacted-summary>")
        .map_or(text.len(), |e| start + e);
    Some(&text[start..end])
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(clip)
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(clip)
}

fn clip(line: &str) -> String {
    let mut chars = line.chars();
    let mut out: String = chars.by_ref().take(LINE_CHARS).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
