//! `strata inspect`: what a log holds, before reading it — header, generation, counts by event
//! type, turns and steps, the surface and what it shadows, every replacement, token usage and
//! the file's size.
//!
//! The counting is [`strata_core::log_stats`]; this module only lays the numbers out: aligned
//! sections for people (section titles in bold on a terminal unless `NO_COLOR` is set), one
//! stable JSON object with `--json`.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;
use serde_json::{json, Map, Value};
use strata_core::stats::Standing;
use strata_core::{Event, LogStats, Seq, SessionHeader};
use strata_migrate::legacy::generation_name;
use strata_store::is_zstd_file;

use super::compact::seq_ranges;
use super::{load_for_view, Status};
use crate::cli::Format;
use crate::output;

/// Width of the label column of the text view.
const LABEL_WIDTH: usize = 14;

/// Width a wrapped seq list may take, labels included.
const LINE_WIDTH: usize = 100;

/// Prints the summary of the log `file` names.
pub(crate) fn run(file: &Path, format: Format) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    let generation = loaded.session.generation();
    // The stored events, without the end-seed marker the viewing restore added.
    let events = loaded.stored_events();
    let stats = loaded.stats()?;
    let on_disk = file_facts(file)?;
    let view = View {
        label: &loaded.label,
        header: loaded.session.header(),
        generation: generation_name(generation),
        events,
        stats: &stats,
        on_disk,
    };
    if format.json {
        output::line(&view.json().to_string())?;
    } else {
        for line in view.text() {
            output::line(&line)?;
        }
    }
    Ok(Status::Ok)
}

/// What the file system says about a log file: its size and whether it is zstd.
#[derive(Clone, Copy)]
struct OnDisk {
    n_bytes: u64,
    zstd: bool,
}

/// Size and compression of `file` when it is a file (a stored session has neither).
fn file_facts(file: &Path) -> anyhow::Result<Option<OnDisk>> {
    if !file.is_file() {
        return Ok(None);
    }
    let n_bytes = std::fs::metadata(file)
        .with_context(|| format!("reading the size of {}", file.display()))?
        .len();
    let zstd = is_zstd_file(file).with_context(|| format!("reading {}", file.display()))?;
    Ok(Some(OnDisk { n_bytes, zstd }))
}

/// Everything the two views print.
struct View<'a> {
    label: &'a str,
    header: &'a SessionHeader,
    generation: &'static str,
    events: &'a [std::sync::Arc<Event>],
    stats: &'a LogStats,
    on_disk: Option<OnDisk>,
}

