//! Short views for the demo: a turn as it happens (prompt, tool calls, results, answers), a
//! surface as one glyph per node, and an event as one line.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_agent::agent::Observer;
use strata_compact::TokenMeter;
use strata_core::{Event, EventType, Session, SurfaceOp};

use super::Paint;

/// Width the demo wraps prose to, indentation included.
const WIDTH: usize = 96;

/// Columns before the text of a turn line (`  model   `), so labels line up.
pub const LEAD: usize = 10;

/// Most glyphs a surface strip shows before eliding its middle.
const STRIP_MAX: usize = 40;

/// Prints a running turn: each tool call, each result's size, and the model's text. Writes to
/// stdout directly, ignoring errors: an observer cannot fail the turn, and a closed pipe is
/// noticed by the demo's next checked write.
pub struct TurnPrinter {
    paint: Paint,
    /// Tool names by call id, so a result can say which tool produced it.
    names: Mutex<HashMap<String, String>>,
}

impl TurnPrinter {
    /// A printer in `paint`'s colours.
    pub fn new(paint: Paint) -> TurnPrinter {
        TurnPrinter {
            paint,
            names: Mutex::new(HashMap::new()),
        }
    }

    fn print(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.names
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl Observer for TurnPrinter {
    fn event(&self, event: &Arc<Event>) {
        let data = event.data();
        match event.event_type() {
            EventType::AssistantMessage => {
                let blocks = data["message"]["content"].as_array();
                for block in blocks.into_iter().flatten() {
                    if block["type"] == "text" {
                        let text = block["text"].as_str().unwrap_or("");
                        let label = self.paint.green("model ");
                        self.print(&wrap(&format!("  {label}  "), LEAD, text));
                    }
                }
            }
            EventType::ToolCall => {
                let name = data["name"].as_str().unwrap_or("?");
                let call_id = data["callId"].as_str().unwrap_or("");
                self.names().insert(call_id.to_owned(), name.to_owned());
                let arguments = data["arguments"].as_str().unwrap_or("");
                self.print(&format!(
                    "  {}  {name} {arguments}",
                    self.paint.yellow("→ tool")
                ));
            }
            // A rewrite (the pre-step's prune) is reported by whoever wrote it, not as a
            // new result.
            EventType::ToolResult if matches!(event.surface_op(), Some(SurfaceOp::Replace(_))) => {}
            EventType::ToolResult => {
                let call_id = data["message"]["source"]["callId"].as_str().unwrap_or("");
                let name = self.names().get(call_id).cloned().unwrap_or_default();
                let text = result_text(data);
                self.print(&format!(
                    "  {}  {name}: {} lines, {} chars",
                    self.paint.yellow("← tool"),
                    text.lines().count(),
                    thousands(text.chars().count() as u64)
                ));
            }
            _ => {}
        }
    }

    fn warning(&self, message: &str) {
        self.print(&format!("  {}  {message}", self.paint.red("warning")));
    }
}

/// `  LABEL  S U A T …   N nodes · ~T tokens · E events`: the surface as one glyph per node
/// (S system, U user, A assistant, T tool result, E error result, C checkpoint summary,
/// P pruned result), with its size.
pub fn surface_line(label: &str, session: &Session, paint: Paint) -> String {
    let nodes = session.surface().nodes();
    let mut glyphs: Vec<String> = nodes
        .iter()
        .map(|seq| glyph(session.event(*seq).map(AsRef::as_ref), paint))
        .collect();
    let mut n_shown = glyphs.len();
    if glyphs.len() > STRIP_MAX {
        let tail = glyphs.split_off(glyphs.len() - STRIP_MAX / 2);
        glyphs.truncate(STRIP_MAX / 2 - 1);
        glyphs.push("…".into());
        glyphs.extend(tail);
        n_shown = STRIP_MAX;
    }
    let padding = " ".repeat((2 * 16_usize).saturating_sub(2 * n_shown));
    let tokens = TokenMeter::new().measure(session).surface_tokens;
    format!(
        "  {label:<7} {}{padding}  {}",
        glyphs.join(" "),
        paint.dim(&format!(
            "{} nodes · ~{} tokens · {} events",
            nodes.len(),
            thousands(tokens),
            session.len()
        ))
    )
}

/// One line about an event: `SEQ  TYPE  detail` (the detail says what a closer, marker or
/// rewrite is about).
pub fn describe_event(event: &Event) -> String {
    let data = event.data();
    let detail = match event.event_type() {
        EventType::TurnEnd => format!("reason {}", data["reason"]["kind"].as_str().unwrap_or("?")),
        EventType::StepEnd | EventType::StepStart => format!(
            "turn {} step {}",
            data["turn"].as_u64().unwrap_or(0),
            data["step"].as_u64().unwrap_or(0)
        ),
        EventType::TurnStart => format!("turn {}", data["turn"].as_u64().unwrap_or(0)),
        EventType::ToolCall => format!(
            "{} {}",
            data["name"].as_str().unwrap_or("?"),
            data["arguments"].as_str().unwrap_or("")
        ),
        EventType::ToolResult => {
            let call_id = data["message"]["source"]["callId"].as_str().unwrap_or("?");
            let text = result_text(data);
            let first = text.lines().next().unwrap_or("");
            let first: String = first.chars().take(60).collect();
            format!("{call_id}: {first}…")
        }
        EventType::UserMessage | EventType::AssistantMessage => {
            let text = data["message"]["content"][0]["text"]
                .as_str()
                .or_else(|| data["content"][0]["text"].as_str())
                .unwrap_or("");
            text.chars().take(60).collect()
        }
        EventType::SessionEndSeed if data["inherited"] == true => "inherited prefix ends".into(),
        EventType::SessionEndSeed => "boundary between stored and live events".into(),
        _ => String::new(),
    };
    format!(
        "{:>6}  {:<18} {detail}",
        event.seq().get(),
        event.event_type().as_str()
    )
}

/// `text` wrapped to [`WIDTH`], the first line after `lead` (which shows `lead_width`
/// columns), the others indented to line up under it.
pub fn wrap(lead: &str, lead_width: usize, text: &str) -> String {
    let indent = " ".repeat(lead_width);
    let mut out = lead.to_owned();
    let mut column = lead_width;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if column > lead_width && column + 1 + len > WIDTH {
            out.push('\n');
            out.push_str(&indent);
            column = lead_width;
        }
        if column > lead_width {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
    }
    out
}

/// `12345` as `12,345`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The text of a `tool/result`'s first block.
fn result_text(data: &Value) -> String {
    let block = &data["message"]["content"][0];
    block["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|inner| inner["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The glyph of one surface node (see [`surface_line`]).
fn glyph(event: Option<&Event>, paint: Paint) -> String {
    let Some(event) = event else {
        return "?".into();
    };
    let data = event.data();
    match event.event_type() {
        EventType::SystemMessage => paint.dim("S"),
        EventType::UserMessage if data["source"]["plugin"] == "compact" => {
            paint.magenta(&paint.bold("C"))
        }
        EventType::UserMessage => paint.cyan("U"),
        EventType::AssistantMessage => paint.green("A"),
        EventType::ToolResult if matches!(event.surface_op(), Some(SurfaceOp::Replace(_))) => {
            paint.magenta("P")
        }
        EventType::ToolResult if data["message"]["content"][0]["isError"] == true => paint.red("E"),
        EventType::ToolResult => paint.yellow("T"),
        _ => "?".into(),
    }
}