impl View<'_> {
    /// The `--json` object (key order is part of the CLI contract).
    fn json(&self) -> Value {
        let stats = self.stats;
        let counts: Map<String, Value> = stats
            .counts
            .iter()
            .map(|(name, count)| (name.clone(), Value::from(*count)))
            .collect();
        let usage: Map<String, Value> = stats
            .usage
            .iter()
            .map(|(name, total)| (name.clone(), Value::from(*total)))
            .collect();
        let shadowed: Vec<Value> = shadowed_by(stats)
            .map(|(seq, by)| json!({"seq": seq.get(), "by": by.get()}))
            .collect();
        let replacements = output::replacements_json(&stats.fold);
        json!({
            "file": self.label,
            "fileSize": self.on_disk.map(|facts| facts.n_bytes),
            "compression": self.on_disk.map(|facts| if facts.zstd { "zstd" } else { "none" }),
            "generation": self.generation,
            "header": Value::Object(self.header.fields().clone()),
            "events": stats.n_events,
            "firstTime": self.events.first().map(|event| event.time()),
            "lastTime": self.events.last().map(|event| event.time()),
            "counts": counts,
            "turns": stats.n_turns,
            "steps": stats.n_steps,
            "openTurn": stats.open_turn,
            "surface": {
                "nodes": stats.fold.nodes.len(),
                "replacements": stats.fold.replacements.len(),
                "shadowed": stats.n_shadowed(),
                "logOnly": n_log_only(stats),
            },
            "shadowed": shadowed,
            "replacements": replacements,
            "usage": usage,
            "stepsWithUsage": stats.step_usage.len(),
        })
    }

    /// The text view: one aligned section per topic. Every string the log controls (the
    /// label, header fields, event type and usage names) is shown through
    /// [`output::visible`]; section titles may carry the view's own escapes.
    fn text(&self) -> Vec<String> {
        let mut lines = vec![output::visible(self.label).into_owned()];
        self.session_section(&mut lines);
        self.events_section(&mut lines);
        self.surface_section(&mut lines);
        self.usage_section(&mut lines);
        lines
    }

    fn session_section(&self, lines: &mut Vec<String>) {
        let header = self.header;
        lines.push(String::new());
        lines.push(heading("Session"));
        lines.push(row("id", header.id()));
        lines.push(row(
            "generation",
            &format!(
                "{} (header version {})",
                self.generation,
                header.generation().format_version()
            ),
        ));
        lines.push(row(
            "created",
            &format!("{} UTC", output::utc_time(header.created_at())),
        ));
        lines.push(row("cwd", header.cwd().unwrap_or("-")));
        lines.push(row("parent", header.parent_session().unwrap_or("-")));
        lines.push(row("seeded", if header.is_seeded() { "yes" } else { "no" }));
        if let Some(origin) = header.origin() {
            lines.push(row("origin", origin));
        }
        if header.delegation_depth() > 0 {
            lines.push(row(
                "delegation",
                &format!("depth {}", header.delegation_depth()),
            ));
        }
        if let Some(preset) = header.agent_preset() {
            lines.push(row("agent preset", preset));
        }
        let size = match self.on_disk {
            Some(facts) => format!(
                "{} bytes ({})",
                thousands(facts.n_bytes),
                if facts.zstd { "zstd" } else { "raw JSONL" }
            ),
            None => "- (not a file)".to_owned(),
        };
        lines.push(row("file size", &size));
    }

    fn events_section(&self, lines: &mut Vec<String>) {
        let stats = self.stats;
        lines.push(String::new());
        let span = match (self.events.first(), self.events.last()) {
            (Some(first), Some(last)) => format!(
                " (seq {}..{}), {} → {} UTC",
                first.seq().get(),
                last.seq().get(),
                time_text(first.time()),
                time_text(last.time())
            ),
            _ => String::new(),
        };
        lines.push(format!(
            "{}{}",
            heading_row("Events", &thousands(stats.n_events)),
            span
        ));
        let counts: Vec<(String, u64)> = stats
            .counts
            .iter()
            .map(|(name, count)| (output::visible(name).into_owned(), *count))
            .collect();
        let name_width = counts
            .iter()
            .map(|(name, _)| name.chars().count())
            .max()
            .unwrap_or(0);
        let count_width = counts
            .iter()
            .map(|(_, count)| thousands(*count).len())
            .max()
            .unwrap_or(0);
        for (name, count) in &counts {
            lines.push(format!(
                "  {name:<name_width$}  {:>count_width$}",
                thousands(*count)
            ));
        }
        lines.push(String::new());
        lines.push(heading_row("Turns", &thousands(stats.n_turns)));
        lines.push(row("steps", &thousands(stats.n_steps)));
        let open = stats.open_turn.map_or_else(
            || "none".to_owned(),
            |turn| format!("turn {turn} (a crash, or still being written: strata repair)"),
        );
        lines.push(row("open turn", &open));
    }

    fn surface_section(&self, lines: &mut Vec<String>) {
        let stats = self.stats;
        let fold = &stats.fold;
        lines.push(String::new());
        lines.push(heading_row(
            "Surface",
            &format!(
                "{} nodes, {} replacements",
                fold.nodes.len(),
                fold.replacements.len()
            ),
        ));
        let nodes: Vec<Seq> = fold.nodes.clone();
        push_wrapped(lines, "nodes", &seq_ranges(&nodes, usize::MAX));
        let shadowed: Vec<Seq> = shadowed_by(stats).map(|(seq, _)| seq).collect();
        let shadowed_text = if shadowed.is_empty() {
            "none".to_owned()
        } else {
            format!("{}: {}", shadowed.len(), seq_ranges(&shadowed, usize::MAX))
        };
        push_wrapped(lines, "shadowed", &shadowed_text);
        lines.push(row("log-only", &thousands(n_log_only(stats) as u64)));
        for replacement in &fold.replacements {
            let mut cited = replacement.shadowed.clone();
            cited.sort();
            push_wrapped(
                lines,
                &format!("replace @{}", replacement.seq.get()),
                &format!(
                    "span {}..{}, shadowed {}: {}",
                    replacement.start.get(),
                    replacement.end.get(),
                    cited.len(),
                    seq_ranges(&cited, usize::MAX)
                ),
            );
        }
    }

    fn usage_section(&self, lines: &mut Vec<String>) {
        let stats = self.stats;
        lines.push(String::new());
        lines.push(heading_row(
            "Token usage",
            &format!(
                "{} assistant messages reported usage",
                thousands(stats.step_usage.len() as u64)
            ),
        ));
        let usage: Vec<(String, u64)> = stats
            .usage
            .iter()
            .map(|(name, total)| (output::visible(name).into_owned(), *total))
            .collect();
        let value_width = usage
            .iter()
            .map(|(_, total)| thousands(*total).len())
            .max()
            .unwrap_or(0);
        let name_width = usage
            .iter()
            .map(|(name, _)| name.chars().count() + 2)
            .max()
            .unwrap_or(0)
            .max(LABEL_WIDTH);
        for (name, total) in &usage {
            lines.push(format!(
                "  {name:<name_width$}{:>value_width$}",
                thousands(*total)
            ));
        }
    }
}

/// The events the final surface shadows, each with the replacement that shadowed it.
fn shadowed_by(stats: &LogStats) -> impl Iterator<Item = (Seq, Seq)> + '_ {
    stats
        .standing
        .iter()
        .zip(0_u64..)
        .filter_map(|(standing, seq)| match standing {
            Standing::Shadowed { by } => Some((Seq::new(seq).ok()?, *by)),
            _ => None,
        })
}

/// Events the model never sees (not surface events).
fn n_log_only(stats: &LogStats) -> usize {
    stats
        .standing
        .iter()
        .filter(|standing| matches!(standing, Standing::LogOnly))
        .count()
}

/// `label  value` with the label padded to the label column; the value as
/// [`output::visible`] shows it.
fn row(label: &str, value: &str) -> String {
    format!(
        "  {label:<width$}{}",
        output::visible(value),
        width = LABEL_WIDTH
    )
}

/// A section title with its headline value on the same line.
fn heading_row(title: &str, value: &str) -> String {
    let padding = (LABEL_WIDTH + 2)
        .saturating_sub(title.chars().count())
        .max(1);
    format!("{}{}{value}", heading(title), " ".repeat(padding))
}

/// A section title, bold when stdout is a terminal and `NO_COLOR` is unset.
fn heading(title: &str) -> String {
    let colours = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    if colours {
        format!("\x1b[1m{title}\x1b[0m")
    } else {
        title.to_owned()
    }
}

/// A labelled row whose comma-separated value wraps under the value column.
fn push_wrapped(lines: &mut Vec<String>, label: &str, value: &str) {
    let indent = " ".repeat(LABEL_WIDTH + 2);
    let mut current = if label.len() >= LABEL_WIDTH {
        format!("  {label} ")
    } else {
        row(label, "")
    };
    let mut empty = true;
    for piece in value.split_inclusive(", ") {
        if !empty && current.chars().count() + piece.trim_end().chars().count() > LINE_WIDTH {
            lines.push(current.trim_end().to_owned());
            current = indent.clone();
        }
        current.push_str(piece);
        empty = false;
    }
    lines.push(current.trim_end().to_owned());
}

/// An event time as UTC text (negative times, which only v0 logs can hold, as a number).
fn time_text(time: i64) -> String {
    u64::try_from(time).map_or_else(|_| time.to_string(), output::utc_time)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
